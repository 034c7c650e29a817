"""Testing bootcamps: the conformance kit, fixtures and a scripted OpenAI-compatible server.

In a bootcamp's ``tests/test_conformance.py``::

    from bootcamp_core.testing import BootcampConformance

    class TestConformance(BootcampConformance):
        namespace = "my_task"

        def solution(self, identity):          # optional: a final answer that solves the task
            return f"The answer is {identity['answer']}"

Names are imported on first use, so loading the pytest plugin (this package's ``pytest_plugin``) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module of this package that defines it
_WHERE = {
    "BootcampConformance": "conformance",
    "check_bootcamp": "conformance",
    "MINIMAL_HOOKS": "fixtures",
    "RunningServer": "fixtures",
    "episode_kwargs": "fixtures",
    "example_arguments": "fixtures",
    "free_port": "fixtures",
    "registry_of": "fixtures",
    "serve_tools": "fixtures",
    "write_distribution": "fixtures",
    "converse": "drivers",
    "draws": "drivers",
    "outputs": "drivers",
    "run_tool_calls": "drivers",
    "eval_refuses_component_config": "helpers",
    "evaluate_with_reference": "helpers",
    "generate_dataset": "helpers",
    "generate_records": "helpers",
    "play_episodes": "helpers",
    "reset_registry": "helpers",
    "scripted_policy": "helpers",
    "synthetic_result_line": "synthetic",
    "write_synthetic_results": "synthetic",
    "Reply": "chat_server",
    "ScriptedChatServer": "chat_server",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'bootcamp_core.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"bootcamp_core.testing.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
