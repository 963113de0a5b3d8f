"""Site effects for the actonce sandbox: post/reply, like, follow, invoice.

They double as worked examples of ``SiteEffect``; each verification
contract follows seed 000 section 6.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from actonce import Absent, Confirmed, HardStop, UsageError, Verdict, origin_of

from ._errors import PageUnavailable
from ._site import SiteEffect, normalize_text

if TYPE_CHECKING:
    from playwright.async_api import Locator

    from ._session import AsyncBrowserSession

__all__ = ["InvoiceEffect", "Media", "PostEffect", "ToggleEffect", "follow", "like"]

_POST_URL = re.compile(r"/posts/\d+$")
_INVOICE_URL = re.compile(r"/invoices/\d+$")

# One post card as plain data (a JS function of the card element).
_CARD = """e => {
  const q = s => e.querySelector(s);
  const media = q('[data-testid="post-media"]');
  return {
    id: Number(e.dataset.postId),
    href: q('[data-testid="post-link"]')?.getAttribute('href') ?? '',
    author: q('[data-testid="post-author"]')?.textContent ?? '',
    text: q('[data-testid="post-text"]')?.textContent ?? '',
    media_count: Number(media?.dataset.mediaCount ?? 0),
    media_type: media?.dataset.mediaType ?? '',
    alt: q('[data-testid="post-alt"]')?.textContent ?? '',
    parent: q('[data-testid="post-parent"]')?.getAttribute('href') ?? '',
  };
}"""
_CARDS = f"els => els.map({_CARD})"
_ROW = "e => ({...e.dataset})"


async def _listed(
    session: AsyncBrowserSession, box: str, row: str, read_row: str
) -> list[dict[str, Any]]:
    """Every row of the one list ``box`` on the page, in one round trip.

    The list says how many rows it holds (``data-total``); a page with no such
    list, or one that shows fewer or more rows than it holds, is not a
    reliable listing: ``PageUnavailable`` (never an absence).
    """
    found: list[dict[str, Any]] = await session.page.locator(box).evaluate_all(
        f"els => els.map(e => ({{total: e.dataset.total ?? null, "
        f"rows: Array.from(e.querySelectorAll({row!r})).map({read_row})}}))"
    )
    if len(found) != 1:
        raise PageUnavailable(f"{len(found)} {box} lists on the page; need exactly one")
    total, rows = found[0]["total"], list(found[0]["rows"])
    if total is None or not str(total).isdigit() or int(total) != len(rows):
        raise PageUnavailable(f"the list is incomplete: it shows {len(rows)} of {total} rows")
    return rows


def _counted(session: AsyncBrowserSession, prefix: str, ids: list[int]) -> Confirmed:
    """Every match, counted: more than one is a duplicate, never a silent success."""
    refs = tuple(session.url(f"{prefix}/{i}") for i in ids)
    return Confirmed(refs[0], count=len(refs), refs=refs)


def _here(session: AsyncBrowserSession, pattern: re.Pattern[str]) -> int | None:
    """The object id in the current page's URL, if it is ``pattern`` on the expected origin."""
    url = session.page.url
    if origin_of(url) != session.origin or not pattern.search(_path(url)):
        return None
    return int(_path(url).rsplit("/", 1)[1])


def _path(url_or_path: str) -> str:
    return urlsplit(url_or_path).path.rstrip("/") or "/"


@dataclass(frozen=True, slots=True)
class Media:
    """One attached media item (the sandbox takes a name, not an upload)."""

    type: str
    name: str
    alt: str = ""

    def __post_init__(self) -> None:
        if self.type not in ("image", "video"):
            raise UsageError("media type must be 'image' or 'video'")


