"""The fault matrix of ``actonce.http``: every fault, a provider with and without keys.

Each cell runs one effect through a real ledger against the real provider on
127.0.0.1 and checks the provider's ground truth (never a duplicate; the
expected number of charges), the run's outcome under an authoritative
lookup and under the conservative default (absence proves nothing), what
went over the wire (one POST without keys; every POST with the same key
with keys) and the wire evidence in the ledger. ``docs/http.md`` shows the
same table (:func:`test_the_docs_show_this_matrix`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from actonce import Event, Ledger, Outcome, RunResult, Status
from actonce.http import Provider

from .charges import charge, key_of
from .conftest import closed_port
from .provider_app import ProviderApp

DOCS = Path(__file__).resolve().parents[2] / "docs" / "http.md"

C, F, R, H = Outcome.COMPLETED, Outcome.FAILED, Outcome.NEEDS_REVIEW, Outcome.HARD_STOP


@dataclass(frozen=True)
class Row:
    name: str
    fault: str | None  # the provider's one-shot fault
    target: str  # where the request goes: "app", "closed", "unresolvable", "tls"
    no_key: tuple[int, Outcome, Outcome]  # charges, outcome (authoritative), outcome (default)
    key: tuple[int, Outcome, Outcome]


ROWS = [
    Row("no fault", None, "app", (1, C, C), (1, C, C)),
    Row("close after commit, no byte", "close_after_commit", "app", (1, C, C), (1, C, C)),
    Row("RST before commit", "reset_before_commit", "app", (0, F, R), (1, C, C)),
    Row("RST after commit", "reset_after_commit", "app", (1, C, C), (1, C, C)),
    Row("hang past the bound (after commit)", "hang_after_commit", "app", (1, C, C), (1, C, C)),
    Row("500 before commit", "error_before_commit", "app", (0, F, R), (1, C, C)),
    Row("500 after commit", "error_after_commit", "app", (1, C, C), (1, C, C)),
    Row("409 (keys: in progress; else conflict)", "in_progress", "app", (0, F, F), (1, C, C)),
    Row("307 redirect (not followed)", "redirect", "app", (0, F, R), (0, F, R)),
    Row("422 validation", "status:422", "app", (0, F, F), (0, F, F)),
    Row("401 credentials", "status:401", "app", (0, H, H), (0, H, H)),
    Row("429 rate limit", "status:429", "app", (0, H, H), (0, H, H)),
    Row("connection refused (closed port)", None, "closed", (0, F, F), (0, F, F)),
    Row("unresolvable name", None, "unresolvable", (0, F, F), (0, F, F)),
    Row("TLS handshake fails", None, "tls", (0, F, F), (0, F, F)),
]

#: A perform whose request provably never left: failed at once, nothing on the wire.
NOT_SENT = {"closed": "connection refused", "unresolvable": "name not resolved",
            "tls": "TLS handshake failed"}  # fmt: skip


def _base(app: ProviderApp, target: str) -> str:
    port = app.url.rpartition(":")[2]
    return {
        "app": app.url,
        "closed": f"http://127.0.0.1:{closed_port()}",
        "unresolvable": f"http://provider.invalid:{port}",
        "tls": f"https://127.0.0.1:{port}",
    }[target]


def arrange(
    row: Row,
    keys: bool,
    authoritative: bool,
    app: ProviderApp,
    make: Callable[..., Any],
    prefix: str = "ORDER",
) -> tuple[str, Any]:
    """The cell's reference and provider (``make``: a ``Provider`` or ``AsyncProvider``)."""
    reference = f"{prefix}-{row.fault or row.target}-{keys}-{authoritative}"
    provider = make(_base(app, row.target), idempotency_keys=keys)
    app.script(reference, row.fault)
    return reference, provider


def bound_of(row: Row) -> dict[str, float]:
    """A hang meets the perform's bound itself (no other cell waits for one)."""
    return {"bound": 0.5} if row.fault == "hang_after_commit" else {}


