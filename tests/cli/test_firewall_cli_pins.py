"""``actonce firewall`` and the firewall line of ``status``, printed whole, in process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inprocess import InProcess

from actonce import RefusalReason, WriteRefusal, open_ledger
from actonce.cli._format import when

ORIGIN = "http://127.0.0.1:8765"


@pytest.fixture
def walled(tmp_path: Path) -> tuple[str, list[Any]]:
    path = str(tmp_path / "fw.db")
    with open_ledger(path, create=True) as ledger:
        for actor, url, reason, page, key in [
            ("alice", "/compose?token=s3cret", RefusalReason.OUTSIDE_EFFECT, "/compose", None),
            ("alice", "/notes/1/publish", RefusalReason.UNDECLARED, "", "k" * 64),
            ("bob", "/u/carol/follow", RefusalReason.OUTSIDE_EFFECT, "/x?password=p", None),
        ]:
            ledger.firewall.record(
                WriteRefusal(
                    actor=actor,
                    method="POST",
                    url=ORIGIN + url,
                    reason=reason,
                    page=ORIGIN + page if page else "",
                    via="playwright",
                    effect_key=key,
                )
            )
        refusals = ledger.firewall.refusals(limit=10)
    return path, refusals


def test_firewall_prints_counts_per_actor_and_reason_then_the_latest(
    walled: tuple[str, list[Any]], cli: InProcess
) -> None:
    path, (bob, publish, compose) = walled
    assert cli.out(["firewall", "--ledger", path]).splitlines() == [
        f"ledger  {path}",
        "actor  refused  outside_effect  undeclared  out_of_order  second  other_origin",
        "alice  2        1               1           0             0       0",
        "bob    1        1               0           0             0       0",
        "",
        "latest 3:",
        f"  {when(bob.at)}  bob  POST {ORIGIN}/u/carol/follow  (outside an effect, playwright)"
        f"  from {ORIGIN}/x",
        f"  {when(publish.at)}  alice  POST {ORIGIN}/notes/1/publish  (undeclared request, "
        "playwright)  during kkkkkkkkkkkkkkkk",
        f"  {when(compose.at)}  alice  POST {ORIGIN}/compose  (outside an effect, playwright)"
        f"  from {ORIGIN}/compose",
    ]
    only = cli.out(["firewall", "--ledger", path, "--actor", "bob", "--limit", "1"])
    assert only.splitlines()[1:5] == [
        "actor  refused  outside_effect  undeclared  out_of_order  second  other_origin",
        "bob    1        1               0           0             0       0",
        "",
        "latest 1:",
    ]
    assert cli.out(["firewall", "--ledger", path, "--actor", "nobody"]) == (
        f"ledger  {path}\nno refusals: nothing was refused by a write firewall\n"
    )


def test_firewall_json_gives_totals_reasons_and_each_refusal(
    walled: tuple[str, list[Any]], cli: InProcess
) -> None:
    path, (bob, _, _) = walled
    data = json.loads(cli.out(["firewall", "--ledger", path, "--json", "--limit", "1"]))
    assert data == {
        "actors": {
            "alice": {"reasons": {"outside_effect": 1, "undeclared": 1}, "total": 2},
            "bob": {"reasons": {"outside_effect": 1}, "total": 1},
        },
        "ledger": path,
        "refusals": [
            {
                "actor": "bob",
                "at": bob.at,
                "effect_key": None,
                "id": bob.id,
                "method": "POST",
                "page": f"{ORIGIN}/x",
                "reason": "outside_effect",
                "url": f"{ORIGIN}/u/carol/follow",
                "via": "playwright",
            }
        ],
    }
    data = json.loads(cli.out(["firewall", "--ledger", path, "--json", "--actor", "alice"]))
    assert list(data["actors"]) == ["alice"]
    assert [r["effect_key"] for r in data["refusals"]] == ["k" * 64, None]


def test_status_says_refusals_per_actor_in_one_line(
    walled: tuple[str, list[Any]], tmp_path: Path, cli: InProcess
) -> None:
    path, _ = walled
    lines = cli.out(["status", "--ledger", path]).splitlines()
    assert "firewall refusals: 3 (alice 2, bob 1; actonce firewall)" in lines
    assert json.loads(cli.out(["status", "--ledger", path, "--json"]))["firewall_refusals"] == {
        "alice": 2,
        "bob": 1,
    }
