"""The generator: determinism, a witness that provably clears the scene, the difficulty knobs, nothing leaked."""

from __future__ import annotations

import json
import math
import random
from importlib import resources

import pytest
import yaml
from bootcamp_bot_trajectory.answer import ANSWER_FORMAT
from bootcamp_bot_trajectory.generator import DEFAULTS, TrajectoryGenerator
from bootcamp_bot_trajectory.judge import judge_path
from bootcamp_bot_trajectory.robot import UPPER_LIMITS, Box, Task, path_samples
from bootcamp_bot_trajectory.simulator import simulator
from bootcamp_core import ConfigError, GenerationError
from bootcamp_core.generate import config_for_bootcamp, iter_records
from bootcamp_core.plugins import Registry

LEVELS = yaml.safe_load((resources.files("bootcamp_bot_trajectory") / "configs" / "default.yaml").read_text())[
    "instruction_generators"
]
PER_LEVEL = 4


def draws(generator: TrajectoryGenerator, seed: int, count: int) -> list[tuple[dict, str]]:
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        identity = generator.case_generator(rng)
        found.append((identity, generator.prompt_func(identity, rng)))
    return found


@pytest.fixture(scope="module")
def cases() -> dict[str, list[tuple[dict, str]]]:
    """A few tasks of every level of the default config."""
    return {level: draws(TrajectoryGenerator(**group["config"]), 11, PER_LEVEL) for level, group in LEVELS.items()}


def test_same_seed_same_tasks_and_prompts() -> None:
    generator = TrajectoryGenerator(**LEVELS["level_3"]["config"])
    first = draws(generator, 5, 3)
    assert draws(generator, 5, 3) == first
    assert draws(TrajectoryGenerator(**LEVELS["level_3"]["config"]), 5, 3) == first
    assert draws(generator, 6, 3) != first


def test_draws_only_from_the_rng_passed_in(monkeypatch: pytest.MonkeyPatch) -> None:
    before = random.getstate()

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the global random module must not be used")

    for function in ("random", "uniform", "randint", "randrange", "choice", "gauss", "shuffle", "getrandbits"):
        monkeypatch.setattr(random, function, forbidden)
    draws(TrajectoryGenerator(), 0, 2)
    monkeypatch.undo()
    assert random.getstate() == before


def test_identity_shape(cases: dict[str, list[tuple[dict, str]]]) -> None:
    for level, group in LEVELS.items():
        config = {**DEFAULTS, **group["config"]}
        for identity, _ in cases[level]:
            assert set(identity) == {"start", "target", "tolerance", "obstacles", "floor", "hidden_obstacles",
                                     "resolution", "budget", "witness"}
            assert json.loads(json.dumps(identity, allow_nan=False)) == identity
            assert config["min_obstacles"] <= len(identity["obstacles"]) <= config["max_obstacles"]
            for box in identity["obstacles"]:
                assert all(config["min_half_extent"] - 1e-3 <= half <= config["max_half_extent"] + 1e-3
                           for half in box["half_extents"])
            assert identity["tolerance"] == config["tolerance"]
            assert identity["hidden_obstacles"] is config["hidden_obstacles"]
            assert identity["budget"] == {"forward_kinematics": 20, "check_path": 10}
            assert all(abs(angle) <= limit for angle, limit in zip(identity["start"], UPPER_LIMITS))
            assert identity["start"] == [round(angle, 4) for angle in identity["start"]]
            assert 0.1 <= identity["target"][2] <= 1.1


def test_the_witness_solves_the_task_with_room_to_spare(cases: dict[str, list[tuple[dict, str]]]) -> None:
    sim = simulator()
    for level, group in LEVELS.items():
        clearance = {**DEFAULTS, **group["config"]}["clearance"]
        for identity, _ in cases[level]:
            task = Task.from_identity(identity)
            witness = identity["witness"]
            assert witness[0] == identity["start"] and len(witness) == 3
            assert judge_path(task, witness).solved, f"{level}: the witness does not solve its own task"
            # every box keeps the clearance from the arm at every configuration the judge checks
            samples = [configuration for _, _, configuration in path_samples(witness, task.resolution)]
            for box in task.obstacles:
                body = sim.add_box(box)
                try:
                    assert not any(sim.near(configuration, [body], clearance * 0.99) for configuration in samples)
                finally:
                    sim.remove(body)


def test_clutter_blocks_the_straight_line_path() -> None:
    def blocked(clutter: float) -> int:
        count = 0
        for identity, _ in draws(TrajectoryGenerator(min_obstacles=8, max_obstacles=8, clutter=clutter), 3, 10):
            task = Task.from_identity(identity)
            count += not judge_path(task, [identity["start"], identity["witness"][-1]]).clear
        return count

    calm, cluttered = blocked(0.0), blocked(1.0)
    assert cluttered >= 7 and cluttered >= calm + 4, (calm, cluttered)


