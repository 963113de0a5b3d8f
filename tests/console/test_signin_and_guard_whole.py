"""Sign-in, sessions and the guard, pinned whole over HTTP (issue 23, item 2).

Each response is checked as a browser receives it: its status, where it
redirects, every cookie's flags and lifetime, every security header's exact
value, and the exact words of each refusal. Sessions and login nonces are
driven on a clock of the test's own, to their edges (a second before the
limit lives, the limit itself ends it). Starlette's TestClient talks to the
real app in the test's own process.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import actonce.console as console_package
from actonce import Ledger, Registry
from actonce.console import Reviewers, Settings, create_app
from actonce.console import _sessions as sessions_module
from actonce.console._console import Console
from actonce.console._guard import CSP, safe_next
from actonce.console._sessions import IDLE_SECONDS, LOGIN_NONCE_SECONDS, MAX_SECONDS, Sessions

from .world import PASSWORDS, _hashes

CSS = Path(console_package.__file__).parent / "static" / "console.css"
BASE = "http://127.0.0.1"
HIDDEN = re.compile(r'name="csrf" value="([^"]+)"')
SECURITY = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    led = Ledger.open(str(tmp_path / "ledger.db"), create=True, registry=Registry())
    yield led
    led.close()


def _console(ledger: Ledger, **settings: object) -> Console:
    return Console(ledger, Reviewers(_hashes()), replace(Settings(), **settings))  # type: ignore[arg-type]


def _client(console: Console, base: str = BASE) -> TestClient:
    return TestClient(create_app(console), base_url=base, follow_redirects=False)


def _sign_in(client: TestClient, name: str = "ana", **extra: str) -> str:
    """Sign ``client`` in; answers the session's CSRF token."""
    nonce = HIDDEN.search(client.get("/login").text)
    assert nonce
    data = {"csrf": nonce.group(1), "name": name, "password": PASSWORDS[name], **extra}
    answer = client.post("/login", data=data, headers={"origin": BASE})
    assert answer.status_code == 303, answer.text
    token = HIDDEN.search(client.get("/overview").text)
    assert token
    return token.group(1)


def _security_headers(headers: object) -> dict[str, str]:
    return {name: headers[name] for name in SECURITY}  # type: ignore[index]


# --- the sign-in page ---------------------------------------------------------------------


def test_the_login_page_sets_its_nonce_cookie_and_styles_itself_by_nonce(ledger: Ledger) -> None:
    client = _client(_console(ledger))
    page = client.get("/login?next=/effects/abc")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    nonce = HIDDEN.search(page.text)
    assert nonce
    cookie = page.headers["set-cookie"]
    assert cookie == (
        f"actonce_console_login={nonce.group(1)}; HttpOnly; Max-Age=1800; Path=/login; "
        "SameSite=strict"
    )
    assert len(nonce.group(1)) == 32  # 24 random bytes
    style = re.search(r'<style nonce="([^"]+)">', page.text)
    assert style and len(style.group(1)) == 22
    assert page.headers["content-security-policy"] == SECURITY["content-security-policy"].replace(
        "style-src 'self'", f"style-src 'nonce-{style.group(1)}'"
    )
    rest = _security_headers(page.headers)
    del rest["content-security-policy"]
    assert rest == {k: v for k, v in SECURITY.items() if k != "content-security-policy"}
    assert '<input type="hidden" name="next" value="/effects/abc">' in page.text
    assert f'<style nonce="{style.group(1)}">{CSS.read_text(encoding="utf-8")}</style>' in page.text
    assert "No reviewer has a password yet" not in page.text
    assert '<p class="error"' not in page.text
    assert "<title>Sign in · actonce console</title>" in page.text
    # A second visit gets a new nonce and a new style nonce.
    again = client.get("/login")
    assert HIDDEN.search(again.text).group(1) != nonce.group(1)  # type: ignore[union-attr]
    assert '<input type="hidden" name="next" value="/">' in again.text


