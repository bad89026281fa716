"""Scenario 2, failed commits: events delivered 16 at a time (one barrier,
so they share group commits) while the commit cannot succeed:

 - disk full: the ledger on a small tmpfs (needs root to mount), filled to
   the last byte, or to within a few KB, between rounds, and freed again;
 - locked: another process holds the ledger's write lock (BEGIN IMMEDIATE)
   longer than the ledger's timeout_ms.

Every reply must match the ledger: a 2xx event stored with its change, a
non-2xx event not stored and nothing of it written; afterwards each event
that was refused is delivered again and must be stored once (2xx, not a
duplicate), and a third delivery is a duplicate.

usage: s_fail.py [--seed N] [--rounds R] [--mode full|lock|both]"""
import argparse
import errno
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gca  # noqa: E402
from rounds import reply_events, run_rounds  # noqa: E402

THREADS = 16


def fill(mnt, slack, rng):
    """Fills the filesystem, then gives `slack` bytes back."""
    path = os.path.join(mnt, "filler")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for chunk in (1 << 16, 4096, 512):
            b = b"\0" * chunk
            while True:
                try:
                    os.write(fd, b)
                except OSError as e:
                    if e.errno in (errno.ENOSPC, errno.EFBIG):
                        break
                    raise
    finally:
        os.close(fd)
    if slack:
        size = os.path.getsize(path)
        os.truncate(path, max(0, size - slack))


def unfill(mnt):
    try:
        os.unlink(os.path.join(mnt, "filler"))
    except FileNotFoundError:
        pass


HOLDER = r"""
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("ROLLBACK")
"""


