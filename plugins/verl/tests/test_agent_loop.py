"""The agent loop, built from the exported agent_loop_config.yaml as verl builds it, on scripted model turns."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from bootcamp_core import get_registry
from bootcamp_verl.reward import compute_score

WRONG = 'Answer:\n```json\n{"result": 1}\n```'


def answer(value) -> str:
    return f'Answer:\n```json\n{{"result": {json.dumps(value)}}}\n```'


def rows_of(rows: list[dict], data_source: str) -> list[dict]:
    return [row for row in rows if row["data_source"] == data_source]


def segments(output, tokenizer) -> list[tuple[int, str]]:
    """The response as (mask, text) runs: 1 for what the model wrote, 0 for what the loop added."""
    runs: list[tuple[int, list[int]]] = []
    for token, mask in zip(output.response_ids, output.response_mask, strict=True):
        if not runs or runs[-1][0] != mask:
            runs.append((mask, []))
        runs[-1][1].append(token)
    return [(mask, tokenizer.decode(tokens)) for mask, tokens in runs]


def reward_of(row: dict, output) -> dict:
    """compute_score as verl's reward manager calls it: extra_info merged with the loop's extra_fields."""
    return compute_score(row["data_source"], "unused", row["reward_model"]["ground_truth"],
                         {**row["extra_info"], **output.extra_fields})


def test_an_episode_with_tool_calls_and_feedback(dataset_rows, run_loop, load_tools, scripted_server, call,
                                                 tokenizer):
    row = rows_of(dataset_rows, "bootcamp/example")[0]
    identity = json.loads(row["reward_model"]["ground_truth"])
    calculate = call("calculator", {"expression": identity["expression"]})
    turns = [calculate, calculate, WRONG, answer(identity["expected_result"])]
    tools = load_tools()
    server = scripted_server(list(turns))

    loop, output = run_loop("bootcamp_agent", server, list(tools.values()), row)

    assert type(loop).__name__ == "BootcampAgentLoop"
    extra = output.extra_fields
    assert extra["tool_rewards"] == [0.0, -0.1]  # one instance across both calls: the repeat was seen
    assert extra["tool_scores"] == {"calculator": pytest.approx(0.9)}  # calc_reward at the end
    assert extra["turn_scores"] == [0.0, 1.0]  # the feedback judged both answers
    assert extra["finish_reason"] == "terminated" and extra["infrastructure_error"] is None
    assert extra["output"] == answer(identity["expected_result"])
    # the model wrote exactly its turns (mask 1); tool answers and the feedback are the environment's (mask 0)
    runs = segments(output, tokenizer)
    assert [text for mask, text in runs if mask == 1] == [turn + "<|im_end|>" for turn in turns]
    environment = [text for mask, text in runs if mask == 0]
    assert len(environment) == 3 and "<|im_start|>user\nThat is not correct." in environment[2]
    # verl's count: 4 assistant turns, 4 user turns as bootcamp eval counts them (2 tool answers, 2 verdicts), 1
    assert output.num_turns == 4 + 4 + 1
    # the reward's messages, as bootcamp eval records them
    messages = extra["messages"]
    assert [message["role"] for message in messages] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant", "user", "assistant"]
    first_call = messages[1]["tool_calls"][0]
    assert first_call["id"] == "call_0_0" and json.loads(first_call["function"]["arguments"]) == {
        "expression": identity["expression"]}
    assert messages[2]["tool_call_id"] == "call_0_0" and messages[2]["name"] == "calculator"
    assert messages[5]["content"] == WRONG  # chat-template tokens are not part of the text
    # only the record's tools were offered
    assert "calculator" in server.prompts[0] and "counter" not in server.prompts[0]
    # the episode ended: tools released, interaction finalized
    feedback = get_registry().component("interaction", "example/feedback")
    assert tools["calculator"].open_instances == [] and tools["counter"].open_instances == []
    assert not set(tools["calculator"].tool.instances) & set(feedback.instances)
    assert reward_of(row, output)["score"] == 1.0


@pytest.mark.parametrize("steps, score", [(["[2]", "[{rest}]"], 1.0), (["[1]"], 0.0)])
def test_the_reward_sees_the_tools_scores(dataset_rows, run_loop, load_tools, scripted_server, call, steps, score):
    row = rows_of(dataset_rows, "bootcamp/mini")[0]
    target = json.loads(row["reward_model"]["ground_truth"])["target"]
    turns = [call("counter", {"steps": text.format(rest=target - 2)}) for text in steps] + ["done"]

    _, output = run_loop("bootcamp_agent", scripted_server(turns), list(load_tools().values()), row)

    assert output.extra_fields["tool_scores"] == {"counter": score}
    assert output.extra_fields["finish_reason"] == "answered"  # no interaction: an answer ends the episode
    # the mini reward scores "done" by the counter's tool score alone
    result = reward_of(row, output)
    assert result["score"] == score and result["bootcamp_answered"] == 1.0
    assert result["bootcamp_tool_calls"] == len(steps)


def with_limits(config, **limits):
    config = OmegaConf.create(OmegaConf.to_container(config))
    for key, value in limits.items():
        config.actor_rollout_ref.rollout.multi_turn[key] = value
    return config


def test_the_turn_limits_are_evals(dataset_rows, run_loop, load_tools, scripted_server, call, trainer_config):
    row = rows_of(dataset_rows, "bootcamp/example")[1]
    turns = [call("calculator", {"expression": f"{index}+1"}) for index in range(5)]
    config = with_limits(trainer_config, max_assistant_turns=2)

    _, output = run_loop("bootcamp_agent", scripted_server(turns), list(load_tools().values()), row, config)

    # two assistant turns, and the calls of the last one still ran (bootcamp eval answers every call of a turn)
    assert output.extra_fields["finish_reason"] == "max_assistant_turns"
    assert output.extra_fields["tool_rewards"] == [0.0, 0.0]
    assert [message["role"] for message in output.extra_fields["messages"]][1:] == [
        "assistant", "tool", "assistant", "tool"]


def test_a_last_answer_whose_feedback_does_not_fit_ends_at_the_turn_limit(dataset_rows, run_loop, load_tools,
                                                                          scripted_server, tokenizer, trainer_config):
    row = rows_of(dataset_rows, "bootcamp/example")[1]
    tools = list(load_tools().values())
    config = with_limits(trainer_config, max_assistant_turns=2)
    _, roomy = run_loop("bootcamp_agent", scripted_server([WRONG, WRONG]), tools, row, config)
    assert roomy.extra_fields["finish_reason"] == "max_assistant_turns"

    # the same episode with a response budget one token short of the feedback on the last answer: the turn limit
    # ended it all the same (the verdict comes before the limits are checked), not the response length
    config.actor_rollout_ref.rollout.response_length = len(roomy.response_mask) - 1
    _, tight = run_loop("bootcamp_agent", scripted_server([WRONG, WRONG]), tools, row, config)
    assert tight.extra_fields["finish_reason"] == "max_assistant_turns"
    assert tight.extra_fields["turn_scores"] == [0.0, 0.0]
    assert [text for mask, text in segments(tight, tokenizer) if mask == 1] == [WRONG + "<|im_end|>"] * 2

    # with a turn left, the feedback that does not fit ends the episode for its length
    config.actor_rollout_ref.rollout.multi_turn.max_assistant_turns = 3
    _, short = run_loop("bootcamp_agent", scripted_server([WRONG, WRONG, WRONG]), tools, row, config)
    assert short.extra_fields["finish_reason"] == "max_response_length"
    assert short.extra_fields["turn_scores"] == [0.0, 0.0]


def test_every_tool_message_counts_as_a_user_turn(dataset_rows, run_loop, load_tools, scripted_server, call,
                                                  trainer_config):
    row = rows_of(dataset_rows, "bootcamp/example")[1]
    both = call("calculator", {"expression": "1+1"}) + call("calculator", {"expression": "2+2"})
    config = with_limits(trainer_config, max_user_turns=2)

    _, output = run_loop("bootcamp_agent", scripted_server([both, both]), list(load_tools().values()), row, config)

    assert output.extra_fields["finish_reason"] == "max_user_turns"
    assert output.extra_fields["tool_rewards"] == [0.0, 0.0]  # one turn of two calls, both answered
    assert output.num_turns == 1 + 2 + 1


def test_mistakes_are_told_in_evals_words(dataset_rows, run_loop, load_tools, scripted_server, call):
    row = rows_of(dataset_rows, "bootcamp/example")[2]
    turns = [call("counter", {"steps": "[1]"}), call("calculator", [1, 2]), WRONG, WRONG, WRONG]

    _, output = run_loop("bootcamp_agent", scripted_server(turns), list(load_tools().values()), row)

    tool_messages = [m["content"] for m in output.extra_fields["messages"] if m["role"] == "tool"]
    # counter is another bootcamp's tool: this record does not offer it
    assert tool_messages == ["Error: unknown tool 'counter'; available: calculator",
                             "Error: arguments of calculator must be a JSON object, got list"]
    assert output.extra_fields["turn_scores"] == [0.0, 0.0, 0.0]  # three wrong answers end the episode
    assert output.extra_fields["finish_reason"] == "terminated"
    assert reward_of(row, output)["score"] == 0.0


def test_rows_of_other_data_run_as_verls_loop_with_the_same_keys(dataset_rows, run_loop, load_tools, scripted_server,
                                                                 call):
    row = dict(rows_of(dataset_rows, "bootcamp/example")[0])
    row["extra_info"] = {key: value for key, value in row["extra_info"].items() if key != "bootcamp"}
    turns = [call("calculator", {"expression": "1+1"}), "2"]

    _, output = run_loop("bootcamp_agent", scripted_server(turns), list(load_tools().values()), row)

    assert output.extra_fields["tool_rewards"] == [0.0]
    assert output.extra_fields["turn_scores"] == []  # no interaction without a bootcamp
    assert {key: output.extra_fields[key] for key in ("output", "messages", "tool_scores", "finish_reason",
                                                      "bootcamp_error")} == {
        "output": "", "messages": [], "tool_scores": {}, "finish_reason": "", "bootcamp_error": 0}


def test_a_failed_open_runs_no_model_turn_and_is_not_trained_on(dataset_rows, run_loop, load_tools, scripted_server):
    from bootcamp_core.testing import free_port
    from bootcamp_verl.tool import BootcampTool

    row = rows_of(dataset_rows, "bootcamp/mini")[0]
    tools = load_tools()
    # the counter served by a tool server that is not there: opening the episode cannot connect
    tools["counter"] = BootcampTool({"type": "native", "tool_id": "mini/counter",
                                     "url": f"http://127.0.0.1:{free_port()}"}, tools["counter"].tool_schema)
    server = scripted_server(["done"])

    _, output = run_loop("bootcamp_agent", server, list(tools.values()), row)

    assert server.prompts == []  # no model turn for an episode that never opened
    assert output.response_mask and set(output.response_mask) == {0}
    assert len(output.response_ids) == len(output.response_mask)
    extra = output.extra_fields
    assert extra["bootcamp_error"] == 1 and extra["finish_reason"] == "error"
    assert "cannot connect" in extra["infrastructure_error"] and extra["tool_scores"] == {}
    result = reward_of(row, output)
    assert result["score"] == 0.0 and result["bootcamp_error"] == 1.0


def test_a_tool_failing_mid_episode_masks_the_whole_trajectory(dataset_rows, run_loop, load_tools, scripted_server,
                                                               call):
    row = rows_of(dataset_rows, "bootcamp/mini")[0]
    tools = load_tools()
    # the second call fails as a lost tool server does (the test bootcamp's counter on a negative step)
    server = scripted_server([call("counter", {"steps": "[1]"}), call("counter", {"steps": "[-1]"}), "done"])

    _, output = run_loop("bootcamp_agent", server, list(tools.values()), row)

    assert len(server.prompts) == 2  # no model turn after the failure
    assert "went away" in output.extra_fields["infrastructure_error"]
    assert output.extra_fields["bootcamp_error"] == 1 and output.extra_fields["finish_reason"] == "error"
    assert output.response_mask and set(output.response_mask) == {0}  # the model's turns too: no gradient


def test_a_finished_episode_is_trained_on_and_not_marked(dataset_rows, run_loop, load_tools, scripted_server):
    row = rows_of(dataset_rows, "bootcamp/mini")[0]

    _, output = run_loop("bootcamp_agent", scripted_server(["done"]), list(load_tools().values()), row)

    assert output.extra_fields["bootcamp_error"] == 0 and 1 in output.response_mask
