"""Instruction configs in the original YAML format, tool / interaction config files and batch registries.

An instruction config::

    instruction_generators:
      level_1:                      # group name: becomes extra_info.generator_name
        config: {min_value: 100}    # the generator's keyword config (or a path to a YAML/JSON file of it)
        generation_ratio: 0.5       # normalised over all groups; must be > 0
        class_name: example/arithmetic       # optional: overrides global_config.class_name for this group
        tool_config_path: tools.yaml         # optional: which tools the records name
        interaction_config_path: inter.yaml  # optional: which interaction the records name
    global_config:
      class_name: example/arithmetic   # generator id, name within the bootcamp, or dotted import path
      default_seed: 42
      default_split_samples: "train:1000,test:100"
      shuffle: false
      gen_parquet: false

Relative paths resolve against the YAML file's folder, then the working directory. Unknown keys warn and are ignored.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from bootcamp_core.plugin.errors import ConfigError

logger = logging.getLogger("bootcamp_core")

#: The seed used when neither the config, the registry line nor ``--seed`` gives one.
DEFAULT_SEED = 42
#: The split sizes used when neither the config, the registry line nor ``--split-samples`` gives them.
DEFAULT_SPLIT_SAMPLES = "train:1000,test:100"

GROUP_KEYS = {"config", "generation_ratio", "class_name", "tool_config_path", "interaction_config_path"}
GLOBAL_KEYS = {"class_name", "default_seed", "default_split_samples", "shuffle", "gen_parquet"}
TOP_KEYS = {"instruction_generators", "global_config"}


def read_config_text(path: Path, missing: str | None = None) -> str:
    """The UTF-8 text of a config file; a missing, unreadable or non-UTF-8 file is one ConfigError naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(missing or f"{path}: no such file") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset "
                          f"{error.start})") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read ({error.strerror})") from None


def load_yaml(path: str | os.PathLike) -> Any:
    """Parse a YAML file; a syntax error names the file, line and column."""
    path = Path(path)
    text = read_config_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        context = ""
        if error.context and error.context_mark and error.context_mark is not mark:
            context = f" ({error.context}, which starts at line {error.context_mark.line + 1})"
        raise ConfigError(f"{where}: broken YAML: {error.problem or error.context}{context}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: broken YAML: {error}") from None


def resolve_path(value: str | os.PathLike, base: Path | None) -> Path:
    """A path from a config file: absolute as is; relative against the file's folder, then the working directory."""
    path = Path(os.path.expanduser(str(value)))
    if path.is_absolute():
        return path
    if base is not None and (base / path).exists():
        return base / path
    if path.exists():
        return path.resolve()
    return (base / path) if base is not None else path


def _warn_unknown(mapping: Mapping, known: set[str], where: str) -> None:
    for key in mapping:
        if key not in known:
            logger.warning("%s: unknown key %r ignored (known: %s)", where, key, ", ".join(sorted(known)))


def parse_split_samples(value: str | Mapping[str, Any]) -> dict[str, int]:
    """``"train:1000,test:100"`` (or a mapping) → ``{"train": 1000, "test": 100}``, in the order given."""
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, str):
        items = []
        for part in value.split(","):
            if not part.strip():
                continue
            name, sep, count = part.partition(":")
            if not sep:
                raise ConfigError(
                    f'split samples "{value}": "{part.strip()}" has no count. Write split:count pairs, '
                    'e.g. "train:1000,test:100"'
                )
            items.append((name.strip(), count.strip()))
    else:
        raise ConfigError(f'split samples must be a string like "train:1000,test:100", got {value!r}')
    splits: dict[str, int] = {}
    for name, count in items:
        if not name or not str(name).replace("_", "").replace("-", "").isalnum():
            raise ConfigError(f'split samples "{value}": bad split name {name!r} (letters, digits, "_", "-")')
        try:
            if isinstance(count, bool) or (isinstance(count, float) and not count.is_integer()):
                raise ValueError(count)  # int() would silently make True 1 and 2.5 2
            number = int(count)
        except (TypeError, ValueError):
            raise ConfigError(f'split samples "{value}": count {count!r} of split "{name}" is not an integer') from None
        if number < 0:
            raise ConfigError(f'split samples "{value}": count of split "{name}" is negative')
        if name in splits:
            raise ConfigError(f'split samples "{value}": split "{name}" is given twice')
        splits[name] = number
    if not splits:
        raise ConfigError(f'split samples "{value}": no splits. Write e.g. "train:1000,test:100"')
    return splits


