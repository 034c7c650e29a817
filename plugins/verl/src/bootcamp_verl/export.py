"""``bootcamp verl export``: a generated dataset as what ``python -m verl.trainer.main_ppo`` reads.

For each ``--dataset-path F`` it writes ``D/<F stem>.parquet``, and once for all of them ``D/tool_config.yaml``,
``D/agent_loop_config.yaml`` and ``D/run_main_ppo.sh``::

    from bootcamp_verl.export import ExportOptions, export_datasets

    result = export_datasets(["data/example_train.jsonl"], "verl_data", options=ExportOptions(max_user_turns=20))
    print(result.files, result.warnings)

Every input is read and checked before anything is written, so a bad input changes nothing. All Parquet files of one
export share one schema (verl concatenates train files); this module imports no verl.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from bootcamp_core import (
    RECORD_SCHEMA,
    BootcampError,
    ConfigError,
    GeneratedSample,
    RecordField,
    RecordSchema,
    Registry,
    atomic_write,
    get_registry,
    message_text,
    read_records,
)
from bootcamp_verl.schemas import VerlSchema, verl_schema

__all__ = [
    "ADAPTER_CLASS",
    "AGENT_LOOP_CLASS",
    "AGENT_NAME",
    "BYTES_PER_TOKEN",
    "REWARD_MANAGER_OVERRIDES",
    "REWARD_PATH",
    "TRAINING_DEFAULTS",
    "ExportOptions",
    "ExportResult",
    "export_datasets",
    "integration_overrides",
    "missing_imports",
    "verl_record_schema",
]

#: The ``agent_name`` every exported row carries: our agent loop's name in agent_loop_config.yaml.
AGENT_NAME = "bootcamp_agent"
ADAPTER_CLASS = "bootcamp_verl.tool.BootcampTool"
AGENT_LOOP_CLASS = "bootcamp_verl.agent_loop.BootcampAgentLoop"
REWARD_PATH = "pkg://bootcamp_verl.reward"
REWARD_NAME = "compute_score"
#: verl's ``naive`` reward manager with each row's own ``extra_info`` (``bootcamp_verl.reward_manager``): under
#: ``naive`` the rollouts of a prompt share one dict, and a rollout is scored on another's episode. Loaded by
#: module path, so no process needs it registered first (the names are the module's MANAGER_PATH and MANAGER_NAME,
#: spelled here so that the export imports no verl).
REWARD_MANAGER_OVERRIDES = (
    "reward.reward_manager.source=importlib",
    "reward.reward_manager.module.path=pkg://bootcamp_verl.reward_manager",
    "reward.reward_manager.name=BootcampRewardManager",
)
TOOL_CONFIG_NAME = "tool_config.yaml"
AGENT_LOOP_CONFIG_NAME = "agent_loop_config.yaml"
SCRIPT_NAME = "run_main_ppo.sh"
_BATCH_ROWS = 4096
#: Without the model's tokenizer on disk, prompt lengths are bounded at this many bytes per token: a byte-level BPE
#: token (Qwen, Llama 3, GPT-2 ...) is at least one byte, so the count it gives is never below the real one.
BYTES_PER_TOKEN = 1
#: Bytes a chat template adds per message (role markers) and once for the tool preamble, in the bound above.
_TEMPLATE_BYTES_PER_MESSAGE = 32
_TEMPLATE_BYTES_FOR_TOOLS = 1024
#: Largest data.train_batch_size the export picks, and the largest actor mini-batch.
_MAX_TRAIN_BATCH = 64
_MAX_MINI_BATCH = 16


@attrs.frozen(kw_only=True)
class ExportOptions:
    """What the exported configs say. A turn limit left ``None`` is the largest the exported records' generators
    recommend (``TaskGenerator.limits``), else ``bootcamp eval``'s default (10 assistant turns, 20 user turns)."""

    #: a parameter with structure fails the export instead of becoming a JSON-text parameter
    strict_schemas: bool = False
    max_assistant_turns: int | None = attrs.field(default=None,
                                                  validator=attrs.validators.optional(attrs.validators.ge(1)))
    #: tool messages and interaction replies per episode, counted as ``bootcamp eval`` counts them
    max_user_turns: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(1)))
    #: verl drops the calls of one turn past this; ``bootcamp eval`` answers them all (default: max_user_turns)
    max_parallel_calls: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(1)))
    #: characters of one tool answer before verl truncates it (verl's default, 256, cuts most tool output)
    max_tool_response_length: int = attrs.field(default=16384, validator=attrs.validators.ge(1))
    #: verl's tool-call parser (``multi_turn.format``): hermes for Qwen2.5 / Qwen3
    tool_call_format: str = "hermes"
    system_prompt: str | None = None
    #: {tool id: constructor config}, as ``bootcamp eval --tool-config`` gives them
    tool_config: dict[str, dict] = attrs.field(factory=dict)
    #: {interaction id: constructor config}, as ``bootcamp eval --interaction-config`` gives them
    interaction_config: dict[str, dict] = attrs.field(factory=dict)
    #: run every tool on this tool server (``bootcamp serve``) instead of inside verl's workers
    tool_server: str | None = None
    #: run every tool on tool actors in verl's own Ray job (``bootcamp_core.scale.tools``): no tool server to run
    ray_tools: bool = False
    #: with ray_tools: how many tool actors (default: the cluster's CPUs)
    ray_tool_actors: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(1)))
    #: defaults of run_main_ppo.sh (each an environment variable there)
    model_path: str = "Qwen/Qwen2.5-3B-Instruct"
    rollout_name: str = "sglang"
    #: data.train_batch_size (prompts per step); default: what fits the training records (at most 64)
    train_batch_size: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(1)))
    #: data.max_response_length (tokens of every turn of one trajectory, tool output included)
    max_response_length: int = attrs.field(default=4096, validator=attrs.validators.ge(1))
    #: the schema of the records read (an extension of RECORD_SCHEMA carries its fields into the export)
    record_schema: RecordSchema = RECORD_SCHEMA

    @property
    def parallel_calls(self) -> int:
        return self.max_parallel_calls or self.max_user_turns or _DEFAULT_TURNS["max_user_turns"]


