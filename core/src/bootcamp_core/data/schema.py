"""The record schema, defined once as a value: every writer and reader of records derives from :data:`RECORD_SCHEMA`.

A record (DESIGN.md, Records) is a tree of fields, each of one *kind*; the kind says how the field looks in a JSON
line, in Arrow/Parquet, and how a reader normalizes what other tools and earlier versions wrote:

============  ==========================  ==========================================  ================================
kind          JSON line                   Parquet column                              also read
============  ==========================  ==========================================  ================================
text          string                      string
integer       number                      int64
boolean       true/false                  bool
texts         list of strings             list<string>
identity      object                      string (JSON text)                          JSON text anywhere
json          any JSON value              string (JSON text)                          an Arrow map (list of pairs)
messages      [{"role", "content"}]       list<struct<role, content, content_parts>>  (``content_parts``: JSON text
                                                                                      of a content list, vision)
text_messages [{"role", "content"}]       list<struct<role, content>>                 (text content only: what verl
                                                                                      reads as a chat)
struct        object of its fields        struct of its fields
per_tool      {<Tool.name>: object}       struct over the file's tool names            an Arrow map (list of pairs)
============  ==========================  ==========================================  ================================

No kind maps to an Arrow map column, so pyarrow, pandas and HF ``datasets`` all read the files. A field marked
``optional`` may be absent from a record (``interaction_kwargs`` of a task without an interaction); one marked
``nullable`` holds null as a value (``bootcamp.interaction``). In Parquet both are null, and a null reads back as
absent unless the field is nullable. Keys a schema does not know are kept as they are, after the known ones.

A schema with one more field is a new value, and every writer and reader takes it::

    schema = RECORD_SCHEMA.extend("extra_info", Field("difficulty", "integer"))
    write_records("data.parquet", records, schema=schema)
    assert list(read_records("data.parquet", schema=schema)) == records
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import orjson

__all__ = ["KINDS", "Field", "RecordSchema", "RECORD_SCHEMA", "compact_dumps", "decode_identity"]

KINDS = ("text", "integer", "boolean", "texts", "identity", "json", "messages", "text_messages", "struct", "per_tool")

_encode = json.JSONEncoder(ensure_ascii=False).encode
# Raw line and paragraph separators are valid JSON but split lines for readers that use str.splitlines()
_SEPARATORS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def dumps(value: Any) -> str:
    """The one JSON spelling of records: UTF-8 text, one physical line whatever the reader."""
    text = _encode(value)
    if "\u2028" in text or "\u2029" in text or "\x85" in text:
        return text.translate(_SEPARATORS)
    return text


def compact_dumps(value: Any) -> str | None:
    """``value``'s JSON text without spaces, on one physical line, from a fast encoder (``orjson``, about ten times
    :func:`dumps`' speed), or None where that encoder's text would not read back as ``value``.

    Reading the text back is the check: orjson writes NaN and the infinities as null, converts objects JSON has no
    text for (dates, dataclasses, UUIDs) and refuses what :func:`dumps` may still write (keys that are not strings,
    integers past 64 bits, structures nested past 255 levels, lone surrogates); each of these is None, and the caller
    falls back on :func:`dumps` (a tuple, an array either way, is None too: it reads back as a list). Strings are
    escaped as :func:`dumps` escapes them, character by character, so a text found in the one is found in the other
    (the masking of secrets scans results lines for them). For lines written in bulk (results), where the JSON text
    is most of the cost of keeping an episode."""
    try:
        raw = orjson.dumps(value)
        if orjson.loads(raw) != value:
            return None
    except (TypeError, ValueError):  # orjson's errors are both; an object whose comparison fails
        return None
    text = raw.decode("utf-8")
    if "\u2028" in text or "\u2029" in text or "\x85" in text:
        return text.translate(_SEPARATORS)
    return text


def decode_identity(value: Any) -> Any:
    """An identity from either form: an object (JSONL, memory) or the JSON text of one (Parquet, other tools).

    Identities are JSON objects, so only text that decodes to one is decoded; any other value is kept as it is.
    """
    if isinstance(value, (str, bytes)):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        return decoded if isinstance(decoded, dict) else value
    return value


def _decode_json(value: Any) -> Any:
    """A ``json`` field as we write it (JSON text), as JSONL holds it (the value), or as an Arrow map (pairs)."""
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if isinstance(value, list) and value and all(isinstance(pair, tuple) and len(pair) == 2 for pair in value):
        return dict(value)
    return value


def _pairs(value: Any) -> dict:
    """A ``per_tool`` field read back: a struct (dict, with nulls for other records' tools), or an Arrow map (pairs)."""
    if not value:
        return {}
    if isinstance(value, str):
        value = json.loads(value)
    items = value.items() if isinstance(value, Mapping) else value
    return {name: entry for name, entry in items if entry is not None}


@attrs.frozen
class Field:
    """One field of a record: its key, its kind (one of :data:`KINDS`) and, for ``struct`` and ``per_tool``, the fields
    inside (for ``per_tool``: the fields of each tool's entry)."""

    name: str
    kind: str = attrs.field(validator=attrs.validators.in_(KINDS))
    fields: tuple[Field, ...] = attrs.field(default=(), converter=tuple)
    #: may be absent from a record (a JSON line leaves it out when it has no value)
    optional: bool = False
    #: null is a value of it (a JSON line spells it out); other fields read back null from Parquet as absent
    nullable: bool = False
    doc: str = attrs.field(default="", eq=False)

    def __attrs_post_init__(self) -> None:
        if bool(self.fields) != (self.kind in ("struct", "per_tool")):
            raise ValueError(f"field {self.name!r}: only struct and per_tool fields hold fields")

    def child(self, name: str) -> Field:
        for field in self.fields:
            if field.name == name:
                return field
        raise KeyError(f"field {self.name!r} has no field {name!r}")


def _arrow_type(field: Field, tool_names: Sequence[str]):
    import pyarrow as pa

    kind, string = field.kind, pa.string()
    if kind in ("text", "identity", "json"):
        return string
    if kind == "integer":
        return pa.int64()
    if kind == "boolean":
        return pa.bool_()
    if kind == "texts":
        return pa.list_(string)
    if kind == "messages":
        return pa.list_(pa.struct([("role", string), ("content", string), ("content_parts", string)]))
    if kind == "text_messages":
        return pa.list_(pa.struct([("role", string), ("content", string)]))
    children = [(child.name, _arrow_type(child, tool_names)) for child in field.fields]
    if kind == "struct":
        return pa.struct(children)
    entry = pa.struct(children)
    return pa.struct([(name, entry) for name in tool_names])


def _message_to_parquet(message: Mapping) -> dict:
    content = message.get("content")
    if isinstance(content, str) or content is None:
        return {"role": message.get("role"), "content": content, "content_parts": None}
    return {"role": message.get("role"), "content": None, "content_parts": dumps(content)}


def _message_from_parquet(message: Mapping) -> dict:
    parts = message.get("content_parts")
    return {"role": message["role"], "content": message["content"] if parts is None else json.loads(parts)}


def _to_row(field: Field, value: Any, tool_names: Sequence[str]) -> Any:
    if value is None:
        return None
    kind = field.kind
    if kind in ("identity", "json"):
        return dumps(value)
    if kind == "messages":
        return [_message_to_parquet(message) for message in value]
    if kind == "text_messages":
        if any(not isinstance(message.get("content"), (str, type(None))) for message in value):
            raise ValueError(f"{field.name}: a message's content is not text (this schema holds text prompts only)")
        return [{"role": message.get("role"), "content": message.get("content")} for message in value]
    if kind == "struct":
        return _struct_to_row(field.fields, value, tool_names, field.name)
    if kind == "per_tool":
        unknown = set(value) - set(tool_names)
        if unknown:
            raise ValueError(f"{field.name}: tools {sorted(unknown)} are not among the file's tool names")
        return {name: _struct_to_row(field.fields, value[name], tool_names, f"{field.name}[{name!r}]")
                for name in tool_names if name in value}
    if kind == "texts":
        return list(value)
    return value


def _struct_to_row(fields: Sequence[Field], value: Any, tool_names: Sequence[str], where: str) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected an object, got {type(value).__name__}")
    known = {field.name for field in fields}
    unknown = [key for key in value if key not in known]
    if unknown:
        # Parquet has a column for each field the schema names and none for others: refuse rather than lose them
        raise ValueError(f"{where}: {', '.join(map(repr, unknown))} not in the record schema; Parquet would drop "
                         f"{'it' if len(unknown) == 1 else 'them'} (extend the schema)")
    return {field.name: _to_row(field, value.get(field.name), tool_names) for field in fields}


def _from_row(field: Field, value: Any) -> Any:
    if value is None:
        return {} if field.kind == "per_tool" else None
    kind = field.kind
    if kind == "identity":
        return decode_identity(value)
    if kind == "json":
        return _decode_json(value)
    if kind == "messages":
        return [_message_from_parquet(message) for message in value]
    if kind == "struct":
        return _struct_from_row(field.fields, value)
    if kind == "per_tool":
        return {name: _struct_from_row(field.fields, entry) for name, entry in _pairs(value).items()}
    return value


def _struct_from_row(fields: Sequence[Field], value: Mapping) -> dict:
    record: dict[str, Any] = {}
    for field in fields:
        if field.name not in value:
            if field.kind == "per_tool":  # a file without tools has no column for them
                record[field.name] = {}
            continue
        item = _from_row(field, value[field.name])
        if item is None and not field.nullable:  # Parquet's null: absent, unless null is the field's value
            continue
        record[field.name] = item
    # our keys in our order, then whatever other writers added
    record.update((key, item) for key, item in value.items() if key not in record and not _is_known(fields, key))
    return record


def _is_known(fields: Sequence[Field], key: str) -> bool:
    return any(field.name == key for field in fields)


def _normalize(field: Field, value: Any) -> Any:
    kind = field.kind
    if kind == "identity":
        return decode_identity(value)
    if kind == "json":
        return _decode_json(value)
    if kind == "struct" and isinstance(value, dict):
        _normalize_struct(field.fields, value)
    elif kind == "per_tool":
        if isinstance(value, (list, str)):
            value = _pairs(value)
        if isinstance(value, dict):
            for name in [name for name, entry in value.items() if entry is None]:
                del value[name]
            for entry in value.values():
                if isinstance(entry, dict):
                    _normalize_struct(field.fields, entry)
    return value


def _normalize_struct(fields: Sequence[Field], value: dict) -> None:
    for field in fields:
        if field.name in value:
            value[field.name] = _normalize(field, value[field.name])


def _problems(fields: Sequence[Field], value: Any, where: str) -> Iterable[str]:
    if not isinstance(value, Mapping):
        yield f"{where or 'record'}: expected an object"
        return
    for field in fields:
        path = f"{where}.{field.name}" if where else field.name
        if field.name not in value:
            if not field.optional:
                yield f"{path}: missing"
            continue
        item = value[field.name]
        if item is None:
            if not field.nullable:
                yield f"{path}: null"
            continue
        kind = field.kind
        expected = {"text": str, "integer": int, "boolean": bool, "texts": list, "identity": dict, "messages": list,
                    "text_messages": list, "struct": Mapping, "per_tool": Mapping}.get(kind)
        if expected is not None and (not isinstance(item, expected) or (kind == "integer" and isinstance(item, bool))):
            yield f"{path}: expected {kind}, got {type(item).__name__}"
        elif kind == "struct":
            yield from _problems(field.fields, item, path)
        elif kind == "per_tool":
            for name, entry in item.items():
                yield from _problems(field.fields, entry, f"{path}[{name!r}]")
    for key in value:
        if not _is_known(fields, key):
            yield f"{where + '.' if where else ''}{key}: not in the schema"


def _unknown(fields: Sequence[Field], value: Any, where: str) -> Iterable[str]:
    if not isinstance(value, Mapping):
        return
    for key, item in value.items():
        path = f"{where}.{key}" if where else key
        field = next((field for field in fields if field.name == key), None)
        if field is None:
            yield path
        elif field.kind == "struct":
            yield from _unknown(field.fields, item, path)
        elif field.kind == "per_tool" and isinstance(item, Mapping):
            for name, entry in item.items():
                yield from _unknown(field.fields, entry, f"{path}[{name!r}]")


@attrs.frozen
class RecordSchema:
    """The fields of a record, in the order a JSON line lists them."""

    fields: tuple[Field, ...] = attrs.field(converter=tuple)

    # -------------------------------------------------------------------------------------------- the value
    def field(self, path: str) -> Field:
        """The field at a dotted path, e.g. ``"extra_info.bootcamp.versions"``."""
        names = path.split(".")
        field = self._top(names[0])
        for name in names[1:]:
            field = field.child(name)
        return field

    def _top(self, name: str) -> Field:
        for field in self.fields:
            if field.name == name:
                return field
        raise KeyError(f"the record schema has no field {name!r}")

    def extend(self, path: str, *fields: Field) -> RecordSchema:
        """A new schema with ``fields`` appended inside the struct at ``path`` (``""``: at the top level)."""
        if not path:
            return RecordSchema(self._append(self.fields, fields, "record"))
        names = path.split(".")

        def rebuild(current: Sequence[Field], depth: int) -> tuple[Field, ...]:
            out = []
            found = False
            for field in current:
                if field.name == names[depth]:
                    found = True
                    if field.kind not in ("struct", "per_tool"):
                        raise ValueError(f"{path}: a {field.kind} field holds no fields")
                    inner = (self._append(field.fields, fields, path) if depth == len(names) - 1
                             else rebuild(field.fields, depth + 1))
                    field = attrs.evolve(field, fields=inner)
                out.append(field)
            if not found:
                raise KeyError(f"the record schema has no field {'.'.join(names[:depth + 1])!r}")
            return tuple(out)

        return RecordSchema(rebuild(self.fields, 0))

    def replace(self, path: str, field: Field) -> RecordSchema:
        """A new schema with the field at ``path`` replaced by ``field``."""
        names = path.split(".")

        def rebuild(current: Sequence[Field], depth: int) -> tuple[Field, ...]:
            if not any(item.name == names[depth] for item in current):
                raise KeyError(f"the record schema has no field {'.'.join(names[:depth + 1])!r}")
            return tuple(
                item if item.name != names[depth]
                else field if depth == len(names) - 1
                else attrs.evolve(item, fields=rebuild(item.fields, depth + 1))
                for item in current
            )

        return RecordSchema(rebuild(self.fields, 0))

    @staticmethod
    def _append(current: Sequence[Field], added: Sequence[Field], where: str) -> tuple[Field, ...]:
        names = {field.name for field in current}
        for field in added:
            if field.name in names:
                raise ValueError(f"{where} already has a field {field.name!r}")
            names.add(field.name)
        return (*current, *added)

    # ------------------------------------------------------------------------------------------ JSON lines
    def problems(self, record: Any) -> list[str]:
        """What keeps ``record`` (in its JSON form) from matching the schema; ``[]`` when it does."""
        return list(_problems(self.fields, record, ""))

    def unknown_keys(self, record: Mapping) -> list[str]:
        """The dotted paths of keys in ``record`` that the schema has no field for (Parquet has no column for them)."""
        return list(_unknown(self.fields, record, ""))

    def normalize(self, record: dict) -> dict:
        """``record`` in its JSON form, in place, whatever wrote it: identities as objects (not JSON text), ``json``
        fields decoded, ``per_tool`` maps as dicts without null entries. Parts of a record are fine (verl passes
        pieces); nothing else is touched."""
        if isinstance(record, dict):
            _normalize_struct(self.fields, record)
        return record

    # ------------------------------------------------------------------------------------- Arrow and Parquet
    def tool_names(self, records: Iterable[Mapping]) -> list[str]:
        """The sorted union of the tool names that ``records`` name in their ``per_tool`` fields."""
        paths = self.per_tool_paths()
        names: set[str] = set()
        for record in records:
            for path in paths:
                value: Any = record
                for name in path:
                    value = value.get(name) if isinstance(value, Mapping) else None
                if isinstance(value, Mapping):
                    names.update(value)
        return sorted(names)

    def per_tool_paths(self) -> list[tuple[str, ...]]:
        """The key paths of the ``per_tool`` fields, e.g. ``[("extra_info", "tools_kwargs")]``."""
        return list(self._per_tool_paths(self.fields, ()))

    def _per_tool_paths(self, fields: Sequence[Field], prefix: tuple[str, ...]) -> Iterable[tuple[str, ...]]:
        for field in fields:
            if field.kind == "per_tool":
                yield (*prefix, field.name)
            elif field.kind == "struct":
                yield from self._per_tool_paths(field.fields, (*prefix, field.name))

    def arrow(self, tool_names: Sequence[str] = ()):
        """The Arrow schema of a file whose records name ``tool_names`` (a ``per_tool`` field is a struct over them;
        with none, it has no column: Parquet holds no struct without fields)."""
        import pyarrow as pa

        return pa.schema(self._arrow_fields(self.fields, tuple(tool_names)))

    def _arrow_fields(self, fields: Sequence[Field], tool_names: tuple[str, ...]) -> list:
        import pyarrow as pa

        out = []
        for field in fields:
            if field.kind == "per_tool" and not tool_names:
                continue
            if field.kind == "struct":
                out.append(pa.field(field.name, pa.struct(self._arrow_fields(field.fields, tool_names))))
            else:
                out.append(pa.field(field.name, _arrow_type(field, tool_names)))
        return out

    def to_row(self, record: Mapping, tool_names: Sequence[str]) -> dict:
        """``record`` as a Parquet row of :meth:`arrow` ``(tool_names)``. A key the schema does not name is an error:
        Parquet would drop it."""
        row = _struct_to_row(self.fields, record, tool_names, "record")
        assert row is not None
        if not tool_names:
            _drop_per_tool(self.fields, row)
        return row

    def from_row(self, row: Mapping) -> dict:
        """A Parquet row (ours, an earlier version's with Arrow maps, or another writer's) as the record."""
        return _struct_from_row(self.fields, row)

    def conform(self, table, tool_names: Sequence[str]):
        """An Arrow table of rows of this schema over some tool names, as rows over ``tool_names`` (a superset):
        missing tools are null, so files over different tools concatenate."""
        import pyarrow as pa

        target = self.arrow(tool_names)
        if table.schema.equals(target):
            return table
        columns = [_conform(table.column(field.name).combine_chunks() if field.name in table.column_names else None,
                            field.type, table.num_rows) for field in target]
        return pa.Table.from_arrays(columns, schema=target)


def _drop_per_tool(fields: Sequence[Field], row: dict) -> None:
    for field in fields:
        if field.kind == "per_tool":
            row.pop(field.name, None)
        elif field.kind == "struct" and isinstance(row.get(field.name), dict):
            _drop_per_tool(field.fields, row[field.name])


def _conform(array, target, length: int):
    import pyarrow as pa

    if array is None:
        return pa.nulls(length, target)
    if array.type.equals(target):
        return array
    if pa.types.is_struct(target):
        present = {array.type.field(index).name for index in range(array.type.num_fields)}
        children = [_conform(array.field(child.name) if child.name in present else None, child.type, length)
                    for child in target]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=array.is_null())
    return array.cast(target)


