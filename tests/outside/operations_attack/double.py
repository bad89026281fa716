"""Our own provider double for the operations attack (not payretry-sim).

Two houses, one server:
  * stripe: POST /v1/payment_intents (form body), POST /v1/refunds
    (payment_intent, amount), GET /v1/payment_intents/{id}, GET /v1/refunds/{id}.
    Every answer is stored under its Idempotency-Key and replayed for the same
    key (errors included, as Stripe says of its keys); the same key with other
    parameters is a 400 idempotency_error; a key whose first request is still
    running is a 409.
  * checkout_com: POST /payments, POST /payments/{id}/refunds with
    Cko-Idempotency-Key. Only 2xx answers are kept: a same-key request after a
    5xx (or a lost answer that was never stored) refunds AGAIN.

The truth the scenarios judge by: `moves` (refunds executed, per key and per
payment) and the refunded sum of each payment. Faults are queued per path
prefix (`d.fault("/v1/refunds", "act_reset", ...)`), one used per request:
  act_reset    act, then reset the connection (no answer)
  act_500      act, store the real answer under the key, answer 500
  act_500_kept act, store the 500 itself as the key's answer (Stripe keeps 5xx)
  act_hang     act, store the answer, hold it for `hang_s`, then answer
  hang_act     hold for `hang_s` first, then act (a client killed meanwhile)
  reset_before reset without acting
  503_before   503 without acting, nothing stored
  400_refuse   400 amount_too_large without acting or looking at the key
  none         no fault
"""
import itertools
import json
import re
import socket
import struct
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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


