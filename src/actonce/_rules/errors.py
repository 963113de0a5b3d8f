"""The exceptions actonce raises.

One root, two branches: what the caller did wrong, and what the world did.

    ActOnceError
    ├── UsageError                 the caller misused the API (fix the code)
    │   ├── InvalidKey             a key field is empty, not JSON-able, or volatile
    │   ├── PayloadMismatch        the same effect key was reused with another payload
    │   ├── UnknownEffect          no effect under that key (or key prefix)
    │   ├── InvalidTransition      the lifecycle does not allow that move
    │   └── ProtocolError          a (situation, observation) pair has no decision
    ├── LedgerError                the ledger could not be used (nothing was performed)
    │   ├── LedgerUnavailable      cannot open, read or write the ledger
    │   │   └── LedgerNotFound     no ledger there, and creating one was not asked for
    │   ├── LedgerOutcomeUnknown   a write may or may not have committed
    │   ├── SchemaTooNew           the ledger was written by a newer actonce
    │   ├── SchemaTooOld           a read-only open of a ledger that needs migrating
    │   └── BadLedgerURL           the ledger URL is malformed or its scheme unknown
    ├── LeaseError                 an operator lease or a queue item is not ours
    │   ├── LeaseHeld              another owner holds a live lease
    │   └── LeaseLost              our lease expired and was taken over (fenced out)
    ├── HardStop                   continuing this run is unsafe (login wall, CAPTCHA,
    │                              wrong identity, target doubt); raised by adapters
    │                              and user code, turned into a ``hard_stop`` outcome
    └── NotPerformed               raised by ``perform`` when it stopped before the
                                   side-effect boundary: nothing reached the world

Driver errors (``sqlite3``, ``psycopg``, Playwright) are translated at the
boundary with ``raise ... from exc``; they never escape as themselves.
"""

from __future__ import annotations

__all__ = [
    "ActOnceError",
    "BadLedgerURL",
    "HardStop",
    "InvalidKey",
    "InvalidTransition",
    "LeaseError",
    "LeaseHeld",
    "LeaseLost",
    "LedgerError",
    "LedgerNotFound",
    "LedgerOutcomeUnknown",
    "LedgerUnavailable",
    "NotPerformed",
    "PayloadMismatch",
    "ProtocolError",
    "SchemaTooNew",
    "SchemaTooOld",
    "UnknownEffect",
    "UsageError",
]


class ActOnceError(Exception):
    """Root of every error actonce raises."""


class UsageError(ActOnceError):
    """The caller used the API in a way it does not allow."""


class InvalidKey(UsageError):
    """An effect key could not be built from the given fields."""


class PayloadMismatch(UsageError):
    """The effect key already names an effect with a different payload.

    Reusing a key for a different payload would let one intent's record
    vouch for another intent's effect. Build a new key (a new intent
    version) instead.
    """

    def __init__(self, key: str, stored_hash: str, given_hash: str) -> None:
        super().__init__(
            f"effect {key[:16]} was recorded with payload {stored_hash[:12]}, "
            f"not {given_hash[:12]}; a changed payload needs a new key"
        )
        self.key = key
        self.stored_hash = stored_hash
        self.given_hash = given_hash


class UnknownEffect(UsageError):
    """No effect is recorded under the given key."""


class InvalidTransition(UsageError):
    """The lifecycle table has no edge between the two statuses."""


class ProtocolError(UsageError):
    """The decision table has no cell for a (situation, observation) pair."""


class LedgerError(ActOnceError):
    """The ledger could not be used. Nothing was performed because of it."""


class LedgerUnavailable(LedgerError):
    """The ledger could not be opened, read or written."""


class LedgerNotFound(LedgerUnavailable):
    """No ledger exists there, and the caller did not ask to create one.

    A ledger is made once (``actonce init``, ``open_ledger(url, create=True)``).
    Creating one silently wherever a path points would let a deleted or
    moved ledger be replaced by an empty one, and every effect in flight be
    performed again.
    """


class LedgerOutcomeUnknown(LedgerError):
    """A ledger write was sent but whether it committed is not known.

    Re-read the effect by key before any next step.
    """


class SchemaTooNew(LedgerError):
    """The ledger schema is newer than this version of actonce understands."""


class SchemaTooOld(LedgerError):
    """A read-only open found a ledger that must be migrated first."""


class BadLedgerURL(LedgerError):
    """The ledger URL is malformed or names an unsupported backend."""


class LeaseError(ActOnceError):
    """An operator lease (or a taken queue item) does not belong to the caller."""


class LeaseHeld(LeaseError):
    """Another owner holds a live lease under that name; try again later."""


class LeaseLost(LeaseError):
    """The lease expired and another owner took it over (its fencing token grew).

    The former holder must stop: its heartbeats and releases are refused, and
    the effect ledger refuses its writes under the old fencing tokens.
    """


class HardStop(ActOnceError):
    """Continuing is unsafe: stop the run without further mutations.

    Raise it from a precondition, a perform or an adapter preflight when the
    identity, the target or the page cannot be trusted (login wall, CAPTCHA,
    rate-limit screen, wrong account, ambiguous control).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NotPerformed(ActOnceError):
    """Raised by ``perform`` when it stopped *before* the side-effect boundary.

    Raise it only when nothing can have reached the outside world (the form
    read back wrong, the page showed a login wall before the click). The
    effect is then recorded as ``failed`` at once instead of ``unknown``.
    Combine it with :class:`HardStop` (``class X(HardStop, NotPerformed)``)
    when the run must also stop.
    """
