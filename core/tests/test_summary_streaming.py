"""The summary a run folds as its lines reach the disk, forgetting each record with its last repeat, is the summary
of its results file read afresh: the same figures, intervals included, to the last bit."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import threading
from pathlib import Path

import pytest

from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.episode.policies import OpenAIPolicy
from bootcamp_core.episode.retries import RetryPolicy
from bootcamp_core.evaluate.config import EvalConfig
from bootcamp_core.evaluate.run import run_evaluation
from bootcamp_core.evaluate.statistics import Summary, summarize, summarize_file
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, first_user_text

pytestmark = pytest.mark.usefixtures("only_example")

FIGURES = ("overall", "groups", "pass_at_k_definition", "interval_definition")


def run_like_lines(records: int, repeats: int, seed: int, *, continuous: bool, generators: int = 4,
                   sources: int = 2) -> list[dict]:
    """Each (record, repeat) once, in the order concurrent episodes finish: a record's repeats near together,
    records interleaved; several generators, a few lines that disagree on theirs, failures."""
    rng = random.Random(seed)
    episodes = [(record, repeat) for record in range(records) for repeat in range(repeats)]
    order: list[tuple[int, int]] = []
    window = 24
    for start in range(0, len(episodes), window):  # shuffled within a window, as episodes running at once finish
        batch = episodes[start:start + window]
        rng.shuffle(batch)
        order += batch
    lines = []
    for record, repeat in order:
        key = f"{record * 2654435761 % 2**256:064x}" if record % 5 else f"older-record-{record}"
        generator = f"level_{record % generators}" if rng.random() > 0.03 else "moved"
        success = rng.random() > 0.08
        score = (rng.random() if continuous else float(rng.random() > 0.5)) if success else 0.0
        lines.append({"id": f"{key}:{repeat}", "repeat": repeat, "data_source": f"source_{record % sources}",
                      "generator": generator, "score": score, "success": success, "solved": success and score > 0.6,
                      "error_type": None if success else "infrastructure", "finish_reason": "stop",
                      "turn_record": {"assistant_turns": 1 + record % 3, "tool_calls": record % 2}})
    return lines


@pytest.mark.parametrize(("records", "repeats", "continuous"),
                         [(300, 3, True), (300, 3, False), (500, 1, True), (40, 2, True), (3, 4, False)])
def test_the_summary_of_a_run_forgetting_finished_records_is_the_summary_of_its_lines(records, repeats, continuous):
    lines = run_like_lines(records, repeats, seed=records + repeats, continuous=continuous)
    streamed = Summary(repeats=repeats)
    for line in lines:
        streamed.add(line)
    assert streamed.to_dict() == summarize(lines)


def test_repeats_below_one_are_refused():
    with pytest.raises(ValueError, match="repeats must be at least 1"):
        Summary(repeats=0)


def test_a_run_with_repeats_groups_continuous_scores_and_failures_summarizes_as_its_file(
        example_registry, tmp_path):
    overrides = {"split_samples": {"test": 30}}
    config = config_for_bootcamp("example", example_registry, overrides, name="example")
    generate(config, tmp_path / "data", registry=example_registry)
    dataset = tmp_path / "data" / "example_test.jsonl"
    records = [json.loads(line) for line in dataset.read_text(encoding="utf-8").splitlines()]
    for number, record in enumerate(records):  # three data sources: three groups
        record["data_source"] = f"{record['data_source']}-{number % 3}"
    dataset.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    served = itertools.count()
    lock = threading.Lock()

    def script(request: dict) -> Reply:
        with lock:
            number = next(served)
        if number % 11 == 5:  # an infrastructure failure now and then, some of them left after the reruns
            return Reply.error(500, message="overloaded")
        tool_output = next((message.get("content") for message in reversed(request.get("messages") or [])
                            if message.get("role") == "tool"), None)
        if tool_output is None:
            expression = first_user_text(request).split("\n\n")[1]
            return Reply.calls(("calculator", {"expression": expression}))
        # answers off by a varying relative error: soft scores between 0 and 1, repeats that disagree
        error = (0.0, 1e-9, 1e-6, 1e-4, 1e-2, 0.5)[number % 6]
        return Reply.text(f'```json\n{{"result": {float(tool_output) * (1 + error)!r}}}\n```')

    out = tmp_path / "out"
    with ScriptedChatServer(script) as server:
        policy = OpenAIPolicy(api_url=server.base_url, model="stub", retry=RetryPolicy(attempts=1))
        summary = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=out, api_url="unused", repeats=3,
                                            max_concurrent=8, rerun_failed=1, verify_kwargs={"soft": True}),
                                 policy=policy, progress=False)
    lines = [json.loads(line) for line in Path(out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 90 and len({line["id"] for line in lines}) == 90
    assert len({(line["data_source"], line["generator"]) for line in lines}) == 3
    assert any(not line["success"] for line in lines)
    assert len({line["score"] for line in lines if line["success"]}) >= 4  # continuous scores
    afresh = summarize_file(out / "results.jsonl")
    for key in FIGURES:
        assert summary[key] == afresh[key]
    assert summary["overall"]["records"] == 30
    written = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert written["overall"] == json.loads(json.dumps(afresh["overall"]))


def test_a_record_with_more_episodes_than_a_byte_counts_them_all():
    lines = [{"id": f"{'cd' * 32}:{repeat}", "score": repeat % 2, "solved": bool(repeat % 2)} for repeat in range(300)]
    lines.append({"id": f"{'ef' * 32}:0", "score": 1, "solved": True})
    for summary in (summarize(lines), Summary(repeats=300)):
        if isinstance(summary, Summary):
            for line in lines:
                summary.add(line)
            summary = summary.to_dict()
        overall = summary["overall"]
        assert overall["records"] == 2 and overall["count"] == 301 and overall["solved"] == 151
        assert "pass@300" in overall["pass_at_k"] and "pass@301" not in overall["pass_at_k"]
        assert overall["pass_at_k"]["pass@1"] == (150 / 300 + 1) / 2


@pytest.mark.parametrize("shape", ["binary", "continuous", "unequal", "few", "agree", "empty"])
def test_the_streamed_interval_is_the_interval_of_the_listed_units(shape):
    from array import array

    from bootcamp_core.evaluate.intervals import ratio_interval, streamed_ratio_interval

    rng = random.Random(len(shape))
    size = {"few": 7, "empty": 0}.get(shape, 400)
    dens = [rng.choice((1, 2, 3)) if shape == "unequal" else 2 for _ in range(size)]
    nums = array("d", (float(rng.randrange(den + 1)) if shape in ("binary", "few") else
                       1.0 * den if shape == "agree" else rng.random() * den for den in dens))
    expected = ratio_interval(zip(nums, dens, strict=True))
    assert streamed_ratio_interval(lambda: zip(nums, dens, strict=True)) == expected
    assert shape in ("agree", "empty") or expected[0] < expected[1]


def test_an_index_larger_than_a_piece_is_written_whole():
    from bootcamp_core.evaluate.viewer import INDEX_PIECE_BYTES, EpisodePayload, report_episodes

    rng = random.Random(4)
    payload = EpisodePayload()
    ids = [f"{rng.getrandbits(256):064x}:{number % 3}" for number in range(6_000)]
    for episode in ids:
        payload.add({"id": episode, "score": rng.random(), "messages": [{"role": "assistant", "content": "done"}]})
    pieces = list(payload.iter_index())
    assert len(pieces) > 1 and len(pieces[0]) == INDEX_PIECE_BYTES * 4 // 3  # the index is read back in pieces
    index, episodes = report_episodes("".join(payload.elements()))
    assert [row[0] for row in index] == ids == [episode["id"] for episode in episodes]
    assert payload.index() == "".join(pieces)


@pytest.mark.parametrize("repeats", [1, 2])
def test_a_run_past_the_profile_limit_keeps_every_count_and_the_same_figures(repeats):
    from bootcamp_core.evaluate.statistics import PROFILE_LIMIT

    # continuous scores: nearly every record a profile of its own, so the main group turns to raw counts midway,
    # some records still in flight then; the few lines of another generator stay profiled
    records = PROFILE_LIMIT + 300
    lines = run_like_lines(records, repeats, seed=repeats, continuous=True, generators=1, sources=1)
    streamed = Summary(repeats=repeats)
    for line in lines:
        streamed.add(line)
    kinds = sorted((len(table), table.profiles is None) for table in streamed._index.tables)
    assert kinds[-1] >= (PROFILE_LIMIT, True) and kinds[0][1] is False
    figures = streamed.to_dict()
    assert figures == summarize(lines)
    assert figures["overall"]["records"] == records


def test_a_run_summary_stays_the_same_size_however_many_records_it_holds():
    import tracemalloc

    def lines(first: int, count: int):
        for record in range(first, first + count):
            solved = record % 3 != 0
            yield {"id": f"{record:064x}:0", "repeat": 0, "data_source": "source", "generator": f"level_{record % 3}",
                   "score": float(solved), "solved": solved, "success": record % 17 != 0}

    summary = Summary(repeats=1)
    for line in lines(0, 1000):  # the groups and their profiles exist
        summary.add(line)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for line in lines(1000, 60_000):
            summary.add(line)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # a finished record is one more count of its profile: nothing per record (it was 20 bytes, 1.2 MB here)
    assert grown < 16_384, grown
    overall = summary.to_dict()["overall"]
    solved = sum(1 for record in range(61_000) if record % 3 and record % 17)
    assert (overall["records"], overall["count"], overall["solved"]) == (61_000, 61_000, solved)
    assert overall["pass_at_k"]["pass@1"] == solved / 61_000
    low, high = overall["pass_at_k_ci"]["pass@1"]
    assert low < solved / 61_000 < high


@pytest.mark.parametrize(("repeats", "scores"), [(1, "dyadic"), (3, "dyadic"), (3, "binary"), (2, "continuous")])
def test_the_figures_do_not_depend_on_the_order_the_episodes_finish_in(repeats, scores):
    # the same episodes finishing in two orders (as two runs of the same model would) give the same figures,
    # intervals included, whether the records pool into few profiles or are drawn directly
    lines = run_like_lines(240, repeats, seed=repeats, continuous=scores != "binary")
    for line in lines:
        if scores == "dyadic" and line["success"]:  # multiples of 1/64: every sum exact, so the means agree too
            line["score"] = round(line["score"] * 64) / 64
    shuffled = lines[:]
    random.Random(9).shuffle(shuffled)
    by_record = sorted(lines, key=lambda line: line["id"])
    first, second = summarize(lines), summarize(shuffled)
    streamed = Summary(repeats=repeats)
    for line in by_record:  # a record's repeats one after the other
        streamed.add(line)
    third = streamed.to_dict()
    if scores == "continuous":  # float sums of the scores differ in their last bits with the order: all but those
        for figures in (first, second, third):
            for group in (figures["overall"], *figures["groups"]):
                assert 0 <= group.pop("mean_score") <= 1
    assert first == second == third


def test_records_keyed_by_counting_ids_summarize_like_hashed_ones():
    # ids whose first digits agree (hand-numbered records) index as well as sha256 ones: the same figures
    lines = [{"id": f"{record // 2:064x}:{record % 2}", "score": float(record % 3 == 0), "solved": record % 3 == 0,
              "generator": "level_1"} for record in range(6000)]
    hashed = [{**line, "id": f"{hashlib.sha256(line['id'][:64].encode()).hexdigest()}:{line['id'][-1]}"}
              for line in lines]
    figures = summarize(lines)
    assert figures["overall"]["records"] == 3000
    assert figures == summarize(hashed)
