"""Our own provider double for the operation-webhooks attack (not payretry-sim,
not ../operations_attack/double.py): one HTTP server playing Adyen,
Checkout.com or Stripe, counting money per operation on its own side, and
building the notifications that provider would send, signed with the secret
the client is configured with (authentic, whatever they say).

Houses (what payretry's built-in profiles send, src/profiles/builtin/*.json):
  stripe        POST /v1/payment_intents (form; capture_method=manual holds),
                POST /v1/refunds (payment_intent, amount) -> a Refund whose
                status is `op_mode` ("succeeded" or "pending"),
                POST /v1/payment_intents/{id}/capture|cancel,
                GET /v1/refunds/{id}, GET /v1/payment_intents/{id}.
                Answers are kept per Idempotency-Key and replayed.
  adyen         POST /v72/payments -> Authorised; POST /v72/payments/{psp}/
                captures|refunds|cancels -> 201 status "received" and the
                modification's own pspReference. Nothing is decided until
                decide(); the outcome exists only as a notification.
                Answers are kept per idempotency-key and replayed.
  checkout_com  POST /payments -> Captured (or Authorized with
                capture_mode), POST /payments/{id}/refunds|captures|voids ->
                202 {action_id}; decided later; GET /payments/{id}/actions
                lists the processed ones (approved true/false). Only 2xx
                answers are kept per Cko-Idempotency-Key.

Truth: `ops` (every capture, refund and cancel the provider made, with the key
it was made under, None for the dashboard's, and its state "pending",
"succeeded" or "failed"), and per payment what was captured and refunded.

Faults, one per request, queued per path regex: act_reset (acts, then resets
the connection), reset_before (resets without acting), act_hold (acts, runs
`during(op)` while holding the answer, then answers: an event delivered while
the operation is in flight), act_hold_reset (the same, then resets instead of
answering). `next_ids` forces the ids the next operations
get (collisions across payments, or with another operation).
"""
import base64
import hashlib
import hmac
import itertools
import json
import re
import socket
import struct
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRETS = {"stripe": "whsec_opwebhooks_0123456789abcdef",
           "checkout_com": "cko_signature_key_opwebhooks_0123",
           "adyen": "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"}


def form_decode(raw):
    out = {}
    for k, v in urllib.parse.parse_qsl(raw, keep_blank_values=True):
        parts = re.findall(r"[^\[\]]+", k)
        d = out
        for p in parts[:-1]:
            d = d.setdefault(p, {})
        d[parts[-1]] = v
    return out


class Reset(Exception):
    pass


KIND_WORDS = {  # kind -> (adyen eventCode, cko success type, cko failure type)
    "capture": ("CAPTURE", "payment_captured", "payment_capture_declined"),
    "refund": ("REFUND", "payment_refunded", "payment_refund_declined"),
    "cancel": ("CANCELLATION", "payment_voided", "payment_void_declined"),
}


