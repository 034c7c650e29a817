"""The results file: one line per episode, appended, flushed and fsynced, and its preparation for a resumed run.

Resume: episodes are keyed by ``EpisodeResult.id`` = ``episode_id(record, repeat)``; :func:`prepare_resume` rewrites
the file atomically without its infrastructure failures (``success`` false), unreadable lines (a line cut by a kill)
and repeated keys, and returns the keys left, which a resumed run skips.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from bootcamp_core.data.io import AtomicFile, dumps, jsonl_lines
from bootcamp_core.data.records import EpisodeResult
from bootcamp_core.episode.engine import episode_id
from bootcamp_core.evaluate.secrets import Redactor
from bootcamp_core.plugin.errors import ConfigError

__all__ = ["RESULTS_NAME", "ResultsWriter", "iter_result_lines", "prepare_resume"]

logger = logging.getLogger("bootcamp_core")

RESULTS_NAME = "results.jsonl"


class ResultsWriter:
    """Appends result lines; each is flushed and fsynced before the next, so a kill loses at most the one in flight.

    Writes are serialized by a lock, so threads (``anyio.to_thread``) may call :meth:`write_line` concurrently.
    """

    def __init__(self, path: str | os.PathLike, *, redact: Iterable[str] | Redactor = ()) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a", encoding="utf-8", newline="\n")
        self._lock = threading.Lock()
        # secrets that must never reach the file, even if some plugin or error message echoes them
        self._redactor = redact if isinstance(redact, Redactor) else Redactor(redact)
        self.count = 0

    def line_for(self, result: EpisodeResult) -> str:
        """The result as one JSON line, secrets masked."""
        # masked in the data, not the JSON text: a secret with quotes or non-ASCII is escaped differently in JSON
        data = self._redactor.data(result.to_dict())
        try:
            return dumps(data)
        except (TypeError, ValueError):  # a plugin put something unserialisable in metrics: keep it as text
            line = json.dumps(data, ensure_ascii=False, default=repr).translate(
                str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}))
            return self._redactor.text(line)

    def write_line(self, line: str) -> None:
        """Append one line and fsync it."""
        with self._lock:
            self._handle.write(line + "\n")
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self.count += 1

    def write(self, result: EpisodeResult) -> None:
        self.write_line(self.line_for(result))

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def iter_result_lines(path: str | os.PathLike) -> Iterator[dict]:
    """Parsed lines of a results file; an unreadable line (cut by a kill) is skipped with a warning."""
    for line in jsonl_lines(path):
        if line.error is None:
            yield line.value
        elif line.error.startswith("not valid JSON"):
            logger.warning("%s:%d: unreadable result line skipped (cut off by a crash?)", path, line.number)


def prepare_resume(path: str | os.PathLike) -> tuple[set[str], dict]:
    """Rewrite a results file atomically without infrastructure failures, unreadable lines and repeated keys.

    Returns the keys of the episodes kept (to skip) and counts ``{"kept", "infrastructure", "unreadable",
    "duplicates"}``.
    """
    path = Path(path)
    counts = {"kept": 0, "infrastructure": 0, "unreadable": 0, "duplicates": 0}
    if not path.exists():
        # the first run of a script that always resumes: nothing finished yet; the file is created here
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        return set(), counts
    if not path.is_file():
        raise ConfigError(f"resume_from {path}: not a file", field="resume_from")
    finished: set[str] = set()
    with AtomicFile(path) as target:
        for read in jsonl_lines(path):
            if read.error is not None:
                counts["unreadable"] += 1
                continue
            data, line = read.value, read.raw
            if data.get("success") is False:
                counts["infrastructure"] += 1
                continue
            key = data.get("id")
            if not isinstance(key, str) or not key:
                # a line of the original framework: key it the same way we would
                key = episode_id(data.get("input") or {}, int(data.get("repeat") or 0))
                data["id"] = key
                line = dumps(data) + "\n"
            if key in finished:
                counts["duplicates"] += 1
                continue
            finished.add(key)
            counts["kept"] += 1
            target.write(line if line.endswith("\n") else line + "\n")
        target.flush()
        os.fsync(target.fileno())
    return finished, counts
