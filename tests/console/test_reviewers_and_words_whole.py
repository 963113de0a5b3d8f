"""Who signs in, and the words pages are made of, pinned whole (issue 23, item 2).

Reviewers: the name rule and its message, the password hash's format, the
reviewers file (its header, order, mode, every refusal with its line), the
one-time token's single use and lifetime, and the throttle at its edges
(the fifth wrong answer locks, the window counts from the first one, a
right answer forgets the count). Words: ages at each unit's boundary, times
and their fallbacks, cutting at a limit, masking at depth, and each part of
an effect's subject.
"""

from __future__ import annotations

import json
import os
import re
import stat
from decimal import Decimal
from pathlib import Path

import pytest

from actonce import EffectRecord, Status, UsageError, scrub_text
from actonce.console import Reviewers, hash_password, write_reviewer
from actonce.console._reviewers import (
    FAILURE_WINDOW,
    MAX_FAILURES,
    check_name,
    parse,
    password_matches,
)
from actonce.console._words import (
    actor_of,
    age,
    at,
    clean,
    object_of,
    question,
    scope_of,
    shown,
    shown_json,
    subject,
)

from .world import _hashes

NAME_RULE = (
    "a reviewer's name is 1-64 characters of letters, digits and . _ @ - "
    "(starting with a letter or digit), not "
)


class Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


# --- names, hashes, the reviewers file ----------------------------------------------------


def test_a_reviewers_name_is_one_to_sixty_four_plain_characters() -> None:
    for good in ("a", "9", "Ana.B_c@d-e", "a" * 64):
        assert check_name(good) == good
    for bad in ("", ".ana", "_ana", "-ana", "@ana", "a" * 65, "ana b", "ana/b", "ana:b", "é"):
        with pytest.raises(UsageError) as caught:
            check_name(bad)
        assert str(caught.value) == NAME_RULE + repr(bad)
    with pytest.raises(UsageError):
        check_name(5)  # type: ignore[arg-type]


def test_a_password_hash_is_scrypt_with_its_cost_and_a_fresh_salt() -> None:
    with pytest.raises(UsageError) as caught:
        hash_password("123456789")
    assert str(caught.value) == "a reviewer's password needs at least 10 characters"
    stored = hash_password("1234567890")
    assert re.fullmatch(r"scrypt\$16384\$8\$1\$[0-9a-f]{32}\$[0-9a-f]{64}", stored), stored
    assert password_matches("1234567890", stored)
    assert not password_matches("1234567891", stored)
    _, n, r, p, salt, digest = stored.split("$")
    assert not password_matches("1234567890", f"bcrypt${n}${r}${p}${salt}${digest}")
    assert not password_matches("1234567890", f"scrypt${n}${r}${p}${salt}")
    assert not password_matches("1234567890", f"scrypt${n}${r}${p}${salt}${digest}$x")
    assert not password_matches("1234567890", f"scrypt${n}${r}$2${salt}${digest}")
    assert not password_matches("1234567890", f"scrypt${n}${r}${p}${salt}$zz")
    assert not password_matches("1234567890", f"scrypt$x${r}${p}${salt}${digest}")


def test_the_reviewers_file_is_read_line_by_line_and_refused_with_its_line() -> None:
    text = "# who\n\n  ana:scrypt$a  \nbo.b:scrypt$b\n"
    assert parse(text, "f") == {"ana": "scrypt$a", "bo.b": "scrypt$b"}
    for bad, line in (
        ("ana scrypt$a", 1),
        ("# c\n\n.ana:scrypt$a", 3),
        ("ana:bcrypt$a", 1),
        ("ana:scrypt$a\nbo:", 2),
    ):
        with pytest.raises(UsageError) as caught:
            parse(bad, "the file")
        assert str(caught.value) == f"the file, line {line}: expected 'name:scrypt$...'"


