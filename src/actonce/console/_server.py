"""Serve the console with uvicorn: in a background thread, or in the foreground.

Like the sandbox's server, :class:`ConsoleServer` binds its own socket first
(port 0 lets the OS choose), so ``.url`` is known before the server thread
starts; ``stop()`` asks uvicorn to exit, joins the thread and closes the
socket. Loopback only unless ``allow_remote`` says otherwise (then put it
behind TLS and pass ``secure_cookies``).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
from dataclasses import replace
from types import TracebackType
from typing import Any

import uvicorn

from actonce import Ledger

from ._app import create_app
from ._console import Console, Settings
from ._reviewers import Reviewers

__all__ = ["ConsoleServer", "check_host"]

_log = logging.getLogger(__name__)


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless ``allow_remote``."""
    if allow_remote:
        return
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(
            f"the console binds to loopback only, not {host!r}; pass allow_remote=True "
            "(--allow-remote) to serve other machines, behind TLS"
        )


def _config(app: Any) -> Any:
    return uvicorn.Config(
        app,
        ws="none",
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=2,
        server_header=False,
    )


class ConsoleServer:
    """The review console served by uvicorn in a background thread.

    Use it as a context manager, or call ``start()`` / ``stop()``. The
    ledger stays the caller's: the server never closes it.

    Args:
        ledger: the ledger to review.
        reviewers: who may sign in.
        settings: evidence roots, hold length, cookies.
        host: address to bind (loopback unless ``allow_remote``).
        port: port to bind; 0 lets the OS choose.
        allow_remote: permit a non-loopback ``host``.
    """

    def __init__(
        self,
        ledger: Ledger,
        reviewers: Reviewers,
        settings: Settings | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        allow_remote: bool = False,
    ) -> None:
        check_host(host, allow_remote)
        settings = settings or Settings()
        if host not in settings.allowed_hosts:
            settings = replace(settings, allowed_hosts=(*settings.allowed_hosts, host))
        self.console = Console(ledger, reviewers, settings)
        self.app = create_app(self.console)
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
            raise RuntimeError("the console is not running")
        host, port = self._sock.getsockname()[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    def start(self) -> ConsoleServer:
        """Bind, start the server thread and wait until it serves."""
        if self._thread is not None:
            raise RuntimeError("already started")
        self.bind()
        self._server = uvicorn.Server(_config(self.app))
        self._thread = threading.Thread(target=self._run, name="actonce-console", daemon=True)
        self._thread.start()
        # ``started`` flips inside uvicorn's loop; ``_ready`` is set only when the run
        # has ended: ended before it served is a failed start (not a started server).
        while not self._server.started:
            if self._ready.wait(0.01) and not self._server.started:
                self.stop()
                raise RuntimeError("the console failed to start") from self._error
        return self

    def _run(self) -> None:
        try:
            self._server.run(sockets=[self._sock])
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()

    def stop(self) -> None:
        """Stop serving, join the thread, free the port."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
            if self._thread.is_alive():
                _log.warning("console server thread did not stop in time")
            self._thread = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def bind(self) -> str:
        """Open the listening socket (once); answers the URL it serves."""
        if self._sock is None:
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
        return self.url

    def serve_forever(self) -> None:
        """Serve in the foreground until interrupted (the CLI's way)."""
        self.bind()
        assert self._sock is not None
        try:
            uvicorn.Server(_config(self.app)).run(sockets=[self._sock])
        finally:
            self.stop()

    def __enter__(self) -> ConsoleServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
