"""Post-processing of result files into training data: the Python API and `bootcamp postprocess`."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bootcamp_core.cli.main import main
from bootcamp_core.data.records import EpisodeResult, ToolCall
from bootcamp_core.plugin.errors import ConfigError
from bootcamp_core.postprocess import (
    DataPostProcessor,
    build_processor,
    default_output_path,
    expand_messages_prefixes,
    extract_for_training,
    filter_by_score,
    filter_by_success,
    postprocess,
)

CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression.",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    },
}


def generated_record(index: int, question: str, data_source: str = "bootcamp/example") -> dict:
    identity = {"question": question, "level": 1 + index % 3}
    return {
        "data_source": data_source,
        "prompt": [{"role": "user", "content": question}],
        "reward_model": {"ground_truth": identity, "style": "rule"},
        "extra_info": {
            "index": index,
            "split": "test",
            "generator_name": "arithmetic",
            "tools_kwargs": {"calculator": {"create_kwargs": {"identity": identity}}},
            "need_tools_kwargs": True,
            "bootcamp": {"generator": "example/arithmetic", "tools": ["example/calculator"], "interaction": None,
                         "reward": "example/arithmetic", "versions": {"bootcamp-example": "0.1.0"}},
        },
    }


def trajectory(question: str, answer: str, call: str = "call_a") -> list[dict]:
    """system + user prompt, a turn with two tool calls, their tool messages, a turn with one call, and an answer:
    3 assistant messages after the prompt."""
    return [
        {"role": "system", "content": "Use the calculator. Answer as \\boxed{n}."},
        {"role": "user", "content": question},
        {"role": "assistant", "content": None, "reasoning_content": "split it up",
         "tool_calls": [
             {"id": f"{call}1", "type": "function",
              "function": {"name": "calculator", "arguments": '{"expression": "2*3"}'}},
             {"id": f"{call}2", "type": "function",
              "function": {"name": "calculator", "arguments": '{"expression": "4+1"}'}},
         ]},
        {"role": "tool", "tool_call_id": f"{call}1", "content": "6"},
        {"role": "tool", "tool_call_id": f"{call}2", "content": "5"},
        {"role": "assistant", "content": "Now the sum.",
         "tool_calls": [{"id": f"{call}3", "type": "function",
                         "function": {"name": "calculator", "arguments": '{"expression": "6+5"}'}}]},
        {"role": "tool", "tool_call_id": f"{call}3", "content": "11"},
        {"role": "assistant", "content": f"Résultat : \\boxed{{{answer}}}"},
    ]


def our_result(index: int, score: float, *, success: bool = True, data_source: str = "bootcamp/example") -> dict:
    question = f"What is 2*3 + 4+1? (#{index})"
    record = generated_record(index, question, data_source)
    messages = trajectory(question, "11") if success else [
        {"role": "system", "content": "Use the calculator. Answer as \\boxed{n}."},
        {"role": "user", "content": question},
    ]
    result = EpisodeResult(
        id=f"{index:064x}:0",
        input=record,
        data_source=data_source,
        generator="example/arithmetic",
        generator_name="arithmetic",
        tools=[CALCULATOR],
        messages=messages,
        extracted_output="11" if success else None,
        ground_truth=record["reward_model"]["ground_truth"],
        score=score,
        success=success,
        error_type=None if success else "infrastructure",
        error=None if success else "connection refused after 5 attempts",
        finish_reason="answered" if success else "error",
        turn_record={"assistant_turns": 3 if success else 0, "user_turns": 3 if success else 0,
                     "tool_calls": 3 if success else 0, "model_errors": 0},
        tool_calls=[ToolCall(id="call_a1", name="calculator", arguments='{"expression": "2*3"}', output="6")]
        if success else [],
        tool_rewards=[0.0, 0.0, 0.0] if success else [],
        token_usage={"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160},
        timings={"started_at": "2025-01-01T00:00:00+00:00", "duration_s": 0.5, "policy_s": 0.4, "tools_s": 0.1},
        versions={"bootcamp-core": "0.1.0", "bootcamp-example": "0.1.0"},
    )
    return result.to_dict()


def original_result(question: str, score, success: bool = True, data_source: str = "old_bootcamp") -> dict:
    """A line of the original framework's evaluator: data_source only inside `input`, no system prompt."""
    prompt = [{"role": "user", "content": question}]
    record = {
        "input": {"data_source": data_source, "prompt": prompt,
                  "reward_model": {"ground_truth": "{}", "style": "rule"}},
        "tools": [CALCULATOR],
        "messages": prompt + [
            {"role": "assistant", "content": "",
             "tool_calls": [{"id": "x1", "type": "function",
                             "function": {"name": "calculator", "arguments": '{"expression": "1+1"}'}}]},
            {"role": "tool", "tool_call_id": "x1", "content": "2"},
            {"role": "assistant", "content": "\\boxed{2}"},
        ],
        "extracted_output": "2",
        "ground_truth": "{}",
        "success": success,
        "reached_max_turns": False,
        "turn_record": {"assistant_turns": 2},
        "token_usage": {},
        "evaluation_config": {"max_assistant_turns": 10},
    }
    if score is not None:
        record["score"] = score
    return record


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def md5_of_messages(messages: list) -> str:
    return hashlib.md5(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


@pytest.fixture
def results(tmp_path: Path) -> tuple[Path, list[dict]]:
    """Ours (scores 1.0, 0.9, 0.89, 0.0, one infrastructure failure, another data source) and two original lines."""
    records = [
        our_result(0, 1.0),
        our_result(1, 0.9),
        our_result(2, 0.89),
        our_result(3, 0.0),
        our_result(4, 0.0, success=False),
        our_result(5, 0.95, data_source="bootcamp/texas_holdem"),
        original_result("1+1?", 1.0),
        original_result("1+2?", None, success=False),  # the original omits score on some failures
    ]
    return write_jsonl(tmp_path / "results.jsonl", records), records


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["postprocess", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ----------------------------------------------------------------------------------------------------- filters
def test_default_score_filter_keeps_both_bounds_and_writes_records_unchanged(results, capsys):
    path, records = results
    code, out, _ = run_cli(capsys, path)
    assert code == 0
    written = read_jsonl(path.with_name("results_processed.jsonl"))
    # 1.0 and 0.9 are in (inclusive), 0.89 and 0.0 out; the missing score of the original line is out
    assert written == [records[0], records[1], records[5], records[6]]
    assert "read" in out and "written" in out and "kept by score in [0.9, 1]" in out


def test_zero_to_one_is_no_score_filter(results, capsys):
    path, records = results
    assert build_processor(min_score=0, max_score=1).filters == []
    code, out, _ = run_cli(capsys, path, tmp := path.with_name("all.jsonl"), "--min-score", "0")
    assert code == 0
    assert read_jsonl(tmp) == records  # a missing score too: nothing filters by score
    assert "kept by" not in out


def test_a_max_below_one_turns_the_score_filter_on(results, capsys):
    path, _ = results
    out_path = path.with_name("low.jsonl")
    assert run_cli(capsys, path, out_path, "--min-score", "0", "--max-score", "0.89")[0] == 0
    assert [record["score"] for record in read_jsonl(out_path)] == [0.89, 0.0, 0.0]


def test_filter_success_drops_infrastructure_failures_of_both_formats(results, capsys):
    path, records = results
    out_path = path.with_name("ok.jsonl")
    code, _, _ = run_cli(capsys, path, out_path, "--filter-success", "--min-score", "0")
    assert code == 0
    assert read_jsonl(out_path) == [records[i] for i in (0, 1, 2, 3, 5, 6)]
    statistics = postprocess(path, out_path, filter_success=True, min_score=0)
    assert (statistics.read, statistics.filters, statistics.written) == (8, {"success": 6}, 6)
    # as in the original, a record that does not say it succeeded is not kept
    assert [filter_by_success(record) for record in ({"success": True}, {"success": 1}, {"score": 1.0})] == [
        True, False, False
    ]


def test_data_source_filter_reads_top_level_and_input_and_takes_several(results, capsys):
    path, records = results
    one = path.with_name("one.jsonl")
    assert run_cli(capsys, path, one, "--data-source", "bootcamp/texas_holdem", "--min-score", "0")[0] == 0
    assert read_jsonl(one) == [records[5]]
    # the original's records carry it inside input
    assert run_cli(capsys, path, one, "--data-source", "old_bootcamp", "--min-score", "0")[0] == 0
    assert read_jsonl(one) == [records[6], records[7]]
    # several: comma-separated and repeated, combined with the default score filter
    code, _, _ = run_cli(capsys, path, one, "--data-source", "bootcamp/texas_holdem,old_bootcamp",
                           "--data-source", "bootcamp/nothing")
    assert code == 0
    assert read_jsonl(one) == [records[5], records[6]]


def test_statistics_count_what_each_filter_kept(results, tmp_path):
    path, _ = results
    statistics = postprocess(path, tmp_path / "out.jsonl", filter_success=True, data_sources=["bootcamp/example"])
    assert statistics.read == 8
    assert statistics.filters == {"success": 6, "score in [0.9, 1]": 4, "data source bootcamp/example": 2}
    assert statistics.written == 2 and statistics.unreadable == [] and statistics.errors == []


# ------------------------------------------------------------------------------------------- transformations
def test_expansion_gives_one_record_per_assistant_message_each_ending_on_it(results, capsys):
    path, records = results
    out_path = path.with_name("expanded.jsonl")
    code, out, _ = run_cli(capsys, path, out_path, "--expand-messages-prefixes", "--min-score", "0")
    assert code == 0
    written = read_jsonl(out_path)
    # ours: 3 assistant messages each (the failure has none, so it vanishes); original lines: 2 each
    assert len(written) == 5 * 3 + 0 + 2 + 2
    assert "produced by expand_messages_prefixes" in out
    first = records[0]
    assert [record["messages"] for record in written[:3]] == [
        first["messages"][:3], first["messages"][:6], first["messages"][:8]
    ]
    for record in written:
        assert record["messages"][-1]["role"] == "assistant"
        assert record["tools"] == [CALCULATOR]
        assert record["messages"][0]["role"] in ("system", "user")
    # everything else of the record stays, so later filters and extractors still see score, input...
    assert {key: value for key, value in written[0].items() if key != "messages"} == {
        key: value for key, value in first.items() if key != "messages"
    }


def test_expansion_starts_after_the_leading_system_and_user_messages():
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "feedback"},
        {"role": "assistant", "content": "a2"},
    ]
    expanded = expand_messages_prefixes({"messages": messages, "tools": []})
    assert [record["messages"] for record in expanded] == [messages[:3], messages[:5]]
    assert expand_messages_prefixes({"messages": messages[:2]}) == []
    assert expand_messages_prefixes({"messages": "not a list"}) == []


