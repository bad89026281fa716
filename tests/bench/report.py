#!/usr/bin/env python3
"""The benchmark's bookkeeping, for run_bench.sh.

  report.py annotate ...   one runner's JSON line + the simulator's truth and stats after the
                           run -> one result line (duplicates, requests per payment, added
                           latency over the simulator's own)
  report.py table ...      every result line -> the table, the targets and the scaling section
  report.py wrk ...        runs wrk, prints its requests/s and CPU as one runner's JSON line
  report.py transport-annotate / transport-table ...
                           the same two steps for transport_limit.sh (nginx, interleaved rounds)

Everything compared is compared within one run (ratios to payretry with the memory ledger in
the same scenario and in-flight level): absolute figures move with whatever else the machine
is doing, ratios much less.
"""
import argparse
import json
import os
import sys
import time

BASE = "payretry-memory"
ORDER = ["curl", "payretry-memory", "payretry-sqlite", "payretry-pg", "payretry-threads", "stripe-python", "requests",
         "go-retryablehttp", "stripe-go"]
PEERS = ["stripe-python", "requests", "go-retryablehttp", "stripe-go"]


def load(path, default):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def result_or_error(line, rc, log):
    """A runner's last line as its result, or an error naming how it ended (its log's tail)."""
    try:
        r = json.loads(line)
        if not isinstance(r, dict) or "payments_per_s" not in r:
            raise ValueError("not a result line")
        return r
    except ValueError:
        tail = ""
        try:
            with open(log) as f:
                tail = " | ".join(f.read().strip().splitlines()[-3:])
        except OSError:
            pass
        return {"error": f"runner exited {rc}: {tail or 'no output'}"[:300]}


def annotate(a):
    r = result_or_error(a.line, a.rc, a.log)
    truth = load(a.truth, {})
    stats = load(a.stats, {})
    r["id"] = a.client
    r["scenario"] = a.scenario
    r["inflight"] = a.inflight
    r["payments"] = r.get("payments", a.payments)
    r["latency_ms"] = a.latency_ms
    r["duplicates"] = truth.get("duplicates")
    r["charges"] = truth.get("charges")
    r["orders"] = truth.get("orders")
    requests = stats.get("requests", truth.get("requests"))
    r["sim_requests"] = requests
    if requests is not None and r["payments"]:
        r["requests_per_payment"] = requests / r["payments"]
    for q in ("p50", "p99"):
        if f"{q}_ms" in r:
            r[f"added_{q}_ms"] = r[f"{q}_ms"] - a.latency_ms
    print(json.dumps(r, sort_keys=True))


def outcomes_text(o):
    if not o:
        return ""
    main = [("succeeded", "ok"), ("failed", "fail"), ("unknown", "unk")]
    parts = [f"{short} {o[k]}" for k, short in main if o.get(k)]
    other = {k: v for k, v in o.items() if k not in dict(main)}
    parts += [f"{k} {v}" for k, v in sorted(other.items())]
    return ", ".join(parts)


def final_pct(r):
    """Share of payments that ended with a definitive answer (succeeded or declined)."""
    o = r.get("outcomes") or {}
    n = r.get("payments") or 0
    return f"{100.0 * (o.get('succeeded', 0) + o.get('failed', 0)) / n:.0f}%" if n else "-"


def fmt(v, spec):
    if v is None:
        width = "".join(ch for ch in spec.split(".")[0] if ch.isdigit())
        return "-".rjust(int(width) if width else 1)
    return format(v, spec)


def ratio(a, b):
    return None if a is None or not b else a / b


def fsync_rate(directory, seconds=1.0):
    """fdatasync()s per second of one small append: the commit rate without group commit."""
    path = os.path.join(directory, "fsync.probe")
    n = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        end = time.perf_counter() + seconds
        start = time.perf_counter()
        while time.perf_counter() < end:
            os.write(fd, b"x" * 64)
            os.fdatasync(fd)
            n += 1
        return n / (time.perf_counter() - start)
    finally:
        os.close(fd)
        os.unlink(path)


