"""The results writer's group commit: a line is on disk when its commit returns, lines keep the order of their
commits, and a failed batch fails every episode in it and every later one. Real files, and /dev/full for a full
disk."""

from __future__ import annotations

import json
import os

import anyio
import pytest

from bootcamp_core.evaluate.results import ResultsWriter
from bootcamp_core.plugin.errors import ConfigError


def test_each_commit_returns_with_its_line_on_disk_in_commit_order(tmp_path):
    path = tmp_path / "results.jsonl"
    on_disk_at_return: list[bool] = []
    committed: list[str] = []

    async def main() -> None:
        writer = ResultsWriter(path)

        async def episode(number: int) -> None:
            await anyio.sleep(0.001 * (number % 5))  # finishing at different times, several at once
            line = json.dumps({"id": f"e{number}"})
            committed.append(f"e{number}")
            await writer.commit(line)
            # a fresh read, as after a kill -9: the line is there once its episode counts as done
            on_disk_at_return.append(line in path.read_text(encoding="utf-8").splitlines())

        async with anyio.create_task_group() as group:
            for number in range(60):
                group.start_soon(episode, number)
        writer.close()
        assert writer.count == 60

    anyio.run(main)
    assert on_disk_at_return == [True] * 60
    ids = [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()]
    assert ids == committed and len(set(ids)) == 60


def test_announced_episodes_share_a_batch_and_each_line_is_on_disk_when_it_counts(tmp_path):
    """Episodes announced with expect(): a line waits for the others still running (or a short bound), each commit
    still returns with its line on disk, the values reach on_written in the order of the file, and an episode that
    ends without a line (unexpect) or never commits holds nobody up for good."""
    path = tmp_path / "results.jsonl"
    folded: list[dict] = []
    on_disk_at_return: list[bool] = []

    async def main() -> None:
        writer = ResultsWriter(path, on_written=folded.extend)

        async def episode(number: int) -> None:
            await anyio.sleep(0.001 * (number % 4))
            if number % 7 == 6:  # ends without a line: run again later
                writer.unexpect()
                return
            line = json.dumps({"id": f"e{number}"})
            await writer.commit(line, {"id": f"e{number}"})
            on_disk_at_return.append(line in path.read_text(encoding="utf-8").splitlines())

        async with anyio.create_task_group() as group:
            for number in range(40):
                writer.expect()
                group.start_soon(episode, number)
        writer.expect()  # announced, never committed: the next line waits only the bound
        await writer.commit(json.dumps({"id": "last"}), {"id": "last"})
        writer.close()

    anyio.run(main)
    ids = [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()]
    assert on_disk_at_return == [True] * len(on_disk_at_return) and len(ids) == 40 - 5 + 1
    assert [value["id"] for value in folded] == ids and ids[-1] == "last"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_failed_batch_fails_every_episode_in_it_and_every_later_one():
    errors: list[str] = []

    async def main() -> None:
        writer = ResultsWriter("/dev/full")

        async def episode(number: int) -> None:
            try:
                await writer.commit(json.dumps({"id": f"e{number}", "pad": "x" * 10_000}))
            except ConfigError as error:
                errors.append(str(error))

        async with anyio.create_task_group() as group:
            for number in range(10):
                group.start_soon(episode, number)
        await episode(10)  # after the failure: refused, never written after a cut line
        writer.close()  # the failure was reported already
        assert writer.count == 0

    anyio.run(main)
    assert len(errors) == 11
    assert "cannot write /dev/full" in errors[0]
    assert "an earlier write failed" in errors[-1]
