#!/usr/bin/env python3
"""payretry inside a durable-execution engine (issue 48, item 5).

examples/dbos/checkout.py runs each order as a DBOS workflow on PostgreSQL
(DBOS's system database: a database of its own, made here in the cluster
of PAYRETRY_TEST_PG_URL); its charge step calls payretry with the order id
and a PostgreSQL ledger (a schema of its own in the same cluster), against
payretry-sim in Stripe mode with the chaos fault mix of
tests/integration/test_chaos.cpp. DBOS runs a step at least once, so the
worker (dbos_worker.py) is SIGKILLed, then started again; DBOS recovers the
workflows it left PENDING. The kills come from one seeded plan, a kind and a
count for each (the N-th time the worker reaches that point):

    before_send, after_send, after_answer, before_record   (dbos_worker.py)

and the plan has each kind --kills-per-kind times. After the last kill a
worker runs every order to its end and reports what each workflow concluded.
Then, by the simulator's truth (charges per order):

  payretry          0 orders charged twice, every order SUCCEEDED (charged
                    once), FAILED (not charged) or UNKNOWN with a reason,
                    none without an outcome (lost), none whose outcome the
                    truth contradicts; and every kind of kill happened.
  stripe_derived_key, stripe_fresh_key
                    the same workflow, the step calling stripe-python with an
                    Idempotency-Key derived from the workflow id, or a fresh
                    one per run of the step: same seed, same kill plan,
                    counted the same way, reported, not asserted.

Exit 0 when the payretry variant holds, 1 otherwise, 77 without PostgreSQL
(unless PAYRETRY_REQUIRE_PG=1). --seed (default: $PAYRETRY_CRASH_SEED, else
random) repeats a run's plan and fault schedule.
"""

import argparse
import collections
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # nothing written into the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "crash"))
import crashlib as cl  # noqa: E402

# tests/integration/test_chaos.cpp's mix: every fault the simulator has for a
# create, lost responses and charged 500s among them.
FAULTS = {"refuse": 0.005, "reset_before": 0.05, "lost_response": 0.06, "slow": 0.02, "429": 0.03,
          "429_date": 0.01, "502": 0.03, "503": 0.04, "500": 0.03, "decline": 0.04, "malformed": 0.02}
LATENCY_MS = 100   # every answer 100 ms after its request arrived: the after_send kill (40 ms) lands in it
SLOW_MS = 800      # longer than an attempt (600 ms): a slow answer is a timeout, which may have charged
KINDS = ["before_send", "after_send", "after_answer", "before_record"]
VARIANTS = ["payretry", "stripe_derived_key", "stripe_fresh_key"]
API_KEY = "sk_test_dbos_crash"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the CMake build directory (payretry-sim)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--orders", type=int, default=200)
    ap.add_argument("--kills-per-kind", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=16, help="workflows one worker runs at once")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    a = ap.parse_args()
    if a.seed is None:
        env = os.environ.get("PAYRETRY_CRASH_SEED")
        a.seed = int(env) if env else random.SystemRandom().randrange(1, 2**31)
    a.variants = a.variants.split(",")
    for v in a.variants:
        if v not in VARIANTS:
            ap.error("unknown variant %s" % v)
    return a


def kill_plan(seed, per_kind):
    """[(kind, n)]: the n-th time the worker reaches kind, it dies. Small n,
    so that each kill lands while orders remain."""
    rng = random.Random("%d/kills" % seed)
    plan = [(k, rng.randint(1, 6)) for k in KINDS for _ in range(per_kind)]
    rng.shuffle(plan)
    return plan


class SystemDb:
    """DBOS's system database: a fresh database in the test cluster."""

    def __init__(self, ledger, tag):
        self.ledger = ledger  # its psql and base URL
        self.name = "payretry_dbos_%s_%d" % (tag, os.getpid())
        ledger.sql("DROP DATABASE IF EXISTS %s" % self.name)
        ledger.sql("CREATE DATABASE %s" % self.name)
        base = ledger.base.split("?", 1)[0]
        if not re.match(r"^postgres(ql)?://[^/]+/[^/]+$", base):
            raise cl.TestFailure("PAYRETRY_TEST_PG_URL must be a postgresql://host/db URL, got %r" % ledger.base)
        self.url = base.rsplit("/", 1)[0] + "/" + self.name

    def drop(self):
        try:
            self.ledger.sql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.name)
        except Exception as e:  # noqa: BLE001 - cleanup must not hide the result
            cl.log("warning: could not drop database %s: %s" % (self.name, e))


