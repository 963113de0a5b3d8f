"""Canaries: the signing key and the reply codes never leave the process that holds them.

A whole approval flow runs on a SQLite ledger (answers right and wrong, forged
links, a refreshed packet and its resent code, a commit), then every place a
secret could end up is searched for every spelling of the key and for every
code: the ledger file and its WAL, every event of every history, the logs,
and the output (text and JSON) of every CLI command.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actonce import Event, Ledger, SQLiteStore, UnknownEffect
from actonce.testing import FrozenClock

from .conftest import KEY_HEX, KEYS, World
from .test_tampering import forge


def spellings(secret: bytes) -> list[bytes]:
    """The ways a key could be written down."""
    return [
        secret,
        secret.hex().encode(),
        secret.hex().upper().encode(),
        base64.b64encode(secret).rstrip(b"="),
        base64.urlsafe_b64encode(secret).rstrip(b"="),
    ]


def events_text(ledger: Ledger, keys: list[str]) -> str:
    out: list[Event] = []
    for key in keys:
        with contextlib.suppress(UnknownEffect):
            out.extend(ledger.events(key))
    return json.dumps(
        [[e.key, e.type.value, e.message, e.data, e.run_id] for e in out], default=str
    )


def run_cli(*args: str, stdin: str | None = None) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
           "ACTONCE_APPROVAL_KEYS": f"k1:{KEY_HEX}"}  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "actonce", *args], capture_output=True,
                          text=True, env=env, input=stdin, timeout=60)  # fmt: skip
    return proc.stdout + proc.stderr


def test_no_secret_reaches_the_ledger_events_logs_or_cli(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    path = str(tmp_path / "ledger.db")
    clock = FrozenClock(time.time())  # the CLI reads the wall clock: packets must be live
    from actonce.testing import FakeProvider

    ledger = Ledger(SQLiteStore(path, create=True), clock=clock, signing_keys=KEYS)
    world = World(ledger, clock, FakeProvider(clock=clock), "sqlite")
    codes: list[str] = []
    trip = world.intent()
    req = world.request(trip)
    codes.append(req.code)
    other = world.request(world.intent("trip-2"))
    codes.append(other.code)
    ap = ledger.approvals
    # Wrong codes (each a guess: canaries too), forged links, a code for another user.
    guesses = ["QQQQ2345", req.code[::-1]]
    for guess in guesses:
        ap.answer_code(guess, "approve", by="ana")
    ap.answer_code(req.code, "approve", by="bob")
    ap.answer_link(forge(req.link, 4, "1"), "approve", by="ana")
    assert ap.answer_code(req.code, "approve", by="ana").answer.value == "accepted"
    ap.answer_code(req.code, "approve", by="ana")  # replayed
    # The price moves: a refreshed packet, sent with a fresh code, approved, committed.
    world.facts["price"] = "130"
    assert ledger.run(world.effect(trip, req.packet)).outcome.value == "needs_approval"
    fresh = ap.get(req.packet.packet_id).replaced_by
    assert fresh is not None
    again = ap.resend(fresh)
    codes.append(again.code)
    again2 = ap.resend(fresh)  # the message was lost: another code, the first stops working
    codes.append(again2.code)
    ap.answer_code(again.code, "approve", by="ana")  # the stale code: refused
    ap.answer_code(again2.code, "approve", by="ana")
    assert ledger.run(world.effect(trip, fresh)).outcome.value == "completed"
    key = world.key(trip).value
    # The command line: every read command, text and JSON, and answers with codes.
    outputs = []
    for args in (("status",), ("list",), ("intents",), ("intents", "trip"), ("approvals",),
                 ("show", key[:12]), ("show", world.key(world.ledger.intents.get("trip-2")).value)):  # fmt: skip
        for extra in ((), ("--json",)):
            outputs.append(run_cli(*args, *extra, "--ledger", path))
    pid = other.packet.packet_id
    outputs.append(run_cli("approve", pid, "--by", "ana", "--code", "ZZZZ2345", "--ledger", path))
    guesses.append("ZZZZ2345")
    outputs.append(run_cli("approve", pid, "--by", "ana", "--code", "-", "--ledger", path,
                           "--json", stdin=other.code))  # fmt: skip
    outputs.append(run_cli("deny", pid, "--by", "ana", "--code", other.code, "--ledger", path))
    outputs.append(run_cli("approve", pid, "--by", "ana", "--link", other.link, "--ledger", path))
    assert ap.get(pid).status.value == "approved"
    histories = [key, "approval:links", "approval:codes", "intent:trip", "intent:trip-2"] + [
        f"approval:{p.packet_id}" for p in ap.list()
    ]
    events = events_text(ledger, histories)
    stored = b"".join(Path(path + s).read_bytes() for s in ("", "-wal") if Path(path + s).exists())
    assert len(stored) > 10_000 and b"approval_refused" in stored  # the flow did reach the file
    ledger.close()
    after_close = b"".join(
        Path(path + s).read_bytes() for s in ("", "-wal") if Path(path + s).exists()
    )
    places = {
        "ledger file and WAL": stored + after_close,
        "events": events.encode(),
        "logs": caplog.text.encode(),
        "cli output": "\n".join(outputs).encode(),
        "reprs": repr([ap.keys, req.packet, again.packet]).encode(),
    }
    secrets = spellings(KEYS.keys[0][1]) + [c.encode() for c in codes + guesses]
    leaks = [
        (where, secret[:4] + b"...")
        for where, text in places.items()
        for secret in secrets
        if secret in text or (secret.lower() in text.lower() and len(secret) >= 16)
    ]
    assert leaks == []
    # The canaries were real: the codes were accepted and the output was produced.
    assert all(out for out in outputs)
    world.provider.close()
