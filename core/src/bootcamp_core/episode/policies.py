"""Policies: any OpenAI-compatible endpoint, or a bootcamp's reference agent (the embedded, offline default).

``make_policy`` picks one the way ``bootcamp eval`` does: the ``policy`` asked for, else the reference agents when no
``api_url`` is given::

    policy = make_policy(None, api_url="http://localhost:8000/v1", api_model="Qwen/Qwen3-8B")
    result = await run_episode(record, policy)
    await policy.aclose()
"""

from __future__ import annotations

import functools
import json
import logging
import os
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bootcamp_core.data.records import GeneratedSample
from bootcamp_core.episode.engine import PolicyTurn
from bootcamp_core.episode.request_json import OWN_FIELDS, RequestEncoder, encodable, encode_json
from bootcamp_core.episode.retries import (
    AdaptiveConcurrency,
    RetryableError,
    RetryPolicy,
    RetryStats,
    retry_after_seconds,
    with_retries,
)
from bootcamp_core.plugin.errors import ConfigError, InfrastructureError, ModelError
from bootcamp_core.plugin.loader import Registry, get_registry

logger = logging.getLogger("bootcamp_core.episode.policies")

__all__ = [
    "OpenAIPolicy",
    "PreflightError",
    "ReferencePolicy",
    "make_policy",
    "normalize_api_url",
    "parse_extra_headers",
    "parse_extra_params",
]

_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")
#: Connections per HTTP client of :class:`OpenAIPolicy` (see there why there are several).
CONNECTIONS_PER_CLIENT = 64
#: HTTP statuses that reject the request itself, deterministically (400 bad request, 413 too large, 422 e.g. "maximum
#: context length exceeded"): a :class:`ModelError` that ends the episode as scored, never retried or resumed.
MODEL_ERROR_STATUSES = frozenset({400, 413, 422})
#: The preflight's retries of transient failures (429, 5xx, a malformed answer) stop after this many seconds.
PREFLIGHT_BUDGET_S = 30.0
#: A header on the preflight's test request, so a server (or a test double) can tell it from an episode's turns.
PREFLIGHT_HEADER = "X-Bootcamp-Preflight"


class PreflightError(InfrastructureError):
    """The check before a run (endpoint reachable, key accepted, model served, one tiny request) failed; ``bootcamp
    eval`` exits 3 on it."""


def status_kind(status: int) -> str:
    """The ``error_kind`` (:data:`~bootcamp_core.plugin.errors.ERROR_KINDS`) of an HTTP error status."""
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status == 429:
        return "rate_limited"
    if status >= 500 or status == 408:
        return "server_error"
    if status in MODEL_ERROR_STATUSES:
        return "request_rejected"
    return "http_error"


def normalize_api_url(url: str) -> str:
    """The SDK's ``base_url``: the original framework took the full endpoint, so a trailing ``/chat/completions`` goes."""
    url = url.strip().rstrip("/")
    if url.endswith("/chat/completions"):
        url = url[: -len("/chat/completions")].rstrip("/")
    return url


def parse_extra_headers(text: str | None) -> dict:
    """Headers from a JSON object or the original's ``k:v,k2:v2``."""
    if text is None or not text.strip():
        return {}
    text = text.strip()
    if text.startswith("{"):
        try:
            headers = json.loads(text)
        except ValueError as error:
            raise ConfigError(f"api_extra_headers is not valid JSON: {error}", field="api_extra_headers") from None
        if not isinstance(headers, dict):
            raise ConfigError("api_extra_headers must be a JSON object", field="api_extra_headers")
        return {str(key): str(value) for key, value in headers.items()}
    headers = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, colon, value = item.partition(":")
        if not colon or not key.strip():
            raise ConfigError(f'api_extra_headers: expected "name:value" pairs separated by commas, got {item!r}',
                              field="api_extra_headers")
        headers[key.strip()] = value.strip()
    return headers


