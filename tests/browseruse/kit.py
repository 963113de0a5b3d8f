"""What the browser-use tests and their agent process share: one actor, one guarded action.

Imported by the tests (``tests.browseruse.kit``) and by ``agent_proc.py``
(as ``kit``, from its own folder).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from actonce import AsyncLedger, Policy, Registry, RequestPattern, effect_key
from actonce.adapters.browser_use import GuardedBrowser, ScriptedModel, Step

# browser-use's own pauses between steps, shortened (the rules are the same).
FAST = {
    "minimum_wait_page_load_time": 0.05,
    "wait_for_network_idle_page_load_time": 0.05,
    "wait_between_actions": 0.05,
}
# Short settle windows keep the tests fast; absence is never authoritative for a post.
POST = Policy(
    settle_seconds=0.6,
    absence_authoritative=False,
    verify_attempts=3,
    verify_backoff=0.1,
    verify_backoff_max=0.3,
    lease_seconds=30.0,
)


def post_key(text: str) -> Any:
    """The key of "alice publishes ``text``": the action's business arguments only."""
    return effect_key(
        tenant="sandbox", actor="alice", kind="post", object=text, operation="publish"
    )


@contextlib.asynccontextmanager
async def alice(ledger: AsyncLedger, origin: str, evidence: str) -> AsyncIterator[GuardedBrowser]:
    """alice's guarded browser, signed in, with the guarded ``publish_post`` action."""
    from actonce.sandbox import SEED_USERS

    guarded = await GuardedBrowser.start(
        ledger,
        origin,
        "alice",
        allow=[RequestPattern("POST", "/login", origin=origin)],
        evidence_dir=evidence,
        timeout=5.0,
        confirm_timeout=3.0,
        profile=FAST,
    )
    try:
        await guarded.session.login(SEED_USERS["alice"])

        @guarded.action(
            "Publish a post with this text. Use this, never the Publish button: "
            "it publishes at most once.",
            key=post_key,
            requests=[("POST", "/compose")],
            policy=POST,
        )
        def publish_post(session: Any, text: str) -> Any:
            return session.post_effect(text)

        yield guarded
    finally:
        await guarded.aclose()


def post_registry(guarded: GuardedBrowser) -> Registry:
    """Reconcile's verifier for alice's posts, in the guarded browser's session."""
    registry = Registry()

    async def verify(record: Any) -> Any:
        return await guarded.session.post_effect(record.data["text"]).verify()

    registry.register("post", verify, policy=POST)
    return registry


async def run_agent(
    guarded: GuardedBrowser, steps: Sequence[Step], *, max_steps: int = 10
) -> tuple[ScriptedModel, Any]:
    """Run a browser-use ``Agent`` on ``guarded`` with a scripted model."""
    from browser_use import Agent

    model = ScriptedModel(steps)
    agent = Agent(
        task="publish alice's post",
        llm=model,
        browser_session=guarded.browser_session,
        tools=guarded.tools,
        use_judge=False,
        use_vision=False,
    )
    history = await agent.run(max_steps=max_steps)
    return model, history


def results(history: Any) -> list[dict[str, Any]]:
    """Each action's result: ``{"error": …, "content": …}``, in order."""
    return [
        {"error": r.error, "content": r.extracted_content}
        for step in history.history
        for r in step.result
    ]
