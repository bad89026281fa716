"""checkout-sdk-python: POST /payments with Cko-Idempotency-Key (Bearer secret
key, the default platform), then the payments list by reference
(GET /payments?reference=ORDER), the lookup payretry's profile uses."""
import sys
import warnings

from common import cases, expect, run

from checkout_sdk.checkout_sdk import CheckoutSdk
from checkout_sdk.common.enums import Currency
from checkout_sdk.environment import Environment
from checkout_sdk.payments.payments import PaymentRequest, PaymentRequestTokenSource, PaymentsQueryFilter


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
    source = PaymentRequestTokenSource()
    source.token = "tok_4gzeau5o2uqubbk6fufs3m7p54"
    req = PaymentRequest()
    req.source = source
    req.amount = cases.AMOUNT_MINOR
    req.currency = Currency.GBP
    req.reference = cases.ORDER_ID
    res = api.payments.request_payment(req, cases.IDEMPOTENCY_KEY)
    expect(res.http_metadata.status_code in (200, 201, 202), f"create: HTTP {res.http_metadata.status_code}")
    expect(getattr(res, "id", None), "create: no payment id")
    expect(res.approved is True and res.status == "Captured", f"create: approved {res.approved} status {res.status}")
    expect(res.reference == cases.ORDER_ID, f"create: reference {res.reference!r}")
    result["create"] = {"id": res.id, "status": res.status}
    q = PaymentsQueryFilter()
    q.reference = cases.ORDER_ID
    got = api.payments.get_payments_list(q)
    expect(got.http_metadata.status_code == 200, f"list: HTTP {got.http_metadata.status_code}")
    expect(got.total_count == 1 and len(got.data) == 1, f"list: total_count {got.total_count}")
    expect(got.data[0].id == res.id, f"list: data[0].id {got.data[0].id!r} != {res.id!r}")
    result["lookup"] = {"id": got.data[0].id, "status": got.data[0].status}


if __name__ == "__main__":
    sys.exit(run(main))
