"""A DBOS workflow SIGKILLed in the middle of its step, recovered by DBOS on restart.

The process runs ``examples/dbos_orders.py`` as a user would and kills
itself (``SIGKILL``) at a named point of the step's ledger run
(``ACTONCE_CRASH_AT``). A second process only launches DBOS
(``dbos_restart.py``), which recovers the pending workflow and runs the step
again. The order service's table (a ``FakeProvider`` file, not the ledger)
must hold exactly one order, DBOS the workflow's success, the ledger a
confirmed effect.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from actonce import Status, open_ledger
from actonce.testing import FakeProvider

from .services import need

need("dbos", "pip install 'actonce[dbos]'")

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[1] / "examples" / "dbos_orders.py"
#: Seconds of the ledger's lease in the example: the restart waits this out.
LEASE = "2"


def _run(
    folder: Path, script: Path, *args: str, crash: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACTONCE_CRASH", "DBOS_"))}
    env.update(ORDERS_LEASE_SECONDS=LEASE, PYTHONPATH=os.pathsep.join(sys.path))
    if crash is not None:
        env.update(ACTONCE_CRASH_AT=crash, ACTONCE_CRASH_MODE="kill")
    return subprocess.run([sys.executable, str(script), *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def _orders(folder: Path) -> dict[str, int]:
    provider = FakeProvider(str(folder / "orders.db"))
    try:
        return provider.accepted()
    finally:
        provider.close()


def _workflow(folder: Path, workflow_id: str) -> tuple[str, int]:
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=f"sqlite:///{folder / 'dbos.sqlite'}")
    try:
        status = client.retrieve_workflow(workflow_id).get_status()
        return str(status.status), int(status.recovery_attempts or 0)
    finally:
        client.destroy()


@pytest.mark.parametrize(
    ("point", "made"),
    [
        ("before_mark_executing", 0),
        ("after_mark_executing", 0),
        ("provider_committed", 1),  # the order is made, the answer never came back
        ("after_perform", 1),
        ("after_record", 1),  # the ledger confirmed it, DBOS never saved the step
    ],
)
def test_killed_mid_step_recovered_on_restart(tmp_path: Path, point: str, made: int) -> None:
    ref = f"ORDER-{point}"
    killed = _run(tmp_path, EXAMPLE, ref, crash=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert _orders(tmp_path) == ({ref: 1} if made else {})
    assert _workflow(tmp_path, f"checkout-{ref}")[0] == "PENDING"

    restarted = _run(tmp_path, HERE / "dbos_restart.py", f"checkout-{ref}")
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    assert _orders(tmp_path) == {ref: 1}  # one external object, whatever the point
    status, recoveries = _workflow(tmp_path, f"checkout-{ref}")
    assert (status, recoveries) == ("SUCCESS", 2)  # DBOS ran it again: started once, recovered once
    with open_ledger(f"sqlite:///{tmp_path / 'actonce.db'}") as ledger:
        assert [r.status for r in ledger.list()] == [Status.CONFIRMED]
        assert restarted.stdout.split() == [ledger.list()[0].result_ref]


def test_running_the_same_command_again_finishes_it(tmp_path: Path) -> None:
    """The example as the docs say: killed, then the same command once more."""
    killed = _run(tmp_path, EXAMPLE, "ORDER-9201", crash="after_perform")
    assert killed.returncode == -signal.SIGKILL
    again = _run(tmp_path, EXAMPLE, "ORDER-9201")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "orders made for ORDER-9201: 1" in again.stdout
    assert _orders(tmp_path) == {"ORDER-9201": 1}


def test_without_the_ledger_the_recovered_step_orders_twice(tmp_path: Path) -> None:
    """The test can fail: DBOS alone runs the step again after the kill."""
    killed = _run(tmp_path, HERE / "dbos_naive.py", "R", crash="provider_committed")
    assert killed.returncode == -signal.SIGKILL
    assert _orders(tmp_path) == {"R": 1}
    again = _run(tmp_path, HERE / "dbos_naive.py", "R")
    assert again.returncode == 0, again.stderr[-3000:]
    assert _orders(tmp_path) == {"R": 2}
