"""Typed errors. Model mistakes and infrastructure failures are kept apart: retries and resume treat them differently."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator


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
    "endpoint_unreachable": "the endpoint refused or reset the connection, or its host could not be reached, or its "
                            "TLS certificate failed verification (not retried)",
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
    "reward_timeout": "the reward or interaction ran past its limit (--reward-timeout, or the reward's own, "
                      "reported with report_error) on this answer; score 0",
    "model_error": "another model error",
}

#: The model-side kinds of :data:`ERROR_KINDS`: an episode that ends with one is scored, never re-run. A reward may
#: report these, and only these, with :func:`report_error`.
MODEL_ERROR_KINDS = ("request_rejected", "tool_call", "reward_timeout", "model_error")

#: The reports of the scoring call running in this context (a list while one runs, else None); per call, so the
#: episodes scored at the same time in other threads or tasks never see each other's.
_REPORTS: contextvars.ContextVar[list | None] = contextvars.ContextVar("bootcamp_reward_reports", default=None)


def report_error(kind: str, message: str) -> None:
    """Report that the reward could not score the answer it is scoring: the episode's result gets ``error_kind`` ``kind``.

    For a reward that returns a score instead of raising (its own time limit on a verifier, say): called from inside
    ``verify_score`` (``verify_correction``, ``extract_output``), on the thread that runs it. When the rollout engine
    scores the episode, the episode then ends as when its own ``--reward-timeout`` is hit: ``finish_reason``
    ``"error"``, ``error_type`` ``"model"``, ``error`` ``"<reward>.verify_score: <message>"``, score 0, never re-run.
    The first report of a call counts. Outside a scoring call (a test or a judge calling ``verify_score`` directly)
    nothing is recorded.

    ``kind`` must be one of :data:`MODEL_ERROR_KINDS`; any other is a :class:`PluginError`, which ``verify_score``
    raises when called directly (so a test or the conformance kit shows it) and scores 0 and records inside a
    scoring call (so an evaluation goes on).
    """
    if not isinstance(kind, str) or kind not in MODEL_ERROR_KINDS:
        raise PluginError(f"report_error: {kind!r} is not a model-side error kind; one of "
                          f"{', '.join(MODEL_ERROR_KINDS)}")
    reports = _REPORTS.get()
    if reports is not None and not reports:
        reports.append((kind, str(message)))


@contextlib.contextmanager
def collect_reports() -> Iterator[list[tuple[str, str]]]:
    """Bind a scoring call: what :func:`report_error` reports inside the block lands in the list this yields."""
    token = _REPORTS.set([])
    try:
        yield _REPORTS.get()
    finally:
        _REPORTS.reset(token)
