"""Threads: publish part n+1 only after part n has a verified canonical URL.

The state of each part lives with the caller (a ledger, a table like seed
000's ``thread_parts``): the caller passes the canonical URLs of the parts
already verified, in order, and gets the next part with its expected parent.
Each part is one effect with its own ``perform``/``verify``, so a runner can
give each its own key; recovery resumes from the first unverified part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from actonce import UsageError

__all__ = ["ThreadPart", "next_thread_part"]


@dataclass(frozen=True, slots=True)
class ThreadPart:
    """One part of a thread, ready to become one effect.

    Attributes:
        position: 0-based position in the thread.
        text: the part's text.
        parent: the canonical URL this part must reply to (None for the first
            part of a thread that starts a conversation).
    """

    position: int
    text: str
    parent: str | None


def next_thread_part(
    parts: Sequence[str], verified: Sequence[str], *, root_parent: str | None = None
) -> ThreadPart | None:
    """The next part to publish, or None when every part is verified.

    Args:
        parts: the texts of the thread, in order.
        verified: the verified canonical URLs of the first ``len(verified)``
            parts, in order.
        root_parent: optional URL the first part replies to.

    Raises:
        UsageError: more verified URLs than parts, or an empty URL.
    """
    if len(verified) > len(parts):
        raise UsageError(f"{len(verified)} verified URLs for a thread of {len(parts)} parts")
    if any(not url for url in verified):
        raise UsageError("a verified part needs its canonical URL")
    n = len(verified)
    if n == len(parts):
        return None
    return ThreadPart(n, parts[n], verified[-1] if verified else root_parent)
