"""Dataset generation through the Python API and the real CLI, with the installed bootcamp-example.

Determinism is the contract here: record i of a split is a pure function of (config, seed, split, i), so the bytes
never depend on shuffling, the worker count or the sizes of other splits.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import bootcamp_example
import bootcamp_example.hooks
from bootcamp_core import (
    ConfigError,
    GenerationError,
    Interaction,
    Reward,
    TaskGenerator,
    Tool,
    UnknownIdError,
    hookimpl,
)
from bootcamp_core.cli.main import main
from bootcamp_core.data.config import allocate, load_instruction_config, parse_instruction_config
from bootcamp_core.data.generate import config_for_bootcamp, generate, generate_many, iter_records
from bootcamp_core.data.io import PARQUET_BATCH_ROWS, read_jsonl, read_parquet
from bootcamp_core.data.records import GeneratedSample
from bootcamp_core.plugin.loader import Registry

VERSIONS = {"bootcamp-example": "0.1.0"}

SMALL_CONFIG = """
instruction_generators:
  short:
    config: {{min_value: 1, max_value: 99, min_operands: 2, max_operands: 3}}
    generation_ratio: 1
  medium:
    config: {{min_value: 100, max_value: 999, min_operands: 5, max_operands: 6}}
    generation_ratio: 3
  long:
    config: {{min_value: 100, max_value: 999, min_operands: 9, max_operands: 10}}
    generation_ratio: 6
global_config:
  class_name: example/arithmetic
  default_seed: 11
  default_split_samples: "{splits}"
"""

OPERANDS = {"short": (2, 3), "medium": (5, 6), "long": (9, 10)}


def write_small_config(directory: Path, splits: str = "train:37,test:11", name: str = "small_instruction_config.yaml",
                       ) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(SMALL_CONFIG.format(splits=splits), encoding="utf-8")
    return path


def small_config(tmp_path: Path, **overrides):
    return load_instruction_config(write_small_config(tmp_path / "configs"), overrides=overrides)


def lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n")
    return text.split("\n")[:-1]


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in lines(path)]


def files_of(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


# --------------------------------------------------------------------------------- components for custom registries
class BrokenGenerator(TaskGenerator):
    name = "broken"
    reward = "exact"

    def case_generator(self, rng):
        raise RuntimeError("the generator's own bug")

    def prompt_func(self, identity, rng):
        return "never reached"


class FlakyGenerator(TaskGenerator):
    """Raises on about 30% of draws: retries with a derived rng must still give every record, deterministically."""

    name = "flaky"
    reward = "exact"

    def case_generator(self, rng):
        if rng.random() < 0.3:
            raise RuntimeError("unlucky draw")
        return {"n": rng.randint(0, 10**9)}

    def prompt_func(self, identity, rng):
        return f"Repeat {identity['n']}."


class SlowGenerator(TaskGenerator):
    """Waits ``delay_s`` before each draw, then raises if ``fail``.

    With ``wait_for`` (a path) each draw first waits until that file exists, and raises if it has not appeared in
    ``timeout_s``; with ``log`` (a path) each draw appends there the JSONL files its process has open for writing (the
    file its row goes into)."""

    name = "slow"
    reward = "exact"

    def case_generator(self, rng):
        time.sleep(self.config.get("delay_s", 0.0))
        if self.config.get("fail"):
            raise RuntimeError("the slow generator's bug")
        if "wait_for" in self.config:
            waited = Path(self.config["wait_for"])
            deadline = time.monotonic() + self.config.get("timeout_s", 10.0)
            while not waited.exists():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{waited} never appeared")
                time.sleep(0.005)
        if "log" in self.config:
            folder = Path("/proc/self/fd")
            open_files = []
            for descriptor in folder.iterdir():
                with contextlib.suppress(OSError):
                    open_files.append(os.readlink(descriptor))
            with open(self.config["log"], "a", encoding="utf-8") as log:
                log.write(json.dumps([name for name in open_files if ".jsonl" in name]) + "\n")
        return {"n": rng.randint(0, 10**9)}

    def prompt_func(self, identity, rng):
        return f"Repeat {identity['n']}."


class ListGenerator(TaskGenerator):
    name = "wrong_type"
    reward = "exact"

    def case_generator(self, rng):
        return [rng.random()]

    def prompt_func(self, identity, rng):
        return "never reached"


class ExactReward(Reward):
    name = "exact"

    def extract_output(self, output):
        return output.strip() or None

    def verify_correction(self, extracted, identity, **kwargs):
        return float(extracted == str(identity["n"]))


class Abacus(Tool):
    name = "abacus"
    description = "Counts beads."
    parameters = {"type": "object", "properties": {}}

    async def execute(self, instance_id, parameters, **kwargs):
        return "0", 0.0, {}


class OtherCalculator(Tool):
    name = "calculator"  # the same function name as example/calculator
    description = "Another calculator."
    parameters = {"type": "object", "properties": {}}

    async def execute(self, instance_id, parameters, **kwargs):
        return "0", 0.0, {}


class Coach(Interaction):
    name = "coach"

    async def generate_response(self, instance_id, messages, **kwargs):
        return True, "Done.", 1.0, {}


class ProbePlugin:
    @hookimpl
    def bootcamp_register_task_generators(self, register):
        register(BrokenGenerator)
        register(FlakyGenerator)
        register(ListGenerator)
        register(SlowGenerator)

    @hookimpl
    def bootcamp_register_rewards(self, register):
        register(ExactReward)


class ExtraPlugin:
    @hookimpl
    def bootcamp_register_tools(self, register):
        register(Abacus)
        register(OtherCalculator)

    @hookimpl
    def bootcamp_register_interactions(self, register):
        register(Coach)


@pytest.fixture(scope="module")
def mixed_registry() -> Registry:
    """bootcamp-example's real hooks module beside two in-process plugins."""
    registry = Registry(strict=True)
    registry.add_plugin(bootcamp_example.hooks, "example", distribution="bootcamp-example",
                        version=bootcamp_example.__version__)
    registry.add_plugin(ProbePlugin(), "probe")
    registry.add_plugin(ExtraPlugin(), "extra", distribution="bootcamp-extra", version="9.9.9")
    assert registry.errors == []
    return registry


