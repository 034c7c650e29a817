"""`bootcamp compare A B`: paired differences with intervals, flipped episodes, episodes of one run only, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bootcamp_core.episode.engine import episode_id
from bootcamp_core.evaluate.compare import compare_files, default_output_dir, write_comparison
from bootcamp_core.plugin.errors import ConfigError


def line(record: str, repeat: int, score: float, *, success: bool = True, generator: str = "g") -> dict:
    return {"id": f"{record}:{repeat}", "repeat": repeat, "data_source": "bootcamp/d", "generator": generator,
            "input": {"prompt": record}, "score": score, "solved": success and score >= 1, "success": success}


def write(path: Path, lines: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(item) + "\n" for item in lines), encoding="utf-8")
    return path


def bootcamp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", *args], capture_output=True, text=True,
                          check=False, timeout=300)


def test_identical_runs_differ_by_exactly_zero(tmp_path: Path):
    lines = [line(f"r{i}", repeat, float((i + repeat) % 3 == 0)) for i in range(30) for repeat in range(2)]
    a, b = write(tmp_path / "a.jsonl", lines), write(tmp_path / "b.jsonl", lines)
    comparison = compare_files(a, b)
    overall = comparison["overall"]
    assert overall["episodes"] == 60 and overall["records"] == 30
    assert overall["mean_score_difference"] == 0 and overall["mean_score_difference_ci"] == [0.0, 0.0]
    assert overall["solved_rate_difference"] == 0 and overall["solved_rate_difference_ci"] == [0.0, 0.0]
    assert comparison["solved_in_a_only"] == comparison["solved_in_b_only"] == []
    assert comparison["only_in_a"] == comparison["only_in_b"] == []


def test_a_real_improvement_has_an_interval_above_zero_and_its_flips_are_listed_exactly(tmp_path: Path):
    a = write(tmp_path / "a.jsonl", [line(f"r{i}", 0, float(i < 12)) for i in range(40)])
    # B solves what A solved except r0, and r12..r35 besides
    b = write(tmp_path / "b.jsonl", [line(f"r{i}", 0, float(0 < i < 36)) for i in range(40)])
    comparison = compare_files(a, b)
    overall = comparison["overall"]
    assert overall["solved_rate_a"] == 12 / 40 and overall["solved_rate_b"] == 35 / 40
    assert overall["solved_rate_difference"] == pytest.approx(23 / 40)
    low, high = overall["solved_rate_difference_ci"]
    assert 0 < low < 23 / 40 < high
    assert overall["mean_score_difference_ci"][0] > 0
    assert comparison["solved_in_a_only"] == ["r0:0"]
    assert comparison["solved_in_b_only"] == sorted(f"r{i}:0" for i in range(12, 36))
    assert overall["solved_in_a_only"] == 1 and overall["solved_in_b_only"] == 24
    # and the other way round, it is a regression
    reverse = compare_files(b, a)["overall"]["solved_rate_difference_ci"]
    assert reverse[0] < reverse[1] < 0


def test_the_paired_interval_resamples_records_with_their_repeats(tmp_path: Path):
    # 8 records of 20 repeats; B gains all 20 on 4 of them: 8 pieces of evidence, not 160
    a = write(tmp_path / "a.jsonl", [line(f"r{i}", k, 0.0) for i in range(8) for k in range(20)])
    b = write(tmp_path / "b.jsonl", [line(f"r{i}", k, float(i % 2)) for i in range(8) for k in range(20)])
    low, high = compare_files(a, b)["overall"]["solved_rate_difference_ci"]
    assert high - low > 0.4


def test_episodes_of_one_run_only_are_counted_and_named_and_duplicates_keep_the_last_line(tmp_path: Path):
    a = write(tmp_path / "a.jsonl", [line("shared", 0, 0.0), line("gone", 0, 1.0), line("gone", 1, 1.0),
                                     line("shared", 1, 1.0)])
    b = write(tmp_path / "b.jsonl", [line("shared", 0, 0.0), line("shared", 0, 1.0),  # a resumed file: last wins
                                     line("new", 0, 0.0), line("shared", 1, 1.0)])
    comparison = compare_files(a, b)
    assert comparison["only_in_a"] == ["gone:0", "gone:1"] and comparison["only_in_b"] == ["new:0"]
    assert comparison["a"]["episodes"] == 4 and comparison["b"]["episodes"] == 3
    assert comparison["overall"]["episodes"] == 2 and comparison["solved_in_b_only"] == ["shared:0"]


def test_an_infrastructure_failure_counts_as_unsolved_with_score_zero_and_is_counted(tmp_path: Path):
    a = write(tmp_path / "a.jsonl", [line("x", 0, 1.0), line("y", 0, 1.0)])
    b = write(tmp_path / "b.jsonl", [line("x", 0, 1.0), line("y", 0, 1.0, success=False)])
    comparison = compare_files(a, b)
    overall = comparison["overall"]
    assert overall["mean_score_b"] == 0.5 and overall["solved_rate_b"] == 0.5
    assert overall["infrastructure_errors_b"] == 1 and comparison["b"]["infrastructure_errors"] == 1
    assert comparison["solved_in_a_only"] == ["y:0"]


def test_lines_without_an_id_are_keyed_by_their_input_record_and_repeat(tmp_path: Path):
    record = {"prompt": "legacy"}
    a = write(tmp_path / "a.jsonl", [{**line("ignored", 0, 0.0), "id": episode_id(record, 0), "input": record}])
    legacy = line("ignored", 0, 1.0)
    del legacy["id"]
    b = write(tmp_path / "b.jsonl", [{**legacy, "input": record}])
    comparison = compare_files(a, b)
    assert comparison["overall"]["episodes"] == 1 and comparison["only_in_a"] == comparison["only_in_b"] == []
    assert comparison["overall"]["solved_rate_difference"] == 1.0


def test_per_generator_differences(tmp_path: Path):
    a = write(tmp_path / "a.jsonl", [line(f"p{i}", 0, 0.0, generator="p") for i in range(5)]
              + [line(f"q{i}", 0, 1.0, generator="q") for i in range(5)])
    b = write(tmp_path / "b.jsonl", [line(f"p{i}", 0, 1.0, generator="p") for i in range(5)]
              + [line(f"q{i}", 0, 1.0, generator="q") for i in range(5)])
    groups = {group["generator"]: group for group in compare_files(a, b)["groups"]}
    assert groups["p"]["solved_rate_difference"] == 1.0 and groups["p"]["solved_rate_difference_ci"] == [1.0, 1.0]
    assert groups["q"]["solved_rate_difference"] == 0.0 and groups["q"]["solved_rate_difference_ci"] == [0.0, 0.0]


def test_files_that_are_no_results_are_refused_naming_the_file(tmp_path: Path):
    good = write(tmp_path / "good.jsonl", [line("x", 0, 1.0)])
    with pytest.raises(ConfigError, match="no such file"):
        compare_files(tmp_path / "missing.jsonl", good)
    dataset = write(tmp_path / "dataset.jsonl", [{"prompt": "p", "data_source": "bootcamp/d"}])
    with pytest.raises(ConfigError, match="not a results file"):
        compare_files(good, dataset)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\n")
    with pytest.raises(ConfigError, match="not valid UTF-8"):
        compare_files(good, binary)


def test_the_html_page_escapes_every_value(tmp_path: Path):
    hostile = "<script>alert(1)</script>"
    a = write(tmp_path / "a.jsonl", [line(hostile, 0, 1.0, generator=hostile)])
    b = write(tmp_path / "b.jsonl", [line(hostile, 0, 0.0, generator=hostile)])
    _, html_path = write_comparison(tmp_path / "out", compare_files(a, b))
    html = html_path.read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_cli_prints_tables_and_writes_json_and_html_beside_b(tmp_path: Path):
    a = write(tmp_path / "runs" / "base" / "results.jsonl", [line(f"r{i}", 0, float(i < 3)) for i in range(10)])
    b = write(tmp_path / "runs" / "tuned" / "results.jsonl", [line(f"r{i}", 0, float(i < 8)) for i in range(9)])
    done = bootcamp("compare", str(a), str(b))
    assert done.returncode == 0, done.stderr
    assert "solved in B, not in A: 5" in done.stdout and "r7:0" in done.stdout
    assert "episodes only in A: 1" in done.stdout and "r9:0" in done.stdout
    out = default_output_dir(a, b)
    assert out == tmp_path / "runs" / "tuned" / "compare-base-vs-tuned"
    written = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert written["overall"]["solved_rate_difference"] == pytest.approx(5 / 9)
    assert written["only_in_a"] == ["r9:0"] and written["a"]["path"] == str(a)
    assert (out / "compare.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    chosen = bootcamp("compare", str(a), str(b), "--output-dir", str(tmp_path / "chosen"), "--json")
    assert chosen.returncode == 0 and json.loads(chosen.stdout)["solved_in_b_only"] == written["solved_in_b_only"]
    assert (tmp_path / "chosen" / "compare.json").is_file()


def test_the_cli_answers_a_missing_or_wrong_file_with_one_line_and_exit_status_1(tmp_path: Path):
    good = write(tmp_path / "good.jsonl", [line("x", 0, 1.0)])
    for other, fragment in ((tmp_path / "missing.jsonl", "no such file"),
                            (write(tmp_path / "data.jsonl", [{"prompt": "p"}]), "not a results file")):
        done = bootcamp("compare", str(good), str(other))
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.strip().splitlines() == [done.stderr.strip()], done.stderr
        assert done.stderr.startswith("error: ") and fragment in done.stderr and str(other) in done.stderr
    assert bootcamp("compare", str(good)).returncode == 2
