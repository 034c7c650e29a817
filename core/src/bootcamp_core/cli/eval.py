"""``bootcamp eval``: roll a policy out on a dataset and score it (a thin wrapper over
:func:`bootcamp_core.evaluate.run.run_evaluation`)."""

from __future__ import annotations

import argparse
import sys

from bootcamp_core.cli.helpers import add_flag, add_ray_flags

HELP = "evaluate a model or reference agents on a dataset: results.jsonl, summary, report.html"
DESCRIPTION = """\
Roll a policy out on a dataset and score it. The flags of the original framework's (InternBootcamp's)
run_evaluation, plus --policy, --repeats, --system-prompt, --limit and --shard; underscore spellings
(--dataset_path) work too.

Outputs, directly in --output-dir: results.jsonl (one line per episode, fsynced), summary.json, summary.csv,
report.html. The console ends with a table per data source and generator; Ctrl-C prints the command that
resumes the run. Turn limits not given come from each record's generator (TaskGenerator.limits), else 10 / 20;
a warning says when more than 5% of a generator's episodes hit one. The API key: $OPENAI_API_KEY or
--api-key-file (a key given as --api-key shows in `ps`); credentials in URLs are masked in everything written.

Before any episode, a preflight checks the endpoint (it answers, takes the key, serves --api-model, answers one
tiny request); --no-preflight skips it. Transient failures (connection, timeout, 429, 5xx, a malformed answer)
are retried for --retry-budget seconds per request; episodes still ending in an infrastructure error run again
at the end (--rerun-failed). Every result line names its error_kind (README: "Exit status and error kinds").

Exit status:
  0    done (infrastructure errors at most --max-infra-error-rate of this run's episodes)
  1    a configuration or input error (one line says which)
  2    usage: a flag argparse rejects
  3    preflight failed: the endpoint is unreachable, refuses the key, does not serve the model, ...
  4    too many infrastructure errors: more than --max-infra-error-rate of this run's episodes, after the
       re-runs (every result and the summary are written first)
  130  interrupted (Ctrl-C, SIGTERM)"""

