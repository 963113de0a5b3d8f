"""The console's parts on their own: words, reviewers, sessions, key refs, the CLI."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest

from actonce import EffectRecord, Status, UsageError, effect_key, open_ledger
from actonce.console import Reviewers, hash_password, key_of, main, ref_of, write_reviewer
from actonce.console._reviewers import MAX_FAILURES, password_matches
from actonce.console._sessions import Sessions
from actonce.console._words import age, question, shown


def _record(payload: str, scope: str = "{}", kind: str = "invoice") -> EffectRecord:
    return EffectRecord(
        key="k", kind=kind, status=Status.UNKNOWN, fence=1, owner="w",
        lease_expires_at=0.0, payload=payload, payload_hash="h", scope=scope,
    )  # fmt: skip


def test_the_question_is_built_from_kind_scope_and_payload() -> None:
    key = effect_key(
        tenant="acme", actor="billing-bot", kind="invoice", object="ORDER-9201", operation="create"
    )
    record = _record('{"amount":"120.00","reference":"ORDER-9201"}', key.scope)
    assert question(record) == "Did create invoice ORDER-9201 for acme (120.00) happen?"
    plain = _record('{"text":"Hello world","ref":"x"}', kind="post")
    assert question(plain) == "Did post x happen?"
    text = _record('{"text":"Hello world"}', kind="post")
    assert question(text) == "Did post “Hello world” happen?"
    money = _record('{"total":{"amount":"9.90","currency":"EUR"}}', kind="pay")
    assert question(money) == "Did pay (9.90 EUR) happen?"
    assert question(_record("not json")) == "Did invoice happen?"


def test_shown_masks_secret_names_and_scrubs_strings() -> None:
    value = {
        "password": "p",
        "nested": [{"accessToken": "t", "url": "https://x.example/?token=abc&q=1"}],
        "card": {"$secret": "hmac-sha256:k1:00"},
        "note": "Authorization: Bearer abc.def",
    }
    out = shown(value)
    assert out["password"] == "[redacted]" and out["card"] == "[redacted]"
    assert out["nested"][0]["accessToken"] == "[redacted]"
    assert "abc" not in out["nested"][0]["url"] and "q=1" in out["nested"][0]["url"]
    assert "abc.def" not in out["note"]


def test_ages_read_like_speech() -> None:
    assert [age(s) for s in (5, 125, 3600, 3720, 90000)] == [
        "5 s",
        "2 min",
        "1 h",
        "1 h 2 min",
        "1 d 1 h",
    ]


def test_keys_travel_as_one_path_segment() -> None:
    for key in ("ab12" * 16, "page-0", "a/b c?d#e", "~tilde", "é"):
        ref = ref_of(key)
        assert "/" not in ref and "?" not in ref and key_of(ref) == key
    assert key_of("~%%%") == "~%%%"  # not ours: looked up as it is


def test_a_reviewers_file_holds_hashes_never_passwords(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db.reviewers"
    write_reviewer(path, "ana", "a-long-password")
    write_reviewer(path, "bo", "another-password")
    write_reviewer(path, "ana", "a-new-password!")  # replaced, not added
    text = path.read_text(encoding="utf-8")
    assert "password" not in text.split("\n", 1)[1] and text.count("ana:") == 1
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    reviewers = Reviewers.load(path)
    assert reviewers.names == ["ana", "bo"]
    assert reviewers.check("ana", "a-new-password!") and not reviewers.check(
        "ana", "a-long-password"
    )
    assert not reviewers.check("nobody", "a-new-password!")
    with pytest.raises(UsageError):
        write_reviewer(path, "ana", "short")
    with pytest.raises(UsageError):
        write_reviewer(path, "bad name", "a-long-password")
    (tmp_path / "bad").write_text("ana:plaintext\n", encoding="utf-8")
    with pytest.raises(UsageError, match="line 1"):
        Reviewers.load(tmp_path / "bad")


def test_hashes_are_salted() -> None:
    one, two = hash_password("same-password"), hash_password("same-password")
    assert (
        one != two
        and password_matches("same-password", one)
        and password_matches("same-password", two)
    )
    assert not password_matches("same-password", "scrypt$1$1$1$zz$zz")


def test_a_one_time_token_signs_in_once_and_failures_are_throttled() -> None:
    now = [0.0]
    reviewers = Reviewers({"ana": hash_password("ana-password")}, clock=lambda: now[0])
    token = reviewers.one_time_token("ana")
    assert not reviewers.check("bo", token)  # bound to its name
    assert reviewers.check("ana", token) and not reviewers.check("ana", token)
    late = reviewers.one_time_token("ana", seconds=10)
    now[0] = 11
    assert not reviewers.check("ana", late)
    for _ in range(MAX_FAILURES - 2):  # two failures already counted above
        assert not reviewers.check("ana", "wrong")
    assert not reviewers.check("ana", "ana-password")  # throttled, though right
    now[0] += 901
    assert reviewers.check("ana", "ana-password")


def test_sessions_expire_and_nonces_are_single_use() -> None:
    now = [0.0]
    sessions = Sessions(clock=lambda: now[0])
    s = sessions.start("ana")
    assert sessions.get(s.id) is s and sessions.get("nope") is None
    now[0] += 8 * 3600
    assert sessions.get(s.id) is None
    n = sessions.nonce()
    assert not sessions.use_nonce(n, "other") and sessions.use_nonce(n, n)
    assert not sessions.use_nonce(n, n)


def test_the_cli_adds_a_reviewer_beside_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "actonce.db"
    open_ledger(str(db), create=True).close()
    monkeypatch.delenv("ACTONCE_CONSOLE_REVIEWERS_FILE", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO("ana-cli-password\n"))
    assert main(["add-reviewer", "ana", "--ledger", str(db), "--password-stdin"]) == 0
    assert "ana-cli-password" not in (tmp_path / "actonce.db.reviewers").read_text(encoding="utf-8")
    assert Reviewers.load(tmp_path / "actonce.db.reviewers").check("ana", "ana-cli-password")
    capsys.readouterr()
    empty = tmp_path / "empty.db"
    open_ledger(str(empty), create=True).close()
    assert main(["--ledger", str(empty), "--port", "0"]) == 1
    assert "no reviewers" in capsys.readouterr().err
    assert main(["--ledger", str(db), "--host", "0.0.0.0", "--port", "0"]) == 1
    assert "loopback only" in capsys.readouterr().err


def test_actonce_delegates_the_console_command(capsys: pytest.CaptureFixture[str]) -> None:
    from actonce.cli import main as actonce

    with pytest.raises(SystemExit) as done:
        actonce(["console", "--help"])
    assert done.value.code == 0 and "--evidence-root" in capsys.readouterr().out