def run_worker(args, variant, sysdb, ledger, sim, kill, kill_log, results):
    argv = [sys.executable, os.path.join(HERE, "dbos_worker.py"), "--step", variant, "--system-db", sysdb.url,
            "--ledger", ledger.url, "--provider", sim.base_url, "--api-key", API_KEY, "--orders", str(args.orders),
            "--concurrency", str(args.concurrency), "--kill-log", kill_log, "--results", results]
    if kill:
        argv += ["--kill", "%s:%d" % kill]
    p = cl.spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = p.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.kill(p.pid, 9)
        out, _ = p.communicate()
        raise cl.TestFailure("%s worker (kill %s) still running after 240 s:\n%s" % (variant, kill, out[-3000:]))
    finally:
        cl.reap(p)
    return p.returncode, out


def run_variant(args, variant, plan):
    """Runs one variant under the plan; returns its row of the table."""
    sim = ledger = sysdb = None
    tmp = tempfile.mkdtemp(prefix="payretry-dbos-")
    try:
        ledger = cl.Ledger("postgres", "dbos")
        sysdb = SystemDb(ledger, variant)
        sim = cl.Simulator(args.build, args.seed, FAULTS, slow_ms=SLOW_MS, retry_after_s=0, api_key=API_KEY)
        sim.config(latency_ms=LATENCY_MS)
        kill_log = os.path.join(tmp, "kills.log")
        results = os.path.join(tmp, "results.json")
        kills = collections.Counter()
        missed = []
        for kill in plan:
            before = _lines(kill_log)
            rc, out = run_worker(args, variant, sysdb, ledger, sim, kill, kill_log, results)
            new = _lines(kill_log)[len(before):]
            if rc == -9 and len(new) == 1 and new[0].split()[0] == kill[0]:
                kills[kill[0]] += 1
            elif rc == 0:
                missed.append(kill)  # every order ended before the kill point came
            else:
                raise cl.TestFailure("%s worker (kill %s:%d) exited %s, kill log %r:\n%s" %
                                     (variant, kill[0], kill[1], rc, new, out[-3000:]))
        if os.path.exists(results):
            os.unlink(results)  # only the clean run's results count
        rc, out = run_worker(args, variant, sysdb, ledger, sim, None, kill_log, results)
        if rc != 0 or not os.path.exists(results):
            raise cl.TestFailure("%s: the final worker exited %s:\n%s" % (variant, rc, out[-3000:]))
        with open(results) as f:
            got = json.load(f)
        truth = sim.truth()
        return tally(variant, args.orders, got, truth, kills, missed)
    finally:
        if sim:
            sim.stop()
        if sysdb:
            sysdb.drop()
        if ledger:
            ledger.cleanup()


def _lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()


def tally(variant, n, got, truth, kills, missed):
    by_order = truth.get("by_order", {})
    orders = ["order-%04d" % i for i in range(n)]
    row = {"variant": variant, "kills": dict(kills), "missed": missed, "orders": n,
           "charges": sum(by_order.get(o, 0) for o in orders), "duplicates": 0, "extra_charges": 0,
           "succeeded": 0, "failed": 0, "unknown": 0, "unknown_without_reason": 0, "lost": 0, "wrong": 0,
           "examples": []}
    strays = sorted(set(by_order) - set(orders))
    if strays:
        row["examples"].append("charged orders the test never made: %s" % strays[:5])
        row["wrong"] += len(strays)
    for o in orders:
        c = by_order.get(o, 0)
        r = got.get(o)
        if c > 1:
            row["duplicates"] += 1
            row["extra_charges"] += c - 1
            row["examples"].append("%s charged %d times (workflow: %s)" % (o, c, r))
        if not isinstance(r, dict) or r.get("outcome") not in ("SUCCEEDED", "FAILED", "UNKNOWN"):
            row["lost"] += 1
            row["examples"].append("%s has no outcome: %r (charged %d)" % (o, r, c))
            continue
        state = r["outcome"]
        row[state.lower()] += 1
        if state == "UNKNOWN" and not r.get("reason"):
            row["unknown_without_reason"] += 1
            row["examples"].append("%s UNKNOWN without a reason" % o)
        if (state == "SUCCEEDED" and c == 0) or (state == "FAILED" and c > 0):
            row["wrong"] += 1
            row["examples"].append("%s %s but charged %d times" % (o, state, c))
    return row


