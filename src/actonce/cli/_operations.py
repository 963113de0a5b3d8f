"""``actonce operations | operation | decide``: operations that wait for a person.

Over the public API only (``ledger.operations``). ``operations`` lists the
operations in review (what was done and what was not, the money held, since
when; ``--due``: the ones with work due), ``operation ID`` shows one as the
console's page does (did it happen, how do we know, what next, who acts),
``decide ID DECISION`` records a person's decision about it: exit 0 when it
is recorded or was already (the same decision again), 1 when it is refused,
with the reason on one line. ``operations`` and ``operation`` open the
ledger read-only.
"""

from __future__ import annotations

import argparse
from typing import Any

from actonce import Ledger, OperationView, open_ledger

from ._format import clean, print_json, table, when

__all__ = ["cmd_decide", "cmd_operation", "cmd_operations", "held", "view_json"]

EXIT_OK = 0
_HOW = {"charged": "held", "unknown": "maybe held", "release unknown": "maybe still held"}


def held(view: OperationView) -> str:
    """The money the operation holds, in words (``-``: none)."""
    user = view.receipt.data.get("user") or {}
    how = _HOW.get(str(user.get("charged_state")))
    if how is None or user.get("charged") is None:
        return "-"
    return f"{user['charged']} {user.get('currency') or ''}".strip() + f" ({how})"


def view_json(v: OperationView) -> dict[str, Any]:
    """One operation as JSON: where it stands, its steps, decisions and receipt."""
    return {
        "operation": v.op_id,
        "intent": None if v.intent is None else str(v.intent),
        "state": v.state.value,
        "reason": clean(v.reason),
        "at": v.step,
        "undo": v.undo,
        "attempt": v.attempt,
        "since": v.since,
        "closed": v.closed,
        "choices": [c.value for c in v.choices],
        "decisions": [d.as_json() for d in v.decisions],
        "steps": [
            {
                "name": s.name,
                "role": s.role.value,
                "status": None if s.record is None else s.record.status.value,
                "attempts": 0 if s.record is None else s.record.fence,
                "undo": None if s.undo_record is None else s.undo_record.status.value,
            }
            for s in v.steps
        ],
        "receipt": v.receipt.text,
        "user": v.receipt.data.get("user"),
    }


def _read(args: argparse.Namespace) -> Ledger:
    return open_ledger(args.ledger, readonly=True)


def _at(v: OperationView) -> str:
    if v.step is None:
        return "-"
    return f"undo of {v.step}" if v.undo else v.step


def cmd_operations(args: argparse.Namespace) -> int:
    with _read(args) as ledger:
        if args.due:
            due = ledger.operations.due(limit=args.limit)
            views = [ledger.operations.get(op_id) for op_id in due]
        else:
            views = ledger.operations.in_review(limit=args.limit)
    if args.json:
        print_json([view_json(v) for v in views])
        return EXIT_OK
    if not views:
        print("no operations " + ("with work due" if args.due else "waiting for a person"))
        return EXIT_OK
    rows = []
    for v in views:
        user = v.receipt.data.get("user") or {}
        rows.append([
            v.op_id, v.state.value, when(v.since), _at(v), str(v.attempt),
            ", ".join(user.get("done") or []) or "-", ", ".join(user.get("not_done") or []) or "-",
            held(v),
        ])  # fmt: skip
    headers = ["operation", "state", "since", "stopped at", "attempt", "done", "not done",
               "money"]  # fmt: skip
    print(table([[clean(c) or "" for c in r] for r in rows], headers))
    return EXIT_OK


def cmd_operation(args: argparse.Namespace) -> int:
    with _read(args) as ledger:
        v = ledger.operations.get(args.operation)
    if args.json:
        print_json(view_json(v))
        return EXIT_OK
    print(f"operation {v.op_id}" + (f"  (intent {v.intent})" if v.intent else ""))
    print(f"state     {v.state.value}: {clean(v.reason)}" + ("  [withdrawn]" if v.closed else ""))
    if v.step is not None:
        print(f"stands at {_at(v)}, attempt {v.attempt}, since {when(v.since)}")
    print(f"money     {held(v)}")
    print("\nsteps:")
    cells = []
    for s in v.steps:
        r, u = s.record, s.undo_record
        cells.append([
            s.name, s.role.value, "-" if r is None else r.status.value,
            "0" if r is None else str(r.fence), clean(r.result_ref if r else None) or "-",
            "-" if u is None else f"{u.status.value} (attempt {u.fence})",
        ])  # fmt: skip
    print(table(cells, ["step", "role", "status", "attempts", "provider ref", "undo"]))
    if v.decisions:
        print("\ndecisions:")
        for d in v.decisions:
            about = f" {d.step}, attempt {d.attempt}" if d.step else ""
            print(f"  {d.n}. {when(d.at)}  {d.decision.value}{about} by {d.by}: {clean(d.reason)}")
    if v.choices:
        names = ", ".join(c.value.replace("_", "-") for c in v.choices)
        print(f"\nwho acts: a person decides ({names}):")
        print(f"  actonce decide {v.op_id} DECISION --attempt {v.attempt} --reason '...'")
    print("\nreceipt (as true now):")
    for line in v.receipt.text.splitlines():
        print(f"  {clean(line)}")
    return EXIT_OK


def cmd_decide(args: argparse.Namespace) -> int:
    with open_ledger(args.ledger) as ledger:
        v = ledger.operations.decide(
            args.operation,
            args.decision.replace("-", "_"),
            by=args.reviewer,
            reason=args.reason,
            attempt=args.attempt,
            step=args.step,
        )
    if args.json:
        print_json(view_json(v))
    else:
        last = v.decisions[-1] if v.decisions else None
        who = f" ({last.decision.value} by {last.by})" if last else ""
        print(f"{v.op_id} is now {v.state.value}{who}: {clean(v.reason)}")
    return EXIT_OK
