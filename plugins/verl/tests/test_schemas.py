"""Tool schemas fitted to what verl keeps: checked against verl's own schema models."""

from __future__ import annotations

import json

import pytest

from bootcamp_core import ConfigError
from bootcamp_verl.schemas import decode_json_parameters, verl_schema

SCHEMAS = {
    "scalars": {"type": "object", "properties": {
        "word": {"type": "string", "description": "A word.", "maxLength": 5},
        "count": {"type": ["integer", "null"], "minimum": 0},
        "mode": {"enum": ["fast", "slow"]},
        "level": {"enum": [1, 2.5]},
    }, "required": ["word"], "additionalProperties": False},
    "nested": {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string"}, "description": "Labels."},
        "point": {"type": "object", "properties": {"x": {"type": "number"}}},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "anything": {},
        "free": {"type": "object"},
    }},
    "empty": {"type": "object"},
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_verl_keeps_the_fitted_schema_whole(name):
    from verl.tools.schemas import OpenAIFunctionToolSchema

    fitted = verl_schema("t/tool", {"name": "tool", "description": "A tool.", "parameters": SCHEMAS[name]})
    parsed = OpenAIFunctionToolSchema.model_validate(fitted.schema)
    assert parsed.model_dump(exclude_unset=True, exclude_none=True) == fitted.schema


def test_scalar_parameters_keep_their_shape_and_dropped_constraints_are_listed():
    fitted = verl_schema("t/tool", {"name": "tool", "parameters": SCHEMAS["scalars"]})
    properties = fitted.schema["function"]["parameters"]["properties"]
    assert properties["word"] == {"type": "string", "description": "A word."}
    assert properties["count"] == {"type": ["integer", "null"]}
    assert properties["mode"] == {"type": "string", "enum": ["fast", "slow"]}  # verl needs a type: the enum's
    assert properties["level"] == {"type": ["integer", "number"], "enum": [1, 2.5]}
    assert fitted.json_parameters == ()
    assert set(fitted.dropped) == {"additionalProperties", "word.maxLength", "count.minimum"}
    assert fitted.schema["function"]["parameters"]["required"] == ["word"]


def test_parameters_with_structure_become_json_text_with_their_schema():
    fitted = verl_schema("t/tool", {"name": "tool", "parameters": SCHEMAS["nested"]})
    properties = fitted.schema["function"]["parameters"]["properties"]
    assert fitted.json_parameters == ("tags", "point", "either", "anything")
    assert properties["free"] == {"type": "object"}  # an object of any shape loses nothing
    tags = properties["tags"]
    assert tags["type"] == "string" and tags["description"].startswith("Labels. (JSON text of a value matching")
    schema_text = tags["description"].split("JSON Schema: ", 1)[1].rstrip(")")
    assert json.loads(schema_text) == {"type": "array", "items": {"type": "string"}}


def test_strict_schemas_refuse_structure_naming_the_parameters():
    with pytest.raises(ConfigError, match=r"tool t/tool: .*tags: .*point: "):
        verl_schema("t/tool", {"name": "tool", "parameters": SCHEMAS["nested"]}, strict=True)
    verl_schema("t/tool", {"name": "tool", "parameters": SCHEMAS["scalars"]}, strict=True)  # nothing to refuse


@pytest.mark.parametrize("parameters, error", [
    ([], "must be a JSON Schema object"),
    ({"type": "string"}, "must have type object"),
])
def test_parameters_that_are_not_an_object_schema_are_refused(parameters, error):
    with pytest.raises(ConfigError, match=error):
        verl_schema("t/tool", {"name": "tool", "parameters": parameters})


def test_json_text_is_decoded_and_other_values_pass():
    names = frozenset({"tags", "point"})
    assert decode_json_parameters({"tags": '["a"]', "point": {"x": 1}, "word": "[1]"}, names) == {
        "tags": ["a"], "point": {"x": 1}, "word": "[1]"}
    with pytest.raises(ValueError, match="argument 'tags' must be JSON text"):
        decode_json_parameters({"tags": "[a"}, names)


def test_local_references_are_spelled_out_in_the_json_text_schema():
    parameters = {
        "type": "object",
        "$defs": {
            "Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}},
            "Tree": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}},
        },
        "properties": {
            "path": {"type": "array", "items": {"$ref": "#/$defs/Point"}, "description": "Points."},
            "origin": {"$ref": "#/$defs/Point"},
            "tree": {"$ref": "#/$defs/Tree"},
        },
    }
    fitted = verl_schema("t/tool", {"name": "tool", "parameters": parameters})
    properties = fitted.schema["function"]["parameters"]["properties"]

    def schema_of(name):
        return json.loads(properties[name]["description"].split("JSON Schema: ", 1)[1].removesuffix(")"))

    point = parameters["$defs"]["Point"]
    assert fitted.json_parameters == ("path", "origin", "tree")
    assert schema_of("path") == {"type": "array", "items": point}
    assert schema_of("origin") == point
    # a recursive reference stays a reference, with the definitions it needs beside it
    tree = schema_of("tree")
    assert tree["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"} and "Tree" in tree["$defs"]
    assert "$defs" not in fitted.dropped