def parse_extra_params(text: str | None) -> dict:
    """Request parameters from a JSON object or ``@path/to/file.json``."""
    if text is None or not text.strip():
        return {}
    text = text.strip()
    source = "api_extra_params"
    if text.startswith("@"):
        path = Path(text[1:]).expanduser()
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(f"api_extra_params: cannot read {path}: {error.strerror or error}",
                              field="api_extra_params") from None
    try:
        params = json.loads(text)
    except ValueError as error:
        raise ConfigError(f"{source} is not valid JSON: {error}", field="api_extra_params") from None
    if not isinstance(params, dict):
        raise ConfigError(f"{source} must hold a JSON object", field="api_extra_params")
    return params


def _sent(message: dict) -> dict:
    """A message as sent: without ``reasoning_content``, which some APIs reject in requests (it stays in the
    trajectory)."""
    if "reasoning_content" in message:
        return {key: value for key, value in message.items() if key != "reasoning_content"}
    return message


def _outgoing(messages: list[dict]) -> list[dict]:
    """Messages as sent (:func:`_sent`)."""
    return [_sent(message) for message in messages]


#: What an assistant message of a trajectory keeps of a turn's token ids (``return_token_ids``); never sent back.
TOKEN_ID_KEYS = ("prompt_token_ids", "completion_token_ids")
_HELD_BACK = frozenset({"reasoning_content", *TOKEN_ID_KEYS})
#: The request fields that ask for the token ids: vLLM's (>= 0.10.2; prompt ids on the response, sampled ids on the
#: choice) and SGLang's (both on the choice, the prompt's asked for on its own). A server ignores the other's field.
TOKEN_ID_REQUEST = {"return_token_ids": True, "return_prompt_token_ids": True}


def _sent_without_ids(message: dict) -> dict:
    """:func:`_sent` that also holds back the token ids kept on assistant messages."""
    if message.get("role") == "assistant" or "reasoning_content" in message:
        return {key: value for key, value in message.items() if key not in _HELD_BACK}
    return message


def _outgoing_without_ids(messages: list[dict]) -> list[dict]:
    """Messages as sent (:func:`_sent_without_ids`)."""
    return [_sent_without_ids(message) for message in messages]


def token_ids_of(completion: dict) -> tuple[list[int], list[int]] | None:
    """``(prompt ids, sampled ids)`` of a chat completion that carries them, else None.

    Sampled ids: the choice's ``token_ids`` (vLLM and SGLang). Prompt ids: the choice's ``prompt_token_ids``
    (SGLang), else the response's (vLLM).
    """
    choice = completion["choices"][0]
    completion_ids = choice.get("token_ids")
    prompt_ids = choice.get("prompt_token_ids")
    if prompt_ids is None:
        prompt_ids = completion.get("prompt_token_ids")
    if not (isinstance(prompt_ids, list) and isinstance(completion_ids, list)):
        return None
    if not all(type(token) is int for token in prompt_ids) or not all(type(token) is int for token in completion_ids):
        return None
    return prompt_ids, completion_ids


#: The environment variable that picks OpenAIPolicy's HTTP client: ``auto`` (the default) or ``sdk``.
HTTP_CLIENT_ENV = "BOOTCAMP_HTTP_CLIENT"


