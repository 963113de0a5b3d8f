"""A booking agent for a hotel site of your own: Lakeside Inn, in real Chromium (docs/booking.md).

hold -> pay -> book -> email, as one ``actonce.Operation`` whose steps are
effects of their own: each a ``SiteEffect`` (prepare, one click, verify by the
inn's JSON lookups, counting), handed to the ledger with ``as_effect``. The
pay step keeps its approval gate and refreshes the hold's total right before
its claim; the inn's idempotency key (a UUID ``request_id``) comes from each
step's effect key; a hold the inn cannot release is undone by waiting for it
to lapse. Run it: ``python examples/hotel_agent.py`` (it starts the inn on a
free port of 127.0.0.1 and Chromium, headless).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from actonce import (
    Absent,
    Confirmed,
    EffectKey,
    Fact,
    Gate,
    Intent,
    Ledger,
    NotPerformed,
    Operation,
    OperationResult,
    Policy,
    SigningKeys,
    Step,
    Unavailable,
    Verdict,
    intent_key,
)
from actonce.browser import (
    AsyncBrowserSession,
    Browser,
    BrowserSession,
    Screens,
    SiteEffect,
    as_effect,
)
from actonce.sandbox import LakesideServer

GUEST, PASSWORD = "mia@lakeside.example", "lakeside-password"  # typed into the page, never stored
TENANT = "my-travel-agent"
# The inn's lookups are its own current state (no late index): a result still
# absent a second after the submit proves the step did not happen.
POLICY = Policy(settle_seconds=1, absence_authoritative=True, wait_for_settle=True,
                verify_backoff=0.2)  # fmt: skip


def request_id(key: EffectKey) -> str:
    """The inn's idempotency key: a UUID made from the step's effect key (the same on every retry)."""
    return str(uuid.UUID(key.value[:32]))


@dataclass(frozen=True)
class Stay:
    reference: str  # ours, given with the hold: every lookup finds the stay by it
    room: str
    arrive: str
    nights: int


async def lookup(s: AsyncBrowserSession, what: str, **query: str) -> list[dict[str, Any]]:
    """One of the inn's JSON lookups, with the session's cookies; a failed look raises."""
    answer = await s.page.request.get(s.url(f"/api/{what}?{urlencode(query)}"), max_redirects=0)
    if answer.status != 200:
        raise RuntimeError(f"lookup {what}: HTTP {answer.status}")  # the ledger: Unavailable
    found: list[dict[str, Any]] = await answer.json()
    return found


def counted(s: AsyncBrowserSession, found: list[dict[str, Any]]) -> Verdict:
    """Every match counted: two holds are a duplicate detected, never a success."""
    refs = tuple(s.url(thing["url"]) for thing in found)
    return Confirmed(refs[0], count=len(refs), refs=refs) if refs else Absent()


async def one(s: AsyncBrowserSession, what: str, stay: Stay, status: str) -> dict[str, Any]:
    """The stay's one ``what`` in ``status``: the object a step acts on (else nothing is clicked)."""
    found = [t for t in await lookup(s, what, reference=stay.reference) if t["status"] == status]
    if len(found) != 1:
        raise NotPerformed(f"{len(found)} {status} {what} for {stay.reference}: nothing to act on")
    return found[0]


class InnStep(SiteEffect):
    """What the inn's steps share: the stay, the step's request id, one button, the answer page."""

    button = answer = ""

    def __init__(self, stay: Stay, token: str = "", ceiling: int = 0) -> None:
        self.stay, self.token, self.ceiling = stay, token, ceiling

    def payload(self) -> dict[str, Any]:  # never the ceiling: a re-approval may raise it
        return {**asdict(self.stay), "request_id": self.token}

    def control(self, s: AsyncBrowserSession) -> Any:
        return s.page.get_by_role("button", name=self.button, exact=True)

    async def read_back(self, s: AsyncBrowserSession) -> dict[str, Any]:
        field = s.page.locator('form input[name="request_id"]')
        return {"request_id": await field.input_value() if await field.count() else ""}

    def expected(self) -> dict[str, Any]:
        return {"request_id": self.token}

    async def confirm(self, s: AsyncBrowserSession) -> None:  # the inn answers, or refuses
        await s.page.locator(f'[data-testid="{self.answer}"], [data-testid="refused"]').wait_for()
        if await s.page.get_by_test_id("refused").count():
            raise RuntimeError(await s.page.get_by_test_id("refused").text_content())