def one_mode(mode, seed, n_rounds, problems, report):
    rng = random.Random("%s-%d" % (mode, seed))
    mnt = tempfile.mkdtemp(prefix="gca_fail_")
    mounted = False
    if mode == "full":
        if os.geteuid() != 0:
            report.append({"mode": mode, "skipped": "not root: cannot mount a small tmpfs"})
            return
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", mnt], check=True)
        mounted = True
    double = gca.StripeDouble()
    try:
        path = os.path.join(mnt, "ledger.db")
        cfg = gca.config(double.url, path, timeout_ms=300 if mode == "lock" else None)
        client = gca.Client(cfg)
        per_round = THREADS - 1  # one event goes to two threads
        orders = ["%s-o%04d" % (mode, i) for i in range(n_rounds * per_round)]
        initial = gca.make_payments(client, double, orders, rng)
        events = {}
        rounds = []
        for r in range(n_rounds):
            rnd = []
            for o in orders[r * per_round:(r + 1) * per_round]:
                kind = rng.choice("ssf")
                eid = "evt_%s_%s" % (kind, o)
                body = gca.events_for(o, initial[o])[eid]
                events[eid] = body
                rnd.append((eid, body))
            rnd.append(rnd[rng.randrange(len(rnd))])  # the same event twice in the round
            rng.shuffle(rnd)
            rounds.append(rnd)
        holders = []
        plan = []

        def between(i):
            if mode == "full":
                what = rng.choice(["full", "full", "tight", "tight", "free"])
                unfill(mnt)
                if what == "full":
                    fill(mnt, 0, rng)
                elif what == "tight":
                    fill(mnt, rng.choice([4096, 8192, 16384, 32768, 65536]), rng)
            else:
                what = rng.choice(["held", "held", "free"])
                if what == "held":
                    p = subprocess.Popen([sys.executable, "-c", HOLDER, path, "%.2f" % rng.uniform(0.2, 0.9)],
                                         stdout=subprocess.PIPE, text=True)
                    p.stdout.readline()
                    holders.append(p)
            plan.append(what)

        t0 = time.time()
        out, errors = run_rounds(client, rounds, THREADS, between)
        for p in holders:
            p.wait()
        unfill(mnt)
        for eid, e in errors:
            problems.append("%s seed %d: %s: the call failed outright: %s" % (mode, seed, eid, e))
        acked, naked = {}, {}
        mixed_rounds = 0
        per_plan = {}
        for i, rnd in enumerate(out):
            st = set()
            for item in rnd:
                if not item:
                    continue
                eid, rep = item
                ok = 200 <= rep["status"] < 300
                st.add(ok)
                (acked if ok else naked).setdefault(eid, []).extend(reply_events(rep))
                k = per_plan.setdefault(plan[i], [0, 0])
                k[0 if ok else 1] += 1
            mixed_rounds += len(st) == 2
        # Before any redelivery: what was refused must not be stored, and
        # nothing may be half written (check_ledger: entry <=> stored event).
        _, evs = gca.read_store(path)
        stored_but_refused = sorted(e for e in naked if e in evs and e not in acked)
        if stored_but_refused:
            # Not a loss (the redelivery is a duplicate and answered 2xx), but not "not stored" either.
            problems.append("%s seed %d: answered non-2xx yet stored: %s" % (mode, seed, stored_but_refused[:5]))
        ack_and_nak = sorted(set(acked) & set(naked))
        n_acked_in_rounds = len(acked)
        last = {}
        res = gca.check_ledger(path, double.url, initial, acked, last, problems, "%s seed %d after the rounds"
                               % (mode, seed))
        # The provider delivers again what was refused; once more after that.
        retry = [e for e in sorted(naked) if e not in acked]
        re_out1, err1 = run_rounds(client, [[(e, events[e]) for e in retry[j:j + THREADS]]
                                            for j in range(0, len(retry), THREADS)], THREADS)
        re_out2, err2 = run_rounds(client, [[(e, events[e]) for e in retry[j:j + THREADS]]
                                            for j in range(0, len(retry), THREADS)], THREADS)
        first_effects, second_effects = {}, {}
        for outs, effects, want_dup in ((re_out1, first_effects, False), (re_out2, second_effects, True)):
            for rnd in outs:
                for item in rnd:
                    if not item:
                        continue
                    eid, rep = item
                    evs_r = reply_events(rep)
                    for e in evs_r:
                        effects[e["effect"]] = effects.get(e["effect"], 0) + 1
                    if not 200 <= rep["status"] < 300:
                        problems.append("%s seed %d: redelivery of %s answered %d: %s" % (mode, seed, eid,
                                                                                         rep["status"], evs_r))
                        continue
                    acked.setdefault(eid, []).extend(evs_r)
                    if any((e["effect"] == "duplicate") != want_dup for e in evs_r):
                        problems.append("%s seed %d: redelivery %s of %s: %s" % (mode, seed, "2" if want_dup else "1",
                                                                                 eid, evs_r))
        gca.check_ledger(path, double.url, initial, acked, last, problems, "%s seed %d after redelivery"
                         % (mode, seed))
        client.close()
        report.append({"mode": mode, "seed": seed, "rounds": n_rounds, "threads": THREADS,
                       "deliveries": sum(len(r) for r in rounds), "between_rounds": per_plan,
                       "events_2xx": n_acked_in_rounds, "events_refused": len(naked),
                       "events_2xx_and_refused_in_one_round": len(ack_and_nak),
                       "rounds_with_both_answers": mixed_rounds, "redelivery_1": first_effects,
                       "redelivery_2": second_effects, "seconds": round(time.time() - t0, 1)})
    finally:
        double.close()
        if mounted:
            subprocess.run(["umount", mnt], check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=int(os.environ.get("GCA_SEED", "1")))
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--mode", default="both")
    a = ap.parse_args()
    problems, report = [], []
    for m in (["full", "lock"] if a.mode == "both" else [a.mode]):
        one_mode(m, a.seed, a.rounds, problems, report)
    for r in report:
        print(json.dumps(r, sort_keys=True), flush=True)
    for p in problems:
        print("PROBLEM", p, flush=True)
    print("[%s] failed commits (seed %d): %d problems" % ("BROKEN" if problems else "HELD", a.seed, len(problems)),
          flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
