"""The write firewall's rule (issue 21): one pure function, every answer pinned.

``judge_request`` is what both firewalls ask (Playwright's routes, the
DevTools protocol's request interception), so its answers are pinned here,
without a browser: outside an effect, inside a perform window with the
default or a declared list of requests, the allowlist, beacons, and origins
that merely look like the session's (issue 23).
"""

from __future__ import annotations

import pytest

from actonce import (
    RefusalReason,
    RequestPattern,
    SubmitWindow,
    UsageError,
    WireAction,
    WireDecision,
    bare_url,
    judge_request,
    origin_of,
)

ORIGIN = "http://127.0.0.1:8765"
SEND, ALLOW, PASS, REFUSE = WireAction.SEND, WireAction.ALLOW, WireAction.PASS, WireAction.REFUSE
NOTES = (RequestPattern("POST", "/notes"), RequestPattern("POST", "/notes/{id}/publish"))


def judge(
    method: str,
    path_or_url: str,
    window: SubmitWindow | None = None,
    allow: tuple[RequestPattern, ...] = (),
    *,
    beacon: bool = False,
) -> WireDecision:
    url = ORIGIN + path_or_url if path_or_url.startswith("/") else path_or_url
    return judge_request(method, url, window=window, allow=allow, beacon=beacon)


def test_safe_methods_and_other_schemes_pass_untouched() -> None:
    for method in ("GET", "HEAD", "OPTIONS", "get"):
        assert judge(method, "/compose").action is PASS
    assert judge("POST", "data:text/plain,x").action is PASS
    assert judge("POST", "blob:http://127.0.0.1:8765/abc").action is PASS


def test_outside_an_effect_every_mutating_request_is_refused() -> None:
    for method in ("POST", "PUT", "PATCH", "DELETE", "PROPFIND"):
        decision = judge(method, "/compose")
        assert decision.action is REFUSE and decision.reason is RefusalReason.OUTSIDE_EFFECT
        assert decision.outcome == "refused: outside an effect"
    assert judge("POST", "/compose", beacon=True).reason is RefusalReason.OUTSIDE_EFFECT


def test_only_an_explicit_allowlist_lets_one_through() -> None:
    login = RequestPattern("POST", "/login", origin=ORIGIN)
    search = RequestPattern("*", "/search/*", origin=ORIGIN)
    allow = (login, search)
    assert judge("POST", "/login?next=/", None, allow).rule == login
    assert judge("POST", "/search/posts/recent", None, allow).action is ALLOW
    assert judge("POST", "/login", None, allow).outcome == "allowed: allowlist"
    # Method, path and origin must all match; a path is matched whole.
    assert judge("PUT", "/login", None, allow).action is REFUSE
    assert judge("POST", "/login/reset", None, allow).action is REFUSE
    assert judge("POST", "/loginx", None, allow).action is REFUSE
    assert judge("POST", "http://localhost:8765/login", None, allow).action is REFUSE


def test_by_default_a_perform_sends_its_first_request_once() -> None:
    window = SubmitWindow(ORIGIN)
    assert not window.declares
    first = judge("POST", "/compose", window)
    assert first.action is SEND and first.step == 0
    after = window.advanced("POST", ORIGIN + "/compose?draft=1")
    # The same request again (a double submit, a 307) is a repeat: harmless, refused.
    second = judge("POST", "/compose", after)
    assert second.reason is RefusalReason.SECOND and not second.reason.breaks_submit
    assert second.outcome == "refused: second mutating request"
    # Another request is one the effect did not declare: its submit may be incomplete.
    other = judge("POST", "/compose/publish", after)
    assert other.reason is RefusalReason.UNDECLARED and other.reason.breaks_submit
    assert judge("PUT", "/compose", after).reason is RefusalReason.UNDECLARED
    assert after.missing == ()


def test_declared_requests_go_in_order_each_once() -> None:
    window = SubmitWindow(ORIGIN, NOTES)
    assert window.declares
    out_of_order = judge("POST", "/notes/7/publish", window)
    assert out_of_order.reason is RefusalReason.OUT_OF_ORDER and out_of_order.rule == NOTES[1]
    assert out_of_order.reason.breaks_submit
    assert judge("POST", "/notes", window).step == 0
    window = window.advanced("POST", ORIGIN + "/notes")
    assert window.missing == (NOTES[1],)
    assert judge("POST", "/notes", window).reason is RefusalReason.SECOND
    assert judge("POST", "/notes/7/publish", window).step == 1
    assert judge("POST", "/notes/7/publish/now", window).reason is RefusalReason.UNDECLARED
    assert judge("POST", "/notes//publish", window).reason is RefusalReason.UNDECLARED
    window = window.advanced("POST", ORIGIN + "/notes/7/publish")
    assert judge("POST", "/notes/7/publish", window).reason is RefusalReason.SECOND
    # Each declared request at most once: another note's publish is no repeat.
    assert judge("POST", "/notes/8/publish", window).reason is RefusalReason.UNDECLARED
    assert judge("DELETE", "/notes/7", window).reason is RefusalReason.UNDECLARED
    assert window.missing == ()


