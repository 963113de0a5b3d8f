"""The write firewall on an agent's Playwright browser (docs/browser.md).

    python examples/playwright_firewall.py

A sandbox, a Chromium, an agent's session with the firewall on: the agent's
own click on *Publish* is refused and recorded; the same post as an effect
goes out once; the notes site's two-request Save, declared, is published once.
"""

from __future__ import annotations

from actonce import RequestPattern, effect_key, open_ledger
from actonce.browser import Browser, NoteEffect, as_effect
from actonce.sandbox import SEED_USERS, SandboxServer


async def agent_clicks_publish(s):  # what a model that drives the page may do
    await s.goto("/compose")
    await s.page.get_by_test_id("editor").fill("Posted by the agent itself")
    await s.page.get_by_role("button", name="Publish").click()
    await s.page.get_by_test_id("firewall-refusal").wait_for()
    return await s.page.get_by_test_id("firewall-refusal").text_content()


def main() -> None:
    with SandboxServer() as server, Browser() as browser, open_ledger("memory://") as ledger:
        origin = server.url
        session = browser.new_session(
            origin,
            "alice",
            ledger=ledger,  # with a ledger, the firewall is on
            allow=[RequestPattern("POST", "/login", origin=origin)],  # signing in changes nothing
        )
        session.login(SEED_USERS["alice"])

        print(session.run(agent_clicks_publish))  # POST …/compose was not sent: outside an effect.
        session.firewall.settled()
        print(ledger.firewall.totals())  # {'alice': 1}

        key = effect_key(tenant="demo", actor="alice", kind="post", object="hello",
                         operation="publish")  # fmt: skip
        print(ledger.run(as_effect(session.post_effect("Hello, once"), key)).outcome)  # completed

        note = session.effect(NoteEffect("alice", "Draft, then publish"))  # two declared requests
        key = effect_key(tenant="demo", actor="alice", kind="note", object="n1",
                         operation="publish")  # fmt: skip
        print(ledger.run(as_effect(note, key)).outcome)  # completed
        print([(r["method"], r["url"].removeprefix(origin), r["outcome"]) for r in note.wire])
        # [('POST', '/notes', 201), ('POST', '/analytics', 'refused: undeclared request'),
        #  ('POST', '/notes/1/publish', 200)]   (the page's beacon: not allowlisted here)
        session.close()


if __name__ == "__main__":
    main()