class OpenAIPolicy:
    """Any OpenAI-compatible chat-completions endpoint; our retries are the only ones.

    Each turn's request is built once as JSON. For an ``http://`` or ``https://`` endpoint without a proxy (local
    inference servers, hosted APIs) it is joined from the bytes of each message, encoded once per episode (so a
    request costs the same CPU at any length of history: :mod:`~bootcamp_core.episode.request_json`), and sent by
    :class:`~bootcamp_core.episode.http_client.ChatHTTPClient`, over TLS with the SDK's own trust
    (:func:`sdk_ssl_context`); anything else (a proxy, another event loop, or ``client="sdk"``) goes through
    ``AsyncOpenAI``. Either way errors are the SDK's types, classified alike.
    """

    def __init__(
        self,
        *,
        api_url: str,
        model: str,
        api_key: str | None = None,
        extra_headers: dict | None = None,
        extra_params: dict | None = None,
        retry: RetryPolicy | None = None,
        request_timeout_s: float = 600.0,
        max_connections: int = 2000,
        max_concurrency: int | None = None,
        client: str | None = None,
        return_token_ids: bool = False,
    ) -> None:
        # the environment's choice when the caller makes none: BOOTCAMP_HTTP_CLIENT=sdk sends everything through the
        # SDK, a way back should an endpoint's HTTP trip up the lean client
        client = client or os.environ.get(HTTP_CLIENT_ENV) or "auto"
        if client not in ("auto", "sdk"):
            raise ConfigError(f'{HTTP_CLIENT_ENV} (the HTTP client) must be "auto" or "sdk", got {client!r}')
        self.api_url = normalize_api_url(api_url)
        self.model = model
        self._api_key = api_key if api_key is not None else (os.environ.get("OPENAI_API_KEY") or "EMPTY")
        self.extra_headers = dict(extra_headers or {})
        self.extra_params = dict(extra_params or {})
        #: ask for the prompt and sampled token ids (:data:`TOKEN_ID_REQUEST`) and keep them on each assistant
        #: message (:data:`TOKEN_ID_KEYS`); answers without them are counted in ``turns_without_token_ids``
        self.return_token_ids = return_token_ids
        self.turns_without_token_ids = 0
        self.retry = retry or RetryPolicy()
        self.request_timeout_s = request_timeout_s
        self.max_connections = max_connections
        #: requests in flight, lowered on bursts of 429s and raised again as answers come
        self.concurrency = AdaptiveConcurrency(max_concurrency or max_connections)
        #: retries and the time spent waiting before them, over every request of this policy
        self.retry_stats = RetryStats()
        # Several small clients instead of one big pool: httpx's pool scans all its connections on every request,
        # so one pool of 1,000 connections costs O(n) per request and throughput collapses at high concurrency
        # (bench/bench_rollout.py (c): episodes/s at concurrency 1,000 over the best level, target >= 0.8).
        # Each request goes to the least-busy client; a new client opens only when all are full.
        self._clients: list[Any] = []
        self._in_flight: list[int] = []
        self._client = self._new_client()
        # The hot path: prepared JSON over a lean keep-alive client (see :mod:`bootcamp_core.episode.http_client`)
        # where the endpoint is http or https, no proxy, on asyncio; None until the first request, False where it
        # cannot serve.
        # ``client="sdk"`` sends every request through the SDK's ``AsyncOpenAI`` instead.
        self._http: Any = None if client == "auto" else False
        # the lean path's request bodies: each message of an episode's history encoded once, its bytes reused by
        # the episode's later turns (at most two conversations per request in flight remembered)
        self._encoder: Any = None

    def _new_client(self) -> Any:
        import openai

        limits = sdk_http().Limits(max_connections=CONNECTIONS_PER_CLIENT,
                                   max_keepalive_connections=CONNECTIONS_PER_CLIENT)
        client = openai.AsyncOpenAI(
            base_url=self.api_url,
            api_key=self._api_key,
            max_retries=0,  # ours are the only retries
            timeout=self.request_timeout_s,
            default_headers=self.extra_headers,
            http_client=openai.DefaultAsyncHttpxClient(limits=limits, timeout=self.request_timeout_s),
        )
        self._clients.append(client)
        self._in_flight.append(0)
        return client

    def _pick(self) -> int:
        index = min(range(len(self._in_flight)), key=self._in_flight.__getitem__)
        if (self._in_flight[index] >= CONNECTIONS_PER_CLIENT
                and len(self._clients) * CONNECTIONS_PER_CLIENT < self.max_connections):
            self._new_client()
            index = len(self._clients) - 1
        return index

    def __repr__(self) -> str:  # never the key
        return f"OpenAIPolicy(api_url={self.api_url!r}, model={self.model!r})"

    def _mask(self, text: str) -> str:
        """``text`` with the API key masked wherever a server echoed it."""
        if self._api_key and self._api_key != "EMPTY":
            text = text.replace(self._api_key, "***")
        return text

    def _subject(self, error: BaseException) -> str:
        """What failed, e.g. ``HTTP 500 from http://host/v1`` (the retry layer adds the attempts after it)."""
        status = getattr(error, "status_code", None)
        return self._mask(f"HTTP {status} from {self.api_url}" if status else (
            f"{type(error).__name__} talking to {self.api_url}"
        ))

    def _detail(self, error: BaseException) -> str:
        """Why, once: the server's own error message, not the SDK's ``Error code: 500 - ...`` restatement of it."""
        body = getattr(error, "body", None)
        detail = body.get("message") if isinstance(body, dict) else body if isinstance(body, str) else None
        if not isinstance(detail, str) or not detail.strip():
            detail = str(getattr(error, "message", None) or error)
        return self._mask(detail)

    def _certificate_refused(self, error: BaseException) -> str | None:
        """What to tell the user when ``error`` is the server's TLS certificate failing verification, else ``None``."""
        refused = _certificate_failure(error)
        if refused is None:
            return None
        return (f"{self.api_url}: the server's TLS certificate failed verification "
                f"({refused.verify_message or refused}); if it is signed by a private CA, trust that CA with "
                "SSL_CERT_FILE or SSL_CERT_DIR")

    def _describe(self, error: BaseException) -> str:
        """An error as text for logs and results, with the API key masked wherever a server echoed it."""
        return f"{self._subject(error)}: {self._detail(error)}"

    def _fast_client(self) -> Any:
        """The lean client where it reaches the endpoint as the SDK would, else ``False`` (the SDK's path)."""
        if self._http is None:
            from bootcamp_core.episode.http_client import ChatHTTPClient, usable_for

            url = f"{self.api_url}/chat/completions"
            if usable_for(url):
                headers = {"Authorization": f"Bearer {self._api_key}", "User-Agent": _user_agent(),
                           **self.extra_headers}
                self._http = ChatHTTPClient(url, headers, timeout_s=self.request_timeout_s,
                                            max_connections=self.max_connections,
                                            ssl_context=sdk_ssl_context() if url.startswith("https:") else None)
            else:
                self._http = False
        return self._http

    def _body(self, messages: list[dict], tools: list[dict], fields: dict) -> bytes:
        """A turn's request as JSON bytes, the history's messages encoded once per episode (see
        :mod:`bootcamp_core.episode.request_json`)."""
        if self._encoder is None or self._encoder[0] != self.return_token_ids:
            self._encoder = (self.return_token_ids, RequestEncoder(
                _sent_without_ids if self.return_token_ids else _sent, capacity=max(64, 2 * self.concurrency.ceiling)))
        return self._encoder[1].encode(self.model, messages, tools, fields)

    async def _post(self, body: bytes, headers: dict | None) -> dict:
        """One chat completion through the lean client: the answer's JSON, or the SDK's error for what went wrong."""
        import openai

        try:
            status, answer_headers, content = await self._http.post(body, headers)
        except TimeoutError:
            raise openai.APITimeoutError(request=self._httpx_request()) from None
        except ConnectionError as error:
            raise openai.APIConnectionError(message=f"Connection error: {error}", request=self._httpx_request()
                                            ) from error.__cause__
        if not 200 <= status < 300:
            raise self._status_error(status, answer_headers, content)
        return json.loads(content)  # a ValueError on a body that is no JSON

    def _httpx_request(self) -> Any:
        return sdk_http().Request("POST", f"{self.api_url}/chat/completions")

    def _status_error(self, status: int, headers: dict, content: bytes) -> Exception:
        """The SDK's own error for an HTTP error answer (``RateLimitError``, ``AuthenticationError`` ...), built as
        the SDK builds it: ``body`` the answer's ``error`` object, ``response`` with the answer's headers."""
        response = sdk_http().Response(status, headers=headers, content=content, request=self._httpx_request())
        text = content.decode("utf-8", errors="replace").strip()
        body: Any = text
        try:
            body = json.loads(text)
        except ValueError:
            pass
        message = f"Error code: {status} - {body}"
        data = body.get("error", body) if isinstance(body, dict) else body
        try:
            return self._client._make_status_error(message, body=data, response=response)
        except AttributeError:  # an SDK without the mapping
            import openai

            return openai.APIStatusError(message, response=response, body=data)

    async def _create(self, index: int, payload: dict, headers: dict | None) -> Any:
        """``payload`` sent through the SDK's ``AsyncOpenAI`` number ``index``."""
        kwargs = {key: value for key, value in payload.items() if key in ("model", "messages", "tools")}
        extra_body = {key: value for key, value in payload.items() if key not in kwargs}
        return await self._clients[index].chat.completions.create(
            **kwargs, **({"extra_body": extra_body} if extra_body else {}),
            **({"extra_headers": headers} if headers else {}))

    async def _request(self, payload: dict | None, headers: dict | None = None, body: bytes | None = None) -> Any:
        """The chat completion of ``payload`` (or of ``body``, the same request already encoded for the lean
        client) as a dict, or the retry layer's error for what went wrong."""
        import openai

        round_ = await self.concurrency.acquire()
        throttled = False
        index = -1
        try:
            if self._fast_client():
                if body is None:
                    body = encode_json(payload)
                return _checked(await self._post(body, headers), self.api_url)
            index = self._pick()
            self._in_flight[index] += 1
            if body is not None:
                # the SDK's raw interface: its HTTP, headers and errors, without validating and transforming the
                # whole history on every request
                response = await self._clients[index].post(
                    "/chat/completions", cast_to=sdk_http().Response, content=body,
                    options={"headers": headers} if headers else {})
                return _checked(json.loads(response.content), self.api_url)  # a ValueError on a body cut short
            try:
                completion = await self._create(index, payload, headers)
            except UnicodeEncodeError:  # a lone surrogate in the history, which httpx cannot encode: as the lean path
                completion = await self._create(index, encodable(payload), headers)
            if hasattr(completion, "model_dump"):  # the SDK's model, its extra fields (reasoning_content) included
                completion = completion.model_dump(warnings=False)
            return _checked(completion, self.api_url)
        except openai.APIStatusError as error:
            status = error.status_code
            kind = status_kind(status)
            throttled = status == 429
            if kind in ("rate_limited", "server_error"):
                raise RetryableError(
                    self._describe(error), retry_after=retry_after_seconds(error.response.headers),
                    subject=self._subject(error), detail=self._detail(error), kind=kind,
                ) from None
            if kind == "request_rejected":
                # The request itself is what the server refuses (too long a context, a malformed turn): the same
                # request gets the same answer, so this is the model's episode ending, not a failure to resume.
                raise ModelError(self._describe(error), kind=kind) from None
            # 401/403/404 and the rest: a wrong key, model or URL, which needs the user, not a retry
            raise InfrastructureError(self._describe(error), kind=kind) from None
        except openai.APIConnectionError as error:  # refused, reset, timed out
            refused = self._certificate_refused(error)
            if refused is not None:  # the same certificate fails the same way: the user must act, not a retry
                raise InfrastructureError(refused, kind="endpoint_unreachable") from None
            kind = "timeout" if isinstance(error, openai.APITimeoutError) else "endpoint_unreachable"
            raise RetryableError(
                self._describe(error), subject=self._subject(error), detail=self._detail(error), kind=kind,
            ) from None
        except ValueError as error:  # a 200 whose body is no JSON (cut short): the SDK's JSONDecodeError
            raise RetryableError(
                f"{self.api_url} answered with a malformed body: {error}", subject=f"malformed answer from "
                f"{self.api_url}", detail=f"{type(error).__name__}: {error}", kind="malformed_response",
            ) from None
        finally:
            if index >= 0:
                self._in_flight[index] -= 1
            self.concurrency.release(round_, throttled=throttled)

    async def __call__(
        self, messages: list[dict], tools: list[dict], record: GeneratedSample, rng: random.Random
    ) -> PolicyTurn:
        """One chat completion, retried on infrastructure failures; the answer as an assistant message.

        Raises :class:`InfrastructureError` when the endpoint keeps failing (connection, timeout, 429, 5xx or a
        malformed answer until the retry budget is spent; 401/403/404 and other 4xx at once) and :class:`ModelError`
        when it rejects the request itself (:data:`MODEL_ERROR_STATUSES`), which no retry or resume can change.
        """
        fields: dict[str, Any] = dict(TOKEN_ID_REQUEST) if self.return_token_ids else {}
        fields.update(self.extra_params)  # any key the server takes, unvetted, as the SDK's extra_body
        payload: dict[str, Any] | None = None
        body: bytes | None = None
        incremental = (bool(self._fast_client()) or _sdk_takes_bytes()) and OWN_FIELDS.isdisjoint(fields)
        if not incremental:
            payload = {"model": self.model,
                       "messages": (_outgoing_without_ids if self.return_token_ids else _outgoing)(messages)}
            if tools:
                payload["tools"] = tools
            payload.update(fields)

        async def attempt() -> Any:
            nonlocal body
            if incremental and body is None:
                # in the first attempt, so that a history that is no JSON fails like any request that cannot be
                # sent: an infrastructure error at once, never retried
                body = self._body(messages, tools, fields)
            return await self._request(payload, body=body)

        completion = await with_retries(attempt, self.retry, rng, describe=self._describe, what="chat completion",
                                        stats=self.retry_stats)
        choice = completion["choices"][0]["message"]
        message: dict[str, Any] = {"role": "assistant", "content": choice.get("content")}
        calls = choice.get("tool_calls")
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id"),
                    "type": "function",
                    "function": {"name": (call.get("function") or {}).get("name"),
                                 "arguments": (call.get("function") or {}).get("arguments")},
                }
                for call in calls
            ]
        reasoning = choice.get("reasoning_content", choice.get("reasoning"))
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        if self.return_token_ids:
            ids = token_ids_of(completion)
            if ids is None:
                self.turns_without_token_ids += 1
            else:
                message["prompt_token_ids"], message["completion_token_ids"] = ids
        usage = completion.get("usage")
        counts = {key: int(usage.get(key) or 0) for key in _USAGE_KEYS} if isinstance(usage, dict) and usage else {}
        return PolicyTurn(message=message, usage=counts)

    async def check(self) -> None:
        """The preflight (and ``--dry-run``'s endpoint check): the endpoint answers, takes the key, serves the model
        and answers one tiny request; else a :class:`PreflightError` naming the cause, in one line.

        A connection refused, a wrong key (401/403) or URL (404) fails at once; 429, 5xx and malformed answers are
        retried for up to :data:`PREFLIGHT_BUDGET_S` (a storm must not fail a run before it starts). An endpoint
        without a model list (404 on ``/models``) is asked the tiny request only.
        """
        import openai

        def failed(error: BaseException) -> PreflightError:
            text = str(error) if isinstance(error, (InfrastructureError, ModelError)) else self._describe(error)
            text = self._certificate_refused(error) or text
            cause = getattr(error, "kind", None)
            if isinstance(error, openai.APIStatusError):
                cause = status_kind(error.status_code)
            elif isinstance(error, openai.APIConnectionError):
                cause = "timeout" if isinstance(error, openai.APITimeoutError) else "endpoint_unreachable"
            reason = {"auth": "the API key was refused", "not_found": "wrong URL or model name",
                      "endpoint_unreachable": "nothing answers there", "timeout": "the endpoint did not answer in "
                      f"{self.request_timeout_s:g} s"}.get(str(cause), "")
            return PreflightError(f"endpoint check failed{f' ({reason})' if reason else ''}: {text}",
                                  kind=cause or "infrastructure")

        try:
            served = [model.id async for model in self._client.models.list()]
        except openai.APIStatusError as error:
            if error.status_code != 404:
                raise failed(error) from None
            served = []  # no model list here: the tiny request below says whether the model is served
        except openai.APIConnectionError as error:
            raise failed(error) from None
        if served and self.model not in served:
            listed = ", ".join(served[:10]) + (f" and {len(served) - 10} more" if len(served) > 10 else "")
            raise PreflightError(f"endpoint check failed: model {self.model!r} is not served by {self.api_url} "
                                 f"(it serves {listed}); pass one of them as api_model, or skip this check with "
                                 "--no-preflight if the endpoint serves models it does not list", kind="not_found")
        payload: dict[str, Any] = {"model": self.model, "messages": [{"role": "user", "content": "Say OK."}],
                                   "max_tokens": 1, **self.extra_params}

        def transient(error: BaseException) -> bool:
            return isinstance(error, RetryableError) and error.kind != "endpoint_unreachable"

        budget = RetryPolicy(budget_s=min(PREFLIGHT_BUDGET_S, self.retry.budget_s), base_s=self.retry.base_s,
                             max_s=self.retry.max_s)
        if self.return_token_ids:
            payload.update(TOKEN_ID_REQUEST)
            payload.update(self.extra_params)
        try:
            answer = await with_retries(lambda: self._request(payload, {PREFLIGHT_HEADER: "1"}), budget,
                                        describe=self._describe, what="the test request", retryable=transient)
        except (InfrastructureError, ModelError) as error:
            raise failed(error) from None
        if self.return_token_ids and token_ids_of(answer) is None:
            logger.warning("%s returned no token ids for the test request (vLLM >= 0.10.2 and SGLang return "
                           "them when asked): the results keep text only", self._mask(self.api_url))

    async def aclose(self) -> None:
        if self._http:
            await self._http.aclose()
            self._http = None
        for client in self._clients:
            await client.close()


