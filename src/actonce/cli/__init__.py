"""The ``actonce`` command: a thin shell over the public API.

Readable tables by default, ``--json`` for scripts. Every error a user can
cause (unknown key, malformed URL, unreadable ledger, newer schema, a bad
argument) prints one line on stderr and exits non-zero; no tracebacks.

Exit codes, for every command: 0 done; 1 an error (one line on stderr); 2 a
bad command line; 3 ``reconcile`` left effects open or unverifiable (run it
again later, or review them); 130 interrupted. ``approve`` and ``deny``: 0
accepted, or the same answer again (nothing changed); 1 refused, the reason
on one line on stderr; both need the user's carrier (``--code``, ``--link``)
or an operator's recorded ``--override --reason``. ``decide``: 0 recorded or
the same decision again; 1 refused. ``demo``, ``chaos``, ``explore``, ``sandbox`` and ``console``
document their own.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from actonce import (
    ActOnceError,
    ApprovalStatus,
    OperationDecision,
    Status,
    __version__,
    scrub_text,
)

from ._approvals import cmd_answer, cmd_approvals, cmd_intents
from ._commands import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    cmd_budgets,
    cmd_init,
    cmd_list,
    cmd_migrate,
    cmd_receipt,
    cmd_reconcile,
    cmd_resolve,
    cmd_show,
    cmd_status,
    cmd_summary,
)
from ._doctor import cmd_doctor, cmd_evidence_prune
from ._firewall import cmd_firewall
from ._operations import cmd_decide, cmd_operation, cmd_operations

__all__ = ["build_parser", "main"]

DECISIONS = [d.value for d in OperationDecision]


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (``actonce: error: ...``)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError(f"must be from 1 to 1000000, not {value}")
    return value


def _text(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError("is not valid text") from None
    return text


def _attempt(text: str) -> int:
    if not text.isdigit() or len(text) > 9 or int(text) < 1:
        raise argparse.ArgumentTypeError(f"is a whole number from 1, not {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="actonce",
        description="Make the side effects of automations safe to retry.",
    )
    parser.add_argument("--version", action="version", version=f"actonce {__version__}")
    common = _Parser(add_help=False)
    common.add_argument(
        "--ledger", help="ledger URL or path (default: $ACTONCE_LEDGER or ./actonce.db)"
    )
    common.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)  # fmt: skip

    p = sub.add_parser("status", parents=[common], help="effects per status (read-only)")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("list", parents=[common], help="list effects (read-only)")
    p.add_argument("--status", choices=[s.value for s in Status])
    p.add_argument("--kind", type=_text)
    p.add_argument("--limit", type=_count, default=100)
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", parents=[common], help="one effect and its full history")
    p.add_argument("key", type=_text, help="effect key or a unique prefix (at least 4 characters)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "intents", parents=[common], help="current intents, or one with its supersession chain"
    )
    p.add_argument(
        "words", nargs="*", type=_text, metavar="[withdraw] ID",
        help="one intent's chain; 'withdraw ID' closes its current version (or --version)",
    )  # fmt: skip
    p.add_argument("--user", type=_text)
    p.add_argument("--all", action="store_true", help="every version, superseded ones too")
    p.add_argument("--limit", type=_count, default=100)
    p.add_argument("--version", type=_attempt, help="withdraw: the version (default: current)")
    p.add_argument("--by", type=_text, help="withdraw: who withdraws it")
    p.add_argument("--reason", type=_text, help="withdraw: why")
    p.set_defaults(func=cmd_intents)

    p = sub.add_parser("approvals", parents=[common], help="approval packets (read-only)")
    p.add_argument("--pending", action="store_true", help="only those waiting for an answer")
    p.add_argument("--status", choices=[s.value for s in ApprovalStatus])
    p.add_argument("--user", type=_text)
    p.add_argument("--limit", type=_count, default=100)
    p.set_defaults(func=cmd_approvals)

    for verb in ("approve", "deny"):
        p = sub.add_parser(
            verb, parents=[common], help=f"{verb} an approval packet (exit 1: refused)"
        )
        p.add_argument("packet_id", type=_text, metavar="ID", help="the packet (apv-...)")
        p.add_argument("--by", required=True, type=_text, help="the user who answers")
        carrier = p.add_mutually_exclusive_group()
        carrier.add_argument("--code", type=_text, help="the reply code ('-': read it from stdin)")
        carrier.add_argument("--link", type=_text, metavar="TOKEN", help="the signed link token")
        carrier.add_argument(
            "--override", action="store_true",
            help="no carrier: an operator answers for the user (needs --reason; recorded)",
        )  # fmt: skip
        p.add_argument("--reason", type=_text, help="why an operator overrides (with --override)")
        p.add_argument("--operator", default=os.environ.get("USER") or "",
                       help="who overrides (default: $USER)")  # fmt: skip
        p.add_argument("--note", type=_text)
        p.set_defaults(func=cmd_answer)

    p = sub.add_parser("resolve", parents=[common], help="record a reviewer's decision")
    p.add_argument("key", type=_text, help="effect key or a unique prefix")
    p.add_argument("decision", choices=["happened", "not-happened", "abandon"])
    p.add_argument("--reason", required=True, type=_text)
    p.add_argument("--reviewer", default=os.environ.get("USER") or "")
    p.add_argument("--result-ref", type=_text, help="where the effect is (with 'happened')")
    p.add_argument(
        "--attempt",
        type=_attempt,
        help="the attempt you decided on (as `actonce show` prints it): refused if it moved on",
    )
    p.set_defaults(func=cmd_resolve)

    p = sub.add_parser(
        "operations", parents=[common], help="operations waiting for a person (read-only)"
    )
    p.add_argument("--due", action="store_true", help="those with work due instead")
    p.add_argument("--limit", type=_count, default=100)
    p.set_defaults(func=cmd_operations)

    p = sub.add_parser("operation", parents=[common], help="one operation: where it stands")
    p.add_argument("operation", type=_text, help="the operation's id")
    p.set_defaults(func=cmd_operation)

    p = sub.add_parser("decide", parents=[common], help="record a decision about an operation")
    p.add_argument("operation", type=_text, help="the operation's id")
    p.add_argument("decision", choices=[d.replace("_", "-") for d in DECISIONS])
    p.add_argument("--reason", required=True, type=_text)
    p.add_argument("--reviewer", default=os.environ.get("USER") or "")
    p.add_argument("--attempt", type=_attempt, help="the attempt `actonce operation` printed")
    p.add_argument("--step", type=_text, help="the step it is about (default: where it stands)")
    p.set_defaults(func=cmd_decide)

    p = sub.add_parser(
        "reconcile", parents=[common], help="verify every unfinished effect and move it on"
    )
    p.add_argument(
        "--verifiers",
        help="comma-separated modules that register verifiers "
        "(also $ACTONCE_VERIFIERS and 'actonce.verifiers' entry points)",
    )
    p.set_defaults(func=cmd_reconcile)

    p = sub.add_parser("receipt", parents=[common], help="the receipt of an operation")
    p.add_argument("operation", type=_text, help="the operation's id")
    p.set_defaults(func=cmd_receipt)

    p = sub.add_parser(
        "budgets", parents=[common], help="budget pools in their current window (read-only)"
    )
    p.add_argument("pools", nargs="*", type=_text, help="only these pools (default: all)")
    p.set_defaults(func=cmd_budgets)

    p = sub.add_parser(
        "firewall", parents=[common], help="the write firewall's refusals per actor (read-only)"
    )
    p.add_argument("--actor", type=_text, help="only this actor")
    p.add_argument("--limit", type=_count, default=20, help="how many latest refusals to list")
    p.set_defaults(func=cmd_firewall)

    p = sub.add_parser("summary", parents=[common], help="an operator run's summary (read-only)")
    p.add_argument("run_id", nargs="?", type=_text, help="the run (default: the latest)")
    p.add_argument("--operator", type=_text, help="the latest run of this operator")
    p.add_argument("--list", action="store_true", help="a table of recent runs")
    p.add_argument("--limit", type=_count, default=20, help="runs in --list (20)")
    p.set_defaults(func=cmd_summary)

    p = sub.add_parser("init", parents=[common], help="create a ledger (once)")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("migrate", parents=[common], help="bring a ledger's schema up to date")
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser(
        "doctor", parents=[common], help="Python, Chromium, the ledger, PostgreSQL (read-only)"
    )
    p.add_argument(
        "--postgres", help="a PostgreSQL DSN to try (default: $ACTONCE_TEST_POSTGRES_DSN)"
    )
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("evidence", help="evidence folders: retention")
    evidence = p.add_subparsers(dest="evidence_command", required=True, metavar="ACTION",
                                parser_class=_Parser)  # fmt: skip
    p = evidence.add_parser(
        "prune",
        parents=[common],
        help="delete the evidence folders named in the ledger's events, older than an age",
    )
    p.add_argument("--older-than", required=True, type=_text, help="an age: 30d, 12h, 2w ...")
    p.add_argument(
        "--root",
        help="the evidence root; nothing outside it is deleted (default: $ACTONCE_EVIDENCE_DIR, "
        "else actonce-evidence beside the SQLite ledger, else ./actonce-evidence)",
    )
    p.add_argument("--dry-run", action="store_true", help="say what would go, delete nothing")
    p.set_defaults(func=cmd_evidence_prune)

    for name, (_module, text) in _DELEGATED.items():
        sub.add_parser(name, help=text, add_help=False)
    return parser


#: Commands with their own option parsers: ``actonce NAME ...`` runs ``module.main(argv)``.
_DELEGATED = {
    "demo": ("actonce.demo", "the browser demo: agents, faults, kills, report"),
    "chaos": ("actonce.chaos", "randomized kill campaigns against a fake provider"),
    "explore": ("actonce.explore", "every interleaving, crash and verdict of the protocol"),
    "sandbox": ("actonce.sandbox", "run the sandbox target app"),
    "console": ("actonce.console", "the review console: did it happen? (a web app)"),
}


def _tolerant_output() -> None:
    # A ledger path with undecodable bytes, or ASCII-only output
    # (PYTHONIOENCODING=ascii), must not turn a table into a traceback.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What argparse cannot say: options that go together."""
    if args.command in ("resolve", "decide") and not args.reviewer.strip():
        parser.error(f"{args.command} needs --reviewer (or $USER)")
    if args.command in ("approve", "deny"):
        if args.code is None and args.link is None and not args.override:
            parser.error(
                f"{args.command} needs the user's carrier (--code or --link), or an "
                "operator's override (--override --reason ...)"
            )
        if args.override and not (args.reason and args.operator.strip()):
            parser.error("--override needs --reason (and --operator, or $USER): it is recorded")
    if args.command == "intents":
        args.withdraw = None
        args.intent_id = args.words[0] if args.words else None
        if len(args.words) == 2 and args.words[0] == "withdraw":
            if not (args.by and args.reason):
                parser.error("intents withdraw needs --by and --reason (both are recorded)")
            args.withdraw = args.words[1]
        elif len(args.words) > 1:
            parser.error("intents takes one ID, or 'withdraw ID'")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``actonce`` command."""
    _tolerant_output()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in _DELEGATED:
        target: Callable[[list[str]], int] = importlib.import_module(_DELEGATED[argv[0]][0]).main
        return int(target(argv[1:]))
    parser = build_parser()
    args = parser.parse_args(argv)
    _check(parser, args)
    func: Callable[[Any], int] = args.func
    try:
        return int(func(args))
    except ActOnceError as exc:
        text = scrub_text(" ".join(str(exc).split()))
        print(f"actonce: error: {text}", file=sys.stderr)
        return EXIT_FAIL
    except KeyboardInterrupt:
        print("actonce: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
