"""A paired comparison of two results files (run A, run B) on the episodes they share.

Episodes are keyed by (record, repeat): a line's ``id`` ``<record>:<repeat>``, or for a line without one (the original
framework) the hash of its input record and its ``repeat``, as a resumed run keys it. When a file holds a key twice
(a resumed run can), its last line wins. An infrastructure failure (``success`` false) counts as unsolved with score
0, and each run's are counted. The differences are B - A: of the mean score and of the solved rate over the shared
episodes, with a paired 95% bootstrap interval that resamples the shared records (all their shared repeats together)
with the seeded resampling of :mod:`bootcamp_core.evaluate.intervals`, overall and per (data source, generator).
Episodes solved in one run only are listed by id; episodes in one run only are counted and listed, never dropped
silently.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from bootcamp_core.data.io import AtomicFile, jsonl_lines
from bootcamp_core.episode.engine import episode_id
from bootcamp_core.evaluate.intervals import CONFIDENCE, DEFAULT_SEED, RESAMPLES, ratio_interval
from bootcamp_core.evaluate.results import iter_result_lines
from bootcamp_core.evaluate.statistics import is_solved_line, number
from bootcamp_core.plugin.errors import ConfigError

__all__ = ["COMPARE_HTML", "COMPARE_JSON", "PAIRED_INTERVAL_DEFINITION", "compare_files", "compare_runs",
           "default_output_dir", "load_run", "render_comparison", "write_comparison"]

COMPARE_JSON = "compare.json"
COMPARE_HTML = "compare.html"
#: What the comparison's intervals are, written into every compare.json.
PAIRED_INTERVAL_DEFINITION = (
    f"differences B - A over the episodes both runs hold, keyed by (record, repeat); {CONFIDENCE:.0%} paired "
    f"percentile bootstrap, {RESAMPLES} resamples of the shared records with replacement (all their shared repeats "
    f"together), seed {DEFAULT_SEED}; an infrastructure failure counts as unsolved with score 0"
)


class _Episode:
    __slots__ = ("data_source", "generator", "score", "solved", "success")

    def __init__(self, data: dict) -> None:
        self.success = data.get("success") is not False
        self.score = number(data.get("score")) if self.success else 0.0
        self.solved = is_solved_line(data)
        self.data_source = str(data.get("data_source") or "")
        self.generator = str(data.get("generator") or data.get("generator_name") or "")


def _episode_key(data: dict) -> tuple[str, str]:
    """(record, repeat) of a result line."""
    episode = data.get("id")
    if isinstance(episode, str) and ":" in episode:
        record, _, repeat = episode.rpartition(":")
        return record, repeat
    repeat = data.get("repeat") or 0
    try:
        record = episode_id(data["input"], repeat).rpartition(":")[0]
    except (ValueError, TypeError, KeyError):
        record = json.dumps(data.get("input"), sort_keys=True, default=repr)
    return record, str(repeat)


def _result_lines(path: Path) -> Iterator[dict]:
    """The result lines of ``path``; a ConfigError naming it when it is not a results file."""
    if not path.exists():
        raise ConfigError(f"{path}: no such file")
    if not path.is_file():
        raise ConfigError(f"{path}: not a file")
    first = next(jsonl_lines(path), None)
    if first is None:
        raise ConfigError(f"{path}: no result lines (an empty file)")
    if first.error is not None:
        raise ConfigError(f"{path}:{first.number}: {first.error}; not a results file")
    for number_, data in enumerate(iter_result_lines(path), 1):
        score = data.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise ConfigError(f"{path}: a line has no numeric score (result {number_}); not a results file "
                              "(a dataset file?)")
        yield data


def load_run(path: str | os.PathLike) -> dict[tuple[str, str], _Episode]:
    """{(record, repeat): episode} of a results file, the last line of a repeated key winning."""
    episodes: dict[tuple[str, str], _Episode] = {}
    for data in _result_lines(Path(path)):
        episodes[_episode_key(data)] = _Episode(data)
    return episodes


def _episode_name(key: tuple[str, str]) -> str:
    return f"{key[0]}:{key[1]}"


def _difference(pairs: list[tuple[tuple[str, str], _Episode, _Episode]]) -> dict:
    """Means of A and B, their difference and its paired interval over shared (key, A, B) episodes."""
    per_record: dict[str, list] = {}  # record -> [episodes, score difference sum, solved difference sum]
    score_a = score_b = 0.0
    solved_a = solved_b = infra_a = infra_b = a_only = b_only = 0
    for (record, _), a, b in pairs:
        entry = per_record.setdefault(record, [0, 0.0, 0])
        entry[0] += 1
        entry[1] += b.score - a.score
        entry[2] += b.solved - a.solved
        score_a, score_b = score_a + a.score, score_b + b.score
        solved_a, solved_b = solved_a + a.solved, solved_b + b.solved
        infra_a, infra_b = infra_a + (not a.success), infra_b + (not b.success)
        a_only += a.solved and not b.solved
        b_only += b.solved and not a.solved
    count = len(pairs) or 1
    return {
        "episodes": len(pairs),
        "records": len(per_record),
        "mean_score_a": score_a / count,
        "mean_score_b": score_b / count,
        "mean_score_difference": (score_b - score_a) / count,
        "mean_score_difference_ci": ratio_interval((entry[1], entry[0]) for entry in per_record.values()),
        "solved_rate_a": solved_a / count,
        "solved_rate_b": solved_b / count,
        "solved_rate_difference": (solved_b - solved_a) / count,
        "solved_rate_difference_ci": ratio_interval((entry[2], entry[0]) for entry in per_record.values()),
        "solved_in_a_only": a_only,
        "solved_in_b_only": b_only,
        "infrastructure_errors_a": infra_a,
        "infrastructure_errors_b": infra_b,
    }


def compare_runs(a: dict[tuple[str, str], _Episode], b: dict[tuple[str, str], _Episode]) -> dict:
    """The comparison of two loaded runs (:func:`load_run`): overall, per (data source, generator), the flips."""
    shared = sorted(a.keys() & b.keys())
    pairs = [(key, a[key], b[key]) for key in shared]
    groups: dict[tuple[str, str], list] = {}
    for pair in pairs:
        b_episode = pair[2]
        groups.setdefault((b_episode.data_source, b_episode.generator), []).append(pair)
    return {
        "interval_definition": PAIRED_INTERVAL_DEFINITION,
        "a": _run_counts(a),
        "b": _run_counts(b),
        "overall": _difference(pairs),
        "groups": [{"data_source": source, "generator": generator, **_difference(group)}
                   for (source, generator), group in sorted(groups.items())],
        "solved_in_a_only": [_episode_name(key) for key, x, y in pairs if x.solved and not y.solved],
        "solved_in_b_only": [_episode_name(key) for key, x, y in pairs if y.solved and not x.solved],
        "only_in_a": [_episode_name(key) for key in sorted(a.keys() - b.keys())],
        "only_in_b": [_episode_name(key) for key in sorted(b.keys() - a.keys())],
    }


def _run_counts(run: dict[tuple[str, str], _Episode]) -> dict:
    return {"episodes": len(run), "records": len({record for record, _ in run}),
            "infrastructure_errors": sum(not episode.success for episode in run.values())}


def compare_files(path_a: str | os.PathLike, path_b: str | os.PathLike) -> dict:
    """:func:`compare_runs` of two results files, their paths recorded in ``a`` and ``b``."""
    comparison = compare_runs(load_run(path_a), load_run(path_b))
    comparison["a"] = {"path": str(path_a), **comparison["a"]}
    comparison["b"] = {"path": str(path_b), **comparison["b"]}
    return comparison


def _run_name(path: Path) -> str:
    # runs/qwen/results.jsonl is run "qwen": every run's file has the same name
    return path.parent.name if path.name == "results.jsonl" and path.parent.name else path.stem


def default_output_dir(path_a: str | os.PathLike, path_b: str | os.PathLike) -> Path:
    """``compare-<A>-vs-<B>`` beside B, each run named by its file's stem (its folder's name for results.jsonl)."""
    path_a, path_b = Path(path_a), Path(path_b)
    return path_b.parent / f"compare-{_run_name(path_a)}-vs-{_run_name(path_b)}"


def write_comparison(output_dir: str | os.PathLike, comparison: dict) -> tuple[Path, Path]:
    """compare.json and compare.html in ``output_dir``, each written atomically."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    json_path, html_path = output_dir / COMPARE_JSON, output_dir / COMPARE_HTML
    with AtomicFile(json_path) as handle:
        handle.write(json.dumps(comparison, indent=2, ensure_ascii=False) + "\n")
    with AtomicFile(html_path) as handle:
        handle.write(render_comparison(comparison))
    return json_path, html_path


