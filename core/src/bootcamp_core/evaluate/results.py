"""The results file: one line per episode, appended in batches, flushed and fsynced, and its preparation for a
resumed run.

Group commit: :meth:`ResultsWriter.commit` returns once its line is flushed and fsynced; the lines committed while a
batch is being written make up the next batch, written with one fsync. A run announces each episode it starts
(:meth:`ResultsWriter.expect`), and a batch waits for the lines of the episodes still running until they have all
come, the batch is large (:data:`BATCH_LINES`, :data:`BATCH_BYTES`) or :data:`BATCH_WAIT_S` passed, so at
concurrency N a batch holds up to N lines. An episode counts as done only after its batch is on disk. A kill -9 loses
at most the lines of the batch being written, episodes that had not counted as done.

Resume: episodes are keyed by ``EpisodeResult.id`` = ``episode_id(record, repeat)``; :func:`prepare_resume` rewrites
the file atomically without its infrastructure failures (``success`` false), its cut-off last line (a kill) and
repeated keys, and returns the keys left, which a resumed run skips. A file that is not a results file of the dataset
(a dataset file, lines of another schema, episodes of records the dataset does not hold, unreadable lines before the
last) is refused with one line and left as it is. A rewrite goes to a complete new file, fsynced, then renamed over
the old one.

One run at a time per results file: :class:`ResultsLock` holds an ``flock`` on ``<results>.lock`` beside it while a
run writes, so a second run on the same file is refused; the kernel drops the lock when its process ends, however it
ends, so a dead run's lock file never blocks anyone. Taking the lock removes the ``<results>.tmp-<pid>`` files of
processes that no longer run (a rewrite cut by a kill or a full disk).

A write that fails (a full disk) is a :class:`~bootcamp_core.plugin.errors.ConfigError` naming the file; the lines
written before it are kept.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bootcamp_core.data.io import AtomicFile, JsonLine, dumps, jsonl_lines
from bootcamp_core.data.schema import compact_dumps
from bootcamp_core.data.records import EpisodeResult
from bootcamp_core.episode.engine import episode_id
from bootcamp_core.evaluate.secrets import Redactor
from bootcamp_core.plugin.errors import ConfigError

__all__ = ["BATCH_BYTES", "BATCH_LINES", "BATCH_WAIT_S", "RESULTS_NAME", "ResultsLock", "ResultsWriter",
           "iter_result_lines", "prepare_resume", "remove_stale_temporaries"]

logger = logging.getLogger("bootcamp_core")

RESULTS_NAME = "results.jsonl"
#: The longest a batch waits for the lines of episodes still running (an fsync costs about a millisecond of CPU).
BATCH_WAIT_S = 0.02
#: A batch is written once it holds this many lines, or this many characters, whatever is still running.
BATCH_LINES = 1024
BATCH_BYTES = 8 << 20


class ResultsWriter:
    """Appends result lines; each batch is flushed and fsynced before the next, so a kill loses at most the batch in
    flight.

    Writes are serialized by a lock, so threads (``anyio.to_thread``) may call :meth:`write_lines` concurrently;
    in async code :meth:`commit` batches the lines of concurrent episodes (see the module docstring).
    """

    def __init__(self, path: str | os.PathLike, *, redact: Iterable[str] | Redactor = (),
                 on_written: Callable[[list], None] | None = None) -> None:
        self.path = Path(path)
        #: called in the event loop with the values given to :meth:`commit` of each batch once it is on disk, in the
        #: order of its lines in the file, before any of its callers returns
        self.on_written = on_written
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a", encoding="utf-8", newline="\n")
        self._lock = threading.Lock()
        # secrets that must never reach the file, even if some plugin or error message echoes them
        self._redactor = redact if isinstance(redact, Redactor) else Redactor(redact)
        self.count = 0
        self._failed = False
        self._expected = 0  # episodes announced by expect() whose line has not come yet
        self._open: _Batch | None = None  # the batch lines are added to, not yet being written
        self._last: _Batch | None = None  # the batch written last (or being written)

    def line_for(self, result: EpisodeResult) -> str:
        """The result as one JSON line, secrets masked."""
        return self.entry_for(result)[0]

    def entry_for(self, result: EpisodeResult) -> tuple[str, dict]:
        """The result as one JSON line, secrets masked, and the data that line holds (what reading it back gives,
        but for tuples, which JSON reads as lists), without parsing the line again. The line is compact JSON where
        :func:`~bootcamp_core.data.schema.compact_dumps` writes the data exactly, else as
        :func:`~bootcamp_core.data.schema.dumps` writes it (NaN included)."""
        # masked in the data, not the JSON text: a secret with quotes or non-ASCII is escaped differently in JSON;
        # the data is walked only when its text may hold a secret (a scan in C, the walk about half the line's cost)
        # most lines are written by the fast encoder, checked by reading them back; the others (NaN, a tuple in a
        # plugin's metrics) as dumps writes them: a results line is JSON, its spacing not part of it
        data = result.to_dict()
        try:
            line = compact_dumps(data) or dumps(data)
            if not self._redactor.may_be_in(line):
                return line, data
            data = self._redactor.data(data)
            return compact_dumps(data) or dumps(data), data
        except (TypeError, ValueError):  # a plugin put something unserialisable in metrics: keep it as text
            data = self._redactor.data(result.to_dict())
            line = json.dumps(data, ensure_ascii=False, default=repr).translate(
                str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}))
            line = self._redactor.text(line)
            return line, json.loads(line)

    def write_line(self, line: str) -> None:
        """Append one line and fsync it (see :meth:`write_lines`)."""
        self.write_lines((line,))

    def write_lines(self, lines: Sequence[str]) -> None:
        """Append lines and fsync them once; a failed write (a full disk) is a ConfigError naming the file, and every
        later write is refused, so no line ever follows a cut one."""
        with self._lock:
            if self._failed:
                raise ConfigError(f"cannot write {self.path}: an earlier write failed")
            try:
                self._handle.write("".join([line + "\n" for line in lines]))
                self._handle.flush()
                os.fsync(self._handle.fileno())
            except OSError as error:
                self._failed = True
                raise self._write_error(error) from None
            self.count += len(lines)

    def expect(self) -> None:
        """An episode started whose line may come: a batch waits for it (up to :data:`BATCH_WAIT_S`)."""
        self._expected += 1

    def unexpect(self) -> None:
        """An episode counted by :meth:`expect` ended without a line (it runs again later)."""
        self._expected = max(self._expected - 1, 0)
        self._maybe_ready()

    def _maybe_ready(self) -> None:
        batch = self._open
        if batch is not None and (self._expected == 0 or len(batch.lines) >= BATCH_LINES
                                  or batch.size >= BATCH_BYTES):
            batch.ready.set()

    async def commit(self, line: str, value: Any = None) -> None:
        """Append a line; returns once the batch holding it is flushed and fsynced, and raises its write's error.

        The first line of a batch makes its caller the batch's writer: once the batch before it is on disk, that
        caller waits until every episode :meth:`expect` announced has added its line, the batch holds
        :data:`BATCH_LINES` lines or :data:`BATCH_BYTES`, or :data:`BATCH_WAIT_S` passed, whichever comes first (with
        no episode announced, at once), then closes the batch and writes it in a worker thread (the event loop runs on
        during fsync); the lines of other callers meanwhile join it, and they wait for it. ``value`` (the line's
        data) goes to ``on_written`` once the batch is on disk.
        """
        import anyio

        self._expected = max(self._expected - 1, 0)
        batch = self._open
        if batch is not None:
            batch.lines.append(line)
            batch.values.append(value)
            batch.size += len(line)
            self._maybe_ready()
            await batch.done.wait()
            if batch.error is not None:
                raise batch.error
            return
        batch = self._open = _Batch(line, value, anyio.Event(), anyio.Event())
        previous, self._last = self._last, batch
        try:
            if previous is not None:
                await previous.done.wait()  # batches reach the file in order, one at a time
            self._maybe_ready()
            if not batch.ready.is_set():  # more lines are coming: one fsync for them all
                with anyio.move_on_after(BATCH_WAIT_S):
                    await batch.ready.wait()
            self._open = None  # later lines go to the next batch
            await anyio.to_thread.run_sync(batch.write_to, self)
        except ConfigError as error:
            batch.error = error
            raise
        except BaseException:  # cancelled: lines not written must not count as written for those waiting
            if not batch.written and batch.error is None:
                batch.error = ConfigError(f"cannot write {self.path}: the run was stopped")
            raise
        finally:
            if self._open is batch:
                self._open = None
            if batch.written and self.on_written is not None:  # on disk, even if the caller was cancelled meanwhile
                self.on_written(batch.values)
            batch.done.set()

    def _write_error(self, error: OSError) -> ConfigError:
        reason = error.strerror or str(error)
        return ConfigError(f"cannot write {self.path}: {reason}; the {self.count} line(s) this run wrote before are "
                           f"kept: free some space and continue with resume_from {self.path}", field="resume_from")

    def write(self, result: EpisodeResult) -> None:
        self.write_line(self.line_for(result))

    def close(self) -> None:
        try:
            self._handle.close()
        except OSError as error:
            if not self._failed:  # after a failed write the buffer still holds the line that did not fit
                self._failed = True
                raise self._write_error(error) from None

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Batch:
    """Lines written with one fsync, the event set once they are on disk (or could not be written), and why not."""

    __slots__ = ("done", "error", "lines", "ready", "size", "values", "written")

    def __init__(self, line: str, value: Any, done: Any, ready: Any) -> None:
        self.lines = [line]
        self.values = [value]
        self.size = len(line)
        self.ready = ready  # set once the batch need wait for no more lines
        self.done = done
        self.error: ConfigError | None = None
        self.written = False

    def write_to(self, writer: ResultsWriter) -> None:
        writer.write_lines(self.lines)
        self.written = True


def iter_result_lines(path: str | os.PathLike) -> Iterator[dict]:
    """Parsed lines of a results file; an unreadable line (cut by a kill) is skipped with a warning."""
    for line in jsonl_lines(path):
        if line.error is None:
            yield line.value
        elif line.error.startswith(("not valid JSON", "not valid UTF-8")):
            logger.warning("%s:%d: unreadable result line skipped (cut off by a crash?)", path, line.number)


def prepare_resume(path: str | os.PathLike, dataset_path: str | os.PathLike | None = None, *,
                   record_keys: set[str] | None = None, all_keys: bool = False) -> tuple[set[str], dict]:
    """Check a results file, then rewrite it atomically without infrastructure failures, a cut-off last line and
    repeated keys (only when there is one of those to drop).

    With ``dataset_path``, every line must be an episode of a record of that file. A file that is not a results file
    (of that dataset) is a :class:`ConfigError` and stays as it is. ``record_keys``: the record part of the episode
    keys of records of the dataset already read (a :class:`~bootcamp_core.evaluate.dataset.DatasetSelection`'s
    check), every record's when ``all_keys``; the dataset is read for them only when a line's record is not among
    them and they are not all. Returns the keys of the episodes kept (to skip) and counts ``{"kept",
    "infrastructure", "unreadable", "duplicates"}``.
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
    if dataset_path is not None and Path(dataset_path).is_file() and path.samefile(dataset_path):
        raise ConfigError(f"resume_from {path} is the dataset file itself; give the results file of a run on it "
                          "(its results.jsonl)", field="resume_from")
    finished: set[str] = set()
    drop: set[int] = set()  # line numbers the rewrite leaves out
    rekey: dict[int, str] = {}  # line number -> key, for lines of the original framework (no id)
    # hashes of the dataset's records, read once the file proves to hold results (unless known)
    records: set[str] | None = record_keys if all_keys else None
    cut: JsonLine | None = None
    for read in jsonl_lines(path):
        if cut is not None:
            raise _not_results(path, cut.number, f"{cut.error}, and lines follow it (only the last line of a "
                               "results file can be cut off)")
        if read.error is not None:
            if not read.text.lstrip().startswith("{") or read.error == "expected a JSON object":
                # a line cut by a kill is the start of an object; anything else means another kind of file
                raise _not_results(path, read.number, f"not a result line ({read.error})")
            cut = read
            counts["unreadable"] += 1
            drop.add(read.number)
            continue
        data = read.value
        problem = _result_problem(data)
        if problem is not None:
            raise _not_results(path, read.number, problem)
        key = data.get("id")
        if not isinstance(key, str) or not key:
            try:
                key = episode_id(data["input"], data.get("repeat") or 0)
            except (ValueError, TypeError, KeyError) as error:
                raise _not_results(path, read.number, f"its input is not a record ({error})") from None
            rekey[read.number] = key
        if dataset_path is not None:
            known = records if records is not None else record_keys
            if known is None or (key.rpartition(":")[0] not in known and records is None):
                known = records = _record_hashes(dataset_path)  # every record's, read now
            if key.rpartition(":")[0] not in known:
                # keyed some other way (an id written by hand, an earlier key scheme): its input decides
                try:
                    key = episode_id(data["input"], data.get("repeat") or 0)
                except (ValueError, TypeError, KeyError):
                    key = ""
                if key.rpartition(":")[0] not in records:
                    raise _not_results(path, read.number, f"not an episode of a record of {dataset_path} (the "
                                       "results of another dataset?)")
                rekey[read.number] = key
        if data.get("success") is False:
            counts["infrastructure"] += 1
            drop.add(read.number)
            continue
        if key in finished:
            counts["duplicates"] += 1
            drop.add(read.number)
            continue
        finished.add(key)
        counts["kept"] += 1
    if drop or rekey or not _ends_with_newline(path):
        with AtomicFile(path) as target:
            for read in jsonl_lines(path):
                if read.number in drop:
                    continue
                if read.number in rekey:
                    target.write(dumps({**read.value, "id": rekey[read.number]}) + "\n")
                else:
                    target.write(read.raw)
            target.flush()
            os.fsync(target.fileno())
        _fsync_directory(path.parent)
    return finished, counts


