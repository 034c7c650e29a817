"""Confidence intervals of a results file's means and rates, and how often the repeats of a record disagree.

Every interval is a 95% percentile bootstrap with 2,000 resamples that resamples **records**, not episodes: all
the repeats of a record move together (a cluster bootstrap), because repeats of one task are not independent
evidence. A statistic is a ratio of per-record sums, ``sum(numerator) / sum(denominator)`` over the records drawn:
the mean score is (the record's score sum) / (its episodes), the solved rate (its solved episodes) / (its episodes),
pass@k the mean of the records' pass@k over the records with ``n >= k``. The interval is the 2.5th and 97.5th
percentiles (linear interpolation) of the resampled statistic. The random generator is seeded
(:data:`DEFAULT_SEED`), and the records are drawn from in a canonical order (sorted by their numerator and
denominator), so the same results give the same numbers on every run and Python version, whatever order the
records come in (episodes finish in a different order on every run). One record (or records that all agree) gives
``[value, value]``; no record gives ``[0, 0]``.

Fast without numpy: records with equal (numerator, denominator) are pooled, and when there are few such profiles (0/1
scores) a resample is one multinomial draw over them, by binomials; otherwise the records' sums are drawn directly.
Small in memory: :func:`streamed_ratio_interval` reads the units in passes from where they are kept (a summary's
per-record arrays) and pools them as they pass; only drawing directly copies them, into two flat arrays.

The flip rate is the share of records with at least 2 finished episodes (no infrastructure error) whose episodes
disagree on solved; None when no record has 2.

A paired comparison (:mod:`bootcamp_core.evaluate.compare`) uses the same resampling on the records two runs share,
with per-record differences as the numerators.
"""

from __future__ import annotations

import math
import random
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from operator import itemgetter

__all__ = ["CONFIDENCE", "DEFAULT_SEED", "INTERVAL_DEFINITION", "RESAMPLES", "flip_rate", "ratio_interval",
           "streamed_ratio_interval"]

RESAMPLES = 2000
CONFIDENCE = 0.95
#: Fixed, so a report is reproducible: the same results file always gives the same intervals.
DEFAULT_SEED = 20261201
#: What the intervals are, written into every summary.json beside ``pass_at_k_definition``.
INTERVAL_DEFINITION = (
    f"{CONFIDENCE:.0%} percentile bootstrap, {RESAMPLES} resamples of the records with replacement (all repeats of a "
    f"record move together), seed {DEFAULT_SEED}, drawn from the records sorted by their (numerator, denominator) so "
    "that their order does not matter: mean_score_ci and solved_rate_ci resample the group's records, "
    "pass_at_k_ci the records with n >= k; flip_rate = share of the records with >= 2 finished episodes (no "
    "infrastructure error) whose episodes disagree on solved (null when none has 2), flipped_records = their count"
)


def ratio_interval(units: Iterable[tuple[float, float]], *, resamples: int = RESAMPLES, seed: int = DEFAULT_SEED,
                   confidence: float = CONFIDENCE) -> list[float]:
    """Percentile bootstrap interval ``[low, high]`` of ``sum(num) / sum(den)`` over units drawn with replacement.

    One unit is one record, ``(numerator, denominator)``: ``(score sum, episodes)`` gives the mean score.
    """
    listed = list(units)
    return streamed_ratio_interval(lambda: listed, resamples=resamples, seed=seed, confidence=confidence)


def streamed_ratio_interval(units: Callable[[], Iterable[tuple[float, float]]], *, resamples: int = RESAMPLES,
                            seed: int = DEFAULT_SEED, confidence: float = CONFIDENCE) -> list[float]:
    """:func:`ratio_interval` of the units ``units()`` yields, each call anew (in any order, the same each call):
    the units are counted and pooled as they pass, so no list of them is built unless there are too many profiles
    to pool (then two flat arrays, 16 bytes a unit, sorted)."""
    size = 0
    for _, den in units():
        size += 1
        if float(den) <= 0:
            raise ValueError("every unit needs a positive denominator")
    if not size:
        return [0.0, 0.0]
    # exact sums (math.fsum): the same point whatever the order of the units
    point = math.fsum(float(num) for num, _ in units()) / math.fsum(float(den) for _, den in units())
    profiles: Counter = Counter()
    poolable = True  # at most size / 4 profiles: pooled; counting stops at the first profile beyond
    first_ratio: float | None = None
    agree = True
    for num, den in units():
        num, den = float(num), float(den)
        ratio = num / den
        if first_ratio is None:
            first_ratio = ratio
        elif ratio != first_ratio:
            agree = False
        if poolable:
            profiles[num, den] += 1
            poolable = len(profiles) * 4 <= size
    if agree:  # one record, or all agree: every resample gives the point
        return [point, point]
    rng = random.Random(seed)
    if poolable:
        stats = _pooled_resamples(sorted(profiles.items()), size, resamples, rng)
    else:
        del profiles
        nums, dens = array("d"), array("d")
        for num, den in units():
            nums.append(float(num))
            dens.append(float(den))
        nums, dens = _canonical(nums, dens)
        stats = _direct_resamples(nums, dens, resamples, rng)
    stats.sort()
    tail = (1.0 - confidence) / 2
    return [_quantile(stats, tail), _quantile(stats, 1.0 - tail)]


