"""Pins for the console's mutants its tests let through (issue 23, item 2).

``python tests/mutants/areas.py --area console --sample 40 --seed 1`` showed
these unstated: what "verify again" remembers (whose record, how long it
took, the timeout it was given), a step's status class, an unreadable
reviewers file, and the words of a refusal.
"""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path

import httpx
import pytest

from actonce import Absent, EffectRecord, Event, EventType, Registry, Status, UsageError
from actonce.console import ConsoleServer, Reviewers
from actonce.console._console import Console
from actonce.console._decide import Seen, verify_once
from actonce.console._receipts import _status, receipt_page
from actonce.console._views import _history

from .world import World


def _record() -> EffectRecord:
    return EffectRecord(key="k-1", kind="invoice", status=Status.UNKNOWN, payload_hash="h",
                        fence=3, owner=None, lease_expires_at=None, payload={},
                        created_at=0.0, updated_at=0.0)  # fmt: skip


def test_verify_again_remembers_whose_record_and_how_long_it_took() -> None:
    registry = Registry()
    registry.register("invoice", lambda record: Absent())
    seen = asyncio.run(verify_once(registry, _record(), "ana", 5.0, 100.0))
    assert seen is not None
    assert (seen.key, seen.fence, seen.reviewer, seen.at, seen.verdict) == (
        "k-1", 3, "ana", 100.0, "absent",
    )  # fmt: skip
    took = re.fullmatch(r".*; took (\d+\.\d) s", seen.words)
    assert took and float(took.group(1)) < 60, seen.words


def test_verify_again_gives_up_at_its_timeout() -> None:
    release = threading.Event()
    registry = Registry()
    registry.register("invoice", lambda record: release.wait(30) and Absent())

    async def once() -> Seen | None:
        try:
            return await verify_once(registry, _record(), "ana", 0.05, 100.0)
        finally:
            release.set()  # before asyncio.run waits for the verifier's thread

    seen = asyncio.run(once())
    assert seen is not None and seen.verdict == "unavailable"
    assert seen.words.startswith("unavailable: no answer within 0.05 s; took ")


def test_a_step_never_started_has_a_status_class_without_a_space() -> None:
    assert _status(None) == ("not started", "s-none")
    assert _status("needs_review") == ("needs_review", "s-needs_review")


def test_an_unreadable_reviewers_file_is_refused_with_its_reason(tmp_path: Path) -> None:
    with pytest.raises(
        UsageError, match=rf"^cannot read the reviewers file {tmp_path}: Is a directory$"
    ):
        Reviewers.load(tmp_path)


def test_a_refused_request_says_why(server: ConsoleServer) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        answer = client.post("/logout", data={"csrf": "x"}, headers={"origin": server.url})
        assert answer.status_code == 401 and "<p>Sign in first.</p>" in answer.text
        answer = client.post("/login", content=b"\xff" * 10, headers={
            "origin": server.url, "content-type": "application/x-www-form-urlencoded",
        })  # fmt: skip
        assert answer.status_code == 403
        assert "<p>Refused: not a form of this console.</p>" in answer.text, answer.text


def test_a_receipts_page_leads_with_the_receipts_first_line(world: World) -> None:
    console = Console(world.ledger, world.reviewers())
    op_id = world.operations["complete"]
    page = receipt_page(console, op_id)
    receipt = world.ledger.receipt(op_id)
    assert page is not None and receipt is not None and receipt.text
    assert page["headline"] == receipt.text.splitlines()[0]


def test_a_history_row_shows_its_events_data() -> None:
    (row,) = _history([Event("k", EventType.CLAIMED, 0.0, 1, data={"n": 1})])
    assert row["data"] and '"n"' in row["data"] and row["what"] == "claimed"
    (row,) = _history([Event("k", EventType.CLAIMED, 0.0, 1)])
    assert row["data"] == ""
