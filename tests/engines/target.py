"""The outside world of the engine tests: an order service in a process of its own.

``python target.py DB`` serves on a free port of 127.0.0.1 and prints
``{"port": N}`` once it listens. It knows nothing of actonce and does not
deduplicate: every ``POST /orders`` makes a new order, as a naive API does.
Its SQLite table ``orders`` is the **ground truth** the tests judge by; the
ledger is never asked what happened.

- ``POST /orders`` with ``{"ref": ..., "amount": ...}``: ``201 {"id": "ord-N"}``.
- ``GET /orders?ref=R``: ``{"ids": [...]}``, every order made for ``R``.
- ``GET /truth``: ``{ref: number of orders}`` for every ref.

A worker ``SIGKILL``ed while its request is in flight does not stop the
order from being made: the request is this process's business by then.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, ref TEXT NOT NULL, amount TEXT)"
)


class Orders:
    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute(_SCHEMA)
        self._lock = threading.Lock()

    def create(self, ref: str, amount: Any) -> str:
        with self._lock:
            cur = self._db.execute("INSERT INTO orders (ref, amount) VALUES (?, ?)", (ref, amount))
        return f"ord-{cur.lastrowid}"

    def find(self, ref: str) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT id FROM orders WHERE ref = ? ORDER BY id", (ref,))
            return [f"ord-{r[0]}" for r in rows.fetchall()]

    def truth(self) -> dict[str, int]:
        with self._lock:
            rows = self._db.execute("SELECT ref, count(*) FROM orders GROUP BY ref").fetchall()
        return {str(r[0]): int(r[1]) for r in rows}


def handler(orders: Orders) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/orders":
                ref = parse_qs(url.query).get("ref", [""])[0]
                self._answer(200, {"ids": orders.find(ref)})
            elif url.path == "/truth":
                self._answer(200, orders.truth())
            else:
                self._answer(404, {"error": "no such page"})

        def do_POST(self) -> None:
            if urlsplit(self.path).path != "/orders":
                self._answer(404, {"error": "no such page"})
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self._answer(201, {"id": orders.create(str(body["ref"]), body.get("amount"))})

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the tests read the truth, not the access log

    return Handler


class Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A worker SIGKILLed while it waited for the answer: the order is made,
        # the answer has no one to go to. That is the point, not an error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def main() -> None:
    server = Server(("127.0.0.1", 0), handler(Orders(sys.argv[1])))
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
