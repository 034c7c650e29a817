"""``bootcamp mcp``: the Model Context Protocol (``serve``: any MCP client plays a bootcamp's episodes).

Needs the ``mcp`` extra; this module imports it only when a subcommand runs."""

from __future__ import annotations

import argparse
import os

HELP = "Model Context Protocol: serve a bootcamp's episodes to any MCP client (bootcamp mcp serve)"
DESCRIPTION = """\
bootcamp mcp serve: an MCP server (streamable HTTP at /mcp, or stdio) on which one MCP session plays one episode of
a record: tools start_episode and submit_answer, then the record's own tools. With --output-dir every finished
episode is appended to results.jsonl in the evaluator's format (bootcamp report, compare, postprocess read it).
Needs the mcp extra: pip install "bootcamp-core[mcp]"."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="mcp_command", metavar="COMMAND", required=True)
    serve = sub.add_parser("serve", help="serve the episodes of a dataset (or of a bootcamp, generated) over MCP",
                           description=DESCRIPTION)
    source = serve.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset-path", metavar="FILE", help="records to serve (JSONL or Parquet)")
    source.add_argument("--bootcamp", metavar="NAME", help="generate the records of this installed bootcamp")
    serve.add_argument("--samples", type=int, default=100, metavar="N",
                       help="with --bootcamp: how many records to generate (default: 100)")
    serve.add_argument("--seed", type=int, default=0, help="with --bootcamp: the generation seed (default: 0)")
    serve.add_argument("--transport", choices=("http", "stdio"), default="http",
                       help="streamable HTTP (default) or stdio (one session, for clients that start the server)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="HTTP address (default: 127.0.0.1; any other address needs a token)")
    serve.add_argument("--port", type=int, default=8765, help="HTTP port (default: 8765)")
    serve.add_argument("--token", default=None,
                       help="required as 'Authorization: Bearer TOKEN' on every HTTP request (default: "
                       "$BOOTCAMP_TOKEN); never logged")
    serve.add_argument("--output-dir", metavar="DIR", help="append every finished episode to DIR/results.jsonl")
    serve.add_argument("--session-timeout", type=float, default=1800.0, metavar="SECONDS",
                       help="a session idle this long is closed and its episode abandoned (default: 1800)")
    serve.add_argument("--max-sessions", type=int, default=256, metavar="N",
                       help="episodes running at once (default: 256)")
    serve.add_argument("--max-assistant-turns", type=int, default=None, metavar="N",
                       help="tool calls and submissions per episode (default: the generator's limits, else 10)")
    serve.add_argument("--max-user-turns", type=int, default=None, metavar="N",
                       help="tool replies and feedback per episode (default: the generator's limits, else 20)")
    serve.add_argument("--tool-timeout", type=float, default=60.0, metavar="SECONDS",
                       help="limit of one tool call (default: 60)")


def run(args: argparse.Namespace) -> int:
    from bootcamp_core.cli.helpers import run_guarded

    return run_guarded(lambda: _serve(args))


def _serve(args: argparse.Namespace) -> int:
    import sys

    import anyio

    try:
        from bootcamp_core.mcp import server
    except ImportError as error:
        print(f'error: bootcamp mcp needs the mcp extra (pip install "bootcamp-core[mcp]"): {error}', file=sys.stderr)
        return 1
    episodes = server.EpisodeServer(_records(args), limits=_limits(args), output_dir=args.output_dir,
                                    session_timeout_s=args.session_timeout, max_sessions=args.max_sessions)
    if args.transport == "stdio":
        anyio.run(server.serve_stdio, episodes)
        return 0
    token = args.token or os.environ.get("BOOTCAMP_TOKEN") or None
    server.http_app(episodes, host=args.host, token=token)  # refuses a bind that needs a token before starting
    anyio.run(lambda: server.serve_http(episodes, host=args.host, port=args.port, token=token))
    return 0


def _records(args: argparse.Namespace) -> list[dict]:
    if args.dataset_path:
        from bootcamp_core.data.io import read_records

        return list(read_records(args.dataset_path))
    from bootcamp_core.data.generate import config_for_bootcamp, iter_records
    from bootcamp_core.plugin.loader import get_registry

    registry = get_registry()
    config = config_for_bootcamp(args.bootcamp, registry,
                                 overrides={"split_samples": f"test:{args.samples}", "seed": args.seed})
    return list(iter_records(config, "test", registry))


def _limits(args: argparse.Namespace) -> object:
    if args.max_assistant_turns is None and args.max_user_turns is None and args.tool_timeout == 60.0:
        return None
    from bootcamp_core.episode.engine import RolloutLimits

    changes = {name: value for name, value in (("max_assistant_turns", args.max_assistant_turns),
                                               ("max_user_turns", args.max_user_turns)) if value is not None}
    return RolloutLimits(tool_timeout_s=args.tool_timeout, **changes)
