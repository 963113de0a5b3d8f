"""A browser-use guarded action whose submit is two requests, declared by the action.

The sandbox's notes save a draft (``POST /notes``) and then publish it
(``POST /notes/{id}/publish``). The effect here declares nothing itself;
``GuardedBrowser.action(requests=…)`` declares the submit for it. Declared
whole, the note is published once; declared in part, the second request is
refused, and the action ends unknown — never confirmed — with the refusal
in its reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from actonce import AsyncLedger, Policy, RequestPattern, Status, effect_key
from actonce.browser import NoteEffect
from actonce.sandbox import SandboxServer

from .conftest import mutating, need_browser_use

need_browser_use()
pytestmark = pytest.mark.browser

from actonce.adapters.browser_use import GuardedBrowser  # noqa: E402

from .kit import FAST, results, run_agent  # noqa: E402

LOGIN = [("POST", "/login")]
NOTE = Policy(settle_seconds=0.3, absence_authoritative=False, verify_attempts=2,
              verify_backoff=0.05, verify_backoff_max=0.1, lease_seconds=30.0)  # fmt: skip


class BareNote(NoteEffect):
    """The notes effect with no requests of its own: the action declares them."""

    requests = ()


def note_key(text: str) -> Any:
    return effect_key(tenant="sandbox", actor="alice", kind="note", object=text, operation="save")


async def _run(
    ledger: AsyncLedger, base: str, tmp_path: Path, declared: list[tuple[str, str]], text: str
) -> dict[str, Any]:
    from actonce.sandbox import SEED_USERS

    guarded = await GuardedBrowser.start(
        ledger, base, "alice", allow=[RequestPattern("POST", "/login", origin=base)],
        evidence_dir=str(tmp_path / "evidence"), timeout=5.0, confirm_timeout=3.0, profile=FAST,
    )  # fmt: skip
    try:
        await guarded.session.login(SEED_USERS["alice"])

        @guarded.action("Save and publish a note with this text.", key=note_key,
                        requests=declared, policy=NOTE)  # fmt: skip
        def save_note(session: Any, text: str) -> Any:
            return session.effect(BareNote("alice", text))

        _model, history = await run_agent(guarded, [{"save_note": {"text": text}}])
    finally:
        await guarded.aclose()
    data: dict[str, Any] = json.loads(results(history)[0]["content"])
    return data


async def test_a_two_request_submit_declared_by_the_action_publishes_once(
    server: SandboxServer, base: str, ledger: AsyncLedger, tmp_path: Path
) -> None:
    declared = [("POST", "/notes"), ("POST", "/notes/{id}/publish")]
    answer = await _run(ledger, base, tmp_path, declared, "Two requests, one note")
    assert (answer["outcome"], answer["status"]) == ("completed", "confirmed"), answer
    assert mutating(server) == [*LOGIN, ("POST", "/notes"), ("POST", "/notes/1/publish")]
    [note] = server.db.notes("alice")
    assert note["published"] == 1 and note["text"] == "Two requests, one note"
    assert await ledger.firewall.totals() == {}


async def test_a_submit_declared_in_part_is_never_confirmed_and_names_its_refusal(
    server: SandboxServer, base: str, ledger: AsyncLedger, tmp_path: Path
) -> None:
    answer = await _run(ledger, base, tmp_path, [("POST", "/notes")], "Half declared")
    assert answer["outcome"] != "completed" and answer["status"] != "confirmed", answer
    # The draft was made; its publish never left the browser.
    assert mutating(server) == [*LOGIN, ("POST", "/notes")]
    [note] = server.db.notes("alice")
    assert note["published"] == 0
    record = await ledger.get(note_key("Half declared").value)
    assert record is not None
    assert record.status in (Status.UNKNOWN, Status.NEEDS_REVIEW), record.status
    reason = record.data.get("reason", "") if isinstance(record.data, dict) else ""
    assert "/notes/1/publish" in json.dumps(answer) + reason, (answer, record.data)
    assert "undeclared" in json.dumps(answer) + reason, (answer, record.data)
