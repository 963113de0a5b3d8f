"""Every python block of README.md and docs/*.md runs as pasted, in a fresh folder.

One interpreter per page: the page's blocks run in order in one namespace, with a new
empty folder as the working directory and no ``$ACTONCE_LEDGER`` — as a reader pastes
them one after another into one session (a later block may use what an earlier one
defined, as the pages are written). A block a page shows as part of a larger program is
preceded by the marker line ``<!-- fragment -->`` and is not run; a marker that no
python block follows fails the page.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from . import _pages

TIMEOUT = 60.0
"""Seconds a page may take; every page takes a few at most."""

# Pages whose blocks drive Chromium: the suite's browser rule (skip on a laptop
# without it, fail under CI) applies to them.
_BROWSER_PAGES = {"README.md", "docs/booking.md", "docs/browser.md"}


def _runnable(page: Path) -> list[_pages.Block]:
    return [b for b in _pages.blocks(page) if b.language == "python" and not b.fragment]


def _params() -> list[object]:
    params: list[object] = []
    for page in _pages.pages():
        name = page.relative_to(_pages.ROOT).as_posix()
        if not _runnable(page):
            continue
        marks: list[pytest.MarkDecorator] = []
        if name in _BROWSER_PAGES:
            marks.append(pytest.mark.browser)
        params.append(pytest.param(page, id=name, marks=marks))
    return params


@pytest.mark.parametrize("page", _params())
def test_the_page_runs_as_pasted(page: Path, tmp_path: Path) -> None:
    folder = tmp_path / "fresh"
    folder.mkdir()
    proc = _pages.run_page(page, folder, timeout=TIMEOUT)
    assert proc.returncode == 0, f"{page.name} does not run as pasted:\n{proc.stderr[-3000:]}"


def test_every_marker_is_followed_by_a_python_block() -> None:
    for page in _pages.pages():
        _pages.blocks(page)  # raises, naming the page and line, on a stray marker


def test_the_readme_first_example_is_not_a_fragment() -> None:
    first = next(b for b in _pages.blocks(_pages.ROOT / "README.md") if b.language == "python")
    assert not first.fragment


@pytest.mark.parametrize(
    "text",
    [
        "<!-- fragment -->\n\nSome prose.\n\n```python\nx = 1\n```\n",
        "<!-- fragment -->\n```bash\nls\n```\n",
        "```python\nx = 1\n```\n<!-- fragment -->\n",
        "<!-- fragment -->\n<!-- fragment -->\n```python\nx = 1\n```\n",
    ],
    ids=["prose-between", "not-python", "at-the-end", "twice"],
)
def test_a_marker_not_followed_by_a_python_block_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="fragment"):
        _pages.parse("page.md", text)


def test_a_marked_block_is_a_fragment_and_the_others_are_not() -> None:
    text = "```python\na = 1\n```\n\n<!-- fragment -->\n```python\nb = 2\n```\n```bash\nls\n```\n"
    found = _pages.parse("page.md", text)
    assert [(b.language, b.fragment, b.line) for b in found] == [
        ("python", False, 2),
        ("python", True, 7),
        ("bash", False, 10),
    ]


def test_a_failing_block_fails_its_page_with_the_page_s_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Intro.\n\n```python\nx = 1\n```\n\n```python\nraise SystemExit(x + 6)\n```\n")
    folder = tmp_path / "fresh"
    folder.mkdir()
    proc = _pages.run_page(page, folder, timeout=TIMEOUT)
    assert proc.returncode == 7  # the second block saw the first one's name


# ---- shell blocks -------------------------------------------------------------------

# Commands that only read the ledger: those a page shows without a placeholder run in
# the folder its python blocks left behind, when they left a ledger there.
_READ_ONLY = {"status", "list", "budgets", "intents", "approvals", "operations", "summary"}
# Commands that hand their arguments to a program of their own (they are not parsed here):
# demo, chaos, explore, sandbox, console run campaigns or servers, too slow for a check.
_DELEGATED = {"demo", "chaos", "explore", "sandbox", "console"}


def _shell_commands(page: Path) -> list[_pages.Command]:
    return [
        command
        for block in _pages.blocks(page)
        if block.language in ("bash", "sh", "shell")
        for command in _pages.commands(block)
    ]


def _self_contained(command: _pages.Command) -> bool:
    return (
        bool(command.argv)
        and command.argv[0] in _READ_ONLY
        and not command.optional
        and not any(w.isupper() or "…" in w or "PLACEHOLDER" in w for w in command.argv)
    )


def test_every_actonce_command_shown_is_one_the_cli_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    from actonce.cli import _check, build_parser

    monkeypatch.setenv("USER", "ana")  # a login shell's; an operator's override names it
    failures: list[str] = []

    shown = [c for page in _pages.pages() for c in _shell_commands(page)]
    assert len(shown) >= 30  # the pages show about forty
    for command in shown:
        if command.argv[0] in _DELEGATED:
            continue
        parser = build_parser()
        try:
            _check(parser, parser.parse_args(list(command.argv)))
        except SystemExit:
            failures.append(f"{command.where}: `actonce {' '.join(command.argv)}`")
    assert not failures, "\n".join(failures)


def test_read_only_commands_shown_run_after_the_page_s_examples(tmp_path: Path) -> None:
    ran = 0
    for page in _pages.pages():
        runnable = [c for c in _shell_commands(page) if _self_contained(c)]
        if not runnable or not _runnable(page):
            continue
        folder = tmp_path / page.stem
        folder.mkdir()
        proc = _pages.run_page(page, folder, timeout=TIMEOUT)
        if proc.returncode != 0 or not (folder / "actonce.db").exists():
            continue  # the page's own test says why; without a ledger there is nothing to read
        for command in runnable:
            done = subprocess.run(
                [sys.executable, "-m", "actonce", *command.argv],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
            )
            assert done.returncode == 0, f"{command.where}: {done.stderr[-2000:]}"
            ran += 1
    assert ran >= 3