def test_extract_training_fields_and_stable_ids(results, capsys):
    path, records = results
    out_path = path.with_name("train.jsonl")
    assert run_cli(capsys, path, out_path, "--extract-training")[0] == 0
    written = read_jsonl(out_path)
    assert [list(record) for record in written] == [["id", "data_source", "prompt", "messages", "tools"]] * 4
    ours, original = written[0], written[3]
    assert ours == {
        "id": md5_of_messages(records[0]["messages"]),
        "data_source": "bootcamp/example",
        "prompt": records[0]["input"]["prompt"],
        "messages": records[0]["messages"],
        "tools": [CALCULATOR],
    }
    assert original["data_source"] == "old_bootcamp"  # from input, where the original keeps it
    assert original["prompt"] == [{"role": "user", "content": "1+1?"}]
    assert original["id"] == md5_of_messages(records[6]["messages"])
    # the same messages give the same id (whatever else differs), other messages another one
    same = dict(records[6], score=0.5, tools=[], input={"data_source": "elsewhere"})
    assert extract_for_training(same)["id"] == original["id"]
    assert len({record["id"] for record in written}) == 4
    # and a second run is byte-identical
    first_bytes = out_path.read_bytes()
    assert run_cli(capsys, path, out_path, "--extract-training")[0] == 0
    assert out_path.read_bytes() == first_bytes


