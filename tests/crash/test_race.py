"""Real processes racing the same keys, released together through a pipe gate.

Each process connects, prints ``ready`` and blocks on its stdin; the test
waits for every ``ready`` and then writes ``go`` to all of them. The ground
truth (the provider's accepted effects) must show exactly one effect per
key, and the processes together must report exactly one perform per key.
"""

from __future__ import annotations

import pytest

from .conftest import World, finish, read_json

PROCESSES = 4
KEYS = 12


@pytest.mark.parametrize("verify_after_claim", [True, False], ids=["verify", "direct"])
def test_racing_processes_perform_once_per_key(world: World, verify_after_claim: bool) -> None:
    refs = [f"k{i}" for i in range(KEYS)]
    policy = {"verify_after_claim": verify_after_claim, "settle_seconds": 5.0}
    procs = [world.spawn(refs, policy, gate=True) for _ in range(PROCESSES)]
    for proc in procs:
        assert "ready" in read_json(proc)
    for proc in procs:  # open the gate
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    results = []
    for proc in procs:
        results += finish(proc)
        assert proc.returncode == 0

    assert world.accepted() == dict.fromkeys(refs, 1)
    performs = [r["ref"] for r in results if r["performed"]]
    assert sorted(performs) == sorted(refs)
    assert len(results) == PROCESSES * KEYS
    # Losers either saw the winner's live claim or its confirmed result.
    assert {r["outcome"] for r in results} <= {"completed", "skipped", "deferred"}
    for ref in refs:
        assert world.status(ref) == "confirmed"
