"""One demo worker process: a browser agent over a slice of the batch.

``python -m actonce.demo._worker CONFIG.json`` prints one JSON line per
effect result on stdout. A hard stop ends the run (exit code 3): no further
mutations in this run, as the design asks.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from actonce import ActOnceError, HardStop, Ledger, Outcome
from actonce.browser import Browser

from ._agent import Agent
from ._intents import Intent

EXIT_HARD_STOP = 3
EXIT_ERROR = 4


def _emit(**fields: Any) -> None:
    print(json.dumps(fields, sort_keys=True), flush=True)


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    intents = [Intent(**{**i, "parts": tuple(i["parts"])}) for i in config["intents"]]
    random.Random(config["seed"]).shuffle(intents)
    run_id = config["run_id"]
    with Ledger.open(config["ledger"]) as ledger, Browser(headed=config["headed"]) as browser:
        agent = Agent(ledger, browser, config["origin"], evidence_dir=config["evidence_dir"],
                      run_id=run_id)
        try:
            for intent in intents:
                for part, result in agent.run_intent(intent):
                    _emit(worker=config["worker"], intent=intent.id, part=part,
                          outcome=result.outcome.value, status=result.status and result.status.value,
                          reason=result.reason, attempt=result.attempt, performed=result.performed,
                          result_ref=result.result_ref, key=result.key)
                    if result.outcome is Outcome.HARD_STOP:
                        return EXIT_HARD_STOP
        except HardStop as exc:  # e.g. the login itself met a CAPTCHA
            _emit(worker=config["worker"], intent=None, outcome="hard_stop", reason=exc.reason)
            return EXIT_HARD_STOP
        except ActOnceError as exc:
            _emit(worker=config["worker"], intent=None, outcome="error",
                  reason=f"{type(exc).__name__}: {exc}")
            return EXIT_ERROR
        finally:
            agent.close()
    return 0


def intent_json(intent: Intent) -> dict[str, Any]:
    """An intent as the worker's config carries it."""
    return asdict(intent)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
