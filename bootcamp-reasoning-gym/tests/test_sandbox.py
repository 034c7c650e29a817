"""Verifiers that evaluate model text run sandboxed: hostile answers score 0 and change nothing outside."""

from __future__ import annotations

import json
import random
import socket
import threading

import pytest
from bootcamp_reasoning_gym.answer import format_answer

from bootcamp_core import EvalConfig, run_evaluation, write_records
from bootcamp_core.testing import Reply, ScriptedChatServer, generate_records, play_episodes, scripted_policy


@pytest.fixture(scope="module")
def reward(registry):
    return registry.component("reward", "reasoning_gym", {"verifier_timeout_s": 2})


@pytest.fixture(scope="module")
def identity(registry):
    return registry.component("generator", "reasoning_gym/spiral_matrix", {}).case_generator(random.Random(5))


def score(reward, identity, answer):
    return reward.verify_score(format_answer(answer), identity)


def test_answers_that_write_files_score_zero_and_write_nothing(reward, identity, tmp_path):
    targets = [tmp_path / name for name in ("open", "system", "os_open", "popen")]
    answers = [
        f"open({str(targets[0])!r}, 'w').write('x')",
        f"__import__('os').system('touch {targets[1]}')",
        f"__import__('os').open({str(targets[2])!r}, __import__('os').O_CREAT | __import__('os').O_WRONLY)",
        f"__import__('subprocess').run(['touch', {str(targets[3])!r}])",
        "open('in_the_working_folder', 'w')",
    ]
    assert [score(reward, identity, answer) for answer in answers] == [0.0] * len(answers)
    assert [target.name for target in targets if target.exists()] == []
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def test_an_answer_that_loops_forever_scores_zero_as_a_reward_timeout(reward, identity):
    before = len(reward.errors)
    assert score(reward, identity, "[0 for _ in iter(int, 1)]") == 0.0
    assert score(reward, identity, "9**9**9**9") == 0.0
    timeouts = list(reward.errors)[before:]
    assert len(timeouts) == 2 and all(line.startswith("reward_timeout: reasoning_gym/spiral_matrix") for line in
                                      timeouts)
    # the sandbox that killed them goes on scoring: the right answer, and reasoning-gym's 0.1 for a Python list
    assert score(reward, identity, identity["entry"]["answer"]) == 1.0
    assert score(reward, identity, repr(identity["entry"]["answer"].split())) == pytest.approx(0.1)


def test_an_answer_cannot_change_how_later_answers_are_scored(reward, identity):
    patch = ("setattr(__import__('reasoning_gym.algorithmic.spiral_matrix', fromlist=['x']).SpiralMatrixDataset, "
             "'score_answer', lambda self, answer, entry: 1.0)")
    assert score(reward, identity, patch) == 0.0
    assert score(reward, identity, "definitely wrong") == 0.0


def test_an_answer_cannot_forge_a_score_on_the_result_pipe(reward, identity):
    forge = "[__import__('os').write(fd, b'0 1.0\\n') for fd in range(3, 64) if not __import__('time').sleep(0)]"
    assert score(reward, identity, forge) == 0.0
    assert score(reward, identity, forge + " and [0 for _ in iter(int, 1)]") == 0.0


def test_an_answer_that_kills_its_child_scores_zero_as_a_model_error(reward, identity):
    before = len(reward.errors)
    assert score(reward, identity, "__import__('os')._exit(0)") == 0.0
    [line] = list(reward.errors)[before:]
    assert line.startswith("model_error: reasoning_gym/spiral_matrix's verifier crashed on the answer")
    assert score(reward, identity, identity["entry"]["answer"]) == 1.0


def test_an_answer_reaches_no_network(reward, identity):
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(5)
    port = server.getsockname()[1]
    accepted = []

    def accept():
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    thread = threading.Thread(target=accept)
    thread.start()
    answer = f"__import__('socket').create_connection(('127.0.0.1', {port})).sendall(b'leak')"
    assert score(reward, identity, answer) == 0.0
    server.close()
    thread.join()
    assert accepted == []


