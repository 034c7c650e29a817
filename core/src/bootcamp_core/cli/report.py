"""``bootcamp report RESULTS``: (re)build summary.json, summary.csv and report.html from a results file (a thin
wrapper over :func:`bootcamp_core.evaluate.report.build_report`)."""

from __future__ import annotations

import argparse

HELP = "rebuild summary.json, summary.csv and report.html from a results.jsonl"
DESCRIPTION = """\
Rebuild the summary (summary.json, summary.csv) and the HTML report of a results file: one written by bootcamp eval
of any version, or by the original framework's evaluator (InternBootcamp); fields a line lacks are shown as
missing. Calls no model and needs no plugin installed. Everything goes beside RESULTS unless --output names the
report's path (the summary files then go beside it). The report is one offline file: open it in a browser; a link
to one episode is report.html#episode=<id>.

Exit status: 0 done; 1 a missing file or one that is not a results file; 2 usage."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", metavar="RESULTS", help="a results.jsonl")
    parser.add_argument("--output", "-o", metavar="PATH", help="where report.html goes (default: beside RESULTS)")


def run(args: argparse.Namespace) -> int:
    from bootcamp_core.evaluate.report import build_report

    built = build_report(args.results, output=args.output)
    print(f"{built.episodes} episodes; wrote {built.report_path} (and {built.summary_path.name}, summary.csv)")
    return 0
