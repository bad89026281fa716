"""A minimal provider double of our own (not payretry-sim): Stripe and Mollie
as their docs describe them, counting charges on the provider's side.

- Stripe: POST /v1/payment_intents (form body, bracket keys, last value wins
  like Rack), Idempotency-Key replays the first answer; amount 402 -> card
  declined (402, PI left requires_payment_method, nothing charged); any
  other amount -> PI "succeeded", one charge counted.
  GET /v1/payment_intents/<id>.
- Mollie: POST /v2/payments (JSON, Python's json = PHP's json_decode: the
  LAST duplicate key wins), Idempotency-Key; status "open" (created), it
  becomes "paid" (charged) when the test says so. GET /v2/payments/<id>,
  404 {"title":"Not Found"} for an unknown id.

Faults, per order id (metadata order_id) or per path:
  lose[order]      = "after"  : process, then hang past the client's timeout (the next create naming that order only)
                     "before" : hang without processing (nothing charged)
  hang_lookups_s   : every GET sleeps this long first
"""
import hashlib
import hmac
import json
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STRIPE_WHSEC = "whsec_outside_attack_0123456789"


def stripe_sign(body: bytes, secret: str = STRIPE_WHSEC, t=None, extra=""):
    ts = int(time.time()) if t is None else t
    mac = hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={ts},v1={mac}{extra}"


def stripe_form(body: str):
    """Stripe-style bracket decoding: metadata[order_id]=x -> {"metadata": {"order_id": x}}; last wins."""
    out = {}
    for k, v in urllib.parse.parse_qsl(body, keep_blank_values=True):
        parts = re.findall(r"[^\[\]]+", k)
        d = out
        for p in parts[:-1]:
            d = d.setdefault(p, {}) if isinstance(d.get(p, {}), dict) else d
        d[parts[-1]] = v
    return out


class Provider:
    def __init__(self):
        self.lock = threading.Lock()
        self.charges = []          # (provider id, order id named in metadata)
        self.objects = {}          # id -> object (dict)
        self.idem = {}             # key -> (status, body)
        self.lose = {}             # order id -> "after" | "before"
        self.hang_lookups_s = 0.0
        self.lookups = 0
        self.creates = 0
        self.n = 0
        srv = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def answer(self, status, obj):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                with srv.lock:
                    srv.lookups += 1
                if srv.hang_lookups_s:
                    time.sleep(srv.hang_lookups_s)
                m = re.match(r"^/v1/payment_intents/([^/?]+)$", self.path) or re.match(r"^/v2/payments/([^/?]+)$", self.path)
                obj = srv.objects.get(urllib.parse.unquote(m.group(1))) if m else None
                if obj is None:
                    if self.path.startswith("/v2/"):
                        return self.answer(404, {"status": 404, "title": "Not Found", "detail": "No payment exists"})
                    return self.answer(404, {"error": {"type": "invalid_request_error", "code": "resource_missing"}})
                return self.answer(200, obj)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(n).decode()
                key = self.headers.get("Idempotency-Key", "")
                with srv.lock:
                    srv.creates += 1
                    if key and key in srv.idem:
                        st, body = srv.idem[key]
                        replay = True
                    else:
                        replay = False
                if not replay:
                    if self.path.startswith("/v1/payment_intents"):
                        f = stripe_form(raw)
                        order = f.get("metadata", {}).get("order_id", "")
                    else:
                        f = json.loads(raw)
                        order = (f.get("metadata") or {}).get("order_id", "") if isinstance(f.get("metadata"), dict) else ""
                    with srv.lock:
                        fault = srv.lose.pop(order, None)  # one create per fault
                    if fault == "before":
                        time.sleep(3)
                        self.close_connection = True
                        return
                    with srv.lock:
                        srv.n += 1
                        if self.path.startswith("/v1/payment_intents"):
                            pid = f"pi_{srv.n:06d}"
                            declined = f.get("amount") == "402"
                            obj = {"id": pid, "object": "payment_intent", "amount": int(f.get("amount", 0)),
                                   "status": "requires_payment_method" if declined else "succeeded",
                                   "metadata": f.get("metadata", {})}
                            if declined:
                                st, body = 402, {"error": {"type": "card_error", "code": "card_declined",
                                                           "payment_intent": obj}}
                            else:
                                st, body = 200, obj
                                srv.charges.append((pid, order))
                        else:
                            pid = f"tr_{srv.n:06d}x"
                            obj = {"resource": "payment", "id": pid, "status": "open", "amount": f.get("amount"),
                                   "metadata": f.get("metadata"), "createdAt": time.strftime("%Y-%m-%dT%H:%M:%S+00:00")}
                            st, body = 201, obj
                        srv.objects[pid] = obj
                        if key:
                            srv.idem[key] = (st, body)
                    if fault == "after":
                        time.sleep(3)
                        self.close_connection = True
                        return
                self.answer(st, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    # Provider-side actions (the "dashboard").
    def mollie_pay(self, pid):
        with self.lock:
            self.objects[pid]["status"] = "paid"
            self.charges.append((pid, (self.objects[pid].get("metadata") or {}).get("order_id")))

    def mollie_create_elsewhere(self, metadata, status="paid"):
        """A payment made at Mollie not through this client (dashboard, old code, another shop)."""
        with self.lock:
            self.n += 1
            pid = f"tr_{self.n:06d}x"
            self.objects[pid] = {"resource": "payment", "id": pid, "status": status, "metadata": metadata}
            if status == "paid":
                self.charges.append((pid, metadata.get("order_id") if isinstance(metadata, dict) else None))
            return pid

    def charged_for(self, order):
        return [c for c in self.charges if c[1] == order]

    def close(self):
        self.httpd.shutdown()
