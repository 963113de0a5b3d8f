"""docs/engines.md shows the examples the engine tests run, not a copy that drifts."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "engines.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", DOC, flags=re.S)


def _example(name: str) -> str:
    return (ROOT / "examples" / name).read_text(encoding="utf-8")


def test_the_celery_task_shown_is_the_example_s() -> None:
    (block,) = [b for b in BLOCKS if "@app.task" in b]
    assert block in _example("celery_orders.py")


def test_the_dbos_block_is_the_whole_example() -> None:
    (block,) = [b for b in BLOCKS if "@DBOS.workflow" in b]
    assert block == _example("dbos_orders.py")


def test_the_settings_the_doc_names_are_the_example_s() -> None:
    example = _example("celery_orders.py")
    for setting in ("task_acks_late=True", "task_reject_on_worker_lost=True",
                    "worker_prefetch_multiplier=1", '"visibility_timeout": 3600'):  # fmt: skip
        assert setting in example
