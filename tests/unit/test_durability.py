"""Which SQLite commits are fsynced: the executing mark always, the rest only with sync=all."""

from __future__ import annotations

from pathlib import Path

import pytest

from actonce import Ledger, Resolution, SQLiteStore, Status
from actonce.testing import FakeProvider, Faults, FrozenClock


def _traced(store: SQLiteStore) -> list[str]:
    seen: list[str] = []
    store._conn.set_trace_callback(seen.append)
    return seen


def _sync_level_of_each_commit(statements: list[str]) -> list[tuple[str, str]]:
    """(level in force, the write's first statement) for every committed transaction."""
    level, out, first = "FULL", [], ""
    for sql in statements:
        s = sql.strip()
        if s.upper().startswith("PRAGMA SYNCHRONOUS"):
            level = s.split("=")[1].strip().upper()
        elif s.upper() == "BEGIN IMMEDIATE":
            first = ""
        elif s.upper() == "COMMIT":
            out.append((level, first))
        elif not first:
            first = s.split()[0].upper() + " " + ("executing" if "'executing'" in s else "")
    return out


def test_only_the_executing_mark_is_fsynced_by_default(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "l.db"), create=True)
    seen = _traced(store)
    ledger = Ledger(store, clock=FrozenClock())
    provider = FakeProvider(clock=ledger.clock)
    assert ledger.run(provider.effect("r1")).done
    commits = _sync_level_of_each_commit(seen)
    # claim, executing mark, confirmation: only the mark is fsynced
    assert [lvl for lvl, _ in commits] == ["NORMAL", "FULL", "NORMAL"]
    assert commits[1][1] == "UPDATE executing"


def test_claim_as_executing_mark_is_fsynced(tmp_path: Path) -> None:
    from actonce import Policy

    store = SQLiteStore(str(tmp_path / "l.db"), create=True)
    seen = _traced(store)
    ledger = Ledger(store, clock=FrozenClock())
    provider = FakeProvider(clock=ledger.clock)
    assert ledger.run(provider.effect("r1", policy=Policy(verify_after_claim=False))).done
    assert [lvl for lvl, _ in _sync_level_of_each_commit(seen)] == ["FULL", "NORMAL"]


def test_a_reviewers_decision_is_fsynced(tmp_path: Path) -> None:
    from actonce import Policy

    store = SQLiteStore(str(tmp_path / "l.db"), create=True)
    ledger = Ledger(store, clock=FrozenClock())
    provider = FakeProvider(clock=ledger.clock, faults=Faults(visibility_delay=1e9))
    result = ledger.run(provider.effect("r1", policy=Policy(verify_attempts=1, settle_seconds=0)))
    assert result.status is Status.NEEDS_REVIEW
    seen = _traced(store)
    ledger.resolve(result.key, Resolution.HAPPENED, reviewer="ana", reason="seen it")
    assert [lvl for lvl, _ in _sync_level_of_each_commit(seen)] == ["FULL"]


@pytest.mark.parametrize("url_suffix", ["?sync=all"])
def test_sync_all_fsyncs_every_commit(tmp_path: Path, url_suffix: str) -> None:
    ledger = Ledger.open(
        f"sqlite:///{tmp_path / 'l.db'}{url_suffix}", clock=FrozenClock(), create=True
    )
    assert isinstance(ledger.store, SQLiteStore)
    seen = _traced(ledger.store)
    provider = FakeProvider(clock=ledger.clock)
    assert ledger.run(provider.effect("r1")).done
    assert [lvl for lvl, _ in _sync_level_of_each_commit(seen)] == ["FULL"] * 3


def test_unknown_sqlite_url_option_is_refused(tmp_path: Path) -> None:
    from actonce import BadLedgerURL

    with pytest.raises(BadLedgerURL, match="unknown SQLite URL option"):
        Ledger.open(f"sqlite:///{tmp_path / 'l.db'}?fsync=yes")
    with pytest.raises(BadLedgerURL, match="sync must be"):
        Ledger.open(f"sqlite:///{tmp_path / 'l.db'}?sync=sometimes")
