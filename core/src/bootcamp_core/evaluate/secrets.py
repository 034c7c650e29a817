"""Credentials of an evaluation kept out of everything it writes and logs: the API key and the extra-header values.

They are never written (results, summary, report, ``evaluation_config``) and are masked in the log records of the
run, even when a server or plugin echoes them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

__all__ = ["MaskedLogs", "Redactor"]


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


class MaskedLogs:
    """Installs a :class:`Redactor` on the handlers of the root and ``bootcamp_core`` loggers while a run lasts, so
    no log line of the engine, the retries or a plugin shows a secret."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.handlers: list[logging.Handler] = []

    def __enter__(self) -> MaskedLogs:
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
