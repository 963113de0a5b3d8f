"""How fast does the review console render its pages on a large ledger?

Builds a SQLite ledger with ``--rows`` effects (default 100,000; ``--open``
of them waiting for review, half ``unknown`` and half ``needs_review``, the
rest ``confirmed``), each with the three events a real run writes,
bulk-inserted with ``executemany`` in one transaction (the schema comes
from the real migrations). Then it serves the real console over HTTP on
127.0.0.1 (``actonce console``, in a process of its own), signs a reviewer
in, and times, in one run, both the page's render time (the console's
``Server-Timing`` header: from the guard to the finished response) and the
client's round trip:

- the queue's first page, and a page deep in the queue (keyset cursor);
- the effect page of open effects picked at random.

p50/p95 over ``--samples`` requests each (after a warm-up). The goal is a
render p95 at or under 50 ms for both pages. The last line of ``--json`` output is
one JSON object.

    python benchmarks/console.py [--json] [--rows 100000] [--open 1000] [--samples 300]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
from _ledgerfile import cache_folder, write_ledger

from actonce import Ledger
from actonce.console import hash_password, ref_of

NOW = time.time() - 3600.0
PASSWORD = "bench-password"


def _effects(total: int, open_: int) -> Iterator[tuple[Any, ...]]:
    step = max(1, total // max(open_, 1))
    for i in range(total):
        is_open = i % step == 0 and i // step < open_
        status = ("unknown", "needs_review")[(i // step) % 2] if is_open else "confirmed"
        ref = f"ORDER-{i:06d}"
        scope = json.dumps(
            {"actor": "billing-bot", "kind": "invoice", "object": ref, "operation": "create",
             "tenant": "acme"}, sort_keys=True, separators=(",", ":"),
        )  # fmt: skip
        payload = json.dumps({"amount": "120.00", "currency": "EUR", "reference": ref})
        yield (
            f"{i:064x}", "invoice", status, 1, "bench-run", NOW + i * 1e-2, payload,
            "0" * 64, scope, None if is_open else f"obj-{i}",
            "perform raised TimeoutError: response lost; outcome not proven yet" if is_open
            else None,
            NOW + i * 1e-2, NOW + i * 1e-2 + 1.0, NOW + i * 1e-2,
        )  # fmt: skip


def _events(total: int, open_: int) -> Iterator[tuple[Any, ...]]:
    step = max(1, total // max(open_, 1))
    for i in range(total):
        key, at = f"{i:064x}", NOW + i * 1e-2
        is_open = i % step == 0 and i // step < open_
        last = ("unknown", "needs_review")[(i // step) % 2] if is_open else "confirmed"
        data = json.dumps({"perform": {"seconds": 0.3, "error": "TimeoutError: lost"}})
        yield (key, "claimed", at, 1, "bench-run", None, "claimed", "attempt 1", None)
        yield (key, "executing", at, 1, "bench-run", "claimed", "executing", None, None)
        yield (key, last, at + 1.0, 1, "bench-run", "executing", last, None, data)


def build(path: str, total: int, open_: int) -> float:
    """Create the ledger file; returns seconds spent."""
    return write_ledger(path, _effects(total, open_), _events(total, open_))


def _ms(client: httpx.Client, url: str, expect: str) -> tuple[float, float]:
    """(round trip, server-side time to make the page), in ms."""
    t0 = time.perf_counter()
    r = client.get(url)
    took = (time.perf_counter() - t0) * 1000
    if r.status_code != 200 or expect not in r.text:
        raise SystemExit(f"{url}: {r.status_code} {r.text[:300]}")
    timing = re.search(r"app;dur=([0-9.]+)", r.headers.get("server-timing", ""))
    return took, float(timing.group(1)) if timing else float("nan")


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2),
            "max_ms": round(ordered[-1], 2), "n": len(ordered)}  # fmt: skip


def _console(path: str) -> tuple[subprocess.Popen[str], str]:
    """``actonce console`` in a process of its own (no GIL shared with the client)."""
    env = dict(os.environ, ACTONCE_CONSOLE_REVIEWERS=f"ana:{hash_password(PASSWORD)}")
    env.pop("ACTONCE_CONSOLE_REVIEWERS_FILE", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "actonce", "console", "--ledger", path, "--port", "0",
         "--reviewers", path + ".bench-reviewers"],
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()  # printed once the socket is bound
    found = re.search(r"on (http://\S+)", line)
    if found is None:
        proc.kill()
        raise SystemExit(f"the console did not start: {line!r}")
    return proc, found.group(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--open", type=int, default=1_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    folder = cache_folder("console")
    path = os.path.join(folder, f"ledger-{args.rows}-{args.open}.db")
    built = None
    if not os.path.exists(path):
        built = build(path, args.rows, args.open)
    rng = random.Random(args.seed)
    with Ledger.open(path, readonly=True) as ledger:
        open_keys = [r.key for r in ledger.list(["unknown", "needs_review"], limit=args.open)]
        middle = ledger.list(["unknown", "needs_review"], limit=args.open // 2)[-1]
        rows = sum(ledger.counts().values())
    deep = f"/?after={middle.updated_at!r}:{middle.key}"
    proc, url = _console(path)
    samples: dict[str, list[tuple[float, float]]] = {"queue": [], "deep": [], "effect": []}
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            page = client.get("/login")
            nonce = re.search(r'name="csrf" value="([^"]+)"', page.text)
            assert nonce is not None
            client.post(
                "/login", data={"csrf": nonce.group(1), "name": "ana", "password": PASSWORD},
                headers={"origin": url},
            )  # fmt: skip
            for _ in range(20):  # warm-up: page cache, templates, connections
                _ms(client, "/", "What may have happened")
                _ms(client, f"/effects/{ref_of(rng.choice(open_keys))}", "Did create invoice")
            for _ in range(args.samples):
                samples["queue"].append(_ms(client, "/", "What may have happened"))
                samples["deep"].append(_ms(client, deep, "What may have happened"))
                key = rng.choice(open_keys)
                samples["effect"].append(_ms(client, f"/effects/{ref_of(key)}", "Did create"))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    pages = {"queue_first_page": "queue", "queue_deep_page": "deep", "effect_page": "effect"}
    summary: dict[str, Any] = {
        "rows": rows,
        "open": args.open,
        "goal_p95_ms": 50.0,
        "build_seconds": None if built is None else round(built, 1),
        # Shared machines: the load during the run says how much the figures wait on others.
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "cached_file": path,
    }
    for name, which in pages.items():
        summary[name] = {
            "render": _stats([server for _, server in samples[which]]),
            "round_trip": _stats([trip for trip, _ in samples[which]]),
        }
    summary["goal_met"] = all(
        summary[n]["render"]["p95_ms"] <= 50.0 for n in ("queue_first_page", "effect_page")
    )
    out = sys.stderr if args.json else sys.stdout
    for name in pages:
        r, t = summary[name]["render"], summary[name]["round_trip"]
        print(
            f"{name:18} render p50 {r['p50_ms']:6.2f} p95 {r['p95_ms']:6.2f} ms · "
            f"round trip p50 {t['p50_ms']:6.2f} p95 {t['p95_ms']:6.2f} ms",
            file=out,
        )
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
