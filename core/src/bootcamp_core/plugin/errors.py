"""Typed errors. Model mistakes and infrastructure failures are kept apart: retries and resume treat them differently."""

from __future__ import annotations


class BootcampError(Exception):
    """Base of every error this project raises on purpose; its message is meant for the user as is."""


class ConfigError(BootcampError, ValueError):
    """A config file, flag or registry line is wrong.

    ``field`` names the config field the message is about (spelled as in the message, e.g. ``repeats``), so that a
    command line can name its own flag for it (``--repeats``) while the library speaks of fields.
    """

    def __init__(self, *args: object, field: str | None = None) -> None:
        super().__init__(*args)
        self.field = field


class PluginError(BootcampError):
    """A plugin cannot be loaded or breaks the plugin contract."""


class DuplicateIdError(PluginError):
    """Two plugins claim the same id of one kind, or the same namespace."""


class UnknownIdError(BootcampError, LookupError):
    """No installed component has this id."""

    def __str__(self) -> str:  # LookupError would repr() the message
        return str(self.args[0]) if self.args else ""


class GenerationError(BootcampError):
    """A generator failed to produce a record."""


class ModelError(BootcampError):
    """The model made a mistake (bad tool arguments, unknown tool, no answer): shown to it, the episode goes on.

    ``kind``: one of :data:`ERROR_KINDS`, the ``error_kind`` of the episode's result line when this ends it.
    """

    def __init__(self, *args: object, kind: str | None = None) -> None:
        super().__init__(*args)
        self.kind = kind


class InfrastructureError(BootcampError):
    """Something outside the model failed (server down, timeout, crashed worker): the episode is not scored.

    ``kind``: one of :data:`ERROR_KINDS`, the ``error_kind`` of the episode's result line.
    """

    def __init__(self, *args: object, kind: str | None = None) -> None:
        super().__init__(*args)
        self.kind = kind


#: Every ``error_kind`` a result line may carry, and what it means: the one list (README, "Exit status and error
#: kinds"). Infrastructure kinds end an episode unscored (re-run, resumed); model kinds end it scored.
ERROR_KINDS = {
    # infrastructure: the endpoint
    "endpoint_unreachable": "the endpoint refused or reset the connection, or its host could not be reached",
    "timeout": "a request to the endpoint took longer than --request-timeout, on every attempt in the retry budget",
    "auth": "HTTP 401/403: the API key is missing or wrong",
    "not_found": "HTTP 404: a wrong --api-url or --api-model",
    "rate_limited": "HTTP 429 on every attempt in the retry budget",
    "server_error": "HTTP 5xx (or 408) on every attempt in the retry budget",
    "malformed_response": "an HTTP 200 answer that is no chat completion (cut JSON, no choices, no message)",
    "http_error": "another HTTP status the endpoint answered with",
    # infrastructure: the rest
    "tool_server": "a tool server or tool backend failed",
    "episode_timeout": "the episode ran past --episode-timeout",
    "plugin_error": "a plugin (tool, interaction, reward) or the harness raised unexpectedly",
    "infrastructure": "another infrastructure failure",
    # model: the episode ends scored, never re-run
    "request_rejected": "HTTP 400/413/422: the endpoint refused the request itself (e.g. context length exceeded)",
    "tool_call": "tool calls of the model failed (bad arguments, an unknown tool); the episode went on",
    "reward_timeout": "the reward or interaction ran past its limit on this answer; score 0",
    "model_error": "another model error",
}
