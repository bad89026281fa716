#!/usr/bin/env python3
"""Several processes, one ledger (issue 3, item 6).

Part 1, the same orders at once: --procs worker processes (>= 4) with
--threads threads each (>= 4) submit the SAME --orders orders (200) against
one fresh ledger (a SQLite file, or a PostgreSQL schema), lined up to start
at the same instant. Half of them give up at once on a held order
(in_progress_wait_ms 0), half wait for its outcome. The simulator injects no
random fault, but every fifth order is held 300 ms by a scripted `slow` on
its first request, so that its lease is visibly held while the others
arrive. Asserted:
  - every order is charged exactly once at the simulator (no duplicate), and
    the ledger says SUCCEEDED with the simulator's payment id, lease released;
  - every result any process got is SUCCEEDED (fresh or from the ledger) or
    IN_PROGRESS (another holder, nothing sent): never an error, never
    UNKNOWN, never FAILED;
  - for every order exactly one process sent it (exactly one result with
    from_ledger = 0), and every process saw the same idempotency key.

Part 2, lease takeover: a worker holds --takeover-orders orders when it is
killed with SIGKILL from its request hook on attempt 2, after attempt 1 was
held by the simulator's `slow` fault past the attempt timeout (the held
request is still charged by the provider afterwards). Then:
  - a worker with in_progress_wait_ms 0 started while the lease is live gets
    IN_PROGRESS from the ledger, sends nothing (checked only for orders whose
    lease outlived that worker, so the load of the machine cannot flake it);
  - two workers that wait started together take the orders over once the
    lease has expired: per order exactly one of them sends, with the key the
    dead worker committed, the simulator replays the first charge, and the
    other gets SUCCEEDED from the ledger;
  - every order is charged exactly once and ends SUCCEEDED; attempt numbers
    continue across the processes without a repeat.

Exit 0 when every invariant holds, 1 otherwise, 77 when the PostgreSQL
variant is not configured.
"""

import argparse
import collections
import os
import random
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crashlib as cl  # noqa: E402

