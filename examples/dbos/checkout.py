"""Checkout as a DBOS workflow whose charge step calls payretry.

DBOS (https://docs.dbos.dev) runs each step at least once: when a worker dies
after a step began and before DBOS recorded its output, the recovered workflow
runs the step again. A charge step must therefore be safe to run twice, and
that is payretry's job: the order id names the payment, and the ledger (here
in the same PostgreSQL as DBOS) holds its idempotency key and state from
before the first byte is sent, so a second run of the step resumes the first
payment (same key, same bytes) or reads its answer from the ledger. It never
creates a second one. The step returns SUCCEEDED, FAILED, or UNKNOWN with the
reason; on UNKNOWN the workflow sleeps (durably) and runs the step again,
which settles the payment with the same key.

Run against the simulator, with DBOS's system database beside the ledger:

    payretry-sim --port 8080 --mix realistic &
    createdb shop && createdb shop_dbos
    python checkout.py --ledger postgresql://localhost/shop \\
        --system-db postgresql://localhost/shop_dbos --provider http://127.0.0.1:8080 --orders 20

Kill it (kill -9) while it runs and start it again with the same arguments:
DBOS recovers the unfinished workflows, and `curl -s 127.0.0.1:8080/__admin/truth`
still shows `"duplicates":0`.

tests/workflow/dbos_crash_test.py runs this workflow under seeded SIGKILLs,
next to two variants of the step that call stripe-python directly
(--step stripe_derived_key and --step stripe_fresh_key), which this file
carries only so that the three are compared in one workflow.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from typing import Any, Callable, Dict, List, Optional

import payretry
from dbos import DBOS, DBOSConfig, SetWorkflowID

# How often the workflow runs the step again for a payment still UNKNOWN
# (each run resumes it with its key), and how long it sleeps in between.
SETTLE_ROUNDS = 4
SETTLE_SLEEP_S = 0.5

QUEUE = "checkout"

# Set by setup(); module globals because DBOS steps are plain functions that a
# recovered workflow calls in a new process.
_payments: Optional[payretry.Client] = None
_stripe: Any = None
_step: str = "payretry"


def payretry_config(provider_url: str, ledger_url: str, api_key: str) -> Dict[str, Any]:
    """The client: Stripe's API at provider_url, the ledger in PostgreSQL.

    The lease of an IN_FLIGHT row (deadline + lease_margin_ms) is what a
    recovered step waits out when the process that held it died mid-send;
    in_progress_wait_ms lets the step wait that long rather than return
    IN_PROGRESS at once."""
    return {
        "provider": "stripe",
        "base_url": provider_url,
        "auth": {"bearer": api_key},
        "ledger": {"url": ledger_url, "lease_margin_ms": 200},
        "retry": {"max_attempts": 4, "attempt_timeout_ms": 600, "deadline_ms": 2500,
                  "backoff_base_ms": 20, "backoff_cap_ms": 200},
        "in_progress_wait_ms": 4000,
    }


def body(order_id: str, amount: int) -> Dict[str, Any]:
    # Stripe takes the order id in metadata; payretry checks it names the order submitted.
    return {"amount": amount, "currency": "usd", "metadata": {"order_id": order_id}}


def outcome(state: str, reason: str = "", payment_id: Optional[str] = None) -> Dict[str, Any]:
    return {"outcome": state, "reason": reason, "payment_id": payment_id}


@DBOS.step()
def charge(order_id: str, amount: int) -> Dict[str, Any]:
    """The payretry step. Running it twice is safe: the order id is the payment."""
    assert _payments is not None, "setup() first"
    r = _payments.submit(order_id, body(order_id, amount))
    if r.outcome is payretry.Outcome.SUCCEEDED:
        return outcome("SUCCEEDED", payment_id=r.provider_payment_id)
    if r.outcome is payretry.Outcome.FAILED:
        return outcome("FAILED", r.error or "declined")
    # UNKNOWN or IN_PROGRESS: the provider may have charged; never re-create.
    reason = r.error or (r.attempts[-1].reason if r.attempts else str(r.outcome))
    return outcome("UNKNOWN", "%s: %s" % (r.outcome, reason))


def _stripe_charge(order_id: str, amount: int, key: str) -> Dict[str, Any]:
    import stripe  # only the comparison variants need it

    try:
        pi = _stripe.v1.payment_intents.create(params=body(order_id, amount), options={"idempotency_key": key})
    except stripe.CardError as e:
        return outcome("FAILED", e.code or "card_error")
    return outcome("SUCCEEDED", payment_id=pi.id)


# What a DBOS user would write with the provider's SDK: DBOS retries the step
# on an exception (a timeout, a 5xx); the SDK retries inside one run too.
@DBOS.step(retries_allowed=True, max_attempts=3, interval_seconds=0.05, backoff_rate=2.0)
def charge_stripe_derived_key(order_id: str, amount: int) -> Dict[str, Any]:
    """Stripe's SDK with a key derived from the workflow id: every run of the
    step (DBOS's retries, a recovery) sends the same key."""
    return _stripe_charge(order_id, amount, "checkout-%s" % DBOS.workflow_id)


@DBOS.step(retries_allowed=True, max_attempts=3, interval_seconds=0.05, backoff_rate=2.0)
def charge_stripe_fresh_key(order_id: str, amount: int) -> Dict[str, Any]:
    """Stripe's SDK with a new key each run of the step (the SDK's own retries
    inside one run share it): the common mistake."""
    return _stripe_charge(order_id, amount, str(uuid.uuid4()))


STEPS: Dict[str, Callable[[str, int], Dict[str, Any]]] = {
    "payretry": charge,
    "stripe_derived_key": charge_stripe_derived_key,
    "stripe_fresh_key": charge_stripe_fresh_key,
}


@DBOS.workflow()
def checkout(order_id: str, amount: int) -> Dict[str, Any]:
    result = outcome("UNKNOWN", "not charged yet")
    for _ in range(SETTLE_ROUNDS):
        try:
            result = STEPS[_step](order_id, amount)
        except Exception as e:  # noqa: BLE001 - the SDK steps raise once DBOS's retries are spent
            result = outcome("UNKNOWN", "%s: %s" % (type(e).__name__, e))
        if result["outcome"] != "UNKNOWN":
            return result
        DBOS.sleep(SETTLE_SLEEP_S)
    return result


def setup(system_db_url: str, pay_config: Dict[str, Any], step: str = "payretry",
          request_hook: Optional[payretry.RequestHook] = None, stripe_http_client: Any = None,
          app_name: str = "payretry-dbos-checkout") -> None:
    """Opens the payment client and configures DBOS; call DBOS.launch() next.

    The application version is fixed so that a restarted worker recovers the
    workflows of the one before it (DBOS recovers only its own version's)."""
    global _payments, _stripe, _step
    _step = step
    if step == "payretry":
        _payments = payretry.Client(pay_config, request_hook=request_hook)
    else:
        import stripe

        # The SDK's own retries reuse one key inside a run, as it documents.
        _stripe = stripe.StripeClient(pay_config["auth"]["bearer"],
                                      base_addresses={"api": pay_config["base_url"]},
                                      http_client=stripe_http_client, max_network_retries=2)
    config: DBOSConfig = {
        "name": app_name,
        "system_database_url": system_db_url,
        "application_version": "checkout-1",
        "log_level": "WARNING",
    }
    DBOS(config=config)


def start_orders(order_ids: List[str], amount: int, concurrency: int = 16) -> None:
    """Enqueues one workflow per order, its id the order id, unless the order
    has one already (a restarted worker finds them): DBOS would return the
    existing workflow anyway, this only saves the round trips."""
    queue = DBOS.register_queue(QUEUE, worker_concurrency=concurrency, polling_interval_sec=0.05)
    have = {w.workflow_id for w in DBOS.list_workflows(workflow_ids=order_ids, load_input=False, load_output=False)}
    for order_id in order_ids:
        if order_id not in have:
            with SetWorkflowID(order_id):
                queue.enqueue(checkout, order_id, amount)


DONE = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


def results(order_ids: List[str], poll_s: float = 0.2) -> Dict[str, Dict[str, Any]]:
    """Waits until every order's workflow ended; returns what each concluded
    (a workflow that ended otherwise than with a result: its status)."""
    while True:
        ws = DBOS.list_workflows(workflow_ids=order_ids, load_input=False, load_output=False)
        if len(ws) == len(order_ids) and all(w.status in DONE for w in ws):
            break
        time.sleep(poll_s)
    out: Dict[str, Dict[str, Any]] = {}
    for w in DBOS.list_workflows(workflow_ids=order_ids, load_input=False):
        if w.status == "SUCCESS" and isinstance(w.output, dict):
            out[w.workflow_id] = w.output
        else:
            out[w.workflow_id] = {"status": w.status, "error": str(w.error)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description="Charge N orders through a DBOS workflow and payretry.")
    ap.add_argument("--system-db", required=True, help="DBOS's system database (PostgreSQL URL)")
    ap.add_argument("--ledger", required=True, help="payretry's ledger (PostgreSQL URL)")
    ap.add_argument("--provider", required=True, help="Stripe's API base, e.g. payretry-sim's URL")
    ap.add_argument("--api-key", default="sk_test_checkout")
    ap.add_argument("--orders", type=int, default=20)
    ap.add_argument("--prefix", default="order-")
    ap.add_argument("--step", choices=sorted(STEPS), default="payretry")
    a = ap.parse_args()
    setup(a.system_db, payretry_config(a.provider, a.ledger, a.api_key), a.step)
    DBOS.launch()  # recovers the workflows a killed worker left PENDING
    try:
        orders = ["%s%04d" % (a.prefix, i) for i in range(a.orders)]
        start_orders(orders, 1000)
        for order_id, r in results(orders).items():
            print(order_id, json.dumps(r))
    finally:
        DBOS.destroy()
        if _payments is not None:
            _payments.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