def _checked(completion: Any, url: str) -> dict:
    """``completion`` (a chat completion's JSON) when it holds an assistant message; a malformed answer
    (``choices: []``, a null message, no object at all) is a transient infrastructure failure, retried like a 500."""
    choices = completion.get("choices") if isinstance(completion, dict) else None
    if not choices or not isinstance(choices, list):
        problem = "no choices" if isinstance(choices, list) or isinstance(completion, dict) else (
            f"no chat completion ({type(completion).__name__})")
    elif not isinstance(choices[0], dict) or not isinstance(choices[0].get("message"), dict):
        problem = "a choice without a message"
    else:
        return completion
    raise RetryableError(f"{url} answered with {problem}", subject=f"malformed answer from {url}",
                         detail=problem, kind="malformed_response")


@functools.cache
@functools.cache
def sdk_http() -> Any:
    """The HTTP package the installed ``openai`` SDK is built on: ``httpx`` up to openai 2, ``httpx2`` from openai 3.

    Its limits, timeouts, requests and responses are the ones the SDK accepts (openai 3 refuses an ``httpx.Timeout``);
    found from the SDK's own default client class, so no version number is parsed.
    """
    import importlib

    import openai

    for cls in openai.DefaultAsyncHttpxClient.__mro__:
        if cls.__name__ == "AsyncClient":
            return importlib.import_module(cls.__module__.split(".", 1)[0])
    import httpx

    return httpx


