"""The five hooks a bootcamp implements. Each receives ``register``, a callback that takes one component class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pluggy

PROJECT_NAME = "bootcamp"

F = TypeVar("F", bound=Callable[..., Any])

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
_hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


def hookimpl(function: F) -> F:
    """Mark a function in a plugin's ``hooks`` module as a hook implementation (keeps the function's type)."""
    return _hookimpl(function)


Register = Callable[[type], None]


@hookspec
def bootcamp_register_task_generators(register: Register) -> None:
    """Register :class:`~bootcamp_core.TaskGenerator` subclasses."""


@hookspec
def bootcamp_register_tools(register: Register) -> None:
    """Register :class:`~bootcamp_core.Tool` subclasses."""


@hookspec
def bootcamp_register_interactions(register: Register) -> None:
    """Register :class:`~bootcamp_core.Interaction` subclasses."""


@hookspec
def bootcamp_register_rewards(register: Register) -> None:
    """Register :class:`~bootcamp_core.Reward` subclasses."""


@hookspec
def bootcamp_register_reference_agents(register: Register) -> None:
    """Register :class:`~bootcamp_core.ReferenceAgent` subclasses (optional)."""