def test_inside_a_perform_other_origins_are_refused_unless_allowed() -> None:
    window = SubmitWindow(ORIGIN, allow_origins=frozenset({"https://pay.example"}))
    refused = judge("POST", "https://evil.example/x", window)
    assert refused.reason is RefusalReason.OTHER_ORIGIN and not refused.reason.breaks_submit
    allowed = judge("POST", "https://pay.example/x", window)
    assert allowed.action is ALLOW and allowed.outcome == "allowed: other origin"
    # An allowed other origin is no allowlist outside the perform.
    assert judge("POST", "https://pay.example/x").reason is RefusalReason.OUTSIDE_EFFECT


def test_a_declared_request_may_name_another_origin() -> None:
    window = SubmitWindow(
        ORIGIN, (RequestPattern("POST", "/charge", origin="https://pay.example"),)
    )
    assert judge("POST", "https://pay.example/charge", window).action is SEND
    assert judge("POST", "/charge", window).reason is RefusalReason.UNDECLARED


def test_a_beacon_is_never_the_submit_and_passes_only_by_its_opt_in() -> None:
    window = SubmitWindow(ORIGIN)
    beacon = judge("POST", "/analytics", window, beacon=True)
    assert beacon.reason is RefusalReason.UNDECLARED  # the submit is still to come
    assert judge("POST", "/compose", window).action is SEND
    opt_in = (RequestPattern("POST", "/analytics", origin=ORIGIN, beacon=True),)
    assert judge("POST", "/analytics", window, opt_in, beacon=True).action is ALLOW
    assert judge("POST", "/analytics", None, opt_in, beacon=True).action is ALLOW
    # The opt-in is for beacons: a fetch() to the same path is still refused.
    assert judge("POST", "/analytics", None, opt_in).reason is RefusalReason.OUTSIDE_EFFECT
    with pytest.raises(UsageError):
        SubmitWindow(ORIGIN, (RequestPattern("POST", "/analytics", beacon=True),))


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8765.evil.net/compose",
        "http://127.0.0.1:87650/compose",
        "http://127.0.0.1:80001/compose",
        "https://127.0.0.1:8765/compose",
        "http://127.0.0.1/compose",
        "http://localhost:8765/compose",
        "http://127.0.0.1:8765@evil.net/compose",
    ],
)
def test_an_origin_that_merely_starts_like_the_sessions_is_another(url: str) -> None:
    window = SubmitWindow(ORIGIN)
    decision = judge("POST", url, window)
    assert decision.action is REFUSE and decision.reason is RefusalReason.OTHER_ORIGIN


def test_a_host_that_starts_with_the_sessions_host_is_another_origin() -> None:
    window = SubmitWindow("https://shop.example")
    assert judge("POST", "https://shop.example/buy", window).action is SEND
    for url in ("https://shop.example.evil.net/buy", "https://shop.examplex/buy"):
        assert judge("POST", url, window).reason is RefusalReason.OTHER_ORIGIN
    # A port that is no port never takes the origin of a valid one.
    assert origin_of("http://127.0.0.1:80001/x") != origin_of("http://127.0.0.1/x")
    assert origin_of("http://127.0.0.1:80001/x") != origin_of("http://127.0.0.1:8000/x")
    assert origin_of("HTTP://Shop.Example:443/x") == "http://shop.example:443"
    assert origin_of("https://shop.example:443/x") == "https://shop.example"


def test_records_hold_origin_and_path_only() -> None:
    url = "http://ana:pw@127.0.0.1:8765/reset/confirm?token=s3cr3t#top"
    assert bare_url(url) == "http://127.0.0.1:8765/reset/confirm"


@pytest.mark.parametrize(
    "args",
    [("GET", "/x"), ("post it", "/x"), ("POST", "x"), ("POST", "/a*/b"), ("POST", "/x?q=1")],
)
def test_a_pattern_refuses_what_is_no_pattern(args: tuple[str, str]) -> None:
    with pytest.raises(UsageError):
        RequestPattern(*args)
    with pytest.raises(UsageError):
        RequestPattern("POST", "/x", origin="ftp://host")
