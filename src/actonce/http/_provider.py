"""``Provider`` / ``AsyncProvider``: effects whose perform is one request to an HTTP API.

The two share everything but the I/O (:class:`_Base`): the effect they
build and the request of each send. What one send got is classified in
:mod:`._send`; the exchange itself — when to send again, what each answer
means — is :func:`._exchange.exchange`, driven by each twin's ``_run``.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx

from actonce import (
    Effect,
    EffectKey,
    Gate,
    Policy,
    UsageError,
    Verdict,
    is_secret_name,
    scrub_url,
)

from ._exchange import Answer, Pause, Reply, Send, answer_of_status, exchange
from ._lookup import Ref, Select
from ._send import (
    REASON_BYTES,
    Trace,
    failure_of,
    lookup_failed,
    lookup_verdict,
    positive,
    reply_of,
    transport_options,
)

__all__ = ["DEFAULT_KEY_HEADER", "AsyncProvider", "Provider"]

DEFAULT_KEY_HEADER = "Idempotency-Key"
"""The header that carries the provider's idempotency key unless told otherwise."""

_HEADER_VALUE = re.compile(r"[\x21-\x7e]{1,255}")


@dataclass(frozen=True, slots=True)
class _Call:
    """Everything one perform sends, fixed when the effect is built."""

    method: str
    url: str
    shown: str  # the URL as evidence holds it
    options: dict[str, Any]
    headers: dict[str, str]
    keyed: bool
    bound: float
    known: tuple[str, ...]  # the request's credentials: never in a reason


TransportT = TypeVar("TransportT", httpx.BaseTransport, httpx.AsyncBaseTransport)
ClientT = TypeVar("ClientT", httpx.Client, httpx.AsyncClient)


