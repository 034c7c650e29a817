"""The evaluator's run loop: many episodes with bounded concurrency, crash-safe results, a summary and a report.

``bootcamp eval`` is a thin wrapper over :func:`run_evaluation`. What goes where, directly in ``output_dir``:

- ``results.jsonl`` — one :class:`~bootcamp_core.data.records.EpisodeResult` per line, appended as episodes
  finish in batches, each flushed and fsynced before its episodes count as done, so a kill -9 loses at most the
  batch being written, and leaves at most its last line cut (resume drops it; :mod:`.results`).
- ``summary.json`` / ``summary.csv`` — per (data source, generator) and overall: count, successes, infrastructure
  and model errors, mean score (every episode in the denominator, an infrastructure failure scores 0), pass@k,
  mean assistant turns, tool calls and tokens (:mod:`.statistics`).
- ``report.html`` — self-contained and offline (:mod:`.report`).

Selection, in this order (:mod:`.dataset`): ``bootcamp_registry`` keeps records whose bootcamp is listed; ``limit``
keeps the first N of those; ``shard=(i, n)`` keeps the ones whose position in the dataset file (0-based) is ``i``
modulo ``n``, so the shards of one command line cover its selection exactly once whatever else differs between
machines. Each kept record runs ``repeats`` times (repeat 0..K-1). Every selected record is checked before any
episode starts (its generator, tools, interaction and reward resolve; a ConfigError lists those that do not), in
the one read the run's records come from: the check keeps what it parsed of the file's first ``read_once_bytes``
(:data:`~bootcamp_core.evaluate.dataset.READ_ONCE_BYTES`) and the run reads only the rest of a larger file again,
refusing a file that changed after its check (:class:`~bootcamp_core.evaluate.dataset.DatasetSelection`).

Resume (``resume_from=P``): a P that does not exist yet is created empty (the first run of a cluster script that
always passes it); otherwise P is first rewritten without its infrastructure failures, a cut-off last line and
repeated keys; episodes whose key is left are skipped, the rest run and are appended to P. A P that is not a results
file of this dataset is refused and left as it is, and a results file another run is writing is refused
(:class:`~bootcamp_core.evaluate.results.ResultsLock`). After a completed run P holds
exactly one line per (record, repeat), and the summary covers all of P.

A real run (not a dry run) first deletes summary.json, summary.csv and report.html in ``output_dir``; they are
written again at the end, so a run killed midway never leaves a summary that disagrees with the results file.

Secrets: the API key in use (``api_key``, else ``$OPENAI_API_KEY``), the values of ``api_extra_headers`` and the
credentials inside URLs (``api_url``, ``tool_server``, tool-config URLs: ``user:PASSWORD@``, ``?api_key=``) are
never written — not to results, summary, report or ``evaluation_config`` — and are masked in the log records of the
run, even when a server or plugin echoes them (:mod:`.secrets`).

Tools that a tool config (or ``tool_server``) puts on a backend are checked to be served before any episode
starts, through the backend the entry's ``type:`` names (:mod:`bootcamp_core.plugin.backends`); every other
component a tool or interaction config names is built with its config then, so a config its class rejects fails
the run at start-up in one line, not every episode.

Preflight (``preflight``, on by default): before any episode, the policy's check runs (the endpoint answers, takes
the key, serves the model and answers one tiny request; reference agents exist for every generator); a failure
raises :class:`~bootcamp_core.episode.policies.PreflightError` naming the cause, nothing is written.

Storms: each request is retried within ``retry_budget_s`` (:mod:`bootcamp_core.episode.retries`); episodes that
still end in an infrastructure error are run again after the others, up to ``rerun_failed`` more times, and only
their last outcome is written (one line per episode). ``summary["this_run"]`` reports the episodes of this
invocation, their infrastructure errors after the re-runs and its share, whether it exceeds
``max_infra_error_rate`` (``too_many_infrastructure_errors``; ``bootcamp eval`` then exits 4), the re-runs, the
retries, the time spent waiting before them and the lowest concurrency the endpoint's 429s brought the requests to.

Speed: :func:`run_evaluation` (``bootcamp eval``) runs on uvloop where it is installed, and while the episodes run
the garbage collector leaves alone what was alive before them (:mod:`bootcamp_core.plugin.runtime`).
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import anyio

from bootcamp_core.data.records import EpisodeResult, GeneratedSample, normalize_record
from bootcamp_core.episode.engine import episode_id, run_episode
from bootcamp_core.episode.policies import PreflightError
from bootcamp_core.evaluate.chat_template import ChatTemplate

# parse_shard: imported from here by the command line
from bootcamp_core.evaluate.config import EvalConfig, component_config, parse_shard  # noqa: F401
from bootcamp_core.evaluate.dataset import READ_ONCE_BYTES, DatasetSelection, registry_filter
from bootcamp_core.evaluate.progress import Progress, RunStats
from bootcamp_core.evaluate.results import (
    RESULTS_NAME,
    ResultsLock,
    ResultsWriter,
    iter_result_lines,
    prepare_resume,
    remove_stale_temporaries,
)
from bootcamp_core.evaluate.secrets import MaskedLogs, Redactor, config_secrets, mask_config, mask_urls
from bootcamp_core.evaluate.statistics import REPORT_NAME, SUMMARY_CSV, SUMMARY_JSON, Summary, write_summary
from bootcamp_core.plugin.backends import tool_backend
from bootcamp_core.plugin.errors import BootcampError, ConfigError, InfrastructureError
from bootcamp_core.plugin.runtime import event_loop_options, frozen_heap

__all__ = ["EvalConfig", "evaluate", "run_evaluation"]

logger = logging.getLogger("bootcamp_core")


async def _check_policy(policy: Any, representatives: list[dict]) -> None:
    """The preflight: the reference agents' check (a ConfigError), else the policy's own ``check()``, whose
    failures are a :class:`PreflightError`."""
    from bootcamp_core.episode.policies import ReferencePolicy

    if isinstance(policy, ReferencePolicy):
        policy.check(representatives)
        return
    check = getattr(policy, "check", None)
    if check is not None:
        try:
            outcome = check()
            if hasattr(outcome, "__await__"):
                await outcome
        except PreflightError:
            raise
        except InfrastructureError as error:
            raise PreflightError(str(error), kind=error.kind) from None


async def evaluate(config: EvalConfig, *, registry: Any = None, policy: Any = None, progress: bool = True,
                   runner: Any = None, read_once_bytes: int = READ_ONCE_BYTES) -> dict:
    """Run (or, with ``dry_run``, only check) an evaluation; returns the summary (see the module docstring).

    ``policy`` replaces the one the config describes (it is not closed here); ``registry`` defaults to the
    installed plugins. A dry run checks that every selected record's generator, tools, interaction and reward
    resolve, and the policy (reference agents exist / one request to the endpoint); it writes nothing and returns
    ``{"dry_run": True, "records", "episodes", "generators"}``.

    ``runner`` runs the episodes elsewhere (:class:`bootcamp_core.scale.evaluate.RayEpisodes`: in Ray actors); the
    selection, results file, re-runs and summary stay here, as in a local run.

    ``read_once_bytes``: how much of the dataset file the check keeps parsed for the run, which reads only the rest
    again (:class:`~bootcamp_core.evaluate.dataset.DatasetSelection`, :data:`~.dataset.READ_ONCE_BYTES`).
    """
    redactor = Redactor(config.secrets())
    with MaskedLogs(redactor):
        try:
            return await _evaluate(config, registry, policy, progress, redactor, runner, read_once_bytes)
        except BootcampError as error:
            # a server may echo a credential into an error message, which the CLI prints
            message = mask_urls(redactor.text(str(error)))
            if message == str(error):
                raise
            try:
                masked = type(error)(message)
            except TypeError:  # a subclass with another constructor
                masked = BootcampError(message)
            if isinstance(error, ConfigError) and isinstance(masked, ConfigError):
                masked.field = error.field
            if hasattr(error, "kind"):
                masked.kind = error.kind
            raise masked from None


async def _make_policy(config: EvalConfig, registry: Any) -> Any:
    """The policy the config describes; make_policy owns the rules (default kind, required flags, key from env)."""
    from bootcamp_core.episode.policies import make_policy
    from bootcamp_core.episode.retries import RetryPolicy

    retry = config.retry or RetryPolicy(budget_s=config.retry_budget_s, base_s=config.retry_backoff_s)
    return make_policy(config.policy, api_url=config.api_url, api_key=config.api_key, api_model=config.api_model,
                       extra_headers=config.api_extra_headers, extra_params=config.api_extra_params,
                       registry=registry, retry=retry, request_timeout_s=config.request_timeout_s,
                       max_concurrency=config.max_concurrent, return_token_ids=config.return_token_ids)


async def _evaluate(config: EvalConfig, registry: Any, policy: Any, progress: bool, redactor: Redactor,
                    runner: Any = None, read_once_bytes: int = READ_ONCE_BYTES) -> dict:
    from bootcamp_core.plugin.loader import get_registry

    registry = registry or get_registry()
    keep = registry_filter(config.bootcamp_registry, registry) if config.bootcamp_registry else None
    components = component_config(config, registry)
    template = ChatTemplate(config.tokenizer_path) if config.tokenizer_path else None

    # read once: the check keeps the records it parsed (a bounded part of the file) for the run to take
    selected = DatasetSelection(config.dataset_path, limit=config.limit, shard=config.shard, keep=keep,
                                buffer_bytes=read_once_bytes, record_keys=config.resume_from is not None)

    _build_components(config, components, registry)
    served = await _served_tools(config, components)
    backend_ids = {tool_id for tool_id, entry in components.items() if "type" in entry}
    check = selected.check(registry, config.dataset_path, served=served, remote=backend_ids)
    if config.tool_server:
        for tool in check.tool_ids:
            components[tool] = {"type": "remote", "url": config.tool_server, "tool_id": tool,
                                "call_timeout_s": config.limits.tool_timeout_s}

    own_policy = policy is None
    if own_policy:
        policy = await _make_policy(config, registry)
    try:
        if config.dry_run:
            await _check_policy(policy, check.representatives)
            return {"dry_run": True, "records": check.count, "episodes": check.count * config.repeats,
                    "generators": check.generators}
        from bootcamp_core.episode.policies import ReferencePolicy

        if isinstance(policy, ReferencePolicy):  # a generator without a reference agent fails before any episode
            policy.check(check.representatives)
        elif config.preflight:
            await _check_policy(policy, check.representatives)
        results = config.resume_from if config.resume_from is not None else config.output_dir / RESULTS_NAME
        with ResultsLock(results):  # a second run on the same results file is refused while this one runs
            return await _run(config, registry, policy, components, template, selected, check.count, progress,
                              redactor, runner)
    finally:
        if own_policy and hasattr(policy, "aclose"):
            await policy.aclose()
        if served:
            for entry in _backend_entries(config, components):
                await tool_backend(entry["type"]).close(entry)


def _build_components(config: EvalConfig, components: dict[str, dict], registry: Any) -> None:
    """Build every locally run component a tool or interaction config names, with its config, so a config its class
    rejects fails here in one line instead of every episode as an infrastructure error."""
    for component_id, entry in sorted(components.items()):
        if "type" in entry:  # runs on a backend: checked by _served_tools
            continue
        for kind, path in (("tool", config.tool_config), ("interaction", config.interaction_config)):
            try:
                registry.resolve(kind, component_id)
            except BootcampError:
                continue
            try:
                registry.component(kind, component_id, entry)
            except Exception as error:
                raise ConfigError(f"{path}: {kind} {component_id}: its config is rejected: "
                                  f"{type(error).__name__}: {error}") from None
            break


def _backend_entries(config: EvalConfig, components: dict[str, dict]) -> list[dict]:
    """The tool-config entries on a backend, and ``tool_server``'s, as the configs their backends take."""
    entries = [entry for entry in components.values() if "type" in entry]
    if config.tool_server:
        entries.append({"type": "remote", "url": config.tool_server, "call_timeout_s": config.limits.tool_timeout_s})
    return entries


