"""The sandbox's Jinja2 templates (``templates/``), one environment for every page.

The site's pages and the booking world's share it; ``money`` renders cents
(``12000`` -> ``120.00``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.templating import Jinja2Templates

__all__ = ["TEMPLATES", "money"]


def money(cents: Any) -> str:
    """``12000`` -> ``120.00``."""
    value = int(cents)
    sign = "-" if value < 0 else ""
    return f"{sign}{abs(value) // 100}.{abs(value) % 100:02d}"


TEMPLATES = Jinja2Templates(directory=str(Path(__file__).with_name("templates")))
TEMPLATES.env.filters["money"] = money
