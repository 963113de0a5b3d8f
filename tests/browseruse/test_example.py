"""The docs' browser-use example runs as written, and the adapter's exports are deliberate."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from .conftest import need_browser_use

need_browser_use()
pytestmark = pytest.mark.browser

import actonce.adapters.browser_use as adapter  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "browser_use_agent.py"

EXPORTED = [
    "CDPFirewall",
    "GuardedBrowser",
    "Refused",
    "Request",
    "ScriptedModel",
    "Step",
    "element_index",
    "refusal_advice",
]


def test_the_adapter_exports_what_it_documents() -> None:
    assert adapter.__all__ == EXPORTED, "update EXPORTED here on purpose"
    for name in EXPORTED:
        value = getattr(adapter, name)
        if callable(value) and name != "Step":
            assert value.__doc__, name


async def test_the_example_refuses_the_click_and_posts_once(tmp_path: Path) -> None:
    example = runpy.run_path(str(EXAMPLE), run_name="example_browser_use")
    out = await example["main"](tmp_path)
    assert "refused 1 request(s)" in out["click"] and "publish_post instead" in out["click"]
    assert out["publish"] == ["completed", "skipped"]
    assert [(m, reason) for m, _url, reason in out["refusals"]] == [("POST", "outside_effect")]
    assert out["posts"] == 1