class Double:
    def __init__(self, house="stripe", hang_s=2.0):
        self.house = house
        self.hang_s = hang_s
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.payments = {}      # id -> {"amount", "refunded", "status", "order"}
        self.refunds = {}       # id -> refund object
        self.idem = {}          # key -> (status, body bytes, params)
        self.inflight = set()   # keys whose first request is still running
        self.faults = {}        # path prefix -> [fault, ...]
        self.moves_by_key = {}  # refund key -> refunds executed under it
        self.sent = {}          # refund key -> amount the first request under it asked
        self.sent_pid = {}      # refund key -> the payment it named
        self.requests = []      # (method, path, key)
        self.refund_status = "succeeded"  # stripe: the word a new refund answers
        self.async_decline = False  # checkout_com: 202, then the refund is declined
        self.declined = []
        self.create_status = {}  # order -> "succeeded" | "decline" | "requires_capture"
        srv = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def send(self, status, body, extra=()):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in extra:
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def reset(self):
                # RST, not FIN: SO_LINGER 0 then close.
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
                key = self.headers.get("Idempotency-Key") or self.headers.get("Cko-Idempotency-Key") or ""
                srv.requests.append(("POST", self.path, key))
                try:
                    srv.post(self, raw, key)
                except Reset:
                    self.reset()

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a client that reset its connection: expected here

        self.httpd = Server(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    # ---- switches and truth ---------------------------------------------
    def fault(self, prefix, *faults):
        self.faults.setdefault(prefix, []).extend(faults)

    def next_fault(self, path):
        with self.lock:
            for prefix, q in self.faults.items():
                if re.match(prefix, path) and q:
                    return q.pop(0)
        return "none"

    def fail_refunds_of(self, key):
        """The refunds made under `key` failed at the provider (their money
        came back to the merchant): nothing moved in the end, and what was
        asked under the key no longer counts as asked."""
        with self.lock:
            for rid in [r for r, x in self.refunds.items() if x["_key"] == key]:
                x = self.refunds.pop(rid)
                self.payments[x["payment_intent"]]["refunded"] -= x["amount"]
                self.moves_by_key[key] -= 1
            self.sent.pop(key, None)

    def refund_posts(self):
        return sum(1 for m, p, _ in self.requests if m == "POST" and "refunds" in p)

    def moves(self, pid=None):
        rs = [r for r in self.refunds.values() if pid is None or r["payment_intent"] == pid]
        return len(rs), sum(r["amount"] for r in rs)

    def truth(self, pid):
        p = self.payments[pid]
        n, s = self.moves(pid)
        return {"payment": pid, "amount": p["amount"], "refunds_executed": n, "refunded_sum": s,
                "per_key": {k: v for k, v in self.moves_by_key.items() if v and k in self.keys_of(pid)}}

    def keys_of(self, pid):
        return {r["_key"] for r in self.refunds.values() if r["payment_intent"] == pid}

    # ---- requests --------------------------------------------------------
    def post(self, h, raw, key):
        path = h.path.split("?")[0]
        fault = self.next_fault(path)
        if fault == "reset_before":
            raise Reset()
        if fault == "503_before":
            return h.send(503, {"error": {"type": "api_error", "message": "try later"}})
        if fault == "400_refuse":
            # A refusal answered without looking at the key's stored answer
            # (nothing acted, nothing stored): what a retry may meet when the
            # provider's key store lost or never kept the first answer.
            return h.send(400, {"error": {"type": "invalid_request_error", "code": "amount_too_large",
                                          "message": "Refund amount is greater than the unrefunded amount"}})
        params = raw
        with self.lock:
            if key and key in self.idem:
                status, data, was = self.idem[key]
                if was != params and self.house == "stripe":
                    return h.send(400, {"error": {"type": "idempotency_error",
                                                  "message": "Keys for idempotent requests can only be used with the same parameters"}})
                return h.send(status, data, [("Idempotent-Replayed", "true")])
            if key and key in self.inflight:
                if self.house == "stripe":
                    return h.send(409, {"error": {"type": "idempotency_error",
                                                  "message": "another request with this key is in progress"}})
            if key:
                self.inflight.add(key)
        try:
            if fault == "hang_act":
                time.sleep(self.hang_s)
            status, body = self.act(path, raw, key)
            data = json.dumps(body).encode()
            with self.lock:
                keep = key and (self.house == "stripe" or 200 <= status < 300)
                if fault == "act_500_kept" and key:
                    self.idem[key] = (500, json.dumps({"error": {"type": "api_error"}}).encode(), params)
                elif keep:
                    self.idem[key] = (status, data, params)
        finally:
            with self.lock:
                self.inflight.discard(key)
        if fault == "act_reset":
            raise Reset()
        if fault in ("act_500", "act_500_kept"):
            return h.send(500, {"error": {"type": "api_error", "message": "internal"}})
        if fault == "act_hang":
            time.sleep(self.hang_s)
        h.send(status, data)

    def act(self, path, raw, key):
        if self.house == "stripe":
            f = form_decode(raw) if not raw.startswith("{") else json.loads(raw)
            if path == "/v1/payment_intents":
                return self.create(f.get("metadata", {}).get("order_id", ""), int(f.get("amount", 0)),
                                   f.get("capture_method"))
            if path == "/v1/refunds":
                return self.refund(f.get("payment_intent", ""), f.get("amount"), key)
            m = re.match(r"^/v1/payment_intents/([^/]+)/capture$", path)
            if m:
                return self.capture(m.group(1), f.get("amount_to_capture"), key)
            m = re.match(r"^/v1/payment_intents/([^/]+)/cancel$", path)
            if m:
                return self.cancel(m.group(1), key)
        else:
            j = json.loads(raw or "{}")
            if path == "/payments":
                return self.create(j.get("reference", ""), int(j.get("amount", 0)), None)
            m = re.match(r"^/payments/([^/]+)/refunds$", path)
            if m:
                return self.refund(m.group(1), j.get("amount"), key)
        return 404, {"error": "no such path " + path}

    def create(self, order, amount, capture_method):
        mode = self.create_status.get(order, "succeeded")
        with self.lock:
            if self.house == "stripe":
                pid = f"pi_{next(self.ids):06d}"
                status = "requires_capture" if capture_method == "manual" else "succeeded"
                if mode == "decline":
                    status = "requires_payment_method"
                self.payments[pid] = {"amount": amount, "refunded": 0, "status": status, "order": order,
                                      "captured": 0 if status == "requires_capture" else amount}
                obj = {"id": pid, "object": "payment_intent", "status": status, "amount": amount,
                       "metadata": {"order_id": order}}
                if mode == "decline":
                    return 402, {"error": {"type": "card_error", "code": "card_declined", "payment_intent": obj}}
                return 200, obj
            pid = f"pay_{next(self.ids):026d}"
            status = "Declined" if mode == "decline" else "Captured"
            self.payments[pid] = {"amount": amount, "refunded": 0, "status": status, "order": order,
                                  "captured": amount if status == "Captured" else 0}
            return 201, {"id": pid, "status": status, "reference": order, "approved": status == "Captured",
                         "amount": amount}

    def refund(self, pid, amount, key):
        with self.lock:
            p = self.payments.get(pid)
            if not p:
                return 404, {"error": {"type": "invalid_request_error", "code": "resource_missing"}}
            left = p["captured"] - p["refunded"]
            amt = left if amount in (None, "") else int(float(amount))
            # What the library asked for under this key (the ledger guard's
            # business: distinct keys asking more than was captured).
            self.sent.setdefault(key, amt)
            self.sent_pid.setdefault(key, pid)
            if p["status"] not in ("succeeded", "Captured") or amt <= 0 or amt > left:
                if self.house == "stripe":
                    return 400, {"error": {"type": "invalid_request_error", "code": "amount_too_large" if amt > left
                                           else "charge_not_refundable", "message": f"{amt} > {left} left"}}
                return 422, {"request_id": "r", "error_type": "request_invalid",
                             "error_codes": ["refund_amount_exceeds_balance"]}
            if self.async_decline:
                # Checkout.com accepts a card refund with 202 and decides it
                # later; this one is declined then (payment_refund_declined):
                # no money moves.
                rid = f"act_{next(self.ids):026d}"
                self.declined.append(rid)
                return 202, {"action_id": rid, "reference": "", "_links": {}}
            p["refunded"] += amt
            rid = (f"re_{next(self.ids):06d}" if self.house == "stripe" else f"act_{next(self.ids):026d}")
            self.refunds[rid] = {"id": rid, "object": "refund", "status": self.refund_status, "amount": amt,
                                 "payment_intent": pid, "_key": key}
            self.moves_by_key[key] = self.moves_by_key.get(key, 0) + 1
            if self.house == "stripe":
                return 200, {k: v for k, v in self.refunds[rid].items() if k != "_key"}
            return 202, {"action_id": rid, "reference": "", "_links": {}}

    def capture(self, pid, amount, key=""):
        with self.lock:
            p = self.payments[pid]
            if p["status"] != "requires_capture":
                return 400, {"error": {"type": "invalid_request_error", "code": "payment_intent_unexpected_state"}}
            p["captured"] = int(amount) if amount else p["amount"]
            p["status"] = "succeeded"
            self.moves_by_key["capture:" + pid] = self.moves_by_key.get("capture:" + pid, 0) + 1
            self.moves_by_key[key] = self.moves_by_key.get(key, 0) + 1
            return 200, {"id": pid, "object": "payment_intent", "status": "succeeded", "amount": p["amount"]}

    def cancel(self, pid, key=""):
        with self.lock:
            p = self.payments[pid]
            if p["status"] not in ("requires_capture", "requires_payment_method"):
                return 400, {"error": {"type": "invalid_request_error", "code": "payment_intent_unexpected_state"}}
            p["status"] = "canceled"
            self.moves_by_key[key] = self.moves_by_key.get(key, 0) + 1
            return 200, {"id": pid, "object": "payment_intent", "status": "canceled", "amount": p["amount"]}

    def get(self, h):
        path = h.path.split("?")[0]
        m = re.match(r"^/v1/payment_intents/([^/]+)$", path)
        if m and m.group(1) in self.payments:
            p = self.payments[m.group(1)]
            return h.send(200, {"id": m.group(1), "object": "payment_intent", "status": p["status"],
                                "amount": p["amount"], "metadata": {"order_id": p["order"]}})
        m = re.match(r"^/v1/refunds/([^/]+)$", path)
        if m and m.group(1) in self.refunds:
            return h.send(200, {k: v for k, v in self.refunds[m.group(1)].items() if k != "_key"})
        m = re.match(r"^/payments/([^/]+)$", path)
        if m and m.group(1) in self.payments:
            p = self.payments[m.group(1)]
            return h.send(200, {"id": m.group(1), "status": p["status"], "amount": p["amount"], "reference": p["order"]})
        if path == "/payments":
            ref = urllib.parse.parse_qs(urllib.parse.urlparse(h.path).query).get("reference", [""])[0]
            data = [{"id": i, "status": p["status"], "reference": p["order"], "amount": p["amount"]}
                    for i, p in self.payments.items() if p["order"] == ref]
            return h.send(200, {"limit": 10, "skip": 0, "total_count": len(data), "data": data})
        h.send(404, {"error": {"type": "invalid_request_error", "code": "resource_missing"}})
