"""What the browser adapter decides without a page, pinned whole (issue 23, item 2).

Text normalisation, declared requests, the error words, the screens, thread
parts, a session's origin and timeouts, the sandbox effects' payloads,
read-backs and matching rules, reconcile's listing rules, evidence names:
every value and message, every branch. None of it needs Chromium (a
session is given a stand-in page that only takes its default timeouts);
what the page does is pinned by the Chromium tests beside this file.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError
from stub_site import StubSite

from actonce import (
    Absent,
    Confirmed,
    EffectRecord,
    HardStop,
    Policy,
    RequestPattern,
    Status,
    Unavailable,
    UsageError,
)
from actonce import NotPerformed as CoreNotPerformed
from actonce.browser import (
    AsyncEffect,
    BrowserError,
    InvoiceEffect,
    Media,
    NoteEffect,
    NotPerformed,
    OutcomeUnknown,
    PageUnavailable,
    PostEffect,
    RateLimited,
    ReadBackMismatch,
    Screens,
    StoppedAfterClick,
    StoppedBeforeClick,
    ThreadPart,
    ToggleEffect,
    declared_requests,
    follow,
    like,
    next_thread_part,
    normalize,
    normalize_text,
)
from actonce.browser._capture import evidence_name
from actonce.browser._effect import _reason
from actonce.browser._effects import _path
from actonce.browser._errors import first_line
from actonce.browser._listing import _judged, _Read, _settled, _why
from actonce.browser._screens import CONFIGURE, RATE_LIMIT
from actonce.browser._session import AsyncBrowserSession, _checked_origin
from actonce.browser._site import request_pattern

ORIGIN = "http://127.0.0.1:8765"


class _Page:
    """What a session asks of its Playwright page when made (and where it is)."""

    def __init__(self, url: str = "about:blank") -> None:
        self.url = url
        self.timeouts: dict[str, float] = {}

    def set_default_timeout(self, ms: float) -> None:
        self.timeouts["action"] = ms

    def set_default_navigation_timeout(self, ms: float) -> None:
        self.timeouts["navigation"] = ms


def _session(url: str = "about:blank", **kwargs: Any) -> AsyncBrowserSession:
    kwargs.setdefault("origin", ORIGIN)
    kwargs.setdefault("username", "ana")
    return AsyncBrowserSession(_Page(url), **kwargs)  # type: ignore[arg-type]


# --- text and declared requests -----------------------------------------------------------


def test_text_is_nfc_with_newlines_and_trimmed_only_at_its_ends() -> None:
    assert normalize_text("  Cafe\u0301\r\nline\rthree  \n") == "Caf\u00e9\nline\nthree"
    assert normalize_text("a  b\t c") == "a  b\t c", "inner whitespace is a part of the payload"
    assert normalize({"a": None, "b": " x\r\n", "n": 3, "t": True}) == {
        "a": "",
        "b": "x",
        "n": 3,
        "t": True,
    }


def test_a_declared_request_is_method_and_path() -> None:
    pattern = RequestPattern("POST", "/notes")
    assert request_pattern(pattern) is pattern
    assert request_pattern("POST /notes/{id}/publish") == RequestPattern(
        "POST", "/notes/{id}/publish"
    )
    assert request_pattern("  put   /x ") == RequestPattern("PUT", "/x")
    for bad in ("POST", "POST /a /b", "", 7):
        with pytest.raises(UsageError) as caught:
            request_pattern(bad)  # type: ignore[arg-type]
        assert str(caught.value) == (
            f"a declared request is 'METHOD /path' or a RequestPattern, not {bad!r}"
        )
    assert declared_requests(()) == ()
    assert declared_requests(["POST /a", pattern]) == (RequestPattern("POST", "/a"), pattern)


class _Minimal(StubSite):  # kind, requests and the hooks left as SiteEffect has them
    pass


async def test_a_site_effects_defaults() -> None:
    site, session = _Minimal(), _session()
    assert (site.kind, tuple(site.requests)) == ("effect", ())
    assert await site.precondition(session) is True
    assert await site.read_back(session) == {} and site.expected() == {}
    assert await site.confirm(session) is None
    assert await site.verify_here(session) is None
    assert site.listing() is None
    why = "^_Minimal declares listing\\(\\) but not read_listing\\(\\) and judge\\(\\)$"
    with pytest.raises(UsageError, match=why):
        await site.read_listing(session)
    with pytest.raises(UsageError, match=why):
        site.judge(session, [])


# --- errors and screens --------------------------------------------------------------------


def test_the_errors_words_and_kinds() -> None:
    assert first_line(ValueError("first\nsecond")) == "ValueError: first"
    assert first_line(ValueError("")) == "ValueError: "
    assert first_line(ValueError("  padded  \n")) == "ValueError: padded"
    assert first_line(ValueError("x" * 400)) == ("ValueError: " + "x" * 400)[:300]
    mismatch = ReadBackMismatch("text", "hi", "hi!")
    assert str(mismatch) == "read-back mismatch on 'text': expected 'hi', page holds 'hi!'"
    assert (mismatch.field, mismatch.expected, mismatch.actual) == ("text", "hi", "hi!")
    assert isinstance(mismatch, HardStop) and isinstance(mismatch, CoreNotPerformed)
    stopped = StoppedAfterClick("login wall is visible")
    assert stopped.reason == "login wall is visible" and str(stopped) == "login wall is visible"
    assert isinstance(stopped, OutcomeUnknown) and isinstance(stopped, HardStop)
    assert not isinstance(stopped, CoreNotPerformed)
    for before in (StoppedBeforeClick("x"), NotPerformed("x")):
        assert isinstance(before, CoreNotPerformed)
    assert isinstance(RateLimited("x"), HardStop) and not isinstance(RateLimited("x"), BrowserError)
    assert isinstance(PageUnavailable("x"), BrowserError)
    assert not isinstance(OutcomeUnknown("x"), CoreNotPerformed)


def test_the_default_screens_and_where_the_identity_is_read() -> None:
    screens = Screens()
    assert screens.whoami == '[data-testid="whoami"]' and screens.whoami_attribute is None
    assert screens.blocking == {
        "login wall": '[data-testid="login-form"], form:has(input[type="password"])',
        "CAPTCHA screen": (
            '[data-testid="captcha"], iframe[src*="captcha"], .g-recaptcha, .h-captcha'
        ),
        "rate-limit screen": '[data-testid="rate-limit"]',
        "restriction screen": '[data-testid="restricted"]',
    }
    assert RATE_LIMIT == "rate-limit screen"
    assert screens.describe_whoami() == "the textContent of '[data-testid=\"whoami\"]'"
    mine = Screens(
        whoami="#me",
        whoami_attribute="data-user",
        login="#l",
        captcha="#c",
        rate_limit="#r",
        restricted="#x",
    )
    assert mine.describe_whoami() == "the attribute 'data-user' of '#me'"
    assert list(mine.blocking.values()) == ["#l", "#c", "#r", "#x"]


def test_a_sessions_identity_problems_in_words() -> None:
    session = _session()
    assert session._identity_problem(1, "ana") is None
    assert session._identity_problem(0, None) == (
        "signed-in identity is not shown exactly once: 0 elements match "
        f"'[data-testid=\"whoami\"]' ({CONFIGURE})"
    )
    assert session._identity_problem(2, None).startswith(  # type: ignore[union-attr]
        "signed-in identity is not shown exactly once: 2 elements"
    )
    assert session._identity_problem(1, "bob") == (
        "signed in as 'bob', not 'ana' (read from the textContent of "
        f"'[data-testid=\"whoami\"]'; {CONFIGURE} if that is not where it shows the user)"
    )
    assert CONFIGURE == "configure Screens(whoami=..., whoami_attribute=...) for this site"


# --- threads ---------------------------------------------------------------------------------


def test_the_next_thread_part_replies_to_the_last_verified_one() -> None:
    parts = ["one", "two", "three"]
    assert next_thread_part(parts, []) == ThreadPart(0, "one", None)
    assert next_thread_part(parts, [], root_parent="/posts/1") == ThreadPart(0, "one", "/posts/1")
    assert next_thread_part(parts, ["/posts/5"], root_parent="/posts/1") == ThreadPart(
        1, "two", "/posts/5"
    )
    assert next_thread_part(parts, ["/posts/5", "/posts/6"]) == ThreadPart(2, "three", "/posts/6")
    assert next_thread_part(parts, ["/a", "/b", "/c"]) is None
    assert next_thread_part([], []) is None
    with pytest.raises(UsageError, match=r"^4 verified URLs for a thread of 3 parts$"):
        next_thread_part(parts, ["/a", "/b", "/c", "/d"])
    with pytest.raises(UsageError, match=r"^a verified part needs its canonical URL$"):
        next_thread_part(parts, ["/a", ""])


# --- a session without its page --------------------------------------------------------------


def test_a_sessions_origin_is_normalized_or_refused() -> None:
    assert _checked_origin("HTTP://Shop.Example:443/x?y") == "http://shop.example:443"
    assert _checked_origin("https://shop.example:443") == "https://shop.example"
    assert _checked_origin("http://127.0.0.1:8765/") == ORIGIN
    for bad in ("ftp://host", "http://", "localhost:8765", ""):
        with pytest.raises(UsageError) as caught:
            _checked_origin(bad)
        assert str(caught.value) == f"origin must be http(s)://host[:port], not {bad!r}"


def test_a_sessions_timeouts_and_other_origins() -> None:
    session = _session(timeout=2.5, confirm_timeout=4.0, allow_origins=["HTTPS://Pay.Example/x"])
    assert (session.timeout, session.confirm_timeout, session.perform_timeout) == (2.5, 4.0, 9.0)
    assert session.page.timeouts == {"action": 2500.0, "navigation": 2500.0}  # type: ignore[attr-defined]
    assert session.allow_origins == frozenset({"https://pay.example"})
    assert (session.origin, session.username, session.lease_ok) == (ORIGIN, "ana", None)
    assert _session().perform_timeout == 30.0, "2 x 10 s + 10 s by default"
    assert _session(perform_timeout=1.5).perform_timeout == 1.5
    with pytest.raises(UsageError, match=r"^a browser session needs the expected username$"):
        _session(username="")
    for bad in ({"timeout": 0}, {"confirm_timeout": -1}, {"perform_timeout": 0}):
        with pytest.raises(
            UsageError, match=r"^timeout, confirm_timeout and perform_timeout must be positive$"
        ):
            _session(**bad)
    with pytest.raises(UsageError):
        _session(allow_origins=["pay.example"])


def test_a_sessions_urls_stay_on_its_origin() -> None:
    session = _session()
    assert session.url("/posts/3?x=1") == ORIGIN + "/posts/3?x=1"
    assert session.url("posts/3") == ORIGIN + "/posts/3"
    assert session.url(ORIGIN + "/a") == ORIGIN + "/a"
    for away in ("https://evil.example/x", "//evil.example/x", "http://127.0.0.1:8766/"):
        with pytest.raises(HardStop) as caught:
            session.url(away)
        assert caught.value.reason.startswith("refusing to leave the expected origin for ")
    with pytest.raises(HardStop, match=r"for https://evil\.example$"):
        session.url("https://evil.example/x")


def test_evidence_goes_to_the_folder_given_or_a_new_one_under_the_root(tmp_path: Any) -> None:
    assert _session(evidence_dir=tmp_path / "here").evidence_dir == tmp_path / "here"
    made = _session(evidence_root=tmp_path / "root").evidence_dir
    assert made.parent == tmp_path / "root" and "ana" in made.name
    assert evidence_name(3, "post/after click!") == "003-post_after_click"
    assert evidence_name(12, "..") == "012-evidence"
    assert evidence_name(1, "._x_.") == "001-x"
    assert evidence_name(1000, "a" * 70) == "1000-" + "a" * 60


def test_a_sessions_effects_are_the_sandboxs() -> None:
    session = _session()
    post = session.post_effect("hi", parent="/posts/7")
    assert isinstance(post, AsyncEffect) and post.session is session
    assert (post.kind, post.payload) == (
        "post",
        {"author": "ana", "text": "hi", "media": None, "parent": "/posts/7"},
    )
    assert session.like_effect("/posts/7").payload == {"target": "/posts/7", "on": True}
    assert session.like_effect("/posts/7", liked=False).kind == "unlike"
    assert session.follow_effect("bob").payload == {"target": "bob", "on": True}
    assert session.follow_effect("bob", following=False).kind == "unfollow"
    invoice = session.invoice_effect("INV-1", 500)
    assert invoice.payload == {"account": "ana", "reference": "INV-1", "amount": 500}
    part = session.thread_effect(["one", "two"], [ORIGIN + "/posts/4"], root_parent="/posts/1")
    assert part is not None and part.payload["parent"] == "/posts/4"
    assert part.payload["text"] == "two"
    first = session.thread_effect(["one"], [], root_parent="/posts/1")
    assert first is not None and first.payload["parent"] == "/posts/1"
    assert session.thread_effect(["one"], ["/posts/4"]) is None


# --- the sandbox's effects -------------------------------------------------------------------


def test_a_path_is_the_urls_without_trailing_slash() -> None:
    assert _path("http://h/posts/7/?x=1#y") == "/posts/7"
    assert _path("/posts/7") == "/posts/7"
    assert _path("http://h") == "/" and _path("/") == "/" and _path("") == "/"


def test_media_is_an_image_or_a_video() -> None:
    assert Media("image", "cat.png").alt == ""
    with pytest.raises(UsageError, match=r"^media type must be 'image' or 'video'$"):
        Media("gif", "cat.gif")


def test_a_posts_payload_and_the_form_it_must_fill() -> None:
    with pytest.raises(UsageError, match=r"^a post needs text$"):
        PostEffect("ana", " \r\n ")
    plain = PostEffect("ana", "  Hello\r\nworld ")
    assert (plain.kind, plain.text, plain.parent, plain.media) == (
        "post",
        "Hello\nworld",
        None,
        None,
    )
    assert plain.payload() == {
        "author": "ana",
        "text": "Hello\nworld",
        "media": None,
        "parent": None,
    }
    assert plain.expected() == {
        "text": "Hello\nworld",
        "media_type": "",
        "media_name": "",
        "alt": "",
        "parent": "",
    }
    assert plain.listing() == "/search?author=ana"
    reply = PostEffect(
        "ana b", "hi", media=Media("video", "v.mp4", "a clip"), parent="http://h/posts/7/"
    )
    assert reply.parent == "/posts/7"
    assert reply.payload() == {
        "author": "ana b",
        "text": "hi",
        "media": {"type": "video", "name": "v.mp4", "alt": "a clip"},
        "parent": "/posts/7",
    }
    assert reply.expected() == {
        "text": "hi",
        "media_type": "video",
        "media_name": "v.mp4",
        "alt": "a clip",
        "parent": "/posts/7",
    }
    assert reply.listing() == "/search?author=ana+b"
    for parent in ("/posts/x", "/u/ana", "/posts/7/likes"):
        with pytest.raises(UsageError, match=r"^parent must be a post URL, not "):
            PostEffect("ana", "hi", parent=parent)


def _card(**changes: Any) -> dict[str, Any]:
    card = {
        "id": 4,
        "href": "/posts/4",
        "author": " ana ",
        "text": " hi\r\n",
        "media_count": 0,
        "media_type": "",
        "alt": "",
        "parent": "",
    }
    card.update(changes)
    return card


def test_a_post_matches_exactly_its_author_text_media_alt_and_parent() -> None:
    post = PostEffect("ana", "hi")
    assert post._matches([_card(id=9), _card(), _card(id=2, author="anab")]) == [4, 9]
    for change in (
        {"author": "bob"},
        {"text": "hi!"},
        {"media_count": 1},
        {"media_type": "image"},
        {"parent": "/posts/1"},
    ):
        assert post._matches([_card(**change)]) == [], change
    assert post._matches([_card(alt="ignored without media")]) == [4]
    image = PostEffect("ana", "hi", media=Media("image", "c.png", "A cat"))
    with_image = _card(media_count=1, media_type="image", alt=" A cat ")
    assert image._matches([with_image]) == [4]
    assert image._matches([{**with_image, "alt": "A dog"}]) == []
    assert image._matches([{**with_image, "media_count": 2}]) == []
    assert image._matches([{**with_image, "media_type": "video"}]) == []
    reply = PostEffect("ana", "hi", parent="/posts/1")
    assert reply._matches([_card(parent="http://h/posts/1/")]) == [4]
    assert reply._matches([_card()]) == []


def test_a_posts_judge_counts_every_match_on_the_sessions_origin() -> None:
    session, post = _session(), PostEffect("ana", "hi")
    assert post.judge(session, []) == Absent()
    verdict = post.judge(session, [_card(id=9), _card()])
    assert verdict == Confirmed(
        ORIGIN + "/posts/4", count=2, refs=(ORIGIN + "/posts/4", ORIGIN + "/posts/9")
    )


def test_likes_and_follows_are_toggles_to_a_state() -> None:
    liked = like("http://h/posts/7/")
    assert (liked.kind, liked.page_path, liked.test_id, liked.target) == (
        "like",
        "/posts/7",
        "like-7",
        "/posts/7",
    )
    assert (liked.on_label, liked.off_label, liked.want_on) == ("Unlike", "Like", True)
    assert liked.payload() == {"target": "/posts/7", "on": True}
    assert liked.expected() == {"state": "Like"}, "before a like the control offers to like"
    unliked = like("/posts/7", liked=False)
    assert (unliked.kind, unliked.want_on, unliked.expected()) == (
        "unlike",
        False,
        {"state": "Unlike"},
    )
    with pytest.raises(UsageError, match=r"^not a post URL: '/u/ana'$"):
        like("/u/ana")
    followed = follow("bob.b-1_x")
    assert (followed.kind, followed.page_path, followed.test_id, followed.target) == (
        "follow",
        "/u/bob.b-1_x",
        "follow-bob.b-1_x",
        "bob.b-1_x",
    )
    assert (followed.on_label, followed.off_label) == ("Following", "Follow")
    assert followed.expected() == {"state": "Follow"}
    unfollowed = follow("bob", following=False)
    assert (unfollowed.kind, unfollowed.expected(), unfollowed.payload()) == (
        "unfollow",
        {"state": "Following"},
        {"target": "bob", "on": False},
    )
    for bad in ("bob b", "", "bob/x", "bob\n"):
        with pytest.raises(UsageError, match=r"^not a user name: "):
            follow(bad)
    assert isinstance(liked, ToggleEffect)


def test_an_invoices_payload_form_and_rows() -> None:
    with pytest.raises(UsageError, match=r"^an invoice needs a reference and a non-negative"):
        InvoiceEffect("ana", "  ", 5)
    with pytest.raises(UsageError):
        InvoiceEffect("ana", "INV-1", -1)
    invoice = InvoiceEffect("ana", " INV-1 ", 0)
    assert (invoice.kind, invoice.reference) == ("invoice", "INV-1")
    assert invoice.payload() == {"account": "ana", "reference": "INV-1", "amount": 0}
    assert invoice.expected() == {"reference": "INV-1", "amount": "0"}
    assert invoice.listing() == "/invoices"
    session = _session()
    rows = [
        {"invoiceId": "12", "reference": "INV-1", "account": "ana"},
        {"invoiceId": "3", "reference": "INV-1", "account": "ana"},
        {"invoiceId": "4", "reference": "INV-1", "account": "bob"},
        {"invoiceId": "5", "reference": "INV-10", "account": "ana"},
    ]
    assert invoice.judge(session, rows) == Confirmed(
        ORIGIN + "/invoices/3", count=2, refs=(ORIGIN + "/invoices/3", ORIGIN + "/invoices/12")
    )
    assert invoice.judge(session, rows[2:]) == Absent(), "another account's reference is not ours"


async def test_the_page_a_click_left_is_read_only_when_it_is_the_new_object() -> None:
    post = PostEffect("ana", "hi")
    for url in (
        "about:blank",
        ORIGIN + "/compose",
        "http://127.0.0.1:8766/posts/4",
        ORIGIN + "/posts/4/likes",
    ):
        assert await post.verify_here(_session(url)) is None, url
    invoice = InvoiceEffect("ana", "INV-1", 5)
    for url in (ORIGIN + "/invoices/new", "https://evil.example/invoices/4"):
        assert await invoice.verify_here(_session(url)) is None, url


def test_a_notes_submit_is_two_declared_requests() -> None:
    note = NoteEffect("ana", " a\r\nnote ")
    assert (note.kind, tuple(note.requests)) == (
        "note",
        ("POST /notes", "POST /notes/{id}/publish"),
    )
    assert note.payload() == {"author": "ana", "text": "a\nnote"}
    assert note.expected() == {"text": " a\r\nnote "}, "compared after normalize"


# --- one effect bound to a session ---------------------------------------------------------


class _Verifying(_Minimal):
    """Verification that fails as told, or answers from the page the click left."""

    kind = "probe"

    def __init__(self, failure: BaseException | None = None, here: Any = None) -> None:
        self.failure, self.here, self.asked = failure, here, []

    async def verify_here(self, session: AsyncBrowserSession) -> Any:
        self.asked.append("here")
        return self.here

    async def verify(self, session: AsyncBrowserSession) -> Any:
        self.asked.append("verify")
        if self.failure is not None:
            raise self.failure
        return Absent()


def test_a_bound_effect_before_its_perform() -> None:
    effect = _session().effect(_Verifying())
    assert (effect.kind, effect.payload, effect.effect_key) == ("probe", {"n": 1}, None)
    assert effect.details() == {"wire": [], "sent": 0, "refused": 0} and effect.wire == []
    assert str(effect._overrun()) == (
        "probe: the perform exceeded perform_timeout=30s before the click; nothing was clicked"
    )
    assert isinstance(effect._overrun(), NotPerformed)
    effect._clicked = True
    assert str(effect._overrun()) == (
        "probe: the perform exceeded perform_timeout=30s after the click; whether it took "
        "effect is unknown"
    )
    assert isinstance(effect._overrun(), OutcomeUnknown)
    assert "perform_timeout=1.5s" in str(
        _session(perform_timeout=1.5).effect(_Minimal())._overrun()
    )


@pytest.mark.parametrize(
    ("failure", "why"),
    [
        (RateLimited("rate-limit screen is visible"), "cannot check: rate-limit screen is visible"),
        (HardStop("login wall is visible"), "cannot check: login wall is visible"),
        (PageUnavailable("could not load /x"), "cannot check: could not load /x"),
        (PlaywrightError("Timeout 10ms\nCall log"), "cannot check: Error: Timeout 10ms"),
        (BrowserError(""), "cannot check: BrowserError"),
    ],
)
async def test_a_failed_verification_is_unavailable_in_words(
    failure: BaseException, why: str
) -> None:
    assert await _session().effect(_Verifying(failure)).verify() == Unavailable(why)


async def test_an_untrusted_page_stops_the_verification_the_ledger_asks_for() -> None:
    with pytest.raises(HardStop, match="login wall"):
        await _session().effect(_Verifying(HardStop("login wall"))).verify(stops=True)
    rate = _session().effect(_Verifying(RateLimited("rate-limit screen")))
    assert await rate.verify(stops=True) == Unavailable("cannot check: rate-limit screen")
    with pytest.raises(ValueError, match="a bug"):
        await _session().effect(_Verifying(ValueError("a bug"))).verify()


async def test_the_first_look_after_a_perform_may_read_the_page_it_left() -> None:
    site = _Verifying(here=Confirmed(ORIGIN + "/x"))
    effect = _session().effect(site)
    assert await effect.verify() == Absent() and site.asked == ["verify"]
    effect._here = True
    assert await effect.verify() == Confirmed(ORIGIN + "/x")
    assert await effect.verify() == Absent(), "only the first look after the perform"
    assert site.asked == ["verify", "here", "verify"]
    unsure = _Verifying(here=None)
    effect = _session().effect(unsure)
    effect._here = True
    assert await effect.verify() == Absent() and unsure.asked == ["here", "verify"]
    effect._doubt = "refused PUT /x (undeclared request)"
    assert await effect.verify() == Unavailable(
        "cannot confirm: the submit is incomplete: refused PUT /x (undeclared request)"
    )


def test_a_reason_is_the_errors_first_line_or_its_name() -> None:
    assert _reason(PlaywrightError("net::ERR_ABORTED\nmore")) == "Error: net::ERR_ABORTED"
    assert _reason(TimeoutError()) == "TimeoutError"
    assert _reason(ValueError("bad\nvalue")) == "bad\nvalue"


# --- reconcile's listings ------------------------------------------------------------------


def test_why_a_listing_could_not_be_read() -> None:
    assert _why(HardStop("login wall is visible")) == "login wall is visible"
    assert _why(PlaywrightError("Timeout\nlog")) == "Error: Timeout"
    assert _why(PageUnavailable("")) == "PageUnavailable"
    assert _why(PageUnavailable("3 lists")) == "3 lists"


class _Judging(_Minimal):
    kind = "row"

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def judge(self, session: AsyncBrowserSession, rows: Any) -> Any:
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def test_a_listings_rows_are_judged_or_unavailable_in_words() -> None:
    session = _session()
    read = _Read(["row"], None, 5.0, True)
    assert _judged(session, _Judging(Absent()), read) == Absent()
    assert _judged(session, _Judging(Unavailable("x")), read) == Unavailable("x")
    failed = _Read(None, "/invoices: login wall is visible", 5.0, True)
    assert _judged(session, _Judging(Absent()), failed) == Unavailable(
        "cannot check: the shared listing /invoices: login wall is visible"
    )
    for error in (
        KeyError("id"),
        TypeError("t"),
        ValueError("v"),
        HardStop("h"),
        PageUnavailable("p"),
    ):
        verdict = _judged(session, _Judging(error), read)
        assert verdict == Unavailable(f"cannot check: row cannot judge the listing: {_why(error)}")
    assert _judged(session, _Judging("yes"), read) == Unavailable(
        "cannot check: judge returned str, not a verdict"
    )
    with pytest.raises(RuntimeError):
        _judged(session, _Judging(RuntimeError("a bug")), read)


def _record(executing_at: float | None, lease_expires_at: float = 0.0) -> EffectRecord:
    return EffectRecord(
        key="k",
        kind="row",
        status=Status.UNKNOWN,
        fence=1,
        owner="",
        lease_expires_at=lease_expires_at,
        payload="{}",
        payload_hash="h",
        executing_at=executing_at,
    )


def test_an_absence_counts_only_when_read_past_the_settle_window() -> None:
    policy = Policy(settle_seconds=10.0)
    assert _settled(_record(None), policy, _Read([], None, 0.0, False)), "never performed"
    assert _settled(_record(100.0), policy, _Read([], None, 110.0, True))
    assert not _settled(_record(100.0), policy, _Read([], None, 109.9, True))
    assert not _settled(_record(100.0), policy, _Read([], None, 500.0, False)), "untrusted clock"
    assert not _settled(_record(100.0, 105.0), policy, _Read([], None, 114.0, True)), (
        "the window runs from the later of the mark and the lease's end"
    )
    assert _settled(_record(105.0, 100.0), policy, _Read([], None, 115.0, True))


async def test_effects_without_a_listing_are_verified_one_by_one_in_order() -> None:
    from actonce.browser import verify_many

    session = _session()
    sites = [
        _Verifying(),
        _Verifying(RateLimited("rate-limit screen is visible")),
        _Verifying(here=Confirmed(ORIGIN + "/x")),
    ]
    assert await verify_many(session, sites) == [
        Absent(),
        Unavailable("cannot check: rate-limit screen is visible"),
        Absent(),
    ], "each its own verify (never the page a click left)"
    assert [s.asked for s in sites] == [["verify"], ["verify"], ["verify"]]
    assert await session.verify_many([]) == []
