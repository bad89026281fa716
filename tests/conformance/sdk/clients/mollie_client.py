"""mollie-api-python: POST /v2/payments with Idempotency-Key (Bearer API key),
then GET /v2/payments/{id}. Then, as the plan says, a refund of the paid
payment (payment.refunds.create: POST /v2/payments/{id}/refunds) and a capture
of a manual-capture payment once its customer paid (payment.captures.create:
POST /v2/payments/{id}/captures), each under the key payretry used. Mollie's
cancel is a DELETE, which payretry refuses: the SDK is not asked."""
import sys

from common import cases, expect, run, run_plan

from mollie.api.client import Client
from mollie.api.objects.capture import Capture
from mollie.api.objects.payment import Payment
from mollie.api.objects.refund import Refund


def main(a, result):
    client = Client(api_endpoint=a.base, retry=0)
    client.set_api_key(cases.MOLLIE_API_KEY)

    def create(step, state):
        held = step["variant"] == "held"
        pay = client.payments.create(cases.payretry_body("mollie", step["order"], step["variant"]),
                                     idempotency_key=step["key"])
        expect(isinstance(pay, Payment), f"create parsed into {type(pay).__name__}, not Payment")
        expect(pay.id, "create: no payment id")
        want = Payment.STATUS_OPEN if held else Payment.STATUS_PAID
        expect(pay.status == want, f"create: status {pay.status!r}, want {want}")
        expect(pay.amount == {"currency": "EUR", "value": cases.AMOUNT_MAJOR}, f"create: amount {pay.amount}")
        state.setdefault("obj", {})[step["payment"]] = pay
        return {"id": pay.id, "status": pay.status}

    def lookup(step, state):
        pid = state["ids"][step["payment"]]
        # payments.get refuses, before sending, an id that is not a Mollie payment id (tr_...).
        got = client.payments.get(pid)
        expect(isinstance(got, Payment), f"get parsed into {type(got).__name__}")
        expect(got.id == pid, f"get: id {got.id!r} != {pid!r}")
        state["obj"][step["payment"]] = got
        return {"id": got.id, "status": got.status}

    def amount(step):
        return {"amount": {"currency": step["body"]["amount"]["currency"], "value": cases.major(step["amount"])}}

    def refund(step, state):
        r = state["obj"][step["payment"]].refunds.create(amount(step), idempotency_key=step["key"])
        expect(isinstance(r, Refund), f"refund parsed into {type(r).__name__}, not Refund")
        expect(r.amount == amount(step)["amount"], f"refund: amount {r.amount}")
        return {"id": r.id, "status": r.status}

    def capture(step, state):
        pay = state["obj"][step["payment"]]
        expect(pay.status == Payment.STATUS_AUTHORIZED, f"capture: the payment is {pay.status!r}, not authorized")
        c = pay.captures.create(amount(step), idempotency_key=step["key"])
        expect(isinstance(c, Capture), f"capture parsed into {type(c).__name__}, not Capture")
        # mollie-api-python 4.0.0's Capture has no status property: read the member it parsed.
        expect(c.payment_id == pay.id, f"capture: paymentId {c.payment_id!r}")
        return {"id": c.id, "status": c.get("status")}

    run_plan(a, result, {"create": create, "lookup": lookup, "refund": refund, "capture": capture})


if __name__ == "__main__":
    sys.exit(run(main))
