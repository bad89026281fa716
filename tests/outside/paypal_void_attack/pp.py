"""ctypes over libpayretry.so (the public C ABI) for the PayPal void attack:
client, submit, query, reconcile, ledger_get and pay_submit_operation. Our
own copy of what ../webhook_attack/pr.py and ../operations_attack/op.py bind,
so this folder stands alone. PAYRETRY_LIB names the library."""
import ctypes as C
import json
import os

LIB = os.environ.get("PAYRETRY_LIB", "/tmp/lib-a1fe60f/libpayretry.so")
L = C.CDLL(LIB)
CAPTURE, REFUND, CANCEL = 1, 2, 3


class Buf(C.Structure):
    _fields_ = [("ptr", C.c_char_p), ("size", C.c_size_t)]


class Err(C.Structure):
    _fields_ = [("code", C.c_int), ("message", C.c_char_p)]


class SubOpts(C.Structure):
    _fields_ = [("version", C.c_uint), ("idempotency_key", C.c_char_p), ("path", C.c_char_p),
                ("deadline_ms", C.c_uint32), ("headers", C.c_void_p), ("header_count", C.c_size_t),
                ("traceparent", C.c_char_p)]


class OpOpts(C.Structure):
    _fields_ = [("version", C.c_uint), ("ref", C.c_char_p), ("amount", C.c_int64), ("body", C.c_char_p),
                ("target_id", C.c_char_p), ("deadline_ms", C.c_uint32)]


L.pay_error_last.restype = C.POINTER(Err)
L.pay_result_json.restype = C.c_char_p
L.pay_result_json.argtypes = [C.c_void_p]
L.pay_result_free.argtypes = [C.c_void_p]
L.pay_client_free.argtypes = [C.c_void_p]
L.pay_client_new.argtypes = [C.POINTER(C.c_void_p), C.c_char_p, C.c_void_p]
L.pay_submit.argtypes = [C.POINTER(C.c_void_p), C.c_void_p, C.c_char_p, C.c_void_p, C.c_size_t, C.c_void_p]
L.pay_query.argtypes = [C.POINTER(C.c_void_p), C.c_void_p, C.c_char_p]
L.pay_ledger_get.argtypes = [C.POINTER(Buf), C.c_void_p, C.c_char_p]
L.pay_buf_dispose.argtypes = [C.POINTER(Buf)]
L.pay_reconcile.argtypes = [C.POINTER(Buf), C.c_void_p, C.c_void_p]
L.pay_submit_operation.argtypes = [C.POINTER(C.c_void_p), C.c_void_p, C.c_char_p, C.c_int, C.POINTER(OpOpts)]
L.pay_submit_operation.restype = C.c_int

# Short attempts so that a hang is past the attempt timeout and a run stays quick.
FAST = {"max_attempts": 3, "connect_timeout_ms": 300, "attempt_timeout_ms": 700, "deadline_ms": 4000,
        "backoff_base_ms": 20, "backoff_cap_ms": 60, "min_attempt_ms": 50, "jitter_seed": 7}


def config(url, db, retry=None, **extra):
    c = {"provider": "paypal", "base_url": url,
         "auth": {"oauth2": {"client_id": "AZ1client", "client_secret": "s3cr3t-pp"}},
         "ledger": {"url": "sqlite://" + db, "lease_margin_ms": 300},
         "retry": dict(FAST, **(retry or {}))}
    c.update(extra)
    return c


class PayError(Exception):
    def __init__(self, rc):
        e = L.pay_error_last().contents
        super().__init__(f"{rc}: {(e.message or b'').decode(errors='replace')}")
        self.rc = rc


def _buf_json(rc, b):
    if rc:
        raise PayError(rc)
    j = json.loads(b.ptr)
    L.pay_buf_dispose(C.byref(b))
    return j


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

    def _result(self, rc, out):
        if rc:
            raise PayError(rc)
        j = json.loads(L.pay_result_json(out))
        L.pay_result_free(out)
        return j

    def submit(self, order, body: bytes, key=None):
        out = C.c_void_p()
        opts = SubOpts(2, key.encode() if key else None, None, 0, None, 0, None)
        return self._result(L.pay_submit(C.byref(out), self.h, order.encode(), body, len(body), C.byref(opts)), out)

    def query(self, order):
        out = C.c_void_p()
        return self._result(L.pay_query(C.byref(out), self.h, order.encode()), out)

    def ledger_get(self, order):
        b = Buf()
        return _buf_json(L.pay_ledger_get(C.byref(b), self.h, order.encode()), b)

    def reconcile(self):
        b = Buf()
        return _buf_json(L.pay_reconcile(C.byref(b), self.h, None), b)

    def operation(self, order, kind, ref, amount=0, target=None, body=None, deadline_ms=0):
        """(rc, result-or-None, error message): never raises for a refusal."""
        out = C.c_void_p()
        o = OpOpts(1, ref.encode(), amount, body.encode() if body else None, target.encode() if target else None,
                   deadline_ms)
        rc = L.pay_submit_operation(C.byref(out), self.h, order.encode(), kind, C.byref(o))
        if rc:
            e = L.pay_error_last().contents
            return rc, None, (e.message or b"").decode(errors="replace")
        j = json.loads(L.pay_result_json(out))
        L.pay_result_free(out)
        return 0, j, ""

    def void(self, order, ref, auth, **kw):
        return self.operation(order, CANCEL, ref, 0, target=auth, **kw)

    def capture(self, order, ref, auth, amount=0, **kw):
        return self.operation(order, CAPTURE, ref, amount, target=auth, **kw)


def short(j):
    if not j:
        return None
    return {k: j.get(k) for k in ("outcome", "money_state", "provider_status", "reason") if k in j}