# ------------------------------------------------------------------------------------- through the rollout engine
#: one eval-based task, two records; every verifier call limited to 1 s, one attempt, so a loop costs seconds
SPIRAL = {"instruction_generators": {"spiral": {"class_name": "reasoning_gym/spiral_matrix", "config": {},
                                                "generation_ratio": 1}},
          "global_config": {"default_seed": 3, "default_split_samples": "test:2", "gen_parquet": False}}
LIMITS = {"reasoning_gym/reasoning_gym": {"verifier_timeout_s": 1},
          "reasoning_gym/feedback": {"max_attempts": 1, "reward_config": {"verifier_timeout_s": 1}}}
LOOP = "[0 for _ in iter(int, 1)]"


@pytest.fixture(scope="module")
def spiral_records(registry):
    records = generate_records("reasoning_gym", registry, instruction_config=SPIRAL)
    components = [(item["extra_info"]["bootcamp"]["reward"], item["extra_info"]["bootcamp"]["interaction"])
                  for item in records]
    assert components == [("reasoning_gym/reasoning_gym", "reasoning_gym/feedback")] * 2
    return records


def truth(item: dict) -> str:
    return item["reward_model"]["ground_truth"]["entry"]["answer"]


def answers_by_prompt(loops: dict, right: dict) -> dict:
    """{the record's question: the boxed answer the model gives}: a loop for ``loops``, the truth for ``right``."""
    return {loops["prompt"][-1]["content"]: format_answer(LOOP), right["prompt"][-1]["content"]: format_answer(
        truth(right))}


def test_an_answer_that_loops_forever_ends_its_episode_as_a_reward_timeout(registry, spiral_records):
    loops, right = spiral_records
    answers = answers_by_prompt(loops, right)

    async def turn(messages, tools, record, rng):
        return {"role": "assistant", "content": answers[record.prompt[-1]["content"]]}

    slow, solved = play_episodes([loops, right], registry, policy=scripted_policy(turn), component_config=LIMITS)
    assert (slow.score, slow.solved, slow.success, slow.error_type, slow.error_kind, slow.finish_reason) == (
        0.0, False, True, "model", "reward_timeout", "error")
    assert slow.error == "reasoning_gym.verify_score: reasoning_gym/spiral_matrix's verifier ran past 1 s; score 0"
    assert (solved.score, solved.solved, solved.error_kind, solved.error, solved.finish_reason) == (
        1.0, True, None, None, "terminated")


def test_an_evaluation_counts_the_overrun_and_never_runs_it_again(registry, spiral_records, tmp_path):
    loops, right = spiral_records
    write_records(tmp_path / "spiral.jsonl", [loops, right])
    config = tmp_path / "limits.yaml"
    config.write_text("interaction:\n  - class_name: reasoning_gym/feedback\n    config:\n      max_attempts: 1\n"
                      "      reward_config: {verifier_timeout_s: 1}\n", encoding="utf-8")
    answers = answers_by_prompt(loops, right)

    def model(request):
        return Reply.text(answers.get(request["messages"][-1]["content"], "no"))

    out = tmp_path / "out"
    with ScriptedChatServer(model) as server:
        summary = run_evaluation(EvalConfig(dataset_path=tmp_path / "spiral.jsonl", output_dir=out,
                                            api_url=server.base_url, api_model="stub", interaction_config=config),
                                 registry=registry, progress=False)
        assert len(server.requests) == 2  # one answer each; the overrun is not re-run
    lines = {line["input"]["prompt"][-1]["content"]: line for line in map(json.loads, (out / "results.jsonl")
                                                                          .read_text(encoding="utf-8").splitlines())}
    slow, solved = lines[loops["prompt"][-1]["content"]], lines[right["prompt"][-1]["content"]]
    assert (slow["score"], slow["success"], slow["error_kind"]) == (0.0, True, "reward_timeout")
    assert (solved["score"], solved["error_kind"]) == (1.0, None)
    assert summary["overall"]["error_kinds"]["reward_timeout"]["count"] == 1
    assert summary["this_run"]["infrastructure_errors"] == 0 and summary["this_run"]["reruns"] == 0
