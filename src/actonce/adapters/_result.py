"""One answer shape for every framework: the run's result, and what may come next."""

from __future__ import annotations

from typing import Any

from actonce import ActOnceError, Outcome, RunResult, scrub_text

__all__ = ["ADVICE", "error_result", "tool_result"]

#: What an agent may do after each outcome (the tool result says it in words).
ADVICE: dict[Outcome, str] = {
    Outcome.COMPLETED: "done: performed now and verified",
    Outcome.SKIPPED: "done already: this is the existing result; nothing was performed again",
    Outcome.NEEDS_REVIEW: "it may have happened: do not call this tool again for it; "
    "reconcile or a human settles it",
    Outcome.FAILED: "it did not happen (proven): you may replan",
    Outcome.HARD_STOP: "stop: continuing is unsafe (login wall, CAPTCHA, wrong account ...); "
    "nothing further was done",
    Outcome.DEFERRED: "nothing was done now: calling again later is safe",
    Outcome.ABANDONED: "a human decided it must not happen: do not retry",
    Outcome.NEEDS_APPROVAL: "nothing was done: it waits for the user's approval",
    Outcome.REFUSED: "nothing was done: it is not authorized (a new approval or intent "
    "version is needed)",
    Outcome.OVER_BUDGET: "nothing was done: the budget has no room left in this window",
}


def tool_result(result: RunResult) -> dict[str, Any]:
    """A JSON-able tool answer: outcome, done, result_ref, reason, advice (no payload)."""
    return {
        "outcome": result.outcome.value,
        "done": result.done,
        "performed": result.performed,
        "status": None if result.status is None else result.status.value,
        "result_ref": result.result_ref,
        "reason": result.reason,
        "attempt": result.attempt,
        "advice": ADVICE[result.outcome],
    }


def error_result(exc: ActOnceError) -> dict[str, Any]:
    """A ledger error as a tool answer (``PayloadMismatch``, an unreachable ledger ...)."""
    return {
        "outcome": "error",
        "done": False,
        "performed": False,
        "status": None,
        "result_ref": None,
        "reason": scrub_text(f"{type(exc).__name__}: {exc}")[:500],
        "attempt": 0,
        "advice": "the ledger refused or failed: nothing is performed after a failed ledger "
        "write, but an earlier step may stand; look at the effect (actonce show) before "
        "calling again",
    }
