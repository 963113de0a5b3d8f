"""Celery workers SIGKILLed mid-task while the broker redelivers: one order per intent.

Two ``celery worker`` processes (the recipe of ``examples/celery_orders.py``)
on a Redis of the test's own and a PostgreSQL ledger, against an order
service that does not deduplicate (``target.py``): its table is the truth.
See ``celery_campaign.py`` for the campaign; ``ACTONCE_CELERY_CAMPAIGN=long``
runs a longer one (200 intents, 30 random kills).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .services import need

need("celery", "pip install 'actonce[celery]'")

from . import celery_campaign as campaign  # noqa: E402  (needs celery)

pytestmark = pytest.mark.postgres


def _check(report: campaign.Report) -> None:
    print(json.dumps(report.to_json()))
    for ref in sorted({*report.duplicates, *report.lost, *report.unsettled}):
        print(ref, report.trace.get(ref))
    assert report.duplicates == {}, report.to_json()
    assert report.lost == [], report.to_json()
    assert report.unsettled == [], report.to_json()


def test_each_named_point_is_killed_and_redelivered(tmp_path: Path, pg_ledger: str) -> None:
    """Before the mark, after it, after the perform: one kill each, no random kill."""
    points = ("before_mark_executing", "after_mark_executing", "after_perform")
    settings = campaign.Settings(intents=len(points), point_rate=0, random_kills=0)
    report = campaign.run(tmp_path, pg_ledger, settings, points=dict(zip(
        campaign.plan(settings)[0], ([p] for p in points), strict=True)))  # fmt: skip
    print(json.dumps(report.trace, indent=1))
    _check(report)
    assert dict(report.point_kills) == dict.fromkeys(points, 1)
    assert report.redeliveries >= len(points)  # each killed delivery came back
    assert report.outcomes["completed"] + report.outcomes["skipped"] == len(points)


def test_short_campaign(tmp_path: Path, pg_ledger: str) -> None:
    """Crash points and random SIGKILLs of pool processes and whole workers."""
    long = os.environ.get("ACTONCE_CELERY_CAMPAIGN") == "long"
    settings = (
        campaign.Settings(intents=200, random_kills=30, deadline=900.0, seed=1)
        if long
        else campaign.Settings()
    )
    report = campaign.run(tmp_path, pg_ledger, settings)
    _check(report)
    assert report.kills >= settings.random_kills // 2
    assert report.redeliveries >= 1


def test_without_the_ledger_the_same_kills_make_duplicates(tmp_path: Path, pg_ledger: str) -> None:
    """The judge can fail: the same task placing its order without actonce."""
    settings = campaign.Settings(intents=6, point_rate=0.5, random_kills=0,
                                 task="celery_worker.place_order_naive")  # fmt: skip
    report = campaign.run(tmp_path, pg_ledger, settings)
    print(json.dumps(report.to_json()))
    # Every delivery killed after its POST placed its order again when redelivered.
    assert len(report.duplicates) == sum(report.point_kills.values()) > 0
