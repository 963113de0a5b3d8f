"""Invoices: HTML pages and the JSON API with ``Idempotency-Key``."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from ._faults import Fault
from ._pipeline import Ctx, Pipeline

__all__ = ["InvoicePages"]


class InvoicePages(Pipeline):
    """Handlers of the invoices, pages and API."""

    async def invoices(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.invoices")
        if isinstance(ctx, Response):
            return ctx
        reference = ctx.fields.get("reference", "")
        invoices = self.db.list_invoices(reference or None)
        return await self._finish(
            ctx,
            self._page(
                ctx,
                "invoices.html",
                reference=reference,
                invoices=ctx.shown(invoices),
                total=len(invoices),
            ),
        )

    async def invoice_form(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.invoice_new")
        return ctx if isinstance(ctx, Response) else self._page(ctx, "invoice_new.html")

    async def invoice_page(self, request: Request) -> Response:
        ctx = await self._begin(request, "view.invoice")
        if isinstance(ctx, Response):
            return ctx
        invoice = self.db.invoice(int(request.path_params["invoice_id"]))
        if invoice is None:
            return self._wall(ctx, "not-found", "Not found", "No such invoice.", 404)
        return self._page(ctx, "invoice.html", invoice=invoice)

    async def create_invoice(self, request: Request) -> Response:
        ctx = await self._begin(request, "invoice.create")
        if isinstance(ctx, Response):
            return ctx
        reference = ctx.fields.get("reference", "").strip()
        try:
            amount = int(ctx.fields.get("amount", "0").strip() or "0")
        except ValueError:
            amount = -1
        if not reference or amount < 0:
            return self._wall(
                ctx,
                "error",
                "Bad request",
                "Reference and a whole, non-negative amount are required.",
                400,
            )
        invoice_id = self.db.create_invoice(
            ctx.user or "", reference, amount, hidden_for=ctx.hidden_for
        )
        return await self._finish(ctx, RedirectResponse(f"/invoices/{invoice_id}", 303))

    # -- JSON API ---------------------------------------------------------

    async def api_create_invoice(self, request: Request) -> Response:
        """``POST /api/invoices`` with an optional ``Idempotency-Key`` header."""
        try:
            body = json.loads(await request.body())
            reference = str(body["reference"]).strip()
            amount = int(body.get("amount", 0))
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "body must be JSON with reference and amount"}, 400)
        user = self._api_user(request)
        fired = self._fire(request, "api.invoice.create", {"reference": reference}, user)
        ctx = Ctx(request, "api.invoice.create", user, {"reference": reference}, fired)
        if ctx.has(Fault.ERROR_BEFORE_COMMIT):
            return JSONResponse({"error": "server error"}, 500)
        if ctx.has(Fault.RATE_LIMIT):
            return JSONResponse({"error": "rate limited"}, 429)
        if user is None or ctx.has(Fault.SESSION_EXPIRED) or ctx.has(Fault.CAPTCHA):
            return JSONResponse({"error": "authentication required"}, 401)
        key = request.headers.get("idempotency-key")
        canonical = json.dumps({"reference": reference, "amount": amount}, sort_keys=True)
        if key:
            body_hash = hashlib.sha256(canonical.encode()).hexdigest()
            invoice_id, created = self.db.create_invoice_idempotent(
                user, key, body_hash, reference, amount
            )
            if created is None:
                return JSONResponse({"error": "Idempotency-Key reused with a different body"}, 422)
        else:
            invoice_id, created = (
                self.db.create_invoice(user, reference, amount, hidden_for=ctx.hidden_for),
                True,
            )
        invoice = self.db.invoice(invoice_id)
        assert invoice is not None
        headers = {} if created else {"Idempotent-Replayed": "true"}
        return await self._finish(
            ctx, JSONResponse(_invoice_json(invoice), 201 if created else 200, headers)
        )

    async def api_list_invoices(self, request: Request) -> Response:
        reference = request.query_params.get("reference") or None
        return JSONResponse([_invoice_json(i) for i in self.db.list_invoices(reference)])


def _invoice_json(invoice: Any) -> dict[str, Any]:
    return {
        "id": invoice.id,
        "account": invoice.account,
        "reference": invoice.reference,
        "amount": invoice.amount,
        "url": f"/invoices/{invoice.id}",
    }
