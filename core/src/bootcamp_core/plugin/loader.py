"""Plugin discovery and the component registry.

Plugins are entry points of group ``bootcamp`` whose name is the bootcamp's namespace and whose target is its
``hooks`` module. Nothing is imported until a command asks for the registry; each plugin is imported, validated and
asked for its components inside its own ``try``, so a broken plugin becomes one line in ``errors`` and every other
plugin keeps working. ``BOOTCAMP_STRICT_PLUGINS=1`` re-raises instead (our own test runs set it).

Environment:

- ``BOOTCAMP_LOAD_PLUGINS``: comma-separated namespaces or distribution names to load; set but empty loads none.
- ``BOOTCAMP_BLOCK_PLUGINS``: comma-separated namespaces or distribution names never imported.
- ``BOOTCAMP_STRICT_PLUGINS=1``: a broken plugin raises :class:`~bootcamp_core.PluginError`.
"""

from __future__ import annotations

import difflib
import importlib
import json
import logging
import os
import re
import threading
from collections.abc import Iterable
from importlib import metadata
from typing import Any

import attrs
import pluggy

from bootcamp_core.plugin import hookspecs
from bootcamp_core.plugin.errors import DuplicateIdError, PluginError, UnknownIdError
from bootcamp_core.plugin.components import Interaction, ReferenceAgent, Reward, TaskGenerator, Tool

logger = logging.getLogger("bootcamp_core")

ENTRY_POINT_GROUP = "bootcamp"
COMMANDS_GROUP = "bootcamp.commands"
LIST_COMMAND = "bootcamp plugins"
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


def _env_list(name: str) -> set[str] | None:
    value = os.environ.get(name)
    if value is None:
        return None
    return {item.strip() for item in value.split(",") if item.strip()}


def strict_from_env() -> bool:
    return os.environ.get("BOOTCAMP_STRICT_PLUGINS", "").strip().lower() in {"1", "true", "yes", "on"}


@attrs.define
class PluginInfo:
    """What we know about one installed plugin, recorded by us at load time (never read from pluggy internals)."""

    namespace: str
    distribution: str | None = None
    version: str | None = None
    module: str | None = None
    package: str | None = None
    components: dict[str, list[str]] = attrs.field(factory=dict)
    error: str | None = None

    @property
    def label(self) -> str:
        if self.distribution:
            return f'Plugin "{self.namespace}" ({self.distribution} {self.version})'
        return f'Plugin "{self.namespace}"'

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "distribution": self.distribution,
            "version": self.version,
            "components": {kind: list(ids) for kind, ids in self.components.items() if ids},
            "error": self.error,
        }


@attrs.frozen
class ComponentInfo:
    kind: str
    id: str
    cls: type
    plugin: PluginInfo

    @property
    def namespace(self) -> str:
        return self.plugin.namespace


class _Failure(Exception):
    """A plugin broke the contract; carries the one-line reason (what went wrong. how to fix)."""

    def __init__(self, message: str, *, duplicate: bool = False) -> None:
        super().__init__(message)
        self.duplicate = duplicate


def _matches(selection: set[str], namespace: str, distribution: str | None) -> bool:
    names = {namespace}
    if distribution:
        names |= {distribution, distribution.replace("_", "-").lower()}
    return bool(names & selection)


