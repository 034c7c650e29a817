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
    """The model made a mistake (bad tool arguments, unknown tool, no answer): shown to it, the episode goes on."""


class InfrastructureError(BootcampError):
    """Something outside the model failed (server down, timeout, crashed worker): the episode is not scored."""