def test_the_login_page_keeps_only_a_local_next(ledger: Ledger) -> None:
    client = _client(_console(ledger))
    for asked, kept in (
        ("/approvals?status=denied", "/approvals?status=denied"),
        ("//evil.example/x", "/"),
        ("https://evil.example/", "/"),
        ("/a\\b", "/"),
        ("effects", "/"),
    ):
        page = client.get("/login", params={"next": asked})
        assert f'name="next" value="{kept.replace("&", "&amp;")}"' in page.text, asked


def test_the_login_cookie_is_secure_behind_tls_or_when_told(ledger: Ledger) -> None:
    told = _client(_console(ledger, secure_cookies=True)).get("/login")
    assert told.headers["set-cookie"].endswith("; Path=/login; SameSite=strict; Secure")
    console = _console(ledger, allowed_hosts=("127.0.0.1",))
    tls = _client(console, "https://127.0.0.1").get("/login")
    assert tls.headers["set-cookie"].endswith("; Secure")
    plain = _client(_console(ledger)).get("/login")
    assert "Secure" not in plain.headers["set-cookie"]


def test_without_reviewers_the_login_page_points_to_the_one_time_token(ledger: Ledger) -> None:
    client = _client(Console(ledger, Reviewers({})))
    words = re.sub(r"\s+", " ", client.get("/login").text)
    assert (
        "No reviewer has a password yet: use the one-time token the console printed when it "
        "started, or add one with <code>actonce console add-reviewer NAME</code>."
    ) in words


def test_a_signed_in_reviewer_asking_for_the_login_page_goes_to_the_queue(ledger: Ledger) -> None:
    client = _client(_console(ledger))
    _sign_in(client)
    again = client.get("/login")
    assert again.status_code == 303 and again.headers["location"] == "/"
    assert "set-cookie" not in again.headers


# --- signing in and out -------------------------------------------------------------------


