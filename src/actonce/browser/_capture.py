"""Evidence of one page: a full-page screenshot, its HTML without secrets, metadata.

Password and token-like input values are stripped, cookie values are
redacted from the HTML, the URL is recorded without query or fragment,
cookies are never written. What actonce writes about the page (``meta.json``
and the files it is given, ``wire.json``) passes the ledger's one rule set
(:func:`actonce.scrub_stored`) on its way to the disk, as
every value the ledger stores does.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError

from actonce import scrub_json, scrub_stored

from ._errors import first_line

if TYPE_CHECKING:
    from playwright.async_api import Page

__all__ = ["capture_page", "evidence_name"]

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")

# Serialises the DOM without secrets: password values, hidden fields whose
# names look like tokens, and every value attribute of a password input.
_SANITIZED_HTML = """() => {
  const root = document.documentElement.cloneNode(true);
  const secret = /pass|token|csrf|secret|session|auth|key/i;
  for (const el of root.querySelectorAll('input')) {
    const type = (el.getAttribute('type') || '').toLowerCase();
    if (type === 'password' || (type === 'hidden' && secret.test(el.getAttribute('name') || ''))) {
      el.removeAttribute('value');
    }
  }
  return '<!doctype html>\\n' + root.outerHTML;
}"""


def evidence_name(seq: int, label: str) -> str:
    """The folder of the ``seq``-th capture: ``<nnn>-<label, made safe>``."""
    name = _SAFE.sub("_", label).strip("._")[:60] or "evidence"
    return f"{seq:03d}-{name}"


async def capture_page(
    page: Page, target: Path, label: str, actor: str, files: Mapping[str, str]
) -> str | None:
    """Write ``files``, ``screenshot.png``, ``page.html`` and ``meta.json`` into
    ``target`` (made if missing); return the page's failure, or None."""
    target.mkdir(parents=True, exist_ok=True)
    for file_name, text in files.items():
        (target / _SAFE.sub("_", file_name)).write_text(scrub_stored(text), encoding="utf-8")
    parts = urlsplit(page.url)
    meta: dict[str, object] = {
        "label": label,
        "url": f"{parts.scheme}://{parts.netloc}{parts.path}",
        "actor": actor,
        "captured_at": time.time(),
    }
    error: str | None = None
    try:
        html = str(await page.evaluate(_SANITIZED_HTML))
        for cookie in await page.context.cookies():
            value = cookie.get("value") or ""
            if len(value) >= 4:
                html = html.replace(value, "[redacted]")
        await page.screenshot(path=str(target / "screenshot.png"), full_page=True)
    except PlaywrightError as exc:
        error = meta["page_error"] = first_line(exc)
    else:
        (target / "page.html").write_text(html, encoding="utf-8")
    text = json.dumps(scrub_json(meta), indent=2)
    (target / "meta.json").write_text(text, encoding="utf-8")
    return error
