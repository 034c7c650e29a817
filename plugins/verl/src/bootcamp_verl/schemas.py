"""Tool schemas in the subset verl keeps, so the model trains on the schema it is evaluated with.

verl 0.9 parses a tool's parameters into pydantic models that keep, per parameter, only ``type``, ``description``
and ``enum`` (``verl.tools.schemas.OpenAIFunctionPropertySchema``), and at the top only ``type``, ``properties`` and
``required``; everything else is dropped without a word. A parameter whose value has structure (``items``,
``properties``, ``anyOf`` ...) would reach the model as a bare ``array`` or ``object``. Such a parameter is offered
as a JSON-text string instead, its schema spelled out in the description (local ``$ref``s into ``$defs`` /
``definitions`` resolved, the definitions kept only for a recursive one), and the adapter decodes it before the
tool sees it (:func:`decode_json_parameters`). Constraints on plain values (``maxLength``, ``minimum`` ...) are
dropped by verl too; the tool still checks its arguments, so they are only reported.

This module imports no verl.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from bootcamp_core import ConfigError

__all__ = ["KEPT_PARAMETER_KEYS", "VerlSchema", "decode_json_parameters", "verl_schema"]

#: What verl keeps of one parameter's schema.
KEPT_PARAMETER_KEYS = ("type", "description", "enum")
#: What verl keeps of the parameters object.
KEPT_TOP_KEYS = ("type", "properties", "required")
#: Keywords that give a value structure; verl drops them, so a parameter using one is passed as JSON text.
STRUCTURAL_KEYS = frozenset({
    "items", "prefixItems", "contains", "properties", "patternProperties", "additionalProperties",
    "propertyNames", "dependentSchemas", "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref",
})
_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (type(None), "null"))


@attrs.frozen
class VerlSchema:
    """A tool's OpenAI schema fitted to verl, and what fitting it changed."""

    #: ``{"type": "function", "function": {...}}``: what goes in ``tool_schema`` of verl's tool config
    schema: dict
    #: parameters offered as JSON text (the adapter decodes them)
    json_parameters: tuple[str, ...] = ()
    #: ``parameter.keyword`` (or a top-level keyword) that verl drops and that does not change a value's shape
    dropped: tuple[str, ...] = ()


def _enum_type(values: list) -> str | list[str]:
    kinds = []
    for value in values:
        kind = next((name for cls, name in _JSON_TYPES if isinstance(value, cls)), "string")
        if kind not in kinds:
            kinds.append(kind)
    return kinds[0] if len(kinds) == 1 else kinds


def _resolve(spec: Any, root: dict, seen: tuple[str, ...] = ()) -> tuple[Any, bool]:
    """``spec`` with its local references (``#/$defs/...``, ``#/definitions/...``) into ``root`` replaced by their
    schemas; also whether a recursive reference had to be kept as a ``$ref`` (its definitions must then go along)."""
    if isinstance(spec, list):
        items = [_resolve(item, root, seen) for item in spec]
        return [item for item, _ in items], any(kept for _, kept in items)
    if not isinstance(spec, dict):
        return spec, False
    ref = spec.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/") and ref not in seen:
        target: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        if isinstance(target, dict):
            resolved, kept = _resolve(target, root, (*seen, ref))
            siblings = {key: value for key, value in spec.items() if key != "$ref"}
            if siblings:  # keywords beside a $ref apply too (JSON Schema 2019-09 and later)
                resolved_siblings, kept_siblings = _resolve(siblings, root, seen)
                resolved = {**resolved, **resolved_siblings}
                kept = kept or kept_siblings
            return resolved, kept
    kept = isinstance(ref, str) and ref in seen
    result = {}
    for key, value in spec.items():
        if key in ("$defs", "definitions") and spec is root:
            continue
        result[key], inner_kept = _resolve(value, root, seen)
        kept = kept or inner_kept
    return result, kept


