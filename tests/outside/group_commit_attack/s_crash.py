"""Scenario 1, crash durability: worker.py (THREADS threads on one client,
one SQLite ledger on disk) is SIGKILLed at a seeded random moment while it
applies signed Stripe events; after each kill the ledger is opened again and
checked (gca.check_ledger). Events are delivered again across kills, as a
provider would, so every kill also sees duplicates and conflicts.

usage: s_crash.py [--seed N] [--epochs E] [--kills K] [--threads T]"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gca  # noqa: E402


def read_logs(logdir):
    out = []
    for name in sorted(os.listdir(logdir)):
        with open(os.path.join(logdir, name)) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # the worker died inside its write: that reply was never sent
    return out


def measure_groups(double, rng, threads, n_orders):
    """How many commits the events shared: one worker run to its end under
    strace, counting fsync/fdatasync on the ledger's files against the
    deliveries that wrote something (strace slows each sync, so groups may
    come out larger than without it)."""
    d = tempfile.mkdtemp(prefix="gca_groups_")
    path = os.path.join(d, "ledger.db")
    cfg = gca.config(double.url, path)
    orders = ["m-o%04d" % i for i in range(n_orders)]
    c = gca.Client(cfg)
    initial = gca.make_payments(c, double, orders, rng)
    c.close()
    plan = []
    for o in orders:
        plan += [[eid, body.decode()] for eid, body in gca.events_for(o, initial[o]).items()]
    rng.shuffle(plan)
    for name, obj in (("cfg.json", cfg), ("plan.json", plan)):
        with open(os.path.join(d, name), "w") as f:
            json.dump(obj, f)
    logdir = os.path.join(d, "log")
    os.mkdir(logdir)
    trace = os.path.join(d, "strace.txt")
    subprocess.run(["strace", "-f", "-y", "-e", "trace=fsync,fdatasync", "-o", trace, sys.executable,
                    os.path.join(HERE, "worker.py"), os.path.join(d, "cfg.json"), os.path.join(d, "plan.json"),
                    logdir, str(threads)], check=True, stdout=subprocess.DEVNULL)
    with open(trace) as f:
        syncs = [line for line in f if "ledger.db" in line and "resumed" not in line]
    wrote = sum(1 for tag, st, eid, evs in read_logs(logdir) for e in evs if e["effect"] != "duplicate")
    print("groups: %d deliveries, %d of them wrote to the ledger, %d syncs of the ledger's files (%s)"
          % (len(plan), wrote, len(syncs), trace), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=int(os.environ.get("GCA_SEED", "1")))
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--kills", type=int, default=25)
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--orders-per-kill", type=int, default=40)
    ap.add_argument("--measure-groups", action="store_true",
                    help="also run one worker to its end under strace and count the WAL's syncs")
    a = ap.parse_args()
    print("s_crash: seed %d, %d epochs x %d kills, %d threads" % (a.seed, a.epochs, a.kills, a.threads), flush=True)
    rng = random.Random(a.seed)
    double = gca.StripeDouble()
    problems = []
    totals = {"kills": 0, "mid_run": 0, "acked": 0, "delivered_logged": 0, "nak": 0, "in_flight_lost": 0}
    effects = {}
    for ep in range(a.epochs):
        d = tempfile.mkdtemp(prefix="gca_crash_")
        path = os.path.join(d, "ledger.db")
        cfg = gca.config(double.url, path)
        orders = ["e%d-o%04d" % (ep, i) for i in range(a.kills * a.orders_per_kill)]
        c = gca.Client(cfg)
        initial = gca.make_payments(c, double, orders, rng)
        c.close()
        all_events = {}
        acked = {}
        last_states = {}
        with open(os.path.join(d, "cfg.json"), "w") as f:
            json.dump(cfg, f)
        for k in range(a.kills):
            fresh = orders[k * a.orders_per_kill:(k + 1) * a.orders_per_kill]
            plan = []
            for o in fresh:
                for eid, body in gca.events_for(o, initial[o]).items():
                    all_events[eid] = body
                    plan += [[eid, body.decode()]] * rng.choice([1, 1, 2, 3])
            for g in range(3):
                eid, body = gca.ghost_event("e%dk%dg%d" % (ep, k, g))
                all_events[eid] = body
                plan.append([eid, body.decode()])
            older = sorted(all_events)
            plan += [[e, all_events[e].decode()] for e in rng.sample(older, min(len(older), 40))]
            rng.shuffle(plan)
            with open(os.path.join(d, "plan.json"), "w") as f:
                json.dump(plan, f)
            logdir = os.path.join(d, "log%03d" % k)
            os.mkdir(logdir)
            delay = rng.uniform(0.0, 0.35)
            p = subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py"), os.path.join(d, "cfg.json"),
                                  os.path.join(d, "plan.json"), logdir, str(a.threads)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if p.stdout.readline().strip() != "ready":
                problems.append("epoch %d kill %d: the worker did not start: %s" % (ep, k, p.stderr.read()))
                p.wait()
                continue
            time.sleep(delay)
            p.send_signal(signal.SIGKILL)
            rest, err = p.communicate()
            totals["kills"] += 1
            if "done" not in rest:
                totals["mid_run"] += 1
            lines = read_logs(logdir)
            totals["delivered_logged"] += len(lines)
            totals["in_flight_lost"] += max(0, len(plan) - len(lines)) if "done" not in rest else 0
            for tag, status, eid, evs in lines:
                if tag == "ACK":
                    acked.setdefault(eid, []).extend(evs)
                    totals["acked"] += 1
                    for e in evs:
                        effects[e["effect"]] = effects.get(e["effect"], 0) + 1
                else:
                    totals["nak"] += 1
            where = "seed %d epoch %d kill %d (after %.3f s)" % (a.seed, ep, k, delay)
            before = len(problems)
            gca.check_ledger(path, double.url, initial, acked, last_states, problems, where)
            for pr in problems[before:]:
                print("PROBLEM", pr, flush=True)
        n_unknown = sum(1 for r in initial.values() if r["state"] == "UNKNOWN")
        print("epoch %d: %d payments (%d UNKNOWN at start), %d distinct events answered 2xx; ledger %s"
              % (ep, len(orders), n_unknown, len(acked), path), flush=True)
    if a.measure_groups:
        measure_groups(double, rng, a.threads, a.orders_per_kill)
    double.close()
    print("totals:", json.dumps(totals), "effects of 2xx replies:", json.dumps(effects, sort_keys=True), flush=True)
    verdict = "BROKEN" if problems else "HELD"
    print("[%s] crash durability (seed %d): %d problems" % (verdict, a.seed, len(problems)), flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
