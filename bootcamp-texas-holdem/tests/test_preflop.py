"""The shipped pre-flop table: known values, orderings, and that the included script reproduces it."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from bootcamp_texas_holdem.cards import RANKS, hand_classes, parse_cards, preflop_equity, preflop_table
from bootcamp_texas_holdem.preflop import build_table, class_equity, main

SHIPPED = json.loads((resources.files("bootcamp_texas_holdem") / "data" / "preflop_equity.json").read_text())


def test_table_covers_every_class_with_plausible_values() -> None:
    table = preflop_table()
    assert set(table) == set(hand_classes())
    assert all(0.3 < value < 0.86 for value in table.values())
    assert max(table, key=table.get) == "AA" and min(table, key=table.get) == "32o"


@pytest.mark.parametrize(
    ("name", "published"),
    # equities against a random hand, as published by exhaustive enumeration
    [("AA", 0.8520), ("KK", 0.8240), ("AKs", 0.6704), ("AKo", 0.6540), ("22", 0.5033), ("72o", 0.3458),
     ("32o", 0.3229), ("T9s", 0.5404)],
)
def test_known_equities(name: str, published: float) -> None:
    assert preflop_table()[name] == pytest.approx(published, abs=0.006)


def test_orderings() -> None:
    table = preflop_table()
    pairs = [rank * 2 for rank in RANKS]
    assert [table[pair] for pair in pairs] == sorted(table[pair] for pair in pairs)
    for high in range(1, 13):
        for low in range(high):
            suited, offsuit = f"{RANKS[high]}{RANKS[low]}s", f"{RANKS[high]}{RANKS[low]}o"
            assert table[suited] > table[offsuit]
    assert preflop_equity(*parse_cards("Ah Kh")) == preflop_equity(*parse_cards("Kd Ad")) == table["AKs"]
    assert preflop_equity(*parse_cards("Kd Ac")) == table["AKo"]


@pytest.mark.parametrize("name", ["AKs", "72o"])
def test_the_included_script_reproduces_the_shipped_values(name: str) -> None:
    value = class_equity(name, SHIPPED["samples_per_class"], SHIPPED["seed"])
    assert round(value, 4) == SHIPPED["equity"][name]


def test_the_script_writes_a_deterministic_table(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["--samples", "8", "--seed", "5", "--output", str(first)]) == 0
    main(["--samples", "8", "--seed", "5", "--output", str(second)])
    assert first.read_bytes() == second.read_bytes()
    written = json.loads(first.read_text())
    assert written["samples_per_class"] == 8 and written["seed"] == 5 and len(written["equity"]) == 169
    assert build_table(8, 6)["equity"] != written["equity"]


def test_the_script_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["--samples", "0", "--output", str(tmp_path / "x.json")])
