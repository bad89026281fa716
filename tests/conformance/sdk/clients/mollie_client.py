"""mollie-api-python: POST /v2/payments with Idempotency-Key (Bearer API key),
then GET /v2/payments/{id}."""
import sys

from common import cases, expect, run

from mollie.api.client import Client
from mollie.api.objects.payment import Payment


def main(a, result):
    client = Client(api_endpoint=a.base, retry=0)
    client.set_api_key(cases.MOLLIE_API_KEY)
    pay = client.payments.create({
        "amount": {"currency": "EUR", "value": cases.AMOUNT_MAJOR}, "description": f"Order {cases.ORDER_ID}",
        "redirectUrl": "https://shop.example/return", "metadata": {"order_id": cases.ORDER_ID},
    }, idempotency_key=cases.IDEMPOTENCY_KEY)
    expect(isinstance(pay, Payment), f"create parsed into {type(pay).__name__}, not Payment")
    expect(pay.id, "create: no payment id")
    expect(pay.status == Payment.STATUS_PAID, f"create: status {pay.status!r}")
    expect(pay.amount == {"currency": "EUR", "value": cases.AMOUNT_MAJOR}, f"create: amount {pay.amount}")
    result["create"] = {"id": pay.id, "status": pay.status}
    # payments.get refuses, before sending, an id that is not a Mollie payment id (tr_...).
    got = client.payments.get(pay.id)
    expect(isinstance(got, Payment), f"get parsed into {type(got).__name__}")
    expect(got.id == pay.id, f"get: id {got.id!r} != {pay.id!r}")
    result["lookup"] = {"id": got.id, "status": got.status}


if __name__ == "__main__":
    sys.exit(run(main))
