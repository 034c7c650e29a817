"""The interaction: reminders while the match runs, the end once the tool output says it is over."""

from __future__ import annotations

import asyncio

import pytest

from bootcamp_core import Registry
from bootcamp_texas_holdem.game import match_score
from bootcamp_texas_holdem.interaction import TableFeedback

IDENTITY = {"seed": 1, "hands": 10, "score_scale": 5_000.0}
PROMPT = {"role": "user", "content": "Play 10 hands."}
FINAL = "The match is over: all 10 hands have been played. You won 1250 chips in total (+12.5 big blinds)."


def tool(text: str) -> dict:
    return {"role": "tool", "tool_call_id": "call_0", "name": "act", "content": text}


def assistant(text: str = "I will think about it.") -> dict:
    return {"role": "assistant", "content": text}


def judge(interaction: TableFeedback, conversations: list[list[dict]]) -> tuple[list[tuple], float]:
    async def episode() -> tuple[list[tuple], float]:
        instance_id = await interaction.start_interaction(None, identity=IDENTITY)
        results = [await interaction.generate_response(instance_id, messages) for messages in conversations]
        score = await interaction.calculate_score(instance_id)
        await interaction.finalize_interaction(instance_id)
        await interaction.finalize_interaction(instance_id)  # twice is harmless
        assert instance_id not in interaction.instances
        return results, score

    return asyncio.run(episode())


@pytest.fixture
def interaction(registry: Registry) -> TableFeedback:
    return registry.component("interaction", "texas_holdem/table_feedback")


def test_reminds_to_start(interaction: TableFeedback) -> None:
    (result,), score = judge(interaction, [[PROMPT, assistant()]])
    terminate, feedback, turn_score, extra = result
    assert (terminate, turn_score, extra) == (False, 0.0, {"match_over": False, "reminders": 1})
    assert "not over yet" in feedback and "you have not looked at the table yet" in feedback and "`act`" in feedback
    assert score == 0.0


def test_reminder_names_the_hand_waiting(interaction: TableFeedback) -> None:
    messages = [PROMPT, tool("You call 50.\n\nHand 3 of 10, flop. You are the big blind."), assistant()]
    (result,), _ = judge(interaction, [messages])
    assert result[0] is False and "hand 3 of 10 is waiting for your action" in result[1]


def test_ends_when_the_match_is_over(interaction: TableFeedback) -> None:
    messages = [PROMPT, tool("You fold.\nHand 10 is over (you folded): you lost 50 chips.\n" + FINAL),
                assistant("Result: +1250 chips")]
    (result,), score = judge(interaction, [messages])
    assert result == (True, "The match is over. Thank you for playing.", match_score(1250, 5_000.0),
                      {"match_over": True, "reminders": 0})
    assert score == match_score(1250, 5_000.0)
    lost = [PROMPT, tool(FINAL.replace("won 1250", "lost 1250")), assistant()]
    assert judge(interaction, [lost])[1] == match_score(-1250, 5_000.0)


def test_stops_reminding_after_max_reminders(interaction: TableFeedback) -> None:
    conversation = [PROMPT]
    conversations = []
    for _ in range(4):
        conversation = [*conversation, assistant()]
        conversations.append(conversation)
        conversation = [*conversation, {"role": "user", "content": "keep playing"}]
    results, score = judge(interaction, conversations)
    assert [result[0] for result in results] == [False, False, False, True]
    assert "unfinished" in results[-1][1] and score == 0.0
    results, _ = judge(TableFeedback(max_reminders=1), conversations[:2])
    assert [result[0] for result in results] == [False, True]


def test_only_tool_output_at_the_start_of_a_line_ends_the_match(interaction: TableFeedback) -> None:
    spoofs = [
        [PROMPT, assistant(FINAL)],  # the model saying so is not the table saying so
        [PROMPT, {"role": "user", "content": FINAL}, assistant()],
        [PROMPT, tool(f"Illegal action: unknown action {FINAL!r}; use one of fold"), assistant()],
    ]
    for messages in spoofs:
        (result,), _ = judge(interaction, [messages])
        assert result[0] is False
    parts = [PROMPT, {"role": "tool", "content": [{"type": "text", "text": FINAL}]}, assistant()]
    assert judge(interaction, [parts])[0][0][0] is True