def allocate(total: int, weights: list[float]) -> list[int]:
    """Split ``total`` into integer counts proportional to ``weights`` that sum exactly to ``total``."""
    weight_sum = sum(weights)
    exact = [total * weight / weight_sum for weight in weights]
    counts = [int(value) for value in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


def _as_bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "1", "false", "no", "0"}:
        return value.strip().lower() in {"true", "yes", "1"}
    raise ConfigError(f"{where}: expected true or false, got {value!r}")


@attrs.frozen
class GroupConfig:
    """One instruction-config group: a generator with its config and share of every split."""

    name: str
    config: dict = attrs.field(factory=dict, eq=False)
    ratio: float = 1.0
    class_name: str | None = None
    tool_config_path: Path | None = None
    interaction_config_path: Path | None = None


@attrs.frozen
class InstructionConfig:
    """A parsed instruction config with the CLI's overrides applied: everything ``generate`` needs."""

    name: str
    groups: tuple[GroupConfig, ...]
    class_name: str | None = None
    seed: int = DEFAULT_SEED
    split_samples: dict[str, int] = attrs.field(factory=lambda: parse_split_samples(DEFAULT_SPLIT_SAMPLES))
    shuffle: bool = False
    gen_parquet: bool = False
    namespace: str | None = None  # where bare names resolve (``--bootcamp``); None: anywhere, if unique
    path: Path | None = None
    tool_config_path: Path | None = None
    interaction_config_path: Path | None = None
    no_tool: bool = False
    no_interaction: bool = False
    #: Why a batch-registry line gave no config; ``generate_many`` reports it as this config's failure.
    error: str | None = None


def config_stem(path: Path) -> str:
    """``foo_instruction_config.yaml`` → ``foo`` (the output file name of a config)."""
    stem = path.name.split(".", 1)[0]
    for suffix in ("_instruction_config", "-instruction-config", "_instruction", "_config"):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


