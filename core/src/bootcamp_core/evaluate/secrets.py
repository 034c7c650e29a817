"""Credentials of an evaluation kept out of everything it writes and logs: the API key, the extra-header values and
the credentials inside URLs (``http://user:PASSWORD@host/v1``, ``https://TOKEN@host``, ``?api_key=...``,
``&token=...``).

They are never written (results, summary, report, ``evaluation_config``) and are masked in the log records of the
run and in the errors it reports, even when a server or plugin echoes them. :func:`mask_url` masks one URL;
:func:`mask_urls` every URL inside a text (one linear scan, no regular expression), which log records and error
messages also get, whatever secrets are known.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

__all__ = ["CREDENTIAL_KEYS", "CREDENTIAL_PARAMS", "MaskedLogs", "Redactor", "config_secrets", "mask_config", "mask_url",
           "mask_urls", "url_credentials"]

MASK = "[redacted]"

#: Query parameters whose value is a credential (compared lower-case, ``-`` read as ``_``).
CREDENTIAL_PARAMS = frozenset({
    "api_key", "apikey", "key", "token", "access_token", "auth", "auth_token", "authorization", "password", "passwd",
    "pwd", "secret", "client_secret", "sig", "signature", "x_api_key", "bearer", "session", "sessionid",
})

#: Config keys whose string value is a credential (a narrower list: ``key`` or ``session`` may mean anything there).
CREDENTIAL_KEYS = frozenset({
    "token", "api_key", "apikey", "access_token", "auth_token", "authorization", "password", "passwd", "secret",
    "client_secret", "x_api_key",
})

#: Characters that end a URL inside a text.
_URL_END = frozenset(" \t\r\n\"'<>`()[]{}|\\^")


def _credential_param(name: str) -> bool:
    return name.strip().lower().replace("-", "_") in CREDENTIAL_PARAMS


def _credential_key(name: str) -> bool:
    return name.strip().lower().replace("-", "_") in CREDENTIAL_KEYS


def url_credentials(url: str) -> list[tuple[str, str]]:
    """The credentials in ``url`` as (text, masked text) pairs: ``user:PW@`` → ``user:[redacted]@``, ``TOKEN@`` →
    ``[redacted]@``, ``token=T`` → ``token=[redacted]``; empty for a URL without any."""
    pairs: list[tuple[str, str]] = []
    scheme = url.find("://")
    if scheme < 0:
        return pairs
    start = scheme + 3
    end = len(url)
    for stop in "/?#":
        found = url.find(stop, start)
        if found >= 0:
            end = min(end, found)
    authority = url[start:end]
    userinfo, at, _ = authority.rpartition("@")
    if at and userinfo:
        user, colon, password = userinfo.partition(":")
        if colon and password:
            pairs.append((f"{userinfo}@", f"{user}:{MASK}@"))
        elif not colon:  # https://TOKEN@host: the user name is the credential
            pairs.append((f"{userinfo}@", f"{MASK}@"))
    query = url.find("?", end)
    if query >= 0:
        fragment = url.find("#", query)
        for part in url[query + 1:fragment if fragment >= 0 else len(url)].replace(";", "&").split("&"):
            name, equals, value = part.partition("=")
            if equals and value and _credential_param(name):
                pairs.append((f"{name}={value}", f"{name}={MASK}"))
    return pairs


def mask_url(url: str | None) -> str | None:
    """``url`` with its credentials masked (see :func:`url_credentials`); ``None`` stays ``None``."""
    if not url:
        return url
    for secret, masked in url_credentials(url):
        url = url.replace(secret, masked)
    return url


def mask_config(value: Any) -> Any:
    """JSON-like config (a tool config's entries ...) with its credentials masked: the value of every key named like
    one (``token``, ``api_key``, ``password``, see :data:`CREDENTIAL_KEYS`) and those inside URLs. Containers are
    copied."""
    if isinstance(value, str):
        return mask_urls(value)
    if isinstance(value, dict):
        return {key: MASK if isinstance(item, str) and item and _credential_key(str(key)) else mask_config(item)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_config(item) for item in value]
    return value


def config_secrets(value: Any) -> list[str]:
    """The credentials :func:`mask_config` masks in ``value``, and its URLs (for a :class:`Redactor`)."""
    found: list[str] = []
    if isinstance(value, str):
        if "://" in value:
            found.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and item and _credential_key(str(key)):
                found.append(item)
            else:
                found += config_secrets(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            found += config_secrets(item)
    return found


def mask_urls(text: str) -> str:
    """``text`` with the credentials of every URL in it masked. Linear in the length of ``text``: each URL is found
    with ``str.find`` and read once."""
    if "://" not in text:
        return text
    out: list[str] = []
    position = 0
    while True:
        found = text.find("://", position)
        if found < 0:
            break
        end = found + 3
        while end < len(text) and text[end] not in _URL_END:
            end += 1
        start = found
        while start > position and (text[start - 1].isalnum() or text[start - 1] in "+-."):
            start -= 1  # the scheme
        out.append(text[position:start])
        out.append(mask_url(text[start:end]) or "")
        position = end
    out.append(text[position:])
    return "".join(out)


class Redactor:
    """Masks secrets in text, in JSON-like data and in log records.

    Each secret is masked whole and, for an ``Authorization``-style value such as ``"Bearer sk-..."``, also its part
    after the scheme word. Empty strings, the placeholder ``EMPTY`` and values shorter than :attr:`MIN_LENGTH`
    characters are left alone: masking a header value like ``"on"`` everywhere would garble the results, and such
    short values are not credentials.
    """

    MIN_LENGTH = 6
    MASK = MASK

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self.secrets: list[str] = []
        #: (text, masked text) pairs from the URLs among ``secrets``, e.g. ``user:PW@`` → ``user:[redacted]@``
        self.pairs: list[tuple[str, str]] = []
        self._in_json: list[str] = []
        self.add(secrets)

    def add(self, secrets: Iterable[str | None]) -> None:
        """Mask these too (a run learns the credentials of its tool config after it started)."""
        found: set[str] = set(self.secrets)
        for secret in secrets:
            if not isinstance(secret, str):
                continue
            secret = secret.strip()
            if "://" in secret:  # a URL: only its credentials are secret, also when too short to mask everywhere
                for text, masked in url_credentials(secret):
                    if (text, masked) not in self.pairs:
                        self.pairs.append((text, masked))
                    value = text.partition("=")[2] if "=" in text else text[:-1].partition(":")[2] or text[:-1]
                    if len(value) >= self.MIN_LENGTH:
                        found.add(value)
                continue
            for candidate in (secret, secret.split()[-1] if secret.split() else ""):
                if len(candidate) >= self.MIN_LENGTH and candidate != "EMPTY":
                    found.add(candidate)
        # longest first, so "Bearer sk-x" is masked whole before "sk-x" would leave "Bearer " behind
        self.secrets = sorted(found, key=len, reverse=True)
        self.pairs.sort(key=lambda pair: len(pair[0]), reverse=True)
        from bootcamp_core.data.schema import dumps

        # each as it reads inside a JSON string that dumps wrote: JSON escapes character by character, so a string
        # holding one holds it in its JSON text too
        self._in_json = [dumps(text)[1:-1] for text in (*(text for text, _ in self.pairs), *self.secrets)]

    def __bool__(self) -> bool:
        return bool(self.secrets or self.pairs)

    def may_be_in(self, json_text: str) -> bool:
        """Whether a value whose JSON text (as :func:`~bootcamp_core.data.schema.dumps` writes it) is ``json_text``
        may hold something to mask: when not, :meth:`data` would give it back unchanged. A scan of the text for each
        secret, in C, where :meth:`data` walks the whole value."""
        return any(secret in json_text for secret in self._in_json)

    def text(self, value: str) -> str:
        for secret, masked in self.pairs:
            if secret in value:
                value = value.replace(secret, masked)
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, self.MASK)
        return value

    def data(self, value: Any) -> Any:
        """``value`` with every string value masked (keys are the schema's and stay); containers are copied."""
        if not self:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.data(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(item) for item in value]
        return value

    def filter(self, record: logging.LogRecord) -> bool:
        """A :class:`logging.Filter`: the message and any traceback of ``record`` masked in place (credentials in
        any URL too, see :func:`mask_urls`)."""
        # URL credentials are masked even when no secret is known
        message = record.getMessage()
        masked = mask_urls(self.text(message))
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info:
            record.exc_text = mask_urls(self.text(logging.Formatter().formatException(record.exc_info)))
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = mask_urls(self.text(record.exc_text))
        if record.stack_info:
            record.stack_info = mask_urls(self.text(record.stack_info))
        return True


class MaskedLogs:
    """Installs a :class:`Redactor` on the handlers of the root and ``bootcamp_core`` loggers while a run lasts, so
    no log line of the engine, the retries or a plugin shows a secret."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.handlers: list[logging.Handler] = []

    def __enter__(self) -> MaskedLogs:
        # always: any URL credential in a log line is masked, known secrets or not
        for name in (None, "bootcamp_core"):
            for handler in logging.getLogger(name).handlers:
                if handler not in self.handlers:
                    handler.addFilter(self.redactor)
                    self.handlers.append(handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for handler in self.handlers:
            handler.removeFilter(self.redactor)
