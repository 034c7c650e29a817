"""The plugin loader: entry points of group ``bootcamp`` become plugins, one namespace at a time.

An entry point's name is its bootcamp's namespace and its target the bootcamp's ``hooks`` module. Finding plugins
reads package metadata only; a plugin is imported on the first lookup that needs it (``example/calculator`` imports
plugin ``example`` and no other), as hatch loads a third-party plugin only when a lookup asks for it. Listings of
everything (``ids(kind)``, ``namespaces()``) import every plugin. Each import and registration runs inside its own
``try``, so a broken plugin becomes one line (``Plugin "x" (bootcamp-x 1.2): what went wrong. How to fix.``) and
every other plugin keeps working; ``BOOTCAMP_STRICT_PLUGINS=1`` re-raises instead (our own test runs set it).

Environment:

- ``BOOTCAMP_LOAD_PLUGINS``: comma-separated namespaces or distribution names to load; set but empty loads none.
- ``BOOTCAMP_BLOCK_PLUGINS``: comma-separated namespaces or distribution names never imported.
- ``BOOTCAMP_STRICT_PLUGINS=1``: a broken plugin raises :class:`~bootcamp_core.PluginError`.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import os
import threading
from collections.abc import Iterable
from importlib import metadata
from typing import Any

import attrs
import pluggy

from bootcamp_core.plugin import hookspecs
from bootcamp_core.plugin.errors import DuplicateIdError, PluginError, UnknownIdError
from bootcamp_core.plugin.ids import (  # KINDS and the patterns are imported from here too, as before the split
    KINDS,
    NAME_PATTERN,  # noqa: F401
    NAMESPACE_PATTERN,  # noqa: F401
    ComponentInfo,
    IdTable,
    check_kind,
    check_unique,
    component_info,
    label,
    namespace_problem,
)
from bootcamp_core.plugin.instances import InstanceCache

logger = logging.getLogger("bootcamp_core")

ENTRY_POINT_GROUP = "bootcamp"
COMMANDS_GROUP = "bootcamp.commands"
LIST_COMMAND = "bootcamp plugins"
#: where a plugin declares the plugin API it was written for: ``[project.entry-points."bootcamp.api"]``, one entry
#: per namespace, ``example = "0.1"`` (the bootcamp-core release, major.minor, whose hooks and types it needs). Read
#: from metadata alone, like the plugin itself; a plugin that declares nothing is taken to fit any core.
API_GROUP = "bootcamp.api"
#: the plugin API this core provides: the release that last changed it (hookspecs, the component base classes)
PLUGIN_API = "0.1"

#: the states of a plugin in the registry's record
PENDING, LOADING, LOADED, FAILED = "pending", "loading", "loaded", "failed"


def strict_from_env() -> bool:
    """Whether ``BOOTCAMP_STRICT_PLUGINS`` asks broken plugins to raise."""
    return os.environ.get("BOOTCAMP_STRICT_PLUGINS", "").strip().lower() in {"1", "true", "yes", "on"}


@attrs.define(eq=False)
class PluginInfo:
    """One installed plugin as we recorded it (never read from pluggy's internals): where it came from, its state."""

    namespace: str
    distribution: str | None = None
    version: str | None = None
    module: str | None = None
    package: str | None = None
    components: dict[str, list[str]] = attrs.field(factory=dict)
    error: str | None = None
    #: pending (found in metadata, not imported), loading, loaded or failed
    state: str = PENDING
    #: the error is a duplicate namespace or id (DuplicateIdError), not another kind of breakage
    duplicate: bool = False
    #: the plugin API it declares it was written for (``bootcamp.api`` entry point), None when it declares none
    api: str | None = None
    entry_point: metadata.EntryPoint | None = attrs.field(default=None, repr=False)

    @property
    def label(self) -> str:
        if self.distribution:
            return f'Plugin "{self.namespace}" ({self.distribution} {self.version})'
        return f'Plugin "{self.namespace}"'

    @property
    def top_package(self) -> str | None:
        """The top-level package its entry point names (``bootcamp_example`` for ``bootcamp_example.hooks``)."""
        return self.module.split(":", 1)[0].split(".", 1)[0].strip() if self.module else None

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "api": self.api,
            "components": {kind: list(ids) for kind, ids in self.components.items() if ids},
            "error": self.error,
        }


# ------------------------------------------------------------------------------------ entry-point metadata
def _env_list(name: str) -> set[str] | None:
    value = os.environ.get(name)
    if value is None:
        return None
    return {item.strip() for item in value.split(",") if item.strip()}


