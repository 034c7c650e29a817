"""The HTML report: self-contained, offline, every value from the results escaped, every episode embedded."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bootcamp_core.cli.main import main
from bootcamp_core.evaluate.report import render_report
from bootcamp_core.evaluate.statistics import summarize
from bootcamp_core.evaluate.viewer import MESSAGE_LIMIT, EpisodePayload, episode_view, report_episodes

HOSTILE = '<img src=x onerror=alert(1)><script>alert("pwned")</script>&amp;'
BREAKOUT = '</script><img src=x onerror=alert(1)><script>alert(2)</script>'


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
    summary = summarize(lines)
    summary.update(extra)
    return render_report(summary, lines)


def without_payload(report: str) -> str:
    """The report less its base64 payload elements and the viewer's own script."""
    report = re.sub(r'<script type="application/octet-stream"[^>]*>[A-Za-z0-9+/=]*</script>', "", report)
    return re.sub(r"<script>.*?</script>", "", report, flags=re.DOTALL)


def test_everything_from_the_results_is_escaped_and_no_data_can_end_its_element():
    lines = [line(1.0, 2, answer=HOSTILE), line(0.0, 5, success=False, source=HOSTILE, generator=HOSTILE),
             line(0.0, 1, answer=BREAKOUT, record="r2")]
    html = render(lines, evaluation_config={"system_prompt": HOSTILE}, results_path=HOSTILE)
    # the only scripts are the viewer's and the payload's; nothing from the data is markup
    assert html.count("<script>") == 1 and html.count("</script>") == 1 + html.count("application/octet-stream")
    rest = without_payload(html)
    assert "<script" not in rest and "<img" not in rest and "onerror=alert(1)>" not in rest
    assert rest.count("&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;&amp;amp;") >= 3
    # self-contained: no resource is fetched from anywhere
    for needle in ("http://", "https://", "src=", "href=", "url(", "@import", "<link"):
        assert needle not in rest.replace("&lt;img src=x", "")
    assert "http" not in html and "innerHTML" not in html
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    # the model's text is all there, as data
    _, episodes = report_episodes(html)
    assert [episode["messages"][0]["content"] for episode in episodes] == [HOSTILE, "ok", BREAKOUT]


def test_every_episode_is_indexed_for_the_viewer_whatever_its_order_in_many_chunks():
    lines = [line(index % 3 / 2, 2, record=f"r{index}", answer=f"answer {index} " + "x" * 500) for index in range(60)]
    payload = EpisodePayload(chunk_bytes=4000)
    for data in lines:
        payload.add(data)
    html = "".join(payload.elements())
    index, episodes = report_episodes(html)
    assert len(payload.chunks()) > 5
    assert [row[0] for row in index] == [data["id"] for data in lines] == [episode["id"] for episode in episodes]
    assert [row[3] for row in index] == [data["score"] for data in lines]
    assert [row[4] for row in index] == [data["score"] >= 1 for data in lines]  # solved
    # each row names its chunk: rows of one chunk are consecutive and chunks never skip a number
    chunks = [row[11] for row in index]
    assert chunks == sorted(chunks) and set(chunks) == set(range(len(payload.chunks())))


def test_a_message_over_the_limit_is_cut_with_a_marker_and_the_rest_is_kept_whole():
    long = "y" * (MESSAGE_LIMIT + 12345)
    data = line(0.0, 1, answer=long)
    data["tool_calls"] = [{"id": "c1", "name": "calc", "arguments": "{}", "output": "z" * (MESSAGE_LIMIT * 2)}]
    _, [episode] = report_episodes(render([data]))
    shown = episode["messages"][0]["content"]
    assert shown.startswith("y" * MESSAGE_LIMIT) and "12345 more characters" in shown
    assert shown.split("\n")[0] == "y" * MESSAGE_LIMIT and "results.jsonl" in shown
    assert f"{MESSAGE_LIMIT} more characters" in episode["tool_calls"][0]["output"]
    assert episode["id"] == "r1:0" and episode["score"] == 0.0  # everything short is kept as it is
    assert data["messages"][0]["content"] == long  # the line itself is never changed


def embedded(lines: list[dict]) -> list[dict]:
    payload = EpisodePayload()
    for data in lines:
        payload.add(data)
    return report_episodes("".join(payload.elements()))[1]


