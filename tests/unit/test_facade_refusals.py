"""The public classes refuse bad input with the words a person reads.

Every refusal of the facades (``Effect``, ``Step``, ``Lease``, ``WorkQueue``,
``Registry``, ``Operator``, ``provider_retry``, the operations' plan) pinned
as it is worded: which argument, what it must be, and what was given. A
message that names the wrong thing (``NoneType`` for the value given, the
wrong field) sends the user looking in the wrong place.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    Effect,
    Gate,
    Lease,
    Ledger,
    MemoryStore,
    Operation,
    Operator,
    Policy,
    Registry,
    Role,
    Step,
    UsageError,
    WorkQueue,
    provider_retry,
)
from actonce.testing import FrozenClock


def _effect(key: str = "k1", **kw: Any) -> Effect:
    fields: dict[str, Any] = {
        "key": key,
        "kind": "post",
        "payload": {},
        "perform": lambda: None,
        "verify": Absent,
        **kw,
    }
    return Effect(**fields)


def _ledger() -> Ledger:
    return Ledger(MemoryStore(), clock=FrozenClock())


def _never(record: Any) -> Any:
    return Absent()


class _Hooks:
    def observe(self, ctx: Any) -> Any:
        return ()


EFFECT: list[tuple[str, Callable[[], object], str]] = [
    ("no key", lambda: _effect(""), "an effect needs a key (a non-empty string or an EffectKey)"),
    ("blank key", lambda: _effect("  "), "an effect needs a key (a non-empty string or an EffectKey)"),
    ("key not text", lambda: _effect(7), "an effect needs a key (a non-empty string or an EffectKey)"),  # type: ignore[arg-type]
    ("NUL key", lambda: _effect("a\x00b"), "the effect key cannot contain a NUL character"),
    ("no kind", lambda: _effect(kind=""), "an effect needs a kind (a non-empty string)"),
    ("kind not text", lambda: _effect(kind=3), "an effect needs a kind (a non-empty string)"),
    ("kind too long", lambda: _effect(kind="k" * 513), "the kind is 513 characters long; at most 512"),
    ("perform", lambda: _effect(perform=5), "an effect needs a callable perform, not 5"),
    ("verify", lambda: _effect(verify="v"), "an effect needs a callable verify, not 'v'"),
    ("gate", lambda: _effect(gate={"x": 1}), "gate must be an actonce.Gate, not dict"),
    ("refresh, no gate", lambda: _effect(refresh=lambda: []),
     "refresh needs a gate with the approval whose facts it refreshes"),
    ("refresh, a gate without approval", lambda: _effect(gate=Gate(), refresh=lambda: []),
     "refresh needs a gate with the approval whose facts it refreshes"),
    ("precondition", lambda: _effect(precondition=1), "precondition must be callable or None, not 1"),
    ("evidence", lambda: _effect(evidence="e"), "evidence must be callable or None, not 'e'"),
    ("policy", lambda: _effect(policy={}), "policy must be a Policy, not dict"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "make", "message"), EFFECT, ids=[c[0] for c in EFFECT])
def test_an_effect_refuses_a_bad_field_naming_it(
    case: str, make: Callable[[], object], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        make()
    assert str(caught.value) == message


def test_an_effect_with_a_gate_and_no_refresh_is_fine() -> None:
    assert _effect(gate=Gate()).gate == Gate()
    assert _effect(precondition=lambda: True, evidence=lambda label: None).kind == "post"


def test_a_secret_looking_key_shows_its_stored_form_cut_at_120_characters() -> None:
    key = "a" * 130 + "?token=abcdefgh12345678"
    with pytest.raises(UsageError) as caught:
        _effect(key)
    text = str(caught.value)
    assert f"would keep it as {'a' * 120!r}, so keys" in text
    assert "abcdefgh12345678" not in text


STEP: list[tuple[str, Callable[[], object], str]] = [
    ("no name", lambda: Step("", _effect()), "a step needs a name"),
    ("name not text", lambda: Step(5, _effect()), "a step needs a name"),  # type: ignore[arg-type]
    ("effect", lambda: Step("pay", "e"), "step 'pay': effect must be an actonce.Effect"),  # type: ignore[arg-type]
    ("role", lambda: Step("pay", _effect(), role="main"),
     "step 'pay': role is one of compensatable, pivot, retriable"),
    ("undo", lambda: Step("pay", _effect(), undo="u"), "step 'pay': undo must be an actonce.Effect"),  # type: ignore[arg-type]
    ("attempts 0", lambda: Step("pay", _effect(), attempts=0),
     "step 'pay': attempts is a whole number from 1 to 100"),
    ("attempts 101", lambda: Step("pay", _effect(), attempts=101),
     "step 'pay': attempts is a whole number from 1 to 100"),
    ("attempts True", lambda: Step("pay", _effect(), attempts=True),
     "step 'pay': attempts is a whole number from 1 to 100"),
    ("attempts 2.0", lambda: Step("pay", _effect(), attempts=2.0),  # type: ignore[arg-type]
     "step 'pay': attempts is a whole number from 1 to 100"),
    ("backoff -1", lambda: Step("pay", _effect(), backoff=-1),
     "step 'pay': backoff is 0 to 86400 seconds"),
    ("backoff a day and a second", lambda: Step("pay", _effect(), backoff=86401),
     "step 'pay': backoff is 0 to 86400 seconds"),
    ("backoff False", lambda: Step("pay", _effect(), backoff=False),
     "step 'pay': backoff is 0 to 86400 seconds"),
    ("backoff text", lambda: Step("pay", _effect(), backoff="1"),  # type: ignore[arg-type]
     "step 'pay': backoff is 0 to 86400 seconds"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "make", "message"), STEP, ids=[c[0] for c in STEP])
def test_a_step_refuses_a_bad_field_naming_the_step(
    case: str, make: Callable[[], object], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        make()
    assert str(caught.value) == message


def test_a_steps_edges_are_accepted() -> None:
    for attempts in (1, 100):
        assert Step("pay", _effect(), attempts=attempts).attempts == attempts
    for backoff in (0, 86400, 0.5):
        assert Step("pay", _effect(), backoff=backoff).backoff == backoff
    assert Step("pay", _effect(), role="pivot").role == Role.PIVOT


def _op(steps: list[Step], op_id: str = "op-1", contact: str | None = None) -> Operation:
    return Operation(_ledger(), op_id, steps, contact=contact)


OPERATION: list[tuple[str, Callable[[], object], str]] = [
    ("no id", lambda: _op([Step("a", _effect())], op_id=" "), "an operation needs an id"),
    ("id not text", lambda: _op([Step("a", _effect())], op_id=3), "an operation needs an id"),  # type: ignore[arg-type]
    ("blank contact", lambda: _op([Step("a", _effect())], contact=" "),
     "contact is who the user may ask (a non-empty string)"),
    ("contact not text", lambda: _op([Step("a", _effect())], contact=5),  # type: ignore[arg-type]
     "contact is who the user may ask (a non-empty string)"),
    ("no steps", lambda: _op([]), "an operation needs at least one step"),
    ("two names", lambda: _op([Step("a", _effect("k1")), Step("a", _effect("k2"))]),
     "the steps of an operation need different names"),
    ("one key twice", lambda: _op([Step("a", _effect("k1")), Step("b", _effect("k1"))]),
     "every step and undo of an operation needs a key of its own"),
    ("an undo's key a step's", lambda: _op([Step("a", _effect("k1"), undo=_effect("k1"))]),
     "every step and undo of an operation needs a key of its own"),
    ("two pivots", lambda: _op([Step("a", _effect("k1"), role="pivot"),
                                Step("b", _effect("k2"), role="pivot")]),
     "an operation has at most one pivot step"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "make", "message"), OPERATION, ids=[c[0] for c in OPERATION])
def test_an_operation_refuses_a_bad_plan_before_anything_is_written(
    case: str, make: Callable[[], object], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        make()
    assert str(caught.value).startswith(message)


def test_an_operations_steps_keep_their_roles_in_the_plan() -> None:
    # A retriable step before the pivot is refused: the roles reach the assessment.
    with pytest.raises(UsageError, match="retriable"):
        _op([Step("a", _effect("k1"), role="retriable"), Step("b", _effect("k2"), role="pivot")])
    done: set[str] = set()

    def step(key: str) -> Effect:
        return _effect(key, perform=lambda: done.add(key),
                       verify=lambda: Confirmed() if key in done else Absent())  # fmt: skip

    ok = _op([Step("a", step("k1"), undo=step("k3")), Step("b", step("k2"), role="pivot")])
    assert ok.run().state.value == "complete"
    assert done == {"k1", "k2"}


LEASE: list[tuple[str, Callable[[], object], str]] = [
    ("no name", lambda: Lease(_ledger(), ""), "a lease's name must be a non-empty string, not ''"),
    ("owner", lambda: Lease(_ledger(), "n", owner=""), "a lease's owner must be a non-empty string, not ''"),
    ("ttl text", lambda: Lease(_ledger(), "n", ttl="5"),  # type: ignore[arg-type]
     "a lease's ttl must be a finite number of seconds, not '5'"),
    ("ttl True", lambda: Lease(_ledger(), "n", ttl=True), "a lease's ttl must be a finite number of seconds, not True"),
    ("ttl inf", lambda: Lease(_ledger(), "n", ttl=math.inf), "a lease's ttl must be a finite number of seconds, not inf"),
    ("ttl 0", lambda: Lease(_ledger(), "n", ttl=0), "a lease needs a positive ttl"),
    ("ttl -1", lambda: Lease(_ledger(), "n", ttl=-1), "a lease needs a positive ttl"),
    ("target", lambda: Lease(object(), "n"), "expected a ledger or a store, not object"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "make", "message"), LEASE, ids=[c[0] for c in LEASE])
def test_a_lease_refuses_bad_arguments(case: str, make: Callable[[], object], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        make()
    assert str(caught.value) == message


def test_a_lease_not_held_says_whose_it_is_not() -> None:
    lease = Lease(_ledger(), "nightly", owner="w1", ttl=5)
    with pytest.raises(UsageError) as caught:
        lease.heartbeat()
    assert str(caught.value) == "lease 'nightly' is not held by w1"
    with pytest.raises(UsageError) as caught:
        lease.release()
    assert str(caught.value) == "lease 'nightly' is not held by w1"


def _queue(**kw: Any) -> WorkQueue:
    return WorkQueue(_ledger(), **kw)


QUEUE: list[tuple[str, Callable[[], object], str]] = [
    ("lease 0", lambda: _queue(lease_seconds=0), "lease_seconds must be a positive number, not 0"),
    ("lease nan", lambda: _queue(lease_seconds=math.nan), "lease_seconds must be a positive number, not nan"),
    ("lease True", lambda: _queue(lease_seconds=True), "lease_seconds must be a positive number, not True"),
    ("lease text", lambda: _queue(lease_seconds="9"), "lease_seconds must be a positive number, not '9'"),
    ("worker", lambda: _queue(worker=" "), "a worker's name must be a non-empty string, not ' '"),
    ("target", lambda: WorkQueue(3), "expected a ledger or a store, not int"),
    ("kind", lambda: _queue().put("", {}), "a queued item's kind must be a non-empty string, not ''"),
    ("take 0", lambda: _queue().take(0), "take from 1 to 10,000 items, not 0"),
    ("take 10001", lambda: _queue().take(10_001), "take from 1 to 10,000 items, not 10001"),
    ("take True", lambda: _queue().take(True), "take from 1 to 10,000 items, not True"),
    ("heartbeat", lambda: _queue().heartbeat({"id": 1}),  # type: ignore[arg-type]
     "expected a QueueItem from take(), not dict"),
    ("done", lambda: _queue().done(None),  # type: ignore[arg-type]
     "expected a QueueItem from take(), not NoneType"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "make", "message"), QUEUE, ids=[c[0] for c in QUEUE])
def test_a_work_queue_refuses_bad_arguments(
    case: str, make: Callable[[], object], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        make()
    assert str(caught.value) == message


def test_a_work_queue_takes_its_edges() -> None:
    queue = _queue(lease_seconds=0.5, worker="w")
    ids = [queue.put("mail", {"n": n}) for n in range(3)]
    assert [i.id for i in queue.take(10_000)] == ids
    assert queue.take(1) == []


def test_a_queued_payload_that_is_not_json_says_so() -> None:
    with pytest.raises(UsageError) as caught:
        _queue().put("mail", {"x": object()})
    assert str(caught.value).startswith("a queued payload must be JSON-able: ")


REGISTRY: list[tuple[str, Callable[[], object], str]] = [
    ("no kind", lambda: Registry().register("", _never), "a verifier needs a kind"),
    ("kind not text", lambda: Registry().register(None, _never), "a verifier needs a kind"),  # type: ignore[arg-type]
    ("NUL kind", lambda: Registry().register("a\x00", _never), "a verifier's kind cannot contain a NUL character"),
    ("not callable", lambda: Registry().register("post", 3), "a verifier must be callable, not 3"),  # type: ignore[arg-type]
    ("policy", lambda: Registry().register("post", _never, policy=1), "policy must be a Policy, not int"),  # type: ignore[arg-type]
    ("modules", lambda: Registry().load(["a"]), "modules is a comma-separated string of module names, not ['a']"),  # type: ignore[arg-type]
    ("missing module", lambda: Registry().load("actonce_no_such_module"),
     "cannot import verifier module 'actonce_no_such_module': "
     "ModuleNotFoundError: No module named 'actonce_no_such_module'"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "make", "message"), REGISTRY, ids=[c[0] for c in REGISTRY])
def test_a_registry_refuses_bad_verifiers(
    case: str, make: Callable[[], object], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        make()
    assert str(caught.value) == message


def test_a_registry_keeps_each_kinds_policy_and_lists_kinds_sorted() -> None:
    reg = Registry()
    slow = Policy(settle_seconds=30)
    reg.register("post", _never, policy=slow)

    @reg.verifier("book")
    def book(record: Any) -> Any:
        return Absent()

    entry = reg.get("post")
    assert entry is not None and entry.policy == slow and entry.verify is _never
    booked = reg.get("book")
    assert booked is not None and booked.verify is book and booked.policy == Policy()
    assert reg.kinds() == ["book", "post"]
    assert reg.get("nope") is None


def test_a_registry_loads_the_modules_named_once_each(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ao_verifiers_one.py").write_text(
        "from actonce import registry\nregistry.register('one', lambda record: None)\n"
    )
    (tmp_path / "ao_verifiers_two.py").write_text("raise SystemExit('no')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from actonce import registry

    registry.load(" ao_verifiers_one ,")
    assert registry.get("one") is not None
    monkeypatch.setenv("ACTONCE_VERIFIERS", "ao_verifiers_two")
    with pytest.raises(UsageError) as caught:
        Registry().load()
    assert str(caught.value) == "cannot import verifier module 'ao_verifiers_two': SystemExit: no"


OPERATOR: list[tuple[str, dict[str, Any], str]] = [
    ("no name", {"name": ""}, "an operator needs a name (its lease's; at most 200 characters)"),
    ("long name", {"name": "n" * 201}, "an operator needs a name (its lease's; at most 200 characters)"),
    ("no kinds", {"kinds": ()}, "an operator needs the kinds of effect it makes (kinds=('post', ...))"),
    ("blank kind", {"kinds": ("post", " ")}, "an operator needs the kinds of effect it makes (kinds=('post', ...))"),
    ("ttl text", {"ttl": "1"}, "an operator's ttl is a finite number of seconds, not '1'"),
    ("ttl True", {"ttl": True}, "an operator's ttl is a finite number of seconds, not True"),
    ("ttl inf", {"ttl": math.inf}, "an operator's ttl is a finite number of seconds, not inf"),
    ("ttl 0", {"ttl": 0}, "an operator needs a positive ttl"),
    ("limit 0", {"limit": 0}, "limit must be a whole number from 1 to 100,000, not 0"),
    ("limit 100001", {"limit": 100_001}, "limit must be a whole number from 1 to 100,000, not 100001"),
    ("limit True", {"limit": True}, "limit must be a whole number from 1 to 100,000, not True"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "kw", "message"), OPERATOR, ids=[c[0] for c in OPERATOR])
def test_an_operator_refuses_a_bad_configuration(
    case: str, kw: dict[str, Any], message: str
) -> None:
    args: dict[str, Any] = {"name": "poster", "kinds": ("post",), **kw}
    name = args.pop("name")
    with pytest.raises(UsageError) as caught:
        Operator(_ledger(), name, _Hooks(), **args)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_an_operators_configuration_edges_are_kept() -> None:
    hooks: Any = _Hooks()
    op = Operator(_ledger(), "n" * 200, hooks, kinds="post", ttl=1, limit=100_000, owner="me")
    assert op.name == "n" * 200
    assert op.config.kinds == frozenset({"post"})
    assert op.config.ttl == 1.0 and isinstance(op.config.ttl, float)
    assert op.config.limit == 100_000 and op.config.owner == "me"
    assert Operator(_ledger(), "p", _Hooks(), kinds=("post",), limit=1).config.limit == 1  # type: ignore[arg-type]


def test_provider_retry_refuses_attempts_outside_1_to_20() -> None:
    for attempts in (0, 21, 2.0, None):
        with pytest.raises(UsageError) as caught:
            provider_retry(lambda: 1, attempts=attempts)  # type: ignore[arg-type]
        assert str(caught.value) == "attempts is a whole number from 1 to 20"
    assert provider_retry(lambda: 1, attempts=20) == 1
    assert provider_retry(lambda: 1, attempts=1) == 1


def test_provider_retry_doubles_its_wait_up_to_eight_seconds() -> None:
    waits: list[float] = []
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 7:
            raise ConnectionError("reset")
        return "made"

    assert provider_retry(flaky, attempts=7, backoff=0.5, sleep=waits.append) == "made"
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    waits.clear()
    calls.clear()
    with pytest.raises(ConnectionError):
        provider_retry(flaky, attempts=3, backoff=3, sleep=waits.append)
    assert waits == [3, 6] and len(calls) == 3


def test_provider_retry_lets_other_errors_through_at_once() -> None:
    waits: list[float] = []

    def broken() -> str:
        raise KeyError("no")

    with pytest.raises(KeyError):
        provider_retry(broken, retry_on=(ConnectionError,), sleep=waits.append)
    assert waits == []
