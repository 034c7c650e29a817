"""``bootcamp rescore RESULTS``: recompute the scores of saved trajectories with the installed rewards (a thin
wrapper over :func:`bootcamp_core.rescore.rescore_results`)."""

from __future__ import annotations

import argparse

from bootcamp_core.cli.helpers import add_flag

HELP = "recompute scores of a results.jsonl with the installed rewards (no model calls)"
DESCRIPTION = """\
Recompute the scores of saved trajectories with the installed rewards, calling no model, and report what changed.
Writes <RESULTS stem>_rescored.jsonl beside the input unless --output or --in-place says otherwise; every write is
atomic. With --in-place, summary.json, summary.csv and report.html beside RESULTS are rewritten too."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", metavar="RESULTS", help="a results.jsonl written by bootcamp eval")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--output", "-o", metavar="PATH", help="where the re-scored lines go")
    add_flag(target, "--in-place", action="store_true",
             help="replace RESULTS (atomically) and rewrite the summary.json, summary.csv and report.html beside it")
    add_flag(parser, "--verify-correction-kwargs", metavar="JSON", field="verify_kwargs",
             help="JSON object for the rewards, replacing the kwargs saved in each line")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--show", type=int, default=20, metavar="N", help="changed lines to list (default: 20)")


def run(args: argparse.Namespace) -> int:
    import json

    from bootcamp_core.cli.helpers import json_object_flag
    from bootcamp_core.evaluate.report import score_text
    from bootcamp_core.rescore import rescore_results

    verify_kwargs = json_object_flag(args.verify_correction_kwargs, "--verify-correction-kwargs")
    report = rescore_results(args.results, output=args.output, in_place=args.in_place, verify_kwargs=verify_kwargs)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return 0
    print(f"{report.lines} lines: {report.rescored} re-scored, {len(report.changes)} changed, "
          f"{report.infrastructure_failures} infrastructure failures kept, {len(report.skipped)} skipped")
    print(f"mean score {score_text(report.mean_before)} -> {score_text(report.mean_after)}")
    for change in report.changes[: args.show]:
        print(f"  line {change.line}: {score_text(change.old_score)} -> {score_text(change.new_score)}  ({change.data_source}, "
              f"{(change.id or '')[:16]})")
    if len(report.changes) > args.show:
        print(f"  ... and {len(report.changes) - args.show} more")
    for line, reason in report.skipped[: args.show]:
        print(f"  skipped line {line}: {reason}")
    print(f"wrote {report.output_path}")
    if report.summary_path is not None:
        print(f"rewrote {report.summary_path} (and summary.csv, report.html)")
    return 0
