"""Canaries through the gated write paths: intents, approval packets, answers, free text.

Issue 20, item 1: what a person types into an intent or a packet (a card
number under ``details``, a CVV under ``constraints``, a session cookie in
``notes``, a URL with a password as ``recipient``, ``password=…`` in the
terms), free text that has no ``name=value`` shape (a ``memo`` of "card 4111
1111 1111 1111", a hard-stop reason "session cookie X") and near-miss names
(``passcode``, ``creditCard``, ``user_pass`` …) all carry canaries here. The
caller (tests/hardening/test_canaries.py) then greps every byte actonce wrote.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from actonce import (
    Absent,
    Approvals,
    Confirmed,
    Effect,
    Fact,
    HardStop,
    Intent,
    Ledger,
    Policy,
    SigningKeys,
    intent_key,
)

KEY_HEX = "5eed0c0ffee1" * 4
KEYS = SigningKeys((("k1", bytes.fromhex(KEY_HEX)),))
POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1, verify_backoff=0)
#: Names a person uses for secrets that are not the obvious ones.
NEAR_MISS = ("passcode", "creditCard", "credit_card", "user_pass", "pwd", "ssn", "iban", "cvc")


def luhn_card(c: Any, position: str, sep: str = "") -> str:
    """A Luhn-valid 16-digit card number no other value has, planted at ``position``."""
    if position not in c.values:
        body = [4, *(secrets.randbelow(10) for _ in range(14))]
        total = 0
        for i, d in enumerate(reversed(body)):  # the check digit will be at the right
            d = d * 2 if i % 2 == 0 else d
            total += d - 9 if d > 9 else d
        digits = "".join(map(str, body)) + str((10 - total % 10) % 10)
        groups = [digits[i : i + 4] for i in range(0, 16, 4)]
        c.values[position] = sep.join(groups) if sep else digits
    return str(c.values[position])


@dataclass
class Gated:
    """What the gated scenario left: intent ids, packet ids, effect keys, API answers."""

    intents: list[str] = field(default_factory=list)
    packets: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)


def exercise_gated(ledger: Ledger, c: Any) -> Gated:
    """Intents, packets, answers and gated effects whose fields carry canaries."""
    out = Gated()
    near = {name: c(f"intent.notes.{name}") for name in NEAR_MISS}
    near["pin"] = "4821"  # a PIN is four digits; found by name (tests/hardening/test_secrets.py)
    trip = Intent(
        "trip-canary",
        "booking",
        user="ana",
        provider="Hotel Ibis",
        items=("double room",),
        when="2026-12-24",
        price_ceiling=Decimal("120"),
        currency="EUR",
        recipient=f"https://ann:{c('intent.recipient.userinfo')}@hooks.example/cb",
        constraints={"cvv": c("intent.constraints.cvv"), "max_stars": 4},
        notes={
            "session_cookie": c("intent.notes.session_cookie"),
            "memo": f"card {luhn_card(c, 'intent.notes.memo', ' ')} for the deposit",
            "remark": f"session cookie {c('intent.notes.remark')}",
            **near,
        },
    )
    stored = ledger.intents.put(trip)
    out.answers.append(repr(stored))
    # The same intent again: answered with the one recorded, not a conflict.
    out.answers.append(repr(ledger.intents.put(trip)))
    out.intents.append(trip.intent_id)
    # A cosmetic change, then a material one: the new version carries canaries too.
    cosmetic = ledger.intents.revise(
        trip.intent_id, notes={**trip.notes, "pwd": c("intent.revised.pwd")}
    )
    out.answers.append(repr(cosmetic))
    material = ledger.intents.revise(
        trip.intent_id,
        when="2026-12-26",
        text=f"pay with card {luhn_card(c, 'intent.text.card')} please",
    )
    out.answers.append(repr(material))
    current = material.intent
    key = intent_key(current, "book", tenant="t1", actor="agent")
    req = ledger.approvals.request(
        current,
        "book",
        key,
        amount="110",
        currency="EUR",
        destination=f"https://bot:{c('packet.destination')}@hotel.example/book",
        details={
            "date": "2026-12-26",
            "card_number": luhn_card(c, "packet.details.card_number"),
            "memo": f"card {luhn_card(c, 'packet.details.memo', '-')} on file",
            "creditCard": c("packet.details.creditCard", digits=True),
            "user_pass": c("packet.details.user_pass"),
        },
        terms=f"free cancellation until 24 h before; password={c('packet.terms')}",
        facts=[Fact("price", "110", ledger.clock.now())],
    )
    out.packets.append(req.packet.packet_id)
    out.answers.append(repr(req.packet))
    answered = ledger.approvals.answer(
        req.packet.packet_id,
        "approve",
        by="ana",
        note=f"ok; session cookie {c('answer.note')}",
    )
    out.answers.append(repr(answered))
    packet = ledger.approvals.get(req.packet.packet_id)
    out.answers.append(repr(packet))

    done: list[int] = []

    def book() -> dict[str, Any]:
        done.append(1)
        return {"memo": f"charged card {luhn_card(c, 'perform.details.memo')}"}

    booked = Effect(
        key=key,
        kind="book",
        payload={
            "intent": current.intent_id,
            "version": current.version,
            "memo": f"card {luhn_card(c, 'payload.memo', ' ')} exp 12/29",
            "passcode": c("payload.passcode"),
            "creditCard": c("payload.creditCard", digits=True),
        },
        perform=book,
        verify=lambda: Confirmed("r1") if done else Absent(),
        gate=Approvals.gate(packet),
        policy=POLICY,
    )
    result = ledger.run(booked)
    out.answers.append(repr(result))
    out.keys.append(result.key)
    # A hard stop whose reason has no name=value shape.
    stop_key = intent_key(current, "message", tenant="t1", actor="agent")

    def wall() -> None:
        raise HardStop(f"wrong account: session cookie {c('hardstop.phrase')} was refused")

    stopped = ledger.run(Effect(stop_key, "message", {"to": "ana"}, wall, Absent, policy=POLICY))
    out.answers.append(repr(stopped))
    out.keys.append(stopped.key)
    for packet_id in out.packets:
        out.answers.append(repr(ledger.approvals.history(packet_id)))
    out.answers.append(repr(ledger.intents.chain(trip.intent_id)))
    return out


def cli_commands(gated: Gated) -> list[list[str]]:
    """The read commands that show what the gated scenario stored."""
    commands: list[list[str]] = [["intents", "--all"], ["approvals"]]
    commands += [["intents", i] for i in gated.intents]
    commands += [["show", k] for k in gated.keys]
    return commands


def console_pages(
    ledger: Ledger, gated: Gated, keys: list[str], more: Any = None
) -> dict[str, str]:
    """The console's pages about what was stored, as a signed-in reviewer sees them."""
    import re

    import httpx

    from actonce.console import ConsoleServer, Reviewers, Settings, hash_password

    password = "canary-reviewer-password-1"
    pages: dict[str, str] = {}
    csrf = re.compile(r'name="csrf" value="([^"]+)"')
    reviewers = Reviewers({"ana": hash_password(password)})
    with (
        ConsoleServer(ledger, reviewers, Settings()) as server,
        httpx.Client(base_url=server.url, follow_redirects=False, timeout=30) as client,
    ):
        nonce = csrf.search(client.get("/login").text)
        assert nonce
        signed = client.post(
            "/login",
            data={"csrf": nonce.group(1), "name": "ana", "password": password},
            headers={"origin": server.url},
        )
        assert signed.status_code == 303, signed.text
        paths = ["/", "/overview", "/approvals", "/receipts"]
        paths += [f"/approvals/{p}" for p in gated.packets]
        paths += [f"/effects/{k}" for k in [*gated.keys, *keys]]
        if more is not None:  # tests/hardening/_paths.py: operations, their steps
            from ._paths import console_paths

            paths += console_paths(more)
        for path in paths:
            page = client.get(path)
            assert page.status_code == 200, (path, page.status_code)
            pages[path] = page.text
    return pages
