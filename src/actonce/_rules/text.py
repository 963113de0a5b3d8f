"""Text from the world, made storable before it reaches a ledger write.

Verifier reasons, exception messages, result references and perform details
come from code and pages actonce does not control. A lone surrogate (no
UTF-8 form) or a NUL (PostgreSQL's text refuses it) would make the write
fail, and one such answer used to stop every reconcile pass. Such text is
repaired (never refused: it describes what happened), scrubbed of secrets,
and bounded in length.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .secrets import REDACTED, is_header_pair, is_secret_name, scrub_text

__all__ = ["MAX_TEXT", "storable", "storable_data", "world_text"]

#: The longest message or reason kept (longer ones are cut, with a mark).
MAX_TEXT = 2000


def storable(text: str, *, limit: int = MAX_TEXT) -> str:
    """``text`` with lone surrogates and NULs replaced, cut to ``limit`` characters."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def world_text(text: Any, known: Iterable[str] = (), *, limit: int = MAX_TEXT) -> str:
    """Any value from the world as storable, secret-free text."""
    return storable(scrub_text(str(text), known), limit=limit)


def storable_data(value: Any, known: Iterable[str] = (), *, depth: int = 0) -> Any:
    """A JSON-able copy of ``value`` fit for an event's data: scrubbed, bounded.

    Secret-named fields and header pairs (``["Cookie", "sid=…"]``) keep only
    ``[redacted]``, by the same names as payloads (:mod:`.secrets`); strings
    are scrubbed (of the ``known`` values too) and made storable; anything
    that is not JSON becomes its (scrubbed) text.
    """
    known = tuple(known)
    if depth > 8:
        return "…"
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, str):
        return world_text(value, known, limit=500)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for i, (k, v) in enumerate(value.items()):
            if i >= 100:
                out["…"] = f"{len(value) - 100} more"
                break
            name = storable(str(k), limit=100)
            out[name] = (
                REDACTED if is_secret_name(name) else storable_data(v, known, depth=depth + 1)
            )
        return out
    if isinstance(value, list | tuple):
        if is_header_pair(value) and is_secret_name(value[0]):
            return [storable(value[0], limit=100), REDACTED]
        items = [storable_data(v, known, depth=depth + 1) for v in list(value)[:100]]
        if len(value) > 100:
            items.append(f"… {len(value) - 100} more")
        return items
    return world_text(value, known, limit=500)
