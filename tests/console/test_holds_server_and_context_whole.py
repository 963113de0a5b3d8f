"""Review holds that expire and are taken over, the server's refusals, refreshed facts.

(issue 23, item 2) A hold is a lease on the ledger: when it runs out and
another reviewer takes the item, the first one's renewal and decision are
refused and its page says who holds it now. The server binds loopback only
unless told, and starts once. An effect's page shows the facts its last
refresh saw, each one's freshness, and skips any it cannot read.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actonce import Event, EventType, Ledger, Registry
from actonce.console import ConsoleServer, Reviewers, write_reviewer
from actonce.console import _evidence as evidence_module
from actonce.console._console import Console
from actonce.console._evidence import folder_view, locate
from actonce.console._guard import SecurityHeaders
from actonce.console._holds import ReviewHolds, hold_name
from actonce.console._server import check_host
from actonce.console._views import _context
from actonce.testing import FrozenClock

from .world import _hashes


@pytest.fixture
def clocked(tmp_path: Path) -> Iterator[tuple[Ledger, FrozenClock]]:
    clock = FrozenClock()
    led = Ledger.open(str(tmp_path / "l.db"), create=True, clock=clock, registry=Registry())
    yield led, clock
    led.close()


def test_a_hold_that_ran_out_and_was_taken_is_lost_to_its_first_holder(
    clocked: tuple[Ledger, FrozenClock],
) -> None:
    ledger, clock = clocked
    holds = ReviewHolds(ledger, 10.0)
    assert holds.ttl == 10.0 and hold_name("k") == "review:k"
    mine = holds.take("k", "ana")
    assert (mine.holder, mine.until, mine.mine, mine.here, mine.free) == (
        "ana", 1_700_000_010.0, True, True, False,
    )  # fmt: skip
    clock.advance(5)
    assert holds.take("k", "ana").until == 1_700_000_015.0  # held longer
    assert holds.confirm("k", "ana") and holds.state("k", "ana").until == 1_700_000_015.0
    clock.advance(11)
    assert holds.state("k", "ana").free and holds.state("k", "ana").holder is None
    theirs = holds.take("k", "bo")
    assert (theirs.holder, theirs.mine, theirs.here) == ("bo", True, True)
    lost = holds.take("k", "ana")  # the renewal is refused: bo holds it
    assert (lost.holder, lost.mine, lost.here, lost.free) == ("bo", False, True, False)
    assert not holds.confirm("k", "ana")
    holds.release("k", "ana")  # nothing of ana's to let go
    assert holds.state("k", "carol").holder == "bo"
    holds.release("k", "bo")
    assert holds.state("k", "bo").free


def test_a_decision_after_the_hold_ran_out_and_was_taken_is_refused(
    clocked: tuple[Ledger, FrozenClock],
) -> None:
    ledger, clock = clocked
    holds = ReviewHolds(ledger, 10.0)
    holds.take("k", "ana")
    clock.advance(11)
    ReviewHolds(ledger, 10.0).take("k", "bo")  # another console
    assert not holds.confirm("k", "ana")
    assert not holds.confirm("k", "ana")  # forgotten, not retried
    seen = holds.state("k", "ana")
    assert (seen.holder, seen.mine, seen.here) == ("bo", False, False)
    other = ReviewHolds(ledger, 10.0)
    clock.advance(11)
    expired = holds.take("k", "ana")  # bo's ran out too: ana holds it again
    assert (expired.holder, expired.mine, expired.here) == ("ana", True, True)
    assert not other.confirm("k", "bo")
    holds.release("k", "ana")
    clock.advance(1)
    holds.release("k", "ana")  # twice: nothing happens


def test_the_server_binds_loopback_only_unless_told() -> None:
    for host in ("127.0.0.1", "127.9.9.9", "::1", "localhost"):
        check_host(host, False)
    for host in ("10.1.2.3", "0.0.0.0", "example.com", "::", ""):
        with pytest.raises(ValueError) as caught:
            check_host(host, False)
        assert str(caught.value) == (
            f"the console binds to loopback only, not {host!r}; pass allow_remote=True "
            "(--allow-remote) to serve other machines, behind TLS"
        )
        check_host(host, True)


def test_a_server_starts_once_and_serves_its_own_host(
    clocked: tuple[Ledger, FrozenClock],
) -> None:
    ledger, _ = clocked
    server = ConsoleServer(ledger, Reviewers(_hashes()), host="localhost")
    assert server.console.settings.allowed_hosts == ("127.0.0.1", "localhost", "::1", "[::1]")
    with pytest.raises(RuntimeError, match=r"^the console is not running$"):
        _ = server.url
    with server:
        with pytest.raises(RuntimeError, match=r"^already started$"):
            server.start()
        assert server.bind() == server.url
    remote = ConsoleServer(ledger, Reviewers(_hashes()), host="10.0.0.7", allow_remote=True)
    assert remote.console.settings.allowed_hosts[-1] == "10.0.0.7"
    with pytest.raises(ValueError):
        ConsoleServer(ledger, Reviewers(_hashes()), host="10.0.0.7")


def _refreshed(facts: object, at: float = 1_700_000_000.0, message: str = "m") -> Event:
    return Event("k", EventType.FACTS_REFRESHED, at, 1, message=message, data={"facts": facts})


def test_the_last_refresh_of_facts_is_shown_with_each_facts_freshness(
    clocked: tuple[Ledger, FrozenClock],
) -> None:
    ledger, clock = clocked
    console = Console(ledger, Reviewers(_hashes()))
    price = {"name": "price", "value": "99", "observed_at": 1_700_000_000.0,
             "source": "https://shop.example/p?token=SECRET"}  # fmt: skip
    stale = {"name": "total", "value": {"a": 1}, "observed_at": 1_600_000_000.0}
    events = [
        _refreshed([{"name": "old", "value": "1", "observed_at": 0.0}], message="first"),
        _refreshed([price, stale, {"bogus": 1}, "x"], message="second " + "s" * 600),
        Event("k", EventType.EVIDENCE, 0.0, 1, data={"evidence": "/x"}),
    ]
    clock.advance(10)
    got = _context(console, [], events, "ana")
    assert got["intents"] == [] and got["packets"] == []
    refreshed = got["refreshed"]
    assert refreshed["at"] == "2023-11-14 22:13:20 UTC"
    assert refreshed["message"] == ("second " + "s" * 600)[:499] + "…"
    assert refreshed["facts"] == [
        {"name": "price", "value": "99", "observed": "2023-11-14 22:13:20 UTC",
         "valid_until": refreshed["facts"][0]["valid_until"], "freshness": "fresh",
         "source": "https://shop.example/p?token=[redacted]"},
        {"name": "total", "value": '{\n  "a": 1\n}', "observed": "2020-09-13 12:26:40 UTC",
         "valid_until": refreshed["facts"][1]["valid_until"], "freshness": "stale",
         "source": ""},
    ]  # fmt: skip
    none = _context(console, [], [_refreshed(None), _refreshed("x")][:1], "ana")["refreshed"]
    assert none == {"at": "2023-11-14 22:13:20 UTC", "message": "m", "facts": []}
    odd = Event("k", EventType.FACTS_REFRESHED, 0.0, 1, data={"other": 1})
    assert _context(console, [], [odd], "ana")["refreshed"]["facts"] == []
    assert _context(console, [], [], "ana")["refreshed"] is None


def test_unreadable_evidence_files_show_nothing_and_big_ones_are_not_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "ev"
    folder.mkdir()
    (folder / "meta.json").write_text("not json", encoding="utf-8")
    (folder / "wire.json").write_text('{"wire": ["x", 1], "sent": 0}', encoding="utf-8")
    (folder / "page.html").write_text("<p>" + "x" * 100 + "</p>", encoding="utf-8")
    events = [Event("k", EventType.EVIDENCE, 0.0, 1, data={"evidence": str(folder)}, seq=2)]
    view = folder_view(events, 2, "ev", ())
    assert view.files == ("page.html", "meta.json", "wire.json")
    assert (view.meta, view.wire, view.sent) == ((), (), "0 sent, 0 refused")
    monkeypatch.setattr(evidence_module, "MAX_BYTES", 50)
    assert locate(events, 2, "page.html", ()) is None
    assert locate(events, 2, "meta.json", ()) == folder / "meta.json"
    monkeypatch.setattr(evidence_module, "MAX_BYTES", 107)
    assert locate(events, 2, "page.html", ()) == folder / "page.html"
    assert locate(events, 2, "../ev/meta.json", ()) is None
    assert locate(events, 3, "meta.json", ()) is None
    gone = [Event("k", EventType.EVIDENCE, 0.0, 1, data={"evidence": str(tmp_path / "no")}, seq=2)]
    assert locate(gone, 2, "meta.json", ()) is None
    a_file = [Event("k", EventType.EVIDENCE, 0.0, 1,
                    data={"evidence": str(folder / "meta.json")}, seq=2)]  # fmt: skip
    assert locate(a_file, 2, "meta.json", ()) is None


def test_a_failed_write_of_the_reviewers_file_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "reviewers"

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.replace", refuse)
    with pytest.raises(OSError):
        write_reviewer(path, "ana", "ana-password-1")
    assert list(tmp_path.iterdir()) == []


async def test_the_security_headers_leave_other_scopes_alone() -> None:
    calls: list[tuple[object, object]] = []

    async def inner(scope: object, receive: object, send: object) -> None:
        calls.append((scope, send))

    async def send(message: object) -> None:
        return None

    async def receive() -> dict[str, str]:
        return {}

    middleware = SecurityHeaders(inner)  # type: ignore[arg-type]
    scope = {"type": "lifespan"}
    await middleware(scope, receive, send)  # type: ignore[arg-type]
    assert calls == [(scope, send)]
