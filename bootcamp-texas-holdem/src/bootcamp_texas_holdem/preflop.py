"""Builds the shipped pre-flop table: each of the 169 hand classes' equity against one random hand.

Seeded Monte Carlo with pokerkit's hand evaluation (through :func:`.cards.strength`), never pokerkit's
``calculate_equities``, which draws from the global ``random`` module. Each class has its own ``random.Random`` seeded
from the table's seed and the class name, so any class can be recomputed on its own. Regenerate with::

    python -m bootcamp_texas_holdem.preflop --samples 40000 --seed 2024 \
        --output src/bootcamp_texas_holdem/data/preflop_equity.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from bootcamp_texas_holdem.cards import RANKS, hand_classes, strength

__all__ = ["build_table", "class_equity", "main"]

DEFAULT_SAMPLES = 40_000
DEFAULT_SEED = 2024


def _hole(name: str, rng: random.Random) -> list[int]:
    """Concrete hole cards of class ``name`` with suits drawn from ``rng``."""
    high, low = RANKS.index(name[0]), RANKS.index(name[1])
    if high == low:
        first, second = rng.sample(range(4), 2)
    elif name[2] == "s":
        first = second = rng.randrange(4)
    else:
        first, second = rng.sample(range(4), 2)
    return [high * 4 + first, low * 4 + second]


def class_equity(name: str, samples: int, seed: int) -> float:
    """Equity of class ``name`` against a uniformly random hand: wins plus half the ties, over ``samples`` deals."""
    rng = random.Random(f"{seed}:{name}")
    won = 0.0
    for _ in range(samples):
        hole = _hole(name, rng)
        live = [card for card in range(52) if card != hole[0] and card != hole[1]]
        drawn = rng.sample(live, 7)
        board = drawn[2:]
        mine, theirs = strength(hole + board), strength(drawn[:2] + board)
        won += 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0
    return won / samples


def build_table(samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED, progress: bool = False) -> dict:
    """The whole table as shipped: method, samples, seed and ``{"equity": {class: value}}`` rounded to 4 places."""
    table = {}
    started = time.perf_counter()
    for index, name in enumerate(hand_classes(), 1):
        table[name] = round(class_equity(name, samples, seed), 4)
        if progress:
            print(f"\r{index}/169 {name} {table[name]:.4f} ({time.perf_counter() - started:.0f} s)",
                  end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return {
        "description": "Equity of each pre-flop hand class against one uniformly random hand (ties count half).",
        "method": "seeded Monte Carlo with pokerkit's StandardHighHand lookup; see bootcamp_texas_holdem.preflop",
        "samples_per_class": samples,
        "seed": seed,
        "equity": table,
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: write the table as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, help="deals per class")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--output", type=Path, required=True, help="where to write the JSON table")
    args = parser.parse_args(argv)
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    table = build_table(args.samples, args.seed, progress=True)
    args.output.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
