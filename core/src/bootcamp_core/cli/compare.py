"""``bootcamp compare A B``: a paired comparison of two results files (a thin wrapper over
:mod:`bootcamp_core.evaluate.compare`)."""

from __future__ import annotations

import argparse

from bootcamp_core.cli.helpers import add_flag

HELP = "compare two results.jsonl on the episodes they share: differences B - A with bootstrap intervals"
DESCRIPTION = """\
A paired comparison of run B against run A on the episodes both results files hold, keyed by (record, repeat):
the differences B - A of the mean score and of the solved rate, with 95% paired bootstrap intervals over the shared
records (2,000 resamples, a fixed seed: the same files always give the same numbers), overall and per data source
and generator; the episodes solved in one run only; the episodes in one run only. An infrastructure failure counts
as unsolved with score 0. Writes compare.json and compare.html into --output-dir (default: compare-<A>-vs-<B>
beside B, each run named by its file's stem, or its folder's name for a results.jsonl).

Exit status: 0 done; 1 a missing file or one that is not a results file; 2 usage."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results_a", metavar="A", help="the results.jsonl of the baseline run")
    parser.add_argument("results_b", metavar="B", help="the results.jsonl of the run compared with it")
    add_flag(parser, "--output-dir", metavar="DIR", help="where compare.json and compare.html go "
             "(default: compare-<A>-vs-<B> beside B)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON instead of tables")
    parser.add_argument("--show", type=int, default=20, metavar="N", help="episode ids to list per kind (default: 20)")


def run(args: argparse.Namespace) -> int:
    import json

    from bootcamp_core.evaluate.compare import compare_files, default_output_dir, write_comparison

    comparison = compare_files(args.results_a, args.results_b)
    output_dir = args.output_dir or default_output_dir(args.results_a, args.results_b)
    json_path, html_path = write_comparison(output_dir, comparison)
    if args.json:
        print(json.dumps(comparison, indent=2, ensure_ascii=False))
        return 0
    print_comparison(comparison, show=args.show)
    print(f"wrote {json_path} and {html_path}")
    return 0


def print_comparison(comparison: dict, *, show: int = 20) -> None:
    """The comparison's tables and lists of episode ids, on stdout."""
    from rich.table import Table
    from rich.text import Text

    from bootcamp_core.cli.helpers import output_console
    from bootcamp_core.evaluate.report import score_text

    def difference(row: dict, key: str) -> str:
        low, high = row[f"{key}_ci"]
        return f"{row[key]:+.3f}\n[{low:+.2f}, {high:+.2f}]"

    console = output_console()
    a, b = comparison["a"], comparison["b"]
    for name, run in (("A", a), ("B", b)):
        console.print(f"{name}: {run.get('path', '')}  {run['episodes']} episodes, {run['records']} records, "
                      f"{run['infrastructure_errors']} infrastructure errors", soft_wrap=True, markup=False)
    table = Table(title="bootcamp compare: B - A on the shared episodes (95% paired bootstrap intervals)")
    for column in ("data source", "generator", "episodes", "score\nA -> B", "score\nB - A", "solved\nA -> B",
                   "solved\nB - A", "solved in\nA only", "solved in\nB only"):
        names = column in {"data source", "generator"}
        table.add_column(column, justify="left" if names else "right", overflow="fold" if names else "ellipsis")
    for row in [*comparison["groups"], {"data_source": "ALL", "generator": "ALL", **comparison["overall"]}]:
        table.add_row(Text(row["data_source"]), Text(row["generator"]), str(row["episodes"]),
                      f"{score_text(row['mean_score_a'])} -> {score_text(row['mean_score_b'])}",
                      difference(row, "mean_score_difference"),
                      f"{score_text(row['solved_rate_a'])} -> {score_text(row['solved_rate_b'])}",
                      difference(row, "solved_rate_difference"), str(row["solved_in_a_only"]),
                      str(row["solved_in_b_only"]))
    console.print(table)
    for key, label in (("solved_in_a_only", "solved in A, not in B"), ("solved_in_b_only", "solved in B, not in A"),
                       ("only_in_a", "episodes only in A"), ("only_in_b", "episodes only in B")):
        ids = comparison[key]
        console.print(f"{label}: {len(ids)}", markup=False)
        for episode in ids[:show]:
            console.print(f"  {episode}", soft_wrap=True, markup=False)
        if len(ids) > show:
            console.print(f"  ... and {len(ids) - show} more", markup=False)