@attrs.frozen
class ExportResult:
    """What an export wrote."""

    parquet_files: list[Path]
    val_parquet_files: list[Path]
    tool_config: Path
    agent_loop_config: Path
    script: Path
    #: parquet file -> records written
    records: dict[Path, int]
    #: tool ids in tool_config.yaml
    tools: list[str]
    warnings: list[str]
    #: the sizes written into run_main_ppo.sh (data.max_prompt_length, data.train_batch_size ...)
    sizes: dict[str, int] = attrs.field(factory=dict)
    #: how the prompt lengths were measured: "tokenizer" (the model's, from disk) or "bytes" (the bound)
    measured_with: str = "bytes"

    @property
    def files(self) -> list[Path]:
        return [*self.parquet_files, *self.val_parquet_files, self.tool_config, self.agent_loop_config, self.script]


@attrs.define
class _Tool:
    tool_id: str
    name: str
    schema: VerlSchema
    config: dict


# ------------------------------------------------------------------------------------------------- reading
def _samples(path: Path, schema: RecordSchema = RECORD_SCHEMA) -> Iterable[tuple[int, GeneratedSample, dict]]:
    """(position, sample, record) of every record of ``path``; a record that is not a bootcamp's is an error."""
    try:
        for position, record in enumerate(read_records(path, schema=schema)):
            try:
                sample = GeneratedSample.from_record(record)
            except (KeyError, TypeError, ValueError) as error:
                detail = f"missing {error}" if isinstance(error, KeyError) else str(error)
                raise ConfigError(f"{path}: record {position}: {detail}") from None
            yield position, sample, record
    except (OSError, ValueError) as error:
        if isinstance(error, ConfigError):
            raise
        raise ConfigError(f"{path}: {error}") from None


