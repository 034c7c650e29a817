"""Statistics of a results file: pass@k, the summary per (data source, generator) and overall, and its CSV.

pass@k (k = 1..K) is the unbiased estimator of Chen et al. (2021): a record with ``n`` finished episodes of which
``c`` are solved contributes ``1 - C(n-c, k) / C(n, k)``; a group's pass@k is the
mean over its records with ``n >= k``. summary.json states this definition in ``pass_at_k_definition``.

Solved is each line's ``solved`` (the engine sets it from the reward's ``solved_threshold``, DESIGN.md), so no
plugin needs to be installed to read a results file; a line without it (an older run, the original framework) is
solved when ``success`` and ``score >= 1``. ``solved`` and ``solved_rate`` count the same per group.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
from array import array
from collections.abc import Iterable, Iterator
from itertools import chain, repeat
from pathlib import Path
from typing import Any, NamedTuple

from bootcamp_core.blocks import last_assistant_text
from bootcamp_core.data.io import AtomicFile
from bootcamp_core.evaluate.intervals import INTERVAL_DEFINITION, flip_rate, streamed_ratio_interval
from bootcamp_core.evaluate.results import iter_result_lines
from bootcamp_core.plugin.components import is_solved

__all__ = ["CSV_COLUMNS", "PASS_AT_K_DEFINITION", "REPORT_EXAMPLES", "REPORT_NAME", "SUMMARY_CSV", "SUMMARY_JSON",
           "Summary", "is_solved_line", "number", "pass_at_k", "summarize", "summarize_file", "summary_csv",
           "write_summary"]

SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
REPORT_NAME = "report.html"
#: Episodes kept in the summary pass for the report's examples (first failures, then the rest).
REPORT_EXAMPLES = 40
#: What pass@k counts, written into every summary.json so a reader of the file needs no other document.
PASS_AT_K_DEFINITION = (
    "unbiased estimator of Chen et al. (2021) per record, 1 - C(n-c, k) / C(n, k), averaged over the records with "
    "n >= k; n = the record's episodes, c = those solved: the line's solved (score >= its reward's "
    "solved_threshold), or, for a line without it, success is true and score >= 1"
)


def is_solved_line(data: dict) -> bool:
    """Whether one result line counts as solved (see the module docstring)."""
    if data.get("success") is False:
        return False
    solved = data.get("solved")
    if isinstance(solved, bool):
        return solved
    return is_solved(number(data.get("score")))


def _record_key(data: dict) -> str:
    """The key of a result line's record (its id without the repeat), for pass@k."""
    episode = data.get("id")
    if isinstance(episode, str) and ":" in episode:
        return episode.rsplit(":", 1)[0]
    return json.dumps(data.get("input"), sort_keys=True, default=repr)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one record: ``1 - C(n-c, k) / C(n, k)`` (Chen et al., 2021), computed stably."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


#: Distinct profiles a group of a run's summary counts before it keeps each record's counts in full (continuous
#: scores make nearly every record a profile of its own; then the five columns of counts are the smaller).
PROFILE_LIMIT = 1024

Counts = tuple[int, int, float, int, int]


