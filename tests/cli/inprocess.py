"""The CLI run in process: ``main(argv)`` with what it printed captured (the ``cli`` fixture)."""

from __future__ import annotations

import pytest

from actonce.cli import main


class InProcess:
    """``actonce ARGV`` in this process, its output read through ``capsys``."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys

    def run(self, argv: list[str]) -> tuple[int, str, str]:
        """The exit code, stdout and stderr of one command (earlier output dropped)."""
        self._capsys.readouterr()
        code = main(argv)
        out, err = self._capsys.readouterr()
        return code, out, err

    def out(self, argv: list[str]) -> str:
        """What a command that must succeed printed: exit 0, nothing on stderr."""
        code, out, err = self.run(argv)
        assert (code, err) == (0, ""), (code, err)
        return out
