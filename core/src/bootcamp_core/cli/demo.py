"""``bootcamp demo``: the whole loop on embedded defaults, offline. For every installed bootcamp with reference
agents: generate a small test set, roll it out with the reference agents, score it, write the report, post-process
the trajectories into training data. No network, no API key."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from bootcamp_core.plugin.loader import Registry

__all__ = ["DEMO_LIMITS", "DemoResult", "plan_demo", "print_generator_table", "run_demo"]

HELP = "generate, evaluate with reference agents and post-process every installed bootcamp (offline)"
DESCRIPTION = """\
The whole loop on embedded defaults, offline: for every installed bootcamp with reference agents, generate a small
test set, roll it out with the reference agents, score it, write the report and post-process the trajectories into
training data. No network, no API key. Everything goes into one folder (default: demo):
  DIR/data/demo_test.jsonl     the generated test set, every bootcamp's records
  DIR/eval/                    results.jsonl, summary.json, summary.csv, report.html
  DIR/eval/training_data.jsonl the solved trajectories as training data

Exit status: 0 done; 1 a configuration error; 2 usage; 4 more than 2% of the episodes ended in an
infrastructure error (everything is written first); 130 interrupted."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output-dir", default="demo", metavar="DIR", help="where everything goes (default: demo)")
    parser.add_argument("--samples", type=int, default=5, metavar="N", help="test records per bootcamp (default: 5)")
    parser.add_argument("--seed", type=int, default=None, help="generation seed (default: each config's own)")
    parser.add_argument("--max-concurrent", type=int, default=8, metavar="N", help="episodes at once (default: 8)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    """Exit status as ``bootcamp eval``'s: 1 a configuration error, 4 too many infrastructure errors, 130 interrupted."""
    from bootcamp_core.cli.eval import infrastructure_verdict

    result = run_demo(Path(args.output_dir), samples=args.samples, seed=args.seed, max_concurrent=args.max_concurrent,
                      progress=not args.quiet)
    return infrastructure_verdict(result.summary)


@attrs.define
class DemoResult:
    """Where everything went, what was skipped and the evaluation summary."""

    dataset: Path | None = None
    results: Path | None = None
    report: Path | None = None
    training_data: Path | None = None
    summary: dict = attrs.field(factory=dict)
    skipped: list[str] = attrs.field(factory=list)


def plan_demo(registry: Registry, samples: int, seed: int | None = None) -> tuple[list[Any], list[str]]:
    """(instruction configs of the bootcamps the demo plays, one note per bootcamp it skips)."""
    from bootcamp_core.data.generate import config_for_bootcamp, plan_groups
    from bootcamp_core.episode.policies import ReferencePolicy

    agents = ReferencePolicy(registry).agents()
    configs, notes = [], []
    for namespace in registry.namespaces():
        config = config_for_bootcamp(namespace, registry, {"split_samples": {"test": samples}, "seed": seed,
                                                           "gen_parquet": False})
        missing = sorted({plan.generator for plan in plan_groups(config, registry)} - set(agents))
        if missing:
            notes.append(f"skipped {namespace}: no reference agent plays {', '.join(missing)}")
            continue
        configs.append(config)
    return configs, notes


def run_demo(
    output_dir: Path,
    *,
    samples: int = 5,
    seed: int | None = None,
    max_concurrent: int = 8,
    progress: bool = True,
    registry: Registry | None = None,
) -> DemoResult:
    """Generate → evaluate with reference agents → report → post-process, printing a summary table."""
    from bootcamp_core.data.generate import concat_outputs, generate_many
    from bootcamp_core.episode.engine import RolloutLimits
    from bootcamp_core.evaluate.run import EvalConfig, run_evaluation
    from bootcamp_core.plugin.errors import ConfigError
    from bootcamp_core.plugin.loader import get_registry
    from bootcamp_core.postprocess import postprocess

    registry = registry or get_registry()
    output_dir = Path(output_dir)
    result = DemoResult()
    configs, result.skipped = plan_demo(registry, samples, seed)
    for note in result.skipped:
        print(note, file=sys.stderr)
    if not configs:
        raise ConfigError("no installed bootcamp has reference agents for its generators; nothing to demonstrate")
    data_dir, eval_dir = output_dir / "data", output_dir / "eval"
    print(f"bootcamp demo: writing into {output_dir}{os.sep}", flush=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    # one dataset of every bootcamp: the per-bootcamp files are only its parts, gone once it is written
    with tempfile.TemporaryDirectory(prefix=".parts-", dir=data_dir) as parts:
        reports = generate_many(configs, parts, registry=registry)
        (result.dataset,) = concat_outputs(reports, data_dir, name="demo")
    result.summary = run_evaluation(
        EvalConfig(dataset_path=result.dataset, output_dir=eval_dir, policy="reference",
                   max_concurrent=max_concurrent, overwrite=True, limits=RolloutLimits(**DEMO_LIMITS),
                   explicit_limits=frozenset()),  # a generator's recommended limits (TaskGenerator.limits) first
        registry=registry,
        progress=progress,
    )
    result.results, result.report = eval_dir / "results.jsonl", eval_dir / "report.html"
    result.training_data = eval_dir / "training_data.jsonl"
    postprocess(result.results, result.training_data, filter_success=True, extract_training=True)
    _print_summary(result)
    return result


#: reference agents end their episodes themselves; some tasks take dozens of turns, more than `bootcamp eval`'s
#: defaults, which follow the original framework. A generator's own ``limits`` replace these.
DEMO_LIMITS = {"max_assistant_turns": 200, "max_user_turns": 400}


def print_generator_table(summary: dict, *, title: str) -> None:
    """The per-(data source, generator) table of an evaluation summary, as ``bootcamp demo`` and ``bootcamp eval``
    end with it. A mean or rate is never rounded onto 0 or 1 when it is neither (``score_text``)."""
    from rich.table import Table

    from bootcamp_core.cli.helpers import output_console
    from bootcamp_core.evaluate.report import score_text

    def rate(value: float) -> str:
        text = f"{value:.3f}"
        return score_text(value) if text in ("0.000", "1.000") and value not in (0.0, 1.0) else text

    def bound(value: float) -> str:
        text = f"{value:.2f}"
        return score_text(value) if text in ("0.00", "1.00", "-0.00") and value not in (0.0, 1.0) else text

    def with_interval(value: float, interval: list | None) -> str:
        # "0.512 [0.43, 0.60]", the interval (95% bootstrap over records) under the value so names keep their room;
        # a summary of an older version has none
        return f"{rate(value)}\n[{bound(interval[0])}, {bound(interval[1])}]" if interval else rate(value)

    table = Table(title=title)
    for column in ("data source", "generator", "episodes", "score", "solved", "pass@1", "turns", "tool\ncalls",
                   "infra\nerrors"):
        names = column in {"data source", "generator"}
        # a long name folds onto the next line rather than losing its end
        table.add_column(column, justify="left" if names else "right", overflow="fold" if names else "ellipsis")
    for group in summary.get("groups", []):
        table.add_row(
            group["data_source"], group["generator"], str(group["count"]),
            with_interval(group["mean_score"], group.get("mean_score_ci")),
            with_interval(group.get("solved_rate", 0.0), group.get("solved_rate_ci")),
            rate(group["pass_at_k"].get("pass@1", 0.0)),
            f"{group['mean_assistant_turns']:.2f}", str(group["tool_calls"]), str(group["infrastructure_errors"]),
        )
    output_console().print(table)


def _print_summary(result: DemoResult) -> None:
    from bootcamp_core.cli.helpers import output_console

    print_generator_table(result.summary, title="bootcamp demo: reference agents on freshly generated tasks")
    console = output_console()
    training = sum(1 for _ in open(result.training_data, encoding="utf-8")) if result.training_data else 0
    for line in (f"dataset        {result.dataset}", f"trajectories   {result.results}",
                 f"report         {result.report}", f"training data  {result.training_data} ({training} records)",
                 f"everything is in {result.dataset.parent.parent}{os.sep}"):
        console.print(line, soft_wrap=True)  # a path is never wrapped
