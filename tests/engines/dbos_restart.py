"""A restart that only lets DBOS recover: ``python dbos_restart.py WORKFLOW_ID`` (in the example's folder).

It loads ``examples/dbos_orders.py`` as a module (its step and workflow,
the same code, so the same application version), launches DBOS, which
recovers the workflows a killed process left pending, and waits for the
one named: it never starts a workflow itself. Prints its result.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dbos import DBOS, DBOSConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import dbos_orders  # noqa: F401  (registers the step and the workflow)

config: DBOSConfig = {"name": "orders", "system_database_url": "sqlite:///dbos.sqlite"}
DBOS(config=config)
DBOS.launch()
print(DBOS.retrieve_workflow(sys.argv[1]).get_result(), flush=True)
DBOS.destroy()
