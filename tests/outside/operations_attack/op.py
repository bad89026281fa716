"""ctypes over libpayretry.so for the operations attack: the existing
wrapper (../webhook_attack/pr.py: client, submit, query, ledger_get) plus
pay_submit_operation, which it does not bind."""
import ctypes as C
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "webhook_attack"))
os.environ.setdefault("PAYRETRY_LIB", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../build/src/api/libpayretry.so"))
import pr  # noqa: E402

L = pr.L
CAPTURE, REFUND, CANCEL = 1, 2, 3


class OpOpts(C.Structure):
    _fields_ = [("version", C.c_uint), ("ref", C.c_char_p), ("amount", C.c_int64), ("body", C.c_char_p),
                ("target_id", C.c_char_p), ("deadline_ms", C.c_uint32)]


L.pay_submit_operation.argtypes = [C.POINTER(C.c_void_p), C.c_void_p, C.c_char_p, C.c_int, C.POINTER(OpOpts)]
L.pay_submit_operation.restype = C.c_int
PayError = pr.PayError

FAST = {"max_attempts": 3, "connect_timeout_ms": 300, "attempt_timeout_ms": 700, "deadline_ms": 4000,
        "backoff_base_ms": 20, "backoff_cap_ms": 60, "min_attempt_ms": 50, "jitter_seed": 7}


def config(url, db, provider="stripe", retry=None, lease_margin_ms=300):
    c = {"provider": provider, "base_url": url,
         "ledger": {"url": "sqlite://" + db, "lease_margin_ms": lease_margin_ms},
         "retry": dict(FAST, **(retry or {}))}
    c["auth"] = {"bearer": "sk_test_x" if provider == "stripe" else "sk_sbox_x"}
    return c


class Client(pr.Client):
    def operation(self, order, kind, ref, amount=0, body=None, target=None, deadline_ms=0):
        """(rc, result-or-None, error message)."""
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

    def refund(self, order, ref, amount=0, **kw):
        return self.operation(order, REFUND, ref, amount, **kw)


def short(j):
    if not j:
        return None
    return {k: j.get(k) for k in ("outcome", "money_state", "provider_status", "reason", "attempts") if k in j}
