"""ctypes over libpayretry.so (the public C ABI) for the PayPal void attack:
the operations attack's wrapper (../operations_attack/op.py, itself built on
../webhook_attack/pr.py: client, submit, query, reconcile, ledger_get and
pay_submit_operation), with a PayPal config and the void and capture of an
authorization. PAYRETRY_LIB names the library."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# Behind this folder on the path: the operations attack has a double.py of
# its own, which must not stand in for ours.
sys.path.append(os.path.join(HERE, "..", "operations_attack"))
import op  # noqa: E402

CAPTURE, REFUND, CANCEL = op.CAPTURE, op.REFUND, op.CANCEL
PayError = op.PayError
short = op.short


def config(url, db, retry=None, **extra):
    """A PayPal client on its own OAuth2 credentials and a SQLite ledger, with
    short attempts so that a hang is past the attempt timeout and a run stays
    quick (op.FAST)."""
    c = {"provider": "paypal", "base_url": url,
         "auth": {"oauth2": {"client_id": "AZ1client", "client_secret": "s3cr3t-pp"}},
         "ledger": {"url": "sqlite://" + db, "lease_margin_ms": 300},
         "retry": dict(op.FAST, **(retry or {}))}
    c.update(extra)
    return c


class Client(op.Client):
    def void(self, order, ref, auth, **kw):
        return self.operation(order, CANCEL, ref, 0, target=auth, **kw)

    def capture(self, order, ref, auth, amount=0, **kw):
        return self.operation(order, CAPTURE, ref, amount, target=auth, **kw)
