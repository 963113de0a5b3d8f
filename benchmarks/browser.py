"""What does actonce cost on a real browser batch, next to the browser work itself?

    python benchmarks/browser.py [--json] [--rounds 6] [--effects 12]

One sandbox server and one Chromium for the whole run. Each round runs the
same batch (posts and invoices alternating, no faults) twice, in alternating
order (unguarded first on even rounds, guarded first on odd ones), each time
on a fresh sandbox database with a freshly signed-in session (login is not
timed):

- ``unguarded``: the adapter's ``perform()`` only — prepare, preflight,
  read-back, one click and the site's confirmation (the redirect to the new
  object's page), i.e. the minimal check that the click took — then a wait
  for that page's ``load`` event (done in both modes, so that neither the
  next form nor a verification pays for the previous page);
- ``guarded``: ``Ledger.run`` of the same effect (``browser.as_effect``) on a
  fresh SQLite ledger, default policy: claim, verify (the one look before
  the boundary, under the claim), precondition, executing mark, perform,
  verify, confirmed.

Verification page loads are what buys safety and are reported apart: the
``verify()`` and ``precondition()`` callables are wrapped to time them, and
the ledger's store is wrapped to time its calls. ``ratio`` is guarded time
without verification ÷ unguarded time, the median of the per-round ratios
(each round's two batches ran back to back). ``ratio_ledger_only`` also
leaves out the precondition, i.e. (perform + ledger + protocol) ÷ unguarded;
``ledger_overhead_ratio`` is 1 + (ledger store + protocol) ÷ unguarded, the
cost of actonce itself. ``perform_ratio`` compares the two performs: a
perform that starts from a verification page (guarded) is measurably faster
than one that starts from the page the previous click just loaded
(unguarded), which is why ``ratio_ledger_only`` can fall below 1.
Both modes perform with the network guard on (at most one mutating request
per perform, issue 15), so the ratios above do not include it. Its own cost
is measured by a third batch in each round, next to the unguarded one:
``raw``, the same performs with the guard switched off (a private switch,
for this measurement only); ``network_guard_perform_ratio`` is unguarded ÷
raw, the median of the per-round ratios.

Reconcile is measured apart, side by side in each round: ``--effects``
effects (posts and invoices alternating) are performed and left
``unknown`` (their owners' look after the perform is down), the ledger is
copied, and the two copies are reconciled on the same world — one by one
(each kind's verifier runs the effect's own ``verify``: one page per
effect) and with ``actonce.browser.Listings`` (one read of each shared
listing per pass). ``reconcile_*_per_effect`` are requests and main-frame
navigations per reconciled effect; ``reconcile_requests_ratio`` is shared
÷ one by one. Both must end every effect the same way (asserted).
The last line (with ``--json``) is one JSON object. Nothing else is asserted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actonce import (
    Effect,
    EffectRecord,
    Ledger,
    Outcome,
    Policy,
    Registry,
    SQLiteStore,
    Status,
    Unavailable,
    Verdict,
    effect_key,
)
from actonce.browser import (
    Browser,
    BrowserSession,
    InvoiceEffect,
    Listings,
    PostEffect,
    SiteEffect,
    as_effect,
)
from actonce.browser import Effect as Bound
from actonce.sandbox import SEED_USERS, SandboxServer

ACTOR = "alice"


class Clock:
    """Accumulates the time spent in wrapped callables."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t
                self.calls += 1

        return timed


class TimedStore:
    """A store proxy that times every call into the ledger's store."""

    def __init__(self, inner: SQLiteStore, clock: Clock) -> None:
        self._inner = inner
        self._clock = clock

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        return self._clock.wrap(attr) if callable(attr) else attr


class Traffic:
    """Counts the requests and the main-frame navigations of one session's page."""

    def __init__(self, session: BrowserSession) -> None:
        self.requests = 0
        self.navigations = 0
        self._main: Any = None
        session.run(self._listen)  # on the driver's loop

    async def _listen(self, s: Any) -> None:
        self._main = s.page.main_frame
        s.page.on("request", self._request)
        s.page.on("framenavigated", self._navigated)

    def _request(self, _request: Any) -> None:
        self.requests += 1

    def _navigated(self, frame: Any) -> None:
        if frame is self._main:
            self.navigations += 1

    def reset(self) -> None:
        self.requests = self.navigations = 0


async def _loaded(s: Any) -> None:
    await s.page.wait_for_load_state("load")


def settled(session: BrowserSession, perform: Callable[[], None]) -> Callable[[], None]:
    """``perform``, then wait until the confirmation page has loaded (both modes).

    Without it the next page load (the next effect's form, or a verification)
    would pay for the rest of this one, whichever comes next.
    """

    def run() -> None:
        perform()
        session.run(_loaded)

    return run


