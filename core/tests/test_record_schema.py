"""The record schema as a value: what generation writes matches it, every file format derives from it, an extension
round-trips without other code changing, generated Parquet loads in HF datasets, pandas and pyarrow alike, and files
written before it still read."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bootcamp_core import GeneratedSample, read_records, write_records
from bootcamp_core.data.generate import _concat_parquet
from bootcamp_core.data.io import parquet_tool_names, read_jsonl
from bootcamp_core.data.schema import RECORD_SCHEMA, Field, RecordSchema
from bootcamp_core.testing import generate_dataset, generate_records

BEFORE = Path(__file__).parent / "data" / "records_before_schema"


def arrow_types(data_type) -> list:
    """Every type inside an Arrow type, itself included."""
    found = [data_type]
    if pa.types.is_struct(data_type):
        for field in data_type:
            found += arrow_types(field.type)
    elif pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        found += arrow_types(data_type.value_type)
    elif pa.types.is_map(data_type):
        found += arrow_types(data_type.key_type) + arrow_types(data_type.item_type)
    return found


def without_tools_and_interaction(record: dict, index: int) -> dict:
    bare = copy.deepcopy(record)
    extra = bare["extra_info"]
    extra.update(index=index, tools_kwargs={}, need_tools_kwargs=False)
    extra.pop("interaction_kwargs")
    extra["bootcamp"].update(tools=[], interaction=None)
    return bare


@pytest.fixture(scope="module")
def example_records(example_registry) -> list[dict]:
    return generate_records("example", example_registry, overrides={"split_samples": "test:6", "seed": 3})


def test_generated_records_match_the_schema_and_its_layout(example_records):
    for record in example_records + [without_tools_and_interaction(example_records[0], 6)]:
        assert RECORD_SCHEMA.problems(record) == []
    record = example_records[0]
    # the JSON line lists the schema's fields in the schema's order
    assert list(record) == [field.name for field in RECORD_SCHEMA.fields]
    assert list(record["extra_info"]) == [field.name for field in RECORD_SCHEMA.field("extra_info").fields]
    assert list(record["extra_info"]["bootcamp"]) == [
        field.name for field in RECORD_SCHEMA.field("extra_info.bootcamp").fields]
    # and GeneratedSample, the typed view, lays it out exactly so
    assert GeneratedSample.from_record(record).to_record() == record


def test_problems_name_the_path_of_what_is_wrong(example_records):
    record = copy.deepcopy(example_records[0])
    record["extra_info"]["index"] = "three"
    del record["extra_info"]["split"]
    record["extra_info"]["bootcamp"]["colour"] = "red"
    record["reward_model"]["ground_truth"] = None
    assert RECORD_SCHEMA.problems(record) == [
        "reward_model.ground_truth: null",
        "extra_info.index: expected integer, got str",
        "extra_info.split: missing",
        "extra_info.bootcamp.colour: not in the schema",
    ]


def test_a_schema_is_a_value_and_extending_it_leaves_the_original(example_records):
    extended = RECORD_SCHEMA.extend("extra_info", Field("difficulty", "integer"))
    assert extended != RECORD_SCHEMA and extended.field("extra_info.difficulty").kind == "integer"
    with pytest.raises(KeyError, match="difficulty"):
        RECORD_SCHEMA.field("extra_info.difficulty")
    assert RECORD_SCHEMA.extend("extra_info", Field("difficulty", "integer")) == extended
    with pytest.raises(ValueError, match="already has a field 'index'"):
        RECORD_SCHEMA.extend("extra_info", Field("index", "integer"))
    with pytest.raises(KeyError, match="extra_info.nowhere"):
        RECORD_SCHEMA.extend("extra_info.nowhere", Field("x", "text"))
    with pytest.raises(ValueError, match="holds no fields"):
        RECORD_SCHEMA.extend("data_source", Field("x", "text"))
    with pytest.raises(ValueError):
        Field("x", "colour")


def test_an_extended_schema_round_trips_through_jsonl_and_parquet(example_records, tmp_path):
    schema = RECORD_SCHEMA.extend("extra_info", Field("difficulty", "integer")).extend(
        "extra_info.bootcamp", Field("notes", "json"))
    records = []
    for number, record in enumerate(example_records):
        record = copy.deepcopy(record)
        record["extra_info"]["difficulty"] = number
        record["extra_info"]["bootcamp"]["notes"] = {"seen": [number, "twice"]}
        records.append(record)
    assert all(schema.problems(record) == [] for record in records)
    for name in ("records.jsonl", "records.parquet"):
        write_records(tmp_path / name, records, schema=schema)
        assert list(read_records(tmp_path / name, schema=schema)) == records
    table = pq.read_table(tmp_path / "records.parquet")
    assert table.schema.equals(schema.arrow(["calculator"]))
    assert table.column("extra_info").combine_chunks().field("difficulty").to_pylist() == list(range(len(records)))
    # the default schema has no column for the added field: it refuses rather than drop it
    with pytest.raises(ValueError, match="'difficulty' not in the record schema"):
        write_records(tmp_path / "lossy.parquet", records)
    assert not (tmp_path / "lossy.parquet").exists()


def test_generated_parquet_loads_in_hf_datasets_pandas_and_pyarrow_with_the_same_rows(
        example_registry, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets
    import pandas

    files = generate_dataset("example", tmp_path / "data", example_registry,
                             overrides={"split_samples": "test:12", "seed": 5, "gen_parquet": True})
    jsonl, parquet = files
    records = list(read_jsonl(jsonl))
    arrow = pq.read_schema(parquet)
    assert not any(pa.types.is_map(found) for field in arrow for found in arrow_types(field.type))

    by_pyarrow = pq.read_table(parquet).to_pylist()
    by_datasets = list(datasets.load_dataset("parquet", data_files=str(parquet), split="train",
                                             cache_dir=str(tmp_path / "cache")))
    by_pandas = [to_python(row) for row in pandas.read_parquet(parquet).to_dict("records")]
    assert by_datasets == by_pyarrow
    assert by_pandas == by_pyarrow
    assert [RECORD_SCHEMA.from_row(row) for row in by_pyarrow] == records
    # verl reads tools_kwargs as a dict keyed by tool name, identities as JSON text
    assert by_datasets[0]["extra_info"]["tools_kwargs"].keys() == {"calculator"}
    assert json.loads(by_datasets[0]["extra_info"]["bootcamp"]["versions"]) == records[0]["extra_info"]["bootcamp"][
        "versions"]


def to_python(value):
    """pandas' cells as plain Python: numpy arrays to lists, numpy scalars to Python scalars."""
    if isinstance(value, dict):
        return {key: to_python(item) for key, item in value.items()}
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return to_python(value.tolist())
    if isinstance(value, list):
        return [to_python(item) for item in value]
    return value


