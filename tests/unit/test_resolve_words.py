"""A reviewer's decision, stated whole: what it accepts, what it writes, and each refusal in
its own words (issue 23 item 2, the ``_run`` area's review module).

A decision names a resolution, a reviewer and a reason (each stripped, and
scrubbed like the world's text), optionally the result reference and the
attempt decided on. It writes one transition whose reason says decision,
reason and reviewer, under a run id naming the reviewer. Memory store, a
frozen clock.
"""

from __future__ import annotations

from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    Effect,
    InvalidTransition,
    Ledger,
    MemoryStore,
    Policy,
    Status,
    Unavailable,
    UsageError,
)
from actonce.testing import FrozenClock

POLICY = Policy(verify_attempts=1, lease_seconds=30.0)


def _unknown(ledger: Ledger, key: str = "rev-1") -> str:
    made: list[int] = []

    def perform() -> None:
        made.append(1)
        raise TimeoutError("the response was lost")

    result = ledger.run(
        Effect(
            key=key,
            kind="pin",
            payload={},
            perform=perform,
            policy=POLICY,
            verify=lambda: Unavailable("down") if made else Absent(),
        )
    )
    assert result.status is Status.UNKNOWN and result.attempt == 1
    return key


def _ledger() -> Ledger:
    return Ledger(MemoryStore(), clock=FrozenClock(start=1_000.0))


def _refused(exc: type[Exception], call: Any, message: str) -> None:
    with pytest.raises(exc) as err:
        call()
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("decision", "status"),
    [("happened", Status.CONFIRMED), ("not_happened", Status.FAILED),
     ("not-happened", Status.FAILED), ("abandon", Status.ABANDONED)],
)  # fmt: skip
def test_each_decision_settles_to_its_status_and_says_who_and_why(
    decision: str, status: Status
) -> None:
    ledger = _ledger()
    key = _unknown(ledger)
    got = ledger.resolve(key, decision, reviewer="  maria ", reason=" the page shows it ",
                         result_ref=" R-7 ", attempt=1)  # fmt: skip
    chosen = decision.replace("-", "_")
    assert got.status is status and got.fence == 1
    assert got.reason == f"{chosen}: the page shows it (maria)"
    assert got.result_ref == "R-7" and got.updated_at == 1_000.0
    last = ledger.events(key)[-1]
    assert (last.type.value, last.from_status, last.to_status) == (
        status.value, Status.UNKNOWN, status,
    )  # fmt: skip
    assert (last.run_id, last.message, last.fence) == ("review:maria", "the page shows it", 1)
    assert last.data == {"reviewer": "maria", "decision": chosen, "result_ref": "R-7"}
    # the same decision again is answered with the state, nothing written
    count = len(ledger.events(key))
    again = ledger.resolve(key, decision, reviewer="someone", reason="again")
    assert again == got and len(ledger.events(key)) == count


def test_a_decision_without_a_reference_keeps_the_records() -> None:
    ledger = _ledger()
    key = _unknown(ledger)
    got = ledger.resolve(key, "happened", reviewer="maria", reason="seen")
    assert got.result_ref is None
    assert ledger.events(key)[-1].data["result_ref"] is None


def test_another_decision_on_a_settled_effect_is_refused() -> None:
    ledger = _ledger()
    key = _unknown(ledger)
    ledger.resolve(key, "happened", reviewer="maria", reason="seen")
    _refused(
        InvalidTransition,
        lambda: ledger.resolve(key, "abandon", reviewer="maria", reason="oops"),
        "effect rev-1 is confirmed, not awaiting review",
    )
    done = ledger.run(Effect(key="done-effect-long-key", kind="pin", payload={},
                             perform=lambda: None, verify=lambda: Confirmed("x")))  # fmt: skip
    assert done.status is Status.CONFIRMED
    _refused(
        InvalidTransition,
        lambda: ledger.resolve(done.key, "not_happened", reviewer="maria", reason="no"),
        "effect done-effect-long is confirmed, not awaiting review",
    )


def test_a_decision_on_another_attempt_is_refused() -> None:
    ledger = _ledger()
    key = _unknown(ledger)
    _refused(
        InvalidTransition,
        lambda: ledger.resolve(key, "happened", reviewer="maria", reason="seen", attempt=2),
        "effect rev-1 is on attempt 1 now, not the attempt 2 that was decided on; look again",
    )
    assert ledger.get(key).status is Status.UNKNOWN  # type: ignore[union-attr]


@pytest.mark.parametrize("decision", ["maybe", "", "HAPPENED"])
def test_a_decision_is_one_of_three(decision: str) -> None:
    ledger = _ledger()
    key = _unknown(ledger)
    _refused(
        UsageError,
        lambda: ledger.resolve(key, decision, reviewer="maria", reason="r"),
        f"a decision is one of happened, not_happened, abandon, not {decision!r}",
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reviewer": ""}, "a resolution needs the reviewer's name"),
        ({"reviewer": "  "}, "a resolution needs the reviewer's name"),
        ({"reviewer": None}, "a resolution needs the reviewer's name"),
        ({"reason": " "}, "a resolution needs a reason"),
        ({"reason": 3}, "a resolution needs a reason"),
        ({"result_ref": ""}, "a resolution needs the result reference"),
        ({"attempt": 0}, "an attempt is a whole number from 1, not 0"),
        ({"attempt": True}, "an attempt is a whole number from 1, not True"),
        ({"attempt": 1.0}, "an attempt is a whole number from 1, not 1.0"),
        ({"attempt": "1"}, "an attempt is a whole number from 1, not '1'"),
    ],
)
def test_a_decision_names_who_why_and_which_attempt(kwargs: dict[str, Any], message: str) -> None:
    ledger = _ledger()
    key = _unknown(ledger)
    given: dict[str, Any] = {"reviewer": "maria", "reason": "seen", **kwargs}
    _refused(UsageError, lambda: ledger.resolve(key, "happened", **given), message)
    assert ledger.get(key).status is Status.UNKNOWN  # type: ignore[union-attr]


def test_a_reviewers_words_are_scrubbed_and_bounded() -> None:
    ledger = _ledger()
    key = _unknown(ledger)
    got = ledger.resolve(key, "abandon", reviewer="maria",
                         reason="pasted token=abcdef0123456789secret " + "x" * 2000)  # fmt: skip
    assert "abcdef0123456789secret" not in (got.reason or "")
    message = ledger.events(key)[-1].message or ""
    assert "abcdef0123456789secret" not in message
    assert len(message) == 1000 and message.endswith("…")


def test_not_happened_waits_while_the_attempt_s_lease_runs() -> None:
    """A lease still running (here: ledger time stepped back before it ended) means its
    owner may still be performing: 'not happened' would let the effect run twice."""
    clock = FrozenClock(start=1_000.0)
    ledger = Ledger(MemoryStore(), clock=clock)
    key = _unknown(ledger)
    record = ledger.get(key)
    assert record is not None and record.lease_expires_at == 1_000.0
    clock.step(-100.0)
    _refused(
        InvalidTransition,
        lambda: ledger.resolve(key, "not_happened", reviewer="maria", reason="gone"),
        "effect rev-1: the owner of attempt 1 holds its lease until 1000.000 and may still be "
        "performing; 'not happened' can be decided once the lease has ended (or abandon it now)",
    )
    assert ledger.get(key).status is Status.UNKNOWN  # type: ignore[union-attr]
    abandoned = ledger.resolve(key, "abandon", reviewer="maria", reason="too risky")
    assert abandoned.status is Status.ABANDONED