def _check_inputs(paths: Sequence[Path]) -> None:
    if not paths:
        raise ConfigError("give at least one --dataset-path")
    stems: dict[str, Path] = {}
    for path in paths:
        if not path.is_file():
            raise ConfigError(f"{path}: no such file")
        if path.suffix.lower() not in {".jsonl", ".json", ".ndjson", ".parquet"}:
            raise ConfigError(f"{path}: expected a .jsonl or .parquet file written by `bootcamp generate`")
        if path.stem in stems:
            raise ConfigError(f"{stems[path.stem]} and {path} would both be written as {path.stem}.parquet; rename one")
        stems[path.stem] = path


def _tool_schemas(tool_ids: dict[str, str], options: ExportOptions,
                  registry: Registry) -> tuple[dict[str, dict], dict[str, bool]]:
    """({tool id: OpenAI function schema}, {tool id: parallel_safe}): from the tool server when one is given, else
    the installed classes."""
    if options.tool_server:
        import anyio

        from bootcamp_core import InfrastructureError, tool_server_client

        async def fetch() -> dict[str, dict]:
            client = tool_server_client(options.tool_server)
            try:
                return await client.schemas()
            finally:
                await client.aclose()

        try:
            served = anyio.run(fetch)
        except InfrastructureError as error:
            raise ConfigError(f"cannot use the tool server: {error}") from None
        missing = sorted(set(tool_ids) - set(served))
        if missing:
            raise ConfigError(f"the tool server {options.tool_server} does not serve {', '.join(missing)}")
        return ({tool_id: served[tool_id].get("function", served[tool_id]) for tool_id in tool_ids},
                {tool_id: bool(served[tool_id].get("parallel_safe", False)) for tool_id in tool_ids})
    schemas = {}
    parallel_safe = {}
    for tool_id, where in tool_ids.items():
        try:
            cls = registry.get_class("tool", tool_id)
        except BootcampError as error:
            raise ConfigError(f"{where}: {error}") from None
        schemas[tool_id] = cls.openai_schema()["function"]
        parallel_safe[tool_id] = bool(getattr(cls, "parallel_safe", False))
    return schemas, parallel_safe


@attrs.frozen
class _Survey:
    tools: dict[str, _Tool]  # Tool.name -> tool
    records: int
    generators: frozenset[str] = frozenset()  # the generator ids of the records


def _survey(paths: Sequence[Path], options: ExportOptions, registry: Registry) -> _Survey:
    """Every tool the datasets use, by Tool.name; checks every record, and that no two tools share a name."""
    exported = verl_record_schema(options.record_schema)
    first_seen: dict[str, str] = {}  # tool id -> where it was first seen
    names: dict[str, str] = {}  # tool id -> Tool.name
    count = 0
    generators: set[str] = set()
    for path in paths:
        for position, sample, record in _samples(path, options.record_schema):
            count += 1
            generators.add(sample.generator)
            unknown = exported.unknown_keys(record)
            if unknown:  # refused before any write: Parquet has no column for them
                raise ConfigError(f"{path}: record {position}: {', '.join(unknown)} not in the record schema; the "
                                  "export would drop it (pass a record schema that names it)")
            _prompt(sample, f"{path}: record {position}", options.system_prompt)  # refused before any write
            for tool_id, name in zip(sample.tools, sample.tool_names):
                first_seen.setdefault(tool_id, f"{path}: record {position}")
                names.setdefault(tool_id, name)
    schemas, parallel_safe = _tool_schemas(first_seen, options, registry)
    by_name: dict[str, _Tool] = {}
    for tool_id, function in sorted(schemas.items()):
        name = function.get("name") or names[tool_id]
        if name != names[tool_id]:
            raise ConfigError(
                f"{first_seen[tool_id]}: names tool {tool_id} {names[tool_id]!r}, but the tool is now called "
                f"{name!r}; regenerate the dataset"
            )
        other = by_name.get(name)
        if other is not None:
            raise ConfigError(
                f"tools {other.tool_id} and {tool_id} are both named {name!r}: verl keys tools by name, so one "
                "training run cannot hold both. Export their bootcamps' datasets separately."
            )
        config: dict[str, Any] = {"type": "native", "tool_id": tool_id}
        fitted = verl_schema(tool_id, function, strict=options.strict_schemas)
        if fitted.json_parameters:
            config["json_parameters"] = list(fitted.json_parameters)
        if options.tool_config.get(tool_id):
            config["tool_config"] = dict(options.tool_config[tool_id])
        if options.tool_server:
            # verl's loader accepts only type "native"; the url sends the adapter to the server
            config["url"] = options.tool_server
            # the schema in the tool config does not say it; the adapter needs it to serialize calls
            config["parallel_safe"] = parallel_safe[tool_id]
        if options.ray_tools:
            # every actor builds every tool of the export: one episode's tools live in one actor
            pool: dict[str, Any] = {"name": "bootcamp-tools", "tools": {
                other: dict(options.tool_config.get(other) or {}) for other in sorted(schemas)}}
            if options.ray_tool_actors:
                pool["actors"] = options.ray_tool_actors
            config.pop("tool_config", None)
            config["ray_tools"] = pool
            config["parallel_safe"] = parallel_safe[tool_id]
        by_name[name] = _Tool(tool_id, name, fitted, config)
    return _Survey(by_name, count, frozenset(generators))


