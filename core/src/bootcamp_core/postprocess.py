"""Post-processing: filters and transforms of evaluation results into training data.

Reads result files line by line (``results.jsonl`` of ``bootcamp eval``, and the original framework's result files,
whose records have ``input``, ``messages``, ``score`` and ``success``), keeps the records every filter accepts, passes
each through the transformers in order and writes what comes out as JSONL, atomically::

    from bootcamp_core.postprocess import DataPostProcessor, expand_messages_prefixes, filter_by_score

    processor = DataPostProcessor()
    processor.add_filter(filter_by_score(0.9, 1.0), name="score")
    processor.add_filter(lambda record: len(record["messages"]) > 2, name="long enough")
    processor.add_transformer(expand_messages_prefixes)           # 1:n — returns a list
    processor.add_transformer(lambda record: {**record, "tag": "sft"}, name="tag")   # 1:1 — returns a dict
    statistics = processor.process("results.jsonl", "sft.jsonl")

:func:`postprocess` is the same pipeline that ``bootcamp postprocess`` builds from its flags (the original
``data_postprocess`` flags and defaults): filters (success, score, data source), then prefix expansion, then
extraction.

Token ids: results of ``bootcamp eval --return-token-ids`` keep, on every assistant message, the ids the server
tokenised the turn's prompt into (``prompt_token_ids``) and the ids it sampled (``completion_token_ids``).
:func:`extract_for_training` turns them into SFT columns (``input_ids``, ``labels``, ``loss_mask``) without
re-tokenising anything; see :func:`token_columns`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from bootcamp_core.data.io import AtomicFile, dumps
from bootcamp_core.plugin.errors import ConfigError

__all__ = [
    "DataPostProcessor",
    "ProcessStatistics",
    "build_processor",
    "default_output_path",
    "expand_messages_prefixes",
    "extract_for_training",
    "extract_messages_only",
    "filter_by_data_source",
    "filter_by_score",
    "filter_by_success",
    "format_statistics",
    "postprocess",
    "record_data_source",
    "strip_token_ids",
    "token_columns",
    "training_id",
]

#: The keys ``bootcamp eval --return-token-ids`` adds to each assistant message of a result.
TOKEN_ID_KEYS = ("prompt_token_ids", "completion_token_ids")
#: ``labels`` of tokens the loss skips (prompt, tool and feedback tokens): the value PyTorch's cross entropy ignores.
IGNORE_INDEX = -100

Record = dict[str, Any]
Filter = Callable[[Record], bool]
#: A transformer returns one record (1:1), a list of records (1:n, possibly empty) or None (drop the record).
Transformer = Callable[[Record], Record | list[Record] | None]


@attrs.define(kw_only=True)
class ProcessStatistics:
    """What one :meth:`DataPostProcessor.process` run did.

    ``filters`` maps each filter's name to how many records were still kept after it; ``transformers`` maps each
    transformer's name to how many records it produced. ``unreadable`` lists ``(line number, reason)`` of input lines
    that are not a JSON object (for a ``.json`` array the number is the item's, counted from 1); ``errors`` lists
    ``(line number, step name, message)`` of records a filter or transformer raised on (those records are dropped).
    """

    input_path: str
    output_path: str
    read: int = 0
    filters: dict[str, int] = attrs.field(factory=dict)
    transformers: dict[str, int] = attrs.field(factory=dict)
    written: int = 0
    unreadable: list[tuple[int, str]] = attrs.field(factory=list)
    errors: list[tuple[int, str, str]] = attrs.field(factory=list)
    #: one-line remarks of the steps (a transformer with a ``notes()`` method adds them at the end of a run)
    notes: list[str] = attrs.field(factory=list)

    def to_dict(self) -> dict:
        data = attrs.asdict(self, recurse=False)
        data["unreadable"] = [{"line": line, "reason": reason} for line, reason in self.unreadable]
        data["errors"] = [{"line": line, "step": step, "error": error} for line, step, error in self.errors]
        if not self.notes:  # only when a step had something to say
            del data["notes"]
        return data


def _step_name(function: Callable, given: str | None, taken: list[str], kind: str, position: int) -> str:
    name = given or getattr(function, "__name__", None) or ""
    if not name or name == "<lambda>":
        name = f"{kind} {position}"
    # names key the statistics, so two steps of one name (two lambdas, one filter added twice) stay apart
    base, number = name, 2
    while name in taken:
        name, number = f"{base} #{number}", number + 1
    return name


class DataPostProcessor:
    """Filters, then transformers, over the records of a result file, streamed line by line (see the module doc)."""

    def __init__(self) -> None:
        self.filters: list[tuple[str, Filter]] = []
        self.transformers: list[tuple[str, Transformer]] = []

    def add_filter(self, predicate: Filter, name: str | None = None) -> DataPostProcessor:
        """Keep only records for which ``predicate(record)`` is true. Filters run in the order added."""
        taken = [existing for existing, _ in self.filters]
        self.filters.append((_step_name(predicate, name, taken, "filter", len(taken) + 1), predicate))
        return self

    def add_transformer(self, function: Transformer, name: str | None = None) -> DataPostProcessor:
        """Map each record to one record (a dict), to several (a list, 1:n) or to none (None or ``[]``).

        Transformers run after every filter, in the order added; each sees every record the previous one produced.
        """
        taken = [existing for existing, _ in self.transformers]
        self.transformers.append((_step_name(function, name, taken, "transformer", len(taken) + 1), function))
        return self

    def process(self, input_path: str | os.PathLike, output_path: str | os.PathLike | None = None) -> ProcessStatistics:
        """Run the pipeline over ``input_path`` into ``output_path`` (default: :func:`default_output_path`).

        The output appears only when the run completes (written under a temporary name, then renamed), so an
        interrupted run never leaves a partial file. Unreadable lines and records a step raised on are counted and
        listed in the statistics, never fatal.
        """
        source = Path(input_path)
        target = default_output_path(source) if output_path is None else Path(output_path)
        statistics = ProcessStatistics(
            input_path=str(source),
            output_path=str(target),
            filters={name: 0 for name, _ in self.filters},
            transformers={name: 0 for name, _ in self.transformers},
        )
        with AtomicFile(target, "w") as handle:
            for number, record in _read_results(source, statistics.unreadable):
                statistics.read += 1
                for output in self._run(number, record, statistics):
                    handle.write(dumps(output))
                    handle.write("\n")
                    statistics.written += 1
        for _, function in self.transformers:
            notes = getattr(function, "notes", None)
            if callable(notes):
                statistics.notes.extend(notes())
        return statistics

    def _run(self, number: int, record: Record, statistics: ProcessStatistics) -> list[Record]:
        for name, predicate in self.filters:
            # a user's filter bug costs its record, not the whole run; it is reported with the line number
            try:
                keep = predicate(record)
            except Exception as error:  # noqa: BLE001
                statistics.errors.append((number, name, f"{type(error).__name__}: {error}"))
                return []
            if not keep:
                return []
            statistics.filters[name] += 1
        records = [record]
        for name, function in self.transformers:
            produced: list[Record] = []
            for item in records:
                try:
                    result = function(item)
                    if result is None:
                        continue
                    if isinstance(result, dict):
                        produced.append(result)
                    elif isinstance(result, list) and all(isinstance(each, dict) for each in result):
                        produced.extend(result)
                    else:
                        raise TypeError(f"returned {type(result).__name__}; expected a dict, a list of dicts or None")
                except Exception as error:  # noqa: BLE001 — reported like a filter's
                    statistics.errors.append((number, name, f"{type(error).__name__}: {error}"))
            statistics.transformers[name] += len(produced)
            records = produced
        return records


def default_output_path(input_path: str | os.PathLike) -> Path:
    """``<input stem>_processed.jsonl`` beside the input (the original's default; the output is always JSONL)."""
    path = Path(input_path)
    return path.with_name(f"{path.stem}_processed.jsonl")


def _read_results(path: Path, unreadable: list[tuple[int, str]]) -> Iterator[tuple[int, Record]]:
    """(line number, record) of a JSONL file or a ``.json`` file holding one array; bad lines go to ``unreadable``."""
    with open(path, "rb") as handle:
        if path.suffix.lower() == ".json":
            head = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
            handle.seek(0)
            if head.startswith(b"["):
                yield from _read_array(path, handle.read(), unreadable)
                return
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as error:
                unreadable.append((number, f"not UTF-8 ({error.reason} at byte {error.start})"))
                continue
            except json.JSONDecodeError as error:
                unreadable.append((number, f"not valid JSON ({error.msg}, column {error.colno})"))
                continue
            if not isinstance(record, dict):
                unreadable.append((number, f"a JSON {type(record).__name__}, not an object"))
                continue
            yield number, record


def _read_array(path: Path, data: bytes, unreadable: list[tuple[int, str]]) -> Iterator[tuple[int, Record]]:
    try:
        items = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        # one array is one unit: a broken one has no lines to skip, so it is an error about the file
        raise ConfigError(f"{path}: not a valid JSON array ({error}); a JSONL file can skip broken lines") from None
    if not isinstance(items, list):
        raise ConfigError(f"{path}: expected a JSON array of results")
    for number, record in enumerate(items, 1):
        if isinstance(record, dict):
            yield number, record
        else:
            unreadable.append((number, f"a JSON {type(record).__name__}, not an object"))


# ------------------------------------------------------------------------------- fields of both result formats
def record_data_source(record: Record) -> str | None:
    """The data source of a result: top level in ours, inside ``input`` in the original framework's."""
    value = record.get("data_source")
    if isinstance(value, str) and value:
        return value
    source = record.get("input")
    if isinstance(source, dict) and isinstance(source.get("data_source"), str):
        return source["data_source"]
    return None


def _messages(record: Record) -> list:
    messages = record.get("messages")
    return messages if isinstance(messages, list) else []


def _prompt_length(messages: Sequence) -> int:
    """How many leading messages are the prompt: the system and user messages before the first assistant message."""
    for index, message in enumerate(messages):
        if not (isinstance(message, dict) and message.get("role") in ("system", "user")):
            return index
    return len(messages)


def training_id(messages: Any) -> str:
    """md5 hex of the messages' canonical JSON: keys sorted, UTF-8 as is, spelled exactly as the original framework
    spelled it (``json.dumps(messages, sort_keys=True, ensure_ascii=False)``) so ids match across both tools' data."""
    return hashlib.md5(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


# ------------------------------------------------------------------------------------------------ the filters
def filter_by_success(record: Record) -> bool:
    """Keep episodes that ran without an infrastructure error (``success`` is true)."""
    return record.get("success") is True


def filter_by_score(min_score: float = 0.0, max_score: float = 1.0) -> Filter:
    """Keep records with ``min_score <= score <= max_score`` (both inclusive); no or a non-numeric score is dropped."""
    if min_score > max_score:
        raise ConfigError(f"min score {min_score} is above max score {max_score}: nothing would be kept")

    def score_in_range(record: Record) -> bool:
        score = record.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            return False
        return min_score <= score <= max_score

    return score_in_range


def filter_by_data_source(*data_sources: str) -> Filter:
    """Keep records of any of these data sources (ours at the top level, the original's in ``input``)."""
    wanted = frozenset(data_sources)
    if not wanted:
        raise ConfigError("filter_by_data_source needs at least one data source")

    def of_data_source(record: Record) -> bool:
        return record_data_source(record) in wanted

    return of_data_source


# ------------------------------------------------------------------------------------------- the transformers
def expand_messages_prefixes(record: Record) -> list[Record]:
    """One record per assistant message after the prompt, whose ``messages`` end at that message (1:n).

    The prompt is the leading system and user messages. Every other field (tools, score, input...) is kept, so a
    trajectory of k assistant turns becomes k training samples, each ending on a turn the model produced.
    """
    messages = _messages(record)
    expanded = []
    for index in range(_prompt_length(messages), len(messages)):
        message = messages[index]
        if isinstance(message, dict) and message.get("role") == "assistant":
            expanded.append({**record, "messages": messages[: index + 1]})
    return expanded


def strip_token_ids(messages: Any) -> Any:
    """``messages`` without the token-id keys of assistant messages (:data:`TOKEN_ID_KEYS`): plain chat data.

    Messages without them are returned as they are (the same objects), so results without ids cost one scan.
    """
    if not isinstance(messages, list):
        return messages
    if not any(isinstance(message, dict) and ("prompt_token_ids" in message or "completion_token_ids" in message)
               for message in messages):
        return messages
    return [{key: value for key, value in message.items() if key not in TOKEN_ID_KEYS}
            if isinstance(message, dict) else message for message in messages]


def _ids(value: Any) -> list[int] | None:
    """``value`` when it is a list of token ids, else None."""
    if isinstance(value, list) and all(type(item) is int for item in value):
        return value
    return None


def token_columns(messages: Sequence) -> list[tuple[int, dict[str, list[int]]]] | None:
    """SFT columns from the token ids a server returned per assistant turn, as ``[(index of the last assistant
    message covered, {"input_ids", "labels", "loss_mask"}), ...]``; None when an assistant turn has no ids.

    Turn by turn the sequence grows by the part of the turn's prompt ids beyond the sequence so far (the tool
    results, feedback and generation prompt the server rendered: ``loss_mask`` 0, ``labels`` :data:`IGNORE_INDEX`),
    then by the sampled ids (``loss_mask`` 1, ``labels`` the ids). A server renders each turn's prompt from the
    messages, so a turn whose prompt ids do not start with the sequence so far (the chat template re-rendered an
    earlier assistant turn into other tokens than were sampled) starts a new sequence from its own prompt ids: every
    sequence holds exactly the tokens the model was given and sampled, and every sampled token is in one of them.
    """
    turns = [(index, message) for index, message in enumerate(messages)
             if isinstance(message, dict) and message.get("role") == "assistant"]
    if not turns:
        return None
    segments: list[tuple[int, dict[str, list[int]]]] = []
    sequence: list[int] = []
    mask: list[int] = []
    last = -1
    for index, message in turns:
        prompt, completion = _ids(message.get("prompt_token_ids")), _ids(message.get("completion_token_ids"))
        if prompt is None or completion is None:
            return None
        if sequence and len(prompt) >= len(sequence) and prompt[: len(sequence)] == sequence:
            added = prompt[len(sequence):]
        else:
            if sequence:
                segments.append((last, _columns(sequence, mask)))
            sequence, mask, added = [], [], prompt
        sequence = sequence + added + completion
        mask = mask + [0] * len(added) + [1] * len(completion)
        last = index
    segments.append((last, _columns(sequence, mask)))
    return segments


def _columns(sequence: list[int], mask: list[int]) -> dict[str, list[int]]:
    return {"input_ids": sequence, "labels": [token if keep else IGNORE_INDEX for token, keep in zip(sequence, mask)],
            "loss_mask": mask}


def extract_for_training(record: Record) -> Record | list[Record]:
    """``{"id", "data_source", "prompt", "messages", "tools"}``; ``id`` is :func:`training_id` of the messages.

    ``prompt`` is the input record's prompt, else (an input without one) the leading system and user messages.
    Token-id keys of the messages (:data:`TOKEN_ID_KEYS`) are left out of ``messages`` and of the ``id``.

    When every assistant message carries the server's token ids (``bootcamp eval --return-token-ids``), the record
    also gets ``input_ids``, ``labels`` and ``loss_mask`` (:func:`token_columns`); when those ids make several
    sequences (a turn's prompt ids did not extend the sequence before it), one record per sequence, each with the
    messages up to its last assistant turn (the last with all of them).
    """
    return _extract(record, None)


def _extract(record: Record, counts: dict[str, int] | None) -> Record | list[Record]:
    raw = _messages(record)
    messages = strip_token_ids(raw)
    source = record.get("input")
    prompt = source.get("prompt") if isinstance(source, dict) else None
    if prompt is None:
        prompt = messages[: _prompt_length(messages)]
    extracted = {
        "id": training_id(messages),
        "data_source": record_data_source(record),
        "prompt": strip_token_ids(prompt),
        "messages": messages,
        "tools": record.get("tools") or [],
    }
    if messages is raw:  # no token ids anywhere: today's record
        if counts is not None:
            counts["without"] += 1
        return extracted
    segments = token_columns(raw)
    if segments is None:  # some assistant turns lack ids: text only, as without ids
        if counts is not None:
            counts["partial"] += 1
        return extracted
    if counts is not None:
        counts["with"] += 1
    if len(segments) == 1:
        return {**extracted, **segments[0][1]}
    records = []
    for number, (last, columns) in enumerate(segments):
        part = messages if number == len(segments) - 1 else messages[: last + 1]
        records.append({**extracted, "id": training_id(part), "messages": part, **columns})
    return records


class _TrainingExtraction:
    """:func:`extract_for_training` counting records with, without and with only some token ids, for its note."""

    def __init__(self) -> None:
        self.counts = {"with": 0, "without": 0, "partial": 0}

    def __call__(self, record: Record) -> Record | list[Record]:
        return _extract(record, self.counts)

    def notes(self) -> list[str]:
        counts = self.counts
        lacking = counts["partial"] + (counts["without"] if counts["with"] or counts["partial"] else 0)
        if not lacking:
            return []
        total = sum(counts.values())
        note = (f"{lacking} of {total} records have assistant turns without token ids (the endpoint did not return "
                "them, or bootcamp eval ran without --return-token-ids): written without input_ids/labels, as text "
                "to re-tokenise")
        return [note]


def extract_messages_only(record: Record) -> Record:
    """``{"messages": [...]}`` and nothing else: plain chat data for SFT trainers that read only messages (token-id
    keys left out)."""
    return {"messages": strip_token_ids(_messages(record))}


# -------------------------------------------------------------------------------------- the standard pipeline
def build_processor(
    *,
    filter_success: bool = False,
    min_score: float = 0.9,
    max_score: float = 1.0,
    data_sources: Sequence[str] = (),
    expand_prefixes: bool = False,
    extract_training: bool = False,
    extract_messages: bool = False,
) -> DataPostProcessor:
    """The pipeline of ``bootcamp postprocess`` (defaults are the original ``data_postprocess``'s).

    Filters first (success, then score, then data source), then prefix expansion, then extraction. The score
    filter applies whenever ``min_score > 0`` or ``max_score < 1``, so ``min_score=0, max_score=1`` keeps every
    score, even a missing one.
    """
    if extract_training and extract_messages:
        raise ConfigError("choose one of extract_training and extract_messages", field="extract_training")
    processor = DataPostProcessor()
    if filter_success:
        processor.add_filter(filter_by_success, name="success")
    if min_score > 0 or max_score < 1:
        processor.add_filter(filter_by_score(min_score, max_score), name=f"score in [{min_score:g}, {max_score:g}]")
    if data_sources:
        processor.add_filter(filter_by_data_source(*data_sources), name="data source " + ", ".join(data_sources))
    if expand_prefixes:
        processor.add_transformer(expand_messages_prefixes, name="expand_messages_prefixes")
    if extract_training:
        processor.add_transformer(_TrainingExtraction(), name="extract_training")
    if extract_messages:
        processor.add_transformer(extract_messages_only, name="extract_messages")
    return processor


def postprocess(
    input_path: str | os.PathLike,
    output_path: str | os.PathLike | None = None,
    *,
    filter_success: bool = False,
    min_score: float = 0.9,
    max_score: float = 1.0,
    data_sources: Sequence[str] = (),
    expand_prefixes: bool = False,
    extract_training: bool = False,
    extract_messages: bool = False,
) -> ProcessStatistics:
    """:func:`build_processor` with these options, run over ``input_path`` (what ``bootcamp postprocess`` does)."""
    processor = build_processor(
        filter_success=filter_success,
        min_score=min_score,
        max_score=max_score,
        data_sources=data_sources,
        expand_prefixes=expand_prefixes,
        extract_training=extract_training,
        extract_messages=extract_messages,
    )
    return processor.process(input_path, output_path)


def format_statistics(statistics: ProcessStatistics, *, max_listed: int = 10) -> str:
    """A short plain-text table of a run, then the unreadable lines and step errors (the first ``max_listed``)."""
    rows: list[tuple[str, int]] = [("read", statistics.read)]
    if statistics.unreadable:
        rows.append(("unreadable lines", len(statistics.unreadable)))
    rows += [(f"kept by {name}", count) for name, count in statistics.filters.items()]
    rows += [(f"produced by {name}", count) for name, count in statistics.transformers.items()]
    if statistics.errors:
        rows.append(("step errors", len(statistics.errors)))
    rows.append(("written", statistics.written))
    width = max(len(label) for label, _ in rows)
    digits = max(len(str(count)) for _, count in rows)
    lines = [f"{statistics.input_path} -> {statistics.output_path}"]
    lines += [f"  {label:<{width}}  {count:>{digits}}" for label, count in rows]
    for line, reason in statistics.unreadable[:max_listed]:
        lines.append(f"  unreadable line {line}: {reason}")
    if len(statistics.unreadable) > max_listed:
        lines.append(f"  ... and {len(statistics.unreadable) - max_listed} more unreadable lines")
    for line, step, error in statistics.errors[:max_listed]:
        lines.append(f"  line {line}: {step} failed: {error}")
    if len(statistics.errors) > max_listed:
        lines.append(f"  ... and {len(statistics.errors) - max_listed} more step errors")
    lines += [f"  note: {note}" for note in statistics.notes]
    return "\n".join(lines)
