"""A browser-use agent under the write firewall: the model clicks, only guarded actions change.

Each test drives browser-use's own ``Agent`` with a scripted model in real
Chromium against the sandbox, and checks three sides: what the model was
told (its actions' results, the page it saw next), what the ledger holds
(effects and refusals), and what the sandbox received.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from actonce import AsyncLedger, RefusalReason, Status
from actonce.sandbox import FaultRule, SandboxServer
from actonce.testing import observing

from .conftest import mutating, need_browser_use

need_browser_use()
pytestmark = pytest.mark.browser

from actonce.adapters.browser_use import element_index  # noqa: E402

from .kit import alice, post_key, post_registry, results, run_agent  # noqa: E402

LOGIN = [("POST", "/login")]


def answer(result: dict[str, Any]) -> dict[str, Any]:
    """A guarded action's answer to the model (the tool result it returned)."""
    data: dict[str, Any] = json.loads(result["content"])
    return data


async def test_the_model_clicking_publish_itself_is_refused_and_recorded(
    server: SandboxServer, base: str, ledger: AsyncLedger, tmp_path: Path
) -> None:
    async with alice(ledger, base, str(tmp_path / "evidence")) as guarded:
        model, history = await run_agent(
            guarded,
            [
                {"navigate": {"url": base + "/compose"}},
                lambda p: {"input": {"index": element_index(p, tag="textarea"), "text": "Hi"}},
                lambda p: {"click": {"index": element_index(p, "Publish", tag="button")}},
                {"wait": {"seconds": 0}},
            ],
        )
    click = results(history)[2]
    # The click "worked" in the page; its request never left, and the model is told why.
    assert "Clicked" in (click["content"] or "")
    assert "refused 1 request(s)" in click["error"]
    assert "POST " + base + "/compose (outside an effect)" in click["error"]
    assert "call the guarded action publish_post instead" in click["error"]
    # The next page the model saw is the firewall's answer, not a post.
    assert "Refused by actonce's write firewall" in model.prompts[3]
    assert server.db.ground_truth()["totals"]["posts"] == 0
    assert mutating(server) == LOGIN
    [refusal] = await ledger.firewall.refusals()
    assert (refusal.actor, refusal.method, refusal.url, refusal.reason, refusal.via) == (
        "alice",
        "POST",
        base + "/compose",
        RefusalReason.OUTSIDE_EFFECT,
        "cdp",
    )
    assert refusal.page == base + "/compose" and refusal.effect_key is None
    assert await ledger.firewall.totals() == {"alice": 1}


async def test_the_model_calling_the_guarded_action_twice_posts_once(
    server: SandboxServer, base: str, ledger: AsyncLedger, tmp_path: Path
) -> None:
    async with alice(ledger, base, str(tmp_path / "evidence")) as guarded:
        _model, history = await run_agent(
            guarded,
            [
                {"publish_post": {"text": "Once, said twice"}},
                {"publish_post": {"text": "Once, said twice"}},
            ],
        )
    first, second = (answer(r) for r in results(history)[:2])
    assert (first["outcome"], first["performed"], first["status"]) == (
        "completed",
        True,
        "confirmed",
    )
    assert (second["outcome"], second["performed"]) == ("skipped", False)
    assert first["result_ref"] == second["result_ref"] == base + "/posts/1"
    assert mutating(server) == [*LOGIN, ("POST", "/compose")]
    assert server.db.ground_truth()["totals"]["posts"] == 1
    record = await ledger.get(post_key("Once, said twice").value)
    assert record is not None and record.status is Status.CONFIRMED
    assert await ledger.firewall.totals() == {}


async def test_a_lost_answer_during_the_guarded_action_is_unknown_then_reconciled(
    server: SandboxServer, base: str, ledger: AsyncLedger, tmp_path: Path
) -> None:
    """The submit's answer is lost and search is rate-limited: unknown, never a second post."""
    server.sandbox.faults.configure([FaultRule("post.create", "lost_response", times=1)])

    def search_down_after_the_perform(point: str) -> None:
        if point == "after_perform":
            server.sandbox.faults.configure([FaultRule("view.search", "rate_limit")])

    async with alice(ledger, base, str(tmp_path / "evidence")) as guarded:
        with observing(search_down_after_the_perform):
            _model, history = await run_agent(
                guarded,
                [
                    {"publish_post": {"text": "Lost, then found"}},
                    {"publish_post": {"text": "Lost, then found"}},
                ],
            )
        first, again = (answer(r) for r in results(history)[:2])
        assert (first["outcome"], first["performed"], first["status"]) == (
            "needs_review",
            True,
            "unknown",
        )
        assert "do not call this tool again" in first["advice"]
        # The model retried anyway: nothing is performed again.
        assert (again["outcome"], again["performed"]) == ("needs_review", False)
        assert server.db.ground_truth()["totals"]["posts"] == 1

        server.sandbox.faults.configure([])  # search is back: reconcile settles it
        reconciler = AsyncLedger.open(str(tmp_path / "ledger.db"), registry=post_registry(guarded))
        try:
            report = await reconciler.reconcile()
        finally:
            await reconciler.aclose()
    assert [r.status for r in report.results] == [Status.CONFIRMED], report.results
    record = await ledger.get(post_key("Lost, then found").value)
    assert record is not None and record.status is Status.CONFIRMED
    assert record.result_ref == base + "/posts/1"
    assert mutating(server) == [*LOGIN, ("POST", "/compose")]
    assert server.db.ground_truth()["duplicates"] == []
    assert await ledger.firewall.totals() == {}


