"""Evidence is served only from where the ledger says; no page shows a secret."""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from actonce.console import ConsoleServer, Settings, ref_of

from .conftest import sign_in
from .world import CANARIES, World, png

SignIn = Callable[..., tuple[httpx.Client, str]]


def _evidence_seq(world: World, name: str = "unknown") -> int:
    events = world.ledger.events(world.keys[name])
    return next(e.seq for e in events if isinstance(e.data.get("evidence"), str))  # type: ignore[misc]


def _folder(world: World) -> Path:
    events = world.ledger.events(world.keys["unknown"])
    return Path(next(e.data["evidence"] for e in events if "evidence" in e.data))


# --- evidence ------------------------------------------------------------------------------


def test_evidence_files_have_their_content_types(
    server: ConsoleServer, world: World, signed_in: SignIn
) -> None:
    client, _ = signed_in("ana")
    base = f"/effects/{ref_of(world.keys['unknown'])}/evidence/{_evidence_seq(world)}"
    shot = client.get(f"{base}/screenshot.png")
    assert shot.status_code == 200 and shot.headers["content-type"] == "image/png"
    assert shot.content == png()
    html = client.get(f"{base}/page.html")
    assert html.headers["content-type"].startswith("text/html")
    assert html.headers["content-security-policy"].startswith("sandbox")
    assert "Invoice form" in html.text
    wire = client.get(f"{base}/wire.json")
    assert wire.headers["content-type"] == "application/json" and "POST" in wire.text


@pytest.mark.parametrize(
    "tail",
    [
        "..%2F..%2F..%2Fetc%2Fpasswd",
        "%2e%2e%2fmeta.json",
        "..%5Cmeta.json",
        "meta.json%00.png",
        "ledger.db",
        "screenshot.PNG",
        "%2Fetc%2Fpasswd",
    ],
)
def test_no_path_leaves_the_named_files(
    server: ConsoleServer, world: World, signed_in: SignIn, tail: str
) -> None:
    client, _ = signed_in("ana")
    base = f"/effects/{ref_of(world.keys['unknown'])}/evidence/{_evidence_seq(world)}"
    r = client.get(f"{base}/{tail}")
    assert r.status_code == 404, tail
    assert "root:" not in r.text


def test_evidence_is_only_what_this_effects_events_name(
    server: ConsoleServer, world: World, signed_in: SignIn
) -> None:
    client, _ = signed_in("ana")
    seq = _evidence_seq(world)
    # The right file under another effect's path: that effect's events do not name it.
    other = f"/effects/{ref_of(world.keys['needs_review'])}/evidence/{seq}/screenshot.png"
    assert client.get(other).status_code == 404
    # An event of this effect that names no folder.
    first = world.ledger.events(world.keys["unknown"])[0].seq
    mine = f"/effects/{ref_of(world.keys['unknown'])}/evidence/{first}/screenshot.png"
    assert client.get(mine).status_code == 404
    assert (
        client.get(f"/effects/{ref_of('no-such-key')}/evidence/{seq}/meta.json").status_code == 404
    )


def test_a_link_out_of_the_folder_is_refused(fresh: World, tmp_path: Path) -> None:
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("SECRET-OUTSIDE-THE-FOLDER", encoding="utf-8")
    folder = _folder(fresh)
    (folder / "page.html").unlink()
    os.symlink(outside, folder / "page.html")
    with ConsoleServer(fresh.ledger, fresh.reviewers()) as srv:
        client, _ = sign_in(srv.url, "ana")
        with contextlib.closing(client):
            base = f"/effects/{ref_of(fresh.keys['unknown'])}/evidence/{_evidence_seq(fresh)}"
            r = client.get(f"{base}/page.html")
            assert r.status_code == 404 and "SECRET-OUTSIDE" not in r.text
            assert client.get(f"{base}/meta.json").status_code == 200  # the others still are
            page = client.get(f"/effects/{ref_of(fresh.keys['unknown'])}").text
            assert f"{base}/page.html" not in page and f"{base}/meta.json" in page


