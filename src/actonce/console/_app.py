"""The console's web app: its routes, each behind the guard, and their handlers.

Server-rendered HTML (Jinja2, autoescaped), forms that work without
JavaScript, a few lines of script as progressive enhancement. Every route
is listed in :func:`routes` and wrapped by :func:`~._guard.guarded` in one
place, so none can be added unguarded; ``tests/console/test_guard.py``
walks them all from the app's own router.

There is no route that performs an effect, and none that re-runs one: the
console records decisions (``Ledger.resolve``, ``ledger.operations.decide``),
answers approvals (``ledger.approvals.answer``), takes and lets go of review
holds (leases), and runs a verifier read-only. A decision to retry an undo is
carried out by the operation's next pass, not by the console.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from actonce import ActOnceError, Resolution, UnknownEffect, UsageError

from ._console import Console, key_of
from ._decide import CLASSES, reason_text, verify_once
from ._evidence import FILES, HTML_CSP, locate, read_text
from ._guard import CSP, LOGIN_COOKIE, SESSION_COOKIE, SecurityHeaders, guarded, safe_next
from ._operations import CHOICES as DECISIONS
from ._operations import hold_key, operation_page
from ._receipts import receipt_page, receipts_page
from ._sessions import LOGIN_NONCE_SECONDS, Session
from ._views import (
    approvals_page,
    effect_page,
    hold_view,
    overview_page,
    packet_page,
    queue_page,
)
from ._words import at

__all__ = ["create_app", "routes"]

HERE = Path(__file__).resolve().parent
STATIC = {"console.css": "text/css; charset=utf-8", "console.js": "text/javascript; charset=utf-8"}
_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(HERE / "templates")),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.globals["at"] = at


@functools.cache
def _css() -> str:
    return (HERE / "static" / "console.css").read_text(encoding="utf-8")


Handler = Callable[[Request], Any]


class App:
    """The handlers, bound to one console."""

    def __init__(self, console: Console) -> None:
        self.c = console

    # --- helpers -------------------------------------------------------------------------

    def _session(self, request: Request) -> Session:
        session: Session = request.state.session
        return session

    def _page(
        self, request: Request, template: str, code: int = 200, **values: Any
    ) -> HTMLResponse:
        session: Session | None = request.state.session
        body = _ENV.get_template(template).render(
            reviewer=session.reviewer if session else "",
            csrf=session.csrf if session else "",
            flash=session.take_flash() if session else [],
            ledger=self.c.ledger.url,
            **values,
        )
        return HTMLResponse(body, status_code=code)

    def _back(self, request: Request, text: str, to: str) -> Response:
        self._session(request).say(text)
        return RedirectResponse(to, status_code=303)

    async def _view(
        self, request: Request, template: str, view: Callable[..., dict[str, Any]], *args: Any
    ) -> HTMLResponse:
        # Read the ledger and render in one worker thread: one hop off the loop.
        def work() -> HTMLResponse:
            return self._page(request, template, **view(*args))

        page: HTMLResponse = await run_in_threadpool(work)
        return page

    def _missing(self, request: Request, what: str) -> HTMLResponse:
        return self._page(request, "missing.html", 404, what=what)

    def _secure(self, request: Request) -> bool:
        return self.c.settings.secure_cookies or request.url.scheme == "https"

    # --- sign-in ---------------------------------------------------------------------------

    def _login_page(
        self, request: Request, *, error: str = "", status: int = 200, name: str = ""
    ) -> Response:
        nonce = self.c.sessions.nonce()
        style = secrets.token_urlsafe(16)
        body = _ENV.get_template("login.html").render(
            nonce=nonce,
            style_nonce=style,
            css=_css(),
            error=error,
            name=name,
            next=safe_next(request.query_params.get("next") or request.state.form.get("next")),
            token_hint=not self.c.reviewers.names,
        )
        response = HTMLResponse(body, status_code=status)
        # The login page styles itself inline (no other route is public), by nonce.
        response.headers["content-security-policy"] = CSP.replace(
            "style-src 'self'", f"style-src 'nonce-{style}'"
        )
        response.set_cookie(
            LOGIN_COOKIE, nonce, max_age=int(LOGIN_NONCE_SECONDS), path="/login",
            httponly=True, samesite="strict", secure=self._secure(request),
        )  # fmt: skip
        return response

    async def login_form(self, request: Request) -> Response:
        """The sign-in form (the only page open without a session)."""
        if request.state.session is not None:
            return RedirectResponse("/", status_code=303)
        return self._login_page(request)

    async def login(self, request: Request) -> Response:
        """Check a name and a password (or a one-time token); start a session."""
        form = request.state.form
        name, secret = form.get("name", "").strip(), form.get("password", "")
        client = request.client.host if request.client else ""
        ok = bool(name and secret) and await run_in_threadpool(
            self.c.reviewers.check, name, secret, client
        )
        if not ok:
            error = (
                "Wrong name or password. After 5 wrong tries from this address, this name is "
                "refused from here for 15 minutes (elsewhere it still signs in)."
            )
            return self._login_page(request, error=error, status=401, name=name)
        self.c.sessions.end(request.cookies.get(SESSION_COOKIE))
        session = self.c.sessions.start(name)
        response = RedirectResponse(safe_next(form.get("next")), status_code=303)
        response.set_cookie(
            SESSION_COOKIE, session.id, path="/", httponly=True, samesite="strict",
            secure=self._secure(request),
        )  # fmt: skip
        response.delete_cookie(LOGIN_COOKIE, path="/login", httponly=True, samesite="strict")
        return response

    async def logout(self, request: Request) -> Response:
        """End the session at once."""
        self.c.sessions.end(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return response

    # --- pages -------------------------------------------------------------------------

    async def queue(self, request: Request) -> Response:
        """The review queue."""
        q = request.query_params
        reviewer = self._session(request).reviewer
        status, kind = q.get("status", "review"), q.get("kind", "").strip()
        return await self._view(
            request, "queue.html", queue_page, self.c, reviewer, status, kind, q.get("after")
        )

    async def overview(self, request: Request) -> Response:
        """Every status counted."""
        return await self._view(request, "overview.html", overview_page, self.c)

    async def effect(self, request: Request) -> Response:
        """One effect, one screen."""
        key = key_of(request.path_params["ref"])
        reviewer = self._session(request).reviewer
        try:
            return await self._view(request, "effect.html", effect_page, self.c, key, reviewer)
        except UnknownEffect:
            return self._missing(request, "No such effect in this ledger.")

    async def approvals(self, request: Request) -> Response:
        """Approval packets."""
        status = request.query_params.get("status", "pending")
        return await self._view(request, "approvals.html", approvals_page, self.c, status)

    async def packet(self, request: Request) -> Response:
        """One approval packet."""
        packet_id = request.path_params["packet_id"]
        reviewer = self._session(request).reviewer
        try:
            return await self._view(
                request, "packet.html", packet_page, self.c, packet_id, reviewer
            )
        except ActOnceError:
            return self._missing(request, "No such approval packet in this ledger.")

    async def receipts(self, request: Request) -> Response:
        """Receipts, newest first."""
        before = request.query_params.get("before")
        return await self._view(request, "receipts.html", receipts_page, self.c, before)

    async def receipt(self, request: Request) -> Response:
        """One receipt: the user's text, its steps, the operators' JSON."""
        op_id = key_of(request.path_params["op"])

        def work() -> HTMLResponse | None:
            found = receipt_page(self.c, op_id)
            return None if found is None else self._page(request, "receipt.html", **found)

        page = await run_in_threadpool(work)
        return page if page is not None else self._missing(request, "No receipt for that id.")

    async def operation(self, request: Request) -> Response:
        """One operation, one screen: did it happen, how we know, what next, who acts."""
        op_id = key_of(request.path_params["op"])
        reviewer = self._session(request).reviewer

        def work() -> HTMLResponse:
            hold = hold_view(self.c, hold_key(op_id), reviewer)
            values = operation_page(self.c, op_id, reviewer, hold)
            return self._page(request, "operation.html", **values)

        try:
            page: HTMLResponse = await run_in_threadpool(work)
        except UsageError:
            return self._missing(request, "No such operation in this ledger.")
        return page

    async def evidence(self, request: Request) -> Response:
        """One evidence file, if the effect's history names its folder (see _evidence)."""
        key = key_of(request.path_params["ref"])
        seq, name = int(request.path_params["seq"]), str(request.path_params["name"])

        def read() -> tuple[bytes | str, str] | None:
            record = self.c.ledger.find(key)
            path = locate(
                self.c.ledger.events(record.key), seq, name, self.c.settings.evidence_roots
            )
            if path is None:
                return None
            if name.endswith(".png"):
                return path.read_bytes(), FILES[name]
            return read_text(path), FILES[name]

        try:
            found = await run_in_threadpool(read)
        except (UnknownEffect, OSError):
            found = None
        if found is None:
            return self._missing(request, "No such evidence file for this effect.")
        body, kind = found
        response = Response(body, media_type=kind)
        response.headers["content-disposition"] = f'inline; filename="{name}"'
        if name == "page.html":
            response.headers["content-security-policy"] = HTML_CSP
        return response

    async def static(self, request: Request) -> Response:
        """The console's own stylesheet and script."""
        name = request.path_params["name"]
        if name not in STATIC:
            return self._missing(request, "No such file.")
        body = await run_in_threadpool((HERE / "static" / name).read_bytes)
        return Response(body, media_type=STATIC[name])

    # --- decisions ---------------------------------------------------------------------

    async def hold(self, request: Request) -> Response:
        """Hold an item while deciding (or hold it longer)."""
        reviewer = self._session(request).reviewer
        key = key_of(request.path_params["ref"])
        to = f"/effects/{request.path_params['ref']}"

        def take() -> str:
            record = self.c.ledger.find(key)
            state = self.c.holds.take(record.key, reviewer)
            if state.mine and state.here:
                return "You hold this item: the decision is yours until the hold ends."
            return f"Held by {state.holder}: you can read it, not decide it."

        return await self._act(request, take, to)

    async def release(self, request: Request) -> Response:
        """Let an item go without deciding."""
        reviewer = self._session(request).reviewer
        key = key_of(request.path_params["ref"])

        def let_go() -> str:
            record = self.c.ledger.find(key)
            self.c.holds.release(record.key, reviewer)
            return "You let the item go; anyone may take it."

        return await self._act(request, let_go, f"/effects/{request.path_params['ref']}")

    async def resolve(self, request: Request) -> Response:
        """Record the holder's decision (identity: the session's reviewer)."""
        reviewer = self._session(request).reviewer
        form = request.state.form
        ref = request.path_params["ref"]
        to = f"/effects/{ref}"
        choice = CLASSES.get(form.get("class", ""))
        text = form.get("reason", "").strip()
        result_ref = form.get("result_ref", "").strip() or None
        shown = form.get("attempt", "")
        attempt = int(shown) if shown.isdigit() and 0 < len(shown) < 10 else None
        if choice is None:
            return self._back(request, "Nothing recorded: choose what you found.", to)
        if not text:
            return self._back(request, "Nothing recorded: a decision needs its reason.", to)
        if choice.needs_ref and not result_ref:
            return self._back(request, f"Nothing recorded: '{choice.label}' names the result.", to)
        if attempt is None or attempt < 1:
            return self._back(request, "Nothing recorded: the page did not say which attempt.", to)

        def decide() -> str:
            record = self.c.ledger.find(key_of(ref))
            if not self.c.holds.confirm(record.key, reviewer):
                return "Nothing recorded: hold the item first (your hold ended, or is not here)."
            seen = self.c.seen.get(record.key)
            if seen is not None and (seen.reviewer != reviewer or seen.fence != record.fence):
                seen = None
            happened = choice.resolution is Resolution.HAPPENED
            new = self.c.ledger.resolve(
                record.key,
                choice.resolution,
                reviewer=reviewer,
                reason=reason_text(choice, text, result_ref, seen),
                result_ref=result_ref if happened else None,
                attempt=attempt,  # the attempt the page showed: never a later one
            )
            self.c.holds.release(record.key, reviewer)
            self.c.seen.pop(record.key, None)
            return f"Recorded by {reviewer}: the effect is {new.status.value}."

        return await self._act(request, decide, to)

    async def verify(self, request: Request) -> Response:
        """Run the registered verifier once, read-only; show its verdict, write nothing."""
        reviewer = self._session(request).reviewer
        ref = request.path_params["ref"]
        to = f"/effects/{ref}"
        try:
            record = await run_in_threadpool(self.c.ledger.find, key_of(ref))
        except UnknownEffect:
            return self._missing(request, "No such effect in this ledger.")
        with self.c.lock:
            busy = record.key in self.c.verifying
            self.c.verifying.add(record.key)
        if busy:
            return self._back(request, "A verification of this effect is running already.", to)
        try:
            seen = await verify_once(
                self.c.ledger.registry,
                record,
                reviewer,
                self.c.settings.verify_timeout,
                self.c.ledger.clock.now(),
            )
        finally:
            with self.c.lock:
                self.c.verifying.discard(record.key)
        if seen is None:
            text = f"No verifier is registered for '{record.kind}' (see --verifiers)."
            return self._back(request, text, to)
        self.c.seen[record.key] = seen
        return self._back(request, f"Verified again: {seen.words}. Nothing was written.", to)

    async def answer(self, request: Request) -> Response:
        """Answer an approval packet, as its own user only."""
        reviewer = self._session(request).reviewer
        form = request.state.form
        packet_id = request.path_params["packet_id"]
        to = f"/approvals/{packet_id}"
        decision = form.get("decision", "")
        if decision not in ("approve", "deny"):
            return self._back(request, "Nothing recorded: approve or deny.", to)

        def give() -> str | None:
            packet = self.c.ledger.approvals.get(packet_id)
            if packet.user != reviewer:
                return None
            note = form.get("note", "").strip() or None
            got = self.c.ledger.approvals.answer(
                packet_id, decision, by=reviewer, note=note, via="console"
            )
            why = f" ({got.reason})" if got.reason else ""
            return f"Answer {got.answer.value}: the packet is {got.status.value}{why}."

        try:
            said = await run_in_threadpool(give)
        except ActOnceError as exc:
            return self._back(request, f"Nothing recorded: {exc}", to)
        if said is None:
            return self._page(
                request, "missing.html", 403, what="Only the packet's own user can answer it."
            )
        return self._back(request, said, to)

    async def op_hold(self, request: Request) -> Response:
        """Hold an operation while deciding (or hold it longer)."""
        reviewer = self._session(request).reviewer
        op_id = key_of(request.path_params["op"])

        def take() -> str:
            self.c.ledger.operations.get(op_id)  # there is one
            state = self.c.holds.take(hold_key(op_id), reviewer)
            if state.mine and state.here:
                return "You hold this operation: the decision is yours until the hold ends."
            return f"Held by {state.holder}: you can read it, not decide it."

        return await self._act(request, take, f"/operations/{request.path_params['op']}")

    async def op_release(self, request: Request) -> Response:
        """Let an operation go without deciding."""
        reviewer = self._session(request).reviewer
        op_id = key_of(request.path_params["op"])

        def let_go() -> str:
            self.c.holds.release(hold_key(op_id), reviewer)
            return "You let the operation go; anyone may take it."

        return await self._act(request, let_go, f"/operations/{request.path_params['op']}")

    async def op_decide(self, request: Request) -> Response:
        """Record the holder's decision about an operation (identity: the session's)."""
        reviewer = self._session(request).reviewer
        form = request.state.form
        op_id = key_of(request.path_params["op"])
        to = f"/operations/{request.path_params['op']}"
        chosen = DECISIONS.get(form.get("decision", ""))
        text = form.get("reason", "").strip()
        shown = form.get("attempt", "")
        attempt = int(shown) if shown.isdigit() and 0 < len(shown) < 10 else None
        if chosen is None:
            return self._back(request, "Nothing recorded: choose a decision.", to)
        if not text:
            return self._back(request, "Nothing recorded: a decision needs its reason.", to)
        if attempt is None:
            return self._back(request, "Nothing recorded: the page did not say which attempt.", to)

        def decide() -> str:
            if not self.c.holds.confirm(hold_key(op_id), reviewer):
                return (
                    "Nothing recorded: hold the operation first (your hold ended, or is not here)."
                )
            view = self.c.ledger.operations.decide(
                op_id, chosen[0], by=reviewer, reason=text, attempt=attempt
            )
            self.c.holds.release(hold_key(op_id), reviewer)
            return f"Recorded by {reviewer} ({chosen[1].lower()}): the operation is {view.state.value}."

        return await self._act(request, decide, to)

    async def _act(self, request: Request, work: Callable[[], str], to: str) -> Response:
        try:
            said = await run_in_threadpool(work)
        except UnknownEffect:
            return self._missing(request, "No such effect in this ledger.")
        except ActOnceError as exc:
            said = f"Nothing recorded: {exc}"
        return self._back(request, said, to)


