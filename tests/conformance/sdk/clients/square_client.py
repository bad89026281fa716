"""squareup (Square's Python SDK): CreatePayment with idempotency_key in the
body, then GetPayment by the returned id. Then, as the plan says, RefundPayment
(POST /v2/refunds: idempotency_key, amount_money, payment_id in the body) under
the key payretry used. CompletePayment and CancelPayment carry no key: payretry
refuses them, and the SDK is not asked."""
import sys

from common import cases, expect, run, run_plan

from square import Square
from square.types.create_payment_response import CreatePaymentResponse
from square.types.get_payment_response import GetPaymentResponse
from square.types.refund_payment_response import RefundPaymentResponse


def main(a, result):
    client = Square(token=cases.SQUARE_TOKEN, base_url=a.base)

    def create(step, state):
        res = client.payments.create(
            source_id="cnon:card-nonce-ok", idempotency_key=step["key"],
            amount_money={"amount": cases.AMOUNT_MINOR, "currency": "USD"}, reference_id=step["order"],
            request_options={"max_retries": 0})
        expect(isinstance(res, CreatePaymentResponse), f"create parsed into {type(res).__name__}")
        expect(not res.errors, f"create: errors {res.errors}")
        expect(res.payment is not None and res.payment.id, f"create: no payment id in {res}")
        expect(res.payment.status == "COMPLETED", f"create: status {res.payment.status!r}")
        return {"id": res.payment.id, "status": res.payment.status}

    def lookup(step, state):
        pid = state["ids"][step["payment"]]
        got = client.payments.get(payment_id=pid, request_options={"max_retries": 0})
        expect(isinstance(got, GetPaymentResponse), f"get parsed into {type(got).__name__}")
        expect(got.payment is not None and got.payment.id == pid, f"get: {got}")
        return {"id": got.payment.id, "status": got.payment.status}

    def refund(step, state):
        pid = state["ids"][step["payment"]]
        res = client.refunds.refund_payment(
            idempotency_key=step["key"],
            amount_money={"amount": step["amount"], "currency": step["body"]["amount_money"]["currency"]},
            payment_id=pid, request_options={"max_retries": 0})
        expect(isinstance(res, RefundPaymentResponse), f"refund parsed into {type(res).__name__}")
        expect(not res.errors and res.refund is not None, f"refund: {res}")
        expect(res.refund.payment_id == pid and res.refund.amount_money.amount == step["amount"], f"refund: {res}")
        return {"id": res.refund.id, "status": res.refund.status}

    run_plan(a, result, {"create": create, "lookup": lookup, "refund": refund})


if __name__ == "__main__":
    sys.exit(run(main))
