"""Verification by a provider's lookup: count the matches, never just find one.

One match is ``Confirmed``; several are a *duplicate detected*
(``Confirmed(count=n, refs=...)``: the effect goes to review); none is
``Absent``; a lookup that failed, or whose answer cannot be read, is
``Unavailable`` — never an absence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from actonce import Absent, Confirmed, Unavailable, UsageError, Verdict

__all__ = ["Ref", "Select", "counted", "verdict_of_body"]

Ref = str | Callable[[Any], Any]
"""A match's reference: the name of one of its fields, or a function of it."""

Select = str | Callable[[Any], Sequence[Any]] | None
"""Where the matches are in a lookup's JSON: a field holding the list, a
function of the body, or ``None`` (the body itself: a list, or one object)."""


def counted(matches: Sequence[Any], *, ref: Ref = "id") -> Verdict:
    """The verdict of a lookup that found ``matches``.

    Args:
        matches: what the provider's lookup returned for the effect's key or
            reference (after any filtering by the caller).
        ref: each match's reference (``result_ref``): a field name, or a
            function of the match.

    Returns:
        ``Absent()`` for none, ``Confirmed(ref)`` for one, and
        ``Confirmed(first, count=n, refs=all)`` for several (a duplicate).

    Raises:
        UsageError: ``matches`` is not a list or a tuple.
    """
    if isinstance(matches, str | bytes) or not isinstance(matches, Sequence):
        raise UsageError(f"counted() takes a list of matches, not {type(matches).__name__}")
    if not matches:
        return Absent()
    refs = tuple(_ref(m, ref) for m in matches)
    return Confirmed(refs[0], count=len(refs), refs=refs if len(refs) > 1 else ())


def verdict_of_body(
    body: Any, *, items: Select, ref: Ref, match: Callable[[Any], bool] | None
) -> Verdict:
    """The verdict of a lookup's decoded JSON ``body``; an unreadable one is unavailable."""
    try:
        if callable(items):
            found = items(body)
        elif isinstance(items, str):
            found = body[items]
        else:
            found = body if isinstance(body, list) else [body]
        if not isinstance(found, list | tuple):
            return Unavailable(f"the lookup's matches are not a list ({type(found).__name__})")
        if match is not None:
            found = [m for m in found if match(m)]
        return counted(found, ref=ref)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        return Unavailable(f"the lookup's answer could not be read: {type(exc).__name__}: {exc}")


def _ref(match: Any, ref: Ref) -> str:
    value = ref(match) if callable(ref) else match[ref]
    if value is None:
        raise ValueError("a match has no reference")
    return str(value)
