"""Adyen's Python library: Checkout POST /v72/payments with Idempotency-Key and
X-API-Key. Adyen offers no synchronous lookup of a payment: no lookup here."""
import sys

from common import cases, expect, run

import Adyen


def main(a, result):
    adyen = Adyen.Adyen(xapikey=cases.ADYEN_API_KEY, platform="test", http_force="requests")
    # The library's only base-URL knob for Checkout is the service's baseUrl
    # (https://checkout-test.adyen.com/v72); keep its version path, change the host.
    api = adyen.checkout.payments_api
    version_path = api.baseUrl.split("adyen.com", 1)[1]
    expect(version_path.startswith("/v"), f"unexpected Checkout baseUrl {api.baseUrl}")
    api.baseUrl = a.base + version_path
    result["notes"].append(f"Adyen library Checkout base {version_path}")
    res = api.payments(cases.payretry_body("adyen"), idempotency_key=cases.IDEMPOTENCY_KEY)
    msg = res.message
    expect(res.status_code == 200, f"create: HTTP {res.status_code}")
    expect(isinstance(msg, dict) and msg.get("pspReference"), f"create: no pspReference in {msg}")
    expect(msg.get("resultCode") == "Authorised", f"create: resultCode {msg.get('resultCode')}")
    expect(res.psp == msg["pspReference"], f"create: AdyenResult.psp {res.psp!r}")
    result["create"] = {"id": msg["pspReference"], "status": msg["resultCode"]}


if __name__ == "__main__":
    sys.exit(run(main))
