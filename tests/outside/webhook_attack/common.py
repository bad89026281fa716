import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provider import Provider, STRIPE_WHSEC, stripe_sign  # noqa: E402
import pr  # noqa: E402

FAST = {"max_attempts": 1, "connect_timeout_ms": 300, "attempt_timeout_ms": 600, "deadline_ms": 2000,
        "backoff_base_ms": 10, "backoff_cap_ms": 50, "min_attempt_ms": 50, "jitter_seed": 1}


def cfg(p, provider="stripe", ledger=None, retry=None, **extra):
    c = {"provider": provider, "base_url": p.url, "auth": {"bearer": "sk_test_outside_attack_key"},
         "ledger": ledger or "memory:", "retry": dict(FAST, **(retry or {}))}
    if provider == "stripe":
        c["webhook"] = {"secret": STRIPE_WHSEC}
    c.update(extra)
    return c


def stripe_event(evt_id, pi_id, order, etype="payment_intent.succeeded", status="succeeded", obj="payment_intent",
                 extra=None):
    o = {"id": pi_id, "object": obj, "status": status}
    if order is not None:
        o["metadata"] = {"order_id": order}
    e = {"id": evt_id, "object": "event", "type": etype, "data": {"object": o}}
    if extra:
        e.update(extra)
    return json.dumps(e, indent=2).encode()


def send_stripe(c, body, **kw):
    return c.webhook(body, {"Stripe-Signature": stripe_sign(body, **kw), "Content-Type": "application/json"})


def ev(reply):
    o = reply["outcome"] or {}
    return [(e.get("order_id"), e.get("effect"), e.get("state_before"), e.get("state_after"), e.get("why"))
            for e in o.get("events", [])], o.get("verdict"), o.get("why")


RESULTS = []


def report(name, verdict, detail):
    RESULTS.append((name, verdict, detail))
    print(f"[{verdict}] {name}: {detail}", flush=True)


def tmpdb():
    d = tempfile.mkdtemp(prefix="wa_")
    return d, "sqlite://" + os.path.join(d, "ledger.db")
