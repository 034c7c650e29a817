"""The summary's per-record counts: every record told apart, however many, and its figures those of a plain count."""

from __future__ import annotations

import random
from collections import defaultdict

from bootcamp_core.evaluate.statistics import pass_at_k, summarize


def lines_of(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        record = rng.randrange(count // 3)
        # the engine's sha256 keys, and other keys (an older run's) beside them
        key = f"{record * 2654435761 % 2**256:064x}" if record % 4 else f"older-record-{record}"
        generator = f"g{record % 3}" if rng.random() > 0.02 else "moved"  # a few lines disagree on the generator
        lines.append({"id": f"{key}:{rng.randrange(6)}", "data_source": "d", "generator": generator,
                      "score": rng.random(), "success": rng.random() > 0.05, "solved": rng.random() > 0.4})
    return lines


def plain_counts(lines: list[dict]) -> dict[str, tuple[int, int]]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for line in lines:
        entry = counts[line["id"].rsplit(":", 1)[0]]
        entry[0] += 1
        entry[1] += line["success"] and line["solved"]
    return {key: (n, c) for key, (n, c) in counts.items()}


def test_many_records_are_each_counted_once_and_pass_at_k_matches_a_plain_count():
    lines = lines_of(1_800, seed=3)  # 600 records: the index grows past its first size
    summary = summarize(lines)
    counts = plain_counts(lines)
    overall = summary["overall"]
    assert overall["records"] == len(counts)
    assert overall["count"] == len(lines)
    for k in (1, 2, 3):
        eligible = [pass_at_k(n, c, k) for n, c in counts.values() if n >= k]
        assert abs(overall["pass_at_k"][f"pass@{k}"] - sum(eligible) / len(eligible)) < 1e-12


def test_a_group_counts_only_its_own_lines_of_a_record():
    lines = lines_of(900, seed=5)
    summary = summarize(lines)
    for group in summary["groups"]:
        mine = [line for line in lines if line["generator"] == group["generator"]]
        counts = plain_counts(mine)
        assert group["records"] == len(counts)
        eligible = [pass_at_k(n, c, 1) for n, c in counts.values()]
        assert abs(group["pass_at_k"]["pass@1"] - sum(eligible) / len(eligible)) < 1e-12


def test_the_same_key_in_hex_and_in_another_spelling_are_different_records():
    hex_key = "ab" * 32
    lines = [{"id": f"{hex_key}:0", "score": 1, "solved": True}, {"id": f"{hex_key.upper()}x:0", "score": 0}]
    assert summarize(lines)["overall"]["records"] == 2
