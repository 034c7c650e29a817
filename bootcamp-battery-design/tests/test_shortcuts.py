"""Shortcut policies against the default tasks: designing without physics must fail, the reference agent must not.

Every policy plays generated test-split tasks of each default level through ``run_episode`` (the real tool, the real
reward). Each task states its own manufacturing window (30% of each variable's range, drawn per task), so a fixed
list of absolute designs would mostly be refused by the tool; the shortcuts are therefore built strong, as fixed
points of the window (normalised coordinates: 0 its low edge, 1 its high edge), which always lie inside it:

- ``menu``: the best fixed menu of 8 window points, chosen by greedy set cover over 256 Latin-hypercube points on 40
  train-split tasks (``bench/bench_battery_menu.py menu``; the menu is committed below and replayed here). It simulates
  the menu's designs in order and answers the first that meets every target (else the closest it saw).
- ``constant``: the single window point that met the most of those train tasks, answered at once without a tool
  call.
- ``capacity_menu``: a menu that also reads the prompt's areal-capacity formula: 8 fixed window points of porosity,
  negative porosity and N/P ratio, each with the positive thickness that puts it at the centre of the task's capacity
  band (clamped to the window), tried in order like ``menu``. Chosen by greedy set cover over 256 Latin-hypercube
  points on 40 train-split tasks (``bench/bench_battery_menu.py menu --capacity-aware``). It is the strongest
  shortcut: it solves the capacity band exactly and keeps the N/P ratio near its window's low edge, where the front
  of the band's designs nearly always lies; what it cannot know is where along that front the task's oracle sits
  (the generator's drawn temperature cap), so it fails unless one of its points happens to lie there.

The reference agent plays the same tasks with the identity's ``hidden_fields`` (the oracle) removed from what it
receives, so it cannot read the answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from bootcamp_battery_design.agent import SearchAgent, Task
from bootcamp_battery_design.answer import format_answer
from bootcamp_battery_design.cell import DESIGN_VARIABLES, thickness_for_areal_capacity
from bootcamp_battery_design.generator import CellDesignGenerator
from bootcamp_core import EpisodeResult, Registry, RolloutLimits, message_text, tool_call_message
from bootcamp_core.testing import generate_records, play_episodes, scripted_policy

#: The generator's recommended limits, as `bootcamp eval` uses them.
LIMITS = RolloutLimits(**CellDesignGenerator.limits)
#: The default levels of configs/default.yaml.
LEVELS = ("gentle", "moderate", "fast")
#: Test-split tasks played per level.
TASKS_PER_LEVEL = 20
#: Solved share each shortcut may reach at most, and the reference agent at least, at every level: the goal (at most
#: 20% for every shortcut, at least 95% for the reference agent).
SHORTCUT_CEILING = 0.20
REFERENCE_FLOOR = 0.95

#: The menu chosen by ``bench/bench_battery_menu.py menu`` (greedy set cover over 256 points on 40 train tasks, in the
#: order chosen; no point meets any of the 40, so these are the first points of the tie-break), as normalised window
#: coordinates of (pos_thickness_m, pos_porosity, neg_porosity, np_ratio).
MENU = (
    (0.172, 1.0, 0.117, 0.382),
    (0.467, 0.778, 0.485, 0.819),
    (0.612, 0.964, 0.086, 0.252),
    (0.701, 0.111, 0.19, 0.112),
    (0.621, 0.554, 0.072, 0.188),
    (0.657, 0.622, 0.267, 0.871),
    (0.937, 0.072, 0.425, 0.5),
    (0.298, 0.506, 0.792, 0.333),
)
#: The capacity-aware menu (see the module docstring), as normalised window coordinates of (pos_porosity,
#: neg_porosity, np_ratio), in the order chosen by ``bench/bench_battery_menu.py menu --capacity-aware`` (greedy set
#: cover over 256 points on 40 train tasks); it covers 9 of the 40 (gentle 3/14, moderate 2/13, fast 4/13), its first
#: pick 3.
CAPACITY_MENU = (
    (0.552, 0.424, 0.038),
    (0.793, 0.439, 0.009),
    (0.876, 0.564, 0.021),
    (0.626, 0.993, 0.001),
    (0.679, 0.973, 0.205),
    (0.862, 0.857, 0.007),
    (0.701, 0.111, 0.19),
    (0.263, 0.467, 0.194),
)
#: The best constant design: the menu's first pick, the design that met the most train tasks.
CONSTANT = MENU[0]


def _tool_results(messages: list[dict]) -> list[dict]:
    results = []
    for message in messages:
        if message.get("role") == "tool":
            try:
                results.append(json.loads(message_text(message.get("content"))))
            except ValueError:
                continue
    return results


def _closest(results: list[dict]) -> dict:
    def merit(result: dict) -> float:
        return (result["specific_energy_Wh_kg"] - result["peak_temperature_K"]) if result else -1e9

    met = [result for result in results if result["all_targets_met"]]
    return met[0] if met else max(results, key=merit)


def _in_window(record, point: tuple[float, ...]) -> tuple[float, ...]:
    """The design at normalised coordinates ``point`` of the task's stated window (what the prompt shows)."""
    return Task.from_identity(record.identity).design(point)


