"""The five hooks a bootcamp implements. Each receives ``register``, a callback that takes one component class."""

from __future__ import annotations

from collections.abc import Callable

import pluggy

PROJECT_NAME = "bootcamp"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
#: pluggy's own marker, so ``@hookimpl``, ``@hookimpl(tryfirst=True)`` and ``@hookimpl(specname=...)`` all work;
#: its overloads keep the decorated function's type.
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

#: The callback every hook receives: call it with one component class.
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
