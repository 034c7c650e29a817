"""Plots of the evaluation report, built from counts only: inline SVG, no script, deterministic.

:class:`ReportPlots` takes results lines one at a time (:meth:`~ReportPlots.add`) and keeps aggregate counts, never
the lines, so 10,000 episodes of 40 turns cost a few dictionaries. :meth:`~ReportPlots.html` draws:

- the score distribution of each generator: 10 bins over [0, 1) and one for exactly 1, each bar the share of that
  generator's episodes on a fixed 0..100% axis (one episode is one full bar of 100%, labelled ``1``, never a panel of
  meaningless height), the count written on each bar;
- the mean score per assistant-turn count and per tool-call count (fixed 0..1 axis, episodes per bar written on it;
  counts spread over more than 40 values are grouped into ranges);
- the error rate of each tool, labelled ``errors/calls``: a call is an error when its ``tool_calls`` entry has an
  ``error``; lines without ``tool_calls`` fall back to their ``messages``, where a failed call's tool message starts
  with ``Error: ``;
- the finish reasons, each with its count and share.

A line with missing or odd fields (a string where a number goes) counts only where its values make sense; nothing
in a line can make :meth:`~ReportPlots.add` raise. Every label is HTML-escaped.
"""

from __future__ import annotations

import contextlib
import html
import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ReportPlots"]

#: at most this many tool names, generators and finish reasons get their own bar; the rest share ``OTHER``
MAX_NAMES = 50
#: at most this many distinct turn / tool-call counts are kept; episodes beyond them are counted as not shown
MAX_COUNT_VALUES = 1000
#: a count axis with more values than this is grouped into ranges
MAX_BARS = 40
OTHER = "(other)"
ERROR_PREFIX = "Error: "