class Registry:
    """Every component of every loaded plugin, by kind and id, with the plugin it came from."""

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        self.plugins: dict[str, PluginInfo] = {}
        self._components: dict[str, dict[str, ComponentInfo]] = {kind: {} for kind in KINDS}
        self._ids_by_class: dict[tuple[str, type], str] = {}
        self._instances: dict[tuple[str, str, str], Any] = {}
        #: namespace -> the duplicate-namespace or duplicate-id error that makes it unusable
        self.conflicts: dict[str, str] = {}
        #: every plugin seen, in load order (two distributions claiming one namespace are two entries)
        self.entries: list[PluginInfo] = []
        self._lock = threading.Lock()
        self._pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)

    # ----------------------------------------------------------------------------------------------- loading
    @classmethod
    def from_entry_points(cls, *, strict: bool | None = None) -> Registry:
        """Load every installed plugin allowed by the environment.

        A namespace claimed by two distributions, or two components of one kind with the same name, is a hard error
        (:class:`DuplicateIdError`, naming both) for whatever uses that namespace, and right away in strict mode;
        every other plugin keeps working.
        """
        registry = cls(strict=strict_from_env() if strict is None else strict)
        allow = _env_list("BOOTCAMP_LOAD_PLUGINS")
        block = _env_list("BOOTCAMP_BLOCK_PLUGINS") or set()
        by_name: dict[str, list[metadata.EntryPoint]] = {}
        for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
            by_name.setdefault(entry_point.name, []).append(entry_point)
        for namespace in sorted(by_name):
            entry_points = by_name[namespace]
            infos = [_info_from(entry_point) for entry_point in entry_points]
            if allow is not None and not any(_matches(allow, namespace, info.distribution) for info in infos):
                continue
            if any(_matches(block, namespace, info.distribution) for info in infos):
                registry._pm.set_blocked(namespace)
                continue
            if len(entry_points) > 1:
                owners = " and ".join(f"{_dist_label(ep)} ({ep.value})" for ep in entry_points)
                message = (
                    f'Namespace "{namespace}" is claimed by {owners}. '
                    "Uninstall one of them, or rename one entry point in [project.entry-points.bootcamp]."
                )
                for info in infos:
                    registry._record(info, message, raise_strict=False)
                registry.conflicts[namespace] = message
                if registry.strict:
                    raise DuplicateIdError(message)
                continue
            registry._load_entry_point(entry_points[0], infos[0])
        return registry

    def _record(self, info: PluginInfo, error: str | None, *, raise_strict: bool = True) -> PluginInfo:
        info.error = " ".join(error.split()) if error else None  # one line, whatever the exception looked like
        self.plugins[info.namespace] = info
        self.entries.append(info)
        if info.error:
            logger.warning("%s", info.error)
            if self.strict and raise_strict:
                raise PluginError(info.error)
        return info

    def _load_entry_point(self, entry_point: metadata.EntryPoint, info: PluginInfo) -> None:
        try:
            module = entry_point.load()
        except Exception as error:
            raised = PluginError(
                f"{info.label}: cannot import {entry_point.value}: {type(error).__name__}: {error}. "
                f"Reinstall it or install what it needs (pip install --force-reinstall {info.distribution or info.module})."
            )
            self._record(info, str(raised), raise_strict=False)
            if self.strict:
                raise raised from error
            return
        self.add_plugin(module, info.namespace, distribution=info.distribution, version=info.version, info=info)

    def add_plugin(
        self,
        plugin: object,
        namespace: str,
        *,
        distribution: str | None = None,
        version: str | None = None,
        info: PluginInfo | None = None,
    ) -> PluginInfo:
        """Register a plugin object (usually a ``hooks`` module) under ``namespace`` and collect its components."""
        module_name = getattr(plugin, "__name__", type(plugin).__name__)
        info = info or PluginInfo(namespace, distribution, version, module_name)
        info.package = getattr(plugin, "__package__", None) or module_name
        try:
            self._register(plugin, info)
        except _Failure as failure:
            self._record(info, f"{info.label}: {failure}", raise_strict=False)
            if failure.duplicate:
                self.conflicts[info.namespace] = info.error
            if self.strict:
                raise (DuplicateIdError if failure.duplicate else PluginError)(info.error) from failure.__cause__
            return info
        return self._record(info, None)

    def _register(self, plugin: object, info: PluginInfo) -> None:
        namespace = info.namespace
        if not NAMESPACE_PATTERN.match(namespace):
            raise _Failure(
                f'entry-point name "{namespace}" is not a valid namespace (lowercase letters, digits, "_"). '
                "Rename the entry point in [project.entry-points.bootcamp]."
            )
        if namespace in self.plugins and self.plugins[namespace].error is None:
            raise _Failure(
                f'namespace "{namespace}" is already used by {self.plugins[namespace].label}. Rename one of them.'
            )
        try:
            self._pm.register(plugin, name=namespace)
            self._pm.check_pending()
        except pluggy.PluginValidationError as error:
            self._pm.unregister(name=namespace)
            raise _Failure(
                f"{error}. Hook names and arguments must match bootcamp_core.plugin.hookspecs exactly "
                f"(e.g. `def bootcamp_register_tools(register)`)."
            ) from error
        except ValueError as error:
            raise _Failure(f"{error}. Uninstall the duplicate.") from error
        if not self._pm.get_hookcallers(plugin):
            self._pm.unregister(name=namespace)
            raise _Failure(
                f"{info.module} has no hook implementations. Decorate its hook functions with "
                "@bootcamp_core.hookimpl and point the entry point at the hooks module."
            )
        others = [p for p in self._pm.get_plugins() if p is not plugin]
        collected: dict[str, list[ComponentInfo]] = {kind: [] for kind in KINDS}
        for kind, (hook_name, base) in KINDS.items():
            caller = self._pm.subset_hook_caller(hook_name, remove_plugins=others)
            try:
                caller(register=lambda cls, kind=kind, base=base: collected[kind].append(
                    self._component_info(kind, base, cls, info)))
            except _Failure:
                self._pm.unregister(name=namespace)
                raise
            except Exception as error:
                self._pm.unregister(name=namespace)
                raise _Failure(
                    f"{hook_name} raised {type(error).__name__}: {error}. Fix the hook or report it to the plugin's authors."
                ) from error
        for kind, components in collected.items():
            seen: dict[str, ComponentInfo] = {}
            for component in components:
                if component.id in seen:
                    self._pm.unregister(name=namespace)
                    raise _Failure(
                        f"{kind} class `{component.cls.__qualname__}` defines its name as `{component.cls.name}` "
                        f"but that name is already used by `{seen[component.id].cls.__qualname__}`. "
                        "Give each component of one kind its own name.",
                        duplicate=True,
                    )
                seen[component.id] = component
        for kind, components in collected.items():
            info.components[kind] = [component.id for component in components]
            for component in components:
                self._components[kind][component.id] = component
                self._ids_by_class[(kind, component.cls)] = component.id

    def _component_info(self, kind: str, base: type, cls: Any, info: PluginInfo) -> ComponentInfo:
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise _Failure(
                f"register() in {KINDS[kind][0]} got {cls!r}, which is not a {base.__name__} subclass. "
                f"Pass the class itself, a subclass of bootcamp_core.{base.__name__}."
            )
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not NAME_PATTERN.match(name):
            raise _Failure(
                f"{base.__name__} class `{cls.__qualname__}` has name {name!r}. "
                "Set the class attribute `name` to 1-64 characters of letters, digits, '_' or '-'."
            )
        return ComponentInfo(kind, f"{info.namespace}/{name}", cls, info)

    # ------------------------------------------------------------------------------------------------ lookups
    @property
    def errors(self) -> list[str]:
        """One line per plugin that did not load."""
        return [info.error for info in self.plugins.values() if info.error]

    def ids(self, kind: str) -> list[str]:
        return sorted(self._components[_check_kind(kind)])

    def info(self, kind: str, ref: str | type, namespace: str | None = None) -> ComponentInfo:
        return self._components[kind][self.resolve(kind, ref, namespace)]

    def get_class(self, kind: str, ref: str | type, namespace: str | None = None) -> type:
        return self.info(kind, ref, namespace).cls

    def resolve(self, kind: str, ref: str | type, namespace: str | None = None) -> str:
        """The id for ``ref``: an id, a name (within ``namespace``, or unique), a dotted import path or a class."""
        table = self._components[_check_kind(kind)]
        if isinstance(ref, type):
            return self._id_of_class(kind, ref, ref.__qualname__)
        if not isinstance(ref, str) or not ref:
            raise UnknownIdError(f"Expected a {_label(kind)} id, got {ref!r}.")
        if ref in table:
            return ref
        if "/" not in ref:
            if namespace and f"{namespace}/{ref}" in table:
                return f"{namespace}/{ref}"
            if "." in ref:
                return self._id_of_class(kind, _import_dotted(ref, kind), ref)
            if namespace:  # a bare name means this bootcamp's own component, never another bootcamp's
                raise UnknownIdError(self._unknown_message(kind, f"{namespace}/{ref}"))
            owners = [component_id for component_id in table if component_id.split("/", 1)[1] == ref]
            if len(owners) == 1:
                return owners[0]
            if len(owners) > 1:
                raise UnknownIdError(
                    f'{_label(kind).capitalize()} name "{ref}" is ambiguous: {", ".join(owners)}. Use the full id.'
                )
        raise UnknownIdError(self._unknown_message(kind, ref))

    def _id_of_class(self, kind: str, cls: type, spelled: str) -> str:
        try:
            return self._ids_by_class[(kind, cls)]
        except KeyError:
            raise UnknownIdError(
                f'{spelled} is not a registered {_label(kind)}. Register it in its plugin\'s '
                f"{KINDS[kind][0]} hook, or use one of the ids listed by `{LIST_COMMAND}`."
            ) from None

    def _unknown_message(self, kind: str, ref: str) -> str:
        table = self._components[kind]
        candidates = list(table) + sorted({component_id.split("/", 1)[1] for component_id in table})
        close = difflib.get_close_matches(ref, candidates, n=3, cutoff=0.6)
        message = f'Unknown {_label(kind)} "{ref}".'
        if close:
            message += " Did you mean " + " or ".join(f'"{match}"' for match in close) + "?"
        namespace = ref.split("/", 1)[0] if "/" in ref else None
        if namespace in self.conflicts:
            message += f" ({self.conflicts[namespace]})"
        elif namespace in self.plugins and self.plugins[namespace].error:
            message += f" (It did not load: {self.plugins[namespace].error})"
        return message + f" Run `{LIST_COMMAND}` to list installed bootcamps and their components."

    def component(self, kind: str, ref: str | type, config: dict | None = None, namespace: str | None = None) -> Any:
        """The shared instance for (id, config): built once per process, reused by every episode."""
        component_id = self.resolve(kind, ref, namespace)
        config = dict(config or {})
        key = (kind, component_id, _config_key(config) if config else "")
        with self._lock:
            instance = self._instances.get(key)
            if instance is None:
                instance = self._components[kind][component_id].cls(**config)
                self._instances[key] = instance
        return instance

    def namespace_plugin(self, namespace: str) -> PluginInfo:
        info = self.plugins.get(namespace)
        if info is None:
            close = difflib.get_close_matches(namespace, list(self.plugins), n=3, cutoff=0.6)
            hint = (" Did you mean " + " or ".join(f'"{match}"' for match in close) + "?") if close else ""
            raise UnknownIdError(
                f'No installed bootcamp has namespace "{namespace}".{hint} '
                f"Run `{LIST_COMMAND}` to list installed bootcamps."
            )
        if namespace in self.conflicts:
            raise DuplicateIdError(self.conflicts[namespace])
        if info.error:
            raise PluginError(info.error)
        return info

    def namespaces(self) -> list[str]:
        """Namespaces of plugins that loaded and register at least one generator."""
        return sorted(ns for ns, info in self.plugins.items() if not info.error and info.components.get("generator"))

    def versions_for(self, component_ids: Iterable[tuple[str, str]]) -> dict[str, str]:
        """{distribution: version} of the plugins behind the given (kind, id) pairs."""
        versions: dict[str, str] = {}
        for kind, component_id in component_ids:
            plugin = self._components[kind][component_id].plugin
            if plugin.distribution:
                versions[plugin.distribution] = plugin.version or "unknown"
        return dict(sorted(versions.items()))


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"Unknown component kind {kind!r}; expected one of {', '.join(KINDS)}")
    return kind


