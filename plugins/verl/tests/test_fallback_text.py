"""Fallback scoring (no episode from our agent loop): only what the model wrote after its last tool span counts."""

from __future__ import annotations

import json

import pytest

from bootcamp_verl.reward import RESULT_KEYS, TOOL_SPANS, compute_score, final_text


def answer(value) -> str:
    return f'Answer:\n```json\n{{"result": {json.dumps(value)}}}\n```'


def example_row(rows: list[dict]) -> dict:
    return next(row for row in rows if row["data_source"] == "bootcamp/example")


def stock_score(row: dict, output, tokenizer) -> dict:
    """compute_score as verl's reward managers call it after its stock tool_agent loop: the whole response decoded
    with skip_special_tokens=True, extra_info merged with the loop's extra_fields (no messages)."""
    solution = tokenizer.decode(output.response_ids, skip_special_tokens=True)
    return compute_score(row["data_source"], solution, row["reward_model"]["ground_truth"],
                         {**row["extra_info"], **output.extra_fields})


def test_an_answer_only_in_a_tool_calls_arguments_scores_zero_as_from_the_messages(
        dataset_rows, run_loop, load_tools, scripted_server, call, tokenizer):
    row = example_row(dataset_rows)
    identity = json.loads(row["reward_model"]["ground_truth"])
    # the answer rides in the call's arguments (as a path in a check_path call), never in what the model says
    smuggled = call("calculator", {"expression": identity["expression"], "result": identity["expected_result"]})
    turns = [smuggled, "I am done.", "I am done.", "I am done."]

    _, stock = run_loop("tool_agent", scripted_server(list(turns)), list(load_tools().values()), row)
    solution = tokenizer.decode(stock.response_ids, skip_special_tokens=True)
    assert '"result": ' in solution and "<|im_start|>" not in solution  # the answer is there; role markers are gone
    whole = compute_score(row["data_source"], solution, identity,
                          {**row["extra_info"], "messages": [{"role": "assistant", "content": solution}]})
    assert whole["score"] == 1.0  # judged on the whole response, the call's arguments would score
    fallback = stock_score(row, stock, tokenizer)
    assert fallback["score"] == 0.0 and fallback["bootcamp_answered"] == 0.0 and fallback["bootcamp_fallback"] == 1.0

    _, ours = run_loop("bootcamp_agent", scripted_server(list(turns)), list(load_tools().values()), row)
    from_messages = compute_score(row["data_source"], "unused", identity, {**row["extra_info"], **ours.extra_fields})
    assert from_messages["bootcamp_fallback"] == 0.0
    assert from_messages["score"] == fallback["score"] == 0.0


def test_a_final_answer_after_the_last_tool_response_still_scores(dataset_rows, run_loop, load_tools,
                                                                  scripted_server, call, tokenizer):
    row = example_row(dataset_rows)
    identity = json.loads(row["reward_model"]["ground_truth"])
    calculate = call("calculator", {"expression": identity["expression"]})
    right = [calculate, "The calculator agrees.\n" + answer(identity["expected_result"])]
    wrong_then_call = [answer(identity["expected_result"]) + calculate, "I am done."]

    _, output = run_loop("tool_agent", scripted_server(right), list(load_tools().values()), row)
    result = stock_score(row, output, tokenizer)
    assert result["score"] == 1.0 and result["bootcamp_answered"] == 1.0 and result["bootcamp_fallback"] == 1.0
    assert result["bootcamp_tool_calls"] == 1.0 and tuple(result) == RESULT_KEYS
    # an answer written before a later call is not the final answer: the text after the last span is
    _, output = run_loop("tool_agent", scripted_server(wrong_then_call), list(load_tools().values()), row)
    assert stock_score(row, output, tokenizer)["score"] == 0.0


def test_without_tool_spans_the_whole_response_is_the_answer():
    assert final_text('Some work.\nAnswer:\n```json\n{"result": 3}\n```') == (
        'Some work.\nAnswer:\n```json\n{"result": 3}\n```')
    assert final_text("") == "" and final_text(None) == ""  # type: ignore[arg-type]


QWEN = ('I will check.<tool_call>\n{"name": "check_path", "arguments": {"path": [[0, 0], [1, 1]]}}\n</tool_call>\n'
        'user\n<tool_response>\n{"collides": false, "path": [[0, 0], [1, 1]]}\n</tool_response>\nassistant\n')