def test_extract_training_without_an_input_prompt_uses_the_leading_messages():
    messages = trajectory("q?", "1")
    extracted = extract_for_training({"input": {}, "messages": messages, "data_source": "d"})
    assert extracted["prompt"] == messages[:2] and extracted["tools"] == [] and extracted["data_source"] == "d"


def test_extract_messages_writes_messages_only(results, capsys):
    path, records = results
    out_path = path.with_name("messages.jsonl")
    assert run_cli(capsys, path, out_path, "--extract-messages")[0] == 0
    assert read_jsonl(out_path) == [{"messages": records[i]["messages"]} for i in (0, 1, 5, 6)]


def test_order_is_filters_then_expansion_then_extraction(results, capsys):
    path, records = results
    out_path = path.with_name("sft.jsonl")
    code, out, _ = run_cli(capsys, path, out_path, "--filter-success", "--data-source", "bootcamp/example",
                           "--extract-training", "--expand-messages-prefixes")
    assert code == 0
    written = read_jsonl(out_path)
    # filters left records 0 and 1; each expanded into 3 prefixes; each prefix extracted with its own id
    expected = [records[i]["messages"][:end] for i in (0, 1) for end in (3, 6, 8)]
    assert [record["messages"] for record in written] == expected
    assert [record["id"] for record in written] == [md5_of_messages(messages) for messages in expected]
    assert all(record["data_source"] == "bootcamp/example" for record in written)
    table = out.splitlines()
    labels = [line.split("  ")[1].strip() for line in table[1:]]
    assert labels == ["read", "kept by success", "kept by score in [0.9, 1]", "kept by data source bootcamp/example",
                      "produced by expand_messages_prefixes", "produced by extract_training", "written"]
    assert table[-1].split()[-1] == "6"


