"""Issue 15, counted: one click against a server that closes without answering.

    python benchmarks/wire.py [--performs 100] [--clicks 100] [--json]

One sandbox server and one Chromium. Every submit hits a ``lost_response``
fault that commits the post and then closes the connection without a single
response byte — FIN and RST alternating — on a reused keep-alive connection:

- ``unguarded``: plain Playwright, no actonce — load the form (a GET on the
  same origin, whose socket stays alive), fill it, click Publish once. The
  submit reuses the form's connection, which is when Chromium resends a POST
  that got no answer.
- ``guarded``: ``effect.perform()`` of the adapter's post effect, network
  guard on. Each faulted perform follows a clean one, so the guard's own
  HTTP client sends the faulted submit on a reused keep-alive connection too.

The counts come from the server, not from the browser: the sandbox's
database (objects per post text) and its request log (POSTs per text, which
connection, its position on it). The clean performs of the guarded side are
counted apart. The last line (with ``--json``) is one JSON object; nothing is
asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import time
from typing import Any

from actonce.browser import AsyncBrowserSession, Browser, BrowserSession, OutcomeUnknown
from actonce.sandbox import SEED_USERS, FaultRule, SandboxServer

_POST_URL = re.compile(r"/posts/\d+$")


async def raw_publish(s: AsyncBrowserSession, text: str) -> None:
    """Plain Playwright on the session's page: load the form, fill, click once."""
    page = s.page
    await page.goto(s.url("/compose"))
    await page.get_by_test_id("editor").fill(text)
    await page.get_by_role("button", name="Publish").click()
    with contextlib.suppress(Exception):  # no resend: the page shows the error
        await page.wait_for_url(_POST_URL, timeout=5000)


def session_for(browser: Browser, server: SandboxServer) -> BrowserSession:
    session = browser.new_session(server.url, "alice", timeout=5.0, confirm_timeout=5.0)
    session.login(SEED_USERS["alice"])
    return session


def server_counts(server: SandboxServer, texts: list[str]) -> dict[str, Any]:
    """Objects and POSTs per text, read from the sandbox itself."""
    objects = {g["key"]["text"]: g["count"] for g in server.db.ground_truth()["posts"]}
    posts = [r for r in server.sandbox.faults.log() if r["action"] == "post.create"]
    faulted = [r for r in posts if r["faults"]]
    # The clean performs between guarded submits answer normally: one POST each.
    clean = sum(n for text, n in objects.items() if text.startswith("wire clean"))
    return {
        "objects": sum(objects.get(t, 0) for t in texts),
        "intents_with_duplicates": sum(objects.get(t, 0) > 1 for t in texts),
        "server_posts": len(posts) - clean,
        "faulted_posts": len(faulted),
        "faulted_on_reused_connection": sum((r["on_connection"] or 0) >= 2 for r in faulted),
    }


def campaign(browser: Browser, server: SandboxServer, n: int, guarded: bool) -> dict[str, Any]:
    server.db.reset()
    server.sandbox.faults.reset()
    side = "guarded" if guarded else "unguarded"
    texts = [f"wire {side} {i}" for i in range(n)]
    modes = ["close" if i % 2 == 0 else "reset" for i in range(n)]
    server.sandbox.faults.configure(
        [
            FaultRule("post.create", "lost_response", times=1, match={"text": t}, mode=m)  # type: ignore[arg-type]
            for t, m in zip(texts, modes, strict=True)
        ]
    )
    before = server_counts(server, texts)["objects"]
    outcomes: dict[str, int] = {}
    sent = refused = clean = 0
    session = session_for(browser, server)
    started = time.perf_counter()
    try:
        for i, text in enumerate(texts):
            if not guarded:
                session.run(lambda s, text=text: raw_publish(s, text))
                continue
            clean += session.post_effect(f"wire clean {i}").perform()["sent"]
            try:
                details = session.post_effect(text).perform()
                outcomes["completed"] = outcomes.get("completed", 0) + 1
            except OutcomeUnknown as exc:
                details = exc.details  # type: ignore[attr-defined]
                why = details["wire"][0]["outcome"] if details["wire"] else "nothing sent"
                outcomes[why] = outcomes.get(why, 0) + 1
            sent += details["sent"]
            refused += details["refused"]
    finally:
        session.close()
    seconds = time.perf_counter() - started
    out: dict[str, Any] = {
        "submits": n,
        "fin": modes.count("close"),
        "rst": modes.count("reset"),
        "objects_before": before,
        **server_counts(server, texts),
        "seconds": round(seconds, 1),
    }
    out["objects_after"] = out.pop("objects")
    if guarded:
        out.update(outcomes=outcomes, wire_sent=sent, wire_refused=refused, clean_sent=clean)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--performs", type=int, default=100, help="guarded performs")
    parser.add_argument("--clicks", type=int, default=100, help="unguarded raw clicks")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    with SandboxServer() as server, Browser() as browser:
        unguarded = campaign(browser, server, args.clicks, guarded=False)
        print("unguarded:", json.dumps(unguarded), flush=True)
        guarded = campaign(browser, server, args.performs, guarded=True)
        print("guarded:  ", json.dumps(guarded), flush=True)
    print(
        f"one click each, server closed without a response byte: unguarded "
        f"{unguarded['submits']} clicks -> {unguarded['objects_after']} objects "
        f"({unguarded['intents_with_duplicates']} duplicated); guarded "
        f"{guarded['submits']} performs -> {guarded['objects_after']} objects "
        f"({guarded['intents_with_duplicates']} duplicated)"
    )
    if args.json:
        print(json.dumps({"unguarded": unguarded, "guarded": guarded}, sort_keys=True))


if __name__ == "__main__":
    main()