RETRY_SAME = {
    "max_attempts": 4,
    "connect_timeout_ms": 2000,
    "attempt_timeout_ms": 5000,
    "deadline_ms": 15000,
    "backoff_base_ms": 20,
    "backoff_cap_ms": 200,
    "min_attempt_ms": 50,
}
# Part 2: the simulator holds a `slow` request TAKEOVER_SLOW_MS; attempt 1
# times out long before that, attempt 2's hook kills the worker.
TAKEOVER_SLOW_MS = 1500
RETRY_TAKEOVER = {
    "max_attempts": 4,
    "connect_timeout_ms": 1000,
    "attempt_timeout_ms": 300,
    "deadline_ms": 3000,
    "backoff_base_ms": 20,
    "backoff_cap_ms": 100,
    "min_attempt_ms": 50,
}
TAKEOVER_LEASE_MARGIN_MS = 3000   # lease = 3 s + 3 s after the claim


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the CMake build directory")
    ap.add_argument("--ledger", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--seed", type=int, default=None, help="default: from $PAYRETRY_CRASH_SEED, else random")
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--orders", type=int, default=200)
    ap.add_argument("--takeover-orders", type=int, default=8)
    ap.add_argument("--keep", action="store_true", help="keep the ledger for inspection")
    a = ap.parse_args()
    if a.seed is None:
        env = os.environ.get("PAYRETRY_CRASH_SEED")
        a.seed = int(env) if env else random.SystemRandom().randrange(1, 2**31)
    if a.procs < 2 or a.threads < 1 or a.orders < 1 or a.takeover_orders < 1:
        ap.error("need --procs >= 2, --threads >= 1, --orders >= 1, --takeover-orders >= 1")
    return a


def same_orders(args, sim, ledger, worker, tmp, c):
    prefix = "s%d-" % args.seed
    orders = [prefix + str(i) for i in range(args.orders)]
    for i in range(0, args.orders, 5):
        sim.script(orders[i], ["slow"])
    impatient = cl.write_config(os.path.join(tmp, "impatient.json"), sim, ledger.url, RETRY_SAME,
                                lease_margin_ms=10000, in_progress_wait_ms=0)
    patient = cl.write_config(os.path.join(tmp, "patient.json"), sim, ledger.url, RETRY_SAME,
                              lease_margin_ms=10000, in_progress_wait_ms=60000)
    before = sim.stats()
    # Every process opens the (fresh) ledger at once, then they start
    # submitting at the same instant.
    start_at = int(time.time() * 1000) + 2000
    procs = []
    for i in range(args.procs):
        cfg = impatient if i % 2 == 0 else patient
        argv = [worker, "--threads", str(args.threads), "--start-at-ms", str(start_at),
                "--send-log", os.path.join(tmp, "sends1.log"), cfg, prefix, "0", str(args.orders)]
        procs.append((i, "impatient" if i % 2 == 0 else "patient", cl.start_worker(argv)))
    runs = [(i, kind, cl.finish_worker(p, timeout_s=300)) for i, kind, p in procs]

    per_order = collections.defaultdict(list)
    tally = collections.Counter()
    for i, kind, run in runs:
        who = "proc%d(%s)" % (i, kind)
        c.check(run.rc == 0, "%s exited with %d: %s" % (who, run.rc, run.stderr.strip()[-500:]))
        for order, code, msg in run.errors:
            c.check(False, "%s: pay_submit(%s) failed with %d: %s" % (who, order, code, msg))
        c.check(sorted(r[0] for r in run.results) == sorted(orders),
                "%s did not print exactly one result per order (%d lines)" % (who, len(run.results)))
        for order, outcome, delivery, from_ledger, attempts, key in run.results:
            per_order[order].append((who, outcome, delivery, from_ledger, attempts, key))
            tally["%s %s" % (outcome, "from_ledger" if from_ledger else "sent")] += 1
            if outcome == "IN_PROGRESS":
                c.check(from_ledger == 1 and attempts == 0,
                        "%s: %s IN_PROGRESS yet from_ledger=%d attempts=%d" % (who, order, from_ledger, attempts))
            else:
                c.check(outcome == "SUCCEEDED", "%s: %s ended %s %s" % (who, order, outcome, delivery))

    truth = sim.truth()
    stats = sim.stats()
    rows = cl.dump_ledger(worker, patient)
    sends, torn = cl.read_send_log(os.path.join(tmp, "sends1.log"))
    senders_hist = collections.Counter()
    for order in orders:
        pids = {s[3] for s in sends.get(order, [])}
        c.check(len(pids) == 1, "%s: %d processes called the request hook for it (pids %s)" %
                (order, len(pids), sorted(pids)))
        seen = per_order.get(order, [])
        senders = [s for s in seen if s[3] == 0]
        senders_hist[len(senders)] += 1
        c.check(len(senders) == 1, "%s was sent by %d processes: %s" % (order, len(senders), senders))
        keys = {s[5] for s in seen}
        c.check(len(keys) == 1, "%s: processes saw different keys %s" % (order, sorted(keys)))
        n = truth["by_order"].get(order, 0)
        c.check(n == 1, "%s charged %d times at the simulator" % (order, n))
        p = rows.get(order)
        if c.check(p is not None, "%s missing from the ledger" % order):
            c.check(p["state"] == "SUCCEEDED", "%s is %s in the ledger" % (order, p["state"]))
            c.check(p["lease_owner"] is None, "%s still leased to %s" % (order, p["lease_owner"]))
            c.check(p["idempotency_key"] in keys, "%s: ledger key %s, processes saw %s" %
                    (order, p["idempotency_key"], sorted(keys)))
            if n == 1:
                ids = sim.truth_of(order)["ids"]
                c.check(p["provider_payment_id"] in ids, "%s: ledger payment id %s, simulator %s" %
                        (order, p["provider_payment_id"], ids))
    c.check(truth["duplicates"] == 0, "the simulator reports %d duplicate orders" % truth["duplicates"])
    c.check(stats.get("key_reused_422", 0) == before.get("key_reused_422", 0), "a key was reused with other bytes")
    sent = stats["requests"] - before["requests"]
    cl.log("part 1: %d processes x %d threads, %d orders: %d results %s" %
           (args.procs, args.threads, args.orders, sum(tally.values()), dict(tally)))
    cl.log("        simulator: %d requests, %d charges on %d orders, duplicates %d, 409 in use %d; "
           "senders per order %s; worker times %s s" %
           (sent, truth["charges"], truth["orders"], truth["duplicates"],
            stats.get("in_use_409", 0) - before.get("in_use_409", 0), dict(senders_hist),
            ["%.1f" % r.elapsed for _, _, r in runs]))
    if torn:
        cl.log("        note: %d torn send-log lines ignored" % torn)
    return truth["charges"]


def takeover(args, sim, ledger, worker, tmp, c, charges_before):
    prefix = "t%d-" % args.seed
    k = args.takeover_orders
    orders = [prefix + str(i) for i in range(k)]
    sim.config(slow_ms=TAKEOVER_SLOW_MS)
    for o in orders:
        sim.script(o, ["slow"])
    holder_cfg = cl.write_config(os.path.join(tmp, "holder.json"), sim, ledger.url, RETRY_TAKEOVER,
                                 lease_margin_ms=TAKEOVER_LEASE_MARGIN_MS, in_progress_wait_ms=0)
    waiter_cfg = cl.write_config(os.path.join(tmp, "waiter.json"), sim, ledger.url, RETRY_TAKEOVER,
                                 lease_margin_ms=TAKEOVER_LEASE_MARGIN_MS, in_progress_wait_ms=60000)

    # The holder: every order's attempt 1 is held by the simulator past the
    # attempt timeout; the hook of attempt 2 kills the whole process.
    send_log = os.path.join(tmp, "sends2.log")
    holder = cl.run_worker(worker, holder_cfg, prefix, 0, k, threads=k, kill_at="hook", kill_prob=1.0,
                           kill_min_attempt=2, seed=args.seed, send_log=send_log)
    c.check(holder.killed, "the holder was not killed by its hook (rc %d): %s" % (holder.rc, holder.stderr[-300:]))
    c.check(not holder.results, "the holder decided orders before dying: %s" % holder.results)
    rows = cl.dump_ledger(worker, holder_cfg)
    held = {o: rows[o] for o in orders if o in rows}
    for o, p in held.items():
        c.check(p["state"] == "IN_FLIGHT" and p["lease_owner"],
                "%s after the holder's death: %s leased to %s" % (o, p["state"], p["lease_owner"]))
    c.check(len(held) > 0, "the holder died before committing any order")

    # A worker that does not wait, while the lease is live: IN_PROGRESS.
    busy = cl.run_worker(worker, holder_cfg, prefix, 0, k, threads=k, send_log=send_log)
    busy_end_ms = int(time.time() * 1000)
    c.check(busy.rc == 0 and not busy.errors, "the impatient worker failed (%d): %s %s" %
            (busy.rc, busy.errors, busy.stderr[-300:]))
    live_checked = 0
    busy_by_order = {r[0]: r for r in busy.results}
    for o, p in held.items():
        r = busy_by_order.get(o)
        if not c.check(r is not None, "the impatient worker printed nothing for %s" % o):
            continue
        if p["lease_until"] > busy_end_ms:   # the lease outlived the whole worker
            live_checked += 1
            c.check(r[1] == "IN_PROGRESS" and r[3] == 1 and r[4] == 0,
                    "%s under a live lease: %s from_ledger=%d attempts=%d" % (o, r[1], r[3], r[4]))
            c.check(r[5] == p["idempotency_key"], "%s: key %s, ledger %s" % (o, r[5], p["idempotency_key"]))
            c.check(not [s for s in cl.read_send_log(send_log)[0].get(o, []) if s[3] == busy.pid],
                    "%s: the impatient worker called the request hook under a live lease" % o)
        else:
            c.check(r[1] in ("IN_PROGRESS", "SUCCEEDED"), "%s: %s" % (o, r[1]))
    if held and not live_checked:
        cl.log("        note: the machine was so slow that every lease ended before the impatient worker did; "
               "the IN_PROGRESS check was skipped")

    # Two patient workers at once: they wait the lease out, one takes over.
    start_at = int(time.time() * 1000) + 500
    ws = [cl.start_worker([worker, "--threads", str(k), "--start-at-ms", str(start_at), "--send-log", send_log,
                           waiter_cfg, prefix, "0", str(k)]) for _ in range(2)]
    waiters = [cl.finish_worker(p, timeout_s=300) for p in ws]
    per_order = collections.defaultdict(list)
    for i, w in enumerate(waiters):
        c.check(w.rc == 0 and not w.errors, "waiter %d failed (%d): %s %s" % (i, w.rc, w.errors, w.stderr[-300:]))
        for r in w.results:
            per_order[r[0]].append(r)
    truth = sim.truth()
    sends, torn = cl.read_send_log(send_log)
    waiter_pids = {w.pid for w in waiters}
    final_rows = cl.dump_ledger(worker, waiter_cfg)
    details = cl.ledger_get(worker, waiter_cfg, orders)
    took_over = 0
    for o in orders:
        rs = per_order.get(o, [])
        c.check(len(rs) == 2, "%s: %d results from the two waiters" % (o, len(rs)))
        c.check(all(r[1] == "SUCCEEDED" for r in rs), "%s: waiters got %s" % (o, [r[1] for r in rs]))
        senders = [r for r in rs if r[3] == 0]
        hook_pids = {s[3] for s in sends.get(o, [])}
        # A held order must be taken over by exactly one waiter. (One the
        # holder never reached was first sent by the impatient worker, which
        # may have settled it already: then no waiter sends at all.)
        expected = (1,) if o in held else (0, 1)
        c.check(len(senders) in expected, "%s was sent by %d waiters" % (o, len(senders)))
        c.check(len(hook_pids & waiter_pids) in expected, "%s: %d waiters called the request hook" %
                (o, len(hook_pids & waiter_pids)))
        c.check(all(s[0] == final_rows.get(o, {}).get("idempotency_key") for s in sends.get(o, [])),
                "%s: attempts with different keys: %s" % (o, sorted({s[0] for s in sends.get(o, [])})))
        if o in held:
            took_over += len(senders)
            c.check(holder.pid in hook_pids, "%s is held by the dead holder but it never sent it" % o)
            c.check(all(r[5] == held[o]["idempotency_key"] for r in rs),
                    "%s: the takeover used keys %s, the dead holder committed %s" %
                    (o, [r[5] for r in rs], held[o]["idempotency_key"]))
        n = truth["by_order"].get(o, 0)
        c.check(n == 1, "%s charged %d times after the takeover" % (o, n))
        p = final_rows.get(o)
        if c.check(p is not None, "%s missing from the ledger" % o):
            c.check(p["state"] == "SUCCEEDED" and p["lease_owner"] is None,
                    "%s ended %s leased to %s" % (o, p["state"], p["lease_owner"]))
            if n == 1:
                c.check(p["provider_payment_id"] in sim.truth_of(o)["ids"], "%s: payment id differs" % o)
        d = details.get(o)
        if d:
            nums = [a["attempt"] for a in d.get("attempts", [])]
            c.check(len(nums) == len(set(nums)), "%s: attempt numbers repeat across processes: %s" % (o, nums))
    c.check(truth["duplicates"] == 0, "the simulator reports %d duplicate orders" % truth["duplicates"])
    c.check(truth["charges"] - charges_before == k,
            "the takeover part made %d charges for %d orders" % (truth["charges"] - charges_before, k))
    cl.log("part 2: holder killed=%s (rc %d) holding %d orders; impatient worker: %s (%d under a live lease); "
           "waiters: %d takeovers, %s; charges %d for %d orders, duplicates %d" %
           (holder.killed, holder.rc, len(held), dict(collections.Counter(r[1] for r in busy.results)), live_checked,
            took_over, dict(collections.Counter("%s%s" % (r[1], " from_ledger" if r[3] else " sent")
                                                for w in waiters for r in w.results)),
            truth["charges"] - charges_before, k, truth["duplicates"]))


def main():
    args = parse_args()
    cl.log("concurrency test: ledger=%s seed=%d procs=%d threads=%d orders=%d (repeat with --seed %d)" %
           (args.ledger, args.seed, args.procs, args.threads, args.orders, args.seed))
    started = time.monotonic()
    sim = ledger = None
    tmp = tempfile.mkdtemp(prefix="payretry-conc-cfg-")
    ok = False
    try:
        worker = cl.find_binary(args.build, "tests/crash/ledger_worker")
        ledger = cl.Ledger(args.ledger, "conc", keep=args.keep)
        sim = cl.Simulator(args.build, args.seed, {}, slow_ms=300, threads=2)
        cl.log("simulator on port %d, ledger: %s" % (sim.port, ledger.describe()))
        c = cl.Checker()
        charges = same_orders(args, sim, ledger, worker, tmp, c)
        takeover(args, sim, ledger, worker, tmp, c, charges)
        ok = c.report()
        cl.log("%s in %.1f s (seed %d)" % ("PASS" if ok else "FAIL", time.monotonic() - started, args.seed))
    except cl.TestFailure as e:
        cl.log("FAIL: %s (seed %d)" % (e, args.seed))
    except KeyboardInterrupt as e:
        cl.log("interrupted (%s): cleaning up" % (e or "Ctrl-C"))
    finally:
        if sim is not None:
            sim.stop()
        cl.kill_all_children()
        if ledger is not None:
            ledger.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    cl.exit_on_sigterm()
    sys.exit(main())
