"""The agent process of the kill test: ``python agent_proc.py CONFIG.json``.

alice's guarded browser (its own Chromium), then a browser-use agent whose
scripted model calls ``publish_post`` once; prints its answer as a JSON line. ``ACTONCE_CRASH_AT=after_perform`` with
``ACTONCE_CRASH_MODE=kill`` makes it SIGKILL itself right after the perform,
before the outcome is recorded.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

for name, value in {
    "ANONYMIZED_TELEMETRY": "false",
    "BROWSER_USE_CLOUD_SYNC": "false",
    "BROWSER_USE_VERSION_CHECK": "false",
    "BROWSER_USE_LOGGING_LEVEL": "warning",
}.items():
    os.environ.setdefault(name, value)

from kit import alice, results, run_agent  # noqa: E402  (its own folder)

from actonce import AsyncLedger  # noqa: E402


async def main(config: dict[str, str]) -> None:
    ledger = AsyncLedger.open(config["ledger"])
    try:
        async with alice(ledger, config["origin"], config["evidence"]) as guarded:
            _model, history = await run_agent(guarded, [{"publish_post": {"text": config["text"]}}])
        print(json.dumps({"answer": json.loads(results(history)[0]["content"])}), flush=True)
    finally:
        await ledger.aclose()


if __name__ == "__main__":
    asyncio.run(main(json.loads(Path(sys.argv[1]).read_text())))
