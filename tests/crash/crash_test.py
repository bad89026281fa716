#!/usr/bin/env python3
"""Crash safety of the ledger (issue 3, item 5).

Worker processes (ledger_worker) submit batches of payments to the simulator
through one ledger and are killed with SIGKILL at random moments, at least
--kills times:

  external  from outside, 0-400 ms after the start: before the client exists,
            before a send, mid-attempt, during a backoff, mid-commit, ...
  hook      by the worker itself inside the request hook: just before a send
            (the row and its key are committed, nothing of this attempt sent)
  log       by the worker itself inside the log callback: on an "attempt" line
            (a response is in, the ledger has not recorded the attempt yet) or
            on an "outcome" line (the final answer is in, not yet committed)
  any       hook or log

After each kill the next worker resubmits the same batch with the same bytes:
finished payments come back from the ledger, UNKNOWN ones resume with their
key, IN_FLIGHT ones are taken over once their lease (deadline + a small
lease_margin_ms) has expired; in_progress_wait_ms waits the lease out. Several
lanes run at once on the same ledger, each on its own batches. The simulator
injects slow, lost_response, 503, 429, 500, 502, reset_before and decline.

At the end the faults are switched off and a clean worker settles every order.
Then, against the simulator's truth:
  - every order is charged at most once (no duplicate anywhere);
  - every order the ledger calls SUCCEEDED is charged exactly once, with the
    provider payment id the ledger stored;
  - every FAILED order is charged zero times;
  - UNKNOWN orders may be either (honestly unknown); none is left PENDING or
    IN_FLIGHT;
  - every result any worker printed agrees with that truth, and every
    process saw one and the same idempotency key per order;
  - the simulator never saw a key reused with other bytes (422).

Seeded: --seed makes the kill schedule (modes, delays, probabilities) and the
simulator's fault schedule repeatable. Exit 0 when every invariant holds, 1
otherwise, 77 when the PostgreSQL variant is not configured.
"""

import argparse
import collections
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import traceback

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crashlib as cl  # noqa: E402

FAULTS = {
    "slow": 0.07,
    "lost_response": 0.10,
    "503": 0.07,
    "429": 0.05,
    "500": 0.05,
    "502": 0.03,
    "reset_before": 0.03,
    "decline": 0.04,
}