def _label(kind: str) -> str:
    return kind.replace("_", " ")


def _config_key(config: dict) -> str:
    try:
        return json.dumps(config, sort_keys=True, default=repr)
    except TypeError:  # non-string keys
        return repr(sorted(config.items(), key=repr))


def _import_dotted(path: str, kind: str) -> type:
    module_name, _, attribute = path.rpartition(".")
    try:
        value = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as error:
        raise UnknownIdError(
            f"Cannot import {_label(kind)} {path}: {error}. Use an installed id (`{LIST_COMMAND}` lists them)."
        ) from None
    if not isinstance(value, type):
        raise UnknownIdError(f"{path} is not a class.")
    return value


def _dist_label(entry_point: metadata.EntryPoint) -> str:
    dist = entry_point.dist
    return f"{dist.name} {dist.version}" if dist else entry_point.value


def _info_from(entry_point: metadata.EntryPoint) -> PluginInfo:
    dist = entry_point.dist
    return PluginInfo(
        namespace=entry_point.name,
        distribution=dist.name if dist else None,
        version=dist.version if dist else None,
        module=entry_point.value,
    )


_registry: Registry | None = None
_registry_lock = threading.Lock()


def get_registry() -> Registry:
    """The process-wide registry, loaded on first use."""
    global _registry
    with _registry_lock:
        if _registry is None:
            _registry = Registry.from_entry_points()
        return _registry


def reset_registry() -> None:
    """Forget the loaded plugins (the next :func:`get_registry` reloads them)."""
    global _registry
    with _registry_lock:
        _registry = None


def plugin_commands() -> dict[str, metadata.EntryPoint]:
    """Subcommands contributed through the ``bootcamp.commands`` group; nothing is imported."""
    commands: dict[str, metadata.EntryPoint] = {}
    for entry_point in metadata.entry_points(group=COMMANDS_GROUP):
        commands.setdefault(entry_point.name, entry_point)
    return commands


def list_plugins() -> list[PluginInfo]:
    """Every installed plugin with its components or its error; never raises for a broken plugin."""
    return list(Registry.from_entry_points(strict=False).entries)