#: The record of DESIGN.md: the original framework's four keys, extra_info carrying everything needed to run it.
RECORD_SCHEMA = RecordSchema((
    Field("data_source", "text", doc='"bootcamp/<namespace>"'),
    Field("prompt", "messages", doc='[{"role": "user", "content": <prompt_func output>}]'),
    Field("reward_model", "struct", (
        Field("ground_truth", "identity", doc="the identity itself"),
        Field("style", "text", doc='"rule"'),
    )),
    Field("extra_info", "struct", (
        Field("index", "integer", doc="counts across splits"),
        Field("split", "text"),
        Field("generator_name", "text", doc="the instruction-config group name"),
        Field("tools_kwargs", "per_tool", (
            Field("create_kwargs", "struct", (Field("identity", "identity"),)),
        ), doc="{<Tool.name>: {\"create_kwargs\": {\"identity\": <identity>}}}"),
        Field("need_tools_kwargs", "boolean"),
        Field("interaction_kwargs", "struct", (
            Field("name", "text", doc="the interaction id"),
            Field("identity", "identity"),
        ), optional=True, doc="absent when the task has no interaction"),
        Field("bootcamp", "struct", (
            Field("generator", "text"),
            Field("tools", "texts"),
            Field("interaction", "text", nullable=True, doc="the interaction id, or null"),
            Field("reward", "text"),
            Field("versions", "json", doc="{<distribution>: <version>}"),
        )),
    )),
))
