"""What the group-commit attack's scenarios share: payretry's C ABI through
ctypes (our own thin layer), a small Stripe double that makes payments
UNKNOWN on purpose, Stripe-signed events, and the ledger checks run after
every crash or failure.

The double and the signing follow the approach of tests/outside/webhook_attack2
(written anew here, not imported): the double charges, then drops the
connection, so a payment made through pay_submit with one attempt is left
UNKNOWN, and only a webhook can settle it."""
import ctypes as C
import hashlib
import hmac
import json
import os
import sqlite3
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BUILD = os.environ.get("PAYRETRY_BUILD", "/work/main/build-attack")
LIB = os.environ.get("PAYRETRY_LIB", os.path.join(BUILD, "src/api/libpayretry.so"))
L = C.CDLL(LIB)

WHSEC = "whsec_group_commit_attack_5f3a9c"


class Buf(C.Structure):
    _fields_ = [("ptr", C.c_char_p), ("size", C.c_size_t)]


class Header(C.Structure):
    _fields_ = [("name", C.c_char_p), ("value", C.c_char_p)]


class Err(C.Structure):
    _fields_ = [("code", C.c_int), ("message", C.c_char_p)]


class WReq(C.Structure):
    _fields_ = [("version", C.c_uint), ("method", C.c_char_p), ("url", C.c_char_p), ("headers", C.POINTER(Header)),
                ("header_count", C.c_size_t), ("body", C.c_void_p), ("body_len", C.c_size_t)]


class WRep(C.Structure):
    _fields_ = [("status", C.c_int), ("content_type", Buf), ("body", Buf), ("outcome", Buf)]


L.pay_error_last.restype = C.POINTER(Err)
L.pay_client_new.argtypes = [C.POINTER(C.c_void_p), C.c_char_p, C.c_void_p]
L.pay_client_free.argtypes = [C.c_void_p]
L.pay_submit.argtypes = [C.POINTER(C.c_void_p), C.c_void_p, C.c_char_p, C.c_void_p, C.c_size_t, C.c_void_p]
L.pay_result_json.restype = C.c_char_p
L.pay_result_json.argtypes = [C.c_void_p]
L.pay_result_free.argtypes = [C.c_void_p]
L.pay_ledger_get.argtypes = [C.POINTER(Buf), C.c_void_p, C.c_char_p]
L.pay_ledger_list.argtypes = [C.POINTER(Buf), C.c_void_p, C.c_char_p, C.c_int64, C.c_uint32]
L.pay_buf_dispose.argtypes = [C.POINTER(Buf)]
L.pay_webhook_apply.argtypes = [C.POINTER(WRep), C.c_void_p, C.POINTER(WReq)]
L.pay_webhook_reply_dispose.argtypes = [C.POINTER(WRep)]


class PayError(Exception):
    def __init__(self, rc):
        e = L.pay_error_last().contents
        super().__init__("%d: %s" % (rc, (e.message or b"").decode(errors="replace")))
        self.rc = rc


def _take_buf(b):
    try:
        return json.loads(b.ptr) if b.ptr else None
    finally:
        L.pay_buf_dispose(C.byref(b))


class Client:
    def __init__(self, cfg):
        self.h = C.c_void_p()
        rc = L.pay_client_new(C.byref(self.h), json.dumps(cfg).encode(), None)
        if rc:
            raise PayError(rc)

    def close(self):
        if self.h:
            L.pay_client_free(self.h)
            self.h = None

    def submit(self, order, body):
        out = C.c_void_p()
        rc = L.pay_submit(C.byref(out), self.h, order.encode(), body, len(body), None)
        if rc:
            raise PayError(rc)
        j = json.loads(L.pay_result_json(out))
        L.pay_result_free(out)
        return j

    def get(self, order):
        b = Buf()
        rc = L.pay_ledger_get(C.byref(b), self.h, order.encode())
        if rc:
            raise PayError(rc)
        return _take_buf(b)

    def list(self):
        b = Buf()
        rc = L.pay_ledger_list(C.byref(b), self.h, None, 0, 100000)
        if rc:
            raise PayError(rc)
        return _take_buf(b)

    def webhook(self, body, sig):
        """One delivery, as an HTTP server would hand it over. The GIL is
        released for the call (ctypes), so threads really overlap in C."""
        hs = [("Stripe-Signature", sig), ("Content-Type", "application/json")]
        arr = (Header * len(hs))(*[Header(k.encode(), v.encode()) for k, v in hs])
        buf = C.create_string_buffer(body, len(body))
        req = WReq(1, b"POST", b"https://shop.example/hooks/stripe", arr, len(hs), C.cast(buf, C.c_void_p),
                   len(body))
        rep = WRep()
        rc = L.pay_webhook_apply(C.byref(rep), self.h, C.byref(req))
        if rc:
            raise PayError(rc)
        out = {"status": rep.status, "outcome": json.loads(rep.outcome.ptr) if rep.outcome.ptr else None}
        L.pay_webhook_reply_dispose(C.byref(rep))
        return out