def test_filters_run_before_transformers_whatever_order_they_were_added(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [our_result(0, 1.0), our_result(1, 0.5)])
    processor = DataPostProcessor()
    processor.add_transformer(lambda record: {**record, "marked": True}, name="mark")
    processor.add_filter(lambda record: "marked" not in record and record["score"] >= 0.5, name="unmarked")
    statistics = processor.process(path, tmp_path / "o.jsonl")
    assert statistics.filters == {"unmarked": 2} and statistics.transformers == {"mark": 2}
    assert [record["marked"] for record in read_jsonl(tmp_path / "o.jsonl")] == [True, True]


def test_custom_one_to_many_transformer_through_the_api(results, tmp_path):
    path, _ = results

    def tool_messages(record: dict) -> list[dict]:
        """1:n — one sample per tool answer; a record without tool messages yields none."""
        return [{"tool_call_id": m["tool_call_id"], "content": m["content"]}
                for m in record["messages"] if m["role"] == "tool"]

    def drop_sixes(record: dict) -> dict | None:
        return None if record["content"] == "6" else {**record, "content": int(record["content"])}

    processor = DataPostProcessor().add_filter(filter_by_score(0.0, 1.0), name="scored")
    processor.add_transformer(tool_messages).add_transformer(drop_sixes)
    statistics = processor.process(path, tmp_path / "tools.jsonl")
    # 7 records with a score; the failure has no tool messages; ours have 3 tool messages, the original 1
    assert statistics.to_dict() == {
        "input_path": str(path), "output_path": str(tmp_path / "tools.jsonl"), "read": 8,
        "filters": {"scored": 7}, "transformers": {"tool_messages": 5 * 3 + 1, "drop_sixes": 5 * 2 + 1},
        "written": 11, "unreadable": [], "errors": [],
    }
    written = read_jsonl(tmp_path / "tools.jsonl")
    assert written[:2] == [{"tool_call_id": "call_a2", "content": 5}, {"tool_call_id": "call_a3", "content": 11}]
    assert written[-1] == {"tool_call_id": "x1", "content": 2}


def test_step_names_stay_apart_and_default_output_is_beside_the_input(tmp_path):
    processor = DataPostProcessor()
    processor.add_filter(lambda record: True).add_filter(lambda record: True, name="filter 1")
    processor.add_transformer(expand_messages_prefixes).add_transformer(expand_messages_prefixes)
    assert [name for name, _ in processor.filters] == ["filter 1", "filter 1 #2"]
    assert [name for name, _ in processor.transformers] == ["expand_messages_prefixes", "expand_messages_prefixes #2"]
    path = write_jsonl(tmp_path / "eval_results_2025.jsonl", [our_result(0, 1.0)])
    statistics = processor.process(path)
    assert statistics.output_path == str(tmp_path / "eval_results_2025_processed.jsonl")
    # the first expansion gives 3 prefixes, the second expands each again into 1, 2 and 3
    assert len(read_jsonl(tmp_path / "eval_results_2025_processed.jsonl")) == 6
    assert default_output_path("a/b/run.json") == Path("a/b/run_processed.jsonl")


# --------------------------------------------------------------------------------------------- bad input
def test_broken_lines_are_counted_with_line_numbers_and_the_run_goes_on(tmp_path, capsys):
    good = [our_result(0, 1.0), original_result("1+1?", 1.0)]
    path = tmp_path / "results.jsonl"
    with open(path, "wb") as handle:
        handle.write(json.dumps(good[0]).encode() + b"\n")                 # 1
        handle.write(b"\n")                                                # 2: blank, skipped silently
        handle.write(b"this is not json\n")                                # 3
        handle.write(b"[1, 2]\n")                                          # 4: JSON, not a result
        handle.write(b'{"messages": [], "score": 1.0, "note": "\xff"}\n')  # 5: not UTF-8
        handle.write(json.dumps(good[1]).encode() + b"\n")                 # 6
        handle.write(json.dumps(good[0]).encode()[:50])                    # 7: cut off by a kill
    code, out, _ = run_cli(capsys, path)
    assert code == 0
    assert read_jsonl(tmp_path / "results_processed.jsonl") == good
    assert "unreadable line 3: not valid JSON" in out
    assert "unreadable line 4: a JSON list, not an object" in out
    assert "unreadable line 5: not UTF-8" in out
    assert "unreadable line 7: not valid JSON" in out
    statistics = postprocess(path, tmp_path / "api.jsonl")
    assert [line for line, _ in statistics.unreadable] == [3, 4, 5, 7]
    assert (statistics.read, statistics.written) == (2, 2)


