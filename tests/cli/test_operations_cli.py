"""``actonce status | operations | operation | decide | intents withdraw | receipt``,
and the carriers of ``approve``: real processes on a real SQLite ledger."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    Effect,
    Gate,
    Intent,
    IntentRef,
    Ledger,
    NotPerformed,
    Operation,
    OperationState,
    Policy,
    SigningKeys,
    SQLiteStore,
    Step,
    intent_key,
)
from actonce.testing import FakeProvider

KEY_HEX = "ef" * 16
KEYS = SigningKeys.parse(f"k1:{KEY_HEX}")
POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1)


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
           "ACTONCE_APPROVAL_KEYS": f"k1:{KEY_HEX}", "USER": "ops-olga"}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "actonce", *args], capture_output=True,
                          text=True, env=env, input=stdin, timeout=60)  # fmt: skip


def js(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _operation(ledger: Ledger, provider: FakeProvider, ref: IntentRef, packet: str) -> Operation:
    def effect(name: str, gate: Gate | None = None) -> Effect:
        def perform() -> None:
            if name in ("book", "void"):
                raise NotPerformed(f"the provider refused the {name}")
            provider.submit(f"{ref}-{name}")

        return Effect(intent_key(ref, name, tenant="t", actor="ana"), name, {"n": name},
                      perform, lambda: provider.lookup(f"{ref}-{name}"), policy=POLICY,
                      gate=gate)  # fmt: skip

    return Operation(ledger, f"booking:{ref}", [
        Step("hold", effect("hold"), "compensatable", undo=effect("release")),
        Step("pay", effect("pay", Gate(ref, packet, Decimal("240"))), "compensatable",
             undo=effect("void")),
        Step("book", effect("book"), "pivot"),
    ], intent=ref, approval=packet)  # fmt: skip


@pytest.fixture
def ledger_path(tmp_path: Path) -> str:
    """trip@v1 stopped at the refused void of its payment (240.00 EUR held); trip-2 waits."""
    path = str(tmp_path / "ledger.db")
    provider = FakeProvider()
    with Ledger(SQLiteStore(path, create=True), signing_keys=KEYS) as ledger:
        for name in ("trip", "trip-2"):
            intent = ledger.intents.put(
                Intent(name, "booking", user="ana", provider="Harbor Hotel", items=("double",),
                       when="2030-05-01", price_ceiling=Decimal("250"), currency="EUR")
            )  # fmt: skip
            key = intent_key(intent, "pay", tenant="t", actor="ana")
            req = ledger.approvals.request(intent, "pay", key, amount="240",
                                           terms="free cancellation until 48 h before")  # fmt: skip
            if name == "trip":
                ledger.approvals.answer(req.packet.packet_id, "approve", by="ana")
                result = _operation(ledger, provider, intent.ref, req.packet.packet_id).run()
                assert result.state is OperationState.NEEDS_REVIEW
            else:
                Path(path + ".code").write_text(req.code)
                Path(path + ".packet").write_text(req.packet.packet_id)
                _operation(ledger, provider, intent.ref, req.packet.packet_id).run()
    return path


def test_status_and_operations_show_the_operation_in_review(ledger_path: str) -> None:
    status = js(cli("status", "--ledger", ledger_path, "--json"))
    assert status["operations_in_review"] == 1
    text = cli("status", "--ledger", ledger_path)
    assert "operations in review: 1" in text.stdout
    assert "booking:trip@v1  at undo of pay" in text.stdout
    [row] = js(cli("operations", "--ledger", ledger_path, "--json"))
    assert (row["operation"], row["state"], row["at"], row["undo"], row["attempt"]) == (
        "booking:trip@v1", "needs_review", "pay", True, 1,
    )  # fmt: skip
    assert row["choices"] == ["retry_undo", "undone_by_hand", "accept", "abandon"]
    assert row["user"]["charged"] == "240" and row["user"]["charged_state"] == "charged"
    table = cli("operations", "--ledger", ledger_path)
    assert "undo of pay" in table.stdout and "240 EUR (held)" in table.stdout
    one = cli("operation", "booking:trip@v1", "--ledger", ledger_path)
    assert one.returncode == 0
    for part in ("stands at undo of pay, attempt 1", "who acts: a person decides",
                 "Charged: 240 EUR.", "pay (obj-2), its undo was refused"):  # fmt: skip
        assert part in one.stdout, one.stdout


def test_decide_records_once_and_refuses_a_stale_attempt(ledger_path: str) -> None:
    stale = cli("decide", "booking:trip@v1", "accept", "--attempt", "7", "--reason", "x",
                "--reviewer", "ana", "--ledger", ledger_path)  # fmt: skip
    assert stale.returncode == 1 and "look again" in stale.stderr
    assert stale.stderr.count("\n") == 1
    args = ("decide", "booking:trip@v1", "undone-by-hand", "--attempt", "1", "--reason",
            "voided at the bank", "--reviewer", "ana", "--ledger", ledger_path, "--json")  # fmt: skip
    first, again = js(cli(*args)), js(cli(*args))
    assert first["decisions"] == again["decisions"] and len(first["decisions"]) == 1
    assert first["decisions"][0]["by"] == "ana" and first["state"] == "compensating"
    assert js(cli("operations", "--ledger", ledger_path, "--json")) == []
    assert [r["operation"] for r in js(cli("operations", "--due", "--ledger", ledger_path,
                                           "--json"))] == ["booking:trip@v1"]  # fmt: skip


def test_intents_withdraw_closes_a_version_and_its_receipt_says_so(ledger_path: str) -> None:
    missing = cli("intents", "withdraw", "trip-2", "--ledger", ledger_path)
    assert missing.returncode == 2 and "--by and --reason" in missing.stderr
    done = js(cli("intents", "withdraw", "trip-2", "--by", "ana", "--reason", "plans changed",
                  "--ledger", ledger_path, "--json"))  # fmt: skip
    assert done["operations"] == ["booking:trip-2@v1"] and len(done["voided"]) == 1
    receipt = cli("receipt", "booking:trip-2@v1", "--ledger", ledger_path)
    assert receipt.returncode == 0, receipt.stderr
    assert "was withdrawn (trip-2@v1 withdrawn by ana: plans changed)" in receipt.stdout
    data = js(cli("receipt", "booking:trip-2@v1", "--ledger", ledger_path, "--json"))
    assert data["data"]["user"]["outcome"] == "withdrawn"


def test_approve_needs_a_carrier_or_a_recorded_override(ledger_path: str) -> None:
    packet = Path(ledger_path + ".packet").read_text()
    bare = cli("approve", packet, "--by", "ana", "--ledger", ledger_path)
    assert bare.returncode == 2 and "needs the user's carrier" in bare.stderr
    half = cli("approve", packet, "--by", "ana", "--override", "--ledger", ledger_path)
    assert half.returncode == 2 and "--override needs --reason" in half.stderr
    pending = js(cli("approvals", "--pending", "--ledger", ledger_path, "--json"))
    assert [p["packet_id"] for p in pending] == [packet]  # nothing was answered
    done = cli("approve", packet, "--by", "ana", "--override", "--reason",
               "ana confirmed on the phone", "--ledger", ledger_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with Ledger.open(ledger_path, readonly=True) as ledger:
        answered = ledger.approvals.get(packet)
        history = ledger.approvals.history(packet)
    assert answered.note == "operator override by ops-olga: ana confirmed on the phone"
    assert history[-1].message == (
        "approved by ana: operator override by ops-olga: ana confirmed on the phone"
    )


def test_a_duplicated_reply_code_answers_same_with_exit_0(ledger_path: str) -> None:
    packet, code = (
        Path(ledger_path + ".packet").read_text(),
        Path(ledger_path + ".code").read_text(),
    )
    first = cli("approve", packet, "--by", "ana", "--code", "-", "--ledger", ledger_path,
                stdin=code)  # fmt: skip
    assert first.returncode == 0, first.stderr
    again = cli("approve", packet, "--by", "ana", "--code", "-", "--ledger", ledger_path,
                "--json", stdin=code)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["answer"] == "same"
    other = cli("deny", packet, "--by", "ana", "--code", "-", "--ledger", ledger_path, stdin=code)
    assert other.returncode == 1 and "already used" in other.stderr  # single use: no change
