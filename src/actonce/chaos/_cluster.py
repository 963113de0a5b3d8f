"""A throwaway PostgreSQL cluster, and a process that restarts it now and then.

``actonce chaos --backend postgres --restart-server`` never restarts a server
it was given (it may be shared): it makes its own. :func:`throwaway_cluster`
runs ``initdb`` into a temporary folder (trust authentication, user
``postgres``), starts the server with ``pg_ctl`` on a free port of
127.0.0.1 (its socket in that folder, ``fsync`` off: the campaign kills
processes, not the machine), and on the way out, however the campaign ends,
stops it (``-m immediate``) and removes the folder. Run as root, the
PostgreSQL programs run as the ``postgres`` user (``runuser``), as
``initdb`` refuses root.

A :class:`Restarter` is a process of its own, forked before any worker: it
waits a random number of seconds in ``every`` (seeded), restarts the server
with ``pg_ctl restart``, alternating ``-m fast`` (clients are disconnected,
the server shuts down cleanly) and ``-m immediate`` (the server stops
without a shutdown checkpoint and recovers from its WAL on start), writes
one JSON line per restart to its log, and goes on until it is told to stop
(``SIGTERM``, which it reads only between restarts, so the server is never
left down).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pwd
import random
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["Cluster", "ClusterError", "Restarter", "find_bin", "throwaway_cluster"]

#: Seconds ``pg_ctl`` waits for a start or a stop.
PG_CTL_WAIT = 60


class ClusterError(RuntimeError):
    """``initdb`` or ``pg_ctl`` failed (the message ends with their last words)."""


def find_bin(bin_dir: str | None = None) -> str:
    """The folder of ``initdb`` and ``pg_ctl``.

    ``bin_dir``, else ``$ACTONCE_PG_BIN``, else the folder of a ``pg_ctl`` on
    ``PATH``, else the newest ``/usr/lib/postgresql/*/bin``.

    Raises:
        ValueError: none of them holds both programs.
    """
    candidates = [bin_dir] if bin_dir else []
    if not bin_dir:
        if os.environ.get("ACTONCE_PG_BIN"):
            candidates.append(os.environ["ACTONCE_PG_BIN"])
        on_path = shutil.which("pg_ctl")
        if on_path:
            candidates.append(os.path.dirname(on_path))
        versions = glob.glob("/usr/lib/postgresql/*/bin")
        candidates += sorted(versions, key=_version, reverse=True)
    for folder in candidates:
        if all(os.access(os.path.join(folder, p), os.X_OK) for p in ("initdb", "pg_ctl")):
            return folder
    raise ValueError(
        "no PostgreSQL programs (initdb, pg_ctl) found: pass --pg-bin or set $ACTONCE_PG_BIN"
    )


def _version(folder: str) -> tuple[int, ...]:
    name = os.path.basename(os.path.dirname(folder))
    return tuple(int(p) for p in name.split(".") if p.isdigit())