def _certificate_failure(error: BaseException) -> Any:
    """The ``ssl.SSLCertVerificationError`` behind a connection error (the lean client's or the SDK's, however
    wrapped), else ``None``."""
    import ssl

    seen = 0
    cause: BaseException | None = error
    while cause is not None and seen < 10:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return cause
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return None


def sdk_ssl_context() -> Any:
    """The SSL context the SDK's default client verifies servers with: its HTTP package's ``create_ssl_context()``
    (certifi's CAs for httpx, the system's for httpx2; ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` honoured as the SDK
    honours them), offering HTTP/1.1 by ALPN as the SDK does."""
    context = sdk_http().create_ssl_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


def _sdk_takes_bytes() -> bool:
    """Whether the installed SDK's raw ``post`` sends prepared bytes (``content=``; newer releases than the oldest
    we support); where it does not, requests go through ``chat.completions.create``."""
    import inspect

    import openai

    return "content" in inspect.signature(openai.AsyncOpenAI.post).parameters


def _user_agent() -> str:
    """The SDK's ``User-Agent`` (``AsyncOpenAI/Python <version>``), so servers see the same client either way."""
    try:
        import openai

        return f"AsyncOpenAI/Python {openai.__version__}"
    except (ImportError, AttributeError):
        return "AsyncOpenAI/Python"


