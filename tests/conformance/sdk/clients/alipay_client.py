"""alipay-sdk-python (Ant Group): alipay.trade.pay through the open API gateway
(POST /gateway.do, common parameters and sign in the query string, biz_content
in a form body, RSA2), then alipay.trade.query by out_trade_no; then, as the
plan says, alipay.trade.refund whose out_request_no is the key payretry wrote.
The SDK verifies each answer's sign with the Alipay public key. Closing a
trade carries no key: payretry refuses it, and the SDK is not asked."""
import os
import sys
import time
import urllib.parse

from common import cases, expect, run, run_plan

from cryptography.hazmat.primitives import serialization

import alipay.aop.api.util.WebUtils as WebUtils
from alipay.aop.api.AlipayClientConfig import AlipayClientConfig
from alipay.aop.api.DefaultAlipayClient import DefaultAlipayClient
from alipay.aop.api.domain.AlipayTradePayModel import AlipayTradePayModel
from alipay.aop.api.domain.AlipayTradeQueryModel import AlipayTradeQueryModel
from alipay.aop.api.domain.AlipayTradeRefundModel import AlipayTradeRefundModel
from alipay.aop.api.request.AlipayTradePayRequest import AlipayTradePayRequest
from alipay.aop.api.request.AlipayTradeQueryRequest import AlipayTradeQueryRequest
from alipay.aop.api.request.AlipayTradeRefundRequest import AlipayTradeRefundRequest
from alipay.aop.api.response.AlipayTradePayResponse import AlipayTradePayResponse
from alipay.aop.api.response.AlipayTradeQueryResponse import AlipayTradeQueryResponse
from alipay.aop.api.response.AlipayTradeRefundResponse import AlipayTradeRefundResponse

_original_get_http_connection = WebUtils.get_http_connection


def _get_http_connection(url, query_string, timeout):
    """WebUtils.get_http_connection connects to port 80 (443) whatever the URL
    says, and `url += url_parse_result.port` is a TypeError for any URL with a
    port. The SDK cannot reach a server on another port; this is the same
    function with the URL's port honoured. The request line (path and query)
    it builds is unchanged: the original's with the port as text."""
    u = urllib.parse.urlparse(url)
    if not u.port:
        return _original_get_http_connection(url, query_string, timeout)
    import http.client
    conn = http.client.HTTPConnection(host=u.hostname, port=u.port, timeout=timeout)
    return f"{u.scheme}://{u.hostname}:{u.port}{u.path}?{query_string}", conn


def pkcs1_private_pem(pkcs8_path):
    """The SDK signs with rsa.PrivateKey.load_pkcs1: it needs the PKCS#1 form
    (BEGIN RSA PRIVATE KEY) of the app's PKCS#8 test key."""
    key = serialization.load_pem_private_key(open(pkcs8_path, "rb").read(), password=None)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


def main(a, result):
    # The SDK stamps requests with the host's local time (datetime.now()); the gateway
    # reads "timestamp" as Beijing time. Run it as a merchant in China would: UTC+8.
    os.environ["TZ"] = "CST-8"
    time.tzset()
    result["notes"].append("alipay-sdk-python stamps 'timestamp' in the host's local time: run with TZ=UTC+8")
    WebUtils.get_http_connection = _get_http_connection
    result["notes"].append("alipay-sdk-python cannot reach a URL with a port (WebUtils.get_http_connection "
                           "connects to 80 and raises TypeError on url += port): patched to honour the port")
    config = AlipayClientConfig()
    config.server_url = a.base + "/gateway.do"
    config.app_id = cases.ALIPAY_APP_ID
    config.app_private_key = pkcs1_private_pem(os.path.join(a.keys, "alipay_app_key.pem"))
    config.alipay_public_key = cases.read(os.path.join(a.keys, "alipay_pub.pem"))
    config.sign_type = "RSA2"
    client = DefaultAlipayClient(alipay_client_config=config)

    def create(step, state):
        model = AlipayTradePayModel()
        biz = cases.payretry_body("alipay", step["order"])["biz_content"]
        model.out_trade_no = biz["out_trade_no"]
        model.scene = biz["scene"]
        model.auth_code = biz["auth_code"]
        model.subject = biz["subject"]
        model.total_amount = biz["total_amount"]
        text = client.execute(AlipayTradePayRequest(biz_model=model))  # raises if the sign does not verify
        res = AlipayTradePayResponse()
        res.parse_response_content(text)
        expect(res.is_success() and res.code == "10000", f"pay: code {res.code} sub_code {res.sub_code}: {text}")
        expect(res.out_trade_no == step["order"], f"pay: out_trade_no {res.out_trade_no!r}")
        expect(res.trade_no, f"pay: no trade_no in {text}")
        expect(res.total_amount == cases.AMOUNT_MAJOR, f"pay: total_amount {res.total_amount!r}")
        return {"id": res.trade_no, "status": res.code}

    def lookup(step, state):
        qm = AlipayTradeQueryModel()
        qm.out_trade_no = step["order"]
        text = client.execute(AlipayTradeQueryRequest(biz_model=qm))
        q = AlipayTradeQueryResponse()
        q.parse_response_content(text)
        expect(q.is_success() and q.code == "10000", f"query: code {q.code} sub_code {q.sub_code}: {text}")
        expect(q.trade_no == state["ids"][step["payment"]], f"query: trade_no {q.trade_no!r}")
        expect(q.trade_status == "TRADE_SUCCESS", f"query: trade_status {q.trade_status!r}")
        return {"id": q.trade_no, "status": q.trade_status}

    def refund(step, state):
        # out_request_no names this refund request: the key payretry wrote into biz_content.
        m = AlipayTradeRefundModel()
        m.out_trade_no = step["order"]
        m.refund_amount = cases.major(step["amount"])
        m.out_request_no = step["key"]
        text = client.execute(AlipayTradeRefundRequest(biz_model=m))
        r = AlipayTradeRefundResponse()
        r.parse_response_content(text)
        expect(r.is_success() and r.code == "10000", f"refund: code {r.code} sub_code {r.sub_code}: {text}")
        expect(r.fund_change == "Y", f"refund: fund_change {r.fund_change!r}")
        return {"id": r.trade_no, "status": r.fund_change}

    run_plan(a, result, {"create": create, "lookup": lookup, "refund": refund})


if __name__ == "__main__":
    sys.exit(run(main))