_SCORE_LABELS = [f"{i / 10:.1f}" for i in range(10)] + ["1"]
_BAR, _AXIS, _GRID, _BAD = "#2f81f7", "#57606a", "#d0d7de", "#b42318"


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _number(value: Any) -> float | None:
    """A finite int or float (not a bool, not a string), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return value if math.isfinite(value) else None


def _count(value: Any) -> int | None:
    """A non-negative whole number (``3`` or ``3.0``), else None."""
    number = _number(value)
    if number is None or number < 0 or number != int(number):
        return None
    return int(number)


def _name(value: Any, default: str) -> str:
    if isinstance(value, str) and value:
        return value
    return default


def _bounded(counts: Mapping[str, Any], key: str) -> str:
    """``key``, or :data:`OTHER` once :data:`MAX_NAMES` other keys are taken."""
    return key if key in counts or len(counts) < MAX_NAMES else OTHER


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%" if share in (0.0, 1.0) or 0.01 <= share <= 0.99 else f"{100 * share:.2g}%"


class _ScoreBins:
    __slots__ = ("bins", "missing", "outside")

    def __init__(self) -> None:
        self.bins = [0] * 11  # [0, .1), ..., [.9, 1), exactly 1
        self.outside = 0  # below 0 or above 1
        self.missing = 0  # no numeric score

    def add(self, score: float | None) -> None:
        if score is None:
            self.missing += 1
        elif score < 0 or score > 1:
            self.outside += 1
        else:
            self.bins[10 if score == 1 else min(9, int(score * 10))] += 1


class ReportPlots:
    """Aggregates results lines (:meth:`add`) and draws them as an HTML fragment of inline SVG (:meth:`html`)."""

    def __init__(self) -> None:
        self.episodes = 0
        self.scores: dict[str, _ScoreBins] = {}  # generator -> score bins
        self.by_turns: dict[int, list[float]] = {}  # assistant turns -> [episodes, sum of scores]
        self.by_tool_calls: dict[int, list[float]] = {}  # tool calls -> [episodes, sum of scores]
        self.dropped_counts = 0  # episodes whose turn or tool-call count was beyond MAX_COUNT_VALUES others
        self.tools: dict[str, list[int]] = {}  # tool name -> [calls, errors]
        self.finish_reasons: dict[str, int] = {}

    # ---- aggregation -------------------------------------------------------------------------------------------

    def add(self, line: dict) -> None:
        """Count one results line. Never raises, whatever the JSON holds."""
        with contextlib.suppress(Exception):  # whatever gets past the checks in _add must not break a report
            self._add(line)

    def _add(self, line: Any) -> None:
        if not isinstance(line, Mapping):
            return
        self.episodes += 1
        generator = _name(line.get("generator"), "(unknown)")
        key = _bounded(self.scores, generator)
        score = _number(line.get("score"))
        self.scores.setdefault(key, _ScoreBins()).add(score)

        reason = _name(line.get("finish_reason"), "(none)")
        key = _bounded(self.finish_reasons, reason)
        self.finish_reasons[key] = self.finish_reasons.get(key, 0) + 1

        turn_record = line.get("turn_record")
        turn_record = turn_record if isinstance(turn_record, Mapping) else {}
        calls = line.get("tool_calls")
        calls = calls if isinstance(calls, list) else None
        tool_calls = _count(turn_record.get("tool_calls"))
        if tool_calls is None and calls is not None:
            tool_calls = len(calls)
        if score is not None:
            self._add_mean(self.by_turns, _count(turn_record.get("assistant_turns")), score)
            self._add_mean(self.by_tool_calls, tool_calls, score)

        for name, failed in self._tool_results(calls, line.get("messages")):
            key = _bounded(self.tools, name)
            counts = self.tools.setdefault(key, [0, 0])
            counts[0] += 1
            counts[1] += failed

    def _add_mean(self, table: dict[int, list[float]], count: int | None, score: float) -> None:
        if count is None:
            return
        if count not in table and len(table) >= MAX_COUNT_VALUES:
            self.dropped_counts += 1
            return
        entry = table.setdefault(count, [0, 0.0])
        entry[0] += 1
        entry[1] += score

    @staticmethod
    def _tool_results(calls: list | None, messages: Any) -> Iterable[tuple[str, bool]]:
        """(tool name, failed) of each call of the line: from ``tool_calls`` when the line has them, else from the
        tool messages (a failed call's content starts with ``Error: ``)."""
        if calls is not None:
            for call in calls:
                if isinstance(call, Mapping):
                    yield _name(call.get("name"), "(unnamed)"), call.get("error") not in (None, "")
            return
        if not isinstance(messages, list):
            return
        names: dict[str, str] = {}  # tool_call_id -> function name, from the assistant messages
        for message in messages:
            if not isinstance(message, Mapping):
                continue
            if message.get("role") == "assistant" and isinstance(message.get("tool_calls"), list):
                for call in message["tool_calls"]:
                    if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                        call_id, name = call.get("id"), call["function"].get("name")
                        if isinstance(call_id, str) and isinstance(name, str) and len(names) < 10_000:
                            names[call_id] = name
            elif message.get("role") == "tool":
                call_id = message.get("tool_call_id")
                name = message.get("name")
                if not (isinstance(name, str) and name):
                    name = names.get(call_id, "(unnamed)") if isinstance(call_id, str) else "(unnamed)"
                content = message.get("content")
                yield name, isinstance(content, str) and content.startswith(ERROR_PREFIX)

    # ---- drawing -----------------------------------------------------------------------------------------------

    def html(self) -> str:
        """An HTML fragment: ``<section class="plots">...</section>`` of headings and inline SVG charts."""
        if not self.episodes:
            return '<section class="plots"><p class="muted">No episodes to plot.</p></section>'
        parts = ['<section class="plots">', "<h3>Score distribution by generator</h3>", '<div class="charts">']
        for generator in sorted(self.scores, key=lambda name: (name == OTHER, name)):
            parts.append(f'<div class="chart">{self._score_panel(generator, self.scores[generator])}</div>')
        parts.append("</div><h3>Score against assistant turns and tool calls</h3><div class=\"charts\">")
        parts.append(f'<div class="chart">{_mean_chart(self.by_turns, "mean score by assistant turns")}</div>')
        parts.append(f'<div class="chart">{_mean_chart(self.by_tool_calls, "mean score by tool calls")}</div>')
        parts.append("</div>")
        if self.dropped_counts:
            parts.append(f'<p class="muted">{self.dropped_counts} episode(s) with rare turn or tool-call counts '
                         "not shown.</p>")
        parts.append("<h3>Tool error rate</h3>")
        if self.tools:
            rows = [(name, errors / calls if calls else 0.0, f"{errors}/{calls}")
                    for name, (calls, errors) in sorted(self.tools.items(), key=lambda item: (item[0] == OTHER,
                                                                                              item[0]))]
            parts.append(_rate_bars(rows, title="tool error rate (errors/calls)", color=_BAD))
        else:
            parts.append('<p class="muted">No tool calls.</p>')
        parts.append("<h3>Finish reasons</h3>")
        rows = [(reason, count / self.episodes, f"{count} ({_pct(count / self.episodes)})")
                for reason, count in sorted(self.finish_reasons.items(), key=lambda item: (-item[1], item[0]))]
        parts.append(_rate_bars(rows, title="finish reasons (episodes)", color=_BAR))
        parts.append("</section>")
        return "".join(parts)

    @staticmethod
    def _score_panel(generator: str, scores: _ScoreBins) -> str:
        shown = sum(scores.bins)
        notes = []
        if scores.outside:
            notes.append(f"{scores.outside} outside 0..1")
        if scores.missing:
            notes.append(f"{scores.missing} without a score")
        title = f"{generator} · {shown} episode{'s' if shown != 1 else ''}"
        return _share_chart(_SCORE_LABELS, scores.bins, shown, title=title, note="; ".join(notes))


# ---- SVG primitives ---------------------------------------------------------------------------------------------


def _svg_open(width: float, height: float, title: str) -> str:
    return (f'<svg width="{width:.0f}" height="{height:.0f}" role="img" '
            f'aria-label="{_e(title)}"><text x="4" y="12" font-weight="bold">{_e(title)}</text>')


def _y_axis(left: float, top: float, plot_w: float, plot_h: float, ticks: list[tuple[float, str]]) -> list[str]:
    parts = []
    for fraction, label in ticks:
        y = top + plot_h * (1 - fraction)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w:.1f}" y2="{y:.1f}" stroke="{_GRID}"/>')
        parts.append(f'<text x="{left - 3}" y="{y + 3:.1f}" text-anchor="end">{_e(label)}</text>')
    parts.append(f'<line x1="{left}" y1="{top + plot_h:.1f}" x2="{left + plot_w:.1f}" y2="{top + plot_h:.1f}" '
                 f'stroke="{_AXIS}"/>')
    return parts


