"""The evaluation reads each dataset record once: the check keeps what it parsed (a bounded part of the file) and the
run takes it from there, reading only the rest of a larger file again. Real bootcamp-example datasets, the real
check and the reference agents; the selection is compared with what :func:`select_records` yields from a fresh
read, and whole runs with a kept part of several sizes are compared with each other."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.data.io import write_records
from bootcamp_core.episode.engine import episode_id
from bootcamp_core.evaluate.config import EvalConfig
from bootcamp_core.evaluate.dataset import (
    READ_ONCE_BYTES,
    DatasetSelection,
    check_dataset,
    load_dataset,
    select_records,
)
from bootcamp_core.evaluate.run import run_evaluation
from bootcamp_core.plugin.errors import ConfigError

pytestmark = pytest.mark.usefixtures("only_example")

COUNT = 60


@pytest.fixture(scope="module")
def datasets(example_registry, tmp_path_factory) -> dict[str, Path]:
    """The same 60 records as JSONL, JSON lines named .json, a JSON array and Parquet."""
    folder = tmp_path_factory.mktemp("data")
    config = config_for_bootcamp("example", example_registry, {"split_samples": {"test": COUNT},
                                                                "gen_parquet": True}, name="example")
    generate(config, folder, registry=example_registry)
    jsonl = folder / "example_test.jsonl"
    records = list(load_dataset(jsonl))
    array = folder / "array.json"
    array.write_text(json.dumps(records, indent=1), encoding="utf-8")
    lines = folder / "lines.json"
    # a blank line and CRLF endings: positions count records, offsets count bytes
    lines.write_bytes(b"\n".join(json.dumps(record).encode() + b"\r" for record in records[:30]) + b"\n\n"
                      + b"".join(json.dumps(record).encode() + b"\n" for record in records[30:]))
    return {"jsonl": jsonl, "lines": lines, "array": array, "parquet": jsonl.with_suffix(".parquet")}


def keep_odd_index(record: dict) -> bool:
    return record["extra_info"]["index"] % 2 == 1


SELECTIONS = [{}, {"limit": 25}, {"shard": (1, 3)}, {"limit": 40, "shard": (2, 4), "keep": keep_odd_index}]


def line_bytes(path: Path) -> int:
    return len(path.read_bytes().splitlines(keepends=True)[0])


@pytest.mark.parametrize("name", ["jsonl", "lines", "array", "parquet"])
@pytest.mark.parametrize("selection", SELECTIONS, ids=["all", "limit", "shard", "limit-shard-keep"])
def test_the_run_gets_the_records_a_fresh_read_gives(example_registry, datasets, name, selection):
    path = datasets[name]
    expected = list(select_records(load_dataset(path), **selection))  # as the engine normalizes them
    one_line = line_bytes(datasets["jsonl"])
    # nothing kept, part of the file, all but the end, all of it
    for buffer in (0, 7 * one_line, 40 * one_line, READ_ONCE_BYTES):
        selected = DatasetSelection(path, buffer_bytes=buffer, **selection)
        check = selected.check(example_registry)
        assert check.count == len(expected)
        assert list(selected.records()) == expected, (name, buffer)
        assert list(selected.records(release=True)) == expected  # once more, letting go of the kept part
        assert list(selected.records()) == expected  # after which the file is read again
        assert [episode_id(record, 0) for _, record in expected] == [
            episode_id(record, 0) for _, record in select_records(load_dataset(path, normalize=False), **selection)]


def test_a_selection_the_check_kept_is_not_read_again(example_registry, datasets, tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_bytes(datasets["jsonl"].read_bytes())
    expected = list(select_records(load_dataset(path), limit=10))
    selected = DatasetSelection(path, limit=10)
    selected.check(example_registry)
    path.unlink()  # the ten records came whole from the check's read
    assert list(selected.records()) == expected


def test_the_rest_is_read_from_the_byte_after_the_kept_part(example_registry, datasets, tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_bytes(datasets["jsonl"].read_bytes())
    expected = list(select_records(load_dataset(path)))
    selected = DatasetSelection(path, buffer_bytes=20 * line_bytes(path))
    selected.check(example_registry)
    # the kept lines rewritten in place (same size and time): a read from the start would stop at the first
    status = path.stat()
    with open(path, "r+b") as handle:
        handle.write(b"x" * (10 * line_bytes(path)))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert list(selected.records()) == expected


@pytest.mark.parametrize("change", ["append", "rewrite", "remove"])
def test_a_file_changed_after_its_check_is_refused(example_registry, datasets, tmp_path, change):
    path = tmp_path / "data.jsonl"
    data = datasets["jsonl"].read_bytes()
    path.write_bytes(data)
    selected = DatasetSelection(path, buffer_bytes=5 * line_bytes(path))
    selected.check(example_registry)
    if change == "append":
        with open(path, "ab") as handle:
            handle.write(data.splitlines(keepends=True)[0])
    elif change == "rewrite":  # another file of the same size in its place
        replacement = tmp_path / "other.jsonl"
        replacement.write_bytes(data)
        replacement.replace(path)
    else:
        path.unlink()
    with pytest.raises(ConfigError, match=r"data.jsonl changed after its records were checked"):
        list(selected.records())


def test_a_record_appended_while_the_rest_is_read_never_comes_out(example_registry, datasets, tmp_path):
    path = tmp_path / "data.jsonl"
    data = datasets["jsonl"].read_bytes()
    path.write_bytes(data)
    selected = DatasetSelection(path, buffer_bytes=5 * line_bytes(path))
    selected.check(example_registry)
    records = selected.records()
    came = [next(records) for _ in range(6)]  # the five kept, and the first of the rest
    with open(path, "ab") as handle:
        handle.write(data.splitlines(keepends=True)[0])
    with pytest.raises(ConfigError, match=r"changed after its records were checked"):
        came.extend(records)
    assert came == list(select_records(load_dataset(datasets["jsonl"])))  # every checked record, not the new one


def mixed_dataset(example_registry, datasets, tmp_path) -> Path:
    """The 60 records with an unknown generator at positions 5 and 55 (late, past a small kept part)."""
    records = list(load_dataset(datasets["jsonl"]))
    for position in (5, 55):
        records[position]["extra_info"]["bootcamp"]["generator"] = "nowhere/missing"
    path = tmp_path / "mixed.jsonl"
    write_records(path, records)
    return path


def test_a_bad_record_late_in_the_file_fails_before_any_episode(example_registry, datasets, tmp_path):
    path = mixed_dataset(example_registry, datasets, tmp_path)
    with pytest.raises(ConfigError) as before:  # the check as it was: over a selection read for it alone
        check_dataset(select_records(load_dataset(path, normalize=False)), example_registry, path)
    for buffer in (0, 3 * line_bytes(path), READ_ONCE_BYTES):
        with pytest.raises(ConfigError) as error:
            DatasetSelection(path, buffer_bytes=buffer).check(example_registry)
        assert str(error.value) == str(before.value)
        assert "record 55: " in str(error.value) and "nowhere/missing" in str(error.value)
        out = tmp_path / f"out{buffer}"
        with pytest.raises(ConfigError) as run_error:
            run_evaluation(EvalConfig(dataset_path=path, output_dir=out, policy="reference"),
                           registry=example_registry, progress=False, read_once_bytes=buffer)
        assert str(run_error.value) == str(before.value)
        assert not (out / "results.jsonl").exists()
    # a line that is not JSON, late: the same one-line error naming file and line
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(datasets["jsonl"].read_bytes() + b"{oops\n")
    with pytest.raises(ConfigError, match=rf"broken.jsonl:{COUNT + 1}: not valid JSON"):
        DatasetSelection(broken, buffer_bytes=line_bytes(broken)).check(example_registry)


def comparable(out: Path) -> tuple[list[dict], dict]:
    """The results (by id, without their times) and the summary's figures of a run."""
    results = []
    for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines():
        value = json.loads(line)
        value.pop("evaluation_config")  # its start time
        results.append(strip_times(value))
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    figures = {name: summary[name] for name in ("overall", "groups") if name in summary}
    return sorted(results, key=lambda value: value["id"]), strip_times(figures)


