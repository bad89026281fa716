#!/usr/bin/env python3
"""The outage benchmark's clock and its report (tests/bench/outage.sh).

run:    drives one timeline against a running simulator: healthy, then every create answered
        503, then healed; samples the simulator's counters every 0.2 s and prints one JSON line
        per sample (time, phase, requests, repeat_creates, charges, load).
report: reads the samples of each in-flight level and prints the table.
"""
import argparse
import json
import statistics
import time
import urllib.request

SAMPLE_S = 0.2


def admin(url, method, name, body=None):
    req = urllib.request.Request(f"{url}/__admin/{name}", method=method,
                                 data=body.encode() if body is not None else None)
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.read().decode()


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run(a):
    def faults(spec):
        admin(a.url, "POST", "config", json.dumps({"latency_ms": a.latency_ms, "seed": 42, "faults": spec}))

    t0 = time.monotonic()
    phases = [("before", a.before_s, None), ("outage", a.outage_s, {"503": 1.0}), ("after", a.after_s, {})]
    for phase, seconds, spec in phases:
        if spec is not None:
            faults(spec)
            print(json.dumps({"t": time.monotonic() - t0, "event": phase}), flush=True)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(SAMPLE_S)
            s = json.loads(admin(a.url, "GET", "stats"))
            print(json.dumps({"t": time.monotonic() - t0, "phase": phase, "requests": s["requests"],
                              "repeats": s["repeat_creates"], "charges": s["charges"], "load": loadavg()}),
                  flush=True)


def summarize(path):
    rows, events = [], {}
    for line in open(path):
        d = json.loads(line)
        if "event" in d:
            events[d["event"]] = d["t"]
        else:
            rows.append(d)

    def rate(i, key):  # per second, over the sample before row i
        if key == "first":
            v = lambda r: r["requests"] - r["repeats"]
        else:
            v = lambda r: r[key]
        return (v(rows[i]) - v(rows[i - 1])) / (rows[i]["t"] - rows[i - 1]["t"])

    before = [i for i in range(1, len(rows)) if rows[i]["phase"] == "before" and rows[i]["t"] > 2.0]
    healthy_first = statistics.median(rate(i, "first") for i in before)
    # The outage's totals: from the last healthy sample to the last outage one.
    last_before = max(i for i in range(len(rows)) if rows[i]["phase"] == "before")
    last_outage = max(i for i in range(len(rows)) if rows[i]["phase"] == "outage")
    a, b = rows[last_before], rows[last_outage]
    first = (b["requests"] - b["repeats"]) - (a["requests"] - a["repeats"])
    repeats = b["repeats"] - a["repeats"]
    # Recovered: the first moment after healing from which, over a 1 s window, at least 90 % of
    # the payments sent are charged again. (Not a rate against the healthy phase: this machine's
    # other load moves the rates by more than the outage's after-effects would.)
    heal = events["after"]
    after = [i for i in range(len(rows)) if rows[i]["phase"] == "after"]
    recovered = None
    window = int(round(1.0 / SAMPLE_S))
    first_sends = lambda r: r["requests"] - r["repeats"]
    for k in range(len(after) - window + 1):
        lo, j = after[k] - 1, after[k + window - 1]
        sent = first_sends(rows[j]) - first_sends(rows[lo])
        if sent > 0 and rows[j]["charges"] - rows[lo]["charges"] >= 0.9 * sent:
            recovered = max(0.0, rows[lo]["t"] - heal)
            break
    loads = [r["load"] for r in rows]
    return healthy_first, first, repeats, recovered, min(loads), max(loads)


def report(a):
    print("payretry under a full provider outage: every create answered 503, then healed")
    print(f"machine: {a.machine}")
    print(f"date:    {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"command: {a.command}")
    print(f"simulator latency {a.latency_ms} ms. first: creates with a key the simulator had not seen; "
          "repeats: creates with a key it had (the retries)")
    print()
    print(f"{'in flight':>9}  {'healthy first/s':>15}  {'outage first':>12}  {'outage repeats':>14}  "
          f"{'repeats/first':>13}  {'recovered after':>15}  {'load (1 min)':>12}")
    for spec in a.series:
        level, path = spec.split("=", 1)
        hf, first, repeats, rec, lmin, lmax = summarize(path)
        rec_s = f"{rec:.1f} s" if rec is not None else "not in the run"
        print(f"{level:>9}  {hf:>15.0f}  {first:>12}  {repeats:>14}  {100.0 * repeats / max(1, first):>12.2f}%  "
              f"{rec_s:>15}  {lmin:>5.2f}-{lmax:<5.2f}")
    print()
    print("recovered after: from healing to the start of the first 1 s window in which charges are at least")
    print("90 % of first sends (samples every 0.2 s, so 0.2 s is the finest this can say)")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--url", required=True)
    r.add_argument("--latency-ms", type=int, default=100)
    r.add_argument("--before-s", type=float, default=10)
    r.add_argument("--outage-s", type=float, default=30)
    r.add_argument("--after-s", type=float, default=15)
    q = sub.add_parser("report")
    q.add_argument("--command", default="")
    q.add_argument("--machine", default="")
    q.add_argument("--latency-ms", type=int, default=100)
    q.add_argument("--series", action="append", default=[])
    a = p.parse_args()
    run(a) if a.cmd == "run" else report(a)


if __name__ == "__main__":
    main()