class _RecordCounts:
    """Per-record counts of one group: episodes n, solved c, score sum, finished (no infrastructure error), solved
    among the finished. Every figure read from them is the same in any order of the records (the intervals draw in
    a canonical order, sums are exact), so the records are kept without their order.

    Profiled (a run's summary): a finished record is one more count of its profile, its counts as a tuple, so a
    group's memory is its profiles (a handful with 0/1 scores), whatever the number of its records; a record that
    expects more lines keeps its counts in a list until its last one. Raw (any file, or a group past
    :data:`PROFILE_LIMIT` profiles): five flat columns, 12 bytes a record while no record has more than 255
    episodes, 24 after. A row is a record's number in the group; rows stay valid when a group turns raw."""

    __slots__ = ("c", "finished", "n", "pending", "profiles", "score", "size", "solved")

    def __init__(self, profiled: bool = False) -> None:
        #: profiled: counts -> records finished with them; None: raw
        self.profiles: dict[Counts, int] | None = {} if profiled else None
        self.pending: dict[int, list] = {}  # profiled: row -> [n, c, score, finished, solved] until it is finished
        self.size = 0  # profiled: rows handed out
        self.n, self.c, self.finished, self.solved = array("B"), array("B"), array("B"), array("B")
        self.score = array("d")

    def __len__(self) -> int:
        return self.size if self.profiles is not None else len(self.n)

    def new_row(self) -> int:
        if self.profiles is not None:
            row = self.size
            self.size += 1
            self.pending[row] = [0, 0, 0.0, 0, 0]
            return row
        for column in (self.n, self.c, self.finished, self.solved, self.score):
            column.append(0)
        return len(self.n) - 1

    def add(self, row: int, solved: bool, score: float, success: bool) -> None:
        if self.profiles is not None:
            counts = self.pending[row]
            counts[0] += 1
            counts[1] += solved
            counts[2] += score
            counts[3] += success
            counts[4] += success and solved
            return
        try:
            self.n[row] += 1  # n counts the most: when no count fits a byte, n is the first not to
        except OverflowError:
            self.n, self.c, self.finished, self.solved = (array("I", column) for column in
                                                          (self.n, self.c, self.finished, self.solved))
            self.n[row] += 1
        self.c[row] += solved
        self.score[row] += score
        self.finished[row] += success
        self.solved[row] += success and solved

    def finish(self, row: int) -> None:
        """``row``'s record has all its lines: a profiled row becomes one more count of its profile."""
        profiles = self.profiles
        if profiles is None:
            return
        counts = tuple(self.pending.pop(row))
        profiles[counts] = profiles.get(counts, 0) + 1  # type: ignore[index]
        if len(profiles) > PROFILE_LIMIT:
            self._make_raw()

    def _make_raw(self) -> None:
        """Keep every row's counts in the five columns from now on: a row in flight keeps its number, the finished
        records take the others."""
        assert self.profiles is not None
        finished = (counts for counts, times in self.profiles.items() for _ in range(times))
        rows: list[Any] = [self.pending.get(row) or next(finished) for row in range(self.size)]
        self.profiles, self.pending, self.size = None, {}, 0
        wide = any(entry[0] > 255 for entry in rows)
        self.n, self.c, self.finished, self.solved = (array("I" if wide else "B", (entry[i] for entry in rows))
                                                      for i in (0, 1, 3, 4))
        self.score = array("d", (entry[2] for entry in rows))

    def row(self, row: int) -> Counts:
        """The counts of a raw row or of a profiled row still in flight."""
        if self.profiles is not None:
            return tuple(self.pending[row])  # type: ignore[return-value]
        return self.n[row], self.c[row], self.score[row], self.finished[row], self.solved[row]

    def rows(self) -> Iterator[Counts]:
        """Every record's counts, in no particular order (the same on every call while nothing is added)."""
        if self.profiles is None:
            return zip(self.n, self.c, self.score, self.finished, self.solved, strict=True)
        finished = chain.from_iterable(map(repeat, self.profiles.keys(), self.profiles.values()))
        return chain(finished, map(tuple, self.pending.values())) if self.pending else finished


