"""``reconcile``, ``init``, ``migrate``, ``receipt``, ``summary`` and ``budgets``:
their one-line answers, empty cases, errors and exit codes, in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actonce import Absent, Effect, Ledger, effect_key
from actonce.cli import main


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def unknown(tmp_path: Path) -> tuple[str, str]:
    """A ledger with one mail in doubt, of a kind no verifier is registered for."""
    path = str(tmp_path / "ledger.db")
    key = effect_key(tenant="t", actor="a", kind="mail", object="o-2", operation="send")
    with Ledger.open(path, create=True) as ledger:
        ledger.run(Effect(key, "mail", {"n": 2}, lambda: None, lambda: Absent()))
    return path, key.value


def test_reconcile_without_a_verifier_says_so_and_exits_3(
    unknown: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, key = unknown
    assert _run(["reconcile", "--ledger", path], capsys) == (
        3,
        "checked 0, left to live owners 0, unresolved 0, failed to reconcile 0\n"
        f"no verifier registered for 1 effect(s): {key[:16]} (register one: see --verifiers)\n",
        "",
    )
    code, out, err = _run(["reconcile", "--ledger", path, "--json"], capsys)
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


def test_reconcile_of_a_quiet_ledger_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "ledger.db")
    Ledger.open(path, create=True).close()
    assert _run(["reconcile", "--ledger", path], capsys) == (
        0,
        "checked 0, left to live owners 0, unresolved 0, failed to reconcile 0\n",
        "",
    )


def test_init_and_migrate_say_where_the_ledger_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "new.db")
    assert _run(["init", "--ledger", path], capsys) == (0, f"created a ledger at {path}\n", "")
    assert _run(["migrate", "--ledger", path], capsys) == (
        0,
        f"the ledger at {path} is up to date\n",
        "",
    )
    code, out, _ = _run(["migrate", "--ledger", path, "--json"], capsys)
    assert (code, json.loads(out)) == (0, {"ledger": path, "migrated": True})


def test_receipt_summary_and_budgets_on_a_ledger_without_any(
    unknown: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = unknown
    assert _run(["receipt", "op-x", "--ledger", path], capsys) == (
        1,
        "",
        "actonce: error: no receipt for operation 'op-x' (it has not stood still in a final "
        "state)\n",
    )
    assert _run(["summary", "--ledger", path], capsys) == (0, "no run summaries\n", "")
    assert _run(["summary", "--ledger", path, "--operator", "bob"], capsys) == (
        0,
        "no run summaries of operator 'bob'\n",
        "",
    )
    assert _run(["summary", "r-1", "--ledger", path], capsys) == (
        1,
        "",
        "actonce: error: no run summary 'r-1' in this ledger\n",
    )
    assert _run(["summary", "--ledger", path, "--json"], capsys) == (0, "null\n", "")
    assert _run(["summary", "--ledger", path, "--json", "--list"], capsys) == (0, "[]\n", "")
    assert _run(["budgets", "--ledger", path], capsys) == (
        0,
        f"ledger  {path}\nno budget pools\n",
        "",
    )
    code, out, _ = _run(["budgets", "--ledger", path, "--json"], capsys)
    assert (code, json.loads(out)) == (0, {"ledger": path, "pools": []})
    assert _run(["budgets", "nopool", "--ledger", path], capsys) == (
        1,
        "",
        "actonce: error: no budget pool 'nopool'\n",
    )
