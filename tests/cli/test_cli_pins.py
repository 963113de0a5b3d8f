"""Pins for the CLI's mutants that its tests let through (issue 23, item 2), in process.

``python tests/mutants/areas.py --area cli --sample 20 --seed 1`` (the AST
mutator: the CLI's other tests run ``python -m actonce``) showed these
unstated: ``--version``, and what ``approvals`` prints when there is none.
In process (``main([...])``), so they are fast and mutmut sees them too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actonce import Absent, Confirmed, Effect, Ledger, __version__, effect_key
from actonce.cli import main


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"actonce {__version__}\n"


@pytest.mark.parametrize(
    ("extra", "says"),
    [([], "no approvals\n"), (["--pending"], "no approvals waiting for an answer\n")],
)
def test_approvals_on_a_ledger_without_any_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    ledger = str(tmp_path / "ledger.db")
    assert main(["init", "--ledger", ledger]) == 0
    capsys.readouterr()
    assert main(["approvals", "--ledger", ledger, *extra]) == 0
    assert capsys.readouterr().out == says


def _one_unknown(tmp_path: Path) -> tuple[str, str]:
    path = str(tmp_path / "ledger.db")
    with Ledger.open(path, create=True) as ledger:
        key = effect_key(tenant="t", actor="a", kind="invoice", object="o-1", operation="create")
        ledger.run(Effect(key, "invoice", {"n": 1}, lambda: None, lambda: Absent()))
    return path, key.value


def test_list_prints_its_table_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = _one_unknown(tmp_path)
    capsys.readouterr()
    assert main(["list", "--ledger", path]) == 0
    head, row = capsys.readouterr().out.splitlines()[:2]
    assert head.split() == ["key", "kind", "status", "attempt", "updated", "result", "reason"]
    assert row.split()[1:4] == ["invoice", "unknown", "1"]  # performed, its result not seen


def test_show_prints_every_field_of_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, key = _one_unknown(tmp_path)
    capsys.readouterr()
    assert main(["show", key[:12], "--ledger", path]) == 0
    assert capsys.readouterr().out.splitlines()[:7] == [
        f"key      {key}",
        "kind     invoice",
        "status   unknown (attempt 1)",
        "result   -",
        "reason   outcome not proven yet",
        'scope    {"actor":"a","kind":"invoice","object":"o-1","operation":"create","tenant":"t"}',
        'payload  {"n":1}',
    ]


@pytest.mark.parametrize("as_json", [False, True])
def test_resolve_says_what_the_record_is_now(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    path, key = _one_unknown(tmp_path)
    capsys.readouterr()
    extra = ["--json"] if as_json else []
    argv = ["resolve", key[:12], "happened", "--reason", "seen it", "--result-ref", "inv-1"]
    assert main([*argv, "--reviewer", "ana", "--ledger", path, *extra]) == 0
    out = capsys.readouterr().out
    if as_json:
        record = json.loads(out)
        assert (record["key"], record["status"], record["result_ref"]) == (
            key,
            "confirmed",
            "inv-1",
        )
    else:
        assert out == f"{key[:16]} is now confirmed\n"


def test_init_twice_says_the_ledger_already_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "ledger.db")
    assert main(["init", "--ledger", path, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["created"] is True
    assert main(["init", "--ledger", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {**first, "created": False}
    assert main(["init", "--ledger", path]) == 0
    assert capsys.readouterr().out == f"a ledger already exists at {first['ledger']}\n"


def test_status_lists_at_most_ten_effects_waiting_for_review(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "ledger.db")
    with Ledger.open(path, create=True) as ledger:
        twice = Confirmed("r", count=2, refs=("r", "r"))
        for i in range(11):  # each one a duplicate: needs_review
            key = effect_key(
                tenant="t", actor="a", kind="invoice", object=f"o-{i}", operation="create"
            )
            ledger.run(Effect(key, "invoice", {"n": i}, lambda: None, lambda: twice))
    capsys.readouterr()
    assert main(["status", "--ledger", path]) == 0
    out = capsys.readouterr().out
    assert "needs review: 11" in out
    waiting = out.split("waiting for review:\n", 1)[1].splitlines()
    assert len([line for line in waiting if "invoice" in line]) == 10