class _Base(Generic[TransportT, ClientT]):
    _client: ClientT

    def __init__(
        self,
        base_url: str = "",
        *,
        idempotency_keys: bool = False,
        key_header: str = DEFAULT_KEY_HEADER,
        key_value: Callable[[str], str] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        lookup_timeout: float = 10.0,
        backoff: float = 0.25,
        verify_tls: bool | ssl.SSLContext = True,
        transport: TransportT | None = None,
    ) -> None:
        if not isinstance(base_url, str):
            raise UsageError(f"base_url is a string, not {type(base_url).__name__}")
        if not isinstance(idempotency_keys, bool):
            raise UsageError("idempotency_keys is True or False")
        if not isinstance(key_header, str) or not re.fullmatch(r"[A-Za-z0-9-]{1,64}", key_header):
            raise UsageError(f"key_header must be an HTTP header name, not {key_header!r}")
        if key_value is not None and not callable(key_value):
            raise UsageError("key_value must be a function of the effect key, or None")
        for name, value in (("timeout", timeout), ("lookup_timeout", lookup_timeout)):
            if value is not None and not positive(value):
                raise UsageError(f"{name} must be a positive number of seconds, not {value!r}")
        if not positive(backoff, zero=True):
            raise UsageError(f"backoff must be a number of seconds >= 0, not {backoff!r}")
        self.base_url = base_url
        self.idempotency_keys = idempotency_keys
        self.key_header = key_header
        self._key_value = key_value
        self._headers = dict(headers or {})
        self.timeout = timeout
        self.lookup_timeout = lookup_timeout
        self.backoff = backoff
        self._client = self._open(transport, transport_options(verify_tls))

    def _open(self, transport: TransportT | None, options: dict[str, Any]) -> ClientT:
        raise NotImplementedError

    def provider_key(self, key: EffectKey | str) -> str:
        """The idempotency key this provider is sent for an effect key.

        A function of the effect key alone (by default its text), so every
        retry of the same intent — another attempt, another worker, after a
        crash — sends the same value.

        Raises:
            UsageError: the value is not a valid header value (1-255 visible ASCII).
        """
        text = key.value if isinstance(key, EffectKey) else key
        value = text if self._key_value is None else self._key_value(text)
        if not isinstance(value, str) or not _HEADER_VALUE.fullmatch(value):
            raise UsageError(
                "a provider idempotency key is 1 to 255 visible ASCII characters; "
                f"{'the effect key' if self._key_value is None else 'key_value()'} gave {value!r}"
            )
        return value

    def _build(
        self,
        perform_of: Callable[[_Call], Callable[[], Any]],
        key: EffectKey | str,
        kind: str,
        method: str,
        url: str,
        o: dict[str, Any],
    ) -> Effect:
        """The effect of :meth:`Provider.effect` (``o``: its keyword arguments)."""
        if not isinstance(method, str) or not re.fullmatch(r"[A-Za-z]{1,16}", method):
            raise UsageError(f"method must be an HTTP method, not {method!r}")
        if not isinstance(url, str):
            raise UsageError(f"url is a string, not {type(url).__name__}")
        body = {k: o[k] for k in ("json", "data", "content") if o[k] is not None}
        if len(body) > 1:
            raise UsageError("give at most one of json=, data= and content=")
        policy = o["policy"] or Policy()
        if not isinstance(policy, Policy):
            raise UsageError(f"policy must be a Policy, not {type(policy).__name__}")
        limit = policy.lease_seconds
        bound = limit / 2 if o["bound"] is None else o["bound"]
        if not positive(bound) or bound >= limit:
            raise UsageError(
                f"bound must be a positive number of seconds below the policy's lease "
                f"({limit:g} s), not {bound!r}"
            )
        headers = dict(o["headers"] or {})
        if any(name.lower() == self.key_header.lower() for name in headers):
            raise UsageError(f"the {self.key_header} header is actonce's to set")
        if self.idempotency_keys:
            headers[self.key_header] = self.provider_key(key)
        options = dict(body)
        if o["params"] is not None:
            options["params"] = o["params"]
        try:  # built once now, so a bad URL or body is refused before any claim
            request = self._client.build_request(method.upper(), url, headers=headers, **options)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, TypeError, ValueError) as exc:
            raise UsageError(f"cannot build the request: {exc}") from exc
        if request.url.scheme not in ("http", "https"):
            raise UsageError(f"an effect's URL is http or https, not {request.url.scheme!r}")
        shown = scrub_url(str(request.url))
        known = _credentials(request)
        call = _Call(
            method.upper(), url, shown, options, headers, self.idempotency_keys, bound, known
        )
        payload = o["payload"]
        if payload is None:
            # The URL as given (relative to base_url: the same intent on another
            # host alias is the same payload), without secret query values.
            payload = {"method": call.method, "url": scrub_url(url), **body}
            if o["params"] is not None:
                payload["params"] = o["params"]
            if isinstance(payload.get("content"), bytes):
                payload["content"] = payload["content"].decode("utf-8", "replace")
        return Effect(
            key=key,
            kind=kind,
            payload=payload,
            perform=perform_of(call),
            verify=o["verify"],
            precondition=o["precondition"],
            policy=policy,
            secret_fields=o["secret_fields"],
            gate=o["gate"],
            refresh=o["refresh"],
        )

    def _exchange(self, call: _Call) -> Generator[Send | Pause, Reply | None, dict[str, Any]]:
        """The exchange of one perform, starting now (its drivers: each twin's ``_run``)."""
        return exchange(
            call.method,
            call.shown,
            keyed=call.keyed,
            started=time.monotonic(),
            bound=call.bound,
            timeout=self.timeout,
            backoff=self.backoff,
        )

    def _request(self, call: _Call, op: Send, trace: Any) -> httpx.Request:
        return self._client.build_request(
            call.method,
            call.url,
            headers=call.headers,
            timeout=httpx.Timeout(max(op.timeout, 0.001)),
            extensions={"trace": trace},
            **call.options,
        )

    def _lookup_request(self, url: str, params: Mapping[str, Any] | None) -> httpx.Request:
        return self._client.build_request(
            "GET", url, params=params, timeout=httpx.Timeout(self.lookup_timeout)
        )


