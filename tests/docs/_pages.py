"""Extract the python blocks of README.md and docs/*.md, and run a page's blocks as pasted.

A page's blocks run in order, in one namespace, in one fresh interpreter whose working
directory is a new empty folder: as a reader pastes them one after another into one
session. A block preceded by the marker line ``<!-- fragment -->`` is a fragment (it
shows part of a larger program) and is skipped; a marker that no python block follows
is an error, so a marker cannot silently outlive the block it was for.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- fragment -->"
_FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block of a page."""

    page: str
    line: int  # 1-based line of the first line of code
    language: str
    code: str
    fragment: bool


def pages() -> list[Path]:
    """README.md and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, with its fragment mark; raises on a stray marker."""
    try:
        name = page.relative_to(ROOT).as_posix()
    except ValueError:
        name = page.as_posix()
    return parse(name, page.read_text(encoding="utf-8"))


def parse(name: str, text: str) -> list[Block]:
    """Every fenced block of the page ``name`` whose text is ``text``; raises on a stray marker."""
    lines = text.splitlines()
    found: list[Block] = []
    pending_marker: int | None = None
    i = 0
    while i < len(lines):
        text = lines[i]
        if text.strip() == MARKER:
            if pending_marker is not None:
                raise ValueError(f"{name}:{pending_marker + 1}: {MARKER} not followed by a block")
            pending_marker = i
            i += 1
            continue
        fence = _FENCE.match(text)
        if fence is None:
            if text.strip() and pending_marker is not None:
                raise ValueError(f"{name}:{pending_marker + 1}: {MARKER} not followed by a block")
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"{name}:{i + 1}: a fence that is never closed")
        language = fence.group(1)
        if pending_marker is not None and language != "python":
            raise ValueError(
                f"{name}:{pending_marker + 1}: {MARKER} is followed by a {language or 'plain'} block"
            )
        found.append(
            Block(
                name,
                i + 2,
                language,
                "\n".join(lines[i + 1 : end]) + "\n",
                pending_marker is not None,
            )
        )
        pending_marker = None
        i = end + 1
    if pending_marker is not None:
        raise ValueError(f"{name}:{pending_marker + 1}: {MARKER} not followed by a block")
    return found


_DRIVER = """\
import json, sys
namespace = {"__name__": "__main__"}
for where, code in json.load(open(sys.argv[1], encoding="utf-8")):
    exec(compile(code, where, "exec"), namespace)
"""


def run_page(page: Path, folder: Path, *, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run the page's non-fragment python blocks in order in ``folder``; return the process."""
    import json

    runnable = [b for b in blocks(page) if b.language == "python" and not b.fragment]
    script = folder.parent / f"{folder.name}-blocks.json"
    script.write_text(
        # Padding each block to its line of the page makes a traceback name the page's lines.
        json.dumps([(str(page), "\n" * (b.line - 1) + b.code) for b in runnable]),
        encoding="utf-8",
    )
    env = dict(os.environ)
    env.pop("ACTONCE_LEDGER", None)
    return subprocess.run(
        [sys.executable, "-c", _DRIVER, str(script)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


_PLACEHOLDER = re.compile(r"<[^>]*>")


@dataclass(frozen=True, slots=True)
class Command:
    """One ``actonce ...`` line of a shell block, split as a shell would."""

    where: str  # page:line
    argv: tuple[str, ...]  # the arguments after ``actonce``
    optional: bool  # the line shows optional parts in [brackets] (they are kept, unbracketed)


def commands(block: Block) -> list[Command]:
    """The ``actonce`` command lines of a shell block (continuations joined, comments dropped)."""
    import shlex

    found: list[Command] = []
    lines = block.code.splitlines()
    n = 0
    while n < len(lines):
        start = n
        text = lines[n]
        while text.rstrip().endswith("\\") and n + 1 < len(lines):
            n += 1
            text = text.rstrip()[:-1] + " " + lines[n]
        n += 1
        words = shlex.split(_PLACEHOLDER.sub("PLACEHOLDER", text), comments=True)
        if not words or words[0] != "actonce":
            continue
        optional = any(w.startswith("[") or w.endswith("]") for w in words)
        argv = tuple(w.strip("[]") for w in words[1:] if w.strip("[]"))
        found.append(Command(f"{block.page}:{block.line + start}", argv, optional))
    return found
