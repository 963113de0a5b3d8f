"""The async facades answer what the sync ones answer, call for call (issue 23 item 2,
the facades area).

One script of calls — effects run, read, resolved and reconciled; the
firewall log; budgets; a lease; the work queue; intents and approvals; an
operation and the decisions about it — runs once through ``Ledger`` and its
companions, once through ``AsyncLedger`` and theirs, each on a fresh memory
store with the same frozen clock. What differs by nature (run ids, packet
ids, codes) is left out; everything else must be equal.
"""

from __future__ import annotations

import asyncio
import inspect
from decimal import Decimal
from typing import Any

from actonce import (
    Absent,
    AsyncLease,
    AsyncLedger,
    AsyncOperation,
    AsyncWorkQueue,
    Confirmed,
    Effect,
    Intent,
    Lease,
    Ledger,
    MemoryStore,
    Operation,
    Policy,
    RefusalReason,
    Registry,
    SigningKeys,
    Step,
    Unavailable,
    WorkQueue,
    WriteRefusal,
)
from actonce.testing import FrozenClock

KEYS = SigningKeys.parse("k1:" + "ab" * 16)
POLICY = Policy(verify_attempts=1, lease_seconds=30.0, settle_seconds=0.0,
                absence_authoritative=True)  # fmt: skip