def strip_times(value):
    """``value`` without the times and durations it holds (``timings``, ``duration_s``, ``started_at`` ...)."""
    if isinstance(value, dict):
        return {key: strip_times(item) for key, item in value.items()
                if not any(part in key for part in ("time", "timing", "duration"))}
    if isinstance(value, list):
        return [strip_times(item) for item in value]
    return value


@pytest.mark.parametrize("selection", [{}, {"limit": 45, "shard": (1, 2), "repeats": 2}],
                         ids=["all", "limit-shard-repeats"])
def test_runs_agree_whatever_part_the_check_keeps(example_registry, datasets, tmp_path, selection):
    path = datasets["jsonl"]
    outcomes = []
    for buffer in (0, 9 * line_bytes(path), READ_ONCE_BYTES):
        out = tmp_path / f"out{buffer}"
        summary = run_evaluation(EvalConfig(dataset_path=path, output_dir=out, policy="reference", **selection),
                                 registry=example_registry, progress=False, read_once_bytes=buffer)
        episodes = len(list(select_records(load_dataset(path), limit=selection.get("limit"),
                                           shard=selection.get("shard")))) * selection.get("repeats", 1)
        assert summary["this_run"]["episodes"] == episodes
        results, figures = comparable(out)
        outcomes.append((results, figures))
    assert outcomes[0] == outcomes[1] == outcomes[2]