class Hold(InnStep):
    kind, button, answer = "hold", "Hold this room", "hold"

    async def prepare(self, s: AsyncBrowserSession) -> None:
        query = {"arrive": self.stay.arrive, "nights": self.stay.nights,
                 "reference": self.stay.reference, "request_id": self.token}  # fmt: skip
        await s.goto(f"/rooms/{self.stay.room}?{urlencode(query)}")

    async def verify(self, s: AsyncBrowserSession) -> Verdict:
        return counted(s, await lookup(s, "holds", reference=self.stay.reference))


class LetHoldLapse(InnStep):
    """The undo of a hold the inn cannot release: nothing to click, it lapses on its own."""

    kind = "hold-lapse"

    async def prepare(self, s: AsyncBrowserSession) -> None:
        raise NotPerformed("nothing to send: the inn's holds lapse on their own")

    async def verify(self, s: AsyncBrowserSession) -> Verdict:
        holds = await lookup(s, "holds", reference=self.stay.reference)
        held = [h for h in holds if h["status"] == "held"]
        if held:  # not absent: the undo waits (deferred), and a later pass confirms it
            return Unavailable(f"{held[0]['id']} is held until {held[0]['expires_at']:.0f}")
        return Confirmed(s.url(holds[0]["url"]) if holds else "no hold")


class Pay(InnStep):
    kind, button, answer = "pay", "Pay now", "payment"

    async def prepare(self, s: AsyncBrowserSession) -> None:
        hold = await one(s, "holds", self.stay, "held")
        await s.goto(f"/holds/{hold['id']}?{urlencode({'request_id': self.token})}")

    async def read_back(self, s: AsyncBrowserSession) -> dict[str, Any]:
        amount = int(await s.page.locator('input[name="amount"]').input_value())
        return {**await super().read_back(s), "within_ceiling": 0 < amount <= self.ceiling}

    def expected(self) -> dict[str, Any]:
        return {"request_id": self.token, "within_ceiling": True}

    async def verify(self, s: AsyncBrowserSession) -> Verdict:
        payments = await lookup(s, "payments", reference=self.stay.reference)
        above = [p["id"] for p in payments if p["amount"] > self.ceiling]
        if above:  # never a success outside the approved boundary: a person decides
            return Unavailable(f"{above} above the approved ceiling of {self.ceiling} cents")
        return counted(s, payments)


class VoidPayment(InnStep):
    kind, button, answer = "void", "Void payment", "payment"

    async def prepare(self, s: AsyncBrowserSession) -> None:
        await s.goto(f"/payments/{(await one(s, 'payments', self.stay, 'authorized'))['id']}")

    async def verify(self, s: AsyncBrowserSession) -> Verdict:  # a state: nothing authorized
        payments = await lookup(s, "payments", reference=self.stay.reference)
        if any(p["status"] == "authorized" for p in payments):
            return Absent()
        return Confirmed(s.url(payments[0]["url"]) if payments else "nothing to void")


class Book(InnStep):
    kind, button, answer = "book", "Confirm booking", "booking"

    async def prepare(self, s: AsyncBrowserSession) -> None:
        payment = await one(s, "payments", self.stay, "authorized")
        await s.goto(f"/payments/{payment['id']}?{urlencode({'request_id': self.token})}")

    async def verify(self, s: AsyncBrowserSession) -> Verdict:
        return counted(s, await lookup(s, "bookings", reference=self.stay.reference))


class Email(InnStep):
    kind, button, answer = "notify", "Email me the confirmation", "message"

    async def prepare(self, s: AsyncBrowserSession) -> None:
        await s.goto(f"/bookings/{(await one(s, 'bookings', self.stay, 'confirmed'))['id']}")

    async def verify(self, s: AsyncBrowserSession) -> Verdict:
        bookings = await lookup(s, "bookings", reference=self.stay.reference)
        sent = [m for b in bookings for m in await lookup(s, "messages", booking=b["id"])]
        return counted(s, [m for m in sent if m["to"] == GUEST])