class Provider:
    def __init__(self, house, merchant="OpAttackECOM", account=None, id_start=1, hang_s=1.0, secret=None):
        self.house = house
        self.merchant = merchant       # adyen merchantAccountCode
        self.account = account         # stripe connected account (events name it)
        self.secret = secret or SECRETS[house]
        self.hang_s = hang_s
        self.lock = threading.Lock()
        self.ids = itertools.count(id_start)
        self.evt_ids = itertools.count(1)
        self.payments = {}   # pid -> {amount, captured, refunded, status, order}
        self.ops = []        # [{id, kind, pid, amount, key, state, created}]
        self.idem = {}       # key -> (status, bytes, params)
        self.faults = {}     # path regex -> [fault, ...]
        self.op_mode = "pending"  # stripe: the status a new refund answers ("succeeded" moves at once)
        self.next_ids = []
        self.during = None   # callable(op) run while an act_hold answer is held
        self.requests = []   # (method, path, key)
        self.asked = {}      # key -> (kind, pid, amount first asked)
        srv = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def send(self, status, body):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def reset(self):
                try:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                except OSError:
                    pass
                self.close_connection = True

            def do_GET(self):
                srv.requests.append(("GET", self.path, ""))
                srv.get(self)

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n).decode()
                key = (self.headers.get("Idempotency-Key") or self.headers.get("idempotency-key")
                       or self.headers.get("Cko-Idempotency-Key") or "")
                srv.requests.append(("POST", self.path, key))
                try:
                    srv.post(self, raw, key)
                except Reset:
                    self.reset()

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass

        self.httpd = Server(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    # ---- truth ------------------------------------------------------------
    def fault(self, regex, *faults):
        self.faults.setdefault(regex, []).extend(faults)

    def _next_fault(self, path):
        with self.lock:
            for rx, q in self.faults.items():
                if re.match(rx, path) and q:
                    return q.pop(0)
        return "none"

    def pid_of(self, order):
        return [i for i, p in self.payments.items() if p["order"] == order][0]

    def op(self, oid, pid=None):
        for o in self.ops:
            if o["id"] == oid and (pid is None or o["pid"] == pid):
                return o
        return None

    def ops_of_key(self, key):
        return [o for o in self.ops if key and o["key"] == key]

    def op_posts(self):
        return sum(1 for m, p, _ in self.requests if m == "POST" and re.search(r"/(refunds|captures?|cancels?|voids)$", p))

    def _new_id(self, prefix, width):
        return self.next_ids.pop(0) if self.next_ids else f"{prefix}{next(self.ids):0{width}d}"

    def decide(self, op, state):
        """The provider settles an operation: its money moves (succeeded) or
        does not (failed). A succeeded refund that fails later gives the money
        back (Stripe's succeeded -> failed)."""
        with self.lock:
            was = op["state"]
            op["state"] = state
            p = self.payments[op["pid"]]
            sign_ = (1 if state == "succeeded" else 0) - (1 if was == "succeeded" else 0)
            if op["kind"] == "refund":
                p["refunded"] += sign_ * op["amount"]
            elif op["kind"] == "capture":
                p["captured"] += sign_ * op["amount"]
            elif op["kind"] == "cancel" and state == "succeeded":
                p["status"] = "canceled"
            self._status(p)

    def _status(self, p):
        if self.house == "checkout_com":
            if p["status"] in ("Voided", "canceled"):
                p["status"] = "Voided"
                return
            p["status"] = ("Refunded" if p["captured"] and p["refunded"] >= p["captured"] else
                           "Partially Refunded" if p["refunded"] else
                           "Captured" if p["captured"] >= p["amount"] else
                           "Partially Captured" if p["captured"] else "Authorized")
        elif self.house == "stripe" and p["captured"] and p["status"] == "requires_capture":
            p["status"] = "succeeded"

    def dashboard(self, pid, kind, amount, state="succeeded", key=None):
        """An operation made outside payretry (the provider's dashboard)."""
        with self.lock:
            o = {"id": self._new_id(*self._id_form(kind)), "kind": kind, "pid": pid, "amount": amount,
                 "key": key, "state": "pending", "created": int(time.time())}
            self.ops.append(o)
        if state != "pending":
            self.decide(o, state)
        return o

    def _id_form(self, kind):
        if self.house == "stripe":
            return ("re_", 8) if kind == "refund" else ("pi_", 8)
        if self.house == "adyen":
            return ("88" if kind == "refund" else "77" if kind == "capture" else "66", 14)
        return ("act_", 26)

    # ---- requests ---------------------------------------------------------
    def post(self, h, raw, key):
        path = h.path.split("?")[0]
        fault = self._next_fault(path)
        if fault == "reset_before":
            raise Reset()
        with self.lock:
            if key and key in self.idem:
                status, data, was = self.idem[key]
                if was != raw and self.house == "stripe":
                    return h.send(400, {"error": {"type": "idempotency_error"}})
                return h.send(status, data)
        status, body, op = self.act(path, raw, key)
        data = json.dumps(body).encode()
        with self.lock:
            if key and (self.house != "checkout_com" or 200 <= status < 300):
                self.idem[key] = (status, data, raw)
        if fault in ("act_hold", "act_hold_reset"):
            if self.during and op:
                self.during(op)
            else:
                time.sleep(self.hang_s)
        if fault in ("act_reset", "act_hold_reset"):
            raise Reset()
        h.send(status, data)

    def act(self, path, raw, key):
        if self.house == "stripe":
            f = form_decode(raw)
            if path == "/v1/payment_intents":
                return self.create(f.get("metadata", {}).get("order_id", ""), int(f.get("amount", 0)),
                                   f.get("capture_method") == "manual")
            if path == "/v1/refunds":
                return self.operation("refund", f.get("payment_intent", ""), f.get("amount"), key)
            m = re.match(r"^/v1/payment_intents/([^/]+)/(capture|cancel)$", path)
            if m:
                return self.operation(m.group(2), m.group(1), f.get("amount_to_capture"), key)
        elif self.house == "adyen":
            j = json.loads(raw or "{}")
            if path == "/v72/payments":
                return self.create(j.get("reference", ""), int(j["amount"]["value"]), True)
            m = re.match(r"^/v72/payments/([^/]+)/(captures|refunds|cancels)$", path)
            if m:
                kind = {"captures": "capture", "refunds": "refund", "cancels": "cancel"}[m.group(2)]
                return self.operation(kind, m.group(1), (j.get("amount") or {}).get("value"), key)
        else:
            j = json.loads(raw or "{}")
            if path == "/payments":
                return self.create(j.get("reference", ""), int(j.get("amount", 0)), j.get("capture") is False)
            m = re.match(r"^/payments/([^/]+)/(captures|refunds|voids)$", path)
            if m:
                kind = {"captures": "capture", "refunds": "refund", "voids": "cancel"}[m.group(2)]
                return self.operation(kind, m.group(1), j.get("amount"), key)
        return 404, {"error": "no such path " + path}, None

    def create(self, order, amount, hold):
        with self.lock:
            if self.house == "stripe":
                pid = f"pi_{next(self.ids):08d}"
                status = "requires_capture" if hold else "succeeded"
                self.payments[pid] = {"amount": amount, "captured": 0 if hold else amount, "refunded": 0,
                                      "status": status, "order": order}
                return 200, {"id": pid, "object": "payment_intent", "status": status, "amount": amount,
                             "metadata": {"order_id": order}}, None
            if self.house == "adyen":
                pid = f"99{next(self.ids):014d}"
                self.payments[pid] = {"amount": amount, "captured": 0, "refunded": 0, "status": "Authorised",
                                      "order": order}
                return 200, {"pspReference": pid, "resultCode": "Authorised", "merchantReference": order,
                             "amount": {"value": amount, "currency": "EUR"}}, None
            pid = f"pay_{next(self.ids):026d}"
            p = {"amount": amount, "captured": 0 if hold else amount, "refunded": 0,
                 "status": "Authorized" if hold else "Captured", "order": order}
            self.payments[pid] = p
            return 201, {"id": pid, "status": p["status"], "reference": order, "approved": True,
                         "amount": amount}, None

    def operation(self, kind, pid, amount, key):
        with self.lock:
            p = self.payments.get(pid)
            if not p:
                return 404, {"error": {"type": "invalid_request_error", "code": "resource_missing"}}, None
            pending = sum(o["amount"] for o in self.ops if o["pid"] == pid and o["kind"] == kind
                          and o["state"] == "pending")
            if kind == "refund":
                left = p["captured"] - p["refunded"] - pending
            elif kind == "capture":
                left = p["amount"] - p["captured"] - pending
            else:
                left = 0
            amt = left if amount in (None, "") else int(float(amount))
            if key:
                self.asked.setdefault(key, (kind, pid, amt))
            refused = kind != "cancel" and (amt <= 0 or amt > left)
            if refused and self.house == "stripe":
                return 400, {"error": {"type": "invalid_request_error", "code": "amount_too_large",
                                       "message": f"{amt} > {left}"}}, None
            if refused and self.house == "checkout_com":
                return 422, {"error_type": "request_invalid", "error_codes": ["refund_amount_exceeds_balance"]}, None
            o = {"id": self._new_id(*self._id_form(kind)), "kind": kind, "pid": pid, "amount": amt, "key": key,
                 "state": "pending", "created": int(time.time()), "refused": refused}
            if self.house == "stripe" and kind != "refund":
                o["id"] = pid  # a capture or cancel answers the PaymentIntent itself
            self.ops.append(o)
        if self.house == "stripe":
            if kind != "refund":
                self.decide(o, "succeeded")
                pi = self.payments[pid]
                return 200, {"id": pid, "object": "payment_intent", "status": pi["status"],
                             "amount": pi["amount"], "amount_received": pi["captured"],
                             "metadata": {"order_id": pi["order"]}}, o
            if self.op_mode == "succeeded":
                self.decide(o, "succeeded")
            return 200, self.stripe_refund(o), o
        if refused:
            self.decide(o, "failed")  # adyen: received, then REFUND false
        if self.house == "adyen":
            return 201, {"merchantAccount": self.merchant, "paymentPspReference": pid, "pspReference": o["id"],
                         "status": "received", "amount": {"value": amt, "currency": "EUR"}}, o
        return 202, {"action_id": o["id"], "reference": "", "_links": {}}, o

    def stripe_refund(self, o, status=None):
        return {"id": o["id"], "object": "refund", "amount": o["amount"], "currency": "eur",
                "payment_intent": o["pid"], "created": o["created"],
                "status": status or o["state"], "metadata": {}}

    def get(self, h):
        path = h.path.split("?")[0]
        m = re.match(r"^/v1/refunds/([^/]+)$", path)
        if m:
            o = self.op(urllib.parse.unquote(m.group(1)))
            if o and o["kind"] == "refund":
                return h.send(200, self.stripe_refund(o))
        m = re.match(r"^/v1/payment_intents/([^/]+)$", path)
        if m and m.group(1) in self.payments:
            p = self.payments[m.group(1)]
            return h.send(200, {"id": m.group(1), "object": "payment_intent", "status": p["status"],
                                "amount": p["amount"], "amount_received": p["captured"],
                                "metadata": {"order_id": p["order"]}})
        m = re.match(r"^/payments/([^/]+)/actions$", path)
        if m and m.group(1) in self.payments:
            items = [{"id": o["id"], "type": o["kind"].title() if o["kind"] != "cancel" else "Void",
                      "amount": o["amount"], "approved": o["state"] == "succeeded",
                      "response_code": "10000" if o["state"] == "succeeded" else "20005",
                      "processed_on": "2026-12-07T00:00:00Z"}
                     for o in reversed(self.ops) if o["pid"] == m.group(1) and o["state"] != "pending"]
            return h.send(200, items)
        m = re.match(r"^/payments/([^/]+)$", path)
        if m and m.group(1) in self.payments:
            p = self.payments[m.group(1)]
            return h.send(200, {"id": m.group(1), "status": p["status"], "amount": p["amount"],
                                "reference": p["order"]})
        h.send(404, {"error": {"type": "invalid_request_error", "code": "resource_missing"}})

    # ---- notifications ----------------------------------------------------
    def notify(self, o, success=None, etype=None, key="own", payment=None, op_id=None, merchant=None,
               account="own", evt_id=None, status=None, order=None):
        """(body bytes, headers): the provider's notification about operation
        `o`, signed with self.secret. success: what it reports (default: the
        op's state). Overrides make it adversarial while staying authentic:
        `payment` / `op_id` / `order` name other ids, `key` another
        idempotency key (stripe), `merchant` another merchant account
        (adyen), `account` another connected account (stripe)."""
        if success is None:
            success = o["state"] == "succeeded"
        pid = payment or o["pid"]
        oid = op_id or o["id"]
        p = self.payments.get(o["pid"], {})
        ref = order if order is not None else p.get("order", "")
        if self.house == "stripe":
            if etype is None:
                etype = "refund.updated" if success else "refund.failed"
            st = status or ("succeeded" if success else "failed")
            obj = self.stripe_refund(dict(o, id=oid, pid=pid), st)
            e = {"id": evt_id or f"evt_{int(time.time())}_{next(self.evt_ids):06d}", "object": "event",
                 "api_version": "2024-06-20", "created": int(time.time()), "type": etype, "livemode": False,
                 "data": {"object": obj}, "pending_webhooks": 1,
                 "request": {"id": None, "idempotency_key": o["key"] if key == "own" else key}}
            acct = self.account if account == "own" else account
            if acct:
                e["account"] = acct
            body = json.dumps(e).encode()
            t = int(time.time())
            mac = hmac.new(self.secret.encode(), str(t).encode() + b"." + body, hashlib.sha256).hexdigest()
            return body, [("Stripe-Signature", f"t={t},v1={mac}")]
        if self.house == "adyen":
            return self.adyen_batch([self.adyen_item(o, success, pid, oid, merchant, ref)])
        word = KIND_WORDS[o["kind"]][1 if success else 2]
        e = {"id": evt_id or f"evt_{next(self.evt_ids):026d}", "type": etype or word, "version": "1.0.0",
             "created_on": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
             "data": {"id": pid, "action_id": oid, "amount": o["amount"], "currency": "EUR",
                      "approved": bool(success), "response_code": "10000" if success else "20051",
                      "processed_on": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "reference": ref,
                      "metadata": {}},
             "_links": {"payment": {"href": f"https://api.sandbox.checkout.com/payments/{pid}"}}}
        body = json.dumps(e).encode()
        return body, [("Cko-Signature", hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest())]

    def adyen_item(self, o, success, pid=None, oid=None, merchant=None, ref=None, code=None):
        code = code or KIND_WORDS[o["kind"]][0]
        pid = pid or o["pid"]
        oid = oid or o["id"]
        merchant = merchant or self.merchant
        ref = ref if ref is not None else self.payments.get(o["pid"], {}).get("order", "")
        succ = "true" if success else "false"
        value = str(o["amount"])
        signed = ":".join([oid, pid, merchant, ref, value, "EUR", code, succ])
        sig = base64.b64encode(hmac.new(bytes.fromhex(self.secret), signed.encode(), hashlib.sha256).digest()).decode()
        return {"NotificationRequestItem": {
            "additionalData": {"hmacSignature": sig}, "amount": {"currency": "EUR", "value": o["amount"]},
            "eventCode": code, "eventDate": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
            "merchantAccountCode": merchant, "merchantReference": ref, "originalReference": pid,
            "paymentMethod": "visa", "pspReference": oid, "reason": "" if success else "Refused",
            "success": succ}}

    def stripe_pi_event(self, pid, etype="payment_intent.succeeded", key=None, account="own"):
        """A PaymentIntent's own event (the payment's webhook, not an operation's)."""
        p = self.payments[pid]
        e = {"id": f"evt_pi_{int(time.time())}_{next(self.evt_ids):06d}", "object": "event",
             "api_version": "2024-06-20", "created": int(time.time()), "type": etype, "livemode": False,
             "data": {"object": {"id": pid, "object": "payment_intent", "amount": p["amount"],
                                 "amount_received": p["captured"], "created": int(time.time()) - 5,
                                 "status": p["status"], "metadata": {"order_id": p["order"]}}},
             "pending_webhooks": 1, "request": {"id": None, "idempotency_key": key}}
        acct = self.account if account == "own" else account
        if acct:
            e["account"] = acct
        body = json.dumps(e).encode()
        t = int(time.time())
        mac = hmac.new(self.secret.encode(), str(t).encode() + b"." + body, hashlib.sha256).hexdigest()
        return body, [("Stripe-Signature", f"t={t},v1={mac}")]

    def adyen_batch(self, items):
        body = json.dumps({"live": "false", "notificationItems": items}).encode()
        return body, []
