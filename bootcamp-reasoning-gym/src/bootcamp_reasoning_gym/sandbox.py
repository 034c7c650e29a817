"""Verifiers that evaluate model text (``eval``, ``sympy.parse_expr``) run here, never in the caller's process.

A pool of sandbox processes (``python -m bootcamp_reasoning_gym.sandbox``), each with reasoning-gym imported once and
with no network (a new user and network namespace where the kernel allows it). For every answer a sandbox forks a
fresh child, so no answer can change how a later one is scored, and the child runs the dataset's ``score_answer``
under resource limits: CPU time and a wall-clock limit, address space, no file writes (``RLIMIT_FSIZE`` 0, an empty
read-only working folder, and an audit hook that refuses opening files for writing, processes, sockets, ctypes and
frame or garbage-collector introspection), no new processes. The child reports its score tagged with a random token
only the sandbox knows, so an answer cannot forge a score by writing to the result pipe. An answer that overruns is
killed and scores 0 (outcome ``"timeout"``); one that crashes the child scores 0 too (outcome ``"crashed"``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

__all__ = ["MEMORY_MB", "TIMEOUT_S", "WORKERS", "score"]

#: Default limits of one answer: CPU and wall-clock seconds, and address space on top of the sandbox's own.
TIMEOUT_S = 5.0
MEMORY_MB = 1024
#: At most this many sandbox processes, started when answers are waiting (each costs a reasoning-gym import).
WORKERS = max(1, min(4, os.cpu_count() or 1))
#: Longer answers score 0 without being sent (the evaluated answers of these datasets are a few hundred characters).
MAX_ANSWER_CHARS = 100_000
_START_TIMEOUT_S = 180.0
_MARGIN_S = 10.0


# --------------------------------------------------------------------------------------------- the caller's side
class _Worker:
    """One sandbox process: requests and replies are JSON lines on its stdin and stdout."""

    def __init__(self) -> None:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "PYTHONWARNINGS": "ignore"}
        # the children's empty working folder: made here, so it is removed even when the sandbox is killed
        self.folder = tempfile.mkdtemp(prefix="verifier-")
        try:
            self.process = subprocess.Popen([sys.executable, "-m", "bootcamp_reasoning_gym.sandbox", self.folder],
                                            cwd="/", env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL)
        except OSError:
            os.rmdir(self.folder)
            raise
        self.buffer = b""
        ready = self.read_line(time.monotonic() + _START_TIMEOUT_S)
        if ready != b"ready":
            self.kill()
            raise RuntimeError(f"the verifier sandbox did not start (got {ready!r:.80})")

    def read_line(self, deadline: float) -> bytes | None:
        fd = self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def ask(self, request: dict, deadline: float) -> dict | None:
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        self.process.stdin.flush()
        line = self.read_line(deadline)
        return None if line is None else json.loads(line)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()
        with contextlib.suppress(OSError):
            os.rmdir(self.folder)

    def close(self) -> None:
        """End the sandbox the polite way (end of its input), killing it if it does not stop soon."""
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        self.kill()


class _Pool:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self.idle: list[_Worker] = []
        self.count = 0
        self.lock = threading.Condition()

    def take(self) -> _Worker:
        with self.lock:
            while not self.idle and self.count >= WORKERS:
                self.lock.wait()
            if self.idle:
                return self.idle.pop()
            self.count += 1
        try:
            return _Worker()
        except BaseException:
            self.drop()
            raise

    def give(self, worker: _Worker) -> None:
        with self.lock:
            self.idle.append(worker)
            self.lock.notify()

    def drop(self) -> None:
        with self.lock:
            self.count -= 1
            self.lock.notify()

    def close(self) -> None:
        with self.lock:
            workers, self.idle = self.idle, []
        for worker in workers:
            worker.close()


_POOL: _Pool | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> _Pool:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL.pid != os.getpid():  # a forked process starts its own sandboxes
            _POOL = _Pool()
            atexit.register(_POOL.close)
        return _POOL


def score(name: str, config: dict, answer: str | None, entry: dict, *, timeout_s: float = TIMEOUT_S,
          memory_mb: int = MEMORY_MB) -> tuple[float, str]:
    """(score, outcome) of ``answer`` under dataset ``name``'s verifier in a sandbox.

    outcome: ``"scored"``, ``"timeout"`` (past ``timeout_s`` of CPU or wall-clock time: killed, score 0),
    ``"crashed"`` (the answer killed the child, or the child reported nothing that was its own: score 0),
    ``"too_long"`` (longer than :data:`MAX_ANSWER_CHARS`: not sent, score 0) or ``"failed"`` (the sandbox could not
    build the dataset's verifier: score 0, nothing the answer did).
    """
    if answer is not None and len(answer) > MAX_ANSWER_CHARS:
        return 0.0, "too_long"
    request = {"dataset": name, "config": config, "answer": answer, "entry": entry, "timeout_s": float(timeout_s),
               "memory_mb": int(memory_mb)}
    pool = _pool()
    worker = pool.take()
    try:
        reply = worker.ask(request, time.monotonic() + timeout_s + _MARGIN_S)
    except BaseException:
        worker.kill()
        pool.drop()
        raise
    if reply is None:  # the sandbox itself stopped answering: replace it
        worker.kill()
        pool.drop()
        return 0.0, "timeout"
    pool.give(worker)
    return float(reply.get("score", 0.0)), str(reply.get("outcome", "crashed"))


# ------------------------------------------------------------------------------------------ the sandbox's side
_BLOCKED_EVENTS = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill", "os.killpg",
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.chmod", "os.chown", "os.chdir",
    "os.truncate", "os.utime", "os.putenv", "os.unsetenv", "os.setxattr", "os.removexattr", "os.chflags",
    "subprocess.Popen", "pty.spawn", "resource.setrlimit", "resource.prlimit", "sys._getframe", "sys._current_frames",
    "sys.settrace", "sys.setprofile", "gc.get_objects", "gc.get_referrers", "gc.get_referents", "mmap.__new__",
    "sqlite3.connect", "webbrowser.open", "urllib.Request", "signal.pthread_kill",
})
_BLOCKED_PREFIXES = ("socket.", "ctypes.", "shutil.", "http.", "ftplib.", "smtplib.", "_posixsubprocess.")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _audit(event: str, args: tuple) -> None:
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        if (isinstance(flags, int) and flags & _WRITE_FLAGS) or (isinstance(mode, str) and set(mode) & set("wax+")):
            raise PermissionError("the verifier sandbox allows no file writes")
        if isinstance(path, (str, bytes)) and os.fsdecode(path).startswith("/proc"):
            raise PermissionError("the verifier sandbox allows no access to /proc")
    elif event in _BLOCKED_EVENTS or event.startswith(_BLOCKED_PREFIXES):
        raise PermissionError(f"the verifier sandbox refuses {event}")


def _isolate_network() -> None:
    """A new user and network namespace (no interface but a down loopback), where the kernel allows it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.unshare(0x10000000 | 0x40000000)  # CLONE_NEWUSER | CLONE_NEWNET; refused: the audit hook still applies
    except (OSError, AttributeError):
        pass


def _child(dataset: Any, request: dict, write_fd: int, token: str, empty: str, base_kb: int) -> None:
    import resource

    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, write_fd)
    os.closerange(write_fd + 1, 1024)
    os.chdir(empty)
    cpu = max(1, int(request["timeout_s"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    memory = (base_kb + int(request["memory_mb"]) * 1024) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sys.addaudithook(_audit)
    try:
        value = float(dataset.score_answer(request["answer"], request["entry"]) or 0.0)
        message = f"{token} {value!r}\n".encode()
    except BaseException:  # noqa: BLE001 - whatever the answer raised, it scores 0
        message = f"{token} 0.0\n".encode()
    os.write(write_fd, message)
    os._exit(0)


def _run_one(datasets: dict, request: dict, empty: str, base_kb: int) -> dict:
    key = (request["dataset"], json.dumps(request["config"], sort_keys=True))
    if key not in datasets:
        import reasoning_gym.factory

        from bootcamp_reasoning_gym.datasets import SIZE

        datasets[key] = reasoning_gym.factory.create_dataset(request["dataset"], seed=0, size=SIZE,
                                                             **request["config"])
    token = os.urandom(16).hex()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            _child(datasets[key], request, write_fd, token, empty, base_kb)
        finally:
            os._exit(1)
    os.close(write_fd)
    deadline = time.monotonic() + request["timeout_s"]
    data, timed_out = b"", False
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([read_fd], [], [], left)[0]:
            timed_out = True
            break
        chunk = os.read(read_fd, 4096)
        if not chunk:
            break
        data += chunk
        if len(data) > 4096:
            break
    os.close(read_fd)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out or (os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL)):
        return {"score": 0.0, "outcome": "timeout"}
    lines = data.decode(errors="replace").splitlines()
    if len(lines) != 1 or not lines[0].startswith(token + " "):  # anything but exactly the child's own report
        return {"score": 0.0, "outcome": "crashed"}
    try:
        value = float(lines[0][len(token) + 1:])
    except ValueError:
        return {"score": 0.0, "outcome": "crashed"}
    return {"score": value if math.isfinite(value) else 0.0, "outcome": "scored"}


def _serve(empty: str) -> None:
    _isolate_network()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing reasoning-gym prints can reach the protocol
    import reasoning_gym.factory  # noqa: F401 - imported once, before any fork
    import sympy.parsing.sympy_parser  # noqa: F401

    os.chmod(empty, 0o500)
    with open("/proc/self/statm") as statm:
        base_kb = int(statm.read().split()[0]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    datasets: dict = {}
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        try:
            reply = _run_one(datasets, json.loads(line), empty, base_kb)
        except Exception as error:  # noqa: BLE001 - a bad dataset or config scores 0, the sandbox goes on
            reply = {"score": 0.0, "outcome": "failed", "error": f"{type(error).__name__}: {error}"[:300]}
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    _serve(sys.argv[1])