#: ``bootcamp eval``'s turn limits, for a limit neither the user nor any generator sets
_DEFAULT_TURNS = {"max_assistant_turns": 10, "max_user_turns": 20}


def _with_turn_limits(options: ExportOptions, generators: Iterable[str], registry: Registry) -> ExportOptions:
    """``options`` with each turn limit it leaves ``None`` set: the largest the generators recommend
    (``TaskGenerator.limits``; one training run has one limit for every task), else ``bootcamp eval``'s default."""
    changes = {}
    for name, default in _DEFAULT_TURNS.items():
        if getattr(options, name) is not None:
            continue
        recommended = []
        for generator in sorted(generators):
            try:
                limits = getattr(registry.get_class("generator", generator), "limits", None) or {}
            except (BootcampError, AttributeError, TypeError, ValueError):  # not installed here
                continue
            value = limits.get(name) if hasattr(limits, "get") else None
            if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
                recommended.append(value)
        changes[name] = max(recommended, default=default)
    return attrs.evolve(options, **changes) if changes else options


def _warnings(tools: dict[str, _Tool]) -> list[str]:
    notes = []
    for tool in tools.values():
        if tool.schema.json_parameters:
            notes.append(
                f"tool {tool.tool_id}: verl keeps only type, description and enum of a parameter, so "
                f"{', '.join(tool.schema.json_parameters)} {'is' if len(tool.schema.json_parameters) == 1 else 'are'}"
                " offered as JSON text (schema in the description) and decoded before the tool runs; "
                "--strict-schemas refuses instead"
            )
        if tool.schema.dropped:
            notes.append(
                f"tool {tool.tool_id}: verl drops {', '.join(tool.schema.dropped)} from the schema the model sees "
                "(the tool still checks its arguments)"
            )
    return notes


# ------------------------------------------------------------------------------------------------- parquet
def verl_record_schema(schema: RecordSchema = RECORD_SCHEMA) -> RecordSchema:
    """The schema of an exported row: the record's, plus the columns verl reads (``agent_name``: the agent loop of
    the row; ``extra_info.tool_selection``: the record's own tools, since ``tools_kwargs`` holds every tool of the
    export); its prompt is text only, as verl's chat template takes it."""
    return (schema.replace("prompt", RecordField("prompt", "text_messages"))
            .extend("", RecordField("agent_name", "text", doc="the agent loop of agent_loop_config.yaml"))
            .extend("extra_info", RecordField("tool_selection", "texts", doc="the Tool.names this record uses")))


