"""Ctrl-C during a submit: KeyboardInterrupt comes while the C call still runs,
the payment is recorded in the ledger (not lost), and the client stays usable."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import API_KEY, Sim

CHILD = Path(__file__).with_name("interrupt_child.py")
HOLD_MS = 3000


@pytest.fixture
def holding_sim(start_sim: Any) -> Sim:
    s: Sim = start_sim("--slow-ms", str(HOLD_MS))
    return s


def run_child(sim: Sim, db: Path, order: str, mode: str) -> tuple[subprocess.CompletedProcess[str], float]:
    sim.script(order, ["slow"])
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), sim.base_url, API_KEY, str(db), order, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 10
    while sim.requests() < 1:  # the request reached the provider, which holds it
        assert time.monotonic() < deadline, "the child's request never arrived"
        time.sleep(0.01)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), time.monotonic() - sent


def ledger_state(db: Path, order: str) -> str:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT state FROM payments WHERE order_id = ?", (order,)).fetchone()
    assert row is not None
    return str(row[0])


def test_ctrl_c_interrupts_the_wait_and_the_client_stays_usable(holding_sim: Sim, tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    done, _ = run_child(holding_sim, db, "o-sigint", "continue")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["interrupted"]
    # Interrupted while the simulator still held the request: the order was IN_PROGRESS.
    assert report["during"] == "IN_PROGRESS"
    # The interrupted call finished on its own and committed its outcome.
    assert report["after"] == "SUCCEEDED" and report["after_from_ledger"] and report["same_key"]
    assert ledger_state(db, "o-sigint") == "SUCCEEDED"
    assert holding_sim.charges("o-sigint") == 1


def test_ctrl_c_that_ends_the_program_still_records_the_payment(holding_sim: Sim, tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    done, seconds = run_child(holding_sim, db, "o-sigexit", "exit")
    assert json.loads(done.stdout.strip().splitlines()[0])["interrupted"]
    assert "KeyboardInterrupt" in done.stderr
    assert done.returncode != 0
    print(f"\nSIGINT to exit: {seconds:.2f} s (the held request takes {HOLD_MS / 1000:.1f} s)")
    # The interpreter waited for the running call: its outcome is in the ledger.
    assert ledger_state(db, "o-sigexit") == "SUCCEEDED"
    assert holding_sim.charges("o-sigexit") == 1
