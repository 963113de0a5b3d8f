"""A browser-use agent under actonce's write firewall (``pip install 'actonce[browser-use]'``).

Run it: ``python examples/browser_use_agent.py``. It serves the sandbox on
127.0.0.1, starts alice's guarded browser (headless Chromium, the firewall
on every target) and runs browser-use's own ``Agent`` with a scripted model
(no provider, no key) that does what a model may do: open the compose page,
type, click *Publish* itself — refused, nothing is sent, the refusal is in
the ledger and the click's result tells the model to use the guarded action
— then call the guarded ``publish_post`` twice (a retry): one post.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

# browser-use phones home unless told not to (read when it is imported).
for name in ("ANONYMIZED_TELEMETRY", "BROWSER_USE_CLOUD_SYNC", "BROWSER_USE_VERSION_CHECK"):
    os.environ.setdefault(name, "false")

from browser_use import Agent  # noqa: E402

from actonce import AsyncLedger, RequestPattern, effect_key  # noqa: E402
from actonce.adapters.browser_use import GuardedBrowser, ScriptedModel, element_index  # noqa: E402
from actonce.sandbox import SEED_USERS, SandboxServer  # noqa: E402


async def main(folder: Path) -> dict[str, Any]:
    with SandboxServer() as site:
        origin = site.url
        ledger = AsyncLedger.open(str(folder / "actonce.db"), create=True)
        guarded = await GuardedBrowser.start(
            ledger,
            origin,
            "alice",
            allow=[RequestPattern("POST", "/login", origin=origin)],  # signing in changes nothing
            evidence_dir=folder / "evidence",
        )
        try:
            await guarded.session.login(SEED_USERS["alice"])  # typed into the page, never stored

            @guarded.action(
                "Publish a post with this text (at most once).",
                requests=[("POST", "/compose")],
                key=lambda text: effect_key(
                    tenant="sandbox", actor="alice", kind="post", object=text, operation="publish"
                ),
            )
            def publish_post(session: Any, text: str) -> Any:
                return session.post_effect(text)

            model = ScriptedModel(
                [
                    {"navigate": {"url": origin + "/compose"}},
                    lambda page: {
                        "input": {"index": element_index(page, tag="textarea"), "text": "Hi"}
                    },
                    lambda page: {"click": {"index": element_index(page, "Publish", tag="button")}},
                    {"publish_post": {"text": "Hi"}},
                    {"publish_post": {"text": "Hi"}},  # the model retries
                ]
            )
            agent = Agent(
                task="Publish 'Hi' as alice",
                llm=model,
                browser_session=guarded.browser_session,
                tools=guarded.tools,
                use_judge=False,
            )
            history = await agent.run(max_steps=8)
            said = [r.error or r.extracted_content for s in history.history for r in s.result]
            refusals = await ledger.firewall.refusals()
        finally:
            await guarded.aclose()
            await ledger.aclose()
        return {
            "click": said[2],
            "publish": [json.loads(said[3])["outcome"], json.loads(said[4])["outcome"]],
            "refusals": [(r.method, r.url, r.reason.value) for r in refusals],
            "posts": site.db.ground_truth()["totals"]["posts"],
        }


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        out = asyncio.run(main(Path(folder)))
    print(out["click"])  # actonce's write firewall refused 1 request(s) ... publish_post instead.
    print(out["publish"], out["refusals"], "posts:", out["posts"])
    # ['completed', 'skipped'] [('POST', 'http://127.0.0.1:…/compose', 'outside_effect')] posts: 1
