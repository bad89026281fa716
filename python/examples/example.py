"""Submit one payment with payretry, then settle whatever stayed UNKNOWN.

Run against the bundled simulator:
    payretry-sim --port 8080 &
    python examples/example.py http://127.0.0.1:8080
"""

from __future__ import annotations

import logging
import sys
from typing import Dict, Optional

import payretry

# Bodies the application keeps, so that reconcile can re-send the very same bytes.
BODIES: Dict[str, Dict[str, object]] = {}


def body_for(order_id: str) -> Optional[Dict[str, object]]:
    return BODIES.get(order_id)


def main(base_url: str) -> int:
    logging.basicConfig(level=logging.WARNING)  # payretry logs one JSON line per attempt
    # payretry.ClientConfig: mypy checks every key and value type (docs/config.md).
    config: payretry.ClientConfig = {
        "provider": "stripe",
        "base_url": base_url,
        "create_path": "/v1/payments",
        "auth": {"bearer": "sk_test_example"},
        "ledger": "sqlite:///tmp/payretry-example.db",
        "retry": {"max_attempts": 3, "deadline_ms": 10000},
    }
    with payretry.Client(config) as client:
        order_id = "order-1042"
        BODIES[order_id] = {"order_id": order_id, "amount": 1000, "currency": "eur"}
        try:
            result = client.submit(order_id, BODIES[order_id])
        except payretry.MismatchError as e:  # a caller bug: this order was sent with another body
            print(f"mismatch: {e}", file=sys.stderr)
            return 1
        except payretry.PayError as e:  # a failed call: bad input, ledger down, ...
            print(f"{e.name}: {e}", file=sys.stderr)
            return 1

        if result.outcome is payretry.Outcome.SUCCEEDED and result.money_state is payretry.MoneyState.PAID:
            print(f"paid: {result.provider_payment_id} ({result.provider_status})")
        elif result.outcome is payretry.Outcome.SUCCEEDED:
            # Took effect, but no money moved yet (AUTHORIZED: capture, then
            # fulfil): never ship on SUCCEEDED alone; wait for the webhook.
            print(f"not paid yet: {result.money_state}")
        elif result.outcome is payretry.Outcome.FAILED:
            print(f"declined: {result.error}")
        else:  # UNKNOWN or IN_PROGRESS: never re-create the payment
            print(f"{result.outcome}: settle later, key {result.idempotency_key}")
        print(repr(result))

        report = client.reconcile(body_for)
        for settled in report:
            print(f"reconciled {settled.order_id}: {settled.outcome}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"))