def parse_instruction_config(
    data: Any,
    *,
    path: Path | None = None,
    name: str | None = None,
    namespace: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> InstructionConfig:
    """Build an :class:`InstructionConfig` from parsed YAML; ``overrides`` are CLI values that win over the file.

    ``overrides`` keys: ``class_name``, ``seed``, ``split_samples``, ``shuffle``, ``gen_parquet``,
    ``global_config`` (a mapping merged into ``global_config``), ``tool_config_path``, ``interaction_config_path``,
    ``no_tool``, ``no_interaction``. ``None`` values are ignored.
    """
    where = str(path) if path else "instruction config"
    base = path.parent if path else None
    overrides = {key: value for key, value in (overrides or {}).items() if value is not None}
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping with instruction_generators and global_config")
    _warn_unknown(data, TOP_KEYS, where)
    global_config = data.get("global_config") or {}
    if not isinstance(global_config, Mapping):
        raise ConfigError(f"{where}: global_config must be a mapping")
    global_config = dict(global_config)
    extra_global = overrides.get("global_config") or {}
    if not isinstance(extra_global, Mapping):
        raise ConfigError(f"overrides: global_config must be a mapping, got {extra_global!r}", field="global_config")
    global_config.update(extra_global)
    _warn_unknown(global_config, GLOBAL_KEYS, f"{where}: global_config")

    raw_groups = data.get("instruction_generators")
    if raw_groups is None:
        raw_groups = {}
    if not isinstance(raw_groups, Mapping):
        raise ConfigError(f"{where}: instruction_generators must be a mapping of group name to group")
    groups: list[GroupConfig] = []
    for group_name, group in raw_groups.items():
        group_where = f"{where}: group {group_name!r}"
        if group is None:
            group = {}
        if not isinstance(group, Mapping):
            raise ConfigError(f"{group_where}: expected a mapping")
        _warn_unknown(group, GROUP_KEYS, group_where)
        ratio = group.get("generation_ratio", 1.0)
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio < math.inf:
            raise ConfigError(f"{group_where}: generation_ratio must be a finite number > 0, got {ratio!r}")
        generator_config = group.get("config") or {}
        if isinstance(generator_config, (str, os.PathLike)):
            generator_config = _load_mapping(resolve_path(generator_config, base), f"{group_where}: config")
        if not isinstance(generator_config, Mapping):
            raise ConfigError(f"{group_where}: config must be a mapping or a path to a YAML/JSON file")
        groups.append(
            GroupConfig(
                name=str(group_name),
                config=dict(generator_config),
                ratio=float(ratio),
                class_name=group.get("class_name"),
                tool_config_path=_optional_path(group.get("tool_config_path"), base),
                interaction_config_path=_optional_path(group.get("interaction_config_path"), base),
            )
        )
    total = sum(group.ratio for group in groups)
    groups = [attrs.evolve(group, ratio=group.ratio / total) for group in groups]

    class_name = overrides.get("class_name") or global_config.get("class_name")
    if not groups:
        if not class_name:
            raise ConfigError(f"{where}: no instruction_generators groups and no global_config.class_name")
        groups = [GroupConfig(name="default")]
    seed = overrides.get("seed", global_config.get("default_seed"))
    seed = DEFAULT_SEED if seed is None else seed
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"{where}: seed must be an integer, got {seed!r}")
    split_samples = overrides.get("split_samples", global_config.get("default_split_samples") or DEFAULT_SPLIT_SAMPLES)
    return InstructionConfig(
        name=name or (config_stem(path) if path else "bootcamp"),
        groups=tuple(groups),
        class_name=class_name,
        seed=seed,
        split_samples=parse_split_samples(split_samples),
        shuffle=_as_bool(overrides.get("shuffle", global_config.get("shuffle", False)), f"{where}: shuffle"),
        gen_parquet=_as_bool(
            overrides.get("gen_parquet", global_config.get("gen_parquet", False)), f"{where}: gen_parquet"
        ),
        namespace=namespace,
        path=path,
        tool_config_path=_optional_path(overrides.get("tool_config_path"), None),
        interaction_config_path=_optional_path(overrides.get("interaction_config_path"), None),
        no_tool=bool(overrides.get("no_tool", False)),
        no_interaction=bool(overrides.get("no_interaction", False)),
    )


def load_instruction_config(
    path: str | os.PathLike, *, name: str | None = None, namespace: str | None = None, overrides=None
) -> InstructionConfig:
    """Read and parse an instruction config file."""
    path = Path(path)
    return parse_instruction_config(load_yaml(path), path=path, name=name, namespace=namespace, overrides=overrides)


def _optional_path(value: Any, base: Path | None) -> Path | None:
    return None if value in (None, "") else resolve_path(value, base)


def _load_mapping(path: Path, where: str) -> Any:
    if path.suffix.lower() == ".json":
        try:
            return json.loads(read_config_text(path, f"{where}: no such file {path}"))
        except json.JSONDecodeError as error:
            raise ConfigError(f"{path}:{error.lineno}:{error.colno}: broken JSON: {error.msg}") from None
    return load_yaml(path)


# ---------------------------------------------------------------------------------- tool / interaction configs
@attrs.frozen
class ComponentEntry:
    """One entry of a tool or interaction config file: which component, with what constructor config."""

    class_name: str
    config: dict = attrs.field(factory=dict, eq=False)
    name: str | None = None


#: the keys of a tool-config entry that say where a tool runs (``type: remote`` or ``type: mcp`` and its server)
_BACKEND_KEYS = ("type", "url", "command", "args", "env", "mcp_tool", "mcp_server_url", "token")