def test_more_obstacles_and_tighter_tolerance_by_level(cases: dict[str, list[tuple[dict, str]]]) -> None:
    counts = {level: sum(len(identity["obstacles"]) for identity, _ in cases[level]) for level in LEVELS}
    assert counts["level_1"] < counts["level_2"] < counts["level_3"] < counts["level_4"]
    tolerances = [LEVELS[level]["config"]["tolerance"] for level in ("level_1", "level_2", "level_3", "level_4")]
    assert tolerances == sorted(tolerances, reverse=True)


def _leaked_witness_values(identity: dict, text: str) -> list[str]:
    start = set(identity["start"])
    return [f"{angle:.4f}" for point in identity["witness"][1:] for angle in point
            if angle not in start and f"{angle:.4f}" in text]


def test_the_prompt_describes_the_task_and_never_the_witness(cases: dict[str, list[tuple[dict, str]]]) -> None:
    for level in LEVELS:
        for identity, prompt in cases[level]:
            assert "[" + ", ".join(f"{angle:.4f}" for angle in identity["start"]) + "]" in prompt
            assert "({:.3f}, {:.3f}, {:.3f})".format(*identity["target"]) in prompt
            assert f"within {identity['tolerance']:g} m" in prompt
            assert "±2.96705972839" in prompt and "±3.05432619099" in prompt
            assert ANSWER_FORMAT in prompt and "check_path" in prompt and "forward_kinematics" in prompt
            assert "witness" not in prompt.lower()
            assert _leaked_witness_values(identity, prompt) == []


def test_hidden_obstacles_stay_out_of_the_prompt(cases: dict[str, list[tuple[dict, str]]]) -> None:
    for identity, prompt in cases["hidden"]:
        assert identity["hidden_obstacles"] and identity["obstacles"]
        assert f"There are {len(identity['obstacles'])} box obstacles" in prompt
        for box in identity["obstacles"]:
            assert "({:.3f}, {:.3f}, {:.3f})".format(*box["center"]) not in prompt
            assert "({:.3f}, {:.3f}, {:.3f})".format(*box["half_extents"]) not in prompt
    for identity, prompt in cases["level_2"]:
        for index, box in enumerate(identity["obstacles"]):
            assert f"{index}: centre " + "({:.3f}, {:.3f}, {:.3f})".format(*box["center"]) in prompt


def test_records_carry_the_witness_only_in_the_hidden_identity(registry: Registry) -> None:
    config = config_for_bootcamp("bot_trajectory", registry, overrides={"split_samples": "test:5"})
    for record in iter_records(config, "test", registry):
        identity = record["reward_model"]["ground_truth"]
        assert identity["witness"]
        [message] = record["prompt"]
        assert message["role"] == "user" and "witness" not in message["content"].lower()
        assert _leaked_witness_values(identity, message["content"]) == []
        assert record["extra_info"]["bootcamp"]["tools"] == ["bot_trajectory/forward_kinematics",
                                                             "bot_trajectory/check_path"]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"obstacle_count": 3}, "unknown bot_trajectory generator setting"),
        ({"min_obstacles": 5, "max_obstacles": 2}, "max_obstacles must be an integer in"),
        ({"min_obstacles": 2.5}, "min_obstacles must be an integer"),
        ({"clutter": 1.5}, r"clutter must be a number in \[0, 1\]"),
        ({"tolerance": 0}, "tolerance must be a number"),
        ({"tolerance": "0.1"}, "tolerance must be a number"),
        ({"hidden_obstacles": "yes"}, "hidden_obstacles must be true or false"),
        ({"resolution": 1.0}, "resolution must be a number"),
        ({"check_path_budget": -1}, "check_path_budget must be an integer"),
    ],
)
def test_bad_settings_are_config_errors(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TrajectoryGenerator(**config)


def test_an_impossible_setting_fails_with_a_clear_error() -> None:
    generator = TrajectoryGenerator(min_travel=2.0)  # no two reachable points are 2 m apart
    with pytest.raises(GenerationError, match="no scene with a clear witness path"):
        generator.case_generator(random.Random(0))


def test_no_floor_and_no_obstacles() -> None:
    [(identity, prompt)] = draws(TrajectoryGenerator(min_obstacles=0, max_obstacles=0, floor=False), 1, 1)
    assert identity["obstacles"] == [] and identity["floor"] is False
    assert "There are no box obstacles." in prompt and "floor" not in prompt
    assert judge_path(Task.from_identity(identity), identity["witness"]).solved
    assert Box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)).to_json() == {"center": [0.0, 0.0, 0.0], "half_extents": [1.0, 1.0, 1.0]}
    assert math.isfinite(identity["target"][0])