class PostEffect(SiteEffect):
    """Publish a post, or a reply when ``parent`` (a post URL) is given.

    Verified by search: exactly this author, normalized text, media count and
    type, alt text and parent; the canonical post URL is the result_ref, and
    every match is counted (``Confirmed.count``, ``refs``: oldest first).
    """

    kind = "post"

    def __init__(
        self, author: str, text: str, *, media: Media | None = None, parent: str | None = None
    ) -> None:
        if not normalize_text(text):
            raise UsageError("a post needs text")
        self.author = author
        self.text = normalize_text(text)
        self.media = media
        self.parent = _path(parent) if parent else None
        if self.parent is not None and not _POST_URL.search(self.parent):
            raise UsageError(f"parent must be a post URL, not {parent!r}")

    def payload(self) -> dict[str, Any]:
        media = (
            None
            if self.media is None
            else {"type": self.media.type, "name": self.media.name, "alt": self.media.alt}
        )
        return {"author": self.author, "text": self.text, "media": media, "parent": self.parent}

    async def precondition(self, session: AsyncBrowserSession) -> bool:
        if self.parent is not None:
            await session.goto(self.parent)
            if (
                await session.page.locator(
                    f'[data-testid="post"][data-post-id="{self.parent.rsplit("/", 1)[1]}"]'
                ).count()
                < 1
            ):
                raise HardStop(f"parent {self.parent} does not resolve to a post")
        return True

    async def prepare(self, session: AsyncBrowserSession) -> None:
        query = "?" + urlencode({"reply_to": self.parent}) if self.parent else ""
        await session.goto("/compose" + query)
        page = session.page
        await page.get_by_test_id("editor").fill(self.text)
        if self.media is not None:
            await page.get_by_test_id("media-type").select_option(self.media.type)
            await page.get_by_test_id("media-name").fill(self.media.name)
            await page.get_by_test_id("alt-text").fill(self.media.alt)

    async def read_back(self, session: AsyncBrowserSession) -> Mapping[str, Any]:
        page = session.page
        return {
            "text": await page.get_by_test_id("editor").input_value(),
            "media_type": await page.get_by_test_id("media-type").input_value(),
            "media_name": await page.get_by_test_id("media-name").input_value(),
            "alt": await page.get_by_test_id("alt-text").input_value(),
            "parent": _path(await page.get_by_test_id("parent").input_value() or "")
            if self.parent
            else await page.get_by_test_id("parent").input_value(),
        }

    def expected(self) -> Mapping[str, Any]:
        m = self.media
        return {
            "text": self.text,
            "media_type": m.type if m else "",
            "media_name": m.name if m else "",
            "alt": m.alt if m else "",
            "parent": self.parent or "",
        }

    def control(self, session: AsyncBrowserSession) -> Locator:
        return session.page.get_by_role("button", name="Publish", exact=True)

    async def confirm(self, session: AsyncBrowserSession) -> None:
        await session.page.wait_for_url(_POST_URL, timeout=session.confirm_timeout * 1000)

    async def verify(self, session: AsyncBrowserSession) -> Verdict:
        probe = self.text.splitlines()[0][:80]
        await session.goto("/search?" + urlencode({"author": self.author, "q": probe}))
        return self.judge(session, await self.read_listing(session))

    def listing(self) -> str:
        # Every post of the author: a superset of the search above.
        return "/search?" + urlencode({"author": self.author})

    async def read_listing(self, session: AsyncBrowserSession) -> list[dict[str, Any]]:
        return await _listed(
            session, '[data-testid="results"]', ':scope > [data-testid="post"]', _CARD
        )

    def judge(self, session: AsyncBrowserSession, rows: Any) -> Verdict:
        matches = self._matches(rows)
        return _counted(session, "/posts", matches) if matches else Absent()

    async def verify_here(self, session: AsyncBrowserSession) -> Verdict | None:
        # The confirmation is the new post's own page (one post per accepted
        # submit): enough when its card is this post; else search as usual.
        post_id = _here(session, _POST_URL)
        if post_id is None:
            return None
        cards: list[dict[str, Any]] = await session.page.locator(
            f'[data-testid="post"][data-post-id="{post_id}"]'
        ).evaluate_all(_CARDS)
        return _counted(session, "/posts", [post_id]) if self._matches(cards[:1]) else None

    def _matches(self, cards: list[dict[str, Any]]) -> list[int]:
        want_media = (1, self.media.type) if self.media else (0, "")
        return sorted(
            c["id"]
            for c in cards
            if c["author"].strip() == self.author
            and normalize_text(c["text"]) == self.text
            and (c["media_count"], c["media_type"]) == want_media
            and (self.media is None or normalize_text(c["alt"]) == normalize_text(self.media.alt))
            and (_path(c["parent"]) if c["parent"] else None) == self.parent
        )


class ToggleEffect(SiteEffect):
    """Bring a two-state control (like, follow) to the wanted state.

    A toggle pressed twice undoes itself, so ``perform`` refuses to click
    (``ReadBackMismatch``) unless the control shows the opposite state.
    """

    kind = "toggle"

    def __init__(
        self,
        kind: str,
        page_path: str,
        test_id: str,
        on_label: str,
        off_label: str,
        want_on: bool,
        target: str,
    ) -> None:
        self.kind = kind
        self.page_path = page_path
        self.test_id = test_id
        self.on_label = on_label
        self.off_label = off_label
        self.want_on = want_on
        self.target = target

    def payload(self) -> dict[str, Any]:
        return {"target": self.target, "on": self.want_on}

    async def _state(self, session: AsyncBrowserSession) -> str:
        control = self.control(session)
        count = await control.count()
        if count != 1:
            raise HardStop(f"{count} {self.test_id} controls on {self.page_path}; need exactly one")
        label = (await control.inner_text()).strip()
        if label not in (self.on_label, self.off_label):
            raise HardStop(f"control {self.test_id} shows {label!r}, an unknown state")
        return label

    async def precondition(self, session: AsyncBrowserSession) -> bool:
        await session.goto(self.page_path)
        await self._state(session)
        return True

    async def prepare(self, session: AsyncBrowserSession) -> None:
        await session.goto(self.page_path)

    async def read_back(self, session: AsyncBrowserSession) -> Mapping[str, Any]:
        return {"state": await self._state(session)}

    def expected(self) -> Mapping[str, Any]:
        # Before the click the control must show the opposite of the goal.
        return {"state": self.off_label if self.want_on else self.on_label}

    def control(self, session: AsyncBrowserSession) -> Locator:
        return session.page.get_by_test_id(self.test_id)

    async def confirm(self, session: AsyncBrowserSession) -> None:
        goal = self.on_label if self.want_on else self.off_label
        await (
            session.page.get_by_test_id(self.test_id)
            .filter(has_text=goal)
            .wait_for(timeout=session.confirm_timeout * 1000)
        )

    async def verify(self, session: AsyncBrowserSession) -> Verdict:
        await session.goto(self.page_path)
        state = await self._state(session)
        if (state == self.on_label) == self.want_on:
            # A two-state control shows a state, not a number of presses: one
            # match (the sandbox's toggle events count the presses).
            url = session.url(self.page_path)
            return Confirmed(url, count=1, refs=(url,))
        return Absent()


