"""The examples of docs/operator.md run, in order, in one namespace: they must stay true."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "operator.md"


def test_the_examples_in_docs_operator_run() -> None:
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 4
    namespace: dict[str, object] = {"__name__": "docs_operator"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for n, block in enumerate(blocks, 1):
            exec(compile(block, f"docs/operator.md, example {n}", "exec"), namespace)
    # The summary the first example prints is the one the page shows (ids aside).
    shown = re.search(r"prints\n\n```\n(.*?)```", text, re.S)
    assert shown is not None
    ids = re.compile(r"op-[0-9a-f]+|\(lease token 1, [^)]*\)|\[[0-9a-f]{12}\]")
    expected = [ids.sub("<id>", line) for line in shown.group(1).splitlines()]
    got = [ids.sub("<id>", line) for line in printed.getvalue().splitlines()]
    assert got == expected
