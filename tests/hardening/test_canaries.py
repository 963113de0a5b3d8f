"""Secret canaries: distinct values planted in every secret-like position, then searched for.

Each canary is a unique string put where a secret goes: payload fields in
every spelling users write (at any depth, in lists, in header pairs, in
URLs' userinfo and query), exception messages, verifier reasons, hard-stop
reasons, perform ``details``, evidence references, result references, queue
payloads, a reviewer's reason, the password of the ledger URL and the
fingerprint key itself. Effects are driven through every outcome
(completed, skipped, needs_review, failed, hard_stop, deferred, unknown, a
duplicate detected, the alarm of an overtaken owner, reconcile of orphans).
Then every place a secret could leak is searched: the SQLite file and its
WAL, a ``pg_dump`` of the PostgreSQL schema, the output of every CLI command
(text and ``--json``), the log records, and what the API returned. The
expected count of hits is zero.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import sqlite3
import textwrap
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    Absent,
    Confirmed,
    Effect,
    HardStop,
    Ledger,
    NotPerformed,
    Outcome,
    Policy,
    Registry,
    Unavailable,
    WorkQueue,
    effect_key,
)
from actonce.testing import FrozenClock, observing
from pgtest import drop_schema, postgres_dsn

from ._gated import KEYS, Gated, cli_commands, console_pages, exercise_gated
from ._kit import pg_dump, run_cli, with_schema
from ._paths import Paths, Telemetry, exercise_paths
from ._paths import cli_commands as path_commands


class Canaries:
    """Distinct secret values by position; the same position gives the same value."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def __call__(self, position: str, *, digits: bool = False) -> str:
        if position not in self.values:
            n = len(self.values)
            if digits:  # a card number: 16 digits no other value here has
                value = f"4{n:03d}" + "".join(secrets.choice("0123456789") for _ in range(12))
            else:
                value = f"cnry{n:03d}q{secrets.token_hex(6)}"
            self.values[position] = value
        return self.values[position]

    def hex_key(self, position: str) -> str:
        """A fingerprint key (hex), itself a canary."""
        self.values[position] = secrets.token_hex(32)
        return self.values[position]

    def hits(self, channel: str, data: bytes | str) -> list[tuple[str, str]]:
        blob = data if isinstance(data, bytes) else data.encode("utf-8", "backslashreplace")
        return [(pos, channel) for pos, value in self.values.items() if value.encode() in blob]


def secret_payload(c: Canaries, tag: str) -> dict[str, Any]:
    """A payload with a canary in every secret spelling, at depth, in lists and URLs."""
    p = f"{tag}.payload"
    return {
        "ref": tag,
        "note": "visible",
        "auth_token": c(f"{p}.auth_token"),
        "accessToken": c(f"{p}.accessToken"),
        "client_secret": c(f"{p}.client_secret"),
        "private_key": c(f"{p}.private_key"),
        "X-Api-Key": c(f"{p}.X-Api-Key"),
        "set-cookie": c(f"{p}.set-cookie"),
        "csrf_token": c(f"{p}.csrf_token"),
        "card-number": c(f"{p}.card-number", digits=True),
        "passphrase": c(f"{p}.passphrase"),
        "password": c(f"{p}.password"),
        "Authorization": f"Bearer {c(f'{p}.Authorization')}",
        "Cookie": f"sid={c(f'{p}.Cookie')}",
        "session_id": c(f"{p}.session_id"),
        "refresh_token": c(f"{p}.refresh_token"),
        "apiKey": c(f"{p}.apiKey"),
        "otp": c(f"{p}.otp"),
        "cvv": c(f"{p}.cvv"),
        "pin": c(f"{p}.pin"),
        "sslpassword": c(f"{p}.sslpassword"),
        "nested": {
            "deeper": [{"password": c(f"{p}.nested.password")}, {"x": [{"apiKey": c(f"{p}.nl")}]}],
            "billing": {"iban": c(f"{p}.declared.iban")},  # declared in secret_fields
        },
        "headers": [
            ["Authorization", f"Bearer {c(f'{p}.headers.Authorization')}"],
            ["X-Api-Key", c(f"{p}.headers.X-Api-Key")],
            ["Accept", "text/html"],
        ],
        "callback": (
            f"https://ann:{c(f'{p}.url.userinfo')}@hooks.example/cb"
            f"?access_token={c(f'{p}.url.query')}&page=2"
        ),
        "clone": f"https://{c(f'{p}.url.lone_user')}x{'0' * 8}@git.example/repo.git",
    }