def stay_steps(
    ledger: Ledger, session: BrowserSession, stay: Stay, intent: Intent, packet_id: str
) -> list[Step]:
    """The four steps, gated by the newest packet of the approval (a refresh may replace it)."""
    packet = ledger.approvals.latest(packet_id)  # a re-approval raised the ceiling: use its
    ceiling = int((packet.ceiling or 0) * 100)
    current = Gate(intent=intent.ref)  # every forward step: the intent version is current

    def effect(site: type[InnStep], action: str, gate: Gate | None, **kw: Any) -> Any:
        key = intent_key(intent, action, tenant=TENANT, actor=GUEST)
        token = request_id(key) if site in (Hold, Pay, Book) else ""  # the inn's keyed forms
        bound = session.effect(site(stay, token, ceiling))
        return as_effect(bound, key, policy=POLICY, gate=gate, **kw)

    def total() -> list[Fact]:  # read-only, right before the pay step's claim
        async def read(s: AsyncBrowserSession) -> list[dict[str, Any]]:
            return [h for h in await lookup(s, "holds", reference=stay.reference)
                    if h["status"] == "held"]  # fmt: skip

        held, now = session.run(read), ledger.clock.now()
        if not held:
            return [Fact("availability", False, now, source="lakeside /api/holds")]
        total = (Decimal(held[0]["amount"]) / 100).quantize(Decimal("0.01"))
        return [Fact("total", str(total), now, source="lakeside /api/holds")]

    pay = effect(Pay, "pay", ledger.approvals.gate(packet), refresh=total)
    return [
        Step("hold", effect(Hold, "hold", current), "compensatable",
             undo=effect(LetHoldLapse, "let-lapse", None)),
        Step("pay", pay, "compensatable", undo=effect(VoidPayment, "void", None)),
        Step("book", effect(Book, "book", current), "pivot"),
        Step("notify", effect(Email, "notify", current), "retriable", attempts=3),
    ]  # fmt: skip


def book_stay(
    ledger: Ledger, session: BrowserSession, stay: Stay, intent: Intent, packet_id: str
) -> OperationResult:
    """One pass of the stay's operation; call it again later: it goes on where it stands."""
    steps = stay_steps(ledger, session, stay, intent, packet_id)
    newest = ledger.approvals.latest(packet_id).packet_id
    return Operation(ledger, f"stay:{intent.ref}", steps, intent=intent.ref, approval=newest).run()


def sign_in(browser: Browser, url: str) -> BrowserSession:
    screens = Screens(whoami=".guest", whoami_attribute="data-email")  # who the inn says is in
    session = browser.new_session(url, GUEST, screens=screens)
    session.login(PASSWORD, path="/signin", username_label="Email", submit="Log in")
    return session


def main() -> None:
    started = time.monotonic()
    keys = SigningKeys.parse("k1:" + "5e" * 16)  # a real agent: $ACTONCE_APPROVAL_KEYS
    ledger = Ledger.open(
        "memory://", signing_keys=keys
    )  # a real agent: sqlite:///… or postgresql://…
    with LakesideServer() as inn, Browser() as browser:
        intent = ledger.intents.put(Intent(
            "mia-june", "booking", user=GUEST, provider="Lakeside Inn", items=("lake-view",),
            when="2031-06-01", price_ceiling=Decimal("250.00"), currency="EUR",
        ))  # fmt: skip
        stay = Stay(str(intent.ref), "lake-view", "2031-06-01", nights=2)
        pay_key = intent_key(intent, "pay", tenant=TENANT, actor=GUEST)
        ask = ledger.approvals.request(intent, "pay", pay_key, amount="240.00", ceiling="250.00",
                                       destination="Lakeside Inn", terms="no refunds")  # fmt: skip
        ledger.approvals.answer_link(ask.link, "approve", by=GUEST)  # Mia follows the signed link
        result = book_stay(ledger, sign_in(browser, inn.url), stay, intent, ask.packet.packet_id)
        print(f"{result.state.value} in {time.monotonic() - started:.1f} s")
        receipt = ledger.receipt(result.op_id)
        print(receipt.text if receipt else result.reason)
    ledger.close()


if __name__ == "__main__":
    main()
