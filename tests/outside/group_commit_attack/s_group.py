"""Scenarios 3 and 4: what one group commit holds, 16 threads released by
one barrier per round on a SQLite ledger on disk.

 dup:   one event id delivered by every thread at once (same bytes, or
        signed at different seconds): applied once, every other copy a
        duplicate, all 2xx, one entry on the row;
 mixed: eight UNKNOWN payments, each sent its success and its failure at
        once (both provably this payment's): one outcome settles the row,
        the other is recorded and never moves it; the replies agree with the
        row; and an event that contradicts what the row settled to is
        reported as a conflict (docs/webhooks.md: "An event that
        contradicts it is recorded, reported as a conflict");
 ghost: a round mixing events for unknown orders (kept) with settling
        events: the kept ones are stored unapplied and answered "kept".

usage: s_group.py [--seed N] [--rounds R]"""
import argparse
import json
import os
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gca  # noqa: E402
from rounds import reply_events, run_rounds  # noqa: E402

THREADS = 16
SETTLES = {"s": "SUCCEEDED", "f": "FAILED"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=int(os.environ.get("GCA_SEED", "1")))
    ap.add_argument("--rounds", type=int, default=60)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    double = gca.StripeDouble()
    path = os.path.join(tempfile.mkdtemp(prefix="gca_group_"), "ledger.db")
    client = gca.Client(gca.config(double.url, path))
    problems = []
    stats = {"dup": {"rounds": 0, "deliveries": 0, "effects": {}},
             "mixed": {"rounds": 0, "payments": 0, "effects": {}, "unreported_conflicts": 0,
                       "reported_conflicts": 0},
             "ghost": {"rounds": 0, "kept": 0, "effects": {}}}
    n = a.rounds
    # Payments to settle: the dup rounds' (one each), the mixed rounds' (8
    # each), the ghost rounds' (8 each); nearly all UNKNOWN.
    orders = ["g-o%05d" % i for i in range(n * 17)]
    initial = gca.make_payments(client, double, orders, rng, unknown=0.9, declined=0.05)
    it = iter(orders)
    acked = {}
    last = {}

    def note(kind, reps):
        for rep in reps:
            for e in rep:
                d = stats[kind]["effects"]
                d[e["effect"]] = d.get(e["effect"], 0) + 1

    for r in range(n):
        kind = ("dup", "mixed", "ghost")[r % 3]
        stats[kind]["rounds"] += 1
        if kind == "dup":
            o = next(it)
            eid = "evt_%s_%s" % (rng.choice("sf"), o)
            body = gca.events_for(o, initial[o])[eid]
            skew = rng.random() < 0.5
            # Signed at different seconds: the same event as a provider's
            # retry would carry it (its signature covers a new timestamp).
            rnd = [(eid, body) for _ in range(THREADS)]
            out, errs = run_rounds_signed(client, rnd, skew)
            reps = [(item[0], item[1]) for item in out[0] if item]
            stats["dup"]["deliveries"] += len(reps)
            evs = [reply_events(rep) for _, rep in reps]
            note("dup", evs)
            statuses = sorted(set(rep["status"] for _, rep in reps))
            firsts = [e for ev in evs for e in ev if e["effect"] != "duplicate"]
            if statuses != [200] or len(firsts) != 1:
                problems.append("dup round %d (%s, skewed=%s): statuses %s, non-duplicate answers %s"
                                % (r, eid, skew, statuses, firsts))
            for _, rep in reps:
                acked.setdefault(eid, []).extend(reply_events(rep))
        elif kind == "mixed":
            rnd = []
            group = [next(it) for _ in range(8)]
            for o in group:
                evs = gca.events_for(o, initial[o])
                rnd += [("evt_s_" + o, evs["evt_s_" + o]), ("evt_f_" + o, evs["evt_f_" + o])]
            rng.shuffle(rnd)
            out, errs = run_rounds(client, [rnd], THREADS)
            by_order = {}
            for item in out[0]:
                if not item:
                    continue
                eid, rep = item
                if not 200 <= rep["status"] < 300:
                    problems.append("mixed round %d: %s answered %d" % (r, eid, rep["status"]))
                    continue
                acked.setdefault(eid, []).extend(reply_events(rep))
                for e in reply_events(rep):
                    by_order.setdefault(e["order_id"], []).append((eid, e))
                note("mixed", [reply_events(rep)])
            for o in group:
                row = client.get(o)["payment"]
                stats["mixed"]["payments"] += 1
                got = by_order.get(o, [])
                for eid, e in got:
                    # A settled state read after the event's own commit is final.
                    if e["state_after"] in ("SUCCEEDED", "FAILED") and e["state_after"] != row["state"]:
                        problems.append("mixed round %d: %s answered state_after %s, the row is %s"
                                        % (r, eid, e["state_after"], row["state"]))
                if initial[o]["state"] != "UNKNOWN":
                    continue
                settled = [eid for eid, e in got if e["effect"] == "settled"]
                if len(settled) != 1 or SETTLES[settled[0][4]] != row["state"]:
                    problems.append("mixed round %d: %s is %s, settled by %s" % (r, o, row["state"], settled))
                losers = [(eid, e) for eid, e in got if eid not in settled]
                for eid, e in losers:
                    if SETTLES[eid[4]] != row["state"]:
                        if e["effect"] == "conflict":
                            stats["mixed"]["reported_conflicts"] += 1
                        else:
                            stats["mixed"]["unreported_conflicts"] += 1
                            problems.append("mixed round %d: %s says %s, the row settled %s (both sent at the same instant); "
                                            "answered %r, not conflict: %s" % (r, eid, SETTLES[eid[4]], row["state"],
                                                                               e["effect"], json.dumps(e)))
        else:
            rnd = []
            for g in range(8):
                geid, gbody = gca.ghost_event("r%dg%d" % (r, g))
                rnd.append((geid, gbody))
            for _ in range(8):
                o = next(it)
                eid = "evt_s_" + o
                rnd.append((eid, gca.events_for(o, initial[o])[eid]))
            rng.shuffle(rnd)
            out, errs = run_rounds(client, [rnd], THREADS)
            for item in out[0]:
                eid, rep = item
                evs = reply_events(rep)
                note("ghost", [evs])
                if not 200 <= rep["status"] < 300:
                    problems.append("ghost round %d: %s answered %d" % (r, eid, rep["status"]))
                    continue
                acked.setdefault(eid, []).extend(evs)
                if eid.startswith("evt_g_"):
                    if [e["effect"] for e in evs] != ["kept"]:
                        problems.append("ghost round %d: %s answered %s" % (r, eid, evs))
                    stats["ghost"]["kept"] += 1
        for eid, e in errs:
            problems.append("round %d: %s failed outright: %s" % (r, eid, e))
    client.close()
    double.close()
    before = len(problems)
    gca.check_ledger(path, "http://127.0.0.1:9", initial, acked, last, problems, "seed %d at the end" % a.seed)
    _, evs = gca.read_store(path)
    for eid in acked:
        if eid.startswith("evt_g_") and evs.get(eid, {}).get("applied_to", "x") != "":
            problems.append("%s: a ghost event is not kept unapplied: %s" % (eid, evs.get(eid)))
    print(json.dumps(stats, sort_keys=True), flush=True)
    seen = set()
    for p in problems:
        # One line per kind of problem is enough to read; all are counted.
        k = p.split(":")[0].split(" round")[0]
        if k in seen and "not conflict" in p:
            continue
        seen.add(k)
        print("PROBLEM", p, flush=True)
    final = problems[before:]
    for kind in ("dup", "mixed", "ghost"):
        mine = [p for p in problems[:before] if p.startswith(kind + " round")]
        print("[%s] %s (seed %d): %d problems" % ("BROKEN" if mine else "HELD", kind, a.seed, len(mine)), flush=True)
    print("[%s] the ledger after every round (seed %d, %s): %d problems"
          % ("BROKEN" if final else "HELD", a.seed, path, len(final)), flush=True)
    return 1 if problems else 0


def run_rounds_signed(client, rnd, skew):
    """One round where each copy may be signed a different second earlier."""
    import threading
    bar = threading.Barrier(len(rnd))
    out = [None] * len(rnd)
    errs = []

    def run(i):
        eid, body = rnd[i]
        import time
        sig = gca.sign(body, t=int(time.time()) - (i if skew else 0))
        bar.wait()
        try:
            out[i] = (eid, client.webhook(body, sig))
        except Exception as e:
            errs.append((eid, repr(e)))

    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(rnd))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return [out], errs


if __name__ == "__main__":
    sys.exit(main())
