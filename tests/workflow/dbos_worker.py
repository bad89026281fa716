"""One worker process of dbos_crash_test.py: examples/dbos/checkout.py with
probes at the four points where the test may SIGKILL it.

    before_send    the request is about to leave (payretry's request hook;
                   for stripe-python, its HTTP client before the send)
    after_send     the same moment, then the kill AFTER_SEND_MS later, while
                   the simulator (answering latency_ms after arrival) still
                   holds the answer: the provider has the request (and has
                   charged, unless a fault says otherwise), the worker dies
                   without the answer
    after_answer   a response is in: payretry's "attempt" log line (its ledger
                   has not recorded the attempt yet); for stripe-python, its
                   HTTP client as it returns the response to the SDK
    before_record  the charge step returned and DBOS is about to record its
                   output in the system database

--kill KIND:N kills the process at the N-th time KIND is reached, first
writing `KIND order_id` to --kill-log. Without --kill the worker runs every
order to its end and writes each workflow's result to --results (JSON).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from typing import Any, Optional

sys.dont_write_bytecode = True  # nothing written into the source tree
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "examples", "dbos"))
import checkout  # noqa: E402
from dbos import DBOS  # noqa: E402

AFTER_SEND_MS = 40
KINDS = ("before_send", "after_send", "after_answer", "before_record")


class Killer:
    def __init__(self, spec: Optional[str], kill_log: str) -> None:
        self.kind, self.left = None, 0
        if spec:
            kind, n = spec.split(":")
            assert kind in KINDS, kind
            self.kind, self.left = kind, int(n)
        self.kill_log = kill_log
        self.lock = threading.Lock()

    def reached(self, point: str, order_id: str) -> None:
        # after_send arms at the moment before_send is reached.
        armed = "before_send" if self.kind == "after_send" else self.kind
        if point != armed:
            return
        with self.lock:
            self.left -= 1
            fire = self.left == 0
        if not fire:
            return
        if self.kind == "after_send":
            threading.Timer(AFTER_SEND_MS / 1000.0, self.die, (order_id,)).start()
        else:
            self.die(order_id)

    def die(self, order_id: str) -> None:
        fd = os.open(self.kill_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, ("%s %s\n" % (self.kind, order_id)).encode())
        os.fsync(fd)
        os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)


def probe_dbos_records(killer: Killer) -> None:
    """before_record: DBOS records a step's output through its system
    database's record_operation_result; the probe runs just before."""
    from dbos._sys_db import SystemDatabase

    original = SystemDatabase.record_operation_result
    steps = {"charge", "charge_stripe_derived_key", "charge_stripe_fresh_key"}

    def record(self: Any, result: Any, *args: Any, **kw: Any) -> None:
        if str(result.get("function_name", "")).rsplit(".", 1)[-1] in steps:
            killer.reached("before_record", result.get("workflow_uuid", "?"))
        return original(self, result, *args, **kw)

    SystemDatabase.record_operation_result = record  # type: ignore[method-assign]


class AttemptLines(logging.Handler):
    """after_answer for payretry: an "attempt" line with an HTTP status."""

    def __init__(self, killer: Killer) -> None:
        super().__init__(logging.INFO)
        self.killer = killer

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = json.loads(record.getMessage())
        except ValueError:
            return
        if line.get("event") == "attempt" and line.get("http_status"):
            self.killer.reached("after_answer", line.get("order_id", "?"))


def stripe_http_client(killer: Killer) -> Any:
    import stripe

    class Probed(stripe.RequestsClient):
        def request(self, method: str, url: str, headers: Any, post_data: Any = None, **kw: Any) -> Any:
            order = _form_order(post_data)
            killer.reached("before_send", order)
            answer = super().request(method, url, headers, post_data, **kw)
            killer.reached("after_answer", order)
            return answer

    return Probed(timeout=0.6)  # payretry's attempt_timeout_ms (checkout.payretry_config)


def _form_order(post_data: Any) -> str:
    from urllib.parse import parse_qs

    text = post_data.decode() if isinstance(post_data, bytes) else (post_data or "")
    return str(parse_qs(text).get("metadata[order_id]", ["?"])[0])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--step", required=True, choices=sorted(checkout.STEPS))
    ap.add_argument("--system-db", required=True)
    ap.add_argument("--ledger", required=True)
    ap.add_argument("--provider", required=True)
    ap.add_argument("--api-key", required=True)
    ap.add_argument("--orders", type=int, required=True)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--kill", help="KIND:N")
    ap.add_argument("--kill-log", required=True)
    ap.add_argument("--results", required=True)
    a = ap.parse_args()

    killer = Killer(a.kill, a.kill_log)
    probe_dbos_records(killer)
    config = checkout.payretry_config(a.provider, a.ledger, a.api_key)
    hook = None
    http = None
    if a.step == "payretry":
        config["log"] = {"level": "info"}
        log = logging.getLogger("payretry")
        log.setLevel(logging.INFO)
        log.propagate = False
        log.addHandler(AttemptLines(killer))

        def hook(info: Any) -> None:
            if info.method == "POST":  # a payment's attempt, not a status lookup
                killer.reached("before_send", info.order_id)
    else:
        http = stripe_http_client(killer)
    checkout.setup(a.system_db, config, a.step, request_hook=hook, stripe_http_client=http)
    DBOS.launch()
    orders = ["order-%04d" % i for i in range(a.orders)]
    checkout.start_orders(orders, 1000, concurrency=a.concurrency)
    results = checkout.results(orders)
    tmp = a.results + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f)
    os.replace(tmp, a.results)
    # A clean exit: nothing of DBOS's threads or the client's may hang it.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