def _prompt(sample: GeneratedSample, where: str, system_prompt: str | None) -> list[dict]:
    messages = [{"role": "system", "content": system_prompt}] if system_prompt is not None else []
    for message in sample.prompt:
        content = message.get("content")
        if isinstance(content, list):
            if any(isinstance(part, dict) and part.get("type") not in (None, "text") for part in content):
                raise ConfigError(f"{where}: the prompt has image parts; the verl export supports text prompts only")
            content = message_text(content)
        messages.append({"role": message.get("role"), "content": content})
    return messages


def _row(record: dict, sample: GeneratedSample, where: str, tool_names: Sequence[str], schema: RecordSchema,
         options: ExportOptions) -> dict:
    extra = dict(record["extra_info"])
    # every tool of the export gets an entry, so verl never finds a null where it expects a tool's kwargs;
    # tool_selection says which ones this record uses
    extra["tools_kwargs"] = {name: {"create_kwargs": {"identity": sample.identity}} for name in tool_names}
    extra["need_tools_kwargs"] = bool(sample.tool_names)
    extra["tool_selection"] = list(sample.tool_names)
    return schema.to_row({**record, "prompt": _prompt(sample, where, options.system_prompt), "extra_info": extra,
                          "agent_name": AGENT_NAME}, tool_names)


def _write_parquet(source: Path, target: Path, schema: RecordSchema, tool_names: Sequence[str],
                   options: ExportOptions) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = schema.arrow(tool_names)
    count = 0
    with atomic_write(target, "wb") as handle:
        writer = pq.ParquetWriter(handle, arrow, compression="zstd")
        try:
            rows: list[dict] = []
            for position, sample, record in _samples(source, options.record_schema):
                try:
                    rows.append(_row(record, sample, f"{source}: record {position}", tool_names, schema, options))
                except ValueError as error:
                    raise ConfigError(f"{source}: record {position}: {error}") from None
                if len(rows) >= _BATCH_ROWS:
                    writer.write_table(pa.Table.from_pylist(rows, schema=arrow))
                    count += len(rows)
                    rows = []
            if rows or not count:
                writer.write_table(pa.Table.from_pylist(rows, schema=arrow))
                count += len(rows)
        finally:
            writer.close()
    return count


# -------------------------------------------------------------------------------------------------- configs
def _write_yaml(path: Path, header: str, data: Any) -> None:
    import yaml

    with atomic_write(path) as handle:
        handle.write(header)
        yaml.safe_dump(data, handle, sort_keys=False, allow_unicode=True, width=120)


def _tool_config(tools: dict[str, _Tool]) -> dict:
    return {
        "tools": [
            {"class_name": ADAPTER_CLASS, "config": tool.config, "tool_schema": tool.schema.schema}
            for _, tool in sorted(tools.items())
        ]
    }


def _agent_loop_config(options: ExportOptions) -> list[dict]:
    entry: dict[str, Any] = {"name": AGENT_NAME, "_target_": AGENT_LOOP_CLASS}
    if options.interaction_config:
        entry["interaction_config"] = {key: dict(value) for key, value in options.interaction_config.items()}
    return [entry]


#: Settings main_ppo needs before it starts (verl checks them), sized for a first run; later arguments win. The
#: sizes measured from the records (``export_sizes``) come after these.
TRAINING_DEFAULTS = (
    # GRPO with the trajectories that failed for infrastructure reasons out of the group statistics
    "algorithm.adv_estimator=bootcamp_grpo",
    "actor_rollout_ref.rollout.n=8",
    # verl's default (False) keeps an overlong prompt and the agent loop cuts its start: system prompt, tool schemas
    "data.filter_overlong_prompts=True",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4",
)


