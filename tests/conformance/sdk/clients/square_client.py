"""squareup (Square's Python SDK): CreatePayment with idempotency_key in the
body, then GetPayment by the returned id."""
import sys

from common import cases, expect, run

from square import Square
from square.types.create_payment_response import CreatePaymentResponse
from square.types.get_payment_response import GetPaymentResponse


def main(a, result):
    client = Square(token=cases.SQUARE_TOKEN, base_url=a.base)
    res = client.payments.create(
        source_id="cnon:card-nonce-ok", idempotency_key=cases.IDEMPOTENCY_KEY,
        amount_money={"amount": cases.AMOUNT_MINOR, "currency": "USD"}, reference_id=cases.ORDER_ID,
        request_options={"max_retries": 0})
    expect(isinstance(res, CreatePaymentResponse), f"create parsed into {type(res).__name__}")
    expect(not res.errors, f"create: errors {res.errors}")
    expect(res.payment is not None and res.payment.id, f"create: no payment id in {res}")
    expect(res.payment.status == "COMPLETED", f"create: status {res.payment.status!r}")
    result["create"] = {"id": res.payment.id, "status": res.payment.status}
    got = client.payments.get(payment_id=res.payment.id, request_options={"max_retries": 0})
    expect(isinstance(got, GetPaymentResponse), f"get parsed into {type(got).__name__}")
    expect(got.payment is not None and got.payment.id == res.payment.id, f"get: {got}")
    result["lookup"] = {"id": got.payment.id, "status": got.payment.status}


if __name__ == "__main__":
    sys.exit(run(main))
