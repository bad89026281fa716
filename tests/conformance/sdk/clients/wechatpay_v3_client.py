"""wechatpayv3 (WeChat Pay publishes no Python SDK; this is the common one):
JSAPI order POST /v3/pay/transactions/jsapi, then the order by out_trade_no
(GET /v3/pay/transactions/out-trade-no/{no}?mchid=..). Requests signed with the
merchant key (WECHATPAY2-SHA256-RSA2048); answers verified by the SDK with the
platform public key, in its public-key mode (public_key + public_key_id).
Then, as the plan says, a refund (POST /v3/refund/domestic/refunds) whose
out_refund_no is the key payretry wrote. Closing an order carries no key:
payretry refuses it, and the SDK is not asked."""
import json
import os
import sys

from common import cases, expect, run, run_plan

from wechatpayv3 import WeChatPay, WeChatPayType


def main(a, result):
    wxpay = WeChatPay(
        wechatpay_type=WeChatPayType.JSAPI, mchid=cases.WECHAT_MCHID,
        private_key=cases.read(os.path.join(a.keys, "wechat_merchant_key.pem")),
        cert_serial_no=cases.WECHAT_SERIAL_NO, appid=cases.WECHAT_APPID, apiv3_key=cases.WECHAT_APIV3_KEY,
        notify_url=cases.WECHAT_NOTIFY_URL,
        public_key=cases.read(os.path.join(a.keys, "wechat_platform_pub.pem")),
        public_key_id=cases.WECHAT_PLATFORM_KEY_ID, timeout=(5, 30))
    # The SDK has no base-URL option: its gateway is Core._gate_way.
    expect(wxpay._core._gate_way == "https://api.mch.weixin.qq.com", f"gateway {wxpay._core._gate_way}")
    wxpay._core._gate_way = a.base

    def create(step, state):
        code, text = wxpay.pay(description=f"Order {step['order']}", out_trade_no=step["order"],
                               amount={"total": cases.AMOUNT_MINOR, "currency": "CNY"},
                               payer={"openid": cases.WECHAT_OPENID})
        expect(code == 200, f"create: HTTP {code}: {text!r}")
        expect(isinstance(text, str), f"create: answer not JSON (Content-Type): {text!r}")
        doc = json.loads(text)
        # A JSAPI order's answer is {"prepay_id": ...}.
        expect(doc.get("prepay_id"), f"create: no prepay_id in the JSAPI answer {doc}")
        return {"id": doc["prepay_id"], "status": None}

    def lookup(step, state):
        code, text = wxpay.query(out_trade_no=step["order"])
        expect(code == 200, f"query: HTTP {code}: {text!r}")
        doc = json.loads(text)
        expect(doc.get("out_trade_no") == step["order"], f"query: out_trade_no in {doc}")
        expect(doc.get("trade_state") in ("SUCCESS", "NOTPAY"), f"query: trade_state in {doc}")
        return {"id": doc.get("transaction_id"), "status": doc["trade_state"]}

    def refund(step, state):
        # The refund's own number (out_refund_no) is its key: the one payretry wrote. The SDK
        # adds the client's notify_url by itself.
        amount = dict(step["body"]["amount"], refund=step["amount"])
        code, text = wxpay.refund(out_refund_no=step["key"], amount=amount, out_trade_no=step["order"])
        expect(code == 200, f"refund: HTTP {code}: {text!r}")
        doc = json.loads(text)
        expect(doc.get("out_refund_no") == step["key"] and doc.get("out_trade_no") == step["order"],
               f"refund: {doc}")
        return {"id": doc.get("refund_id"), "status": doc.get("status")}

    run_plan(a, result, {"create": create, "lookup": lookup, "refund": refund})


if __name__ == "__main__":
    sys.exit(run(main))