def test_signing_in_sets_a_session_cookie_for_the_browser_session_only(ledger: Ledger) -> None:
    tls = "https://127.0.0.1"
    client = _client(_console(ledger), tls)
    nonce = HIDDEN.search(client.get("/login").text).group(1)  # type: ignore[union-attr]
    answer = client.post(
        "/login",
        data={"csrf": nonce, "name": "  ana ", "password": PASSWORDS["ana"], "next": "/receipts"},
        headers={"origin": tls},
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/receipts"
    session, login = answer.headers.get_list("set-cookie")
    sid = client.cookies.get("actonce_console")
    assert sid and len(sid) == 43
    assert session == f"actonce_console={sid}; HttpOnly; Path=/; SameSite=strict; Secure"
    assert re.fullmatch(
        r'actonce_console_login=""; expires=[^;]+ GMT; HttpOnly; Max-Age=0; Path=/login; '
        r"SameSite=strict",
        login,
    ), login
    assert answer.content == b""
    page = client.get("/overview")
    assert '<strong data-testid="reviewer">ana</strong>' in page.text


def test_signing_in_goes_to_the_queue_unless_next_is_local(ledger: Ledger) -> None:
    for asked, to in (("//evil.example", "/"), ("", "/"), ("/overview", "/overview")):
        client = _client(_console(ledger))
        nonce = HIDDEN.search(client.get("/login").text).group(1)  # type: ignore[union-attr]
        data = {"csrf": nonce, "name": "bo", "password": PASSWORDS["bo"], "next": asked}
        answer = client.post("/login", data=data, headers={"origin": BASE})
        assert answer.headers["location"] == to, asked


def test_a_wrong_password_is_401_with_the_name_kept_and_a_new_nonce(ledger: Ledger) -> None:
    client = _client(_console(ledger))
    nonce = HIDDEN.search(client.get("/login").text).group(1)  # type: ignore[union-attr]
    data = {"csrf": nonce, "name": "<ana>", "password": "wrong-password", "next": "/overview"}
    answer = client.post("/login", data=data, headers={"origin": BASE})
    assert answer.status_code == 401
    assert (
        '<p class="error" role="alert">Wrong name or password. After 5 wrong tries from this '
        "address, this name is refused from here for 15 minutes (elsewhere it still signs in)."
        "</p>"
    ) in answer.text
    assert 'value="&lt;ana&gt;" autofocus' in answer.text
    assert '<input type="hidden" name="next" value="/overview">' in answer.text
    fresh = HIDDEN.search(answer.text).group(1)  # type: ignore[union-attr]
    assert fresh != nonce
    assert answer.headers["set-cookie"].startswith(f"actonce_console_login={fresh}; HttpOnly")
    assert "actonce_console=" not in answer.headers["set-cookie"]
    # The nonce was used up: posting it again is refused, the fresh one works.
    data["name"], data["password"] = "ana", PASSWORDS["ana"]
    again = client.post("/login", data=data, headers={"origin": BASE})
    assert again.status_code == 403
    data["csrf"] = fresh
    assert client.post("/login", data=data, headers={"origin": BASE}).status_code == 303


def test_an_empty_password_is_refused_without_counting_against_the_name(ledger: Ledger) -> None:
    client = _client(_console(ledger))
    for _ in range(7):
        nonce = HIDDEN.search(client.get("/login").text).group(1)  # type: ignore[union-attr]
        data = {"csrf": nonce, "name": "ana", "password": ""}
        assert client.post("/login", data=data, headers={"origin": BASE}).status_code == 401
        nonce = HIDDEN.search(client.get("/login").text).group(1)  # type: ignore[union-attr]
        data = {"csrf": nonce, "name": "   ", "password": PASSWORDS["ana"]}
        assert client.post("/login", data=data, headers={"origin": BASE}).status_code == 401
    _sign_in(client)  # not throttled: no check was run


def test_signing_in_again_ends_the_session_the_browser_had(ledger: Ledger) -> None:
    console = _console(ledger)
    client = _client(console)
    _sign_in(client, "ana")
    first = client.cookies.get("actonce_console")
    n = console.sessions.nonce()
    answer = _client(console).post(
        "/login",
        data={"csrf": n, "name": "bo", "password": PASSWORDS["bo"]},
        headers={"origin": BASE, "cookie": f"actonce_console={first}; actonce_console_login={n}"},
    )
    assert answer.status_code == 303
    second = answer.cookies.get("actonce_console")
    assert first != second
    assert console.sessions.get(first) is None and console.sessions.get(second) is not None


def test_signing_out_ends_the_session_and_clears_its_cookie(ledger: Ledger) -> None:
    console = _console(ledger)
    client = _client(console)
    token = _sign_in(client)
    sid = client.cookies.get("actonce_console")
    answer = client.post("/logout", data={"csrf": token}, headers={"origin": BASE})
    assert answer.status_code == 303 and answer.headers["location"] == "/login"
    assert re.fullmatch(
        r'actonce_console=""; expires=[^;]+ GMT; HttpOnly; Max-Age=0; Path=/; SameSite=strict',
        answer.headers["set-cookie"],
    )
    assert console.sessions.get(sid) is None
    client.cookies.set("actonce_console", sid or "")
    gone = client.get("/overview")
    assert gone.status_code == 303 and gone.headers["location"] == "/login?next=%2Foverview"


# --- the guard ----------------------------------------------------------------------------


def _refused_page(text: str) -> str:
    return (
        "<!doctype html><html lang=en><meta charset=utf-8><title>actonce console</title>"
        f"<p>{text}</p><p><a href=/>Back to the queue</a></p></html>"
    )


ELSEWHERE = _refused_page("Refused: this request did not come from the console's pages.")


@pytest.mark.parametrize(
    ("site", "origin", "status"),
    [
        (None, None, 403),
        (None, BASE, 401),
        (None, "null", 403),
        (None, "http://evil.example", 403),
        (None, "http://127.0.0.1:8080", 403),
        ("same-origin", BASE, 401),
        ("same-origin", "null", 401),
        ("same-origin", None, 403),
        ("same-origin", "http://evil.example", 403),
        ("same-site", BASE, 403),
        ("same-site", "null", 403),
        ("cross-site", BASE, 403),
        ("none", BASE, 403),
    ],
)
def test_a_change_from_elsewhere_is_refused_before_the_session_is_asked(
    ledger: Ledger, site: str | None, origin: str | None, status: int
) -> None:
    client = _client(_console(ledger))
    headers = {k: v for k, v in (("sec-fetch-site", site), ("origin", origin)) if v is not None}
    answer = client.post("/logout", data={"csrf": "x"}, headers=headers)
    assert answer.status_code == status
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert _security_headers(answer.headers) == SECURITY
    want = ELSEWHERE if status == 403 else _refused_page("Sign in first.")
    assert answer.text == want


def test_a_page_without_a_session_redirects_to_the_login_naming_itself(ledger: Ledger) -> None:
    client = _client(_console(ledger))
    for path, to in (
        ("/", "/login?next=%2F"),
        ("/effects/abc?x=1&y=2", "/login?next=%2Feffects%2Fabc%3Fx%3D1%26y%3D2"),
        ("/approvals", "/login?next=%2Fapprovals"),
    ):
        answer = client.get(path)
        assert answer.status_code == 303 and answer.headers["location"] == to, path
        assert _security_headers(answer.headers) == SECURITY
        assert "set-cookie" not in answer.headers
    client.cookies.set("actonce_console", "not-a-session")
    assert client.get("/").headers["location"] == "/login?next=%2F"


STALE = _refused_page("Refused: the form's token is missing or stale. Reload.")
NOT_A_FORM = _refused_page("Refused: not a form of this console.")


def test_a_change_needs_the_sessions_token_in_a_form(ledger: Ledger) -> None:
    console = _console(ledger)
    client = _client(console)
    token = _sign_in(client)
    origin = {"origin": BASE}
    for data in ({"other": "1"}, {"csrf": ""}, {"csrf": token[:-1]}, {"csrf": token + "x"}):
        answer = client.post("/logout", data=data, headers=origin)
        assert (answer.status_code, answer.text) == (403, STALE), data
    other = _client(console)
    theirs = _sign_in(other, "bo")
    assert theirs != token
    answer = client.post("/logout", data={"csrf": theirs}, headers=origin)
    assert (answer.status_code, answer.text) == (403, STALE)
    for body, kind in (
        (f"csrf={token}".encode(), "text/plain"),
        (f'{{"csrf": "{token}"}}'.encode(), "application/json"),
        (f"csrf={token}&csrf={token}".encode(), "application/x-www-form-urlencoded"),
        (
            b"csrf=" + token.encode() + b"&x=" + b"a" * (64 * 1024),
            "application/x-www-form-urlencoded",
        ),
        (b"csrf=\xff\xfe", "application/x-www-form-urlencoded"),
    ):
        answer = client.post("/logout", content=body, headers={**origin, "content-type": kind})
        assert (answer.status_code, answer.text) == (403, NOT_A_FORM), (body[:40], kind)
    assert console.sessions.get(client.cookies.get("actonce_console")) is not None
    # The content type is read without its parameters and in any case.
    body = f"csrf={token}".encode()
    kind = "Application/X-WWW-Form-Urlencoded; charset=utf-8"
    answer = client.post("/logout", content=body, headers={**origin, "content-type": kind})
    assert answer.status_code == 303


def test_a_form_of_sixty_four_kib_is_read(ledger: Ledger) -> None:
    client = _client(_console(ledger))
    token = _sign_in(client)
    head = f"csrf={token}&pad=".encode()
    body = head + b"a" * (64 * 1024 - len(head))
    assert len(body) == 64 * 1024
    answer = client.post(
        "/logout",
        content=body,
        headers={"origin": BASE, "content-type": "application/x-www-form-urlencoded"},
    )
    assert answer.status_code == 303


def test_the_login_form_needs_its_nonce_in_the_field_and_the_cookie(ledger: Ledger) -> None:
    console = _console(ledger)
    client = _client(console)
    nonce = HIDDEN.search(client.get("/login").text).group(1)  # type: ignore[union-attr]
    data = {"name": "ana", "password": PASSWORDS["ana"]}
    other = ("B" if nonce[0] == "A" else "A") + nonce[1:]  # never the nonce itself
    for csrf in ("", other, console.sessions.nonce()):
        answer = client.post("/login", data={**data, "csrf": csrf}, headers={"origin": BASE})
        assert (answer.status_code, answer.text) == (403, STALE), csrf
    client.cookies.clear()
    answer = client.post("/login", data={**data, "csrf": nonce}, headers={"origin": BASE})
    assert (answer.status_code, answer.text) == (403, STALE)


def test_every_answer_carries_the_security_headers_and_its_timing(ledger: Ledger) -> None:
    client = _client(_console(ledger))
    _sign_in(client)
    for path, status in (("/", 200), ("/nowhere", 404), ("/static/nope.css", 404)):
        answer = client.get(path)
        assert answer.status_code == status, path
        assert _security_headers(answer.headers) == SECURITY, path
    timing = client.get("/overview").headers["server-timing"]
    assert re.fullmatch(r"app;dur=\d+\.\d{2}", timing)
    css = client.get("/static/console.css")
    assert css.headers["content-type"] == "text/css; charset=utf-8"
    js = client.get("/static/console.js")
    assert js.headers["content-type"] == "text/javascript; charset=utf-8"
    assert css.content == CSS.read_bytes()
    assert js.content == (CSS.parent / "console.js").read_bytes()
    missing = client.get("/static/nope.css")
    assert "<h1>Not here</h1>\n<p>No such file.</p>" in missing.text


def test_a_foreign_host_is_refused(ledger: Ledger) -> None:
    client = _client(_console(ledger), "http://evil.example")
    answer = client.get("/login")
    assert answer.status_code == 400 and answer.text == "Invalid host header"
    for host in ("127.0.0.1", "localhost", "[::1]"):
        assert _client(_console(ledger), f"http://{host}").get("/login").status_code == 200


def test_safe_next_keeps_a_local_path_whole() -> None:
    assert safe_next("/") == "/"
    assert safe_next("/effects/~YWJj?next=/x#y") == "/effects/~YWJj?next=/x#y"
    assert safe_next("/a/b\\c") == "/"
    assert safe_next(None) == "/"
    assert SECURITY["content-security-policy"] == CSP


# --- sessions and nonces at their edges ---------------------------------------------------


def test_a_session_lives_until_its_idle_limit_and_each_request_restarts_it() -> None:
    clock = Clock()
    sessions = Sessions(clock=clock)
    s = sessions.start("ana")
    assert (s.reviewer, s.started, s.seen, s.flash) == ("ana", 1000.0, 1000.0, [])
    assert len(s.id) == 43 and len(s.csrf) == 43 and s.id != s.csrf
    clock.now += IDLE_SECONDS - 1
    assert sessions.get(s.id) is s and s.seen == clock.now
    clock.now += IDLE_SECONDS - 1  # idle from the last request, not from the start
    assert sessions.get(s.id) is s
    clock.now += IDLE_SECONDS
    assert sessions.get(s.id) is None
    clock.now = 1000.0  # gone for good, not only refused at that hour
    assert sessions.get(s.id) is None
    assert sessions.get(None) is None and sessions.get("") is None


def test_a_session_ends_exactly_at_its_maximum_lifetime() -> None:
    clock = Clock()
    sessions = Sessions(clock=clock)
    s = sessions.start("ana")
    step = IDLE_SECONDS - 1
    while clock.now + step < 1000.0 + MAX_SECONDS:
        clock.now += step
        assert sessions.get(s.id) is s
    clock.now = 1000.0 + MAX_SECONDS - 0.5
    assert sessions.get(s.id) is s
    clock.now = 1000.0 + MAX_SECONDS
    assert sessions.get(s.id) is None
    clock.now = 1000.0 + 1
    assert sessions.get(s.id) is None


def test_a_session_that_was_used_at_its_idle_edge_is_expired_when_another_starts() -> None:
    clock = Clock()
    sessions = Sessions(clock=clock)
    old = sessions.start("ana")
    clock.now += IDLE_SECONDS
    new = sessions.start("bo")
    clock.now = 1000.0
    assert sessions.get(old.id) is None and sessions.get(new.id) is new
    clock.now = 0.0
    young = sessions.start("carol")
    for _ in range(3):
        clock.now += IDLE_SECONDS - 1
        assert sessions.get(young.id) is young
    clock.now = MAX_SECONDS  # seen 3 s ago, started a day ago
    sessions.start("dan")
    clock.now = MAX_SECONDS - 2
    assert sessions.get(young.id) is None


def test_the_least_recently_seen_session_gives_way_when_the_table_is_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sessions_module, "MAX_SESSIONS", 3)
    clock = Clock()
    sessions = Sessions(clock=clock)
    a = sessions.start("a")
    clock.now += 1
    b = sessions.start("b")
    clock.now += 1
    c = sessions.start("c")
    clock.now += 1
    assert sessions.get(a.id) is a  # a is now the most recently seen
    d = sessions.start("d")
    assert sessions.get(b.id) is None
    assert all(sessions.get(s.id) is s for s in (a, c, d))


