"""What a PostgreSQL write leaves behind when it fails halfway, on a real server.

- A transition and its event are one statement: when the server refuses the
  event (here a trigger raises), the state does not change either.
- A write whose answer never reaches the client (the connection is cut after
  the server committed; the driver reports no SQLSTATE) is "may have
  committed" (``LedgerOutcomeUnknown``), never "nothing written": it did
  commit. The cut is made by a TCP relay between the store and the server
  that the test runs itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from actonce import (
    AsyncPostgresStore,
    Event,
    EventType,
    LedgerError,
    LedgerOutcomeUnknown,
    PostgresStore,
    Status,
)
from actonce._rules.model import EffectRecord

pytestmark = pytest.mark.postgres

T0 = 1_700_000_000.0


def record(key: str, status: Status = Status.CLAIMED, **kw: Any) -> EffectRecord:
    base: dict[str, Any] = dict(
        kind="post",
        owner="run-a",
        lease_expires_at=T0 + 60,
        payload='{"text":"hi"}',
        payload_hash="h" * 64,
        created_at=T0,
        updated_at=T0,
    )
    base.update(kw)
    return EffectRecord(key=key, status=status, fence=1, **base)


def event(r: EffectRecord, frm: Status | None = None) -> Event:
    return Event(
        key=r.key,
        type=EventType(r.status.value),
        at=r.updated_at,
        fence=r.fence,
        run_id=r.owner,
        from_status=frm,
        to_status=r.status,
    )


# --- a transition and its event commit together ---------------------------------------------

_REFUSE = """
CREATE FUNCTION {s}.refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'test: this event is refused'; END $$;
CREATE TRIGGER refuse_confirmed BEFORE INSERT ON {s}.events
FOR EACH ROW WHEN (NEW.type = 'confirmed') EXECUTE FUNCTION {s}.refuse_event();
"""


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_transition_whose_event_is_refused_changes_nothing(
    pg: tuple[str, str], flavour: str
) -> None:
    dsn, schema = pg
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(_REFUSE.format(s=schema))
    claimed = record("atomic")
    executing = replace(claimed, status=Status.EXECUTING, executing_at=T0 + 1, updated_at=T0 + 1)
    done = replace(executing, status=Status.CONFIRMED, result_ref="u/1", updated_at=T0 + 2)

    def sync() -> tuple[EffectRecord | None, list[Event]]:
        store = PostgresStore(dsn, schema=schema, min_size=0)
        try:
            store.claim(claimed, None, event(claimed))
            assert store.transition((Status.CLAIMED, 1), executing, event(executing)) == executing
            with pytest.raises(LedgerError):
                store.transition((Status.EXECUTING, 1), done, event(done, Status.EXECUTING))
            return store.get("atomic"), store.events("atomic")
        finally:
            store.close()

    async def asynchronous() -> tuple[EffectRecord | None, list[Event]]:
        store = AsyncPostgresStore(dsn, schema=schema, min_size=0)
        try:
            await store.claim(claimed, None, event(claimed))
            moved = await store.transition((Status.CLAIMED, 1), executing, event(executing))
            assert moved == executing
            with pytest.raises(LedgerError):
                await store.transition((Status.EXECUTING, 1), done, event(done, Status.EXECUTING))
            return await store.get("atomic"), await store.events("atomic")
        finally:
            await store.aclose()

    now, history = sync() if flavour == "sync" else asyncio.run(asynchronous())
    assert now is not None
    assert now.status is Status.EXECUTING, (
        f"the state changed without its event: the record is {now.status}, "
        f"its history {[e.type.value for e in history]}"
    )
    assert [e.type for e in history] == [EventType.CLAIMED, EventType.EXECUTING]


# --- an answer lost after the commit: may have committed --------------------------------------


class CuttingRelay:
    """A TCP relay to the server that can lose one answer.

    Armed with a marker, it forwards the client's next message holding it,
    then, when the server's answer comes back, drops it and closes both
    sides: the server has committed (an autocommit statement is committed
    before its answer is flushed), the client only sees the connection end.
    """

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.marker: bytes | None = None
        self.cut = threading.Event()
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._spawn(self._accept)

    def _spawn(self, fn: Any, *args: Any) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        self._threads.append(t)
        t.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(self.target)
            self._socks += [client, server]
            state = {"cutting": False}
            self._spawn(self._pipe, client, server, True, state)
            self._spawn(self._pipe, server, client, False, state)

    def _pipe(
        self, src: socket.socket, dst: socket.socket, up: bool, state: dict[str, bool]
    ) -> None:
        try:
            while data := src.recv(65536):
                with self._lock:
                    if up and self.marker is not None and self.marker in data:
                        self.marker = None
                        state["cutting"] = True
                    elif not up and state["cutting"]:
                        self.cut.set()
                        break  # the answer is dropped
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self.listener.close()
        for s in self._socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        for t in self._threads:
            t.join(10)


@pytest.fixture
def relay(pg: tuple[str, str]) -> Iterator[tuple[CuttingRelay, str]]:
    dsn, _ = pg
    parts = urlsplit(dsn)
    r = CuttingRelay(parts.hostname or "127.0.0.1", parts.port or 5432)
    user = f"{parts.username}@" if parts.username else ""
    relayed = urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{r.port}"))
    try:
        yield r, relayed
    finally:
        r.close()


@pytest.mark.parametrize("write", ["claim", "executing mark"])
def test_a_write_whose_answer_is_lost_may_have_committed(
    pg: tuple[str, str], relay: tuple[CuttingRelay, str], write: str
) -> None:
    dsn, schema = pg
    cutter, relayed = relay
    key = f"lost-answer-{write.replace(' ', '-')}"
    claimed = record(key)
    executing = replace(claimed, status=Status.EXECUTING, executing_at=T0 + 1, updated_at=T0 + 1)
    store = PostgresStore(relayed, schema=schema, min_size=0, max_size=2)
    direct = PostgresStore(dsn, schema=schema, min_size=0)
    try:
        if write == "executing mark":
            assert direct.claim(claimed, None, event(claimed)).acquired
        cutter.marker = key.encode()
        with pytest.raises(LedgerError) as info:
            if write == "claim":
                store.claim(claimed, None, event(claimed))
            else:
                store.transition((Status.CLAIMED, 1), executing, event(executing))
        assert cutter.cut.is_set(), "the relay never cut the answer"
        now = direct.get(key)
        # The server did commit the write whose answer was lost.
        expected = claimed if write == "claim" else executing
        assert now == expected
        assert isinstance(info.value, LedgerOutcomeUnknown), (
            f"a write that committed was reported as {type(info.value).__name__}: {info.value}"
        )
    finally:
        store.close()
        direct.close()