class Provider(_Base[httpx.BaseTransport, httpx.Client]):
    """One HTTP API that effects are performed against (sync; ``AsyncProvider``: same names).

    Args:
        base_url: the API's root (``https://api.example.com``); effect and
            lookup URLs are relative to it (or absolute).
        idempotency_keys: the provider honours an idempotency key: a repeat
            of a request with the same key is answered with the first one's
            result, and a repeat while it is processed with ``409``. Only
            then is a request whose outcome is open sent again, with the same
            key, inside the perform's bound. Off: never sent twice.
        key_header: the header that carries the key.
        key_value: how the key is formed from the effect key's text
            (default: the text itself); a pure function of it.
        headers: sent with every request (``Authorization`` ...); never recorded.
        timeout: the cap of each send's own timeout, seconds (default: what
            the perform's bound leaves). With keys, keep it well below the
            bound so that a hung send leaves time for a resend.
        lookup_timeout: the timeout of a lookup, seconds.
        backoff: the first pause between two sends (doubles, up to 4 s; a
            ``Retry-After`` is honoured inside the bound).
        verify_tls: verify the provider's certificate (or the
            ``ssl.SSLContext`` to verify it with).
        transport: an httpx transport to use instead of the default one
            (which makes a new connection for every request and never
            retries). Yours must not retry a request either.
    """

    def _open(self, transport: httpx.BaseTransport | None, options: dict[str, Any]) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url,
            headers=self._headers,
            follow_redirects=False,
            transport=transport or httpx.HTTPTransport(**options),
        )

    def __enter__(self) -> Provider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._client.close()

    def effect(
        self,
        key: EffectKey | str,
        kind: str,
        method: str,
        url: str,
        *,
        verify: Callable[[], Verdict],
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        content: bytes | str | None = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        payload: Any = None,
        policy: Policy | None = None,
        bound: float | None = None,
        precondition: Callable[[], bool] | None = None,
        gate: Gate | None = None,
        refresh: Callable[[], Any] | None = None,
        secret_fields: tuple[str, ...] = (),
    ) -> Effect:
        """An effect whose perform sends ``method url`` once (see the class).

        Args:
            key: the effect key; with ``idempotency_keys`` also the source of
                the provider's key (:meth:`provider_key`).
            kind: the effect kind (reconcile finds its verifier by it).
            method, url: the request (``url`` relative to ``base_url``).
            verify: read-only check (e.g. :meth:`lookup` of the reference).
            json, data, content: the body (at most one).
            params: query parameters.
            headers: this request's own headers (never recorded).
            payload: what the ledger stores for the effect (default: method,
                URL and body); secret fields are redacted as always.
            policy: the effect's policy (default ``Policy()``).
            bound: seconds the whole perform may take, resends included
                (default: half the policy's lease, so a perform is over
                before the lease it holds could run out). Below the lease.
            precondition, gate, refresh, secret_fields: as for ``actonce.Effect``.

        Raises:
            UsageError: a bad method, URL, body, bound or key.
        """
        # locals(): the keyword arguments above, by name (one builder for both twins)
        return self._build(self._perform_of, key, kind, method, url, locals())

    def _perform_of(self, call: _Call) -> Callable[[], dict[str, Any]]:
        return lambda: self._run(call)

    def lookup(
        self,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        items: Select = None,
        ref: Ref = "id",
        match: Callable[[Any], bool] | None = None,
        absent_on_404: bool = False,
    ) -> Verdict:
        """Look the effect up (GET) and **count** the matches.

        Args:
            url: the lookup (by the provider key, or by your reference).
            params: its query parameters (``{"reference": "ORDER-9201"}``).
            items: where the matches are in the JSON answer: a field holding
                the list (``"data"``), a function of the body, or ``None``
                (the body is the list, or the one match).
            ref: each match's reference (``result_ref``): a field or a function.
            match: keeps only the matches it returns true for (the amount, say).
            absent_on_404: a 404 means "no such object" (a lookup by id or key).

        Returns:
            ``Absent``, ``Confirmed`` (one match) or a duplicate
            (``Confirmed(count=n)``); ``Unavailable`` when the lookup failed
            or its answer cannot be read — never an absence.
        """
        request = self._lookup_request(url, params)
        try:
            response = self._client.send(request, follow_redirects=True)
        except httpx.HTTPError as exc:
            return lookup_failed(exc)
        return lookup_verdict(response, items, ref, match, absent_on_404)

    def _run(self, call: _Call) -> dict[str, Any]:
        steps = self._exchange(call)
        reply: Reply | None = None
        while True:
            try:
                op = steps.send(reply)
            except StopIteration as stop:
                done: dict[str, Any] = stop.value
                return done
            if isinstance(op, Pause):
                time.sleep(op.seconds)  # sync-ok: the pause between two sends of one key
                reply = None
            else:
                reply = self._send(call, op)

    def _send(self, call: _Call, op: Send) -> Reply:
        trace = Trace()
        at = time.monotonic()
        try:
            response = self._client.send(self._request(call, op, trace), stream=True)
        except httpx.TransportError as exc:
            return failure_of(exc, trace, at, call.known)
        try:
            raw = b""
            if answer_of_status(response.status_code) is not Answer.ACCEPTED:
                try:
                    for chunk in response.iter_bytes():
                        raw += chunk
                        if len(raw) >= REASON_BYTES:
                            break
                except httpx.HTTPError:
                    pass  # the status stands; the reason is lost
        finally:
            response.close()
        return reply_of(response, raw, at, call.known)