def integration_overrides(train_files: Sequence[str], val_files: Sequence[str], tool_config: str,
                          agent_loop_config: str, options: ExportOptions, *, model_path: str | None = None,
                          rollout_name: str | None = None) -> list[str]:
    """The Hydra overrides of ``verl.trainer.main_ppo`` that wire an export in (paths as given, not quoted)."""

    def files(paths: Sequence[str]) -> str:
        return "[" + ",".join(f"'{path}'" for path in paths) + "]"

    multi_turn = "actor_rollout_ref.rollout.multi_turn"
    # limits still unset (export_datasets sets them from the generators first): bootcamp eval's defaults
    options = attrs.evolve(options, **{name: getattr(options, name) or default
                                       for name, default in _DEFAULT_TURNS.items()})
    return [
        f"data.train_files={files(train_files)}",
        f"data.val_files={files(val_files)}",
        f"actor_rollout_ref.model.path={model_path or options.model_path}",
        f"actor_rollout_ref.rollout.name={rollout_name or options.rollout_name}",
        "actor_rollout_ref.rollout.mode=async",
        f"{multi_turn}.enable=True",
        f"{multi_turn}.tool_config_path={tool_config}",
        f"{multi_turn}.format={options.tool_call_format}",
        f"{multi_turn}.max_assistant_turns={options.max_assistant_turns}",
        f"{multi_turn}.max_user_turns={options.max_user_turns}",
        f"{multi_turn}.max_parallel_calls={options.parallel_calls}",
        f"{multi_turn}.max_tool_response_length={options.max_tool_response_length}",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={agent_loop_config}",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={AGENT_NAME}",
        f"reward.custom_reward_function.path={REWARD_PATH}",
        f"reward.custom_reward_function.name={REWARD_NAME}",
        *REWARD_MANAGER_OVERRIDES,
    ]


