"""compute_score, loaded the way verl loads a custom reward function."""

from __future__ import annotations

import json

import pytest

from bootcamp_core import read_records
from bootcamp_verl.reward import RESULT_KEYS


@pytest.fixture(scope="module")
def compute_score():
    from verl.utils.import_utils import load_extern_object

    return load_extern_object("pkg://bootcamp_verl.reward", "compute_score")


@pytest.fixture(scope="module")
def example_record(datasets) -> dict:
    return next(read_records(datasets.example_train))


def answer(value) -> str:
    return f'Some work first.\nAnswer:\n```json\n{{"result": {json.dumps(value)}}}\n```'


def test_right_and_wrong_answers_from_the_whole_response(compute_score, example_record):
    identity = example_record["reward_model"]["ground_truth"]
    extra = example_record["extra_info"]
    right = compute_score("bootcamp/example", answer(identity["expected_result"]), identity, extra)
    wrong = compute_score("bootcamp/example", answer(identity["expected_result"] + 7), identity, extra)
    assert right == {"score": 1.0, "bootcamp_answered": 1.0, "bootcamp_tool_calls": 0.0,
                     "bootcamp_tool_reward": 0.0, "bootcamp_error": 0.0,
                     "bootcamp_fallback": 1.0}  # no episode from our agent loop: judged on the whole response
    assert wrong["score"] == 0.0 and wrong["bootcamp_answered"] == 1.0
    assert compute_score("bootcamp/example", "no answer", identity, extra)["bootcamp_answered"] == 0.0


def test_the_ground_truth_may_be_json_text_and_extra_info_may_be_missing(compute_score, example_record):
    identity = example_record["reward_model"]["ground_truth"]
    # no extra_info: the namespace's only reward scores it
    result = compute_score("bootcamp/example", answer(identity["expected_result"]), json.dumps(identity), None)
    assert result["score"] == 1.0 and result["bootcamp_error"] == 0.0


def test_the_episode_our_loop_recorded_wins_over_the_whole_response(compute_score, example_record):
    identity = example_record["reward_model"]["ground_truth"]
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": answer(identity["expected_result"])}]
    extra = {**example_record["extra_info"], "messages": messages, "tool_rewards": [0.0, -0.1],
             "tool_scores": {"calculator": 0.9}, "turn_scores": [1.0]}
    # solution_str holds an earlier wrong answer too; the reward judges the last assistant message, as in eval
    solution = answer(identity["expected_result"] + 1) + " tool output " + answer(identity["expected_result"] + 2)
    result = compute_score("bootcamp/example", solution, identity, extra)
    assert result["score"] == 1.0
    assert result["bootcamp_tool_calls"] == 2.0 and result["bootcamp_tool_reward"] == pytest.approx(-0.1)


def test_reward_kwargs_are_verify_kwargs(compute_score, example_record):
    identity = dict(example_record["reward_model"]["ground_truth"], tolerance=1e-8)
    near = answer(identity["expected_result"] * (1 + 1e-4))
    assert compute_score("bootcamp/example", near, identity, example_record["extra_info"])["score"] == 0.0
    soft = compute_score("bootcamp/example", near, identity, example_record["extra_info"], soft=True,
                         reward_router_address=None)
    assert 0.0 < soft["score"] < 1.0


@pytest.mark.parametrize("data_source, ground_truth, extra_info", [
    ("bootcamp/example", "not an identity", None),  # a broken ground truth
    ("bootcamp/nothing_here", {"x": 1}, None),  # no such bootcamp
    ("bootcamp/example", {"expression": "1"}, {"bootcamp": {"reward": "example/missing"}}),  # an unknown reward
    ("bootcamp/example", {"expression": "1"}, {"infrastructure_error": "tool server down"}),  # a failed episode
])
def test_a_bootcamp_record_never_raises(compute_score, data_source, ground_truth, extra_info):
    result = compute_score(data_source, "Answer: 1", ground_truth, extra_info)
    assert result["score"] == 0.0 and result["bootcamp_error"] == 1.0 and tuple(result) == RESULT_KEYS


def test_other_data_sources_get_verls_default_with_the_same_keys(compute_score):
    right = compute_score("openai/gsm8k", "so the answer is #### 42", "42")
    wrong = compute_score("openai/gsm8k", "#### 41", "42", extra_info={})
    assert tuple(right) == RESULT_KEYS and right["score"] == 1.0 and wrong["score"] == 0.0
    with pytest.raises(NotImplementedError):  # verl's own answer for sources it does not know
        compute_score("somewhere/else", "x", "y")


def test_a_row_without_the_loops_episode_is_flagged_as_a_fallback(compute_score, example_record, caplog):
    import bootcamp_verl.reward

    identity = example_record["reward_model"]["ground_truth"]
    extra = {**example_record["extra_info"], "bootcamp": {"reward": "example/arithmetic"}}
    bootcamp_verl.reward._warned.clear()
    with caplog.at_level("WARNING", logger="bootcamp_verl"):
        first = compute_score("bootcamp/example", answer(identity["expected_result"]), identity, extra)
        second = compute_score("bootcamp/example", answer(identity["expected_result"]), identity, extra)
    # a reward manager that does not merge the loop's extra_fields (dapo, gdpo): judged on solution_str, flagged
    assert first["score"] == second["score"] == 1.0 and first["bootcamp_fallback"] == 1.0
    warnings = [record.getMessage() for record in caplog.records if "bootcamp_fallback" in record.getMessage()]
    assert len(warnings) == 1 and "reward manager" in warnings[0]
    merged = {**extra, "messages": [{"role": "assistant", "content": answer(identity["expected_result"])}],
              "tool_rewards": [], "turn_scores": []}
    assert compute_score("bootcamp/example", "", identity, merged)["bootcamp_fallback"] == 0.0


def test_an_answer_the_interaction_gave_up_on_scores_zero_without_judging_again(compute_score, example_record):
    """The agent loop ended it as a reward_timeout (the interaction ran past its limit on this answer): 0, as in eval,
    and not an infrastructure error, so the sample is trained on."""
    identity = example_record["reward_model"]["ground_truth"]
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": answer(identity["expected_result"])}]
    extra = {**example_record["extra_info"], "messages": messages, "tool_rewards": [], "tool_scores": {},
             "turn_scores": [0.0]}
    assert compute_score("bootcamp/example", "", identity, {**extra, "finish_reason": "answered"})["score"] == 1.0
    timed_out = compute_score("bootcamp/example", "", identity, {**extra, "finish_reason": "reward_timeout"})
    assert timed_out["score"] == 0.0 and timed_out["bootcamp_error"] == 0.0
