"""The evaluation's config: every setting of one run, checked when it is made, and the component configs it names."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from bootcamp_core.episode.engine import RolloutLimits
from bootcamp_core.evaluate.secrets import mask_url
from bootcamp_core.plugin.backends import tool_backend
from bootcamp_core.plugin.errors import BootcampError, ConfigError

__all__ = ["TURN_LIMITS", "EvalConfig", "component_config", "parse_shard"]

#: The limits a generator may recommend (``TaskGenerator.limits``); the user's own always win.
TURN_LIMITS = ("max_assistant_turns", "max_user_turns")


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
    #: Ask the endpoint for the prompt and sampled token ids of every turn and keep them on its assistant message.
    return_token_ids: bool = False
    verify_kwargs: dict = attrs.field(factory=dict)
    limits: RolloutLimits = attrs.field(factory=RolloutLimits)  # tool_timeout_s, episode_timeout_s, max turns
    #: The fields of ``limits`` the user set. The turn limits not among them come from each record's generator
    #: (``TaskGenerator.limits``) when it recommends them. ``None``: the fields that differ from RolloutLimits'
    #: defaults count as set.
    explicit_limits: frozenset[str] | None = attrs.field(
        default=None, converter=attrs.converters.optional(frozenset))
    #: Per HTTP request to the endpoint (the OpenAI policy); a request that takes longer is retried.
    request_timeout_s: float = 600.0
    #: Retries of the OpenAI policy (Python API only; ``None``: ``RetryPolicy`` with the two fields below).
    retry: Any = None
    #: Seconds one request to the endpoint is retried for (attempts and waits together) before it fails.
    retry_budget_s: float = 600.0
    #: The first retry's backoff in seconds; it doubles per retry (with jitter) up to 30 s.
    retry_backoff_s: float = 0.5
    #: Check the endpoint (or the reference agents) before any episode: see the run module.
    preflight: bool = True
    #: Episodes still ending in an infrastructure error are run again this many more times, after the others.
    rerun_failed: int = 2
    #: The share of this run's episodes that may end in an infrastructure error before the run counts as failed.
    max_infra_error_rate: float = 0.02
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
            raise ConfigError(f"max_concurrent must be at least 1, got {self.max_concurrent}", field="max_concurrent")
        if self.repeats < 1:
            raise ConfigError(f"repeats must be at least 1, got {self.repeats}", field="repeats")
        if self.limit is not None and self.limit < 0:
            raise ConfigError(f"limit must be >= 0, got {self.limit}", field="limit")
        if self.shard is not None:  # the one range check of a shard (parse_shard only parses the text)
            index, count = self.shard
            if count < 1 or not 0 <= index < count:
                raise ConfigError(f"shard i/n needs 0 <= i < n, got {index}/{count}", field="shard")
        if not self.request_timeout_s > 0:
            raise ConfigError(f"request_timeout_s must be positive, got {self.request_timeout_s}",
                              field="request_timeout_s")
        if not self.retry_budget_s >= 0:
            raise ConfigError(f"retry_budget_s must be >= 0, got {self.retry_budget_s}", field="retry_budget_s")
        if not self.retry_backoff_s >= 0:
            raise ConfigError(f"retry_backoff_s must be >= 0, got {self.retry_backoff_s}", field="retry_backoff_s")
        if self.rerun_failed < 0:
            raise ConfigError(f"rerun_failed must be >= 0, got {self.rerun_failed}", field="rerun_failed")
        if not 0 <= self.max_infra_error_rate <= 1:
            raise ConfigError(f"max_infra_error_rate must be between 0 and 1, got {self.max_infra_error_rate}",
                              field="max_infra_error_rate")

    def public(self) -> dict:
        """The config as written into every result line: no API key, header names but not their values."""
        limits = attrs.asdict(self.limits)
        return {
            "dataset_path": str(self.dataset_path),
            "policy": self.policy_kind(),
            "api_url": mask_url(self.api_url),  # a password or token in a URL is never written
            "api_model": self.api_model,
            "api_extra_headers": sorted(self.api_extra_headers),
            "api_extra_params": self.api_extra_params,
            "return_token_ids": self.return_token_ids,
            "verify_kwargs": self.verify_kwargs,
            "limits": limits,
            # the turn limits not named here came from each record's generator where it recommends them
            "explicit_limits": sorted(self.explicit_limits) if self.explicit_limits is not None else None,
            "request_timeout_s": self.request_timeout_s,
            "retry_budget_s": self.retry_budget_s,
            "retry_backoff_s": self.retry_backoff_s,
            "rerun_failed": self.rerun_failed,
            "max_infra_error_rate": self.max_infra_error_rate,
            "max_concurrent": self.max_concurrent,
            "repeats": self.repeats,
            "system_prompt": self.system_prompt,
            "limit": self.limit,
            "shard": f"{self.shard[0]}/{self.shard[1]}" if self.shard else None,
            "tool_config": str(self.tool_config) if self.tool_config else None,
            "tool_server": mask_url(self.tool_server),
            "interaction_config": str(self.interaction_config) if self.interaction_config else None,
            "bootcamp_registry": str(self.bootcamp_registry) if self.bootcamp_registry else None,
            "tokenizer_path": str(self.tokenizer_path) if self.tokenizer_path else None,
        }

    def limits_for(self, recommended: Any) -> RolloutLimits:
        """``limits`` with the turn limits the user did not set taken from a generator's ``recommended`` limits
        (``TaskGenerator.limits``); a recommendation that is not a positive whole number is ignored."""
        if not recommended or not isinstance(recommended, Mapping):
            return self.limits
        given = self.explicit_limits
        if given is None:
            defaults = RolloutLimits()
            given = frozenset(name for name in TURN_LIMITS if getattr(self.limits, name) != getattr(defaults, name))
        changes = {}
        for name in TURN_LIMITS:
            value = recommended.get(name)
            if name not in given and isinstance(value, int) and not isinstance(value, bool) and value >= 1:
                changes[name] = value
        return attrs.evolve(self.limits, **changes) if changes else self.limits

    def policy_kind(self) -> str:
        from bootcamp_core.episode.policies import policy_kind

        return policy_kind(self.policy, self.api_url)

    def secrets(self) -> list[str]:
        """Every credential this config sends: the API key in use and the extra-header values (see :class:`Redactor`)."""
        key = self.api_key if self.api_key is not None else os.environ.get("OPENAI_API_KEY")
        # the URLs too: the Redactor masks only the credentials inside them (user:PASSWORD@, ?api_key=...)
        return [key or "", *self.api_extra_headers.values(), self.api_url or "", self.tool_server or ""]


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` → ``(i, n)``; the range is checked by :class:`EvalConfig`."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ConfigError(f'shard must look like "i/n" (e.g. 0/4), got {text!r}', field="shard") from None
    return index, count


def component_config(config: EvalConfig, registry: Any) -> dict[str, dict]:
    """The ``tool_config`` / ``interaction_config`` files as {component id: constructor config}."""
    from bootcamp_core.data.config import load_component_config

    resolved: dict[str, dict] = {}
    for kind, path in (("tool", config.tool_config), ("interaction", config.interaction_config)):
        if path is None:
            continue
        for entry in load_component_config(path, kind):
            if kind == "tool" and "type" in entry.config:
                # runs on a backend (a tool server ...): a full id, which need not be installed here
                try:
                    tool_backend(entry.config["type"])
                except ConfigError as error:
                    raise ConfigError(f"{path}: tool {entry.class_name}: {error}", field=error.field) from None
                resolved[str(entry.config.get("tool_id") or entry.class_name)] = dict(entry.config)
                continue
            try:
                resolved[registry.resolve(kind, entry.class_name)] = dict(entry.config)
            except BootcampError as error:
                raise ConfigError(f"{path}: {error}") from None
    return resolved
