"""Lakeside Inn: a second, small hotel site — not the sandbox's booking world.

It is what "your own site" looks like to an agent written from the docs
alone (docs/booking.md, ``examples/hotel_agent.py``): its own pages, labels
and rules, nothing shared with the rest of the sandbox.

- Sign in at ``/signin`` (labels *Email*, *Password*, button *Log in*); the
  signed-in guest is shown as ``<span class="guest" data-email=...>`` on every
  page. Everything else needs the session cookie (pages redirect to the
  sign-in, the API answers 401).
- Rooms at ``/``; a room's page ``/rooms/<room>?arrive=&nights=&reference=&request_id=``
  has the *Hold this room* form. A hold keeps the room for
  :data:`HOLD_SECONDS` and **cannot be released**: it lapses on its own.
- A held room's page ``/holds/<id>?request_id=`` has *Pay now* (the card on
  file: no card number is ever typed); a payment's page
  ``/payments/<id>?request_id=`` has *Confirm booking* and, while the payment
  is only authorized, *Void payment*; a booking's page has *Email me the
  confirmation*.
- The provider's idempotency key is the form field ``request_id``: a UUID
  (``8-4-4-4-12`` hex digits), anything else is refused (400). A second
  submit with a ``request_id`` already used answers with the object the first
  one made.
- The JSON lookups, with the session's cookie: ``/api/holds``,
  ``/api/payments``, ``/api/bookings`` (``?reference=`` — the guest's own
  reference given with the hold) and ``/api/messages?booking=``; amounts in
  cents. ``LakesideInn.truth()`` counts everything, independently of any
  ledger.
- Knobs for tests: ``set_rate(room, cents)``, ``refuse_bookings``,
  ``advance(seconds)`` (the inn's clock: holds expire without a wait).
"""

from __future__ import annotations

import html
import re
import secrets
import socket
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

__all__ = ["GUESTS", "HOLD_SECONDS", "LakesideInn", "LakesideServer"]

HOLD_SECONDS = 900.0
"""How long a hold keeps a room; then it lapses (there is no release button)."""

GUESTS = {"mia@lakeside.example": ("Mia", "lakeside-password")}
"""The inn's guests: email -> (name, password). A test site's only account."""

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass
class _Thing:
    """A hold, a payment, a booking or a message, as the inn keeps it."""

    id: str
    reference: str
    status: str
    amount: int = 0
    room: str = ""
    arrive: str = ""
    nights: int = 0
    parent: str = ""  # the hold of a payment, the payment of a booking, the booking of a message
    to: str = ""
    expires_at: float = 0.0


