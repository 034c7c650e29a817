"""The id table: every registered component by kind and id (``<namespace>/<name>``), and the class behind each id."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from bootcamp_core.plugin.components import Interaction, ReferenceAgent, Reward, TaskGenerator, Tool
from bootcamp_core.plugin.errors import DuplicateIdError, PluginError

if TYPE_CHECKING:
    from bootcamp_core.plugin.loader import PluginInfo

NAMESPACE_PATTERN = re.compile(r"[a-z0-9_]+\Z")
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")

#: kind -> (hook name, base class)
KINDS: dict[str, tuple[str, type]] = {
    "generator": ("bootcamp_register_task_generators", TaskGenerator),
    "tool": ("bootcamp_register_tools", Tool),
    "interaction": ("bootcamp_register_interactions", Interaction),
    "reward": ("bootcamp_register_rewards", Reward),
    "reference_agent": ("bootcamp_register_reference_agents", ReferenceAgent),
}


@attrs.frozen
class ComponentInfo:
    """One registered component: its kind, id, class and the plugin that registered it."""

    kind: str
    id: str
    cls: type
    plugin: PluginInfo

    @property
    def namespace(self) -> str:
        return self.plugin.namespace


def check_kind(kind: str) -> str:
    """``kind`` itself, or a ValueError naming the kinds there are."""
    if kind not in KINDS:
        raise ValueError(f"Unknown component kind {kind!r}; expected one of {', '.join(KINDS)}")
    return kind


def label(kind: str) -> str:
    """The kind as the user reads it ("reference agent")."""
    return kind.replace("_", " ")


def namespace_problem(namespace: str) -> str | None:
    """What is wrong with an entry-point name as a namespace, and how to fix it (None when nothing is)."""
    if NAMESPACE_PATTERN.match(namespace):
        return None
    return (f'entry-point name "{namespace}" is not a valid namespace (lowercase letters, digits, "_"). '
            "Rename the entry point in [project.entry-points.bootcamp].")


def component_info(kind: str, cls: Any, plugin: PluginInfo) -> ComponentInfo:
    """What ``register(cls)`` in ``plugin``'s hook for ``kind`` adds; a PluginError when ``cls`` breaks the contract."""
    hook_name, base = KINDS[kind]
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise PluginError(
            f"register() in {hook_name} got {cls!r}, which is not a {base.__name__} subclass. "
            f"Pass the class itself, a subclass of bootcamp_core.{base.__name__}."
        )
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise PluginError(
            f"{base.__name__} class `{cls.__qualname__}` has name {name!r}. "
            "Set the class attribute `name` to 1-64 characters of letters, digits, '_' or '-'."
        )
    return ComponentInfo(kind, f"{plugin.namespace}/{name}", cls, plugin)


def check_unique(components: Iterable[ComponentInfo]) -> None:
    """A DuplicateIdError naming both classes when two components of one kind share a name (hatch's wording)."""
    seen: dict[tuple[str, str], ComponentInfo] = {}
    for component in components:
        first = seen.setdefault((component.kind, component.id), component)
        if first is not component:
            raise DuplicateIdError(
                f"{component.kind} class `{component.cls.__qualname__}` defines its name as `{component.cls.name}` "
                f"but that name is already used by `{first.cls.__qualname__}`. "
                "Give each component of one kind its own name."
            )


class IdTable:
    """Components of the plugins loaded so far, by kind and id."""

    def __init__(self) -> None:
        self._by_id: dict[str, dict[str, ComponentInfo]] = {kind: {} for kind in KINDS}
        self._by_class: dict[tuple[str, type], str] = {}

    def add(self, components: Iterable[ComponentInfo]) -> None:
        for component in components:
            self._by_id[component.kind][component.id] = component
            self._by_class[(component.kind, component.cls)] = component.id

    def get(self, kind: str, component_id: str) -> ComponentInfo | None:
        return self._by_id[kind].get(component_id)

    def id_of_class(self, kind: str, cls: type) -> str | None:
        return self._by_class.get((kind, cls))

    def ids(self, kind: str, namespace: str | None = None) -> list[str]:
        table = self._by_id[kind]
        return sorted(table if namespace is None else (cid for cid in table if table[cid].namespace == namespace))

    def owners(self, kind: str, name: str) -> list[str]:
        """Ids of every component of ``kind`` whose name is ``name``, whatever its namespace."""
        return [component_id for component_id in self._by_id[kind] if component_id.split("/", 1)[1] == name]

    def close_matches(self, kind: str, ref: str) -> list[str]:
        """Up to three ids or bare names spelled like ``ref``."""
        table = self._by_id[kind]
        candidates = list(table) + sorted({component_id.split("/", 1)[1] for component_id in table})
        return difflib.get_close_matches(ref, candidates, n=3, cutoff=0.6)
