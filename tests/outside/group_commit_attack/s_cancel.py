"""Scenario 4d: one thread cancelled inside pay_webhook_apply (cancel.c)
while 16 threads apply signed events through group commits. Whatever the
process does (finishes, aborts, hangs), the ledger must hold every event
answered 2xx and stay consistent (gca.check_ledger); the outcomes are
counted.

usage: s_cancel.py [--seed N] [--runs R]   (needs cancel.c built: run.sh does it)"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gca  # noqa: E402
from s_crash import read_logs  # noqa: E402

THREADS = 16


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=int(os.environ.get("GCA_SEED", "1")))
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--bin", default=os.environ.get("GCA_CANCEL_BIN", "/tmp/gca_bin/cancel"))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    double = gca.StripeDouble()
    d = tempfile.mkdtemp(prefix="gca_cancel_")
    path = os.path.join(d, "ledger.db")
    cfg = gca.config(double.url, path)
    with open(os.path.join(d, "cfg.json"), "w") as f:
        json.dump(cfg, f)
    per_run = 20
    orders = ["c-o%04d" % i for i in range(a.runs * per_run)]
    c = gca.Client(cfg)
    initial = gca.make_payments(c, double, orders, rng)
    c.close()
    acked, last, problems = {}, {}, []
    outcomes = {}
    for r in range(a.runs):
        plan = []
        for o in orders[r * per_run:(r + 1) * per_run]:
            for eid, body in gca.events_for(o, initial[o]).items():
                plan.append((eid, body))
        rng.shuffle(plan)
        with open(os.path.join(d, "plan.txt"), "w") as f:
            for eid, body in plan:
                f.write("%s\t%s\t%s\n" % (eid, gca.sign(body), body.decode()))
        logdir = os.path.join(d, "log%03d" % r)
        os.mkdir(logdir)
        delay_us = rng.randrange(0, 60000)
        victim = rng.randrange(THREADS)
        try:
            p = subprocess.run([a.bin, os.path.join(d, "cfg.json"), os.path.join(d, "plan.txt"), logdir, str(THREADS),
                                str(delay_us), str(victim)], capture_output=True, text=True, timeout=40)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = "timeout", e.stdout or "", e.stderr or ""
        how = ("signal %d" % -rc if isinstance(rc, int) and rc < 0 else "exit %s" % rc)
        words = [w for w in ("hung", "joined", "victim cancelled", "victim finished") if w in str(out)]
        why = [m for m in ("exception not rethrown", "terminate called") if m in str(err)]
        key = "%s %s %s" % (how, "/".join(words) or "-", "/".join(why))
        outcomes[key] = outcomes.get(key, 0) + 1
        for line in read_logs(logdir):
            tag, status, eid, outcome = line
            if tag == "ACK":
                acked.setdefault(eid, []).extend(
                    {k: e.get(k) for k in ("order_id", "effect", "state_after")} for e in (outcome or {}).get("events", []))
        before = len(problems)
        gca.check_ledger(path, double.url, initial, acked, last, problems,
                         "seed %d run %d (cancel thread %d after %d us: %s)" % (a.seed, r, victim, delay_us, key))
        for pr in problems[before:]:
            print("PROBLEM", pr, flush=True)
    double.close()
    print("outcomes of %d runs:" % a.runs, json.dumps(outcomes, sort_keys=True, indent=1), flush=True)
    print("[%s] cancel (seed %d): %d ledger problems; %d distinct events answered 2xx"
          % ("BROKEN" if problems else "HELD", a.seed, len(problems), len(acked)), flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
