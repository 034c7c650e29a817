"""``bootcamp eval``: roll a policy out on a dataset and score it (a thin wrapper over
:func:`bootcamp_core.evaluate.run.run_evaluation`)."""

from __future__ import annotations

import argparse

from bootcamp_core.cli.helpers import add_flag

HELP = "evaluate a model or reference agents on a dataset: results.jsonl, summary, report.html"
DESCRIPTION = """\
Roll a policy out on a dataset and score it. The flags of the original framework's (InternBootcamp's)
run_evaluation, plus --policy, --repeats, --system-prompt, --limit and --shard; underscore spellings
(--dataset_path) work too.

Outputs, directly in --output-dir: results.jsonl (one line per episode, fsynced), summary.json, summary.csv,
report.html."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # required is checked in run(): add_flag would make the hidden --dataset_path alias required as well
    add_flag(parser, "--dataset-path", metavar="PATH", help="records to run: .jsonl, .json or .parquet (required)")
    add_flag(parser, "--output-dir", default="eval_results", metavar="DIR",
             help="where outputs go (default: eval_results)")
    parser.add_argument("--policy", choices=("reference", "openai"), default=None,
                        help="who plays: the bootcamps' reference agents or an OpenAI-compatible endpoint "
                        "(default: reference unless --api-url is given)")
    add_flag(parser, "--api-url", metavar="URL", help="OpenAI-compatible base URL (a trailing /chat/completions is ok)")
    add_flag(parser, "--api-key", metavar="KEY", help="API key (default: $OPENAI_API_KEY, else EMPTY); never written")
    add_flag(parser, "--api-model", metavar="NAME", help="model name sent to the endpoint")
    add_flag(parser, "--api-extra-headers", metavar="HEADERS", help='extra HTTP headers: JSON or "k:v,k2:v2"')
    add_flag(parser, "--api-extra-params", metavar="PARAMS", help='extra request params: JSON or "@file.json"')
    add_flag(parser, "--verify-correction-kwargs", metavar="JSON", field="verify_kwargs",
             help="JSON object passed to every reward")
    add_flag(parser, "--max-assistant-turns", type=int, default=10, metavar="N", help="per episode (default: 10)")
    add_flag(parser, "--max-user-turns", type=int, default=20, metavar="N",
             help="tool messages and interaction replies per episode (default: 20)")
    add_flag(parser, "--episode-timeout", type=float, default=600.0, metavar="SECONDS", field="episode_timeout_s",
             help="wall-clock limit of one episode; past it the episode ends as an infrastructure failure "
             "(finish_reason episode_timeout) (default: 600)")
    add_flag(parser, "--tool-timeout", type=float, default=60.0, metavar="SECONDS", field="tool_timeout_s",
             help="limit of one tool call; past it the call is a model error the model sees (default: 60)")
    add_flag(parser, "--request-timeout", type=float, default=600.0, metavar="SECONDS", field="request_timeout_s",
             help="limit of one HTTP request to --api-url; a timed-out request is retried (default: 600)")
    add_flag(parser, "--max-concurrent", type=int, default=32, metavar="N", help="episodes at once (default: 32)")
    parser.add_argument("--repeats", type=int, default=1, metavar="K",
                        help="episodes per record, for pass@k (default: 1)")
    add_flag(parser, "--system-prompt", metavar="TEXT", help="a system message before every prompt")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N records")
    parser.add_argument("--shard", metavar="i/n", default=None,
                        help="only records whose position in the file is i modulo n (0 <= i < n)")
    add_flag(parser, "--resume-from-result-path", metavar="PATH", field="resume_from",
             help="continue a results.jsonl: drop its infrastructure failures, skip finished episodes, append the "
             "rest (a path that does not exist yet starts it empty)")
    add_flag(parser, "--tool-config", metavar="PATH",
             help="tool config YAML: constructor config per tool (entries with type: remote and a url run on a "
             "tool server)")
    add_flag(parser, "--tool-server", metavar="URL",
             help="run every tool on this tool server (bootcamp serve); interactions and rewards stay local. "
             "The token comes from $BOOTCAMP_TOKEN")
    add_flag(parser, "--interaction-config", metavar="PATH",
             help="interaction config YAML: constructor config per interaction")
    add_flag(parser, "--bootcamp-registry", metavar="PATH",
             help="registry JSONL: evaluate only records of the bootcamps it lists")
    add_flag(parser, "--tokenizer-path", metavar="DIR",
             help="a tokenizer folder: render full_context with its chat template (tokenizer_config.json)")
    add_flag(parser, "--dry-run", action="store_true",
             help="check dataset, plugins and endpoint; run nothing, write nothing")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing results.jsonl in --output-dir")
    parser.add_argument("--verbose", "-v", action="store_true", help="a line per finished episode")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    import logging
    from pathlib import Path

    from bootcamp_core.cli.helpers import json_object_flag
    from bootcamp_core.episode.engine import RolloutLimits
    from bootcamp_core.episode.policies import parse_extra_headers, parse_extra_params
    from bootcamp_core.evaluate.run import EvalConfig, parse_shard, run_evaluation
    from bootcamp_core.plugin.errors import ConfigError

    if not args.dataset_path:
        raise ConfigError("--dataset-path is required: the records to evaluate (.jsonl, .json or .parquet)")
    verify_kwargs = json_object_flag(args.verify_correction_kwargs, "--verify-correction-kwargs")
    verify_kwargs = verify_kwargs or {}
    if args.verbose:
        logging.getLogger("bootcamp_core").setLevel(logging.INFO)
    for flag, value in (("--episode-timeout", args.episode_timeout), ("--tool-timeout", args.tool_timeout),
                        ("--request-timeout", args.request_timeout),
                        ("--max-assistant-turns", args.max_assistant_turns),
                        ("--max-user-turns", args.max_user_turns)):
        if not value > 0:  # RolloutLimits would say so too, but in its own field names
            raise ConfigError(f"{flag} must be positive, got {value:g}")
    limits = RolloutLimits(max_assistant_turns=args.max_assistant_turns, max_user_turns=args.max_user_turns,
                           tool_timeout_s=args.tool_timeout, episode_timeout_s=args.episode_timeout)
    config = EvalConfig(
        dataset_path=Path(args.dataset_path),
        output_dir=Path(args.output_dir),
        policy=args.policy,
        api_url=args.api_url,
        api_key=args.api_key,
        api_model=args.api_model,
        api_extra_headers=parse_extra_headers(args.api_extra_headers),
        api_extra_params=parse_extra_params(args.api_extra_params),
        verify_kwargs=verify_kwargs,
        limits=limits,
        request_timeout_s=args.request_timeout,
        max_concurrent=args.max_concurrent,
        repeats=args.repeats,
        system_prompt=args.system_prompt,
        limit=args.limit,
        shard=parse_shard(args.shard) if args.shard else None,
        resume_from=args.resume_from_result_path,
        tool_config=args.tool_config,
        tool_server=args.tool_server,
        interaction_config=args.interaction_config,
        bootcamp_registry=args.bootcamp_registry,
        tokenizer_path=args.tokenizer_path,
        verbose=args.verbose,
        dry_run=args.dry_run,
        overwrite=args.overwrite,
    )
    summary = run_evaluation(config, progress=not args.quiet)
    if args.dry_run:
        generators = ", ".join(f"{name} ({count})" for name, count in sorted(summary["generators"].items()))
        print(f"dry run ok: {summary['records']} records, {summary['episodes']} episodes; generators: "
              f"{generators or 'none'}")
        return 0
    overall = summary["overall"]
    passes = "  ".join(f"{key} {value:.3f}" for key, value in overall["pass_at_k"].items())
    print(f"{overall['count']} episodes, {overall['infrastructure_errors']} infrastructure errors, "
          f"mean score {overall['mean_score']:.3f}  {passes}")
    print(f"results: {summary['results_path']}")
    print(f"report:  {Path(args.output_dir) / 'report.html'}")
    return 0