def table(a):
    rows = []
    with open(a.results) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    out = []
    p = out.append
    p("payretry benchmark: payments against payretry-sim (fixed latency "
      f"{a.latency_ms} ms per request; chaos = .ci/demo's fault mix)")
    p(f"machine: {a.machine}")
    p(f"date:    {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    p(f"command: {a.command}")
    p("payretry runs on its concurrent engine (pay_submit_async: engine threads as the config's "
      "default gives them, one per core and at least one per 1,000 connections, each with its own curl multi "
      "and group commit); 'payretry (thr)' is the blocking pay_submit with one thread per payment in "
      "flight (capped at 1000), for comparison.")
    p("Ratios are to payretry-memory in the same scenario and in-flight level, within this run: "
      "x thr > 1 = more payments/s than payretry; x cpu > 1 = more CPU per payment than payretry.")
    p("final: payments that ended definitive (succeeded or declined); the rest ended UNKNOWN (payretry) "
      "or with an error/exception (others).")
    p("+p50/+p99: latency per payment (first send to final answer) minus the simulator's own latency. "
      "req/pay: requests the simulator saw per payment. dup: orders charged more than once "
      "(the simulator's truth).")
    if a.skipped.strip():
        p(f"skipped (could not install): {a.skipped.strip()}")
    p("")
    head = (f"{'client':<17} {'ledger':<10} {'scen':<5} {'infl':>4} {'pays':>5} {'payments/s':>10} "
            f"{'x thr':>6} {'p50 ms':>8} {'+p50':>7} {'+p99':>8} {'CPU s/1k':>9} {'x cpu':>6} "
            f"{'RSS MB':>7} {'req/pay':>7} {'final':>5} {'dup':>4}  outcomes")
    p(head)
    p("-" * len(head))
    groups = {}
    for r in rows:
        groups.setdefault((r["scenario"], int(r["inflight"])), []).append(r)
    scen_order = {"none": 0, "chaos": 1}
    for key in sorted(groups, key=lambda k: (scen_order.get(k[0], 9), k[1])):
        g = sorted(groups[key], key=lambda r: ORDER.index(r["id"]) if r["id"] in ORDER else 99)
        base = next((r for r in g if r["id"] == BASE and "error" not in r), None)
        for r in g:
            name = ("payretry (thr)" if r["id"] == "payretry-threads"
                    else "payretry" if r["id"].startswith("payretry-") else r.get("client", r["id"]))
            ledger = r.get("ledger", "-")
            if "error" in r:
                p(f"{r['id']:<17} {'':<10} {r['scenario']:<5} {r['inflight']:>4} {r['payments']:>5} "
                  f"ERROR {r['error']}")
                continue
            thr = ratio(r["payments_per_s"], base and base["payments_per_s"])
            cpu = ratio(r["cpu_s_per_1000"], base and base["cpu_s_per_1000"])
            p(f"{name:<17} {ledger:<10} {r['scenario']:<5} {r['inflight']:>4} {r['payments']:>5} "
              f"{r['payments_per_s']:>10.1f} {fmt(thr, '6.2f')} {r['p50_ms']:>8.1f} "
              f"{r.get('added_p50_ms', 0):>7.1f} {r.get('added_p99_ms', 0):>8.1f} "
              f"{r['cpu_s_per_1000']:>9.3f} {fmt(cpu, '6.2f')} {r['peak_rss_mb']:>7.1f} "
              f"{fmt(r.get('requests_per_payment'), '7.2f')} {final_pct(r):>5} {fmt(r.get('duplicates'), '>4')}  "
              f"{outcomes_text(r.get('outcomes'))}")
        p("")

    # ---- targets --------------------------------------------------------------------------------
    p("Targets (issue 8), per scenario and in-flight level:")
    rates = [float(x) for x in a.fsync_rate.split() if x]
    if rates:
        lo, hi = min(rates), max(rates)
        p(f"  fdatasync rate of the SQLite ledger's directory, before and after the runs: "
          f"{' and '.join(f'{r:.0f}/s' for r in rates)}; without group commit a durable ledger "
          f"is limited to about {lo / 2:.0f}-{hi / 2:.0f} payments/s (two commits per payment)")
    for key in sorted(groups, key=lambda k: (scen_order.get(k[0], 9), k[1])):
        g = {r["id"]: r for r in groups[key] if "error" not in r}
        curl = g.get("curl")
        mem = g.get(BASE)
        sql = g.get("payretry-sqlite")
        items = []
        if key[0] != "none" and curl:
            items.append("raw multi does not retry (its failures end early): no transport-limit ratio")
            curl = None
        if curl and mem:
            v = mem["payments_per_s"] / curl["payments_per_s"]
            items.append(f"memory/raw {v:.2f}x ({'met' if v >= 0.8 else 'MISSED'}, target 0.8)")
        if curl and sql:
            v = sql["payments_per_s"] / curl["payments_per_s"]
            items.append(f"sqlite/raw {v:.2f}x ({'met' if v > 0.5 else 'MISSED'}, target >0.5)")
        if mem:
            slower = [pid for pid in PEERS if pid in g and g[pid]["payments_per_s"] > mem["payments_per_s"] * 1.02]
            costlier = [pid for pid in PEERS if pid in g and g[pid]["cpu_s_per_1000"] < mem["cpu_s_per_1000"]]
            present = [pid for pid in PEERS if pid in g]
            if present:
                items.append("ahead of every peer in payments/s: " + ("yes" if not slower else "NO (" + ", ".join(slower) + ")"))
                items.append("in CPU/payment: " + ("yes" if not costlier else "NO (" + ", ".join(costlier) + ")"))
        if items:
            p(f"  {key[0]:<5} {key[1]:>4} in flight: " + "; ".join(items))
    for r in rows:
        reasons = r.get("reasons") or {}
        unk = {}
        for k, v in reasons.items():
            if k.startswith("unknown: "):
                why = k[len("unknown: "):].split(" (")[0]
                unk[why] = unk.get(why, 0) + v
        if unk:
            p(f"  why payretry said UNKNOWN, {r['id']} {r['scenario']}/{r['inflight']}: " +
              ", ".join(f"{k} {v}" for k, v in sorted(unk.items(), key=lambda x: -x[1])))
    dups = [(r["id"], r["scenario"], r["inflight"], r["duplicates"]) for r in rows if r.get("duplicates")]
    p("  duplicate charges: " + ("none, for every client" if not dups else
                                 "; ".join(f"{c} {s}/{i}: {d}" for c, s, i, d in dups)))
    p("")

    # ---- scaling ------------------------------------------------------------------------------
    p("Scaling (payretry-memory, concurrent engine):")
    for scen in ("none", "chaos"):
        c10 = groups.get((scen, 10))
        c1000 = groups.get((scen, 1000))
        get = lambda g: next((r for r in g or [] if r["id"] == BASE and "error" not in r), None)
        r10, r1000 = get(c10), get(c1000)
        if r10 and r1000:
            p(f"  CPU per 1,000 payments, {scen}: {r10['cpu_s_per_1000']:.3f} s at 10 in flight, "
              f"{r1000['cpu_s_per_1000']:.3f} s at 1,000 ({r1000['cpu_s_per_1000'] / r10['cpu_s_per_1000']:.2f}x)")
    for spec in a.rss:
        label, _, path = spec.rpartition("=")  # the label may be a URL with "="
        rss = []
        if path and os.path.exists(path):
            with open(path) as f:
                for line in f:
                    try:
                        d = json.loads(line)
                    except ValueError:
                        continue
                    if d.get("kind") == "rss":
                        rss.append(d)
        if not rss:
            p(f"  RSS curve, {label} ledger: no samples (the run failed)")
            continue
        where = " (on tmpfs)" if label == "sqlite" else ""
        p(f"  RSS across payments, {label} ledger{where} (100 in flight, latency 0, no faults):")
        p(f"    {'payments':>9} {'RSS MB':>8}")
        for d in rss:
            p(f"    {d['payments']:>9} {d['rss_mb']:>8.1f}")
        first, last = rss[0], rss[-1]
        per = (last["rss_mb"] - first["rss_mb"]) * 1024 * 1024 / max(1, last["payments"] - first["payments"])
        p(f"    growth {last['rss_mb'] - first['rss_mb']:+.1f} MB from {first['payments']} to "
          f"{last['payments']} payments ({per:.0f} bytes per payment)")
    print("\n".join(out))


# ---- transport_limit.sh -----------------------------------------------------------------------
TRANSPORT_ROWS = ["wrk", "curl", "memory", "memory+log", "sqlite", "sqlite+log", "memory-threads",
                  "memory-threads+keys", "memory-refund", "sqlite-threads", "sqlite-threads+keys", "sqlite-refund"]
TRANSPORT_BASE = "curl"


def run_wrk(a):
    """wrk as a runner: requests/s and its own CPU (getrusage of the child) as one JSON line."""
    import resource
    import re
    import subprocess
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([a.wrk, "-t1", f"-c{a.connections}", f"-d{a.seconds}s", "-s", a.script, a.url],
                       capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    sys.stderr.write(p.stdout + p.stderr)
    m = re.search(r"^Requests/sec:\s*([0-9.]+)", p.stdout, re.M)
    total = re.search(r"^\s*(\d+) requests in ([0-9.]+)(m?s)", p.stdout, re.M)
    if p.returncode != 0 or not m or not total:
        return p.returncode or 1
    n = int(total.group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", p.stdout)
    errors = re.search(r"Socket errors:.*", p.stdout)
    bad = int(non2xx.group(1)) if non2xx else 0
    outcomes = {"succeeded": n - bad}
    if bad:
        outcomes["non_2xx"] = bad
    if errors:
        outcomes["socket_errors: " + errors.group(0)] = 1
    print(json.dumps({"client": "wrk", "payments": n, "payments_per_s": float(m.group(1)), "cpu_s": cpu,
                      "cpu_s_per_1000": cpu * 1000.0 / n if n else 0.0, "outcomes": outcomes, "completed_total": n}))
    return 0


def transport_annotate(a):
    r = result_or_error(a.line, a.rc, a.log)
    r.update({"row": a.row, "round": a.round, "inflight": a.inflight, "load_before": a.load_before,
              "load_after": a.load_after, "server_cpu_s": a.server_cpu, "attempt_log_lines": a.attempt_log_lines})
    print(json.dumps(r, sort_keys=True))


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2) if n else None


def spread(xs, spec):
    if not xs:
        return "-"
    if len(xs) == 1:
        return format(xs[0], spec)
    return f"{format(median(xs), spec)} ({format(min(xs), spec).strip()}-{format(max(xs), spec).strip()})"


def transport_table(a):
    rows = []
    with open(a.results) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    out = []
    p = out.append
    p(f"payretry at the transport limit: nginx {a.nginx or '?'} (1 worker, 200 at once, loopback)")
    p(f"  {a.machine}; {a.date}")
    p(f"  command: {a.command}")
    p(f"  wrk: {a.wrk or 'not installed'}; SQLite ledger and attempt log under {a.db_dir} (synchronous=FULL)")
    if a.compare_lib or a.compare_env:
        other_env = [e for e in (a.compare_lib and f"LD_LIBRARY_PATH={a.compare_lib}", a.compare_env) if e]
        p(f"  ROW@other: the same row with {' '.join(other_env)}")
    p("  medians across rounds, (min-max); ratios per round against raw curl multi of the same round,")
    p("  then the median; CPU = the client process's user+system per payment; srv = nginx's CPU per request.")
    p("")
    levels = sorted({r["inflight"] for r in rows})
    rounds = sorted({r["round"] for r in rows})
    for k in levels:
        p(f"{k} in flight")
        p(f"  {'row':<20} {'payments/s':>24} {'x curl':>17} {'CPU us/payment':>22} {'x curl':>17} "
          f"{'srv us':>6}  outcomes (all rounds)")
        base = {r["round"]: r for r in rows if r["inflight"] == k and r["row"] == TRANSPORT_BASE and "error" not in r}
        names = [n for row in TRANSPORT_ROWS for n in (row, row + "@other")]
        for row in names:
            rs = [r for r in rows if r["inflight"] == k and r["row"] == row]
            if not rs:
                continue
            errs = [r["error"] for r in rs if "error" in r]
            ok = [r for r in rs if "error" not in r]
            thr = [r["payments_per_s"] for r in ok]
            cpu = [r["cpu_s_per_1000"] * 1000.0 for r in ok]
            thr_x = [r["payments_per_s"] / base[r["round"]]["payments_per_s"] for r in ok
                     if r["round"] in base and base[r["round"]]["payments_per_s"]]
            cpu_x = [r["cpu_s_per_1000"] / base[r["round"]]["cpu_s_per_1000"] for r in ok
                     if r["round"] in base and base[r["round"]]["cpu_s_per_1000"]]
            srv = [float(r["server_cpu_s"]) * 1e6 / (r["payments_per_s"] * r["seconds"])
                   for r in ok if r.get("seconds") and r.get("payments_per_s") and row != "wrk"]
            oc = {}
            for r in ok:
                for kk, v in (r.get("outcomes") or {}).items():
                    oc[kk] = oc.get(kk, 0) + v
            total = sum(oc.values())
            otext = f"{oc.get('succeeded', 0)}/{total} succeeded"
            other = {kk: v for kk, v in oc.items() if kk != "succeeded"}
            if other:
                otext += " NOT ALL: " + ", ".join(f"{kk} {v}" for kk, v in sorted(other.items()))
                reasons = {}
                for r in ok:
                    for kk, v in (r.get("reasons") or {}).items():
                        reasons[kk] = reasons.get(kk, 0) + v
                if reasons:
                    otext += " (" + "; ".join(f"{kk}: {v}" for kk, v in sorted(reasons.items())[:3]) + ")"
            if errs:
                otext += f" ERROR {errs[0]}"
            p(f"  {row:<20} {spread(thr, '8.0f'):>24} {spread(thr_x, '5.2f'):>17} {spread(cpu, '7.1f'):>22} "
              f"{spread(cpu_x, '5.2f'):>17} {fmt(median(srv), '6.1f'):>6}  {otext}")
        # --compare-lib / --compare-env: this row against ROW@other, run by run within each round.
        for row in TRANSPORT_ROWS:
            this = {r["round"]: r for r in rows if r["inflight"] == k and r["row"] == row and "error" not in r}
            other = {r["round"]: r for r in rows
                     if r["inflight"] == k and r["row"] == row + "@other" and "error" not in r}
            both = [rd for rd in sorted(this) if rd in other and other[rd]["payments_per_s"]
                    and other[rd]["cpu_s_per_1000"]]
            if not both:
                continue
            thr_ab = [this[rd]["payments_per_s"] / other[rd]["payments_per_s"] for rd in both]
            cpu_ab = [this[rd]["cpu_s_per_1000"] / other[rd]["cpu_s_per_1000"] for rd in both]
            p(f"  {row} / {row}@other, per round ({len(both)}): payments/s {spread(thr_ab, '5.3f')}, "
              f"CPU per payment {spread(cpu_ab, '5.3f')}")
        p("")
    p("machine load (/proc/loadavg 1/5/15 min) before -> after each run:")
    for rd in rounds:
        parts = [f"{r['row']}@{r['inflight']} {r['load_before'].split()[0]}->{r['load_after'].split()[0]}"
                 for r in rows if r["round"] == rd]
        p(f"  round {rd}: " + ", ".join(parts))
    logs = [r for r in rows if r["row"].endswith("+log") and "error" not in r]
    if logs:
        p("attempt log lines written per payment completed (warm-up and drain included): " + ", ".join(
            sorted({f"{r['attempt_log_lines'] / max(1, r.get('completed_total', 1)):.2f}" for r in logs})))
    print("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    an = sub.add_parser("annotate")
    an.add_argument("--line", default="")
    an.add_argument("--rc", default="0")
    an.add_argument("--client", required=True)
    an.add_argument("--scenario", required=True)
    an.add_argument("--inflight", type=int, required=True)
    an.add_argument("--payments", type=int, required=True)
    an.add_argument("--latency-ms", type=float, default=0)
    an.add_argument("--truth", required=True)
    an.add_argument("--stats", required=True)
    an.add_argument("--log", default="")
    tb = sub.add_parser("table")
    tb.add_argument("--results", required=True)
    tb.add_argument("--rss", action="append", default=[], help="LABEL=rss.jsonl (the path without \"=\"), repeatable")
    tb.add_argument("--command", default="")
    tb.add_argument("--machine", default="")
    tb.add_argument("--latency-ms", default="")
    tb.add_argument("--skipped", default="")
    tb.add_argument("--fsync-rate", default="", help="fdatasync()s per second, space-separated")
    wk = sub.add_parser("wrk")
    wk.add_argument("--wrk", default="wrk")
    wk.add_argument("--connections", type=int, required=True)
    wk.add_argument("--seconds", type=int, required=True)
    wk.add_argument("--script", required=True)
    wk.add_argument("--url", required=True)
    ta = sub.add_parser("transport-annotate")
    ta.add_argument("--line", default="")
    ta.add_argument("--rc", default="0")
    ta.add_argument("--log", default="")
    ta.add_argument("--row", required=True)
    ta.add_argument("--round", type=int, required=True)
    ta.add_argument("--inflight", type=int, required=True)
    ta.add_argument("--load-before", default="")
    ta.add_argument("--load-after", default="")
    ta.add_argument("--server-cpu", default="0")
    ta.add_argument("--attempt-log-lines", type=int, default=0)
    tt = sub.add_parser("transport-table")
    tt.add_argument("--results", required=True)
    for opt in ("--command", "--machine", "--date", "--nginx", "--wrk", "--db-dir", "--compare-lib", "--compare-env"):
        tt.add_argument(opt, default="")
    fs = sub.add_parser("fsync")
    fs.add_argument("--dir", required=True)
    a = ap.parse_args()
    if a.cmd == "fsync":
        print(f"{fsync_rate(a.dir):.1f}")
        return 0
    if a.cmd == "wrk":
        return run_wrk(a)
    if a.cmd == "transport-annotate":
        return transport_annotate(a)
    if a.cmd == "transport-table":
        return transport_table(a)
    (annotate if a.cmd == "annotate" else table)(a)


if __name__ == "__main__":
    sys.exit(main())
