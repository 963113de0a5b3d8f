"""Effects whose perform is one request to an HTTP API (httpx; sync and async).

A :class:`Provider` is one API. ``provider.effect(...)`` is an
:class:`actonce.Effect` whose perform sends one request and classifies what
came back, the way the ledger needs it:

- **not sent** (connection refused, the name did not resolve, the TLS
  handshake failed, the connect timed out: no byte of the request left) —
  :class:`NotSent`, an ``actonce.NotPerformed``: the effect is ``failed`` at
  once and may be replanned;
- **refused** (a 4xx that proves the provider did not act: 400, 404, 422, a
  409 conflict without keys ...) — :class:`Refused`, failed with the
  provider's reason; 401, 403 and 429 are also a hard stop (:class:`Stopped`);
- **unknown** (the request was written, then a reset, a close without an
  answer, a timeout; a 5xx; a redirect, never followed) —
  :class:`OutcomeUnknown`: verification decides, reconcile first;
- **accepted** (2xx, 303) — verified like any effect.

One request on the wire per perform: no transport retries, no redirects, a
new connection for each request, a timeout from the perform's bound (half
the policy's lease unless told). For a provider that honours an
idempotency key (``Provider(..., idempotency_keys=True)``; the header is
``Idempotency-Key`` unless ``key_header=`` says otherwise) every request
carries a key formed from the effect key alone, the same across every retry
of the intent; then, and only then, a request whose outcome is open (written
and unanswered, a 5xx, a 409 "in progress") is sent again with the same key
inside the bound (Stripe's semantics). Without keys, never.

Every send is recorded in the perform's details — method, URL without
secrets, seconds since the perform started, the status or what happened
instead, how long it took — never a header, a body or a token.
:meth:`Provider.lookup` and :func:`counted` verify by **counting** matches.

``Provider`` / ``AsyncProvider`` have the same names (``close`` / ``aclose``).
The exchange's rules are one table (``actonce.http._exchange.TABLE``);
errors: see ``actonce.http._errors``. Docs: docs/http.md.
"""

from __future__ import annotations

from ._errors import HttpError, NotSent, OutcomeUnknown, Refused, Stopped
from ._exchange import NO_RESPONSE, RESET, TIMED_OUT
from ._lookup import counted
from ._provider import DEFAULT_KEY_HEADER, AsyncProvider, Provider

__all__ = [
    "DEFAULT_KEY_HEADER",
    "NO_RESPONSE",
    "RESET",
    "TIMED_OUT",
    "AsyncProvider",
    "HttpError",
    "NotSent",
    "OutcomeUnknown",
    "Provider",
    "Refused",
    "Stopped",
    "counted",
]

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("actonce.http._"):
        _obj.__module__ = __name__
del _name, _obj