def print_table(rows, seed):
    cl.log("")
    cl.log("seed %d; kills: bs=before_send as=after_send aa=after_answer br=before_record" % seed)
    head = "%-20s %-21s %6s %8s %11s %9s %6s %7s %4s %5s" % (
        "variant", "kills (bs/as/aa/br)", "orders", "charges", "duplicates", "succeeded", "failed", "unknown",
        "lost", "wrong")
    cl.log(head)
    cl.log("-" * len(head))
    for r in rows:
        k = r["kills"]
        kills = "%d (%d/%d/%d/%d)" % (sum(k.values()), k.get("before_send", 0), k.get("after_send", 0),
                                      k.get("after_answer", 0), k.get("before_record", 0))
        dup = "%d" % r["duplicates"] + (" (+%d)" % r["extra_charges"] if r["extra_charges"] else "")
        cl.log("%-20s %-21s %6d %8d %11s %9d %6d %7d %4d %5d" % (
            r["variant"], kills, r["orders"], r["charges"], dup, r["succeeded"], r["failed"], r["unknown"],
            r["lost"], r["wrong"]))
    cl.log("(duplicates: orders charged more than once, (+N) the extra charges; lost: no outcome; "
           "wrong: an outcome the simulator's truth contradicts)")


def main():
    args = parse_args()
    cl.exit_on_sigterm()
    if not os.environ.get("PAYRETRY_TEST_PG_URL"):
        if os.environ.get("PAYRETRY_REQUIRE_PG") == "1":
            cl.log("FAIL: PAYRETRY_REQUIRE_PG=1 but PAYRETRY_TEST_PG_URL is not set")
            return 1
        cl.log("skipped: PAYRETRY_TEST_PG_URL not set")
        return cl.SKIP
    plan = kill_plan(args.seed, args.kills_per_kind)
    cl.log("dbos crash test: seed %d, %d orders a variant, kill plan %s (repeat with --seed %d)" %
           (args.seed, args.orders, " ".join("%s:%d" % k for k in plan), args.seed))
    started = time.monotonic()
    rows = []
    try:
        for v in args.variants:
            t = time.monotonic()
            rows.append(run_variant(args, v, plan))
            cl.log("%s: %.1f s" % (v, time.monotonic() - t))
    except cl.TestFailure as e:
        cl.log("FAIL: %s" % e)
        return 1
    finally:
        cl.kill_all_children()
    print_table(rows, args.seed)
    check = cl.Checker()
    for r in rows:
        for e in r["examples"][:10]:
            cl.log("  %s: %s" % (r["variant"], e))
        if r["missed"]:
            cl.log("  %s: kills not reached (every order ended first): %s" % (r["variant"], r["missed"]))
        if r["variant"] != "payretry":
            continue
        check.check(r["orders"] >= 200 or args.orders < 200, "fewer than 200 orders")
        check.check(r["duplicates"] == 0, "payretry: %d orders charged more than once" % r["duplicates"])
        check.check(r["lost"] == 0, "payretry: %d orders lost" % r["lost"])
        check.check(r["wrong"] == 0, "payretry: %d outcomes the truth contradicts" % r["wrong"])
        check.check(r["unknown_without_reason"] == 0, "payretry: %d UNKNOWN without a reason" %
                    r["unknown_without_reason"])
        for k in KINDS:
            check.check(r["kills"].get(k, 0) >= 1, "payretry: no %s kill happened" % k)
    cl.log("wall time %.1f s" % (time.monotonic() - started))
    if not check.report():
        cl.log("FAIL (repeat with --seed %d)" % args.seed)
        return 1
    cl.log("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