def test_a_resumed_run_with_a_small_kept_part_finishes_the_same(example_registry, datasets, tmp_path):
    path = datasets["jsonl"]
    full = tmp_path / "full"
    run_evaluation(EvalConfig(dataset_path=path, output_dir=full, policy="reference", repeats=2),
                   registry=example_registry, progress=False)
    expected, figures = comparable(full)
    # a run cut after 50 of its 120 episodes, resumed with a kept part of ten lines
    results = tmp_path / "resumed" / "results.jsonl"
    results.parent.mkdir()
    results.write_text("".join((full / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:50]),
                       encoding="utf-8")
    summary = run_evaluation(EvalConfig(dataset_path=path, output_dir=results.parent, policy="reference", repeats=2,
                                        resume_from=results),
                             registry=example_registry, progress=False, read_once_bytes=10 * line_bytes(path))
    assert summary["this_run"]["episodes"] == 70 and summary["this_run"]["skipped_as_finished"] == 50
    resumed, resumed_figures = comparable(results.parent)
    assert [value["id"] for value in resumed] == [value["id"] for value in expected]
    assert resumed == expected
    assert resumed_figures == figures


_OPENED: list[str] = []


def _note_opens(event: str, args: tuple) -> None:
    if event == "open" and _OPENED and isinstance(args[0], (str, os.PathLike)) and str(args[0]) == _OPENED[0]:
        _OPENED.append(event)


@pytest.mark.parametrize("selection", [{}, {"limit": 45, "shard": (1, 2)}], ids=["all", "limit-shard"])
def test_a_resumed_run_opens_the_dataset_no_more_than_a_fresh_one(example_registry, datasets, tmp_path, selection):
    import sys

    path = tmp_path / "data.jsonl"
    path.write_bytes(datasets["jsonl"].read_bytes())
    sys.addaudithook(_note_opens)  # for the life of the process: it counts only while _OPENED names a file

    def opens(**config) -> tuple[int, dict]:
        _OPENED[:] = [str(path)]
        try:
            summary = run_evaluation(EvalConfig(dataset_path=path, policy="reference", repeats=2, **selection,
                                                **config), registry=example_registry, progress=False)
        finally:
            count = len(_OPENED) - 1
            _OPENED.clear()
        return count, summary

    fresh, _ = opens(output_dir=tmp_path / "fresh")
    results = tmp_path / "resumed" / "results.jsonl"
    results.parent.mkdir()
    lines = (tmp_path / "fresh" / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    results.write_text("".join(lines[:len(lines) // 2]), encoding="utf-8")
    resumed, summary = opens(output_dir=results.parent, resume_from=results)
    assert fresh >= 1
    assert resumed == fresh  # the check's read noted the records' keys: no second read to check the results file
    assert summary["this_run"]["skipped_as_finished"] == len(lines) // 2
    assert summary["this_run"]["episodes"] == len(lines) - len(lines) // 2
    assert comparable(results.parent) == comparable(tmp_path / "fresh")


def test_a_resumed_run_with_a_smaller_limit_keeps_the_episodes_of_records_past_it(example_registry, datasets,
                                                                                  tmp_path):
    path = datasets["jsonl"]
    out = tmp_path / "out"
    run_evaluation(EvalConfig(dataset_path=path, output_dir=out, policy="reference", limit=30),
                   registry=example_registry, progress=False)
    results = out / "results.jsonl"
    # the check of a run limited to 10 records reads 10: the results of the 20 after them are found by a full read
    summary = run_evaluation(EvalConfig(dataset_path=path, output_dir=out, policy="reference", limit=10,
                                        resume_from=results), registry=example_registry, progress=False)
    assert summary["this_run"]["episodes"] == 0 and summary["this_run"]["skipped_as_finished"] == 10
    assert summary["overall"]["count"] == 30
    # an episode of no record of the dataset is still refused, and the file stays as it was
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    foreign = json.loads(lines[0])
    foreign["id"] = f"{'ab' * 32}:0"
    foreign["input"] = {**foreign["input"], "data_source": "elsewhere"}
    results.write_text("".join(lines) + json.dumps(foreign) + "\n", encoding="utf-8")
    before = results.read_bytes()
    with pytest.raises(ConfigError, match="not an episode of a record of"):
        run_evaluation(EvalConfig(dataset_path=path, output_dir=out, policy="reference", limit=10,
                                  resume_from=results), registry=example_registry, progress=False)
    assert results.read_bytes() == before
