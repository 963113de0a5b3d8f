"""Realistic single bugs, planted one at a time, and the tests that must catch each.

Issue 7 ("Tests that let real bugs through") planted 38 bugs by hand; nine
left the suite green. Each is written down here as a search-and-replace on
the source (``old`` occurs exactly once in the files ``path`` matches, so
a plant survives code moving between modules of one folder) together with
the tests that must fail with it and a line their failure must show: a
test that fails for another reason (an import error, a typo in the plant)
does not count as catching it.

``python tests/mutants/check_plants.py`` plants each in a temporary copy of
the tree and runs its tests (see docs/testing.md, "Planted bugs").
"""

from __future__ import annotations

import difflib
import glob
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PLANTS", "ROOT", "Plant"]

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Plant:
    name: str
    bug: str  # the bug, in the words
    path: str  # a glob, relative to the repository root
    old: str
    new: str
    tests: tuple[str, ...]  # pytest node ids (or files) that must fail with the bug
    expect: str  # a line the failure output must contain: the right reason
    cheap: bool = False  # pure protocol: seconds, no server, no browser

    def target(self, root: Path = ROOT) -> Path:
        """The one file under ``root`` that holds ``old`` exactly once."""
        hits = [
            (Path(p), Path(p).read_text(encoding="utf-8").count(self.old))
            for p in sorted(glob.glob(str(root / self.path)))
        ]
        found = [(p, n) for p, n in hits if n]
        if len(found) != 1 or found[0][1] != 1:
            where = ", ".join(f"{p.relative_to(root)} x{n}" for p, n in found) or "nowhere"
            raise LookupError(
                f"plant {self.name}: its text must occur exactly once under {self.path}, "
                f"found {where}; re-plant it against the current code"
            )
        return found[0][0]

    def apply(self, root: Path) -> Path:
        path = self.target(root)
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace(self.old, self.new, 1), encoding="utf-8")
        return path

    def diff(self, root: Path = ROOT) -> str:
        """The plant as a unified diff (``git apply``-able from the root)."""
        path = self.target(root)
        before = path.read_text(encoding="utf-8")
        after = before.replace(self.old, self.new, 1)
        rel = path.relative_to(root).as_posix()
        return "".join(
            difflib.unified_diff(
                before.splitlines(keepends=True),
                after.splitlines(keepends=True),
                f"a/{rel}",
                f"b/{rel}",
            )
        )


