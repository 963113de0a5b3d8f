"""Rows to records and back (``_store/rows.py``), the conversions every SQL store shares.

Exact parameters written for a record, an event and its data; exact values read
back, column by column; and for every column a malformed row can hold (a blob
where text belongs, a word where a number belongs, an unknown status, too few
columns, JSON that is not JSON), the one ``LedgerUnavailable`` it is refused with,
naming the kind of row, the error and the column.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from actonce import Event, EventType, LedgerUnavailable, Status
from actonce._rules.model import EffectRecord
from actonce._store.records import ItemStatus, LeaseRecord, QueueItem
from actonce._store.rows import (
    EFFECT_COLUMNS,
    EVENT_COLUMNS,
    counts_from_rows,
    event_from_row,
    event_params,
    item_from_row,
    json_text,
    lease_from_row,
    record_from_row,
    record_params,
)

ROW = ["k", "post", "executing", 3, "run-a", 10, '{"t":1}', "h", "{}", None, None, 1, 2, None, 0, 0]
EVENT_ROW = ["k", "claimed", 1.5, 2, "run", None, "claimed", "m", '{"b":1,"a":[1,2]}']


def _refused(kind: str, why: str) -> str:
    return f"^the ledger holds a malformed {kind} row: {why}$"


def test_a_record_is_written_column_by_column() -> None:
    r = EffectRecord(
        key="k", kind="post", status=Status.CONFIRMED, fence=4, owner="o", lease_expires_at=9.5,
        payload="{}", payload_hash="h", scope='{"s":1}', result_ref="ref", reason="why",
        created_at=1.0, updated_at=2.0, executing_at=1.5, matches=2, gated=True,
    )  # fmt: skip
    assert record_params(r) == (
        "k", "post", "confirmed", 4, "o", 9.5, "{}", "h", '{"s":1}', "ref", "why",
        1.0, 2.0, 1.5, 2, 1,
    )  # fmt: skip
    assert record_params(replace(r, gated=False))[-1] == 0
    assert record_from_row(record_params(r)) == r
    assert len(EFFECT_COLUMNS) == 16 and EFFECT_COLUMNS[-2:] == ("matches", "gated")


def test_a_row_is_read_back_column_by_column() -> None:
    got = record_from_row(ROW)
    assert got == EffectRecord(
        key="k", kind="post", status=Status.EXECUTING, fence=3, owner="run-a",
        lease_expires_at=10.0, payload='{"t":1}', payload_hash="h", scope="{}",
        result_ref=None, reason=None, created_at=1.0, updated_at=2.0, executing_at=None,
        matches=0, gated=False,
    )  # fmt: skip
    assert type(got.lease_expires_at) is float and type(got.created_at) is float
    assert type(got.updated_at) is float and type(got.fence) is int
    texts = list(ROW)
    texts[3], texts[5], texts[11], texts[12], texts[13], texts[14], texts[15] = (
        "7", "10.5", "1", "2", "3.25", "2", 1,
    )  # fmt: skip
    from_text = record_from_row(texts)
    assert (from_text.fence, from_text.lease_expires_at, from_text.executing_at) == (7, 10.5, 3.25)
    assert (from_text.created_at, from_text.updated_at, from_text.matches) == (1.0, 2.0, 2)
    assert from_text.gated is True and type(from_text.executing_at) is float
    notes = list(ROW)
    notes[9], notes[10] = "ref", "because"
    assert (record_from_row(notes).result_ref, record_from_row(notes).reason) == ("ref", "because")


@pytest.mark.parametrize(
    ("column", "why"),
    [
        (0, "TypeError: key is bytes, not text"),
        (1, "TypeError: kind is bytes, not text"),
        (2, "KeyError: b'x'"),
        (3, "ValueError: invalid literal for int() with base 10: b'x'"),
        (4, "TypeError: owner is bytes, not text"),
        (5, "ValueError: could not convert string to float: b'x'"),
        (6, "TypeError: payload is bytes, not text"),
        (7, "TypeError: payload_hash is bytes, not text"),
        (8, "TypeError: scope is bytes, not text"),
        (9, "TypeError: result_ref is bytes, not text"),
        (10, "TypeError: reason is bytes, not text"),
        (11, "ValueError: could not convert string to float: b'x'"),
        (12, "ValueError: could not convert string to float: b'x'"),
        (13, "ValueError: could not convert string to float: b'x'"),
        (14, "ValueError: invalid literal for int() with base 10: b'x'"),
    ],
)
def test_a_blob_in_any_effect_column_is_refused(column: int, why: str) -> None:
    row = list(ROW)
    row[column] = b"x"
    with pytest.raises(LedgerUnavailable, match=_refused("effect", re.escape(why))):
        record_from_row(row)


def test_a_number_where_text_belongs_is_refused() -> None:
    for column, name in ((0, "key"), (4, "owner"), (8, "scope"), (9, "result_ref")):
        row: list[Any] = list(ROW)
        row[column] = 5
        with pytest.raises(
            LedgerUnavailable, match=_refused("effect", f"TypeError: {name} is int, not text")
        ):
            record_from_row(row)


def test_an_unknown_status_or_a_short_row_is_refused() -> None:
    row = list(ROW)
    row[2] = "nope"
    with pytest.raises(LedgerUnavailable, match=_refused("effect", "KeyError: 'nope'")):
        record_from_row(row)
    with pytest.raises(
        LedgerUnavailable, match=_refused("effect", "IndexError: list index out of range")
    ):
        record_from_row(ROW[:15])


def test_an_event_is_written_with_its_data_sorted() -> None:
    e = Event(
        key="k", type=EventType.EXECUTING, at=1.0, fence=1, run_id="r",
        from_status=Status.CLAIMED, to_status=Status.EXECUTING, message="go",
        data={"b": 1, "a": 2},
    )  # fmt: skip
    assert event_params(e) == (
        "k", "executing", 1.0, 1, "r", "claimed", "executing", "go", '{"a": 2, "b": 1}',
    )  # fmt: skip
    bare = Event(key="k", type=EventType.CLAIMED, at=1.0, fence=1, run_id="r")
    assert event_params(bare) == ("k", "claimed", 1.0, 1, "r", None, None, None, None)
    assert len(EVENT_COLUMNS) == 9


def test_an_event_row_is_read_back_with_its_sequence() -> None:
    assert event_from_row(7, EVENT_ROW) == Event(
        key="k", type=EventType.CLAIMED, at=1.5, fence=2, run_id="run", from_status=None,
        to_status=Status.CLAIMED, message="m", data={"b": 1, "a": [1, 2]}, seq=7,
    )  # fmt: skip
    row = list(EVENT_ROW)
    row[2], row[3], row[5], row[7] = "4", "9", "executing", None
    got = event_from_row(8, row)
    assert (got.at, got.fence, got.from_status, got.message, got.seq) == (
        4.0, 9, Status.EXECUTING, None, 8,
    )  # fmt: skip
    assert type(got.at) is float and type(got.fence) is int
    for data, read in (("[1]", {"value": [1]}), ('"s"', {"value": "s"}), ("", {}), (None, {})):
        row = list(EVENT_ROW)
        row[8] = data
        assert event_from_row(1, row).data == read


@pytest.mark.parametrize(
    ("column", "value", "why"),
    [
        (0, b"x", "TypeError: key is bytes, not text"),
        (1, b"x", "TypeError: type is bytes, not text"),
        (1, "nope", "ValueError: 'nope' is not a valid EventType"),
        (2, b"x", "ValueError: could not convert string to float: b'x'"),
        (3, b"x", "ValueError: invalid literal for int() with base 10: b'x'"),
        (4, 5, "TypeError: run_id is int, not text"),
        (5, "nope", "ValueError: 'nope' is not a valid Status"),
        (6, "nope", "ValueError: 'nope' is not a valid Status"),
        (7, b"x", "TypeError: message is bytes, not text"),
        (8, "{", "JSONDecodeError: Expecting property name enclosed in double quotes: "
                 "line 1 column 2 (char 1)"),
        (8, "[" * 100_000, "RecursionError: maximum recursion depth exceeded"),
    ],
)  # fmt: skip
def test_a_malformed_event_column_is_refused(column: int, value: Any, why: str) -> None:
    row = list(EVENT_ROW)
    row[column] = value
    with pytest.raises(LedgerUnavailable, match=_refused("event", re.escape(why) + ".*")):
        event_from_row(1, row)


def test_an_event_row_short_of_columns_is_refused() -> None:
    with pytest.raises(
        LedgerUnavailable, match=_refused("event", "IndexError: list index out of range")
    ):
        event_from_row(1, EVENT_ROW[:8])


def test_leases_and_queue_items_are_read_whole_or_refused() -> None:
    assert lease_from_row(["n", "o", "3", 1, "2", 3]) == LeaseRecord("n", "o", 3, 1.0, 2.0, 3.0)
    with pytest.raises(
        LedgerUnavailable,
        match=_refused(
            "lease", re.escape("ValueError: invalid literal for int() with base 10: 'x'")
        ),
    ):
        lease_from_row(["n", "o", "x", 1, 2, 3])
    with pytest.raises(
        LedgerUnavailable, match=_refused("lease", "IndexError: list index out of range")
    ):
        lease_from_row(["n", "o", 1, 2, 3])
    with pytest.raises(
        LedgerUnavailable,
        match=_refused(
            "lease",
            re.escape(
                "TypeError: float() argument must be a string or a real number, not 'NoneType'"
            ),
        ),
    ):
        lease_from_row(["n", "o", 1, None, 2, 3])
    item = [4, "mail", '{"to":"ana"}', "taken", "w1", "31", "2", 1, "2"]
    assert item_from_row(item) == QueueItem(
        id=4, kind="mail", payload={"to": "ana"}, status=ItemStatus.TAKEN, taken_by="w1",
        lease_expires_at=31.0, attempts=2, created_at=1.0, updated_at=2.0,
    )  # fmt: skip
    queued = [5, "mail", "[]", "queued", None, None, 0, 1, 1]
    assert item_from_row(queued).lease_expires_at is None and item_from_row(queued).payload == []
    for column, value, why in (
        (2, "{", "JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        (3, "bad", "ValueError: 'bad' is not a valid ItemStatus"),
        (0, None, "TypeError: int() argument must be a string, a bytes-like object or a real number, not 'NoneType'"),
        (2, "[" * 100_000, "RecursionError: maximum recursion depth exceeded"),
    ):  # fmt: skip
        bad = list(queued)
        bad[column] = value
        with pytest.raises(LedgerUnavailable, match=_refused("queue", re.escape(why) + ".*")):
            item_from_row(bad)
    with pytest.raises(
        LedgerUnavailable, match=_refused("queue", "IndexError: list index out of range")
    ):
        item_from_row(queued[:8])


def test_counts_and_the_reason_of_a_refusal() -> None:
    assert counts_from_rows([]) == {}
    with pytest.raises(LedgerUnavailable, match=_refused("effect", "KeyError: 'nope'")):
        counts_from_rows([("nope", 1)])
    with pytest.raises(
        LedgerUnavailable,
        match=_refused(
            "effect", re.escape("ValueError: invalid literal for int() with base 10: 'x'")
        ),
    ):
        counts_from_rows([("confirmed", "x")])
    with pytest.raises(LedgerUnavailable, match=_refused("effect", "TypeError: .*")):
        counts_from_rows([("confirmed", None)])
    # the reason is one line, cut at 200 characters
    row = list(ROW)
    row[2] = "a\n  b" + "x" * 300
    with pytest.raises(LedgerUnavailable) as refused:
        record_from_row(row)
    reason = str(refused.value).removeprefix("the ledger holds a malformed effect row: ")
    assert reason == ("KeyError: 'a\\n b" + "x" * 300)[:200]  # runs of spaces made one
    assert len(reason) == 200


def test_json_text_is_compact_with_sorted_keys() -> None:
    assert (
        json_text({"b": [1, {"d": 1, "c": 2}], "a": "é"}) == '{"a":"\\u00e9","b":[1,{"c":2,"d":1}]}'
    )