def test_a_failing_step_costs_its_record_and_is_reported(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [our_result(0, 1.0), {"score": 1.0}, our_result(2, 1.0)])
    processor = DataPostProcessor().add_filter(lambda record: len(record["messages"]) > 0, name="has messages")
    processor.add_transformer(lambda record: "text", name="wrong type")
    statistics = processor.process(path, tmp_path / "o.jsonl")
    assert statistics.errors[1] == (2, "has messages", "KeyError: 'messages'")
    assert [(line, step) for line, step, _ in statistics.errors] == [
        (1, "wrong type"), (2, "has messages"), (3, "wrong type")
    ]
    assert "returned str; expected a dict, a list of dicts or None" in statistics.errors[0][2]
    assert (statistics.read, statistics.filters, statistics.transformers) == (3, {"has messages": 2}, {"wrong type": 0})
    assert statistics.written == 0 and (tmp_path / "o.jsonl").read_text() == ""


def test_json_array_input(tmp_path, capsys):
    records = [our_result(0, 1.0), original_result("1+1?", 0.5), original_result("1+2?", 0.9)]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(records + ["stray"], indent=2), encoding="utf-8")
    code, out, _ = run_cli(capsys, path)
    assert code == 0
    assert read_jsonl(tmp_path / "results_processed.jsonl") == [records[0], records[2]]
    assert "unreadable line 4: a JSON str, not an object" in out
    path.write_text("[{\"score\": 1.0},", encoding="utf-8")
    code, _, err = run_cli(capsys, path)
    assert code == 1 and "not a valid JSON array" in err


def test_an_interrupted_run_leaves_no_output_and_keeps_an_old_one(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [our_result(0, 1.0), our_result(1, 1.0)])
    target = tmp_path / "o.jsonl"
    target.write_text("old\n")
    seen = []

    def interrupt_on_second(record: dict) -> dict:
        seen.append(record)
        if len(seen) == 2:
            raise KeyboardInterrupt
        return record

    with pytest.raises(KeyboardInterrupt):
        DataPostProcessor().add_transformer(interrupt_on_second).process(path, target)
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.jsonl", "r.jsonl"]


# ----------------------------------------------------------------------------------------------------- CLI
def test_original_underscore_spellings(results, capsys):
    path, records = results
    out_path = path.with_name("u.jsonl")
    code, _, _ = run_cli(capsys, path, out_path, "--filter_success", "--min_score", "0.5", "--max_score", "0.95",
                         "--data_source", "bootcamp/example", "--expand_messages_prefixes", "--extract_messages")
    assert code == 0
    # 0.9 and 0.89 lie in [0.5, 0.95]; 1.0 does not, 0.95 is another data source
    assert read_jsonl(out_path) == [{"messages": records[i]["messages"][:end]} for i in (1, 2) for end in (3, 6, 8)]
    assert "--min_score" not in main_help(capsys)


def main_help(capsys) -> str:
    with pytest.raises(SystemExit):
        main(["postprocess", "--help"])
    return capsys.readouterr().out


def test_bad_option_combinations_are_one_clear_error(results, capsys):
    path, _ = results
    code, _, err = run_cli(capsys, path, "--min-score", "0.95", "--max-score", "0.5")
    assert code == 1 and "min score 0.95 is above max score 0.5" in err
    assert not path.with_name("results_processed.jsonl").exists()
    with pytest.raises(SystemExit) as exit_info:
        main(["postprocess", str(path), "--extract-training", "--extract-messages"])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(ConfigError):
        build_processor(extract_training=True, extract_messages=True)
    code, _, err = run_cli(capsys, path.with_name("missing.jsonl"))
    assert code == 1 and err.startswith("error: ") and "missing.jsonl" in err


def test_the_installed_command_in_a_subprocess(results):
    path, records = results
    completed = subprocess.run(  # noqa: PLW1510 — the code is asserted
        [sys.executable, "-m", "bootcamp_core.cli.main", "postprocess", str(path), "--extract-training"],
        capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    written = read_jsonl(path.with_name("results_processed.jsonl"))
    assert [record["id"] for record in written] == [md5_of_messages(records[i]["messages"]) for i in (0, 1, 5, 6)]
    assert completed.stdout.splitlines()[-1].split() == ["written", "4"]
