"""The evaluation's HTML report: one self-contained file (inline CSS and SVG, no script, no external resource).

Every value from the results is HTML-escaped, model output included, so a trajectory can never inject markup.

A score is never shown as a passing number when it is not one: :func:`score_text` prints enough digits that an
unsolved 0.99999997 never reads "1", and each episode is marked solved or not from its line's ``solved``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

__all__ = ["histogram_svg", "render_report", "score_text"]


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


def histogram_svg(labels: Sequence[str], counts: Sequence[int], *, title: str, width: int = 420,
                  height: int = 180) -> str:
    """A bar chart as inline SVG (no namespace URL needed inside HTML)."""
    top = max(counts, default=0) or 1
    margin_left, margin_bottom, margin_top = 34, 28, 18
    plot_w, plot_h = width - margin_left - 6, height - margin_bottom - margin_top
    bar_w = plot_w / max(len(counts), 1)
    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="{_e(title)}">',
             f'<text x="{margin_left}" y="12">{_e(title)}</text>',
             f'<text x="2" y="{margin_top + 8}">{top}</text>',
             f'<text x="2" y="{margin_top + plot_h}">0</text>',
             f'<line x1="{margin_left}" y1="{margin_top + plot_h}" x2="{width - 6}" y2="{margin_top + plot_h}" '
             'stroke="#57606a"/>']
    for i, (label, count) in enumerate(zip(labels, counts)):
        bar_h = plot_h * count / top
        x = margin_left + i * bar_w
        parts.append(f'<rect x="{x + 1:.1f}" y="{margin_top + plot_h - bar_h:.1f}" width="{max(bar_w - 2, 1):.1f}" '
                     f'height="{bar_h:.1f}" fill="#2f81f7"><title>{_e(label)}: {count}</title></rect>')
        if len(labels) <= 24 or i % max(1, len(labels) // 12) == 0:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{height - 10}" text-anchor="middle">{_e(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _int_histogram(histogram: dict) -> tuple[list[str], list[int]]:
    items = sorted((int(key), value) for key, value in histogram.items())
    if not items:
        return [], []
    # every value between the smallest and the largest, so gaps show as empty bars
    counts = dict(items)
    keys = range(items[0][0], items[-1][0] + 1)
    return [str(key) for key in keys], [counts.get(key, 0) for key in keys]


_SCORE_LABELS = [f"{i / 10:.1f}" for i in range(10)] + ["1"]

_COLUMNS = [("count", "episodes"), ("records", "records"), ("successes", "successes"),
            ("infrastructure_errors", "infra errors"), ("model_errors", "model errors"), ("mean_score", "mean score"),
            ("solved_rate", "solved rate"), ("mean_assistant_turns", "mean turns"),
            ("mean_tool_calls", "mean tool calls"),
            ("mean_total_tokens", "mean tokens"), ("total_tokens", "tokens")]


def _table(rows: list[dict]) -> str:
    ks = sorted({key for row in rows for key in row.get("pass_at_k", {})}, key=lambda key: int(key.split("@")[1]))
    head = "".join(f"<th>{_e(label)}</th>" for _, label in _COLUMNS) + "".join(f"<th>{_e(k)}</th>" for k in ks)
    out = [f'<table><tr><th class="l">data source</th><th class="l">generator</th>{head}</tr>']
    for row in rows:
        cells = "".join(f"<td>{_e(row.get(key))}</td>" for key, _ in _COLUMNS)
        cells += "".join(f"<td>{_e(row.get('pass_at_k', {}).get(k))}</td>" for k in ks)
        out.append(f'<tr><td class="l">{_e(row.get("data_source"))}</td><td class="l">{_e(row.get("generator"))}</td>'
                   f"{cells}</tr>")
    out.append("</table>")
    return "".join(out)


def _charts(stats: dict) -> str:
    charts = [histogram_svg(_SCORE_LABELS, stats.get("score_histogram") or [0] * 11, title="score distribution")]
    labels, counts = _int_histogram(stats.get("assistant_turns_histogram") or {})
    charts.append(histogram_svg(labels, counts, title="assistant turns per episode"))
    labels, counts = _int_histogram(stats.get("tool_calls_histogram") or {})
    charts.append(histogram_svg(labels, counts, title="tool calls per episode"))
    return '<div class="charts">' + "".join(f'<div class="chart">{chart}</div>' for chart in charts) + "</div>"


def _examples(examples: list[dict]) -> str:
    if not examples:
        return '<p class="muted">No episodes.</p>'
    out = []
    for example in examples:
        score = float(example.get("score") or 0)
        solved = example.get("solved")
        if not isinstance(solved, bool):  # a summary of an older version: no solved per example
            solved = bool(example.get("success")) and score >= 1
        status = "good" if solved else "bad"
        summary = (f'<span class="{status}">score {_e(score_text(score))} · {"solved" if solved else "not solved"}'
                   '</span> · '
                   f'{_e(example.get("generator"))} · repeat {_e(example.get("repeat"))} · '
                   f'{_e(example.get("finish_reason"))} · {_e(example.get("assistant_turns"))} turns'
                   f'{" · " + _e(example.get("error_type")) + " error" if example.get("error_type") else ""}')
        body = f'<p class="muted">id {_e(example.get("id"))}</p>'
        if example.get("error"):
            body += f"<p>error:</p><pre>{_e(example.get('error'))}</pre>"
        body += f"<p>final answer:</p><pre>{_e(example.get('answer'))}</pre>"
        out.append(f"<details><summary>{summary}</summary>{body}</details>")
    return "".join(out)


def render_report(summary: dict, examples: list[dict] | None = None, *, title: str = "Bootcamp evaluation") -> str:
    """The report as one HTML document: overall and per-group tables, histograms, finish reasons, examples."""
    overall = summary.get("overall") or {}
    config = summary.get("evaluation_config") or {}
    reasons = overall.get("finish_reasons") or {}
    reason_rows = "".join(f'<tr><td class="l">{_e(reason)}</td><td>{_e(count)}</td></tr>'
                          for reason, count in reasons.items())
    config_rows = "".join(f'<tr><td class="l">{_e(key)}</td><td class="l">{_e(value)}</td></tr>'
                          for key, value in config.items() if value not in (None, {}, []))
    groups = summary.get("groups") or []
    per_group = "".join(f"<h3>{_e(group.get('data_source'))} · {_e(group.get('generator'))}</h3>{_charts(group)}"
                        for group in groups) if len(groups) > 1 else ""
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title><style>{_CSS}</style></head><body>'
        f"<h1>{_e(title)}</h1>"
        f'<p class="muted">results: {_e(summary.get("results_path"))}</p>'
        "<h2>Overall</h2>"
        + _table([{"data_source": "ALL", "generator": "ALL", **overall}])
        + "<h2>By data source and generator</h2>"
        + _table(groups)
        + "<h2>Distributions</h2>"
        + _charts(overall)
        + per_group
        + '<h2>Finish reasons</h2><table><tr><th class="l">reason</th><th>episodes</th></tr>'
        + reason_rows + "</table>"
        + "<h2>Episodes (failures first)</h2>"
        + _examples(examples or [])
        + '<h2>Configuration</h2><table>' + config_rows + "</table>"
        + "</body></html>\n"
    )
