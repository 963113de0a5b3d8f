"""Run the sandbox with uvicorn: in a background thread, or in the foreground.

``SandboxServer`` binds its own socket first (port 0 lets the OS choose), so
``.url`` is known before the server thread starts and no port is ever raced
for. ``stop()`` wakes every injected delay, asks uvicorn to exit, joins the
thread and closes the socket.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import uvicorn

from ._app import Sandbox, create_app
from ._conns import tracking_protocol
from ._db import SandboxDB
from ._faults import FaultRule

__all__ = ["SandboxServer", "serve"]

_log = logging.getLogger(__name__)


class _DropFilter(logging.Filter):
    """Hide uvicorn's complaint about the connection we drop on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "without completing response" not in record.getMessage()


def _check_host(host: str, allow_remote: bool) -> None:
    if allow_remote:
        return
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(
            f"the sandbox is a test target and binds to loopback only, not {host!r}; "
            "pass allow_remote=True to force it"
        )


def _config(app: Sandbox, **kwargs: Any) -> Any:
    logging.getLogger("uvicorn.error").addFilter(_DropFilter())
    return uvicorn.Config(
        app,
        # h11, registering each connection's transport: a lost_response can then
        # close or reset the request's own socket without writing a byte.
        http=tracking_protocol(app.connections),
        # Idle keep-alive connections stay open for 30 s (uvicorn's default is
        # 5 s), like most real servers: a browser then reuses them for a submit,
        # which is when it resends a POST whose connection died without an answer.
        timeout_keep_alive=30,
        ws="none",
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=2,
        **kwargs,
    )


class SandboxServer:
    """The sandbox app served by uvicorn in a background thread.

    Use it as a context manager, or call ``start()`` / ``stop()``.

    Args:
        db: database file path (or ``SandboxDB``); ``None`` keeps it in memory.
        seed: seed of the fault plan's RNG.
        faults: initial fault rules.
        host: loopback address to bind.
        port: port to bind; 0 lets the OS choose.
        allow_remote: permit a non-loopback ``host``.
    """

    def __init__(
        self,
        db: SandboxDB | str | Path | None = None,
        *,
        seed: int = 0,
        faults: list[FaultRule] | tuple[FaultRule, ...] = (),
        host: str = "127.0.0.1",
        port: int = 0,
        allow_remote: bool = False,
    ) -> None:
        _check_host(host, allow_remote)
        self.sandbox = create_app(db, seed=seed, faults=faults)
        self._host = host
        self._port = port
        self._sock: socket.socket | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:54321`` (only once started)."""
        if self._sock is None:
            raise RuntimeError("the sandbox server is not running")
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}"

    @property
    def db(self) -> SandboxDB:
        """The ground-truth database."""
        return self.sandbox.db

    def start(self) -> SandboxServer:
        """Bind, start the server thread and wait until it serves."""
        if self._thread is not None:
            raise RuntimeError("already started")
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        # IPPROTO_TCP, not the default 0: asyncio turns Nagle off (TCP_NODELAY)
        # only on connections of a TCP-protocol socket; with it on, a small
        # page's body waited for the ACK of its headers (~40 ms delayed ACK).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self._host, self._port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        self._sock = sock
        self._server = uvicorn.Server(_config(self.sandbox))
        self._thread = threading.Thread(target=self._run, name="actonce-sandbox", daemon=True)
        self._thread.start()
        # ``started`` flips inside uvicorn's loop; poll it on a short event wait.
        while not self._ready.wait(0.01):
            if self._server.started:
                break
            if not self._thread.is_alive():
                self.stop()
                raise RuntimeError("the sandbox server failed to start") from self._error
        return self

    def _run(self) -> None:
        try:
            self._server.run(sockets=[self._sock])
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()

    def stop(self) -> None:
        """Stop serving, cancel injected delays, join the thread, free the port."""
        self.sandbox.closing.set()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
            if self._thread.is_alive():
                _log.warning("sandbox server thread did not stop in time")
            self._thread = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> SandboxServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def serve(
    host: str = "127.0.0.1",
    port: int = 8765,
    db: str | Path | None = None,
    seed: int = 0,
    *,
    faults: list[FaultRule] | tuple[FaultRule, ...] = (),
    allow_remote: bool = False,
) -> None:
    """Serve the sandbox in the foreground until interrupted (Ctrl-C).

    Args:
        host: loopback address to bind.
        port: TCP port.
        db: database file; ``None`` keeps it in memory.
        seed: seed of the fault plan's RNG.
        faults: initial fault rules.
        allow_remote: permit a non-loopback ``host``.
    """
    _check_host(host, allow_remote)
    app = create_app(db, seed=seed, faults=faults)
    server = uvicorn.Server(_config(app, host=host, port=port))
    try:
        server.run()
    finally:
        app.closing.set()