def flip_rate(outcomes: Iterable[tuple[int, int]]) -> tuple[float | None, int]:
    """(share of flipped records, their count) of ``(finished episodes, solved among them)`` per record: a record
    with >= 2 finished episodes flipped when they disagree on solved; the share is None when no record has 2."""
    eligible = flipped = 0
    for finished, solved in outcomes:
        if finished >= 2:
            eligible += 1
            flipped += 0 < solved < finished
    return (flipped / eligible if eligible else None), flipped


def _canonical(nums: array, dens: array) -> tuple[array, array]:
    """The units sorted by (numerator, denominator): what the draws pick from does not depend on the units' order."""
    if len(set(dens)) == 1:
        return array("d", sorted(nums)), dens
    order = sorted(range(len(nums)), key=lambda at: (nums[at], dens[at]))
    return array("d", (nums[at] for at in order)), array("d", (dens[at] for at in order))


def _direct_resamples(nums: array, dens: array, resamples: int, rng: random.Random) -> list[float]:
    size = len(nums)
    if len(set(dens)) == 1:  # equal repeats per record: only the numerators vary
        total = dens[0] * size
        return [sum(rng.choices(nums, k=size)) / total for _ in range(resamples)]
    positions = range(size)
    stats = []
    for _ in range(resamples):
        pick = itemgetter(*rng.choices(positions, k=size))  # size >= 2 here, so pick returns a tuple
        stats.append(sum(pick(nums)) / sum(pick(dens)))
    return stats


def _pooled_resamples(profiles: list[tuple[tuple[float, float], int]], size: int, resamples: int,
                      rng: random.Random) -> list[float]:
    """Resamples as multinomial draws over the profiles (equal units pooled): sequential binomials."""
    stats = []
    for _ in range(resamples):
        left, mass = size, size
        num_sum = den_sum = 0.0
        for (num, den), count in profiles:
            drawn = left if count == mass else _binomial(rng, left, count / mass)
            num_sum += drawn * num
            den_sum += drawn * den
            left -= drawn
            mass -= count
            if not left:
                break
        stats.append(num_sum / den_sum)
    return stats


def _binomial(rng: random.Random, n: int, p: float) -> int:
    """A Binomial(n, p) draw from ``rng.random()`` alone, so every Python version gives the same numbers.

    Small means (``n * p < 10``) count the successes by geometric skips between them; larger ones invert the
    distribution walking outwards from its mode, both sides in turn, with the probability ratio of neighbours: about
    ``sqrt(n p (1 - p))`` steps a draw.
    """
    if p <= 0.0 or n == 0:
        return 0
    if p >= 1.0:
        return n
    if p > 0.5:
        return n - _binomial(rng, n, 1.0 - p)
    if n * p < 10.0:
        log_q = math.log1p(-p)
        successes = position = 0
        while True:
            position += int(math.log(1.0 - rng.random()) / log_q) + 1  # trials up to and including the next success
            if position > n:
                return successes
            successes += 1
    mode = min(n, math.floor((n + 1) * p))
    log_mode = (math.lgamma(n + 1) - math.lgamma(mode + 1) - math.lgamma(n - mode + 1)
                + mode * math.log(p) + (n - mode) * math.log1p(-p))
    odds = p / (1.0 - p)
    u = rng.random() - math.exp(log_mode)
    up = down = mode
    p_up = p_down = math.exp(log_mode)
    while u >= 0.0 and (up < n or down > 0):
        if up < n:
            p_up *= (n - up) / (up + 1) * odds
            up += 1
            u -= p_up
            if u < 0.0:
                return up
        if down > 0:
            p_down *= down / ((n - down + 1) * odds)
            down -= 1
            u -= p_down
            if u < 0.0:
                return down
    return mode  # what rounding leaves over


def _quantile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly between the two nearest (numpy's default)."""
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])