class _RecordIndex:
    """Where the counts of each record are, for a whole summary: in the record's group, once, so the overall
    figures read the groups' counts. A record with lines in several groups (rare: lines that disagree on their
    generator) has a row in each, which the overall figures add up: its rows are left out of the groups' records
    there (``_skip``) and their sum counted instead (``_merged``).

    Any file (no ``repeats``): record keys (32 bytes each, :func:`_compact_key`) live in one flat byte array, found
    through an open-addressing table of record numbers, with the group that first saw each record and its row
    there: about 70 bytes a record in all, with the counts, where a dict of keys takes twice that, so a summary's
    memory grows as little as it can with the records it must tell apart. With ``repeats`` (a run's lines) only the
    records in flight keep their key and counts; a finished record is one more count of its profile in its group
    (:class:`_RecordCounts`): a run's summary stays the same size however many records it holds."""

    def __init__(self, repeats: int | None = None) -> None:
        self.tables: list[_RecordCounts] = []
        #: with ``repeats`` (a run's lines: each (record, repeat) once), the keys of the records still expecting a
        #: line -> [its lines so far, {group: its row there}]; a record's key is dropped with its last repeat, so the
        #: index holds the records in flight only
        self.repeats = repeats
        self.records = 0
        self._live: dict[bytes, list] = {}
        self._keys = bytearray()  # record number -> its key, KEY_BYTES each, in order of first appearance
        self._slots = array("I", bytes(4 * 1024))  # open addressing: 0 free, else record number + 1
        self.group_of = array("B")  # any file: record number -> the group that saw it first
        self.row_of = array("I")  # any file: record number -> its row there
        self.other_rows: dict[tuple[int, int], int] = {}  # any file: (group, record number) -> row, the rare case
        #: a run's finished records with rows in several groups: one row's counts each left out of the groups' records
        #: for the overall figures -> how many times, and their sums, which the overall figures count instead
        self._skip: dict[Counts, int] = {}
        self._merged: list[Counts] = []

    def new_table(self) -> tuple[int, _RecordCounts]:
        self.tables.append(_RecordCounts(profiled=self.repeats is not None))
        return len(self.tables) - 1, self.tables[-1]

    def add(self, key: bytes | None, group: int, solved: bool, score: float, success: bool) -> None:
        """Count one line of ``key``'s record in ``group`` (``key`` None: a new record, for a run of one repeat)."""
        table = self.tables[group]
        if self.repeats is None:
            table.add(self._row(key, group), solved, score, success)  # type: ignore[arg-type]
            return
        if key is None or self.repeats == 1:
            self.records += 1
            row = table.new_row()
            table.add(row, solved, score, success)
            table.finish(row)
            return
        entry = self._live.get(key)
        if entry is None:
            self.records += 1
            row = table.new_row()
            entry = self._live[key] = [0, {group: row}]
        else:
            row = entry[1].get(group)
            if row is None:
                row = entry[1][group] = table.new_row()
        table.add(row, solved, score, success)
        entry[0] += 1
        if entry[0] >= self.repeats:
            del self._live[key]
            rows = entry[1]
            if len(rows) > 1:
                self._note_merged(rows.items(), self._skip, self._merged)
            for at, row in rows.items():
                self.tables[at].finish(row)

    def _note_merged(self, rows: Iterable[tuple[int, int]], skip: dict, merged: list) -> None:
        """A record's rows in several groups: each left out of the overall figures, their sum counted instead."""
        parts = [self.tables[group].row(row) for group, row in rows]
        for counts in parts:
            skip[counts] = skip.get(counts, 0) + 1
        merged.append(tuple(map(sum, zip(*parts, strict=True))))

    def _row(self, key: bytes, group: int) -> int:
        """The row of ``key``'s record in ``group``'s table, any file."""
        slots, keys = self._slots, self._keys
        mask = len(slots) - 1
        slot = hash(key) & mask  # not the key's first bytes: an id of hex digits need not be a uniform hash
        while True:
            entry = slots[slot]
            if not entry:
                break
            at = (entry - 1) * KEY_BYTES
            if keys[at:at + KEY_BYTES] == key:
                number = entry - 1
                if self.group_of[number] == group:
                    return self.row_of[number]
                row = self.other_rows.get((group, number))
                if row is None:
                    row = self.other_rows[group, number] = self.tables[group].new_row()
                return row
            slot = (slot + 1) & mask
        number = self.records
        self.records += 1
        try:
            self.group_of.append(group)
        except OverflowError:  # a 257th group
            self.group_of = array("I", self.group_of)
            self.group_of.append(group)
        row = self.tables[group].new_row()
        self.row_of.append(row)
        keys += key
        slots[slot] = number + 1
        if 2 * (number + 1) > len(slots):  # kept at most half full: short probes
            self._grow()
        return row

    def _grow(self) -> None:
        slots = array("I", bytes(8 * len(self._slots)))
        mask = len(slots) - 1
        keys = self._keys
        for number in range(self.records):
            slot = hash(bytes(keys[number * KEY_BYTES:(number + 1) * KEY_BYTES])) & mask
            while slots[slot]:
                slot = (slot + 1) & mask
            slots[slot] = number + 1
        self._slots = slots

    def __len__(self) -> int:
        return self.records

    def rows(self) -> Iterator[Counts]:
        """Every record's counts over all groups, in no particular order (the same on every call while nothing is
        added)."""
        skip, merged = dict(self._skip), list(self._merged)
        for entry in self._live.values():  # a run's records in flight in several groups, as they stand
            if len(entry[1]) > 1:
                self._note_merged(entry[1].items(), skip, merged)
        if self.other_rows:  # any file's records in several groups
            rows: dict[int, list[tuple[int, int]]] = {}
            for (group, number), row in self.other_rows.items():
                rows.setdefault(number, [(self.group_of[number], self.row_of[number])]).append((group, row))
            for record_rows in rows.values():
                self._note_merged(record_rows, skip, merged)
        every = chain.from_iterable(table.rows() for table in self.tables)
        if skip:
            every = _without(every, skip)
        return chain(every, merged)