#: Exit statuses of ``bootcamp eval`` and ``bootcamp demo`` beyond 0, 1 (config or input), 2 (usage), 130.
EXIT_PREFLIGHT = 3
EXIT_INFRASTRUCTURE = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # required is checked in run(): add_flag would make the hidden --dataset_path alias required as well
    add_flag(parser, "--dataset-path", metavar="PATH", help="records to run: .jsonl, .json or .parquet (required)")
    add_flag(parser, "--output-dir", default="eval_results", metavar="DIR",
             help="where outputs go (default: eval_results)")
    parser.add_argument("--policy", choices=("reference", "openai"), default=None,
                        help="who plays: the bootcamps' reference agents or an OpenAI-compatible endpoint "
                        "(default: reference unless --api-url is given)")
    add_flag(parser, "--api-url", metavar="URL", help="OpenAI-compatible base URL (a trailing /chat/completions is ok)")
    add_flag(parser, "--api-key", metavar="KEY",
             help="API key; visible to every user of the machine in `ps`: prefer $OPENAI_API_KEY or --api-key-file "
             "(default: $OPENAI_API_KEY, else EMPTY); never written")
    add_flag(parser, "--api-key-file", metavar="PATH",
             help="read the API key from this file (its first line), so it never shows in `ps`; never written")
    add_flag(parser, "--api-model", metavar="NAME", help="model name sent to the endpoint")
    add_flag(parser, "--api-extra-headers", metavar="HEADERS", help='extra HTTP headers: JSON or "k:v,k2:v2"')
    add_flag(parser, "--api-extra-params", metavar="PARAMS", help='extra request params: JSON or "@file.json"')
    add_flag(parser, "--return-token-ids", action="store_true",
             help="ask the endpoint for each turn's prompt and sampled token ids (vLLM >= 0.10.2, SGLang) and keep "
             "them on its assistant message (prompt_token_ids, completion_token_ids), for postprocess "
             "--extract-training")
    add_flag(parser, "--verify-correction-kwargs", metavar="JSON", field="verify_kwargs",
             help="JSON object passed to every reward")
    add_flag(parser, "--max-assistant-turns", type=int, default=None, metavar="N",
             help="per episode (default: the generator's recommended limit, else 10)")
    add_flag(parser, "--max-user-turns", type=int, default=None, metavar="N",
             help="tool messages and interaction replies per episode (default: the generator's recommended limit, "
             "else 20)")
    add_flag(parser, "--episode-timeout", type=float, default=600.0, metavar="SECONDS", field="episode_timeout_s",
             help="wall-clock limit of one episode; past it the episode ends as an infrastructure failure "
             "(finish_reason episode_timeout) (default: 600)")
    add_flag(parser, "--tool-timeout", type=float, default=60.0, metavar="SECONDS", field="tool_timeout_s",
             help="limit of one tool call; past it the call is a model error the model sees (default: 60)")
    add_flag(parser, "--reward-timeout", type=float, default=60.0, metavar="SECONDS", field="reward_timeout_s",
             help="limit of one call of a reward's or interaction's own work (scoring, judging an answer); past it "
             "the call is abandoned and the episode ends with score 0, error_kind reward_timeout, never re-run "
             "(default: 60)")
    add_flag(parser, "--request-timeout", type=float, default=600.0, metavar="SECONDS", field="request_timeout_s",
             help="limit of one HTTP request to --api-url; a timed-out request is retried (default: 600)")
    add_flag(parser, "--retry-budget", type=float, default=600.0, metavar="SECONDS", field="retry_budget_s",
             help="how long one request to --api-url is retried (429, 5xx, connection, timeout, malformed answer), "
             "with capped exponential backoff and Retry-After honoured up to 30 s (default: 600)")
    add_flag(parser, "--retry-backoff", type=float, default=0.5, metavar="SECONDS", field="retry_backoff_s",
             help="the first retry's backoff; it doubles per retry, with jitter, up to 30 s (default: 0.5)")
    add_flag(parser, "--rerun-failed", type=int, default=2, metavar="N", field="rerun_failed",
             help="run episodes that end in an infrastructure error again, up to N more times, after the others "
             "(default: 2)")
    add_flag(parser, "--max-infra-error-rate", type=float, default=0.02, metavar="RATE", field="max_infra_error_rate",
             help="exit 4 when more than this share of this run's episodes end in an infrastructure error "
             "(default: 0.02)")
    add_flag(parser, "--no-preflight", action="store_true",
             help="skip the endpoint check (reachable, key, model, one tiny request) before the run")
    add_flag(parser, "--max-concurrent", type=int, default=32, metavar="N", help="episodes at once (default: 32)")
    parser.add_argument("--repeats", type=int, default=1, metavar="K",
                        help="episodes per record, for pass@k (default: 1)")
    add_flag(parser, "--system-prompt", metavar="TEXT", help="a system message before every prompt")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N records")
    parser.add_argument("--shard", metavar="i/n", default=None,
                        help="only records whose position in the file is i modulo n (0 <= i < n)")
    add_flag(parser, "--resume-from-result-path", metavar="PATH", field="resume_from",
             help="continue a results.jsonl: drop its infrastructure failures, skip finished episodes, append the "
             "rest (a path that does not exist yet starts it empty). A file that is not a results file of this "
             "dataset is refused and left as it is; a results file another run is writing is refused")
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
    add_ray_flags(parser, "run the episodes in Ray actors, results written here as in a local run",
                  ("--ray-actors", "actors running episodes (default: the cluster's CPUs)"),
                  ("--ray-concurrency",
                   "episodes at once per actor (default: --max-concurrent shared among the actors)"))


