"""Client.apply_webhook through the real C ABI: Stripe events signed here with
HMAC as Stripe signs them (and one Adyen item), applied to a ledger the
simulator's payments wrote; and the WSGI and ASGI examples
(examples/webhooks/) answering the provider's ack."""

from __future__ import annotations

import asyncio
import base64
import email.message
import hashlib
import hmac
import importlib.util
import io
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Optional, Tuple
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest

import payretry
from conftest import Sim, body, config

SECRET = "whsec_python_binding_webhook_secret"
ADYEN_KEY = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
URL = "https://shop.example/hooks/stripe"
_REPO = Path(__file__).resolve().parents[2]


def stripe_signature(payload: bytes, secret: str = SECRET, t: Optional[int] = None) -> str:
    """Stripe-Signature as Stripe computes it: t=<unix s>,v1=<hex HMAC-SHA256(secret, "<t>.<payload>")>."""
    ts = int(time.time()) if t is None else t
    mac = hmac.new(secret.encode(), f"{ts}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={ts},v1={mac}"


def stripe_event(event_id: str, order_id: str, status: str = "succeeded", obj: str = "payment_intent") -> bytes:
    event = {
        "id": event_id,
        "object": "event",
        "type": f"payment_intent.{status}",
        "data": {"object": {"id": f"pi_{event_id}", "object": obj, "status": status,
                            "metadata": {"order_id": order_id}}},
    }
    return json.dumps(event, indent=2).encode()  # Stripe's own bytes have spaces and newlines: signed as sent


def stripe_config(sim: Sim, **extra: Any) -> Dict[str, Any]:
    return config(sim, {"max_attempts": 2}, webhook={"secret": SECRET}, **extra)


def unknown_payment(sim: Sim, client: payretry.Client, order_id: str) -> None:
    sim.script(order_id, ["lost_response", "lost_response"])
    assert client.submit(order_id, body(order_id)).outcome is payretry.Outcome.UNKNOWN


def test_a_signed_event_settles_an_unknown_payment_and_again_is_a_duplicate(sim: Sim) -> None:
    with payretry.Client(stripe_config(sim)) as c:
        unknown_payment(sim, c, "wh-1")
        event = stripe_event("evt_1", "wh-1")
        headers = {"Content-Type": "application/json", "Stripe-Signature": stripe_signature(event)}
        reply = c.apply_webhook("POST", URL, headers, event)
        assert isinstance(reply, payretry.WebhookReply)
        assert reply.status == 200 and reply.body == b"" and reply.verdict == "accepted"
        assert reply.outcome["scheme"] == "stripe"
        [e] = reply.events
        assert e["event_id"] == "evt_1" and e["order_id"] == "wh-1" and e["finding"] == "succeeded"
        assert (e["effect"], e["state_before"], e["state_after"]) == ("settled", "UNKNOWN", "SUCCEEDED")
        # A library from before the events' money_state reads UNKNOWN; one
        # with it names a state this package knows (MoneyState() refuses others).
        assert reply.money_states == [payretry.MoneyState(e.get("money_state", "unknown"))]
        assert c.ledger_get("wh-1")["payment"]["state"] == "SUCCEEDED"

        again = c.apply_webhook("POST", URL, headers, event)
        assert again.status == 200 and again.verdict == "accepted"
        assert [e["effect"] for e in again.events] == ["duplicate"]
    assert sim.charges("wh-1") == 1


def test_a_forged_a_stale_and_a_tampered_event_are_refused_and_change_nothing(sim: Sim) -> None:
    with payretry.Client(stripe_config(sim)) as c:
        unknown_payment(sim, c, "wh-2")
        event = stripe_event("evt_2", "wh-2")
        cases = [
            (event, stripe_signature(event, secret="whsec_someone_else")),
            (event, stripe_signature(event, t=int(time.time()) - 3600)),  # past Stripe's 300 s window
            (event.replace(b"succeeded", b"canceled"), stripe_signature(event)),
        ]
        for payload, signature in cases:
            reply = c.apply_webhook("POST", URL, {"Stripe-Signature": signature}, payload)
            assert (reply.status, reply.content_type, reply.body) == (400, "text/plain", b"refused")
            assert reply.verdict == "refused" and reply.outcome["why"] and reply.events == []
            assert reply.headers == [("Content-Type", "text/plain")]
        no_signature = c.apply_webhook("POST", URL, {}, event)
        assert no_signature.status == 400
        assert c.ledger_get("wh-2")["payment"]["state"] == "UNKNOWN"


def test_an_authentic_event_about_something_else_is_acknowledged_and_ignored(sim: Sim) -> None:
    with payretry.Client(stripe_config(sim)) as c:
        event = stripe_event("evt_3", "wh-3", obj="charge")
        reply = c.apply_webhook("POST", URL, [("Stripe-Signature", stripe_signature(event))], event)
        assert reply.status == 200 and reply.verdict == "accepted"
        assert [e["effect"] for e in reply.events] == ["ignored"]


def test_an_event_before_its_payment_is_kept(sim: Sim) -> None:
    with payretry.Client(stripe_config(sim)) as c:
        event = stripe_event("evt_4", "wh-not-yet")
        reply = c.apply_webhook("POST", URL, [("Stripe-Signature", stripe_signature(event))], event)
        assert reply.status == 200
        assert [e["effect"] for e in reply.events] == ["kept"]


def test_headers_as_dict_pairs_bytes_or_any_multi_valued_mapping(sim: Sim) -> None:
    with payretry.Client(stripe_config(sim)) as c:
        for i, form in enumerate(("pairs", "bytes", "message", "multi", "lower", "tuple")):
            event = stripe_event(f"evt_h{i}", f"wh-h{i}")
            sig = stripe_signature(event)
            headers: Any
            if form == "pairs":
                headers = [("X-Forwarded-For", "10.0.0.1"), ("X-Forwarded-For", "10.0.0.2"), ("Stripe-Signature", sig)]
            elif form == "bytes":  # an ASGI scope's headers
                headers = [(b"content-type", b"application/json"), (b"stripe-signature", sig.encode())]
            elif form == "message":  # http.client.HTTPMessage, http.server's self.headers
                headers = email.message.Message()
                headers["Via"] = "a"
                headers["Via"] = "b"
                headers["Stripe-Signature"] = sig
            elif form == "multi":  # a list value: the header repeated
                headers = {"Via": ["a", "b"], "Stripe-Signature": [sig]}
            elif form == "lower":
                headers = {"stripe-signature": sig}
            else:
                headers = (("STRIPE-SIGNATURE", sig),)
            reply = c.apply_webhook("POST", URL, headers, bytearray(event))
            assert reply.verdict == "accepted", (form, reply.outcome)
        assert payretry._webhook.webhook_header_pairs(email_message_with_repeats()) == [("Via", "a"), ("Via", "b")]


def email_message_with_repeats() -> email.message.Message:
    m = email.message.Message()
    m["Via"] = "a"
    m["Via"] = "b"
    return m


def test_wrong_types_are_refused_before_the_call(sim: Sim) -> None:
    with payretry.Client(stripe_config(sim)) as c:
        event = stripe_event("evt_t", "wh-t")
        with pytest.raises(TypeError, match="raw bytes"):
            c.apply_webhook("POST", URL, {}, event.decode())  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            c.apply_webhook("POST", URL, "Stripe-Signature: x", event)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            c.apply_webhook("POST", URL, {"Stripe-Signature": 1}, event)
        with pytest.raises(payretry.InvalidArgumentError, match="NUL"):
            c.apply_webhook("POST", URL, {"Stripe-Signature": "t=1\x00"}, event)
        with pytest.raises(payretry.InvalidArgumentError):
            c.apply_webhook(None, URL, {}, event)  # type: ignore[arg-type]
    closed = payretry.Client(stripe_config(sim))
    closed.close()
    with pytest.raises(payretry.ClientClosedError):
        closed.apply_webhook("POST", URL, {}, b"{}")


def test_a_config_without_webhook_secrets_is_a_config_error(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        with pytest.raises(payretry.ConfigError, match="webhook"):
            c.apply_webhook("POST", URL, {}, b"{}")


def adyen_item(psp: str, merchant_ref: str, key_hex: str, success: str = "true") -> Dict[str, Any]:
    """One NotificationRequestItem, signed as Adyen signs it: base64 HMAC-SHA256 with the
    hex key over pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success."""
    fields = [psp, "", "ShopAccount", merchant_ref, "1130", "EUR", "AUTHORISATION", success]
    sig = base64.b64encode(hmac.new(bytes.fromhex(key_hex), ":".join(fields).encode(), hashlib.sha256).digest())
    return {"NotificationRequestItem": {
        "additionalData": {"hmacSignature": sig.decode()},
        "amount": {"currency": "EUR", "value": 1130},
        "eventCode": "AUTHORISATION",
        "eventDate": "2026-12-06T13:00:00+01:00",
        "merchantAccountCode": "ShopAccount",
        "merchantReference": merchant_ref,
        "pspReference": psp,
        "success": success,
    }}


def test_an_adyen_item_is_acknowledged_with_adyens_accepted(sim: Sim) -> None:
    cfg = {"provider": "adyen", "base_url": sim.base_url, "auth": {"api_key": "adyen-test-key"},
           "merchant_id": "ShopAccount", "ledger": "memory:", "webhook": {"secret": ADYEN_KEY}}
    with payretry.Client(cfg) as c:
        batch = json.dumps({"live": "false", "notificationItems": [adyen_item("7914073381342284", "wh-ad", ADYEN_KEY)]})
        reply = c.apply_webhook("POST", "https://shop.example/hooks/adyen", {"Content-Type": "application/json"},
                                batch.encode())
        assert (reply.status, reply.content_type, reply.body) == (200, "text/plain", b"[accepted]")
        [e] = reply.events
        assert e["order_id"] == "wh-ad" and e["finding"] == "succeeded" and e["effect"] == "kept"
        forged = json.dumps({"live": "false",
                             "notificationItems": [adyen_item("7914073381342284", "wh-ad", "00" * 32)]})
        assert c.apply_webhook("POST", "https://shop.example/hooks/adyen", {}, forged.encode()).status == 400


def test_apply_webhook_async_answers_on_the_event_loop(sim: Sim) -> None:
    with payretry.Client(stripe_config(sim)) as c:
        event = stripe_event("evt_async", "wh-async")
        reply = asyncio.run(c.apply_webhook_async("POST", URL, {"Stripe-Signature": stripe_signature(event)}, event))
        assert reply.status == 200 and reply.verdict == "accepted"


def test_mollies_hint_is_confirmed_by_a_lookup_with_the_gil_released(start_sim: Any) -> None:
    # Mollie's webhook names an id and nothing else: the provider's lookup
    # decides. The simulator answers every lookup 400 ms late; another
    # Python thread keeps running meanwhile.
    sim: Sim = start_sim("--profile", "mollie", "--latency-ms", "400")
    cfg = config(sim, {"attempt_timeout_ms": 5000, "deadline_ms": 20000}, provider="mollie")
    del cfg["create_path"]
    with payretry.Client(cfg) as c:
        order = {"amount": {"currency": "EUR", "value": "10.00"}, "description": "wh-mo",
                 "metadata": {"order_id": "wh-mo"}}
        r = c.submit("wh-mo", order)
        assert r.outcome is payretry.Outcome.SUCCEEDED and r.provider_payment_id
        hint = f"id={r.provider_payment_id}".encode()
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        replies: List[payretry.WebhookReply] = []
        busy_s, busy_n = count_while(lambda: replies.append(c.apply_webhook("POST", URL, form, hint)))
        base_s, base_n = count_while(lambda: time.sleep(busy_s))
    [reply] = replies
    assert reply.status == 200 and reply.verdict == "accepted", reply.outcome
    [e] = reply.events
    assert e["order_id"] == "wh-mo" and e["provider_payment_id"] == r.provider_payment_id
    assert e["effect"] == "recorded" and e["state_after"] == "SUCCEEDED"
    assert busy_s >= 0.35  # the lookup really was slow
    assert busy_n / busy_s > 0.25 * (base_n / base_s)


def count_while(run: Any) -> Tuple[float, int]:
    """Counts loop iterations of another thread while run() runs; returns (seconds, count)."""
    stop = threading.Event()
    counted = [0]

    def counter() -> None:
        n = 0
        while not stop.is_set():
            n += 1
        counted[0] = n

    t = threading.Thread(target=counter)
    t0 = time.perf_counter()
    t.start()
    run()
    stop.set()
    t.join()
    return time.perf_counter() - t0, counted[0]


# ---- the examples -------------------------------------------------------------------------------


def load_example(name: str) -> ModuleType:
    path = _REPO / "examples" / "webhooks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"webhook_example_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


def post(url: str, data: bytes, headers: Dict[str, str]) -> Tuple[int, Dict[str, str], bytes]:
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_the_wsgi_example_answers_stripes_ack_over_http(sim: Sim) -> None:
    wsgi_app = load_example("wsgi_app")
    with payretry.Client(stripe_config(sim)) as c:
        unknown_payment(sim, c, "wh-wsgi")
        with make_server("127.0.0.1", 0, wsgi_app.make_app(c), handler_class=_QuietHandler) as httpd:
            server = threading.Thread(target=httpd.serve_forever)
            server.start()
            try:
                url = f"http://127.0.0.1:{httpd.server_port}/hooks/stripe"
                event = stripe_event("evt_wsgi", "wh-wsgi")
                status, _, answer = post(url, event, {"Content-Type": "application/json",
                                                      "Stripe-Signature": stripe_signature(event)})
                assert (status, answer) == (200, b"")
                status, headers, answer = post(url, event, {"Stripe-Signature": "t=1,v1=00"})
                assert (status, answer) == (400, b"refused")
                assert headers["Content-Type"] == "text/plain"
            finally:
                httpd.shutdown()
                server.join()
        assert c.ledger_get("wh-wsgi")["payment"]["state"] == "SUCCEEDED"


def test_the_wsgi_example_answers_adyens_accepted(sim: Sim) -> None:
    wsgi_app = load_example("wsgi_app")
    cfg = {"provider": "adyen", "base_url": sim.base_url, "auth": {"api_key": "adyen-test-key"},
           "ledger": "memory:", "webhook": {"secret": ADYEN_KEY}}
    with payretry.Client(cfg) as c:
        batch = json.dumps({"live": "false", "notificationItems": [adyen_item("8815", "wh-wsgi-ad", ADYEN_KEY)]})
        data = batch.encode()
        environ = {"REQUEST_METHOD": "POST", "wsgi.url_scheme": "https", "HTTP_HOST": "shop.example",
                   "SCRIPT_NAME": "", "PATH_INFO": "/hooks/adyen", "QUERY_STRING": "",
                   "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(data)),
                   "SERVER_NAME": "shop.example", "SERVER_PORT": "443", "wsgi.input": io.BytesIO(data)}
        started: List[Any] = []
        out = b"".join(wsgi_app.make_app(c)(environ, lambda status, headers: started.append((status, headers))))
        assert out == b"[accepted]"
        assert started[0][0] == "200 OK"
        assert ("Content-Type", "text/plain") in started[0][1]


def run_asgi(app: Any, scope: Dict[str, Any], chunks: List[bytes]) -> List[Dict[str, Any]]:
    """Calls the ASGI callable as a server would: the body in chunks, the messages it sends."""
    sent: List[Dict[str, Any]] = []
    pending = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

    async def receive() -> Dict[str, Any]:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: Dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def test_the_asgi_example_answers_stripes_ack(sim: Sim) -> None:
    asgi_app = load_example("asgi_app")
    with payretry.Client(stripe_config(sim)) as c:
        unknown_payment(sim, c, "wh-asgi")
        app = asgi_app.make_app(c)
        event = stripe_event("evt_asgi", "wh-asgi")
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "https", "path": "/hooks/stripe", "raw_path": b"/hooks/stripe", "query_string": b"",
                 "root_path": "", "server": ("127.0.0.1", 8000),
                 "headers": [(b"host", b"shop.example"), (b"content-type", b"application/json"),
                             (b"stripe-signature", stripe_signature(event).encode())]}
        assert asgi_app.request_url(scope) == "https://shop.example/hooks/stripe"
        sent = run_asgi(app, scope, [event[:10], event[10:]])
        assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
        assert sent[1] == {"type": "http.response.body", "body": b""}
        assert c.ledger_get("wh-asgi")["payment"]["state"] == "SUCCEEDED"

        forged = dict(scope, headers=[(b"stripe-signature", b"t=1,v1=00")])
        sent = run_asgi(app, forged, [event])
        assert sent[0]["status"] == 400 and (b"content-type", b"text/plain") in sent[0]["headers"]
        assert sent[1]["body"] == b"refused"


def test_the_flask_snippet_of_docs_python_md_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (_REPO / "docs" / "python.md").read_text(encoding="utf-8")
    snippet = text.split("<!-- python-webhook-example -->\n```python\n", 1)[1].split("```", 1)[0]
    snippet = snippet.replace("sqlite:///var/lib/shop/payments.db", f"sqlite://{tmp_path}/payments.db")
    monkeypatch.setenv("STRIPE_KEY", "sk_test_docs_snippet")
    monkeypatch.setenv("STRIPE_WEBHOOK_SECRET", SECRET)
    ns: Dict[str, Any] = {}
    exec(compile(snippet, "docs/python.md", "exec"), ns)  # nothing is sent to api.stripe.com

    event = stripe_event("evt_docs", "wh-docs")

    class FlaskLikeRequest:
        method = "POST"
        url = URL
        headers = {"Content-Type": "application/json", "Stripe-Signature": stripe_signature(event)}

        def get_data(self) -> bytes:
            return event

    try:
        body_, status, headers = ns["stripe_webhook"](FlaskLikeRequest())
        assert (body_, status, headers) == (b"", 200, [])
        FlaskLikeRequest.headers = {"Stripe-Signature": "t=1,v1=00"}
        assert ns["stripe_webhook"](FlaskLikeRequest())[1:] == (400, [("Content-Type", "text/plain")])
    finally:
        ns["client"].close()
