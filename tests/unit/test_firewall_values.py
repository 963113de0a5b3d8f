"""The write firewall's values, whole (issue 23, item 2).

``test_firewall_rule.py`` states which action each request gets; this file
states the values around it whole: the decision with its step and rule, what
wire evidence says of it, a pattern as written back and as matched, an
origin and a bare URL at their edges, and a refused request as recorded.
"""

from __future__ import annotations

from actonce._rules.firewall import (
    ANY_REQUEST,
    SAFE_METHODS,
    RefusalReason,
    RequestPattern,
    SubmitWindow,
    WireAction,
    WireDecision,
    WriteRefusal,
    bare_url,
    judge_request,
    origin_of,
)

ORIGIN = "https://shop.example"
NOTES = (RequestPattern("POST", "/notes"), RequestPattern("PUT", "/notes/{id}"))


def test_each_decision_is_whole_with_its_step_and_rule() -> None:
    window = SubmitWindow(ORIGIN, NOTES, allow_origins=frozenset({"https://pay.example"}))
    login = RequestPattern("POST", "/login", origin=ORIGIN)
    cases = [
        (("get", ORIGIN + "/notes"), None, WireDecision(WireAction.PASS)),
        (("post", "HTTPS://shop.example/notes"), window,
         WireDecision(WireAction.SEND, None, 0, NOTES[0])),
        (("POST", ORIGIN + "/login"), window, WireDecision(WireAction.ALLOW, None, None, login)),
        (("POST", ORIGIN + "/login"), None, WireDecision(WireAction.ALLOW, None, None, login)),
        (("PUT", ORIGIN + "/notes/3"), window,
         WireDecision(WireAction.REFUSE, RefusalReason.OUT_OF_ORDER, None, NOTES[1])),
        (("POST", "https://pay.example/charge"), window, WireDecision(WireAction.ALLOW)),
        (("POST", "https://evil.example/x"), window,
         WireDecision(WireAction.REFUSE, RefusalReason.OTHER_ORIGIN)),
        (("DELETE", ORIGIN + "/notes"), window,
         WireDecision(WireAction.REFUSE, RefusalReason.UNDECLARED)),
        (("POST", ORIGIN + "/notes"), None,
         WireDecision(WireAction.REFUSE, RefusalReason.OUTSIDE_EFFECT)),
    ]  # fmt: skip
    for (method, url), win, expected in cases:
        assert judge_request(method, url, window=win, allow=(login,)) == expected, (method, url)
    sent = window.advanced("post", ORIGIN + "/notes?draft=1#x")
    assert sent.sent == ("POST https://shop.example/notes",)
    assert judge_request("POST", ORIGIN + "/notes", window=sent) == WireDecision(
        WireAction.REFUSE, RefusalReason.SECOND
    )
    assert judge_request("PUT", ORIGIN + "/notes/3", window=sent) == WireDecision(
        WireAction.SEND, None, 1, NOTES[1]
    )
    # A window whose declared requests are all sent sends nothing more.
    done = sent.advanced("PUT", ORIGIN + "/notes/3")
    assert done.missing == () and sent.missing == (NOTES[1],) and window.missing == NOTES
    assert judge_request("PUT", ORIGIN + "/notes/4", window=done) == WireDecision(
        WireAction.REFUSE, RefusalReason.UNDECLARED
    )


def test_what_wire_evidence_says_of_each_decision() -> None:
    assert [WireDecision(WireAction.REFUSE, r).outcome for r in RefusalReason] == [
        "refused: outside an effect",
        "refused: undeclared request",
        "refused: out of order",
        "refused: second mutating request",
        "refused: other origin",
    ]
    assert [r.text for r in RefusalReason] == [
        "outside an effect", "undeclared request", "out of order", "second mutating request",
        "other origin",
    ]  # fmt: skip
    assert [r.breaks_submit for r in RefusalReason] == [False, True, True, False, False]
    assert WireDecision(WireAction.ALLOW, rule=ANY_REQUEST).outcome == "allowed: allowlist"
    assert WireDecision(WireAction.ALLOW).outcome == "allowed: other origin"
    assert WireDecision(WireAction.SEND, step=0, rule=ANY_REQUEST).outcome is None
    assert WireDecision(WireAction.PASS).outcome is None
    assert {"GET", "HEAD", "OPTIONS"} == SAFE_METHODS


