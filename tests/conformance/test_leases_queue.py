"""Operator leases and work hand-out behave the same on every backend."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from actonce import AsyncLease, AsyncWorkQueue, ItemStatus, Lease, LeaseHeld, LeaseLost, WorkQueue
from actonce.testing import FrozenClock

T0 = 1_700_000_000.0


def test_lease_acquire_is_exclusive_until_expiry(store: Any) -> None:
    a = store.lease_acquire("nightly", "a", T0, T0 + 10)
    assert a.acquired and a.record.token == 1 and a.record.owner == "a"
    b = store.lease_acquire("nightly", "b", T0 + 5, T0 + 15)
    assert not b.acquired and b.record == a.record
    # At the expiry instant the lease is free; the token grows.
    c = store.lease_acquire("nightly", "b", T0 + 10, T0 + 20)
    assert c.acquired and c.record.token == 2 and c.record.owner == "b"
    assert store.lease_get("nightly") == c.record
    assert store.lease_get("other") is None


def test_lease_renew_and_release_are_fenced_by_token(store: Any) -> None:
    store.lease_acquire("l", "a", T0, T0 + 10)
    renewed = store.lease_renew("l", 1, "a", T0 + 5, T0 + 15)
    assert renewed is not None and renewed.heartbeat_at == T0 + 5 and renewed.expires_at == T0 + 15
    assert not store.lease_acquire("l", "b", T0 + 12, T0 + 20).acquired
    taken = store.lease_acquire("l", "b", T0 + 15, T0 + 25)
    assert taken.acquired and taken.record.token == 2
    # The old holder is fenced out.
    assert store.lease_renew("l", 1, "a", T0 + 16, T0 + 30) is None
    assert store.lease_release("l", 1, "a", T0 + 16) is False
    assert store.lease_release("l", 2, "b", T0 + 17) is True
    # Released: free at once, a renew by the releaser is refused, the token keeps growing.
    assert store.lease_renew("l", 2, "b", T0 + 17, T0 + 30) is None
    again = store.lease_acquire("l", "b", T0 + 17, T0 + 30)
    assert again.acquired and again.record.token == 3


def test_a_stale_token_of_the_same_owner_is_fenced_out(store: Any) -> None:
    """An owner name is not an identity: a worker restarted under the same name takes
    the lease again with a new token, and the old incarnation's heartbeat (the old
    token) must be refused — the token fences, not the name."""
    clock = FrozenClock(T0)
    old = Lease(store, "nightly", owner="worker-1", ttl=10, clock=clock)
    assert old.acquire() and old.token == 1
    clock.advance(11)  # the first incarnation stalls past its lease
    new = Lease(store, "nightly", owner="worker-1", ttl=10, clock=clock)
    assert new.acquire() and new.token == 2
    renewed = store.lease_renew("nightly", 1, "worker-1", T0 + 12, T0 + 40)
    assert renewed is None, f"a stale token renewed the lease: {renewed}"
    with pytest.raises(LeaseLost):
        old.heartbeat()
    assert store.lease_release("nightly", 1, "worker-1", T0 + 12) is False
    held = store.lease_get("nightly")
    assert held.token == 2 and held.expires_at == T0 + 21
    assert new.heartbeat().token == 2


def test_lease_race_between_threads_has_one_winner(store: Any) -> None:
    n = 10
    barrier = threading.Barrier(n)
    wins: list[bool] = [False] * n

    def go(i: int) -> None:
        barrier.wait()
        wins[i] = store.lease_acquire("race", f"w{i}", T0, T0 + 60).acquired

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(wins) == 1


def test_lease_context_manager(store: Any) -> None:
    clock = FrozenClock(T0)
    with Lease(store, "run", owner="a", ttl=30, clock=clock) as lease:
        assert lease.token == 1
        with pytest.raises(LeaseHeld), Lease(store, "run", owner="b", ttl=30, clock=clock):
            pass  # pragma: no cover
        clock.advance(20)
        assert lease.heartbeat().expires_at == T0 + 50
    assert lease.record is None
    assert store.lease_get("run").owner == ""  # released in finally
    with Lease(store, "run", owner="b", ttl=30, clock=clock) as second:
        assert second.token == 2


def test_a_taken_over_holder_gets_lease_lost(store: Any) -> None:
    clock = FrozenClock(T0)
    zombie = Lease(store, "run", owner="zombie", ttl=10, clock=clock)
    with pytest.raises(LeaseLost), zombie:
        clock.advance(11)  # the zombie stalls past its expiry ...
        assert Lease(store, "run", owner="new", ttl=10, clock=clock).acquire()
        zombie.heartbeat()  # ... and is refused
    assert store.lease_get("run").owner == "new"
    # Leaving the block after a takeover (without another error) says so too.
    clock.advance(11)
    late = Lease(store, "run", owner="late", ttl=10, clock=clock)
    with pytest.raises(LeaseLost), late:
        clock.advance(11)
        assert Lease(store, "run", owner="newer", ttl=10, clock=clock).acquire()


def test_anyone_can_read_who_holds_a_lease(store: Any) -> None:
    clock = FrozenClock(T0)
    reader = Lease(store, "review:k1", owner="bo", ttl=60, clock=clock)
    assert reader.current() is None
    with Lease(store, "review:k1", owner="ana", ttl=60, clock=clock):
        held = reader.current()
        assert held is not None and held.owner == "ana" and held.expires_at == T0 + 60
        assert held.live(clock.now()) and reader.record is None  # a read takes nothing
    released = reader.current()
    assert released is not None and not released.live(clock.now())

    async def read() -> str | None:
        record = await AsyncLease(store, "review:k1", clock=clock).current()
        return None if record is None else record.owner

    assert asyncio.run(read()) == ""


def test_async_lease_has_the_same_names(store: Any) -> None:
    clock = FrozenClock(T0)

    async def main() -> None:
        async with AsyncLease(store, "job", owner="a", ttl=5, clock=clock) as lease:
            await lease.heartbeat()
            assert not await AsyncLease(store, "job", owner="b", clock=clock).acquire()
        assert await AsyncLease(store, "job", owner="b", clock=clock).acquire()

    asyncio.run(main())


def test_queue_hands_each_item_to_one_taker(store: Any) -> None:
    clock = FrozenClock(T0)
    put = WorkQueue(store, worker="producer", clock=clock)
    ids = [put.put("post", {"n": i}) for i in range(5)]
    assert ids == sorted(ids) and len(set(ids)) == 5
    a = WorkQueue(store, worker="a", lease_seconds=30, clock=clock)
    b = WorkQueue(store, worker="b", lease_seconds=30, clock=clock)
    got_a = a.take(2)
    got_b = b.take(10)
    assert [i.payload["n"] for i in got_a] == [0, 1]
    assert [i.payload["n"] for i in got_b] == [2, 3, 4]
    assert all(i.status is ItemStatus.TAKEN and i.attempts == 1 for i in got_a + got_b)
    assert got_a[0].taken_by == "a" and got_a[0].kind == "post"
    assert b.take() == []
    for item in got_b:
        b.done(item)
    assert put.counts() == {"queued": 0, "taken": 2, "done": 3}


def test_an_expired_take_is_handed_out_again_and_fences_the_first_taker(store: Any) -> None:
    clock = FrozenClock(T0)
    q1 = WorkQueue(store, worker="slow", lease_seconds=10, clock=clock)
    q2 = WorkQueue(store, worker="fast", lease_seconds=10, clock=clock)
    q1.put("book", {"room": 7})
    (first,) = q1.take()
    clock.advance(5)
    q1.heartbeat(first)  # still ours: pushed to T0 + 15
    clock.advance(9)
    assert q2.take() == []
    clock.advance(1)
    (second,) = q2.take()
    assert second.id == first.id and second.attempts == 2 and second.taken_by == "fast"
    with pytest.raises(LeaseLost):
        q1.heartbeat(first)
    with pytest.raises(LeaseLost):
        q1.done(first)
    q2.done(second)
    with pytest.raises(LeaseLost):
        q2.done(second)  # done once
    assert q2.counts() == {"queued": 0, "taken": 0, "done": 1}


def test_queue_race_between_threads_loses_and_repeats_nothing(store: Any) -> None:
    clock = FrozenClock(T0)
    producer = WorkQueue(store, clock=clock)
    for i in range(40):
        producer.put("k", i)
    n = 8
    barrier = threading.Barrier(n)
    seen: list[list[int]] = [[] for _ in range(n)]

    def work(i: int) -> None:
        q = WorkQueue(store, worker=f"w{i}", clock=clock)
        barrier.wait()
        while items := q.take(3):
            for item in items:
                seen[i].append(item.payload)
                q.done(item)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    flat = [p for s in seen for p in s]
    assert sorted(flat) == list(range(40))
    assert producer.counts()["done"] == 40


def test_async_queue_has_the_same_names(store: Any) -> None:
    clock = FrozenClock(T0)

    async def main() -> None:
        q = AsyncWorkQueue(store, worker="a", clock=clock)
        await q.put("k", {"x": 1})
        (item,) = await q.take()
        await q.heartbeat(item)
        await q.done(item)
        assert (await q.counts())["done"] == 1

    asyncio.run(main())
