"""One process of a race or a kill: opens its own client on the shared
SQLite ledger, waits for the start time, submits one operation, prints the
result as one JSON line. argv: config-json order kind ref amount start_unix."""
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
rc, res, msg = c.operation(order, int(kind), ref, int(amount))
print(json.dumps({"rc": rc, "result": op.short(res), "key": (res or {}).get("idempotency_key"), "msg": msg}),
      flush=True)
