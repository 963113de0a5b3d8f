"""``actonce.http``'s public names, its import cost, bad input, and what it never stores."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import actonce.http
from actonce import EffectKey, Ledger, Outcome, Policy, UsageError
from actonce.http import Provider

from .charges import key_of
from .provider_app import ProviderApp

EXPORTED = [
    "DEFAULT_KEY_HEADER",
    "NO_RESPONSE",
    "RESET",
    "TIMED_OUT",
    "AsyncProvider",
    "HttpError",
    "NotSent",
    "OutcomeUnknown",
    "Provider",
    "Refused",
    "Stopped",
    "counted",
]


def test_the_exported_names() -> None:
    assert actonce.http.__all__ == EXPORTED
    for name in EXPORTED:
        value = getattr(actonce.http, name)
        if callable(value):
            assert value.__doc__, name
            assert value.__module__ == "actonce.http", name


def test_import_actonce_does_not_import_httpx() -> None:
    code = "import sys, actonce, actonce.testing; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


KEY = key_of("BAD-1")
LEASE_2 = Policy(lease_seconds=2)


@pytest.mark.parametrize(
    ("key", "method", "url", "kwargs", "message"),
    [
        (KEY, "PO ST", "/x", {}, "HTTP method"),
        (KEY, "POST", "/x", {"json": {}, "content": b"x"}, "at most one"),
        (KEY, "POST", "/x", {"bound": 60}, "below the policy's lease"),
        (KEY, "POST", "/x", {"bound": 0}, "positive"),
        (KEY, "POST", "/x", {"policy": LEASE_2, "bound": 3}, r"lease \(2 s\)"),
        (KEY, "POST", "/x", {"headers": {"idempotency-key": "k"}}, "actonce's to set"),
        ("clé à moi", "POST", "/x", {}, "visible ASCII"),
        (KEY, "POST", "ftp://x/y", {}, "http or https"),
    ],
)
def test_bad_input_is_refused_before_any_claim(
    key: str,
    method: str,
    url: str,
    kwargs: dict[str, object],
    message: str,
    make_provider: Callable[..., Provider],
) -> None:
    provider = make_provider("http://127.0.0.1:9", idempotency_keys=True)
    with pytest.raises(UsageError, match=message):
        provider.effect(key, "charge", method, url, verify=_never, **kwargs)  # type: ignore[arg-type]


def _never() -> object:
    raise AssertionError("never called")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"key_header": "Idem Key"}, "header name"),
        ({"timeout": 0}, "timeout must be"),
        ({"backoff": -1}, "backoff must be"),
        ({"idempotency_keys": "yes"}, "True or False"),
        ({"key_value": "uuid"}, "key_value must be"),
    ],
)
def test_bad_provider_settings(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        Provider("http://127.0.0.1:9", **kwargs)  # type: ignore[arg-type]


def test_the_provider_key_is_a_function_of_the_effect_key_alone() -> None:
    with Provider(idempotency_keys=True) as p, Provider(key_value=lambda k: k[:40]) as q:
        assert p.provider_key(KEY) == KEY.value == p.provider_key(KEY.value)
        assert q.provider_key(KEY) == KEY.value[:40]
        assert isinstance(KEY, EffectKey)


TOKEN = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"


def test_no_header_token_or_secret_query_reaches_the_ledger(
    app: ProviderApp,
    ledger: Ledger,
    ledger_path: str,
    make_provider: Callable[..., Provider],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider = make_provider(
        app.url,
        idempotency_keys=app.keys,
        headers={"Authorization": f"Bearer {TOKEN}", "X-Api-Key": TOKEN[::-1]},
    )
    app.script("SECRET-1", "status:401")
    monkeypatch.setitem(app.reasons, 401, f"invalid API key provided: {TOKEN}")  # it echoes it
    effect = provider.effect(
        key_of("SECRET-1"),
        "charge",
        "POST",
        f"/v1/charges?api_key={TOKEN}&mode=live",
        json={"reference": "SECRET-1", "amount": 1},
        verify=lambda: provider.lookup(
            "/v1/charges", params={"reference": "SECRET-1"}, items="data"
        ),
    )
    result = ledger.run(effect)
    assert result.outcome is Outcome.HARD_STOP
    ledger.close()
    stored = b"".join(p.read_bytes() for p in Path(ledger_path).parent.glob("ledger.db*"))
    assert stored, "nothing was written"
    for secret in (TOKEN, TOKEN[::-1]):
        assert secret.encode() not in stored
    assert b"mode=live" in stored  # the URL is kept, its secret query value is not
    assert b"invalid API key provided" in stored  # the provider's reason is kept
