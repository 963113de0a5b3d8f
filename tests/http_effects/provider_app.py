"""A small payments API on 127.0.0.1 whose ground truth counts objects, with faults.

``POST /v1/charges`` (JSON ``{"reference": ..., "amount": ...}``) creates a
charge; ``GET /v1/charges?reference=R`` lists the charges of a reference;
``GET /v1/charges/by-key/K`` finds the charge an idempotency key made.
With ``keys=True`` the provider honours the ``Idempotency-Key`` header the
way the IETF draft (and Stripe) describe it: a repeat of a finished key is
answered with the stored answer, a repeat while the first is still being
processed is answered ``409``. Without keys, every POST makes a new charge.

Faults are scripted per reference (``app.script(reference, *faults)``),
one-shot, consumed by that reference's POSTs in order (``None``: behave),
so a late request of one test can never take another test's fault. Each one
is what a real provider or the network between does:

- ``close_after_commit``: commit, then close the connection without a byte;
- ``reset_before_commit`` / ``reset_after_commit``: an RST instead of an answer;
- ``hang_after_commit``: commit, then answer nothing until the client gives up;
- ``error_before_commit`` / ``error_after_commit``: a ``500``;
- ``in_progress``: with keys, the connection is reset while the provider
  keeps working: repeats are answered ``409`` (twice), then the work commits
  and the stored answer is given; without keys, a ``409`` conflict;
- ``hold_before_commit`` / ``hold_after_commit``: set ``received`` (before
  or after committing) and answer nothing until the client's socket goes
  away (a process killed mid-request); the first never commits;
- ``redirect``: a ``307`` to the same endpoint, nothing committed;
- ``status:N``: answer status ``N`` with an error body, nothing committed.

Requests are served **one at a time, in the order their connections were
accepted**, each on a connection of its own: a verification that connects
after a request always sees what that request committed, however late the
machine schedules the server. A request that hangs (or is held) is handed
to a waiter thread once its commit is done, so the next ones are served.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import struct
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["ProviderApp"]

_REASONS = {
    400: "amount must be a positive integer",
    401: "invalid API key provided",
    403: "this key may not create charges",
    404: "no such endpoint",
    422: "reference is malformed",
    429: "too many requests",
}


@dataclass
class _Key:
    """What the provider remembers of one idempotency key."""

    pending: int = 0
    """Repeats still answered ``409`` (the first request is being processed)."""
    answer: tuple[int, dict[str, Any]] | None = None
    body: dict[str, Any] = field(default_factory=dict)


class ProviderApp:
    """The provider, served by a thread of its own (``with ProviderApp(...) as app``)."""

    def __init__(self, *, keys: bool, key_header: str = "Idempotency-Key") -> None:
        self.keys = keys
        self.key_header = key_header
        self.faults: dict[str, list[str | None]] = {}
        """The faults still scripted, by reference."""
        self.reasons = dict(_REASONS)
        """What a ``status:N`` fault says, by status."""
        self.charges: list[dict[str, Any]] = []
        self.posts: list[dict[str, Any]] = []
        """Every POST received: its reference, key header, fault."""
        self.received = threading.Event()
        """Set when a ``hold_*`` fault holds a request."""
        self._keys: dict[str, _Key] = {}
        self._lock = threading.Lock()
        self._stopping = False
        self._waiters: set[threading.Thread] = set()
        app = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                app._post(self)

            def do_GET(self) -> None:
                app._get(self)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ProviderApp:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        for waiter in list(self._waiters):
            waiter.join()

    def script(self, reference: str, *faults: str | None) -> None:
        """The faults of ``reference``'s next POSTs, in order."""
        with self._lock:
            self.faults[reference] = list(faults)

    # --- ground truth ---------------------------------------------------------

    def count(self, reference: str) -> int:
        """How many charges exist for ``reference``."""
        with self._lock:
            return sum(1 for c in self.charges if c["reference"] == reference)

    def add(self, reference: str) -> None:
        """A charge made by someone else (a duplicate already there)."""
        with self._lock:
            self._commit({"reference": reference, "amount": 1}, None)

    # --- the API --------------------------------------------------------------

    def _commit(self, body: dict[str, Any], key: str | None) -> dict[str, Any]:
        charge = {"id": f"ch_{len(self.charges) + 1}", "key": key, **body}
        self.charges.append(charge)
        return charge

    def _post(self, h: BaseHTTPRequestHandler) -> None:
        raw = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        sent_key = h.headers.get(self.key_header)
        key = sent_key if self.keys else None
        with self._lock:
            script = self.faults.get(str(body.get("reference")), [])
            fault = script.pop(0) if script else None
            self.posts.append({"reference": body.get("reference"), "key": sent_key, "fault": fault})
            state = self._keys.get(key) if key is not None else None
            if state is not None:
                if state.pending > 0:
                    state.pending -= 1
                    return _send(h, 409, {"error": {"message": "a request with this key is in progress"}})  # fmt: skip
                if state.answer is None:  # the work that was in progress ends now
                    state.answer = (201, self._commit(state.body, key))
                return _send(h, *state.answer)
            if fault == "redirect":  # "repeat it over there": a client that follows sends twice
                h.send_response(307)
                h.send_header("Location", "/v1/charges?again=1")
                h.send_header("Content-Length", "0")
                h.send_header("Connection", "close")
                h.end_headers()
                h.close_connection = True
                return None
            if fault is not None and fault.startswith("status:"):
                status = int(fault.partition(":")[2])
                return _send(h, status, {"error": {"message": self.reasons.get(status, "refused")}})
            if fault == "error_before_commit":
                return _send(h, 500, {"error": {"message": "internal error"}})
            if fault == "reset_before_commit":
                return _reset(h)
            if fault == "in_progress":
                if key is None:
                    return _send(h, 409, {"error": {"message": "a charge for this reference is being created"}})  # fmt: skip
                self._keys[key] = _Key(pending=2, body=body)
                return _reset(h)  # a proxy drops the connection; the provider works on
            if fault == "hold_before_commit":
                self.received.set()
            else:
                charge = self._commit(body, key)
                if key is not None:
                    self._keys[key] = _Key(answer=(201, charge))
        if fault is None:
            return _send(h, 201, charge)
        if fault == "error_after_commit":
            return _send(h, 500, {"error": {"message": "internal error after commit"}})
        if fault == "close_after_commit":
            h.close_connection = True  # no byte of an answer; the server closes (FIN)
            return None
        if fault == "reset_after_commit":
            return _reset(h)
        if fault == "hold_after_commit":
            self.received.set()
        self._hand_off(h)  # hang_after_commit, hold_*: answer nothing
        return None

    def _hand_off(self, h: BaseHTTPRequestHandler) -> None:
        """Answer nothing: a waiter keeps the connection open until the client
        closes its end (a timeout, a killed process); the server goes on."""
        sock: socket.socket = h.connection
        self._server.kept.add(sock)
        h.close_connection = True

        def wait() -> None:
            while not self._stopping:
                readable, _, _ = select.select([sock], [], [], 0.5)
                if readable:
                    break
            with contextlib.suppress(OSError):
                sock.close()
            self._waiters.discard(waiter)

        waiter = threading.Thread(target=wait, daemon=True)
        self._waiters.add(waiter)
        waiter.start()

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        with self._lock:
            if parts.path.startswith("/v1/charges/by-key/"):
                key = parts.path.rpartition("/")[2]
                found = [c for c in self.charges if c["key"] == key]
                if not found:
                    return _send(h, 404, {"error": {"message": "no charge for this key"}})
                return _send(h, 200, found[0])
            if parts.path == "/v1/charges":
                reference = parse_qs(parts.query).get("reference", [""])[0]
                found = [c for c in self.charges if c["reference"] == reference]
                return _send(h, 200, {"data": found})
        return _send(h, 404, {"error": {"message": "no such endpoint"}})


class _Server(HTTPServer):
    """One request at a time; a connection handed to a waiter is not closed here."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.kept: set[socket.socket] = set()

    def shutdown_request(self, request: Any) -> None:
        if request in self.kept:
            self.kept.discard(request)  # the waiter closes it
            return
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client gone mid-answer is expected
            super().handle_error(request, client_address)


def _send(h: BaseHTTPRequestHandler, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.send_header("Connection", "close")  # one request per connection
    h.end_headers()
    h.close_connection = True
    with contextlib.suppress(OSError):
        h.wfile.write(data)


def _reset(h: BaseHTTPRequestHandler) -> None:
    """Abort the connection with an RST (``SO_LINGER`` 0), not a FIN."""
    sock: socket.socket = h.connection
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    h.close_connection = True
    with contextlib.suppress(OSError):
        # The handler's file objects keep the socket object alive: closing the
        # descriptor itself is what makes the kernel send the RST now.
        fd = sock.detach()
        socket.close(fd)
