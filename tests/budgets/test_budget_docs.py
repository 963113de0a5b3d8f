"""The examples of docs/budgets.md run, in order, in one namespace: they must stay true."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "budgets.md"


def test_the_examples_in_docs_budgets_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 3
    namespace: dict[str, object] = {"__name__": "docs_budgets"}
    for n, block in enumerate(blocks, 1):
        exec(compile(block, f"docs/budgets.md, example {n}", "exec"), namespace)
