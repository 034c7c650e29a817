"""``bootcamp serve``: the tool server (a thin wrapper over :func:`bootcamp_core.serve.serve`)."""

from __future__ import annotations

import argparse

from bootcamp_core.cli.helpers import add_flag, add_ray_flags
from bootcamp_core.plugin.errors import ConfigError

HELP = "serve bootcamp tools over HTTP: master, workers, or both (unified)"
DESCRIPTION = """\
Serve bootcamp tools over HTTP. Modes: unified (default) runs a master and --num-workers worker processes in the
foreground; master runs only the router, worker only a worker that registers with --master-url. Ctrl-C or SIGTERM
stops everything it started. The underscore spellings of the original framework, InternBootcamp (--tools_yaml_path,
--num_workers, --master_url), work too.

The HTTP API is in docs/tool-server.md. GET / is a dashboard, GET /health the status as JSON; neither needs the
token."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", choices=("master", "worker", "unified"), default="unified",
                        help="what to run (default: unified)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1; any other address needs a token)")
    parser.add_argument("--port", type=int, default=None,
                        help="port (default: 8000 for master and unified; a free port for a worker)")
    add_flag(parser, "--master-url", metavar="URL", help="worker mode: the master to register with")
    add_flag(parser, "--num-workers", type=int, default=1, metavar="N",
             help="unified: worker processes to start; master: workers to wait for before /health is ready "
             "(default: 1)")
    parser.add_argument("--bootcamps", action="append", metavar="NAMESPACES",
                        help="serve the tools of these bootcamps (comma-separated, repeatable; default: all "
                        "installed)")
    add_flag(parser, "--tool-config", metavar="PATH", help="serve exactly the tools of this tool config YAML")
    parser.add_argument("--tools_yaml_path", "--tools-yaml-path", dest="tool_config", help=argparse.SUPPRESS)
    add_flag(parser, "--bootcamp-registry", metavar="PATH",
             help="serve the tools of the bootcamps a registry JSONL lists")
    add_flag(parser, "--timeout-per-query", field="timeout_per_query_s", type=float, default=600.0, metavar="SECONDS",
             help="limit of one tool call; past it the call fails with 504 (default: 600)")
    parser.add_argument("--token", default=None,
                        help="required on every register and tool call (default: $BOOTCAMP_TOKEN); never logged")
    add_flag(parser, "--log-dir", metavar="DIR", help="write master.log and worker-<id>.log here")
    add_flag(parser, "--heartbeat-interval", field="heartbeat_interval_s", type=float, default=5.0, metavar="SECONDS",
             help="how often workers report to the master (default: 5)")
    add_flag(parser, "--worker-timeout", field="worker_timeout_s", type=float, default=15.0, metavar="SECONDS",
             help="a worker silent this long is dead and leaves routing (default: 15)")
    add_flag(parser, "--idle-timeout", field="idle_timeout_s", type=float, default=3600.0, metavar="SECONDS",
             help="instances unused this long are released by their worker (default: 3600)")
    add_flag(parser, "--max-body-bytes", type=int, default=16 * 1024 * 1024, metavar="BYTES",
             help="larger requests are refused with 413 (default: 16 MiB)")
    add_flag(parser, "--read-timeout", field="read_timeout_s", type=float, default=30.0, metavar="SECONDS",
             help="a request's headers and body must arrive within this or the connection closes (default: 30)")
    add_flag(parser, "--max-connections", type=int, default=16384, metavar="N",
             help="open connections and requests at once; beyond it requests get 503 (default: 16384)")
    add_flag(parser, "--advertise-url", metavar="URL",
             help="worker mode: the URL the master should use to reach this worker (default: derived)")
    add_flag(parser, "--write-tool-config", metavar="PATH",
             help="once every expected worker is up, write a tool config pointing at this server "
             "(like InternBootcamp's *_with_server_urls.yaml; bootcamp eval --tool-config PATH then runs tools here)")
    add_flag(parser, "--access-log", action="store_true", help="log one line per request (never bodies)")
    add_flag(parser, "--keep-running", action="store_true", help=argparse.SUPPRESS)  # InternBootcamp's; always so
    add_ray_flags(parser, "serve the tools from Ray actors instead of worker processes",
                  ("--ray-actors", "tool actors (default: the cluster's CPUs)"),
                  ("--ray-concurrency", "tool calls at once per actor (default: 64)"))


def run(args: argparse.Namespace) -> int:
    from bootcamp_core.serve import ServeConfig, serve

    bootcamps = [name.strip() for value in args.bootcamps or () for name in value.split(",") if name.strip()]
    config = ServeConfig(
        mode=args.mode, host=args.host, port=args.port, master_url=args.master_url, num_workers=args.num_workers,
        bootcamps=bootcamps or None, tool_config=args.tool_config, bootcamp_registry=args.bootcamp_registry,
        timeout_per_query_s=args.timeout_per_query, token=args.token, log_dir=args.log_dir,
        heartbeat_interval_s=args.heartbeat_interval, worker_timeout_s=args.worker_timeout,
        idle_timeout_s=args.idle_timeout, max_body_bytes=args.max_body_bytes, advertise_url=args.advertise_url,
        read_timeout_s=args.read_timeout, max_connections=args.max_connections,
        write_tool_config=args.write_tool_config, access_log=args.access_log,
    )
    ray_flags = [flag for flag, value in (("--ray-actors", args.ray_actors),
                                          ("--ray-concurrency", args.ray_concurrency)) if value is not None]
    if ray_flags and args.ray is None:
        raise ConfigError(f"{ray_flags[0]} needs --ray")
    if args.ray is not None:
        if args.mode != "unified" or args.master_url:
            raise ConfigError("--ray runs the whole server (its tool actors replace the workers): leave out --mode "
                              "and --master-url")
        for flag, value in (("--ray-actors", args.ray_actors), ("--ray-concurrency", args.ray_concurrency)):
            if value is not None and value < 1:
                raise ConfigError(f"{flag} must be at least 1, got {value}")
        from bootcamp_core.scale.tools import DEFAULT_CONCURRENCY, serve_on_ray

        return serve_on_ray(config, address=args.ray, actors=args.ray_actors,
                            concurrency=args.ray_concurrency or DEFAULT_CONCURRENCY)
    return serve(config)