def _without(rows: Iterable[Counts], skip: dict[Counts, int]) -> Iterator[Counts]:
    """``rows`` less, for each counts in ``skip``, that many rows equal to it."""
    for counts in rows:
        left = skip.get(counts)
        if left:
            skip[counts] = left - 1
            continue
        yield counts


#: Bytes of a record key in a summary's index: a sha256.
KEY_BYTES = 32


def _compact_key(key: str) -> bytes:
    """A record key as 32 bytes: a sha256 in hex (the keys of the engine) as its bytes, any other key (an older
    run's, the original framework's) by its sha256."""
    if len(key) == 64:
        try:
            return bytes.fromhex(key)
        except ValueError:
            pass
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


class _Line(NamedTuple):
    """What the statistics read of one results line (read once for the overall totals and its group's)."""

    success: bool
    score: float
    solved: bool
    assistant: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    reached_max_turns: bool
    finish_reason: str
    error_type: Any
    error_kind: Any


def _line(data: dict) -> _Line:
    success = data.get("success") is not False
    turns = data.get("turn_record") or {}
    usage = data.get("token_usage") or {}
    return _Line(
        success, number(data.get("score")) if success else 0.0, is_solved_line(data),
        int(number(turns.get("assistant_turns"))),
        int(number(turns.get("tool_calls", len(data.get("tool_calls") or ())))),
        int(number(usage.get("prompt_tokens"))), int(number(usage.get("completion_tokens"))),
        int(number(usage.get("total_tokens"))), bool(data.get("reached_max_turns")),
        str(data.get("finish_reason") or "unknown"), data.get("error_type"), data.get("error_kind"))


