"""Packaging and the plugin contract: ids, dotted paths, runtime dependencies."""

from __future__ import annotations

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


def test_dotted_paths_resolve_to_ids(registry: Registry) -> None:
    assert registry.resolve("tool", "bootcamp_financial_prediction.tools.CheckConsistencyTool") == (
        "financial_prediction/check_consistency"
    )
    # the interaction's class name before it was built on the shared AnswerFeedback still names it
    for path in ("bootcamp_financial_prediction.interaction.ForecastFeedback",
                 "bootcamp_financial_prediction.interaction.AnswerFeedback"):
        assert registry.resolve("interaction", path) == "financial_prediction/answer_feedback"


def test_runtime_dependencies_are_core_and_numpy_only() -> None:
    requires = metadata.requires("bootcamp-financial-prediction") or []
    runtime = sorted(line.split(">")[0].split("<")[0].split("=")[0] for line in requires if "extra" not in line)
    assert runtime == ["bootcamp-core", "numpy"]