def _menu_policy(menu: tuple[tuple[float, ...], ...], design_of: Callable) -> Callable:
    """Simulate the menu's designs (``design_of(record, point)``) in order and answer the first that meets every
    target, else the closest one seen."""
    async def turn(messages, tools, record, rng) -> dict:
        results = _tool_results(messages)
        tried = sum(len(message.get("tool_calls") or ()) for message in messages if message.get("role") == "assistant")
        if tried < min(len(menu), int(record.identity["budget"])) and not any(r["all_targets_met"] for r in results):
            design = design_of(record, menu[tried])
            arguments = {variable.argument: value for variable, value in zip(DESIGN_VARIABLES, design)}
            return tool_call_message(messages, ("run_battery_simulation", arguments))
        if not results:
            return {"role": "assistant", "content": format_answer(*design_of(record, menu[0]))}
        best = _closest(results)
        return {"role": "assistant", "content": format_answer(*(best[variable.key] for variable in DESIGN_VARIABLES))}

    return turn


def at_capacity(identity: dict, point: tuple[float, ...]) -> tuple[float, ...]:
    """Window point ``point`` of (porosity, negative porosity, N/P ratio), with the positive thickness that the prompt's
    formula gives for the centre of the task's areal-capacity band, clamped to the window (what the prompt shows)."""
    design = list(Task.from_identity(identity).design((0.5, *point)))
    low, high = identity["targets"]["areal_capacity_mAh_cm2"]
    thickness = thickness_for_areal_capacity((low + high) / 2, design[1])
    bounds = identity["bounds"][DESIGN_VARIABLES[0].key]
    design[0] = min(max(thickness, bounds[0]), bounds[1])
    return tuple(design)


def _at_capacity(record, point: tuple[float, ...]) -> tuple[float, ...]:
    return at_capacity(record.identity, point)


async def _constant_turn(messages, tools, record, rng) -> dict:
    return {"role": "assistant", "content": format_answer(*_in_window(record, CONSTANT))}


async def _blind_reference_turn(messages, tools, record, rng) -> dict:
    hidden = set(CellDesignGenerator.hidden_fields)
    identity = {key: value for key, value in record.identity.items() if key not in hidden}
    return await SearchAgent().act(messages, tools, identity, rng)


POLICIES: dict[str, Callable] = {"menu": _menu_policy(MENU, _in_window), "constant": _constant_turn,
                                  "capacity_menu": _menu_policy(CAPACITY_MENU, _at_capacity),
                                  "reference": _blind_reference_turn}


@pytest.fixture(scope="module")
def tasks(registry: Registry) -> dict[str, list[dict]]:
    """TASKS_PER_LEVEL test-split tasks of each default level."""
    # two worker processes: a task costs its oracle search, a dozen simulations
    records = generate_records("battery_design", registry,
                               overrides={"split_samples": f"test:{len(LEVELS) * TASKS_PER_LEVEL}"}, max_workers=2)
    return {level: [record for record in records if record["extra_info"]["generator_name"] == level]
            for level in LEVELS}


@pytest.fixture(scope="module")
def played(registry: Registry, tasks: dict[str, list[dict]]) -> dict[tuple[str, str], list[EpisodeResult]]:
    return {(name, level): play_episodes(records, registry, policy=scripted_policy(turn),
                                         limits=LIMITS)
            for name, turn in POLICIES.items() for level, records in tasks.items()}


def _solved(results: list[EpisodeResult]) -> float:
    return sum(result.solved for result in results) / len(results)


def _mean(results: list[EpisodeResult]) -> float:
    return sum(result.score for result in results) / len(results)


def test_every_level_has_enough_tasks(tasks: dict[str, list[dict]]) -> None:
    assert all(len(records) == TASKS_PER_LEVEL for records in tasks.values())


def test_the_hidden_oracle_is_what_the_reference_agent_never_receives() -> None:
    assert CellDesignGenerator.hidden_fields == ("oracle",)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("shortcut", ["menu", "constant", "capacity_menu"])
def test_shortcuts_stay_under_the_ceiling(played, shortcut: str, level: str) -> None:
    results = played[(shortcut, level)]
    print(f"\n{shortcut} {level}: solved {_solved(results):.0%}, mean {_mean(results):.2f}")
    assert all(result.success for result in results)
    assert _solved(results) <= SHORTCUT_CEILING, (shortcut, level, _solved(results))


@pytest.mark.parametrize("level", LEVELS)
def test_the_blind_reference_agent_solves_within_the_budget(played, level: str) -> None:
    results = played[("reference", level)]
    calls = sum(result.turn_record["tool_calls"] for result in results) / len(results)
    print(f"\nreference {level}: solved {_solved(results):.0%}, mean {_mean(results):.2f}, {calls:.1f} calls")
    assert all(result.turn_record["tool_calls"] <= result.ground_truth["budget"] for result in results)
    assert _solved(results) >= REFERENCE_FLOOR, (level, _solved(results))