# What a page (or the model, through browser-use's ``evaluate``) can send
# behind the agent's back. Each one is a mutating request outside any effect.
SCRIPTS = {
    "fetch": "fetch('/compose', {method: 'POST', body: 'text=f'}).then(r => 'sent', e => 'refused')",
    "xhr": "new Promise(done => { const x = new XMLHttpRequest(); x.open('POST', '/compose');"
    " x.onload = () => done('sent'); x.onerror = () => done('refused'); x.send('text=x'); })",
    "beacon": "navigator.sendBeacon('/compose', 'text=b') ? 'queued' : 'not queued'",
    "iframe": "(() => { const f = document.createElement('iframe'); f.srcdoc ="
    " \"<form method=post action='/compose'><input name=text value=i></form>"
    "<script>document.forms[0].submit()</script>\"; document.body.append(f); return 'added'; })()",
    "worker": "new Promise(done => { const w = new Worker(URL.createObjectURL(new Blob(["
    "\"fetch(self.origin + '/compose', {method: 'POST', body: 'text=w'})"
    ".then(() => postMessage('sent'), () => postMessage('refused'))\"]))); w.onmessage = m => done(m.data); })",
}


async def test_popup_iframe_fetch_and_beacon_posts_outside_an_effect_are_refused(
    server: SandboxServer, base: str, ledger: AsyncLedger, tmp_path: Path
) -> None:
    other = base.replace("127.0.0.1", "localhost")  # another site: a cross-process iframe
    cross_site = (
        "(() => { const f = document.createElement('iframe'); f.name = 'away';"
        " document.body.append(f); const form = document.createElement('form');"
        f" form.method = 'post'; form.action = '{other}/compose'; form.target = 'away';"
        " document.body.append(form); form.submit(); return 'posted'; })()"
    )
    popup_button = (
        "(() => { const form = document.createElement('form'); form.method = 'post';"
        " form.action = '/compose'; form.target = '_blank';"
        " form.innerHTML = '<button>Open in a new window</button>';"
        " document.body.append(form); return 'ready'; })()"
    )
    shared_worker = (
        '(() => { new SharedWorker(URL.createObjectURL(new Blob(["onconnect = () =>'
        " fetch(self.origin + '/compose', {method: 'POST', body: 'text=s'})\"]))).port.start();"
        " return 'started'; })()"
    )
    steps: list[Any] = [{"navigate": {"url": base + "/search"}}]
    steps += [{"evaluate": {"code": code}} for code in SCRIPTS.values()]
    steps += [
        {"evaluate": {"code": cross_site}},
        {"evaluate": {"code": popup_button}},
        lambda p: {"click": {"index": element_index(p, "Open in a new window", tag="button")}},
        {"evaluate": {"code": shared_worker}},
        {"wait": {"seconds": 0}},
    ]
    async with alice(ledger, base, str(tmp_path / "evidence")) as guarded:
        _model, history = await run_agent(guarded, steps, max_steps=len(steps) + 1)
        await guarded.firewall.settled()
        blocked = guarded.firewall.blocked_workers
    said = results(history)
    assert [said[i]["content"] for i in (1, 2, 5)] == ["refused", "refused", "refused"]
    refusals = await ledger.firewall.refusals(limit=100)
    kinds = sorted((r.url, r.reason.value) for r in refusals)
    assert kinds == sorted(
        [(base + "/compose", "outside_effect")] * 6 + [(other + "/compose", "outside_effect")]
    ), kinds
    assert {r.via for r in refusals} == {"cdp"}
    assert blocked >= 1  # the shared worker never ran
    assert mutating(server) == LOGIN  # not one of them reached the sandbox
    assert server.db.ground_truth()["totals"]["posts"] == 0
