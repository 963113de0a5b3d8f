"""``NoteEffect``: the sandbox's notes, whose *Save* makes two requests.

Its submit is declared (``requests``): ``POST /notes`` creates a draft,
then ``POST /notes/{id}/publish`` publishes it — each sent once through the
network guard, anything else refused. Verification counts the *published*
notes with the text; a draft with it and none published is a partial
submit: ``Unavailable`` (never absence, which would be replanned into
another orphan draft).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actonce import Absent, Confirmed, Unavailable, Verdict

from ._errors import BrowserError
from ._site import SiteEffect, normalize_text

if TYPE_CHECKING:
    from playwright.async_api import Locator

    from ._session import AsyncBrowserSession

__all__ = ["NoteEffect"]

_DONE = '[data-testid="note-status"][data-state="published"], [data-testid="note-status"][data-state="error"]'


class NoteEffect(SiteEffect):
    """Save and publish a note with this text as ``author`` (the sandbox's ``/notes``)."""

    kind = "note"
    requests = ("POST /notes", "POST /notes/{id}/publish")

    def __init__(self, author: str, text: str) -> None:
        self.author = author
        self.text = text

    def payload(self) -> dict[str, Any]:
        return {"author": self.author, "text": normalize_text(self.text)}

    async def prepare(self, session: AsyncBrowserSession) -> None:
        await session.goto("/notes")
        await session.page.get_by_test_id("note-text").fill(self.text)

    async def read_back(self, session: AsyncBrowserSession) -> dict[str, Any]:
        return {"text": await session.page.get_by_test_id("note-text").input_value()}

    def expected(self) -> dict[str, Any]:
        return {"text": self.text}

    def control(self, session: AsyncBrowserSession) -> Locator:
        return session.page.get_by_test_id("note-save")

    async def confirm(self, session: AsyncBrowserSession) -> None:
        status = session.page.locator(_DONE)
        await status.wait_for()
        if await status.get_attribute("data-state") == "error":
            raise BrowserError((await status.text_content() or "the page says it failed").strip())

    async def verify(self, session: AsyncBrowserSession) -> Verdict:
        await session.goto("/notes")
        rows = await session.page.get_by_test_id("note-row").evaluate_all(
            """rows => rows.map(r => [r.dataset.id, r.dataset.state,
                 r.querySelector('[data-testid="note-row-text"]').textContent])"""
        )
        want = normalize_text(self.text)
        mine = [(i, state) for i, state, text in rows if normalize_text(text) == want]
        published = [session.url(f"/notes/{i}") for i, state in mine if state == "published"]
        if published:
            return Confirmed(published[0], count=len(published), refs=tuple(published))
        if mine:
            return Unavailable(
                f"{len(mine)} draft(s) with this text, none published: a partial submit"
            )
        return Absent()
