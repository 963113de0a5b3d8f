"""What the CLI's reading commands print, line by line, in process.

``status``, ``list`` and ``show`` on a ledger holding one effect of each
kind of ending (confirmed, unknown, a duplicate in review): every line of
the text output and every field of ``--json``, the filters, the empty
cases, and what each history line says of its event's data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inprocess import InProcess

from actonce import Absent, Confirmed, Effect, Ledger, effect_key
from actonce.cli._commands import _extra
from actonce.cli._format import when


@pytest.fixture
def three(tmp_path: Path) -> tuple[str, list[Any]]:
    """A ledger with a confirmed invoice, an unknown mail and a duplicated payment."""
    path = str(tmp_path / "ledger.db")
    with Ledger.open(path, create=True) as ledger:
        k1 = effect_key(tenant="t", actor="a", kind="invoice", object="o-1", operation="create")
        payload = {"n": 1, "token": "tok-12345"}
        ledger.run(Effect(k1, "invoice", payload, lambda: None, lambda: Confirmed("inv-1")))
        k2 = effect_key(tenant="t", actor="a", kind="mail", object="o-2", operation="send")
        ledger.run(Effect(k2, "mail", {"n": 2}, lambda: None, lambda: Absent()))
        k3 = effect_key(tenant="t", actor="a", kind="pay", object="o-3", operation="create")
        twice = Confirmed("r", count=2, refs=("r1", "r2"))
        ledger.run(Effect(k3, "pay", {"n": 3}, lambda: None, lambda: twice))
        records = [ledger.get(k.value) for k in (k1, k2, k3)]
    return path, records


def test_status_counts_every_status_and_lists_what_waits(
    three: tuple[str, list[Any]], cli: InProcess
) -> None:
    path, (_, _, pay) = three
    assert cli.out(["status", "--ledger", path]).splitlines() == [
        f"ledger  {path}",
        "effects 3  (open: 1, needs review: 1, duplicates detected: 1)",
        "status        count",
        "claimed       0",
        "executing     0",
        "unknown       1",
        "needs_review  1",
        "confirmed     1",
        "failed        0",
        "abandoned     0",
        "operations in review: 0",
        "firewall refusals: 0",
        "",
        "waiting for review:",
        f"  {pay.key[:16]}  pay  duplicate detected: 2 matching results (r1, r2)",
    ]
    assert json.loads(cli.out(["status", "--ledger", path, "--json"])) == {
        "counts": {
            "abandoned": 0,
            "claimed": 0,
            "confirmed": 1,
            "executing": 0,
            "failed": 0,
            "needs_review": 1,
            "unknown": 1,
        },
        "duplicates_detected": 1,
        "firewall_refusals": {},
        "ledger": path,
        "open": 1,
        "operations_in_review": 0,
        "total": 3,
    }


def test_status_of_an_empty_ledger(tmp_path: Path, cli: InProcess) -> None:
    path = str(tmp_path / "ledger.db")
    Ledger.open(path, create=True).close()
    lines = cli.out(["status", "--ledger", path]).splitlines()
    assert lines[:2] == [
        f"ledger  {path}",
        "effects 0  (open: 0, needs review: 0, duplicates detected: 0)",
    ]
    assert lines[-2:] == ["operations in review: 0", "firewall refusals: 0"]


def test_list_prints_one_row_per_effect(three: tuple[str, list[Any]], cli: InProcess) -> None:
    path, (inv, mail, pay) = three
    rows = [
        (inv.key[:16], "invoice", "confirmed", "1", when(inv.updated_at), "inv-1",
         "result existed before the perform"),
        (mail.key[:16], "mail", "unknown", "1", when(mail.updated_at), "",
         "outcome not proven yet"),
        (pay.key[:16], "pay", "needs_review", "1", when(pay.updated_at), "r",
         "duplicate detected: 2 matching results (r1, r2)"),
    ]  # fmt: skip
    out = cli.out(["list", "--ledger", path]).splitlines()
    assert out[0].split() == ["key", "kind", "status", "attempt", "updated", "result", "reason"]
    widths = [16, 7, 12, 7, 19, 6]
    for line, row in zip(out[1:], rows, strict=True):
        expected = "  ".join(c.ljust(w) for c, w in zip(row, [*widths, 0], strict=True))
        assert line == expected.rstrip()
    assert cli.out(["list", "--ledger", path, "--kind", "nothing"]) == "no effects\n"
    assert cli.out(["list", "--ledger", path, "--status", "failed"]) == "no effects\n"
    assert len(cli.out(["list", "--ledger", path, "--limit", "2"]).splitlines()) == 3
    only = cli.out(["list", "--ledger", path, "--kind", "mail"]).splitlines()
    assert [line.split()[0] for line in only] == ["key", mail.key[:16]]


def test_list_json_gives_every_field_of_each_record(
    three: tuple[str, list[Any]], cli: InProcess
) -> None:
    path, (inv, _, _) = three
    (record,) = json.loads(cli.out(["list", "--ledger", path, "--status", "confirmed", "--json"]))  # fmt: skip
    assert record == {
        "attempt": 1,
        "created_at": inv.created_at,
        "executing_at": inv.executing_at,
        "key": inv.key,
        "kind": "invoice",
        "lease_expires_at": inv.lease_expires_at,
        "matches": 1,
        "owner": inv.owner,
        "payload": {"n": 1, "token": {"$secret": "redacted"}},
        "reason": "result existed before the perform",
        "result_ref": "inv-1",
        "scope": {"actor": "a", "kind": "invoice", "object": "o-1", "operation": "create",
                  "tenant": "t"},
        "status": "confirmed",
        "updated_at": inv.updated_at,
    }  # fmt: skip
    assert json.loads(cli.out(["list", "--ledger", path, "--status", "failed", "--json"])) == []


def test_show_prints_the_record_and_its_history(
    three: tuple[str, list[Any]], cli: InProcess
) -> None:
    path, (_, _, pay) = three
    with Ledger.open(path, readonly=True) as ledger:
        claimed, review = ledger.events(pay.key)
    out = cli.out(["show", pay.key[:8], "--ledger", path]).splitlines()
    assert out[:10] == [
        f"key      {pay.key}",
        "kind     pay",
        "status   needs_review (attempt 1)",
        "result   r",
        "matches  2 (a duplicate was detected)",
        "reason   duplicate detected: 2 matching results (r1, r2)",
        'scope    {"actor":"a","kind":"pay","object":"o-3","operation":"create","tenant":"t"}',
        'payload  {"n":3}',
        "",
        "history:",
    ]
    assert out[10].split() == ["seq", "at", "event", "change", "attempt", "run", "message"]
    run = claimed.run_id[:14]
    assert out[11].split("  ")[0] == str(claimed.seq)
    assert out[11].endswith(f"->claimed              1        {run}  attempt 1")
    assert when(claimed.at) in out[11]
    assert out[12].endswith(
        f"claimed->needs_review  1        {run}  duplicate detected: 2 matching results "
        "(r1, r2) 2 matches: r1, r2"
    )
    assert len(out) == 13
    shown = json.loads(cli.out(["show", pay.key, "--ledger", path, "--json"]))
    assert shown["effect"]["key"] == pay.key
    assert [(e["seq"], e["type"], e["from"], e["to"], e["attempt"]) for e in shown["events"]] == [
        (claimed.seq, "claimed", None, "claimed", 1),
        (review.seq, "needs_review", "claimed", "needs_review", 1),
    ]
    assert shown["events"][1]["message"] == "duplicate detected: 2 matching results (r1, r2)"
    assert shown["events"][1]["data"] == review.data


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ({}, ""),
        ({"evidence": "ev/1"}, "evidence ev/1"),
        ({"perform": {"error": "boom"}}, "perform raised boom"),
        ({"perform": {"error": ""}}, ""),
        ({"perform": "boom"}, ""),
        ({"duplicate": {"count": 2, "refs": ["a", "b"]}}, "2 matches: a, b"),
        ({"duplicate": {"count": 3}}, "3 matches: "),
        ({"duplicate": "x"}, ""),
        ({"alarm": True}, "performed after being overtaken"),
        (
            {"evidence": "e", "perform": {"error": "x"}, "duplicate": {"count": 1, "refs": ["r"]},
             "alarm": 1},
            "evidence e perform raised x 1 matches: r performed after being overtaken",
        ),
    ],
)  # fmt: skip
def test_what_a_history_line_adds_of_its_events_data(data: dict[str, Any], text: str) -> None:
    assert _extra(data) == text
