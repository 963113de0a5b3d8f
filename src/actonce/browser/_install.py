"""Obtaining a Chromium when none is found (``actonce demo`` on a fresh machine).

In order, each step only when the one before it did not give a Chromium:

1. the one already there (:func:`find_chromium`);
2. Playwright's own download (``playwright install chromium``). Where its
   download host cannot be reached it fails within seconds (a non-zero exit);
   it is also cut off after ``playwright_timeout`` seconds;
3. the system's package manager, where that is allowed: Debian's
   ``apt-get install -y chromium``, run as root only (never through sudo:
   a password prompt would hang a script);
4. otherwise :class:`BrowserNotFound`, whose one-line message is the exact
   command to run.

The commands are looked up on ``PATH`` (``playwright``, ``apt-get``);
without a ``playwright`` on ``PATH`` it is ``python -m playwright``. Every
step says what it does through ``progress`` (one line each), and the Chromium
found is exported as ``$ACTONCE_CHROMIUM`` so that child processes (the
demo's workers) drive the same one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._discovery import chromium_version, find_chromium
from ._errors import BrowserNotFound

__all__ = ["Obtained", "ensure_chromium"]

PLAYWRIGHT_TIMEOUT = 300.0
"""Seconds Playwright's download may take before it counts as failed."""
APT_TIMEOUT = 900.0
"""Seconds ``apt-get update`` + ``apt-get install`` may take."""


@dataclass(frozen=True, slots=True)
class Obtained:
    """The Chromium to drive, and how it was obtained."""

    path: str
    version: str | None
    how: str  # "found", "playwright" or "apt-get"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def _run(cmd: Sequence[str], timeout: float, env: dict[str, str] | None = None) -> str | None:
    """Run ``cmd``; ``None`` when it succeeded, else why it did not (one line)."""
    try:
        proc = subprocess.run(
            list(cmd),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return f"gave up after {timeout:.0f} s"
    except OSError as exc:
        return exc.strerror or str(exc)
    if proc.returncode != 0:
        return f"exit {proc.returncode}: {_last_line(proc.stderr or proc.stdout)}"
    return None


def _found() -> str | None:
    try:
        return find_chromium()
    except BrowserNotFound:
        return None


def _is_root() -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


def _playwright_cmd() -> list[str]:
    script = shutil.which("playwright")
    return [script] if script else [sys.executable, "-m", "playwright"]


def _command_for_user(apt: str | None, root: bool, *, playwright_failed: bool) -> str:
    if apt is not None:
        return "apt-get install -y chromium" if root else "sudo apt-get install -y chromium"
    if not playwright_failed:
        return "python -m playwright install chromium"
    return "ACTONCE_CHROMIUM=/path/to/chromium actonce demo"


def ensure_chromium(
    progress: Callable[[str], None] = lambda _line: None,
    *,
    install: bool = True,
    playwright_timeout: float = PLAYWRIGHT_TIMEOUT,
    apt_timeout: float = APT_TIMEOUT,
) -> Obtained:
    """A Chromium to drive: the one found, else one installed (see the module).

    Raises:
        BrowserNotFound: none found and none could be installed; the message
            is one line ending with the command to run.
    """
    path = _found()
    if path is not None:
        os.environ.setdefault("ACTONCE_CHROMIUM", path)
        return Obtained(path, chromium_version(path), "found")
    apt, root = shutil.which("apt-get"), _is_root()
    if not install:
        raise BrowserNotFound(
            f"no Chromium found (installing is off): run `{_command_for_user(apt, root, playwright_failed=False)}` "
            "or set ACTONCE_CHROMIUM to its path"
        )
    tried: list[str] = []
    cmd = [*_playwright_cmd(), "install", "chromium"]
    progress("no Chromium found: trying Playwright's download (playwright install chromium) ...")
    started = time.monotonic()
    why = _run(cmd, playwright_timeout)
    path = _found() if why is None else None
    if path is not None:
        return _done(
            path,
            "playwright",
            f"Playwright's download ({time.monotonic() - started:.0f} s)",
            progress,
        )
    tried.append(f"Playwright's download failed: {why or 'no Chromium after it'}")
    if apt is not None and root:
        progress(
            f"{tried[-1]}; installing Debian's chromium with apt-get "
            "(apt-get update, apt-get install -y chromium; a minute or two) ..."
        )
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        started = time.monotonic()
        why = _run([apt, "update", "-qq"], apt_timeout, env)
        if why is None:
            left = max(1.0, apt_timeout - (time.monotonic() - started))
            why = _run([apt, "install", "-y", "-qq", "chromium"], left, env)
        path = _found() if why is None else None
        if path is not None:
            took = f"{time.monotonic() - started:.0f} s"
            return _done(path, "apt-get", f"`apt-get install -y chromium` ({took})", progress)
        tried.append(f"apt-get failed: {why or 'no chromium on PATH after it'}")
    elif apt is not None:
        tried.append("apt-get needs root")
    hint = (
        f"run `{_command_for_user(apt, root, playwright_failed=True)}`"
        if apt is not None
        else "install Chromium with your system's package manager, then run "
        f"`{_command_for_user(apt, root, playwright_failed=True)}`"
    )
    raise BrowserNotFound(
        f"no Chromium found and none could be installed ({'; '.join(tried)}): {hint}"
    )


def _done(path: str, how: str, what: str, progress: Callable[[str], None]) -> Obtained:
    version = chromium_version(path)
    progress(f"installed {version or 'Chromium'} at {path} with {what}")
    os.environ["ACTONCE_CHROMIUM"] = path
    return Obtained(path, version, how)