def routes(console: Console) -> list[Route]:
    """Every route of the console, each behind the guard."""
    app = App(console)
    table: list[tuple[str, Handler, str, bool]] = [
        ("/login", app.login_form, "GET", True),
        ("/login", app.login, "POST", True),
        ("/logout", app.logout, "POST", False),
        ("/", app.queue, "GET", False),
        ("/overview", app.overview, "GET", False),
        ("/effects/{ref}", app.effect, "GET", False),
        ("/effects/{ref}/hold", app.hold, "POST", False),
        ("/effects/{ref}/release", app.release, "POST", False),
        ("/effects/{ref}/resolve", app.resolve, "POST", False),
        ("/effects/{ref}/verify", app.verify, "POST", False),
        ("/effects/{ref}/evidence/{seq:int}/{name}", app.evidence, "GET", False),
        ("/approvals", app.approvals, "GET", False),
        ("/approvals/{packet_id}", app.packet, "GET", False),
        ("/approvals/{packet_id}/answer", app.answer, "POST", False),
        ("/operations/{op}", app.operation, "GET", False),
        ("/operations/{op}/hold", app.op_hold, "POST", False),
        ("/operations/{op}/release", app.op_release, "POST", False),
        ("/operations/{op}/decide", app.op_decide, "POST", False),
        ("/receipts", app.receipts, "GET", False),
        ("/receipts/{op}", app.receipt, "GET", False),
        ("/static/{name}", app.static, "GET", False),
    ]
    return [
        Route(path, guarded(handler, console.sessions, public=public), methods=[method])
        for path, handler, method, public in table
    ]


def create_app(console: Console) -> Starlette:
    """The console as an ASGI app."""
    hosts = list(console.settings.allowed_hosts)
    return Starlette(
        routes=routes(console),
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=hosts),
        ],
    )