def batch(session: BrowserSession, round_: int, mode: str, n: int) -> list[Bound]:
    out: list[Bound] = []
    for i in range(n):
        tag = f"r{round_}-{mode}-{i}"
        if i % 2 == 0:
            out.append(session.post_effect(f"Benchmark post {tag}: one intent, one effect"))
        else:
            out.append(session.invoice_effect(f"BENCH-{tag}", 1000 + i))
    return out


def fresh_session(browser: Browser, server: SandboxServer) -> BrowserSession:
    server.db.reset()
    server.sandbox.faults.reset()
    session = browser.new_session(server.url, ACTOR, confirm_timeout=10.0, timeout=10.0)
    session.login(SEED_USERS[ACTOR])
    return session


def run_unguarded(
    browser: Browser, server: SandboxServer, round_: int, n: int, *, network_guard: bool = True
) -> dict[str, Any]:
    session = fresh_session(browser, server)
    session.async_session._network_guard = network_guard
    try:
        effects = batch(session, round_, "u" if network_guard else "raw", n)
        traffic = Traffic(session)
        t = time.perf_counter()
        for e in effects:
            settled(session, e.perform)()
        total = time.perf_counter() - t
    finally:
        session.close()
    truth = server.db.ground_truth()["totals"]
    assert truth["posts"] + truth["invoices"] == n, truth
    return {"total": total, "requests": traffic.requests, "navigations": traffic.navigations}


def run_guarded(
    browser: Browser, server: SandboxServer, folder: Path, round_: int, n: int
) -> dict[str, Any]:
    session = fresh_session(browser, server)
    verify, pre, perform, store_clock = Clock(), Clock(), Clock(), Clock()
    ledger = Ledger(
        TimedStore(
            SQLiteStore(str(folder / f"ledger-{round_}.db"), create=True),  # type: ignore[arg-type]
            store_clock,
        )
    )
    ledger.store.get("warm-up")  # open and migrate before timing
    store_clock.seconds, store_clock.calls = 0.0, 0
    policy = Policy()
    try:
        effects = []
        for i, bound in enumerate(batch(session, round_, "g", n)):
            k = effect_key(
                tenant="bench",
                actor=ACTOR,
                kind=bound.kind,
                object=f"{round_}-{i}",
                operation="create",
            )
            eff = as_effect(bound, k, policy=policy)
            effects.append(
                dataclasses.replace(
                    eff,
                    verify=verify.wrap(eff.verify),
                    perform=perform.wrap(settled(session, eff.perform)),
                    precondition=pre.wrap(eff.precondition) if eff.precondition else None,
                )
            )
        traffic = Traffic(session)
        t = time.perf_counter()
        for eff in effects:
            result = ledger.run(eff)
            assert result.outcome is Outcome.COMPLETED, result
        total = time.perf_counter() - t
        store_seconds, store_calls = store_clock.seconds, store_clock.calls  # before close()
    finally:
        ledger.close()
        session.close()
    truth = server.db.ground_truth()["totals"]
    assert truth["posts"] + truth["invoices"] == n, truth
    return {
        "total": total,
        "verify": verify.seconds,
        "verify_calls": verify.calls,
        "precondition": pre.seconds,
        "perform": perform.seconds,
        "store": store_seconds,
        "store_calls": store_calls,
        "requests": traffic.requests,
        "navigations": traffic.navigations,
    }


GIVE_UP = Policy(settle_seconds=0.0, verify_attempts=1, verify_backoff=0.01)
"""The owners' policy in the reconcile measurement: one look after the perform."""


def site_of(record: EffectRecord) -> SiteEffect:
    """The site effect a stored record describes (reconcile's side)."""
    p = record.data
    if record.kind == "post":
        return PostEffect(p["author"], p["text"])
    return InvoiceEffect(p["account"], p["reference"], p["amount"])


def left_unknown(session: BrowserSession, path: Path, round_: int, n: int) -> None:
    """``n`` performed effects left ``unknown``: their look after the perform is down."""
    with Ledger.open(str(path), create=True) as ledger:
        for i, bound in enumerate(batch(session, round_, "rec", n)):
            k = effect_key(
                tenant="bench",
                actor=ACTOR,
                kind=bound.kind,
                object=f"rec-{round_}-{i}",
                operation="create",
            )
            eff = as_effect(bound, k, policy=GIVE_UP)
            looks = [0]

            def verify(bound: Bound = bound, looks: list[int] = looks) -> Verdict:
                looks[0] += 1
                return bound.verify() if looks[0] == 1 else Unavailable("down")

            result = ledger.run(
                Effect(eff.key, eff.kind, eff.payload, bound.perform, verify, policy=GIVE_UP)
            )
            assert result.status is Status.UNKNOWN, result