def _selected(selection: set[str], info: PluginInfo) -> bool:
    names = {info.namespace}
    if info.distribution:
        names |= {info.distribution, info.distribution.replace("_", "-").lower()}
    return bool(names & selection)


def _discover() -> tuple[list[PluginInfo], list[str]]:
    """(plugins the environment allows, by namespace; blocked namespaces), from metadata alone.

    A bad namespace, or one claimed by two distributions, is found here, before anything is imported: those plugins
    come back failed (a namespace claimed twice fails for both claimants, with one message naming both).
    """
    allow = _env_list("BOOTCAMP_LOAD_PLUGINS")
    block = _env_list("BOOTCAMP_BLOCK_PLUGINS") or set()
    by_name: dict[str, list[PluginInfo]] = {}
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = entry_point.dist
        by_name.setdefault(entry_point.name, []).append(PluginInfo(
            entry_point.name, dist.name if dist else None, dist.version if dist else None, entry_point.value,
            entry_point=entry_point,
        ))
    plugins, blocked = [], []
    for namespace in sorted(by_name):
        claimants = by_name[namespace]
        if allow is not None and not any(_selected(allow, info) for info in claimants):
            continue
        if any(_selected(block, info) for info in claimants):
            blocked.append(namespace)
            continue
        if len(claimants) > 1:
            owners = " and ".join(f"{info.distribution} {info.version} ({info.module})" if info.distribution
                                  else str(info.module) for info in claimants)
            message = (f'Namespace "{namespace}" is claimed by {owners}. '
                       "Uninstall one of them, or rename one entry point in [project.entry-points.bootcamp].")
            for info in claimants:
                info.state, info.error, info.duplicate = FAILED, message, True
        elif (problem := namespace_problem(namespace)) is not None:
            claimants[0].state, claimants[0].error = FAILED, f"{claimants[0].label}: {problem}"
        elif (problem := api_problem(claimants[0])) is not None:
            claimants[0].state, claimants[0].error = FAILED, problem
        plugins += claimants
    return plugins, blocked


def _api_level(text: str) -> tuple[int, int] | None:
    major, dot, minor = text.strip().partition(".")
    return (int(major), int(minor)) if dot and major.isdigit() and minor.isdigit() else None


def api_problem(info: PluginInfo) -> str | None:
    """Records the plugin API ``info`` declares; one line when it needs a newer one than this core provides."""
    dist = info.entry_point.dist if info.entry_point is not None else None
    if dist is None:
        return None
    declared = [entry.value for entry in dist.entry_points if entry.group == API_GROUP and entry.name == info.namespace]
    if not declared:
        return None
    info.api = declared[0].strip()
    wanted = _api_level(info.api)
    if wanted is None:
        return (f'{info.label} declares plugin API "{info.api}" in [project.entry-points."{API_GROUP}"]: '
                'write the bootcamp-core release it was written for as MAJOR.MINOR, e.g. "0.1".')
    if wanted <= _api_level(PLUGIN_API):
        return None
    installed = metadata.version("bootcamp-core") if _has_core_metadata() else "?"
    return (f"{info.label} needs plugin API {info.api}, the installed bootcamp-core {installed} provides "
            f'{PLUGIN_API}: pip install --upgrade "bootcamp-core>={info.api}"')


def _has_core_metadata() -> bool:
    try:
        metadata.distribution("bootcamp-core")
    except metadata.PackageNotFoundError:
        return False
    return True


def installed_plugins() -> list[PluginInfo]:
    """Every plugin the environment allows, with distribution and version, from entry-point metadata alone.

    Nothing is imported: components are unknown (``state`` is ``pending``) unless the metadata itself is broken.
    """
    return _discover()[0]


