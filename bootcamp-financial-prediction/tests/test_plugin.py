"""Packaging and the plugin contract: entry point, ids, a light import, version."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import bootcamp_financial_prediction
from bootcamp_core import Registry

namespace = "financial_prediction"


def test_registers_every_component_under_its_namespace(registry: Registry) -> None:
    info = registry.namespace_plugin(namespace)
    assert info.error is None
    assert info.distribution == "bootcamp-financial-prediction"
    assert info.version == bootcamp_financial_prediction.__version__
    assert info.components == {
        "generator": ["financial_prediction/forecast"],
        "tool": ["financial_prediction/calculate_metrics", "financial_prediction/check_consistency"],
        "interaction": ["financial_prediction/answer_feedback"],
        "reward": ["financial_prediction/forecast"],
        "reference_agent": ["financial_prediction/driver_model_analyst"],
    }
    assert registry.namespaces() == [namespace]


def test_reference_agent_plays_the_generator(registry: Registry) -> None:
    agent = registry.get_class("reference_agent", "financial_prediction/driver_model_analyst")
    assert [registry.resolve("generator", name, namespace) for name in agent.generators] == [
        "financial_prediction/forecast"
    ]


def test_dotted_paths_resolve_to_ids(registry: Registry) -> None:
    assert registry.resolve("tool", "bootcamp_financial_prediction.tools.CheckConsistencyTool") == (
        "financial_prediction/check_consistency"
    )


def test_importing_the_package_registers_nothing_and_stays_light() -> None:
    code = (
        "import sys, bootcamp_financial_prediction; "
        "print(sorted(m for m in sys.modules if m.startswith(('bootcamp', 'pluggy', 'numpy'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['bootcamp_financial_prediction', 'bootcamp_financial_prediction.__about__']"


def test_version_matches_the_distribution() -> None:
    assert metadata.version("bootcamp-financial-prediction") == bootcamp_financial_prediction.__version__
    entry_points = metadata.entry_points(group="bootcamp", name=namespace)
    assert [entry_point.value for entry_point in entry_points] == ["bootcamp_financial_prediction.hooks"]
    requires = metadata.requires("bootcamp-financial-prediction") or []
    runtime = sorted(line.split(">")[0].split("<")[0].split("=")[0] for line in requires if "extra" not in line)
    assert runtime == ["bootcamp-core", "numpy"]
