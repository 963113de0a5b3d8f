"""``verify_many``: many effects judged from one read of a shared listing.

Real Chromium against the real sandbox. A table of cases (a duplicate,
another author's identical text, media and alt text, a reply, another
account's reference) with the verdict each must get: both the one-by-one
path (``verify``, one page per effect) and ``verify_many`` (one page per
listing) must give exactly it. A listing that fails or is cut short is
``Unavailable`` for every effect it would have judged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from actonce import Absent, Confirmed, Unavailable, Verdict
from actonce.browser import BrowserSession, InvoiceEffect, Media, PostEffect, SiteEffect
from actonce.sandbox import SandboxServer

SessionFactory = Callable[..., BrowserSession]


def _world(server: SandboxServer) -> None:
    db = server.db
    db.create_post("alice", "Hello world", None, None, None, None)  # 1
    db.create_post("alice", "Hello world", None, None, None, None)  # 2: a duplicate
    db.create_post("alice", "With media", None, "image", "cat.png", "A cat")  # 3
    db.create_post("alice", "Reply text", 1, None, None, None)  # 4: a reply to 1
    db.create_post("bob", "Hello world", None, None, None, None)  # 5
    db.create_post("bob", "Bob only", None, None, None, None)  # 6
    db.create_invoice("alice", "ORDER-1", 100)  # 1
    db.create_invoice("alice", "ORDER-2", 200)  # 2
    db.create_invoice("alice", "ORDER-2", 200)  # 3: a duplicate
    db.create_invoice("bob", "ORDER-1", 100)  # 4: another account, same reference
    db.create_invoice("bob", "ORDER-3", 300)  # 5


def _cases(base: str) -> list[tuple[SiteEffect, Verdict]]:
    def found(kind: str, *ids: int) -> Confirmed:
        refs = tuple(f"{base}/{kind}/{i}" for i in ids)
        return Confirmed(refs[0], count=len(refs), refs=refs)

    cat = Media("image", "cat.png", "A cat")
    return [
        (PostEffect("alice", "Hello world"), found("posts", 1, 2)),
        (InvoiceEffect("alice", "ORDER-1", 100), found("invoices", 1)),
        (PostEffect("alice", "With media", media=cat), found("posts", 3)),
        (PostEffect("alice", "With media"), Absent()),
        (PostEffect("alice", "With media", media=Media("image", "cat.png", "A dog")), Absent()),
        (PostEffect("alice", "Reply text", parent=f"{base}/posts/1"), found("posts", 4)),
        (PostEffect("alice", "Reply text"), Absent()),
        (InvoiceEffect("alice", "ORDER-2", 200), found("invoices", 2, 3)),
        (PostEffect("alice", "Bob only"), Absent()),
        (PostEffect("bob", "Hello world"), found("posts", 5)),
        (PostEffect("bob", "Never said"), Absent()),
        (InvoiceEffect("alice", "ORDER-3", 300), Absent()),
        (InvoiceEffect("bob", "ORDER-1", 100), found("invoices", 4)),
        (InvoiceEffect("alice", "ORDER-9", 900), Absent()),
    ]


def _pages(session: BrowserSession) -> list[str]:
    """The URLs of the main-frame page loads of ``session`` from now on."""
    urls: list[str] = []

    async def listen(s: Any) -> None:
        s.page.on("request", lambda r: urls.append(r.url) if r.is_navigation_request() else None)

    session.run(listen)
    return urls


def _one_by_one(session: BrowserSession, sites: list[SiteEffect]) -> list[Verdict]:
    return [session.effect(site).verify() for site in sites]


def test_every_verdict_is_the_expected_one_on_both_paths(
    server: SandboxServer, base: str, new_session: SessionFactory
) -> None:
    _world(server)
    session = new_session("alice")
    sites, expected = zip(*_cases(base), strict=True)
    assert _one_by_one(session, list(sites)) == list(expected)
    pages = _pages(session)
    assert session.verify_many(list(sites)) == list(expected)
    # One page load per listing: alice's posts, every invoice, bob's posts.
    assert pages == [
        f"{base}/search?author=alice",
        f"{base}/invoices",
        f"{base}/search?author=bob",
    ]


@pytest.mark.parametrize(
    ("rule", "kind"),
    [
        ({"action": "view.invoices", "fault": "error_before_commit"}, InvoiceEffect),
        ({"action": "view.search", "fault": "rate_limit"}, PostEffect),
        ({"action": "view.search", "fault": "captcha"}, PostEffect),
        ({"action": "view.invoices", "fault": "truncated_list"}, InvoiceEffect),
        ({"action": "view.search", "fault": "truncated_list"}, PostEffect),
    ],
)
def test_a_listing_that_fails_is_unavailable_for_all_it_would_judge(
    server: SandboxServer,
    base: str,
    new_session: SessionFactory,
    set_faults: Callable[..., None],
    rule: dict[str, object],
    kind: type[SiteEffect],
) -> None:
    _world(server)
    session = new_session("alice")
    sites, expected = zip(*_cases(base), strict=True)
    set_faults(rule)
    got = session.verify_many(list(sites))
    for site, verdict, want in zip(sites, got, expected, strict=True):
        if isinstance(site, kind):
            assert isinstance(verdict, Unavailable), (site.payload(), verdict)
        else:
            assert verdict == want, (site.payload(), verdict)


def test_a_page_cut_short_never_hides_a_duplicate_on_the_one_by_one_path(
    server: SandboxServer,
    base: str,
    new_session: SessionFactory,
    set_faults: Callable[..., None],
) -> None:
    """The own page of an effect is read by the same reader: one row of two
    shown is unavailable, never ``Confirmed(count=1)``."""
    _world(server)
    session = new_session("alice")
    set_faults({"action": "view.*", "fault": "truncated_list"})
    duplicated = [PostEffect("alice", "Hello world"), InvoiceEffect("alice", "ORDER-2", 200)]
    for verdict in _one_by_one(session, duplicated):
        assert isinstance(verdict, Unavailable) and "incomplete" in verdict.reason
