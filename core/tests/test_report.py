"""The HTML report: self-contained, offline, and every value from the results escaped."""

from __future__ import annotations

import re

from bootcamp_core.evaluate.report import render_report
from bootcamp_core.evaluate.statistics import summarize

HOSTILE = '<img src=x onerror=alert(1)><script>alert("pwned")</script>&amp;'


def line(score: float, turns: int, *, answer: str = "ok", success: bool = True, source: str = "bootcamp/a",
         generator: str = "a/gen", repeat: int = 0, record: str = "r1") -> dict:
    return {
        "id": f"{record}:{repeat}", "repeat": repeat, "data_source": source, "generator": generator,
        "score": score, "success": success, "error_type": None if success else "infrastructure",
        "error": None if success else HOSTILE, "finish_reason": "answered" if success else "error",
        "turn_record": {"assistant_turns": turns, "tool_calls": turns - 1},
        "token_usage": {"total_tokens": 10}, "messages": [{"role": "assistant", "content": answer}],
    }


def render(lines: list[dict], **extra) -> str:
    examples: list = []
    summary = summarize(lines, examples=examples)
    summary.update(extra)
    return render_report(summary, examples)


def test_everything_from_the_results_is_escaped():
    lines = [line(1.0, 2, answer=HOSTILE), line(0.0, 5, success=False, source=HOSTILE, generator=HOSTILE)]
    html = render(lines, evaluation_config={"system_prompt": HOSTILE}, results_path=HOSTILE)
    assert "<script" not in html and "<img" not in html and "onerror=alert(1)>" not in html
    assert html.count("&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;&amp;amp;") >= 4
    # self-contained: no resource is fetched from anywhere
    for needle in ("http://", "https://", "src=", "href=", "url(", "@import", "<link"):
        assert needle not in html.replace("&lt;img src=x", "")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")


def test_histograms_show_the_distributions():
    lines = [line(1.0, 2, record="r1"), line(0.0, 2, record="r2"), line(0.55, 4, record="r3")]
    summary = summarize(lines)
    assert summary["overall"]["score_histogram"] == [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    assert summary["overall"]["assistant_turns_histogram"] == {"2": 2, "4": 1}
    html = render_report(summary, [])
    charts = re.findall(r"<svg.*?</svg>", html)
    assert len(charts) == 3
    score_chart, turns_chart, _ = charts
    assert score_chart.count("<rect") == 11 and "score distribution" in score_chart
    # turns 2..4 with the gap at 3 shown as an empty bar
    assert turns_chart.count("<rect") == 3 and "<title>3: 0</title>" in turns_chart
    assert "<title>2: 2</title>" in turns_chart


def test_groups_each_get_a_row_and_pass_at_k_columns():
    lines = [line(1.0, 2, repeat=0), line(0.0, 2, repeat=1), line(1.0, 3, source="bootcamp/b", generator="b/gen")]
    summary = summarize(lines)
    assert [(g["data_source"], g["count"]) for g in summary["groups"]] == [("bootcamp/a", 2), ("bootcamp/b", 1)]
    assert summary["groups"][0]["pass_at_k"] == {"pass@1": 0.5, "pass@2": 1.0}
    html = render_report(summary, [])
    assert "<th>pass@2</th>" in html and "bootcamp/b" in html
