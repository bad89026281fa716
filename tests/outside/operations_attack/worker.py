"""One process of a race or a kill: opens its own client on the shared
SQLite ledger, waits for the start time, then submits one operation (kind
1-3), or pay_query's the row `order` (kind "query"), or runs pay_reconcile
(kind "reconcile"), and prints the result as one JSON line.
argv: config-json order kind ref amount start_unix."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op  # noqa: E402

cfg, order, kind, ref, amount, start = sys.argv[1:7]
c = op.Client(json.loads(cfg))
print(json.dumps({"ready": True}), flush=True)
delay = float(start) - time.time()
if delay > 0:
    time.sleep(delay)
if kind == "query":
    try:
        res = c.query(order)
        rc, msg = 0, ""
    except op.PayError as e:
        rc, res, msg = e.rc, None, str(e)
elif kind == "reconcile":
    try:
        rep = c.reconcile()
        rc, msg = 0, ""
        res = next((p for p in rep.get("payments", []) if p.get("order_id") == order), None)
    except op.PayError as e:
        rc, res, msg = e.rc, None, str(e)
else:
    rc, res, msg = c.operation(order, int(kind), ref, int(amount))
print(json.dumps({"rc": rc, "result": op.short(res), "key": (res or {}).get("idempotency_key"), "msg": msg}),
      flush=True)