def test_evidence_roots_confine_the_folders(fresh: World, tmp_path: Path) -> None:
    elsewhere = tmp_path / "other-root"
    elsewhere.mkdir()
    base = f"/effects/{ref_of(fresh.keys['unknown'])}/evidence/{_evidence_seq(fresh)}"
    confined = Settings(evidence_roots=(elsewhere,))
    with ConsoleServer(fresh.ledger, fresh.reviewers(), confined) as srv:
        client, _ = sign_in(srv.url, "ana")
        with contextlib.closing(client):
            assert client.get(f"{base}/screenshot.png").status_code == 404
            page = client.get(f"/effects/{ref_of(fresh.keys['unknown'])}").text
            assert "outside the evidence roots" in page
    # The control: the folder's own root serves it.
    right = Settings(evidence_roots=(_folder(fresh).parent / "..",))
    with ConsoleServer(fresh.ledger, fresh.reviewers(), right) as srv:
        client, _ = sign_in(srv.url, "ana")
        with contextlib.closing(client):
            assert client.get(f"{base}/screenshot.png").status_code == 200


# --- secrets -------------------------------------------------------------------------------

_LINKS = re.compile(r'(?:href|src)="(/[^"]*)"')


def test_no_page_shows_a_secret_canary(
    server: ConsoleServer, world: World, signed_in: SignIn
) -> None:
    # Some canaries are at rest where the console reads them (the evidence
    # files): only the console's own scrubbing hides them. A bearer in a note
    # is free text the core scrubs at rest since issue 20.
    raw = world.ledger.get(world.keys["canary"])
    assert raw is not None and "CANARY-BEARER-4" not in raw.payload
    # These the core redacted at rest already.
    assert "CANARY-PASSWORD-1" not in raw.payload and "CANARY-URLTOKEN-3" not in raw.payload
    assert "CANARY-WIRE-5" in (_folder(world) / "wire.json").read_text(encoding="utf-8")
    client, _ = signed_in("ana")
    start = ["/", "/overview", "/receipts", "/approvals"]
    start += [f"/?status={s}" for s in ("review", "unknown", "needs_review", "failed", "abandoned")]
    start += [f"/approvals?status={s}" for s in ("pending", "approved", "held", "consumed")]
    start += [f"/effects/{ref_of(k)}" for k in world.keys.values()]
    start += [f"/approvals/{p}" for p in world.packets.values()]
    seen: set[str] = set()
    todo = list(start)
    while todo:  # every page, and every local link and image on it
        path = todo.pop()
        if path in seen or path.startswith("/static/") or "/logout" in path:
            continue
        seen.add(path)
        r = client.get(path)
        assert r.status_code == 200, path
        text = r.text if "image" not in r.headers.get("content-type", "") else ""
        for canary in CANARIES:
            assert canary not in text, f"{canary} shown on {path}"
            assert canary not in str(r.headers), f"{canary} in the headers of {path}"
        todo += [html_unescape(p) for p in _LINKS.findall(text)]
    assert len(seen) >= 25
    # The control: the canary's page did render its payload, masked.
    page = client.get(f"/effects/{ref_of(world.keys['canary'])}").text
    assert "&#34;password&#34;: &#34;[redacted]&#34;" in page or '"password": "[redacted]"' in page
    assert "hooks.example/cb?token=[redacted]" in page


def html_unescape(text: str) -> str:
    return text.replace("&amp;", "&")


def test_the_console_socket_is_tcp_so_small_pages_are_not_held_back(fresh: World) -> None:
    # See tests/sandbox/test_app.py: without IPPROTO_TCP asyncio leaves Nagle
    # on, and every small page waits for a delayed ACK (~40 ms).
    with ConsoleServer(fresh.ledger, fresh.reviewers()) as srv:
        assert srv._sock is not None
        assert srv._sock.proto == socket.IPPROTO_TCP
