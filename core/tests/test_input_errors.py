"""One-line errors for inputs the evaluator cannot use and for a full disk: a JSONL or JSON file that is not UTF-8, a
Parquet file that is not a records file, a lone surrogate in a prompt (found by --dry-run too), no space left while
writing results or generated files. Each is exit 1 with one ``error:`` line naming the file, and nothing already
written is lost. Real records, the real evaluator and CLI; the full disk is /dev/full (every write fails with
ENOSPC) and, where user namespaces allow mounting one, a real 64 KiB tmpfs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bootcamp_core.cli.main import main
from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.data.io import jsonl_lines, read_jsonl, read_parquet, write_records
from bootcamp_core.evaluate.dataset import load_dataset, lone_surrogate
from bootcamp_core.plugin.errors import ConfigError


#: subprocesses and get_registry() see bootcamp-example only, strictly, whatever else is installed
pytestmark = pytest.mark.usefixtures("only_example")


def make_dataset(registry, directory: Path, count: int) -> Path:
    config = config_for_bootcamp("example", registry, {"split_samples": {"test": count}, "gen_parquet": False},
                                 name="example")
    generate(config, directory, registry=registry)
    return directory / "example_test.jsonl"


def eval_args(dataset: Path, out: Path, *extra: str) -> list[str]:
    return ["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--quiet", *extra]


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def refused_by_dry_run_and_run(dataset: Path, out: Path, capsys) -> str:
    """The error line of both --dry-run and a real run (they must agree); the real run writes nothing."""
    assert main(eval_args(dataset, out, "--dry-run")) == 1
    dry = one_error_line(capsys.readouterr().err)
    assert main(eval_args(dataset, out)) == 1
    assert one_error_line(capsys.readouterr().err) == dry
    assert not out.exists()
    return dry


# ------------------------------------------------------------------------------------------------ not UTF-8
def test_a_jsonl_dataset_that_is_not_utf8(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 4)
    lines = dataset.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"role"', b'"r\xf6le"', 1)  # Latin-1, as an editor might save it
    dataset.write_bytes(b"".join(lines))
    line = refused_by_dry_run_and_run(dataset, tmp_path / "out", capsys)
    assert line.startswith(f"error: {dataset}:3: not valid UTF-8 (byte 0xf6 at column ")
    with pytest.raises(ConfigError, match=r":3: not valid UTF-8"):
        list(read_jsonl(dataset))
    # the readers that keep going see the bad line only
    assert [read.error is None for read in jsonl_lines(dataset)] == [True, True, False, True]


def test_a_json_array_dataset_that_is_not_utf8(example_registry, tmp_path, capsys):
    records = list(load_dataset(make_dataset(example_registry, tmp_path / "data", 2)))
    dataset = tmp_path / "records.json"
    text = json.dumps(records, ensure_ascii=False, indent=1).encode("utf-8")
    dataset.write_bytes(text.replace(b'"user"', b'"\xff"', 1))
    line = refused_by_dry_run_and_run(dataset, tmp_path / "out", capsys)
    assert line.startswith(f"error: {dataset}:") and "not valid UTF-8 (byte 0xff)" in line


# ------------------------------------------------------------------------------------- Parquet, not records
def test_a_parquet_file_of_other_columns(example_registry, tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    dataset = tmp_path / "scores.parquet"
    pq.write_table(pa.table({"name": ["a", "b"], "score": [0.5, 1.0]}), dataset)
    line = refused_by_dry_run_and_run(dataset, tmp_path / "out", capsys)
    assert line == f"error: {dataset}: not a records file: no column prompt or extra_info (its columns: name, score)"


def test_a_file_named_parquet_that_is_not_parquet(example_registry, tmp_path, capsys):
    dataset = tmp_path / "records.parquet"
    shutil.copy(make_dataset(example_registry, tmp_path / "data", 2), dataset)  # JSONL under the wrong name
    line = refused_by_dry_run_and_run(dataset, tmp_path / "out", capsys)
    assert line.startswith(f"error: {dataset}: not a Parquet file (")


def test_a_records_parquet_file_still_reads(example_registry, tmp_path):
    records = list(load_dataset(make_dataset(example_registry, tmp_path / "data", 3)))
    write_records(tmp_path / "records.parquet", records)
    assert list(read_parquet(tmp_path / "records.parquet")) == records


# ----------------------------------------------------------------------------------------- lone surrogates
def test_a_lone_surrogate_in_a_prompt(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 3)
    lines = dataset.read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[1])
    record["prompt"][0]["content"] = "Compute \\ud83d this"  # becomes an escape in the JSON text below
    lines[1] = json.dumps(record).replace("\\\\ud83d", "\\ud83d") + "\n"
    dataset.write_text("".join(lines), encoding="utf-8")
    assert "\\ud83d" in dataset.read_text(encoding="utf-8")  # the file itself is valid UTF-8
    line = refused_by_dry_run_and_run(dataset, tmp_path / "out", capsys)
    assert line == (f"error: {dataset}: record 1: prompt[0].content has a lone surrogate (\\ud83d at character 9), "
                    "which is not valid Unicode; fix or drop the record")


@pytest.mark.parametrize("form", ["jsonl, upper-case escape", "json array"])
def test_a_lone_surrogate_is_found_in_either_form_of_file(example_registry, tmp_path, capsys, form):
    """Only the JSONL lines with a \\uD escape are looked into (UTF-8 holds no surrogate): the upper-case escape is
    one; a JSON array's records are each looked into."""
    records = [json.loads(line) for line in make_dataset(example_registry, tmp_path / "data", 3).read_text(
        encoding="utf-8").splitlines()]
    records[2]["extra_info"]["note"] = "x\udfff"
    if form == "json array":
        dataset = tmp_path / "records.json"
        dataset.write_text(json.dumps(records, indent=1), encoding="utf-8")
    else:
        dataset = tmp_path / "records.jsonl"
        dataset.write_text("".join(json.dumps(record).replace("\\udfff", "\\uDFFF") + "\n" for record in records),
                           encoding="utf-8")
        assert "\\uDFFF" in dataset.read_text(encoding="utf-8")
    line = refused_by_dry_run_and_run(dataset, tmp_path / "out", capsys)
    assert line == (f"error: {dataset}: record 2: extra_info.note has a lone surrogate (\\udfff at character 2), "
                    "which is not valid Unicode; fix or drop the record")


