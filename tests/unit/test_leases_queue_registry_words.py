"""Leases, the work queue and the verifier registry as a caller uses them: what each
takes, and each refusal in its own words (issue 23 item 2, the facades area).

A lease is named, owned and lives ``ttl`` seconds; a holder that lost it is
told so and holds nothing after. A queue item taken over by another worker
cannot be heartbeated or finished by the first. A registry maps kinds to
verifiers and says which module it could not import. Memory store, a
frozen clock.
"""

from __future__ import annotations

from typing import Any

import pytest

from actonce import (
    Lease,
    LeaseHeld,
    LeaseLost,
    Ledger,
    MemoryStore,
    Policy,
    Registry,
    UsageError,
    WorkQueue,
)
from actonce.testing import FrozenClock


def _ledger() -> tuple[Ledger, FrozenClock]:
    clock = FrozenClock(start=100.0)
    return Ledger(MemoryStore(), clock=clock), clock


def _refused(call: Any, message: str, error: type[Exception] = UsageError) -> None:
    with pytest.raises(error) as err:
        call()
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ttl": float("inf")}, "a lease's ttl must be a finite number of seconds, not inf"),
        ({"ttl": float("nan")}, "a lease's ttl must be a finite number of seconds, not nan"),
        ({"ttl": True}, "a lease's ttl must be a finite number of seconds, not True"),
        ({"ttl": "60"}, "a lease's ttl must be a finite number of seconds, not '60'"),
        ({"ttl": 0}, "a lease needs a positive ttl"),
        ({"ttl": -1.5}, "a lease needs a positive ttl"),
        ({"owner": ""}, "a lease's owner must be a non-empty string, not ''"),
    ],
)
def test_a_lease_is_named_owned_and_lives_a_while(kwargs: dict[str, Any], message: str) -> None:
    ledger, _ = _ledger()
    _refused(lambda: Lease(ledger, "ops", **kwargs), message)


def test_a_lease_needs_a_ledger_or_a_store_and_a_name() -> None:
    ledger, _ = _ledger()
    _refused(lambda: Lease(42, "ops"), "expected a ledger or a store, not int")
    _refused(lambda: Lease(ledger, ""), "a lease's name must be a non-empty string, not ''")
    store = MemoryStore()
    lease = Lease(store, "ops", owner="me", ttl=10, clock=FrozenClock(start=5.0))
    assert lease.store is store and lease.acquire() and lease.record is not None
    assert lease.record.expires_at == 15.0


def test_a_lease_held_lost_and_given_back() -> None:
    ledger, clock = _ledger()
    mine = Lease(ledger, "ops", owner="me", ttl=10)
    assert mine.token == 0 and mine.current() is None
    _refused(mine.heartbeat, "lease 'ops' is not held by me")
    _refused(mine.release, "lease 'ops' is not held by me")
    assert mine.acquire() is True and mine.token == 1
    clock.advance(5)
    renewed = mine.heartbeat()
    assert (renewed.owner, renewed.token, renewed.heartbeat_at, renewed.expires_at) == (
        "me", 1, 105.0, 115.0,
    )  # fmt: skip
    clock.advance(20)  # expired
    other = Lease(ledger, "ops", owner="other", ttl=10)
    assert other.acquire() is True and other.token == 2
    _refused(mine.heartbeat, "lease 'ops' expired and was taken over; stop this run", LeaseLost)
    assert mine.token == 0  # it holds nothing after
    _refused(mine.release, "lease 'ops' is not held by me")
    current = other.current()
    assert current is not None and (current.owner, current.token) == ("other", 2)
    assert Lease(ledger, "ops", owner="third").acquire() is False

    def enter() -> None:
        with Lease(ledger, "ops", owner="third", ttl=10):
            pass

    _refused(enter, "lease 'ops' is held by other", LeaseHeld)
    other.release()
    assert other.token == 0
    with Lease(ledger, "ops", owner="third", ttl=10) as third:
        assert third.token == 3
    assert third.token == 0


def test_a_lease_given_back_by_another_is_lost_to_its_holder() -> None:
    ledger, clock = _ledger()
    mine = Lease(ledger, "ops", owner="me", ttl=10)
    assert mine.acquire()
    clock.advance(11)
    assert Lease(ledger, "ops", owner="other", ttl=10).acquire()
    _refused(mine.release, "lease 'ops' expired and was taken over; stop this run", LeaseLost)
    assert mine.record is None


@pytest.mark.parametrize("seconds", [0, -1, True, float("nan"), float("inf"), "30"])
def test_a_queue_s_lease_is_a_positive_number_of_seconds(seconds: Any) -> None:
    ledger, _ = _ledger()
    _refused(
        lambda: WorkQueue(ledger, lease_seconds=seconds),
        f"lease_seconds must be a positive number, not {seconds!r}",
    )