QUICK = Policy(verify_backoff=0, verify_attempts=1)
SETTLED = Policy(verify_backoff=0, verify_attempts=1, settle_seconds=0)
AUTHORITATIVE = Policy(
    verify_backoff=0, verify_attempts=1, settle_seconds=0, absence_authoritative=True
)
#: The overtaken owner's policy (see tests/crash/test_chaos_findings.py).
OVERTAKE = Policy(
    settle_seconds=30.0, absence_authoritative=True, verify_attempts=1, lease_seconds=600.0
)


class Crash(BaseException):
    """The process dies inside the perform: the ``executing`` mark stays, an orphan."""


@dataclass
class Exercised:
    """What a scenario left behind: the keys, what the API answered, the ledger's URL."""

    url: str
    keys: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    outcomes: set[str] = field(default_factory=set)
    gated: Gated = field(default_factory=Gated)
    paths: Paths = field(default_factory=Paths)
    pages: dict[str, str] = field(default_factory=dict)
    telemetry: dict[str, str] = field(default_factory=dict)


def _key(name: str) -> str:
    return effect_key(tenant="t", actor="a", kind="invoice", object=name, operation="c").value


def exercise(url: str, c: Canaries, scan_open: Callable[[], None]) -> Exercised:
    """Drive effects through every outcome on the ledger at ``url``."""
    clock = FrozenClock()
    registry = Registry()
    out = Exercised(url)

    def note(result: Any) -> None:
        out.answers.append(repr(result))
        out.outcomes.add(str(result.outcome))
        if result.key and result.key not in out.keys:
            out.keys.append(result.key)

    def effect(
        name: str,
        perform: Callable[[], Any],
        verify: Callable[[], Any],
        policy: Policy = QUICK,
        **kw: Any,
    ) -> Effect:
        return Effect(
            _key(name),
            "invoice",
            secret_payload(c, name),
            perform,
            verify,
            policy=policy,
            secret_fields=("iban",),
            **kw,
        )

    with Ledger.open(url, create=True, clock=clock, registry=registry, signing_keys=KEYS) as ledger:
        telemetry = Telemetry(ledger)
        # completed, then skipped; perform details and the result reference carry canaries.
        made: list[int] = []

        def perform_ok() -> dict[str, Any]:
            made.append(1)
            return {
                "request": {
                    "headers": [["Cookie", f"sid={c('details.cookie')}"], ["Accept", "*/*"]],
                    "url": f"https://api.example/v1/invoices?access_token={c('details.url')}",
                },
                "password": c("details.password"),
                "echo": f"sent card {secret_payload(c, 'completed')['card-number']}",
            }

        def verify_ok() -> Any:
            ref = f"https://shop.example/inv/1?token={c('result_ref.token')}"
            return Confirmed(ref) if made else Absent()

        completed = effect("completed", perform_ok, verify_ok)
        note(ledger.run(completed))
        note(ledger.run(completed))

        # needs_review: the perform raises with credentials in its message and details.
        def perform_boom() -> None:
            payload = secret_payload(c, "review")
            exc = RuntimeError(
                f"HTTP 401 at https://api.example/v1?api_key={c('error.url')} "
                f"(Authorization: Bearer {c('error.bearer')}); "
                f"the form still held {payload['password']} and {payload['card-number']}"
            )
            exc.details = {  # type: ignore[attr-defined]
                "sent": [("X-Api-Key", c("error.details.pair"))],
                "cookies": {"sid": c("error.details.cookie")},
            }
            raise exc

        note(
            ledger.run(
                effect(
                    "review",
                    perform_boom,
                    Absent,
                    SETTLED,
                    evidence=lambda label: (
                        f"file:///tmp/{label}.png?signature={c('evidence.signature')}"
                    ),
                )
            )
        )

        # failed: stopped before the boundary, and an authoritative absence.
        def declined() -> None:
            raise NotPerformed(f"login wall before the click; session_id={c('notperformed')}")

        note(ledger.run(effect("declined", declined, Absent)))

        def timeout() -> None:
            raise TimeoutError(f"no answer; token: {c('failed.error')}")

        note(ledger.run(effect("absent", timeout, Absent, AUTHORITATIVE)))

        # hard stops: in the precondition and in the perform.
        def captcha() -> bool:
            raise HardStop(f"CAPTCHA at https://shop.example/login?token={c('hardstop.pre')}")

        note(ledger.run(effect("hs-pre", perform_ok, Absent, precondition=captcha)))

        def wrong_account() -> None:
            raise HardStop(f"wrong account; cookie: {c('hardstop.perform')}")

        note(ledger.run(effect("hs-perform", wrong_account, Absent)))

        # deferred: verification unavailable before the claim.
        def unavailable() -> Unavailable:
            return Unavailable(f"search down; session_id={c('unavailable.reason')}")

        note(ledger.run(effect("deferred", perform_ok, unavailable)))

        # unknown: the response was lost inside the settle window.
        def lost() -> None:
            raise TimeoutError(f"lost; X-Api-Key: {c('unknown.error')}")

        note(ledger.run(effect("unknown", lost, Absent)))

        # a duplicate detected: two matches, their references carry credentials.
        dup: list[int] = []

        def dup_verify() -> Any:
            if not dup:
                return Absent()
            first = f"https://shop.example/p/1?access_token={c('dup.ref')}"
            second = f"https://bot:{c('dup.userinfo')}@shop.example/p/2"
            return Confirmed(first, count=2, refs=(first, second))

        note(ledger.run(effect("duplicate", lambda: dup.append(1), dup_verify)))

        # the alarm: the owner performs, is overtaken by reconcile, and reports.
        registry.register("overtaken", lambda r: Absent(), policy=OVERTAKE)
        other = Ledger(ledger.store, clock=clock, registry=registry)

        def overtaken_perform() -> None:
            raise RuntimeError(f"HTTP 500; Authorization: Basic {c('alarm.error')}")

        paused: list[str] = []

        def hit(point: str) -> None:
            if point == "after_perform" and not paused:
                paused.append(point)
                clock.advance(OVERTAKE.lease_seconds + OVERTAKE.settle_seconds + 1)
                other.reconcile()

        alarm = Effect(
            _key("alarm"),
            "overtaken",
            secret_payload(c, "alarm"),
            overtaken_perform,
            Absent,
            policy=OVERTAKE,
            secret_fields=("iban",),
        )
        with observing(hit):
            note(ledger.run(alarm))
        assert paused, "the owner was never overtaken"

        # orphans (the process died inside the perform), reconciled by verifiers
        # that answer with credentials in their reasons and references.
        for kind in ("orphan-unavailable", "orphan-raises", "orphan-confirmed", "orphan-cli"):

            def crash() -> None:
                raise Crash

            with pytest.raises(Crash):
                ledger.run(
                    Effect(
                        _key(kind),
                        kind,
                        secret_payload(c, kind),
                        crash,
                        Absent,
                        policy=QUICK,
                        secret_fields=("iban",),
                    )
                )
            out.keys.append(_key(kind))

        def raising(record: Any) -> Any:
            raise ConnectionError(f"verifier down; password={c('verifier.raised')}")

        registry.register(
            "orphan-unavailable",
            lambda r: Unavailable(f"rate limited; token={c('verifier.unavailable')}"),
        )
        registry.register("orphan-raises", raising)
        registry.register(
            "orphan-confirmed",
            lambda r: Confirmed(f"https://shop.example/x?api_key={c('verifier.ref')}"),
        )
        clock.advance(QUICK.lease_seconds + 1)
        report = ledger.reconcile()
        out.answers.append(repr(report))

        # a reviewer pastes a token; the queue gets a payload full of secrets.
        review_key = _key("review")
        record = ledger.resolve(
            review_key,
            "happened",
            reviewer="ana",
            reason=f"seen in the UI; password={c('resolve.reason')}",
            result_ref=f"https://shop.example/inv/9?token={c('resolve.ref')}",
        )
        out.answers.append(repr(record))
        queue = WorkQueue(ledger, worker="w1", clock=clock)
        queue.put("invoice", secret_payload(c, "queue"), secret_fields=("iban",))
        item = queue.take()[0]
        out.answers.append(repr(item))
        queue.done(item)
        out.answers.append(repr(ledger.list(limit=1000)))
        # intents, approval packets, answers, free text, near-miss names (issue 20).
        out.gated = exercise_gated(ledger, c)
        out.answers.extend(out.gated.answers)
        out.outcomes.add("gated")
        # operations, receipts, budget pools, firewall refusals (issue 20).
        out.paths = exercise_paths(ledger, c)
        out.answers.extend(out.paths.answers)
        for key in [*out.keys, *out.gated.keys, *out.paths.keys]:
            out.answers.append(repr(ledger.events(key)))
        out.pages = console_pages(ledger, out.gated, out.keys, out.paths)
        out.telemetry = telemetry.exported()
        scan_open()
    return out


