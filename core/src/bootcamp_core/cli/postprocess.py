"""``bootcamp postprocess IN [OUT]``: results into training data (a thin wrapper over
:func:`bootcamp_core.postprocess.postprocess`)."""

from __future__ import annotations

import argparse

from bootcamp_core.cli.helpers import add_flag

HELP = "filter and transform results into training data"
DESCRIPTION = """\
Filter and transform evaluation results (ours, or the result files of the original framework, InternBootcamp) into
training data.
Order: filters (--filter-success, score, --data-source) -> --expand-messages-prefixes -> extraction.
The score filter (both bounds inclusive) applies whenever --min-score > 0 or --max-score < 1:
pass --min-score 0 to keep every score. OUT defaults to <IN stem>_processed.jsonl beside IN.
Unreadable lines are skipped and listed with their line numbers."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="IN", help="results file: .jsonl (one result per line) or .json (an array)")
    parser.add_argument("output", metavar="OUT", nargs="?", default=None,
                        help="output JSONL (default: <IN stem>_processed.jsonl beside IN)")
    add_flag(parser, "--filter-success", action="store_true",
             help="keep episodes without an infrastructure error (success true)")
    add_flag(parser, "--min-score", type=float, default=0.9, metavar="X",
             help="lowest score kept, inclusive (default: 0.9)")
    add_flag(parser, "--max-score", type=float, default=1.0, metavar="X",
             help="highest score kept, inclusive (default: 1.0)")
    add_flag(parser, "--data-source", action="append", metavar="NAME", field="data_sources",
             help="keep records of this data source, e.g. bootcamp/example (repeatable, or comma-separated)")
    add_flag(parser, "--expand-messages-prefixes", action="store_true", field="expand_prefixes",
             help="one record per assistant message after the prompt, its messages ending at that message")
    extract = parser.add_mutually_exclusive_group()
    add_flag(extract, "--extract-training", action="store_true",
             help='write {"id": md5 of the messages, "data_source", "prompt", "messages", "tools"}, plus '
             '"input_ids", "labels" and "loss_mask" from the token ids of results of eval --return-token-ids')
    add_flag(extract, "--extract-messages", action="store_true", help='write {"messages": [...]} only')
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")


def run(args: argparse.Namespace) -> int:
    import sys

    from bootcamp_core.postprocess import format_statistics, postprocess

    data_sources = [name.strip() for item in args.data_source or [] for name in item.split(",") if name.strip()]
    statistics = postprocess(
        args.input,
        args.output,
        filter_success=args.filter_success,
        min_score=args.min_score,
        max_score=args.max_score,
        data_sources=data_sources,
        expand_prefixes=args.expand_messages_prefixes,
        extract_training=args.extract_training,
        extract_messages=args.extract_messages,
    )
    if not args.quiet:
        print(format_statistics(statistics))
    elif statistics.unreadable or statistics.errors:
        print(f"{len(statistics.unreadable)} unreadable lines, {len(statistics.errors)} step errors "
              f"in {statistics.input_path}", file=sys.stderr)
    return 0