class ReferencePolicy:
    """The reference agents of the installed bootcamps, each playing the generators it names."""

    def __init__(self, registry: Registry | None = None) -> None:
        self.registry = registry or get_registry()
        self._agents: dict[str, str] = {}
        self._searched: set[str | None] = set()

    def _search(self, namespace: str | None) -> None:
        """Record which generators the reference agents of ``namespace`` (None: of every plugin) play."""
        if namespace in self._searched:
            return
        self._searched.add(namespace)
        for agent_id in self.registry.ids("reference_agent", namespace=namespace):
            agent_namespace = agent_id.split("/", 1)[0]
            for generator in self.registry.get_class("reference_agent", agent_id).generators:
                self._agents.setdefault(self.registry.resolve("generator", generator, namespace=agent_namespace),
                                        agent_id)

    def agent_for(self, generator: str | None) -> str | None:
        """The id of a reference agent that plays ``generator``: its own bootcamp's first, so a lookup imports only
        that plugin; other bootcamps' agents only when its own has none."""
        if generator is None:
            return None
        self._search(generator.split("/", 1)[0])
        if generator not in self._agents:
            self._search(None)
        return self._agents.get(generator)

    def agents(self) -> dict[str, str]:
        """{generator id: reference agent id} over every installed plugin."""
        self._search(None)
        return dict(self._agents)

    def check(self, records: Iterable[dict]) -> None:
        """A :class:`ConfigError` listing every generator of ``records`` that no reference agent plays."""
        missing = set()
        for record in records:
            if isinstance(record, GeneratedSample):
                generator = record.generator
            else:
                generator = ((record.get("extra_info") or {}).get("bootcamp") or {}).get("generator")
            if self.agent_for(generator) is None:
                missing.add(str(generator))
        if missing:
            raise ConfigError(
                "no reference agent plays these generators: " + ", ".join(sorted(missing))
                + ". Use policy openai with an api_url, or install bootcamps whose reference agents play them.",
                field="policy",
            )

    async def __call__(
        self, messages: list[dict], tools: list[dict], record: GeneratedSample, rng: random.Random
    ) -> PolicyTurn:
        agent_id = self.agent_for(record.generator)
        if agent_id is None:
            raise InfrastructureError(f"no reference agent plays generator {record.generator}")
        agent = self.registry.component("reference_agent", agent_id)
        # a copy: an agent that edits the list must not rewrite the trajectory
        message = await agent.act(list(messages), tools, record.identity, rng)
        return PolicyTurn(message=message)

    async def aclose(self) -> None:
        """Nothing to close; here so every policy can be closed the same way."""


