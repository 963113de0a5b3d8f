"""Pins for behaviours an independent planting run found unpinned (issue 23, item 1).

Each test states one behaviour; each has a plant in ``tests/mutants/plants.py``
that it must catch (``python tests/mutants/check_plants.py --cheap``).
"""

from __future__ import annotations

from actonce._rules.decision import Observation, observe
from actonce._rules.model import Absent, EffectRecord, Policy, Status
from actonce._rules.secrets import REDACTED, scrub_text
from actonce.console._guard import safe_next

NOW = 1000.0


def test_a_non_owner_never_counts_the_owners_window_from_its_own_perform() -> None:
    # The record is executing at fence 3; we held fence 2 and performed 5 s ago.
    # Our own perform says nothing about when the owner's request may leave.
    record = EffectRecord(
        key="k",
        kind="fake",
        status=Status.EXECUTING,
        fence=3,
        owner="other",
        lease_expires_at=NOW + 10,
        payload="{}",
        payload_hash="h",
        executing_at=NOW - 1,
    )
    seen = observe(
        Absent(),
        record,
        policy=Policy(settle_seconds=2, absence_authoritative=True),
        now=NOW,
        my_fence=2,
        since_perform=5,
    )
    assert seen is Observation.ABSENT_UNSETTLED, "a non-owner counted the window from its perform"


def test_scrub_text_removes_a_jwt_standing_alone() -> None:
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbmEifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
    scrubbed = scrub_text(jwt)
    assert jwt not in scrubbed, "a JWT alone in a text was kept"
    assert REDACTED in scrubbed
    assert jwt not in scrub_text(f"saw {jwt} in the page")


def test_safe_next_refuses_a_protocol_relative_target() -> None:
    assert safe_next("//evil.example/x") == "/", "safe_next let an off-site target through"
    assert safe_next("/\\evil.example") == "/"
    assert safe_next("/queue?x=1") == "/queue?x=1"
