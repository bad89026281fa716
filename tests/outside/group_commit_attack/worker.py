"""The webhook endpoint that gets killed: many threads each calling
pay_webhook_apply on one client (one SQLite ledger on disk), each logging
every reply to its own append-only file, fsync'd, before it does anything
else. A line "ACK ..." is a 2xx the provider would have received: from then
on the provider never sends that event again, so the ledger must hold it.

usage: worker.py CONFIG_JSON PLAN_JSON LOGDIR THREADS
PLAN_JSON: [[event_id, body], ...], handed out to the threads in order."""
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gca  # noqa: E402


def main():
    cfg_path, plan_path, logdir, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with open(cfg_path) as f:
        cfg = json.load(f)
    with open(plan_path) as f:
        plan = json.load(f)
    client = gca.Client(cfg)
    lock = threading.Lock()
    nxt = [0]

    def run(i):
        fd = os.open(os.path.join(logdir, "t%02d.log" % i), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        while True:
            with lock:
                if nxt[0] >= len(plan):
                    break
                eid, body = plan[nxt[0]]
                nxt[0] += 1
            b = body.encode()
            r = client.webhook(b, gca.sign(b))
            evs = (r["outcome"] or {}).get("events", [])
            tag = "ACK" if 200 <= r["status"] < 300 else "NAK"
            line = json.dumps([tag, r["status"], eid, [{k: e.get(k) for k in ("order_id", "effect", "state_after")}
                                                      for e in evs]]) + "\n"
            os.write(fd, line.encode())
            os.fsync(fd)
        os.close(fd)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    print("ready", flush=True)
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    client.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()