def policy_kind(kind: str | None, api_url: str | None) -> str:
    """The policy ``kind`` means: as given, else ``reference`` when no ``api_url`` is given, else ``openai``."""
    return kind or ("reference" if api_url is None else "openai")


def make_policy(
    kind: str | None,
    *,
    api_url: str | None = None,
    api_key: str | None = None,
    api_model: str | None = None,
    extra_headers: dict | None = None,
    extra_params: dict | None = None,
    registry: Registry | None = None,
    retry: RetryPolicy | None = None,
    request_timeout_s: float = 600.0,
    max_concurrency: int | None = None,
    return_token_ids: bool = False,
) -> OpenAIPolicy | ReferencePolicy:
    """The policy ``kind`` names: ``reference`` or ``openai``; without one, ``reference`` when no ``api_url`` is given.

    The key comes from ``api_key``, else ``OPENAI_API_KEY``, else ``EMPTY`` (what local servers expect).
    """
    kind = policy_kind(kind, api_url)
    if kind == "reference":
        if return_token_ids:
            raise ConfigError("return_token_ids needs policy openai and an api_url: reference agents sample no "
                              "tokens", field="return_token_ids")
        return ReferencePolicy(registry)
    if kind != "openai":
        raise ConfigError(f'unknown policy "{kind}": use "reference" or "openai"', field="policy")
    if not api_url:
        raise ConfigError("policy openai needs api_url (the endpoint's base URL, e.g. http://localhost:8000/v1)",
                          field="api_url")
    if not api_model:
        raise ConfigError("policy openai needs api_model (the model name the endpoint serves)", field="api_model")
    return OpenAIPolicy(
        api_url=api_url, model=api_model, api_key=api_key, extra_headers=extra_headers, extra_params=extra_params,
        retry=retry, request_timeout_s=request_timeout_s, max_concurrency=max_concurrency,
        return_token_ids=return_token_ids,
    )