async def _served_tools(config: EvalConfig, components: dict[str, dict]) -> dict[str, set[str]] | None:
    """{where: tool ids served there} for ``tool_server`` and the tool-config entries on a backend; ``"*"`` holds
    ``tool_server``'s. Each entry gets the rollout's tool timeout, so its backend stops a call when the episode gives
    up on it."""
    served: dict[str, set[str]] = {}
    for tool_id, entry in sorted(components.items()):
        if "type" not in entry:
            continue
        entry.setdefault("call_timeout_s", config.limits.tool_timeout_s)
        offered = await _offered(tool_backend(entry["type"]), entry, f"{config.tool_config}: tool {tool_id}")
        if entry.get("tool_id", tool_id) not in offered:
            raise ConfigError(f"{config.tool_config}: tool {tool_id} is not served by {entry.get('url', entry['type'])}")
        served.setdefault(str(entry.get("url", entry["type"])), set()).update(offered)
    if config.tool_server:
        entry = {"type": "remote", "url": config.tool_server}
        served["*"] = await _offered(tool_backend("remote"), entry, f"tool_server {config.tool_server}")
    return served or None


async def _offered(backend: Any, entry: dict, where: str) -> set[str]:
    try:
        return await backend.served_tools(entry)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}", field=error.field) from None
    except InfrastructureError as error:
        raise ConfigError(f"cannot use the tool server: {error}") from None


