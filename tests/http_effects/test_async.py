"""``AsyncProvider`` on an ``AsyncLedger``: the same exchange, the same cells.

A sample of the fault matrix's rows (each kind of answer once), with and
without keys, checked by the matrix's own ``check``; and the async lookup.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from actonce import Absent, AsyncLedger, Confirmed, Unavailable
from actonce.http import AsyncProvider

from .charges import KIND, key_of, policy
from .conftest import closed_port
from .provider_app import ProviderApp
from .test_fault_matrix import ROWS, arrange, bound_of, check

SAMPLE = {"close_after_commit", "reset_before_commit", "error_after_commit", "in_progress",
          "redirect", "status:429", "closed", "tls"}  # fmt: skip


@pytest.fixture
async def make_async() -> AsyncIterator[Callable[..., AsyncProvider]]:
    made: list[AsyncProvider] = []

    def make(base_url: str, **kw: Any) -> AsyncProvider:
        kw.setdefault("backoff", 0.02)
        made.append(AsyncProvider(base_url, **kw))
        return made[-1]

    yield make
    for p in made:
        await p.aclose()


def _lookup(provider: AsyncProvider, reference: str) -> Callable[[], Any]:
    async def verify() -> Any:
        return await provider.lookup("/v1/charges", params={"reference": reference}, items="data")

    return verify


@pytest.mark.parametrize(
    "row", [r for r in ROWS if (r.fault or r.target) in SAMPLE], ids=lambda r: r.fault or r.target
)
async def test_cell(
    row: Any,
    keys: bool,
    app: ProviderApp,
    tmp_path: Path,
    make_async: Callable[..., AsyncProvider],
) -> None:
    reference, provider = arrange(row, keys, True, app, make_async, prefix="ASYNC")
    effect = provider.effect(
        key_of(reference),
        KIND,
        "POST",
        "/v1/charges",
        json={"reference": reference, "amount": 1200},
        verify=_lookup(make_async(app.url), reference),
        policy=policy(True),
        **bound_of(row),
    )
    async with AsyncLedger.open(str(tmp_path / "ledger.db"), create=True) as ledger:
        result = await ledger.run(effect)
        events = await ledger.events(result.key)
    check(row, keys, True, app, reference, result, events)


async def test_lookup(app: ProviderApp, make_async: Callable[..., AsyncProvider]) -> None:
    provider = make_async(app.url)
    assert await _lookup(provider, "AL-1")() == Absent()
    app.add("AL-1")
    assert isinstance(await _lookup(provider, "AL-1")(), Confirmed)
    down = make_async(f"http://127.0.0.1:{closed_port()}")
    assert isinstance(await _lookup(down, "AL-1")(), Unavailable)