# ------------------------------------------------------------------------------------------------ registry
class Registry:
    """Every component of every plugin, by kind and id; each plugin is imported by the first lookup that needs it."""

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        #: the one record of the plugins: every plugin seen, in order (a namespace claimed twice is two entries)
        self._plugins: list[PluginInfo] = []
        self._table = IdTable()
        self._instances = InstanceCache()
        # re-entrant: a plugin's hooks or a component's __init__ may look up other components while we load
        self._lock = threading.RLock()
        self._pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)

    # ----------------------------------------------------------------------------------------------- loading
    @classmethod
    def from_entry_points(cls, *, strict: bool | None = None) -> Registry:
        """Every installed plugin allowed by the environment, found from metadata; none is imported yet.

        A namespace claimed by two distributions, or two components of one kind with the same name, is a hard error
        (:class:`DuplicateIdError`, naming both) for whatever uses that namespace, and right away in strict mode;
        every other plugin keeps working.
        """
        registry = cls(strict=strict_from_env() if strict is None else strict)
        plugins, blocked = _discover()
        for namespace in blocked:
            registry._pm.set_blocked(namespace)  # tox's way: a blocked plugin can never register, not even by hand
        for info in plugins:
            registry._plugins.append(info)
            if info.state == FAILED:
                registry._fail(info, info.error or "", duplicate=info.duplicate)
        return registry

    def add_plugin(
        self,
        plugin: object,
        namespace: str,
        *,
        distribution: str | None = None,
        version: str | None = None,
        info: PluginInfo | None = None,
    ) -> PluginInfo:
        """Register a plugin object (usually a ``hooks`` module) under ``namespace`` now and collect its components."""
        module_name = getattr(plugin, "__name__", type(plugin).__name__)
        info = info or PluginInfo(namespace, distribution, version, module_name)
        with self._lock:
            if all(recorded is not info for recorded in self._plugins):
                self._plugins.append(info)
            return self._register(plugin, info)

    def load(self, namespace: str) -> PluginInfo | None:
        """Import plugin ``namespace`` unless it already is; its record (None when no plugin has that namespace)."""
        with self._lock:
            info = self._plugin(namespace)
            if info is not None and info.state == PENDING:
                self._import(info)
            return info

    def load_all(self) -> list[PluginInfo]:
        """Import every plugin not imported yet; every plugin's record, in order."""
        with self._lock:
            for info in list(self._plugins):
                if info.state == PENDING:
                    self._import(info)
            return list(self._plugins)

    def _plugin(self, namespace: str) -> PluginInfo | None:
        """The plugin that answers for ``namespace``: a working claimant first, else the failed one with its error."""
        claimants = [info for info in self._plugins if info.namespace == namespace]
        for state in (LOADED, PENDING, LOADING):
            for info in claimants:
                if info.state == state:
                    return info
        return claimants[0] if claimants else None

    def _import(self, info: PluginInfo) -> PluginInfo:
        info.state = LOADING  # a plugin that asks for the registry while it is imported must not import itself again
        try:
            assert info.entry_point is not None
            module = info.entry_point.load()
        except (Exception, SystemExit) as error:
            return self._fail(
                info,
                f"{info.label}: cannot import {info.module}: {type(error).__name__}: {error}. Reinstall it or install "
                f"what it needs (pip install --force-reinstall {info.distribution or info.module}).",
                cause=error,
            )
        return self._register(module, info)

    def _register(self, plugin: object, info: PluginInfo) -> PluginInfo:
        info.state = LOADING
        info.package = getattr(plugin, "__package__", None) or getattr(plugin, "__name__", None) or info.module
        try:
            components = self._collect(plugin, info)
        except PluginError as error:
            return self._fail(info, f"{info.label}: {error}", cause=error.__cause__,
                              duplicate=isinstance(error, DuplicateIdError))
        for kind in KINDS:
            info.components[kind] = [component.id for component in components if component.kind == kind]
        self._table.add(components)
        info.state = LOADED
        return info

    def _collect(self, plugin: object, info: PluginInfo) -> list[ComponentInfo]:
        """Register ``plugin`` with pluggy and ask its hooks, and only its hooks, for components (PluginError if not)."""
        namespace = info.namespace
        problem = namespace_problem(namespace)
        if problem is not None:
            raise PluginError(problem)
        owner = next((other for other in self._plugins if other.namespace == namespace and other is not info
                      and other.state != FAILED), None)
        if owner is not None:
            raise PluginError(f'namespace "{namespace}" is already used by {owner.label}. Rename one of them.')
        try:
            self._pm.register(plugin, name=namespace)
            self._pm.check_pending()  # a misspelled hook name fails loudly instead of registering nothing
            if not self._pm.get_hookcallers(plugin):
                raise PluginError(
                    f"{info.module} has no hook implementations. Decorate its hook functions with "
                    "@bootcamp_core.hookimpl and point the entry point at the hooks module."
                )
            # pluggy's public way to call one plugin's hooks: each component is attributed to the plugin that gave it
            others = [other for other in self._pm.get_plugins() if other is not plugin]
            components: list[ComponentInfo] = []
            for kind, (hook_name, _) in KINDS.items():
                caller = self._pm.subset_hook_caller(hook_name, remove_plugins=others)
                try:
                    caller(register=lambda cls, kind=kind: components.append(component_info(kind, cls, info)))
                except PluginError:
                    raise
                except Exception as error:
                    raise PluginError(f"{hook_name} raised {type(error).__name__}: {error}. "
                                      "Fix the hook or report it to the plugin's authors.") from error
            check_unique(components)
        except pluggy.PluginValidationError as error:
            self._unregister(plugin, namespace)
            raise PluginError(
                f"{error}. Hook names and arguments must match bootcamp_core.plugin.hookspecs exactly "
                f"(e.g. `def bootcamp_register_tools(register)`)."
            ) from error
        except ValueError as error:  # from register(): this very object is registered already, under another name
            raise PluginError(f"{error}. Uninstall the duplicate.") from error
        except PluginError:
            self._unregister(plugin, namespace)
            raise
        return components

    def _unregister(self, plugin: object, namespace: str) -> None:
        if self._pm.get_plugin(namespace) is plugin:  # older pluggy leaves a plugin that failed validation registered
            self._pm.unregister(name=namespace)

    def _fail(self, info: PluginInfo, message: str, *, cause: BaseException | None = None,
              duplicate: bool = False) -> PluginInfo:
        """Record that ``info`` is broken, as one line; the one place that raises in strict mode."""
        info.state, info.error, info.duplicate = FAILED, " ".join(message.split()), duplicate
        logger.warning("%s", info.error)
        if self.strict:
            raise (DuplicateIdError if duplicate else PluginError)(info.error) from cause
        return info

    # ---------------------------------------------------------------------------------------------- listings
    @property
    def entries(self) -> list[PluginInfo]:
        """Every plugin seen, imported, in order (two distributions claiming one namespace are two entries)."""
        return self.load_all()

    @property
    def plugins(self) -> dict[str, PluginInfo]:
        """Every plugin by namespace, imported."""
        self.load_all()
        return {namespace: info for namespace in self._namespaces() if (info := self._plugin(namespace))}

    @property
    def conflicts(self) -> dict[str, str]:
        """Namespace -> the duplicate-namespace or duplicate-id error that makes it unusable."""
        return {info.namespace: info.error for info in self.load_all() if info.duplicate and info.error}

    @property
    def errors(self) -> list[str]:
        """One line per plugin that did not load (every plugin is imported to find out)."""
        lines = [info.error for info in self.load_all() if info.error]
        return list(dict.fromkeys(lines))  # a namespace claimed twice is one problem

    def ids(self, kind: str, namespace: str | None = None) -> list[str]:
        """Sorted ids of ``kind``: of one namespace (importing only that plugin), else of every plugin."""
        check_kind(kind)
        if namespace is None:
            self.load_all()
        else:
            self.load(namespace)
        return self._table.ids(kind, namespace)

    def namespaces(self) -> list[str]:
        """Namespaces of plugins that loaded and register at least one generator (every plugin is imported)."""
        return sorted({info.namespace for info in self.load_all()
                       if info.state == LOADED and info.components.get("generator")})

    def _namespaces(self) -> list[str]:
        """Every namespace found, imported or not."""
        return sorted({info.namespace for info in self._plugins})

    # ------------------------------------------------------------------------------------------------ lookups
    def info(self, kind: str, ref: str | type, namespace: str | None = None) -> ComponentInfo:
        component = self._table.get(kind, self.resolve(kind, ref, namespace))
        assert component is not None  # resolve() returns registered ids only
        return component

    def get_class(self, kind: str, ref: str | type, namespace: str | None = None) -> type:
        return self.info(kind, ref, namespace).cls

    def resolve(self, kind: str, ref: str | type, namespace: str | None = None) -> str:
        """The id for ``ref``: an id, a name (within ``namespace``, or unique), a dotted import path or a class."""
        check_kind(kind)
        if isinstance(ref, type):
            return self._id_of_class(kind, ref, ref.__qualname__)
        if not isinstance(ref, str) or not ref:
            raise UnknownIdError(f"Expected a {label(kind)} id, got {ref!r}.")
        if "/" in ref:
            if self._table.get(kind, ref) is not None:  # registered, so its plugin is loaded: no lock on this path
                return ref
            self.load(ref.split("/", 1)[0])
            if self._table.get(kind, ref) is not None:
                return ref
            raise UnknownIdError(self._unknown_message(kind, ref))
        if namespace:
            self.load(namespace)
            if self._table.get(kind, f"{namespace}/{ref}") is not None:
                return f"{namespace}/{ref}"
        if "." in ref:
            return self._id_of_class(kind, _import_dotted(ref, kind), ref)
        if namespace:  # a bare name means this bootcamp's own component, never another bootcamp's
            raise UnknownIdError(self._unknown_message(kind, f"{namespace}/{ref}"))
        self.load_all()  # a bare name is unique among every plugin's names, or ambiguous
        owners = self._table.owners(kind, ref)
        if len(owners) == 1:
            return owners[0]
        if len(owners) > 1:
            raise UnknownIdError(
                f'{label(kind).capitalize()} name "{ref}" is ambiguous: {", ".join(owners)}. Use the full id.'
            )
        raise UnknownIdError(self._unknown_message(kind, ref))

    def _id_of_class(self, kind: str, cls: type, spelled: str) -> str:
        found = self._table.id_of_class(kind, cls)
        if found is None:  # most likely registered by the plugin that ships the class's package: import that first
            package = cls.__module__.split(".", 1)[0]
            for info in list(self._plugins):
                if info.top_package == package:
                    self.load(info.namespace)
            found = self._table.id_of_class(kind, cls)
        if found is None:
            self.load_all()
            found = self._table.id_of_class(kind, cls)
        if found is None:
            raise UnknownIdError(
                f"{spelled} is not a registered {label(kind)}. Register it in its plugin's "
                f"{KINDS[kind][0]} hook, or use one of the ids listed by `{LIST_COMMAND}`."
            )
        return found

    def _unknown_message(self, kind: str, ref: str) -> str:
        message = f'Unknown {label(kind)} "{ref}".'
        close = self._table.close_matches(kind, ref)
        if close:
            message += " Did you mean " + " or ".join(f'"{match}"' for match in close) + "?"
        namespace = ref.split("/", 1)[0] if "/" in ref else None
        plugin = self._plugin(namespace) if namespace else None
        if plugin is not None and plugin.error:
            message += f" ({plugin.error})" if plugin.duplicate else f" (It did not load: {plugin.error})"
        elif namespace and plugin is None:
            near = difflib.get_close_matches(namespace, self._namespaces(), n=1, cutoff=0.6)
            message += f' No installed bootcamp has namespace "{namespace}"'
            message += f' (did you mean "{near[0]}"?).' if near else "."
        return message + f" Run `{LIST_COMMAND}` to list installed bootcamps and their components."

    def component(self, kind: str, ref: str | type, config: dict | None = None, namespace: str | None = None) -> Any:
        """The shared instance for (id, config): built once per process, reused by every episode."""
        component = self.info(kind, ref, namespace)
        return self._instances.get(kind, component.id, dict(config or {}), component.cls)

    def namespace_plugin(self, namespace: str) -> PluginInfo:
        """The loaded plugin of ``namespace`` (imported now if need be); a clear error when it is unknown or broken."""
        info = self.load(namespace)
        if info is None:
            close = difflib.get_close_matches(namespace, self._namespaces(), n=3, cutoff=0.6)
            hint = (" Did you mean " + " or ".join(f'"{match}"' for match in close) + "?") if close else ""
            raise UnknownIdError(
                f'No installed bootcamp has namespace "{namespace}".{hint} '
                f"Run `{LIST_COMMAND}` to list installed bootcamps."
            )
        if info.error:
            raise (DuplicateIdError if info.duplicate else PluginError)(info.error)
        return info

    def versions_for(self, component_ids: Iterable[tuple[str, str]]) -> dict[str, str]:
        """{distribution: version} of the plugins behind the given (kind, id) pairs."""
        versions: dict[str, str] = {}
        for kind, component_id in component_ids:
            plugin = self.info(kind, component_id).plugin
            if plugin.distribution:
                versions[plugin.distribution] = plugin.version or "unknown"
        return dict(sorted(versions.items()))


def _import_dotted(path: str, kind: str) -> type:
    module_name, _, attribute = path.rpartition(".")
    try:
        value = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as error:
        raise UnknownIdError(
            f"Cannot import {label(kind)} {path}: {error}. Use an installed id (`{LIST_COMMAND}` lists them)."
        ) from None
    if not isinstance(value, type):
        raise UnknownIdError(f"{path} is not a class.")
    return value


# ------------------------------------------------------------------------------------- the process's registry
_registry: Registry | None = None
_registry_lock = threading.Lock()


def get_registry() -> Registry:
    """The process-wide registry, found on first use (each plugin imported when a lookup first needs it)."""
    global _registry
    with _registry_lock:
        if _registry is None:
            _registry = Registry.from_entry_points()
        return _registry


def reset_registry() -> None:
    """Forget the plugins found and loaded (the next :func:`get_registry` finds them again)."""
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
    """Every installed plugin, imported in this process, with its components or its error; never raises for one.

    :func:`bootcamp_core.plugin.check.check_plugins` does the same with each plugin in its own subprocess.
    """
    return Registry.from_entry_points(strict=False).entries