def probe_config(generator: str, splits: str = "train:10", name: str | None = None, **overrides):
    return parse_instruction_config(
        {"global_config": {"class_name": f"probe/{generator}", "default_seed": 123}},
        name=name or generator,
        overrides={"split_samples": splits, **overrides},
    )


# ----------------------------------------------------------------------------------------------- determinism
def test_same_config_and_seed_give_byte_identical_files(tmp_path: Path, example_registry: Registry):
    config = small_config(tmp_path, gen_parquet=True)
    first = generate(config, tmp_path / "first", registry=example_registry)
    second = generate(config, tmp_path / "second", registry=example_registry)
    assert first.counts == second.counts == {"train": 37, "test": 11}
    assert [path.name for path in first.files] == [
        "small_train.jsonl", "small_train.parquet", "small_test.jsonl", "small_test.parquet",
    ]
    assert files_of(tmp_path / "first") == files_of(tmp_path / "second")
    assert len(files_of(tmp_path / "first")) == 4

    other_seed = generate(small_config(tmp_path, seed=12), tmp_path / "other", registry=example_registry)
    assert other_seed.counts == first.counts
    assert files_of(tmp_path / "other")["small_train.jsonl"] != files_of(tmp_path / "first")["small_train.jsonl"]


def without_index(line: str) -> str:
    record = json.loads(line)
    del record["extra_info"]["index"]
    return json.dumps(record, sort_keys=True, ensure_ascii=False)


def test_shuffle_reorders_the_same_records(tmp_path: Path, example_registry: Registry):
    generate(small_config(tmp_path), tmp_path / "plain", registry=example_registry)
    generate(small_config(tmp_path, shuffle=True), tmp_path / "shuffled", registry=example_registry)
    generate(small_config(tmp_path, shuffle=True), tmp_path / "again", registry=example_registry)
    assert files_of(tmp_path / "shuffled") == files_of(tmp_path / "again")
    for split in ("train", "test"):
        plain = lines(tmp_path / "plain" / f"small_{split}.jsonl")
        shuffled = lines(tmp_path / "shuffled" / f"small_{split}.jsonl")
        assert sorted(map(without_index, plain)) == sorted(map(without_index, shuffled))
        assert list(map(without_index, plain)) != list(map(without_index, shuffled))
        # indices number output positions, whatever the order
        assert [json.loads(line)["extra_info"]["index"] for line in shuffled] == [
            json.loads(line)["extra_info"]["index"] for line in plain
        ]


