"""``actonce chaos``: randomized kill campaigns against a fake provider.

See :mod:`actonce.chaos._campaign` for the theory of operation.
"""

from __future__ import annotations

from ._campaign import ChaosReport, run_campaign
from ._cli import main

__all__ = ["ChaosReport", "main", "run_campaign"]
