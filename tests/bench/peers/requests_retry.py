"""requests + urllib3 Retry allowing POST, with an Idempotency-Key header: the generic choice.
Retry(total=3, allowed_methods={"POST"}, status_forcelist=[429,500,502,503,504],
backoff_factor=0.1, respect_retry_after_header=True); one Session per thread; timeouts like
payretry's defaults (connect 3 s, read 10 s)."""
import json

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

import bench_common


def main():
    a = bench_common.args(__doc__)
    url = a.url + "/v1/payments"
    retry = Retry(total=3, allowed_methods=frozenset({"POST"}),
                  status_forcelist=[429, 500, 502, 503, 504], backoff_factor=0.1,
                  respect_retry_after_header=True)
    local = bench_common.local

    def setup():
        s = requests.Session()
        s.mount("http://", HTTPAdapter(max_retries=retry, pool_connections=1, pool_maxsize=1))
        local.session = s

    def submit(order):
        body = json.dumps({"order_id": order, "amount": 1000, "currency": "usd"},
                          separators=(",", ":"))
        r = local.session.post(url, data=body, timeout=(3, 10),
                               headers={"Content-Type": "application/json",
                                        "Idempotency-Key": "key-" + order})
        if r.status_code == 200:
            r.json()  # a cut body raises: no definitive answer
            return "succeeded"
        return "failed" if r.status_code == 402 else "error"

    bench_common.run("requests+Retry", a, submit, setup_thread=setup)


if __name__ == "__main__":
    main()