_COLUMNS = [("episodes", "shared episodes"), ("records", "shared records"), ("mean_score_a", "mean score A"),
            ("mean_score_b", "mean score B"), ("mean_score_difference", "score B - A"),
            ("mean_score_difference_ci", "95% interval"), ("solved_rate_a", "solved A"),
            ("solved_rate_b", "solved B"), ("solved_rate_difference", "solved B - A"),
            ("solved_rate_difference_ci", "95% interval"), ("solved_in_a_only", "solved in A only"),
            ("solved_in_b_only", "solved in B only"), ("infrastructure_errors_a", "infra errors A"),
            ("infrastructure_errors_b", "infra errors B")]


def render_comparison(comparison: dict, *, title: str = "Bootcamp comparison") -> str:
    """The comparison as one self-contained HTML document, every value escaped."""
    from bootcamp_core.evaluate.report import _CSS, _e

    def cell(row: dict, key: str) -> str:
        value = row.get(key)
        if key.endswith("_ci") and isinstance(value, list):
            return f"<td>[{_e(float(value[0]))}, {_e(float(value[1]))}]</td>"
        return f"<td>{_e(value)}</td>"

    def table(rows: list[dict]) -> str:
        head = "".join(f"<th>{_e(label)}</th>" for _, label in _COLUMNS)
        out = [f'<table><tr><th class="l">data source</th><th class="l">generator</th>{head}</tr>']
        for row in rows:
            out.append(f'<tr><td class="l">{_e(row.get("data_source"))}</td><td class="l">{_e(row.get("generator"))}'
                       "</td>" + "".join(cell(row, key) for key, _ in _COLUMNS) + "</tr>")
        return "".join(out) + "</table>"

    def ids(heading: str, names: list[str]) -> str:
        items = "".join(f"<li><code>{_e(name)}</code></li>" for name in names)
        return f"<h2>{_e(heading)} ({len(names)})</h2>" + (f"<ul>{items}</ul>" if names else
                                                          '<p class="muted">none</p>')

    a, b = comparison.get("a") or {}, comparison.get("b") or {}
    runs = "".join(
        f'<tr><td class="l">{name}</td><td class="l">{_e(run.get("path"))}</td><td>{_e(run.get("episodes"))}</td>'
        f'<td>{_e(run.get("records"))}</td><td>{_e(run.get("infrastructure_errors"))}</td></tr>'
        for name, run in (("A", a), ("B", b)))
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title><style>{_CSS}</style></head><body>'
        f"<h1>{_e(title)}</h1>"
        '<h2>Runs</h2><table><tr><th class="l">run</th><th class="l">results</th><th>episodes</th><th>records</th>'
        f"<th>infra errors</th></tr>{runs}</table>"
        f'<p class="muted">{_e(comparison.get("interval_definition"))}</p>'
        "<h2>Overall (B - A)</h2>"
        + table([{"data_source": "ALL", "generator": "ALL", **(comparison.get("overall") or {})}])
        + "<h2>By data source and generator</h2>"
        + table(comparison.get("groups") or [])
        + ids("Solved in A only", comparison.get("solved_in_a_only") or [])
        + ids("Solved in B only", comparison.get("solved_in_b_only") or [])
        + ids("Episodes only in A", comparison.get("only_in_a") or [])
        + ids("Episodes only in B", comparison.get("only_in_b") or [])
        + "</body></html>\n"
    )
