"""The ``bootcamp`` command: finds its subcommands, runs the one asked for, sets up logging and signals.

Every subcommand, core's own included, is an entry point of the group ``bootcamp.commands`` (name = subcommand).
Its target is a module with ``HELP``, optionally ``DESCRIPTION``, ``add_arguments(parser)`` and ``run(args)`` (see
:mod:`bootcamp_core.cli.helpers`), or a callable ``main(argv: list[str]) -> int | None``. Commands of other
distributions are imported only when they run, so ``bootcamp --help`` never imports torch or verl.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from importlib import metadata
from types import ModuleType
from typing import Any

from bootcamp_core.__about__ import __version__
from bootcamp_core.cli.helpers import CommandParser, run_guarded
from bootcamp_core.plugin.loader import COMMANDS_GROUP

CORE_DISTRIBUTION = "bootcamp-core"


def commands() -> dict[str, metadata.EntryPoint]:
    """Every subcommand from entry-point metadata, core's first; nothing is imported. Core's win a name clash."""
    found: dict[str, metadata.EntryPoint] = {}
    others: dict[str, metadata.EntryPoint] = {}
    for entry_point in metadata.entry_points(group=COMMANDS_GROUP):
        (found if _is_core(entry_point) else others).setdefault(entry_point.name, entry_point)
    for name, entry_point in sorted(others.items()):
        found.setdefault(name, entry_point)
    return found


def _is_core(entry_point: metadata.EntryPoint) -> bool:
    return entry_point.value.startswith("bootcamp_core.")


def _owner(entry_point: metadata.EntryPoint) -> str:
    dist = entry_point.dist
    return f"{dist.name} {dist.version}" if dist else entry_point.value


def _add_command(sub: argparse._SubParsersAction, name: str, module: ModuleType) -> argparse.ArgumentParser:
    parser = sub.add_parser(name, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP))
    module.add_arguments(parser)
    return parser


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = CommandParser(prog="bootcamp",
                           description="Verifiable multi-turn tool-calling environments for LLM agents.")
    parser.add_argument("--version", action="version", version=f"bootcamp-core {__version__}")
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND")


def build_parser() -> argparse.ArgumentParser:
    """The ``bootcamp`` parser: core's commands in full, other distributions' by name only (none is imported)."""
    import importlib

    parser, sub = _top_parser()
    core: dict[str, argparse.ArgumentParser] = {}
    for name, entry_point in commands().items():
        if _is_core(entry_point):
            core[name] = _add_command(sub, name, importlib.import_module(entry_point.value))
        else:  # what it does is for `bootcamp NAME --help` to say
            sub.add_parser(name, help=f"from {_owner(entry_point)}", add_help=False)
    parser.set_defaults(builtin_commands=core)
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
    """Run ``bootcamp ARGV`` (default: the process's arguments) and return its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _setup_logging()
    _terminate_like_interrupt()
    available = commands()
    if not any(_is_core(entry_point) for entry_point in available.values()):
        print(f"error: the installed metadata of {CORE_DISTRIBUTION} lists none of its commands (entry points "
              f"{COMMANDS_GROUP}); reinstall it: pip install --force-reinstall {CORE_DISTRIBUTION}", file=sys.stderr)
        return 1
    name = argv[0] if argv else None
    if name not in available:  # no command, --help, --version or a misspelling: argparse answers
        parser = build_parser()
        parser.parse_args(argv)
        parser.print_help()
        return 0
    entry_point = available[name]
    step = f"cannot import {entry_point.value}"
    try:
        target: Any = entry_point.load()
        if isinstance(target, ModuleType):
            step = f"{entry_point.value}.add_arguments failed"
            parser, sub = _top_parser()  # only the command that runs: no other is imported
            command_parser = _add_command(sub, name, target)
    except Exception as error:
        if _is_core(entry_point):
            raise
        print(f'error: Plugin command "{name}" ({_owner(entry_point)}): {step}: {type(error).__name__}: {error}. '
              "Reinstall it or install what it needs.", file=sys.stderr)
        return 1
    if not isinstance(target, ModuleType):  # main(argv): the command parses its own flags
        return run_guarded(lambda: target(argv[1:]))
    args = parser.parse_args(argv)
    return run_guarded(lambda: target.run(args), command_parser)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