class _Group:
    """Running totals of one (data source, generator) group (``group``: its table's number in the summary's
    :class:`_RecordIndex`), or of everything (``group`` None: the per-record counts are the index's)."""

    def __init__(self, index: _RecordIndex, group: int | None = None) -> None:
        self.count = 0
        self.successes = 0
        self.solved = 0
        self.infrastructure_errors = 0
        self.model_errors = 0
        self.score_sum = 0.0
        self.assistant_turns = 0
        self.tool_calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.total_tokens = 0
        self.reached_max_turns = 0
        self._index = index
        #: this group's number in the index, and its per-record counts; None for the overall totals
        self._group = group
        self._records: _RecordCounts | _RecordIndex = index.tables[group] if group is not None else index
        self.score_bins = [0] * 11  # [0, .1), ..., [.9, 1), exactly 1
        self.turn_counts: dict[int, int] = {}
        self.tool_call_counts: dict[int, int] = {}
        self.finish_reasons: dict[str, int] = {}
        self.error_kinds: dict[str, list] = {}  # error_kind -> [count, the first line's error as its example]

    def add(self, data: dict, line: _Line) -> None:
        """Count one results line: ``data``, and what :func:`_line` read of it."""
        self.count += 1
        success, score, solved, assistant, calls = line.success, line.score, line.solved, line.assistant, line.calls
        self.successes += success
        self.solved += solved
        self.infrastructure_errors += not success
        self.model_errors += line.error_type == "model"
        self.score_sum += score
        self.assistant_turns += assistant
        self.tool_calls += calls
        self.prompt_tokens += line.prompt_tokens
        self.completion_tokens += line.completion_tokens
        self.total_tokens += line.total_tokens
        self.reached_max_turns += line.reached_max_turns
        if self._group is not None:  # the overall totals read the groups' rows
            index = self._index
            # a run of one repeat writes each record once: a new row, no key to look up
            key = None if index.repeats == 1 else _compact_key(_record_key(data))
            index.add(key, self._group, solved, score, success)
        self.score_bins[10 if score >= 1.0 else max(0, min(9, int(score * 10)))] += 1
        self.turn_counts[assistant] = self.turn_counts.get(assistant, 0) + 1
        self.tool_call_counts[calls] = self.tool_call_counts.get(calls, 0) + 1
        reason = line.finish_reason
        self.finish_reasons[reason] = self.finish_reasons.get(reason, 0) + 1
        if line.error_type or line.error_kind or not success:
            # a line of an older run has no error_kind: its error_type stands in
            kind = str(line.error_kind or line.error_type or "infrastructure")
            seen = self.error_kinds.setdefault(kind, [0, str(data.get("error") or "")[:300]])
            seen[0] += 1

    def to_dict(self) -> dict:
        count = self.count or 1  # an empty group reports zeros, not a division error
        records = self._records.rows
        max_n = max((entry[0] for entry in records()), default=0)
        pass_k, pass_k_ci = {}, {}
        for k in range(1, max_n + 1):
            # each pass over the records anew (no list of them): pass@k of each (n, c) computed once
            values: dict[tuple[int, int], float] = {}

            def eligible(k: int = k, values: dict = values) -> Iterator[tuple[float, int]]:
                for n, c, *_ in records():
                    if n >= k:
                        value = values.get((n, c))
                        if value is None:
                            value = values[n, c] = pass_at_k(n, c, k)
                        yield value, 1

            # an exact sum: the same figure whatever the order the records are read in
            pass_k[f"pass@{k}"] = math.fsum(value for value, _ in eligible()) / sum(1 for _ in eligible())
            pass_k_ci[f"pass@{k}"] = streamed_ratio_interval(eligible)
        flips, flipped = flip_rate((finished, solved) for *_, finished, solved in records())
        return {
            "count": self.count,
            "records": len(self._records),
            "successes": self.successes,
            "infrastructure_errors": self.infrastructure_errors,
            "model_errors": self.model_errors,
            "mean_score": self.score_sum / count,
            "mean_score_ci": streamed_ratio_interval(lambda: ((entry[2], entry[0]) for entry in records())),
            "solved": self.solved,
            "solved_rate": self.solved / count,
            "solved_rate_ci": streamed_ratio_interval(lambda: ((entry[1], entry[0]) for entry in records())),
            "pass_at_k": pass_k,
            "pass_at_k_ci": pass_k_ci,
            "flip_rate": flips,
            "flipped_records": flipped,
            "mean_assistant_turns": self.assistant_turns / count,
            "mean_tool_calls": self.tool_calls / count,
            "tool_calls": self.tool_calls,
            "mean_total_tokens": self.total_tokens / count,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "reached_max_turns": self.reached_max_turns,
            "finish_reasons": dict(sorted(self.finish_reasons.items())),
            # most frequent first: {kind: {"count", "example"}} (the kinds: ERROR_KINDS in plugin/errors.py)
            "error_kinds": {kind: {"count": count, "example": example} for kind, (count, example)
                            in sorted(self.error_kinds.items(), key=lambda item: (-item[1][0], item[0]))},
            "score_histogram": self.score_bins,
            "assistant_turns_histogram": {str(k): v for k, v in sorted(self.turn_counts.items())},
            "tool_calls_histogram": {str(k): v for k, v in sorted(self.tool_call_counts.items())},
        }