def like(post: str, *, liked: bool = True) -> ToggleEffect:
    """Like (or unlike) the post at a URL or path."""
    path = _path(post)
    if not _POST_URL.search(path):
        raise UsageError(f"not a post URL: {post!r}")
    post_id = path.rsplit("/", 1)[1]
    return ToggleEffect(
        "like" if liked else "unlike", path, f"like-{post_id}", "Unlike", "Like", liked, path
    )


def follow(user: str, *, following: bool = True) -> ToggleEffect:
    """Follow (or unfollow) a user by name."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", user):
        raise UsageError(f"not a user name: {user!r}")
    return ToggleEffect(
        "follow" if following else "unfollow",
        f"/u/{user}",
        f"follow-{user}",
        "Following",
        "Follow",
        following,
        user,
    )


class InvoiceEffect(SiteEffect):
    """Create an invoice for an external reference (seed 001's example).

    Verified on ``/invoices?reference=``: a row with exactly this reference
    and account; its invoice URL (with the stable id) is the result_ref, and
    every such row is counted (``Confirmed.count``, ``refs``: oldest first).
    """

    kind = "invoice"

    def __init__(self, account: str, reference: str, amount: int) -> None:
        if not reference.strip() or amount < 0:
            raise UsageError("an invoice needs a reference and a non-negative amount")
        self.account = account
        self.reference = reference.strip()
        self.amount = amount

    def payload(self) -> dict[str, Any]:
        return {"account": self.account, "reference": self.reference, "amount": self.amount}

    # No precondition of its own: "no invoice for this reference yet" is what
    # the verification before the claim checks, and the form's walls are caught
    # by the preflight inside perform, before the click (failed at once,
    # nothing sent). Loading the form here too would cost a page per invoice.

    async def prepare(self, session: AsyncBrowserSession) -> None:
        await session.goto("/invoices/new")
        await session.page.get_by_label("External reference").fill(self.reference)
        await session.page.get_by_label("Amount").fill(str(self.amount))

    async def read_back(self, session: AsyncBrowserSession) -> Mapping[str, Any]:
        return {
            "reference": await session.page.get_by_label("External reference").input_value(),
            "amount": await session.page.get_by_label("Amount").input_value(),
        }

    def expected(self) -> Mapping[str, Any]:
        return {"reference": self.reference, "amount": str(self.amount)}

    def control(self, session: AsyncBrowserSession) -> Locator:
        return session.page.get_by_role("button", name="Create invoice", exact=True)

    async def confirm(self, session: AsyncBrowserSession) -> None:
        await session.page.wait_for_url(_INVOICE_URL, timeout=session.confirm_timeout * 1000)

    async def verify(self, session: AsyncBrowserSession) -> Verdict:
        await session.goto("/invoices?" + urlencode({"reference": self.reference}))
        return self.judge(session, await self.read_listing(session))

    def listing(self) -> str:
        # Every invoice: a superset of the filtered list above.
        return "/invoices"

    async def read_listing(self, session: AsyncBrowserSession) -> list[dict[str, Any]]:
        return await _listed(
            session, '[data-testid="invoices"]', '[data-testid="invoice-row"]', _ROW
        )

    def judge(self, session: AsyncBrowserSession, rows: Any) -> Verdict:
        ids = sorted(
            int(r["invoiceId"])
            for r in rows
            if r.get("reference") == self.reference and r.get("account") == self.account
        )
        if not ids:
            # Another account may use the same reference: that is not ours.
            return Absent()
        return _counted(session, "/invoices", ids)

    async def verify_here(self, session: AsyncBrowserSession) -> Verdict | None:
        # The confirmation is the new invoice's own page (one invoice per
        # accepted submit): enough when it is this reference and account.
        invoice_id = _here(session, _INVOICE_URL)
        if invoice_id is None:
            return None
        rows: list[dict[str, str]] = await session.page.get_by_test_id("invoice").evaluate_all(
            f"els => els.map({_ROW})"
        )
        ours = [
            r for r in rows
            if r.get("invoiceId") == str(invoice_id)
            and r.get("reference") == self.reference and r.get("account") == self.account
        ]  # fmt: skip
        return _counted(session, "/invoices", [invoice_id]) if ours else None
