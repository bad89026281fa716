"""Our own provider double (not payretry-sim) for the money-state attack.

It answers Stripe, Adyen, Checkout.com and PayPal create and lookup shapes
(docs/providers.md, src/profiles/builtin/*.json) and keeps the provider's
truth: every payment object with its order, its current word and whether
money was held or captured on it. The scenarios decide what each create
answers (`plan`) and may lose an answer after processing it (`lose`), or
make a lookup answer an older word (`stale`), and later ask `truth(order)`.
"""
import hashlib
import hmac
import itertools
import json
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STRIPE_WHSEC = "whsec_money_attack_secret_0001"
ADYEN_HMAC_HEX = "44782def547aaa06c910c43446ecfa7dd4ab7ae9c4d8f3d2ab2f9c2dd4d2f5d1"
CKO_SECRET = "cko_money_attack_signature_key"

# Which provider words mean money was held or captured on that payment.
HELD = {"requires_capture", "Authorised", "Authorized"}
CAPTURED = {"succeeded", "Captured", "COMPLETED", "Paid", "Partially Captured"}


def form_decode(body):
    out = {}
    for k, v in urllib.parse.parse_qsl(body, keep_blank_values=True):
        parts = re.findall(r"[^\[\]]+", k)
        d = out
        for p in parts[:-1]:
            d = d.setdefault(p, {})
        d[parts[-1]] = v
    return out


