"""The write firewall's log as ``ledger.firewall`` pages and bounds it (issue 23 item 2).

The ``_run`` area's sample (dev-run-1) found the page cursor (``before``) and
the bound on a refusal's effect key unstated: a second page must start after
the first, and every text a refusal carries is cut to its own bound, the cut
marked. Memory store, a frozen clock.
"""

from __future__ import annotations

from typing import Any

import pytest

from actonce import Ledger, MemoryStore, RefusalReason, UsageError, WriteRefusal
from actonce._run.firewall import storable_refusal
from actonce.testing import FrozenClock


def _refusal(actor: str = "alice", **changes: Any) -> WriteRefusal:
    fields: dict[str, Any] = {
        "actor": actor,
        "method": "POST",
        "url": "http://127.0.0.1:8765/compose",
        "reason": RefusalReason.OUTSIDE_EFFECT,
        "page": "http://127.0.0.1:8765/compose",
    }
    return WriteRefusal(**(fields | changes))


def test_pages_go_on_from_the_id_named_before() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(start=100.0))
    made = [ledger.firewall.record(_refusal(f"a{i % 2}", method="POST")) for i in range(5)]
    ids = [r.id for r in made]
    assert all(isinstance(i, int) for i in ids) and ids == sorted(ids)
    first = ledger.firewall.refusals(limit=2)
    assert [r.id for r in first] == [ids[4], ids[3]]
    second = ledger.firewall.refusals(limit=2, before=first[-1].id)
    assert [r.id for r in second] == [ids[2], ids[1]]
    third = ledger.firewall.refusals(limit=2, before=second[-1].id)
    assert [r.id for r in third] == [ids[0]]
    assert ledger.firewall.refusals(before=ids[0]) == []
    # one actor's pages
    assert [r.id for r in ledger.firewall.refusals(actor="a0", before=ids[4])] == [ids[2], ids[0]]
    assert [r.id for r in ledger.firewall.refusals(actor="a1", limit=1, before=ids[3])] == [ids[1]]


@pytest.mark.parametrize("actor", [1, b"alice"])
def test_an_actor_that_is_no_name_is_refused_with_its_value(actor: Any) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    with pytest.raises(UsageError) as err:
        ledger.firewall.refusals(actor=actor)
    assert str(err.value) == f"actor is a name or None, not {actor!r}"


@pytest.mark.parametrize("before", ["3", 1.5, True, False])
def test_a_cursor_that_is_no_whole_number_is_refused_with_its_value(before: Any) -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock())
    with pytest.raises(UsageError) as err:
        ledger.firewall.refusals(before=before)
    assert str(err.value) == f"before is a refusal's id (a whole number), not {before!r}"


def test_every_text_is_cut_to_its_bound_and_the_cut_is_marked() -> None:
    key = "k" * 300
    path = "/" + "p" * 2500
    clean = storable_refusal(
        _refusal(
            "a" * 200,
            url=f"http://127.0.0.1:8765{path}?token=s3cr3t",
            page="relative" + "q" * 2500,
            effect_key=key,
        )
    )
    assert clean.effect_key == "k" * 199 + "…"
    assert clean.actor == "a" * 200
    # a full URL is held as origin and path, cut by bare_url, never past 2000
    assert clean.url == ("http://127.0.0.1:8765" + path)[:2000]
    assert clean.page == ("relative" + "q" * 2500)[:1999] + "…"
    short = storable_refusal(_refusal(effect_key="k" * 200))
    assert short.effect_key == "k" * 200
    assert storable_refusal(_refusal()).effect_key is None


def test_a_recorded_refusal_keeps_its_bounded_key() -> None:
    ledger = Ledger(MemoryStore(), clock=FrozenClock(start=9.0))
    stored = ledger.firewall.record(_refusal(effect_key="e" * 201))
    assert stored.effect_key == "e" * 199 + "…"
    assert ledger.firewall.refusals() == [stored]


def test_record_takes_only_a_refusal() -> None:
    with pytest.raises(UsageError) as err:
        storable_refusal({"actor": "alice"})  # type: ignore[arg-type]
    assert str(err.value) == "record() takes a WriteRefusal, not dict"


def test_a_refusal_s_urls_are_scrubbed_like_any_text_from_the_world() -> None:
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc"
    url = f"http://h.example/pay/{jwt}"
    clean = storable_refusal(_refusal(url=url, page=url))
    assert clean.url == "http://h.example/pay/[redacted]"
    assert clean.page == "http://h.example/pay/[redacted]"
    ledger = Ledger(MemoryStore(), clock=FrozenClock(start=9.0))
    stored = ledger.firewall.record(_refusal(url=url + "?q=1", page="/relative/" + jwt))
    assert (stored.url, stored.page) == ("http://h.example/pay/[redacted]", "/relative/[redacted]")
