"""A reviewer in a real Chromium, against a real console on a real SQLite ledger.

Ana signs in, opens the queue, opens the unknown invoice, sees its evidence
screenshot (decoded by the browser), holds the item, and resolves it with a
reason; meanwhile Bo, in another browser context, sees it held by ana. The
ledger then holds exactly one decision event, by ana. The screenshots of
the queue and the effect page are saved as test artifacts (under the test's
temporary folder, or ``$ACTONCE_ARTIFACTS``); with
``ACTONCE_UPDATE_SCREENSHOTS=1`` they replace the ones ``docs/console.md`` shows.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actonce import Status
from actonce.browser import DEFAULT_ARGS, find_chromium
from actonce.console import ConsoleServer, Settings, ref_of

from .world import PASSWORDS, World, build

pytestmark = pytest.mark.browser
DOCS_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "console"


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where the screenshots go: the docs only when asked, else an artifacts folder."""
    if os.environ.get("ACTONCE_UPDATE_SCREENSHOTS") == "1":
        return DOCS_SHOTS
    root = os.environ.get("ACTONCE_ARTIFACTS")
    return Path(root) / "console" if root else tmp_path / "screenshots"


@pytest.fixture
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=list(DEFAULT_ARGS))
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[World, ConsoleServer]]:
    world = build(tmp_path)
    try:
        with ConsoleServer(world.ledger, world.reviewers(), Settings()) as server:
            yield world, server
    finally:
        world.close()


def _sign_in(page: Any, url: str, name: str) -> None:
    page.goto(url + "/")
    assert page.url.startswith(url + "/login?next=")  # every page asks for a session first
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password or one-time token").fill(PASSWORDS[name])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(url + "/")


def test_a_reviewer_resolves_an_unknown_effect_in_a_browser(
    chromium: Any, live: tuple[World, ConsoleServer], shots: Path
) -> None:
    world, server = live
    key = world.keys["unknown"]
    errors: list[str] = []
    ana_ctx = chromium.new_context(viewport={"width": 1280, "height": 900})
    bo_ctx = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        ana = ana_ctx.new_page()
        ana.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        # Everything a page loads must load (the favicon aside: the console has none).
        ana.on(
            "response",
            lambda r: (
                errors.append(f"{r.status} {r.url}")
                if r.status >= 400 and not r.url.endswith("/favicon.ico")
                else None
            ),
        )
        _sign_in(ana, server.url, "ana")
        queue = ana.get_by_test_id("queue")
        assert queue.is_visible()
        assert ana.get_by_test_id("reviewer").inner_text() == "ana"
        shots.mkdir(parents=True, exist_ok=True)
        ana.screenshot(path=str(shots / "queue.png"), full_page=True)

        ana.get_by_role("link", name=re.compile("create invoice ORDER-9201")).click()
        ana.wait_for_url(f"{server.url}/effects/{ref_of(key)}")
        question = ana.get_by_test_id("question").inner_text()
        assert question == "Did create invoice ORDER-9201 for acme (120.00 EUR) happen?"
        shot = ana.get_by_test_id("screenshot")
        shot.wait_for()
        # The browser fetched and decoded the evidence PNG (not a broken image).
        assert shot.evaluate("img => img.complete && img.naturalWidth") == 320
        assert "api_key=[redacted]" in ana.get_by_test_id("wire").inner_text()

        ana.get_by_role("button", name=re.compile("Hold to decide")).click()
        assert "You hold this item until" in ana.get_by_test_id("held-by").inner_text()

        bo = bo_ctx.new_page()
        _sign_in(bo, server.url, "bo")
        bo.goto(f"{server.url}/effects/{ref_of(key)}")
        held = bo.get_by_test_id("held-by").inner_text()
        assert re.search(r"Held by ana until \d\d:\d\d:\d\d UTC", held), held
        assert bo.get_by_role("button", name="Record the decision").count() == 0
        bo.screenshot(path=str(shots / "effect-held-by-another.png"), full_page=True)

        ana.get_by_label(re.compile("Not found at the provider")).check()
        chosen = ana.locator(".choice.chosen")  # the script marks the chosen consequence
        assert "releases the reservation" in chosen.inner_text().lower()
        ana.get_by_label(re.compile("^Reason")).fill("searched the billing UI: no ORDER-9201")
        ana.screenshot(path=str(shots / "effect.png"), full_page=True)
        ana.get_by_role("button", name="Record the decision").click()
        ana.wait_for_load_state()
        assert ana.get_by_test_id("status").inner_text() == "failed"
        assert "Recorded by ana" in ana.locator(".flash").inner_text()
    finally:
        ana_ctx.close()
        bo_ctx.close()
    decisions = [e for e in world.ledger.events(key) if e.run_id.startswith("review:")]
    assert len(decisions) == 1
    assert decisions[0].data["reviewer"] == "ana"
    assert (
        decisions[0].message == "not found at the provider: searched the billing UI: no ORDER-9201"
    )
    assert world.ledger.get(key).status is Status.FAILED  # type: ignore[union-attr]
    # No CSP violation, no script error, nothing that failed to load.
    assert [e for e in errors if "Failed to load resource" not in e] == []


def test_a_reviewer_moves_an_operation_in_review_in_a_browser(
    chromium: Any, live: tuple[World, ConsoleServer], shots: Path
) -> None:
    world, server = live
    op = world.operations["review"]
    errors: list[str] = []
    ctx = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        ana = ctx.new_page()
        ana.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        _sign_in(ana, server.url, "ana")
        row = ana.get_by_test_id("operations").get_by_role("row").filter(has_text=op)
        assert "240.00 EUR held" in row.inner_text() and "the undo of pay" in row.inner_text()
        row.get_by_role("link", name=op).click()
        ana.wait_for_url(f"{server.url}/operations/{ref_of(op)}")
        assert ana.get_by_test_id("question").inner_text() == f"Did {op} go through?"
        assert ana.get_by_test_id("state").inner_text() == "needs_review"
        assert ana.get_by_test_id("money").inner_text() == "240.00 EUR held"
        ana.get_by_role("button", name=re.compile("Hold to decide")).click()
        ana.get_by_label(re.compile("Record it undone by hand")).check()
        chosen = ana.locator(".choice.chosen")
        assert "counts as done" in chosen.inner_text()
        ana.get_by_label(re.compile("^Reason")).fill("voided at the bank by phone, ref V-1182")
        shots.mkdir(parents=True, exist_ok=True)
        ana.screenshot(path=str(shots / "operation-in-review.png"), full_page=True)
        ana.get_by_role("button", name="Record the decision").click()
        ana.wait_for_load_state()
        assert "Recorded by ana" in ana.locator(".flash").inner_text()
        assert "ana" in ana.get_by_test_id("decisions").inner_text()
        # The console records; the operation's next pass (its own worker) carries it out.
        assert world.runs[op].run().state.value == "compensated"
        ana.goto(f"{server.url}/receipts/{ref_of(op)}")
        told = ana.get_by_test_id("receipt-text").inner_text()
        assert "did not go through; what had been done was undone." in told
        assert "240.00 EUR" in told and "undone by hand" in told
        ana.screenshot(path=str(shots / "receipt-compensated.png"), full_page=True)
    finally:
        ctx.close()
    assert [e for e in errors if "Failed to load resource" not in e] == []  # the favicon aside