def config(base_url, ledger_path, timeout_ms=None):
    ledger = "sqlite://" + ledger_path
    if timeout_ms is not None:
        ledger = {"url": ledger, "timeout_ms": timeout_ms}
    # One attempt: a dropped answer leaves the payment UNKNOWN.
    return {"provider": "stripe", "base_url": base_url, "auth": {"bearer": "sk_test_group_commit_attack"},
            "ledger": ledger, "webhook": {"secret": WHSEC},
            "retry": {"max_attempts": 1, "connect_timeout_ms": 500, "attempt_timeout_ms": 1500,
                      "deadline_ms": 3000, "backoff_base_ms": 10, "backoff_cap_ms": 50, "min_attempt_ms": 50,
                      "jitter_seed": 7}}


# ---- Stripe's side ----------------------------------------------------------

def sign(body, t=None):
    t = int(time.time()) if t is None else t
    mac = hmac.new(WHSEC.encode(), str(t).encode() + b"." + body, hashlib.sha256).hexdigest()
    return "t=%d,v1=%s" % (t, mac)


STATUS = {"s": ("payment_intent.succeeded", "succeeded"),
          "f": ("payment_intent.payment_failed", "requires_payment_method"),
          "p": ("payment_intent.processing", "processing")}


def event_body(evt_id, kind, order, pi_id, key):
    """Stripe's event of `kind` (s, f, p) about PaymentIntent `pi_id` of
    `order`; `key` is the idempotency key of the request behind it (what
    makes a failure provably this payment's)."""
    etype, status = STATUS[kind]
    # "created" puts the PaymentIntent inside the key's window, so a failure
    # carrying the row's key is provably this payment's and settles it.
    obj = {"id": pi_id, "object": "payment_intent", "amount": 1000, "status": status, "created": int(time.time()),
           "metadata": {"order_id": order}}
    e = {"id": evt_id, "object": "event", "api_version": "2024-06-20", "type": etype, "created": int(time.time()),
         "livemode": False, "data": {"object": obj}, "request": {"id": "req_" + evt_id, "idempotency_key": key}}
    return json.dumps(e, sort_keys=True).encode()


class StripeDouble:
    """POST /v1/payment_intents: charges, then does what `plan[order]` says:
    "drop" closes the connection without an answer (the payment is charged,
    payretry's row UNKNOWN), "ok" answers 200, "decline" answers 402."""

    def __init__(self):
        self.lock = threading.Lock()
        self.plan = {}
        self.pis = {}  # order -> PaymentIntent id
        self.n = 0
        double = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                b = json.dumps({"error": {"type": "invalid_request_error", "code": "resource_missing"}}).encode()
                self.send_response(404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(b)))
                self.end_headers()
                self.wfile.write(b)

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                form = dict(urllib.parse.parse_qsl(raw, keep_blank_values=True))
                order = form.get("metadata[order_id]", "")
                with double.lock:
                    double.n += 1
                    pid = "pi_gca_%d" % double.n
                    double.pis[order] = pid
                    what = double.plan.get(order, "drop")
                if what == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                pi = {"id": pid, "object": "payment_intent", "amount": 1000, "metadata": {"order_id": order},
                      "status": "succeeded" if what == "ok" else "requires_payment_method"}
                st, obj = (200, pi) if what == "ok" else (402, {"error": {"type": "card_error",
                                                                          "code": "card_declined",
                                                                          "payment_intent": pi}})
                b = json.dumps(obj).encode()
                self.send_response(st)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(b)))
                self.send_header("Request-Id", "req_%s" % pid)
                self.end_headers()
                self.wfile.write(b)

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def body_for(order):
    return ("amount=1000&currency=usd&confirm=true&payment_method=pm_card_visa&metadata[order_id]=%s"
            % order).encode()


def make_payments(client, double, orders, rng, unknown=0.7, declined=0.15):
    """Submits each order; returns {order: {"state", "key", "pi"}} as the
    ledger holds it after the submit. Most are left UNKNOWN."""
    rows = {}
    for o in orders:
        r = rng.random()
        double.plan[o] = "drop" if r < unknown else ("decline" if r < unknown + declined else "ok")
        client.submit(o, body_for(o))
        p = client.get(o)["payment"]
        rows[o] = {"state": p["state"], "key": p["idempotency_key"], "pi": double.pis[o]}
    return rows


