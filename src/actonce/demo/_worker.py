"""One demo worker process: a browser, and an operator run per actor.

``python -m actonce.demo._worker CONFIG.json``. The worker tries each
actor's operator in turn (starting with its own, so that the workers spread
out): one run per actor at a time, the others ``locked_skip``. It prints one
JSON line per effect result and one per run summary on stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from actonce import ActOnceError, Ledger, Operator, Registry, RunResult
from actonce.browser import Browser

from ._agent import KINDS, Agent, Stages
from ._intents import ACTORS, Intent

#: The operator lease's seconds without a heartbeat: longer than one step.
TTL = 20.0


def _emit(**fields: Any) -> None:
    print(json.dumps(fields, sort_keys=True), flush=True)


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    batch = [Intent(**{**i, "parts": tuple(i["parts"])}) for i in config["batch"]]
    worker, n = config["worker"], config["index"]

    def emit(intent: Intent, part: int | None, r: RunResult) -> None:
        _emit(worker=worker, intent=intent.id, part=part, outcome=r.outcome.value,
              reason=r.reason, performed=r.performed)  # fmt: skip

    with Ledger.open(config["ledger"]) as ledger, Browser(headed=config["headed"]) as browser:
        agent = Agent(browser, config["origin"], evidence_dir=config["evidence_dir"])
        ledger.registry = Registry()
        agent.register_verifiers(ledger.registry, {i.id: i for i in batch})
        try:
            for actor in ACTORS[n % len(ACTORS) :] + ACTORS[: n % len(ACTORS)]:
                stages = Stages(agent, ledger, actor, batch, emit)
                op = Operator(ledger, f"demo-{actor}", stages, kinds=KINDS, ttl=TTL, owner=worker)
                try:
                    summary = op.run()
                except ActOnceError as exc:  # the ledger itself failed: nothing more here
                    _emit(worker=worker, actor=actor, error=f"{type(exc).__name__}: {exc}")
                    return 4
                _emit(worker=worker, actor=actor, run=summary.run_id, status=summary.status.value,
                      stops=[s.reason for s in summary.stops])  # fmt: skip
        finally:
            agent.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
