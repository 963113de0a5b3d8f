"""Finding a Chromium to drive."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

from ._errors import BrowserNotFound

__all__ = ["DEFAULT_ARGS", "chromium_version", "find_chromium"]

DEFAULT_ARGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Chromium flags used by default: quiet, no background traffic, container-friendly."""


def _playwright_chromium() -> str | None:
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or str(
        Path.home() / ".cache" / "ms-playwright"
    )
    patterns = (
        "chromium-*/chrome-linux*/chrome",
        "chromium-*/chrome-mac*/Chromium.app/Contents/MacOS/Chromium",
        "chromium-*/chrome-win*/chrome.exe",
    )
    for pattern in patterns:
        found = sorted(glob.glob(os.path.join(root, pattern)), reverse=True)
        if found:
            return found[0]
    return None


def find_chromium() -> str:
    """Path of a Chromium executable.

    Looks, in order, at ``$ACTONCE_CHROMIUM``, Playwright's own downloaded
    Chromium (``$PLAYWRIGHT_BROWSERS_PATH``, else ``~/.cache/ms-playwright``)
    and ``chromium``/``chromium-browser`` on ``PATH`` (Debian's package puts
    it in ``/usr/bin``). :func:`ensure_chromium` installs one when none is
    found.

    Raises:
        BrowserNotFound: none was found; the message says how to install one.
    """
    explicit = os.environ.get("ACTONCE_CHROMIUM")
    if explicit:
        if os.access(explicit, os.X_OK):
            return explicit
        raise BrowserNotFound(f"ACTONCE_CHROMIUM={explicit!r} is not an executable file")
    candidates = [
        _playwright_chromium(),
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    raise BrowserNotFound(
        "no Chromium found: install one with `apt-get install chromium` (Debian/Ubuntu) "
        "or `python -m playwright install chromium`, or set ACTONCE_CHROMIUM to its path"
    )


def chromium_version(path: str, *, timeout: float = 15.0) -> str | None:
    """What ``path --version`` prints (its first line), or None if it would not say."""
    try:
        proc = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in proc.stdout.splitlines() if line.strip()]
    return lines[0] if proc.returncode == 0 and lines else None
