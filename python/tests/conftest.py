"""Fixtures: a real payretry-sim on 127.0.0.1 per test, and client configs
that point at it. PAYRETRY_SIM names the simulator binary (CTest sets it to
the one built by the same CMake build)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

API_KEY = "sk_test_python_binding_secret"
_REPO = Path(__file__).resolve().parents[2]


def sim_binary() -> str:
    env = os.environ.get("PAYRETRY_SIM")
    if env:
        return env
    for build in ("build-py", "build"):
        p = _REPO / build / "sim" / "payretry-sim"
        if p.exists():
            return str(p)
    raise RuntimeError("payretry-sim not found: set PAYRETRY_SIM to the simulator binary")


class Sim:
    """One simulator process and its admin endpoints."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sim_binary(), "--port", "0", "--seed", "7", "--api-key", API_KEY, *args],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("listening on 127.0.0.1:"):
            self.proc.kill()
            raise RuntimeError(f"payretry-sim did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1])
        self.base_url = f"http://127.0.0.1:{self.port}"

    def admin(self, what: str, body: Optional[Dict[str, Any]] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.base_url}/__admin/{what}", data=data, method="GET" if data is None else "POST")
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())

    def script(self, order_id: str, faults: List[str]) -> None:
        self.admin("script", {"order_id": order_id, "faults": faults})

    def charges(self, order_id: str) -> int:
        return int(self.admin(f"truth?order_id={order_id}")["charges"])

    def requests(self) -> int:
        return int(self.admin("stats")["requests"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


@pytest.fixture
def start_sim() -> Iterator[Any]:
    """start_sim(*args) -> Sim; every simulator started is stopped after the test."""
    sims: List[Sim] = []

    def start(*args: str) -> Sim:
        s = Sim(*args)
        sims.append(s)
        return s

    yield start
    for s in sims:
        s.stop()


@pytest.fixture
def sim(start_sim: Any) -> Sim:
    s: Sim = start_sim("--slow-ms", "1500")
    return s


def config(sim: Sim, retry: Optional[Dict[str, Any]] = None, **extra: Any) -> Dict[str, Any]:
    """Fast settings so that every fault resolves within a second or two.
    The ledger is memory: unless `extra` names one (a config must)."""
    r: Dict[str, Any] = {
        "max_attempts": 4,
        "connect_timeout_ms": 300,
        "attempt_timeout_ms": 300,
        "deadline_ms": 6000,
        "backoff_base_ms": 20,
        "backoff_cap_ms": 200,
        "min_attempt_ms": 50,
        "jitter_seed": 7,
    }
    r.update(retry or {})
    cfg: Dict[str, Any] = {
        "provider": "stripe",
        "base_url": sim.base_url,
        "create_path": "/v1/payments",
        "auth": {"bearer": API_KEY},
        "retry": r,
        "ledger": "memory:",
    }
    cfg.update(extra)
    return cfg


def body(order_id: str, amount: int = 1000) -> Dict[str, Any]:
    return {"order_id": order_id, "amount": amount, "currency": "eur"}