# Short enough that leases of killed workers expire quickly; the simulator's
# slow fault (300 ms) outlasts an attempt, so some attempts time out mid-way.
RETRY = {
    "max_attempts": 4,
    "connect_timeout_ms": 200,
    "attempt_timeout_ms": 250,
    "deadline_ms": 900,
    "backoff_base_ms": 20,
    "backoff_cap_ms": 100,
    "min_attempt_ms": 50,
}
LEASE_MARGIN_MS = 100          # lease = deadline + margin = 1 s
IN_PROGRESS_WAIT_MS = 1500     # longer than a lease: a resubmitter waits a dead holder out
FINAL_WAIT_MS = 30000
MODES = ["external", "external", "hook", "log", "any"]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the CMake build directory")
    ap.add_argument("--ledger", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--seed", type=int, default=None, help="default: from $PAYRETRY_CRASH_SEED, else random")
    ap.add_argument("--kills", type=int, default=200, help="SIGKILLs to reach (default 200)")
    ap.add_argument("--lanes", type=int, default=4, help="workers running at once, each on its own batches")
    ap.add_argument("--batch", type=int, default=8, help="orders per batch")
    ap.add_argument("--threads", type=int, default=4, help="threads per worker")
    ap.add_argument("--max-rounds", type=int, default=6, help="resubmissions of one batch before the next")
    ap.add_argument("--time-limit", type=float, default=300.0,
                    help="stop killing after this many seconds even short of --kills (then fail)")
    ap.add_argument("--keep", action="store_true", help="keep the ledger for inspection")
    a = ap.parse_args()
    if a.seed is None:
        env = os.environ.get("PAYRETRY_CRASH_SEED")
        a.seed = int(env) if env else random.SystemRandom().randrange(1, 2**31)
    return a


class Campaign:
    def __init__(self, args, worker, config, send_log):
        self.args = args
        self.send_log = send_log
        self.worker = worker
        self.config = config
        self.prefix = "c%d-" % args.seed
        self.lock = threading.Lock()
        self.next_batch = 0
        self.kills = collections.Counter()     # by mode
        self.launches = collections.Counter()  # by mode
        self.outcomes = collections.Counter()  # every line printed by a lane worker
        self.results = collections.defaultdict(list)  # order -> [(outcome, from_ledger, key, who)]
        self.errors = []
        self.stop = threading.Event()
        self.deadline = time.monotonic() + args.time_limit

    def total_kills(self):
        with self.lock:
            return sum(self.kills.values())

    def take_batch(self):
        with self.lock:
            b = self.next_batch
            self.next_batch += 1
            return b

    def record(self, run, who):
        with self.lock:
            for order, outcome, delivery, from_ledger, attempts, key in run.results:
                self.outcomes[outcome] += 1
                self.results[order].append((outcome, from_ledger, key, who))
            for e in run.errors:
                self.errors.append((who,) + e)

    def lane(self, index):
        rng = random.Random("%d/lane/%d" % (self.args.seed, index))
        batch = self.take_batch()
        rounds = 0
        n = 0
        while not self.stop.is_set():
            if self.total_kills() >= self.args.kills or time.monotonic() > self.deadline:
                break
            lo, hi = batch * self.args.batch, (batch + 1) * self.args.batch
            mode = rng.choice(MODES)
            seed = rng.randrange(1, 2**31)
            if mode == "external":
                kw = dict(kill_after_s=rng.uniform(0.0, 0.4))
            else:
                kw = dict(kill_at=mode, kill_prob=rng.choice([0.05, 0.15, 0.3]))
            run = cl.run_worker(self.worker, self.config, self.prefix, lo, hi, threads=self.args.threads,
                                seed=seed, send_log=self.send_log, **kw)
            n += 1
            who = "lane%d#%d(%s)" % (index, n, mode)
            self.record(run, who)
            with self.lock:
                self.launches[mode] += 1
                if run.killed:
                    self.kills[mode] += 1
            if not run.killed and run.rc not in (0, 1):
                raise cl.TestFailure("%s exited with %d: %s" % (who, run.rc, run.stderr.strip()[-500:]))
            rounds += 1
            settled = (not run.killed and run.rc == 0 and len(run.results) == hi - lo and
                       all(r[1] in ("SUCCEEDED", "FAILED") for r in run.results))
            if settled or rounds >= self.args.max_rounds:
                batch = self.take_batch()
                rounds = 0


def main():
    args = parse_args()
    log = cl.log
    log("crash test: ledger=%s seed=%d kills>=%d lanes=%d batch=%d threads=%d (repeat with --seed %d)" %
        (args.ledger, args.seed, args.kills, args.lanes, args.batch, args.threads, args.seed))
    started = time.monotonic()
    sim = ledger = None
    tmp = tempfile.mkdtemp(prefix="payretry-crash-cfg-")
    ok = False
    try:
        worker = cl.find_binary(args.build, "tests/crash/ledger_worker")
        ledger = cl.Ledger(args.ledger, "crash", keep=args.keep)
        sim = cl.Simulator(args.build, args.seed, FAULTS, slow_ms=300, retry_after_s=0)
        log("simulator on port %d, ledger: %s" % (sim.port, ledger.describe()))
        lane_cfg = cl.write_config(os.path.join(tmp, "lane.json"), sim, ledger.url, RETRY,
                                   lease_margin_ms=LEASE_MARGIN_MS, in_progress_wait_ms=IN_PROGRESS_WAIT_MS)
        final_cfg = cl.write_config(os.path.join(tmp, "final.json"), sim, ledger.url, RETRY,
                                    lease_margin_ms=LEASE_MARGIN_MS, in_progress_wait_ms=FINAL_WAIT_MS)

        send_log = os.path.join(tmp, "sends.log")
        camp = Campaign(args, worker, lane_cfg, send_log)
        lane_errors = []

        def lane_main(i):
            try:
                camp.lane(i)
            except Exception:  # noqa: BLE001 - reported below
                lane_errors.append(traceback.format_exc())
                camp.stop.set()

        threads = [threading.Thread(target=lane_main, args=(i,), daemon=True) for i in range(args.lanes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if lane_errors:
            raise cl.TestFailure("a lane failed:\n" + "\n".join(lane_errors))
        kill_phase = time.monotonic() - started
        orders_total = camp.next_batch * args.batch

        # Settle everything: no more faults, one clean worker over every order
        # ever handed out, patient enough to wait out any lease.
        before_final = collections.Counter(p["state"] for p in cl.dump_ledger(worker, final_cfg).values())
        sim.config(faults={})
        final = cl.run_worker(worker, final_cfg, camp.prefix, 0, orders_total, threads=8, send_log=send_log,
                              timeout_s=300)
        camp.record(final, "final")
        final_outcomes = collections.Counter(r[1] for r in final.results)

        rows = cl.dump_ledger(worker, final_cfg)
        truth = sim.truth()
        stats = sim.stats()
        by_order = truth["by_order"]

        c = cl.Checker()
        c.check(final.rc == 0, "the final worker exited with %d: %s" % (final.rc, final.stderr.strip()[-500:]))
        c.check(len(final.results) == orders_total,
                "the final worker decided %d of %d orders" % (len(final.results), orders_total))
        for who, order, code, msg in camp.errors:
            c.check(False, "%s: pay_submit(%s) failed with %d: %s" % (who, order, code, msg))
        kills = sum(camp.kills.values())
        c.check(kills >= args.kills, "only %d kills within %.0f s (wanted %d)" % (kills, args.time_limit, args.kills))

        expected = {camp.prefix + str(i) for i in range(orders_total)}
        c.check(set(rows) == expected,
                "ledger orders differ from those submitted: missing %s, extra %s" %
                (sorted(expected - set(rows))[:5], sorted(set(rows) - expected)[:5]))
        c.check(set(by_order) <= expected, "the simulator charged orders nobody submitted: %s" %
                sorted(set(by_order) - expected)[:5])
        c.check(truth["duplicates"] == 0, "simulator reports %d orders charged more than once" % truth["duplicates"])
        c.check(stats.get("key_reused_422", 0) == 0,
                "the simulator saw %d requests reusing a key with other bytes" % stats.get("key_reused_422", 0))

        states = collections.Counter()
        unknown_charged = unknown_uncharged = 0
        for order in sorted(rows):
            p = rows[order]
            n = by_order.get(order, 0)
            st = p["state"]
            states[st] += 1
            c.check(n <= 1, "%s charged %d times (ledger: %s)" % (order, n, st))
            if st == "SUCCEEDED":
                if c.check(n == 1, "%s is SUCCEEDED in the ledger but charged %d times" % (order, n)):
                    ids = sim.truth_of(order)["ids"]
                    c.check(p["provider_payment_id"] in ids,
                            "%s: ledger provider_payment_id %s, simulator charge %s" %
                            (order, p["provider_payment_id"], ids))
            elif st == "FAILED":
                c.check(n == 0, "%s is FAILED in the ledger but charged %d times" % (order, n))
            elif st == "UNKNOWN":
                if n:
                    unknown_charged += 1
                else:
                    unknown_uncharged += 1
            else:
                c.check(False, "%s left %s after the final worker (lease_until %s)" % (order, st, p["lease_until"]))
            c.check(p["lease_owner"] is None or st in ("PENDING", "IN_FLIGHT"),
                    "%s is %s but still leased to %s" % (order, st, p["lease_owner"]))

        # What every worker was told agrees with the truth, and every process
        # used the key the ledger committed first.
        for order, seen in camp.results.items():
            n = by_order.get(order, 0)
            key = rows.get(order, {}).get("idempotency_key")
            for outcome, from_ledger, k, who in seen:
                if outcome == "SUCCEEDED":
                    c.check(n == 1, "%s told %s SUCCEEDED but it is charged %d times" % (who, order, n))
                elif outcome == "FAILED":
                    c.check(n == 0, "%s told %s FAILED but it is charged %d times" % (who, order, n))
                c.check(k == key, "%s used key %s for %s, the ledger holds %s" % (who, k, order, key))

        # Every attempt any process was about to send, killed ones included,
        # carried the key the ledger holds: no process ever made up another.
        sends, torn = cl.read_send_log(send_log)
        for order, ss in sends.items():
            key = rows.get(order, {}).get("idempotency_key")
            c.check(order in expected, "a send for an order nobody submitted: %s" % order)
            for k, attempt, at_ms, pid in ss:
                c.check(k == key, "pid %d was about to send %s attempt %d with key %s; the ledger holds %s" %
                        (pid, order, attempt, k, key))
        max_sends = max((len(v) for v in sends.values()), default=0)
        senders = max((len({s[3] for s in v}) for v in sends.values()), default=0)
        multi = sum(1 for v in sends.values() if len({s[3] for s in v}) > 1)

        charges = truth["charges"]
        log("")
        log("kill phase: %.1f s, %d worker launches %s" % (kill_phase, sum(camp.launches.values()),
                                                            dict(camp.launches)))
        log("kills: %d %s" % (kills, dict(camp.kills)))
        log("orders: %d in %d batches; simulator: %d requests, %d charges on %d orders, duplicates %d, "
            "replays %d, 409 in use %d, 422 reused %d" %
            (orders_total, camp.next_batch, stats["requests"], charges, truth["orders"], truth["duplicates"],
             stats.get("replays", 0), stats.get("in_use_409", 0), stats.get("key_reused_422", 0)))
        log("faults injected: %s" % {k: v for k, v in stats.get("faults", {}).items() if v})
        log("request hook: %d attempts about to be sent, up to %d for one order; %d orders were sent by more "
            "than one process (up to %d)%s" % (sum(len(v) for v in sends.values()), max_sends, multi, senders,
                                              "; %d torn send-log lines ignored" % torn if torn else ""))
        log("ledger when the killing stopped: %s" % dict(before_final))
        log("lane results printed: %s" % dict(camp.outcomes))
        log("final worker: %s (%.1f s)" % (dict(final_outcomes), final.elapsed))
        log("ledger states: %s; UNKNOWN charged %d / not charged %d" %
            (dict(states), unknown_charged, unknown_uncharged))
        ok = c.report()
        log("%s in %.1f s (seed %d)" % ("PASS" if ok else "FAIL", time.monotonic() - started, args.seed))
    except cl.TestFailure as e:
        log("FAIL: %s (seed %d)" % (e, args.seed))
    except KeyboardInterrupt as e:
        log("interrupted (%s): cleaning up" % (e or "Ctrl-C"))
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
