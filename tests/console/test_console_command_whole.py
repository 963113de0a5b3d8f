"""``actonce console`` and ``actonce console add-reviewer``, pinned whole (issue 23, item 2).

The command's options and defaults, each refusal's one line, where the
reviewers file is looked for, and what the command prints before it
serves. Serving itself is replaced by a stand-in that records the server
the command built (its settings, its address), so a test sees everything
the command decided without a socket left open.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from actonce import Ledger, open_ledger
from actonce.console import (
    ConsoleServer,
    Reviewers,
    _minutes,
    _parser,
    check_private,
    main,
    reviewers_path,
    write_reviewer,
)

ERR = "actonce console: error: "


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[ConsoleServer]:
    """The servers the command would have served (it returns at once instead)."""
    seen: list[ConsoleServer] = []

    def record(self: ConsoleServer) -> None:
        seen.append(self)
        self.stop()

    monkeypatch.setattr(ConsoleServer, "serve_forever", record)
    monkeypatch.delenv("ACTONCE_CONSOLE_REVIEWERS_FILE", raising=False)
    monkeypatch.delenv("ACTONCE_CONSOLE_REVIEWERS", raising=False)
    return seen


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "actonce.db")
    Ledger.open(path, create=True).close()
    return path


def _words(text: str) -> str:
    return " ".join(text.split())


def test_the_options_and_their_defaults() -> None:
    args = _parser().parse_args([])
    assert vars(args) == {
        "ledger": None,
        "host": "127.0.0.1",
        "port": 8470,
        "reviewers": None,
        "verifiers": None,
        "evidence_root": [],
        "hold_minutes": 10.0,
        "token_for": None,
        "allow_remote": False,
        "secure_cookies": False,
    }
    given = _parser().parse_args([
        "--ledger", "x.db", "--host", "::1", "--port", "9", "--reviewers", "r", "--verifiers",
        "m", "--evidence-root", "a", "--evidence-root", "b", "--hold-minutes", "2.5",
        "--token-for", "ana", "--allow-remote", "--secure-cookies",
    ])  # fmt: skip
    assert vars(given) == {
        "ledger": "x.db",
        "host": "::1",
        "port": 9,
        "reviewers": "r",
        "verifiers": "m",
        "evidence_root": ["a", "b"],
        "hold_minutes": 2.5,
        "token_for": "ana",
        "allow_remote": True,
        "secure_cookies": True,
    }


def test_the_help_says_what_each_option_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = _words(capsys.readouterr().out)
    assert out.startswith("usage: actonce console [-h] [--ledger LEDGER]")
    for said in (
        "The review console (a web app).",
        "--ledger LEDGER ledger URL or path (default: $ACTONCE_LEDGER or ./actonce.db)",
        "--host HOST address to bind (default 127.0.0.1)",
        "--port PORT default 8470",
        "--reviewers REVIEWERS reviewers file (default: $ACTONCE_CONSOLE_REVIEWERS_FILE, else "
        "beside a SQLite ledger)",
        "--verifiers VERIFIERS modules that register verifiers (for 'verify again')",
        "--evidence-root DIR serve evidence only from inside DIR (repeatable)",
        "--hold-minutes HOLD_MINUTES a hold's length",
        "--token-for NAME print a one-time sign-in token for NAME",
        "--secure-cookies behind TLS: Secure cookies",
    ):
        assert said in out, said


def test_add_reviewers_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["add-reviewer", "--help"])
    out = _words(capsys.readouterr().out)
    assert out.startswith("usage: actonce console add-reviewer [-h] [--ledger LEDGER]")
    for said in (
        "Add or replace a reviewer.",
        "--ledger LEDGER the ledger the reviewers file sits beside",
        "--reviewers REVIEWERS the reviewers file",
    ):
        assert said in out, said


def test_a_bad_command_line_is_one_line_and_exit_two(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in (
        (["--port", "x"], "argument --port: invalid int value: 'x'"),
        (["--hold-minutes", "0.5"], "argument --hold-minutes: must be from 1 to 1440 minutes"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["add-reviewer"], "the following arguments are required: name"),
    ):
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code == 2, argv
        prog = "actonce console add-reviewer" if argv[0] == "add-reviewer" else "actonce console"
        assert capsys.readouterr().err == f"{prog}: error: {message} (see --help)\n"


def test_hold_minutes_at_their_bounds() -> None:
    assert _minutes("1") == 1.0 and _minutes("1440") == 1440.0 and _minutes("2.5") == 2.5
    for bad, why in (
        ("0.99", "must be from 1 to 1440 minutes"),
        ("1440.01", "must be from 1 to 1440 minutes"),
        ("ten", "not a number: 'ten'"),
    ):
        with pytest.raises(argparse.ArgumentTypeError) as caught:
            _minutes(bad)
        assert str(caught.value) == why


# --- add-reviewer -------------------------------------------------------------------------


def test_add_reviewer_reads_one_line_of_stdin_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "reviewers"
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n  spaced password  \nsecond line\n"))
    # The ledger is not opened when the file is named: a ledger that is not there is fine.
    argv = ["add-reviewer", "ana", "--reviewers", str(path), "--ledger", str(tmp_path / "no")]
    assert main([*argv, "--password-stdin"]) == 1  # the first line is empty: too short
    assert capsys.readouterr().err == (f"{ERR}a reviewer's password needs at least 10 characters\n")
    assert main([*argv, "--password-stdin"]) == 0
    assert capsys.readouterr().out == (
        f"reviewer ana written to {path} (a scrypt hash, never the password)\n"
    )
    assert Reviewers.load(path).check("ana", "  spaced password  ")
    assert not (tmp_path / "no").exists()


def test_add_reviewer_asks_twice_and_writes_nothing_when_they_differ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts: list[str] = []
    answers = iter(["first-password", "other-password", "same-password", "same-password"])

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    monkeypatch.setattr("getpass.getpass", ask)
    path = tmp_path / "reviewers"
    assert main(["add-reviewer", "bo", "--reviewers", str(path)]) == 1
    assert capsys.readouterr().err == f"{ERR}the two passwords differ; nothing written\n"
    assert not path.exists()
    assert main(["add-reviewer", "bo", "--reviewers", str(path)]) == 0
    assert prompts == ["password for bo: ", "again: "] * 2
    assert Reviewers.load(path).check("bo", "same-password")


def test_add_reviewer_refuses_a_bad_name_before_anything_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["add-reviewer", "bad name", "--reviewers", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{ERR}a reviewer's name is 1-64 characters") and err.count("\n") == 1
    assert not (tmp_path / "r").exists()


def test_add_reviewer_writes_beside_a_sqlite_ledger_and_needs_a_file_otherwise(
    db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ACTONCE_CONSOLE_REVIEWERS_FILE", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO("a-long-password\n"))
    assert main(["add-reviewer", "ana", "--ledger", db, "--password-stdin"]) == 0
    assert Reviewers.load(Path(db + ".reviewers")).names == ["ana"]
    capsys.readouterr()
    # A ledger that is no SQLite file (a server's) has nothing beside it.
    monkeypatch.setattr("actonce.console.open_ledger", lambda *a, **k: open_ledger("memory://"))
    assert main(["add-reviewer", "ana", "--ledger", "pg", "--password-stdin"]) == 1
    assert capsys.readouterr().err == (
        f"{ERR}name the reviewers file: --reviewers FILE or $ACTONCE_CONSOLE_REVIEWERS_FILE\n"
    )


def test_where_the_reviewers_file_is(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ACTONCE_CONSOLE_REVIEWERS_FILE", raising=False)
    with open_ledger(db) as ledger, open_ledger("sqlite:///:memory:") as memory:
        assert reviewers_path("given", ledger) == Path("given")
        assert reviewers_path(None, ledger) == Path(db + ".reviewers")
        assert reviewers_path(None, memory) is None
        assert reviewers_path(None, None) is None
        monkeypatch.setenv("ACTONCE_CONSOLE_REVIEWERS_FILE", str(tmp_path / "env"))
        assert reviewers_path(None, ledger) == tmp_path / "env"
        assert reviewers_path("given", ledger) == Path("given")
        monkeypatch.setenv("ACTONCE_CONSOLE_REVIEWERS_FILE", "")
        assert reviewers_path(None, ledger) == Path(db + ".reviewers")


def test_a_reviewers_file_others_can_read_is_refused(tmp_path: Path) -> None:
    check_private(None)
    check_private(tmp_path / "missing")
    path = tmp_path / "reviewers"
    write_reviewer(path, "ana", "ana-password-1")
    check_private(path)
    for mode in (0o640, 0o604, 0o620, 0o602, 0o610, 0o601):
        path.chmod(mode)
        with pytest.raises(Exception) as caught:
            check_private(path)
        assert str(caught.value) == (
            f"the reviewers file {path} can be read or written by other users (mode {mode:o}): "
            f"its password hashes must stay private; run chmod 600 {path}"
        )
    path.chmod(0o700)
    check_private(path)


# --- serving ------------------------------------------------------------------------------


def test_the_command_builds_its_server_from_its_options(
    db: str,
    tmp_path: Path,
    served: list[ConsoleServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_reviewer(Path(db + ".reviewers"), "ana", "ana-password-1")
    roots = [tmp_path / "e1", tmp_path / "e2"]
    for root in roots:
        root.mkdir()
    argv = ["--ledger", db, "--port", "0", "--hold-minutes", "2.5", "--token-for", "bo"]
    for root in roots:
        argv += ["--evidence-root", str(root)]
    assert main(argv) == 0
    (server,) = served
    settings = server.console.settings
    assert settings.evidence_roots == tuple(r.resolve() for r in roots)
    assert settings.hold_seconds == 150.0 and settings.secure_cookies is False
    assert server.console.holds.ttl == 150.0
    assert server.console.reviewers.names == ["ana"]
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert re.fullmatch(rf"actonce console on http://127\.0\.0\.1:\d+  \(ledger {db}\)", out[0])
    token = re.fullmatch(r"one-time sign-in for bo: (\S+)  \(15 minutes, once\)", out[1])
    assert token and server.console.reviewers.check("bo", token.group(1))


def test_a_token_alone_lets_the_console_start(
    db: str, served: list[ConsoleServer], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--ledger", db, "--port", "0", "--secure-cookies", "--token-for", "ana"]) == 0
    (server,) = served
    assert server.console.settings.secure_cookies is True
    assert server.console.reviewers.names == []


def test_without_reviewers_the_command_says_where_it_looked(
    db: str, served: list[ConsoleServer], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--ledger", db, "--port", "0"]) == 1
    assert capsys.readouterr().err == (
        f"{ERR}no reviewers in {db}.reviewers: add one with `actonce console add-reviewer "
        "NAME`, or start with --token-for NAME\n"
    )
    assert main(["--ledger", "memory://", "--port", "0"]) == 1
    assert capsys.readouterr().err == (
        f"{ERR}no reviewers in --reviewers FILE or $ACTONCE_CONSOLE_REVIEWERS_FILE: add one "
        "with `actonce console add-reviewer NAME`, or start with --token-for NAME\n"
    )
    assert served == []


def test_the_command_refuses_what_it_cannot_serve_safely(
    db: str, tmp_path: Path, served: list[ConsoleServer], capsys: pytest.CaptureFixture[str]
) -> None:
    write_reviewer(Path(db + ".reviewers"), "ana", "ana-password-1")
    cases: list[tuple[list[str], str]] = [
        (
            ["--allow-remote"],
            "--allow-remote serves other machines: put TLS in front of the console and pass "
            "--secure-cookies too (refused without it: session cookies would travel in clear)",
        ),
        (
            ["--host", "10.1.2.3"],
            "the console binds to loopback only, not '10.1.2.3'; pass allow_remote=True "
            "(--allow-remote) to serve other machines, behind TLS",
        ),
        (
            ["--evidence-root", str(tmp_path / "none")],
            f"the evidence root {tmp_path / 'none'} does not exist",
        ),
        (["--evidence-root", db], f"the evidence root {db} is not a folder"),
    ]
    for extra, said in cases:
        assert main(["--ledger", db, "--port", "0", *extra]) == 1, extra
        assert capsys.readouterr().err == f"{ERR}{said}\n", extra
    assert served == []


def test_an_os_error_is_said_by_its_reason_and_ctrl_c_is_a_clean_stop(
    db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_reviewer(Path(db + ".reviewers"), "ana", "ana-password-1")

    def refuse(self: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(ConsoleServer, "serve_forever", refuse)
    assert main(["--ledger", db, "--port", "0"]) == 1
    assert capsys.readouterr().err == f"{ERR}Permission denied\n"

    def bare(self: Any) -> None:
        raise OSError("no reason given")

    monkeypatch.setattr(ConsoleServer, "serve_forever", bare)
    assert main(["--ledger", db, "--port", "0"]) == 1
    assert capsys.readouterr().err == f"{ERR}no reason given\n"

    def interrupted(self: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ConsoleServer, "serve_forever", interrupted)
    assert main(["--ledger", db, "--port", "0"]) == 0
