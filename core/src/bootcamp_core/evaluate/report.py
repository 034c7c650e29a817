"""The evaluation's HTML report: one self-contained file (inline CSS, SVG and script, no external resource).

The tables and plots are HTML, every value from the results escaped. The episodes are the trajectory viewer's
(:mod:`bootcamp_core.evaluate.viewer`): compressed base64 that no browser runs, rendered by the report's script with
``textContent`` only, so a trajectory can never inject markup.

A score is never shown as a passing number when it is not one: :func:`score_text` prints enough digits that an
unsolved 0.99999997 never reads "1", and each episode is marked solved or not from its line's ``solved``.
"""

from __future__ import annotations

import html
import io
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import attrs

from bootcamp_core.plugin.errors import ConfigError

__all__ = ["BuiltReport", "build_report", "render_report", "score_text", "write_report"]


def score_text(score: float) -> str:
    """``score`` for display: 4 significant digits, unless those would round it onto 0 or 1 when it is neither;
    then as many digits as it takes (up to 17), so a failing 0.99999997 never shows as a passing "1"."""
    text = f"{score:.4g}"
    if score not in (0.0, 1.0) and text in ("0", "1"):
        for digits in range(5, 18):
            text = f"{score:.{digits}g}"
            if text not in ("0", "1"):
                break
    return text

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1b1f24;background:#fff}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem}
table{border-collapse:collapse;font-size:.9rem}th,td{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:right}
th{background:#f6f8fa}td.l,th.l{text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:2rem}.chart{font-size:.8rem}
svg text{font-size:10px;fill:#1b1f24}
details{margin:.4rem 0;border:1px solid #d0d7de;border-radius:4px;padding:.3rem .6rem}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.5rem;max-height:20rem;overflow:auto}
.bad{color:#b42318}.good{color:#067647}.muted{color:#57606a}
"""


def _e(value: Any) -> str:
    """Escaped text of any value (quotes too, so it is safe in attributes as well)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return html.escape(score_text(value))  # 4 significant digits, never rounded onto 0 or 1
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, default=repr)
    return html.escape(value, quote=True)


_COLUMNS = [("count", "episodes"), ("records", "records"), ("successes", "successes"),
            ("infrastructure_errors", "infra errors"), ("model_errors", "model errors"), ("mean_score", "mean score"),
            ("solved_rate", "solved rate"), ("mean_assistant_turns", "mean turns"),
            ("mean_tool_calls", "mean tool calls"),
            ("mean_total_tokens", "mean tokens"), ("total_tokens", "tokens")]
#: The summary's interval of a column, shown in a column of its own beside it.
_INTERVALS = {"mean_score": "mean_score_ci", "solved_rate": "solved_rate_ci"}


def _interval(value: Any) -> str:
    """``[low, high]`` of an interval; nothing for anything else."""
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(x, int | float) for x in value):
        return f"[{_e(float(value[0]))}, {_e(float(value[1]))}]"
    return ""


def _table(rows: list[dict]) -> str:
    """A row per group; the intervals and the flip rate each get a column of their own when any row has them."""
    ks = sorted({key for row in rows for key in (row.get("pass_at_k") or {})},
                key=lambda key: int(key.split("@")[1]) if key.split("@")[-1].isdigit() else 0)
    cells: list[tuple[str, Any]] = []  # (heading, the cell's text of a row)
    for key, label in _COLUMNS:
        cells.append((label, lambda row, key=key: _e(row.get(key))))
        interval = _INTERVALS.get(key)
        if interval and any(interval in row for row in rows):
            cells.append((f"{label} 95% interval", lambda row, interval=interval: _interval(row.get(interval))))
    with_ci = any(isinstance(row.get("pass_at_k_ci"), dict) for row in rows)
    for k in ks:
        cells.append((k, lambda row, k=k: _e((row.get("pass_at_k") or {}).get(k))))
        if with_ci:
            cells.append((f"{k} 95% interval", lambda row, k=k: _interval(
                (row.get("pass_at_k_ci") if isinstance(row.get("pass_at_k_ci"), dict) else {}).get(k))))
    if any("flip_rate" in row for row in rows):
        cells.append(("flip rate", lambda row: _e(row.get("flip_rate"))))
    head = "".join(f"<th>{_e(label)}</th>" for label, _ in cells)
    out = [f'<table><tr><th class="l">data source</th><th class="l">generator</th>{head}</tr>']
    for row in rows:
        body = "".join(f"<td>{text(row)}</td>" for _, text in cells)
        out.append(f'<tr><td class="l">{_e(row.get("data_source"))}</td><td class="l">{_e(row.get("generator"))}</td>'
                   f"{body}</tr>")
    out.append("</table>")
    return "".join(out)


_CONTROLS = """<div class="controls" id="viewer-controls">
<label>data source <select id="f-source"><option value="">all</option></select></label>
<label>generator <select id="f-generator"><option value="">all</option></select></label>
<label>finish reason <select id="f-finish"><option value="">all</option></select></label>
<label>error kind <select id="f-error"><option value="">all</option></select></label>
<label>hit a turn limit <select id="f-limit"><option value="">any</option><option value="yes">yes</option>
<option value="no">no</option></select></label>
<label>solved <select id="f-solved"><option value="">any</option><option value="yes">yes</option>
<option value="no">no</option></select></label>
<label>score from <input type="number" id="f-min" step="any"></label>
<label>to <input type="number" id="f-max" step="any"></label>
<label>text <input type="search" id="f-search" placeholder="search every message"></label>
</div>"""


def _viewer(payload: Any) -> Iterable[str]:
    from bootcamp_core.evaluate.viewer import viewer_script

    yield (f'<section id="viewer"><h2>Episodes (failures first)</h2>{_CONTROLS}'
           '<p id="viewer-status" class="muted">Loading the episodes… (the viewer needs JavaScript)</p>'
           '<noscript><p class="bad">JavaScript is off: the episodes cannot be shown.</p></noscript>'
           '<div id="episode-list"></div><div id="episode-view"></div></section>\n')
    yield from payload.elements()
    # the script is ours, never data; without "</" and "<!--" in it, nothing in it can end its element early
    script = viewer_script()
    if "</" in script or "<!--" in script:
        raise ValueError("the viewer script must not contain '</' or '<!--'")
    yield f"<script>{script}</script>\n"


class ReportParts:
    """The report's per-episode parts (its plots and its compressed episodes), built one results line at a time, so
    a pass over the results that computes the summary builds them too (``summarize_file(path, report=parts)``) and
    the file is read once."""

    def __init__(self) -> None:
        from bootcamp_core.evaluate.plots import ReportPlots
        from bootcamp_core.evaluate.viewer import EpisodePayload

        self.plots = ReportPlots()
        self.payload = EpisodePayload()

    def add(self, line: Any) -> None:
        if isinstance(line, dict):
            self.plots.add(line)
            self.payload.add(line)


def write_report(handle: IO[str], summary: dict, lines: Iterable[dict] = (), *,
                 title: str = "Bootcamp evaluation", parts: ReportParts | None = None) -> int:
    """Write the report to ``handle``: tables, plots, every episode of ``lines`` and the configuration
    (results lines, streamed: each is plotted and compressed as it comes), or of ``parts`` when they were built
    already (``lines`` is then ignored). Returns the episodes written."""
    from bootcamp_core.evaluate.viewer import viewer_css

    overall = summary.get("overall") or {}
    config = summary.get("evaluation_config") or {}
    config_rows = "".join(f'<tr><td class="l">{_e(key)}</td><td class="l">{_e(value)}</td></tr>'
                          for key, value in (config.items() if isinstance(config, dict) else ())
                          if value not in (None, {}, []))
    if parts is None:
        parts = ReportParts()
        for line in lines:
            parts.add(line)
    plots, payload = parts.plots, parts.payload
    handle.write(
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f"<style>{_CSS}{viewer_css()}</style></head><body>"
        f"<h1>{_e(title)}</h1>"
        f'<p class="muted">results: {_e(summary.get("results_path"))}</p>'
        "<h2>Overall</h2>"
        + _table([{"data_source": "ALL", "generator": "ALL", **overall}])
        + "<h2>By data source and generator</h2>"
        + _table(summary.get("groups") or [])
        + plots.html()  # the finish reasons among them
        + "\n")
    for part in _viewer(payload):
        handle.write(part)
    handle.write('<h2>Configuration</h2><table>' + config_rows + "</table></body></html>\n")
    return payload.count


def render_report(summary: dict, examples: Iterable[dict] | None = None, *,
                  title: str = "Bootcamp evaluation") -> str:
    """The report as one HTML document (see :func:`write_report`); ``examples``: the results lines to show."""
    buffer = io.StringIO()
    write_report(buffer, summary, examples or (), title=title)
    return buffer.getvalue()


@attrs.frozen
class BuiltReport:
    """What :func:`build_report` wrote."""

    report_path: Path
    summary_path: Path
    episodes: int


def _looks_like_results(path: Path) -> None:
    """Refuse (one line) a file whose first line is not a result line: not UTF-8, not JSON, a record, a summary."""
    from bootcamp_core.data.io import jsonl_lines

    for line in jsonl_lines(path):
        if line.error is not None:
            raise ConfigError(f"{path}:{line.number}: {line.error}: not a results file (one JSON object per episode, "
                              "as bootcamp eval writes)")
        data = line.value
        if not any(key in data for key in ("score", "messages", "output", "turn_record")):
            what = "a record of a dataset" if "prompt" in data else "no episode (no score, no messages)"
            raise ConfigError(f"{path}:{line.number}: {what}, not a result line: not a results file")
        return
    raise ConfigError(f"{path}: holds no result lines (empty): not a results file")


def build_report(results: str | os.PathLike, *, output: str | os.PathLike | None = None) -> BuiltReport:
    """(Re)build summary.json, summary.csv and report.html from a results file of any version.

    The report goes to ``output`` (a file path, or a folder for report.html in it), else beside ``results``; the
    summary files go beside the report. An earlier summary.json there of the same results file keeps its run-wide
    keys (configuration, this run's counts). A missing file or one that is not a results file is a ConfigError.
    """
    from bootcamp_core.evaluate.statistics import REPORT_NAME, SUMMARY_JSON, summarize_file, write_summary

    results = Path(results)
    if not results.exists():
        raise ConfigError(f"{results}: no such file")
    if not results.is_file():
        raise ConfigError(f"{results}: not a file")
    _looks_like_results(results)
    report_path = Path(output) if output is not None else results.parent / REPORT_NAME
    if report_path.is_dir():
        report_path = report_path / REPORT_NAME
    directory = report_path.parent
    summary: dict = {}
    try:
        old = json.loads((directory / SUMMARY_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none, or unreadable: rebuilt from the results alone
        old = None
    if isinstance(old, dict) and isinstance(old.get("results_path"), str):
        try:
            same = Path(old["results_path"]).resolve() == results.resolve()
        except OSError:
            same = False
        if same:
            summary = {key: value for key, value in old.items() if key not in ("overall", "groups")}
    parts = ReportParts()
    summary.update(summarize_file(results, report=parts))
    summary.setdefault("results_path", str(results))
    if not isinstance(summary.get("evaluation_config"), dict):
        summary["evaluation_config"] = _first_config(results)
    write_summary(directory, summary, report_path=report_path, parts=parts)
    return BuiltReport(report_path, directory / SUMMARY_JSON, summary["overall"]["count"])


def _first_config(results: Path) -> dict:
    """The evaluation configuration a line of the file carries (every line of a bootcamp eval run has it)."""
    from bootcamp_core.evaluate.results import iter_result_lines

    for line in iter_result_lines(results):
        config = line.get("evaluation_config")
        return config if isinstance(config, dict) else {}
    return {}