def test_a_lone_surrogate_outside_the_selection_is_no_concern_of_the_run(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 4)
    lines = dataset.read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[1])
    record["extra_info"]["note"] = "\\ud800"
    lines[1] = json.dumps(record).replace("\\\\ud800", "\\ud800") + "\n"
    dataset.write_text("".join(lines), encoding="utf-8")
    # shard 0 of 2 runs records 0 and 2; record 1 is shard 1's, which refuses it
    assert main(eval_args(dataset, tmp_path / "out0", "--shard", "0/2")) == 0
    assert main(eval_args(dataset, tmp_path / "out1", "--shard", "1/2")) == 1
    assert "record 1: extra_info.note has a lone surrogate" in capsys.readouterr().err


def test_lone_surrogates_are_found_anywhere_and_pairs_are_fine():
    assert lone_surrogate({"prompt": [{"content": "ok \U0001f600 é"}], "extra_info": {"x": ["fine"]}}) is None
    assert lone_surrogate({"extra_info": {"bootcamp": {"tools": ["a", "b\udfff"]}}}) == (
        "extra_info.bootcamp.tools[1] has a lone surrogate (\\udfff at character 2)")
    assert lone_surrogate({"extra_info": {"\ud800": 1}}) == "a key in extra_info has a lone surrogate"


# ---------------------------------------------------------------------------------------------- full disk
needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux /dev/full")


@needs_dev_full
def test_results_on_a_full_disk(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 3)
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").symlink_to("/dev/full")  # every write fails with ENOSPC
    assert main(eval_args(dataset, out, "--policy", "reference")) == 1
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: cannot write {out / 'results.jsonl'}: No space left on device; the 0 line(s)")
    assert f"--resume-from-result-path {out / 'results.jsonl'}" in line
    assert sorted(path.name for path in out.iterdir()) == ["results.jsonl"]  # no lock, summary or temporary left


@needs_dev_full
@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_generated_files_on_a_full_disk_keep_what_was_there(example_registry, tmp_path, suffix):
    records = list(load_dataset(make_dataset(example_registry, tmp_path / "data", 20)))
    target = tmp_path / f"records.{suffix}"
    write_records(target, records[:2])
    before = target.read_bytes()
    # the writer's temporary file, beside the target, is where the bytes go first: make that the full disk
    (tmp_path / f"records.{suffix}.tmp-{os.getpid()}").symlink_to("/dev/full")
    with pytest.raises(ConfigError, match=f"^cannot write {target}: No space left on device"):
        write_records(target, records)
    assert target.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data", f"records.{suffix}"]


