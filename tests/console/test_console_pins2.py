"""Pins for the console's mutants of seed 2 its tests let through (issue 23, item 2).

``python tests/mutants/areas.py --area console --sample 40 --seed 2`` showed
these unstated: the stylesheet and script served by GET, the page-timing
header, the guard naming the handler it wraps, a receipt page's id, how
long a run id and a tenant may be on a page, a sign-in secret with no
UTF-8 form, and the bounds of ``--hold-minutes``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
from collections.abc import Iterator

import pytest
from starlette.routing import Route

from actonce import EffectRecord, Event, EventType, Status
from actonce.console import ConsoleServer, Reviewers, Settings, _minutes, hash_password
from actonce.console._console import Console
from actonce.console._receipts import receipt_page
from actonce.console._timeline import entries
from actonce.console._words import subject

from .conftest import sign_in
from .world import World


@pytest.fixture
def own_server(world: World) -> Iterator[ConsoleServer]:
    """A server of the test's own: its routes are made (and so mutated) inside the test.

    mutmut credits the module's shared server to whichever test set it up first,
    so a test that checks what ``routes``/``guarded`` build starts its own.
    """
    with ConsoleServer(world.ledger, world.reviewers(), Settings()) as srv:
        yield srv


def test_a_signed_in_reviewer_gets_the_consoles_stylesheet_and_script(
    own_server: ConsoleServer,
) -> None:
    client, _ = sign_in(own_server.url, "ana")
    try:
        for name, media in (("console.css", "text/css"), ("console.js", "text/javascript")):
            answer = client.get(f"/static/{name}")
            assert answer.status_code == 200, f"GET /static/{name} answered {answer.status_code}"
            assert answer.headers["content-type"].startswith(media), answer.headers
            assert answer.content, f"/static/{name} came back empty"
    finally:
        client.close()


def test_every_page_says_how_long_it_took_to_make(own_server: ConsoleServer) -> None:
    client, _ = sign_in(own_server.url, "ana")
    try:
        timing = client.get("/").headers.get("server-timing", "")
    finally:
        client.close()
    assert re.fullmatch(r"app;dur=\d+\.\d\d", timing), f"no page timing header: {timing!r}"


def test_each_guarded_route_names_the_handler_it_wraps(own_server: ConsoleServer) -> None:
    for route in own_server.app.routes:
        assert isinstance(route, Route)
        handler = inspect.unwrap(route.endpoint)
        assert handler is not route.endpoint and callable(handler), (
            f"{route.path}: the guard hides the handler it wraps ({handler!r})"
        )
        assert handler.__name__ == route.endpoint.__name__, (route.path, handler)


def test_a_receipt_page_carries_its_operations_id(world: World) -> None:
    op_id = world.operations["complete"]
    page = receipt_page(Console(world.ledger, world.reviewers()), op_id)
    assert page is not None and page["id"] == op_id, f"the page's id is {page and page['id']!r}"


def _event(run_id: str) -> Event:
    return Event("k", EventType.CLAIMED, 0.0, 1, run_id=run_id)


def test_a_timeline_shows_a_run_id_of_eighty_characters_and_cuts_a_longer_one() -> None:
    (entry,) = entries([_event("r" * 80)])
    assert entry.run_id == "r" * 80, entry.run_id
    (entry,) = entries([_event("r" * 81)])
    assert entry.run_id == "r" * 79 + "…", f"a long run id is not cut to 80: {entry.run_id!r}"


def _record(tenant: str) -> EffectRecord:
    scope = json.dumps({"tenant": tenant, "kind": "invoice", "object": "ORDER-1"})
    return EffectRecord(key="k-1", kind="invoice", status=Status.UNKNOWN, payload_hash="h",
                        fence=1, owner="", lease_expires_at=0.0, payload="{}", scope=scope,
                        created_at=0.0, updated_at=0.0)  # fmt: skip


def test_an_effects_subject_cuts_its_tenant_to_sixty_characters() -> None:
    assert subject(_record("t" * 60)).endswith(" for " + "t" * 60)
    words = subject(_record("t" * 61))
    assert words.endswith(" for " + "t" * 59 + "…"), f"a long tenant is not cut to 60: {words!r}"


def test_a_sign_in_secret_without_a_utf8_form_is_refused_not_an_error() -> None:
    reviewers = Reviewers({"ana": hash_password("ana-password-1")})
    token = reviewers.one_time_token("bo")
    assert reviewers.check("bo", "\udcff") is False, "a lone surrogate signed bo in"
    assert reviewers.check("ana", "\udcff") is False, "a lone surrogate signed ana in"
    assert reviewers.check("bo", token), "the unused token no longer signs in"


def test_hold_minutes_run_from_one_to_a_day() -> None:
    assert _minutes("1") == 1.0 and _minutes("1440") == 1440.0
    for text in ("0.5", "1440.5", "1441"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"^must be from 1 to 1440 minutes$"):
            _minutes(text)
