"""Running the tool server: a master, a worker, or both (unified) in the foreground."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import yaml

from bootcamp_core.plugin.errors import ConfigError
from bootcamp_core.serve.common import DEFAULT_MAX_BODY_BYTES, TOKEN_ENV, check_bind

logger = logging.getLogger("bootcamp_core.serve")

MODES = ("master", "worker", "unified")


@attrs.define
class ServeConfig:
    """What ``bootcamp serve`` runs; every field is a flag of the command."""

    mode: str = "unified"
    host: str = "127.0.0.1"
    port: int | None = None  # master: 8000; worker: a free port
    master_url: str | None = None
    num_workers: int = 1  # unified: workers started; master: workers expected before /health says ready
    bootcamps: list[str] | None = None  # namespaces; None: every installed bootcamp
    tool_config: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    bootcamp_registry: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    timeout_per_query_s: float = 600.0
    token: str | None = attrs.field(default=None, repr=False)
    log_dir: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    heartbeat_interval_s: float = 5.0
    worker_timeout_s: float = 15.0
    idle_timeout_s: float = 3600.0
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    read_timeout_s: float = 30.0  # a request's headers and body must arrive within this, or the connection closes
    max_connections: int = 16384  # open connections and requests at once; beyond it new requests get a 503
    advertise_url: str | None = None
    write_tool_config: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    access_log: bool = False

    def __attrs_post_init__(self) -> None:
        # messages name fields; `bootcamp serve` prints its flags for them
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}", field="mode")
        if self.num_workers < (1 if self.mode == "unified" else 0):
            raise ConfigError("num_workers must be at least 1", field="num_workers")
        for name in ("timeout_per_query_s", "heartbeat_interval_s", "worker_timeout_s", "idle_timeout_s",
                     "read_timeout_s", "max_connections"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name):g}", field=name)
        if self.worker_timeout_s <= self.heartbeat_interval_s:
            raise ConfigError("worker_timeout_s must be longer than heartbeat_interval_s, or live workers look dead",
                              field="worker_timeout_s")
        if self.tool_config and self.bootcamps:
            raise ConfigError("give tool_config or bootcamps, not both", field="tool_config")
        if self.mode == "master" and (self.tool_config or self.bootcamps or self.bootcamp_registry):
            raise ConfigError("a master serves no tools itself: tool_config, bootcamps and bootcamp_registry are for "
                              "workers (or mode unified)", field="mode")

    @property
    def resolved_token(self) -> str | None:
        return self.token or os.environ.get(TOKEN_ENV) or None


# --------------------------------------------------------------------------------------------- tool selection
def select_tools(config: ServeConfig, registry: Any) -> dict[str, dict]:
    """{tool id: constructor config} of the tools a worker serves."""
    from bootcamp_core.data.config import load_component_config, load_registry_file

    if config.tool_config is not None:
        selected: dict[str, dict] = {}
        for entry in load_component_config(config.tool_config, "tool"):
            try:
                selected[registry.resolve("tool", entry.class_name)] = {
                    key: value for key, value in entry.config.items() if key not in ("url", "tool_id")
                }
            except Exception as error:
                raise ConfigError(f"{config.tool_config}: {error}") from None
        return selected
    if config.bootcamps:
        namespaces = list(dict.fromkeys(config.bootcamps))
    elif config.bootcamp_registry is not None:
        namespaces = []
        for entry in load_registry_file(config.bootcamp_registry):
            namespace = entry.namespace or entry.name
            if namespace and namespace not in namespaces:
                namespaces.append(namespace)
    else:
        namespaces = registry.namespaces()
    tools: dict[str, dict] = {}
    for namespace in namespaces:
        registry.namespace_plugin(namespace)  # unknown or broken: a clear error naming it
        tools.update({tool_id: {} for tool_id in registry.ids("tool", namespace=namespace)})
    if not tools:
        raise ConfigError(f"no tools to serve: bootcamp(s) {', '.join(namespaces) or '(none installed)'} register none")
    return tools


def build_tool_host(config: ServeConfig, registry: Any = None) -> Any:
    from bootcamp_core.plugin.loader import get_registry
    from bootcamp_core.serve.worker import ToolHost, WorkerSettings

    registry = registry or get_registry()
    tools, schemas = {}, {}
    for tool_id, tool_config in select_tools(config, registry).items():
        tool = registry.component("tool", tool_id, tool_config)
        cls = type(tool)
        schemas[tool_id] = {**cls.openai_schema(), "parallel_safe": bool(cls.parallel_safe),
                            "versions": registry.versions_for([("tool", tool_id)])}
        tools[tool_id] = tool
    settings = WorkerSettings(
        host=config.host, port=config.port or 0, master_url=config.master_url, advertise_url=config.advertise_url,
        token=config.resolved_token, timeout_per_query_s=config.timeout_per_query_s,
        heartbeat_interval_s=config.heartbeat_interval_s, idle_timeout_s=config.idle_timeout_s,
        max_body_bytes=config.max_body_bytes,
    )
    return ToolHost(tools, schemas, settings)


def remote_tool_config(url: str, schemas: dict[str, dict]) -> dict:
    """A tool config (the original's ``*_with_server_urls.yaml``) whose tools all run on the server at ``url``.

    ``bootcamp eval --tool-config`` runs the tools of such a file remotely; the token is never written (clients read
    ``BOOTCAMP_TOKEN``).
    """
    return {"tools": [
        {
            "class_name": tool_id,
            "config": {"type": "remote", "url": url.rstrip("/"), "tool_id": tool_id},
            "tool_schema": {"type": "function", "function": schema["function"]},
        }
        for tool_id, schema in sorted(schemas.items())
    ]}


def write_remote_tool_config(path: str | os.PathLike, url: str, schemas: dict[str, dict]) -> None:
    from bootcamp_core.data.io import AtomicFile

    with AtomicFile(path) as handle:
        yaml.safe_dump(remote_tool_config(url, schemas), handle, sort_keys=False, allow_unicode=True)


# ------------------------------------------------------------------------------------------------- running
def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _run_app(app: Any, sock: socket.socket, config: ServeConfig) -> None:
    import uvicorn

    try:
        import uvloop  # noqa: F401

        loop = "uvloop"
    except ImportError:
        loop = "asyncio"
    server = uvicorn.Server(uvicorn.Config(
        app, loop=loop, http=_bounded_protocol(config.read_timeout_s), access_log=config.access_log,
        log_level="warning", lifespan="on", timeout_graceful_shutdown=3, server_header=False,
        limit_concurrency=config.max_connections,
        timeout_keep_alive=30))  # longer than clients reuse idle connections (IDLE_REUSE_S)
    _settle_gc()
    asyncio.run(server.serve(sockets=[sock])) if loop == "asyncio" else _run_uvloop(server.serve(sockets=[sock]))


def _raw_json_error(status: int, reason: str, kind: str, message: str) -> bytes:
    """A complete HTTP/1.1 error response with a JSON body, closing the connection (written below the ASGI app)."""
    from bootcamp_core.serve.common import ApiError

    body = ApiError(status, kind, message).body()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode("ascii") + body


def _settle_gc() -> None:
    """Keep the garbage collector off what the server was built from.

    Everything alive once the server is built (modules, the registry, the tools) is moved out of the collector's
    reach (``gc.freeze``): a full collection then scans only what serving allocated. Under high concurrency the
    objects of requests in flight survive young collections and are promoted, which brings full collections; without
    the freeze each of them would walk the whole heap of imported modules as well.
    """
    import gc

    gc.collect()
    gc.freeze()


def _bounded_protocol(read_timeout_s: float) -> Any:
    """uvicorn's httptools protocol with a read deadline and JSON errors.

    From a connection's start, and from each request's first byte, the whole request (headers and body) must arrive
    within ``read_timeout_s``: a request begun but not finished by then is answered ``408`` and the connection
    closed; a connection that never sent a byte is closed without an answer. uvicorn's keep-alive timeout covers idle
    time between requests but not a client that sends a byte at a time. Beyond the connection bound
    (``limit_concurrency``) a request gets a JSON ``503`` (``overloaded``), and a malformed request a JSON ``400``,
    where uvicorn itself answers plain text."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from bootcamp_core.serve.common import ApiError

    too_slow = _raw_json_error(408, "Request Timeout", "request_timeout",
                               f"the request did not arrive within {read_timeout_s:g} s (--read-timeout)")
    refused_body = ApiError(503, "overloaded", "too many connections and requests at once (--max-connections); "
                            "retry later").body()

    async def refuse(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 503, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(refused_body)).encode()),
            (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": refused_body})

    class BoundedProtocol(HttpToolsProtocol):
        read_timer: asyncio.TimerHandle | None = None
        reading = False  # a request has begun and not yet fully arrived

        def _arm(self) -> None:
            self._disarm()
            self.read_timer = self.loop.call_later(read_timeout_s, self._too_slow)

        def _disarm(self) -> None:
            if self.read_timer is not None:
                self.read_timer.cancel()
                self.read_timer = None

        def _too_slow(self) -> None:
            self.read_timer = None
            if self.transport is None or self.transport.is_closing():
                return
            cycle = self.cycle
            if self.reading and (cycle is None or cycle.response_complete or not cycle.response_started):
                self.transport.write(too_slow)  # the app, if it runs, sees a disconnect: nothing else is sent
            self.transport.close()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.reading = True
            self._arm()

        def on_headers_complete(self) -> None:
            limit = self.limit_concurrency
            if limit is None or (len(self.connections) < limit and len(self.tasks) < limit):
                super().on_headers_complete()
                return
            app, self.app, self.limit_concurrency = self.app, refuse, None  # this request only: a JSON 503
            try:
                super().on_headers_complete()
            finally:
                self.app, self.limit_concurrency = app, limit

        def on_message_complete(self) -> None:
            self.reading = False
            self._disarm()
            super().on_message_complete()

        def send_400_response(self, msg: str) -> None:
            self.transport.write(_raw_json_error(400, "Bad Request", "bad_request", msg))
            self.transport.close()

    return BoundedProtocol


def _run_uvloop(coroutine: Any) -> None:
    import uvloop

    uvloop.run(coroutine)


def _setup_logs(config: ServeConfig, name: str) -> None:
    from bootcamp_core.evaluate.secrets import Redactor

    logger.setLevel(logging.INFO)
    masking = Redactor([])  # credentials in a URL (the master's, a worker's) never reach a log
    for handler in logging.getLogger("bootcamp_core").handlers:
        if not any(isinstance(existing, Redactor) for existing in handler.filters):
            handler.addFilter(masking)
    if config.log_dir is not None:
        config.log_dir.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(config.log_dir / f"{name}.log", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler.addFilter(masking)
        logger.addHandler(handler)


def url_of(host: str, port: int) -> str:
    host = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def run_worker(config: ServeConfig, registry: Any = None) -> None:
    from bootcamp_core.serve.worker import Worker, advertised_url

    host = build_tool_host(config, registry)
    sock = _bind(config.host, config.port or 0)
    worker = Worker(host, host.settings)
    worker.url = advertised_url(host.settings, sock.getsockname()[1])
    _setup_logs(config, f"worker-{host.settings.worker_id}")
    logger.info("worker %s on %s serving %s", host.settings.worker_id, worker.url, ", ".join(sorted(host.tools)))
    _run_app(worker.app(), sock, config)


def _master(config: ServeConfig, expected: int, url: str) -> Any:
    from bootcamp_core.serve.master import Master, MasterSettings

    master = Master(MasterSettings(
        host=config.host, token=config.resolved_token, expected_workers=expected,
        timeout_per_query_s=config.timeout_per_query_s, worker_timeout_s=config.worker_timeout_s,
        heartbeat_interval_s=config.heartbeat_interval_s, max_body_bytes=config.max_body_bytes,
    ))
    if config.write_tool_config is not None:
        path = config.write_tool_config

        def write(status: dict) -> None:
            schemas: dict[str, dict] = {}
            for worker in master.router.workers.values():
                if worker.alive:
                    for tool_id, schema in worker.tools.items():
                        schemas.setdefault(tool_id, schema)
            write_remote_tool_config(path, url, schemas)
            logger.info("wrote %s: %d tool(s) served at %s", path, len(schemas), url)

        master.on_ready = write
    return master


def _worker_command(config: ServeConfig, master_url: str) -> list[str]:
    command = [sys.executable, "-m", "bootcamp_core.cli.main", "serve", "--mode", "worker", "--master-url", master_url,
               "--host", "127.0.0.1", "--port", "0",
               "--timeout-per-query", repr(config.timeout_per_query_s),
               "--heartbeat-interval", repr(config.heartbeat_interval_s),
               "--worker-timeout", repr(config.worker_timeout_s),
               "--idle-timeout", repr(config.idle_timeout_s),
               "--max-body-bytes", str(config.max_body_bytes),
               "--read-timeout", repr(config.read_timeout_s), "--max-connections", str(config.max_connections)]
    if config.tool_config:
        command += ["--tool-config", str(config.tool_config)]
    if config.bootcamps:
        command += ["--bootcamps", ",".join(config.bootcamps)]
    if config.bootcamp_registry:
        command += ["--bootcamp-registry", str(config.bootcamp_registry)]
    if config.log_dir:
        command += ["--log-dir", str(config.log_dir)]
    return command


def _death_signal() -> Any:
    """A function for ``preexec_fn``: the child gets SIGTERM when its parent dies, even by kill -9 (Linux only).

    Resolved here, in the parent: a forked child of a threaded process should not load libraries before exec.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stop(processes: list[subprocess.Popen], grace_s: float = 5.0) -> None:
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for process in processes:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


#: unified mode restarts dead workers at most this many times in all, waiting longer after each restart
MAX_RESTARTS = 20
RESTART_BACKOFF_S = (0.5, 30.0)


def _supervise(workers: list[subprocess.Popen], spawn: Any, master: Any, stop: threading.Event) -> None:
    """Restart worker processes that exited (bounded, with backoff); each restart is counted on ``/health``."""
    delay, warned = RESTART_BACKOFF_S[0], False
    while not stop.wait(0.2):
        for index, process in enumerate(workers):
            if process.poll() is None or stop.is_set():
                continue
            if master.worker_restarts >= MAX_RESTARTS:
                if not warned:
                    logger.error("worker exited with %s; not restarted (%d restarts already)", process.returncode,
                                 MAX_RESTARTS)
                    warned = True
                continue
            logger.warning("worker pid %d exited with %s; restarting it in %g s", process.pid, process.returncode,
                           delay)
            if stop.wait(delay):
                return
            workers[index] = spawn()
            master.worker_restarts += 1
            delay = min(delay * 2, RESTART_BACKOFF_S[1])


def _sigterm_like_ctrl_c() -> None:
    """uvicorn re-raises SIGTERM after its graceful shutdown; unwinding like Ctrl-C lets ``serve`` stop its workers."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    with contextlib.suppress(ValueError):  # not the main thread: leave signals alone
        signal.signal(signal.SIGTERM, interrupt)


def serve(config: ServeConfig, registry: Any = None) -> int:
    """Run the server in the foreground until Ctrl-C or SIGTERM; unified mode stops its workers before returning."""
    token = config.resolved_token
    check_bind(config.host, token)
    _sigterm_like_ctrl_c()
    if config.mode == "worker":
        try:
            run_worker(config, registry)
        except KeyboardInterrupt:  # SIGTERM after uvicorn's graceful shutdown: already stopped cleanly
            pass
        return 0
    port = 8000 if config.port is None else config.port
    sock = _bind(config.host, port)
    url = url_of(config.host, sock.getsockname()[1])
    _setup_logs(config, "master")
    workers: list[subprocess.Popen] = []
    stopping = threading.Event()
    try:
        if config.mode == "unified":
            from bootcamp_core.plugin.loader import get_registry

            select_tools(config, registry or get_registry())  # a bad selection fails here, once, not in N workers
            master = _master(config, config.num_workers, url)
            env = {**os.environ, **({TOKEN_ENV: token} if token else {})}  # never on a command line (ps shows it)
            die_with_master = _death_signal()
            def spawn() -> subprocess.Popen:
                return subprocess.Popen(_worker_command(config, url), env=env, preexec_fn=die_with_master)

            for _ in range(config.num_workers):
                workers.append(spawn())
            threading.Thread(target=_supervise, args=(workers, spawn, master, stopping), name="bootcamp-supervisor",
                             daemon=True).start()
            logger.info("master on %s with %d worker process(es)", url, config.num_workers)
        else:
            master = _master(config, config.num_workers, url)
            logger.info("master on %s, expecting %d worker(s)", url, config.num_workers)
        _run_app(master.app(), sock, config)
    except KeyboardInterrupt:
        pass
    finally:
        stopping.set()
        _stop(workers)
        sock.close()
    logger.info("stopped")
    return 0
