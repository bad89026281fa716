"""Our own provider double for the operations attack (not payretry-sim).

Two houses, one server:
  * stripe: POST /v1/payment_intents (form body), POST /v1/refunds
    (payment_intent, amount), GET /v1/payment_intents/{id}, GET /v1/refunds/{id}.
    Every answer is stored under its Idempotency-Key and replayed for the same
    key (errors included, as Stripe says of its keys); the same key with other
    parameters is a 400 idempotency_error; a key whose first request is still
    running is a 409.
  * checkout_com: POST /payments, POST /payments/{id}/refunds|captures|voids
    with Cko-Idempotency-Key, each answered 202 {action_id}. Only 2xx answers
    are kept: a same-key request after a 5xx (or a lost answer that was never
    stored) refunds AGAIN. GET /payments/{id} (status, amount) and
    GET /payments/{id}/actions: the payment's processed actions, newest
    first, each {id, type, amount, approved, response_code, processed_on}.
    What happens to an accepted refund/capture is `cko_refund` /
    `cko_capture`: "approve" (done and listed approved true at once),
    "decline" (listed approved false, nothing moves), "pending" (neither moved
    nor listed until `decide(action_id, approved)`). Lies of the listing:
    `list_twice` (an action id listed twice), `actions_of` (pid -> the pid
    whose list is answered instead), `extra_actions` (pid -> items put in).
  * GET faults (`get_fault(prefix, ...)`, one per GET): get_500, get_503,
    get_reset, get_hang (held `hang_s`, then answered), get_404.

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
        self.create_status = {}  # order -> "succeeded" | "decline" | "authorize" (checkout_com)
        self.get_faults = {}     # path prefix -> [fault, ...] for GETs
        self.actions = {}        # checkout_com: pid -> [action, ...] oldest first (listed newest first)
        self.cko_refund = "approve"   # "approve" | "decline" | "pending"
        self.cko_capture = "approve"  # the same for captures and voids
        self.list_twice = set()       # action ids listed twice
        self.actions_of = {}          # pid -> another pid whose actions are answered instead
        self.extra_actions = {}       # pid -> extra items listed (forged or foreign)
        self.refund_pi = {}           # stripe: refund id -> the payment_intent its GET names instead
        self.list_pending = False     # checkout_com: list unprocessed actions too (approved null)
        self.odd_ids = []             # ids the next refunds / actions get instead of the usual ones
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
                f = srv.next_get_fault(self.path.split("?")[0])
                if f == "get_reset":
                    return self.reset()
                if f == "get_500":
                    return self.send(500, {"error": {"type": "api_error"}})
                if f == "get_503":
                    return self.send(503, {"error": {"type": "api_error"}})
                if f == "get_404":
                    return self.send(404, {"error": {"type": "invalid_request_error", "code": "resource_missing"}})
                if f == "get_hang":
                    time.sleep(srv.hang_s)
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

    def get_fault(self, prefix, *faults):
        self.get_faults.setdefault(prefix, []).extend(faults)

    def next_get_fault(self, path):
        with self.lock:
            for prefix, q in self.get_faults.items():
                if re.match(prefix, path) and q:
                    return q.pop(0)
        return "none"

    def posts(self):
        return sum(1 for m, _, _ in self.requests if m == "POST")

    def gets(self, sub=""):
        return sum(1 for m, p, _ in self.requests if m == "GET" and sub in p)

    def action(self, rid):
        for acts in self.actions.values():
            for a in acts:
                if a["id"] == rid:
                    return a
        return None

    def _execute(self, a):
        """An accepted checkout_com action takes effect (lock held)."""
        p = self.payments[a["_pid"]]
        if a["type"] == "Refund":
            p["refunded"] += a["amount"]
            self.refunds[a["id"]] = {"id": a["id"], "object": "refund", "status": "succeeded", "amount": a["amount"],
                                     "payment_intent": a["_pid"], "_key": a["_key"]}
            p["status"] = "Refunded" if p["refunded"] >= p["captured"] else "Partially Refunded"
        elif a["type"] == "Capture":
            p["captured"] += a["amount"]
            p["status"] = "Captured" if p["captured"] >= p["amount"] else "Partially Captured"
            self.moves_by_key["capture:" + a["_pid"]] = self.moves_by_key.get("capture:" + a["_pid"], 0) + 1
        elif a["type"] == "Void":
            p["status"] = "Voided"
        self.moves_by_key[a["_key"]] = self.moves_by_key.get(a["_key"], 0) + 1

    def decide(self, rid, approved):
        """checkout_com: a pending action is processed now (listed from now on)."""
        with self.lock:
            a = self.action(rid)
            assert a and a["_state"] == "pending", rid
            a["_state"] = "done"
            a["approved"] = approved
            a["response_code"] = "10000" if approved else "20005"
            a["processed_on"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            if approved:
                self._execute(a)
            else:
                self.sent.pop(a["_key"], None)  # declined: nothing of it counts as asked any more

    def _cko_action(self, pid, kind, amount, key, mode):
        """A checkout_com action accepted with 202 (lock held)."""
        rid = self.odd_ids.pop(0) if self.odd_ids else f"act_{next(self.ids):026d}"
        a = {"id": rid, "type": kind, "amount": amount, "approved": None, "response_code": None,
             "processed_on": None, "_key": key, "_pid": pid, "_state": "pending"}
        self.actions.setdefault(pid, []).append(a)
        if mode == "decline":
            self.declined.append(rid)
            self.sent.pop(key, None)  # declined: nothing of it counts as asked any more
        if mode in ("approve", "decline"):
            a["_state"] = "done"
            a["approved"] = mode == "approve"
            a["response_code"] = "10000" if mode == "approve" else "20005"
            a["processed_on"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            if mode == "approve":
                self._execute(a)
        return 202, {"action_id": rid, "reference": "", "_links": {}}

    def set_refund_status(self, rid, status):
        """stripe: a refund's status changes later; failed/canceled give the
        money back (nothing moved in the end)."""
        with self.lock:
            x = self.refunds[rid]
            x["status"] = status
        if status in ("failed", "canceled"):
            self.fail_refunds_of(x["_key"])
            with self.lock:
                self.refunds[rid] = x  # still answered by GET, with its status
                x["_gone"] = True

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
        rs = [r for r in self.refunds.values() if (pid is None or r["payment_intent"] == pid) and not r.get("_gone")]
        return len(rs), sum(r["amount"] for r in rs)

    def truth(self, pid):
        p = self.payments[pid]
        n, s = self.moves(pid)
        return {"payment": pid, "amount": p["amount"], "refunds_executed": n, "refunded_sum": s,
                "per_key": {k: v for k, v in self.moves_by_key.items() if v and k in self.keys_of(pid)}}

    def keys_of(self, pid):
        ks = {r["_key"] for r in self.refunds.values() if r["payment_intent"] == pid}
        return ks | {a["_key"] for a in self.actions.get(pid, [])}

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
            m = re.match(r"^/payments/([^/]+)/captures$", path)
            if m:
                return self.cko_capture_or_void(m.group(1), "Capture", j.get("amount"), key)
            m = re.match(r"^/payments/([^/]+)/voids$", path)
            if m:
                return self.cko_capture_or_void(m.group(1), "Void", None, key)
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
            status = "Declined" if mode == "decline" else "Authorized" if mode == "authorize" else "Captured"
            self.payments[pid] = {"amount": amount, "refunded": 0, "status": status, "order": order,
                                  "captured": amount if status == "Captured" else 0}
            self.actions[pid] = [{"id": f"act_{next(self.ids):026d}", "type": "Authorization", "amount": amount,
                                  "approved": status != "Declined", "response_code": "10000", "processed_on": "t0",
                                  "_key": "create-" + order, "_pid": pid, "_state": "done"}]
            if status == "Captured":
                self.actions[pid].append(dict(self.actions[pid][0], id=f"act_{next(self.ids):026d}", type="Capture"))
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
            if p["status"] not in ("succeeded", "Captured", "Partially Captured", "Partially Refunded") \
                    or amt <= 0 or amt > left:
                if self.house == "stripe":
                    return 400, {"error": {"type": "invalid_request_error", "code": "amount_too_large" if amt > left
                                           else "charge_not_refundable", "message": f"{amt} > {left} left"}}
                return 422, {"request_id": "r", "error_type": "request_invalid",
                             "error_codes": ["refund_amount_exceeds_balance"]}
            if self.house != "stripe":
                # Checkout.com accepts a card refund with 202 and processes
                # it later: `cko_refund` says how (async_decline: declined,
                # payment_refund_declined, nothing moves).
                mode = "decline" if self.async_decline else self.cko_refund
                return self._cko_action(pid, "Refund", amt, key, mode)
            p["refunded"] += amt
            rid = self.odd_ids.pop(0) if self.odd_ids else (f"re_{next(self.ids):06d}" if self.house == "stripe" else f"act_{next(self.ids):026d}")
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

    def cko_capture_or_void(self, pid, kind, amount, key):
        with self.lock:
            p = self.payments.get(pid)
            if not p:
                return 404, {"error_type": "not_found"}
            open_amt = p["amount"] - p["captured"]
            amt = open_amt if kind == "Void" or amount in (None, "") else int(amount)
            if p["status"] not in ("Authorized", "Partially Captured") or amt <= 0 or amt > open_amt:
                return 422, {"request_id": "r", "error_type": "request_invalid", "error_codes": ["payment_not_capturable"]}
            self.sent.setdefault(key, 0)
            self.sent_pid.setdefault(key, pid)
            return self._cko_action(pid, kind, amt, key, self.cko_capture)

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
        rid = m and urllib.parse.unquote(m.group(1))  # one path segment, percent-decoded
        if m and rid in self.refunds:
            body = {k: v for k, v in self.refunds[rid].items() if not k.startswith("_")}
            if rid in self.refund_pi:
                body["payment_intent"] = self.refund_pi[rid]
            return h.send(200, body)
        m = re.match(r"^/payments/([^/]+)/actions$", path)
        if m and m.group(1) in self.payments:
            with self.lock:
                src = self.actions_of.get(m.group(1), m.group(1))
                items = []
                for a in reversed(self.actions.get(src, [])):  # newest first
                    if a["_state"] != "done" and not self.list_pending:
                        continue  # listed once processed
                    item = {k: v for k, v in a.items() if not k.startswith("_")}
                    items.append(item)
                    if a["id"] in self.list_twice:
                        items.append(dict(item))
                items = list(self.extra_actions.get(m.group(1), [])) + items
            return h.send(200, items)
        m = re.match(r"^/payments/([^/]+)$", path)
        if m and m.group(1) in self.payments:
            pid = self.actions_of.get(m.group(1), m.group(1))
            p = self.payments[pid]
            return h.send(200, {"id": pid, "status": p["status"], "amount": p["amount"], "reference": p["order"]})
        if path == "/payments":
            ref = urllib.parse.parse_qs(urllib.parse.urlparse(h.path).query).get("reference", [""])[0]
            data = [{"id": i, "status": p["status"], "reference": p["order"], "amount": p["amount"]}
                    for i, p in self.payments.items() if p["order"] == ref]
            return h.send(200, {"limit": 10, "skip": 0, "total_count": len(data), "data": data})
        h.send(404, {"error": {"type": "invalid_request_error", "code": "resource_missing"}})