def _share_chart(labels: list[str], counts: list[int], total: int, *, title: str, note: str = "") -> str:
    """Vertical bars of ``count / total`` on a fixed 0..100% axis, each count written above its bar."""
    width, height = 330, 190 if note else 176
    left, top, bottom = 36, 30, 30 if note else 16
    plot_w, plot_h = width - left - 6, height - top - bottom - 14
    bar_w = plot_w / len(labels)
    parts = [_svg_open(width, height, title)]
    parts += _y_axis(left, top, plot_w, plot_h, [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")])
    base = top + plot_h
    for i, (label, count) in enumerate(zip(labels, counts)):
        share = count / total if total else 0.0
        bar_h = plot_h * share
        x = left + i * bar_w
        parts.append(f'<rect class="bar" data-label="{_e(label)}" data-count="{count}" x="{x + 1:.1f}" '
                     f'y="{base - bar_h:.1f}" width="{bar_w - 2:.1f}" height="{bar_h:.1f}" fill="{_BAR}">'
                     f"<title>{_e(label)}: {count} ({_pct(share)})</title></rect>")
        if count:
            parts.append(f'<text class="count" x="{x + bar_w / 2:.1f}" y="{base - bar_h - 2:.1f}" '
                         f'text-anchor="middle">{count}</text>')
        parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{base + 12:.1f}" text-anchor="middle">{_e(label)}</text>')
    if note:
        parts.append(f'<text class="note" x="4" y="{height - 4}">{_e(note)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _grouped(table: Mapping[int, list[float]]) -> list[tuple[str, int, float]]:
    """(label, episodes, sum of scores) per value of the count axis, every value from the smallest to the largest,
    grouped into ranges when there are more than :data:`MAX_BARS` of them."""
    if not table:
        return []
    low, high = min(table), max(table)
    step = max(1, math.ceil((high - low + 1) / MAX_BARS))
    out = []
    for start in range(low, high + 1, step):
        end = min(start + step - 1, high)
        episodes, total = 0, 0.0
        if step == 1:
            episodes, total = table.get(start, (0, 0.0))
        else:
            for value, (n, score_sum) in table.items():
                if start <= value <= end:
                    episodes, total = episodes + n, total + score_sum
        out.append((str(start) if start == end else f"{start}–{end}", int(episodes), total))
    return out


def _mean_chart(table: Mapping[int, list[float]], title: str) -> str:
    """Vertical bars of the mean score (fixed 0..1 axis) per count, the episodes of each written over it (turned
    upright in a band above the plot when the bars are too narrow for the text)."""
    groups = _grouped(table)
    if not groups:
        return _svg_open(330, 40, title) + '<text x="4" y="30">no episodes with this count</text></svg>'
    bar_w = max(20.0, min(40.0, 300 / len(groups)))
    upright = bar_w < 34
    left, top = 36, 70 if upright else 34
    plot_w, plot_h = bar_w * len(groups), 110
    width, height = left + plot_w + 8, top + plot_h + 30
    parts = [_svg_open(max(width, 200), height, title)]
    parts += _y_axis(left, top, plot_w, plot_h, [(0.0, "0"), (0.5, "0.5"), (1.0, "1")])
    base = top + plot_h
    widest = max(len(label) for label, _, _ in groups)
    every = max(1, math.ceil((widest * 6 + 6) / bar_w))  # x labels: every bar's when they fit, else every n-th
    for i, (label, episodes, total) in enumerate(groups):
        x = left + i * bar_w
        center = x + bar_w / 2
        if episodes:
            mean = total / episodes
            bar_h = plot_h * min(1.0, max(0.0, mean))
            parts.append(f'<rect class="bar" data-label="{_e(label)}" data-count="{episodes}" '
                         f'data-mean="{mean:.6g}" x="{x + 1:.1f}" y="{base - bar_h:.1f}" width="{bar_w - 2:.1f}" '
                         f'height="{bar_h:.1f}" fill="{_BAR}"><title>{_e(label)}: mean score {mean:.4g} over '
                         f"{episodes} episode{'s' if episodes != 1 else ''}</title></rect>")
            if upright:
                parts.append(f'<text class="count" x="{center + 3:.1f}" y="{top - 4}" '
                             f'transform="rotate(-90 {center + 3:.1f} {top - 4})">n={episodes}</text>')
            else:
                parts.append(f'<text class="count" x="{center:.1f}" y="{base - bar_h - 2:.1f}" '
                             f'text-anchor="middle">n={episodes}</text>')
        if i % every == 0:
            parts.append(f'<text x="{center:.1f}" y="{base + 12:.1f}" text-anchor="middle">{_e(label)}</text>')
    parts.append(f'<text x="{left}" y="{height - 4}" class="note">bar: mean score · n: episodes</text>')
    parts.append("</svg>")
    return "".join(parts)


def _rate_bars(rows: list[tuple[str, float, str]], *, title: str, color: str) -> str:
    """Horizontal bars of a fraction on a fixed 0..100% axis, one row per (label, fraction, text written after it)."""
    label_w, bar_max, row_h, top = 170, 260, 18, 22
    width, height = label_w + bar_max + 110, top + row_h * len(rows) + 18
    parts = [_svg_open(width, height, title)]
    end = top + row_h * len(rows)
    for fraction, text in ((0.0, "0%"), (0.5, "50%"), (1.0, "100%")):
        x = label_w + bar_max * fraction
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{end}" stroke="{_GRID}"/>')
        parts.append(f'<text x="{x:.1f}" y="{end + 12}" text-anchor="middle">{text}</text>')
    for i, (label, fraction, text) in enumerate(rows):
        y = top + i * row_h
        shown = label if len(label) <= 28 else label[:27] + "…"
        bar_w = bar_max * min(1.0, max(0.0, fraction))
        parts.append(f'<text x="{label_w - 4}" y="{y + 12}" text-anchor="end"><title>{_e(label)}</title>'
                     f"{_e(shown)}</text>")
        parts.append(f'<rect class="bar" data-label="{_e(label)}" x="{label_w}" y="{y + 3}" width="{bar_w:.1f}" '
                     f'height="{row_h - 6}" fill="{color}"><title>{_e(label)}: {_e(text)}</title></rect>')
        parts.append(f'<text class="value" x="{label_w + bar_w + 4:.1f}" y="{y + 12}">{_e(text)}</text>')
    parts.append("</svg>")
    return "".join(parts)
