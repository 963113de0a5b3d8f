"""The network guard and the write firewall, route by route, without Chromium (issue 23).

``NetworkGuard`` and ``AsyncFirewall`` decide what each intercepted request
becomes: fallen back to the network, fetched once and fulfilled, aborted
with one of Chromium's error codes, answered with the firewall's 403 page.
Those decisions and what they record are pinned here against stand-ins for
Playwright's ``Route``/``Request``/``Page``/``BrowserContext`` (they only
record what they are told): every branch, the exact abort code, the exact
record. That the browser really obeys them is pinned with Chromium in
``test_wire.py`` and ``test_firewall.py``.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError

from actonce import (
    ActOnceError,
    AsyncLedger,
    RefusalReason,
    RequestPattern,
    UsageError,
    WriteRefusal,
    open_ledger,
)
from actonce.browser import FirewallWarning, firewall, refusal_page
from actonce.browser._firewall import AsyncFirewall, _checked_allow, _frame_url, recorder_of
from actonce.browser._wire import (
    INCOMPLETE,
    NO_RESPONSE,
    RESET,
    TIMED_OUT,
    NetworkGuard,
    WireRecord,
    _failure,
)
from actonce.testing import MemoryStore

ORIGIN = "http://127.0.0.1:8765"


class _Frame:
    def __init__(self, url: str | None) -> None:
        self._url = url

    @property
    def url(self) -> str:
        if self._url is None:
            raise PlaywrightError("a service worker's request has no frame")
        return self._url


class _Request:
    def __init__(
        self,
        method: str,
        url: str,
        *,
        kind: str = "fetch",
        frame: str | None = ORIGIN + "/compose?draft=1",
        navigation: bool = False,
    ) -> None:
        self.method, self.url, self.resource_type = method, url, kind
        self.frame = _Frame(frame)
        self._navigation = navigation

    def is_navigation_request(self) -> bool:
        return self._navigation


class _Response:
    def __init__(self, status: int) -> None:
        self.status = status


class _Route:
    """Records what the handler did with the request; ``fetch`` answers as told."""

    def __init__(self, request: _Request, answer: Any = 200, *, broken: bool = False) -> None:
        self.request = request
        self.answer = answer
        self.broken = broken  # fulfil/abort raise, as on a page already gone
        self.did: list[tuple[str, Any]] = []
        self.fetched: dict[str, Any] = {}

    async def fallback(self) -> None:
        self.did.append(("fallback", None))

    async def abort(self, code: str) -> None:
        self.did.append(("abort", code))
        if self.broken:
            raise PlaywrightError("Target page, context or browser has been closed")

    async def fulfill(self, **kwargs: Any) -> None:
        self.did.append(("fulfill", kwargs))
        if self.broken:
            raise PlaywrightError("Target page, context or browser has been closed")

    async def fetch(self, **kwargs: Any) -> Any:
        self.fetched = kwargs
        if isinstance(self.answer, BaseException):
            raise self.answer
        if isinstance(self.answer, asyncio.Future):
            return await self.answer
        return _Response(self.answer)


class _Routes:
    """A page's or context's route table, as far as the guard uses it."""

    def __init__(self) -> None:
        self.routes: list[tuple[str, str, Any]] = []
        self.listeners: list[tuple[str, str, Any]] = []
        self.service_workers: list[Any] = []

    async def route(self, pattern: str, handler: Any) -> None:
        self.routes.append(("route", pattern, handler))

    async def unroute(self, pattern: str, handler: Any) -> None:
        self.routes.append(("unroute", pattern, handler))

    def on(self, event: str, handler: Any) -> None:
        self.listeners.append(("on", event, handler))

    def remove_listener(self, event: str, handler: Any) -> None:
        self.listeners.append(("off", event, handler))


class _Page(_Routes):
    def __init__(self) -> None:
        super().__init__()
        self.context = _Routes()


def _guard(page: _Page | None = None, **kwargs: Any) -> NetworkGuard:
    now = time.monotonic()
    kwargs.setdefault("started", now)
    kwargs.setdefault("deadline", now + 1000.0)
    return NetworkGuard(page or _Page(), ORIGIN, **kwargs)  # type: ignore[arg-type]


async def _handle(guard: NetworkGuard, route: _Route) -> _Route:
    await guard._handle(route)  # type: ignore[arg-type]
    return route


# --- what a request that got no answer is called ------------------------------------------


@pytest.mark.parametrize(
    ("text", "outcome"),
    [
        ("apiRequestContext.fetch: socket hang up", NO_RESPONSE),
        ("read ECONNRESET", RESET),
        ("apiRequestContext.fetch: aborted", INCOMPLETE),
        ("request aborted", INCOMPLETE),
        ("the stream: aborted by peer", INCOMPLETE),
        ("Timeout 500ms exceeded.", TIMED_OUT),
        ("the request TIMED OUT", TIMED_OUT),
    ],
)
def test_a_request_without_an_answer_is_named_for_how_it_failed(text: str, outcome: str) -> None:
    assert _failure(PlaywrightError(text)) == outcome


def test_another_failure_keeps_its_first_line_without_query_or_prefix() -> None:
    exc = PlaywrightError(
        "apiRequestContext.fetch: getaddrinfo ENOTFOUND http://h.example/pay?token=s3cr3t#x now\n"
        "Call log: more"
    )
    assert _failure(exc) == "no response: getaddrinfo ENOTFOUND http://h.example/pay now"
    assert _failure(PlaywrightError("  \n ")) == "no response: Error"
    assert _failure(PlaywrightError("x" * 300)) == ("no response: " + "x" * 300)[:200]
    assert _failure(PlaywrightError("route.fetch: net::ERR_FAILED")) == (
        "no response: net::ERR_FAILED"
    )


def test_a_wire_record_is_json_rounded_to_a_tenth_of_a_millisecond() -> None:
    record = WireRecord("POST", ORIGIN + "/compose", 1.234567)
    assert record.to_json() == {
        "method": "POST",
        "url": ORIGIN + "/compose",
        "at": 1.2346,
        "outcome": None,
        "took": None,
    }
    record.outcome, record.took = 303, 0.000049
    assert record.to_json()["took"] == 0.0
    record.took = 2.71828
    assert record.to_json() == {
        "method": "POST",
        "url": ORIGIN + "/compose",
        "at": 1.2346,
        "outcome": 303,
        "took": 2.7183,
    }


# --- the guard ----------------------------------------------------------------------------


async def test_safe_methods_other_schemes_and_a_closed_guard_fall_back_unrecorded() -> None:
    guard = _guard()
    for request in (
        _Request("GET", ORIGIN + "/compose"),
        _Request("head", ORIGIN + "/compose"),
        _Request("OPTIONS", ORIGIN + "/compose"),
        _Request("POST", "data:text/plain,x"),
        _Request("POST", "blob:" + ORIGIN + "/1"),
    ):
        assert (await _handle(guard, _Route(request))).did == [("fallback", None)]
    assert guard.records == [] and guard.sent == 0 and guard.refused == 0
    await guard.close()
    route = await _handle(guard, _Route(_Request("POST", ORIGIN + "/compose")))
    assert route.did == [("fallback", None)] and guard.records == []


async def test_the_first_request_is_fetched_once_and_its_answer_handed_to_the_page() -> None:
    guard = _guard(started=time.monotonic() - 1000.0)  # a perform begun 1000 s ago
    assert not guard.window.declares
    route = await _handle(guard, _Route(_Request("post", ORIGIN + "/compose?x=1#f"), 303))
    assert route.fetched["max_redirects"] == 0 and route.fetched["max_retries"] == 0
    assert 900_000 < route.fetched["timeout"] <= 1_000_000, "the time left until the deadline"
    [(what, kwargs)] = route.did
    assert what == "fulfill" and kwargs["response"].status == 303
    [record] = guard.records
    assert (record.method, record.url, record.outcome) == ("POST", ORIGIN + "/compose", 303)
    assert 999.0 < record.at < 1100.0, "seconds since the perform started"
    assert record.took is not None and 0 <= record.took < 100.0, "from the request to its answer"
    assert (guard.sent, guard.refused) == (1, 0)
    assert guard.seen.is_set() and guard.settled.is_set()
    assert not guard.failed.is_set() and not guard.broken.is_set()
    assert guard.failure is None and not guard.in_flight and guard.incomplete() is None
    assert guard.details() == {"wire": [record.to_json()], "sent": 1, "refused": 0}


async def test_a_deadline_already_passed_still_gives_the_fetch_a_bound() -> None:
    now = time.monotonic()
    guard = _guard(started=now - 5, deadline=now - 1)
    route = await _handle(guard, _Route(_Request("POST", ORIGIN + "/compose")))
    assert route.fetched["timeout"] == 1.0, "0 would mean no timeout at all"


async def test_a_repeat_is_refused_never_sent_and_does_not_break_the_submit() -> None:
    page = _Page()
    seen: list[tuple[str, RefusalReason, str]] = []
    guard = _guard(page, on_refused=lambda r, reason, at: seen.append((r.url, reason, at)))
    await _handle(guard, _Route(_Request("POST", ORIGIN + "/compose")))
    again = await _handle(guard, _Route(_Request("POST", ORIGIN + "/compose"), 500))
    assert again.did == [("abort", "blockedbyclient")] and again.fetched == {}
    assert not guard.failed.is_set(), "a refusal is no sent request without an answer"
    assert guard.records[1].outcome == "refused: second mutating request"
    assert guard.records[1].took is not None
    assert (guard.sent, guard.refused) == (1, 1)
    assert not guard.broken.is_set() and guard.incomplete() is None
    assert seen == [(ORIGIN + "/compose", RefusalReason.SECOND, ORIGIN + "/compose")]


async def test_an_undeclared_request_breaks_the_submit_and_is_named() -> None:
    guard = _guard(
        declared=(RequestPattern("POST", "/notes"), RequestPattern("POST", "/notes/{id}/publish"))
    )
    assert guard.window.declares
    first = await _handle(guard, _Route(_Request("POST", ORIGIN + "/notes"), 201))
    assert first.did[0][0] == "fulfill"
    assert guard.seen.is_set() is False, "one declared request is still to come"
    assert guard.settled.is_set() is False
    other = await _handle(guard, _Route(_Request("DELETE", ORIGIN + "/notes/4?x=1")))
    assert other.did == [("abort", "blockedbyclient")]
    assert guard.broken.is_set()
    assert guard.records[1].outcome == "refused: undeclared request"
    assert guard.incomplete() == (
        f"refused DELETE {ORIGIN}/notes/4 (undeclared request); "
        "never sent: POST /notes/{id}/publish"
    )


async def test_a_declared_request_out_of_order_is_refused_and_named() -> None:
    guard = _guard(
        declared=(RequestPattern("POST", "/notes"), RequestPattern("POST", "/notes/{id}/publish"))
    )
    route = await _handle(guard, _Route(_Request("POST", ORIGIN + "/notes/3/publish")))
    assert route.did == [("abort", "blockedbyclient")]
    assert guard.records[0].outcome == "refused: out of order"
    assert guard.incomplete() == (
        f"refused POST {ORIGIN}/notes/3/publish (out of order); "
        "never sent: POST /notes, POST /notes/{id}/publish"
    )


async def test_declared_requests_never_sent_are_no_doubt_before_anything_left() -> None:
    guard = _guard(declared=(RequestPattern("POST", "/notes"),))
    assert guard.incomplete() is None, "nothing sent, nothing refused: no partial submit"
    assert _guard(declared=()).window.declares is False, "() is the default: one request"


async def test_a_beacon_refused_never_breaks_the_submit() -> None:
    guard = _guard()
    route = await _handle(guard, _Route(_Request("POST", ORIGIN + "/analytics", kind="ping")))
    assert route.did == [("abort", "blockedbyclient")]
    assert guard.records[0].outcome == "refused: undeclared request"
    assert not guard.broken.is_set() and guard.incomplete() is None
    assert guard.refused == 1 and guard.sent == 0


async def test_another_origin_is_refused_or_passed_on_untouched_when_allowed() -> None:
    passed: list[Any] = []
    guard = _guard(allow_origins=frozenset({"https://pay.example"}), on_allowed=passed.append)
    evil = await _handle(guard, _Route(_Request("POST", "https://evil.example/x")))
    assert evil.did == [("abort", "blockedbyclient")]
    assert guard.records[0].outcome == "refused: other origin" and not guard.broken.is_set()
    request = _Request("POST", "https://pay.example/charge")
    pay = await _handle(guard, _Route(request))
    assert pay.did == [("fallback", None)] and pay.fetched == {}
    assert (guard.records[1].outcome, guard.records[1].took) == ("allowed: other origin", 0.0)
    assert passed == [request]
    # The context's route sees the request the page's route passed on: untouched, unrecorded.
    again = await _handle(guard, _Route(request))
    assert again.did == [("fallback", None)] and len(guard.records) == 2
    assert (guard.sent, guard.refused) == (0, 1)


async def test_an_allowlisted_request_passes_even_inside_a_perform() -> None:
    login = RequestPattern("POST", "/login", origin=ORIGIN)
    guard = _guard(allow=(login,), declared=(RequestPattern("POST", "/compose"),))
    route = await _handle(guard, _Route(_Request("POST", ORIGIN + "/login")))
    assert route.did == [("fallback", None)]
    assert guard.records[0].outcome == "allowed: allowlist"
    assert guard.sent == 0 and not guard.seen.is_set(), "the submit is still to come"


@pytest.mark.parametrize(
    ("text", "code", "outcome"),
    [
        ("socket hang up", "connectionclosed", NO_RESPONSE),
        ("aborted", "connectionclosed", INCOMPLETE),
        ("ECONNRESET", "connectionreset", RESET),
        ("Timeout 30000ms exceeded", "timedout", TIMED_OUT),
        ("getaddrinfo ENOTFOUND", "failed", "no response: getaddrinfo ENOTFOUND"),
    ],
)
async def test_a_sent_request_without_an_answer_fails_the_page_with_its_code(
    text: str, code: str, outcome: str
) -> None:
    guard = _guard()
    route = await _handle(
        guard, _Route(_Request("POST", ORIGIN + "/compose"), PlaywrightError(text))
    )
    assert route.did == [("abort", code)]
    assert guard.records[0].outcome == outcome and guard.failure == outcome
    assert guard.failed.is_set() and guard.settled.is_set() and guard.seen.is_set()
    assert (guard.sent, guard.refused) == (1, 0)


async def test_a_page_gone_before_the_answer_is_handed_over_is_no_error() -> None:
    guard = _guard()
    route = _Route(_Request("POST", ORIGIN + "/compose"), 201, broken=True)
    await _handle(guard, route)
    assert guard.records[0].outcome == 201
    refused = _Route(_Request("POST", ORIGIN + "/compose"), broken=True)
    await _handle(guard, refused)
    assert refused.did == [("abort", "blockedbyclient")] and guard.refused == 1


async def test_closing_the_window_times_out_the_request_in_flight() -> None:
    page = _Page()
    guard = _guard(page)
    assert not guard.active
    await guard.open()
    assert guard.active
    handler = guard._handler
    assert page.routes == [("route", "**/*", handler)]
    assert page.context.routes == [("route", "**/*", handler)]
    never: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    route = _Route(_Request("POST", ORIGIN + "/compose"), never)
    task = asyncio.ensure_future(_handle(guard, route))
    while not route.fetched:
        await asyncio.sleep(0)  # let the handler reach its fetch
    await asyncio.sleep(0)
    assert guard.seen.is_set() and not guard.settled.is_set()
    await guard.close()
    assert route.did == [("abort", "timedout")], "close() waits for the handlers it ended"
    await task
    assert never.cancelled()
    assert route.did == [("abort", "timedout")]
    assert guard.records[0].outcome == TIMED_OUT and guard.failure == TIMED_OUT
    assert guard.failed.is_set() and not guard.active
    assert page.routes[-1] == ("unroute", "**/*", handler)
    assert page.context.routes[-1] == ("unroute", "**/*", handler)
    await guard.close()  # a second close does nothing
    assert len(page.routes) == 2


async def test_a_guard_never_opened_removes_no_route_when_closed() -> None:
    page = _Page()
    guard = _guard(page)
    await guard.close()
    assert page.routes == [] and page.context.routes == []


# --- the firewall -------------------------------------------------------------------------


class _Context(_Routes):
    """A browser context: its options say whether service workers are blocked."""

    def __init__(self, service_workers: str | None = "block") -> None:
        super().__init__()

        class _Impl:
            _options = {"serviceWorkers": service_workers} if service_workers else {}

        self._impl_obj = _Impl()


class _Worker:
    url = "http://127.0.0.1:8765/sw.js?v=2"


def test_the_refusal_page_says_what_was_refused_and_why_escaped() -> None:
    page = refusal_page("POST", ORIGIN + "/a<b>", "outside_effect", "outside an effect & more")
    assert page == (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<title>Refused by the write firewall</title></head><body>"
        "<h1>Refused by actonce's write firewall</h1>"
        '<p data-testid="firewall-refusal" data-reason="outside_effect">'
        f"POST {ORIGIN}/a&lt;b&gt; was not sent: outside an effect &amp; more.</p>"
        "<p>This browser changes nothing by itself: every change goes through an "
        "effect (a guarded action). Use it instead.</p></body></html>"
    )
    assert 'data-reason="&quot;x"' in refusal_page("POST", "/", '"x', "t")


def test_an_allowlist_is_a_sequence_of_patterns_that_name_their_origin() -> None:
    login = RequestPattern("POST", "/login", origin=ORIGIN)
    assert _checked_allow([login]) == (login,)
    assert _checked_allow(()) == ()
    for one in (login, "POST /login"):
        with pytest.raises(UsageError, match=r"^allow is a sequence of RequestPattern values$"):
            _checked_allow(one)  # type: ignore[arg-type]
    bare = RequestPattern("POST", "/login")
    with pytest.raises(UsageError) as caught:
        _checked_allow([login, bare])
    assert str(caught.value) == (
        f"an allowlist entry is a RequestPattern that names its origin: {bare!r}"
    )
    with pytest.raises(UsageError, match="names its origin: 'POST /login'"):
        _checked_allow(["POST /login"])  # type: ignore[list-item]


def test_a_firewall_names_its_actor() -> None:
    for actor in ("", "   ", None):
        with pytest.raises(UsageError, match=r"^a firewall names the actor its refusals"):
            AsyncFirewall(_Context(), actor=actor)  # type: ignore[arg-type]


def test_a_requests_page_is_its_frame_without_query_and_only_on_the_web() -> None:
    assert _frame_url(_Request("POST", ORIGIN, frame=ORIGIN + "/c?t=1#x")) == ORIGIN + "/c"  # type: ignore[arg-type]
    assert _frame_url(_Request("POST", ORIGIN, frame="about:blank")) == ""  # type: ignore[arg-type]
    assert _frame_url(_Request("POST", ORIGIN, frame=None)) == ""  # type: ignore[arg-type]


async def test_the_firewall_routes_every_request_of_the_context_until_closed() -> None:
    context = _Context()
    wall = AsyncFirewall(context, actor="ana")  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # service workers blocked: no warning
        await wall.install()
    assert wall.problems == []
    assert context.routes == [("route", "**/*", wall._handler)]
    assert context.listeners == [("on", "serviceworker", wall._worker_started)]
    await wall.aclose()
    assert context.routes[-1] == ("unroute", "**/*", wall._handler)
    assert context.listeners[-1] == ("off", "serviceworker", wall._worker_started)
    await wall.aclose()  # a second close removes nothing twice
    assert len(context.routes) == 2 and len(context.listeners) == 2
    await AsyncFirewall(context, actor="ana").install()  # type: ignore[arg-type]


async def test_a_context_that_runs_service_workers_is_warned_about() -> None:
    context = _Context(service_workers=None)
    context.service_workers.append(_Worker())
    wall = AsyncFirewall(context, actor="ana")  # type: ignore[arg-type]
    with pytest.warns(FirewallWarning) as caught:
        await wall.install()
    assert wall.problems == [
        "service workers are not blocked in this context: a worker's fetches bypass the "
        "firewall (make the context with service_workers='block')",
        f"a service worker runs ({ORIGIN}/sw.js): its requests are not seen",
    ]
    assert [str(w.message) for w in caught] == [f"actonce firewall: {p}" for p in wall.problems]
    await wall.aclose()


async def _wall(allow: tuple[RequestPattern, ...] = (), recorder: Any = None) -> AsyncFirewall:
    wall = AsyncFirewall(_Context(), actor="ana", allow=allow, recorder=recorder)  # type: ignore[arg-type]
    await wall.install()
    return wall


async def test_outside_an_effect_a_form_post_gets_the_403_page() -> None:
    wall = await _wall()
    request = _Request("post", ORIGIN + "/compose?draft=1", navigation=True)
    route = _Route(request)
    await wall._handle(route)  # type: ignore[arg-type]
    [(what, kwargs)] = route.did
    assert what == "fulfill"
    assert kwargs == {
        "status": 403,
        "content_type": "text/html; charset=utf-8",
        "headers": {"Cache-Control": "no-store"},
        "body": refusal_page("POST", ORIGIN + "/compose", "outside_effect", "outside an effect"),
    }
    assert wall.refused == [
        WriteRefusal(
            "ana",
            "POST",
            ORIGIN + "/compose",
            RefusalReason.OUTSIDE_EFFECT,
            page=ORIGIN + "/compose",
        )
    ]
    assert wall.counts() == {RefusalReason.OUTSIDE_EFFECT: 1}


async def test_outside_an_effect_a_fetch_is_blocked_and_what_may_pass_passes() -> None:
    beacon = RequestPattern("POST", "/analytics", origin=ORIGIN, beacon=True)
    wall = await _wall(allow=(RequestPattern("POST", "/login", origin=ORIGIN), beacon))
    fetch = _Route(_Request("DELETE", ORIGIN + "/posts/3", frame=None))
    await wall._handle(fetch)  # type: ignore[arg-type]
    assert fetch.did == [("abort", "blockedbyclient")]
    assert wall.refused[0].page == "" and wall.refused[0].method == "DELETE"
    for request in (
        _Request("GET", ORIGIN + "/posts/3"),
        _Request("POST", "data:text/plain,x"),
        _Request("POST", ORIGIN + "/login"),
        _Request("POST", ORIGIN + "/analytics", kind="ping"),
    ):
        route = _Route(request)
        await wall._handle(route)  # type: ignore[arg-type]
        assert route.did == [("fallback", None)], request.url
    not_a_beacon = _Route(_Request("POST", ORIGIN + "/analytics"))
    await wall._handle(not_a_beacon)  # type: ignore[arg-type]
    assert not_a_beacon.did == [("abort", "blockedbyclient")]
    passed = _Request("POST", ORIGIN + "/compose")
    wall.let_through(passed)  # the guard of a perform sent it on untouched
    route = _Route(passed)
    await wall._handle(route)  # type: ignore[arg-type]
    assert route.did == [("fallback", None)]
    assert wall.counts() == {RefusalReason.OUTSIDE_EFFECT: 2}


async def test_a_page_gone_before_the_refusal_is_still_recorded() -> None:
    wall = await _wall()
    route = _Route(_Request("POST", ORIGIN + "/compose", navigation=True), broken=True)
    await wall._handle(route)  # type: ignore[arg-type]
    assert len(wall.refused) == 1


async def test_refusals_during_a_perform_name_the_effect() -> None:
    wall = await _wall()
    refused = wall.during("effect-1")
    refused(WireRecord("PUT", ORIGIN + "/x", 0.1), RefusalReason.UNDECLARED, ORIGIN + "/p")
    wall.during(None)(
        WireRecord("POST", "https://evil.example/y", 0.2), RefusalReason.OTHER_ORIGIN, ""
    )
    assert wall.refused == [
        WriteRefusal(
            "ana",
            "PUT",
            ORIGIN + "/x",
            RefusalReason.UNDECLARED,
            page=ORIGIN + "/p",
            effect_key="effect-1",
        ),
        WriteRefusal("ana", "POST", "https://evil.example/y", RefusalReason.OTHER_ORIGIN),
    ]
    assert wall.counts() == {RefusalReason.UNDECLARED: 1, RefusalReason.OTHER_ORIGIN: 1}


async def test_each_refusal_is_replaced_by_its_record_or_its_error_is_kept() -> None:
    async def record(refusal: WriteRefusal) -> WriteRefusal:
        if refusal.method == "PUT":
            raise ActOnceError("the ledger is read-only")
        if refusal.method == "PATCH":
            raise OSError("disk full " + "x" * 400)
        return WriteRefusal(refusal.actor, refusal.method, refusal.url, refusal.reason, id=7)

    wall = await _wall(recorder=record)
    for method in ("POST", "PUT", "PATCH"):
        wall._note(WriteRefusal("ana", method, ORIGIN + "/x", RefusalReason.OUTSIDE_EFFECT))
    await wall.settled()
    assert [r.id for r in wall.refused] == [7, None, None]
    assert wall.errors[0] == "ActOnceError: the ledger is read-only"
    assert wall.errors[1] == ("OSError: disk full " + "x" * 400)[:300]
    assert len(wall.errors) == 2
    await wall.aclose()


async def test_refusals_reach_an_async_ledger_and_a_sync_one() -> None:
    refusal = WriteRefusal("ana", "POST", ORIGIN + "/x", RefusalReason.OUTSIDE_EFFECT)
    with open_ledger("memory://") as ledger:
        recorder = recorder_of(ledger)
        assert recorder is not None
        got = await recorder(refusal)
        assert got.id is not None and [r.id for r in ledger.firewall.refusals()] == [got.id]
    async with AsyncLedger(MemoryStore()) as async_ledger:
        recorder = recorder_of(async_ledger)
        assert recorder is not None
        got = await recorder(refusal)
        assert got.id is not None
        assert [r.id for r in await async_ledger.firewall.refusals()] == [got.id]
    assert recorder_of(None) is None
    with pytest.raises(UsageError) as caught:
        recorder_of("memory://")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "the firewall records in a Ledger or an AsyncLedger, not 'memory://'"
    )


async def test_the_async_firewall_wants_an_async_context() -> None:
    with pytest.raises(UsageError, match=r"^firewall\(\) guards a Playwright async-API"):
        await firewall(_Context(), None, actor="ana")  # type: ignore[arg-type]


# --- what a perform's wire says about its submit ------------------------------------------


async def test_a_perform_doubts_a_declared_submit_its_wire_did_not_complete() -> None:
    from actonce.browser import AsyncEffect

    notes = (RequestPattern("POST", "/notes"), RequestPattern("POST", "/notes/{id}/publish"))
    clean = _guard(declared=notes)
    await _handle(clean, _Route(_Request("POST", ORIGIN + "/notes"), 201))
    await _handle(clean, _Route(_Request("POST", ORIGIN + "/notes/1/publish"), 200))
    assert AsyncEffect._doubt_of(clean) is None
    lost = _guard(declared=notes)
    await _handle(lost, _Route(_Request("POST", ORIGIN + "/notes"), PlaywrightError("ECONNRESET")))
    assert AsyncEffect._doubt_of(lost) == (
        "never sent: POST /notes/{id}/publish; a declared request got no answer (connection reset)"
    )
    last = _guard(declared=notes)
    await _handle(last, _Route(_Request("POST", ORIGIN + "/notes"), 201))
    await _handle(
        last,
        _Route(_Request("POST", ORIGIN + "/notes/1/publish"), PlaywrightError("socket hang up")),
    )
    assert AsyncEffect._doubt_of(last) == (
        "a declared request got no answer (no response: connection closed)"
    )
    default = _guard()
    await _handle(default, _Route(_Request("POST", ORIGIN + "/x"), PlaywrightError("ECONNRESET")))
    assert AsyncEffect._doubt_of(default) is None, "undeclared: the page's confirmation decides"
