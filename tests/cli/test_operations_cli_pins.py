"""``actonce operations | operation | decide``, printed whole, in process.

The scenario is :mod:`test_operations_cli`'s (trip@v1 stopped at the refused
void of its payment, 240 EUR held); here each line of the text output and
each field of ``--json`` is stated, and ``decide``'s one-line answer.
"""

from __future__ import annotations

import json
import re

import pytest
import test_operations_cli
from inprocess import InProcess

from actonce import Ledger
from actonce.cli._format import when

KEY_HEX = test_operations_cli.KEY_HEX
ledger_path = test_operations_cli.ledger_path  # the scenario's fixture, found by its name here


@pytest.fixture
def path(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("ledger_path"))


OP = "booking:trip@v1"


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACTONCE_APPROVAL_KEYS", f"k1:{KEY_HEX}")


def _cells(line: str) -> list[str]:
    return re.split(r" {2,}", line.strip())


def test_operations_table_and_json(path: str, cli: InProcess) -> None:
    with Ledger.open(path, readonly=True) as ledger:
        view = ledger.operations.get(OP)
    out = cli.out(["operations", "--ledger", path]).splitlines()
    assert _cells(out[0]) == [
        "operation", "state", "since", "stopped at", "attempt", "done", "not done", "money",
    ]  # fmt: skip
    assert len(out) == 2
    cells = _cells(out[1])
    assert cells[:5] == [OP, "needs_review", when(view.since), "undo of pay", "1"]
    assert cells[-1] == "240 EUR (held)"
    (row,) = json.loads(cli.out(["operations", "--ledger", path, "--json"]))
    assert row["operation"] == OP
    assert row["intent"] == "trip@v1"
    assert (row["state"], row["at"], row["undo"], row["attempt"], row["closed"]) == (
        "needs_review", "pay", True, 1, False,
    )  # fmt: skip
    assert row["since"] == view.since
    assert row["choices"] == ["retry_undo", "undone_by_hand", "accept", "abandon"]
    assert row["decisions"] == []
    assert [
        (s["name"], s["role"], s["status"], s["attempts"], s["undo"]) for s in row["steps"]
    ] == [
        ("hold", "compensatable", "confirmed", 1, None),
        ("pay", "compensatable", "confirmed", 1, "failed"),
        ("book", "pivot", "failed", 1, None),
    ]
    assert row["receipt"] == view.receipt.text
    assert row["user"] == view.receipt.data.get("user")
    assert cli.out(["operations", "--due", "--ledger", path]) == ("no operations with work due\n")
    assert json.loads(cli.out(["operations", "--due", "--ledger", path, "--json"])) == []


def test_one_operation_where_it_stands(path: str, cli: InProcess) -> None:
    with Ledger.open(path, readonly=True) as ledger:
        view = ledger.operations.get(OP)
    out = cli.out(["operation", OP, "--ledger", path]).splitlines()
    assert out[0] == f"operation {OP}  (intent trip@v1)"
    assert out[1] == f"state     needs_review: {view.reason}"
    assert out[2] == f"stands at undo of pay, attempt 1, since {when(view.since)}"
    assert out[3] == "money     240 EUR (held)"
    assert out[4:6] == ["", "steps:"]
    assert _cells(out[6]) == [
        "step", "role", "status", "attempts", "provider ref", "undo",
    ]  # fmt: skip
    assert _cells(out[7])[:4] == [
        "hold", "compensatable", "confirmed", "1",
    ]  # fmt: skip
    assert out[8].rstrip().endswith("failed (attempt 1)")
    assert _cells(out[9]) == ["book", "pivot", "failed", "1", "-", "-"]
    who = out.index("who acts: a person decides (retry-undo, undone-by-hand, accept, abandon):")
    assert out[who + 1] == f"  actonce decide {OP} DECISION --attempt 1 --reason '...'"
    receipt = out.index("receipt (as true now):")
    assert out[receipt + 1 :] == [f"  {line}" for line in view.receipt.text.splitlines()]


def test_decide_says_what_the_operation_is_now(
    path: str,
    cli: InProcess,
) -> None:
    argv = ["decide", OP, "undone-by-hand", "--attempt", "1", "--reason", "voided at the bank",
            "--reviewer", "ana", "--ledger", path]  # fmt: skip
    out = cli.out(argv)
    assert out.startswith(f"{OP} is now compensating (undone_by_hand by ana): ")
    assert out.count("\n") == 1
    one = cli.out(["operation", OP, "--ledger", path]).splitlines()
    at = one.index("decisions:")
    with Ledger.open(path, readonly=True) as ledger:
        (decision,) = ledger.operations.get(OP).decisions
    assert one[at + 1] == (
        f"  1. {when(decision.at)}  undone_by_hand pay, attempt 1 by ana: voided at the bank"
    )
