"""Canaries in what actonce writes about a page it captures as evidence (issue 20, item 1).

A page's own text is the page's content; what actonce adds to an evidence
folder is not: ``meta.json`` (the capture's label, the page's URL, the actor)
and the files it is handed (``wire.json``: the perform's requests). Each
carries canaries here, a real Chromium captures the page, and every byte of
the folder is searched, as tests/hardening/test_canaries.py searches the
ledger.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from .test_canaries import Canaries, _report

pytest.importorskip("playwright")


async def _capture(target: Path, c: Canaries) -> str | None:
    from playwright.async_api import async_playwright

    from actonce.browser import DEFAULT_ARGS, find_chromium
    from actonce.browser._capture import capture_page

    wire = {
        "wire": [
            {
                "method": "POST",
                "url": f"https://bot:{c('wire.userinfo')}@shop.example/pay?token={c('wire.token')}",
                "outcome": f"refused; session cookie {c('wire.reason')}",
            }
        ],
        "password": c("wire.password"),
        "sent": 1,
        "refused": 1,
    }
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=find_chromium(), args=list(DEFAULT_ARGS))
        try:
            page = await browser.new_page()
            await page.set_content("<p>a page</p>")
            return await capture_page(
                page,
                target,
                f"pay password={c('meta.label')}",
                f"agent token={c('meta.actor')}",
                {"wire.json": json.dumps(wire, indent=2)},
            )
        finally:
            await browser.close()


def test_no_canary_reaches_an_evidence_folder(tmp_path: Path) -> None:
    c = Canaries()
    target = tmp_path / "evidence" / "001-pay"
    assert asyncio.run(_capture(target, c)) is None
    files = sorted(p for p in target.iterdir() if p.is_file())
    assert {p.name for p in files} >= {"meta.json", "wire.json", "screenshot.png", "page.html"}
    hits = [hit for p in files for hit in c.hits(f"evidence {p.name}", p.read_bytes())]
    meta = json.loads((target / "meta.json").read_text())
    assert meta["label"].startswith("pay password=") and meta["actor"].startswith("agent token=")
    assert len(c.values) == 6
    assert not hits, _report(hits, c)