def test_a_pattern_is_normalised_and_written_back() -> None:
    p = RequestPattern(" post ", "/notes/{id}/*", origin="HTTPS://u:pw@Pay.Example:443/x")
    assert p == RequestPattern("POST", "/notes/{id}/*", "https://pay.example", False)
    assert p.describe() == "POST https://pay.example/notes/{id}/*"
    assert RequestPattern("*", "*") == ANY_REQUEST and ANY_REQUEST.describe() == "* *"
    assert RequestPattern.ANY is ANY_REQUEST
    assert RequestPattern("put", "/x", beacon=True).describe() == "PUT /x (beacon)"
    assert RequestPattern("M" * 32, "/x").method == "M" * 32  # the longest method: fine


def test_a_pattern_matches_method_origin_and_the_whole_path() -> None:
    p = RequestPattern("POST", "/notes/{id}/*", origin="https://pay.example")
    assert p.matches("post", "https://pay.example/notes/7/a/b")
    assert p.matches("POST", "https://pay.example/notes/7/")
    assert not p.matches("POST", "https://pay.example/notes//x")  # a segment is not empty
    assert not p.matches("POST", "https://pay.example/notes/7")
    assert not p.matches("PUT", "https://pay.example/notes/7/a")
    assert not p.matches("POST", "https://pay.example/notes/7/a", beacon=True)
    # A path pattern is matched literally: its dots are dots.
    dotted = RequestPattern("POST", "/a.b")
    assert dotted.matches("POST", ORIGIN + "/a.b", origin=ORIGIN)
    assert not dotted.matches("POST", ORIGIN + "/axb", origin=ORIGIN)
    # No path is the root; "*" is any path; no origin of its own: the one given.
    root = RequestPattern("POST", "/")
    assert root.matches("POST", ORIGIN, origin=ORIGIN)
    assert not root.matches("POST", ORIGIN, origin="https://other.example")
    assert not root.matches("POST", ORIGIN)
    assert ANY_REQUEST.matches("DELETE", ORIGIN + "/a/b", origin=ORIGIN)
    tail = RequestPattern("POST", "/api/*")
    assert tail.matches("POST", ORIGIN + "/api/", origin=ORIGIN)
    assert tail.matches("POST", ORIGIN + "/api/x/y", origin=ORIGIN)
    assert not tail.matches("POST", ORIGIN + "/apix", origin=ORIGIN)


def test_origins_and_bare_urls_at_their_edges() -> None:
    assert origin_of("http://[::1]:8080/x") == "http://[::1]:8080"
    assert origin_of("https://[::1]:443/x") == "https://[::1]"
    assert origin_of("http://h.example:80/x") == "http://h.example"
    assert origin_of("HTTPS://u:p@H.EX:8443/p?q#f") == "https://h.ex:8443"
    assert origin_of("http://h.example:99999/x") == "http://h.example:99999"
    assert origin_of("http://u:p@h.example:99999/x") == "http://h.example:99999"
    long = bare_url("https://h.ex/" + "a" * 3000)
    assert len(long) == 2000 and long.startswith("https://h.ex/aaa")
    assert bare_url("https://h.ex/" + "a" * 1987) == "https://h.ex/" + "a" * 1987  # 2000: whole
    assert bare_url("https://h.ex") == "https://h.ex"


def test_a_refused_request_is_recorded_without_its_query_or_credentials() -> None:
    w = WriteRefusal("bot", "post", "https://u:p@h.ex/a?token=s#c", RefusalReason.SECOND,
                     page="https://h.ex/page?x=1", effect_key="k")  # fmt: skip
    assert w == WriteRefusal("bot", "POST", "https://h.ex/a", RefusalReason.SECOND,
                             "https://h.ex/page", "k", "playwright", 0.0, None)  # fmt: skip
    assert type(w.reason) is RefusalReason
    assert w.describe() == "POST https://h.ex/a (second mutating request)"
    # Text that is no URL is kept as given; a reason may be given by its value.
    rel = WriteRefusal("bot", "DELETE", "/rel", "undeclared", page="", via="cdp")  # type: ignore[arg-type]
    assert rel == WriteRefusal("bot", "DELETE", "/rel", RefusalReason.UNDECLARED, "", None, "cdp")
    assert rel.describe() == "DELETE /rel (undeclared request)"
    assert WriteRefusal("b" * 200, "PATCH", "/x", RefusalReason.OTHER_ORIGIN).actor == "b" * 200
    assert WriteRefusal("bot", "PUT", "/x", RefusalReason.OTHER_ORIGIN, via="v" * 40).via == (
        "v" * 40
    )
