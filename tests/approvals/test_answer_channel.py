"""An accepted answer's event names the channel it came through (``via``), as
``Approvals.answer``'s docstring promises: the API, the CLI, the console, a
signed link, a reply code. Duplicates and refusals named it already; the
accepted answer — the one a reviewer reads the history for — did not.
On every backend.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from actonce import ApprovalRequest, Approvals, EventType
from actonce._rules.approvals import Answered
from approvals.conftest import World

Answer = Callable[[Approvals, ApprovalRequest], object]

CHANNELS: dict[str, Answer] = {
    "api": lambda ap, req: ap.answer(req.packet.packet_id, "approve", by="ana"),
    "cli": lambda ap, req: ap.answer(req.packet.packet_id, "approve", by="ana", via="cli"),
    "console": lambda ap, req: ap.answer(req.packet.packet_id, "deny", by="ana", via="console"),
    "link": lambda ap, req: ap.answer_link(req.link, "approve", by="ana"),
    "code": lambda ap, req: ap.answer_code(req.code, "approve", by="ana"),
}


@pytest.mark.parametrize("via", list(CHANNELS))
def test_an_accepted_answer_names_its_channel(world: World, via: str) -> None:
    ap = world.ledger.approvals
    req = world.request(world.intent())
    got = CHANNELS[via](ap, req)
    assert getattr(got, "answer", None) is Answered.ACCEPTED, got
    answered = [
        e for e in ap.history(req.packet.packet_id) if e.type is EventType.APPROVAL_ANSWERED
    ]
    assert len(answered) == 1, answered
    assert answered[0].data["via"] == via
    assert answered[0].data["decided_by"] == "ana"
    # ...and when: the packet and its event carry the answer's ledger time.
    now = world.clock.now()
    assert answered[0].data["decided_at"] == now
    assert ap.get(req.packet.packet_id).decided_at == now


def test_a_channel_naming_a_secret_is_stored_scrubbed(world: World, tmp_path: Path) -> None:
    """``via`` is the caller's text: it passes the store's scrubbing like any other value
    (read back on every backend; on SQLite, the file and its WAL hold no trace)."""
    ap = world.ledger.approvals
    req = world.request(world.intent())
    secret = "tok-5f1e77aa9c"
    got = ap.answer(req.packet.packet_id, "approve", by="ana", via=f"token={secret}")
    assert got.answer is Answered.ACCEPTED
    (answered,) = [
        e for e in ap.history(req.packet.packet_id) if e.type is EventType.APPROVAL_ANSWERED
    ]
    assert answered.data["via"] == "token=[redacted]"
    if world.backend == "sqlite":
        files = [tmp_path / "ledger.db", tmp_path / "ledger.db-wal"]
        stored = b"".join(f.read_bytes() for f in files if f.exists())
        assert b"approval_answered" in stored and secret.encode() not in stored
