"""stripe-python: PaymentIntent create (form-encoded, Idempotency-Key) and
retrieve; then, as the plan says, a refund (POST /v1/refunds naming the
PaymentIntent), a capture of a held PaymentIntent (amount_to_capture) and a
cancel, each under the key payretry used for it."""
import sys

from common import cases, expect, run, run_plan

import stripe


def main(a, result):
    client = stripe.StripeClient(cases.STRIPE_KEY, base_addresses={"api": a.base}, max_network_retries=0)

    def create(step, state):
        params = cases.payretry_body("stripe", step["order"], step["variant"])
        pi = client.v1.payment_intents.create(params=params, options={"idempotency_key": step["key"]})
        expect(isinstance(pi, stripe.PaymentIntent), f"create parsed into {type(pi).__name__}, not PaymentIntent")
        expect(pi.id and pi.id.startswith("pi_"), f"create: PaymentIntent id {pi.id!r}")
        expect(pi.amount == cases.AMOUNT_MINOR and pi.currency == "usd", f"create: amount {pi.amount} {pi.currency}")
        expect(pi.metadata["order_id"] == step["order"], f"create: metadata {pi.metadata}")
        want = "requires_capture" if step["variant"] == "held" else "succeeded"
        expect(pi.status == want, f"create: status {pi.status!r}, want {want}")
        return {"id": pi.id, "status": pi.status}

    def lookup(step, state):
        pid = state["ids"][step["payment"]]
        got = client.v1.payment_intents.retrieve(pid)
        expect(isinstance(got, stripe.PaymentIntent), f"retrieve parsed into {type(got).__name__}")
        expect(got.id == pid, f"retrieve: id {got.id!r} != {pid!r}")
        return {"id": got.id, "status": got.status}

    def refund(step, state):
        pid = state["ids"][step["payment"]]
        r = client.v1.refunds.create(params={"payment_intent": pid, "amount": step["amount"]},
                                     options={"idempotency_key": step["key"]})
        expect(isinstance(r, stripe.Refund), f"refund parsed into {type(r).__name__}, not Refund")
        expect(r.amount == step["amount"] and r.payment_intent == pid, f"refund: {r.amount} of {r.payment_intent}")
        return {"id": r.id, "status": r.status}

    def capture(step, state):
        pid = state["ids"][step["payment"]]
        pi = client.v1.payment_intents.capture(pid, params={"amount_to_capture": step["amount"]},
                                               options={"idempotency_key": step["key"]})
        expect(pi.id == pid and pi.status == "succeeded", f"capture: {pi.id} {pi.status}")
        expect(pi.amount_received == step["amount"], f"capture: amount_received {pi.amount_received}")
        return {"id": pi.id, "status": pi.status}

    def cancel(step, state):
        pid = state["ids"][step["payment"]]
        pi = client.v1.payment_intents.cancel(pid, options={"idempotency_key": step["key"]})
        expect(pi.id == pid and pi.status == "canceled", f"cancel: {pi.id} {pi.status}")
        return {"id": pi.id, "status": pi.status}

    run_plan(a, result, {"create": create, "lookup": lookup, "refund": refund, "capture": capture,
                         "cancel": cancel})


if __name__ == "__main__":
    sys.exit(run(main))
