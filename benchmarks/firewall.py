"""What does the write firewall cost on a browsing session? Firewall on vs off.

    python benchmarks/firewall.py [--json] [--rounds 3] [--navigations 50] [--effects 10]

One sandbox server and one Chromium for the whole run. Each round runs the
same browsing session twice, firewall on and off, in alternating order
(off first on even rounds), each on a fresh sandbox database, a fresh
in-memory ledger and a freshly signed-in session (login is not timed; with
the firewall on, the login form is the one allowlisted request):

- ``navigations`` GET page loads (home, search, compose, notes, shop, in
  turn), with one guarded effect (``Ledger.run`` of a post,
  ``browser.as_effect``) after every ``navigations / effects`` of them;
- then one stray ``fetch()`` POST per effect from the page, outside any
  effect (an agent clicking *Publish* itself): refused and recorded with the
  firewall on, created on the server with it off. Timed apart (``stray``).

``ratio`` is the median of the per-round ratios of the session's time
(navigations + effects), on ÷ off; the goal is at most 1.05. Per mode the
refusal counts (in the ledger) and what the server created are reported.
The last line (with ``--json``) is one JSON object. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from actonce import Outcome, RequestPattern, effect_key, open_ledger
from actonce.browser import Browser, BrowserSession, as_effect
from actonce.sandbox import SEED_USERS, SandboxServer

ACTOR = "alice"
PAGES = ("/", "/search?q=hello", "/compose", "/notes", "/shop")


async def _stray(s: Any) -> str:
    result: str = await s.page.evaluate(
        """() => fetch('/compose', {method: 'POST', body: new URLSearchParams({text: 'stray'})})
                   .then(r => 'sent', e => 'refused')"""
    )
    return result


def session_for(browser: Browser, server: SandboxServer, ledger: Any, on: bool) -> BrowserSession:
    server.db.reset()
    server.sandbox.faults.reset()
    login = [RequestPattern("POST", "/login", origin=server.url)] if on else []
    session = browser.new_session(
        server.url, ACTOR, ledger=ledger, firewall=on, allow=login, timeout=10.0,
        confirm_timeout=10.0,
    )  # fmt: skip
    session.login(SEED_USERS[ACTOR])
    return session


def run(
    browser: Browser, server: SandboxServer, round_: int, on: bool, args: Any
) -> dict[str, Any]:
    with open_ledger("memory://") as ledger:
        session = session_for(browser, server, ledger, on)
        try:
            every = max(1, args.navigations // max(1, args.effects))
            done = 0
            t = time.perf_counter()
            for i in range(args.navigations):
                session.goto(PAGES[i % len(PAGES)])
                if (i + 1) % every == 0 and done < args.effects:
                    text = f"Firewall benchmark r{round_} {'on' if on else 'off'} #{done}"
                    key = effect_key(tenant="bench", actor=ACTOR, kind="post", object=text,
                                     operation="publish")  # fmt: skip
                    result = ledger.run(as_effect(session.post_effect(text), key))
                    assert result.outcome is Outcome.COMPLETED, result.reason
                    done += 1
            elapsed = time.perf_counter() - t
            t = time.perf_counter()
            strays = [session.run(_stray) for _ in range(done)]
            stray = time.perf_counter() - t
            wall = session.firewall
            if wall is not None:
                wall.settled()
        finally:
            session.close()
        totals = server.db.ground_truth()["totals"]
        return {
            "seconds": elapsed,
            "stray_seconds": stray,
            "effects": done,
            "stray_refused_in_page": strays.count("refused"),
            "refusals_recorded": ledger.firewall.totals().get(ACTOR, 0),
            "posts_on_server": totals["posts"],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--navigations", type=int, default=50)
    parser.add_argument("--effects", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rounds: list[dict[str, Any]] = []
    with SandboxServer(db=None) as server, Browser() as browser:
        for r in range(args.rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            got = {("on" if on else "off"): run(browser, server, r, on, args) for on in order}
            got["ratio"] = got["on"]["seconds"] / got["off"]["seconds"]
            rounds.append(got)
            print(
                f"round {r}: on {got['on']['seconds']:.2f}s, off {got['off']['seconds']:.2f}s, "
                f"ratio {got['ratio']:.3f}; refused on/off "
                f"{got['on']['refusals_recorded']}/{got['off']['refusals_recorded']}, "
                f"posts on/off {got['on']['posts_on_server']}/{got['off']['posts_on_server']}"
            )
    last = rounds[-1]
    summary = {
        "rounds": args.rounds,
        "navigations": args.navigations,
        "effects": args.effects,
        "ratio": round(statistics.median(r["ratio"] for r in rounds), 4),
        "goal": 1.05,
        "on_seconds": [round(r["on"]["seconds"], 3) for r in rounds],
        "off_seconds": [round(r["off"]["seconds"], 3) for r in rounds],
        "scenarios": {
            mode: {
                k: last[mode][k]
                for k in (
                    "effects",
                    "stray_refused_in_page",
                    "refusals_recorded",
                    "posts_on_server",
                )
            }
            for mode in ("on", "off")
        },
    }
    print(f"ratio (median, on / off): {summary['ratio']:.3f}  (goal <= 1.05)")
    if args.json:
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
