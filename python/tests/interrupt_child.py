"""Child process of test_interrupt.py: submits one payment that the simulator
holds, and reports what happened when SIGINT arrived. Not a test module."""

from __future__ import annotations

import json
import sys
import time

import payretry


def main() -> int:
    base_url, api_key, db, order, mode = sys.argv[1:6]
    client = payretry.Client(
        {
            "provider": "stripe",
            "base_url": base_url,
            "create_path": "/v1/payments",
            "auth": {"bearer": api_key},
            "ledger": f"sqlite:///{db}",
            "retry": {"max_attempts": 1, "attempt_timeout_ms": 10000, "deadline_ms": 20000},
        }
    )
    body = {"order_id": order, "amount": 1000, "currency": "eur"}
    print("ready", flush=True)
    try:
        client.submit(order, body)
    except KeyboardInterrupt:
        if mode == "exit":
            print(json.dumps({"interrupted": True}), flush=True)
            raise  # the interpreter waits for the running call before it exits
        # Still held by the simulator: the same order is IN_PROGRESS, and the client works.
        during = client.submit(order, body)
        deadline = time.monotonic() + 30
        while client.ledger_get(order)["payment"]["state"] == "IN_FLIGHT" and time.monotonic() < deadline:
            time.sleep(0.05)
        after = client.submit(order, body)
        client.close()
        print(
            json.dumps(
                {
                    "interrupted": True,
                    "during": during.outcome.value,
                    "after": after.outcome.value,
                    "after_from_ledger": after.from_ledger,
                    "same_key": during.idempotency_key == after.idempotency_key,
                }
            ),
            flush=True,
        )
        return 0
    print(json.dumps({"interrupted": False}), flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
