"""The evaluator: many episodes with bounded concurrency, crash-safe results, a summary and an HTML report.

``bootcamp eval`` is a thin wrapper over :func:`run_evaluation`. What goes where, directly in ``output_dir``:

- ``results.jsonl`` — one :class:`~bootcamp_core.data.records.EpisodeResult` per line, appended as each episode finishes,
  flushed and fsynced, so a kill -9 leaves at most the line being written (resume drops it).
- ``summary.json`` / ``summary.csv`` — per (data source, generator) and overall: count, successes, infrastructure
  and model errors, mean score (every episode in the denominator, an infrastructure failure scores 0), pass@k,
  mean assistant turns, tool calls and tokens.
- ``report.html`` — self-contained and offline (:mod:`bootcamp_core.evaluate.report`).

Selection, in this order: ``bootcamp_registry`` keeps records whose bootcamp is listed; ``limit`` keeps the first N
of those; ``shard=(i, n)`` keeps the ones whose position in the dataset file (0-based) is ``i`` modulo ``n``, so the
shards of one command line cover its selection exactly once whatever else differs between machines. Each kept
record runs ``repeats`` times (repeat 0..K-1).

pass@k (k = 1..K) is the unbiased estimator of Chen et al. (2021): a record with ``n`` finished episodes of which
``c`` are correct (``success`` and ``score >= 1``) contributes ``1 - C(n-c, k) / C(n, k)``; a group's pass@k is the
mean over its records with ``n >= k``. summary.json states this definition in ``pass_at_k_definition``.

Resume (``resume_from=P``): episodes are keyed by ``EpisodeResult.id`` = ``episode_id(record, repeat)``. A P that does not exist yet is created empty (the first run of a
cluster script that always passes the flag). P is first
rewritten atomically without its infrastructure failures (``success`` false), unreadable lines (a line cut by a
kill) and repeated keys; episodes whose key is left are skipped, the rest run and are appended to P. After a
completed run P holds exactly one line per (record, repeat), and the summary covers all of P.

A real run (not a dry run) first deletes summary.json, summary.csv and report.html in ``output_dir``; they are
written again at the end, so a run killed midway never leaves a summary that disagrees with the results file.

Secrets: the API key in use (``api_key``, else ``$OPENAI_API_KEY``) and the values of ``api_extra_headers`` are
never written — not to results, summary, report or ``evaluation_config`` — and are masked in the log records of the
run, even when a server or plugin echoes them (see :class:`Redactor`).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import os
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import attrs

from bootcamp_core.plugin.errors import BootcampError, ConfigError, InfrastructureError, UnknownIdError
from bootcamp_core.data.io import AtomicFile, dumps, read_jsonl, read_parquet
from bootcamp_core.data.records import EpisodeResult, GeneratedSample, normalize_record
from bootcamp_core.episode.engine import RolloutLimits, episode_id, run_episode

__all__ = [
    "EvalConfig",
    "ChatTemplate",
    "evaluate",
    "run_evaluation",
    "load_dataset",
    "select_records",
    "summarize",
    "summarize_file",
    "pass_at_k",
    "prepare_resume",
    "ResultsWriter",
    "write_summary",
    "RESULTS_NAME",
    "Redactor",
    "PASS_AT_K_DEFINITION",
]

logger = logging.getLogger("bootcamp_core")

RESULTS_NAME = "results.jsonl"
SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
REPORT_NAME = "report.html"
#: Problems listed by a failed dataset check before "... and N more".
MAX_LISTED_PROBLEMS = 20
#: Episodes kept in the summary pass for the report's examples (first failures, then the rest).
REPORT_EXAMPLES = 40
#: What pass@k counts, written into every summary.json so a reader of the file needs no other document.
PASS_AT_K_DEFINITION = (
    "unbiased estimator of Chen et al. (2021) per record, 1 - C(n-c, k) / C(n, k), averaged over the records with "
    "n >= k; n = the record's episodes, c = those correct, where correct means success is true and score >= 1"
)


@attrs.frozen(kw_only=True)
class EvalConfig:
    """Everything one evaluation needs; the fields mirror ``bootcamp eval``'s flags."""

    dataset_path: Path = attrs.field(converter=Path)
    output_dir: Path = attrs.field(converter=Path)
    policy: str | None = None
    api_url: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)  # never shown, never written
    api_model: str | None = None
    api_extra_headers: dict = attrs.field(factory=dict, repr=False)  # may carry credentials too
    api_extra_params: dict = attrs.field(factory=dict)
    verify_kwargs: dict = attrs.field(factory=dict)
    limits: RolloutLimits = attrs.field(factory=RolloutLimits)  # tool_timeout_s, episode_timeout_s, max turns
    #: Per HTTP request to the endpoint (the OpenAI policy); a request that takes longer is retried.
    request_timeout_s: float = 600.0
    #: Retries of the OpenAI policy (Python API only; ``None`` is ``RetryPolicy()``'s defaults).
    retry: Any = None
    max_concurrent: int = 32
    repeats: int = 1
    system_prompt: str | None = None
    limit: int | None = None
    shard: tuple[int, int] | None = None
    resume_from: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    tool_config: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    tool_server: str | None = None  # every tool runs on this tool server (interactions and rewards stay local)
    interaction_config: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    bootcamp_registry: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    tokenizer_path: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    verbose: bool = False
    dry_run: bool = False
    #: Start a fresh results.jsonl even when output_dir already holds one (otherwise that is an error).
    overwrite: bool = False

    def __attrs_post_init__(self) -> None:
        if self.max_concurrent < 1:
            raise ConfigError(f"--max-concurrent must be at least 1, got {self.max_concurrent}")
        if self.repeats < 1:
            raise ConfigError(f"--repeats must be at least 1, got {self.repeats}")
        if self.limit is not None and self.limit < 0:
            raise ConfigError(f"--limit must be >= 0, got {self.limit}")
        if self.shard is not None:  # the one range check of a shard (parse_shard only parses the text)
            index, count = self.shard
            if count < 1 or not 0 <= index < count:
                raise ConfigError(f"--shard i/n needs 0 <= i < n, got {index}/{count}")
        if not self.request_timeout_s > 0:
            raise ConfigError(f"--request-timeout must be positive, got {self.request_timeout_s}")

    def public(self) -> dict:
        """The config as written into every result line: no API key, header names but not their values."""
        limits = attrs.asdict(self.limits)
        return {
            "dataset_path": str(self.dataset_path),
            "policy": self.policy_kind(),
            "api_url": self.api_url,
            "api_model": self.api_model,
            "api_extra_headers": sorted(self.api_extra_headers),
            "api_extra_params": self.api_extra_params,
            "verify_kwargs": self.verify_kwargs,
            "limits": limits,
            "request_timeout_s": self.request_timeout_s,
            "max_concurrent": self.max_concurrent,
            "repeats": self.repeats,
            "system_prompt": self.system_prompt,
            "limit": self.limit,
            "shard": f"{self.shard[0]}/{self.shard[1]}" if self.shard else None,
            "tool_config": str(self.tool_config) if self.tool_config else None,
            "tool_server": self.tool_server,
            "interaction_config": str(self.interaction_config) if self.interaction_config else None,
            "bootcamp_registry": str(self.bootcamp_registry) if self.bootcamp_registry else None,
            "tokenizer_path": str(self.tokenizer_path) if self.tokenizer_path else None,
        }

    def policy_kind(self) -> str:
        from bootcamp_core.episode.policies import policy_kind

        return policy_kind(self.policy, self.api_url)

    def secrets(self) -> list[str]:
        """Every credential this config sends: the API key in use and the extra-header values (see :class:`Redactor`)."""
        key = self.api_key if self.api_key is not None else os.environ.get("OPENAI_API_KEY")
        return [key or "", *self.api_extra_headers.values()]


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` → ``(i, n)``; the range is checked by :class:`EvalConfig`."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ConfigError(f'--shard must look like "i/n" (e.g. 0/4), got {text!r}') from None
    return index, count


class Redactor:
    """Masks secrets in text, in JSON-like data and in log records.

    Each secret is masked whole and, for an ``Authorization``-style value such as ``"Bearer sk-..."``, also its part
    after the scheme word. Empty strings, the placeholder ``EMPTY`` and values shorter than :attr:`MIN_LENGTH`
    characters are left alone: masking a header value like ``"on"`` everywhere would garble the results, and such
    short values are not credentials.
    """

    MIN_LENGTH = 6
    MASK = "[redacted]"

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        found: set[str] = set()
        for secret in secrets:
            if not isinstance(secret, str):
                continue
            secret = secret.strip()
            for candidate in (secret, secret.split()[-1] if secret.split() else ""):
                if len(candidate) >= self.MIN_LENGTH and candidate != "EMPTY":
                    found.add(candidate)
        # longest first, so "Bearer sk-x" is masked whole before "sk-x" would leave "Bearer " behind
        self.secrets = sorted(found, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, self.MASK)
        return value

    def data(self, value: Any) -> Any:
        """``value`` with every string value masked (keys are the schema's and stay); containers are copied."""
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.data(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(item) for item in value]
        return value

    def filter(self, record: logging.LogRecord) -> bool:
        """A :class:`logging.Filter`: the message and any traceback of ``record`` masked in place."""
        if self.secrets:
            message = record.getMessage()
            masked = self.text(message)
            if masked != message:
                record.msg, record.args = masked, None
            if record.exc_info:
                record.exc_text = self.text(logging.Formatter().formatException(record.exc_info))
                record.exc_info = None
            elif record.exc_text:
                record.exc_text = self.text(record.exc_text)
            if record.stack_info:
                record.stack_info = self.text(record.stack_info)
        return True


class _MaskedLogs:
    """Installs a :class:`Redactor` on the handlers of the root and ``bootcamp_core`` loggers while a run lasts, so
    no log line of the engine, the retries or a plugin shows a secret."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.handlers: list[logging.Handler] = []

    def __enter__(self) -> _MaskedLogs:
        if self.redactor:
            for name in (None, "bootcamp_core"):
                for handler in logging.getLogger(name).handlers:
                    if handler not in self.handlers:
                        handler.addFilter(self.redactor)
                        self.handlers.append(handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for handler in self.handlers:
            handler.removeFilter(self.redactor)


# ------------------------------------------------------------------------------------------------- datasets
def load_dataset(path: str | os.PathLike) -> Iterator[dict]:
    """Records of a ``.jsonl``, ``.json`` (a JSON array, or one object per line) or ``.parquet`` file, streamed.

    Identities come back as objects whatever the file held. A broken line is an error naming file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--dataset-path {path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _checked(read_parquet(path), path)
    if suffix not in {".jsonl", ".json", ".ndjson"}:
        raise ConfigError(f"--dataset-path {path}: expected a .jsonl, .json or .parquet file")
    return _read_json_records(path)


def _checked(records: Iterable[Any], path: Path) -> Iterator[dict]:
    for number, record in enumerate(records, 1):
        if not isinstance(record, dict):
            raise ConfigError(f"{path}: record {number} is not a JSON object")
        yield record


def _read_json_records(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith("["):  # a JSON array; it has to be read whole
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ConfigError(f"{path}:{error.lineno}:{error.colno}: not valid JSON ({error.msg})") from None
        for number, record in enumerate(data, 1):
            if not isinstance(record, dict):
                raise ConfigError(f"{path}: element {number} of the array is not a JSON object")
            yield normalize_record(record)
        return
    try:
        yield from read_jsonl(path)
    except ValueError as error:  # names the file and line already
        raise ConfigError(str(error)) from None


def select_records(
    records: Iterable[dict],
    *,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
    keep: Any = None,
) -> Iterator[tuple[int, dict]]:
    """(position in the file, record) of the selected records: ``keep`` filter → first ``limit`` → shard."""
    kept = 0
    for position, record in enumerate(records):
        if keep is not None and not keep(record):
            continue
        if limit is not None and kept >= limit:
            return
        kept += 1
        if shard is not None and position % shard[1] != shard[0]:
            continue
        yield position, record


def registry_filter(path: Path, registry) -> Any:
    """A predicate keeping records of the bootcamps a registry JSONL lists (the original ``--bootcamp-registry``).

    A line naming a ``namespace`` (or only a ``bootcamp_name``) admits that namespace; a line naming a
    ``config_file`` admits the namespaces of the generators that config uses. A record is kept when its
    ``data_source`` is ``bootcamp/<admitted namespace>`` (or a listed ``bootcamp_name`` itself, as in the original
    framework's records), or its generator id is in an admitted namespace.
    """
    from bootcamp_core.data.config import load_instruction_config, load_registry_file
    from bootcamp_core.data.generate import plan_groups

    namespaces: set[str] = set()
    names: set[str] = set()
    for entry in load_registry_file(path):
        if entry.name:
            names.add(entry.name)
        if entry.namespace:
            namespaces.add(entry.namespace)
        if entry.config_path is not None:
            try:
                config = load_instruction_config(entry.config_path, name=entry.name, namespace=entry.namespace)
                namespaces.update(plan.generator.split("/", 1)[0] for plan in plan_groups(config, registry))
            except BootcampError as error:
                raise ConfigError(f"{path}:{entry.line}: {error}") from None
    sources = {f"bootcamp/{namespace}" for namespace in namespaces} | names

    def keep(record: dict) -> bool:
        if record.get("data_source") in sources:
            return True
        bootcamp = (record.get("extra_info") or {}).get("bootcamp") or {}
        generator = bootcamp.get("generator") if isinstance(bootcamp, dict) else None
        return isinstance(generator, str) and generator.split("/", 1)[0] in namespaces

    return keep


def _check_record(record: dict, registry, cache: dict, served: dict[str, set[str]] | None = None,
                  remote: set[str] | None = None) -> tuple[GeneratedSample | None, str | None]:
    """The record's typed view, or why it cannot run with the installed plugins (and tool servers).

    ``served``: {tool server URL: tool ids it serves}; the key ``"*"`` holds the server every tool runs on.
    ``remote``: the tool ids a tool config routes to a server (checked to be served already).
    """
    try:
        sample = GeneratedSample.from_record(record)
    except (ValueError, KeyError, TypeError) as error:
        return None, f"not a generated record: {error}"
    key = (sample.generator, sample.tools, sample.interaction, sample.reward)
    if key not in cache:
        problem = None
        try:
            registry.resolve("generator", sample.generator)
            for tool in sample.tools:
                if served and "*" in served:
                    if tool not in served["*"]:
                        raise UnknownIdError(f"tool {tool} is not served by the tool server")
                elif not (remote and tool in remote):
                    registry.resolve("tool", tool)
            if sample.interaction:
                registry.resolve("interaction", sample.interaction)
            registry.resolve("reward", sample.reward)
        except BootcampError as error:
            problem = str(error)
        cache[key] = problem
    return sample, cache[key]


def component_config(config: EvalConfig, registry) -> dict[str, dict]:
    """``--tool-config`` / ``--interaction-config`` files as {component id: constructor config}."""
    from bootcamp_core.data.config import load_component_config

    resolved: dict[str, dict] = {}
    for kind, path in (("tool", config.tool_config), ("interaction", config.interaction_config)):
        if path is None:
            continue
        for entry in load_component_config(path, kind):
            if kind == "tool" and entry.config.get("type") == "remote":
                # served elsewhere: a full id, which need not be installed here
                resolved[str(entry.config.get("tool_id") or entry.class_name)] = dict(entry.config)
                continue
            try:
                resolved[registry.resolve(kind, entry.class_name)] = dict(entry.config)
            except BootcampError as error:
                raise ConfigError(f"{path}: {error}") from None
    return resolved


# ---------------------------------------------------------------------------------------------- chat template
class ChatTemplate:
    """A tokenizer's chat template rendered as transformers does (sandboxed jinja2), without transformers.

    Reads ``chat_template`` from ``DIR/tokenizer_config.json`` (a string, or a list of ``{name, template}`` where
    ``default`` wins), else ``DIR/chat_template.jinja``. Special tokens of the config (``bos_token``, ...) are passed
    to the template like transformers does.
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        from jinja2.exceptions import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        directory = Path(directory)
        if not directory.is_dir():
            raise ConfigError(f"--tokenizer-path {directory}: no such directory")
        config_path = directory / "tokenizer_config.json"
        config: dict = {}
        if config_path.is_file():
            try:
                config = json.loads(config_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as error:
                raise ConfigError(f"{config_path}: not valid JSON ({error.msg})") from None
        template = config.get("chat_template")
        if isinstance(template, list):
            named = {item.get("name"): item.get("template") for item in template if isinstance(item, dict)}
            template = named.get("default") or next(iter(named.values()), None)
        if not template and (directory / "chat_template.jinja").is_file():
            template = (directory / "chat_template.jinja").read_text(encoding="utf-8")
        if not isinstance(template, str) or not template:
            raise ConfigError(
                f"--tokenizer-path {directory}: no chat_template in tokenizer_config.json (nor chat_template.jinja)"
            )
        self.special_tokens = {}
        for key, value in config.items():
            if key.endswith("_token"):
                value = value.get("content") if isinstance(value, dict) else value
                if isinstance(value, str):
                    self.special_tokens[key] = value

        def raise_exception(message: str) -> None:
            raise TemplateError(message)

        def tojson(value: Any, indent: int | None = None, **_: Any) -> str:
            return json.dumps(value, ensure_ascii=False, indent=indent)

        # the same environment settings as transformers' chat templates, so templates render identically
        environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                    extensions=["jinja2.ext.loopcontrols"])
        environment.filters["tojson"] = tojson
        environment.globals["raise_exception"] = raise_exception
        environment.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        try:
            self.template = environment.from_string(template)
        except TemplateError as error:
            raise ConfigError(f"--tokenizer-path {directory}: the chat template does not compile: {error}") from None

    def render(self, messages: list[dict], tools: list[dict] | None = None) -> str:
        return self.template.render(messages=messages, tools=tools or None, add_generation_prompt=False,
                                    **self.special_tokens)


# ------------------------------------------------------------------------------------------------- results
class ResultsWriter:
    """Appends result lines; each is flushed and fsynced before the next, so a kill loses at most the one in flight.

    Writes are serialized by a lock, so threads (``anyio.to_thread``) may call :meth:`write_line` concurrently.
    """

    def __init__(self, path: str | os.PathLike, *, redact: Iterable[str] | Redactor = ()) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a", encoding="utf-8", newline="\n")
        self._lock = threading.Lock()
        # secrets that must never reach the file, even if some plugin or error message echoes them
        self._redactor = redact if isinstance(redact, Redactor) else Redactor(redact)
        self.count = 0

    def line_for(self, result: EpisodeResult) -> str:
        # masked in the data, not the JSON text: a secret with quotes or non-ASCII is escaped differently in JSON
        data = self._redactor.data(result.to_dict())
        try:
            return dumps(data)
        except (TypeError, ValueError):  # a plugin put something unserialisable in metrics: keep it as text
            line = json.dumps(data, ensure_ascii=False, default=repr).translate(
                str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}))
            return self._redactor.text(line)

    def write_line(self, line: str) -> None:
        with self._lock:
            self._handle.write(line + "\n")
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self.count += 1

    def write(self, result: EpisodeResult) -> None:
        self.write_line(self.line_for(result))

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _record_key(data: dict) -> str:
    """The key of a result line's record (its id without the repeat), for pass@k."""
    episode = data.get("id")
    if isinstance(episode, str) and ":" in episode:
        return episode.rsplit(":", 1)[0]
    return json.dumps(data.get("input"), sort_keys=True, default=repr)


def iter_result_lines(path: str | os.PathLike) -> Iterator[dict]:
    """Parsed lines of a results file; an unreadable line (cut by a kill) is skipped with a warning."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                logger.warning("%s:%d: unreadable result line skipped (cut off by a crash?)", path, number)
                continue
            if isinstance(data, dict):
                yield data


def prepare_resume(path: str | os.PathLike) -> tuple[set[str], dict]:
    """Rewrite a results file atomically without infrastructure failures, unreadable lines and repeated keys.

    Returns the keys of the episodes kept (to skip) and counts ``{"kept", "infrastructure", "unreadable",
    "duplicates"}``.
    """
    path = Path(path)
    counts = {"kept": 0, "infrastructure": 0, "unreadable": 0, "duplicates": 0}
    if not path.exists():
        # the first run of a script that always resumes: nothing finished yet; the file is created here
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        return set(), counts
    if not path.is_file():
        raise ConfigError(f"--resume-from-result-path {path}: not a file")
    finished: set[str] = set()
    with open(path, encoding="utf-8") as source, AtomicFile(path) as target:
        for line in source:
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise ValueError
            except ValueError:
                counts["unreadable"] += 1
                continue
            if data.get("success") is False:
                counts["infrastructure"] += 1
                continue
            key = data.get("id")
            if not isinstance(key, str) or not key:
                # a line of the original framework: key it the same way we would
                key = episode_id(data.get("input") or {}, int(data.get("repeat") or 0))
                data["id"] = key
                line = dumps(data) + "\n"
            if key in finished:
                counts["duplicates"] += 1
                continue
            finished.add(key)
            counts["kept"] += 1
            target.write(line if line.endswith("\n") else line + "\n")
        target.flush()
        os.fsync(target.fileno())
    return finished, counts


# ------------------------------------------------------------------------------------------------- summary
def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one record: ``1 - C(n-c, k) / C(n, k)`` (Chen et al., 2021), computed stably."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


class _Group:
    """Running totals of one (data source, generator) group, or of everything."""

    def __init__(self) -> None:
        self.count = 0
        self.successes = 0
        self.infrastructure_errors = 0
        self.model_errors = 0
        self.score_sum = 0.0
        self.assistant_turns = 0
        self.tool_calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.total_tokens = 0
        self.reached_max_turns = 0
        self.per_record: dict[str, list[int]] = {}  # record key -> [n, c]
        self.score_bins = [0] * 11  # [0, .1), ..., [.9, 1), exactly 1
        self.turn_counts: dict[int, int] = {}
        self.tool_call_counts: dict[int, int] = {}
        self.finish_reasons: dict[str, int] = {}

    def add(self, data: dict) -> None:
        self.count += 1
        success = data.get("success") is not False
        score = _number(data.get("score")) if success else 0.0
        self.successes += success
        self.infrastructure_errors += not success
        self.model_errors += data.get("error_type") == "model"
        self.score_sum += score
        turns = data.get("turn_record") or {}
        assistant = int(_number(turns.get("assistant_turns")))
        calls = int(_number(turns.get("tool_calls", len(data.get("tool_calls") or ()))))
        self.assistant_turns += assistant
        self.tool_calls += calls
        usage = data.get("token_usage") or {}
        self.prompt_tokens += int(_number(usage.get("prompt_tokens")))
        self.completion_tokens += int(_number(usage.get("completion_tokens")))
        self.total_tokens += int(_number(usage.get("total_tokens")))
        self.reached_max_turns += bool(data.get("reached_max_turns"))
        entry = self.per_record.setdefault(_record_key(data), [0, 0])
        entry[0] += 1
        entry[1] += success and score >= 1.0
        self.score_bins[10 if score >= 1.0 else max(0, min(9, int(score * 10)))] += 1
        self.turn_counts[assistant] = self.turn_counts.get(assistant, 0) + 1
        self.tool_call_counts[calls] = self.tool_call_counts.get(calls, 0) + 1
        reason = str(data.get("finish_reason") or "unknown")
        self.finish_reasons[reason] = self.finish_reasons.get(reason, 0) + 1

    def to_dict(self) -> dict:
        count = self.count or 1  # an empty group reports zeros, not a division error
        max_n = max((n for n, _ in self.per_record.values()), default=0)
        pass_k = {}
        for k in range(1, max_n + 1):
            eligible = [pass_at_k(n, c, k) for n, c in self.per_record.values() if n >= k]
            pass_k[f"pass@{k}"] = sum(eligible) / len(eligible)
        return {
            "count": self.count,
            "records": len(self.per_record),
            "successes": self.successes,
            "infrastructure_errors": self.infrastructure_errors,
            "model_errors": self.model_errors,
            "mean_score": self.score_sum / count,
            "pass_at_k": pass_k,
            "mean_assistant_turns": self.assistant_turns / count,
            "mean_tool_calls": self.tool_calls / count,
            "tool_calls": self.tool_calls,
            "mean_total_tokens": self.total_tokens / count,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "reached_max_turns": self.reached_max_turns,
            "finish_reasons": dict(sorted(self.finish_reasons.items())),
            "score_histogram": self.score_bins,
            "assistant_turns_histogram": {str(k): v for k, v in sorted(self.turn_counts.items())},
            "tool_calls_histogram": {str(k): v for k, v in sorted(self.tool_call_counts.items())},
        }


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def summarize(lines: Iterable[dict], *, examples: list | None = None) -> dict:
    """The summary of result lines: ``{"overall": {...}, "groups": [{data_source, generator, ...}]}``.

    When ``examples`` is a list, up to :data:`REPORT_EXAMPLES` lines are appended to it for the report (failures
    and unsolved episodes first).
    """
    overall = _Group()
    groups: dict[tuple[str, str], _Group] = {}
    failed: list[dict] = []
    solved: list[dict] = []
    for data in lines:
        overall.add(data)
        key = (str(data.get("data_source") or ""), str(data.get("generator") or data.get("generator_name") or ""))
        groups.setdefault(key, _Group()).add(data)
        if examples is not None:
            bucket = solved if data.get("success") is not False and _number(data.get("score")) >= 1.0 else failed
            if len(bucket) < REPORT_EXAMPLES:
                bucket.append(_example(data))
    if examples is not None:
        examples.extend((failed + solved)[:REPORT_EXAMPLES])
    return {
        "pass_at_k_definition": PASS_AT_K_DEFINITION,
        "overall": overall.to_dict(),
        "groups": [
            {"data_source": source, "generator": generator, **group.to_dict()}
            for (source, generator), group in sorted(groups.items())
        ],
    }


def _example(data: dict) -> dict:
    """What the report shows of one episode (the final answer cut to a readable length)."""
    answer = None
    for message in reversed(data.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            answer = message.get("content")
            break
    if not isinstance(answer, str):
        answer = json.dumps(answer, ensure_ascii=False) if answer is not None else ""
    return {
        "id": data.get("id"),
        "data_source": data.get("data_source"),
        "generator": data.get("generator"),
        "repeat": data.get("repeat"),
        "score": _number(data.get("score")),
        "success": data.get("success") is not False,
        "error_type": data.get("error_type"),
        "error": data.get("error"),
        "finish_reason": data.get("finish_reason"),
        "assistant_turns": (data.get("turn_record") or {}).get("assistant_turns"),
        "answer": answer[:2000] + ("…" if len(answer) > 2000 else ""),
    }


def summarize_file(path: str | os.PathLike, *, examples: list | None = None) -> dict:
    """:func:`summarize` over a results file."""
    return summarize(iter_result_lines(path), examples=examples)


CSV_COLUMNS = [
    "data_source", "generator", "count", "records", "successes", "infrastructure_errors", "model_errors",
    "mean_score", "mean_assistant_turns", "mean_tool_calls", "tool_calls", "mean_total_tokens", "prompt_tokens",
    "completion_tokens", "total_tokens", "reached_max_turns",
]


def summary_csv(summary: dict) -> str:
    """One row per group and an ``ALL`` row; a ``pass@k`` column for every k seen."""
    rows = [*summary["groups"], {"data_source": "ALL", "generator": "ALL", **summary["overall"]}]
    ks = sorted({key for row in rows for key in row["pass_at_k"]}, key=lambda key: int(key.split("@")[1]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS + ks)
    for row in rows:
        writer.writerow([row[column] for column in CSV_COLUMNS] + [row["pass_at_k"].get(k, "") for k in ks])
    return buffer.getvalue()


def write_summary(output_dir: str | os.PathLike, summary: dict, examples: list | None = None) -> None:
    """summary.json, summary.csv and report.html, each written atomically."""
    from bootcamp_core.evaluate.report import render_report

    output_dir = Path(output_dir)
    with AtomicFile(output_dir / SUMMARY_JSON) as handle:
        handle.write(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    with AtomicFile(output_dir / SUMMARY_CSV) as handle:
        handle.write(summary_csv(summary))
    with AtomicFile(output_dir / REPORT_NAME) as handle:
        handle.write(render_report(summary, examples or []))


# ------------------------------------------------------------------------------------------------- running
class _Stats:
    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.errors = 0
        self.score_sum = 0.0
        self.started = time.monotonic()

    def add(self, result: EpisodeResult) -> None:
        self.done += 1
        self.errors += not result.success
        self.score_sum += _number(result.score) if result.success else 0.0

    def fields(self) -> dict:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        mean = self.score_sum / self.done if self.done else 0.0
        return {"errors": self.errors, "mean": f"{mean:.3f}", "rate": f"{self.done / elapsed:.1f}"}


class _Progress:
    """The live bar on stderr: done / total, infrastructure errors, mean score, episodes per second."""

    def __init__(self, stats: _Stats, enabled: bool) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.stats = stats
        self.console = Console(stderr=True)
        self.progress = Progress(
            TextColumn("eval"), BarColumn(), MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]}"), TextColumn("mean score {task.fields[mean]}"),
            TextColumn("{task.fields[rate]} ep/s"), TimeRemainingColumn(),
            console=self.console, disable=not enabled, transient=False,
        )
        self.task = self.progress.add_task("eval", total=stats.total, **stats.fields())

    def __enter__(self) -> _Progress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def update(self) -> None:
        self.progress.update(self.task, completed=self.stats.done, **self.stats.fields())

    def print(self, text: str) -> None:
        self.progress.console.print(text, markup=False, highlight=False)


def _failure_result(record: dict, repeat: int, key: str, error: BaseException, config: dict) -> EpisodeResult:
    """An infrastructure-failure line for an episode the engine could not even report on (a crash in our code or
    a plugin's), so one bad episode never takes the run down and resume re-runs it."""
    try:
        sample = GeneratedSample.from_record(record)
        source, generator, group = sample.data_source, sample.generator, sample.generator_name
        identity = sample.identity
    except (ValueError, KeyError, TypeError):
        source, generator, group, identity = str(record.get("data_source") or ""), "", "", None
    return EpisodeResult(
        id=key, input=record, repeat=repeat, data_source=source, generator=generator, generator_name=group,
        messages=list(record.get("prompt") or []), ground_truth=identity, score=0.0, success=False,
        error_type="infrastructure", error=f"{type(error).__name__}: {error}", finish_reason="error",
        timings={"started_at": datetime.now(timezone.utc).isoformat()}, evaluation_config=config,
    )


async def _check_policy(policy: Any, representatives: list[dict]) -> None:
    from bootcamp_core.episode.policies import ReferencePolicy

    if isinstance(policy, ReferencePolicy):
        policy.check(representatives)
        return
    check = getattr(policy, "check", None)
    if check is not None:
        outcome = check()
        if hasattr(outcome, "__await__"):
            await outcome


async def evaluate(config: EvalConfig, *, registry: Any = None, policy: Any = None, progress: bool = True) -> dict:
    """Run (or, with ``dry_run``, only check) an evaluation; returns the summary (see the module docstring).

    ``policy`` replaces the one the config describes (it is not closed here); ``registry`` defaults to the
    installed plugins. A dry run checks that every selected record's generator, tools, interaction and reward
    resolve, and the policy (reference agents exist / one request to the endpoint); it writes nothing and returns
    ``{"dry_run": True, "records", "episodes", "generators"}``.
    """
    redactor = Redactor(config.secrets())
    with _MaskedLogs(redactor):
        try:
            return await _evaluate(config, registry, policy, progress, redactor)
        except BootcampError as error:
            # a server may echo a credential into an error message, which the CLI prints
            message = redactor.text(str(error))
            if message == str(error):
                raise
            try:
                masked = type(error)(message)
            except TypeError:  # a subclass with another constructor
                masked = BootcampError(message)
            raise masked from None


async def _make_policy(config: EvalConfig, registry: Any) -> Any:
    """The policy the config describes; make_policy owns the rules (default kind, required flags, key from env)."""
    from bootcamp_core.episode.policies import make_policy

    return make_policy(config.policy, api_url=config.api_url, api_key=config.api_key, api_model=config.api_model,
                       extra_headers=config.api_extra_headers, extra_params=config.api_extra_params,
                       registry=registry, retry=config.retry, request_timeout_s=config.request_timeout_s)


async def _evaluate(config: EvalConfig, registry: Any, policy: Any, progress: bool, redactor: Redactor) -> dict:
    from bootcamp_core.plugin.loader import get_registry

    registry = registry or get_registry()
    keep = registry_filter(config.bootcamp_registry, registry) if config.bootcamp_registry else None
    components = component_config(config, registry)
    template = ChatTemplate(config.tokenizer_path) if config.tokenizer_path else None

    def selected() -> Iterator[tuple[int, dict]]:
        return select_records(load_dataset(config.dataset_path), limit=config.limit, shard=config.shard, keep=keep)

    served = await _served_tools(config, components)
    remote_ids = {tool_id for tool_id, entry in components.items() if entry.get("type") == "remote"}
    # First pass: every selected record must run with the installed plugins before any episode starts.
    cache: dict = {}
    problems: list[str] = []
    problem_count = 0
    representatives: dict[str, dict] = {}
    generators: dict[str, int] = {}
    count = 0
    for position, record in selected():
        count += 1
        sample, problem = _check_record(record, registry, cache, served, remote_ids)
        if problem is not None:
            problem_count += 1
            if len(problems) < MAX_LISTED_PROBLEMS:
                problems.append(f"record {position}: {problem}")
            continue
        assert sample is not None
        generators[sample.generator] = generators.get(sample.generator, 0) + 1
        representatives.setdefault(sample.generator, record)
    if problems:
        more = f"\n  ... and {problem_count - len(problems)} more" if problem_count > len(problems) else ""
        raise ConfigError(f"{config.dataset_path}: {problem_count} record(s) cannot run with the installed plugins:\n  "
                          + "\n  ".join(problems) + more)

    if config.tool_server:
        for key in cache:
            for tool in key[1]:
                components[tool] = {"type": "remote", "url": config.tool_server, "tool_id": tool,
                                    "call_timeout_s": config.limits.tool_timeout_s}

    own_policy = policy is None
    if own_policy:
        policy = await _make_policy(config, registry)
    try:
        if config.dry_run:
            await _check_policy(policy, list(representatives.values()))
            return {"dry_run": True, "records": count, "episodes": count * config.repeats, "generators": generators}
        from bootcamp_core.episode.policies import ReferencePolicy

        if isinstance(policy, ReferencePolicy):  # a generator without a reference agent fails before any episode
            policy.check(list(representatives.values()))
        return await _run(config, registry, policy, components, template, selected, count, progress, redactor)
    finally:
        if own_policy and hasattr(policy, "aclose"):
            await policy.aclose()
        if served:
            from bootcamp_core.serve.client import client_for

            servers = {(c["url"], c.get("token")) for c in components.values() if c.get("type") == "remote"}
            for url, token in servers | ({(config.tool_server, None)} if config.tool_server else set()):
                await client_for(url, token).aclose()


async def _served_tools(config: EvalConfig, components: dict[str, dict]) -> dict[str, set[str]] | None:
    """{server URL: tool ids it serves} for --tool-server and remote tool-config entries; asks each server once,
    after waiting (boundedly) for its workers to register. Remote entries get the rollout's tool timeout, so the
    server stops a call when the episode gives up on it."""
    from bootcamp_core.serve.client import client_for

    servers: dict[tuple[str, str | None], list[str]] = {}
    for tool_id, entry in components.items():
        if entry.get("type") == "remote":
            if not isinstance(entry.get("url"), str):
                raise ConfigError(f"{config.tool_config}: remote tool {tool_id} has no url")
            entry.setdefault("call_timeout_s", config.limits.tool_timeout_s)
            servers.setdefault((entry["url"], entry.get("token")), []).append(tool_id)
    if config.tool_server:
        servers.setdefault((config.tool_server, None), [])
    served: dict[str, set[str]] = {}
    for (url, token), tool_ids in sorted(servers.items(), key=lambda item: (item[0][0], item[0][1] or "")):
        client = client_for(url, token)
        try:
            await _wait_ready(client)
            offered = set(await client.schemas())
        except InfrastructureError as error:
            raise ConfigError(f"cannot use the tool server: {error}") from None
        for tool_id in tool_ids:
            if components[tool_id].get("tool_id", tool_id) not in offered:
                raise ConfigError(f"{config.tool_config}: tool {tool_id} is not served by {url}")
        served.setdefault(url, set()).update(offered)
    if config.tool_server:
        served["*"] = served[config.tool_server]
    return served or None


async def _wait_ready(client: Any, timeout_s: float = 120.0, startup_s: float = 30.0) -> None:
    """Wait while a freshly started master still waits for its workers (a worker alone is ready when it answers).

    A master up for longer than ``startup_s`` with some live workers is running degraded (a worker died): go on.
    """
    deadline = anyio.current_time() + timeout_s
    while True:
        status = await client.health()
        degraded = status.get("live_workers", 0) > 0 and status.get("uptime_s", 0) > startup_s
        if status.get("ready", True) or degraded or anyio.current_time() > deadline:
            return
        logger.info("waiting for the tool server's workers: %s live of %s expected", status.get("live_workers"),
                    status.get("expected_workers"))
        await anyio.sleep(0.5)


async def _run(config: EvalConfig, registry: Any, policy: Any, components: dict, template: ChatTemplate | None,
               selected: Any, count: int, progress: bool, redactor: Redactor) -> dict:
    output_dir = config.output_dir
    output_dir.mkdir(parents=True, exist_ok=True)
    if config.resume_from is not None:
        results_path = config.resume_from
        finished, counts = prepare_resume(results_path)
        logger.info("resuming %s: %s", results_path, counts)
    else:
        results_path = output_dir / RESULTS_NAME
        if results_path.exists() and results_path.stat().st_size and not config.overwrite:
            raise ConfigError(
                f"{results_path} already holds results. Continue it with --resume-from-result-path {results_path}, "
                "start over with --overwrite, or choose another --output-dir"
            )
        results_path.write_text("", encoding="utf-8")
        finished = set()
    # written again at the end; until then none may disagree with the results file (a killed run leaves none)
    for name in (SUMMARY_JSON, SUMMARY_CSV, REPORT_NAME):
        (output_dir / name).unlink(missing_ok=True)
    public = config.public()
    public["component_config"] = components  # rescoring builds the reward with the same config
    public["started_at"] = datetime.now(timezone.utc).isoformat()
    total = count * config.repeats - _finished_among(selected, finished, config.repeats)
    stats = _Stats(total)

    writer = ResultsWriter(results_path, redact=redactor)
    send, receive = anyio.create_memory_object_stream[tuple[dict, int, str]](config.max_concurrent)

    async def produce() -> None:
        async with send:
            for _, record in selected():
                for repeat in range(config.repeats):
                    key = episode_id(record, repeat)
                    if key not in finished:
                        await send.send((record, repeat, key))

    async def work(bar: _Progress, stream) -> None:
        async with stream:
            async for record, repeat, key in stream:
                try:
                    result = await run_episode(
                        record, policy, registry=registry, limits=config.limits, system_prompt=config.system_prompt,
                        verify_kwargs=dict(config.verify_kwargs), component_config=components, repeat=repeat,
                        evaluation_config=public, episode_key=key,
                    )
                except Exception as error:  # run_episode reports failures itself; this is the last line of defence
                    logger.warning("episode %s crashed: %s: %s", key, type(error).__name__, error)
                    result = _failure_result(record, repeat, key, error, public)
                if template is not None:
                    try:
                        result.full_context = template.render(result.messages, result.tools)
                    except Exception as error:  # a template that cannot render this trajectory: keep the episode
                        logger.warning("episode %s: chat template failed: %s", key, error)
                line = writer.line_for(result)
                # fsync blocks; a thread keeps the event loop (and every other episode) running meanwhile
                await anyio.to_thread.run_sync(writer.write_line, line)
                stats.add(result)
                bar.update()
                if config.verbose:
                    bar.print(f"{result.id[:12]}… r{result.repeat} {result.generator} score={result.score:.3f} "
                              f"{result.finish_reason}{' ' + str(result.error_type) if result.error_type else ''}")

    try:
        with _Progress(stats, progress) as bar:
            async with anyio.create_task_group() as group:
                group.start_soon(produce)
                for _ in range(config.max_concurrent):
                    group.start_soon(work, bar, receive.clone())
                receive.close()  # the workers hold clones; the stream ends when they all do
    finally:
        writer.close()

    examples: list = []
    summary = summarize_file(results_path, examples=examples)
    summary["results_path"] = str(results_path)
    summary["evaluation_config"] = redactor.data(public)
    summary["this_run"] = {"episodes": stats.done, "infrastructure_errors": stats.errors,
                           "skipped_as_finished": count * config.repeats - total,
                           "duration_s": round(time.monotonic() - stats.started, 3)}
    write_summary(output_dir, summary, examples)
    return summary


def _finished_among(selected: Any, finished: set[str], repeats: int) -> int:
    if not finished:
        return 0
    return sum(episode_id(record, repeat) in finished for _, record in selected() for repeat in range(repeats))


def run_evaluation(config: EvalConfig, **kwargs: Any) -> dict:
    """:func:`evaluate` from synchronous code."""
    return anyio.run(lambda: evaluate(config, **kwargs))
