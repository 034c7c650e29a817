"""Bootstrap intervals over records (all repeats of a record together), pass@k intervals and the flip rate."""

from __future__ import annotations

import csv
import io
import random

import pytest

from bootcamp_core.evaluate.intervals import DEFAULT_SEED, flip_rate, ratio_interval
from bootcamp_core.evaluate.statistics import summarize, summary_csv


def lines_of(outcomes: dict[str, list[float]], generator: str = "g") -> list[dict]:
    """Result lines: record name -> the scores of its repeats (solved = score 1)."""
    return [{"id": f"{record}:{repeat}", "data_source": "d", "generator": generator, "score": score,
             "solved": score >= 1, "success": True}
            for record, scores in outcomes.items() for repeat, score in enumerate(scores)]


def mixed(records: int, seed: int = 0, repeats: int = 3) -> dict[str, list[float]]:
    rng = random.Random(seed)
    return {f"r{i}": [float(rng.random() < 0.6) for _ in range(repeats)] for i in range(records)}


def width(interval: list[float]) -> float:
    return interval[1] - interval[0]


def test_every_interval_contains_its_point_estimate_and_is_ordered():
    summary = summarize(lines_of(mixed(60)))
    for group in (summary["overall"], *summary["groups"]):
        for key in ("mean_score", "solved_rate"):
            low, high = group[f"{key}_ci"]
            assert low <= group[key] <= high and low < high, key
        assert group["pass_at_k_ci"].keys() == group["pass_at_k"].keys() == {"pass@1", "pass@2", "pass@3"}
        for k, (low, high) in group["pass_at_k_ci"].items():
            assert low <= group["pass_at_k"][k] <= high, k
    assert "bootstrap" in summary["interval_definition"] and str(DEFAULT_SEED) in summary["interval_definition"]


def test_the_same_results_give_the_same_intervals_and_the_seed_decides_them():
    first, second = summarize(lines_of(mixed(40))), summarize(lines_of(mixed(40)))
    assert first == second
    units = [(sum(scores), len(scores)) for scores in mixed(40).values()]
    assert ratio_interval(units) == ratio_interval(units)
    assert ratio_interval(units, seed=1) != ratio_interval(units, seed=2)


def test_intervals_narrow_with_more_records():
    small = summarize(lines_of(mixed(20)))["overall"]
    large = summarize(lines_of(mixed(800)))["overall"]
    assert width(large["solved_rate_ci"]) < width(small["solved_rate_ci"]) / 3
    assert width(large["mean_score_ci"]) < width(small["mean_score_ci"]) / 3


def test_a_constant_gives_a_zero_width_interval_one_record_its_value_and_no_record_zeros():
    constant = summarize(lines_of({f"r{i}": [0.5, 0.5] for i in range(30)}))["overall"]
    assert constant["mean_score_ci"] == [0.5, 0.5] and constant["solved_rate_ci"] == [0.0, 0.0]
    one = summarize(lines_of({"only": [1.0, 0.0, 0.0, 1.0]}))["overall"]
    assert one["mean_score_ci"] == [0.5, 0.5] and one["solved_rate_ci"] == [0.5, 0.5]
    empty = summarize([])["overall"]
    assert empty["mean_score_ci"] == [0.0, 0.0] and empty["solved_rate_ci"] == [0.0, 0.0]
    assert empty["pass_at_k_ci"] == {} and empty["flip_rate"] is None and empty["flipped_records"] == 0


def test_repeats_of_a_record_are_resampled_together():
    # 10 records of 50 repeats each, every record all solved or all not: 10 independent outcomes, not 500.
    # Resampling episodes would give about +-0.044 around 0.5; resampling records about +-0.3.
    outcomes = {f"r{i}": [float(i % 2)] * 50 for i in range(10)}
    overall = summarize(lines_of(outcomes))["overall"]
    assert overall["solved_rate"] == 0.5
    assert width(overall["solved_rate_ci"]) > 0.4
    # the same 500 outcomes as 500 records of one episode each really are 500 pieces of evidence
    flat = summarize(lines_of({f"e{i}": [float(i % 2)] for i in range(500)}))["overall"]
    assert width(flat["solved_rate_ci"]) < 0.12


