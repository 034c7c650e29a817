"""Records and their files: the typed view of a record, JSONL <-> Parquet without loss, atomic writers."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bootcamp_core.data.io import (
    JsonlWriter,
    ParquetWriter,
    read_jsonl,
    read_parquet,
    read_records,
    write_records,
)
from bootcamp_core.data.records import ERROR_TYPES, EpisodeResult, GeneratedSample, ToolCall, data_source_for

# Non-ASCII, nested, big and awkward values: everything an identity may hold must survive both file formats.
AWKWARD_IDENTITY = {
    "question": "Grüße aus Köln — 日本語 🧮",
    "answer": 0.1,
    "tiny": 1e-8,
    "huge": 2**70,
    "negative_zero": -0.0,
    "flags": [True, False, None],
    "nested": {"grid": [[1, 2], [3, 4]], "labels": {"ä": "ö", "line separators": "a\u2028b\x85c", "tab": "x\ty"}},
    "percent": "100% %(p)s %d",
}


def sample(**changes) -> GeneratedSample:
    values = dict(
        data_source="bootcamp/demo",
        prompt=[{"role": "user", "content": "What is 2 + 2?"}],
        identity={"a": 2, "b": 2, "nested": {"steps": [1, 2.5, None, True], "note": "é"}},
        index=3,
        split="train",
        generator_name="level_1",
        generator="demo/adder",
        reward="demo/adder",
        tools=("demo/calc", "other/notes"),
        tool_names=("calc", "notes"),
        interaction="demo/feedback",
        versions={"bootcamp-demo": "1.2.3", "bootcamp-other": "0.4.0"},
    )
    values.update(changes)
    return GeneratedSample(**values)


def varied_records() -> list[dict]:
    """Records covering every shape the format allows."""
    return [
        sample(identity=AWKWARD_IDENTITY, index=0).to_record(),
        # no interaction: the record has no interaction_kwargs key at all
        sample(interaction=None, tools=("demo/calc",), tool_names=("calc",), index=1).to_record(),
        # a vision prompt: a list of OpenAI content parts
        sample(
            prompt=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Which cell is brighter? ☀"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                    ],
                }
            ],
            index=2,
        ).to_record(),
        # no tools, no interaction, a system message before the user's
        sample(
            prompt=[{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Zähle bis 3."}],
            tools=(),
            tool_names=(),
            interaction=None,
            versions={},
            index=3,
            split="test",
        ).to_record(),
    ]


# ------------------------------------------------------------------------------------------ GeneratedSample
def test_to_record_has_the_documented_shape():
    record = sample().to_record()
    identity = {"a": 2, "b": 2, "nested": {"steps": [1, 2.5, None, True], "note": "é"}}
    assert record == {
        "data_source": "bootcamp/demo",
        "prompt": [{"role": "user", "content": "What is 2 + 2?"}],
        "reward_model": {"ground_truth": identity, "style": "rule"},
        "extra_info": {
            "index": 3,
            "split": "train",
            "generator_name": "level_1",
            "tools_kwargs": {
                "calc": {"create_kwargs": {"identity": identity}},
                "notes": {"create_kwargs": {"identity": identity}},
            },
            "need_tools_kwargs": True,
            "interaction_kwargs": {"name": "demo/feedback", "identity": identity},
            "bootcamp": {
                "generator": "demo/adder",
                "tools": ["demo/calc", "other/notes"],
                "interaction": "demo/feedback",
                "reward": "demo/adder",
                "versions": {"bootcamp-demo": "1.2.3", "bootcamp-other": "0.4.0"},
            },
        },
    }
    assert list(record) == ["data_source", "prompt", "reward_model", "extra_info"]
    assert data_source_for("demo") == "bootcamp/demo"


def test_a_record_without_interaction_has_no_interaction_kwargs_and_without_tools_needs_none():
    record = sample(interaction=None, tools=(), tool_names=()).to_record()
    assert "interaction_kwargs" not in record["extra_info"]
    assert record["extra_info"]["tools_kwargs"] == {}
    assert record["extra_info"]["need_tools_kwargs"] is False
    assert record["extra_info"]["bootcamp"]["interaction"] is None


@pytest.mark.parametrize(
    "original",
    [
        sample(),
        sample(interaction=None),
        sample(tools=(), tool_names=(), versions={}),
        sample(identity=AWKWARD_IDENTITY),
    ],
)
def test_sample_round_trips_through_its_record(original: GeneratedSample):
    record = original.to_record()
    assert GeneratedSample.from_record(json.loads(json.dumps(record))) == original


def test_tool_names_of_one_record_must_be_distinct():
    with pytest.raises(ValueError, match=r"distinct.*\['calc', 'calc'\]"):
        sample(tools=("demo/calc", "other/calc"), tool_names=("calc", "calc"))
    with pytest.raises(ValueError, match="same length"):
        sample(tools=("demo/calc",), tool_names=("calc", "notes"))


def test_from_record_accepts_identities_as_json_strings_or_objects():
    original = sample(identity=AWKWARD_IDENTITY)
    parquet_form = original.to_record()
    text = json.dumps(AWKWARD_IDENTITY, ensure_ascii=False)
    parquet_form["reward_model"]["ground_truth"] = text
    for kwargs in parquet_form["extra_info"]["tools_kwargs"].values():
        kwargs["create_kwargs"]["identity"] = text
    parquet_form["extra_info"]["interaction_kwargs"]["identity"] = text
    assert GeneratedSample.from_record(parquet_form) == original
    # mixed: some copies objects, some strings
    mixed = original.to_record()
    mixed["reward_model"]["ground_truth"] = text.encode()
    assert GeneratedSample.from_record(mixed) == original


def test_from_record_names_what_is_missing_from_a_foreign_record():
    record = sample().to_record()
    del record["extra_info"]["bootcamp"]
    with pytest.raises(ValueError, match="extra_info.bootcamp.*bootcamp generate"):
        GeneratedSample.from_record(record)


# ----------------------------------------------------------------------------------------- JSONL <-> Parquet
def test_jsonl_and_parquet_are_lossless_both_ways(tmp_path: Path):
    records = varied_records()
    first = tmp_path / "first.jsonl"
    assert write_records(first, copy.deepcopy(records)) == len(records)
    text = first.read_text(encoding="utf-8")
    # UTF-8, never ASCII escapes, except for the line separators that str.splitlines() would break lines at
    assert "日本語 🧮" in text and "\\u2028" in text and "\\u0085" in text
    assert "\\u" not in text.replace("\\u2028", "").replace("\\u0085", "")
    assert text.count("\n") == len(records) and text.endswith("\n")  # one record a line, "\n" only
    assert len(text.splitlines()) == len(records)

    from_jsonl = list(read_jsonl(first))
    assert from_jsonl == records

    parquet = tmp_path / "records.parquet"
    assert write_records(parquet, from_jsonl) == len(records)
    from_parquet = list(read_parquet(parquet))
    assert from_parquet == records
    assert "interaction_kwargs" not in from_parquet[1]["extra_info"]
    assert from_parquet[2]["prompt"][0]["content"][1]["type"] == "image_url"
    assert from_parquet[0]["reward_model"]["ground_truth"]["huge"] == 2**70

    second = tmp_path / "second.jsonl"
    write_records(second, from_parquet)
    assert second.read_bytes() == first.read_bytes()
    assert list(read_records(second)) == list(read_records(parquet)) == records


def test_parquet_stores_every_identity_as_a_json_string(tmp_path: Path):
    path = tmp_path / "records.parquet"
    records = varied_records()
    write_records(path, records)
    table = pq.read_table(path)
    reward_model = table.schema.field("reward_model").type
    assert reward_model.field("ground_truth").type == pa.string()
    extra = table.schema.field("extra_info").type
    assert extra.field("interaction_kwargs").type.field("identity").type == pa.string()
    tools = extra.field("tools_kwargs").type  # a struct over the file's tool names: no Arrow map column anywhere
    assert pa.types.is_struct(tools) and [field.name for field in tools] == sorted(field.name for field in tools)
    assert all(field.type.field("create_kwargs").type.field("identity").type == pa.string() for field in tools)

    rows = table.to_pylist()
    ground_truth = rows[0]["reward_model"]["ground_truth"]
    assert isinstance(ground_truth, str) and json.loads(ground_truth) == AWKWARD_IDENTITY
    tool_identities = [value["create_kwargs"]["identity"] for value in rows[0]["extra_info"]["tools_kwargs"].values()
                       if value is not None]
    assert [json.loads(identity) for identity in tool_identities] == [AWKWARD_IDENTITY, AWKWARD_IDENTITY]
    assert json.loads(rows[0]["extra_info"]["interaction_kwargs"]["identity"]) == AWKWARD_IDENTITY
    assert rows[1]["extra_info"]["interaction_kwargs"] is None
    # a content-part prompt is the JSON text of the list, in its own field, so text prompts never mix with it
    assert rows[2]["prompt"][0]["content"] is None
    assert json.loads(rows[2]["prompt"][0]["content_parts"]) == records[2]["prompt"][0]["content"]
    assert rows[0]["prompt"][0]["content_parts"] is None


def test_a_text_prompt_that_looks_like_content_parts_stays_text(tmp_path: Path):
    record = sample().to_record()
    record["prompt"][0]["content"] = '[{"type": "text", "text": "a string, not parts"}]'
    path = tmp_path / "tricky.parquet"
    write_records(path, [copy.deepcopy(record)])
    assert list(read_parquet(path)) == [record]


def test_parquet_writer_streams_in_batches(tmp_path: Path):
    path = tmp_path / "batched.parquet"
    records = [sample(index=i).to_record() for i in range(7)]
    with ParquetWriter(path, batch_rows=3, tool_names=["calc", "notes"]) as writer:
        for record in records:
            writer.write(copy.deepcopy(record))
    assert writer.count == 7
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    assert list(read_parquet(path, batch_rows=2)) == records


def test_read_and_write_refuse_unknown_suffixes(tmp_path: Path):
    with pytest.raises(ValueError, match=r"records\.csv: expected a \.jsonl or \.parquet file"):
        write_records(tmp_path / "records.csv", [])
    with pytest.raises(ValueError, match="expected a .jsonl or .parquet file"):
        read_records(tmp_path / "records.txt")
    assert not list(tmp_path.iterdir())


# --------------------------------------------------------------------------------------------- atomic writes
@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_a_writer_that_fails_leaves_no_file_and_no_temporary(tmp_path: Path, suffix: str):
    target = tmp_path / f"out.{suffix}"
    writer = JsonlWriter(target) if suffix == "jsonl" else ParquetWriter(target, batch_rows=1, tool_names=["calc", "notes"])
    with pytest.raises(RuntimeError, match="interrupted"):
        with writer:
            for record in varied_records():
                writer.write(record)
            assert not target.exists()  # nothing under the real name until the file is complete
            assert len(list(tmp_path.iterdir())) == 1  # the temporary, beside the target
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_a_writer_that_fails_leaves_an_existing_file_untouched(tmp_path: Path, suffix: str):
    target = tmp_path / f"out.{suffix}"
    write_records(target, varied_records()[:2])
    before = target.read_bytes()
    writer = JsonlWriter(target) if suffix == "jsonl" else ParquetWriter(target, batch_rows=1, tool_names=["calc", "notes"])
    with pytest.raises(KeyError):
        with writer:
            writer.write(varied_records()[3])
            raise KeyError("stop")
    assert target.read_bytes() == before
    assert list(tmp_path.iterdir()) == [target]
    # and a writer that completes replaces it
    write_records(target, varied_records()[3:])
    assert list(read_records(target)) == varied_records()[3:]
    assert list(tmp_path.iterdir()) == [target]


def test_read_jsonl_names_file_and_line_of_a_broken_line(tmp_path: Path):
    path = tmp_path / "broken.jsonl"
    good = json.dumps(sample().to_record())
    path.write_text(f"{good}\n\n{good[:-7]}\n{good}\n", encoding="utf-8")
    records = read_jsonl(path)
    assert next(records) == sample().to_record()
    with pytest.raises(ValueError, match=rf"^{path}:3: not valid JSON"):
        next(records)


# ----------------------------------------------------------------------------------- tool calls and episodes
def episode() -> EpisodeResult:
    return EpisodeResult(
        id="abc:0",
        input=sample().to_record(),
        repeat=0,
        data_source="bootcamp/demo",
        generator="demo/adder",
        generator_name="level_1",
        score=0.5,
        success=False,
        error="the tool server went away",
        error_type="infrastructure",
        finish_reason="error",
        messages=[{"role": "user", "content": "Zähle"}, {"role": "assistant", "content": None, "tool_calls": []}],
        tool_calls=[
            ToolCall(id="call_0", name="calc", arguments='{"expression": "1+1"}', output="2", step_reward=0.0,
                     metrics={"calls": 1}, duration_s=0.01),
            ToolCall(id="call_1", name="calc", arguments="{not json", error="bad arguments", step_reward=-0.1),
        ],
        tool_rewards=[0.0, -0.1],
        tool_scores={"calc": 1.0},
        turn_scores=[0.0, 1.0],
        turn_record={"assistant_turns": 2, "user_turns": 1},
        timings={"duration_s": 1.25},
        ground_truth={"a": 1, "nested": {"ü": [1, 2]}},
        versions={"bootcamp-demo": "0.1.0"},
    )


def test_tool_call_and_episode_result_round_trip_through_json():
    original = episode()
    data = json.loads(json.dumps(original.to_dict()))
    assert isinstance(data["tool_calls"][0], dict)
    assert EpisodeResult.from_dict(data) == original
    call = original.tool_calls[1]
    assert ToolCall.from_dict(json.loads(json.dumps(call.to_dict()))) == call
    # identities from Parquet come as JSON strings; keys this version does not know are ignored
    data["ground_truth"] = json.dumps(original.ground_truth)
    data["added_in_a_later_version"] = True
    assert EpisodeResult.from_dict(data) == original


def test_to_dict_holds_every_field_in_order_a_subclasss_too():
    import attrs

    @attrs.define(kw_only=True)
    class Tagged(EpisodeResult):
        tag: str = "t"

    original = episode()
    data = original.to_dict()
    assert list(data) == [field.name for field in attrs.fields(EpisodeResult)]
    assert data["tool_calls"] == [attrs.asdict(call) for call in original.tool_calls]
    assert list(Tagged(id="x").to_dict())[-1] == "tag" and Tagged(id="x").to_dict()["tag"] == "t"


def test_a_result_line_of_the_original_framework_reads():
    line = {"input": {"prompt": "x"}, "messages": [{"role": "user", "content": "x"}], "score": 1.0, "success": True,
            "extracted_output": "4", "ground_truth": {"a": 1}, "reached_max_turns": False, "token_usage": {}}
    result = EpisodeResult.from_dict(line)
    assert (result.score, result.success, result.error_type, result.tool_calls) == (1.0, True, None, [])


@pytest.mark.parametrize("kind", ERROR_TYPES + (None,))
def test_known_error_types_are_accepted(kind):
    assert EpisodeResult(data_source="bootcamp/demo", error_type=kind).error_type == kind


def test_unknown_error_type_is_rejected():
    with pytest.raises(ValueError, match="error_type"):
        EpisodeResult(data_source="bootcamp/demo", error_type="timeout")
    data = episode().to_dict()
    data["error_type"] = "network"
    with pytest.raises(ValueError, match="error_type"):
        EpisodeResult.from_dict(data)


def test_parquet_written_by_other_tools_reads_back(tmp_path: Path):
    """verl's export writes map columns as structs (every tool of a mixed dataset in every row, the record's own in
    tool_selection) and versions as JSON text: every reader accepts that form too."""
    identity = json.dumps({"expression": "1 + 2", "expected_result": 3})
    row = {
        "data_source": "bootcamp/example",
        "agent_name": "bootcamp_agent",
        "prompt": [{"role": "user", "content": "Compute 1 + 2."}],
        "reward_model": {"ground_truth": identity, "style": "rule"},
        "extra_info": {
            "index": 0, "split": "train", "generator_name": "g", "need_tools_kwargs": True,
            "tools_kwargs": {"calculator": {"create_kwargs": {"identity": identity}},
                             "other": {"create_kwargs": {"identity": identity}}},
            "tool_selection": ["calculator"],
            "bootcamp": {"generator": "example/arithmetic", "tools": ["example/calculator"], "interaction": None,
                         "reward": "example/arithmetic", "versions": json.dumps({"bootcamp-example": "0.1.0"})},
        },
    }
    path = tmp_path / "exported.parquet"
    pq.write_table(pa.Table.from_pylist([row]), path)
    [record] = list(read_records(path))
    sample = GeneratedSample.from_record(record)
    assert sample.tools == ("example/calculator",) and sample.tool_names == ("calculator",)
    assert sample.versions == {"bootcamp-example": "0.1.0"}
    assert sample.identity == {"expression": "1 + 2", "expected_result": 3}


def test_one_jsonl_reader_reports_each_unreadable_line_and_keeps_its_bytes(tmp_path: Path):
    from bootcamp_core.data.io import jsonl_lines

    path = tmp_path / "lines.jsonl"
    path.write_text('{"a": 1}\n\n[1, 2]\n{"b": \n{"c": 3}', encoding="utf-8")  # the last line cut by a kill
    lines = list(jsonl_lines(path))
    assert [(line.number, line.value) for line in lines] == [(1, {"a": 1}), (3, None), (4, None), (5, {"c": 3})]
    assert lines[1].error == "expected a JSON object"
    assert lines[2].error.startswith("not valid JSON (Expecting value")
    assert [line.raw for line in lines] == ['{"a": 1}\n', "[1, 2]\n", '{"b": \n', '{"c": 3}\n']
    with pytest.raises(ValueError, match=r"lines.jsonl:3: expected a JSON object"):
        list(read_jsonl(path))
