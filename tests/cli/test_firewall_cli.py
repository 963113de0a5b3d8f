"""``actonce firewall`` and the firewall line of ``actonce status``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from actonce import RefusalReason, WriteRefusal, open_ledger

ORIGIN = "http://127.0.0.1:8765"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "actonce", *args], capture_output=True, text=True, check=True
    )


def _ledger(tmp_path: Path) -> str:
    path = str(tmp_path / "fw.db")
    with open_ledger(path, create=True) as ledger:
        for actor, url, reason in [
            ("alice", "/compose?token=s3cret", RefusalReason.OUTSIDE_EFFECT),
            ("alice", "/compose", RefusalReason.OUTSIDE_EFFECT),
            ("alice", "/notes/1/publish", RefusalReason.UNDECLARED),
            ("bob", "/u/carol/follow", RefusalReason.OUTSIDE_EFFECT),
        ]:
            ledger.firewall.record(
                WriteRefusal(
                    actor=actor,
                    method="POST",
                    url=ORIGIN + url,
                    reason=reason,
                    page=ORIGIN + "/compose",
                    via="playwright",
                )
            )
    return path


def test_firewall_lists_refusals_per_actor(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    data: dict[str, Any] = json.loads(cli("firewall", "--ledger", path, "--json").stdout)
    assert data["actors"] == {
        "alice": {"total": 3, "reasons": {"outside_effect": 2, "undeclared": 1}},
        "bob": {"total": 1, "reasons": {"outside_effect": 1}},
    }
    assert [r["url"] for r in data["refusals"]][-1] == ORIGIN + "/compose"  # no query kept
    assert "s3cret" not in json.dumps(data)
    text = cli("firewall", "--ledger", path, "--actor", "bob").stdout
    assert "bob" in text and "alice" not in text and "/u/carol/follow" in text
    assert "outside an effect" in text


def test_status_has_the_firewall_line(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    status = json.loads(cli("status", "--ledger", path, "--json").stdout)
    assert status["firewall_refusals"] == {"alice": 3, "bob": 1}
    assert (
        "firewall refusals: 4 (alice 3, bob 1; actonce firewall)"
        in cli("status", "--ledger", path).stdout
    )
