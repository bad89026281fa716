"""A program that uses the installed payretry package the way an application
would, from outside the repository: it signs every payment attempt and every
status lookup through its own request hook, against a simulator that refuses
any request without a valid signature (`payretry-sim --hmac-secret`).

    python signed_payments.py PATH/TO/payretry-sim

It starts the simulator itself, pays a few orders, each with its own W3C
traceparent (one of them meets lost answers until it is UNKNOWN, then settles
through a signed lookup; another settles through reconcile), checks with the
simulator that every signed request was verified and none refused, that the
library's log lines carry each payment's traceparent, that a wrong secret
charges nothing, and exits 0, or 1 with the reason.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import payretry

API_KEY = "sk_test_consumer"

# The simulator answers a lookup by merchant reference; Stripe's own lookup
# needs the provider's id, which a payment whose answers were lost never got.
PROFILE: Dict[str, Any] = {
    "extends": "stripe",
    "name": "sim-lookup",
    "lookup": {
        "by": "order_id",
        "method": "GET",
        "path": "/v1/payments?order_id={order_id}",
        "status_path": "$.data[0].status",
        "id_path": "$.data[0].id",
        "status_map": {"succeeded": "SUCCEEDED"},
        "reference_path": "$.order_id",
        "not_found": {"status": 200, "code_path": "$.total_count", "codes": ["0"]},
    },
}


class Signer:
    """X-Signature: v1=hex(HMAC-SHA256(secret, METHOD \\n PATH_AND_QUERY \\n BODY))."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        self._lock = threading.Lock()
        self.signed: List[str] = []  # "METHOD path" of every request signed

    def __call__(self, info: payretry.AttemptInfo) -> Optional[Mapping[str, str]]:
        message = b"\n".join([info.method.encode(), info.path.encode(), info.body])
        digest = hmac.new(self._secret, message, hashlib.sha256).hexdigest()
        with self._lock:
            self.signed.append(f"{info.method} {info.path}")
        return {"X-Signature": "v1=" + digest}


class Simulator:
    def __init__(self, binary: str, secret: str) -> None:
        self.proc = subprocess.Popen(
            [binary, "--port", "0", "--seed", "3", "--api-key", API_KEY, "--hmac-secret", secret],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.proc.kill()
            raise RuntimeError(f"payretry-sim did not start: {line!r}")
        self.base_url = "http://" + line.split("listening on ", 1)[1].strip()

    def admin(self, what: str, payload: Optional[Dict[str, Any]] = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(f"{self.base_url}/__admin/{what}", data=data)
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class LogLines(logging.Handler):
    """Keeps the library's attempt log (one JSON object per record)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: List[Dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == "payretry":
            self.lines.append(json.loads(record.getMessage()))


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}")


def run(sim: Simulator, secret: str, ledger_dir: Path) -> None:
    config: Dict[str, Any] = {
        "provider": PROFILE,
        "base_url": sim.base_url,
        "create_path": "/v1/payments",
        "auth": {"bearer": API_KEY},
        "ledger": f"sqlite://{ledger_dir / 'payments.db'}",
        "retry": {"max_attempts": 2, "attempt_timeout_ms": 1000, "deadline_ms": 10000, "backoff_base_ms": 20},
    }
    signer = Signer(secret.encode())
    bodies = {f"shop-{n}": {"order_id": f"shop-{n}", "amount": 1000 + n, "currency": "eur"} for n in range(5)}
    sim.admin("script", {"order_id": "shop-3", "faults": ["lost_response", "lost_response"]})
    sim.admin("script", {"order_id": "shop-4", "faults": ["lost_response", "lost_response"]})

    log = LogLines()
    logging.getLogger("payretry").addHandler(log)
    logging.getLogger("payretry").setLevel(logging.DEBUG)
    traces = {oid: f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01" for oid in bodies}
    with payretry.Client(config, request_hook=signer) as client:
        outcomes = {oid: client.submit(oid, b, traceparent=traces[oid]).outcome for oid, b in bodies.items()}
        check(all(outcomes[f"shop-{n}"] is payretry.Outcome.SUCCEEDED for n in range(3)), "three signed payments succeeded")
        check(outcomes["shop-3"] is payretry.Outcome.UNKNOWN, "lost answers leave shop-3 UNKNOWN")
        looked_up = client.query("shop-3")
        check(looked_up.outcome is payretry.Outcome.SUCCEEDED and looked_up.queried, "a signed lookup settles shop-3")
        report = client.reconcile(lambda oid: bodies.get(oid), older_than=0)
        check([(p.order_id, p.outcome) for p in report] == [("shop-4", payretry.Outcome.SUCCEEDED)],
              "reconcile settles shop-4 through a signed lookup")

    attempt_lines = [ln for ln in log.lines if ln.get("event") == "attempt" and ln.get("order_id") in bodies]
    check(len(attempt_lines) >= len(bodies) and all(ln.get("traceparent") == traces[ln["order_id"]] for ln in attempt_lines),
          f"all {len(attempt_lines)} attempt log lines carry their payment's traceparent")

    stats = sim.admin("stats")
    lookups = [s for s in signer.signed if s.startswith("GET ")]
    check(len(lookups) >= 2, f"the hook signed {len(lookups)} lookups and {len(signer.signed) - len(lookups)} creates")
    check(stats["signed_requests"] == len(signer.signed), f"the simulator verified all {len(signer.signed)} signatures")
    check(stats["bad_signatures"] == 0, "the simulator refused no signature")
    check(all(sim.admin(f"truth?order_id={oid}")["charges"] == 1 for oid in bodies), "every order charged once")

    with payretry.Client(dict(config, ledger="memory:"), request_hook=Signer(b"not-the-secret")) as client:
        wrong = client.submit("shop-wrong", {"order_id": "shop-wrong", "amount": 1, "currency": "eur"})
    check(wrong.outcome is not payretry.Outcome.SUCCEEDED and wrong.http_status == 401,
          f"a wrong secret is refused ({wrong.outcome}, HTTP {wrong.http_status})")
    check(sim.admin("truth?order_id=shop-wrong")["charges"] == 0, "a wrong secret charges nothing")
    check(sim.admin("stats")["bad_signatures"] >= 1, "the simulator counted the bad signature")


def main(argv: List[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} PATH/TO/payretry-sim", file=sys.stderr)
        return 2
    print(f"payretry {payretry.__version__} from {payretry.__file__}")
    secret = secrets.token_hex(16)
    sim = Simulator(argv[1], secret)
    try:
        with tempfile.TemporaryDirectory(prefix="payretry-consumer-") as ledger_dir:
            run(sim, secret, Path(ledger_dir))
    finally:
        sim.stop()
    print("signed_payments: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