def run(args: argparse.Namespace) -> int:
    import logging
    from pathlib import Path

    from bootcamp_core.cli.helpers import error_line, json_object_flag
    from bootcamp_core.episode.engine import RolloutLimits
    from bootcamp_core.episode.policies import PreflightError, parse_extra_headers, parse_extra_params
    from bootcamp_core.evaluate.run import EvalConfig, parse_shard, run_evaluation
    from bootcamp_core.plugin.errors import ConfigError

    if not args.dataset_path:
        raise ConfigError("--dataset-path is required: the records to evaluate (.jsonl, .json or .parquet)")
    verify_kwargs = json_object_flag(args.verify_correction_kwargs, "--verify-correction-kwargs")
    verify_kwargs = verify_kwargs or {}
    if args.verbose:
        logging.getLogger("bootcamp_core").setLevel(logging.INFO)
    for flag, value in (("--episode-timeout", args.episode_timeout), ("--tool-timeout", args.tool_timeout),
                        ("--reward-timeout", args.reward_timeout), ("--request-timeout", args.request_timeout),
                        ("--max-assistant-turns", args.max_assistant_turns),
                        ("--max-user-turns", args.max_user_turns)):
        if value is None:  # a turn limit not given: the generator's, else RolloutLimits' default
            continue
        if not value > 0:  # RolloutLimits would say so too, but in its own field names
            raise ConfigError(f"{flag} must be positive, got {value:g}")
    turns = {name: value for name, value in (("max_assistant_turns", args.max_assistant_turns),
                                             ("max_user_turns", args.max_user_turns)) if value is not None}
    limits = RolloutLimits(**turns, tool_timeout_s=args.tool_timeout, episode_timeout_s=args.episode_timeout,
                           reward_timeout_s=args.reward_timeout)
    config = EvalConfig(
        dataset_path=Path(args.dataset_path),
        output_dir=Path(args.output_dir),
        policy=args.policy,
        api_url=args.api_url,
        api_key=_api_key(args),
        api_model=args.api_model,
        api_extra_headers=parse_extra_headers(args.api_extra_headers),
        api_extra_params=parse_extra_params(args.api_extra_params),
        return_token_ids=args.return_token_ids,
        verify_kwargs=verify_kwargs,
        limits=limits,
        explicit_limits=frozenset(turns),
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
        retry_budget_s=args.retry_budget,
        retry_backoff_s=args.retry_backoff,
        rerun_failed=args.rerun_failed,
        max_infra_error_rate=args.max_infra_error_rate,
        preflight=not args.no_preflight,
    )
    ray_flags = [flag for flag, value in (("--ray-actors", args.ray_actors),
                                          ("--ray-concurrency", args.ray_concurrency)) if value is not None]
    if ray_flags and args.ray is None:
        raise ConfigError(f"{ray_flags[0]} needs --ray")
    try:
        if args.ray is not None and not args.dry_run:
            summary = _run_on_ray(config, args)
        else:
            summary = run_evaluation(config, progress=not args.quiet)
    except KeyboardInterrupt:
        if not args.dry_run:
            print(f"resume with: {resume_command(args)}", file=sys.stderr)
        raise
    except PreflightError as error:
        print(error_line(error), file=sys.stderr)
        return EXIT_PREFLIGHT
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
    from bootcamp_core.cli.demo import print_generator_table

    print_generator_table(summary, title="bootcamp eval: by data source and generator")
    return infrastructure_verdict(summary)


def _run_on_ray(config: object, args: argparse.Namespace) -> dict:
    """The evaluation with its episodes in Ray actors (:mod:`bootcamp_core.scale.evaluate`)."""
    from bootcamp_core.evaluate.run import run_evaluation
    from bootcamp_core.scale.cluster import connected
    from bootcamp_core.scale.evaluate import RayEpisodes

    with connected(args.ray) as ray:
        runner = RayEpisodes(ray, actors=args.ray_actors, concurrency=args.ray_concurrency)
        summary = run_evaluation(config, progress=not args.quiet, runner=runner)
    print(f"ray: {runner.actors} actors x {runner.concurrency} episodes at once, results from "
          f"{len(runner.worker_pids)} worker processes; {runner.lost} episodes on a lost worker", file=sys.stderr)
    return summary


