"""``actonce doctor``: what this machine has for actonce, read-only.

Python, actonce, Playwright, the Chromium that would be driven (path and
version), the ledger (URL with credentials masked, its schema version; it is
opened read-only and never created) and, when ``--postgres`` or
``$ACTONCE_TEST_POSTGRES_DSN`` names one, whether that PostgreSQL answers.
Exit 0 when every check that applies passed, 1 when one failed.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from importlib import metadata
from typing import Any

from actonce import (
    ActOnceError,
    LedgerNotFound,
    UsageError,
    __version__,
    mask_url,
    open_ledger,
    scrub_text,
)

from ._format import print_json

__all__ = ["cmd_doctor", "diagnose"]


def _one_line(exc: BaseException) -> str:
    return scrub_text(" ".join(f"{type(exc).__name__}: {exc}".split()))[:300]


def _python() -> dict[str, Any]:
    return {"ok": True, "version": platform.python_version(), "executable": sys.executable}


def _playwright() -> dict[str, Any]:
    try:
        return {"ok": True, "version": metadata.version("playwright")}
    except metadata.PackageNotFoundError:
        return {"ok": False, "error": "not installed (pip install 'actonce[browser]')"}


def _chromium() -> dict[str, Any]:
    try:
        from actonce.browser import BrowserNotFound, chromium_version, find_chromium
    except ImportError as exc:
        return {"ok": False, "error": f"the browser extra is missing ({exc.name}): "
                "pip install 'actonce[browser]'"}  # fmt: skip
    try:
        path = find_chromium()
    except BrowserNotFound as exc:
        return {"ok": False, "error": str(exc)}
    version = chromium_version(path)
    if version is None:
        return {"ok": False, "path": path, "error": f"{path} --version did not answer"}
    return {"ok": True, "path": path, "version": version}


def _ledger(url: str | None) -> dict[str, Any]:
    try:
        with open_ledger(url, readonly=True) as ledger:
            shown = ledger.url
            version = getattr(ledger.store, "schema_version", None)
            schema = version() if callable(version) else None
    except LedgerNotFound as exc:
        # Not an error: a ledger is made once, by `actonce init` or a first run.
        return {"ok": True, "exists": False, "note": scrub_text(str(exc))}
    except (ActOnceError, OSError) as exc:
        return {"ok": False, "error": _one_line(exc)}
    return {"ok": True, "exists": True, "url": shown, "schema_version": schema}


def _postgres(dsn: str) -> dict[str, Any]:
    shown = mask_url(dsn)
    try:
        import psycopg
    except ImportError:
        return {"ok": False, "url": shown,
                "error": "psycopg is missing: pip install 'actonce[postgres]'"}  # fmt: skip
    try:
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            row = conn.execute("SHOW server_version").fetchone()
    except Exception as exc:  # every failure to connect is the answer here
        return {"ok": False, "url": shown, "error": _one_line(exc)}
    return {"ok": True, "url": shown, "server_version": None if row is None else str(row[0])}


def diagnose(ledger: str | None, postgres: str | None) -> dict[str, Any]:
    """Every check, as one JSON-able dict (``ok`` says whether all passed)."""
    checks: dict[str, Any] = {
        "python": _python(),
        "actonce": {"ok": True, "version": __version__},
        "playwright": _playwright(),
        "chromium": _chromium(),
        "ledger": _ledger(ledger),
    }
    if postgres:
        checks["postgres"] = _postgres(postgres)
    checks["ok"] = all(c["ok"] for c in checks.values())
    return checks


def _line(name: str, check: dict[str, Any], text: str) -> str:
    return f"{name:<11}{'ok  ' if check['ok'] else 'FAIL'}  {text}"


def cmd_doctor(args: argparse.Namespace) -> int:
    dsn = args.postgres or os.environ.get("ACTONCE_TEST_POSTGRES_DSN") or None
    report = diagnose(args.ledger, dsn)
    if args.json:
        print_json(report)
        return 0 if report["ok"] else 1
    py = report["python"]
    print(_line("python", py, f"{py['version']} ({py['executable']})"))
    print(_line("actonce", report["actonce"], report["actonce"]["version"]))
    pw = report["playwright"]
    print(_line("playwright", pw, pw.get("version") or pw.get("error", "")))
    ch = report["chromium"]
    print(_line("chromium", ch, f"{ch['path']} ({ch['version']})" if ch["ok"] else ch["error"]))
    lg = report["ledger"]
    if not lg["ok"]:
        text = lg["error"]
    elif lg["exists"]:
        text = f"{lg['url']} (schema version {lg['schema_version']})"
    else:
        text = f"none yet: {lg['note']}"
    print(_line("ledger", lg, text))
    if "postgres" in report:
        pg = report["postgres"]
        what = f"reachable (server {pg['server_version']})" if pg["ok"] else pg["error"]
        print(_line("postgres", pg, f"{pg['url']} {what}"))
    return 0 if report["ok"] else 1


def cmd_evidence_prune(args: argparse.Namespace) -> int:
    """``actonce evidence prune --older-than 30d``: delete old evidence folders."""
    from actonce.evidence import parse_age, prune

    older_than = parse_age(args.older_than)
    if args.root is not None and not os.path.isdir(args.root):
        raise UsageError(f"--root {args.root!r} is not a folder")
    with open_ledger(args.ledger, readonly=args.dry_run) as ledger:
        report = prune(ledger, older_than, root=args.root, dry_run=args.dry_run)
    if args.json:
        print_json(
            {
                "root": report.root,
                "dry_run": args.dry_run,
                "deleted": report.deleted,
                "kept": len(report.kept),
                "missing": len(report.missing),
                "outside_root": report.outside,
                "freed_bytes": report.freed_bytes,
            }
        )
        return 0
    verb = "would delete" if args.dry_run else "deleted"
    print(
        f"{verb} {len(report.deleted)} evidence folder(s) older than {args.older_than} under "
        f"{report.root} ({report.freed_bytes / 1e6:.1f} MB); kept {len(report.kept)} younger, "
        f"{len(report.missing)} already gone"
    )
    for ref in report.outside:
        print(f"  left alone (outside the evidence root): {ref}")
    return 0
