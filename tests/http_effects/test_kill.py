"""SIGKILL of the calling process mid-request (a real subprocess), then reconcile.

The provider holds the request (before or after committing the charge) and
says so; the test kills the caller by PID. The ledger shows ``executing``;
reconcile, under a clock past the dead caller's lease and the settle window,
settles it by counting the provider's charges, and a new run of the same
intent does only what is left: at most one charge, with or without keys.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from actonce import Ledger, Outcome, Status, SystemClock
from actonce.http import Provider

from .charges import charge, key_of, registry_for
from .provider_app import ProviderApp

CALLER = Path(__file__).with_name("_caller.py")
LATER = 10_000.0  # seconds: every lease has expired, every settle window has passed

#: fault -> (charges, status after reconcile (authoritative), by default)
KILLED = {
    "hold_before_commit": (0, Status.FAILED, Status.NEEDS_REVIEW),
    "hold_after_commit": (1, Status.CONFIRMED, Status.CONFIRMED),
}


@pytest.mark.parametrize(
    ("fault", "authoritative"),
    [
        pytest.param(
            fault, authoritative, id=f"{fault}-{'authoritative' if authoritative else 'default'}"
        )
        for fault, (_, settled, by_default) in KILLED.items()
        for authoritative in (True, False)
        if authoritative or settled is not by_default  # the default changes nothing after commit
    ],
)
def test_sigkill_mid_request_then_reconcile(
    fault: str,
    authoritative: bool,
    keys: bool,
    app: ProviderApp,
    ledger: Ledger,
    ledger_path: str,
    make_provider: Callable[..., Provider],
) -> None:
    reference = f"KILL-{fault}-{authoritative}"
    app.script(reference, fault)
    app.received.clear()
    config = {"ledger": ledger_path, "url": app.url, "keys": keys, "reference": reference}
    proc = subprocess.Popen(
        [sys.executable, str(CALLER), json.dumps(config)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert app.received.wait(60), "the caller's request never reached the provider"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL and out == ""
    key = key_of(reference).value
    assert ledger.get(key).status is Status.EXECUTING  # type: ignore[union-attr]

    charges, settled, by_default = KILLED[fault]
    lookups = make_provider(app.url)
    status = settled if authoritative else by_default
    with Ledger.open(
        ledger_path,
        clock=SystemClock(offset=LATER),
        registry=registry_for(lookups, authoritative=authoritative),
    ) as later:
        report = later.reconcile()
        assert [(r.key, r.status) for r in report.results] == [(key, status)]
        assert app.count(reference) == charges

        # The same intent again: a failed one is replanned (one charge now),
        # a confirmed one is skipped, one in review is never performed again.
        again = later.run(charge(make_provider(app.url, idempotency_keys=keys), reference))
    replanned = {Status.FAILED: Outcome.COMPLETED, Status.CONFIRMED: Outcome.SKIPPED}
    assert again.outcome is replanned.get(status, Outcome.NEEDS_REVIEW)
    assert app.count(reference) == (0 if status is Status.NEEDS_REVIEW else 1)


def kill_markdown() -> str:
    """The kill rows as docs/http.md shows them (the same with and without keys)."""
    replanned = {Status.FAILED: Outcome.COMPLETED, Status.CONFIRMED: Outcome.SKIPPED}
    lines = [
        "| SIGKILL of the caller mid-request | charges | reconcile | the same intent again |",
        "|---|---|---|---|",
    ]
    for fault, (charges, settled, by_default) in KILLED.items():
        when = fault.removeprefix("hold_").replace("_", " ")
        status = str(settled) if settled is by_default else f"{settled} ({by_default} by default)"
        again = f"{replanned[settled]}, {1} charge"
        if by_default is not settled:
            again += f" ({Outcome.NEEDS_REVIEW} by default: never performed again, 0)"
        lines.append(f"| {when} | {charges} | {status} | {again} |")
    return "\n".join(lines)


def test_the_docs_show_these_rows() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "http.md"
    assert kill_markdown() in docs.read_text(encoding="utf-8"), kill_markdown()