async def _run(config: EvalConfig, registry: Any, policy: Any, components: dict, template: ChatTemplate | None,
               selected: DatasetSelection, count: int, progress: bool, redactor: Redactor,
               runner: Any = None) -> dict:
    output_dir = config.output_dir
    output_dir.mkdir(parents=True, exist_ok=True)
    if config.resume_from is not None:
        results_path = config.resume_from
        # refuses another dataset's file; the check noted the records' keys, so the dataset is not read again
        finished, counts = prepare_resume(results_path, config.dataset_path, record_keys=selected.record_keys,
                                          all_keys=selected.all_keys)
        logger.info("resuming %s: %s", results_path, counts)
    else:
        results_path = output_dir / RESULTS_NAME
        if results_path.exists() and results_path.stat().st_size and not config.overwrite:
            raise ConfigError(
                f"{results_path} already holds results. Continue it with resume_from {results_path}, "
                "start over with overwrite, or choose another output_dir", field="resume_from",
            )
        results_path.write_text("", encoding="utf-8")
        finished = set()
    # written again at the end; until then none may disagree with the results file (a killed run leaves none)
    for name in (SUMMARY_JSON, SUMMARY_CSV, REPORT_NAME):
        (output_dir / name).unlink(missing_ok=True)
    remove_stale_temporaries(output_dir, (SUMMARY_JSON, SUMMARY_CSV, REPORT_NAME, RESULTS_NAME))  # of dead runs
    public = config.public()
    # rescoring builds the reward with the same config; its credentials (a tool server's token, a password in a
    # URL) are never written, nor shown wherever else they turn up
    redactor.add(config_secrets(components))
    public["component_config"] = mask_config(components)
    public["started_at"] = datetime.now(timezone.utc).isoformat()
    total = count * config.repeats - _finished_among(selected, finished, config.repeats)
    stats = RunStats(total)

    from bootcamp_core.evaluate.report import ReportParts

    # the summary and the report's parts take each line as its batch reaches the disk, in the file's order, so the
    # results file is not read again at the end; a resumed run's earlier lines go in first
    # each (record, repeat) is written once (a resumed file is rewritten without repeated keys), so the summary
    # forgets a record's key with its last repeat: its memory is the records in flight and a few counts per record
    repeats = max([config.repeats, *(_repeat_of(key) + 1 for key in finished)])
    summary_so_far, parts = Summary(repeats=repeats), ReportParts()

    def written(values: list[dict]) -> None:
        for value in values:
            summary_so_far.add(value)
            parts.add(value)

    if finished or config.resume_from is not None:
        written(iter_result_lines(results_path))
    writer = ResultsWriter(results_path, redact=redactor, on_written=written)
    #: episodes that ended in an infrastructure error in the current round, to run again after it (not written yet)
    failed: list[tuple[dict, int, str | None]] = []
    rounds_left = config.rerun_failed

    def first_round() -> Iterator[tuple[dict, int, str | None]]:
        for _, record in selected.records(release=True):  # the check's records go once the run has taken them
            if not finished and config.repeats == 1:  # no key needed here: the engine hashes its own copy
                yield record, 0, None
                continue
            record_key = episode_id(record, 0).rpartition(":")[0]  # hashed once, whatever the repeats
            for repeat in range(config.repeats):
                key = f"{record_key}:{repeat}"
                if key not in finished:
                    yield record, repeat, key

    limits_by_generator: dict[Any, Any] = {}

    def limits_of(record: dict) -> Any:
        """The user's limits, with the record's generator's recommended turn limits for those not set."""
        generator = ((record.get("extra_info") or {}).get("bootcamp") or {}).get("generator")
        if generator not in limits_by_generator:
            try:
                recommended = getattr(registry.get_class("generator", generator), "limits", None)
            except (BootcampError, AttributeError, TypeError, ValueError):  # not installed here: the user's limits
                recommended = None
            limits_by_generator[generator] = config.limits_for(recommended)
        return limits_by_generator[generator]

    async def work(bar: Progress, episodes: Iterator[tuple[dict, int, str | None]], last_round: bool) -> None:
        # one iterator shared by the workers, each taking the next episode as it frees up: next() runs in the event
        # loop without awaiting, so no two take the same; a producer task feeding a stream cost about 25 us of CPU
        # an episode in task switches (bench/bench_eval_overhead.py)
        for record, repeat, key in episodes:
            writer.expect()  # its line joins the batch the episodes running meanwhile share
            try:
                if runner is not None:
                    result = await runner.run(record, repeat, key, limits_of(record))
                else:
                    result = await run_episode(
                        record, policy, registry=registry, limits=limits_of(record),
                        system_prompt=config.system_prompt, verify_kwargs=dict(config.verify_kwargs),
                        component_config=components, repeat=repeat, evaluation_config=public, episode_key=key,
                    )
            except Exception as error:  # run_episode reports failures itself; this is the last line of defence
                key = key or episode_id(record, repeat)
                logger.warning("episode %s crashed: %s: %s", key, type(error).__name__, error)
                result = _failure_result(record, repeat, key, error, public)
            if not result.success and not last_round:
                # run again after this round; its last outcome is written
                failed.append((record, repeat, result.id))
                writer.unexpect()
                continue
            if template is not None:
                try:
                    result.full_context = template.render(result.messages, result.tools)
                except Exception as error:  # a template that cannot render this trajectory: keep the episode
                    logger.warning("episode %s: chat template failed: %s", result.id, error)
            # the episode counts as done once its line is on disk: batched with the lines of the episodes
            # finishing meanwhile, one fsync each (bench/bench_eval_overhead.py)
            try:
                await writer.commit(*writer.entry_for(result))
            except ConfigError as error:  # a full disk: the run stops, every line written before is kept
                write_failures.append(error)
                group.cancel_scope.cancel()
                return
            stats.add(result)
            bar.update()
            if config.verbose:
                bar.print(f"{result.id[:12]}… r{result.repeat} {result.generator} score={result.score:.3f} "
                          f"{result.finish_reason}{' ' + str(result.error_type) if result.error_type else ''}"
                          f"{' ' + str(result.error_kind) if result.error_kind else ''}")

    reruns = 0
    write_failures: list[ConfigError] = []
    retries = getattr(policy, "retry_stats", None)
    retries_before = retries.to_dict() if retries is not None else None  # a policy given may have run before
    concurrent = config.max_concurrent
    try:
        if runner is not None:  # its workers run the episodes and the policy's requests: as many at once as they take
            concurrent = await runner.start(config, components, public)
        # what was alive before the episodes (modules, registry, policy) stays out of the collector's way
        with frozen_heap(), Progress(stats, progress) as bar:
            episodes: Any = first_round()
            while True:
                last_round = rounds_left == 0
                shared = iter(episodes)
                async with anyio.create_task_group() as group:
                    for _ in range(concurrent):
                        group.start_soon(work, bar, shared, last_round)
                if write_failures:
                    raise write_failures[0]
                if not failed:
                    break
                episodes, failed[:] = list(failed), []
                reruns += len(episodes)
                rounds_left -= 1
                logger.info("running %d episode(s) again that ended in an infrastructure error", len(episodes))
        if runner is not None:
            this_run_extra = await runner.finish()
    finally:
        writer.close()
        if runner is not None:
            runner.close()

    summary = summary_so_far.to_dict()
    summary["results_path"] = str(results_path)
    summary["evaluation_config"] = redactor.data(public)
    rate = stats.errors / stats.done if stats.done else 0.0
    concurrency = getattr(policy, "concurrency", None)
    summary["this_run"] = {"episodes": stats.done, "infrastructure_errors": stats.errors,
                           "infrastructure_error_rate": round(rate, 6),
                           "max_infra_error_rate": config.max_infra_error_rate,
                           "too_many_infrastructure_errors": rate > config.max_infra_error_rate,
                           "reruns": reruns,
                           **_retries_since(retries_before, retries),
                           "lowest_concurrency": (min(concurrency.lowest, config.max_concurrent)
                                                  if concurrency is not None else config.max_concurrent),
                           "skipped_as_finished": count * config.repeats - total,
                           "duration_s": round(time.monotonic() - stats.started, 3)}
    if runner is not None:  # the workers' retries, the episodes run again after a worker was lost, where they ran
        summary["this_run"]["reruns"] += this_run_extra.pop("reruns", 0)
        summary["this_run"].update(this_run_extra)
    _warn_turn_limits(summary)
    write_summary(output_dir, summary, parts=parts)
    return summary


