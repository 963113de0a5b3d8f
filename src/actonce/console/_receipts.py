"""The receipts pages: the user's text and the operators' JSON (issue 11's receipts).

A receipt is written by the ledger when an operation stands still in a final
state (or in review); it is secret-free by construction, and the console
still shows it through the same masking as every other page. Each step of
a receipt links to its effect's screen; an effect's screen links back to
the receipt of the operation it is a step of.
"""

from __future__ import annotations

import math
from typing import Any

from actonce import ActOnceError, Receipt

from ._console import Console, ref_of
from ._words import at, clean, shown_json

__all__ = ["PAGE", "effect_receipt", "receipt_page", "receipts_page"]

#: Receipts per page.
PAGE = 50


def _before(text: str | None) -> float | None:
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _steps(receipt: Receipt) -> list[dict[str, Any]]:
    steps = receipt.data.get("steps")
    out = []
    for s in steps if isinstance(steps, list) else []:
        if not isinstance(s, dict):
            continue
        undo = s.get("undo") if isinstance(s.get("undo"), dict) else None
        out.append(
            {
                "name": clean(s.get("name"), 80),
                "role": clean(s.get("role"), 40),
                "status": clean(s.get("status") or "not started", 40),
                # Only a step the ledger holds a record of links to an effect's screen.
                "ref": ref_of(str(s["key"])) if s.get("key") and s.get("status") else None,
                "provider_ref": clean(s.get("provider_ref") or "", 200),
                "undo_ref": ref_of(str(undo["key"])) if undo and undo.get("status") else None,
                "undo_status": clean((undo or {}).get("status") or "", 40),
                "has_undo": undo is not None,
            }
        )
    return out


def receipts_page(console: Console, before: str | None) -> dict[str, Any]:
    """Receipts newest first, one page."""
    rows = console.ledger.receipts(limit=PAGE + 1, before=_before(before))
    more = len(rows) > PAGE
    rows = rows[:PAGE]
    return {
        "receipts": [
            {
                "id": clean(r.operation_id, 200),
                "link": ref_of(r.operation_id),
                "state": r.state.value,
                "at": at(written),
                "first": clean(r.text.splitlines()[0] if r.text else "", 200),
            }
            for r, written in rows
        ],
        "next": repr(rows[-1][1]) if more and rows else None,
    }


def receipt_page(console: Console, op_id: str) -> dict[str, Any] | None:
    """One receipt: the text, the steps linked to their effects, the JSON (``None``: none)."""
    receipt = console.ledger.receipt(op_id)
    if receipt is None:
        return None
    return {
        "id": clean(receipt.operation_id, 200),
        "state": receipt.state.value,
        "text": clean(receipt.text, 4000),
        "steps": _steps(receipt),
        "json": shown_json(dict(receipt.data)),  # masked and scrubbed like every page
    }


def effect_receipt(console: Console, key: str) -> dict[str, Any] | None:
    """The operation an effect is a step of, its state and its other steps."""
    try:
        op_id = console.ledger.operation_of(key)
    except (ActOnceError, AttributeError):  # a store of one's own may keep no operations
        return None
    if op_id is None:
        return None
    receipt = console.ledger.receipt(op_id)
    return {
        "id": clean(op_id, 200),
        "link": ref_of(op_id),
        "written": receipt is not None,
        "state": None if receipt is None else receipt.state.value,
        "steps": [] if receipt is None else _steps(receipt),
        "self": ref_of(key),
    }
