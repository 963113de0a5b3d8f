"""The seed-004 fault matrix, for your own effect.

Each :class:`FaultCase` wraps *your* :class:`~actonce.Effect` — its perform
and verify against your own (fake) system — with one fault, runs it through a
ledger on a frozen clock, settles what is left (the clock past the lease and
the settle window, then ``reconcile`` with your verify), and checks the
guarantees: perform ran at most once, the first outcome is one this fault
allows, and the settled status tells the truth (confirmed exactly when the
effect was committed).

=========================== ================================= =========================
fault                       what happens                      ``run`` may report
=========================== ================================= =========================
``lost_response``           your perform runs, then its       ``completed``
                            answer is lost (``TimeoutError``)
``provider_500``            HTTP 500 before commit: your      ``needs_review``, or
                            perform is not called             ``failed`` (authoritative
                                                              absence, settled window)
``unavailable_verification`` every verification is            ``deferred`` (nothing
                            ``Unavailable``                   claimed, nothing done)
``late_visibility``         your perform runs; your verify    ``needs_review``, or
                            sees it only half a settle        ``completed`` (seen in
                            window later, and never sooner    time, ``wait_for_settle``)
                            than :data:`LATE_SECONDS`
``crash_after_perform``     the worker dies right after       — (it crashed); reconcile
                            your perform                      confirms it
``resent_request``          the request reaches your system   ``needs_review``: a
                            twice (a browser's resend of a    duplicate detected, never
                            POST that got no answer): two     a silent ``confirmed``
                            results exist
=========================== ================================= =========================

A correct effect passes every case. What the cases catch: a perform that
retries on its own (a duplicate: ``lost_response``, ``late_visibility``,
``crash_after_perform``); an absence declared authoritative with a settle
window shorter than the world's lag, ``settle_seconds=0`` say
(``late_visibility``: the ledger says ``failed`` while the result exists);
a verifier that finds the first result instead of counting them
(``resent_request``: two results, reported as one). A system that
deduplicates a resent request itself (a provider idempotency key sent with
every request) holds one result after ``resent_request``: skip that case
for it.

With the pytest plugin (``actonce_fault``, parametrized over all six)::

    def test_my_effect_survives_the_faults(actonce_fault, actonce_ledger):
        report = actonce_fault.run(actonce_ledger, my_effect())
        assert report.ok, report.explain()
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from .._effect import Effect
from .._ledger import Ledger
from .._rules.keys import EffectKey
from .._rules.model import Absent, Outcome, Policy, RunResult, Status, Unavailable, Verdict
from .._run.points import SimulatedCrash, arm, disarm
from .provider import ProviderError

__all__ = ["FAULTS", "LATE_SECONDS", "FaultCase", "FaultReport"]

LATE_SECONDS = 1.0
"""The least lag of ``late_visibility``: a search index or a replica is never instant.