def test_files_written_before_the_schema_still_read(example_records):
    """Parquet of the earlier layout (Arrow map columns for tools_kwargs and versions) reads as its JSONL twin."""
    arrow = pq.read_schema(BEFORE / "example_test.parquet")
    assert pa.types.is_map(arrow.field("extra_info").type.field("tools_kwargs").type)
    old_parquet = list(read_records(BEFORE / "example_test.parquet"))
    old_jsonl = list(read_records(BEFORE / "example_test.jsonl"))
    assert old_parquet == old_jsonl and len(old_jsonl) == 8
    assert old_parquet[6]["extra_info"]["tools_kwargs"] == {} and "interaction_kwargs" not in old_parquet[6]["extra_info"]
    assert isinstance(old_parquet[7]["prompt"][0]["content"], list)  # content parts survive
    assert isinstance(old_parquet[0]["extra_info"]["bootcamp"]["versions"], dict)
    # and generation still writes those records' JSON lines byte for byte
    lines = (BEFORE / "example_test.jsonl").read_text(encoding="utf-8").splitlines()[:6]
    from bootcamp_core.data.io import dumps

    assert [dumps(record) for record in example_records] == lines


def test_records_over_different_tools_share_one_file(example_records, tmp_path):
    calculator = example_records[:3]
    other = []
    for number, record in enumerate(example_records[3:]):
        record = copy.deepcopy(record)
        identity = record["reward_model"]["ground_truth"]
        record["extra_info"]["tools_kwargs"] = {name: {"create_kwargs": {"identity": identity}}
                                               for name in ("abacus", "notes")}
        record["extra_info"]["bootcamp"]["tools"] = ["other/abacus", "other/notes"]
        other.append(record)
    bare = [without_tools_and_interaction(example_records[0], 9)]
    write_records(tmp_path / "a.parquet", calculator)
    write_records(tmp_path / "b.parquet", other)
    write_records(tmp_path / "c.parquet", bare)
    assert parquet_tool_names(tmp_path / "c.parquet") == []
    assert "tools_kwargs" not in pq.read_schema(tmp_path / "c.parquet").field("extra_info").type.names
    _concat_parquet([tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.parquet"], tmp_path / "all.parquet")
    assert parquet_tool_names(tmp_path / "all.parquet") == ["abacus", "calculator", "notes"]
    assert list(read_records(tmp_path / "all.parquet")) == calculator + other + bare
    # one file written at once finds the union itself
    write_records(tmp_path / "mixed.parquet", calculator + other + bare)
    assert list(read_records(tmp_path / "mixed.parquet")) == calculator + other + bare


def test_normalize_reads_what_other_writers_made(example_records):
    record = copy.deepcopy(example_records[0])
    identity = record["reward_model"]["ground_truth"]
    text = json.dumps(identity)
    record["reward_model"]["ground_truth"] = text
    record["extra_info"]["tools_kwargs"] = [("calculator", {"create_kwargs": {"identity": text}}), ("other", None)]
    record["extra_info"]["interaction_kwargs"]["identity"] = text
    record["extra_info"]["bootcamp"]["versions"] = json.dumps(example_records[0]["extra_info"]["bootcamp"]["versions"])
    assert RECORD_SCHEMA.normalize(record) == example_records[0]
    # pieces of a record are fine, and text that is not an identity stays text
    assert RECORD_SCHEMA.normalize({"reward_model": {"ground_truth": "[1, 2]"}}) == {
        "reward_model": {"ground_truth": "[1, 2]"}}


def test_the_schema_value_describes_the_design_record():
    assert isinstance(RECORD_SCHEMA, RecordSchema)
    assert [field.name for field in RECORD_SCHEMA.fields] == ["data_source", "prompt", "reward_model", "extra_info"]
    assert RECORD_SCHEMA.field("extra_info.interaction_kwargs").optional
    assert RECORD_SCHEMA.field("extra_info.bootcamp.interaction").nullable
    assert RECORD_SCHEMA.per_tool_paths() == [("extra_info", "tools_kwargs")]
    assert RECORD_SCHEMA.field("extra_info.tools_kwargs.create_kwargs.identity").kind == "identity"


def test_the_readme_records_section_runs():
    import re

    readme = Path(__file__).resolve().parents[2] / "README.md"
    section = readme.read_text(encoding="utf-8").split("\n## Records\n", 1)[1].split("\n## ", 1)[0]
    snippets = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert snippets and "RECORD_SCHEMA.extend" in snippets[0]
    for snippet in snippets:
        exec(compile(snippet, str(readme), "exec"), {})


def test_generate_records_with_a_pool_gives_the_same_records_in_the_same_order(example_registry, example_records):
    # the train split exists in the config too, and is not generated alongside
    overrides = {"split_samples": "train:5,test:6", "seed": 3}
    pooled = generate_records("example", example_registry, overrides=overrides, max_workers=2)
    assert pooled == example_records
    assert generate_records("example", example_registry, split="train", overrides=overrides, max_workers=2) == \
        generate_records("example", example_registry, split="train", overrides=overrides)
