"""Re-scoring: recompute the scores of saved trajectories with the installed rewards, calling no model.

Each line's reward is the one its input record names (``extra_info.bootcamp.reward``), built with the same
constructor config the evaluation used (``component_config``). It sees exactly what the rollout engine passed
(DESIGN.md, "what the reward sees"): the content of the last assistant message, the record's identity, and the saved
``messages``, ``tool_rewards``, ``tool_scores`` and ``turn_scores``, plus verify kwargs — the ones saved in the line's
``evaluation_config`` unless ``verify_kwargs`` is given, which replaces them.

A line counts as changed only when its score or its extracted answer really differs: the new answer is compared in
its JSON form, as the line holds it (a tuple answer equals the list it was saved as). Each re-scored line's
``solved`` is set again from the reward's ``solved_threshold``.

Lines that are infrastructure failures (``success`` false) were never scored and stay as they are, as do lines whose
input names no installed reward (reported as skipped). Output: ``<stem>_rescored.jsonl`` next to the input, or
``output``, or the input itself with ``in_place`` — always written atomically (a temporary file renamed into place),
so an interrupted re-score never leaves a half-written file.

With ``in_place``, the evaluation's summary.json, summary.csv and report.html beside the results file (when any of
them is there, and the summary names this results file or none) are written again from the re-scored lines, so
they never disagree with it; the rest of the old summary (``evaluation_config``, ``this_run``) is kept, and
``rescored_at`` added.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import attrs

from bootcamp_core.data.io import AtomicFile, dumps, jsonl_lines
from bootcamp_core.data.records import GeneratedSample
from bootcamp_core.episode.messages import jsonable
from bootcamp_core.episode.scoring import score_trajectory
from bootcamp_core.plugin.components import is_solved
from bootcamp_core.plugin.errors import BootcampError, ConfigError

__all__ = ["RescoreChange", "RescoreReport", "rescore_results", "rescore_line", "default_output_path",
           "refresh_summary"]


@attrs.frozen(kw_only=True)
class RescoreChange:
    """One line whose score changed."""

    line: int
    id: str | None
    data_source: str | None
    old_score: float
    new_score: float
    old_extracted: Any = None
    new_extracted: Any = None


@attrs.define(kw_only=True)
class RescoreReport:
    """What a re-score did: counts, the changed lines, the skipped ones and where the result went."""

    input_path: Path
    output_path: Path
    lines: int = 0
    rescored: int = 0
    unchanged: int = 0
    infrastructure_failures: int = 0
    changes: list[RescoreChange] = attrs.field(factory=list)
    skipped: list[tuple[int, str]] = attrs.field(factory=list)
    score_sum_before: float = 0.0
    score_sum_after: float = 0.0
    #: The summary.json rewritten beside an in-place re-scored file, if any.
    summary_path: Path | None = None

    @property
    def mean_before(self) -> float:
        return self.score_sum_before / self.lines if self.lines else 0.0

    @property
    def mean_after(self) -> float:
        return self.score_sum_after / self.lines if self.lines else 0.0

    def to_dict(self) -> dict:
        return {
            "input_path": str(self.input_path),
            "output_path": str(self.output_path),
            "lines": self.lines,
            "rescored": self.rescored,
            "changed": len(self.changes),
            "unchanged": self.unchanged,
            "infrastructure_failures": self.infrastructure_failures,
            "skipped": [{"line": line, "reason": reason} for line, reason in self.skipped],
            "mean_score_before": self.mean_before,
            "mean_score_after": self.mean_after,
            "changes": [attrs.asdict(change) for change in self.changes],
            "summary_path": str(self.summary_path) if self.summary_path else None,
        }


def default_output_path(path: str | os.PathLike) -> Path:
    """``results.jsonl`` → ``results_rescored.jsonl`` beside it."""
    path = Path(path)
    return path.with_name(f"{path.stem}_rescored{path.suffix or '.jsonl'}")


def rescore_line(data: dict, registry: Any, verify_kwargs: dict | None = None) -> tuple[float, Any]:
    """(score, extracted output) of one saved result line with the installed reward; no model is called.

    Raises :class:`~bootcamp_core.plugin.errors.BootcampError` (or ``ValueError``) when the line's input names no installed
    reward.
    """
    score, extracted, _ = _rescore(data, registry, verify_kwargs)
    return score, extracted


def _rescore(data: dict, registry: Any, verify_kwargs: dict | None) -> tuple[float, Any, float]:
    """(score, extracted output, the reward's solved_threshold) of one saved line."""
    sample = GeneratedSample.from_record(data.get("input") or {})
    saved = data.get("evaluation_config") or {}
    components = saved.get("component_config") or {}
    reward_id = registry.resolve("reward", sample.reward)
    reward = registry.component("reward", reward_id, components.get(reward_id))
    score, extracted = score_trajectory(
        reward,
        sample.identity,
        messages=data.get("messages") or [],
        tool_rewards=list(data.get("tool_rewards") or []),
        tool_scores=dict(data.get("tool_scores") or {}),
        turn_scores=list(data.get("turn_scores") or []),
        verify_kwargs=saved.get("verify_kwargs") or {} if verify_kwargs is None else verify_kwargs,
    )
    return score, extracted, float(getattr(reward, "solved_threshold", 1.0))


def _as_saved(value: Any) -> Any:
    """``value`` as a results line holds it after a JSON round trip (tuples become lists ...)."""
    try:
        return json.loads(dumps(jsonable(value)))
    except (TypeError, ValueError):
        return repr(value)


def rescore_results(
    path: str | os.PathLike,
    *,
    output: str | os.PathLike | None = None,
    in_place: bool = False,
    verify_kwargs: dict | None = None,
    registry: Any = None,
) -> RescoreReport:
    """Re-score every line of a results file (see the module docstring); returns what changed."""
    from bootcamp_core.plugin.loader import get_registry

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such results file")
    if in_place and output is not None:
        raise ConfigError("give an output path or in_place, not both", field="in_place")
    target = path if in_place else Path(output) if output is not None else default_output_path(path)
    registry = registry or get_registry()
    report = RescoreReport(input_path=path, output_path=target)
    with AtomicFile(target) as sink:
        for read in jsonl_lines(path):
            number, line = read.number, read.raw
            if read.error is not None:
                # kept byte for byte: re-scoring never loses a line, even one it cannot read
                report.skipped.append((number, f"unreadable line: {read.error}"))
                sink.write(line)
                continue
            data = read.value
            report.lines += 1
            old = _score(data.get("score"))
            report.score_sum_before += old
            if data.get("success") is False:
                report.infrastructure_failures += 1
                report.score_sum_after += old
                sink.write(line)
                continue
            try:
                new, extracted, threshold = _rescore(data, registry, verify_kwargs)
            except (BootcampError, ValueError, KeyError, TypeError) as error:
                report.skipped.append((number, str(error)))
                report.score_sum_after += old
                sink.write(line)
                continue
            report.rescored += 1
            report.score_sum_after += new
            extracted = _as_saved(extracted)
            if new != old or extracted != data.get("extracted_output"):
                report.changes.append(RescoreChange(
                    line=number, id=data.get("id"), data_source=data.get("data_source"), old_score=old,
                    new_score=new, old_extracted=data.get("extracted_output"), new_extracted=extracted,
                ))
            else:
                report.unchanged += 1
            data["score"], data["extracted_output"] = new, extracted
            data["solved"] = is_solved(new, threshold)
            if verify_kwargs is not None:
                data["evaluation_config"] = {**(data.get("evaluation_config") or {}), "verify_kwargs": verify_kwargs}
            sink.write(dumps(data) + "\n")
    if in_place:
        report.summary_path = refresh_summary(target, verify_kwargs=verify_kwargs)
    return report


def refresh_summary(results: str | os.PathLike, *, verify_kwargs: dict | None = None) -> Path | None:
    """Rewrite summary.json, summary.csv and report.html beside ``results`` from its lines, when any of them is
    there; returns the summary.json path, or ``None`` when there was nothing to refresh (or it belongs to another
    results file)."""
    from bootcamp_core.evaluate.statistics import REPORT_NAME, SUMMARY_CSV, SUMMARY_JSON, summarize_file, write_summary

    results = Path(results)
    directory = results.parent
    if not any((directory / name).exists() for name in (SUMMARY_JSON, SUMMARY_CSV, REPORT_NAME)):
        return None
    try:
        old = json.loads((directory / SUMMARY_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing or unreadable: rebuilt from the results alone
        old = {}
    if not isinstance(old, dict):
        old = {}
    named = old.get("results_path")
    if isinstance(named, str) and Path(named).resolve() != results.resolve():
        return None  # the summary of another results file (resumed elsewhere) is not ours to rewrite
    from bootcamp_core.evaluate.report import ReportParts

    parts = ReportParts()  # built in the summary's pass: the results file is read once
    summary = {key: value for key, value in old.items() if key not in ("overall", "groups")}
    summary.update(summarize_file(results, report=parts))
    summary["results_path"] = named if isinstance(named, str) else str(results)
    config = summary.get("evaluation_config")
    if verify_kwargs is not None and isinstance(config, dict):
        summary["evaluation_config"] = {**config, "verify_kwargs": verify_kwargs}
    summary["rescored_at"] = datetime.now(timezone.utc).isoformat()
    write_summary(directory, summary, parts=parts)
    return directory / SUMMARY_JSON


def _score(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