# ------------------------------------------------------------------------------------------------- sizes
def _local_tokenizer(model_path: str) -> Any:
    """The model's tokenizer when ``model_path`` is a folder holding one (never a download), else None."""
    folder = Path(model_path).expanduser()
    if not folder.is_dir() or not any((folder / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json")):
        return None
    try:
        from transformers import AutoTokenizer
    except ImportError:
        return None
    try:
        return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except (OSError, ValueError) as error:
        raise ConfigError(f"--model-path {model_path}: cannot read its tokenizer: {error}") from None


def _token_count(tokenizer: Any, messages: list[dict], schemas: list[dict]) -> int:
    """Tokens of a prompt as verl's RLHFDataset counts them for its length filter (chat template, every tool)."""
    ids = tokenizer.apply_chat_template(messages, tools=schemas or None, add_generation_prompt=True, tokenize=True)
    if hasattr(ids, "keys"):  # transformers may answer a BatchEncoding
        ids = ids["input_ids"]
    if ids and isinstance(ids[0], list):
        ids = ids[0]
    return len(ids)


def _byte_bound(messages: list[dict], schemas: list[dict]) -> int:
    size = sum(len(str(message.get("content") or "").encode("utf-8")) + _TEMPLATE_BYTES_PER_MESSAGE
               for message in messages)
    if schemas:
        size += len(json.dumps(schemas, ensure_ascii=False).encode("utf-8")) + _TEMPLATE_BYTES_FOR_TOOLS
    return math.ceil(size / BYTES_PER_TOKEN)


def _longest_prompt(paths: Sequence[Path], schemas: list[dict], options: ExportOptions) -> tuple[int, str]:
    """(the longest prompt of ``paths`` in tokens with every exported tool schema, "tokenizer" or "bytes")."""
    tokenizer = _local_tokenizer(options.model_path)
    longest = 1
    for path in paths:
        for position, sample, _record in _samples(path, options.record_schema):
            messages = _prompt(sample, f"{path}: record {position}", options.system_prompt)
            if tokenizer is not None:
                count = _token_count(tokenizer, messages, schemas)
            else:
                count = _byte_bound(messages, schemas)
            longest = max(longest, count)
    return longest, "tokenizer" if tokenizer is not None else "bytes"


def _power_of_two_at_most(value: int) -> int:
    return 1 << (max(1, value).bit_length() - 1)


def export_sizes(train_records: int, longest_prompt: int, options: ExportOptions) -> dict[str, int]:
    """The data and batch sizes of run_main_ppo.sh: the prompt length the longest prompt needs (rounded up to 64
    tokens), the response length given, and a train batch (a power of two, at most 64 prompts) and actor
    mini-batch (at most 16) that the training records fill: verl's dataloader drops an incomplete last batch, so a
    batch larger than the dataset would give no step at all."""
    batch = options.train_batch_size or _power_of_two_at_most(min(train_records, _MAX_TRAIN_BATCH))
    return {
        "data.max_prompt_length": 64 * math.ceil(longest_prompt / 64),
        "data.max_response_length": options.max_response_length,
        "data.train_batch_size": batch,
        "actor_rollout_ref.actor.ppo_mini_batch_size": min(batch, _MAX_MINI_BATCH),
    }


#: What ``main_ppo`` imports on its default path (``trainer.use_v1``) besides the rollout engine.
_RUNTIME_MODULES = ("verl", "torch", "ray", "transfer_queue")


def missing_imports(rollout_name: str) -> list[str]:
    """The modules ``main_ppo`` with this rollout engine imports that this Python cannot find (nothing imported)."""
    return [name for name in (*_RUNTIME_MODULES, rollout_name) if importlib.util.find_spec(name) is None]


def _install_note(rollout_name: str) -> str | None:
    missing = missing_imports(rollout_name)
    if not missing:
        return None
    return (f"main_ppo cannot start in this Python: {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed; where it trains, run "
            f"pip install \"bootcamp-verl[{rollout_name}]\" (verl's {rollout_name} extra, with TransferQueue)")


_SCRIPT = """\
#!/usr/bin/env bash
# Written by `bootcamp verl export`: GRPO on {what} with verl's main_ppo. Run it on the GPU machine from anywhere
# (paths are relative to this folder). More Hydra overrides go after it and win over these, e.g.
#   MODEL_PATH=Qwen/Qwen3-4B bash {script} trainer.n_gpus_per_node=4 data.train_batch_size=64
# BOOTCAMP_TOKEN must be set here when the tools run on a tool server that wants a token.
set -euo pipefail
HERE="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
MODEL_PATH="${{MODEL_PATH:-{model_path}}}"
ROLLOUT_NAME="${{ROLLOUT_NAME:-{rollout_name}}}"
PYTHON="${{PYTHON:-python3}}"
ARGS=(
  # the bootcamp integration: data, tools, agent loop, reward; turn limits as in `bootcamp eval` (the generators'
  # recommended ones unless given)
{integration}
  # training settings verl needs before it starts, sized for a first run: tune them
{training}
  # measured from the records: the longest prompt with every tool schema ({measured}), batches the data fills
{sizes}
)
exec "$PYTHON" -m verl.trainer.main_ppo "${{ARGS[@]}}" "$@"
"""


def _script(train: Sequence[Path], val: Sequence[Path], options: ExportOptions, sizes: dict[str, int],
            measured: str) -> str:
    here = "$HERE"
    integration = integration_overrides(
        [f"{here}/{path.name}" for path in train],
        [f"{here}/{path.name}" for path in val],
        f"{here}/{TOOL_CONFIG_NAME}",
        f"{here}/{AGENT_LOOP_CONFIG_NAME}",
        options,
        model_path="$MODEL_PATH",
        rollout_name="$ROLLOUT_NAME",
    )

    def lines(overrides: Iterable[str]) -> str:
        # double quotes: $HERE and friends expand, the single quotes of Hydra's list syntax stay
        return "\n".join(f'  "{override}"' for override in overrides)

    return _SCRIPT.format(what=", ".join(path.name for path in train), script=SCRIPT_NAME,
                          integration=lines(integration), training=lines(TRAINING_DEFAULTS),
                          sizes=lines(f"{key}={value}" for key, value in sizes.items()), measured=measured,
                          model_path=options.model_path, rollout_name=options.rollout_name)


# ----------------------------------------------------------------------------------------------------- export
def export_datasets(dataset_paths: Sequence[str | os.PathLike], output_dir: str | os.PathLike, *,
                    val_dataset_paths: Sequence[str | os.PathLike] = (), options: ExportOptions | None = None,
                    registry: Registry | None = None) -> ExportResult:
    """Write the verl files for ``dataset_paths`` (train) and ``val_dataset_paths`` (validation; default: train).

    Raises :class:`ConfigError` (and writes nothing) for a record that is not a bootcamp's, a tool that is not
    installed, two tools with the same ``Tool.name``, or (with ``strict_schemas``) a parameter with structure.
    """
    options = options or ExportOptions()
    registry = registry or get_registry()
    train = [Path(path) for path in dataset_paths]
    val = [Path(path) for path in val_dataset_paths]
    _check_inputs(train + val)
    for value, flag in ((options.tool_call_format, "format"),):
        if not value or any(char.isspace() for char in value):
            raise ConfigError(f"--{flag} must be one word, got {value!r}")
    if options.tool_server and options.ray_tools:
        raise ConfigError("--ray-tools and --tool-server exclude each other: the tools run on Ray actors or on a "
                          "tool server")
    if options.ray_tool_actors and not options.ray_tools:
        raise ConfigError("--ray-tool-actors needs --ray-tools")
    if options.tool_server and options.tool_config:
        raise ConfigError("--tool-config does not apply with --tool-server: served tools are built by the server "
                          "(give it to `bootcamp serve --tool-config`)")
    survey = _survey(train + val, options, registry)
    if not survey.records:
        raise ConfigError(f"{', '.join(map(str, train + val))}: no records")
    options = _with_turn_limits(options, survey.generators, registry)
    tools = survey.tools
    tool_names = sorted(tools)
    # verl's length filter renders every prompt with every tool of the tool config
    longest, measured_with = _longest_prompt(train + val, [tools[name].schema.schema for name in tool_names],
                                             options)

    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    schema = verl_record_schema(options.record_schema)
    records: dict[Path, int] = {}
    written: dict[Path, Path] = {}
    for source in train + val:
        target = output / f"{source.stem}.parquet"
        if target.resolve() == source.resolve():
            raise ConfigError(f"{source}: the output would replace the input; choose another --output-dir")
        records[target] = _write_parquet(source, target, schema, tool_names, options)
        written[source] = target
    train_files = [written[path] for path in train]
    val_files = [written[path] for path in val] or train_files
    sizes = export_sizes(sum(records[path] for path in train_files), longest, options)
    measured = (f"the tokenizer of {options.model_path}" if measured_with == "tokenizer"
                else f"at most {BYTES_PER_TOKEN} byte per token, no tokenizer at {options.model_path}")

    tool_config = output / TOOL_CONFIG_NAME
    _write_yaml(tool_config, "# Written by `bootcamp verl export`: the bootcamp tools these datasets use, for "
                "actor_rollout_ref.rollout.multi_turn.tool_config_path.\n", _tool_config(tools))
    agent_loop_config = output / AGENT_LOOP_CONFIG_NAME
    _write_yaml(agent_loop_config, "# Written by `bootcamp verl export`: the agent loop of the exported rows "
                "(agent_name), for actor_rollout_ref.rollout.agent.agent_loop_config_path.\n",
                _agent_loop_config(options))
    script = output / SCRIPT_NAME
    with atomic_write(script) as handle:
        handle.write(_script(train_files, val_files, options, sizes, measured))
    script.chmod(0o755)
    return ExportResult(
        parquet_files=train_files,
        val_parquet_files=[written[path] for path in val],
        tool_config=tool_config,
        agent_loop_config=agent_loop_config,
        script=script,
        records=records,
        tools=[tools[name].tool_id for name in tool_names],
        warnings=[*_warnings(tools), *filter(None, [_install_note(options.rollout_name)])],
        sizes=sizes,
        measured_with=measured_with,
    )
