"""The ``bootcamp`` command. Every subcommand is a thin wrapper over a documented Python function.

Built-in commands beyond plugins / generate / new / check live one per module in :mod:`bootcamp_core.commands`
(``add_parser(subparsers)``, which sets ``run=`` on its parser; heavy imports happen inside ``run``).
Subcommands of other distributions come from entry points of group ``bootcamp.commands`` (name = subcommand,
target = ``main(argv: list[str]) -> int | None``) and are imported only when that subcommand runs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import pkgutil
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from bootcamp_core.__about__ import __version__
from bootcamp_core.plugin.errors import BootcampError, ConfigError


class _Formatter(argparse.RawDescriptionHelpFormatter):
    pass


def _add(parser, *flags: str, **kwargs) -> None:
    """Add a flag, and its original underscore spelling (``--output_dir``) as an alias hidden from ``--help``."""
    action = parser.add_argument(*flags, **kwargs)
    aliases = ["--" + flag[2:].replace("-", "_") for flag in flags if flag.startswith("--") and "-" in flag[2:]]
    if aliases:
        hidden = {key: value for key, value in kwargs.items() if key not in {"help", "default", "metavar", "required"}}
        parser.add_argument(*aliases, dest=action.dest, help=argparse.SUPPRESS, default=argparse.SUPPRESS, **hidden)


def build_parser() -> argparse.ArgumentParser:
    from bootcamp_core.plugin.loader import plugin_commands

    extra = plugin_commands()
    epilog = ""
    if extra:
        epilog = "commands from installed plugins:\n" + "\n".join(
            f"  {name:<12}from {ep.dist.name if ep.dist else ep.value}" for name, ep in sorted(extra.items())
        )
    parser = argparse.ArgumentParser(
        prog="bootcamp",
        description="Verifiable multi-turn tool-calling environments for LLM agents.",
        epilog=epilog,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"bootcamp-core {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.set_defaults(builtin_commands=sub.choices)

    plugins = sub.add_parser("plugins", help="list installed bootcamps, their components and load errors")
    plugins.add_argument("--json", action="store_true", help="one JSON array of plugins")

    gen = sub.add_parser(
        "generate",
        help="generate a dataset from bootcamps",
        description="Generate <name>_<split>.jsonl (and .parquet) files into --output-dir.",
    )
    source = gen.add_mutually_exclusive_group(required=True)
    _add(source, "--bootcamp", metavar="NAMESPACE", action="append",
         help="a bootcamp's packaged configs/default.yaml (repeatable)")
    source.add_argument("--all", action="store_true", help="every installed bootcamp, each with its default config")
    _add(source, "--instruction-config", metavar="PATH", help="an instruction config YAML")
    _add(source, "--bootcamp-registry", metavar="PATH", help="a registry JSONL: one bootcamp or config per line")
    _add(gen, "--output-dir", default="data", metavar="DIR", help="where the files go (default: data)")
    _add(gen, "--split-samples", metavar="SPEC", help='split sizes, e.g. "train:1000,test:100"')
    gen.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=None,
                     help="shuffle records within each split")
    gen.add_argument("--seed", type=int, help="seed (default: the config's default_seed, else 42)")
    _add(gen, "--global-config-overrides", metavar="JSON", help="JSON object merged into global_config")
    _add(gen, "--tool-config", metavar="PATH", help="tool config YAML: which tools records name")
    _add(gen, "--interaction-config", metavar="PATH", help="interaction config YAML: which interaction records name")
    _add(gen, "--no-tool", action="store_true", help="records name no tools")
    _add(gen, "--no-interaction", action="store_true", help="records name no interaction")
    _add(gen, "--gen-parquet", action=argparse.BooleanOptionalAction, default=None, help="also write Parquet")
    _add(gen, "--max-workers", type=int, default=1, metavar="N", help="processes (default: 1)")
    _add(gen, "--concat-files", action="store_true", help="also concatenate every bootcamp's files into all_<split>.*")
    _add(gen, "--continue-on-error", action="store_true", help="a failing bootcamp does not stop the others")
    gen.add_argument("--quiet", "-q", action="store_true", help="no progress bar")

    new = sub.add_parser("new", help="scaffold a new bootcamp package from the living template")
    new.add_argument("name", help="the namespace, e.g. my_task (lowercase letters, digits, _)")
    _add(new, "--output-dir", default=".", metavar="DIR", help="where to create bootcamp-<name>/ (default: .)")
    new.add_argument("--force", action="store_true", help="overwrite an existing folder")

    check = sub.add_parser("check", help="run the conformance kit against an installed bootcamp")
    check.add_argument("namespace")
    check.add_argument("pytest_args", nargs=argparse.REMAINDER, help="extra pytest arguments")

    # more built-in commands, one module each in bootcamp_core.commands: add_parser(sub) sets defaults(run=...)
    for name in ("demo", "eval", "postprocess", "rescore", "serve"):
        importlib.import_module(f"bootcamp_core.cli.{name}").add_parser(sub)
    return parser


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is logged (not when the handler was made)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def _terminate_like_interrupt() -> None:
    """SIGTERM (a killed job, ``timeout``) unwinds like Ctrl-C, so unfinished files are removed, finished ones kept."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread (main() called from a thread): leave signals alone
        pass


