"""Verifiers that evaluate model text run sandboxed: hostile answers score 0 and change nothing outside."""

from __future__ import annotations

import random
import socket
import threading

import pytest
from bootcamp_reasoning_gym.answer import format_answer


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
