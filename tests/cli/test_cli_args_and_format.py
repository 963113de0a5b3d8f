"""The CLI's argument checks, its one-line errors and its formatting, pinned whole.

In process (``main([...])`` and the helpers of ``cli/_format.py``), so they
are fast: each argument type's bounds and message, each check of options
that go together, the error line of a failing command (scrubbed, on one
line, exit 1), and how times, tables, money, records and JSON are shown
(secret-named fields hidden unless they hold nothing).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from actonce.cli import main
from actonce.cli._format import (
    clean,
    money,
    payload_of,
    print_json,
    shown,
    table,
    utc,
    when,
)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[Any, str, str]:
    try:
        code: Any = main(argv)
    except SystemExit as done:
        code = ("exit", done.code)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def none_db(tmp_path: Path) -> str:
    return str(tmp_path / "none.db")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["list", "--limit", "0"], "actonce list: error: argument --limit: must be from 1 to "
         "1000000, not 0 (see --help)\n"),
        (["list", "--limit", "1000001"], "actonce list: error: argument --limit: must be from 1 "
         "to 1000000, not 1000001 (see --help)\n"),
        (["list", "--limit", "x"], "actonce list: error: argument --limit: not a whole number: "
         "'x' (see --help)\n"),
        (["list", "--limit", "1.5"], "actonce list: error: argument --limit: not a whole number: "
         "'1.5' (see --help)\n"),
        (["list", "--kind", " "], "actonce list: error: argument --kind: must not be empty "
         "(see --help)\n"),
        (["list", "--kind", ""], "actonce list: error: argument --kind: must not be empty "
         "(see --help)\n"),
        (["list", "--kind", "a\ud800"], "actonce list: error: argument --kind: is not valid text "
         "(see --help)\n"),
        (["resolve", "abcd", "happened", "--reason", "r", "--reviewer", "ana", "--attempt", "0"],
         "actonce resolve: error: argument --attempt: is a whole number from 1, not '0' "
         "(see --help)\n"),
        (["resolve", "abcd", "happened", "--reason", "r", "--reviewer", "ana", "--attempt",
          "1234567890"], "actonce resolve: error: argument --attempt: is a whole number from 1, "
         "not '1234567890' (see --help)\n"),
        (["resolve", "abcd", "happened", "--reason", "r", "--reviewer", "ana", "--attempt", "-1"],
         "actonce resolve: error: argument --attempt: is a whole number from 1, not '-1' "
         "(see --help)\n"),
        (["resolve", "abcd", "happened", "--reason", "r", "--reviewer", " "],
         "actonce: error: resolve needs --reviewer (or $USER) (see --help)\n"),
        (["decide", "op-1", "accept", "--reason", "r", "--reviewer", ""],
         "actonce: error: decide needs --reviewer (or $USER) (see --help)\n"),
        (["approve", "apv-1", "--by", "ana"],
         "actonce: error: approve needs the user's carrier (--code or --link), or an operator's "
         "override (--override --reason ...) (see --help)\n"),
        (["deny", "apv-1", "--by", "ana"],
         "actonce: error: deny needs the user's carrier (--code or --link), or an operator's "
         "override (--override --reason ...) (see --help)\n"),
        (["approve", "apv-1", "--by", "ana", "--override", "--operator", "op"],
         "actonce: error: --override needs --reason (and --operator, or $USER): it is recorded "
         "(see --help)\n"),
        (["approve", "apv-1", "--by", "ana", "--override", "--reason", "r", "--operator", " "],
         "actonce: error: --override needs --reason (and --operator, or $USER): it is recorded "
         "(see --help)\n"),
        (["intents", "withdraw", "i-1"],
         "actonce: error: intents withdraw needs --by and --reason (both are recorded) "
         "(see --help)\n"),
        (["intents", "withdraw", "i-1", "--by", "ana"],
         "actonce: error: intents withdraw needs --by and --reason (both are recorded) "
         "(see --help)\n"),
        (["intents", "withdraw", "i-1", "--reason", "r"],
         "actonce: error: intents withdraw needs --by and --reason (both are recorded) "
         "(see --help)\n"),
        (["intents", "a", "b"], "actonce: error: intents takes one ID, or 'withdraw ID' "
         "(see --help)\n"),
        (["intents", "withdraw", "a", "b"], "actonce: error: intents takes one ID, or "
         "'withdraw ID' (see --help)\n"),
    ],
)  # fmt: skip
def test_a_bad_command_line_says_what_on_one_line_and_exits_2(
    args: list[str], says: str, none_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run([*args, "--ledger", none_db], capsys)
    assert code == ("exit", 2)
    assert (out, err) == ("", says)


@pytest.mark.parametrize("limit", ["1", "1000000", "0042"])
def test_a_count_from_1_to_a_million_is_taken(
    limit: str, none_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(["list", "--limit", limit, "--ledger", none_db], capsys)
    assert code == 1  # past the arguments: no ledger there
    assert err.startswith(f"actonce: error: no ledger at {none_db}: create it with ")


@pytest.mark.parametrize("attempt", ["1", "999999999"])
def test_an_attempt_from_1_of_up_to_nine_digits_is_taken(
    attempt: str, none_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["resolve", "abcd", "happened", "--reason", "r", "--reviewer", "ana"]
    code, _, err = _run([*argv, "--attempt", attempt, "--ledger", none_db], capsys)
    assert code == 1
    assert err == (
        f"actonce: error: no ledger at {none_db}: create it with `actonce init --ledger "
        f"{none_db}` or open_ledger(url, create=True)\n"
    )


def test_an_override_with_its_reason_and_an_intent_with_one_id_pass_the_checks(
    none_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["approve", "apv-1", "--by", "ana", "--override", "--reason", "r", "--operator", "op"]
    assert _run([*argv, "--ledger", none_db], capsys)[0] == 1
    assert (
        _run(["approve", "apv-1", "--by", "ana", "--code", "c", "--ledger", none_db], capsys)[0]
        == 1
    )
    assert (
        _run(["deny", "apv-1", "--by", "ana", "--link", "t", "--ledger", none_db], capsys)[0] == 1
    )
    assert _run(["intents", "i-1", "--ledger", none_db], capsys)[0] == 1
    argv = ["intents", "withdraw", "i-1", "--by", "ana", "--reason", "r"]
    assert _run([*argv, "--ledger", none_db], capsys)[0] == 1
    assert _run(["intents", "--ledger", none_db], capsys)[0] == 1


def test_an_error_is_one_scrubbed_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["list", "--ledger", "postgresql://ann:secretpw@127.0.0.1:1/x"], capsys)
    assert code == 1 and out == ""
    assert err.startswith("actonce: error: cannot open the PostgreSQL ledger ")
    assert "postgresql://ann:***@127.0.0.1:1/x" in err
    assert "secretpw" not in err
    assert err.count("\n") == 1 and "  " not in err


# --- _format --------------------------------------------------------------------------------


def test_when_and_utc_show_times_to_the_second_and_the_minute() -> None:
    ts = 1_700_000_000.7
    assert when(ts) == time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
    assert when(None) == "-"
    assert when(0.0) == time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(0.0))
    assert when(1e300) == "1e+300"
    assert when(float("nan")) == "nan"
    assert utc(ts) == "2023-11-14 22:13"
    assert utc(0.0) == "1970-01-01 00:00"
    assert utc(1e300) == "1e+300"
    assert utc(float("inf")) == "inf"


def test_a_table_pads_each_column_to_its_widest_cell() -> None:
    assert table([["a", "bbb"], ["cccc", "d"]], ["h1", "h2"]) == ("h1    h2\na     bbb\ncccc  d")
    assert table([], ["key", "kind"]) == "key  kind"
    assert table([["x", ""]], ["a", "b"]) == "a  b\nx"
    with pytest.raises(ValueError):
        table([["only one"]], ["a", "b"])


@pytest.mark.parametrize(
    ("text", "value"),
    [('{"a":1}', {"a": 1}), ("[1]", [1]), ("3", 3), ("null", None), ("x", "x"), ("", "")],
)
def test_payload_of_decodes_json_or_keeps_the_text(text: str, value: Any) -> None:
    assert payload_of(text) == value


def test_clean_scrubs_text_and_keeps_none() -> None:
    assert clean(None) is None
    assert clean("password=hunter22 ok") == "password=[redacted] ok"
    assert clean("plain") == "plain"


@pytest.mark.parametrize(
    ("amount", "currency", "text"),
    [(None, "EUR", "-"), ("12.50", "EUR", "12.50 EUR"), (3, None, "3"), (0, "", "0")],
)
def test_money(amount: Any, currency: Any, text: str) -> None:
    assert money(amount, currency) == text


def test_shown_hides_secret_fields_unless_they_hold_nothing() -> None:
    value = {
        "token": "t-1",
        "password": None,
        "pin": False,
        "cookie": "",
        "secret": "[redacted]",
        "card": {"$secret": "redacted"},
        "cvv": {"$secret": "x", "more": 1},
        "apiKey": 0,
        "memo": "password=hunter22",
        "rows": [{"sid": "s"}, ("note", "token abcdefghijklmnop")],
        "n": 3,
        4: "four",
    }
    assert shown(value) == {
        "token": "[redacted]",
        "password": None,
        "pin": False,
        "cookie": "",
        "secret": "[redacted]",
        "card": {"$secret": "redacted"},
        "cvv": "[redacted]",
        "apiKey": "[redacted]",
        "memo": "password=[redacted]",
        "rows": [{"sid": "[redacted]"}, ["note", "token [redacted]"]],
        "n": 3,
        4: "four",
    }


def test_shown_keeps_a_stored_marker_and_its_fingerprint() -> None:
    """A marker was shown as ``{"$secret": "[redacted]"}``: its own field name is secret,
    so ``--json`` hid the fingerprint an operator compares (the text output showed it)."""
    fingerprint = {"$secret": "hmac-sha256:k1:" + "ab" * 32}
    assert shown({"card": fingerprint, "x": [fingerprint]}) == {
        "card": fingerprint,
        "x": [fingerprint],
    }
    assert shown({"$secret": "password=hunter22"}) == {"$secret": "password=[redacted]"}
    assert shown({"$secret": 3}) == {"$secret": "[redacted]"}  # no marker


def test_print_json_is_one_sorted_scrubbed_line(capsys: pytest.CaptureFixture[str]) -> None:
    print_json({"b": "é", "a": {"token": "t"}, "c": Path("/x")})
    out = capsys.readouterr().out
    assert out == '{"a": {"token": "[redacted]"}, "b": "é", "c": "/x"}\n'
    assert json.loads(out)["a"] == {"token": "[redacted]"}
