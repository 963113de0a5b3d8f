"""Signed-in sessions, kept on the server; the cookie holds only a random id.

A session knows its reviewer (the identity every decision records), its
CSRF token (a hidden field on every form, checked on every state-changing
request) and a few one-shot messages for the next page. Sessions end on
sign-out, after :data:`IDLE_SECONDS` without a request, after
:data:`MAX_SECONDS` in all, and when the console stops (they live in its
memory: nothing of a session is written anywhere).

Before sign-in, the login form is protected the same way: ``GET /login``
issues a short-lived nonce, set as a cookie and echoed in a hidden field;
``POST /login`` must carry both, and they must match a nonce this console
issued.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["IDLE_SECONDS", "MAX_SECONDS", "Session", "Sessions"]

IDLE_SECONDS = 8 * 3600.0
MAX_SECONDS = 24 * 3600.0
LOGIN_NONCE_SECONDS = 1800.0
MAX_SESSIONS = 10_000


@dataclass
class Session:
    """One signed-in reviewer."""

    id: str
    reviewer: str
    csrf: str
    started: float
    seen: float
    flash: list[str] = field(default_factory=list)

    def say(self, text: str) -> None:
        """Show ``text`` once, on the next page."""
        self.flash.append(text)

    def take_flash(self) -> list[str]:
        """The messages waiting for this page (and forget them)."""
        out, self.flash = self.flash, []
        return out


class Sessions:
    """The console's sessions and login nonces, in memory."""

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        self._sessions: dict[str, Session] = {}
        self._nonces: dict[str, float] = {}
        self._lock = threading.Lock()
        self._now = clock or time.monotonic

    def start(self, reviewer: str) -> Session:
        """A new session for ``reviewer`` (a new id: no session fixation)."""
        now = self._now()
        session = Session(secrets.token_urlsafe(32), reviewer, secrets.token_urlsafe(32), now, now)
        with self._lock:
            self._expire(now)
            if len(self._sessions) >= MAX_SESSIONS:
                oldest = min(self._sessions.values(), key=lambda s: s.seen)
                del self._sessions[oldest.id]
            self._sessions[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session under ``session_id`` (its idle time starts again)."""
        if not session_id:
            return None
        now = self._now()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            if now - session.seen >= IDLE_SECONDS or now - session.started >= MAX_SECONDS:
                del self._sessions[session_id]
                return None
            session.seen = now
            return session

    def end(self, session_id: str | None) -> None:
        """Sign out: the session is gone at once."""
        with self._lock:
            self._sessions.pop(session_id or "", None)

    def nonce(self) -> str:
        """A fresh login nonce."""
        value = secrets.token_urlsafe(24)
        now = self._now()
        with self._lock:
            self._nonces = {n: t for n, t in self._nonces.items() if t > now}
            if len(self._nonces) >= MAX_SESSIONS:
                self._nonces.pop(next(iter(self._nonces)))
            self._nonces[value] = now + LOGIN_NONCE_SECONDS
        return value

    def use_nonce(self, cookie: str | None, form: str | None) -> bool:
        """Whether the login form's nonce is one this console issued (used up here)."""
        if not cookie or not form or not secrets.compare_digest(cookie, form):
            return False
        with self._lock:
            expires = self._nonces.pop(cookie, None)
        return expires is not None and expires > self._now()

    def _expire(self, now: float) -> None:
        dead = [
            s.id
            for s in self._sessions.values()
            if now - s.seen >= IDLE_SECONDS or now - s.started >= MAX_SECONDS
        ]
        for sid in dead:
            del self._sessions[sid]
