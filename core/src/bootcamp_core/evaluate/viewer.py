"""The report's trajectory viewer: every episode of a results file, compressed into the report, shown by a script.

Episodes are streamed in, cut (any single text over :data:`MESSAGE_LIMIT` characters keeps its start and a marker;
the full text stays in results.jsonl) and gzip-compressed incrementally in chunks of about :data:`CHUNK_BYTES`.
Each chunk is base64 text in a ``<script type="application/octet-stream">`` element, which a browser never runs
and which base64 can never close; the report's script inflates a chunk with the browser's ``DecompressionStream``
only when an episode of it is opened or searched. The script renders model text with ``textContent`` only.

A chunk is one episode per line (JSON, so a search can scan a chunk's text without parsing every episode); the
index is one compact row per episode, enough to list, sort and filter without opening any chunk.
"""

from __future__ import annotations

import base64
import json
import math
import tempfile
import zlib
from collections.abc import Iterator
from importlib import resources
from typing import Any

from bootcamp_core.data.schema import compact_dumps

__all__ = ["CHUNK_BYTES", "CUT_MARKER", "INDEX_FIELDS", "MESSAGE_LIMIT", "EpisodePayload", "cut_text",
           "episode_view", "report_episodes", "viewer_css", "viewer_script"]

#: The longest text of one message (or tool call, or answer) embedded in the report; longer ones are cut.
MESSAGE_LIMIT = 20_000
#: Uncompressed bytes of episodes per chunk: small enough to inflate at once, large enough to compress well.
CHUNK_BYTES = 1 << 21
#: Compressed episodes held in memory before they go to a temporary file until the report is written.
SPOOL_BYTES = 1 << 20
#: Text of episodes (and of index rows) gathered before it is compressed, in one call: the compressor's state (a few
#: hundred KB) stays in the processor's cache for the call, where a call per episode fetched it back every time.
PENDING_BYTES = 1 << 16
#: Bytes of the compressed index encoded at a time when the report is written (a multiple of 3).
INDEX_PIECE_BYTES = 3 << 16
#: What ends a cut text; the script shows it as a marker.
CUT_MARKER = "[cut by the report: {dropped} more characters; the full text is in results.jsonl]"
#: The columns of one index row, in order (the script reads them by position).
INDEX_FIELDS = ("id", "data_source", "generator", "score", "solved", "success", "finish_reason", "error_kind",
                "reached_max_turns", "assistant_turns", "tool_calls", "chunk", "line")


