"""Every route is guarded: a walk over the app's own router, so no route escapes it.

For each route and method the walk proves, against a real server:

- without a session: a page redirects to the login, anything else is 401
  (only the login page and its form are public; the form still needs its
  nonce: 403 without);
- with a session, a state-changing request without the CSRF token, with a
  wrong one, from a foreign ``Origin`` or marked ``Sec-Fetch-Site:
  cross-site`` is 403;
- and, so that the walk can fail for the right reason, the same request
  done right is *not* refused (pages answer 200, forms 303);
- every response carries the security headers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import httpx
import pytest
from starlette.routing import Route

from actonce.console import ConsoleServer, ref_of

from .conftest import CSRF, sign_in
from .world import PASSWORDS, World

PUBLIC = {("GET", "/login"), ("HEAD", "/login"), ("POST", "/login")}
SAFE = {"GET", "HEAD"}
COUNTS: dict[str, int] = {}


def _routes(server: ConsoleServer) -> list[tuple[str, str]]:
    out = []
    for route in server.app.routes:
        assert isinstance(route, Route), f"not a plain route, the walk cannot see it: {route!r}"
        assert route.methods, route.path
        out += [(method, route.path) for method in sorted(route.methods)]
    return out


def _fill(path: str, world: World, server: ConsoleServer) -> str:
    unknown = world.keys["unknown"]
    events = world.ledger.events(unknown)
    seq = next(e.seq for e in events if isinstance(e.data.get("evidence"), str))
    values = {
        "ref": ref_of(unknown),
        "seq": str(seq),
        "name": "console.css" if path.startswith("/static/") else "screenshot.png",
        "packet_id": world.packets["pending-ana"],
        "op": world.operations["complete"],
    }
    names = re.findall(r"{(\w+)(?::\w+)?}", path)
    missing = set(names) - set(values)
    assert not missing, f"the walk has no value for {missing} in {path}: add one"
    return re.sub(r"{(\w+)(?::\w+)?}", lambda m: values[m.group(1)], path)


def _headers_ok(response: httpx.Response) -> None:
    csp = response.headers.get("content-security-policy", "")
    assert "frame-ancestors 'none'" in csp and "'unsafe-inline'" not in csp.split("style")[0]
    assert "script-src 'self'" in csp or "sandbox" in csp
    assert response.headers.get("referrer-policy") == "no-referrer"
    assert response.headers.get("x-content-type-options") == "nosniff"


@pytest.fixture(scope="module")
def walk(server: ConsoleServer, world: World) -> Iterator[list[tuple[str, str, str]]]:
    routes = [(m, p, _fill(p, world, server)) for m, p in _routes(server)]
    yield routes


def _send(client: httpx.Client, method: str, url: str, **kw: object) -> httpx.Response:
    response = client.request(method, url, **kw)  # type: ignore[arg-type]
    COUNTS["requests"] = COUNTS.get("requests", 0) + 1
    _headers_ok(response)
    return response


def test_every_route_refuses_a_request_without_a_session(
    server: ConsoleServer, walk: list[tuple[str, str, str]]
) -> None:
    with httpx.Client(base_url=server.url, follow_redirects=False) as anon:
        for method, path, url in walk:
            body = {"csrf": "x"} if method not in SAFE else None
            r = _send(anon, method, url, data=body, headers={"origin": server.url})
            if (method, path) in PUBLIC:
                assert r.status_code == (200 if method in SAFE else 403), (method, path)
            elif method in SAFE:
                assert r.status_code == 303, (method, path, r.status_code)
                assert r.headers["location"].startswith("/login?next="), (method, path)
            else:
                assert r.status_code == 401, (method, path, r.status_code)
    COUNTS["routes"] = len({p for _, p, _ in walk})
    COUNTS["route_methods"] = len(walk)


def test_every_state_changing_route_refuses_a_bad_or_missing_token(
    server: ConsoleServer, walk: list[tuple[str, str, str]], signed_in: Callable[..., object]
) -> None:
    client, token = signed_in("ana")  # type: ignore[misc]
    origin = {"origin": server.url}
    changing = [(m, p, u) for m, p, u in walk if m not in SAFE]
    assert changing, "no state-changing route found: the walk is not looking"
    for method, path, url in changing:
        cases = [
            ({}, origin, "no token"),
            ({"csrf": ""}, origin, "empty token"),
            ({"csrf": token[:-2] + "xx"}, origin, "wrong token"),
            ({"csrf": token}, {}, "no origin, a valid token"),
            ({"csrf": token}, {"origin": "https://evil.example"}, "foreign origin"),
            ({"csrf": token}, {"origin": "null"}, "null origin"),
            ({"csrf": token}, {"sec-fetch-site": "cross-site"}, "cross-site fetch"),
            ({"csrf": token}, {"sec-fetch-site": "same-site"}, "a sibling subdomain"),
            ({"csrf": token}, {"origin": "null", "sec-fetch-site": "cross-site"}, "null, cross"),
            (
                {"csrf": token},
                {"origin": "https://evil.example", "sec-fetch-site": "same-origin"},
                "foreign origin, same-origin claimed",
            ),
        ]
        for data, headers, why in cases:
            r = _send(client, method, url, data=data, headers=headers)
            assert r.status_code == 403, (method, path, why, r.status_code)
        # A token in a JSON body (or any other kind of body) is not a form of ours.
        r = _send(client, method, url, json={"csrf": token}, headers=origin)
        assert r.status_code == 403, (method, path, "json body")
        COUNTS["refusals"] = COUNTS.get("refusals", 0) + len(cases) + 1


def test_every_route_serves_a_signed_in_reviewer_who_does_it_right(
    server: ConsoleServer,
    world: World,
    walk: list[tuple[str, str, str]],
    signed_in: Callable[..., object],
) -> None:
    # The control: the same routes, done right, are not refused. Without it,
    # a walk over routes that refuse everything would pass.
    client, token = signed_in("ana")  # type: ignore[misc]
    last = [(m, p, u) for m, p, u in walk if p == "/logout"]
    for method, path, url in [w for w in walk if w[1] != "/logout"] + last:
        if (method, path) == ("POST", "/login"):
            with httpx.Client(base_url=server.url, follow_redirects=False) as anon:
                nonce = CSRF.search(anon.get("/login").text)
                assert nonce
                data = {"csrf": nonce.group(1), "name": "bo", "password": PASSWORDS["bo"]}
                r = _send(anon, method, url, data=data, headers={"origin": server.url})
            assert r.status_code == 303, r.text
            continue
        if method in SAFE:
            r = _send(client, method, url)
            expected = 303 if path == "/login" else 200
            assert r.status_code == expected, (method, path, r.status_code)
        else:
            # What a browser sends for its own form under Referrer-Policy: no-referrer.
            browser = {"origin": "null", "sec-fetch-site": "same-origin"}
            r = _send(client, method, url, data={"csrf": token}, headers=browser)
            assert r.status_code == 303, (method, path, r.status_code, r.text[:300])
        COUNTS["served"] = COUNTS.get("served", 0) + 1
    # After /logout (walked last) the session is gone.
    assert client.get("/").status_code == 303


def test_an_unknown_path_is_404_and_still_carries_the_headers(server: ConsoleServer) -> None:
    with httpx.Client(base_url=server.url) as anon:
        r = _send(anon, "GET", "/no/such/page")
        assert r.status_code == 404
        r = _send(anon, "DELETE", "/")
        assert r.status_code == 405


def test_a_foreign_host_header_is_refused(server: ConsoleServer) -> None:
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends Host: evil.example.
    with httpx.Client(base_url=server.url) as anon:
        r = anon.get("/login", headers={"host": "evil.example"})
        assert r.status_code == 400


def test_the_session_cookie_is_httponly_and_samesite_strict(server: ConsoleServer) -> None:
    with httpx.Client(base_url=server.url, follow_redirects=False) as anon:
        nonce = CSRF.search(anon.get("/login").text)
        assert nonce
        data = {"csrf": nonce.group(1), "name": "carol", "password": PASSWORDS["carol"]}
        r = anon.post("/login", data=data, headers={"origin": server.url})
        cookie = next(
            c for c in r.headers.get_list("set-cookie") if c.startswith("actonce_console=")
        )
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie  # plain http on loopback; https or --secure-cookies add it
        # The same nonce cannot sign in twice.
        again = anon.post("/login", data=data, headers={"origin": server.url})
        assert again.status_code == 403


def test_a_session_ends_at_sign_out_and_another_session_is_not_affected(
    server: ConsoleServer,
) -> None:
    a, token_a = sign_in(server.url, "ana")
    b, _ = sign_in(server.url, "bo")
    try:
        old = a.cookies.get("actonce_console")
        assert old
        r = a.post("/logout", data={"csrf": token_a}, headers={"origin": server.url})
        assert r.status_code == 303
        assert a.get("/").status_code == 303
        jar = {"actonce_console": old}
        stolen = httpx.Client(base_url=server.url, cookies=jar, follow_redirects=False)
        with stolen:
            assert stolen.get("/").status_code == 303  # the old id is dead on the server
        assert b.get("/").status_code == 200
    finally:
        a.close()
        b.close()


def test_wrong_passwords_are_throttled(world: World) -> None:
    own = ConsoleServer(world.ledger, world.reviewers())  # its own throttle
    with own, httpx.Client(base_url=own.url, follow_redirects=False) as anon:
        for _ in range(5):
            nonce = CSRF.search(anon.get("/login").text)
            assert nonce
            data = {"csrf": nonce.group(1), "name": "carol", "password": "wrong-password"}
            assert anon.post("/login", data=data, headers={"origin": own.url}).status_code == 401
        nonce = CSRF.search(anon.get("/login").text)
        assert nonce
        data = {"csrf": nonce.group(1), "name": "carol", "password": PASSWORDS["carol"]}
        r = anon.post("/login", data=data, headers={"origin": own.url})
        assert r.status_code == 401  # right, but throttled (from this client)
        assert "refused from here for 15 minutes" in r.text


def test_report_the_walk(walk: list[tuple[str, str, str]]) -> None:
    # Runs last in this module: the counts the report quotes.
    print(f"\nroute-guard walk: {COUNTS}")
    assert COUNTS.get("routes", 0) == len({p for _, p, _ in walk}) >= 10
