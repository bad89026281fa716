"""sdk_webhooks_verify: payretry's webhook verifiers held against the providers' own code.

Each case is a notification built here, run through payretry (webhook_verify_probe, one
JSON line a case) and, where the provider's SDK has the means, through the SDK too. A
valid notification must verify in both; a tampered copy must be refused by both.

Which direction each scheme is checked in, and why:
  stripe          SDK signs, both verify. stripe 16.1.0 has a signer
                  (WebhookSignature.generate_signature_header) and a verifier
                  (verify_header): SDK-signed events (one v1, and two v1 for a rolled
                  secret) must verify in payretry; tampered and stale copies fail in both.
                  One known difference, asserted as such: the SDK accepts a timestamp in
                  the future (it only checks `t < now - tolerance`), payretry refuses one
                  beyond the tolerance.
  adyen           SDK signs, both verify. Adyen 16.0.0's util.generate_notification_sig
                  signs each NotificationRequestItem; util.is_valid_hmac_notification
                  verifies (the first item of a batch only, so the SDK is asked item by
                  item). A batch with one tampered item: payretry refuses the whole batch,
                  the SDK refuses that item.
  square          Python signs (hmac), both verify. squareup has only a verifier
                  (square.utils.webhooks_helper.verify_signature), over URL + body.
  wechatpay_v3    Python signs (cryptography: SHA256withRSA with the test platform key,
                  AESGCM for the resource), both verify. wechatpayv3 2.0.4 only verifies
                  and decrypts (WeChatPay.callback). payretry's plaintext must equal the
                  SDK's. Not asked of the SDK: a wrong Wechatpay-Serial (the SDK would
                  fetch /v3/certificates over the network) and the timestamp window (the
                  SDK has none; payretry follows WeChat's Java SDK, 5 minutes).
  alipay          Python signs (cryptography), both verify. alipay-sdk-python 3.7.1411 has
                  no notification verifier; its own pieces are used the way Ant Group's Java
                  SDK's rsaCheckV1 uses them: SignatureUtils.get_sign_content over the
                  fields but sign and sign_type, then SignatureUtils.verify_with_rsa.
  checkout_com    Python signs (hmac), payretry verifies: checkout-sdk 4.8.1 has no webhook
                  verifier; the formula is Checkout.com's documented one (hex HMAC-SHA256 of
                  the body under the signature key).
  mollie_signed   Python signs (hmac), payretry verifies: mollie-api-python 4.0.0 has no
                  verifier; the formula is mollie-api-php's Webhooks/SignatureValidator
                  (optional "sha256=" prefix, several signatures).
  paypal_offline  Python signs (cryptography, a self-signed certificate made here),
                  payretry verifies: the pinned PayPal SDKs (paypal-server-sdk) have no
                  verifier; the message is paypalrestsdk's WebhookEvent._get_expected_sig
                  (transmission_id|time|webhook_id|crc32(body)).
  mollie_id_only  payretry only: always hint_only.
"""
import argparse
import base64
import copy
import datetime
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
import zlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.x509.oid import NameOID


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def b64(data):
    return base64.b64encode(data).decode()


