"""The review console: one screen that answers "did it happen?".

``actonce console --ledger URL`` serves, on 127.0.0.1 by default, the
effects that wait for a human (``unknown``, ``needs_review``) and the
approval packets that wait for their user; one page per effect with the
question in words, the evidence, the verdicts and the whole history; the
decision, taken by a reviewer who holds the item, with its consequence
shown before the click. Built on the public API only (see
``docs/console.md``).

::

    actonce console add-reviewer ana --ledger actonce.db     # asks for a password
    actonce console --ledger actonce.db --verifiers my_project.verifiers

Exit codes: 0 stopped cleanly; 1 an error (one line on stderr); 2 a bad
command line.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from actonce import ActOnceError, Ledger, SQLiteStore, open_ledger, scrub_text

from ._app import create_app
from ._console import Console, Settings, evidence_roots, key_of, ref_of
from ._reviewers import Reviewers, check_name, hash_password, write_reviewer
from ._server import ConsoleServer

__all__ = [
    "Console",
    "ConsoleServer",
    "Reviewers",
    "Settings",
    "create_app",
    "hash_password",
    "key_of",
    "main",
    "ref_of",
    "write_reviewer",
]

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
DEFAULT_PORT = 8470
REVIEWERS_ENV = "ACTONCE_CONSOLE_REVIEWERS"
REVIEWERS_FILE_ENV = "ACTONCE_CONSOLE_REVIEWERS_FILE"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= 24 * 60:
        raise argparse.ArgumentTypeError("must be from 1 to 1440 minutes")
    return value


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="actonce console", description="The review console (a web app).")
    p.add_argument("--ledger", help="ledger URL or path (default: $ACTONCE_LEDGER or ./actonce.db)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    p.add_argument(
        "--reviewers",
        help=f"reviewers file (default: ${REVIEWERS_FILE_ENV}, else beside a SQLite ledger)",
    )
    p.add_argument("--verifiers", help="modules that register verifiers (for 'verify again')")
    p.add_argument(
        "--evidence-root",
        action="append",
        default=[],
        metavar="DIR",
        help="serve evidence only from inside DIR (repeatable)",
    )
    p.add_argument("--hold-minutes", type=_minutes, default=10.0, help="a hold's length")
    p.add_argument("--token-for", metavar="NAME", help="print a one-time sign-in token for NAME")
    p.add_argument("--allow-remote", action="store_true", help="bind a non-loopback address")
    p.add_argument("--secure-cookies", action="store_true", help="behind TLS: Secure cookies")
    return p


def _add_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="actonce console add-reviewer", description="Add or replace a reviewer.")
    p.add_argument("name")
    p.add_argument("--ledger", help="the ledger the reviewers file sits beside")
    p.add_argument("--reviewers", help="the reviewers file")
    p.add_argument(
        "--password-stdin", action="store_true", help="read the password from stdin (one line)"
    )
    return p


def reviewers_path(explicit: str | None, ledger: Ledger | None) -> Path | None:
    """Where the reviewers file is: given, named by the environment, or beside the ledger."""
    if explicit:
        return Path(explicit)
    if os.environ.get(REVIEWERS_FILE_ENV):
        return Path(os.environ[REVIEWERS_FILE_ENV])
    store = getattr(ledger, "store", None)
    if isinstance(store, SQLiteStore) and store.path != ":memory:":
        return Path(store.path + ".reviewers")
    return None


def _add_reviewer(argv: list[str]) -> int:
    args = _add_parser().parse_args(argv)
    check_name(args.name)
    ledger = None if args.reviewers else open_ledger(args.ledger, readonly=True)
    try:
        path = reviewers_path(args.reviewers, ledger)
    finally:
        if ledger is not None:
            ledger.close()
    if path is None:
        raise ActOnceError(f"name the reviewers file: --reviewers FILE or ${REVIEWERS_FILE_ENV}")
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass(f"password for {args.name}: ")
        if getpass.getpass("again: ") != password:
            raise ActOnceError("the two passwords differ; nothing written")
    write_reviewer(path, args.name, password)
    print(f"reviewer {args.name} written to {path} (a scrypt hash, never the password)")
    return EXIT_OK


def check_private(path: Path | None) -> None:
    """Refuse a reviewers file that other users of the machine can read or write."""
    if path is None:
        return
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    if mode & 0o077:
        raise ActOnceError(
            f"the reviewers file {path} can be read or written by other users (mode "
            f"{mode & 0o777:o}): its password hashes must stay private; run chmod 600 {path}"
        )


def _serve(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.allow_remote and not args.secure_cookies:
        # Sessions over plain http from other machines: anyone on the path reads the cookie.
        raise ActOnceError(
            "--allow-remote serves other machines: put TLS in front of the console and pass "
            "--secure-cookies too (refused without it: session cookies would travel in clear)"
        )
    roots = evidence_roots(tuple(args.evidence_root))  # before anything is opened
    ledger = open_ledger(args.ledger)
    try:
        ledger.registry.load(args.verifiers)
        path = reviewers_path(args.reviewers, ledger)
        check_private(path)
        reviewers = Reviewers.load(path, os.environ.get(REVIEWERS_ENV))
        token = reviewers.one_time_token(args.token_for) if args.token_for else None
        if not reviewers:
            where = path or f"--reviewers FILE or ${REVIEWERS_FILE_ENV}"
            raise ActOnceError(
                f"no reviewers in {where}: add one with `actonce console add-reviewer NAME`, "
                "or start with --token-for NAME"
            )
        settings = Settings(
            evidence_roots=roots,
            hold_seconds=args.hold_minutes * 60.0,
            secure_cookies=args.secure_cookies,
        )
        try:
            server = ConsoleServer(
                ledger, reviewers, settings, host=args.host, port=args.port,
                allow_remote=args.allow_remote,
            )  # fmt: skip
        except ValueError as exc:
            raise ActOnceError(str(exc)) from None
        url = server.bind()
        print(f"actonce console on {url}  (ledger {ledger.url})", flush=True)
        if token is not None:
            print(f"one-time sign-in for {args.token_for}: {token}  (15 minutes, once)", flush=True)
        server.serve_forever()
    finally:
        ledger.close()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``actonce console``."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] == "add-reviewer":
            return _add_reviewer(args[1:])
        return _serve(args)
    except ActOnceError as exc:
        print(f"actonce console: error: {scrub_text(' '.join(str(exc).split()))}", file=sys.stderr)
        return EXIT_FAIL
    except OSError as exc:
        print(f"actonce console: error: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAIL
    except KeyboardInterrupt:
        return EXIT_OK
