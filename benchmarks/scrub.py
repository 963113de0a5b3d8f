"""What does scrubbing every stored value cost? Side by side, scrub on and off.

One unit of work is what a booking agent writes: an intent put (with notes
and constraints), an approval packet requested and answered, and the gated
effect run to ``confirmed`` (claim, executing mark, verdict, with their
events and holds), on a SQLite file (WAL, the default durability). Variants,
interleaved unit by unit (A B C, then B C A ...) so that machine noise hits
each alike; ratios are taken round by round and the median is reported:

- ``on``: actonce as shipped: every bound value through the one rule set
  (``actonce._store.scrubbing``), payloads scrubbed by ``stored_payload``;
- ``store_off``: the store's choke point off (``scrub_params`` and
  ``scrub_json`` are the identity), the payload and message scrubbing kept;
- ``off``: the choke point off and the free-text value detectors off
  (``scrub_values`` is the identity): the cost before issue 20.

``ratio_on_vs_off`` is the whole cost of item 1, ``ratio_on_vs_store_off``
that of the choke point alone (wall clock, fsyncs included); the ``cpu_``
ratios are the same on the process's CPU time, steadier on a loaded machine. Nothing is asserted on the figures. The last
line of ``--json`` output is one JSON object.

    python benchmarks/scrub.py [--json] [--rounds 8] [--per-round 20]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from actonce import (
    Absent,
    Approvals,
    Confirmed,
    Effect,
    Fact,
    Intent,
    Ledger,
    Policy,
    SigningKeys,
    intent_key,
)
from actonce._rules import scrub, secrets

KEYS = SigningKeys((("k1", bytes.fromhex("5eed" * 16)),))
POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1, verify_backoff=0)


@contextlib.contextmanager
def variant(name: str) -> Iterator[None]:
    """Turn the choke point (and the value detectors) off for ``name``."""
    saved = scrub.scrub_params, scrub.scrub_json, secrets.scrub_values
    if name in ("store_off", "off"):  # nothing scrubbed at the store, nor compared scrubbed
        scrub.scrub_params = lambda params: params
        scrub.scrub_json = lambda value: value
    if name == "off":
        secrets.scrub_values = lambda text: text
    try:
        yield
    finally:
        scrub.scrub_params, scrub.scrub_json, secrets.scrub_values = saved


def unit(ledger: Ledger, n: int) -> None:
    """One booking: intent, packet, answer, gated effect."""
    trip = ledger.intents.put(
        Intent(
            f"trip-{n}",
            "booking",
            user="ana",
            provider="Hotel Ibis",
            items=("double room",),
            when="2026-12-24",
            price_ceiling=Decimal("120"),
            currency="EUR",
            constraints={"max_stars": 4, "cvv": "737"},
            notes={"memo": "card 4111 1111 1111 1111 for the deposit", "late": "after 22:00"},
        )
    )
    key = intent_key(trip, "book", tenant="t1", actor="agent")
    req = ledger.approvals.request(
        trip,
        "book",
        key,
        amount="110",
        details={"date": "2026-12-24", "item": "double room"},
        terms="free cancellation until 24 h before",
        facts=[Fact("price", "110", ledger.clock.now())],
    )
    ledger.approvals.answer(req.packet.packet_id, "approve", by="ana")
    done: list[int] = []
    effect = Effect(
        key=key,
        kind="book",
        payload={"intent": trip.intent_id, "version": trip.version, "note": "window seat"},
        perform=lambda: done.append(1),
        verify=lambda: Confirmed("r1") if done else Absent(),
        gate=Approvals.gate(ledger.approvals.get(req.packet.packet_id)),
        policy=POLICY,
    )
    assert ledger.run(effect).outcome.value == "completed"


def measure(rounds: int, per_round: int, folder: Path) -> dict[str, Any]:
    names = ["on", "store_off", "off"]
    ledgers = {
        n: Ledger.open(str(folder / f"{n}.db"), create=True, signing_keys=KEYS) for n in names
    }
    seconds: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    counter = 0
    try:
        for r in range(rounds):
            order = names[r % 3 :] + names[: r % 3]
            spent = dict.fromkeys(names, 0.0)
            used = dict.fromkeys(names, 0.0)
            for _ in range(per_round):
                for name in order:
                    counter += 1
                    with variant(name):
                        t0, c0 = time.perf_counter(), time.process_time()
                        unit(ledgers[name], counter)
                        spent[name] += time.perf_counter() - t0
                        used[name] += time.process_time() - c0
            for name in names:
                seconds[name].append(spent[name] / per_round)
                cpu[name].append(used[name] / per_round)
    finally:
        for ledger in ledgers.values():
            ledger.close()

    def ratio(a: str, b: str, of: dict[str, list[float]] = seconds) -> float:
        return statistics.median(x / y for x, y in zip(of[a], of[b], strict=True))

    return {
        "benchmark": "scrub",
        "rounds": rounds,
        "per_round": per_round,
        "ms_per_booking": {n: round(statistics.median(v) * 1000, 3) for n, v in seconds.items()},
        "ratio_on_vs_off": round(ratio("on", "off"), 3),
        "ratio_on_vs_store_off": round(ratio("on", "store_off"), 3),
        "cpu_ms_per_booking": {n: round(statistics.median(v) * 1000, 3) for n, v in cpu.items()},
        "cpu_ratio_on_vs_off": round(ratio("on", "off", cpu), 3),
        "cpu_ratio_on_vs_store_off": round(ratio("on", "store_off", cpu), 3),
    }


def main(argv: list[str] | None = None, out: Callable[[str], Any] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--per-round", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(args.rounds, args.per_round, Path(tmp))
    if not args.json:
        for name, ms in result["ms_per_booking"].items():
            out(f"{name:>10}: {ms:8.3f} ms per booking")
        out(
            f"on / off: {result['ratio_on_vs_off']}   on / store_off: {result['ratio_on_vs_store_off']}"
        )
    out(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