class AsyncProvider(_Base[httpx.AsyncBaseTransport, httpx.AsyncClient]):
    """The async twin of :class:`Provider`: same arguments, same names (``aclose``)."""

    def _open(
        self, transport: httpx.AsyncBaseTransport | None, options: dict[str, Any]
    ) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.base_url,
            headers=self._headers,
            follow_redirects=False,
            transport=transport or httpx.AsyncHTTPTransport(**options),
        )

    async def __aenter__(self) -> AsyncProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._client.aclose()

    def effect(
        self,
        key: EffectKey | str,
        kind: str,
        method: str,
        url: str,
        *,
        verify: Callable[[], Verdict | Awaitable[Verdict]],
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        content: bytes | str | None = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        payload: Any = None,
        policy: Policy | None = None,
        bound: float | None = None,
        precondition: Callable[[], bool | Awaitable[bool]] | None = None,
        gate: Gate | None = None,
        refresh: Callable[[], Any] | None = None,
        secret_fields: tuple[str, ...] = (),
    ) -> Effect:
        """See :meth:`Provider.effect`; the perform is a coroutine (for ``AsyncLedger``)."""
        return self._build(self._perform_of, key, kind, method, url, locals())

    def _perform_of(self, call: _Call) -> Callable[[], Awaitable[dict[str, Any]]]:
        async def perform() -> dict[str, Any]:
            return await self._run(call)

        return perform

    async def lookup(
        self,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        items: Select = None,
        ref: Ref = "id",
        match: Callable[[Any], bool] | None = None,
        absent_on_404: bool = False,
    ) -> Verdict:
        """See :meth:`Provider.lookup`."""
        request = self._lookup_request(url, params)
        try:
            response = await self._client.send(request, follow_redirects=True)
        except httpx.HTTPError as exc:
            return lookup_failed(exc)
        return lookup_verdict(response, items, ref, match, absent_on_404)

    async def _run(self, call: _Call) -> dict[str, Any]:
        steps = self._exchange(call)
        reply: Reply | None = None
        while True:
            try:
                op = steps.send(reply)
            except StopIteration as stop:
                done: dict[str, Any] = stop.value
                return done
            if isinstance(op, Pause):
                await asyncio.sleep(op.seconds)
                reply = None
            else:
                reply = await self._send(call, op)

    async def _send(self, call: _Call, op: Send) -> Reply:
        trace = Trace()
        at = time.monotonic()
        request = self._request(call, op, trace.atrace)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TransportError as exc:
            return failure_of(exc, trace, at, call.known)
        try:
            raw = b""
            if answer_of_status(response.status_code) is not Answer.ACCEPTED:
                try:
                    async for chunk in response.aiter_bytes():
                        raw += chunk
                        if len(raw) >= REASON_BYTES:
                            break
                except httpx.HTTPError:
                    pass  # the status stands; the reason is lost
        finally:
            await response.aclose()
        return reply_of(response, raw, at, call.known)


def _credentials(request: httpx.Request) -> tuple[str, ...]:
    """What a provider could echo back that must never be stored: secret header
    values (each word of ``Bearer <token>`` too) and secret query values."""
    found: list[str] = []
    for name, value in request.headers.items():
        if is_secret_name(name):
            found += [value, *(w for w in value.split() if len(w) >= 8)]
    found += [v for n, v in request.url.params.multi_items() if is_secret_name(n) and v]
    return tuple(found)