def _retries_since(before: dict | None, stats: Any) -> dict:
    """This run's retries, waiting and retries by kind: the policy's counts now less those before the run."""
    if before is None or stats is None:
        return {"retries": 0, "waiting_s": 0.0, "retries_by_kind": {}}
    now = stats.to_dict()
    kinds = {kind: count - before["retries_by_kind"].get(kind, 0) for kind, count in now["retries_by_kind"].items()}
    return {"retries": now["retries"] - before["retries"],
            "waiting_s": round(now["waiting_s"] - before["waiting_s"], 3),
            "retries_by_kind": {kind: count for kind, count in kinds.items() if count}}


#: More than this share of episodes ending at a turn limit is warned about: the scores are likely cut short.
TURN_LIMIT_WARN_SHARE = 0.05


def _repeat_of(key: str) -> int:
    """The repeat of an episode key ``record:repeat`` (0 for a key without one)."""
    record, _, repeat = key.rpartition(":")
    return int(repeat) if record and repeat.isdecimal() else 0


def _warn_turn_limits(summary: dict) -> None:
    """A warning (logged, and in ``summary["warnings"]``) per generator whose episodes hit a turn limit in more than
    :data:`TURN_LIMIT_WARN_SHARE` of the cases."""
    warnings = summary.setdefault("warnings", [])
    for group in summary.get("groups") or []:
        count, hit = group.get("count") or 0, group.get("reached_max_turns") or 0
        if count and hit / count > TURN_LIMIT_WARN_SHARE:
            warnings.append(
                f"{hit} of {count} episodes of {group.get('generator') or group.get('data_source')} "
                f"({hit / count:.0%}) ended at a turn limit, so their scores are likely cut short: raise "
                "--max-assistant-turns / --max-user-turns (the generator may recommend limits: TaskGenerator.limits)")
    for warning in warnings:
        logger.warning("%s", warning)


