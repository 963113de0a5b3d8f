"""``actonce intents | approvals | approve | deny | show``, as real processes on SQLite."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from actonce import Approvals, Effect, Fact, Intent, Ledger, Policy, SQLiteStore, intent_key
from actonce.testing import FakeProvider

from .conftest import KEY_HEX, KEYS


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "ACTONCE_APPROVAL_KEYS": f"k1:{KEY_HEX}",
    }
    return subprocess.run(
        [sys.executable, "-m", "actonce", *args],
        capture_output=True,
        text=True,
        env=env,
        input=stdin,
        timeout=60,
    )


@dataclass
class Scene:
    path: str
    pending: str  # a pending packet of v2 (ana)
    code: str
    link: str
    voided: str  # v1's packet, voided by the revision
    done_key: str  # an effect committed under an approval (trip-b)
    waiting_key: str  # v2's booking, never claimed yet


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    path = str(tmp_path / "ledger.db")
    provider = FakeProvider()
    with Ledger(SQLiteStore(path, create=True), signing_keys=KEYS) as ledger:
        ap = ledger.intents, ledger.approvals
        intents, approvals = ap
        v1 = intents.put(
            Intent("trip", "booking", user="ana", provider="Hotel Ibis", items=("room",),
                   when="2026-12-24", price_ceiling=Decimal(120), currency="EUR")
        )  # fmt: skip
        old = approvals.request(v1, "book", intent_key(v1, "book", tenant="t", actor="a"),
                                amount="110")  # fmt: skip
        v2 = intents.revise("trip", when="2026-12-25").intent
        waiting = intent_key(v2, "book", tenant="t", actor="a")
        req = approvals.request(v2, "book", waiting, amount="112", details={"date": v2.when})
        b = intents.put(Intent("trip-b", "purchase", user="ana", provider="Shop",
                               price_ceiling=Decimal(50), currency="EUR"))  # fmt: skip
        b_key = intent_key(b, "buy", tenant="t", actor="a")
        b_req = approvals.request(b, "buy", b_key, amount="40")
        approvals.answer(b_req.packet.packet_id, "approve", by="ana")
        result = ledger.run(
            Effect(
                key=b_key, kind="buy", payload={"i": "trip-b"},
                perform=lambda: provider.submit("b"), verify=lambda: provider.lookup("b"),
                gate=Approvals.gate(b_req.packet),
                refresh=lambda: [Fact("price", "40", ledger.clock.now())],
                policy=Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1),
            )
        )  # fmt: skip
        assert result.done
    return Scene(path, req.packet.packet_id, req.code, req.link, old.packet.packet_id,
                 b_key.value, waiting.value)  # fmt: skip


def js(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def digest(path: str) -> dict[str, str]:
    """What the ledger holds: the file and its WAL (a reader may leave an empty WAL)."""
    out = {}
    for suffix in ("", "-wal"):
        p = Path(path + suffix)
        if p.exists() and p.stat().st_size:
            out[suffix] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def test_intents_lists_current_ones_and_shows_a_chain(scene: Scene) -> None:
    rows = js(cli("intents", "--ledger", scene.path, "--json"))
    assert [(r["intent_id"], r["version"], r["status"]) for r in rows] == [
        ("trip", 2, "current"),
        ("trip-b", 1, "current"),
    ]
    every = js(cli("intents", "--all", "--ledger", scene.path, "--json"))
    assert len(every) == 3
    one = js(cli("intents", "trip", "--ledger", scene.path, "--json"))
    assert one["current"] == 2
    assert [(v["version"], v["status"]) for v in one["chain"]] == [
        (1, "superseded"),
        (2, "current"),
    ]
    assert one["chain"][1]["changed"] == ["when: '2026-12-24' -> '2026-12-25'"]
    assert [e["type"] for e in one["events"]] == ["intent_created", "intent_revised"]
    assert {p["packet_id"]: p["status"] for p in one["approvals"]} == {
        scene.voided: "voided",
        scene.pending: "pending",
    }
    text = cli("intents", "trip", "--ledger", scene.path)
    assert text.returncode == 0 and "supersession chain" in text.stdout
    assert "2026-12-25" in text.stdout
    missing = cli("intents", "nope", "--ledger", scene.path)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1


def test_approvals_lists_the_pending_ones(scene: Scene) -> None:
    pending = js(cli("approvals", "--pending", "--ledger", scene.path, "--json"))
    assert [p["packet_id"] for p in pending] == [scene.pending]
    assert pending[0]["amount"] == "112" and pending[0]["version"] == 2
    assert js(cli("approvals", "--user", "bob", "--ledger", scene.path, "--json")) == []
    voided = js(cli("approvals", "--status", "voided", "--ledger", scene.path, "--json"))
    assert [p["packet_id"] for p in voided] == [scene.voided]
    text = cli("approvals", "--ledger", scene.path)
    assert scene.pending in text.stdout and "consumed" in text.stdout


def test_approve_then_again_then_deny_exit_codes(scene: Scene) -> None:
    first = cli("approve", scene.pending, "--by", "ana", "--code", "-", "--ledger", scene.path,
                stdin=scene.code + "\n")  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("approved: " + scene.pending)
    again = cli("approve", scene.pending, "--by", "ana", "--link", scene.link,
                "--ledger", scene.path, "--json")  # fmt: skip
    assert again.returncode == 0
    assert json.loads(again.stdout) | {"reason": ""} == {
        "packet_id": scene.pending, "decision": "approve", "answer": "same",
        "status": "approved", "reason": "",
    }  # fmt: skip
    later = cli("deny", scene.pending, "--by", "ana", "--link", scene.link, "--ledger", scene.path)
    assert later.returncode == 1 and later.stdout == ""
    assert later.stderr.startswith("actonce: refused: already approved")
    assert later.stderr.count("\n") == 1
    denied_json = cli("deny", scene.pending, "--by", "ana", "--override", "--reason", "asked",
                      "--operator", "olga", "--ledger", scene.path, "--json")  # fmt: skip
    assert denied_json.returncode == 1
    assert json.loads(denied_json.stdout)["answer"] == "refused"


@pytest.mark.parametrize(
    "args",
    [
        ("--by", "bob", "--override", "--reason", "x", "--operator", "olga"),  # another user
        ("--by", "ana", "--code", "ZZZZZZZZ"),  # a wrong code
        ("--by", "ana", "--link", "garbage"),  # not a link
    ],
)
def test_a_refused_answer_exits_1_with_one_line(scene: Scene, args: tuple[str, ...]) -> None:
    proc = cli("approve", scene.pending, *args, "--ledger", scene.path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("actonce: refused: ") and proc.stderr.count("\n") == 1
    status = js(cli("approvals", "--pending", "--ledger", scene.path, "--json"))
    assert [p["status"] for p in status] == ["pending"]


def test_a_voided_packet_is_refused(scene: Scene) -> None:
    proc = cli("approve", scene.voided, "--by", "ana", "--override", "--reason", "x",
               "--operator", "olga", "--ledger", scene.path)  # fmt: skip
    assert proc.returncode == 1 and "voided" in proc.stderr


def test_show_prints_the_intent_chain_approval_and_holds(scene: Scene) -> None:
    shown = js(cli("show", scene.done_key[:12], "--ledger", scene.path, "--json"))
    assert shown["effect"]["status"] == "confirmed"
    assert [(h["kind"], h["status"]) for h in shown["holds"]] == [
        ("approval", "consumed"),
        ("intent", "consumed"),
    ]
    assert [p["status"] for p in shown["approvals"]] == ["consumed"]
    assert [(i["intent_id"], i["version"]) for i in shown["intent"]] == [("trip-b", 1)]
    text = cli("show", scene.done_key[:12], "--ledger", scene.path)
    assert text.returncode == 0
    for part in ("intent   trip-b (current v1)", "approvals:", "holds:", "consumed"):
        assert part in text.stdout
    # A gated effect never claimed: shown by its full key, with its chain and packet.
    waiting = js(cli("show", scene.waiting_key, "--ledger", scene.path, "--json"))
    assert waiting["effect"] is None and waiting["holds"] == []
    assert [i["status"] for i in waiting["intent"]] == ["superseded", "current"]
    assert [p["packet_id"] for p in waiting["approvals"]] == [scene.pending]
    text = cli("show", scene.waiting_key, "--ledger", scene.path)
    assert "not claimed" in text.stdout and "v1  superseded" in text.stdout


def test_read_only_commands_never_write(scene: Scene, tmp_path: Path) -> None:
    before = digest(scene.path)
    for args in (("intents",), ("intents", "trip"), ("approvals", "--pending"),
                 ("show", scene.done_key[:12]), ("show", scene.waiting_key)):  # fmt: skip
        for extra in ((), ("--json",)):
            assert cli(*args, *extra, "--ledger", scene.path).returncode == 0
    assert digest(scene.path) == before
    missing = str(tmp_path / "nothing.db")
    proc = cli("approvals", "--ledger", missing)
    assert proc.returncode == 1 and not Path(missing).exists()
