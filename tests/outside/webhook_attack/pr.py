"""ctypes over the built libpayretry.so (the public C ABI): client, submit,
query, reconcile, ledger_get, webhook_apply."""
import ctypes as C
import json
import os

LIB = os.environ.get("PAYRETRY_LIB", "/work/main/build/src/api/libpayretry.so")
L = C.CDLL(LIB)


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


class SubOpts(C.Structure):
    _fields_ = [("version", C.c_uint), ("idempotency_key", C.c_char_p), ("path", C.c_char_p),
                ("deadline_ms", C.c_uint32), ("headers", C.POINTER(Header)), ("header_count", C.c_size_t),
                ("traceparent", C.c_char_p)]


class RecOpts(C.Structure):  # filled by pay_reconcile_options_init; generous size
    _fields_ = [("raw", C.c_char * 256)]


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
L.pay_webhook_apply.argtypes = [C.POINTER(WRep), C.c_void_p, C.POINTER(WReq)]
L.pay_webhook_reply_dispose.argtypes = [C.POINTER(WRep)]
L.pay_reconcile.argtypes = [C.POINTER(Buf), C.c_void_p, C.c_void_p]


class PayError(Exception):
    def __init__(self, rc):
        e = L.pay_error_last().contents
        super().__init__(f"{rc}: {e.message.decode(errors='replace')}")
        self.rc = rc


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

    def submit(self, order, body: bytes, key=None, headers=None):
        out = C.c_void_p()
        opts = SubOpts(2, key.encode() if key else None, None, 0, None, 0, None)
        if headers:
            arr = (Header * len(headers))(*[Header(k.encode(), v.encode()) for k, v in headers])
            opts.headers, opts.header_count = arr, len(headers)
        rc = L.pay_submit(C.byref(out), self.h, order.encode(), body, len(body), C.byref(opts))
        return self._result(rc, out)

    def query(self, order):
        out = C.c_void_p()
        return self._result(L.pay_query(C.byref(out), self.h, order.encode()), out)

    def ledger_get(self, order):
        b = Buf()
        rc = L.pay_ledger_get(C.byref(b), self.h, order.encode())
        if rc:
            raise PayError(rc)
        j = json.loads(b.ptr)
        L.pay_buf_dispose(C.byref(b))
        return j

    def state(self, order):
        try:
            return self.ledger_get(order)["payment"].get("state")
        except PayError:
            return None

    def reconcile(self):
        b = Buf()
        rc = L.pay_reconcile(C.byref(b), self.h, None)
        if rc:
            raise PayError(rc)
        j = json.loads(b.ptr)
        L.pay_buf_dispose(C.byref(b))
        return j

    def webhook(self, body: bytes, headers=(), url="https://shop.example/hooks", method="POST"):
        hs = list(headers.items()) if isinstance(headers, dict) else list(headers)
        arr = (Header * max(1, len(hs)))(*[Header(k.encode(), v.encode()) for k, v in hs])
        buf = C.create_string_buffer(body, len(body))
        req = WReq(1, method.encode(), url.encode(), arr, len(hs), C.cast(buf, C.c_void_p), len(body))
        rep = WRep()
        rc = L.pay_webhook_apply(C.byref(rep), self.h, C.byref(req))
        if rc:
            raise PayError(rc)
        out = {"status": rep.status, "body": (rep.body.ptr or b"").decode(),
               "outcome": json.loads(rep.outcome.ptr) if rep.outcome.ptr else None}
        L.pay_webhook_reply_dispose(C.byref(rep))
        return out