def reconcile_once(session: BrowserSession, path: Path, shared: bool) -> dict[str, Any]:
    registry = Registry()
    policy = Policy()
    with Ledger.open(str(path), registry=registry) as ledger:
        listings = Listings(session, ledger.clock)
        for kind in ("post", "invoice"):
            if shared:
                listings.register(registry, kind, site_of, policy=policy)
            else:
                registry.register(
                    kind, lambda r: session.effect(site_of(r)).verify(), policy=policy
                )
        traffic = Traffic(session)
        t = time.perf_counter()
        with listings.one_pass():
            report = ledger.reconcile()
        total = time.perf_counter() - t
    ends = sorted((r.key, str(r.status), r.result_ref) for r in report.results)
    return {
        "total": total,
        "requests": traffic.requests,
        "navigations": traffic.navigations,
        "ends": ends,
    }


def run_reconcile(
    browser: Browser, server: SandboxServer, folder: Path, round_: int, n: int
) -> dict[str, Any]:
    session = fresh_session(browser, server)
    try:
        alone, shared = folder / f"rec-{round_}-alone.db", folder / f"rec-{round_}-shared.db"
        left_unknown(session, alone, round_, n)
        shutil.copy(alone, shared)
        order = [(alone, False), (shared, True)]
        runs = {s: reconcile_once(session, p, s) for p, s in order[:: 1 if round_ % 2 else -1]}
    finally:
        session.close()
    one, many = runs[False], runs[True]
    assert one["ends"] == many["ends"], (one["ends"], many["ends"])
    assert all(status == str(Status.CONFIRMED) for _k, status, _r in one["ends"]), one["ends"]
    return {"one": one, "shared": many}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--effects", type=int, default=12, help="effects per batch")
    args = parser.parse_args()
    n = args.effects
    rounds: list[dict[str, Any]] = []
    recs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, SandboxServer() as server, Browser() as browser:
        # Warm-up (not counted): first page loads, template compilation, JIT.
        run_unguarded(browser, server, -1, 2)
        run_unguarded(browser, server, -1, 2, network_guard=False)
        run_guarded(browser, server, Path(tmp), -1, 2)
        for r in range(args.rounds):
            if r % 2 == 0:
                raw = run_unguarded(browser, server, r, n, network_guard=False)
                u = run_unguarded(browser, server, r, n)
                g = run_guarded(browser, server, Path(tmp), r, n)
            else:
                g = run_guarded(browser, server, Path(tmp), r, n)
                u = run_unguarded(browser, server, r, n)
                raw = run_unguarded(browser, server, r, n, network_guard=False)
            rounds.append({"u": u, "g": g, "raw": raw})
            rec = run_reconcile(browser, server, Path(tmp), r, n)
            recs.append(rec)
            print(
                f"round {r}: raw (no network guard) {1000 * raw['total'] / n:7.1f} ms/effect, "
                f"unguarded {1000 * u['total'] / n:7.1f} ms/effect, guarded "
                f"{1000 * g['total'] / n:7.1f} ms/effect of which verify "
                f"{1000 * g['verify'] / n:6.1f}, precondition {1000 * g['precondition'] / n:5.1f},"
                f" ledger store {1000 * g['store'] / n:5.1f}, perform {1000 * g['perform'] / n:6.1f}",
                flush=True,
            )
            print(
                f"round {r}: reconcile of {n} unknown effects: one by one "
                f"{rec['one']['requests'] / n:.2f} requests/effect "
                f"({1000 * rec['one']['total'] / n:.1f} ms), shared listing "
                f"{rec['shared']['requests'] / n:.2f} ({1000 * rec['shared']['total'] / n:.1f} ms)",
                flush=True,
            )

    def per_effect(field: str, side: str = "g") -> float:
        return 1000 * statistics.median(x[side][field] for x in rounds) / n

    def per_count(field: str, side: str = "g") -> float:
        return round(statistics.median(x[side][field] for x in rounds) / n, 2)

    ratios = [(x["g"]["total"] - x["g"]["verify"]) / x["u"]["total"] for x in rounds]
    ledger_only = [
        (x["g"]["total"] - x["g"]["verify"] - x["g"]["precondition"]) / x["u"]["total"]
        for x in rounds
    ]
    perform_ratio = [x["g"]["perform"] / x["u"]["total"] for x in rounds]
    wire_ratio = [x["u"]["total"] / x["raw"]["total"] for x in rounds]
    guarded_ex = [1000 * (x["g"]["total"] - x["g"]["verify"]) / n for x in rounds]
    overhead = [
        1000
        * (
            x["g"]["total"]
            - x["g"]["verify"]
            - x["g"]["precondition"]
            - x["g"]["perform"]
            - x["g"]["store"]
        )
        / n
        for x in rounds
    ]
    own = [
        1
        + (x["g"]["total"] - x["g"]["verify"] - x["g"]["precondition"] - x["g"]["perform"])
        / x["u"]["total"]
        for x in rounds
    ]
    summary = {
        "effects": n,
        "rounds": args.rounds,
        "mix": "posts and invoices alternating, no faults",
        "ratio": round(statistics.median(ratios), 4),
        "ratio_ledger_only": round(statistics.median(ledger_only), 4),
        "perform_ratio": round(statistics.median(perform_ratio), 4),
        "ledger_overhead_ratio": round(statistics.median(own), 4),
        "ratios_per_round": [round(x, 4) for x in ratios],
        "network_guard_perform_ratio": round(statistics.median(wire_ratio), 4),
        "network_guard_ratios_per_round": [round(x, 4) for x in wire_ratio],
        "raw_ms_per_effect": round(per_effect("total", "raw"), 2),
        "unguarded_ms_per_effect": round(per_effect("total", "u"), 2),
        "guarded_ms_per_effect": round(statistics.median(guarded_ex), 2),
        "guarded_total_ms_per_effect": round(per_effect("total"), 2),
        "verify_ms_per_effect": round(per_effect("verify"), 2),
        "verify_calls_per_effect": round(
            statistics.median(x["g"]["verify_calls"] for x in rounds) / n, 2
        ),
        "precondition_ms_per_effect": round(per_effect("precondition"), 2),
        "perform_ms_per_effect_guarded": round(per_effect("perform"), 2),
        "ledger_store_ms_per_effect": round(per_effect("store"), 2),
        "ledger_store_calls_per_effect": round(
            statistics.median(x["g"]["store_calls"] for x in rounds) / n, 2
        ),
        "protocol_other_ms_per_effect": round(statistics.median(overhead), 2),
        "requests_per_effect": per_count("requests"),
        "requests_per_effect_unguarded": per_count("requests", "u"),
        "navigations_per_effect": per_count("navigations"),
        "navigations_per_effect_unguarded": per_count("navigations", "u"),
    }

    def per_rec(side: str, field: str) -> float:
        return round(statistics.median(x[side][field] for x in recs) / n, 3)

    for side, name in (("one", "one_by_one"), ("shared", "shared")):
        summary[f"reconcile_requests_per_effect_{name}"] = per_rec(side, "requests")
        summary[f"reconcile_navigations_per_effect_{name}"] = per_rec(side, "navigations")
        summary[f"reconcile_ms_per_effect_{name}"] = round(1000 * per_rec(side, "total"), 2)
    summary["reconcile_requests_ratio"] = round(
        statistics.median(x["shared"]["requests"] / x["one"]["requests"] for x in recs), 4
    )
    summary["reconcile_navigations_ratio"] = round(
        statistics.median(x["shared"]["navigations"] / x["one"]["navigations"] for x in recs), 4
    )
    summary["requests_ratio"] = round(
        summary["requests_per_effect"] / summary["requests_per_effect_unguarded"], 4
    )
    print(
        f"ratio (guarded without verification / unguarded): {summary['ratio']}; "
        f"without the precondition too: {summary['ratio_ledger_only']}; "
        f"verification {summary['verify_ms_per_effect']} ms/effect over "
        f"{summary['verify_calls_per_effect']} calls; requests per effect "
        f"{summary['requests_per_effect']} guarded vs {summary['requests_per_effect_unguarded']} "
        f"unguarded (ratio {summary['requests_ratio']}), main-frame navigations "
        f"{summary['navigations_per_effect']} vs {summary['navigations_per_effect_unguarded']}"
    )
    print(
        f"reconcile: requests per effect {summary['reconcile_requests_per_effect_shared']} with "
        f"the shared listing vs {summary['reconcile_requests_per_effect_one_by_one']} one by one "
        f"(ratio {summary['reconcile_requests_ratio']}), main-frame navigations "
        f"{summary['reconcile_navigations_per_effect_shared']} vs "
        f"{summary['reconcile_navigations_per_effect_one_by_one']} "
        f"(ratio {summary['reconcile_navigations_ratio']})"
    )
    if args.json:
        print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