def test_pass_at_k_intervals_resample_only_the_records_with_enough_episodes():
    outcomes = {**{f"once{i}": [float(i % 2)] for i in range(40)}, **{f"thrice{i}": [1.0, 0.0, 0.0] for i in range(5)}}
    overall = summarize(lines_of(outcomes))["overall"]
    # pass@3 of a record with 1 solved of 3 is 1: only those five count, and they agree
    assert overall["pass_at_k"]["pass@3"] == 1.0 and overall["pass_at_k_ci"]["pass@3"] == [1.0, 1.0]
    assert overall["pass_at_k_ci"]["pass@2"] == [pytest.approx(2 / 3)] * 2  # 1 - C(2, 2) / C(3, 2)
    low, high = overall["pass_at_k_ci"]["pass@1"]
    assert low < overall["pass_at_k"]["pass@1"] < high


def test_the_flip_rate_counts_records_whose_finished_repeats_disagree():
    lines = lines_of({"flips": [1.0, 0.0], "steady": [1.0, 1.0], "single": [0.0], "never": [0.0, 0.0, 0.0]})
    # an infrastructure failure is no outcome: "broken" has one finished episode, so it cannot flip
    lines += [{"id": "broken:0", "score": 1.0, "solved": True, "success": True},
              {"id": "broken:1", "score": 0.0, "success": False}]
    overall = summarize(lines)["overall"]
    assert overall["flipped_records"] == 1 and overall["flip_rate"] == pytest.approx(1 / 3)
    assert summarize(lines_of({"a": [1.0], "b": [0.0]}))["overall"]["flip_rate"] is None
    assert flip_rate([(2, 1), (3, 3), (3, 0), (1, 1), (4, 2)]) == (0.5, 2)


def test_pooled_and_direct_resampling_agree():
    # 0/1 scores pool into two profiles (multinomial draws); a tiny jitter makes every record distinct (direct draws)
    rng = random.Random(5)
    outcomes = [float(rng.random() < 0.3) for _ in range(400)]
    pooled = ratio_interval((value, 1) for value in outcomes)
    direct = ratio_interval((value + i * 1e-12, 1) for i, value in enumerate(outcomes))
    assert pooled[0] == pytest.approx(direct[0], abs=0.012) and pooled[1] == pytest.approx(direct[1], abs=0.012)
    # a normal approximation of the binomial proportion: +-1.96 * sqrt(p(1-p)/n)
    point = sum(outcomes) / 400
    half = 1.96 * (point * (1 - point) / 400) ** 0.5
    assert width(pooled) == pytest.approx(2 * half, rel=0.12)


def test_ratio_interval_weighs_records_by_their_episodes():
    # one record of 9 solved episodes and nine records of 1 unsolved each: the solved rate is 9 / 18
    units = [(9.0, 9.0)] + [(0.0, 1.0)] * 9
    low, high = ratio_interval(units)
    assert low <= 0.5 <= high and low >= 0.0 and high <= 1.0
    with pytest.raises(ValueError, match="positive denominator"):
        ratio_interval([(1.0, 0.0), (1.0, 1.0)])


def test_the_csv_has_interval_and_flip_rate_columns():
    summary = summarize(lines_of(mixed(30)))
    rows = list(csv.DictReader(io.StringIO(summary_csv(summary))))
    overall = summary["overall"]
    row = rows[-1]
    assert row["data_source"] == "ALL"
    assert float(row["mean_score_low"]) == pytest.approx(overall["mean_score_ci"][0])
    assert float(row["mean_score_high"]) == pytest.approx(overall["mean_score_ci"][1])
    assert float(row["solved_rate_low"]) == pytest.approx(overall["solved_rate_ci"][0])
    assert float(row["solved_rate_high"]) == pytest.approx(overall["solved_rate_ci"][1])
    assert float(row["flip_rate"]) == pytest.approx(overall["flip_rate"])
    assert float(row["pass@2_low"]) == pytest.approx(overall["pass_at_k_ci"]["pass@2"][0])
    assert float(row["pass@2_high"]) == pytest.approx(overall["pass_at_k_ci"]["pass@2"][1])
    no_repeats = list(csv.DictReader(io.StringIO(summary_csv(summarize(lines_of({"a": [1.0]}))))))
    assert no_repeats[-1]["flip_rate"] == ""


@pytest.mark.parametrize("shape", ["pooled", "direct", "direct-unequal"])
def test_the_interval_does_not_depend_on_the_order_of_the_records(shape):
    rng = random.Random(11)
    units = [(float(rng.random() < 0.4) if shape == "pooled" else rng.random() * den, den)
             for den in (rng.choice((1.0, 2.0, 3.0)) if shape == "direct-unequal" else 1.0 for _ in range(300))]
    shuffled = units[:]
    rng.shuffle(shuffled)
    interval = ratio_interval(units)
    assert interval[0] < interval[1]
    assert ratio_interval(shuffled) == ratio_interval(list(reversed(units))) == interval
