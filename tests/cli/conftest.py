"""Fixtures of the CLI's tests."""

from __future__ import annotations

import pytest
from inprocess import InProcess


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> InProcess:
    return InProcess(capsys)