def _result_problem(data: dict) -> str | None:
    """Why a JSON object is not a result line (None when it is one): it needs an ``input`` object, a numeric score
    and an integer repeat (or none)."""
    score, repeat = data.get("score"), data.get("repeat")
    if not isinstance(data.get("input"), dict) or isinstance(score, bool) or not isinstance(score, int | float):
        if "prompt" in data and "score" not in data:
            return "a record, not a result line (is this the dataset file?)"
        return "not a result line (it needs an input object and a numeric score)"
    if repeat is not None and (isinstance(repeat, bool) or not isinstance(repeat, int)):
        return f"not a result line (repeat {repeat!r} is not an integer)"
    return None


def _not_results(path: Path, number: int, problem: str) -> ConfigError:
    return ConfigError(f"resume_from {path}:{number}: {problem}; not a results file of this dataset, left as it is",
                       field="resume_from")


def _record_hashes(dataset_path: str | os.PathLike) -> set[str]:
    """The part of every episode key that names the record, for each record of the dataset file."""
    from bootcamp_core.evaluate.dataset import load_dataset

    return {episode_id(record, 0).rpartition(":")[0] for record in load_dataset(dataset_path)}


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        if handle.seek(0, os.SEEK_END) == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (where the platform can)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


# -------------------------------------------------------------------------------------------- lock and leftovers
class ResultsLock:
    """One run at a time on a results file: an exclusive ``flock`` on ``<results>.lock`` beside it.

    ``with ResultsLock(path):`` refuses (a :class:`ConfigError` naming the holder's pid) when another run holds it.
    The kernel releases the lock when the holding process ends, even by kill -9, so a lock file left by a dead run
    is simply taken over. Taking the lock also removes the ``<results>.tmp-<pid>`` files of dead processes.
    The lock file is removed on release.
    """

    def __init__(self, results_path: str | os.PathLike) -> None:
        self.results_path = Path(results_path)
        self.path = self.results_path.with_name(f"{self.results_path.name}.lock")
        self._descriptor: int | None = None

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # no advisory locks on this platform: runs are not guarded against each other
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(descriptor, 32).decode("ascii", "replace").strip()
                os.close(descriptor)
                by = f" (pid {holder})" if holder.isdigit() else ""
                raise ConfigError(f"{self.results_path} is being written by another run{by}: wait for it to end, or "
                                  "write to another file") from None
            except BaseException:
                os.close(descriptor)
                raise
            # a run releasing the lock removes the file first: a lock on a file no longer there guards nothing
            try:
                current = os.stat(self.path)
            except FileNotFoundError:
                current = None
            if current is not None and os.path.samestat(os.fstat(descriptor), current):
                break
            os.close(descriptor)
        try:
            os.ftruncate(descriptor, 0)
            os.write(descriptor, f"{os.getpid()}\n".encode("ascii"))
        except OSError:  # the pid is only for the message of a refused run
            pass
        self._descriptor = descriptor
        remove_stale_temporaries(self.results_path.parent, (self.results_path.name,))

    def release(self) -> None:
        if self._descriptor is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # while still held, so nobody else holds a lock on the removed file
        finally:
            os.close(self._descriptor)
            self._descriptor = None

    def __enter__(self) -> ResultsLock:  # noqa: PYI034
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def remove_stale_temporaries(directory: str | os.PathLike, names: Iterable[str]) -> list[Path]:
    """Remove ``<name>.tmp-<pid>`` files in ``directory`` whose process no longer runs; returns those removed."""
    removed = []
    directory = Path(directory)
    for name in names:
        for candidate in directory.glob(f"{_glob_escape(name)}.tmp-*"):
            pid = candidate.name[len(name) + len(".tmp-"):]
            if not pid.isdigit() or int(pid) == os.getpid() or _running(int(pid)):
                continue
            try:
                candidate.unlink()
            except FileNotFoundError:
                continue
            logger.info("removed %s, left by a run that ended before it finished", candidate)
            removed.append(candidate)
    return removed


def _glob_escape(name: str) -> str:
    return "".join(f"[{char}]" if char in "*?[" else char for char in name)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except OSError:
        return True
    return True