@pytest.mark.parametrize("shuffle", [False, True])
def test_worker_count_never_changes_a_byte(tmp_path: Path, example_registry: Registry, shuffle: bool):
    # 9,000 records: the pool cuts a split into 4 chunks per worker (1,125 rows each), and Parquet row groups of
    # PARQUET_BATCH_ROWS rows straddle chunk boundaries
    config = small_config(tmp_path, split_samples="train:9000,test:45,valid:0", shuffle=shuffle, gen_parquet=True)
    one = generate(config, tmp_path / "one", registry=example_registry)
    two = generate(config, tmp_path / "two", max_workers=2, registry=example_registry)
    assert one.counts == two.counts == {"train": 9000, "test": 45, "valid": 0}
    assert [path.name for path in one.files] == [path.name for path in two.files]
    assert files_of(tmp_path / "one") == files_of(tmp_path / "two")
    assert sorted(path.name for path in (tmp_path / "two").iterdir()) == sorted(path.name for path in two.files)
    row_groups = pq.ParquetFile(tmp_path / "two" / "small_train.parquet").metadata.num_row_groups
    assert row_groups == -(-9000 // PARQUET_BATCH_ROWS) > 1
    assert lines(tmp_path / "two" / "small_valid.jsonl") == []
    assert list(read_parquet(tmp_path / "two" / "small_train.parquet")) == records(
        tmp_path / "two" / "small_train.jsonl"
    )


def slow_first_config(name: str, first: dict, splits: str = "train:400,test:40"):
    """A config whose first group, the first rows of every split (unshuffled), is ``probe/slow`` with ``first``."""
    return parse_instruction_config(
        {"instruction_generators": {"first": {"class_name": "probe/slow", "config": first, "generation_ratio": 1},
                                    "rest": {"class_name": "probe/slow", "generation_ratio": 9}},
         "global_config": {"default_seed": 5}},
        name=name, overrides={"split_samples": splits},
    )


def test_pool_chunks_that_finish_before_the_chunks_ahead_of_them_are_joined_in_order(
    tmp_path: Path, mixed_registry: Registry
):
    # the first group fills the first chunk of each split (400 rows: 8 chunks of 50), which takes about a second:
    # every later chunk finishes first, and is joined only after it
    config = slow_first_config("slow", {"delay_s": 0.02})
    generate(config, tmp_path / "one", registry=mixed_registry)
    two = generate(config, tmp_path / "two", max_workers=2, registry=mixed_registry)
    assert two.counts == {"train": 400, "test": 40}
    assert files_of(tmp_path / "one") == files_of(tmp_path / "two")


def test_a_pool_chunk_that_fails_after_the_chunks_behind_it_leaves_nothing_of_its_config(
    tmp_path: Path, mixed_registry: Registry
):
    # the first chunk of each split of "failing" raises (after five tries, 0.1 s), when its later chunks are done and
    # wait to be joined: none of them may be kept, and the other config must be written whole
    failing = slow_first_config("failing", {"delay_s": 0.02, "fail": True})
    fine = slow_first_config("fine", {}, splits="train:300,test:30")
    out = tmp_path / "out"
    reports = generate_many([failing, fine], out, max_workers=2, continue_on_error=True, registry=mixed_registry)
    assert reports[0].error is not None and "the slow generator's bug" in reports[0].error
    assert reports[1].error is None and reports[1].counts == {"train": 300, "test": 30}
    assert sorted(path.name for path in out.iterdir()) == ["fine_test.jsonl", "fine_train.jsonl"]
    generate(fine, tmp_path / "alone", registry=mixed_registry)
    assert files_of(out) == files_of(tmp_path / "alone")


def test_pool_progress_comes_as_each_chunk_ends_while_others_still_run(tmp_path: Path, mixed_registry: Registry):
    # the split's first chunk waits until progress has been reported: the parent must report (and join) each chunk as
    # it ends, not once every chunk has ended
    go = tmp_path / "first progress"
    config = slow_first_config("waiting", {"wait_for": str(go), "timeout_s": 3.0}, splits="train:400")
    reported = []

    def progress(rows: int) -> None:
        reported.append(rows)
        go.touch()

    two = generate(config, tmp_path / "two", max_workers=2, registry=mixed_registry, progress=progress)
    assert two.counts == {"train": 400}
    assert sorted(reported) == [50] * 8
    generate(config, tmp_path / "one", registry=mixed_registry)
    assert files_of(tmp_path / "one") == files_of(tmp_path / "two")


def test_pool_workers_write_chunks_straight_into_the_split_files(tmp_path: Path, mixed_registry: Registry):
    # two configs of one split each, two workers: a worker goes through a split of its own, each chunk written where it
    # ends up (the split's file), not to a part file copied after it; only a chunk taken from the end of the other
    # worker's split is a part, so more than half of the rows, and all of them when both keep pace, go straight in
    log = tmp_path / "written-to.log"
    configs = [
        parse_instruction_config(
            {"instruction_generators": {"all": {"class_name": "probe/slow", "config": {"log": str(log)}}},
             "global_config": {"default_seed": seed}},
            name=name, overrides={"split_samples": "train:400"})
        for seed, name in enumerate(["first", "second"])
    ]
    out = tmp_path / "two"
    generate_many(configs, out, max_workers=2, registry=mixed_registry)
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 800 and all(len(files) == 1 for files in rows)
    straight = [files[0] for files in rows if Path(files[0]).parent == out]
    assert {Path(name).name.split(".tmp-")[0] for name in straight} <= {"first_train.jsonl", "second_train.jsonl"}
    assert len(straight) > len(rows) / 2
    log.unlink()
    generate_many(configs, tmp_path / "one", registry=mixed_registry)
    assert files_of(tmp_path / "one") == files_of(out)


def test_pool_workers_take_the_largest_chunks_first_each_going_through_a_split_of_its_own():
    from bootcamp_core.data.generate import _Claims, _PoolSplit

    config = parse_instruction_config({"instruction_generators": {"all": {"class_name": "probe/slow"}}}, name="c")
    splits = [_PoolSplit(number, config, split, count, chunk, Path(f"{number}"), Path(f"{number}.tmp"), Path("parts"))
              for number, split, count, chunk in [(0, "train", 800, 100), (1, "train", 790, 100), (2, "test", 80, 10)]]
    first = _Claims.create(multiprocessing.get_context(), splits)
    second = _Claims(first.shared, splits)  # another worker's view of the same shared claims

    def write(claims: _Claims) -> tuple[int, int, bool]:
        taken = claims.take()
        assert taken is not None
        key, index, straight = taken
        if straight:
            claims.set_joined(key, index + 1)
        return taken

    assert write(first) == (0, 0, True)  # of equal chunks, the first split; a split of its own each
    assert write(second) == (1, 0, True)
    assert [write(first) for _ in range(7)] == [(0, index, True) for index in range(1, 8)]
    # its split done, the first worker takes the last chunk of the other's split (a part): its chunks are larger than
    # those of the split not started
    assert write(first) == (1, 7, False)
    assert write(second) == (1, 1, True)
    # the last one left comes right after what is in the file: it goes straight in too
    assert [write(first) for _ in range(5)] == [(1, 6, False), (1, 5, False), (1, 4, False), (1, 3, False), (1, 2, True)]
    assert write(second) == (2, 0, True)  # the small chunks last
    assert write(first) == (2, 7, False)
    first.abandon(2)  # its config failed: nothing more of it is taken
    assert first.take() is None and second.take() is None


def test_a_split_does_not_depend_on_the_size_of_other_splits(tmp_path: Path, example_registry: Registry):
    generate(small_config(tmp_path, split_samples="train:40,test:5"), tmp_path / "a", registry=example_registry)
    generate(small_config(tmp_path, split_samples="train:40,test:17"), tmp_path / "b", registry=example_registry)
    assert (tmp_path / "a" / "small_train.jsonl").read_bytes() == (tmp_path / "b" / "small_train.jsonl").read_bytes()
    assert len(lines(tmp_path / "b" / "small_test.jsonl")) == 17


# --------------------------------------------------------------------------------------------- what is written
def test_counts_groups_indices_and_record_contents(tmp_path: Path, example_registry: Registry):
    config = small_config(tmp_path, gen_parquet=True)
    generate(config, tmp_path / "out", registry=example_registry)
    ratios = [group.ratio for group in config.groups]
    assert ratios == pytest.approx([0.1, 0.3, 0.6])
    expected_groups = {"train": [4, 11, 22], "test": [1, 3, 7]}  # largest remainders of 3.7/11.1/22.2, 1.1/3.3/6.6
    offset = 0
    for split, count in (("train", 37), ("test", 11)):
        written = records(tmp_path / "out" / f"small_{split}.jsonl")
        assert len(written) == count
        assert allocate(count, ratios) == expected_groups[split]
        # unshuffled, the groups come in config order, each its exact share
        assert [record["extra_info"]["generator_name"] for record in written] == [
            name for name, share in zip(["short", "medium", "long"], expected_groups[split]) for _ in range(share)
        ]
        assert [record["extra_info"]["index"] for record in written] == list(range(offset, offset + count))
        offset += count
        for record in written:
            identity = record["reward_model"]["ground_truth"]
            extra = record["extra_info"]
            assert list(record) == ["data_source", "prompt", "reward_model", "extra_info"]
            assert record["data_source"] == "bootcamp/example"
            assert record["prompt"] == [{"role": "user", "content": record["prompt"][0]["content"]}]
            assert identity["expression"] in record["prompt"][0]["content"]
            assert record["reward_model"]["style"] == "rule"
            low, high = OPERANDS[extra["generator_name"]]
            assert low <= len(re.findall(r"\d+", identity["expression"])) <= high  # the group's own config
            assert list(extra) == ["index", "split", "generator_name", "tools_kwargs", "need_tools_kwargs",
                                   "interaction_kwargs", "bootcamp"]
            assert extra["split"] == split
            assert extra["tools_kwargs"] == {"calculator": {"create_kwargs": {"identity": identity}}}
            assert extra["need_tools_kwargs"] is True
            assert extra["interaction_kwargs"] == {"name": "example/feedback", "identity": identity}
            assert extra["bootcamp"] == {
                "generator": "example/arithmetic",
                "tools": ["example/calculator"],
                "interaction": "example/feedback",
                "reward": "example/arithmetic",
                "versions": VERSIONS,
            }
            assert GeneratedSample.from_record(json.loads(json.dumps(record))).to_record() == record
        assert list(read_parquet(tmp_path / "out" / f"small_{split}.parquet")) == written


def test_iter_records_yields_what_generate_writes(tmp_path: Path, example_registry: Registry):
    config = small_config(tmp_path, shuffle=True)
    generate(config, tmp_path / "out", registry=example_registry)
    for split in ("train", "test"):
        written = list(read_jsonl(tmp_path / "out" / f"small_{split}.jsonl"))
        assert list(iter_records(config, split, example_registry)) == written
        assert list(iter_records(config, split, example_registry, start=3, stop=8)) == written[3:8]


# ------------------------------------------------------------------------------------ tool / interaction choice
def tool_config(directory: Path, text: str, name: str = "tools.yaml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "entry", ["example/calculator", "calculator", "bootcamp_example.tools.CalculatorTool"]
)
def test_a_tool_config_names_tools_by_id_name_or_dotted_path(tmp_path: Path, example_registry: Registry, entry: str):
    tools = tool_config(tmp_path, f"tools:\n  - class_name: {entry}\n    config: {{type: native}}\n")
    interaction = tool_config(tmp_path, "interaction:\n  - {name: fb, class_name: bootcamp_example.interaction."
                                        "FeedbackInteraction, config: {}}\n", "interaction.yaml")
    config = small_config(tmp_path, split_samples="train:3", tool_config_path=tools,
                          interaction_config_path=interaction)
    record = next(iter_records(config, "train", example_registry))
    assert list(record["extra_info"]["tools_kwargs"]) == ["calculator"]
    assert record["extra_info"]["bootcamp"]["tools"] == ["example/calculator"]
    assert record["extra_info"]["interaction_kwargs"]["name"] == "example/feedback"


def test_empty_tool_and_interaction_configs_name_none(tmp_path: Path, example_registry: Registry):
    config = small_config(
        tmp_path,
        split_samples="train:3",
        tool_config_path=tool_config(tmp_path, "tools: []\n"),
        interaction_config_path=tool_config(tmp_path, "interaction: []\n", "interaction.yaml"),
    )
    record = next(iter_records(config, "train", example_registry))
    assert record["extra_info"]["tools_kwargs"] == {}
    assert record["extra_info"]["need_tools_kwargs"] is False
    assert "interaction_kwargs" not in record["extra_info"]
    assert record["extra_info"]["bootcamp"]["tools"] == [] and record["extra_info"]["bootcamp"]["interaction"] is None


def test_tool_and_interaction_configs_may_name_other_bootcamps(tmp_path: Path, mixed_registry: Registry, caplog):
    caplog.set_level("WARNING", logger="bootcamp_core")
    tools = tool_config(tmp_path, "tools:\n  - class_name: example/calculator\n  - class_name: extra/abacus\n")
    interactions = tool_config(tmp_path, "interaction:\n  - {name: coach, class_name: extra/coach}\n"
                                         "  - {class_name: example/feedback}\n", "interaction.yaml")
    config = small_config(tmp_path, split_samples="train:4,test:2", tool_config_path=tools,
                          interaction_config_path=interactions, gen_parquet=True)
    generate(config, tmp_path / "out", registry=mixed_registry)
    written = records(tmp_path / "out" / "small_train.jsonl")
    assert len(written) == 4
    for record in written:
        identity = record["reward_model"]["ground_truth"]
        extra = record["extra_info"]
        assert extra["tools_kwargs"] == {
            name: {"create_kwargs": {"identity": identity}} for name in ("calculator", "abacus")
        }
        assert extra["interaction_kwargs"] == {"name": "extra/coach", "identity": identity}
        assert extra["bootcamp"]["tools"] == ["example/calculator", "extra/abacus"]
        assert extra["bootcamp"]["versions"] == {"bootcamp-example": "0.1.0", "bootcamp-extra": "9.9.9"}
    assert list(read_parquet(tmp_path / "out" / "small_train.parquet")) == written
    assert any("several interactions listed; records name the first" in record.getMessage()
               for record in caplog.records)


def test_tools_with_the_same_name_cannot_share_a_record(tmp_path: Path, mixed_registry: Registry):
    tools = tool_config(tmp_path, "tools: [example/calculator, extra/calculator]\n")
    config = small_config(tmp_path, split_samples="train:2", tool_config_path=tools)
    with pytest.raises(ConfigError,
                       match="tool names must be distinct.*calculator.*example/calculator, extra/calculator"):
        generate(config, tmp_path / "out", registry=mixed_registry)
    assert list((tmp_path / "out").iterdir()) == []


def test_a_group_tool_config_applies_to_that_group_only(tmp_path: Path, example_registry: Registry):
    configs = tmp_path / "configs"
    tool_config(configs, "tools: []\n", "no_tools.yaml")
    path = configs / "groups_instruction_config.yaml"
    path.write_text(
        "instruction_generators:\n"
        "  bare: {config: {max_operands: 3}, tool_config_path: no_tools.yaml}\n"
        "  equipped: {config: {max_operands: 3}}\n"
        "global_config: {class_name: example/arithmetic, default_split_samples: 'train:4'}\n",
        encoding="utf-8",
    )
    config = load_instruction_config(path)
    by_group = {record["extra_info"]["generator_name"]: record
                for record in iter_records(config, "train", example_registry)}
    assert by_group["bare"]["extra_info"]["tools_kwargs"] == {}
    assert list(by_group["equipped"]["extra_info"]["tools_kwargs"]) == ["calculator"]


def test_no_tool_and_no_interaction_flags(tmp_path: Path):
    path = write_small_config(tmp_path / "configs", splits="train:3,test:1")
    assert main(["generate", "--instruction-config", str(path), "--no-tool", "--no-interaction",
                 "--output-dir", str(tmp_path / "out"), "-q"]) == 0
    for record in records(tmp_path / "out" / "small_train.jsonl"):
        extra = record["extra_info"]
        assert extra["tools_kwargs"] == {} and extra["need_tools_kwargs"] is False
        assert "interaction_kwargs" not in extra
        assert extra["bootcamp"]["tools"] == [] and extra["bootcamp"]["interaction"] is None
    assert main(["generate", "--instruction-config", str(path), "--no_interaction",
                 "--output-dir", str(tmp_path / "only_tools"), "-q"]) == 0
    extra = records(tmp_path / "only_tools" / "small_train.jsonl")[0]["extra_info"]
    assert list(extra["tools_kwargs"]) == ["calculator"] and "interaction_kwargs" not in extra


def test_tool_and_interaction_config_flags(tmp_path: Path):
    path = write_small_config(tmp_path / "configs", splits="train:3")
    tools = tool_config(tmp_path, "tools: []\n")
    interaction = tool_config(tmp_path, "interaction: [bootcamp_example.interaction.FeedbackInteraction]\n",
                              "interaction.yaml")
    assert main(["generate", "--instruction-config", str(path), "--tool-config", str(tools),
                 "--interaction_config", str(interaction), "--output-dir", str(tmp_path / "out"), "-q"]) == 0
    extra = records(tmp_path / "out" / "small_train.jsonl")[0]["extra_info"]
    assert extra["tools_kwargs"] == {}
    assert extra["interaction_kwargs"]["name"] == "example/feedback"


# ------------------------------------------------------------------------------------------------------ errors
def test_unknown_class_name_suggests_a_close_match(tmp_path: Path, example_registry: Registry, capsys):
    config = small_config(tmp_path, class_name="example/arithmetik", split_samples="train:2")
    with pytest.raises(UnknownIdError, match=r'Unknown generator "example/arithmetik"\. '
                                             r'Did you mean "example/arithmetic".*`bootcamp plugins`'):
        generate(config, tmp_path / "out", registry=example_registry)
    tools = tool_config(tmp_path, "tools: [example/calculater]\n")
    with pytest.raises(UnknownIdError, match=r'Unknown tool "example/calculater"\. Did you mean "example/calculator"'):
        generate(small_config(tmp_path, tool_config_path=tools), tmp_path / "out", registry=example_registry)
    assert list((tmp_path / "out").iterdir()) == []

    path = write_small_config(tmp_path / "configs", splits="train:2")
    code = main(["generate", "--instruction-config", str(path), "--global-config-overrides",
                 '{"class_name": "example/arithmatic"}', "--output-dir", str(tmp_path / "cli"), "-q"])
    assert code == 1
    err = capsys.readouterr().err
    assert 'Did you mean "example/arithmetic"' in err and "bootcamp plugins" in err
    assert not (tmp_path / "cli" / "small_train.jsonl").exists()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_generator_that_always_raises_is_reported_and_loses_nothing(
    tmp_path: Path, mixed_registry: Registry, workers: int
):
    out = tmp_path / "out"
    out.mkdir()
    existing = out / "broken_train.jsonl"
    existing.write_text('{"kept": true}\n', encoding="utf-8")
    config = probe_config("broken", gen_parquet=True)
    with pytest.raises(GenerationError) as raised:
        generate(config, out, max_workers=workers, registry=mixed_registry)
    message = str(raised.value)
    assert "generator probe/broken" in message
    # everything needed to replay the failing record; with a pool, whichever chunk failed first is reported
    replay = re.search(r"seed 123, split 'train', index (\d+):", message)
    assert replay is not None, message
    assert int(replay.group(1)) == 0 if workers == 1 else int(replay.group(1)) < 10
    assert "RuntimeError: the generator's own bug" in message
    assert existing.read_text(encoding="utf-8") == '{"kept": true}\n'
    assert [path.name for path in out.iterdir()] == ["broken_train.jsonl"]  # no temporary files, no parts


def test_a_generator_returning_the_wrong_type_is_reported(tmp_path: Path, mixed_registry: Registry):
    with pytest.raises(GenerationError, match="probe/wrong_type.*TypeError: case_generator returned list, not a dict"):
        generate(probe_config("wrong_type"), tmp_path / "out", registry=mixed_registry)


def test_a_generator_that_raises_sometimes_still_gives_every_record(tmp_path: Path, mixed_registry: Registry):
    config = probe_config("flaky", splits="train:60,test:20")
    report = generate(config, tmp_path / "one", registry=mixed_registry)
    assert report.counts == {"train": 60, "test": 20}
    written = records(tmp_path / "one" / "flaky_train.jsonl")
    assert len(written) == 60
    assert len({record["reward_model"]["ground_truth"]["n"] for record in written}) == 60
    assert [record["extra_info"]["bootcamp"]["reward"] for record in written] == ["probe/exact"] * 60
    assert written[0]["extra_info"]["bootcamp"]["versions"] == {}  # an in-process plugin has no distribution
    # retries are deterministic too, also when forked workers use this in-process registry
    generate(config, tmp_path / "two", max_workers=2, registry=mixed_registry)
    assert files_of(tmp_path / "one") == files_of(tmp_path / "two")


# ------------------------------------------------------------------------------------------------------- batch
def write_registry(tmp_path: Path, *extra_lines: str) -> Path:
    write_small_config(tmp_path / "configs", splits="train:4,test:3")
    path = tmp_path / "registry.jsonl"
    path.write_text(
        "\n".join([
            "# two bootcamps",
            json.dumps({"namespace": "example", "sample_number": {"train": 5, "test": 2}}),
            json.dumps({"config_file": "configs/small_instruction_config.yaml"}),
            *extra_lines,
        ]) + "\n",
        encoding="utf-8",
    )
    return path


def test_batch_generation_from_a_registry_with_concatenated_files(tmp_path: Path, capsys):
    registry_file = write_registry(tmp_path)
    out = tmp_path / "out"
    code = main(["generate", "--bootcamp-registry", str(registry_file), "--max-workers", "2", "--concat-files",
                 "--gen-parquet", "--output-dir", str(out), "-q"])
    assert code == 0, capsys.readouterr().err
    names = sorted(path.name for path in out.iterdir())
    assert names == sorted(f"{stem}_{split}.{suffix}" for stem in ("example", "small", "all")
                           for split in ("train", "test") for suffix in ("jsonl", "parquet"))
    expected = {("example", "train"): 5, ("example", "test"): 2, ("small", "train"): 4, ("small", "test"): 3}
    for (stem, split), count in expected.items():
        assert len(lines(out / f"{stem}_{split}.jsonl")) == count
    for split in ("train", "test"):
        combined = out / f"all_{split}.jsonl"
        parts = [(out / f"{stem}_{split}.jsonl").read_bytes() for stem in ("example", "small")]
        assert combined.read_bytes() == b"".join(parts)
        assert list(read_parquet(out / f"all_{split}.parquet")) == records(combined)
    stdout = capsys.readouterr().out
    assert f"wrote {out / 'example_train.jsonl'} (5 records)" in stdout
    assert f"wrote {out / 'all_test.jsonl'}" in stdout

    # a registry line is the same as generating that bootcamp on its own
    assert main(["generate", "--bootcamp", "example", "--split-samples", "train:5,test:2",
                 "--output-dir", str(tmp_path / "alone"), "-q"]) == 0
    assert (tmp_path / "alone" / "example_train.jsonl").read_bytes() == (out / "example_train.jsonl").read_bytes()


def test_a_bad_registry_entry_with_continue_on_error_still_generates_the_others(tmp_path: Path, capsys):
    registry_file = write_registry(tmp_path, json.dumps({"namespace": "exampel", "sample_number": "train:3"}))
    out = tmp_path / "out"
    code = main(["generate", "--bootcamp-registry", str(registry_file), "--max-workers", "2", "--continue-on-error",
                 "--concat-files", "--output-dir", str(out), "-q"])
    assert code == 1
    err = capsys.readouterr().err
    assert (f'failed: exampel: {registry_file}:4: No installed bootcamp has namespace "exampel". '
            'Did you mean "example"?') in err
    assert sorted(path.name for path in out.iterdir()) == sorted(
        f"{stem}_{split}.jsonl" for stem in ("example", "small", "all") for split in ("train", "test")
    )
    assert len(lines(out / "all_train.jsonl")) == 5 + 4


def test_a_bad_registry_entry_without_continue_on_error_stops_with_a_clear_message(tmp_path: Path, capsys):
    registry_file = write_registry(tmp_path, json.dumps({"namespace": "nosuch"}))
    out = tmp_path / "out"
    code = main(["generate", "--bootcamp-registry", str(registry_file), "--output-dir", str(out), "-q"])
    assert code == 1
    err = capsys.readouterr().err
    assert f'error: {registry_file}:4: No installed bootcamp has namespace "nosuch".' in err
    assert "bootcamp plugins" in err
    assert not out.exists() or list(out.iterdir()) == []


# --------------------------------------------------------------------------------------------------------- CLI
def cli_files(tmp_path: Path, name: str, *flags: str) -> dict[str, bytes]:
    path = write_small_config(tmp_path / "configs")
    out = tmp_path / name
    assert main(["generate", "--instruction-config", str(path), *flags, "--output-dir", str(out), "-q"]) == 0
    return files_of(out)


def test_cli_flags_match_the_python_api(tmp_path: Path, example_registry: Registry):
    flags = ["--split-samples", "train:6,test:3", "--seed", "7", "--shuffle", "--gen-parquet"]
    from_cli = cli_files(tmp_path, "cli", *flags)
    assert sorted(from_cli) == ["small_test.jsonl", "small_test.parquet", "small_train.jsonl", "small_train.parquet"]
    config = small_config(tmp_path, split_samples="train:6,test:3", seed=7, shuffle=True, gen_parquet=True)
    generate(config, tmp_path / "api", registry=example_registry)
    assert files_of(tmp_path / "api") == from_cli
    assert len(from_cli["small_train.jsonl"].splitlines()) == 6

    unshuffled = cli_files(tmp_path, "unshuffled", "--split-samples", "train:6,test:3", "--seed", "7", "--no-shuffle")
    assert unshuffled["small_train.jsonl"] != from_cli["small_train.jsonl"]
    assert sorted(unshuffled) == ["small_test.jsonl", "small_train.jsonl"]


def test_global_config_overrides_and_underscore_aliases(tmp_path: Path):
    by_seed = cli_files(tmp_path, "seed", "--split-samples", "train:6,test:3", "--seed", "7")
    by_override = cli_files(tmp_path, "override", "--split-samples", "train:6,test:3",
                            "--global-config-overrides", '{"default_seed": 7}')
    assert by_override == by_seed
    by_file_seed = cli_files(tmp_path, "file_seed", "--split-samples", "train:6,test:3")
    assert by_file_seed != by_seed  # the file says 11

    path = write_small_config(tmp_path / "configs")
    assert main(["generate", "--instruction_config", str(path), "--output_dir", str(tmp_path / "aliases"),
                 "--split_samples", "train:6,test:3", "--global_config_overrides", '{"default_seed": 7}', "-q"]) == 0
    assert files_of(tmp_path / "aliases") == by_seed


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--split-samples", "train:x"],
         "error: split samples \"train:x\": count 'x' of split \"train\" is not an integer"),
        (["--split-samples", "train:1,train:2"],
         'error: split samples "train:1,train:2": split "train" is given twice'),
        (["--global-config-overrides", "{seed: 1}"], "error: --global-config-overrides is not valid JSON"),
        (["--global-config-overrides", "[1]"], "error: --global-config-overrides must be a JSON object"),
        (["--max-workers", "0"], "error: --max-workers must be at least 1"),
    ],
)
def test_bad_flags_exit_1_with_a_clear_message(tmp_path: Path, capsys, flags: list[str], message: str):
    path = write_small_config(tmp_path / "configs")
    out = tmp_path / "out"
    assert main(["generate", "--instruction-config", str(path), *flags, "--output-dir", str(out), "-q"]) == 1
    assert message in capsys.readouterr().err
    assert not out.exists()


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_the_real_command(tmp_path: Path):
    path = write_small_config(tmp_path / "configs")
    done = run_cli("generate", "--instruction-config", str(path), "--output_dir", "data", "--split_samples",
                   "train:6,test:3", "--seed", "7", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"wrote {Path('data') / 'small_train.jsonl'} (6 records)" in done.stdout
    in_process = cli_files(tmp_path, "in_process", "--split-samples", "train:6,test:3", "--seed", "7")
    assert in_process == files_of(tmp_path / "data")

    failed = run_cli("generate", "--bootcamp", "example", "--split-samples", "train:-3", "--output-dir", "bad",
                     cwd=tmp_path)
    assert failed.returncode == 1
    assert failed.stderr.strip() == 'error: split samples "train:-3": count of split "train" is negative'
    assert not (tmp_path / "bad").exists()


def test_bootcamp_default_config_is_the_packaged_one(tmp_path: Path, example_registry: Registry):
    config = config_for_bootcamp("example", example_registry, {"split_samples": "train:20"})
    assert config.name == "example" and config.namespace == "example"
    assert [group.name for group in config.groups] == ["level_1", "level_2", "level_3", "level_4", "level_5"]
    counts = Counter(record["extra_info"]["generator_name"]
                     for record in iter_records(config, "train", example_registry))
    assert counts == {"level_1": 1, "level_2": 1, "level_3": 2, "level_4": 4, "level_5": 12}
