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
        name="declined-carried-over",
        bug="a run that declined once, lost the race to mark it failed and claimed again "
        'carries "declined" over to the perform of its next claim (reported failed)',
        path="src/actonce/_run/*.py",
        old="    st.declined = False\n    st.perform_error = None\n",
        new="    st.perform_error = None\n",
        tests=(
            "tests/unit/test_issue23_pins.py::"
            "test_a_run_that_declined_then_performed_on_its_next_claim_reports_completed",
        ),
        expect="a run that declined once reported failed",
        cheap=True,
    ),
    Plant(
        name="overtaken-perform-not-reread",
        bug="a perform the heartbeat found overtaken is judged from the owner's stale record "
        "(no re-read before the verdict)",
        path="src/actonce/_run/*.py",
        old="        # A lease extension found the row changed: see who holds it now.\n"
        "        st.record = yield Get(plan.key)\n",
        new="        # A lease extension found the row changed: see who holds it now.\n"
        "        pass\n",
        tests=(
            "tests/unit/test_issue23_pins.py::"
            "test_a_perform_overtaken_meanwhile_rereads_the_record_before_any_verdict",
        ),
        expect="the owner verified from its stale record",
        cheap=True,
    ),
    Plant(
        name="heartbeat-unavailable-is-overtaken",
        bug="a lease extension that raises LedgerUnavailable marks the perform overtaken "
        "(and stops the heartbeat), sync driver",
        path="src/actonce/_run/*.py",
        old="                ok = True  # the next beat tries again",
        new="                ok = False  # the next beat tries again",
        tests=(
            "tests/unit/test_issue23_pins.py::"
            "test_a_heartbeat_whose_extension_finds_the_ledger_unavailable_is_not_overtaken",
        ),
        expect="the heartbeat stopped after an unavailable ledger",
        cheap=True,
    ),
    Plant(
        name="async-heartbeat-unavailable-is-overtaken",
        bug="a lease extension that raises LedgerUnavailable marks the perform overtaken "
        "(and stops the beat task), async driver",
        path="src/actonce/_run/*.py",
        old="            except LedgerError:\n                ok = True\n            if not ok:\n"
        "                overtaken.set()",
        new="            except LedgerError:\n                ok = False\n            if not ok:\n"
        "                overtaken.set()",
        tests=(
            "tests/unit/test_issue23_pins.py::"
            "test_a_heartbeat_whose_extension_finds_the_ledger_unavailable_is_not_overtaken",
        ),
        expect="the heartbeat stopped after an unavailable ledger",
        cheap=True,
    ),
    Plant(
        name="triage-trusts-a-stepped-clock",
        bug="reconcile's triage judges an executing mark's lease on an untrusted clock "
        "(sends it to reconcile instead of counting it live)",
        path="src/actonce/_run/*.py",
        old="        if not needs_reconcile(record, now, trusted=trusted):",
        new="        if not needs_reconcile(record, now):",
        tests=(
            "tests/unit/test_issue23_pins.py::"
            "test_reconcile_triage_counts_an_expired_executing_mark_live_on_an_untrusted_clock",
        ),
        expect="triage sent an executing mark to reconcile",
        cheap=True,
    ),
    Plant(
        name="gate-pools-in-the-gates-order",
        bug="a gated claim locks its budget pools in the order its gate names them, so claims "
        "on [a, b] and [b, a] deadlock on PostgreSQL",
        path="src/actonce/_store/*.py",
        old="    for draw in sorted(gate.draws, key=lambda d: d.pool):\n",
        new="    for draw in gate.draws:\n",
        tests=(
            "tests/approvals/test_pg_locks.py::"
            "test_two_claims_drawing_on_two_pools_in_opposite_orders_do_not_deadlock",
        ),
        expect="two claims on pools [a, b] and [b, a] deadlocked",
    ),
    Plant(
        name="pg-cas-review-counts-as-unknown",
        bug="the PostgreSQL transition takes a row in needs_review for the unknown it expects "
        "at the same fence (and writes its event)",
        path="src/actonce/_store/*.py",
        old='    f"WITH won AS (UPDATE effects SET {q.pg(q.SET)} WHERE key = %s AND status = %s "\n',
        new='    f"WITH won AS (UPDATE effects SET {q.pg(q.SET)} WHERE key = %s "\n'
        "    \"AND (status = %s OR status = 'needs_review') \"\n",
        tests=(
            "tests/conformance/test_store.py::"
            "test_a_transition_expecting_unknown_on_a_row_in_review_at_that_fence_changes_nothing",
        ),
        expect="a move expecting unknown at fence 3 changed a row in review",
    ),
    Plant(
        name="pg-cas-fields-review-counts-as-unknown",
        bug="the PostgreSQL transition that sets some columns (a review's resolve) takes a row "
        "in needs_review for the unknown it expects at the same fence",
        path="src/actonce/_store/*.py",
        old='            f"WITH won AS (UPDATE effects SET {q.pg(clause)} WHERE key = %s '
        'AND status = %s "\n',
        new='            f"WITH won AS (UPDATE effects SET {q.pg(clause)} WHERE key = %s "\n'
        "            \"AND (status = %s OR status = 'needs_review') \"\n",
        tests=(
            "tests/conformance/test_store.py::"
            "test_a_transition_expecting_unknown_on_a_row_in_review_at_that_fence_changes_nothing",
        ),
        expect="a move expecting unknown at fence 3 changed a row in review",
    ),
    Plant(
        name="compensation-skips-an-unknown-step",
        bug="compensation counts only needs_review as doubt: a step still unknown is passed "
        "over, and an operation with one step compensated and one unknown ends compensated",
        path="src/actonce/_rules/*.py",
        old="        if s.status in _DOUBT:\n"
        "            # Never undo what may not have happened: a human decides.\n",
        new="        if s.status in _DOUBT and s.status is not Status.UNKNOWN:\n"
        "            # Never undo what may not have happened: a human decides.\n",
        tests=(
            "tests/unit/test_issue23_pins.py::"
            "test_an_operation_with_a_step_compensated_and_a_step_unknown_stops_at_the_unknown_one",
        ),
        expect="an operation with a step unknown was reported compensated",
        cheap=True,
    ),
    Plant(
        name="packet-intent-by-id-only",
        bug="a commit checks only the intent id of its packet, not its version: a packet "
        "approved for version 1 commits version 2",
        path="src/actonce/_rules/*.py",
        old="    if intent is not None and packet.intent != intent:\n",
        new="    if intent is not None and packet.intent.intent_id != intent.intent_id:\n",
        tests=(
            "tests/approvals/test_version_pin.py::test_a_v1_packet_never_commits_v2_in_the_rule",
        ),
        expect="test_a_v1_packet_never_commits_v2_in_the_rule",
        cheap=True,
    ),
    Plant(
        name="receipt-copies-the-whole-intent",
        bug="a receipt copies the whole intent, not its allowlisted fields (an extra api_token "
        "reaches the receipt)",
        path="src/actonce/_rules/*.py",
        old='        "intent": None if intent is None else {k: intent.get(k) for k in _INTENT_FIELDS},\n',
        new='        "intent": None if intent is None else dict(intent),\n',
        tests=(
            "tests/unit/test_issue23_pins.py::"
            "test_a_receipt_copies_only_the_allowlisted_fields_of_an_intent_and_its_approvals",
        ),
        expect="a receipt copied a field it does not name",
        cheap=True,
    ),
    Plant(
        name="receipt-copies-whole-packets",
        bug="a receipt copies each approval packet of the chain whole, not its allowlisted fields",
        path="src/actonce/_rules/*.py",
        old='        "approvals": [{k: p.get(k) for k in _APPROVAL_FIELDS} for p in chain],\n',
        new='        "approvals": [dict(p) for p in chain],\n',
        tests=(
            "tests/unit/test_issue23_pins.py::"
            "test_a_receipt_copies_only_the_allowlisted_fields_of_an_intent_and_its_approvals",
        ),
        expect="a receipt copied a field it does not name",
        cheap=True,
    ),
    Plant(
        name="wire-origin-by-prefix",
        bug="the wire guard matches a request's origin by prefix: a POST to "
        "shop.example.evil.net (or a port like 87650) passes as the session's origin",
        path="src/actonce/_rules/*.py",
        old="        if origin_of(url) != (self.origin or origin):\n            return False\n",
        new='        if not origin_of(url).startswith(self.origin or origin or ""):\n'
        "            return False\n",
        tests=(
            "tests/unit/test_firewall_rule.py::"
            "test_a_host_that_starts_with_the_sessions_host_is_another_origin",
        ),
        expect="test_a_host_that_starts_with_the_sessions_host_is_another_origin",
        cheap=True,
    ),
    Plant(
        name="origin-drops-a-port-that-is-no-port",
        bug="origin_of drops a port that is no port (:80001), so such a URL takes the origin "
        "of the valid one",
        path="src/actonce/_rules/*.py",
        old='        port = parts.netloc.rpartition(":")[2]\n',
        new="        port = None\n",
        tests=(
            "tests/unit/test_firewall_rule.py::"
            "test_a_host_that_starts_with_the_sessions_host_is_another_origin",
        ),
        expect="test_a_host_that_starts_with_the_sessions_host_is_another_origin",
        cheap=True,
    ),
    Plant(
        name="identity-by-prefix",
        bug="the preflight takes an identity that starts with the user's name for the user "
        "('ana2' passes for 'ana')",
        path="src/actonce/browser/*.py",
        old="        if who != self.username:\n",
        new='        if not (who or "").startswith(self.username):\n',
        tests=(
            "tests/browser/test_preflight.py::"
            "test_an_identity_that_merely_contains_the_users_is_another",
        ),
        expect="DID NOT RAISE",
    ),
    Plant(
        name="identity-by-substring",
        bug="the preflight takes an identity that contains the user's name for the user "
        "('banana' passes for 'ana')",
        path="src/actonce/browser/*.py",
        old="        if who != self.username:\n",
        new='        if self.username not in (who or ""):\n',
        tests=(
            "tests/browser/test_preflight.py::"
            "test_an_identity_that_merely_contains_the_users_is_another",
        ),
        expect="DID NOT RAISE",
    ),
    Plant(
        name="preflight-origin-by-host",
        bug="the preflight compares the page's origin by host only (another port, another "
        "site, passes)",
        path="src/actonce/browser/*.py",
        old="        if origin_of(self.page.url) != self.origin:\n",
        new='        if not origin_of(self.page.url).startswith(self.origin.rsplit(":", 1)[0]):\n',
        tests=(
            "tests/browser/test_preflight.py::"
            "test_preflight_on_a_page_of_another_origin_is_a_hard_stop",
        ),
        expect="DID NOT RAISE",
    ),
    Plant(
        name="console-autoescape-off",
        bug="the console renders its pages without autoescaping: a payload holding <script> "
        "runs on the effect page",
        path="src/actonce/console/*.py",
        old="    autoescape=True,\n",
        new="    autoescape=False,\n",
        tests=(
            "tests/console/test_operations_pages.py::"
            "test_a_payload_holding_a_script_is_escaped_on_the_effect_page",
        ),
        expect="test_a_payload_holding_a_script_is_escaped_on_the_effect_page",
    ),
    Plant(
        name="console-payload-marked-safe",
        bug="the effect page marks the payload safe (not escaped)",
        path="src/actonce/console/templates/effect.html",
        old='<pre data-testid="payload">{{ payload }}</pre>',
        new='<pre data-testid="payload">{{ payload|safe }}</pre>',
        tests=(
            "tests/console/test_operations_pages.py::"
            "test_a_payload_holding_a_script_is_escaped_on_the_effect_page",
        ),
        expect="test_a_payload_holding_a_script_is_escaped_on_the_effect_page",
    ),
    Plant(
        name="reconcile-exit-ignores-unresolved",
        bug="actonce reconcile exits 0 when effects are left unresolved (a verifier raised)",
        path="src/actonce/cli/*.py",
        old="    return EXIT_OPEN if unresolved or report.no_verifier or report.errors else EXIT_OK\n",
        new="    return EXIT_OPEN if report.no_verifier or report.errors else EXIT_OK\n",
        tests=("tests/cli/test_cli.py::test_reconcile_exits_3_when_a_verifier_raised",),
        expect="reconcile exited 0 after a verifier raised",
    ),
    Plant(
        name="chaos-ok-ignores-unmarked",
        bug="a chaos report with a perform the ledger never marked is ok",
        path="src/actonce/chaos/*.py",
        old="            or self.unmarked\n",
        new="",
        tests=(
            "tests/unit/test_issue23_pins.py::test_a_chaos_report_with_an_unmarked_perform_is_not_ok",
        ),
        expect="a chaos report with a perform the ledger never marked was ok",
        cheap=True,
    ),
    Plant(
        name="hard-stop-classified-before-its-status",
        bug="the operator classifies every hard stop as stopped, one after the executing mark "
        "too (it may have happened: ambiguous)",
        path="src/actonce/_rules/*.py",
        old="    if out is Outcome.NEEDS_REVIEW or result.status in AMBIGUOUS_STATUSES:\n"
        "        return ItemClass.AMBIGUOUS, None\n"
        "    if out is Outcome.HARD_STOP:\n"
        "        return ItemClass.STOPPED, None\n",
        new="    if out is Outcome.HARD_STOP:\n"
        "        return ItemClass.STOPPED, None\n"
        "    if out is Outcome.NEEDS_REVIEW or result.status in AMBIGUOUS_STATUSES:\n"
        "        return ItemClass.AMBIGUOUS, None\n",
        tests=(
            "tests/unit/test_issue23_pins.py::"
            "test_a_hard_stop_after_the_executing_mark_is_classified_ambiguous",
        ),
        expect="a hard stop after the mark",
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