def test_a_queue_takes_puts_and_refuses_in_its_words() -> None:
    ledger, clock = _ledger()
    _refused(lambda: WorkQueue(3), "expected a ledger or a store, not int")
    queue = WorkQueue(ledger, worker="w1", lease_seconds=30)
    _refused(
        lambda: queue.put("post", {"a": object()}),
        "a queued payload must be JSON-able: object has no canonical JSON form",
    )
    for limit in (0, 10_001, True, 1.5):
        _refused(lambda n=limit: queue.take(n), f"take from 1 to 10,000 items, not {limit!r}")
    _refused(lambda: queue.done({"id": 1}), "expected a QueueItem from take(), not dict")  # type: ignore[arg-type]
    _refused(lambda: queue.heartbeat("x"), "expected a QueueItem from take(), not str")  # type: ignore[arg-type]
    assert queue.put("post", {"a": 1, "password": "hunter2"}) == 1
    assert queue.counts() == {"queued": 1, "taken": 0, "done": 0}
    [item] = queue.take(10_000)
    assert (item.id, item.kind, item.taken_by, item.attempts, item.lease_expires_at) == (
        1, "post", "w1", 1, 130.0,
    )  # fmt: skip
    assert item.payload == {"a": 1, "password": {"$secret": "redacted"}}
    clock.advance(60)  # the first worker's lease is over
    [again] = WorkQueue(ledger, worker="w2", lease_seconds=30).take()
    assert (again.id, again.taken_by, again.attempts) == (1, "w2", 2)
    lost = "queue item 1 was taken over after attempt 1; its effects stay protected by the ledger"
    _refused(lambda: queue.heartbeat(item), lost, LeaseLost)
    _refused(lambda: queue.done(item), lost, LeaseLost)
    assert queue.counts() == {"queued": 0, "taken": 1, "done": 0}


def test_a_registry_maps_kinds_to_verifiers() -> None:
    registry = Registry()
    _refused(lambda: registry.register("", print), "a verifier needs a kind")
    _refused(lambda: registry.register("  ", print), "a verifier needs a kind")
    _refused(lambda: registry.register(3, print), "a verifier needs a kind")  # type: ignore[arg-type]
    _refused(
        lambda: registry.register("k\x00", print),
        "a verifier's kind cannot contain a NUL character",
    )
    _refused(lambda: registry.register("k", 3), "a verifier must be callable, not 3")  # type: ignore[arg-type]
    _refused(lambda: registry.register("k", print, policy={}), "policy must be a Policy, not dict")  # type: ignore[arg-type]
    assert registry.kinds() == [] and registry.get("k") is None
    registry.register("post", print)
    strict = Policy(verify_attempts=1)

    @registry.verifier("note", policy=strict)
    def note(record: Any) -> None:
        return None

    assert registry.kinds() == ["note", "post"]
    entry = registry.get("note")
    assert entry is not None and (entry.kind, entry.verify, entry.policy) == ("note", note, strict)
    post = registry.get("post")
    assert post is not None and post.policy == Policy() and post.verify is print
    registry.register("post", note)
    assert registry.get("post").verify is note  # type: ignore[union-attr]


def test_a_registry_says_which_module_it_could_not_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ACTONCE_VERIFIERS", raising=False)
    registry = Registry()
    _refused(
        lambda: registry.load(3),  # type: ignore[arg-type]
        "modules is a comma-separated string of module names, not 3",
    )
    _refused(
        lambda: registry.load("json,no_such_module_xyz"),
        "cannot import verifier module 'no_such_module_xyz': ModuleNotFoundError: "
        "No module named 'no_such_module_xyz'",
    )
    monkeypatch.setenv("ACTONCE_VERIFIERS", "json, no_such_env_module")
    _refused(
        registry.load,
        "cannot import verifier module 'no_such_env_module': ModuleNotFoundError: "
        "No module named 'no_such_env_module'",
    )
    registry.load("json, os")  # named modules win over the variable
    monkeypatch.setenv("ACTONCE_VERIFIERS", "json,")
    registry.load()


@pytest.mark.parametrize("modules", ["json, ,os", "json,,os", " json , os ,"])
def test_an_empty_entry_names_no_module(monkeypatch: pytest.MonkeyPatch, modules: str) -> None:
    """Until 2026-12-07 a blank entry between commas ("a, ,b") was imported as the module
    '' and refused ("Empty module name") while an empty one ("a,,b") was skipped."""
    monkeypatch.delenv("ACTONCE_VERIFIERS", raising=False)
    Registry().load(modules)
    monkeypatch.setenv("ACTONCE_VERIFIERS", modules)
    Registry().load()


@pytest.mark.parametrize("modules", [" ", " , ", ","])
def test_a_list_that_names_no_module_is_refused(
    monkeypatch: pytest.MonkeyPatch, modules: str
) -> None:
    monkeypatch.delenv("ACTONCE_VERIFIERS", raising=False)
    with pytest.raises(UsageError) as caught:
        Registry().load(modules)
    assert str(caught.value) == f"the verifier modules {modules!r} name no module"
    monkeypatch.setenv("ACTONCE_VERIFIERS", modules)
    with pytest.raises(UsageError):
        Registry().load()
