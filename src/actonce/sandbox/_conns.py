"""Connections as the sandbox sees them, and the three ways to lose a response.

A real backend that crashes after its commit, a restarting proxy or a load
balancer's idle timeout close the socket **without a single response byte**
(a FIN, or a TCP reset). Browsers treat that on a reused keep-alive socket
as "the server dropped an idle connection" and silently send the same POST
again on a new one. A response that dies after its headers is not resent.
The sandbox reproduces all three (``LostMode``):

- ``headers``: status line and headers, then the connection is dropped;
- ``close``: the connection is closed (FIN) without any response byte;
- ``reset``: the connection is reset (``SO_LINGER`` 0, RST), no response byte.

``close`` and ``reset`` need the transport of the request's connection,
which ASGI does not expose. ``tracking_protocol(connections)`` is uvicorn's
h11 protocol with two hooks: it registers each connection's transport by peer
address on ``connection_made`` and forgets it on ``connection_lost``; the app
looks up ``scope["client"]``. Without that registry (the app served by
another server) the two modes fall back to ``headers`` and say so in the log.

Everything here runs on the server's event-loop thread.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import logging
import socket
import struct
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = ["Connections", "LostMode", "lost_response", "tracking_protocol"]

_log = logging.getLogger(__name__)

Peer = tuple[str, int]


class LostMode(enum.StrEnum):
    """How a ``lost_response`` fault loses the answer (``mode`` in the JSON rule)."""

    HEADERS = "headers"
    """Send the status line and headers, then drop the connection."""
    CLOSE = "close"
    """Close the connection (FIN) without sending a single response byte."""
    RESET = "reset"
    """Reset the connection (TCP RST, ``SO_LINGER`` 0) without a response byte."""


class ConnectionDropped(Exception):
    """Raised after the response headers to make the server drop the socket."""


class _Conn:
    __slots__ = ("requests", "serial", "transport")

    def __init__(self, serial: int, transport: asyncio.Transport) -> None:
        self.serial = serial
        self.transport = transport
        self.requests = 0


class Connections:
    """Open connections by peer address: serial number, request count, transport."""

    def __init__(self) -> None:
        self._open: dict[Peer, _Conn] = {}
        self._serials = itertools.count(1)

    def opened(self, peer: Peer | None, transport: asyncio.Transport) -> None:
        """A connection was accepted (called by the protocol)."""
        if peer is not None:
            self._open[peer] = _Conn(next(self._serials), transport)

    def lost(self, peer: Peer | None, transport: asyncio.Transport) -> None:
        """A connection ended (called by the protocol)."""
        if peer is not None and peer in self._open and self._open[peer].transport is transport:
            del self._open[peer]

    def note_request(self, client: Any) -> tuple[int | None, int | None]:
        """Count a request on its connection: ``(connection serial, n-th request on it)``.

        ``(None, None)`` when the connection is not tracked. A second
        request on a connection (n >= 2) means the client reused it
        (keep-alive).
        """
        conn = self._find(client)
        if conn is None:
            return None, None
        conn.requests += 1
        return conn.serial, conn.requests

    def _find(self, client: Any) -> _Conn | None:
        if not client:  # ASGI's scope["client"]: (host, port) or None
            return None
        return self._open.get((str(client[0]), int(client[1])))

    def drop(self, client: Any, *, reset: bool) -> bool:
        """Close (FIN) or reset (RST) the client's connection without writing.

        Returns False when the connection is not tracked.
        """
        conn = self._find(client)
        if conn is None or conn.transport.is_closing():
            return False
        if reset:
            sock = conn.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.transport.abort()
        else:
            conn.transport.close()
        return True


class _HeadersThenDrop(Response):
    """Start a response that never finishes: headers out, then the drop."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", b"4096"),
                ],
            }
        )
        raise ConnectionDropped


class _NoBytes(Response):
    """Close or reset the connection without writing anything."""

    def __init__(self, connections: Connections, reset: bool) -> None:
        super().__init__()
        self._connections = connections
        self._reset = reset

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._connections.drop(scope.get("client"), reset=self._reset):
            _log.warning(
                "lost_response mode %s needs the sandbox's connection registry "
                "(SandboxServer or serve); sending headers then dropping instead",
                "reset" if self._reset else "close",
            )
            await _HeadersThenDrop()(scope, receive, send)
            return
        # Wait until the server has seen the connection go (it answers
        # receive() with http.disconnect), so that it writes nothing at all.
        while (await receive())["type"] != "http.disconnect":
            pass


def lost_response(mode: LostMode, connections: Connections) -> Response:
    """The response of a ``lost_response`` fault in the given mode."""
    if mode is LostMode.HEADERS:
        return _HeadersThenDrop()
    return _NoBytes(connections, reset=mode is LostMode.RESET)


def tracking_protocol(connections: Connections) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, registering every connection in ``connections``."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TrackingH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            connections.opened(self.client, transport)

        def connection_lost(self, exc: Exception | None) -> None:
            connections.lost(self.client, self.transport)
            super().connection_lost(exc)

    return TrackingH11Protocol