def cli_outputs(
    done: Exercised, verifiers: str, env: dict[str, str], c: Canaries
) -> dict[str, str]:
    """Every read command's output (text and ``--json``), then reconcile's, by command;
    then a write through the CLI (an intent withdrawn, its reason a canary) and its reads."""
    url, keys = done.url, done.keys
    outputs: dict[str, str] = {}
    commands: list[list[str]] = [["status"], ["list", "--limit", "1000"]]
    commands += [["show", key] for key in keys]
    commands += cli_commands(done.gated) + path_commands(done.paths)
    for command in [*commands, ["reconcile", "--verifiers", verifiers]]:
        for extra in ([], ["--json"]):
            proc = run_cli(*command, *extra, "--ledger", url, env=env)
            text = (proc.stdout + b"\n" + proc.stderr).decode("utf-8", "replace")
            assert proc.returncode in (0, 3), text[-2000:]  # 3: reconcile left effects open
            name = " ".join([command[0], *extra])
            outputs[name] = outputs.get(name, "") + text
    for intent_id in done.gated.intents:
        reason = f"user asked; session cookie {c(f'cli.withdraw.{intent_id}')}"
        proc = run_cli("intents", "withdraw", intent_id, "--by", "ana", "--reason", reason,
                       "--ledger", url, env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        outputs["intents withdraw"] = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        for extra in ([], ["--json"]):
            proc = run_cli("intents", intent_id, *extra, "--ledger", url, env=env)
            outputs[f"intents (withdrawn) {' '.join(extra)}"] = proc.stdout.decode()
    return outputs


def _verifier_module(folder: Path, c: Canaries) -> str:
    """A verifier module for ``actonce reconcile``: its answers carry canaries."""
    name = f"canary_verifiers_{uuid.uuid4().hex[:8]}"
    (folder / f"{name}.py").write_text(
        textwrap.dedent(
            f"""\
            from actonce import registry

            @registry.verifier("orphan-cli")
            def down(record):
                raise RuntimeError("HTTP 503; Authorization: Bearer {c("cli.verifier")}")
            """
        )
    )
    return name


@pytest.fixture
def canary_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Canaries, dict[str, str]]]:
    """Canaries, and the environment that holds the fingerprint key (itself a canary)."""
    c = Canaries()
    key = f"kid1:{c.hex_key('fingerprint key')}"
    monkeypatch.setenv("ACTONCE_FINGERPRINT_KEY", key)
    for name in ("ACTONCE_LEDGER", "ACTONCE_FINGERPRINT_KEY_FILE", "ACTONCE_VERIFIERS"):
        monkeypatch.delenv(name, raising=False)
    yield c, {"ACTONCE_FINGERPRINT_KEY": key}


