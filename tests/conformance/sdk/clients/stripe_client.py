"""stripe-python: PaymentIntent create (form-encoded, Idempotency-Key) and retrieve."""
import sys

from common import cases, expect, run

import stripe


def main(a, result):
    client = stripe.StripeClient(cases.STRIPE_KEY, base_addresses={"api": a.base}, max_network_retries=0)
    pi = client.v1.payment_intents.create(
        params={"amount": cases.AMOUNT_MINOR, "currency": "usd", "metadata": {"order_id": cases.ORDER_ID}},
        options={"idempotency_key": cases.IDEMPOTENCY_KEY})
    expect(isinstance(pi, stripe.PaymentIntent), f"create parsed into {type(pi).__name__}, not PaymentIntent")
    expect(pi.id and pi.id.startswith("pi_"), f"create: PaymentIntent id {pi.id!r}")
    expect(pi.amount == cases.AMOUNT_MINOR and pi.currency == "usd", f"create: amount {pi.amount} {pi.currency}")
    expect(pi.metadata["order_id"] == cases.ORDER_ID, f"create: metadata {pi.metadata}")
    result["create"] = {"id": pi.id, "status": pi.status}
    got = client.v1.payment_intents.retrieve(pi.id)
    expect(isinstance(got, stripe.PaymentIntent), f"retrieve parsed into {type(got).__name__}")
    expect(got.id == pi.id, f"retrieve: id {got.id!r} != {pi.id!r}")
    result["lookup"] = {"id": got.id, "status": got.status}


if __name__ == "__main__":
    sys.exit(run(main))