def test_signing_out_ends_only_that_session() -> None:
    sessions = Sessions(clock=Clock())
    a, b = sessions.start("ana"), sessions.start("ana")
    sessions.end(None)
    sessions.end("")
    sessions.end(a.id)
    assert sessions.get(a.id) is None and sessions.get(b.id) is b


def test_a_sessions_messages_are_shown_once_in_order() -> None:
    s = Sessions(clock=Clock()).start("ana")
    s.say("one")
    s.say("two")
    assert s.take_flash() == ["one", "two"] and s.take_flash() == [] and s.flash == []


def test_a_login_nonce_is_good_once_until_its_lifetime_ends() -> None:
    clock = Clock()
    sessions = Sessions(clock=clock)
    n = sessions.nonce()
    assert len(n) == 32
    for cookie, form in (
        (None, n),
        (n, None),
        ("", ""),
        (n, n + "x"),
        (("B" if n[0] == "A" else "A") + n[1:], n),
    ):
        assert not sessions.use_nonce(cookie, form)
    clock.now += LOGIN_NONCE_SECONDS - 0.5
    assert sessions.use_nonce(n, n)
    assert not sessions.use_nonce(n, n)
    late = sessions.nonce()
    clock.now += LOGIN_NONCE_SECONDS
    assert not sessions.use_nonce(late, late)
    unknown = "u" * 32
    assert not sessions.use_nonce(unknown, unknown)


def test_expired_nonces_are_forgotten_when_a_new_one_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sessions_module, "MAX_SESSIONS", 2)
    clock = Clock()
    sessions = Sessions(clock=clock)
    old = sessions.nonce()
    clock.now += LOGIN_NONCE_SECONDS  # old is dead now
    kept = sessions.nonce()
    assert list(sessions._nonces) == [kept]  # the dead one went
    newest = sessions.nonce()
    assert sessions.use_nonce(kept, kept) and sessions.use_nonce(newest, newest)
    assert not sessions.use_nonce(old, old)
    first, second = sessions.nonce(), sessions.nonce()
    third = sessions.nonce()  # the table is full: the oldest gives way
    assert not sessions.use_nonce(first, first)
    assert sessions.use_nonce(second, second) and sessions.use_nonce(third, third)
