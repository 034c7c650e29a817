"""What every command shares, ours and plugins': flags with the original framework's spellings, one-line errors
with flag names, JSON-object and component-config flags, rich output that reads well in a terminal and in a pipe.

A command is a module with ``HELP`` (one line for ``bootcamp --help``), optionally ``DESCRIPTION`` (its own
``--help`` text), ``add_arguments(parser)`` and ``run(args) -> int``, registered as an entry point of the group
``bootcamp.commands``; ``bootcamp`` runs it through :func:`run_guarded`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bootcamp_core.plugin.errors import BootcampError, ConfigError

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "CommandParser",
    "add_flag",
    "error_line",
    "flags_by_field",
    "json_object_flag",
    "output_console",
    "progress_bar",
    "resolve_component_config",
    "run_guarded",
]

INTERRUPTED = "interrupted: files already complete are kept; unfinished ones were removed"


class CommandParser(argparse.ArgumentParser):
    """An argument parser that takes no abbreviated flags and keeps descriptions as written.

    ``--dataset`` would otherwise match both ``--dataset-path`` and its ``--dataset_path`` alias. Subparsers a command
    adds are of this class too (argparse makes them of their parent's class).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)


def add_flag(parser: Any, *flags: str, field: str | None = None, **kwargs: Any) -> argparse.Action:
    """Add a flag, and its original underscore spelling (``--output_dir``) as an alias hidden from ``--help``.

    ``field`` names the library field the flag sets when it is not the flag's dest (``--episode-timeout`` sets
    ``episode_timeout_s``), so an error about that field names the flag.
    """
    action = parser.add_argument(*flags, **kwargs)
    aliases = ["--" + flag[2:].replace("-", "_") for flag in flags if flag.startswith("--") and "-" in flag[2:]]
    if aliases:
        hidden = {key: value for key, value in kwargs.items() if key not in {"help", "default", "metavar", "required"}}
        parser.add_argument(*aliases, dest=action.dest, help=argparse.SUPPRESS, default=argparse.SUPPRESS, **hidden)
    if field is not None:
        action.field = field  # read by flags_by_field
    return action



def add_ray_flags(parser: Any, purpose: str, *counts: tuple[str, str]) -> None:
    """``--ray [ADDRESS]`` (Ray's address forms) with ``purpose`` first in its help, then each ``(flag, help)`` of
    ``counts`` as an integer flag that applies with ``--ray``."""
    parser.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                        help=f"{purpose}: no value starts a local Ray (or joins RAY_ADDRESS), `auto` joins a running "
                             "cluster, ray://HOST:PORT uses Ray Client; needs bootcamp-core[ray]")
    for flag, text in counts:
        add_flag(parser, flag, type=int, metavar="N", help=f"with --ray: {text}")

def flags_by_field(parser: argparse.ArgumentParser) -> dict[str, str]:
    """{library field: the flag that sets it} of a parser and the subcommands under it."""
    flags: dict[str, str] = {}
    # argparse offers no public way to list a parser's arguments; _actions has been its record since Python 2.7
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                for field, flag in flags_by_field(subparser).items():
                    flags.setdefault(field, flag)
            continue
        long = [option for option in action.option_strings if option.startswith("--")]
        if not long or action.help == argparse.SUPPRESS or action.dest == "help":
            continue
        flags.setdefault(action.dest, long[0])
        if getattr(action, "field", None):
            flags.setdefault(action.field, long[0])
    return flags


def _field_pattern(field: str) -> re.Pattern:
    # a whole word: not part of a path, an identifier, a flag or a file name ("limit.jsonl")
    return re.compile(rf"(?<![\w./-]){re.escape(field)}(?![\w/-]|\.\w)")


def error_line(error: BaseException, parser: argparse.ArgumentParser | None = None) -> str:
    """The one line an error prints; a ConfigError about a field names the command's flag for it instead."""
    message = str(error)
    field = getattr(error, "field", None) if isinstance(error, ConfigError) else None
    if field and parser is not None:
        flags = flags_by_field(parser)
        if field in flags:
            pattern = _field_pattern(field)
            if pattern.search(message):
                message = pattern.sub(flags[field], message)
            else:
                message = f"{flags[field]}: {message}"
            # a message about a field speaks of fields throughout ("policy openai needs api_url")
            for other, flag in flags.items():
                if other != field and other in message:
                    message = _field_pattern(other).sub(flag, message)
    return f"error: {message}"


def run_guarded(command: Callable[[], int | None], parser: argparse.ArgumentParser | None = None) -> int:
    """Run a command: our typed errors and OS errors become one ``error:`` line (exit 1), Ctrl-C exit 130.

    With the command's ``parser``, an error about a library field names the flag that sets it.
    """
    try:
        return int(command() or 0)
    except (BootcampError, OSError) as error:
        print(error_line(error, parser), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130


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


def resolve_component_config(path: str | Path | None, kind: str, registry: Any = None) -> dict[str, dict]:
    """{component id: constructor config} of a tool or interaction config file (``--tool-config``), ids resolved."""
    if not path:
        return {}
    from bootcamp_core.data.config import load_component_config
    from bootcamp_core.plugin.loader import get_registry

    registry = registry or get_registry()
    configs = {}
    for entry in load_component_config(path, kind):
        try:
            component_id = registry.resolve(kind, entry.class_name)
        except BootcampError as error:
            raise ConfigError(f"{path}: {error}") from None
        configs[component_id] = dict(entry.config)
    return configs


def output_console(stderr: bool = False) -> Console:
    """A rich console; in a pipe or a CI log (no terminal width to fit) 120 columns wide, so rows stay whole."""
    from rich.console import Console

    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=120)
    return console


@contextmanager
def progress_bar(total: int, label: str, *, disable: bool = False) -> Iterator[Callable[[int], None]]:
    """A rich progress bar on stderr, as a callback that advances it by a count; gone when done."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    progress = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                        console=Console(stderr=True), disable=disable, transient=True)
    task = progress.add_task(label, total=total)
    with progress:
        yield lambda count: progress.advance(task, count)