class Runner:
    def __init__(self, probe):
        self.probe = probe
        self.cases = []  # (name, case dict, expected kind, sdk verdict or None, expected sdk verdict)
        self.failures = []

    def add(self, name, scheme, body, headers, secrets, expect, now_ms, sdk=None, expect_sdk=None,
            url="https://shop.example/hooks", check=None):
        if isinstance(body, str):
            body = body.encode()
        case = {"scheme": scheme, "method": "POST", "url": url, "headers": headers, "body_b64": b64(body),
                "secrets": secrets, "now_unix_ms": now_ms, "tolerance_ms": 0}
        sdk_verdict = None
        if sdk is not None:
            try:
                sdk_verdict = bool(sdk())
            except Exception:  # an SDK that raises refuses
                sdk_verdict = False
        self.cases.append((name, case, expect, sdk_verdict, expect_sdk, check))

    def run(self):
        lines = "".join(json.dumps(c[1]) + "\n" for c in self.cases)
        out = subprocess.run([self.probe], input=lines, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            raise SystemExit(f"FAIL: the probe exited {out.returncode}")
        answers = [json.loads(l) for l in out.stdout.splitlines() if l.strip()]
        if len(answers) != len(self.cases):
            raise SystemExit(f"FAIL: {len(self.cases)} cases, {len(answers)} answers")
        for (name, case, expect, sdk_verdict, expect_sdk, check), got in zip(self.cases, answers):
            ok = got.get("kind") == expect
            line = f"{case['scheme']:15} {name:55} payretry={got.get('kind')}"
            if sdk_verdict is not None:
                line += f" sdk={'accepts' if sdk_verdict else 'refuses'}"
                ok = ok and sdk_verdict == expect_sdk
            if ok and check is not None:
                problem = check(got)
                if problem:
                    ok = False
                    line += f" ({problem})"
            if got.get("why"):
                line += f"  [{got['why']}]"
            print(("ok   " if ok else "FAIL ") + line)
            if not ok:
                self.failures.append(name)


def tamper(body: bytes, old: bytes, new: bytes) -> bytes:
    assert old in body, old
    return body.replace(old, new, 1)


# ---- Stripe -------------------------------------------------------------------------------------

def stripe_cases(r):
    import stripe
    secret, rolled = "whsec_payretry_test_secret", "whsec_payretry_rolled"
    body = json.dumps({"id": "evt_1", "object": "event", "type": "payment_intent.succeeded",
                       "data": {"object": {"id": "pi_1", "amount": 1000}}})
    now = int(time.time())
    WS = stripe.WebhookSignature
    header = WS.generate_signature_header(body, secret, timestamp=now)
    keys = {"keys": [secret]}

    def sdk(payload, h, tolerance=300):
        return lambda: WS.verify_header(payload, h, secret, tolerance)

    r.add("SDK-signed event verifies", "stripe", body, [["Stripe-Signature", header]], keys, "verified", now * 1000,
          sdk(body, header), True)
    bad = tamper(body.encode(), b'"amount": 1000', b'"amount": 1001').decode()
    r.add("tampered body is refused", "stripe", bad, [["Stripe-Signature", header]], keys, "refused", now * 1000,
          sdk(bad, header), False)
    two = WS.generate_signature_header(body, rolled, timestamp=now) + ",v1=" + header.split("v1=")[1]
    r.add("two v1 (rolled secret), second matches", "stripe", body, [["Stripe-Signature", two]], keys, "verified",
          now * 1000, sdk(body, two), True)
    wrong = WS.generate_signature_header(body, rolled, timestamp=now)
    r.add("another secret's signature is refused", "stripe", body, [["Stripe-Signature", wrong]], keys, "refused",
          now * 1000, sdk(body, wrong), False)
    r.add("our rotation: second configured secret", "stripe", body, [["Stripe-Signature", wrong]],
          {"keys": [secret, rolled]}, "verified", now * 1000)
    stale = WS.generate_signature_header(body, secret, timestamp=now - 400)
    r.add("signed 400 s ago is refused", "stripe", body, [["Stripe-Signature", stale]], keys, "refused", now * 1000,
          sdk(body, stale), False)
    future = WS.generate_signature_header(body, secret, timestamp=now + 400)
    r.add("signed 400 s ahead: payretry refuses, the SDK accepts", "stripe", body, [["Stripe-Signature", future]],
          keys, "refused", now * 1000, sdk(body, future), True)
    r.add("no header is refused", "stripe", body, [], keys, "refused", now * 1000, sdk(body, ""), False)


# ---- Adyen --------------------------------------------------------------------------------------

def adyen_cases(r):
    from Adyen import util
    key = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
    other = "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"

    def item(psp, event, value, key_hex, original=None):
        i = {"amount": {"currency": "EUR", "value": value}, "eventCode": event,
             "eventDate": "2026-12-06T13:00:00+01:00", "merchantAccountCode": "TestMerchant",
             "merchantReference": "order-1", "paymentMethod": "visa", "pspReference": psp, "success": "true"}
        if original:
            i["originalReference"] = original
        i["additionalData"] = {"hmacSignature": util.generate_notification_sig(i, key_hex).decode()}
        return i

    def batch(*items):
        return {"live": "false", "notificationItems": [{"NotificationRequestItem": i} for i in items]}

    def sdk_all(b, key_hex):
        return lambda: all(util.is_valid_hmac_notification(copy.deepcopy(w["NotificationRequestItem"]), key_hex)
                           for w in b["notificationItems"])

    a = item("7914073381342284", "AUTHORISATION", 1130, key)
    f = item("8815", "REFUND", 500, key, original="7914073381342284")
    good = batch(a, f)

    def two_items(got):
        return None if len(got.get("items", [])) == 2 else f"{len(got.get('items', []))} items, not 2"

    r.add("SDK-signed batch of two verifies", "adyen", json.dumps(good), [], {"keys": [key]}, "verified", 0,
          sdk_all(good, key), True, check=two_items)
    bad_item = copy.deepcopy(f)
    bad_item["amount"]["value"] = 501
    bad = batch(a, bad_item)
    r.add("batch with one tampered item is refused whole", "adyen", json.dumps(bad), [], {"keys": [key]}, "refused", 0,
          sdk_all(bad, key), False)
    r.add("the SDK still accepts the good first item alone", "adyen", json.dumps(batch(a)), [], {"keys": [key]},
          "verified", 0, lambda: util.is_valid_hmac_notification(copy.deepcopy(bad), key), True)
    rotated = batch(item("1", "CAPTURE", 1130, other))
    r.add("wrong key is refused", "adyen", json.dumps(rotated), [], {"keys": [key]}, "refused", 0,
          sdk_all(rotated, key), False)
    r.add("second configured key matches", "adyen", json.dumps(rotated), [], {"keys": [key, other]}, "verified", 0,
          sdk_all(rotated, other), True)
    success = copy.deepcopy(a)
    success["success"] = "false"
    r.add("tampered success flag is refused", "adyen", json.dumps(batch(success)), [], {"keys": [key]}, "refused", 0,
          sdk_all(batch(success), key), False)


# ---- Square -------------------------------------------------------------------------------------

def square_cases(r):
    from square.utils.webhooks_helper import verify_signature
    key, url = "sq-signature-key-test", "https://shop.example/square/hook"
    body = json.dumps({"merchant_id": "ML1", "type": "payment.updated", "event_id": "e1",
                       "data": {"type": "payment", "id": "p1", "object": {"payment": {"status": "COMPLETED"}}}})
    sig = b64(hmac.new(key.encode(), (url + body).encode(), hashlib.sha256).digest())
    secrets = {"keys": [key], "notification_url": url}

    def sdk(b, s, u=url):
        return lambda: verify_signature(request_body=b, signature_header=s, signature_key=key, notification_url=u)

    r.add("signed URL + body verifies", "square", body, [["x-square-hmacsha256-signature", sig]], secrets,
          "verified", 0, sdk(body, sig), True)
    bad = tamper(body.encode(), b"COMPLETED", b"FAILED").decode()
    r.add("tampered body is refused", "square", bad, [["x-square-hmacsha256-signature", sig]], secrets, "refused", 0,
          sdk(bad, sig), False)
    other_url = "https://shop.example/other"
    r.add("signed for another URL is refused", "square", body, [["x-square-hmacsha256-signature", sig]],
          {"keys": [key], "notification_url": other_url}, "refused", 0, sdk(body, sig, other_url), False)
    r.add("second configured key matches", "square", body, [["X-Square-HmacSha256-Signature", sig]],
          {"keys": ["old", key], "notification_url": url}, "verified", 0)


# ---- WeChat Pay v3 ------------------------------------------------------------------------------

WECHAT_MCHID = "1900000109"
WECHAT_SERIAL_NO = "3775B6A45ACD588826D15E583A95F5DD3F3B4DD8"
WECHAT_PLATFORM_KEY_ID = "PUB_KEY_ID_0119000001092026120200000000"
WECHAT_APIV3_KEY = "payretrysdkconformanceapiv3key32"


def wechat_cases(r, keys):
    from wechatpayv3 import WeChatPay, WeChatPayType
    platform_key = serialization.load_pem_private_key(read(os.path.join(keys, "wechat_platform_key.pem")).encode(), None)
    wxpay = WeChatPay(
        wechatpay_type=WeChatPayType.JSAPI, mchid=WECHAT_MCHID,
        private_key=read(os.path.join(keys, "wechat_merchant_key.pem")), cert_serial_no=WECHAT_SERIAL_NO,
        appid="wxd678efh567hg6787", apiv3_key=WECHAT_APIV3_KEY,
        public_key=read(os.path.join(keys, "wechat_platform_pub.pem")), public_key_id=WECHAT_PLATFORM_KEY_ID)
    plain = json.dumps({"mchid": WECHAT_MCHID, "out_trade_no": "order-1", "transaction_id": "4200001",
                        "trade_state": "SUCCESS", "amount": {"total": 100, "currency": "CNY"}}, ensure_ascii=False)

    def envelope(api_key=WECHAT_APIV3_KEY, aad="transaction", nonce="fdasflkja484"):
        sealed = AESGCM(api_key.encode()).encrypt(nonce.encode(), plain.encode(), aad.encode())
        return json.dumps({"id": "EV-1", "create_time": "2026-12-06T13:00:00+08:00",
                           "resource_type": "encrypt-resource", "event_type": "TRANSACTION.SUCCESS",
                           "summary": "支付成功", "resource": {"original_type": "transaction",
                           "algorithm": "AEAD_AES_256_GCM", "ciphertext": b64(sealed), "associated_data": aad,
                           "nonce": nonce}}, ensure_ascii=False)

    def headers(body, ts, serial=WECHAT_PLATFORM_KEY_ID):
        nonce = "5K8264ILTKCH16CQ2502SI8ZNMTM67VS"
        sig = platform_key.sign(f"{ts}\n{nonce}\n{body}\n".encode(), padding.PKCS1v15(), hashes.SHA256())
        return {"Wechatpay-Signature": b64(sig), "Wechatpay-Timestamp": str(ts), "Wechatpay-Nonce": nonce,
                "Wechatpay-Serial": serial, "Wechatpay-Signature-Type": "WECHATPAY2-SHA256-RSA2048"}

    secrets = {"api_v3_key": WECHAT_APIV3_KEY, "public_key_pem": read(os.path.join(keys, "wechat_platform_pub.pem")),
               "public_key_id": WECHAT_PLATFORM_KEY_ID}
    now = int(time.time())
    body = envelope()
    h = headers(body, now)
    sdk_plain = {}

    def sdk(b, hh, keep=False):
        def call():
            out = wxpay.callback(hh, b)
            if keep and out:
                sdk_plain["resource"] = out["resource"]
            return out is not None and bool(out)
        return call

    def same_plaintext(got):
        ours = json.loads(base64.b64decode(got["body_b64"]))
        return None if ours == sdk_plain.get("resource") else "payretry's plaintext is not the SDK's"

    r.add("signed notification verifies and decrypts", "wechatpay_v3", body, [list(x) for x in h.items()], secrets,
          "verified", now * 1000, sdk(body, h, keep=True), True, check=same_plaintext)
    bad = tamper(body.encode(), "支付成功".encode(), "支付失败".encode()).decode()
    r.add("tampered body is refused", "wechatpay_v3", bad, [list(x) for x in h.items()], secrets, "refused",
          now * 1000, sdk(bad, h), False)
    wrong_key = envelope(api_key="ZYXWVUTSRQPONMLKJIHGFEDCBA987654")
    hw = headers(wrong_key, now)
    r.add("signed but sealed under another APIv3 key", "wechatpay_v3", wrong_key, [list(x) for x in hw.items()],
          secrets, "refused", now * 1000, sdk(wrong_key, hw), False)
    hs = headers(body, now, serial="PUB_KEY_ID_SOMEONE_ELSE")
    r.add("another serial is refused (payretry only)", "wechatpay_v3", body, [list(x) for x in hs.items()], secrets,
          "refused", now * 1000)
    ho = headers(body, now - 400)
    r.add("signed 400 s ago: payretry refuses (SDK has no window)", "wechatpay_v3", body,
          [list(x) for x in ho.items()], secrets, "refused", now * 1000, sdk(body, ho), True)


# ---- Alipay -------------------------------------------------------------------------------------

def alipay_cases(r, keys):
    from alipay.aop.api.util.SignatureUtils import get_sign_content, verify_with_rsa
    alipay_key = serialization.load_pem_private_key(read(os.path.join(keys, "alipay_key.pem")).encode(), None)
    app_key = serialization.load_pem_private_key(read(os.path.join(keys, "alipay_app_key.pem")).encode(), None)
    pub = read(os.path.join(keys, "alipay_pub.pem"))
    params = {"notify_time": "2026-12-06 21:00:00", "notify_type": "trade_status_sync",
              "notify_id": "ac05099524730693a8b330c5ecf72da9786", "app_id": "2021000000000001", "charset": "utf-8",
              "version": "1.0", "trade_no": "2026120622001", "out_trade_no": "order-1",
              "trade_status": "TRADE_SUCCESS", "total_amount": "88.88", "subject": "测试 订单 & more",
              "buyer_logon_id": "159****5620"}

    def signed(p, key=alipay_key):
        content = "&".join(f"{k}={p[k]}" for k in sorted(p))
        out = dict(p)
        out["sign"] = b64(key.sign(content.encode(), padding.PKCS1v15(), hashes.SHA256()))
        out["sign_type"] = "RSA2"
        return out

    def form(p, reverse=False):
        from urllib.parse import urlencode
        items = list(p.items())
        return urlencode(list(reversed(items)) if reverse else items)

    def sdk(p):
        def call():
            rest = {k: v for k, v in p.items() if k not in ("sign", "sign_type")}
            return verify_with_rsa(pub, get_sign_content(rest).encode("utf-8"), p["sign"])
        return call

    secrets = {"public_key_pem": pub}
    good = signed(params)
    r.add("signed notification verifies", "alipay", form(good), [], secrets, "verified", 0, sdk(good), True)
    r.add("fields in reverse order still verify", "alipay", form(good, reverse=True), [], secrets, "verified", 0,
          sdk(good), True)
    bad = dict(good, total_amount="0.01")
    r.add("tampered amount is refused", "alipay", form(bad), [], secrets, "refused", 0, sdk(bad), False)
    other = signed(params, key=app_key)
    r.add("signed with another key is refused", "alipay", form(other), [], secrets, "refused", 0, sdk(other), False)


# ---- Checkout.com, Mollie, PayPal: the documented formulas ----------------------------------------

def formula_cases(r, keys):
    body = json.dumps({"id": "evt_az5", "type": "payment_captured", "data": {"id": "pay_1", "action_id": "act_1"}})
    sig = hmac.new(b"cko-key", body.encode(), hashlib.sha256).hexdigest()
    r.add("Cko-Signature over the body verifies", "checkout_com", body, [["Cko-Signature", sig]], {"keys": ["cko-key"]},
          "verified", 0)
    r.add("tampered body is refused", "checkout_com", body.replace("captured", "declined"), [["Cko-Signature", sig]],
          {"keys": ["cko-key"]}, "refused", 0)

    mbody = json.dumps({"resource": "event", "id": "event_1", "type": "payment-link.paid", "entityId": "pl_1"})
    msig = "sha256=" + hmac.new(b"mollie-secret", mbody.encode(), hashlib.sha256).hexdigest()
    r.add("X-Mollie-Signature sha256=<hex> verifies", "mollie_signed", mbody, [["X-Mollie-Signature", msig]],
          {"keys": ["mollie-secret"]}, "verified", 0)
    r.add("tampered body is refused", "mollie_signed", mbody.replace("paid", "fail"), [["X-Mollie-Signature", msig]],
          {"keys": ["mollie-secret"]}, "refused", 0)
    r.add("classic id-only body is a hint", "mollie_id_only", "id=tr_WDqYK6vllg", [], {}, "hint_only", 0)

    # PayPal: a self-signed certificate stands for the one PAYPAL-CERT-URL names.
    key = serialization.load_pem_private_key(read(os.path.join(keys, "alipay_key.pem")).encode(), None)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "messageverificationcerts.sandbox.paypal.com")])
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(46).not_valid_before(start).not_valid_after(start + datetime.timedelta(days=3650))
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    pbody = json.dumps({"id": "WH-1", "event_type": "PAYMENT.CAPTURE.COMPLETED", "resource": {"id": "CAP-1"}})
    tid, ttime, webhook_id = "103e3700-8b62-11ef-9f39-3b3c6e7b8c2b", "2026-12-06T13:00:00Z", "1JE4291016473214C"
    message = f"{tid}|{ttime}|{webhook_id}|{zlib.crc32(pbody.encode()) & 0xffffffff}"
    psig = b64(key.sign(message.encode(), padding.PKCS1v15(), hashes.SHA256()))
    ph = [["PAYPAL-TRANSMISSION-ID", tid], ["PAYPAL-TRANSMISSION-TIME", ttime], ["PAYPAL-TRANSMISSION-SIG", psig],
          ["PAYPAL-AUTH-ALGO", "SHA256withRSA"], ["PAYPAL-CERT-URL", "https://api.sandbox.paypal.com/v1/cert"]]
    psecrets = {"public_key_pem": pem, "webhook_id": webhook_id}
    r.add("pinned certificate verifies id|time|webhook_id|crc32", "paypal_offline", pbody, ph, psecrets, "verified", 0)
    r.add("tampered body is refused", "paypal_offline", pbody.replace("CAP-1", "CAP-2"), ph, psecrets, "refused", 0)
    r.add("another webhook id is refused", "paypal_offline", pbody, ph, dict(psecrets, webhook_id="OTHER"),
          "refused", 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--keys", required=True)
    a = ap.parse_args()
    r = Runner(a.probe)
    stripe_cases(r)
    adyen_cases(r)
    square_cases(r)
    wechat_cases(r, a.keys)
    alipay_cases(r, a.keys)
    formula_cases(r, a.keys)
    r.run()
    if r.failures:
        print(f"FAIL: {len(r.failures)} of {len(r.cases)} cases", file=sys.stderr)
        return 1
    print(f"all {len(r.cases)} cases agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
