"""Pins for the stores' mutants of the area's held-out sample (issue 23 item 2,
``python tests/mutants/areas.py --area _store --sample 40 --seed 3``), every backend:
an answer's event without a note, packets listed by several statuses, a refreshed
packet's lineage in its event, intents listed by status and user together, a claim
refused for a superseded intent version, and a ledger URL's client encoding. Each was
checked to fail on its mutant; the ones judged equivalent are named in docs/testing.md.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from actonce import ApprovalStatus, BadLedgerURL, Gate, IntentStatus, Status
from actonce._store.postgres_schema import parse_url

from .test_gates import NOW, event, intent, packet, record


def test_an_answer_without_a_note_says_only_who(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    pending = packet("k1", ApprovalStatus.PENDING)
    store.approval_put(pending, None, "run-1")
    done = store.approval_answer(pending, ApprovalStatus.APPROVED, "ana", NOW + 1, "run-2", None,
                                 False, "api")  # fmt: skip
    assert done is not None and done.status is ApprovalStatus.APPROVED
    answered = store.events("approval:p1")[-1]
    assert answered.message == "approved by ana", answered.message
    noted = packet("k2", ApprovalStatus.PENDING, pid="p2")
    store.approval_put(noted, None, "run-3")
    store.approval_answer(noted, ApprovalStatus.DENIED, "bob", NOW + 2, "run-4", "too dear", False,
                         "cli")  # fmt: skip
    assert store.events("approval:p2")[-1].message == "denied by bob: too dear"


def test_packets_are_listed_by_several_statuses_at_once(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    store.approval_put(packet("k1", ApprovalStatus.PENDING, pid="p1"), None, "r")
    store.approval_put(packet("k2", ApprovalStatus.APPROVED, pid="p2"), None, "r")
    store.approval_put(packet("k3", ApprovalStatus.DENIED, pid="p3"), None, "r")
    both = store.approval_list((ApprovalStatus.PENDING, ApprovalStatus.APPROVED), None, 10)
    assert sorted(p.packet_id for p in both) == ["p1", "p2"]
    mine = store.approval_list((ApprovalStatus.PENDING, ApprovalStatus.DENIED), "ana", 10)
    assert sorted(p.packet_id for p in mine) == ["p1", "p3"]


def test_a_refreshed_packets_event_names_the_one_it_replaces(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    store.approval_put(packet("k1", ApprovalStatus.PENDING, pid="p1"), None, "r")
    fresh = replace(packet("k1", ApprovalStatus.PENDING, pid="p2"), revision=2, replaces="p1")
    store.approval_put(fresh, None, "r")
    (requested,) = store.events("approval:p2")
    assert (requested.data["replaces"], requested.data["revision"]) == ("p1", 2), requested.data
    assert store.approval_get("p2")[0].replaces == "p1"


def test_intents_are_listed_by_status_and_user_together(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    store.intent_create(replace(intent(), intent_id="trip-bob", user="bob"), NOW, "setup")
    rows = store.intent_list(IntentStatus.CURRENT, "ana", 10)
    assert [(r.intent.intent_id, r.intent.user) for r in rows] == [("trip", "ana")]


def test_a_claim_for_a_superseded_version_is_refused_as_the_intents(store: Any) -> None:
    store.intent_create(intent(), NOW, "setup")
    store.intent_revise(intent().ref, intent(2, when="2027-01-01"), ("when",), NOW, "r")
    got = store.claim(record("k9"), None, event("k9", Status.CLAIMED), gate=Gate(intent().ref))
    assert got.refused is not None and got.refused.kind == "intent", got.refused


@pytest.mark.parametrize("value", ["utf8", "UTF-8", "unicode"])
def test_a_ledger_url_may_name_its_encoding_utf8(value: str) -> None:
    parse_url(f"postgresql://u@127.0.0.1/db?client_encoding={value}")
    with pytest.raises(BadLedgerURL):
        parse_url("postgresql://u@127.0.0.1/db?client_encoding=latin1")


def test_a_receipt_reads_back_as_it_was_written(store: Any) -> None:
    spec = '{"steps": [{"key": "k1"}]}'
    store.operation_put("op-1", None, spec, NOW, "setup")
    assert store.receipt_get("op-1") is None
    assert store.receipt_put("op-1", "complete", "Operation op-1 is done.", '{"a":1}', NOW, "r")
    assert store.receipt_get("op-1") == ("complete", "Operation op-1 is done.", '{"a":1}', NOW)
