"""``bootcamp demo``: the whole loop on embedded defaults — generate, roll out with reference agents, score, report,
post-process — for every installed bootcamp. No network, no API key."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "demo",
        help="generate, evaluate with reference agents and post-process every installed bootcamp (offline)",
        description=__doc__,
    )
    parser.add_argument("--output-dir", default="demo", metavar="DIR", help="where everything goes (default: demo)")
    parser.add_argument("--samples", type=int, default=5, metavar="N", help="test records per bootcamp (default: 5)")
    parser.add_argument("--seed", type=int, default=None, help="generation seed (default: each config's own)")
    parser.add_argument("--max-concurrent", type=int, default=8, metavar="N", help="episodes at once (default: 8)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bootcamp_core.cli.demo_run import run_demo

    run_demo(Path(args.output_dir), samples=args.samples, seed=args.seed, max_concurrent=args.max_concurrent,
             progress=not args.quiet)
    return 0