class LakesideInn:
    """The inn's state and its web app (``.app``, a Starlette application)."""

    def __init__(self) -> None:
        self.rates = {"lake-view": 12000, "garden": 9000}  # cents per night
        self.refuse_bookings = False
        self._offset = 0.0
        self._lock = threading.Lock()
        self._things: dict[str, list[_Thing]] = {"H": [], "P": [], "LK": [], "M": []}
        self._by_request: dict[str, _Thing] = {}
        self._sessions: dict[str, str] = {}
        self.posts = 0  # every POST that reached a form handler
        self.app = Starlette(routes=[
            Route("/signin", self._signin_form, methods=["GET"]),
            Route("/signin", self._signin, methods=["POST"]),
            Route("/", self._rooms),
            Route("/rooms/{room}", self._room),
            Route("/holds", self._hold, methods=["POST"]),
            Route("/holds/{id}", self._hold_page),
            Route("/payments", self._pay, methods=["POST"]),
            Route("/payments/{id}", self._payment_page),
            Route("/payments/{id}/void", self._void, methods=["POST"]),
            Route("/bookings", self._book, methods=["POST"]),
            Route("/bookings/{id}", self._booking_page),
            Route("/bookings/{id}/email", self._email, methods=["POST"]),
            Route("/api/{what}", self._api),
        ])  # fmt: skip

    # -- knobs and ground truth ------------------------------------------------------------

    def now(self) -> float:
        return time.time() + self._offset

    def advance(self, seconds: float) -> None:
        """Move the inn's clock on (holds lapse without anyone waiting)."""
        self._offset += seconds

    def set_rate(self, room: str, cents: int) -> None:
        self.rates[room] = cents

    def truth(self) -> dict[str, list[dict[str, Any]]]:
        """Everything the inn made, by kind (holds with their status as of now)."""
        with self._lock:
            return {
                kind: [asdict(self._status(t)) for t in self._things[prefix]]
                for kind, prefix in (("holds", "H"), ("payments", "P"), ("bookings", "LK"),
                                     ("messages", "M"))
            }  # fmt: skip

    # -- helpers ---------------------------------------------------------------------------

    def _status(self, thing: _Thing) -> _Thing:
        if thing.id.startswith("H-") and thing.status == "held" and self.now() >= thing.expires_at:
            thing.status = "expired"
        return thing

    def _find(self, thing_id: str) -> _Thing | None:
        prefix = thing_id.split("-", 1)[0]
        found = [t for t in self._things.get(prefix, []) if t.id == thing_id]
        return self._status(found[0]) if found else None

    def _make(self, prefix: str, request_id: str | None, **fields: Any) -> _Thing:
        if request_id is not None and request_id in self._by_request:
            return self._by_request[request_id]  # the first submit's object
        thing = _Thing(f"{prefix}-{len(self._things[prefix]) + 1}", **fields)
        self._things[prefix].append(thing)
        if request_id is not None:
            self._by_request[request_id] = thing
        return thing

    def _guest(self, request: Request) -> str | None:
        return self._sessions.get(request.cookies.get("inn", ""))

    def _page(self, guest: str | None, title: str, body: str, status: int = 200) -> Response:
        who = ""
        if guest is not None:
            name = html.escape(GUESTS[guest][0])
            who = f'<span class="guest" data-email="{html.escape(guest)}">{name}</span>'
        text = (
            f"<!doctype html><html><head><title>{title} · Lakeside Inn</title></head><body>"
            f"<header><b>Lakeside Inn</b> {who}</header><main><h1>{title}</h1>{body}</main>"
            "</body></html>"
        )
        return HTMLResponse(text, status)

    @staticmethod
    def _form(action: str, button: str, testid: str, **hidden: Any) -> str:
        fields = "".join(
            f'<input type="hidden" name="{n}" value="{html.escape(str(v))}">'
            for n, v in hidden.items()
        )
        return (
            f'<form method="post" action="{action}" data-testid="{testid}">{fields}'
            f"<button>{button}</button></form>"
        )

    async def _posted(self, request: Request) -> tuple[str | None, dict[str, str], Response | None]:
        """The guest and the form of a POST; a response instead when it is refused."""
        self.posts += 1
        guest = self._guest(request)
        form = {k: str(v) for k, v in (await request.form()).items()}
        if guest is None:
            return None, form, RedirectResponse("/signin", 303)
        token = form.get("request_id")
        if token is not None and not _UUID.match(token):
            why = "request_id must be a UUID (8-4-4-4-12 hexadecimal digits)"
            return guest, form, self._refused(guest, why, 400)
        return guest, form, None

    def _shown(self, request: Request) -> tuple[str | None, _Thing | Response]:
        """The guest and the object a page shows; a response instead when there is none to show."""
        guest = self._guest(request)
        if guest is None:
            return None, RedirectResponse("/signin", 303)
        thing = self._find(request.path_params["id"])
        return guest, thing if thing is not None else self._refused(guest, "not found", 404)

    def _refused(self, guest: str | None, why: str, status: int = 409) -> Response:
        body = f'<p data-testid="refused">{html.escape(why)}</p>'
        return self._page(guest, "Not possible", body, status)

    # -- pages -----------------------------------------------------------------------------

    async def _signin_form(self, request: Request) -> Response:
        body = (
            '<form method="post" action="/signin"><label for="email">Email</label>'
            '<input id="email" name="email"><label for="pw">Password</label>'
            '<input id="pw" name="password" type="password"><button>Log in</button></form>'
        )
        return self._page(None, "Sign in", body)

    async def _signin(self, request: Request) -> Response:
        form = await request.form()
        email, password = str(form.get("email", "")), str(form.get("password", ""))
        if GUESTS.get(email, ("", None))[1] != password:
            return self._page(None, "Sign in", "<p>Wrong email or password.</p>", 401)
        token = secrets.token_urlsafe(16)
        self._sessions[token] = email
        response = RedirectResponse("/", 303)
        response.set_cookie("inn", token, httponly=True, samesite="lax")
        return response

    async def _rooms(self, request: Request) -> Response:
        guest = self._guest(request)
        if guest is None:
            return RedirectResponse("/signin", 303)
        rows = "".join(
            f"<li data-room='{r}'>{r}: {c / 100:.2f} EUR a night</li>"
            for r, c in self.rates.items()
        )
        return self._page(guest, "Rooms", f"<ul>{rows}</ul>")

    async def _room(self, request: Request) -> Response:
        guest, room, q = self._guest(request), request.path_params["room"], request.query_params
        if guest is None:
            return RedirectResponse("/signin", 303)
        if room not in self.rates:
            return self._refused(guest, f"no room {room}", 404)
        fields = {n: q.get(n, "") for n in ("arrive", "nights", "reference", "request_id")}
        form = self._form("/holds", "Hold this room", "hold-form", room=room, **fields)
        return self._page(guest, f"The {room} room", form)

    async def _hold(self, request: Request) -> Response:
        guest, form, refused = await self._posted(request)
        if refused is not None:
            return refused
        room, nights = form.get("room", ""), int(form.get("nights") or 0)
        if room not in self.rates or nights < 1 or not form.get("reference"):
            return self._refused(guest, "a room, a reference and at least one night", 400)
        with self._lock:
            hold = self._make(
                "H", form.get("request_id"), reference=form["reference"], status="held",
                amount=self.rates[room] * nights, room=room, arrive=form.get("arrive", ""),
                nights=nights, expires_at=self.now() + HOLD_SECONDS,
            )  # fmt: skip
        return RedirectResponse(f"/holds/{hold.id}", 303)

    async def _hold_page(self, request: Request) -> Response:
        guest, hold = self._shown(request)
        if isinstance(hold, Response):
            return hold
        body = f'<p data-testid="hold">{hold.id}: {hold.status}, {hold.amount / 100:.2f} EUR</p>'
        if hold.status == "held":
            token = request.query_params.get("request_id", "")
            body += self._form("/payments", "Pay now", "pay-form", hold_id=hold.id,
                               amount=hold.amount, request_id=token)  # fmt: skip
        return self._page(guest, "Your hold", body)

    async def _pay(self, request: Request) -> Response:
        guest, form, refused = await self._posted(request)
        if refused is not None:
            return refused
        with self._lock:
            hold = self._find(form.get("hold_id", ""))
            if hold is None or hold.status != "held":
                return self._refused(guest, "the hold is gone: hold the room again")
            pay = self._make("P", form.get("request_id"), reference=hold.reference,
                             status="authorized", amount=hold.amount, parent=hold.id)  # fmt: skip
        return RedirectResponse(f"/payments/{pay.id}", 303)

    async def _payment_page(self, request: Request) -> Response:
        guest, pay = self._shown(request)
        if isinstance(pay, Response):
            return pay
        body = f'<p data-testid="payment">{pay.id}: {pay.status}, {pay.amount / 100:.2f} EUR</p>'
        if pay.status == "authorized":
            token = request.query_params.get("request_id", "")
            body += self._form("/bookings", "Confirm booking", "book-form", payment_id=pay.id,
                               request_id=token)  # fmt: skip
            body += self._form(f"/payments/{pay.id}/void", "Void payment", "void-form")
        return self._page(guest, "Your payment", body)

    async def _void(self, request: Request) -> Response:
        guest, _form, refused = await self._posted(request)
        if refused is not None:
            return refused
        with self._lock:
            pay = self._find(request.path_params["id"])
            if pay is None or pay.status not in ("authorized", "voided"):
                return self._refused(guest, "only an authorized payment can be voided")
            pay.status = "voided"
        return RedirectResponse(f"/payments/{pay.id}", 303)

    async def _book(self, request: Request) -> Response:
        guest, form, refused = await self._posted(request)
        if refused is not None:
            return refused
        with self._lock:
            pay = self._find(form.get("payment_id", ""))
            if self.refuse_bookings or pay is None or pay.status != "authorized":
                return self._refused(guest, "the room is no longer available")
            hold = self._find(pay.parent)
            assert hold is not None
            booking = self._make("LK", form.get("request_id"), reference=pay.reference,
                                 status="confirmed", amount=pay.amount, room=hold.room,
                                 arrive=hold.arrive, nights=hold.nights, parent=pay.id)  # fmt: skip
            pay.status, hold.status = "captured", "booked"
        return RedirectResponse(f"/bookings/{booking.id}", 303)

    async def _booking_page(self, request: Request) -> Response:
        guest, booking = self._shown(request)
        if isinstance(booking, Response):
            return booking
        body = f'<p data-testid="booking">{booking.id}: {booking.status}</p>'
        body += self._form(f"/bookings/{booking.id}/email", "Email me the confirmation", "email")
        return self._page(guest, "Your booking", body)

    async def _email(self, request: Request) -> Response:
        guest, _form, refused = await self._posted(request)
        if refused is not None:
            return refused
        with self._lock:
            booking = self._find(request.path_params["id"])
            if booking is None:
                return self._refused(guest, "no such booking", 404)
            sent = self._make("M", None, reference=booking.reference, status="sent",
                              parent=booking.id, to=guest or "")  # fmt: skip
        return self._page(guest, "Sent", f'<p data-testid="message">{sent.id} sent</p>')

    async def _api(self, request: Request) -> Response:
        if self._guest(request) is None:
            return JSONResponse({"error": "sign in first"}, 401)
        prefix = {"holds": "H", "payments": "P", "bookings": "LK", "messages": "M"}.get(
            request.path_params["what"]
        )
        if prefix is None:
            return JSONResponse({"error": "no such lookup"}, 404)
        q = request.query_params
        with self._lock:
            found = [self._status(t) for t in self._things[prefix]]
        if "reference" in q:
            found = [t for t in found if t.reference == q["reference"]]
        if "booking" in q:
            found = [t for t in found if t.parent == q["booking"]]
        page = {"H": "holds", "P": "payments", "LK": "bookings", "M": "bookings"}[prefix]
        return JSONResponse([
            {**asdict(t), "url": f"/{page}/{t.parent if prefix == 'M' else t.id}"
                                 + (f"#{t.id}" if prefix == "M" else "")}
            for t in found
        ])  # fmt: skip


class LakesideServer:
    """Lakeside Inn served by uvicorn in a background thread, on a free port of 127.0.0.1.

    ``with LakesideServer() as inn_server: inn_server.url, inn_server.inn.truth()``.
    """

    def __init__(self) -> None:
        self.inn = LakesideInn()
        self._sock: socket.socket | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._sock is None:
            raise RuntimeError("the Lakeside Inn server is not running")
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self) -> LakesideServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self._sock = sock
        config = uvicorn.Config(self.inn.app, log_level="warning", access_log=False,
                                lifespan="off", ws="none")  # fmt: skip
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="lakeside", daemon=True
        )
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the Lakeside Inn server failed to start")
            time.sleep(0.01)  # uvicorn says it serves by a flag only
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> LakesideServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