class Double:
    def __init__(self):
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.payments = {}  # provider id -> {"order", "word", "held", "captured", "obj"}
        self.idem = {}      # key -> (status, body bytes)
        self.plan = {}      # order -> list of create answers, one used per create (the last repeats)
        self.lose = set()   # orders whose next create answer is lost (processed, then too slow)
        self.stale = {}     # provider id -> word the lookup answers instead of the truth
        self.creates = 0
        srv = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, status, body):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except BrokenPipeError:
                    pass  # a lost answer: the client stopped listening, as intended

            def do_GET(self):
                srv.get(self)

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                srv.post(self, self.rfile.read(n).decode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()

    # ---- the truth -------------------------------------------------------
    def record(self, pid, order, word, obj):
        with self.lock:
            p = self.payments.setdefault(pid, {"order": order, "held": False, "captured": False})
            p["word"], p["obj"] = word, obj
            p["held"] |= word in HELD
            p["captured"] |= word in CAPTURED

    def set_word(self, pid, word, **obj_changes):
        """The provider moves a payment on its own side (the customer paid, a capture, a void)."""
        p = self.payments[pid]
        obj = dict(p["obj"], **obj_changes)
        for k in ("status", "resultCode"):
            if k in obj:
                obj[k] = word
        self.record(pid, p["order"], word, obj)

    def truth(self, order):
        ps = {i: p for i, p in self.payments.items() if p["order"] == order}
        return {"payments": {i: (p["word"], "captured" if p["captured"] else "held" if p["held"] else "none")
                             for i, p in ps.items()},
                "captured": sum(p["captured"] for p in ps.values()),
                # Held now: a void, expiry or cancel released the earlier hold.
                "held": sum(p["word"] in HELD and not p["captured"] for p in ps.values())}

    # ---- creates ---------------------------------------------------------
    def next_plan(self, order):
        steps = self.plan.get(order) or [{}]
        return steps.pop(0) if len(steps) > 1 else steps[0]

    def post(self, h, raw):
        path = h.path.split("?")[0]
        if path == "/v1/oauth2/token":
            return h._send(200, {"access_token": "A21.money", "token_type": "Bearer", "expires_in": 32400})
        key = (h.headers.get("Idempotency-Key") or h.headers.get("PayPal-Request-Id")
               or h.headers.get("Cko-Idempotency-Key") or "")
        with self.lock:
            if key and key in self.idem:
                status, body = self.idem[key]
                return h._send(status, body)
            self.creates += 1
        if path == "/v1/payment_intents":
            status, body, order = self.stripe_create(form_decode(raw))
        elif path == "/v72/payments":
            status, body, order = self.adyen_create(json.loads(raw))
        elif path == "/payments":
            status, body, order = self.cko_create(json.loads(raw))
        elif path == "/v2/checkout/orders":
            status, body, order = self.paypal_create(json.loads(raw))
        else:
            return h._send(404, {"error": "no such path " + path})
        data = json.dumps(body).encode()
        with self.lock:
            if key:
                self.idem[key] = (status, data)
            lost = order in self.lose
            self.lose.discard(order)
        if lost:
            time.sleep(1.5)  # processed, but the client gave up on the answer
        h._send(status, data)

    def stripe_create(self, f):
        order = f.get("metadata", {}).get("order_id", "")
        step = self.next_plan(order)
        pid = step.get("id") or f"pi_{next(self.ids):06d}"
        word = step.get("status", "succeeded")
        obj = {"id": pid, "object": "payment_intent", "status": word, "amount": int(f.get("amount", "0") or 0),
               "metadata": {"order_id": order}, "created": int(time.time())}
        if step.get("decline"):
            obj["status"] = "requires_payment_method"
            self.record(pid, order, "requires_payment_method", obj)
            return 402, {"error": {"type": "card_error", "code": "card_declined", "payment_intent": obj}}, order
        self.record(pid, order, word, obj)
        return 200, obj, order

    def adyen_create(self, j):
        order = j.get("reference", "")
        step = self.next_plan(order)
        pid = step.get("id") or f"P{next(self.ids):015d}"
        word = step.get("resultCode", "Authorised")
        obj = {"pspReference": pid, "resultCode": word, "merchantReference": order}
        self.record(pid, order, word, obj)
        return 200, obj, order

    def cko_create(self, j):
        order = j.get("reference", "")
        step = self.next_plan(order)
        pid = step.get("id") or f"pay_{next(self.ids):026d}"
        word = step.get("status", "Captured")
        obj = {"id": pid, "status": word, "reference": order, "approved": word != "Declined"}
        self.record(pid, order, word, obj)
        return (201 if word != "Pending" else 202), obj, order

    def paypal_create(self, j):
        pu = (j.get("purchase_units") or [{}])[0]
        order = pu.get("custom_id", "")
        step = self.next_plan(order)
        pid = step.get("id") or f"{next(self.ids):017d}"
        obj = {"id": pid, "status": step.get("status", "COMPLETED"),
               "purchase_units": [{"custom_id": order, "payments": step.get("payments", {})}]}
        # The truth of a PayPal order is its captures: any COMPLETED capture moved money.
        caps = [c.get("status") for c in step.get("payments", {}).get("captures", [])]
        word = "COMPLETED" if "COMPLETED" in caps else (caps[0] if caps else obj["status"] + "(order)")
        self.record(pid, order, word, obj)
        return 201, obj, order

    # ---- lookups ---------------------------------------------------------
    def get(self, h):
        u = urllib.parse.urlparse(h.path)
        m = re.match(r"^/v1/payment_intents/([^/]+)$", u.path) or re.match(r"^/v2/checkout/orders/([^/]+)$", u.path)
        if m:
            p = self.payments.get(m.group(1))
            if not p:
                return h._send(404, {"error": {"type": "invalid_request_error", "code": "resource_missing"}})
            obj = dict(p["obj"])
            if m.group(1) in self.stale:
                obj["status"] = self.stale[m.group(1)]
            return h._send(200, obj)
        if u.path == "/payments":
            ref = urllib.parse.parse_qs(u.query).get("reference", [""])[0]
            # Newest first, as a list endpoint usually answers.
            data = [dict(p["obj"]) for i, p in reversed(list(self.payments.items())) if p["order"] == ref]
            return h._send(200, {"limit": 10, "skip": 0, "total_count": len(data), "data": data})
        h._send(404, {"error": "no such path"})


# ---- signing ---------------------------------------------------------------
def stripe_headers(body):
    t = int(time.time())
    mac = hmac.new(STRIPE_WHSEC.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return {"Stripe-Signature": f"t={t},v1={mac}", "Content-Type": "application/json"}


def stripe_event(eid, obj, etype):
    return json.dumps({"id": eid, "object": "event", "type": etype, "created": int(time.time()),
                       "data": {"object": obj}}).encode()


def adyen_body(items, merchant="MoneyAttackECOM"):
    import base64
    out = []
    for it in items:
        it = dict(it, merchantAccountCode=merchant)
        it.setdefault("amount", {"value": 1000, "currency": "EUR"})
        it.setdefault("originalReference", "")
        msg = ":".join([it["pspReference"], it["originalReference"], merchant, it["merchantReference"],
                        str(it["amount"]["value"]), it["amount"]["currency"], it["eventCode"], it["success"]])
        sig = base64.b64encode(hmac.new(bytes.fromhex(ADYEN_HMAC_HEX), msg.encode(), hashlib.sha256).digest())
        it["additionalData"] = {"hmacSignature": sig.decode()}
        out.append({"NotificationRequestItem": it})
    return json.dumps({"live": "false", "notificationItems": out}).encode()


def cko_headers(body):
    return {"Cko-Signature": hmac.new(CKO_SECRET.encode(), body, hashlib.sha256).hexdigest(),
            "Content-Type": "application/json"}
