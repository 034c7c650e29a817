"""``bootcamp plugins``: installed bootcamps from package metadata; ``--check`` imports each in its own subprocess."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bootcamp_core.plugin.loader import PluginInfo

HELP = "list installed bootcamps and their versions (--check imports each and lists its components)"

DESCRIPTION = """\
List installed bootcamps (namespace, distribution, version, the plugin API each declares it was written for) from
package metadata alone: no plugin is imported. A plugin that needs a newer plugin API than the installed
bootcamp-core is reported in one line, with the pip command that fixes it, and is never imported.
--check imports and checks each plugin in its own subprocess, so a crashing plugin cannot take the listing down,
lists its components, and exits 1 when one is broken. --json prints the checked listing as JSON for scripts."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true",
                        help="import and check each plugin in its own subprocess and list its components; "
                             "exit 1 when one is broken")
    parser.add_argument("--json", action="store_true",
                        help="one JSON array of checked plugins: {namespace, distribution, version, module, api, "
                             "components: {kind: [ids]}, error}")


def run(args: argparse.Namespace) -> int:
    from bootcamp_core.plugin.check import check_plugins
    from bootcamp_core.plugin.loader import installed_plugins

    plugins = installed_plugins()
    checked = bool(args.check or args.json)  # JSON always carries components: scripts read them
    if checked:
        plugins = check_plugins(plugins)
    broken = 1 if args.check and any(info.error for info in plugins) else 0
    if args.json:
        print(json.dumps([info.to_json() for info in plugins], indent=2))
        return broken
    if not plugins:
        print("No bootcamps installed. `pip install bootcamp-example` adds one; `bootcamp new NAME` starts your own.")
        return 0
    print(format_plugins(plugins, components=checked))
    return broken


def format_plugins(plugins: list[PluginInfo], *, components: bool) -> str:
    """Plain text, one plugin a line (its components below it); nothing is ever cut, whatever the terminal's width."""
    working = [info for info in plugins if not info.error]
    width = max((len(info.namespace) for info in working), default=0)
    kind_width = max((len(kind) for info in working for kind, ids in info.components.items() if ids), default=0)
    lines: list[str] = []
    for info in plugins:
        if info.error:
            if info.error not in lines:  # a namespace claimed twice is one problem, one line
                lines.append(info.error)
            continue
        api = f"  (plugin API {info.api})" if info.api else ""
        lines.append(f"{info.namespace:<{width}}  {info.distribution or '-'} {info.version or ''}".rstrip() + api)
        if components:
            lines += [f"  {kind:<{kind_width}}  {', '.join(ids)}" for kind, ids in info.components.items() if ids]
    if not components:
        lines.append("(`bootcamp plugins --check` imports each plugin and lists its components)")
    return "\n".join(lines)