def check(
    row: Row,
    keys: bool,
    authoritative: bool,
    app: ProviderApp,
    reference: str,
    result: RunResult,
    events: list[Event],
) -> None:
    """What the cell must show: truth, outcome, the requests sent, the wire evidence."""
    charges, when_authoritative, by_default = row.key if keys else row.no_key
    assert app.count(reference) == charges  # the ground truth: never a duplicate
    assert result.outcome is (when_authoritative if authoritative else by_default), result.reason
    posts = [p for p in app.posts if p["reference"] == reference]
    sent_keys = {p["key"] for p in posts}
    if keys:
        assert sent_keys <= {key_of(reference).value}  # one key, the effect key, every send
    else:
        assert len(posts) <= 1 and sent_keys <= {None}  # sent once at most, no key
    wire = wire_in(events)
    if row.target in NOT_SENT:
        assert posts == []
        assert [w["outcome"] for w in wire] == [f"not sent: {NOT_SENT[row.target]}"]
        assert result.status is Status.FAILED
    else:
        assert len(wire) == len(posts)  # every send is in the evidence, once
    if row.fault == "hang_after_commit":
        assert [w["outcome"] for w in wire] == ["timed out"]  # the bound leaves no resend
    for record in wire:
        assert set(record) == {"method", "url", "at", "outcome", "took"}
        assert record["method"] == "POST" and record["url"].endswith("/v1/charges")


def _cells() -> list[object]:
    # Every row with an authoritative lookup; under the default policy, the
    # rows where the authority changes the outcome (and the happy path).
    cells = []
    for row in ROWS:
        differs = row.no_key[1:] != row.no_key[1:][::-1] or row.key[1:] != row.key[1:][::-1]
        for authoritative in (True, False):
            if authoritative or differs or (row.fault is None and row.target == "app"):
                kind = "authoritative" if authoritative else "default"
                cells.append(
                    pytest.param(row, authoritative, id=f"{row.fault or row.target}-{kind}")
                )
    return cells


@pytest.mark.parametrize(("row", "authoritative"), _cells())
def test_cell(
    row: Row,
    keys: bool,
    authoritative: bool,
    app: ProviderApp,
    ledger: Ledger,
    make_provider: Callable[..., Provider],
) -> None:
    reference, provider = arrange(row, keys, authoritative, app, make_provider)
    lookups = make_provider(app.url)  # verification reads the real provider
    effect = charge(
        provider, reference, lookups=lookups, authoritative=authoritative, **bound_of(row)
    )
    result = ledger.run(effect)
    check(row, keys, authoritative, app, reference, result, ledger.events(result.key))


def wire_in(events: list[Event]) -> list[dict[str, Any]]:
    """The wire records of the perform, from an effect's history."""
    for event in events:
        details = event.data.get("perform", {}).get("details", {})
        if "wire" in details:
            return list(details["wire"])
    raise AssertionError("no wire evidence in the history")


def wire_of(ledger: Ledger, key: str) -> list[dict[str, Any]]:
    return wire_in(ledger.events(key))


def matrix_markdown() -> str:
    """The matrix as docs/http.md shows it."""

    def cell(c: tuple[int, Outcome, Outcome]) -> str:
        same = c[1] is c[2]
        outcome = str(c[1]) if same else f"{c[1]} ({c[2]} by default)"
        return f"{c[0]}, {outcome}"

    lines = [
        "| fault | without key: charges, outcome | with key: charges, outcome |",
        "|---|---|---|",
    ]
    lines += [f"| {r.name} | {cell(r.no_key)} | {cell(r.key)} |" for r in ROWS]
    return "\n".join(lines)


def test_the_docs_show_this_matrix() -> None:
    assert matrix_markdown() in DOCS.read_text(encoding="utf-8"), matrix_markdown()