FULL_DISK_SCRIPT = r"""
set -u
mount -t tmpfs -o size=64k tmpfs "$ROOT" || exit 99
"$PY" -m bootcamp_core.cli.main generate --bootcamp example --split-samples test:60 --no-gen-parquet --quiet \
    --output-dir "$ROOT/generated" 2> "$SAVE/generate.err"
echo $? > "$SAVE/generate.rc"
ls -a "$ROOT/generated" > "$SAVE/generate.ls" 2>/dev/null
rm -rf "$ROOT/generated"
"$PY" -m bootcamp_core.cli.main eval --dataset-path "$DATA" --output-dir "$ROOT/out" --quiet \
    2> "$SAVE/first.err" > /dev/null
echo $? > "$SAVE/first.rc"
cp "$ROOT/out/results.jsonl" "$SAVE/first.jsonl"
ls -a "$ROOT/out" > "$SAVE/first.ls"
mount -o remount,size=16m "$ROOT" || exit 98
"$PY" -m bootcamp_core.cli.main eval --dataset-path "$DATA" --output-dir "$ROOT/out" --quiet \
    --resume-from-result-path "$ROOT/out/results.jsonl" 2> "$SAVE/second.err" > /dev/null
echo $? > "$SAVE/second.rc"
cp "$ROOT/out/results.jsonl" "$SAVE/second.jsonl"
"""


def _can_mount_in_a_user_namespace() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"],
                           check=False, capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_in_a_user_namespace(), reason="cannot mount a tmpfs in a user namespace here")
def test_a_real_full_filesystem_then_resume(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 60)
    records = list(load_dataset(dataset))
    root, save = tmp_path / "small", tmp_path / "save"
    root.mkdir()
    save.mkdir()
    env = {**os.environ, "ROOT": str(root), "SAVE": str(save), "DATA": str(dataset), "PY": sys.executable}
    done = subprocess.run(["unshare", "-rm", "sh", "-c", FULL_DISK_SCRIPT], check=False, env=env, timeout=300)
    assert done.returncode == 0

    # generation: one line naming the file, no temporary left behind
    assert (save / "generate.rc").read_text().strip() == "1"
    generate_error = one_error_line((save / "generate.err").read_text())
    assert f"cannot write {root / 'generated'}/" in generate_error and "No space left on device" in generate_error
    assert ".tmp-" not in (save / "generate.ls").read_text()

    # the evaluation: one line naming the results file; every line written before the disk filled is intact
    assert (save / "first.rc").read_text().strip() == "1"
    first_error = one_error_line((save / "first.err").read_text())
    assert first_error.startswith(f"error: cannot write {root / 'out' / 'results.jsonl'}: No space left on device")
    first = (save / "first.jsonl").read_bytes()
    complete = first.splitlines()[:-1] if not first.endswith(b"\n") else first.splitlines()
    assert 1 <= len(complete) < 60
    kept = [json.loads(line)["id"] for line in complete]
    assert set((save / "first.ls").read_text().split()) == {".", "..", "results.jsonl"}

    # with room again, the resume finishes the run and keeps those lines as they were
    assert (save / "second.rc").read_text().strip() == "0", (save / "second.err").read_text()
    second = [json.loads(line) for line in (save / "second.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(second) == 60 == len({line["id"] for line in second}) == len(records)
    assert [line["id"] for line in second[: len(kept)]] == kept


@pytest.mark.parametrize("name", ["instruction.yaml", "registry.jsonl", "tools.json"])
def test_a_config_file_that_is_not_utf8_is_one_line_naming_it(tmp_path, name):
    from bootcamp_core.data.config import load_component_config, load_registry_file, load_yaml

    path = tmp_path / name
    path.write_bytes(b'{"namespace": "caf\xe9"}\n')
    load = {"instruction.yaml": load_yaml, "registry.jsonl": load_registry_file,
            "tools.json": lambda file: load_component_config(file, "tool")}[name]
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert str(caught.value) == f"{path}: not UTF-8 text (byte 0xe9 at offset 18)"