def events_for(order, row, tag=""):
    """The events Stripe could send about one order: succeeded, failed (with
    the row's own key, so it may settle FAILED) and processing (noted)."""
    return {"evt_%s%s_%s" % (k, tag, order): event_body("evt_%s%s_%s" % (k, tag, order), k, order, row["pi"],
                                                         row["key"])
            for k in ("s", "f", "p")}


def ghost_event(name):
    """An event for an order the ledger has no row of: kept."""
    order = "ghost-" + name
    eid = "evt_g_" + name
    return eid, event_body(eid, "s", order, "pi_ghost_" + name, "")


# ---- checks ----------------------------------------------------------------

MOVES = {"event_succeeded": "SUCCEEDED", "event_failed": "FAILED"}


def read_store(path):
    """The webhook_events table and an integrity check, read straight from
    the file (after the library has opened it, so any WAL is recovered)."""
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=30)
    try:
        ok = db.execute("PRAGMA integrity_check").fetchall()
        cols = [r[1] for r in db.execute("PRAGMA table_info(webhook_events)")]
        evs = {}
        for r in db.execute("SELECT * FROM webhook_events"):
            d = dict(zip(cols, r))
            evs[d["event_id"]] = d
        return ok, evs
    finally:
        db.close()


def check_ledger(path, base_url, initial, acked, last_states, problems, where):
    """Checks the promises on the ledger at `path`:
    - it opens (pay_client_new) and SQLite finds it intact;
    - every event answered 2xx is stored, and where it landed, its entry is in
      the row's history exactly once (no event applied twice, none half
      written: an entry only for a stored event);
    - a settled payment never moved; an UNKNOWN one took the outcome of the
      first settling event recorded on it;
    - what a 2xx reply said (settled to X, kept) is what the ledger holds.
    `acked`: {event_id: [reply events]} for every 2xx seen so far.
    `last_states`: {order: state} seen at the previous check (updated)."""
    try:
        c = Client(config(base_url, path))
    except PayError as e:
        problems.append("%s: the ledger does not open: %s" % (where, e))
        return
    try:
        rows = {}
        for p in c.list():
            rows[p["order_id"]] = c.get(p["order_id"])
    finally:
        c.close()
    ok, evs = read_store(path)
    if ok != [("ok",)]:
        problems.append("%s: integrity_check: %s" % (where, ok))
    for eid, replies in acked.items():
        if eid not in evs:
            problems.append("%s: %s answered 2xx (%s) but not in the ledger" % (where, eid, replies))
    for order, g in rows.items():
        p = g["payment"]
        hooks = [a for a in g["attempts"] if a.get("kind") == "webhook"]
        seen = {}
        for a in hooks:
            seen[a["provider_request_id"]] = seen.get(a["provider_request_id"], 0) + 1
        for eid, n in seen.items():
            if n != 1:
                problems.append("%s: %s applied %d times to %s" % (where, eid, n, order))
            if eid not in evs:
                problems.append("%s: %s's entry on %s without its event stored (half written)" % (where, eid, order))
            elif evs[eid].get("applied_to") != order:
                problems.append("%s: %s's entry on %s, event applied_to=%r" % (where, eid, order,
                                                                             evs[eid].get("applied_to")))
        for eid, e in evs.items():
            if e.get("applied_to") == order and eid not in seen:
                problems.append("%s: %s marked applied to %s, no entry there (half written)" % (where, eid, order))
        st = p["state"]
        init = initial.get(order, {}).get("state")
        if init in ("SUCCEEDED", "FAILED") and st != init:
            problems.append("%s: %s moved back from %s to %s" % (where, order, init, st))
        prev = last_states.get(order)
        if prev in ("SUCCEEDED", "FAILED") and st != prev:
            problems.append("%s: %s moved from %s to %s since the last check" % (where, order, prev, st))
        last_states[order] = st
        if init == "UNKNOWN":
            settling = sorted((a for a in hooks if a.get("verdict") in MOVES), key=lambda a: a["attempt"])
            want = MOVES[settling[0]["verdict"]] if settling else "UNKNOWN"
            if st != want:
                problems.append("%s: %s is %s, its first settling event says %s" % (where, order, st, want))
    for eid, replies in acked.items():
        for r in replies:
            if r.get("effect") == "settled":
                st = rows.get(r["order_id"], {}).get("payment", {}).get("state")
                if st != r.get("state_after"):
                    problems.append("%s: %s answered settled %s, the row is %s" % (where, eid, r.get("state_after"),
                                                                                  st))
            if r.get("effect") == "kept" and eid in evs and evs[eid].get("applied_to"):
                problems.append("%s: %s answered kept, but applied to %s" % (where, eid, evs[eid]["applied_to"]))
    return rows, evs