def _failure_result(record: dict, repeat: int, key: str, error: BaseException, config: dict) -> EpisodeResult:
    """An infrastructure-failure line for an episode the engine could not even report on (a crash in our code or
    a plugin's), so one bad episode never takes the run down and resume re-runs it."""
    try:
        sample = GeneratedSample.from_record(record)
        source, generator, group = sample.data_source, sample.generator, sample.generator_name
        identity = sample.identity
    except (ValueError, KeyError, TypeError):
        source, generator, group, identity = str(record.get("data_source") or ""), "", "", None
    try:  # the dataset's records are read as parsed; ``input`` holds them as the engine would
        record = normalize_record(copy.deepcopy(record))
    except Exception:  # a record this broken goes into the line as it was read
        pass
    return EpisodeResult(
        id=key, input=record, repeat=repeat, data_source=source, generator=generator, generator_name=group,
        messages=list(record.get("prompt") or []), ground_truth=identity, score=0.0, success=False,
        error_type="infrastructure", error_kind=getattr(error, "kind", None) or "plugin_error",
        error=f"{type(error).__name__}: {error}", finish_reason="error",
        timings={"started_at": datetime.now(timezone.utc).isoformat()}, evaluation_config=config,
    )


def _finished_among(selected: DatasetSelection, finished: set[str], repeats: int) -> int:
    """The episodes of the selected records (each ``repeats`` times) among ``finished``, from the keys the check
    noted (a record listed twice counts twice, as it runs twice)."""
    if not finished:
        return 0
    counts = selected.selected_keys
    return sum(counts.get(key.rpartition(":")[0], 0) for key in finished if _repeat_of(key) < repeats)


def run_evaluation(config: EvalConfig, **kwargs: Any) -> dict:
    """:func:`evaluate` from synchronous code (the same keyword arguments), on uvloop where it is installed
    (:func:`~bootcamp_core.plugin.runtime.event_loop_options`; ``BOOTCAMP_EVENT_LOOP=asyncio`` picks the standard
    library's loop)."""
    return anyio.run(lambda: evaluate(config, **kwargs), backend_options=event_loop_options())
