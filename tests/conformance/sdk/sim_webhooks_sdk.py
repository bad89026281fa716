"""sim_webhooks_sdk: payretry-sim's notifications (webhooks) held against the providers' own SDKs.

For each profile that signs its notifications, payretry-sim runs with --webhook-url pointing at
a receiver here and --webhook-faults forge=1 (a badly signed copy beside every real one); a
charged payment and, where the provider notifies one, a declined payment are made through the
simulator's API. Every real notification must pass the SDK's verifier, every forged one must
fail it, and the counts must match the simulator's own log (GET /__admin/webhooks).

Which verifier each scheme meets, and why:
  stripe        stripe 16.1.0 stripe.Webhook.construct_event (signature, 300 s tolerance, and
                the Event JSON it parses).
  adyen         Adyen 16.0.0 Adyen.util.is_valid_hmac_notification, item by item.
  square        squareup's square.utils.webhooks_helper.verify_signature (URL + body).
  wechatpay_v3  wechatpayv3 2.0.4 WeChatPay.callback: verifies the Wechatpay-* signature with the
                platform public key and decrypts `resource` with the APIv3 key; the plaintext
                must name the order.
  alipay        alipay-sdk-python 3.7.1411 has no notification verifier: its own
                SignatureUtils.get_sign_content (over the fields but sign and sign_type) and
                verify_with_rsa, the way Ant Group's Java SDK's rsaCheckV1 uses them.
  checkout_com  no SDK can verify offline: checkout-sdk 4.8.1 has no webhook verifier. Checked
                against Checkout.com's documented formula (hex HMAC-SHA256 of the body) in
                Python instead.
  paypal        no SDK can verify offline: the pinned paypal-server-sdk has no verifier and
                PayPal's own check is an API call (POST /v1/notifications/verify-webhook-
                signature). Checked against paypalrestsdk's offline message
                (transmission_id|transmission_time|webhook_id|crc32(body)) with the pinned test
                certificate (tests/keys/paypal_webhook_cert.pem) in Python instead.
  mollie        not here: its classic notification (id=tr_...) carries no signature to verify.
"""
import argparse
import base64
import hashlib
import hmac
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import zlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

STRIPE_SECRET = "whsec_payretry_sim_test"
ADYEN_KEY = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
SQUARE_KEY = "sq-signature-key-test"
CKO_KEY = "cko-signature-key-test"
APIV3_KEY = "payretrysdkconformanceapiv3key32"
PAYPAL_WEBHOOK_ID = "1JE4291016473214C"
WECHAT_MCHID = "1900000109"
WECHAT_SERIAL_NO = "3775B6A45ACD588826D15E583A95F5DD3F3B4DD8"
WECHAT_PLATFORM_KEY_ID = "PUB_KEY_ID_0119000001092026120200000000"


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def b64(data):
    return base64.b64encode(data).decode()


# ---- the receiver --------------------------------------------------------------------------------

class Receiver:
    def __init__(self):
        self.got = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with outer.lock:
                    outer.got.append({"headers": {k: v for k, v in self.headers.items()}, "body": body})
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/payments"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, n, timeout=10):
        end = time.time() + timeout
        while time.time() < end:
            with self.lock:
                if len(self.got) >= n:
                    break
            time.sleep(0.05)
        time.sleep(0.3)  # nothing more comes
        with self.lock:
            return list(self.got)


# ---- the simulator and payments through its API ---------------------------------------------------

