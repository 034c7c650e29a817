"""``bootcamp generate --ray``: ranges generated as Ray tasks on a real local cluster, byte-identical to a local run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bootcamp_core.data.config import load_instruction_config
from bootcamp_core.data.generate import config_for_bootcamp, generate_many
from bootcamp_core.plugin.loader import Registry
from bootcamp_core.scale.generate import RayGeneration
from bootcamp_core.scale.generate import generate_many as generate_on_ray

CONFIG = """\
instruction_generators:
  short:
    class_name: example/arithmetic
    generation_ratio: 2
    config: {min_operands: 2, max_operands: 3}
  long:
    class_name: example/arithmetic
    generation_ratio: 1
    config: {min_operands: 5, max_operands: 6}
global_config:
  default_split_samples: {train: 300, test: 23}
"""


def files_of(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def test_ray_tasks_write_the_bytes_of_a_local_run(tmp_path: Path, ray_cluster, example_registry: Registry,
                                                  only_example):
    path = tmp_path / "mixed.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    configs = [load_instruction_config(path, overrides={"shuffle": True, "gen_parquet": True, "seed": 7}),
               config_for_bootcamp("example", example_registry, {"split_samples": {"train": 41}})]
    local = generate_many(configs, tmp_path / "local", registry=example_registry)
    used = RayGeneration()
    advanced: list[int] = []
    ray_reports = generate_on_ray(configs, tmp_path / "ray", address=ray_cluster.address, in_flight=4,
                                  range_rows=16, registry=example_registry, progress=advanced.append, used=used)
    assert [report.counts for report in ray_reports] == [report.counts for report in local]
    assert [report.counts for report in local] == [{"train": 300, "test": 23}, {"train": 41}]
    assert [path.name for report in ray_reports for path in report.files] == [
        path.name for report in local for path in report.files]
    assert files_of(tmp_path / "ray") == files_of(tmp_path / "local")
    assert len(files_of(tmp_path / "ray")) == 5  # two JSONL and Parquet splits, one JSONL
    assert sum(advanced) == 300 + 23 + 41
    # every range was a task, run by at least two worker processes of the cluster
    assert used.tasks == -(-300 // 16) + -(-23 // 16) + -(-41 // 16)
    assert len(used.worker_pids) >= 2
    assert os.getpid() not in used.worker_pids


def test_the_command_with_ray_matches_the_command_without(tmp_path: Path, ray_cluster, only_example):
    common = ["--bootcamp", "example", "--split-samples", "train:120,test:9", "--shuffle", "--seed", "3", "-q"]
    runs = {}
    for name, extra in (("local", []), ("ray", ["--ray", ray_cluster.address, "--ray-tasks", "2"]),
                        ("client", ["--ray", ray_cluster.client_address, "--ray-tasks", "2"])):
        runs[name] = subprocess.run(
            [sys.executable, "-m", "bootcamp_core.cli.main", "generate", *common, "--output-dir",
             str(tmp_path / name), *extra], check=False, capture_output=True, text=True, timeout=300)
        assert runs[name].returncode == 0, runs[name].stderr
    assert files_of(tmp_path / "ray") == files_of(tmp_path / "local")
    # through Ray Client (ray://) as well: the same bytes
    assert files_of(tmp_path / "client") == files_of(tmp_path / "local")
    assert "ray: 2 tasks on " in runs["client"].stderr
    assert "example_train.jsonl (120 records)" in runs["ray"].stdout
    assert "ray: 2 tasks on " in runs["ray"].stderr
    assert "ray" not in runs["local"].stderr


def test_commands_without_ray_never_import_it(only_example):
    probe = ("import sys, bootcamp_core, bootcamp_core.cli.generate, bootcamp_core.cli.eval, bootcamp_core.cli.main,"
             " bootcamp_core.evaluate.run;"
             "assert not [name for name in sys.modules if name == 'ray' or name.startswith('ray.')], 'ray imported'")
    result = subprocess.run([sys.executable, "-c", probe], check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
