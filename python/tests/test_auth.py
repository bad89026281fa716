"""The built-in authentication from Python, with no hook: PayPal's OAuth2
tokens, WeChat Pay v3 and Alipay signatures, each against the simulator
playing that provider with its checks on (tests/keys/README.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import payretry
from conftest import Sim, config

KEYS = Path(__file__).resolve().parents[2] / "tests" / "keys"


def provider_config(sim: Sim, provider: str, auth: Dict[str, Any], **extra: Any) -> Dict[str, Any]:
    cfg = config(sim, provider=provider, auth=auth, **extra)
    del cfg["create_path"]  # the profile's own
    return cfg


def test_paypal_gets_a_token_and_renews_it_after_a_401(start_sim: Any) -> None:
    sim: Sim = start_sim("--profile", "paypal")
    auth = {"oauth2": {"client_id": "test-client-id", "client_secret": "test-client-secret"}}
    order = {"intent": "CAPTURE", "purchase_units": [{"reference_id": "pp-1", "amount": {"currency_code": "EUR", "value": "10.00"}}]}
    with payretry.Client(provider_config(sim, "paypal", auth)) as c:
        r = c.submit("pp-1", order)
        assert r.outcome is payretry.Outcome.SUCCEEDED, r.error
        sim.admin("oauth2/revoke", {})
        order["purchase_units"][0]["reference_id"] = "pp-2"
        r2 = c.submit("pp-2", order)
        assert r2.outcome is payretry.Outcome.SUCCEEDED, r2.error
        # The 401 is an attempt of its own; the renewed re-send (same key:
        # PayPal answers a known request id with its current state) the next.
        assert [a.http_status for a in r2.attempts] == [401, 201]
    assert sim.charges("pp-1") == 1 and sim.charges("pp-2") == 1
    assert int(sim.admin("stats")["oauth2_tokens_issued"]) == 2


def test_wechatpay_signs_and_verifies_without_a_hook(start_sim: Any) -> None:
    sim: Sim = start_sim("--profile", "wechatpay_v3", "--keys", str(KEYS))
    auth = {
        "wechatpay": {
            "serial_no": "3775B6A45ACD588826D15E583A95F5DD3F3B4DD8",
            "private_key_file": str(KEYS / "wechat_merchant_key.pem"),
            "platform_public_key_file": str(KEYS / "wechat_platform_pub.pem"),
        }
    }
    body = {"appid": "wxd678efh567hg6787", "mchid": "1900000109", "description": "Image", "out_trade_no": "wx-py-1",
            "amount": {"total": 100, "currency": "CNY"}}
    with payretry.Client(provider_config(sim, "wechatpay_v3", auth, merchant_id="1900000109")) as c:
        r = c.submit("wx-py-1", body)
        assert r.outcome is payretry.Outcome.SUCCEEDED, r.error
        assert r.provider_payment_id and r.provider_payment_id.startswith("wx")
        q = c.query("wx-py-1")
        assert q.outcome is payretry.Outcome.SUCCEEDED, q.error
    assert sim.charges("wx-py-1") == 1


def test_alipay_sends_the_signed_gateway_form_without_a_hook(start_sim: Any) -> None:
    sim: Sim = start_sim("--profile", "alipay", "--keys", str(KEYS))
    auth = {
        "alipay": {
            "app_id": "2021000000000001",
            "private_key_file": str(KEYS / "alipay_app_key.pem"),
            "alipay_public_key_file": str(KEYS / "alipay_pub.pem"),
        }
    }
    body = {"biz_content": {"out_trade_no": "ali_py_1", "total_amount": "10.00", "subject": "Image"}}
    with payretry.Client(provider_config(sim, "alipay", auth)) as c:
        r = c.submit("ali_py_1", body)
        assert r.outcome is payretry.Outcome.SUCCEEDED, r.error
        q = c.query("ali_py_1")
        assert q.outcome is payretry.Outcome.SUCCEEDED, q.error
    assert sim.charges("ali_py_1") == 1
