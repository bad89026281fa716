"""A Stripe double of our own (not payretry-sim) for the second outside attack.

It plays what payretry talks to: POST /v1/payment_intents (form body,
Idempotency-Key replayed per account as Stripe scopes keys, Stripe-Account
choosing the connected account, "platform" without it) and GET
/v1/payment_intents/{id} (found only in the account the request names). It
counts charges on its own side, per account and order, so a scenario can
compare what payretry reports with what really happened. It also builds and
signs the events Stripe would send (Stripe-Signature over "t.body" with the
endpoint secret).
"""
import hashlib
import hmac
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WHSEC = "whsec_attack2_0123456789abcdef"


def sign(body: bytes, secret: str = WHSEC, t=None) -> str:
    t = int(time.time()) if t is None else t
    mac = hmac.new(secret.encode(), str(t).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


def event(evt_id, pi, etype, account=None, key=None, created=None):
    """The event Stripe sends for PaymentIntent `pi` (a dict as stored)."""
    status = {"payment_intent.succeeded": "succeeded", "payment_intent.payment_failed": "requires_payment_method",
              "payment_intent.processing": "processing"}[etype]
    obj = {"id": pi["id"], "object": "payment_intent", "amount": pi["amount"], "status": status,
           "metadata": dict(pi["metadata"])}
    e = {"id": evt_id, "object": "event", "api_version": "2024-06-20", "type": etype,
         "created": int(time.time()) if created is None else created, "livemode": False,
         "data": {"object": obj}, "request": {"id": "req_" + evt_id, "idempotency_key": key}}
    if account is not None:
        e["account"] = account  # Connect: present for a connected account's event, absent for the platform's
    return json.dumps(e).encode()


def metadata_of(form):
    out = {}
    for k, v in form.items():
        if k.startswith("metadata[") and k.endswith("]"):
            out[k[len("metadata["):-1]] = v
    return out


class StripeDouble:
    def __init__(self):
        self.lock = threading.Lock()
        self.pis = {}          # id -> {"id","account","metadata","amount","status"}
        self.keys = {}         # (account, key) -> (status, body)
        self.charges = []      # (account, order, pi id)
        self.requests = []     # (method, path, account, key)
        # What the next creates do, in order: "succeed", "decline" (402, nothing
        # charged), "charge_then_drop" (charged, the connection closed without an
        # answer), "drop" (closed before anything is made); "slow_<one of them>"
        # waits slow_s seconds first (the payment in flight meanwhile).
        self.plan = []
        self.n = 0
        self.slow_s = 1.0
        double = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def answer(self, status, obj, replayed=False):
                b = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(b)))
                self.send_header("Request-Id", "req_double_%d" % time.time_ns())
                if replayed:
                    self.send_header("Idempotent-Replayed", "true")
                self.end_headers()
                self.wfile.write(b)

            def drop(self):
                self.close_connection = True
                self.connection.shutdown(2)

            def account(self):
                # Leading and trailing blanks of a header value are not part of it (RFC 9110 5.5).
                return (self.headers.get("Stripe-Account") or "").strip() or "platform"

            def do_GET(self):
                acct = self.account()
                path = urllib.parse.urlsplit(self.path).path
                with double.lock:
                    double.requests.append(("GET", path, acct, None))
                    pid = path.rsplit("/", 1)[-1]
                    pi = double.pis.get(pid)
                    if not path.startswith("/v1/payment_intents/") or not pi or pi["account"] != acct:
                        return self.answer(404, {"error": {"type": "invalid_request_error",
                                                           "code": "resource_missing",
                                                           "message": "No such payment_intent: '%s'" % pid}})
                    return self.answer(200, dict(pi, object="payment_intent"))

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n).decode()
                acct = self.account()
                key = self.headers.get("Idempotency-Key")
                form = dict(urllib.parse.parse_qsl(raw, keep_blank_values=True))
                with double.lock:
                    double.requests.append(("POST", self.path, acct, key))
                    if key and (acct, key) in double.keys:
                        st, body = double.keys[(acct, key)]
                        return self.answer(st, body, replayed=True)
                    what = double.plan.pop(0) if double.plan else "succeed"
                if what.startswith("slow_"):  # in flight for a while, then as the rest says
                    time.sleep(double.slow_s)
                    what = what[len("slow_"):]
                with double.lock:
                    if what == "drop":
                        return self.drop()
                    double.n += 1
                    pi = {"id": "pi_%s_%d" % (acct.replace("acct_", ""), double.n), "account": acct,
                          "metadata": metadata_of(form), "amount": int(form.get("amount", "0") or 0),
                          "status": "succeeded" if what != "decline" else "requires_payment_method",
                          "idempotency_key": key}
                    double.pis[pi["id"]] = pi
                    if what == "decline":
                        st, body = 402, {"error": {"type": "card_error", "code": "card_declined",
                                                   "payment_intent": dict(pi, object="payment_intent")}}
                    else:
                        double.charges.append((acct, pi["metadata"].get("order_id"), pi["id"]))
                        st, body = 200, dict(pi, object="payment_intent")
                    if key:
                        double.keys[(acct, key)] = (st, body)
                    if what == "charge_then_drop":
                        return self.drop()
                    return self.answer(st, body)

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def make_elsewhere(self, account, order, status="succeeded", key=None):
        """A PaymentIntent made outside payretry (a dashboard, another system, an
        earlier attempt whose row is gone) in `account`, naming `order`."""
        with self.lock:
            self.n += 1
            pi = {"id": "pi_%s_%d" % (account.replace("acct_", ""), self.n), "account": account,
                  "metadata": {"order_id": order}, "amount": 1000, "status": status, "idempotency_key": key}
            self.pis[pi["id"]] = pi
            if status == "succeeded":
                self.charges.append((account, order, pi["id"]))
            return pi

    def pis_of(self, order, account=None):
        with self.lock:
            return [p for p in self.pis.values() if p["metadata"].get("order_id") == order and
                    (account is None or p["account"] == account)]

    def charged(self, order, account=None):
        with self.lock:
            return [c for c in self.charges if c[1] == order and (account is None or c[0] == account)]

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()
