"""``reconcile``, ``init``, ``migrate``, ``receipt``, ``summary`` and ``budgets``:
their one-line answers, empty cases, errors and exit codes, in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inprocess import InProcess

from actonce import Absent, Effect, Ledger, effect_key


@pytest.fixture
def unknown(tmp_path: Path) -> tuple[str, str]:
    """A ledger with one mail in doubt, of a kind no verifier is registered for."""
    path = str(tmp_path / "ledger.db")
    key = effect_key(tenant="t", actor="a", kind="mail", object="o-2", operation="send")
    with Ledger.open(path, create=True) as ledger:
        ledger.run(Effect(key, "mail", {"n": 2}, lambda: None, lambda: Absent()))
    return path, key.value


def test_reconcile_without_a_verifier_says_so_and_exits_3(
    unknown: tuple[str, str], cli: InProcess
) -> None:
    path, key = unknown
    assert cli.run(["reconcile", "--ledger", path]) == (
        3,
        "checked 0, left to live owners 0, unresolved 0, failed to reconcile 0\n"
        f"no verifier registered for 1 effect(s): {key[:16]} (register one: see --verifiers)\n",
        "",
    )
    code, out, err = cli.run(["reconcile", "--ledger", path, "--json"])
    assert (code, err) == (3, "")
    assert json.loads(out) == {
        "checked": 0,
        "errors": 0,
        "live": 0,
        "no_verifier": 1,
        "results": {
            "abandoned": 0,
            "claimed": 0,
            "confirmed": 0,
            "executing": 0,
            "failed": 0,
            "needs_review": 0,
            "unknown": 0,
        },
        "unresolved": 0,
    }


def test_reconcile_of_a_quiet_ledger_exits_0(tmp_path: Path, cli: InProcess) -> None:
    path = str(tmp_path / "ledger.db")
    Ledger.open(path, create=True).close()
    assert cli.run(["reconcile", "--ledger", path]) == (
        0,
        "checked 0, left to live owners 0, unresolved 0, failed to reconcile 0\n",
        "",
    )


def test_init_and_migrate_say_where_the_ledger_is(tmp_path: Path, cli: InProcess) -> None:
    path = str(tmp_path / "new.db")
    assert cli.run(["init", "--ledger", path]) == (0, f"created a ledger at {path}\n", "")
    assert cli.run(["migrate", "--ledger", path]) == (
        0,
        f"the ledger at {path} is up to date\n",
        "",
    )
    code, out, _ = cli.run(["migrate", "--ledger", path, "--json"])
    assert (code, json.loads(out)) == (0, {"ledger": path, "migrated": True})


def test_receipt_summary_and_budgets_on_a_ledger_without_any(
    unknown: tuple[str, str], cli: InProcess
) -> None:
    path, _ = unknown
    assert cli.run(["receipt", "op-x", "--ledger", path]) == (
        1,
        "",
        "actonce: error: no receipt for operation 'op-x' (it has not stood still in a final "
        "state)\n",
    )
    assert cli.run(["summary", "--ledger", path]) == (0, "no run summaries\n", "")
    assert cli.run(["summary", "--ledger", path, "--operator", "bob"]) == (
        0,
        "no run summaries of operator 'bob'\n",
        "",
    )
    assert cli.run(["summary", "r-1", "--ledger", path]) == (
        1,
        "",
        "actonce: error: no run summary 'r-1' in this ledger\n",
    )
    assert cli.run(["summary", "--ledger", path, "--json"]) == (0, "null\n", "")
    assert cli.run(["summary", "--ledger", path, "--json", "--list"]) == (0, "[]\n", "")
    assert cli.run(["budgets", "--ledger", path]) == (
        0,
        f"ledger  {path}\nno budget pools\n",
        "",
    )
    code, out, _ = cli.run(["budgets", "--ledger", path, "--json"])
    assert (code, json.loads(out)) == (0, {"ledger": path, "pools": []})
    assert cli.run(["budgets", "nopool", "--ledger", path]) == (
        1,
        "",
        "actonce: error: no budget pool 'nopool'\n",
    )
