"""The agent process is SIGKILLed mid-run, then restarted: no second post.

A real agent process (``agent_proc.py``: browser-use, its own Chromium, the
same SQLite ledger file) kills itself with SIGKILL at the ``after_perform``
crash point: the post exists, the ledger says ``executing`` (the dead run's
lease still runs). The restarted agent's model calls the guarded action
again: the ledger verifies before anything else, finds the post, records it
``confirmed`` and answers ``skipped`` — nothing is performed twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from actonce import AsyncLedger, Status
from actonce.sandbox import SandboxServer

from .conftest import mutating, need_browser_use

need_browser_use()
pytestmark = pytest.mark.browser

from .kit import post_key  # noqa: E402

AGENT = Path(__file__).with_name("agent_proc.py")


def run(config: dict[str, Any], path: Path, **env: str) -> tuple[int, list[dict[str, Any]], str]:
    path.write_text(json.dumps(config))
    proc = subprocess.Popen(
        [sys.executable, str(AGENT), str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, **env},
        start_new_session=True,  # its Chromium shares its process group
    )
    try:
        out, _ = proc.communicate(timeout=180)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # what a SIGKILL left behind
        proc.wait(timeout=30)
    text = out.decode(errors="replace")
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    return proc.returncode, lines, text


async def test_an_agent_killed_after_its_perform_and_restarted_posts_once(
    server: SandboxServer, base: str, ledger: AsyncLedger, tmp_path: Path
) -> None:
    config = {
        "origin": base,
        "ledger": str(tmp_path / "ledger.db"),
        "evidence": str(tmp_path / "evidence"),
        "text": "Killed after the click",
    }
    key = post_key("Killed after the click").value
    code, lines, out = run(
        config,
        tmp_path / "doomed.json",
        ACTONCE_CRASH_AT="after_perform",
        ACTONCE_CRASH_MODE="kill",
    )
    assert code == -signal.SIGKILL, out
    assert lines == [], out  # it never answered its model
    record = await ledger.get(key)
    assert record is not None and record.status is Status.EXECUTING
    assert server.db.ground_truth()["totals"]["posts"] == 1

    code, lines, out = run(config, tmp_path / "restart.json")
    assert code == 0, out
    [answered] = lines
    assert (answered["answer"]["outcome"], answered["answer"]["performed"]) == ("skipped", False)
    assert answered["answer"]["result_ref"] == base + "/posts/1"
    record = await ledger.get(key)
    assert record is not None and record.status is Status.CONFIRMED
    assert server.db.ground_truth()["totals"]["posts"] == 1
    assert [m for m in mutating(server) if m[1] == "/compose"] == [("POST", "/compose")]
    assert await ledger.firewall.totals() == {}
