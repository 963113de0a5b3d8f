"""Suite-wide rules for the parts that need something outside Python.

Browser tests need Chromium. On a laptop without it they are skipped, with
the way to get it; under CI (``CI`` set) a missing Chromium is a failure,
never a silent skip. PostgreSQL tests follow the same rule in their own
conftest files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Under mutmut (docs/testing.md) every line is traced and thousands of mutants
# are judged: generation is slow, and a verdict must not depend on the draw.
settings.register_profile(
    "mutmut",
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# Everywhere else: no per-example deadline. Hypothesis times each example on the
# wall clock (200 ms by default), and a loaded machine fails a fast test with
# DeadlineExceeded / "Unreliable test timings" (tests/unit/test_keys.py: 4 of
# its tests, an example taking 745 ms once and 0.04 ms the next time).
settings.register_profile("suite", deadline=None)
settings.load_profile("mutmut" if "MUTANT_UNDER_TEST" in os.environ else "suite")

_BROWSER_DIRS = ("browser", "browser_ledger", "demo")
_HERE = Path(__file__).resolve().parent


def _needs_browser(item: pytest.Item) -> bool:
    if item.get_closest_marker("browser") is not None:
        return True
    try:
        rel = Path(str(item.fspath)).resolve().relative_to(_HERE)
    except ValueError:
        return False
    return rel.parts[0] in _BROWSER_DIRS


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from actonce.browser import BrowserNotFound, find_chromium

    if not any(_needs_browser(item) for item in items):
        return
    try:
        find_chromium()
    except BrowserNotFound as exc:
        if os.environ.get("CI"):
            raise pytest.UsageError(f"CI needs Chromium for the browser tests: {exc}") from exc
        skip = pytest.mark.skip(reason=f"no Chromium ({exc}); apt-get install chromium")
        for item in items:
            if _needs_browser(item):
                item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def _evidence_outside_the_checkout(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Browser evidence of every test goes to a temporary folder, never ``./actonce-evidence``.

    A session or example that is given no evidence root writes beside the
    ledger or in the working directory; under pytest that was the checkout.
    Tests of the default itself clear the variable with ``monkeypatch``.
    """
    if "ACTONCE_EVIDENCE_DIR" not in os.environ:
        os.environ["ACTONCE_EVIDENCE_DIR"] = str(tmp_path_factory.mktemp("evidence"))