def test_writing_a_reviewer_keeps_the_others_sorted_under_a_header(tmp_path: Path) -> None:
    path = tmp_path / "reviewers"
    write_reviewer(path, "zed", "zed-password-1")
    write_reviewer(path, "ana", "ana-password-1")
    first = path.read_text(encoding="utf-8").splitlines()
    assert first[0] == "# actonce console reviewers: name:scrypt hash (never a password)"
    assert [line.split(":")[0] for line in first[1:]] == ["ana", "zed"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    write_reviewer(path, "zed", "zed-password-2")
    second = path.read_text(encoding="utf-8").splitlines()
    assert second[:2] == first[:2] and second[2] != first[2] and len(second) == 3
    assert password_matches("zed-password-2", second[2].split(":", 1)[1])
    with pytest.raises(UsageError):
        write_reviewer(path, "bad name", "a-long-password")
    assert path.read_text(encoding="utf-8").splitlines() == second
    assert sorted(os.listdir(tmp_path)) == ["reviewers"]


def test_reviewers_load_from_a_file_and_from_lines(tmp_path: Path) -> None:
    hashes = _hashes()
    assert Reviewers.load(tmp_path / "missing").names == []
    path = tmp_path / "reviewers"
    path.write_text(f"bo:{hashes['bo']}\nana:{hashes['ana']}\n", encoding="utf-8")
    loaded = Reviewers.load(path, text=f"carol:{hashes['carol']},ana:{hashes['carol']}")
    assert loaded.names == ["ana", "bo", "carol"]
    assert loaded.check("ana", "carol-password-3")  # the lines win over the file
    with pytest.raises(UsageError) as caught:
        Reviewers.load(tmp_path)
    assert str(caught.value) == f"cannot read the reviewers file {tmp_path}: Is a directory"
    with pytest.raises(UsageError) as bad:
        Reviewers.load(text="ana:nope")
    assert str(bad.value) == "$ACTONCE_CONSOLE_REVIEWERS, line 1: expected 'name:scrypt$...'"
    assert Reviewers.load().names == [] and Reviewers.load(text="").names == []


def test_a_console_without_passwords_or_tokens_is_false() -> None:
    clock = Clock()
    empty = Reviewers({}, clock=clock)
    assert not empty and empty.names == []
    token = empty.one_time_token("ana", seconds=1)
    assert empty and len(token) == 24
    assert Reviewers({"ana": _hashes()["ana"]})
    with pytest.raises(UsageError):
        empty.one_time_token("not a name")


# --- tokens and the throttle --------------------------------------------------------------


def test_a_one_time_token_signs_in_its_own_name_once_within_its_lifetime() -> None:
    clock = Clock()
    reviewers = Reviewers({}, clock=clock)
    token = reviewers.one_time_token("ana", seconds=10)
    assert not reviewers.check("bo", token)
    clock.now += 9.5
    assert reviewers.check("ana", token)
    assert not reviewers.check("ana", token)
    late = reviewers.one_time_token("ana", seconds=10)
    clock.now += 10
    assert not reviewers.check("ana", late)
    default = reviewers.one_time_token("ana")
    clock.now += 899
    assert reviewers.check("ana", default)
    gone = reviewers.one_time_token("ana")
    clock.now += 900
    assert not reviewers.check("ana", gone)


def test_the_fifth_wrong_answer_locks_the_name_from_that_client_for_the_window() -> None:
    clock = Clock()
    reviewers = Reviewers({"ana": _hashes()["ana"]}, clock=clock)
    assert MAX_FAILURES == 5 and FAILURE_WINDOW == 900.0
    for _ in range(4):
        assert not reviewers.check("ana", "wrong", "c1")
    assert reviewers.check("ana", "ana-password-1", "c1")  # four: still open; forgets them
    for _ in range(4):
        assert not reviewers.check("ana", "wrong", "c1")
    assert reviewers.check("ana", "ana-password-1", "c1")
    start = clock.now
    assert not reviewers.check("ana", "wrong", "c1")
    clock.now += 800  # the window counts from the first wrong answer
    for _ in range(4):
        assert not reviewers.check("ana", "wrong", "c1")
    assert not reviewers.check("ana", "ana-password-1", "c1")
    assert reviewers.check("ana", "ana-password-1", "c2")
    assert reviewers.check("bo", "bo-password-22", "c1") is False  # bo has no password here
    clock.now = start + FAILURE_WINDOW - 0.5
    assert not reviewers.check("ana", "ana-password-1", "c1")
    clock.now = start + FAILURE_WINDOW
    assert reviewers.check("ana", "ana-password-1", "c1")


def test_a_locked_name_is_refused_without_its_token_being_used() -> None:
    clock = Clock()
    reviewers = Reviewers({}, clock=clock)
    for _ in range(5):
        assert not reviewers.check("ana", "wrong", "c1")
    token = reviewers.one_time_token("ana")
    assert not reviewers.check("ana", token, "c1")
    assert reviewers.check("ana", token, "c2")  # still unused: the lock refused before it


# --- words --------------------------------------------------------------------------------


def test_an_age_is_said_in_its_largest_units() -> None:
    cases = {
        -5: "0 s",
        0: "0 s",
        59.9: "59 s",
        60: "1 min",
        119: "1 min",
        3599: "59 min",
        3600: "1 h",
        3659: "1 h",
        3660: "1 h 1 min",
        86399: "23 h 59 min",
        86400: "1 d",
        89999: "1 d",
        90000: "1 d 1 h",
        3 * 86400 + 7200 + 59: "3 d 2 h",
    }
    assert {s: age(s) for s in cases} == cases


def test_a_time_is_utc_with_or_without_its_date() -> None:
    assert at(None) == "-"
    assert at(0) == "1970-01-01 00:00:00 UTC"
    assert at(1_700_000_000.9) == "2023-11-14 22:13:20 UTC"
    assert at(1_700_000_000, date=False) == "22:13:20 UTC"
    assert at(1e20) == "1e+20"
    assert at(float("inf")) == "inf"
    assert at(float("nan")) == "nan"


def test_clean_scrubs_and_cuts_at_its_limit() -> None:
    assert clean(None) == ""
    assert clean(5) == "5"
    assert clean("a" * 500) == "a" * 500
    assert clean("a" * 501) == "a" * 499 + "…"
    assert clean("abcd", 4) == "abcd" and clean("abcde", 4) == "abc…"
    secret = "see https://x.example/?token=SECRET123 now"
    assert clean(secret) == scrub_text(secret) and "SECRET123" not in clean(secret)


def test_shown_masks_at_any_depth_and_stops_at_twenty_levels() -> None:
    deep: object = "end"
    for _ in range(21):
        deep = [deep]
    out = shown(deep)
    for _ in range(21):
        assert isinstance(out, list) and len(out) == 1
        out = out[0]
    assert out == "…"
    ok: object = "end"
    for _ in range(20):
        ok = [ok]
    assert shown(ok) == ok
    assert shown({"$secret": "x"}) == "[redacted]"
    assert shown({"$secret": "x", "y": 1}) == {"$secret": "[redacted]", "y": 1}
    assert shown({"api_key": {"a": 1}, 3: (1, True, None)}) == {
        "api_key": "[redacted]",
        "3": [1, True, None],
    }
    assert shown("a" * 2001) == "a" * 1999 + "…"
    assert shown(Decimal("1.5")) == Decimal("1.5")


def test_shown_json_is_sorted_indented_and_keeps_unicode() -> None:
    text = shown_json({"b": Decimal("2.50"), "a": "é", "password": "x"})
    assert text == '{\n  "a": "é",\n  "b": "2.50",\n  "password": "[redacted]"\n}'
    assert json.loads(shown_json([1, "two"])) == [1, "two"]


def _record(payload: object, scope: object = None, kind: str = "invoice") -> EffectRecord:
    return EffectRecord(
        key="k",
        kind=kind,
        status=Status.UNKNOWN,
        fence=1,
        owner="w",
        lease_expires_at=0.0,
        payload=payload if isinstance(payload, str) else json.dumps(payload),
        payload_hash="h",
        scope="{}" if scope is None else scope if isinstance(scope, str) else json.dumps(scope),
    )


def test_the_scope_and_actor_come_from_the_keys_fields() -> None:
    assert scope_of(_record({}, "not json")) == {}
    assert scope_of(_record({}, [1, 2])) == {}
    assert scope_of(_record({}, {"actor": "bot"})) == {"actor": "bot"}
    assert actor_of(_record({}, {"actor": "b" * 81})) == "b" * 79 + "…"
    assert actor_of(_record({}, {"actor": None})) == ""
    assert actor_of(_record({})) == ""


def test_what_an_effect_is_about_comes_from_its_scope_then_its_payload() -> None:
    assert object_of(_record({"ref": "R"}, {"object": "O" * 121})) == "O" * 119 + "…"
    order = {
        "url": "u",
        "id": "i",
        "external_reference": "e",
        "order": "o",
        "object": "b",
        "ref": "r",
        "reference": "x",
    }
    seen = []
    while order:
        seen.append(object_of(_record(order)))
        order.pop(next(k for k, v in order.items() if v == seen[-1]))
    assert seen == ["x", "r", "b", "o", "e", "i", "u"]
    assert object_of(_record({"reference": "", "ref": 7})) == "7"
    assert object_of(_record({"reference": True, "ref": None, "id": 0})) == "0"
    assert object_of(_record({"reference": ["x"], "id": 1.5})) == ""
    assert object_of(_record(["x"])) == "" and object_of(_record("nope")) == ""


def test_a_subject_says_operation_kind_object_tenant_and_amount() -> None:
    scope = {"operation": "create", "kind": "bill", "tenant": "acme"}
    record = _record({"reference": "R-1", "amount": 5, "currency": "USD"}, scope)
    assert subject(record) == "create bill R-1 for acme (5 USD)"
    assert question(record) == "Did create bill R-1 for acme (5 USD) happen?"
    assert subject(_record({"total": "9"})) == "invoice (9)"
    assert subject(_record({"price": 1.25, "currency": 3})) == "invoice (1.25)"
    assert subject(_record({"amount": True, "total": 2})) == "invoice (2)"
    assert subject(_record({"amount": {"amount": "3", "currency": "EUR"}})) == "invoice (3 EUR)"
    assert subject(_record({"amount": {"amount": "3"}, "currency": "GBP"})) == "invoice (3 GBP)"
    assert subject(_record({"amount": None})) == "invoice"
    long = _record({"text": "t" * 61, "amount": "1" * 41})
    assert subject(long) == f"invoice “{'t' * 59}…” ({'1' * 39}…)"
    assert subject(_record({"text": "hi", "id": "X"})) == "invoice X"
    assert subject(_record({"text": 5})) == "invoice"
    assert subject(_record({}, {"operation": "o" * 41, "kind": "k" * 41})) == (
        "o" * 39 + "… " + "k" * 39 + "…"
    )
    assert subject(_record({}, {"tenant": ""}, kind="pay")) == "pay"