def test_each_episode_is_embedded_as_its_view_whichever_way_it_is_encoded():
    """Most views are short and plain JSON: they are encoded once, without the cut walk; a long one, a NaN, an
    object JSON has no form for, each gets the walk and its cut; all read back as their view."""
    long_plain = line(1.0, 2)
    long_plain["messages"] = [{"role": "user", "content": "x" * (MESSAGE_LIMIT // 2)}] * 3  # long, no long string
    long_cut = line(0.0, 1, answer="y" * (MESSAGE_LIMIT + 1))
    with_nan = line(0.5, 1)
    with_nan["tool_calls"] = [{"id": "c", "metrics": {"ratio": float("nan"), "big": float("inf"), 1: "int key"}}]
    with_object = line(0.5, 1)
    with_object["extracted_output"] = {"a set": {3}}
    lines = [line(1.0, 3, answer="a \u2028 b"), long_plain, long_cut, with_nan, with_object]
    episodes = embedded(lines)
    for data, episode in zip(lines, episodes, strict=True):
        assert episode == json.loads(json.dumps(episode_view(data), default=repr)), data["id"]
    assert episodes[1]["messages"][0]["content"] == "x" * (MESSAGE_LIMIT // 2)
    assert episodes[2]["messages"][0]["content"].endswith("1 more characters; the full text is in results.jsonl]")
    assert episodes[3]["tool_calls"][0]["metrics"] == {"ratio": "nan", "big": "inf", "1": "int key"}
    assert episodes[4]["extracted_output"] == {"a set": "{3}"}


def test_groups_each_get_a_row_and_pass_at_k_columns():
    lines = [line(1.0, 2, repeat=0), line(0.0, 2, repeat=1), line(1.0, 3, source="bootcamp/b", generator="b/gen")]
    summary = summarize(lines)
    assert [(g["data_source"], g["count"]) for g in summary["groups"]] == [("bootcamp/a", 2), ("bootcamp/b", 1)]
    assert summary["groups"][0]["pass_at_k"] == {"pass@1": 0.5, "pass@2": 1.0}
    html = render_report(summary, [])
    assert "<th>pass@2</th>" in html and "bootcamp/b" in html


def test_intervals_are_shown_beside_their_values_when_the_summary_has_them():
    summary = summarize([line(1.0, 2), line(0.0, 2, repeat=1)])
    summary["groups"][0].update({"mean_score_ci": [0.125, 0.875], "solved_rate_ci": [0.25, 0.75],
                                 "pass_at_k_ci": {"pass@1": [0.0625, 0.9375]}, "flip_rate": 0.5})
    html = render_report(summary, [])
    assert "<th>mean score 95% interval</th>" in html and "<th>pass@1 95% interval</th>" in html
    assert "<td>[0.125, 0.875]</td>" in html and "<td>[0.25, 0.75]</td>" in html and "[0.0625, 0.9375]" in html
    assert "<th>flip rate</th>" in html and "<td>0.5</td>" in html


def original_line() -> dict:
    """A line of the original framework's evaluator: no id, data_source only in input, the truth as JSON text."""
    prompt = [{"role": "user", "content": "What is 1+1?"}]
    return {"input": {"data_source": "old_bootcamp", "prompt": prompt,
                      "reward_model": {"ground_truth": '{"answer": 2}', "style": "rule"}},
            "messages": prompt + [{"role": "assistant", "content": "\\boxed{2}"}],
            "extracted_output": "2", "score": 1.0, "success": True, "reached_max_turns": False,
            "turn_record": {"assistant_turns": 1}}


def older_line() -> dict:
    """A line of an earlier bootcamp eval: no solved, no error_kind, no timings."""
    return {"id": "r9:0", "data_source": "bootcamp/a", "generator": "a/gen", "score": 0.5, "success": True,
            "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}


def test_bootcamp_report_rebuilds_summary_and_report_of_old_and_original_results(tmp_path: Path, capsys):
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(data) + "\n" for data in (original_line(), older_line(), {"score": 0})))
    assert main(["report", str(results)]) == 0
    assert "3 episodes" in capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["overall"]["count"] == 3 and (tmp_path / "summary.csv").exists()
    index, episodes = report_episodes((tmp_path / "report.html").read_text(encoding="utf-8"))
    assert [row[1] for row in index] == ["old_bootcamp", "bootcamp/a", ""]
    assert index[0][0] == "line 1" and index[1][0] == "r9:0"
    assert episodes[0]["ground_truth"] == {"answer": 2} and episodes[0]["extracted_output"] == "2"
    assert episodes[2]["messages"] == []


def test_bootcamp_report_keeps_an_earlier_summary_of_the_same_results_and_writes_where_asked(tmp_path: Path):
    results = tmp_path / "run" / "results.jsonl"
    results.parent.mkdir()
    results.write_text(json.dumps(older_line()) + "\n")
    (results.parent / "summary.json").write_text(json.dumps({
        "results_path": str(results), "evaluation_config": {"policy": "reference"}, "overall": {"count": 99}}))
    assert main(["report", str(results)]) == 0
    summary = json.loads((results.parent / "summary.json").read_text())
    assert summary["evaluation_config"] == {"policy": "reference"} and summary["overall"]["count"] == 1
    target = tmp_path / "elsewhere" / "mine.html"
    assert main(["report", str(results), "--output", str(target)]) == 0
    assert target.exists() and (target.parent / "summary.json").exists()
    assert len(report_episodes(target.read_text(encoding="utf-8"))[1]) == 1


def test_bootcamp_report_refuses_what_is_not_a_results_file_in_one_line(tmp_path: Path, capsys):
    dataset = tmp_path / "data.jsonl"
    dataset.write_text(json.dumps({"prompt": [{"role": "user", "content": "q"}], "data_source": "x"}) + "\n")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    for path, reason in [(tmp_path / "missing.jsonl", "no such file"), (dataset, "a record of a dataset"),
                         (binary, "not valid UTF-8"), (empty, "holds no result lines"), (tmp_path, "not a file")]:
        assert main(["report", str(path)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and reason in err and err.count("\n") == 1, err
    assert not (tmp_path / "report.html").exists()
    with pytest.raises(SystemExit) as usage:
        main(["report"])
    assert usage.value.code == 2
