"""Errors of an HTTP perform, under actonce's one exception root.

    ActOnceError
    └── HttpError            a perform's request did not end in an accepted answer
        ├── OutcomeUnknown   it may have been processed (written, then reset, closed,
        │                    timed out; a 5xx; a redirect): verification decides
        ├── NotSent          no byte of it left (connection refused, DNS, TLS,
        │                    connect timeout): also ``actonce.NotPerformed``
        ├── Refused          a 4xx that proves the provider did not act (400, 404,
        │                    409 without keys, 422 ...): also ``actonce.NotPerformed``
        └── Stopped          401, 403 or 429 to the first send: nothing was performed,
                             and continuing is unsafe: also ``actonce.HardStop``
                             and ``actonce.NotPerformed``

Each carries ``status`` (the HTTP status, or ``None`` without an answer)
and ``details``: the perform's wire records, which the ledger keeps in the
effect's history. httpx's own errors never escape a perform: they are
classified at the boundary and chained (``raise ... from exc``) where one
caused the error.
"""

from __future__ import annotations

from typing import Any

from actonce import ActOnceError, HardStop, NotPerformed

__all__ = ["HttpError", "NotSent", "OutcomeUnknown", "Refused", "Stopped"]


class HttpError(ActOnceError):
    """A perform's request did not end in an accepted answer.

    Attributes:
        reason: why, in words (the provider's reason for a 4xx).
        status: the HTTP status of the last answer (``None``: no answer).
        details: ``{"wire": [...], "sent": n, "keyed": bool}``, secret-free.
    """

    def __init__(
        self, reason: str, *, status: int | None = None, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.details = details or {}


class OutcomeUnknown(HttpError):
    """The request may have been processed: reconcile (verify) before anything else."""


class NotSent(HttpError, NotPerformed):
    """No byte of the request left this process: the effect fails at once."""


class Refused(HttpError, NotPerformed):
    """The provider answered with a 4xx that proves it did not act."""


class Stopped(HttpError, HardStop, NotPerformed):
    """The provider refused our credentials (401, 403) or our rate (429).

    Nothing was performed (the effect fails at once, and may be tried again
    later), and the run stops: no further mutation until someone looks.
    """
