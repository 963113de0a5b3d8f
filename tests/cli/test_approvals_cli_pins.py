"""``actonce approvals | intents | approve | deny``, printed whole, in process.

The scenario is :mod:`test_operations_cli`'s: trip@v1's payment approved and
consumed, trip-2@v1's pending with its reply code. Each table line, the
filters, and each answer's one line (accepted, the same again, refused with
its reason on stderr and exit 1) are stated.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import test_operations_cli
from inprocess import InProcess

from actonce import Ledger
from actonce.cli._format import when

ledger_path = test_operations_cli.ledger_path  # the scenario's fixture, found by its name here


@pytest.fixture
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ACTONCE_APPROVAL_KEYS", f"k1:{test_operations_cli.KEY_HEX}")
    return str(request.getfixturevalue("ledger_path"))


def _cells(line: str) -> list[str]:
    return re.split(r" {2,}", line.strip())


HEAD = ["packet", "intent", "action", "user", "amount", "ceiling", "status", "expires", "rev"]


def test_approvals_lists_every_packet_and_the_pending_ones(path: str, cli: InProcess) -> None:
    with Ledger.open(path, readonly=True) as ledger:
        packets = {p.status.value: p for p in ledger.approvals.list(limit=10)}
    consumed, pending = packets["consumed"], packets["pending"]
    out = cli.out(["approvals", "--ledger", path]).splitlines()
    assert _cells(out[0]) == HEAD
    rows = sorted(_cells(line) for line in out[1:])
    assert rows == sorted([
        [consumed.packet_id, "trip@v1", "pay", "ana", "240 EUR", "250 EUR", "consumed",
         when(consumed.expires_at), "1"],
        [pending.packet_id, "trip-2@v1", "pay", "ana", "240 EUR", "250 EUR", "pending",
         when(pending.expires_at), "1"],
    ])  # fmt: skip
    out = cli.out(["approvals", "--ledger", path, "--pending"]).splitlines()
    assert [_cells(line)[0] for line in out] == ["packet", pending.packet_id]
    assert cli.out(["approvals", "--ledger", path, "--user", "bob"]) == "no approvals\n"
    (one,) = json.loads(cli.out(["approvals", "--ledger", path, "--pending", "--json"]))
    assert (one["packet_id"], one["expired"], one["status"]) == (
        pending.packet_id,
        False,
        "pending",
    )
    assert one["summary"] == "pay at Harbor Hotel for 240 EUR (trip-2@v1)"


def test_intents_lists_current_intents_and_one_with_its_chain(path: str, cli: InProcess) -> None:
    with Ledger.open(path, readonly=True) as ledger:
        rows = {r.intent.intent_id: r for r in ledger.intents.list(limit=10)}
    what = "Harbor Hotel · double · 2030-05-01 · at most 250 EUR"
    out = cli.out(["intents", "--ledger", path]).splitlines()
    assert _cells(out[0]) == ["intent", "version", "status", "kind", "user", "what", "created"]
    assert sorted(_cells(line) for line in out[1:]) == [
        ["trip", "v1", "current", "booking", "ana", what, when(rows["trip"].created_at)],
        ["trip-2", "v1", "current", "booking", "ana", what, when(rows["trip-2"].created_at)],
    ]
    one = cli.out(["intents", "trip", "--ledger", path]).splitlines()
    assert one[:5] == [
        "intent   trip (booking, user ana)",
        f"current  v1: {what}",
        "",
        "supersession chain:",
        "version  status   created              superseded  changed",
    ]
    assert _cells(one[5]) == ["v1", "current", when(rows["trip"].created_at), "-", "-"]
    assert one[6:8] == ["", "approvals:"]
    assert _cells(one[8]) == HEAD
    assert _cells(one[9])[1:7] == ["trip@v1", "pay", "ana", "240 EUR", "250 EUR", "consumed"]
    assert len(one) == 10
    data = json.loads(cli.out(["intents", "--ledger", path, "--json"]))
    assert sorted((d["intent_id"], d["version"], d["status"]) for d in data) == [
        ("trip", 1, "current"),
        ("trip-2", 1, "current"),
    ]
    assert {d["fields"]["provider"] for d in data} == {"Harbor Hotel"}
    assert cli.out(["intents", "--ledger", path, "--user", "bob"]) == "no intents\n"


def test_answers_say_accepted_same_or_refused(
    path: str, cli: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    packet = Path(path + ".packet").read_text()
    code = Path(path + ".code").read_text()
    argv = ["approve", packet, "--by", "ana", "--code", "-", "--ledger", path]
    monkeypatch.setattr("sys.stdin", io.StringIO(code + "\n"))
    assert cli.out(argv) == (f"approved: {packet}  pay at Harbor Hotel for 240 EUR (trip-2@v1)\n")
    monkeypatch.setattr("sys.stdin", io.StringIO(code))
    assert cli.out(argv) == f"{packet} is already approved: nothing changed\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(code))
    done, out, err = cli.run(["deny", *argv[1:], "--json"])
    assert (done, err) == (1, "")
    assert json.loads(out) == {
        "answer": "refused",
        "decision": "deny",
        "packet_id": packet,
        "reason": "this reply code was already used",
        "status": "approved",
    }
    done, out, err = cli.run(["deny", packet, "--by", "ana", "--code", "WRONG1", "--ledger", path])
    assert (done, out) == (1, "")
    assert err == f"actonce: refused: this is not ana's reply code for {packet}\n"


def test_an_override_is_recorded_with_its_operator_reason_and_note(
    path: str, cli: InProcess
) -> None:
    packet = Path(path + ".packet").read_text()
    argv = ["deny", packet, "--by", "ana", "--override", "--reason", "ana called",
            "--operator", "olga", "--note", "by phone", "--ledger", path, "--json"]  # fmt: skip
    assert json.loads(cli.out(argv)) == {
        "answer": "accepted",
        "decision": "deny",
        "packet_id": packet,
        "reason": "",
        "status": "denied",
    }
    with Ledger.open(path, readonly=True) as ledger:
        assert ledger.approvals.get(packet).note == (
            "operator override by olga: ana called (by phone)"
        )
