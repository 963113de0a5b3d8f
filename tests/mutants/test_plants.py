"""The planted bugs stay plantable, and (on request) are caught.

Every plant's text must still occur exactly once where it says: code that
moved or changed under a plant fails here at once, instead of the plant
silently no longer testing anything. Running the plants themselves takes a
subprocess per plant; it runs here only with ``ACTONCE_CHECK_PLANTS=1``
(the pure-protocol plants, seconds) or ``ACTONCE_CHECK_PLANTS=all``; the
full check is ``python tests/mutants/check_plants.py`` (docs/testing.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from plants import PLANTS, ROOT, Plant

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("plant", PLANTS, ids=[p.name for p in PLANTS])
def test_every_plant_still_applies(plant: Plant) -> None:
    path = plant.target()
    assert path.is_relative_to(ROOT / "src")
    assert plant.diff()  # the plant changes something
    for test in plant.tests:
        file, _, name = test.partition("::")
        source = (ROOT / file).read_text(encoding="utf-8")
        assert not name or f"def {name.split('[')[0]}(" in source, f"{plant.name}: no {test}"


def test_the_plants_are_caught() -> None:
    which = os.environ.get("ACTONCE_CHECK_PLANTS", "")
    if not which:
        pytest.skip("set ACTONCE_CHECK_PLANTS=1 (pure-protocol plants) or =all to run them")
    args = [] if which == "all" else ["--cheap"]
    done = subprocess.run(
        [sys.executable, str(HERE / "check_plants.py"), *args],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout + done.stderr
