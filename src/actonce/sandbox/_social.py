"""The social site: accounts, posts, replies, likes, follows, search."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ._faults import Fault
from ._pipeline import SESSION_COOKIE, Pipeline

__all__ = ["SocialPages", "parse_post_ref"]

_POST_PATH = re.compile(r"^/posts/(\d+)/?$")


def parse_post_ref(ref: str) -> int | None:
    """The post id in a post URL or path (``/posts/7``, ``http://…/posts/7``)."""
    m = _POST_PATH.match(urlsplit(ref.strip()).path)
    return int(m.group(1)) if m else None


class SocialPages(Pipeline):
    """Handlers of the accounts and the posts."""

    # -- accounts ---------------------------------------------------------

    async def home(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.home", login=False)
        return ctx if isinstance(ctx, Response) else self._page(ctx, "home.html")

    async def login_form(self, request: Request) -> Response:
        return self._page(request, "login.html", next=request.query_params.get("next", "/"))

    async def login(self, request: Request) -> Response:
        ctx = await self._begin(request, "login", login=False)
        if isinstance(ctx, Response):
            return ctx
        name, password = ctx.fields.get("username", ""), ctx.fields.get("password", "")
        target = ctx.fields.get("next", "/")
        if not target.startswith("/") or target.startswith("//"):
            target = "/"
        if not self.db.check_password(name, password):
            return self._page(
                ctx, "login.html", 401, next=target, message="Wrong username or password."
            )
        resp = RedirectResponse(target, 303)
        # "Keep me signed in": a cookie that outlives the browser (30 days), as
        # real sites do; otherwise a session cookie, gone when the browser closes.
        remember = ctx.fields.get("remember") == "1"
        resp.set_cookie(
            SESSION_COOKIE,
            self.db.new_session(name),
            max_age=30 * 86400 if remember else None,
            httponly=True,
            samesite="lax",
            path="/",
        )
        return resp

    async def logout(self, request: Request) -> Response:
        self.db.end_session(request.cookies.get(SESSION_COOKIE))
        resp = RedirectResponse("/", 303)
        resp.delete_cookie(SESSION_COOKIE)
        return resp

    # -- posts ------------------------------------------------------------

    async def compose_form(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.compose")
        if isinstance(ctx, Response):
            return ctx
        parent = None
        ref = ctx.fields.get("reply_to", "")
        if ref:
            pid = parse_post_ref(ref)
            parent = self.db.post(pid) if pid is not None else None
            if parent is None:
                return self._wall(ctx, "not-found", "Not found", "No such post to reply to.", 404)
        append = ctx.has(Fault.EDITOR_APPEND)
        return self._page(
            ctx,
            "compose.html",
            parent=parent,
            parent_url=f"/posts/{parent.id}" if parent else "",
            draft=append.draft if append else "",
            double_submit=ctx.has(Fault.DOUBLE_SUBMIT) is not None,
        )

    async def compose(self, request: Request) -> Response:
        ctx = await self._begin(request, "post.create")
        if isinstance(ctx, Response):
            return ctx
        assert ctx.user is not None
        f = ctx.fields
        text = f.get("text", "")
        media_type = f.get("media_type", "") or None
        parent_id = None
        if f.get("parent"):
            parent_id = parse_post_ref(f["parent"])
            if parent_id is None or self.db.post(parent_id) is None:
                return self._wall(ctx, "error", "Bad request", "No such parent post.", 400)
        if not text.strip() or len(text) > 2000 or media_type not in (None, "image", "video"):
            return self._wall(ctx, "error", "Bad request", "Text is required.", 400)
        post_id = self.db.create_post(
            ctx.user,
            text,
            parent_id,
            media_type,
            (f.get("media_name") or None) if media_type else None,
            (f.get("alt") or None) if media_type else None,
            hidden_for=ctx.hidden_for,
        )
        return await self._finish(ctx, RedirectResponse(f"/posts/{post_id}", 303))

    async def post_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.post", login=False)
        if isinstance(ctx, Response):
            return ctx
        post = self.db.post(int(request.path_params["post_id"]))
        if post is None:
            return self._wall(ctx, "not-found", "Not found", "No such post.", 404)
        liked = bool(ctx.user) and self.db.liked(ctx.user or "", post.id)
        return self._page(
            ctx,
            "post.html",
            post=post,
            liked=liked,
            likes=self.db.like_count(post.id),
            replies=self.db.replies(post.id),
        )

    async def like(self, request: Request) -> Response:
        ctx = await self._begin(request, "like.toggle")
        if isinstance(ctx, Response):
            return ctx
        post_id = int(request.path_params["post_id"])
        if self.db.post(post_id) is None:
            return self._wall(ctx, "not-found", "Not found", "No such post.", 404)
        self.db.toggle_like(ctx.user or "", post_id)
        return await self._finish(ctx, RedirectResponse(f"/posts/{post_id}", 303))

    async def profile(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.profile", login=False)
        if isinstance(ctx, Response):
            return ctx
        name = str(request.path_params["name"])
        if not self.db.user_exists(name):
            return self._wall(ctx, "not-found", "Not found", "No such user.", 404)
        following = bool(ctx.user) and self.db.following(ctx.user or "", name)
        return self._page(
            ctx,
            "profile.html",
            name=name,
            following=following,
            posts=self.db.search_posts(author=name),
        )

    async def follow(self, request: Request) -> Response:
        ctx = await self._begin(request, "follow.toggle")
        if isinstance(ctx, Response):
            return ctx
        name = str(request.path_params["name"])
        if not self.db.user_exists(name) or name == ctx.user:
            return self._wall(ctx, "not-found", "Not found", "No such user.", 404)
        self.db.toggle_follow(ctx.user or "", name)
        return await self._finish(ctx, RedirectResponse(f"/u/{name}", 303))

    async def search(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.search", login=False)
        if isinstance(ctx, Response):
            return ctx
        author, q = ctx.fields.get("author", ""), ctx.fields.get("q", "")
        posts = self.db.search_posts(author or None, q or None)
        return await self._finish(
            ctx,
            self._page(
                ctx, "search.html", author=author, q=q, posts=ctx.shown(posts), total=len(posts)
            ),
        )
