"""The processes the engine tests start for themselves, and stop by PID.

- :func:`redis_server`: a Redis of our own on a free port of 127.0.0.1 (no
  snapshot, no append-only file), never the machine's shared one. Without a
  ``redis-server`` the tests skip, saying how to get one; under CI (``CI``
  set) they fail instead.
- :class:`Target`: the order service (``target.py``), whose table is the
  ground truth.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from pgtest import skip_or_fail

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"


def require(program: str, how: str) -> str:
    """The path of ``program``; skip without it (fail under CI)."""
    path = shutil.which(program)
    if path is None:
        skip_or_fail(f"{program} is not installed ({how})")
    return path


def need(module: str, how: str) -> None:
    """Import ``module`` or skip the test module (fail under CI)."""
    try:
        __import__(module)
    except ImportError as exc:
        skip_or_fail(f"{module} is not installed ({how}): {exc}", module_level=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def stop(proc: subprocess.Popen[str], *, grace: float = 10.0) -> None:
    """End a process we started: SIGTERM, then SIGKILL after ``grace`` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


@contextlib.contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A throwaway Redis; yields its URL (database 0)."""
    binary = require("redis-server", "apt-get install redis-server")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder), "--daemonize", "no"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:  # redis says when it listens: no polling
            seen.append(line)
            if "Ready to accept connections" in line:
                break
        else:
            raise AssertionError(f"redis-server did not start: {''.join(seen)[-2000:]}")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(proc)


class Target:
    """The order service in a process of its own (see ``target.py``)."""

    def __init__(self, folder: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "target.py"), str(folder / "orders.db")],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the order service did not start (exit {self.proc.poll()})"
        self.url = f"http://127.0.0.1:{json.loads(line)['port']}"

    def truth(self) -> dict[str, int]:
        """Ground truth: ref -> orders the service made for it."""
        with urllib.request.urlopen(f"{self.url}/truth", timeout=30) as answer:
            out: dict[str, int] = json.load(answer)
        return out

    def close(self) -> None:
        stop(self.proc)


@contextlib.contextmanager
def target(folder: Path) -> Iterator[Target]:
    service = Target(folder)
    try:
        yield service
    finally:
        service.close()
