"""Every installed bootcamp, together: listed cleanly, generated in one batch, each record resolvable again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bootcamp_core.data.io import read_records
from bootcamp_core.data.records import GeneratedSample
from bootcamp_core.plugin.loader import Registry


def bootcamp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", *args], capture_output=True, text=True,
                          timeout=600)


def installed() -> list[dict]:
    result = bootcamp("plugins", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_every_installed_plugin_loads_without_error():
    plugins = installed()
    assert plugins, "no bootcamp installed"
    assert [item["namespace"] for item in plugins if item["error"]] == []
    assert all(item["distribution"] and item["version"] for item in plugins)


def test_one_batch_over_every_bootcamp_yields_records_every_runner_can_resolve(tmp_path: Path):
    namespaces = [item["namespace"] for item in installed() if item["components"].get("generator")]
    registry_file = tmp_path / "registry.jsonl"
    registry_file.write_text(
        "\n".join(json.dumps({"namespace": ns, "sample_number": {"train": 9, "test": 3}}) for ns in namespaces) + "\n"
    )
    out = tmp_path / "out"
    result = bootcamp("generate", "--bootcamp-registry", str(registry_file), "--max-workers", "2", "--concat-files",
                      "--gen-parquet", "--output-dir", str(out), "-q")
    assert result.returncode == 0, result.stderr
    registry = Registry.from_entry_points(strict=True)
    for split, count in (("train", 9), ("test", 3)):
        merged = list(read_records(out / f"all_{split}.jsonl"))
        assert len(merged) == count * len(namespaces)
        assert merged == list(read_records(out / f"all_{split}.parquet"))
        assert {record["data_source"] for record in merged} == {f"bootcamp/{ns}" for ns in namespaces}
        for record in merged:
            sample = GeneratedSample.from_record(record)
            registry.resolve("generator", sample.generator)
            registry.resolve("reward", sample.reward)
            names = [registry.get_class("tool", tool).name for tool in sample.tools]
            assert names == list(sample.tool_names)
            if sample.interaction:
                registry.resolve("interaction", sample.interaction)
            plugin = registry.plugins[sample.generator.split("/", 1)[0]]
            assert sample.versions[plugin.distribution] == plugin.version
