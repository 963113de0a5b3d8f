"""``actonce firewall``: the write firewall's refusals, per actor (read-only)."""

from __future__ import annotations

import argparse

from actonce import Ledger, RefusalReason, WriteRefusal, open_ledger

from ._format import clean, print_json, table, when

__all__ = ["cmd_firewall", "firewall_line"]

EXIT_OK = 0


def _refusal_json(r: WriteRefusal) -> dict[str, object]:
    return {
        "id": r.id,
        "at": r.at,
        "actor": r.actor,
        "method": r.method,
        "url": r.url,
        "page": r.page,
        "reason": r.reason.value,
        "effect_key": r.effect_key,
        "via": r.via,
    }


def firewall_line(ledger: Ledger) -> str:
    """One line for ``actonce status``: refusals per actor."""
    totals = ledger.firewall.totals()
    if not totals:
        return "firewall refusals: 0"
    each = ", ".join(f"{actor} {n}" for actor, n in sorted(totals.items()))
    return f"firewall refusals: {sum(totals.values())} ({each}; actonce firewall)"


def cmd_firewall(args: argparse.Namespace) -> int:
    with open_ledger(args.ledger, readonly=True) as ledger:
        counts = ledger.firewall.counts()
        recent = ledger.firewall.refusals(actor=args.actor, limit=args.limit)
        url = ledger.url
    if args.actor is not None:
        counts = {a: by for a, by in counts.items() if a == args.actor}
    if args.json:
        print_json(
            {
                "ledger": url,
                "actors": {
                    actor: {
                        "total": sum(by.values()),
                        "reasons": {r.value: n for r, n in by.items()},
                    }
                    for actor, by in sorted(counts.items())
                },
                "refusals": [_refusal_json(r) for r in recent],
            }
        )
        return EXIT_OK
    print(f"ledger  {url}")
    if not counts:
        print("no refusals: nothing was refused by a write firewall")
        return EXIT_OK
    reasons = list(RefusalReason)
    rows = [
        [actor, str(sum(by.values())), *(str(by.get(r, 0)) for r in reasons)]
        for actor, by in sorted(counts.items())
    ]
    print(table(rows, ["actor", "refused", *(r.value for r in reasons)]))
    print(f"\nlatest {len(recent)}:")
    for r in recent:
        effect = f"  during {r.effect_key[:16]}" if r.effect_key else ""
        page = f"  from {clean(r.page)}" if r.page else ""
        print(
            f"  {when(r.at)}  {r.actor}  {r.method} {clean(r.url)}  "
            f"({r.reason.text}, {r.via}){page}{effect}"
        )
    return EXIT_OK