def number(value: Any) -> float:
    """``value`` as a finite float; 0 for anything else (a results line may hold any JSON)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def summarize(lines: Iterable[dict], *, examples: list | None = None) -> dict:
    """The summary of result lines: ``{"overall": {...}, "groups": [{data_source, generator, ...}]}``.

    When ``examples`` is a list, up to :data:`REPORT_EXAMPLES` lines are appended to it for the report (failures
    and unsolved episodes first).
    """
    summary = Summary(examples=examples is not None)
    for data in lines:
        summary.add(data)
    if examples is not None:
        examples.extend(summary.examples())
    return summary.to_dict()


class Summary:
    """:func:`summarize`, one result line at a time: ``add`` each line in the order of the file, then
    :meth:`to_dict`. A run folds its lines in as their batches reach the disk, so the summary needs no second read
    of the results file; the figures are those of :func:`summarize` over the file.

    ``repeats``: the lines hold each (record, repeat) at most once, with repeats ``0 .. repeats - 1`` (a run's
    lines). A record's key and counts are then forgotten with its last repeat, so the summary's memory holds the
    records still in flight and each group's profiles, nothing per finished record (:class:`_RecordCounts`); without
    it every key is kept (any file: a record's lines may come in any order and number)."""

    def __init__(self, *, examples: bool = False, repeats: int | None = None) -> None:
        if repeats is not None and repeats < 1:
            raise ValueError(f"repeats must be at least 1, got {repeats}")
        self._index = _RecordIndex(repeats)
        self._overall = _Group(self._index)
        self._groups: dict[tuple[str, str], _Group] = {}
        self._keep_examples = examples
        self._failed: list[dict] = []
        self._solved: list[dict] = []

    def add(self, data: dict) -> None:
        line = _line(data)
        self._overall.add(data, line)
        key = (str(data.get("data_source") or ""), str(data.get("generator") or data.get("generator_name") or ""))
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group(self._index, self._index.new_table()[0])
        group.add(data, line)
        if self._keep_examples:
            bucket = self._solved if is_solved_line(data) else self._failed
            if len(bucket) < REPORT_EXAMPLES:
                bucket.append(_example(data))

    def examples(self) -> list[dict]:
        """Up to :data:`REPORT_EXAMPLES` lines for the report, failures first (with ``examples=True``)."""
        return (self._failed + self._solved)[:REPORT_EXAMPLES]

    def to_dict(self) -> dict:
        return {
            "pass_at_k_definition": PASS_AT_K_DEFINITION,
            "interval_definition": INTERVAL_DEFINITION,
            "overall": self._overall.to_dict(),
            "groups": [
                {"data_source": source, "generator": generator, **group.to_dict()}
                for (source, generator), group in sorted(self._groups.items())
            ],
        }


def _example(data: dict) -> dict:
    """What the report shows of one episode (the final answer cut to a readable length)."""
    messages = data.get("messages")
    answer = last_assistant_text(messages if isinstance(messages, list) else [])
    return {
        "id": data.get("id"),
        "data_source": data.get("data_source"),
        "generator": data.get("generator"),
        "repeat": data.get("repeat"),
        "score": number(data.get("score")),
        "solved": is_solved_line(data),
        "success": data.get("success") is not False,
        "error_type": data.get("error_type"),
        "error": data.get("error"),
        "finish_reason": data.get("finish_reason"),
        "assistant_turns": (data.get("turn_record") or {}).get("assistant_turns"),
        "answer": answer[:2000] + ("…" if len(answer) > 2000 else ""),
    }


def summarize_file(path: str | os.PathLike, *, examples: list | None = None, report: Any = None) -> dict:
    """:func:`summarize` over a results file. With ``report`` (a :class:`~bootcamp_core.evaluate.report.ReportParts`),
    every line also goes into the report's parts in the same pass, so the file is read and parsed once."""
    lines = iter_result_lines(path)
    if report is not None:
        lines = _also_into(lines, report)
    return summarize(lines, examples=examples)


def _also_into(lines: Iterable[dict], report: Any) -> Iterator[dict]:
    for line in lines:
        report.add(line)
        yield line


CSV_COLUMNS = [
    "data_source", "generator", "count", "records", "successes", "infrastructure_errors", "model_errors",
    "mean_score", "mean_score_low", "mean_score_high", "solved", "solved_rate", "solved_rate_low", "solved_rate_high",
    "flip_rate", "mean_assistant_turns", "mean_tool_calls", "tool_calls",
    "mean_total_tokens", "prompt_tokens",
    "completion_tokens", "total_tokens", "reached_max_turns",
]


def summary_csv(summary: dict) -> str:
    """One row per group and an ``ALL`` row; ``pass@k``, ``pass@k_low`` and ``pass@k_high`` columns for every k
    seen. An interval or flip rate a summary does not hold (an older one; no record with 2 repeats) is empty."""
    rows = [*summary["groups"], {"data_source": "ALL", "generator": "ALL", **summary["overall"]}]
    ks = sorted({key for row in rows for key in row["pass_at_k"]}, key=lambda key: int(key.split("@")[1]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS + [f"{k}{suffix}" for k in ks for suffix in ("", "_low", "_high")])
    for row in rows:
        cells = [_csv_cell(row, column) for column in CSV_COLUMNS]
        for k in ks:
            low, high = row.get("pass_at_k_ci", {}).get(k) or ("", "")
            cells += [row["pass_at_k"].get(k, ""), low, high]
        writer.writerow(cells)
    return buffer.getvalue()


def _csv_cell(row: dict, column: str) -> Any:
    for suffix, index in (("_low", 0), ("_high", 1)):
        if column.endswith(suffix):
            interval = row.get(column[: -len(suffix)] + "_ci")
            return interval[index] if interval else ""
    value = row.get(column, "")
    return "" if value is None else value


def write_summary(output_dir: str | os.PathLike, summary: dict, examples: list | None = None, *,
                  results_path: str | os.PathLike | None = None, report_path: str | os.PathLike | None = None,
                  parts: Any = None) -> None:
    """summary.json, summary.csv and report.html, each written atomically.

    The report shows the episodes of ``parts`` when given (built in the summary's pass: ``summarize_file(path,
    report=parts)``), else every episode of ``results_path`` (default: the summary's ``results_path`` when that file
    is there), streamed from the file; with neither, the ``examples``. ``report_path`` defaults to report.html in
    ``output_dir``.
    """
    from bootcamp_core.evaluate.report import write_report

    output_dir = Path(output_dir)
    if results_path is None and isinstance(summary.get("results_path"), str):
        results_path = summary["results_path"]
    lines: Iterable[dict] = examples or []
    if parts is None and results_path is not None and Path(results_path).is_file():
        lines = iter_result_lines(results_path)
    with AtomicFile(output_dir / SUMMARY_JSON) as handle:
        handle.write(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    with AtomicFile(output_dir / SUMMARY_CSV) as handle:
        handle.write(summary_csv(summary))
    with AtomicFile(Path(report_path) if report_path is not None else output_dir / REPORT_NAME) as handle:
        write_report(handle, summary, lines, parts=parts)
