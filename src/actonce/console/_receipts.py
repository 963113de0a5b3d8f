"""The receipts pages: the user's text and the operators' JSON (issue 11's receipts).

A receipt is written by the ledger when an operation stands still in a final
state (or in review); it is secret-free by construction, and the console
still shows it through the same masking as every other page. Each step of
a receipt links to its effect's screen; an effect's screen links back to
the receipt of the operation it is a step of.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from actonce import ActOnceError

from ._console import Console, ref_of
from ._words import at, clean, shown_json

__all__ = ["PAGE", "effect_receipt", "receipt_page", "receipts_page", "step_rows"]

#: Receipts per page.
PAGE = 50


def _before(text: str | None) -> float | None:
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _status(value: Any) -> tuple[str, str]:
    """A status as words and as a CSS class (never a space in it: ``not started`` -> ``none``)."""
    if not value:
        return "not started", "s-none"
    text = clean(value, 40)
    return text, "s-" + "".join(c if c.isalnum() or c == "_" else "-" for c in text)


def step_rows(data: Mapping[str, Any], key: str | None = None) -> list[dict[str, Any]]:
    """The steps of a receipt's JSON, each linked to its effect's screen when it has one.

    ``key``: the effect the page is about (its row says "this effect").
    """
    steps = data.get("steps")
    decisions = data.get("decisions")
    by_hand = {
        d.get("step")
        for d in (decisions if isinstance(decisions, list) else [])
        if isinstance(d, dict) and d.get("decision") == "undone_by_hand"
    }
    out = []
    for s in steps if isinstance(steps, list) else []:
        if not isinstance(s, dict):
            continue
        undo = s.get("undo") if isinstance(s.get("undo"), dict) else None
        status, css = _status(s.get("status"))
        undo_status, undo_css = _status((undo or {}).get("status"))
        manual = s.get("name") in by_hand
        if manual:
            undo_status, undo_css = f"{undo_status}, undone by hand", "s-undone"
        out.append(
            {
                "name": clean(s.get("name"), 80),
                "role": clean(s.get("role"), 40),
                "status": status,
                "css": css,
                "attempts": s.get("attempts") or 0,
                # Only a step the ledger holds a record of links to an effect's screen.
                "ref": ref_of(str(s["key"])) if s.get("key") and s.get("status") else None,
                "this": key is not None and key == s.get("key"),
                "provider_ref": clean(s.get("provider_ref") or "", 200),
                "undo_ref": ref_of(str(undo["key"])) if undo and undo.get("status") else None,
                "undo_this": key is not None and undo is not None and key == undo.get("key"),
                "undo_status": undo_status if undo and undo.get("status") else "",
                "undo_css": undo_css,
                "undone": manual or bool(undo and undo.get("status") == "confirmed"),
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
        "link": ref_of(receipt.operation_id),
        "state": receipt.state.value,
        "headline": clean(receipt.text.splitlines()[0] if receipt.text else "", 500),
        "lines": [
            (clean(label, 60), clean(value, 1000))
            for label, _, value in (line.partition(": ") for line in receipt.text.splitlines()[1:])
        ],
        "steps": step_rows(receipt.data),
        "json": shown_json(dict(receipt.data)),  # masked and scrubbed like every page
    }


def effect_receipt(console: Console, key: str) -> dict[str, Any] | None:
    """The operation an effect is a step (or an undo) of: its state and its steps."""
    try:
        op_id = console.ledger.operation_of(key)
        view = None if op_id is None else console.ledger.operations.get(op_id)
    except (ActOnceError, AttributeError):  # a store of one's own may keep no operations
        return None
    if op_id is None or view is None:
        return None
    steps = step_rows(view.receipt.data, key)
    mine = next((s for s in steps if s["this"]), None)
    return {
        "id": clean(op_id, 200),
        "link": ref_of(op_id),
        "state": view.state.value,
        "steps": steps,
        # A step verified done, then undone by its operation: not a plain "confirmed".
        "undone": mine is not None and mine["undone"],
        "undone_by": None if mine is None or not mine["undone"] else mine["undo_ref"],
    }