def cut_text(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` itself when it fits in ``limit`` characters, else its start and :data:`CUT_MARKER`."""
    if len(text) <= limit:
        return text
    return text[:limit] + "\n" + CUT_MARKER.format(dropped=len(text) - limit)


def _kept(value: Any) -> bool:
    """Whether a value goes into the view as it is (a short string, an int, a bool, None, a finite float)."""
    kind = type(value)
    return (kind is str and len(value) <= MESSAGE_LIMIT) or kind in (int, bool, type(None)) or (
        kind is float and math.isfinite(value))


def _cut(value: Any, depth: int = 0) -> Any:
    """``value`` with every string cut to :data:`MESSAGE_LIMIT`; structures nested past 30 levels become text."""
    # leaves are tested inline, not by a call each: this walk is most of a report's build time
    if isinstance(value, str):
        return cut_text(value)
    if depth > 30:
        return cut_text(json.dumps(value, ensure_ascii=False, default=repr))
    if isinstance(value, dict):
        return {key if type(key) is str else str(key): item if _kept(item) else _cut(item, depth + 1)
                for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [item if _kept(item) else _cut(item, depth + 1) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # JSON has no NaN; the script shows the text
    return value


def _plain(value: dict | list | tuple, depth: int = 0) -> bool:
    """Whether :func:`_cut` would give ``value`` back as it is (as JSON): str keys, no string over
    :data:`MESSAGE_LIMIT`, no structure nested past 30 levels, no non-finite float, nothing but JSON's types. A walk
    that copies nothing, so most episodes skip the cutting copy."""
    if depth > 30:
        return False
    if type(value) is dict:
        for key in value:
            if type(key) is not str:
                return False
        items: Any = value.values()
    else:
        items = value
    for item in items:
        kind = type(item)
        if kind is str:
            if len(item) > MESSAGE_LIMIT:
                return False
        elif kind is dict or kind is list or kind is tuple:
            if not _plain(item, depth + 1):
                return False
        elif kind is float:
            if item - item != 0.0:  # infinite or NaN
                return False
        elif kind is not int and kind is not bool and item is not None:
            return False
    return True


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _ground_truth(line: dict) -> Any:
    """The record's identity: the line's ``ground_truth``, else its input's; JSON text (the original framework's,
    Parquet's) is parsed."""
    truth = line.get("ground_truth")
    if truth is None:
        truth = _dict(_dict(line.get("input")).get("reward_model")).get("ground_truth")
    if isinstance(truth, str) and truth.lstrip().startswith(("{", "[")):
        try:
            return json.loads(truth)
        except ValueError:
            return truth
    return truth


class _HiddenFields:
    """A generator's ``hidden_fields`` by id: the line's own list, else the installed class's (none when the
    plugin is not installed: a report never needs one)."""

    def __init__(self) -> None:
        self._known: dict[str, list[str]] = {}

    def __call__(self, line: dict) -> list[str]:
        own = line.get("hidden_fields")
        if isinstance(own, list):
            return [str(name) for name in own]
        generator = line.get("generator")
        if not isinstance(generator, str) or not generator:
            return []
        if generator not in self._known:
            self._known[generator] = self._lookup(generator)
        return self._known[generator]

    @staticmethod
    def _lookup(generator: str) -> list[str]:
        try:
            from bootcamp_core.plugin.loader import get_registry

            fields = getattr(get_registry().get_class("generator", generator), "hidden_fields", ())
            return [str(name) for name in fields] if isinstance(fields, list | tuple) else []
        except Exception:  # noqa: BLE001 - not installed, broken, or strict: the truth is shown unmarked
            return []


def _without_repeats(records: list, messages: list) -> list:
    """The tool-call records less the arguments and outputs the messages already hold (the viewer reads those
    from the messages): each would otherwise be embedded twice."""
    arguments: dict[str, Any] = {}
    outputs: dict[str, Any] = {}
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool" and isinstance(message.get("tool_call_id"), str):
            outputs[message["tool_call_id"]] = message.get("content")
        for call in message.get("tool_calls") or () if isinstance(message.get("tool_calls"), list) else ():
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                arguments[call["id"]] = _dict(call.get("function")).get("arguments")
    kept = []
    for record in records:
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            call = record["id"]
            record = {key: value for key, value in record.items()
                      if not (key == "output" and call in outputs and outputs[call] == value)
                      and not (key == "arguments" and call in arguments and arguments[call] == value)}
        kept.append(record)
    return kept


def episode_view(line: dict, hidden_fields: list[str] | None = None) -> dict:
    """What the viewer shows of one results line: its fields without the run-wide ones, every text cut."""
    view = _view(line, hidden_fields)
    return view if _plain(view) else _cut(view)


#: JSON of the chunks and the index: compact, and refusing what JSON cannot hold (NaN, objects of other types)
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def _view_text(view: dict) -> str:
    """The JSON text of :func:`episode_view`'s view of a line, given the view before its texts are cut (``view``).

    The cut walk (:func:`_plain`) is skipped where it could change nothing the viewer shows: a view whose JSON text
    is at most :data:`MESSAGE_LIMIT` characters holds no longer string, and encoding it showed it holds nothing but
    JSON (a short view nested past 30 levels stays as it is: its text is as small as the rest). A longer one is
    walked, and encoded again only where it had something to cut."""
    text = compact_dumps(view)  # the fast encoder, None where its text would not read back as the view
    if text is None:
        try:
            text = _COMPACT(view)
        except (TypeError, ValueError, RecursionError):  # NaN, an object of another type, a key JSON has no text for
            text = None
    if text is None or (len(text) > MESSAGE_LIMIT and not _plain(view)):
        text = json.dumps(_cut(view), ensure_ascii=False, separators=(",", ":"), default=repr)
    # a line break inside a string is escaped by JSON; these two would still split a line in the script
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


#: Fields of a results line the view leaves out (the run's, shown once) or puts in as it shows them.
_NOT_VIEWED = frozenset(("input", "tools", "evaluation_config", "messages", "ground_truth", "full_context"))


def _view(line: dict, hidden_fields: list[str] | None) -> dict:
    """:func:`episode_view` before its texts are cut."""
    messages = line.get("messages")
    if not isinstance(messages, list):  # a line without a conversation: at least its prompt
        prompt = _dict(line.get("input")).get("prompt")
        messages = prompt if isinstance(prompt, list) else []
    view = {key: value for key, value in line.items() if key not in _NOT_VIEWED}
    view["messages"] = messages
    if isinstance(line.get("tool_calls"), list):
        view["tool_calls"] = _without_repeats(line["tool_calls"], messages)
    view["ground_truth"] = _ground_truth(line)
    view["hidden_fields"] = hidden_fields or []
    if "data_source" not in view:  # the original framework keeps it only inside input
        view["data_source"] = _dict(line.get("input")).get("data_source")
    return view


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            value = float(value)
        except (TypeError, ValueError):
            return None
    return float(value) if math.isfinite(value) else None


def _count(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


class EpisodePayload:
    """Episodes added one at a time, compressed as they come: ``add(line)`` for each, then :meth:`index` and
    :meth:`chunks` (base64 text of gzip streams).

    Memory stays flat in the number of episodes: the index rows go into their own gzip stream (:data:`PENDING_BYTES`
    of them at a time), written to a temporary file as it comes, and each finished chunk into another (each kept in
    memory while small) until the report is written.
    """

    def __init__(self, chunk_bytes: int = CHUNK_BYTES) -> None:
        self.chunk_bytes = chunk_bytes
        self.count = 0
        self._index: Any = zlib.compressobj(6, zlib.DEFLATED, 31)  # None once the index is complete
        self._index_spool: Any = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - kept with the payload
        self._index_spool.write(self._index.compress(b"["))
        self._index_started = False  # whether a row went into the index's stream (the next is after a comma)
        self._spool: Any = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - closed in chunks()
        self._chunk_sizes: list[int] = []
        self._hidden = _HiddenFields()
        self._open: Any = None
        self._parts: list[bytes] = []
        self._size = 0
        self._pending: list[str] = []  # episodes' text not compressed yet (PENDING_BYTES), in the open chunk
        self._pending_size = 0
        self._rows: list[str] = []  # index rows' text not compressed yet
        self._rows_size = 0

    def add(self, line: dict) -> None:
        """Index and compress one results line (any JSON object: missing fields render as missing)."""
        from bootcamp_core.evaluate.statistics import is_solved_line

        view = _view(line, self._hidden(line))
        text = _view_text(view)
        if self._open is None:
            self._open = zlib.compressobj(6, zlib.DEFLATED, 31)  # 31: the gzip format DecompressionStream reads
            self._parts, self._size = [], 0
        self._pending.append(text)
        self._pending_size += len(text) + 1
        if self._pending_size >= PENDING_BYTES:
            self._compress_pending()
        turns = _dict(line.get("turn_record"))
        calls = turns.get("tool_calls")
        if calls is None and isinstance(line.get("tool_calls"), list):
            calls = len(line["tool_calls"])
        episode = view.get("id")
        row = [  # the view above is the uncut one: a text of the row is cut here
            cut_text(episode) if isinstance(episode, str) and episode else f"line {self.count + 1}",
            cut_text(str(view.get("data_source") or "")),
            cut_text(str(line.get("generator") or line.get("generator_name") or "")),
            _number(line.get("score")), is_solved_line(line), line.get("success") is not False,
            cut_text(str(line.get("finish_reason") or "")),
            cut_text(str(line.get("error_kind") or line.get("error_type") or "")),
            bool(line.get("reached_max_turns")), _count(turns.get("assistant_turns")), _count(calls),
            len(self._chunk_sizes), self.count + 1,
        ]
        row_text = compact_dumps(row) or _COMPACT(row)
        self._rows.append(row_text)
        self._rows_size += len(row_text) + 1
        if self._rows_size >= PENDING_BYTES:
            self._compress_rows()
        self.count += 1
        if self._size + self._pending_size >= self.chunk_bytes:
            self._close_chunk()

    def _compress_pending(self) -> None:
        """The episodes' text gathered so far into the open chunk's gzip stream (one line each)."""
        if self._pending:
            data = ("\n".join(self._pending) + "\n").encode("utf-8")
            self._parts.append(self._open.compress(data))
            self._size += len(data)
            self._pending, self._pending_size = [], 0

    def _compress_rows(self) -> None:
        """The index rows gathered so far into the index's gzip stream (the array's elements, comma-separated)."""
        if self._rows:
            text = ("," if self._index_started else "") + ",".join(self._rows)
            compressed = self._index.compress(text.encode("utf-8"))
            if compressed:
                self._index_spool.write(compressed)
            self._index_started = True
            self._rows, self._rows_size = [], 0

    def _close_chunk(self) -> None:
        if self._open is None:
            return
        self._compress_pending()
        self._parts.append(self._open.flush())
        chunk = base64.b64encode(b"".join(self._parts))
        self._spool.write(chunk)
        self._chunk_sizes.append(len(chunk))
        self._open, self._parts, self._size = None, [], 0

    def index(self) -> str:
        """The index rows (:data:`INDEX_FIELDS`), gzip-compressed, as base64 text (no row can be added after)."""
        return "".join(self.iter_index())

    def iter_index(self) -> Iterator[str]:
        """:meth:`index` in pieces, read back from its temporary file (base64 of whole 3-byte groups, so the
        pieces joined are the text of the whole)."""
        spool = self._index_spool
        if self._index is not None:  # the stream's end, once
            self._compress_rows()
            spool.write(self._index.compress(b"]"))
            spool.write(self._index.flush())
            self._index = None
        spool.seek(0)
        while block := spool.read(INDEX_PIECE_BYTES):
            yield base64.b64encode(block).decode("ascii")

    def iter_chunks(self) -> Iterator[str]:
        """Every chunk of episodes as base64 text, read back one at a time (closing the one being filled)."""
        self._close_chunk()
        self._spool.seek(0)
        for size in self._chunk_sizes:
            yield self._spool.read(size).decode("ascii")

    def chunks(self) -> list[str]:
        """Every chunk of episodes as base64 text (closing the one being filled)."""
        return list(self.iter_chunks())

    def elements(self) -> Iterator[str]:
        """The payload's HTML: non-executed script elements holding base64 only."""
        yield '<script type="application/octet-stream" id="episode-index">'
        yield from self.iter_index()
        yield "</script>\n"
        for number, chunk in enumerate(self.iter_chunks()):
            yield f'<script type="application/octet-stream" class="episode-chunk" data-chunk="{number}">{chunk}</script>\n'


def _asset(name: str) -> str:
    return resources.files("bootcamp_core.evaluate").joinpath(name).read_text(encoding="utf-8")


def viewer_script() -> str:
    """The viewer's script (vanilla JavaScript; it never writes data through innerHTML)."""
    return _asset("viewer.js")


def viewer_css() -> str:
    """The viewer's style sheet."""
    return _asset("viewer.css")


_OPEN = '<script type="application/octet-stream" '


def report_episodes(report: str) -> tuple[list[list], list[dict]]:
    """The index rows and the episodes embedded in a report's HTML, as the viewer reads them (for checks)."""
    index: list[list] = []
    episodes: list[dict] = []
    at = report.find(_OPEN)
    while at >= 0:
        start = report.index(">", at) + 1
        end = report.index("</script>", start)
        text = zlib.decompress(base64.b64decode(report[start:end]), 47).decode("utf-8")  # 47: gzip or zlib
        if report.startswith('id="episode-index"', at + len(_OPEN)):
            index = json.loads(text)
        else:
            episodes.extend(json.loads(line) for line in text.splitlines() if line)
        at = report.find(_OPEN, end)
    return index, episodes
