"""The report's plots: bar sizes and labels read back from the SVG, counts bounded, labels escaped, odd lines ignored."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import anyio
import pytest

from bootcamp_core.data.generate import config_for_bootcamp, iter_records
from bootcamp_core.episode.engine import run_episode
from bootcamp_core.episode.policies import OpenAIPolicy
from bootcamp_core.episode.retries import RetryPolicy
from bootcamp_core.evaluate.plots import ReportPlots
from bootcamp_core.evaluate.results import ResultsWriter
from bootcamp_core.plugin.loader import Registry
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, sequence


def line(score=1.0, *, generator="g/a", turns=2, calls=(), finish="terminated", **extra) -> dict:
    """A results line; ``calls`` are (tool name, failed) pairs."""
    return {"id": "r:0", "generator": generator, "score": score, "finish_reason": finish,
            "turn_record": {"assistant_turns": turns, "tool_calls": len(calls)},
            "tool_calls": [{"id": f"c{i}", "name": name, "error": "boom" if failed else None}
                           for i, (name, failed) in enumerate(calls)], **extra}


def plots_of(lines) -> ReportPlots:
    plots = ReportPlots()
    for item in lines:
        plots.add(item)
    return plots


def parse(plots: ReportPlots) -> ET.Element:
    fragment = plots.html()
    root = ET.fromstring(fragment)  # well-formed: every tag closed, every label escaped
    assert root.tag == "section" and root.get("class") == "plots"
    return root


def charts(root: ET.Element) -> dict[str, ET.Element]:
    return {svg.get("aria-label"): svg for svg in root.iter("svg")}


def bars(svg: ET.Element) -> dict[str, ET.Element]:
    return {rect.get("data-label"): rect for rect in svg.iter("rect") if rect.get("class") == "bar"}


def plot_height(svg: ET.Element) -> float:
    """The height of the 0..100% (or 0..1) axis: from the top grid line to the base line."""
    ys = sorted(float(line.get("y1")) for line in svg.iter("line") if line.get("y1") == line.get("y2"))
    return ys[-1] - ys[0]


def texts(svg: ET.Element, cls: str) -> list[str]:
    return [text.text for text in svg.iter("text") if text.get("class") == cls]


def score_chart(root: ET.Element, generator: str) -> ET.Element:
    return next(svg for label, svg in charts(root).items() if label.startswith(f"{generator} · "))


def test_score_bars_are_shares_of_the_generators_episodes_on_a_fixed_axis():
    lines = [line(0.0), line(0.05), line(0.55), line(1.0), line(1.0, generator="g/b")] + [line(0.95)] * 3
    root = parse(plots_of(lines))
    a = score_chart(root, "g/a")
    full = plot_height(a)
    heights = {label: float(rect.get("height")) for label, rect in bars(a).items()}
    assert len(heights) == 11 and list(heights)[-1] == "1"
    # 7 episodes of g/a: 2 in [0, .1), 1 in [.5, .6), 3 in [.9, 1), 1 exactly 1
    assert heights["0.0"] == pytest.approx(full * 2 / 7, abs=0.1)
    assert heights["0.5"] == pytest.approx(full / 7, abs=0.1)
    assert heights["0.9"] == pytest.approx(full * 3 / 7, abs=0.1)
    assert heights["1"] == pytest.approx(full / 7, abs=0.1)
    assert heights["0.3"] == 0
    assert sorted(texts(a, "count")) == ["1", "1", "2", "3"]  # the counts are written on the bars
    assert "g/a · 7 episodes" in charts(root)


def test_a_single_value_is_not_drawn_as_a_full_panel_of_meaningless_height():
    # many episodes, all one value: the bar is 100% of the axis, and the axis says so
    root = parse(plots_of([line(0.5)] * 4 + [line(0.3, generator="g/b")] * 1 + [line(0.3, generator="g/b")] * 3))
    a = score_chart(root, "g/a")
    assert float(bars(a)["0.5"].get("height")) == pytest.approx(plot_height(a), abs=0.1)
    assert texts(a, "count") == ["4"]
    assert [text.text for text in a.iter("text") if text.text and text.text.endswith("%")] == ["0%", "50%", "100%"]
    # one value among several: its bar is its share, not the panel's height
    root = parse(plots_of([line(0.5)] + [line(0.0)] * 3))
    a = score_chart(root, "g/a")
    assert float(bars(a)["0.5"].get("height")) == pytest.approx(plot_height(a) / 4, abs=0.1)
    # one episode
    root = parse(plots_of([line(1.0)]))
    assert "g/a · 1 episode" in charts(root)


def test_scores_outside_zero_to_one_or_missing_are_noted_not_binned():
    root = parse(plots_of([line(1.5), line(-1), line(None), line("0.5"), line(0.2)]))
    a = score_chart(root, "g/a")
    assert float(bars(a)["0.2"].get("height")) == pytest.approx(plot_height(a), abs=0.1)
    assert texts(a, "note") == ["2 outside 0..1; 2 without a score"]


def test_mean_score_per_turn_count_and_per_tool_call_count():
    lines = [line(1.0, turns=2), line(0.0, turns=2), line(0.5, turns=2), line(1.0, turns=5, calls=[("t", False)]),
             line(0.25, turns=5, calls=[("t", False)] * 3)]
    root = parse(plots_of(lines))
    turns = charts(root)["mean score by assistant turns"]
    by_turns = bars(turns)
    assert list(by_turns) == ["2", "5"]  # 3 and 4 had no episode: no bar
    assert (by_turns["2"].get("data-count"), float(by_turns["2"].get("data-mean"))) == ("3", 0.5)
    assert (by_turns["5"].get("data-count"), float(by_turns["5"].get("data-mean"))) == ("2", 0.625)
    assert float(by_turns["2"].get("height")) == pytest.approx(plot_height(turns) * 0.5, abs=0.1)
    assert sorted(texts(turns, "count")) == ["n=2", "n=3"]
    x_labels = [text.text for text in turns.iter("text") if text.get("text-anchor") == "middle" and not text.get("class")]
    assert x_labels == ["2", "3", "4", "5"]  # gaps shown as empty places on the axis
    calls = bars(charts(root)["mean score by tool calls"])
    assert {label: (rect.get("data-count"), float(rect.get("data-mean"))) for label, rect in calls.items()} == {
        "0": ("3", 0.5), "1": ("1", 1.0), "3": ("1", 0.25)}


def test_ten_thousand_long_episodes_are_aggregated_not_drawn_one_by_one():
    plots = ReportPlots()
    for i in range(10_000):
        plots.add(line((i % 11) / 10, generator=f"g/{i % 3}", turns=1 + i % 40, calls=[("calc", i % 7 == 0)] * 40,
                       messages=[{"role": "assistant", "content": "x" * 100}] * 80))
    assert plots.episodes == 10_000
    assert len(plots.by_turns) == 40 and plots.tools == {"calc": [400_000, 1429 * 40]}
    root = parse(plots)
    assert sum(1 for _ in root.iter("rect")) < 200
    turns = bars(charts(root)["mean score by assistant turns"])
    assert len(turns) == 40 and sum(int(rect.get("data-count")) for rect in turns.values()) == 10_000


def test_a_wide_spread_of_counts_is_grouped_into_ranges():
    root = parse(plots_of([line(1.0, turns=t) for t in range(0, 1000, 7)]))
    grouped = bars(charts(root)["mean score by assistant turns"])
    assert 1 < len(grouped) <= 40 and "0–24" in grouped
    assert sum(int(rect.get("data-count")) for rect in grouped.values()) == len(range(0, 1000, 7))


def test_tool_error_rate_per_tool_is_labelled_errors_over_calls():
    lines = [line(calls=[("calculator", False), ("calculator", True), ("search", True)]),
             line(calls=[("calculator", False), ("calculator", False)]),
             line(calls=[])]
    plots = plots_of(lines)
    assert plots.tools == {"calculator": [4, 1], "search": [1, 1]}
    svg = charts(parse(plots))["tool error rate (errors/calls)"]
    assert texts(svg, "value") == ["1/4", "1/1"]
    rates = {label: float(rect.get("width")) for label, rect in bars(svg).items()}
    assert rates["calculator"] == pytest.approx(rates["search"] / 4, abs=0.1)


def test_tool_errors_from_messages_when_a_line_has_no_tool_calls_list():
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "calculator", "arguments": "{"}},
            {"id": "b", "type": "function", "function": {"name": "calculator", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "Error: arguments of calculator are not valid JSON"},
        {"role": "tool", "tool_call_id": "b", "name": "calculator", "content": "3"},
    ]
    plots = plots_of([{"generator": "g", "score": 1, "messages": messages}])
    assert plots.tools == {"calculator": [2, 1]}


def test_finish_reasons_are_counted_most_common_first():
    plots = plots_of([line(finish="terminated")] * 3 + [line(finish="max_assistant_turns"), line(finish=None)])
    svg = charts(parse(plots))["finish reasons (episodes)"]
    assert list(bars(svg)) == ["terminated", "(none)", "max_assistant_turns"]
    assert texts(svg, "value") == ["3 (60%)", "1 (20%)", "1 (20%)"]


def test_labels_are_escaped():
    hostile = '<script>alert("x")</script>&'
    fragment = plots_of([line(generator=hostile, finish=hostile, calls=[(hostile, True)])]).html()
    assert "<script" not in fragment
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in fragment
    root = ET.fromstring(fragment)
    assert any(label.startswith(hostile) for label in charts(root))  # the parser reads back the original text
    assert hostile in bars(charts(root)["tool error rate (errors/calls)"])


@pytest.mark.parametrize("odd", [
    None, 3, "text", [], {}, {"score": "1", "turn_record": "x", "tool_calls": "y", "messages": "z"},
    {"score": float("nan"), "generator": 5, "finish_reason": ["x"], "turn_record": {"assistant_turns": "4",
                                                                                     "tool_calls": -1}},
    {"score": True, "turn_record": {"assistant_turns": 2.5}, "tool_calls": [None, 1, {"name": 3, "error": 0}]},
    {"messages": [None, {"role": "assistant", "tool_calls": [None, {"function": "x"}]}, {"role": "tool"}]},
    {"score": 10**400, "turn_record": {"assistant_turns": 10**30}},
])
def test_odd_lines_never_raise(odd):
    plots = ReportPlots()
    plots.add(odd)
    plots.add(line(0.5))
    root = parse(plots)
    assert float(bars(score_chart(root, "g/a"))["0.5"].get("data-count")) == 1


def test_bounded_names_and_counts():
    plots = plots_of([line(turns=i, generator=f"g{i}", finish=f"f{i}", calls=[(f"tool{i}", False)])
                      for i in range(2000)])
    assert len(plots.scores) == len(plots.finish_reasons) == len(plots.tools) == 51  # 50 names + "(other)"
    assert plots.tools["(other)"] == [1950, 0] and len(plots.by_turns) == 1000 and plots.dropped_counts == 1000
    assert "1000 episode(s) with rare turn or tool-call counts not shown." in plots.html()


def test_deterministic_and_empty():
    lines = [line(0.3, generator="g/b", calls=[("b", True)]), line(0.7, generator="g/a", calls=[("a", False)])]
    assert plots_of(lines).html() == plots_of(lines).html()
    assert plots_of(lines).html() == plots_of(reversed(lines)).html()
    assert ET.fromstring(ReportPlots().html()).get("class") == "plots"


def test_lines_of_a_real_episode_with_a_failing_tool_call(example_registry: Registry, tmp_path):
    config = config_for_bootcamp("example", example_registry, overrides={"split_samples": "test:1"})
    record = next(iter(iter_records(config, "test", example_registry)))
    identity = record["reward_model"]["ground_truth"]
    script = sequence(
        Reply.malformed_arguments("calculator"),
        Reply.calls(("calculator", {"expression": identity["expression"]})),
        Reply.text(f'```json\n{{"result": {identity["expected_result"]}}}\n```'),
    )

    async def main():
        policy = OpenAIPolicy(api_url=server.base_url, model="stub-model", api_key="k",
                              retry=RetryPolicy(attempts=1, base_s=0.01, max_s=0.01))
        try:
            return await run_episode(record, policy, registry=example_registry)
        finally:
            await policy.aclose()

    with ScriptedChatServer(script) as server:
        result = anyio.run(main)
    writer = ResultsWriter(tmp_path / "results.jsonl")
    data = json.loads(writer.line_for(result))
    writer.close()
    plots = plots_of([data])
    assert plots.tools == {"calculator": [2, 1]}
    assert plots.finish_reasons == {data["finish_reason"]: 1}
    # the same count from the messages alone, as for a line that has no tool_calls list
    del data["tool_calls"]
    assert plots_of([data]).tools == {"calculator": [2, 1]}
    root = parse(plots)
    assert texts(charts(root)["tool error rate (errors/calls)"], "value") == ["1/2"]