class Sim:
    def __init__(self, binary, keys, profile, url):
        args = [binary, "--port", "0", "--profile", profile, "--keys", keys, "--seed", "46", "--webhook-url", url,
                "--webhook-faults", "forge=1"]
        secret = {"stripe": STRIPE_SECRET, "adyen": ADYEN_KEY, "square": SQUARE_KEY, "checkout_com": CKO_KEY}
        if profile in secret:
            args += ["--webhook-secret", secret[profile]]
        if profile == "wechatpay_v3":
            args += ["--webhook-api-v3-key", APIV3_KEY]
        if profile == "paypal":
            args += ["--webhook-id", PAYPAL_WEBHOOK_ID]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            raise SystemExit(f"FAIL: payretry-sim did not start: {line!r}")
        self.base = "http://" + line.split()[-1]

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def call(self, method, path, body=b"", headers=None):
        req = urllib.request.Request(self.base + path, data=body if method == "POST" else None, method=method,
                                     headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def post_json(self, path, doc, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        return self.call("POST", path, json.dumps(doc, ensure_ascii=False).encode(), h)

    def decline_next(self, order):
        self.post_json("/__admin/script", {"order_id": order, "faults": ["decline"]})

    def log(self):
        return json.loads(self.call("GET", "/__admin/webhooks")[1])


def pay(sim, profile, order, keys):
    if profile == "stripe":
        sim.post_json("/v1/payments", {"order_id": order, "amount": 1000, "currency": "usd"},
                      {"Idempotency-Key": "k-" + order})
    elif profile == "adyen":
        sim.post_json("/v71/payments", {"reference": order, "amount": {"value": 1000, "currency": "EUR"},
                                        "merchantAccount": "PayretrySimECOM"}, {"idempotency-key": "k-" + order})
    elif profile == "square":
        sim.post_json("/v2/payments", {"idempotency_key": "k-" + order, "reference_id": order,
                                       "source_id": "cnon:card-nonce-ok",
                                       "amount_money": {"amount": 1000, "currency": "USD"}})
    elif profile == "checkout_com":
        sim.post_json("/payments", {"reference": order, "amount": 1000, "currency": "USD"},
                      {"Cko-Idempotency-Key": "k-" + order})
    elif profile == "wechatpay_v3":
        key = serialization.load_pem_private_key(read(os.path.join(keys, "wechat_merchant_key.pem")).encode(), None)
        target = "/v3/pay/transactions/native"
        body = json.dumps({"appid": "wxd678efh567hg6787", "mchid": WECHAT_MCHID, "description": "test",
                           "out_trade_no": order, "notify_url": "https://shop.example/n",
                           "amount": {"total": 100, "currency": "CNY"}})
        ts, nonce = str(int(time.time())), "593BEC0C930BF1AFEB40B4A08C8FB242"
        sig = b64(key.sign(f"POST\n{target}\n{ts}\n{nonce}\n{body}\n".encode(), padding.PKCS1v15(), hashes.SHA256()))
        auth = (f'WECHATPAY2-SHA256-RSA2048 mchid="{WECHAT_MCHID}",nonce_str="{nonce}",signature="{sig}",'
                f'timestamp="{ts}",serial_no="{WECHAT_SERIAL_NO}"')
        sim.call("POST", target, body.encode(), {"Content-Type": "application/json", "Authorization": auth})
    elif profile == "alipay":
        key = serialization.load_pem_private_key(read(os.path.join(keys, "alipay_app_key.pem")).encode(), None)
        beijing = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() + 8 * 3600))
        params = {"app_id": "2021000000000001", "method": "alipay.trade.pay", "format": "JSON", "charset": "utf-8",
                  "sign_type": "RSA2", "timestamp": beijing, "version": "1.0",
                  "biz_content": json.dumps({"out_trade_no": order, "total_amount": "10.00", "subject": "test",
                                             "scene": "bar_code", "auth_code": "28763443825664394"})}
        content = "&".join(f"{k}={params[k]}" for k in sorted(params) if params[k])
        params["sign"] = b64(key.sign(content.encode(), padding.PKCS1v15(), hashes.SHA256()))
        sim.call("POST", "/gateway.do", urllib.parse.urlencode(params).encode(),
                 {"Content-Type": "application/x-www-form-urlencoded;charset=utf-8"})
    elif profile == "paypal":
        basic = b64(b"test-client-id:test-client-secret")
        _, token = sim.call("POST", "/v1/oauth2/token", b"grant_type=client_credentials",
                            {"Authorization": "Basic " + basic, "Content-Type": "application/x-www-form-urlencoded"})
        sim.post_json("/v2/checkout/orders", {"intent": "CAPTURE", "purchase_units": [
            {"reference_id": order, "amount": {"currency_code": "USD", "value": "10.00"}}]},
            {"Authorization": "Bearer " + json.loads(token)["access_token"], "PayPal-Request-Id": "k-" + order})


# ---- the verifiers ---------------------------------------------------------------------------------

