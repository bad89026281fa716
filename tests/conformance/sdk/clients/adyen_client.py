"""Adyen's Python library: Checkout POST /v72/payments with Idempotency-Key and
X-API-Key. Adyen offers no synchronous lookup of a payment: no lookup here.
Then, as the plan says, the modifications of the payment by its pspReference
(ModificationsApi): a capture and a refund (amount, merchantAccount) and a
cancel, each under the key payretry used for it."""
import sys

from common import cases, expect, run, run_plan

import Adyen


def main(a, result):
    adyen = Adyen.Adyen(xapikey=cases.ADYEN_API_KEY, platform="test", http_force="requests")
    # The library's only base-URL knob for Checkout is each service's baseUrl
    # (https://checkout-test.adyen.com/v72); keep its version path, change the host.
    api = adyen.checkout.payments_api
    mods = adyen.checkout.modifications_api
    version_path = api.baseUrl.split("adyen.com", 1)[1]
    expect(version_path.startswith("/v"), f"unexpected Checkout baseUrl {api.baseUrl}")
    expect(mods.baseUrl.split("adyen.com", 1)[1] == version_path, f"modifications baseUrl {mods.baseUrl}")
    api.baseUrl = a.base + version_path
    mods.baseUrl = a.base + version_path
    result["notes"].append(f"Adyen library Checkout base {version_path}")

    def create(step, state):
        res = api.payments(cases.payretry_body("adyen", step["order"], step["variant"]), idempotency_key=step["key"])
        msg = res.message
        expect(res.status_code == 200, f"create: HTTP {res.status_code}")
        expect(isinstance(msg, dict) and msg.get("pspReference"), f"create: no pspReference in {msg}")
        expect(msg.get("resultCode") == "Authorised", f"create: resultCode {msg.get('resultCode')}")
        expect(res.psp == msg["pspReference"], f"create: AdyenResult.psp {res.psp!r}")
        return {"id": msg["pspReference"], "status": msg["resultCode"]}

    def modification(call, step, state):
        psp = state["ids"][step["payment"]]
        req = dict(step["body"])
        if step["amount"] is not None:
            req["amount"] = dict(req["amount"], value=step["amount"])
        res = call(req, psp, idempotency_key=step["key"])
        msg = res.message
        expect(res.status_code == 201, f"{step['do']}: HTTP {res.status_code}")
        expect(msg.get("status") == "received" and msg.get("paymentPspReference") == psp,
               f"{step['do']}: {msg}")
        return {"id": msg.get("pspReference"), "status": msg["status"]}

    run_plan(a, result, {
        "create": create,
        "capture": lambda s, st: modification(mods.capture_authorised_payment, s, st),
        "refund": lambda s, st: modification(mods.refund_captured_payment, s, st),
        "cancel": lambda s, st: modification(mods.cancel_authorised_payment_by_psp_reference, s, st)})


if __name__ == "__main__":
    sys.exit(run(main))
