"""A site effect with nothing of its own, for tests of what the adapter does around one."""

from __future__ import annotations

from typing import Any

from actonce import Absent
from actonce.browser import AsyncBrowserSession, SiteEffect


class StubSite(SiteEffect):
    """Prepares and controls nothing; ``verify`` answers ``verdict`` (``Absent``) or raises ``failure``."""

    def __init__(self, verdict: Any = None, failure: BaseException | None = None) -> None:
        self.verdict = verdict if verdict is not None else Absent()
        self.failure = failure

    def payload(self) -> dict[str, Any]:
        return {"n": 1}

    async def prepare(self, session: AsyncBrowserSession) -> None:
        return None

    def control(self, session: AsyncBrowserSession) -> Any:
        return None

    async def verify(self, session: AsyncBrowserSession) -> Any:
        if self.failure is not None:
            raise self.failure
        return self.verdict
