"""The notes site: *Save* is a ``fetch()`` that creates a draft, then a second POST publishes it.

``GET /notes`` lists the signed-in user's notes and has the editor; its
*Save* button runs a script (no form submit): ``POST /notes`` (the text,
url-encoded) answers ``{"id": n}`` with a draft, then ``POST
/notes/{id}/publish`` publishes it; the page then shows "Published" with a
link to the note, or the error. It also sends a same-origin analytics
beacon (``navigator.sendBeacon('/analytics')``) when Save is clicked. Fault
actions: ``note.create``, ``note.publish``, ``analytics``.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ._pipeline import Pipeline

__all__ = ["NotesPages"]


class NotesPages(Pipeline):
    """Handlers of the notes and the analytics beacon."""

    async def notes_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.notes")
        if isinstance(ctx, Response):
            return ctx
        return self._page(ctx, "notes.html", notes=self.db.notes(ctx.user))

    async def note_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.note")
        if isinstance(ctx, Response):
            return ctx
        note_id = int(request.path_params["note_id"])
        note = next((n for n in self.db.notes(ctx.user) if n["id"] == note_id), None)
        if note is None:
            return self._wall(ctx, "not-found", "Not found", "No such note.", 404)
        return self._page(ctx, "notes.html", notes=[note], single=True)

    async def create_note(self, request: Request) -> Response:
        ctx = await self._begin(request, "note.create")
        if isinstance(ctx, Response):
            return ctx
        text = ctx.fields.get("text", "").strip()
        if not text:
            return JSONResponse({"error": "a note has text"}, 422)
        note_id = self.db.create_note(ctx.user or "", text)
        return await self._finish(ctx, JSONResponse({"id": note_id, "state": "draft"}, 201))

    async def publish_note(self, request: Request) -> Response:
        ctx = await self._begin(request, "note.publish")
        if isinstance(ctx, Response):
            return ctx
        note_id = int(request.path_params["note_id"])
        if not self.db.publish_note(ctx.user or "", note_id):
            return JSONResponse({"error": "no such note"}, 404)
        return await self._finish(ctx, JSONResponse({"id": note_id, "state": "published"}))

    async def analytics(self, request: Request) -> Response:
        ctx = await self._begin(request, "analytics", login=False)
        if isinstance(ctx, Response):
            return ctx
        self.db.add_beacon(ctx.user, (await request.body()).decode("utf-8", "replace")[:100])
        return Response(status_code=204)