def _json_text_schema(spec: Any, root: dict) -> dict:
    """The schema a JSON-text parameter's description spells out: local references resolved, the definitions
    carried along only when a recursive reference needs them."""
    inner = {key: value for key, value in spec.items() if key != "description"} if isinstance(spec, dict) else {}
    resolved, kept = _resolve(inner, root)
    if kept:
        definitions = {key: root[key] for key in ("$defs", "definitions") if isinstance(root.get(key), dict)}
        resolved = {**resolved, **definitions}
    return resolved


def _structured(spec: Any) -> bool:
    if not isinstance(spec, dict):
        return True
    if STRUCTURAL_KEYS & spec.keys():
        return True
    return "type" not in spec and "enum" not in spec  # any value at all: only JSON text says which


def verl_schema(tool_id: str, function: dict, *, strict: bool = False) -> VerlSchema:
    """Fit a tool's function schema (``{"name", "description", "parameters"}``) to what verl keeps.

    ``strict``: a parameter with structure is a :class:`ConfigError` instead of a JSON-text parameter.
    """
    parameters = function.get("parameters")
    parameters = {} if parameters is None else parameters
    if not isinstance(parameters, dict):
        raise ConfigError(f"tool {tool_id}: parameters must be a JSON Schema object, got {type(parameters).__name__}")
    if parameters.get("type", "object") != "object":
        raise ConfigError(f"tool {tool_id}: parameters must have type object, got {parameters.get('type')!r}")
    properties = parameters.get("properties") or {}
    # $defs / definitions are spelled out in the JSON-text parameters that refer to them
    dropped = [key for key in parameters if key not in (*KEPT_TOP_KEYS, "$defs", "definitions")]
    structured = [name for name, spec in properties.items() if _structured(spec)]
    if structured and strict:
        details = "; ".join(f"{name}: {json.dumps(properties[name], sort_keys=True)}" for name in structured)
        raise ConfigError(
            f"tool {tool_id}: verl keeps only {', '.join(KEPT_PARAMETER_KEYS)} of a parameter, so these would reach "
            f"the model without their structure: {details}. Flatten them, or export without --strict-schemas to "
            "pass them as JSON text."
        )
    fitted: dict[str, dict] = {}
    for name, spec in properties.items():
        if name in structured:
            inner = _json_text_schema(spec, parameters)
            text = f"JSON text of a value matching this JSON Schema: {json.dumps(inner, sort_keys=True)}"
            description = spec.get("description") if isinstance(spec, dict) else None
            fitted[name] = {"type": "string", "description": f"{description} ({text})" if description else text}
            continue
        kept = {key: spec[key] for key in KEPT_PARAMETER_KEYS if key in spec}
        if "type" not in kept:  # an enum alone: verl requires a type, the enum's values say which
            kept["type"] = _enum_type(list(spec["enum"]))
        fitted[name] = kept
        dropped += [f"{name}.{key}" for key in spec if key not in KEPT_PARAMETER_KEYS]
    required = parameters.get("required") or []
    schema = {
        "type": "function",
        "function": {
            "name": function["name"],
            "description": function.get("description") or "",
            "parameters": {"type": "object", "properties": fitted, "required": list(required)},
        },
    }
    return VerlSchema(schema=schema, json_parameters=tuple(structured), dropped=tuple(dropped))


def decode_json_parameters(parameters: dict, names: tuple[str, ...] | frozenset[str]) -> dict:
    """The arguments with each JSON-text parameter decoded; a value that is not text is taken as given.

    Raises ``ValueError`` with a message for the model when the text is not JSON.
    """
    if not names or not any(name in parameters for name in names):
        return parameters
    decoded = dict(parameters)
    for name in names:
        value = decoded.get(name)
        if isinstance(value, str):
            try:
                decoded[name] = json.loads(value)
            except ValueError as error:
                raise ValueError(f"argument {name!r} must be JSON text ({error})") from None
    return decoded