The lag is half the effect's settle window, and at least this: a window
shorter than the world's lag, with absence declared authoritative, turns a
late result into ``failed`` — which the case reports.
"""


@dataclass
class FaultReport:
    """What one fault did to your effect, and whether the guarantees held."""

    fault: str
    result: RunResult | None  # None: the run crashed (crash_after_perform)
    performs: int
    settled: Status | None
    committed: bool
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def explain(self) -> str:
        outcome = "crashed" if self.result is None else self.result.outcome.value
        return (
            f"{self.fault}: run -> {outcome}, performs {self.performs}, settled "
            f"{self.settled}; " + ("; ".join(self.problems) or "ok")
        )


@dataclass(frozen=True)
class FaultCase:
    """One fault of the matrix (see the module)."""

    name: str
    description: str
    committed: bool  # does the effect exist in your system afterwards?
    allowed: Callable[[Policy], frozenset[Outcome]]
    crash: bool = False
    resends: bool = False  # the request reaches your system twice

    def __str__(self) -> str:
        return self.name

    @property
    def results(self) -> int:
        """How many results your system holds afterwards (0, 1, or 2 for a resend)."""
        return 2 if self.resends else int(self.committed)

    @property
    def expected(self) -> frozenset[Outcome]:
        """The outcomes ``run`` may report under the default policy."""
        return self.allowed(Policy())

    def wrap(self, effect: Effect, clock: Any, performs: list[int]) -> Effect:
        """``effect`` with this fault injected; ``performs`` counts real performs."""
        perform, verify = effect.perform, effect.verify
        visible_at: list[float] = []

        def real_perform() -> Any:
            performs.append(1)
            return perform()

        if self.name == "lost_response":

            def faulty() -> Any:
                real_perform()
                raise TimeoutError("injected: the response was lost after the commit")

            return replace(effect, perform=faulty)
        if self.name == "provider_500":

            def refused() -> Any:
                raise ProviderError("injected: HTTP 500 before commit")

            return replace(effect, perform=refused)
        if self.name == "unavailable_verification":
            return replace(
                effect,
                perform=real_perform,
                verify=lambda: Unavailable("injected: verification unavailable"),
            )
        if self.name == "late_visibility":
            delay = max(effect.policy.settle_seconds / 2, LATE_SECONDS)

            def late_perform() -> Any:
                try:
                    return real_perform()
                finally:
                    visible_at.append(clock.monotonic() + delay)

            def late_verify() -> Verdict | Any:
                if visible_at and clock.monotonic() < visible_at[0]:
                    return Absent()
                return verify()

            return replace(effect, perform=late_perform, verify=late_verify)
        if self.resends:

            def resent() -> Any:
                answer = real_perform()
                perform()  # the transport's resend: your code ran once, your system got two
                return answer

            return replace(effect, perform=resent)
        return replace(effect, perform=real_perform)  # crash_after_perform

    def run(self, ledger: Ledger, effect: Effect) -> FaultReport:
        """Run ``effect`` under this fault, settle it, check the guarantees.

        ``ledger`` must run on a clock that can be moved (``FrozenClock``:
        the plugin's ``actonce_ledger``). Its registry gets ``effect.verify``
        for ``effect.kind`` (for reconcile).
        """
        clock = ledger.clock
        if not hasattr(clock, "advance"):
            raise TypeError("the fault matrix needs a ledger on a FrozenClock (actonce_ledger)")
        performs: list[int] = []
        faulty = self.wrap(effect, clock, performs)
        result: RunResult | None = None
        with _crashing(self.crash):
            try:
                result = ledger.run(faulty)
            except SimulatedCrash:
                result = None
        if self.crash is False and result is None:  # pragma: no cover - defensive
            raise AssertionError("only crash_after_perform crashes")
        # Settle: past the lease (a dead owner) and the settle window, then reconcile.
        ledger.registry.register(effect.kind, lambda _record: effect.verify(), policy=effect.policy)
        clock.advance(effect.policy.lease_seconds + effect.policy.settle_seconds + 1)
        ledger.reconcile()
        key = effect.key.value if isinstance(effect.key, EffectKey) else effect.key
        record = ledger.get(key)
        settled = None if record is None else record.status
        report = FaultReport(self.name, result, len(performs), settled, self.committed)
        if len(performs) > 1:
            report.problems.append(f"perform ran {len(performs)} times")
        matches = 0 if record is None else record.matches
        allowed = self.allowed(effect.policy)
        if result is not None and result.outcome not in allowed:
            names = ", ".join(sorted(o.value for o in allowed))
            report.problems.append(f"run reported {result.outcome.value}, expected one of {names}")
        if self.resends:
            if matches < 2:
                report.problems.append(
                    f"your system got the request twice, but verify counted {matches} result(s): "
                    "count every match (Confirmed(count=...)), never stop at the first"
                )
            if settled is Status.CONFIRMED:
                report.problems.append("two results exist, but the ledger settled on confirmed")
            return report
        if matches > 1:
            report.problems.append(f"a duplicate was detected: {matches} results exist")
        if self.committed and settled is not Status.CONFIRMED:
            report.problems.append(f"it happened, but the ledger settled on {settled}")
        if not self.committed and settled is Status.CONFIRMED:
            report.problems.append("it never happened, but the ledger says confirmed")
        if self.name == "unavailable_verification" and performs:
            report.problems.append("performed without a verification")
        return report


@contextlib.contextmanager
def _crashing(crash: bool) -> Iterator[None]:
    if not crash:
        yield
        return
    arm("after_perform", nth=1, mode="raise")
    try:
        yield
    finally:
        disarm()


def _absence_proves(policy: Policy) -> bool:
    return policy.absence_authoritative and (policy.settle_seconds == 0 or policy.wait_for_settle)


FAULTS: tuple[FaultCase, ...] = (
    FaultCase(
        "lost_response",
        "the provider commits, then the response is lost",
        committed=True,
        allowed=lambda p: frozenset({Outcome.COMPLETED}),
    ),
    FaultCase(
        "provider_500",
        "HTTP 500 before the commit: nothing happened",
        committed=False,
        allowed=lambda p: frozenset(
            {Outcome.FAILED} if _absence_proves(p) else {Outcome.NEEDS_REVIEW, Outcome.FAILED}
        ),
    ),
    FaultCase(
        "unavailable_verification",
        "verification cannot be made: nothing is claimed or performed",
        committed=False,
        allowed=lambda p: frozenset({Outcome.DEFERRED}),
    ),
    FaultCase(
        "late_visibility",
        "the result shows up half a settle window after the perform",
        committed=True,
        allowed=lambda p: frozenset(
            {Outcome.COMPLETED} if p.wait_for_settle else {Outcome.NEEDS_REVIEW, Outcome.COMPLETED}
        ),
    ),
    FaultCase(
        "crash_after_perform",
        "the worker dies right after the perform; reconcile settles it",
        committed=True,
        allowed=lambda p: frozenset(),
        crash=True,
    ),
    FaultCase(
        "resent_request",
        "the request reaches your system twice: a duplicate must be detected",
        committed=True,
        allowed=lambda p: frozenset({Outcome.NEEDS_REVIEW}),
        resends=True,
    ),
)
