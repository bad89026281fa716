"""One process of a race or a kill: opens its own client on the shared
SQLite ledger, waits for the start time, then voids or captures (`void`,
`capture`), pay_query's the row `order` (`query`) or runs pay_reconcile
(`reconcile`), and prints the result as one JSON line.
argv: config-json order action ref auth start_unix."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pp  # noqa: E402

cfg, order, action, ref, auth, start = sys.argv[1:7]
c = pp.Client(json.loads(cfg))
print(json.dumps({"ready": True}), flush=True)
delay = float(start) - time.time()
if delay > 0:
    time.sleep(delay)
res, msg, rc = None, "", 0
try:
    if action == "query":
        res = c.query(order)
    elif action == "reconcile":
        rep = c.reconcile()
        res = {"report": rep}
    elif action == "void":
        rc, res, msg = c.void(order, ref, auth)
    else:
        rc, res, msg = c.capture(order, ref, auth)
except pp.PayError as e:
    rc, msg = e.rc, str(e)
print(json.dumps({"rc": rc, "result": res, "msg": msg}), flush=True)