def load_component_config(path: str | os.PathLike, kind: str) -> list[ComponentEntry]:
    """Entries of a tool config (``tools: [{class_name, config}]``) or interaction config (``interaction: [...]``).

    The original (verl) formats: ``tool_schema`` entries are accepted and ignored (the schema comes from the class).
    """
    path = Path(path)
    key = {"tool": "tools", "interaction": "interaction"}[kind]
    data = _load_mapping(path, f"{kind} config") or {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping with a {key!r} list")
    items = data.get(key, data.get("interactions") if kind == "interaction" else None)
    if items is None:
        raise ConfigError(f"{path}: no {key!r} list")
    if not isinstance(items, list):
        raise ConfigError(f"{path}: {key!r} must be a list")
    entries = []
    for position, item in enumerate(items):
        if isinstance(item, str):
            entries.append(ComponentEntry(item))
            continue
        if not isinstance(item, Mapping) or not item.get("class_name"):
            raise ConfigError(f"{path}: {key}[{position}] needs a class_name (an id or a dotted import path)")
        _warn_unknown(item, {"class_name", "config", "tool_schema", "name", *_BACKEND_KEYS},
                      f"{path}: {key}[{position}]")
        config = item.get("config") or {}
        if not isinstance(config, Mapping):
            raise ConfigError(f"{path}: {key}[{position}].config must be a mapping")
        if kind == "tool":  # the backend keys may sit at the entry's top level too (``type: mcp``, ``url: ...``)
            config = {**{k: item[k] for k in _BACKEND_KEYS if k in item}, **config}
            if "mcp_server_url" in config:  # the original framework's name of an MCP server's URL
                config.setdefault("url", config["mcp_server_url"])
                del config["mcp_server_url"]
            if config.get("type") == "mcp":  # the bootcamp tool an MCP server's tool stands in for
                config.setdefault("tool_id", str(item["class_name"]))
        # verl's tool configs carry ``type: native``, a setting of verl's, not of the tool; any other ``type`` names
        # the backend the tool runs on (``remote``: a tool server; see bootcamp_core.plugin.backends)
        config = {k: v for k, v in config.items() if not (kind == "tool" and k == "type" and v == "native")}
        entries.append(ComponentEntry(str(item["class_name"]), dict(config), item.get("name")))
    return entries


# ------------------------------------------------------------------------------------------- batch registries
REGISTRY_KEYS = {
    "bootcamp_name", "name", "namespace", "bootcamp", "config_file", "config_path", "instruction_config",
    "class_name", "bootcamp_cls_name", "sample_number", "split_samples", "split", "seed", "shuffle", "gen_parquet",
}


@attrs.frozen
class RegistryEntry:
    """One line of a batch registry: which bootcamp or config, and its overrides."""

    line: int
    name: str | None
    namespace: str | None
    config_path: Path | None
    overrides: dict = attrs.field(factory=dict, eq=False)


def load_registry_file(path: str | os.PathLike) -> list[RegistryEntry]:
    """Lines of a registry JSONL: ``{"bootcamp_name", "config_file" | "namespace", "sample_number", "seed", ...}``."""
    path = Path(path)
    lines = read_config_text(path).splitlines()
    entries = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{path}:{number}: not valid JSON ({error.msg})") from None
        if not isinstance(item, dict):
            raise ConfigError(f"{path}:{number}: expected a JSON object")
        _warn_unknown(item, REGISTRY_KEYS, f"{path}:{number}")
        config_file = item.get("config_file") or item.get("config_path") or item.get("instruction_config")
        namespace = item.get("namespace") or item.get("bootcamp")
        name = item.get("bootcamp_name") or item.get("name")
        if not config_file and not namespace:
            if not name:
                raise ConfigError(f"{path}:{number}: give config_file or namespace (and optionally bootcamp_name)")
            namespace = name
        samples = item.get("sample_number", item.get("split_samples"))
        if isinstance(samples, int) and not isinstance(samples, bool):
            # the original's registries give one count per line, for one split (train unless the line says)
            samples = {str(item.get("split", "train")): samples}
        try:
            split_samples = parse_split_samples(samples) if samples is not None else None
        except ConfigError as error:
            raise ConfigError(f"{path}:{number}: {error}") from None
        overrides = {
            "class_name": item.get("class_name") or item.get("bootcamp_cls_name"),
            "seed": item.get("seed"),
            "split_samples": split_samples,
            "shuffle": item.get("shuffle"),
            "gen_parquet": item.get("gen_parquet"),
        }
        entries.append(
            RegistryEntry(
                line=number,
                name=name,
                namespace=namespace,
                config_path=resolve_path(config_file, path.parent) if config_file else None,
                overrides={key: value for key, value in overrides.items() if value is not None},
            )
        )
    if not entries:
        raise ConfigError(f"{path}: the registry has no entries")
    return entries
