"""The answer a report shows of an episode is what its reward scored: the text of the last assistant message."""

from __future__ import annotations

from bootcamp_core.evaluate.statistics import summarize


def shown_answer(messages) -> str:
    examples: list = []
    summarize([{"id": "r:0", "data_source": "bootcamp/a", "generator": "a/g", "score": 0.0, "success": True,
                "messages": messages}], examples=examples)
    return examples[0]["answer"]


def test_the_report_shows_the_text_of_the_last_assistant_message_as_the_reward_reads_it():
    parts = [{"type": "text", "text": "The sum is"}, {"type": "image_url", "image_url": {"url": "data:,"}},
             {"type": "text", "text": "ANSWER: 5"}]
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "first"},
                {"role": "assistant", "content": parts}, {"role": "user", "content": "Sure?"}]
    assert shown_answer(messages) == "The sum is\nANSWER: 5"
    assert shown_answer(messages[:2]) == "first"
    assert shown_answer([{"role": "assistant", "content": None, "tool_calls": []}]) == ""
    assert shown_answer([{"role": "user", "content": "q"}]) == "" and shown_answer(None) == ""
    assert shown_answer("not a list") == ""
    assert shown_answer([{"role": "assistant", "content": "x" * 2500}]) == "x" * 2000 + "…"