async def _(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _events(events: list[Any]) -> list[tuple[Any, ...]]:
    return [(e.type.value, e.fence, e.at, e.from_status, e.to_status, e.message) for e in events]


def _record(r: Any) -> Any:
    return None if r is None else (r.key, r.status, r.fence, r.updated_at, r.result_ref, r.reason)


async def script(is_async: bool) -> dict[str, Any]:
    clock = FrozenClock(start=1_000.0)
    registry = Registry()
    registry.register("pin", lambda record: Confirmed(f"late-{record.key}"), policy=POLICY)
    cls = AsyncLedger if is_async else Ledger
    ledger: Any = cls(MemoryStore(), clock=clock, registry=registry, signing_keys=KEYS)
    out: dict[str, Any] = {}
    made: list[str] = []

    def effect(key: str, *, lost: bool = False) -> Effect:
        def perform() -> None:
            made.append(key)
            clock.advance(1.0)
            if lost:
                raise TimeoutError("lost")

        def verify() -> Any:
            if lost and key in made:
                return Unavailable("down")
            return Confirmed(f"r-{key}") if key in made else Absent()

        return Effect(key=key, kind="pin", payload={"k": key}, perform=perform, verify=verify,
                      policy=POLICY)  # fmt: skip

    # effects
    out["run"] = [(r.outcome, r.status, r.attempt, r.result_ref, r.reason) for r in
                  [await _(ledger.run(effect(k, lost=k.startswith("lost"))))
                   for k in ("alpha", "lost-1", "lost-2", "beta")]]  # fmt: skip
    out["get"] = _record(await _(ledger.get("alpha")))
    out["find"] = _record(await _(ledger.find("beta")))
    page = await _(ledger.list(["confirmed", "unknown"], kind="pin", limit=2))
    out["list"] = [_record(r) for r in page]
    out["list2"] = [_record(r) for r in await _(ledger.list(limit=5, after=page[-1]))]
    out["counts"] = await _(ledger.counts())
    out["counts_unknown"] = await _(ledger.counts("unknown"))
    out["events"] = _events(await _(ledger.events("alpha")))
    out["holds"] = await _(ledger.holds("alpha"))
    out["duplicates"] = await _(ledger.duplicates())
    resolved = await _(ledger.resolve("lost-1", "not-happened", reviewer="maria",
                                      reason="not there", attempt=1))  # fmt: skip
    out["resolve"] = _record(resolved)
    clock.advance(60.0)
    seen: list[Any] = []
    report = await _(ledger.reconcile(limit=10, progress=seen.append))
    out["reconcile"] = ([(r.key, r.status, r.result_ref) for r in report.results], report.live,
                        report.no_verifier, report.errors, len(seen))  # fmt: skip
    out["summary"] = (await _(ledger.summary("no-run")), await _(ledger.summaries("x", limit=3)))
    out["operation_of"] = await _(ledger.operation_of("alpha"))
    # the firewall log
    fw = ledger.firewall
    for actor in ("ana", "bo", "ana"):
        await _(fw.record(WriteRefusal(actor=actor, method="POST", url="http://h/x?t=1",
                                       reason=RefusalReason.OUTSIDE_EFFECT)))  # fmt: skip
    listed = await _(fw.refusals(actor="ana", limit=1))
    out["refusals"] = [(r.id, r.actor, r.url, r.at) for r in listed]
    more = await _(fw.refusals(limit=5, before=listed[0].id))
    out["refusals2"] = [(r.id, r.actor) for r in more]
    out["fw_counts"] = (await _(fw.counts()), await _(fw.totals()))
    # budgets
    pool = await _(ledger.budgets.define("rooms", 3, unit="count", window="day"))
    out["pool"] = (pool.name, pool.limit, pool.unit, pool.window)
    usage = await _(ledger.budgets.usage("rooms", at=1_000.0))
    out["usage"] = [u.as_json() for u in usage]
    # a lease
    lease = (AsyncLease if is_async else Lease)(ledger, "ops", owner="me", ttl=10)
    out["lease"] = [await _(lease.acquire()), lease.token]
    clock.advance(2.0)
    beat = await _(lease.heartbeat())
    out["lease"] += [beat.expires_at, (await _(lease.current())).owner]
    await _(lease.release())
    out["lease"] += [lease.token, (await _(lease.current())).expires_at]
    # the work queue
    queue = (AsyncWorkQueue if is_async else WorkQueue)(ledger, worker="w", lease_seconds=20)
    item_id = await _(queue.put("post", {"n": 1, "password": "x"}, secret_fields=("n",)))
    [item] = await _(queue.take(5))
    await _(queue.heartbeat(item))
    out["queue"] = [item_id, item.payload, item.attempts, await _(queue.counts())]
    await _(queue.done(item))
    out["queue"].append(await _(queue.counts()))
    # intents and approvals
    intents, approvals = ledger.intents, ledger.approvals
    trip = Intent("trip", "booking", user="ana", provider="hotel", price_ceiling=Decimal("250"),
                  currency="EUR")  # fmt: skip
    out["put"] = (await _(intents.put(trip))).as_json()
    rev = await _(intents.revise("trip", notes={"a": 1}))
    out["revise"] = (rev.material, rev.changed, rev.intent.version)
    out["intent_get"] = (await _(intents.get("trip", 1))).as_json()
    out["chain"] = [(r.intent.version, r.status) for r in await _(intents.chain("trip"))]
    out["intent_list"] = [r.intent.intent_id for r in await _(intents.list(user="ana", limit=5))]
    out["intent_history"] = [e.type.value for e in await _(intents.history("trip"))]
    current = await _(intents.get("trip"))
    req = await _(approvals.request(current, "pay", "pay-key", amount="240", ttl=600,
                                    details={"room": "twin"}, terms="no refunds"))  # fmt: skip
    pid = req.packet.packet_id
    got = await _(approvals.get(pid))
    out["packet"] = (got.amount, got.ceiling, got.currency, got.details, got.terms,
                     got.expires_at - got.created_at, got.status)  # fmt: skip
    out["latest"] = (await _(approvals.latest(pid))).packet_id == pid
    second = await _(approvals.request(current, "pay", "pay-key-2", amount="10"))
    sid = second.packet.packet_id
    wrong = await _(approvals.answer_link(req.link, "approve", by="ana", packet_id=sid))
    out["wrong_link"] = (wrong.answer, wrong.status, wrong.reason.replace(sid, "SID"))
    code = await _(approvals.new_code(pid))
    old = await _(approvals.answer_code(req.code, "approve", by="ana", packet_id=pid))
    out["old_code"] = (old.answer, old.reason.replace(pid, "PID"))
    again = await _(approvals.resend(pid))
    stale = await _(approvals.answer_code(code, "approve", by="ana"))
    out["stale_code"] = (stale.answer, stale.reason)
    ok = await _(approvals.answer_code(again.code, "approve", by="ana"))
    out["ok"] = (ok.answer, ok.status)
    same = await _(approvals.answer(pid, "approve", by="ana", via="cli", note="fine"))
    out["same"] = (same.answer, same.status)
    out["packets"] = sorted(p.status.value for p in await _(approvals.list(user="ana", limit=5)))
    out["packet_history"] = [(e.type.value, e.data.get("via")) for e in
                             await _(approvals.history(pid))]  # fmt: skip
    linked = await _(approvals.answer_link(second.link, "deny", by="ana"))
    out["linked"] = (linked.answer, linked.status)
    closed = await _(intents.withdraw("trip", by="ana", reason="we stay home"))
    out["withdraw"] = (closed.applied, closed.operations, len(closed.voided))
    # an operation
    op_cls = AsyncOperation if is_async else Operation
    steps = [Step("hold", effect("hold-1"), "compensatable", undo=effect("unhold-1")),
             Step("book", effect("book-1"), "pivot")]  # fmt: skip
    op = op_cls(ledger, "op-1", steps, contact="ana@example.org")
    result = await _(op.run())
    out["op_run"] = (result.state, result.reason, [(n, r.status) for n, r in result.runs])
    state = await _(op.state())
    out["op_state"] = (state.state, state.reason)
    receipt = await _(op.receipt())
    out["op_receipt"] = (receipt.state, receipt.text.splitlines()[0])
    ops = ledger.operations
    view = await _(ops.get("op-1"))
    out["op_view"] = (view.state, view.step, view.attempt, [s.status for s in view.states])
    out["op_lists"] = ([v.op_id for v in await _(ops.in_review(limit=5))],
                       await _(ops.due(limit=5)))  # fmt: skip
    later = op_cls(ledger, "op-2", [Step("send", effect("send-2"), "pivot")])
    out["op_withdraw"] = (await _(later.withdraw(by="ana", reason="changed plans"))).state
    out["receipts"] = [(r.operation_id, r.state) for r, _at in await _(ledger.receipts(limit=5))]
    out["op_of"] = await _(ledger.operation_of("book-1"))
    return out


def test_the_async_facades_answer_what_the_sync_ones_do() -> None:
    sync = asyncio.run(script(False))
    async_ = asyncio.run(script(True))
    assert sync.keys() == async_.keys()
    for name in sync:
        assert sync[name] == async_[name], name
    # and the script itself says what it should
    assert sync["counts"] and sync["reconcile"][0] == [("lost-2", sync["reconcile"][0][0][1],
                                                        "late-lost-2")]  # fmt: skip
    assert sync["ok"][1].value == "approved" and sync["same"][0].value == "same"
    assert sync["op_of"] == "op-1" and sync["lease"] == [True, 1, 1076.0, "me", 0, 1066.0]
    assert sync["refusals"] == [(3, "ana", "http://h/x", 1064.0)]
    assert sync["refusals2"] == [(2, "bo"), (1, "ana")]
    assert sync["fw_counts"][1] == {"ana": 2, "bo": 1}
    secret = {"$secret": "redacted"}
    assert sync["queue"] == [1, {"n": secret, "password": secret}, 1,
                             {"queued": 0, "taken": 1, "done": 0},
                             {"queued": 0, "taken": 0, "done": 1}]  # fmt: skip
    assert sync["packet"][:6] == (Decimal("240"), Decimal("250"), "EUR", {"room": "twin"},
                                  "no refunds", 600.0)  # fmt: skip
    assert sync["resolve"][1:] == (sync["resolve"][1], 1, 1004.0, None,
                                   "not_happened: not there (maria)")  # fmt: skip
    assert [(r[0], r[1]) for r in sync["list2"]] == [
        ("lost-2", sync["list2"][0][1]), ("beta", sync["get"][1]),
    ]  # fmt: skip
    assert sync["receipts"][0][0] == "op-1" and sync["op_withdraw"].value == "compensated"