def test_qwen_transcripts_keep_only_the_text_after_the_last_tool_response():
    assert final_text(QWEN + "Final path: [[0, 0], [1, 1]]") == "\nassistant\nFinal path: [[0, 0], [1, 1]]"
    assert final_text(QWEN) == "\nassistant\n"
    assert final_text(QWEN + "two calls" + QWEN + "done") == "\nassistant\ndone"


@pytest.mark.parametrize("opener, closer", [(opener, closer) for opener, closer, _ in TOOL_SPANS])
def test_every_format_verl_parses_is_dropped(opener, closer):
    secret = '{"result": 42, "path": [[0, 0]]}'
    assert final_text(f"before {opener}{secret}{closer} after") == " after"
    assert final_text(f"before {opener}{secret}{closer}{opener}{secret}{closer}") == ""


def test_markers_inside_a_span_belong_to_it():
    # a call whose arguments quote another format's closer: the quoted closer does not end the call
    text = '<tool_call>{"name": "x", "arguments": {"a": "</tool_response> Answer 42"}}</tool_call>tail'
    assert final_text(text) == "tail"
    assert final_text('<tool_call>{"a": "</tool_response> Answer 42"}') == ""  # cut off: nothing after it counts


def test_a_span_left_open_runs_to_the_end():
    assert final_text("Answer 41 <tool_call>\n{\"name\": \"check_path\", \"arguments\": {\"result\": 42") == ""
    assert final_text(QWEN + "Answer 42\n<tool_response>\nhalf of a tool's answ") == ""
    assert final_text("<|tool_calls_section_begin|><|tool_call_begin|>functions.x:0<|tool_call_argument_begin|>"
                      '{"result": 42}') == ""


def test_a_closer_alone_ends_a_span():
    # a tool's answer that echoes the call ('Unknown function ...') holds a closer; the real closer still ends it
    echoed = ("<tool_response>\nUnknown function '</tool_response>Answer 42'.\n</tool_response>"
              "\nassistant\nI am done.")
    assert final_text(echoed) == "\nassistant\nI am done."
    # an echoed opener left open after the echoed closer runs to the end: the safe side, nothing scores
    assert final_text(echoed.replace("42'", "42<tool_call>'")) == ""
    assert final_text("leftover</tool_call> the answer") == " the answer"  # its opener decoded away
    # harmony's <|end|> ends every message, answers included: alone, it ends no span
    final = "<|start|>assistant<|channel|>final<|message|>Answer 42<|end|>"
    assert final_text(final) == final
    call = "<|start|>assistant<|channel|>commentary to=functions.check <|constrain|>json<|message|>{}<|call|>"
    response = "<|start|>functions.check to=assistant<|channel|>commentary<|message|>{\"ok\": 1}<|end|>"
    assert final_text(call + response + final) == final


HOSTILE = {
    "openers": ("<tool_call>" * 200_000, ""),
    "closers": ("</tool_call>" * 200_000 + "tail", "tail"),
    "crossed": ("<tool_call></tool_response>" * 100_000, ""),
    "pairs": ("<tool_call>x</tool_call>" * 100_000 + "tail", "tail"),
    "every marker": ("".join(f"{opener}{closer}" for opener, closer, _ in TOOL_SPANS) * 8_000 + "tail", "tail"),
    "near misses": ("<tool_call<tool_respons</tool_cal<|tool_call_begin|" * 50_000, None),
    "open then closers": ("<tool_call>" + "</tool_response>" * 200_000 + "Answer 42", ""),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_megabytes_of_hostile_text(name):
    text, expected = HOSTILE[name]
    assert len(text) > 1_000_000
    assert final_text(text) == (text if expected is None else expected)


def test_megabytes_of_hostile_text_score_through_the_fallback(datasets):
    from bootcamp_core import read_records

    record = next(read_records(datasets.example_train))
    identity = record["reward_model"]["ground_truth"]
    call = '<tool_call>{"name": "calculator", "arguments": {"result": ' + json.dumps(identity["expected_result"])
    smuggled = (call + "}}") * 50_000  # calls never closed
    result = compute_score("bootcamp/example", smuggled, identity, record["extra_info"])
    assert result["score"] == 0.0 and result["bootcamp_error"] == 0.0 and result["bootcamp_fallback"] == 1.0
    tail = "</tool_response>" * 100_000 + answer(identity["expected_result"])
    assert compute_score("bootcamp/example", tail, identity, record["extra_info"])["score"] == 1.0
