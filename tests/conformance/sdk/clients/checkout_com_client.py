"""checkout-sdk-python: POST /payments with Cko-Idempotency-Key (Bearer secret
key, the default platform), then the payments list by reference
(GET /payments?reference=ORDER), the lookup payretry's profile uses. Then, as
the plan says, a refund (POST /payments/{id}/refunds), a capture of a payment
authorized only (capture false; POST /payments/{id}/captures) and a void
(POST /payments/{id}/voids), each under the key payretry used and with that
key as the request's reference, as payretry's profile writes it (the action's
reference, listed by GET /payments/{id}/actions, is how payretry finds an
action whose 202 was lost)."""
import sys
import warnings

from common import cases, expect, run, run_plan

from checkout_sdk.checkout_sdk import CheckoutSdk
from checkout_sdk.common.enums import Currency
from checkout_sdk.environment import Environment
from checkout_sdk.payments.payments import (CaptureRequest, PaymentRequest, PaymentRequestTokenSource,
                                            PaymentsQueryFilter, RefundRequest, VoidRequest)


def main(a, result):
    base = a.base + "/"
    env = Environment(base_uri=base, authorization_uri=base + "connect/token", files_uri=base,
                      transfers_uri=base, balances_uri=base, forward_uri=base, identity_uri=base,
                      is_sandbox=True)
    with warnings.catch_warnings():
        # use_legacy_domain: no merchant subdomain prepended to 127.0.0.1
        warnings.simplefilter("ignore", DeprecationWarning)
        api = CheckoutSdk.builder().secret_key(cases.CHECKOUT_SECRET_KEY).environment(env) \
            .use_legacy_domain().build()

    def create(step, state):
        source = PaymentRequestTokenSource()
        source.token = "tok_4gzeau5o2uqubbk6fufs3m7p54"
        req = PaymentRequest()
        req.source = source
        req.amount = cases.AMOUNT_MINOR
        req.currency = Currency.GBP
        req.reference = step["order"]
        held = step["variant"] == "held"
        if held:
            req.capture = False
        res = api.payments.request_payment(req, step["key"])
        expect(res.http_metadata.status_code in (200, 201, 202), f"create: HTTP {res.http_metadata.status_code}")
        expect(getattr(res, "id", None), "create: no payment id")
        want = "Authorized" if held else "Captured"
        expect(res.approved is True and res.status == want, f"create: approved {res.approved} status {res.status}")
        expect(res.reference == step["order"], f"create: reference {res.reference!r}")
        return {"id": res.id, "status": res.status}

    def lookup(step, state):
        q = PaymentsQueryFilter()
        q.reference = step["order"]
        got = api.payments.get_payments_list(q)
        pid = state["ids"][step["payment"]]
        expect(got.http_metadata.status_code == 200, f"list: HTTP {got.http_metadata.status_code}")
        expect(got.total_count == 1 and len(got.data) == 1, f"list: total_count {got.total_count}")
        expect(got.data[0].id == pid, f"list: data[0].id {got.data[0].id!r} != {pid!r}")
        return {"id": got.data[0].id, "status": got.data[0].status}

    def accepted(res, what, key):
        expect(res.http_metadata.status_code == 202, f"{what}: HTTP {res.http_metadata.status_code}")
        expect(getattr(res, "action_id", None), f"{what}: no action_id")
        # The 202 echoes the request's reference ("Your reference for the ... request").
        expect(getattr(res, "reference", None) == key, f"{what}: reference {getattr(res, 'reference', None)!r}")
        return {"id": res.action_id, "status": "accepted"}

    def refund(step, state):
        req = RefundRequest()
        req.amount = step["amount"]
        req.reference = step["key"]
        return accepted(api.payments.refund_payment(state["ids"][step["payment"]], req, step["key"]), "refund", step["key"])

    def capture(step, state):
        req = CaptureRequest()
        req.amount = step["amount"]
        req.reference = step["key"]
        return accepted(api.payments.capture_payment(state["ids"][step["payment"]], req, step["key"]), "capture", step["key"])

    def cancel(step, state):
        # A VoidRequest carrying only the reference (all of it voided): what payretry sends for a
        # cancel with no fields of the caller's, its key written as the reference.
        req = VoidRequest()
        req.reference = step["key"]
        return accepted(api.payments.void_payment(state["ids"][step["payment"]], req, step["key"]), "void", step["key"])

    run_plan(a, result, {"create": create, "lookup": lookup, "refund": refund, "capture": capture,
                         "cancel": cancel})


if __name__ == "__main__":
    sys.exit(run(main))