#: The outcomes of a gate (approvals, budgets) have their own canaries, planted
#: in intents, facts and packets: tests/approvals/test_secrets.py.
GATED = {"needs_approval", "refused", "over_budget"}
ALL_OUTCOMES = {o.value for o in Outcome} - {"abandoned"} - GATED


def _report(hits: list[tuple[str, str]], c: Canaries) -> str:
    lines = [f"{len(hits)} hit(s) of {len(c.values)} canaries:"]
    lines += [f"  {pos} ({c.values[pos][:12]}...) in {channel}" for pos, channel in sorted(hits)]
    return "\n".join(lines)


def test_no_canary_reaches_sqlite_file_wal_cli_or_logs(
    canary_env: tuple[Canaries, dict[str, str]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    c, env = canary_env
    caplog.set_level(logging.DEBUG)
    path = tmp_path / "ledger.db"
    hits: list[tuple[str, str]] = []

    def scan_open() -> None:  # while the ledger is open: the WAL still holds the frames
        wal = Path(f"{path}-wal")
        assert wal.exists() and wal.stat().st_size > 0
        hits.extend(c.hits("sqlite WAL", wal.read_bytes()))
        shm = Path(f"{path}-shm")
        if shm.exists():
            hits.extend(c.hits("sqlite shm", shm.read_bytes()))
        hits.extend(c.hits("sqlite file (open)", path.read_bytes()))

    done = exercise(str(path), c, scan_open)
    assert done.outcomes >= ALL_OUTCOMES, done.outcomes
    hits.extend(c.hits("sqlite file", path.read_bytes()))
    for table, text in sqlite_tables(path).items():
        hits.extend(c.hits(f"sqlite table {table}", text))
    hits.extend(c.hits("api answers", "\n".join(done.answers)))
    for page, text in done.pages.items():
        hits.extend(c.hits(f"console {page.split('/')[1] or 'queue'}", text))
    for what, text in done.telemetry.items():
        hits.extend(c.hits(f"telemetry {what}", text))
    verifiers = _verifier_module(tmp_path, c)
    cli_env = {**env, "PYTHONPATH": f"{tmp_path}:{_pythonpath()}"}
    for command, text in cli_outputs(done, verifiers, cli_env, c).items():
        hits.extend(c.hits(f"cli {command}", text))
    hits.extend(c.hits("sqlite file (after reconcile)", path.read_bytes()))
    hits.extend(c.hits("logs", "\n".join(_log_lines(caplog))))
    assert len(c.values) >= 150
    assert not hits, _report(hits, c)


@pytest.mark.postgres
def test_no_canary_reaches_a_postgres_dump_cli_or_logs(
    canary_env: tuple[Canaries, dict[str, str]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    c, env = canary_env
    caplog.set_level(logging.DEBUG)
    dsn = postgres_dsn()
    schema = f"actonce_canary_{uuid.uuid4().hex[:10]}"
    # The server trusts local connections: any password connects, so the
    # password itself can be a canary.
    secret_dsn = dsn.replace("postgres@", f"postgres:{c('dsn.password')}@", 1)
    assert secret_dsn != dsn, "the test DSN names no user 'postgres'"
    url = with_schema(secret_dsn, schema)
    hits: list[tuple[str, str]] = []
    try:
        done = exercise(url, c, lambda: None)
        assert done.outcomes >= ALL_OUTCOMES, done.outcomes
        hits.extend(c.hits("pg_dump", pg_dump(dsn, schema)))
        hits.extend(c.hits("api answers", "\n".join(done.answers)))
        for page, text in done.pages.items():
            hits.extend(c.hits(f"console {page.split('/')[1] or 'queue'}", text))
        for what, text in done.telemetry.items():
            hits.extend(c.hits(f"telemetry {what}", text))
        for table, text in pg_tables(dsn, schema).items():
            hits.extend(c.hits(f"pg table {table}", text))
        verifiers = _verifier_module(tmp_path, c)
        cli_env = {**env, "PYTHONPATH": f"{tmp_path}:{_pythonpath()}"}
        for command, text in cli_outputs(done, verifiers, cli_env, c).items():
            hits.extend(c.hits(f"cli {command}", text))
        hits.extend(c.hits("pg_dump (after reconcile)", pg_dump(dsn, schema)))
        hits.extend(c.hits("logs", "\n".join(_log_lines(caplog))))
    finally:
        drop_schema(dsn, schema)
    assert not hits, _report(hits, c)


def sqlite_tables(path: Path) -> dict[str, str]:
    """Every row of every table of a SQLite ledger, by table."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: repr(conn.execute(f'SELECT * FROM "{n}"').fetchall()) for n in names}
    finally:
        conn.close()


def pg_tables(dsn: str, schema: str) -> dict[str, str]:
    """Every row of every table in ``schema``, by table (what pg_dump holds, named)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        names = [
            str(r[0])
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            )
        ]
        return {n: repr(conn.execute(f'SELECT * FROM "{schema}"."{n}"').fetchall()) for n in names}


def _log_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    lines = []
    for record in caplog.records:
        lines.append(f"{record.name} {record.getMessage()}")
        if record.exc_text:
            lines.append(record.exc_text)
    return lines


def _pythonpath() -> str:
    return os.environ.get("PYTHONPATH", "")


def test_canaries_are_found_where_they_are_planted(tmp_path: Path) -> None:
    """The scan can fail: a canary written in clear is found in the file and its WAL."""
    c = Canaries()
    value = c("control")
    path = tmp_path / "plain.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (v TEXT)")
    conn.execute("INSERT INTO t VALUES (?)", (json.dumps({"password": value}),))
    conn.commit()
    found = c.hits("wal", Path(f"{path}-wal").read_bytes())
    conn.close()
    assert found == [("control", "wal")]
