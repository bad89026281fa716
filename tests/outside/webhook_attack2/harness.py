"""What the scenarios share: the C ABI through the first outside attack's ctypes
module (tests/outside/webhook_attack/pr.py, read only), plus what it lacks
here (a client with a request hook, reconcile with a body callback), configs
for our Stripe double, and the report lines."""
import ctypes as C
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("PAYRETRY_LIB", os.path.join(os.environ.get("PAYRETRY_BUILD", "/work/main/build-attack"),
                                                   "src/api/libpayretry.so"))
sys.path.insert(0, os.path.join(HERE, "..", "webhook_attack"))
sys.path.insert(0, HERE)
import pr  # noqa: E402
from stripe_double import WHSEC, sign  # noqa: E402

L = pr.L

# Small and quick: one attempt, so a dropped answer leaves the payment UNKNOWN.
FAST = {"max_attempts": 1, "connect_timeout_ms": 500, "attempt_timeout_ms": 1500, "deadline_ms": 3000,
        "backoff_base_ms": 10, "backoff_cap_ms": 50, "min_attempt_ms": 50, "jitter_seed": 7}


def config(double, ledger="memory:", headers=None, **extra):
    c = {"provider": "stripe", "base_url": double.url, "auth": {"bearer": "sk_test_attack2_platform"},
         "ledger": ledger, "retry": dict(FAST), "webhook": {"secret": WHSEC}}
    if headers:
        c["headers"] = headers
    c.update(extra)
    return c


def sqlite_ledger():
    d = tempfile.mkdtemp(prefix="wa2_")
    return "sqlite://" + os.path.join(d, "ledger.db")


# A PostgreSQL ledger outlives a run (run.sh starts one with
# tests/ledger/pg_cluster.sh and sets ATTACK_PG_URL): order ids carry the run.
RUN = "%x" % int(time.time() * 1000)


def oid(name):
    return name + "-" + RUN


def shared_ledger_kinds():
    return ["sqlite"] + (["postgres"] if os.environ.get("ATTACK_PG_URL") else [])


def ledger_kinds():
    return ["memory"] + shared_ledger_kinds()


def shared_ledger(kind):
    return {"memory": "memory:", "sqlite": None, "postgres": os.environ.get("ATTACK_PG_URL")}[kind] or sqlite_ledger()


def body_for(order, amount=1000):
    return ("amount=%d&currency=usd&confirm=true&payment_method=pm_card_visa&metadata[order_id]=%s"
            % (amount, order)).encode()


def deliver(client, body: bytes, t=None):
    return client.webhook(body, {"Stripe-Signature": sign(body, t=t), "Content-Type": "application/json"})


def events(reply):
    o = reply["outcome"] or {}
    return [{k: e.get(k) for k in ("order_id", "finding", "effect", "state_before", "state_after", "why")}
            for e in o.get("events", [])]


def row(client, order):
    p = client.ledger_get(order)["payment"]
    keep = ("order_id", "state", "provider_payment_id", "idempotency_key", "provider_status", "detail",
            "submission_headers", "delivery")
    return {k: p.get(k) for k in keep}


# ---- a client with a request hook (pay_client_options) ---------------------

HOOK = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p, C.c_void_p)


class ClientOptions(C.Structure):
    _fields_ = [("version", C.c_uint), ("log_cb", C.c_void_p), ("log_payload", C.c_void_p),
                ("request_hook", HOOK), ("hook_payload", C.c_void_p)]


L.pay_headers_add.argtypes = [C.c_void_p, C.c_char_p, C.c_char_p]


class HookedClient(pr.Client):
    """A client whose request hook adds `headers` to every attempt and lookup."""

    def __init__(self, cfg, headers):
        def hook(hs, info, payload):
            for k, v in headers:
                L.pay_headers_add(hs, k.encode(), v.encode())
            return 0
        self._hook = HOOK(hook)  # kept alive as long as the client
        self._opts = ClientOptions(1, None, None, self._hook, None)
        self.h = C.c_void_p()
        L.pay_client_new.argtypes = [C.POINTER(C.c_void_p), C.c_char_p, C.c_void_p]
        rc = L.pay_client_new(C.byref(self.h), json.dumps(cfg).encode(), C.cast(C.byref(self._opts), C.c_void_p))
        if rc:
            raise pr.PayError(rc)


# ---- reconcile with a body callback ----------------------------------------

BODY_CB = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_char_p, C.c_void_p)


class ReconcileOptions(C.Structure):
    _fields_ = [("version", C.c_uint), ("body_for", BODY_CB), ("body_payload", C.c_void_p), ("limit", C.c_uint32),
                ("older_than_ms", C.c_int64)]


L.pay_body_set.argtypes = [C.c_void_p, C.c_void_p, C.c_size_t]


def reconcile_with_bodies(client, bodies):
    def cb(out, order, payload):
        b = bodies.get(order.decode())
        if b is None:
            return 1
        return L.pay_body_set(out, b, len(b))
    keep = BODY_CB(cb)
    opts = ReconcileOptions(1, keep, None, 0, 0)
    buf = pr.Buf()
    rc = L.pay_reconcile(C.byref(buf), client.h, C.cast(C.byref(opts), C.c_void_p))
    if rc:
        raise pr.PayError(rc)
    j = json.loads(buf.ptr)
    L.pay_buf_dispose(C.byref(buf))
    return j


# ---- report -----------------------------------------------------------------

RESULTS = []


def report(name, verdict, what):
    RESULTS.append((name, verdict))
    print("[%s] %s" % (verdict, name), flush=True)
    print(json.dumps(what, indent=2, sort_keys=True), flush=True)


def summary():
    broken = [n for n, v in RESULTS if v == "BROKEN"]
    print("\n%d scenarios, %d BROKEN: %s" % (len(RESULTS), len(broken), ", ".join(broken) or "none"), flush=True)
    return 1 if broken else 0