def infrastructure_verdict(summary: dict) -> int:
    """Print what this run's infrastructure errors were (top kinds, an example each) and how the storm went, then
    return the exit status: :data:`EXIT_INFRASTRUCTURE` when their share is above the run's limit, else 0."""
    this_run = summary.get("this_run") or {}
    if this_run.get("retries") or this_run.get("reruns"):
        print(f"retries {this_run.get('retries', 0)} (waited {this_run.get('waiting_s', 0):.1f} s), re-runs "
              f"{this_run.get('reruns', 0)}, lowest concurrency {this_run.get('lowest_concurrency')}",
              file=sys.stderr)
    kinds = list((summary["overall"].get("error_kinds") or {}).items())
    if kinds:
        print("error kinds, most frequent first:", file=sys.stderr)
    for kind, entry in kinds[:5]:
        example = " ".join(str(entry["example"]).split())[:200]
        print(f"  {kind}: {entry['count']}, e.g. {example}", file=sys.stderr)
    if not this_run.get("too_many_infrastructure_errors"):
        return 0
    print(f"error: {this_run['infrastructure_errors']} of this run's {this_run['episodes']} episodes ended in an "
          f"infrastructure error ({this_run['infrastructure_error_rate']:.1%}, more than --max-infra-error-rate "
          f"{this_run['max_infra_error_rate']:g}); every result is written", file=sys.stderr)
    return EXIT_INFRASTRUCTURE


def _api_key(args: argparse.Namespace) -> str | None:
    """The key from ``--api-key-file`` or ``--api-key`` (with a warning: other users see it in ``ps``); ``None``
    leaves it to ``$OPENAI_API_KEY``."""
    import sys

    from bootcamp_core.plugin.errors import ConfigError

    path = getattr(args, "api_key_file", None)
    if path is not None:
        if args.api_key is not None:
            raise ConfigError("give the API key with --api-key-file or --api-key, not both")
        try:
            with open(path, encoding="utf-8") as handle:
                key = handle.readline().strip()
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"--api-key-file {path}: cannot read it: {getattr(error, 'strerror', None) or error}"
                              ) from None
        if not key:
            raise ConfigError(f"--api-key-file {path}: the file is empty (the key goes on its first line)")
        return key
    if args.api_key is not None:
        print("warning: --api-key is visible to every user of this machine (ps, /proc); set $OPENAI_API_KEY or "
              "use --api-key-file PATH instead", file=sys.stderr)
    return args.api_key


def resume_command(args: argparse.Namespace) -> str:
    """The ``bootcamp eval`` command line that continues this run: the same flags, ``--resume-from-result-path``
    the results file, no ``--overwrite``. Secrets stay out: an ``--api-key`` is left off (give it as before, or
    through $OPENAI_API_KEY / --api-key-file) and credentials in URLs are masked."""
    import shlex
    from pathlib import Path

    from bootcamp_core.evaluate.results import RESULTS_NAME
    from bootcamp_core.evaluate.secrets import mask_url

    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    results = args.resume_from_result_path or str(Path(args.output_dir) / RESULTS_NAME)
    words = ["bootcamp", "eval"]
    left_off: list[str] = []
    for action in parser._actions:  # argparse's record of its flags (see helpers.flags_by_field)
        if action.help == argparse.SUPPRESS or not action.option_strings:
            continue
        flag = next((option for option in action.option_strings if option.startswith("--")), None)
        if flag in (None, "--overwrite", "--resume-from-result-path"):
            continue
        if flag in ("--api-key", "--api-extra-headers"):  # credentials: never printed
            left_off.append(flag[2:].replace("-", " ") if getattr(args, action.dest, None) is not None else "")
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default or value is None:
            continue
        if action.nargs == 0:  # store_true
            words.append(flag)
        else:
            text = mask_url(str(value)) if flag in ("--api-url", "--tool-server") else str(value)
            if text != str(value):
                left_off.append(f"the credentials in {flag}")
            words += [flag, text]
    words += ["--resume-from-result-path", str(results)]
    command = shlex.join(words)
    left_off = [item for item in left_off if item]
    if left_off:
        command += f"  (plus, as before: {', '.join(left_off)})"
    return command