def _reachable(folder: str, user: pwd.struct_passwd) -> None:
    """Raise unless ``user`` may pass through every folder above ``folder``."""
    parent = os.path.dirname(os.path.abspath(folder))
    while True:
        st = os.stat(parent)
        ok = (
            st.st_mode & stat.S_IXOTH
            or (st.st_uid == user.pw_uid and st.st_mode & stat.S_IXUSR)
            or (st.st_gid == user.pw_gid and st.st_mode & stat.S_IXGRP)
        )
        if not ok:
            raise ValueError(
                f"the postgres user cannot reach {folder} (through {parent}): "
                "put the cluster in another folder"
            )
        if parent == os.path.dirname(parent):
            return
        parent = os.path.dirname(parent)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """One PostgreSQL cluster in ``folder``, run with the programs in ``bin_dir``."""

    def __init__(self, folder: str, bin_dir: str) -> None:
        self.folder = folder
        self.bin_dir = bin_dir
        self.data = os.path.join(folder, "data")
        self.log = os.path.join(folder, "server.log")
        self.port = 0
        self._options = ""
        self._as: list[str] = []
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                raise ValueError(
                    "initdb cannot run as root, and there is no postgres user"
                ) from None
            _reachable(folder, user)
            os.chown(folder, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    @property
    def dsn(self) -> str:
        """The URL of the cluster's ``postgres`` database (trust: no password)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _pg(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [*self._as, os.path.join(self.bin_dir, program), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            tail = " ".join((done.stderr or done.stdout).split())[-300:]
            raise ClusterError(f"{program} {' '.join(args[:3])}... failed: {tail}")
        return done

    def init(self) -> None:
        """``initdb``: trust authentication, user ``postgres``, UTF-8."""
        self._pg(
            "initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"
        )

    def start(self, tries: int = 5) -> None:
        """Start the server on a free port of 127.0.0.1 (another one if it was taken meanwhile)."""
        for attempt in range(tries):
            self.port = _free_port()
            self._options = (
                f"-p {self.port} -c listen_addresses=127.0.0.1 "
                f"-c unix_socket_directories={self.folder} -c fsync=off "
                "-c max_connections=300"
            )
            done = self._ctl("start", "-o", self._options, check=attempt == tries - 1)
            if done.returncode == 0:
                return

    def ensure_up(self) -> None:
        """Start the server again on its port if it is down (after a failed restart)."""
        self._ctl("start", "-o", self._options, check=False)

    def _ctl(self, action: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        wait = ["-w", "-t", str(PG_CTL_WAIT)]
        return self._pg(
            "pg_ctl", "-D", self.data, "-l", self.log, *wait, *args, action, check=check
        )

    def restart(self, mode: str) -> None:
        """``pg_ctl restart -m mode``: ``fast`` or ``immediate``; back up when it returns."""
        if mode not in ("fast", "immediate"):
            raise ValueError(f"restart mode must be fast or immediate, not {mode!r}")
        self._ctl("restart", "-m", mode)

    def log_tail(self, lines: int) -> list[str]:
        """The last lines of the server's log."""
        try:
            with open(self.log, encoding="utf-8", errors="replace") as fh:
                return fh.read().splitlines()[-lines:]
        except OSError:
            return []

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server (if it runs)."""
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self._ctl("stop", "-m", mode, check=False)


@contextlib.contextmanager
def throwaway_cluster(bin_dir: str | None = None, tmp_dir: str | None = None) -> Iterator[Cluster]:
    """A new cluster, started; stopped and removed on the way out, however it ends.

    Raises:
        ValueError: no PostgreSQL programs, or root without a ``postgres`` user.
        ClusterError: ``initdb`` or ``pg_ctl start`` failed (their last words).
    """
    programs = find_bin(bin_dir)
    folder = tempfile.mkdtemp(prefix="actonce-pg-", dir=tmp_dir)
    cluster: Cluster | None = None
    try:
        cluster = Cluster(folder, programs)
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        try:
            if cluster is not None:
                cluster.stop()
        finally:
            shutil.rmtree(folder, ignore_errors=True)


class Restarter:
    """A process that restarts ``cluster`` every ``every`` seconds (a random span).

    Args:
        cluster: the throwaway cluster (never a shared server).
        every: ``(low, high)`` seconds between the end of one restart and
            the next.
        seed: the random waits (and nothing else) depend on it.
        log_path: one JSON line per restart: ``n``, ``mode``, ``at`` (seconds
            since the restarter started), ``seconds`` (how long the restart
            took), ``error`` (when it failed).
    """

    def __init__(
        self, cluster: Cluster, every: tuple[float, float], seed: int, log_path: str
    ) -> None:
        self.cluster = cluster
        self.every = every
        self.seed = seed
        self.log_path = log_path
        self.pid: int | None = None

    def start(self) -> None:
        """Fork the restarter (before any worker, so that no worker is its parent)."""
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            code = 0
            try:
                self._loop()
            except BaseException:
                code = 3
                with contextlib.suppress(Exception), open(self.log_path, "a") as fh:
                    fh.write(json.dumps({"error": traceback.format_exc()}) + "\n")
            os._exit(code)
        self.pid = pid

    def _loop(self) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        rng = random.Random(f"actonce-chaos-restart:{self.seed}")
        started = time.monotonic()
        modes: Sequence[str] = ("fast", "immediate")
        n = 0
        while signal.sigtimedwait([signal.SIGTERM], rng.uniform(*self.every)) is None:
            mode = modes[n % 2]
            n += 1
            line: dict[str, Any] = {"n": n, "mode": mode, "at": time.monotonic() - started}
            begun = time.monotonic()
            try:
                self.cluster.restart(mode)
            except ClusterError as exc:
                line["error"] = str(exc)
                # Whatever state the restart left: the server must be up.
                self.cluster.ensure_up()
            line["seconds"] = time.monotonic() - begun
            if line["seconds"] > 5.0:
                # A slow restart: what the server said meanwhile.
                line["log"] = self.cluster.log_tail(12)
            with open(self.log_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line) + "\n")

    def restarts(self) -> int:
        """How many restarts its log holds so far."""
        return sum(1 for line in self._log() if "mode" in line)

    def _log(self) -> list[dict[str, Any]]:
        try:
            with open(self.log_path, encoding="utf-8") as fh:
                return [json.loads(line) for line in fh if line.strip()]
        except FileNotFoundError:
            return []

    def stop(self) -> list[dict[str, Any]]:
        """Stop the restarter (after its current restart) and return its log."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = None
        return self._log()