def verifier(profile, keys, url):
    """A function (headers, body bytes) -> bool: whether the provider's own code accepts it."""
    if profile == "stripe":
        import stripe

        def check(h, body):
            event = stripe.Webhook.construct_event(body.decode(), h["Stripe-Signature"], STRIPE_SECRET)
            return event["data"]["object"]["metadata"]["order_id"].startswith("sdk-")
        return check
    if profile == "adyen":
        from Adyen import util

        def check(h, body):
            items = json.loads(body)["notificationItems"]
            return all(util.is_valid_hmac_notification(i["NotificationRequestItem"], ADYEN_KEY) for i in items)
        return check
    if profile == "square":
        from square.utils.webhooks_helper import verify_signature
        return lambda h, body: verify_signature(request_body=body.decode(),
                                                signature_header=h["x-square-hmacsha256-signature"],
                                                signature_key=SQUARE_KEY, notification_url=url)
    if profile == "wechatpay_v3":
        from wechatpayv3 import WeChatPay, WeChatPayType
        wxpay = WeChatPay(
            wechatpay_type=WeChatPayType.NATIVE, mchid=WECHAT_MCHID,
            private_key=read(os.path.join(keys, "wechat_merchant_key.pem")), cert_serial_no=WECHAT_SERIAL_NO,
            appid="wxd678efh567hg6787", apiv3_key=APIV3_KEY,
            public_key=read(os.path.join(keys, "wechat_platform_pub.pem")), public_key_id=WECHAT_PLATFORM_KEY_ID)

        def check(h, body):
            out = wxpay.callback(h, body.decode())
            return bool(out) and out["resource"]["out_trade_no"].startswith("sdk-")
        return check
    if profile == "alipay":
        from alipay.aop.api.util.SignatureUtils import get_sign_content, verify_with_rsa
        pub = read(os.path.join(keys, "alipay_pub.pem"))

        def check(h, body):
            fields = dict(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))
            rest = {k: v for k, v in fields.items() if k not in ("sign", "sign_type")}
            return verify_with_rsa(pub, get_sign_content(rest).encode("utf-8"), fields["sign"])
        return check
    if profile == "checkout_com":  # the documented formula: no SDK verifier
        def check(h, body):
            want = hmac.new(CKO_KEY.encode(), body, hashlib.sha256).hexdigest()
            return hmac.compare_digest(want, h["Cko-Signature"])
        return check
    if profile == "paypal":  # paypalrestsdk's offline message: no pinned SDK verifier
        cert = x509.load_pem_x509_certificate(read(os.path.join(keys, "paypal_webhook_cert.pem")).encode())

        def check(h, body):
            message = (f"{h['PAYPAL-TRANSMISSION-ID']}|{h['PAYPAL-TRANSMISSION-TIME']}|{PAYPAL_WEBHOOK_ID}|"
                       f"{zlib.crc32(body) & 0xffffffff}")
            cert.public_key().verify(base64.b64decode(h["PAYPAL-TRANSMISSION-SIG"]), message.encode(),
                                     padding.PKCS1v15(), hashes.SHA256())
            return json.loads(body)["resource"]["custom_id"].startswith("sdk-")
        return check
    raise ValueError(profile)


DECLINES_NOTIFIED = {"stripe", "adyen", "square", "checkout_com", "alipay"}


def run_profile(binary, keys, profile):
    rx = Receiver()
    sim = Sim(binary, keys, profile, rx.url)
    failures = []
    try:
        pay(sim, profile, "sdk-paid-" + profile, keys)
        declined = profile in DECLINES_NOTIFIED
        if declined:
            sim.decline_next("sdk-declined-" + profile)
            pay(sim, profile, "sdk-declined-" + profile, keys)
        want = (2 if declined else 1) * 2  # each real one and its forged copy
        got = rx.wait_for(want)
        log = sim.log()["notifications"]
        check = verifier(profile, keys, rx.url)
        accepted = 0
        for g in got:
            # The SDKs look headers up in the case the providers send them.
            try:
                ok = bool(check(g["headers"], g["body"]))
            except Exception:  # an SDK that raises refuses
                ok = False
            accepted += ok
        real = sum(1 for n in log if n["kind"] == "real")
        forged = sum(1 for n in log if n["kind"] == "forged")
        line = f"{profile:13} received={len(got)} accepted={accepted} (sim log: real={real} forged={forged})"
        if len(got) != want or accepted != real or len(got) - accepted != forged or real != want // 2:
            failures.append(profile)
            print("FAIL " + line)
        else:
            print("ok   " + line)
    finally:
        sim.close()
        rx.server.shutdown()
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", required=True)
    ap.add_argument("--keys", required=True)
    a = ap.parse_args()
    keys = os.path.abspath(a.keys)
    failures = []
    profiles = ["stripe", "adyen", "square", "checkout_com", "wechatpay_v3", "alipay", "paypal"]
    for profile in profiles:
        failures += run_profile(a.sim, keys, profile)
    if failures:
        print(f"FAIL: {', '.join(failures)}", file=sys.stderr)
        return 1
    print(f"all {len(profiles)} profiles' notifications pass their verifiers, forged copies fail them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