PLANTS: tuple[Plant, ...] = (
    Plant(
        name="pg-transition-two-statements",
        bug="the PostgreSQL transition writes its UPDATE and its event INSERT as two "
        "autocommit statements",
        path="src/actonce/_store/postgres_ops.py",
        old="""    if fields is None:
        stmt = Stmt(CAS, (*_cas_params(new, expect), *event_params(event)), True)
    else:
        clause, positions = q.cas_set(fields)
        values = record_params(new)
        stmt = Stmt(
            f"WITH won AS (UPDATE effects SET {q.pg(clause)} WHERE key = %s AND status = %s "
            f"AND fence = %s RETURNING key) INSERT INTO events ({q.EV_COLS}) "
            f"SELECT {_EV_TYPED} FROM won",
            (*(values[i] for i in positions), new.key, expect[0].value, expect[1],
             *event_params(event)),
            True,
        )  # fmt: skip
    won, _ = yield stmt
    return new if won == 1 else None
""",
        new="""    clause, positions = q.cas_set(fields)
    values = record_params(new)
    won, _ = yield Stmt(
        f"UPDATE effects SET {q.pg(clause)} WHERE key = %s AND status = %s AND fence = %s",
        (*(values[i] for i in positions), new.key, expect[0].value, expect[1]),
        True,
    )
    if won == 1:
        yield Stmt(q.pg(q.EVENT), event_params(event), True)
    return new if won == 1 else None
""",
        tests=(
            "tests/postgres/test_write_boundaries.py::"
            "test_a_transition_whose_event_is_refused_changes_nothing",
        ),
        expect="the state changed without its event",
    ),
    Plant(
        name="sqlite-lease-renew-without-token",
        bug="the SQLite lease heartbeat checks the owner but not the fencing token",
        path="src/actonce/_store/sqlite.py",
        old="row = c.execute(q.LEASE_RENEW, (now, expires_at, name, token, owner)).fetchone()",
        new='row = c.execute(q.LEASE_RENEW.replace("token = ? AND ", ""), '
        "(now, expires_at, name, owner)).fetchone()",
        tests=(
            "tests/conformance/test_leases_queue.py::"
            "test_a_stale_token_of_the_same_owner_is_fenced_out",
        ),
        expect="a stale token renewed the lease",
        cheap=True,
    ),
    Plant(
        name="no-lease-check-before-click",
        bug="the lease check right before the click removed (only the preflight's check left)",
        path="src/actonce/browser/_effect.py",
        old="""        if s.lease_ok is not None and not s.lease_ok():
            raise StoppedBeforeClick("the worker no longer holds its lease")
""",
        new="",
        tests=(
            "tests/browser/test_preflight.py::"
            "test_a_lease_lost_after_the_preflight_stops_before_the_click",
        ),
        expect="DID NOT RAISE",
    ),
    Plant(
        name="reconcile-ignores-live-lease",
        bug="reconcile also acts on effects whose owner's lease is still live",
        path="src/actonce/_run/*.py",
        old="    return d.situation_of(record, now=now, my_fence=None, trusted=trusted) "
        "in _RECONCILABLE",
        new='    return record.status.value in ("claimed", "executing", "unknown")',
        tests=(
            "tests/unit/test_missed_rules.py::test_reconcile_leaves_an_effect_whose_lease_is_live_alone",
        ),
        expect="reconcile looked at an effect whose owner is still performing",
        cheap=True,
    ),
    Plant(
        name="preflight-without-identity",
        bug="the preflight tolerates a page that shows no signed-in identity",
        path="src/actonce/browser/_session.py",
        old="""        problem = self._identity_problem(count, who)
        if problem is not None:
            raise HardStop(problem)
""",
        new="""        problem = None if count == 0 else self._identity_problem(count, who)
        if problem is not None:
            raise HardStop(problem)
""",
        tests=(
            "tests/browser/test_preflight.py::test_identity_marker_missing_names_the_selector",
            "tests/browser/test_preflight.py::test_a_signed_out_page_without_a_login_wall_is_a_hard_stop",
        ),
        expect="DID NOT RAISE",
    ),
    Plant(
        name="payload-mismatch-skips-failed",
        bug="a payload mismatch is no longer checked against a failed (re-openable) record",
        path="src/actonce/_run/*.py",
        old="    if record is not None and record.payload_hash != plan.payload_hash:",
        new='    if record is not None and record.status.value != "failed" '
        "and record.payload_hash != plan.payload_hash:",
        tests=(
            "tests/unit/test_missed_rules.py::test_a_failed_record_still_refuses_another_payload",
        ),
        expect="DID NOT RAISE",
        cheap=True,
    ),
    Plant(
        name="no-sqlstate-means-nothing-written",
        bug='a write error without SQLSTATE is classified "nothing written" instead of '
        '"may have committed"',
        path="src/actonce/_store/postgres_ops.py",
        old="        (state is None and broken) or (state is not None and state[:2] in _MAYBE_COMMITTED)",
        new="        state is not None and state[:2] in _MAYBE_COMMITTED",
        tests=(
            "tests/postgres/test_write_boundaries.py::"
            "test_a_write_whose_answer_is_lost_may_have_committed",
        ),
        expect="LedgerUnavailable",
    ),
    Plant(
        name="declared-secret-top-level-only",
        bug="declared secret field names matched only at top level or by dotted path "
        "(nested plain names stored in clear)",
        path="src/actonce/_rules/secrets.py",
        old="            if name in declared or here in declared or _is_secret_name(name):",
        new="            if (name in declared and not path) or here in declared "
        "or _is_secret_name(name):",
        tests=(
            "tests/unit/test_missed_rules.py::test_a_declared_plain_name_is_secret_at_any_depth",
        ),
        expect="stored in clear",
        cheap=True,
    ),
    Plant(
        name="owner-keeps-its-lease",
        bug="the owner no longer shortens its lease after its perform",
        path="src/actonce/_run/*.py",
        old='        return {"lease_expires_at": min(st.tick.now, record.lease_expires_at)}',
        new="        return {}",
        tests=(
            "tests/unit/test_missed_rules.py::test_an_owner_gives_its_lease_back_with_its_verdict",
        ),
        expect="the owner kept its lease",
        cheap=True,
    ),
    # --- issue 23, item 1: behaviours an independent planting run found unpinned ---
    Plant(
        name="observe-non-owner-uses-own-perform",
        bug="a non-owner counts the owner's settle window from its own perform",
        path="src/actonce/_rules/*.py",
        old="    if my_fence is not None and record.fence == my_fence and since_perform is not None:",
        new="    if my_fence is not None and since_perform is not None:",
        tests=(
            "tests/unit/test_issue23_pins.py::"
            "test_a_non_owner_never_counts_the_owners_window_from_its_own_perform",
        ),
        expect="a non-owner counted the window from its perform",
        cheap=True,
    ),
    Plant(
        name="scrub-text-jwt-not-suspect",
        bug="scrub_text's quick pre-check no longer looks for a JWT, so one alone is kept",
        path="src/actonce/_rules/*.py",
        old='|bearer|basic|token|eyJ", re.IGNORECASE)',
        new='|bearer|basic|token", re.IGNORECASE)',
        tests=("tests/unit/test_issue23_pins.py::test_scrub_text_removes_a_jwt_standing_alone",),
        expect="a JWT alone in a text was kept",
        cheap=True,
    ),
    Plant(
        name="safe-next-protocol-relative",
        bug='safe_next lets "//evil.example/x" (protocol-relative, off-site) through',
        path="src/actonce/console/*.py",
        old='    if not target or not target.startswith("/") or target.startswith("//") or "\\\\" in target:',
        new='    if not target or not target.startswith("/") or "\\\\" in target:',
        tests=(
            "tests/unit/test_issue23_pins.py::test_safe_next_refuses_a_protocol_relative_target",
        ),
        expect="safe_next let an off-site target through",
        cheap=True,
    ),
    Plant(
        name="resolve-same-status-before-fence",
        bug='resolve(..., "happened", attempt=1) answers with a record confirmed at a newer '
        "fence instead of refusing (the same-decision shortcut runs before the fence check)",
        path="src/actonce/_run/*.py",
        old="    if seen is not None and record.fence != seen:\n",
        new="    if seen is not None and record.fence != seen and record.status is not to:\n",
        tests=(
            "tests/unit/test_issue23_pins.py::"
            "test_happened_about_attempt_1_is_refused_on_a_record_confirmed_at_a_newer_fence",
        ),
        expect="a decision about attempt 1 was answered on attempt 2's record",
        cheap=True,
    ),
    Plant(
        name="console-session-idle-only",
        bug="a console session used every hour never ends (only the idle limit is checked)",
        path="src/actonce/console/*.py",
        old="            if now - session.seen >= IDLE_SECONDS or now - session.started >= MAX_SECONDS:",
        new="            if now - session.seen >= IDLE_SECONDS:",
        tests=(
            "tests/unit/test_issue23_pins.py::"
            "test_a_console_session_used_every_hour_still_ends_at_its_maximum_lifetime",
        ),
        expect="a session used every hour outlived MAX_SECONDS",
        cheap=True,
    ),
    Plant(
        name="release-fails-the-claim",
        bug="an unperformed claim whose look was unavailable is failed instead of given back "
        "(a step of an operation would read as failed and be compensated)",
        path="src/actonce/_run/*.py",
        old="        st.releasable\n        and record is not None\n",
        new="        False\n        and record is not None\n",
        tests=(
            "tests/unit/test_protocol.py::"
            "test_unavailable_verification_under_the_claim_defers_and_gives_the_key_back",
        ),
        expect="an unperformed claim was left behind",
        cheap=True,
    ),
    Plant(
        name="release-forgets-the-failed-attempt",
        bug="a release of the re-claim of a failed attempt deletes the row instead of "
        "restoring that attempt",
        path="src/actonce/_run/*.py",
        old="    before = st.before_claim\n",
        new="    before = None\n",
        tests=("tests/unit/test_rule_edges.py::test_a_hard_stop_seen_after_the_claim_releases_it",),
        expect="the release did not give back the failed attempt it re-claimed",
        cheap=True,
    ),
    Plant(
        name="precondition-skipped-under-the-claim",
        bug="claim first, but the precondition is no longer asked before the mark",
        path="src/actonce/_run/*.py",
        old="            if plan.has_precondition and not st.precondition_checked:\n"
        "                stopped = yield from precondition_holds(plan, st, obs)\n",
        new="            if False:\n"
        "                stopped = yield from precondition_holds(plan, st, obs)\n",
        tests=(
            "tests/unit/test_protocol.py::test_precondition_false_fails_and_gives_the_claim_back",
        ),
        expect="the precondition was not asked under the claim",
        cheap=True,
    ),
    Plant(
        name="direct-claim-without-a-look",
        bug="a direct claim (the claim is the mark) claims first too: marked and performed "
        "without any look before the boundary",
        path="src/actonce/_run/*.py",
        old="    return not plan.policy.verify_after_claim or is_gated(plan.gate)\n",
        new="    return is_gated(plan.gate)\n",
        tests=("tests/unit/test_protocol.py::test_happy_path_without_reverify_takes_two_commits",),
        expect="a direct claim was marked without a look first",
        cheap=True,
    ),
)
