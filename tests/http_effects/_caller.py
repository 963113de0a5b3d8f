"""The calling process the kill test SIGKILLs mid-request.

``python _caller.py CONFIG`` (JSON: ``ledger``, ``url``, ``keys``,
``reference``) runs the charge effect once against the provider at ``url``
and prints its outcome (it never gets there when killed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.http_effects.charges import charge

from actonce import Ledger
from actonce.http import Provider


def main() -> None:
    cfg = json.loads(sys.argv[1])
    with (
        Ledger.open(cfg["ledger"]) as ledger,
        Provider(cfg["url"], idempotency_keys=cfg["keys"]) as provider,
    ):
        result = ledger.run(charge(provider, cfg["reference"]))
    print(json.dumps({"outcome": str(result.outcome)}), flush=True)


if __name__ == "__main__":
    main()