def _setup_logging() -> None:
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    logger = logging.getLogger("bootcamp_core")
    if not logger.handlers:
        logger.addHandler(handler)
    logger.setLevel(os.environ.get("BOOTCAMP_LOG_LEVEL", "WARNING").upper())
    logger.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _setup_logging()
    _terminate_like_interrupt()
    parser = build_parser()
    if argv and argv[0] not in parser.get_default("builtin_commands") and not argv[0].startswith("-"):
        from bootcamp_core.plugin.loader import plugin_commands

        command = plugin_commands().get(argv[0])
        if command is not None:
            try:
                run = command.load()
            except Exception as error:
                owner = f"{command.dist.name} {command.dist.version}" if command.dist else command.value
                print(f'error: Plugin command "{argv[0]}" ({owner}): cannot import {command.value}: '
                      f"{type(error).__name__}: {error}. Reinstall it or install what it needs.", file=sys.stderr)
                return 1
            return _guarded(lambda: run(argv[1:]))  # a plugin's command gets the same error handling as ours
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    builtins = {"plugins": cmd_plugins, "generate": cmd_generate, "new": cmd_new, "check": cmd_check}
    run = builtins.get(args.command) or args.run
    return _guarded(lambda: run(args))


def _guarded(command) -> int:
    """Run a command: our typed errors and OS errors become one ``error:`` line (exit 1), Ctrl-C exit 130."""
    try:
        return int(command() or 0)
    except (BootcampError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: files already complete are kept; unfinished ones were removed", file=sys.stderr)
        return 130


# ------------------------------------------------------------------------------------------------- plugins
def cmd_plugins(args: argparse.Namespace) -> int:
    from bootcamp_core.plugin.loader import list_plugins

    plugins = list_plugins()
    if args.json:
        print(json.dumps([info.to_json() for info in plugins], indent=2))
        return 0
    if not plugins:
        print("No bootcamps installed. `pip install bootcamp-example` adds one; `bootcamp new NAME` starts your own.")
        return 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=False)
    for column in ("namespace", "distribution", "components / error"):
        table.add_column(column)
    for info in plugins:
        if info.error:
            detail = Text(info.error, style="red")
        else:
            detail = Text("\n".join(f"{kind}: {', '.join(ids)}" for kind, ids in info.components.items() if ids))
        table.add_row(info.namespace, f"{info.distribution or '-'} {info.version or ''}".strip(), detail)
    Console(soft_wrap=False).print(table)
    return 0


# ------------------------------------------------------------------------------------------------ generate
def json_object_flag(text: str | None, flag: str) -> dict | None:
    """The JSON object a flag holds (None when not given); a clear error naming the flag otherwise."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{flag} is not valid JSON: {error.msg} (column {error.colno})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{flag} must be a JSON object")
    return value


def _overrides(args: argparse.Namespace) -> dict:
    global_config = json_object_flag(args.global_config_overrides, "--global-config-overrides")
    from bootcamp_core.data.config import parse_split_samples

    return {
        "seed": args.seed,
        "split_samples": parse_split_samples(args.split_samples) if args.split_samples is not None else None,
        "shuffle": args.shuffle,
        "gen_parquet": args.gen_parquet,
        "global_config": global_config,
        "tool_config_path": args.tool_config,
        "interaction_config_path": args.interaction_config,
        "no_tool": args.no_tool or None,
        "no_interaction": args.no_interaction or None,
    }


def cmd_generate(args: argparse.Namespace) -> int:
    from bootcamp_core.data import generate as gen
    from bootcamp_core.data.config import load_instruction_config
    from bootcamp_core.plugin.loader import get_registry

    if args.max_workers < 1:
        raise ConfigError("--max-workers must be at least 1")
    overrides = _overrides(args)
    registry = get_registry()
    if args.instruction_config:
        configs = [load_instruction_config(args.instruction_config, overrides=overrides)]
    elif args.bootcamp_registry:
        configs = gen.configs_from_registry_file(args.bootcamp_registry, registry, overrides)
    else:
        namespaces = registry.namespaces() if args.all else [ns for item in args.bootcamp for ns in item.split(",") if ns]
        if not namespaces:
            if os.environ.get("BOOTCAMP_LOAD_PLUGINS", None) is not None:
                raise ConfigError("no bootcamp loaded: BOOTCAMP_LOAD_PLUGINS is set and allows none of the installed ones")
            raise ConfigError("no bootcamps installed; `bootcamp plugins` shows what was found")
        configs = [gen.config_for_bootcamp(namespace, registry, overrides) for namespace in namespaces]
    total = sum(sum(config.split_samples.values()) for config in configs)
    with _progress(total, disable=args.quiet) as advance:
        reports = gen.generate_many(
            configs,
            args.output_dir,
            max_workers=args.max_workers,
            continue_on_error=args.continue_on_error,
            registry=registry,
            progress=advance,
        )
    for report in reports:
        if report.error:
            print(f"failed: {report.error}", file=sys.stderr)
            continue
        for path in report.files:
            split = path.stem[len(report.name) + 1:]
            print(f"wrote {path} ({report.counts[split]} records)")
    if args.concat_files:
        for path in gen.concat_outputs(reports, args.output_dir):
            print(f"wrote {path}")
    return 1 if any(report.error for report in reports) else 0


class _progress:
    """A rich progress bar on stderr, as a callback that advances it."""

    def __init__(self, total: int, disable: bool) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("generating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            console=Console(stderr=True), disable=disable, transient=True,
        )
        self.task = self.progress.add_task("generate", total=total)

    def __enter__(self):
        self.progress.__enter__()
        return lambda count: self.progress.advance(self.task, count)

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)


# ------------------------------------------------------------------------------------------- new and check
def cmd_new(args: argparse.Namespace) -> int:
    from bootcamp_core.cli.new import new_bootcamp

    target = new_bootcamp(args.name, Path(args.output_dir), force=args.force)
    print(f"created {target}")
    print(f"next: pip install -e {target} && bootcamp check {args.name} && pytest {target / 'tests'}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from bootcamp_core.testing import check_bootcamp

    return check_bootcamp(args.namespace, list(args.pytest_args or []))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
