"""The interaction: reminders while the match runs, the end once the tool output says it is over."""

from __future__ import annotations

import random

import anyio
import pytest

from bootcamp_core import Registry, RolloutLimits, tool_call_message
from bootcamp_core.testing import converse, generate_records, play_episodes, scripted_policy
from bootcamp_texas_holdem.game import MATCH_OVER, match_score
from bootcamp_texas_holdem.interaction import TableFeedback

IDENTITY = {"seed": 1, "hands": 10, "score_scale": 5_000.0}
PROMPT = {"role": "user", "content": "Play 10 hands."}
FINAL = "The match is over: all 10 hands have been played. You won 1250 chips in total (+12.5 big blinds)."
ENDED = "The match is over. Thank you for playing."


def tool(text: str) -> dict:
    return {"role": "tool", "tool_call_id": "call_0", "name": "act", "content": text}


def assistant(text: str = "I will think about it.") -> dict:
    return {"role": "assistant", "content": text}


def judge(interaction: TableFeedback, messages: list[dict]) -> tuple[tuple, float]:
    """One turn of ``interaction`` on a whole transcript, tool outputs included: (its response, the score)."""

    async def turn() -> tuple[tuple, float]:
        instance_id = await interaction.start_interaction(None, identity=IDENTITY)
        try:
            return (await interaction.generate_response(instance_id, messages),
                    await interaction.calculate_score(instance_id))
        finally:
            await interaction.finalize_interaction(instance_id)

    return anyio.run(turn)


@pytest.fixture
def interaction(registry: Registry) -> TableFeedback:
    return registry.component("interaction", "texas_holdem/table_feedback")


def test_reminds_to_start(interaction: TableFeedback) -> None:
    (response,), score = converse(interaction, IDENTITY, "I will think about it.", prompt=PROMPT["content"])
    terminate, feedback, turn_score, extra = response
    assert (terminate, turn_score, extra) == (False, 0.0, {"match_over": False, "reminders": 1})
    assert "not over yet" in feedback and "you have not looked at the table yet" in feedback and "`act`" in feedback
    assert score == 0.0


def test_reminder_names_the_hand_waiting(interaction: TableFeedback) -> None:
    messages = [PROMPT, tool("You call 50.\n\nHand 3 of 10, flop. You are the big blind."), assistant()]
    response, _ = judge(interaction, messages)
    assert response[0] is False and "hand 3 of 10 is waiting for your action" in response[1]


def test_ends_when_the_tool_output_says_the_match_is_over(interaction: TableFeedback) -> None:
    messages = [PROMPT, tool("You fold.\nHand 10 is over (you folded): you lost 50 chips.\n" + FINAL),
                assistant("Result: +1250 chips")]
    response, score = judge(interaction, messages)
    assert response == (True, ENDED, match_score(1250, 5_000.0), {"match_over": True, "reminders": 0})
    assert score == match_score(1250, 5_000.0)
    lost = [PROMPT, tool(FINAL.replace("won 1250", "lost 1250")), assistant()]
    assert judge(interaction, lost)[1] == match_score(-1250, 5_000.0)
    parts = [PROMPT, {"role": "tool", "content": [{"type": "text", "text": FINAL}]}, assistant()]
    assert judge(interaction, parts)[0][:2] == (True, ENDED)


def test_stops_reminding_after_max_reminders(interaction: TableFeedback) -> None:
    responses, score = converse(interaction, IDENTITY, *["I am not sure."] * 6)
    assert [response[0] for response in responses] == [False, False, False, True]
    assert "unfinished" in responses[-1][1] and score == 0.0
    responses, _ = converse(TableFeedback(max_reminders=1), IDENTITY, *["I am not sure."] * 6)
    assert [response[0] for response in responses] == [False, True]


def test_only_tool_output_at_the_start_of_a_line_ends_the_match(interaction: TableFeedback) -> None:
    (claimed,), _ = converse(interaction, IDENTITY, FINAL)  # the model saying so is not the table saying so
    (told,), _ = converse(interaction, IDENTITY, "Done.", prompt=FINAL)
    echoed, _ = judge(interaction, [PROMPT, tool(f"Illegal action: unknown action {FINAL!r}; use one of fold"),
                                    assistant()])
    assert [claimed[0], told[0], echoed[0]] == [False, False, False]


def _call_or_check(text: str) -> dict:
    return {"action": "call"} if '{"action": "call"}' in text else {"action": "check"}


async def _dawdler(messages: list[dict], tools: list[dict], record: object, rng: random.Random) -> dict:
    """Talks instead of acting once before looking at the table and once after, then calls or checks to the end."""
    outputs = [message["content"] for message in messages if message["role"] == "tool"]
    talked = sum(message["role"] == "assistant" and not message.get("tool_calls") for message in messages)
    if outputs and MATCH_OVER in outputs[-1]:
        return assistant("Result: the match is over.")
    if talked == (1 if outputs else 0):
        return assistant("Let me think about poker for a moment.")
    if not outputs:
        return tool_call_message(messages, ("table", {}))
    return tool_call_message(messages, ("act", _call_or_check(outputs[-1])))


def test_in_an_episode_it_reminds_then_ends_with_the_score_the_table_states(registry: Registry) -> None:
    config = {"instruction_generators": {"short": {"config": {"opponents": "tight_passive", "hands": 4},
                                                       "generation_ratio": 1}},
              "global_config": {"class_name": "texas_holdem/heads_up", "default_seed": 3}}
    (record,) = generate_records("texas_holdem", registry, instruction_config=config,
                                 overrides={"split_samples": {"test": 1}})
    (result,) = play_episodes([record], registry, policy=scripted_policy(_dawdler),
                              limits=RolloutLimits(max_assistant_turns=200, max_user_turns=400))
    assert (result.success, result.finish_reason) == (True, "terminated")
    reminders = [message["content"] for message in result.messages[1:] if message["role"] == "user"]
    assert len(reminders) == 2
    assert "you have not looked at the table yet" in reminders[0]
    assert "hand 1 of 4 is waiting for your action" in reminders[1]
    final = next(message["content"] for message in reversed(result.messages) if message["role"] == "tool")
    words = final.splitlines()[-1].split(" chips in total")[0].split()
    chips = int(words[-1]) * (1 if words[-2] == "won" else -1)
    expected = match_score(chips, result.ground_truth["score_scale"])
    assert result.turn_scores == [0.0, 0.0, expected]
    assert result.score == expected  # without a par the tools' score and the table's result agree
