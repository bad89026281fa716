"""Shared by the Python peers: arguments, N threads keeping N payments in flight, and the one
JSON line every runner of the benchmark prints (see tests/bench/report.py)."""
import argparse
import json
import resource
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor


def args(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--url", required=True, help="simulator base URL")
    p.add_argument("--payments", type=int, default=100)
    p.add_argument("--inflight", type=int, default=1)
    p.add_argument("--prefix", default="py-", help="order id prefix (unique per run)")
    return p.parse_args()


def _cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def run(client, a, submit, setup_thread=None):
    """submit(order_id) -> outcome name; called from a pool of a.inflight threads."""
    lat = [0.0] * a.payments
    outcomes = [""] * a.payments

    def one(i):
        order = f"{a.prefix}{i}"
        t0 = time.perf_counter()
        try:
            outcomes[i] = submit(order)
        except Exception:  # the peer raised: no definitive answer for this payment
            outcomes[i] = "error"
        lat[i] = (time.perf_counter() - t0) * 1000.0

    cpu0 = _cpu()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=a.inflight, initializer=setup_thread) as pool:
        list(pool.map(one, range(a.payments)))
    secs = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    lat.sort()
    counts = {}
    for o in outcomes:
        counts[o] = counts.get(o, 0) + 1

    def pct(p):
        return lat[int(p * (len(lat) - 1))] if lat else 0.0

    line = {
        "client": client, "ledger": "-", "inflight": a.inflight, "payments": a.payments,
        "seconds": secs, "payments_per_s": a.payments / secs,
        "p50_ms": pct(0.50), "p99_ms": pct(0.99),
        "cpu_s": cpu, "cpu_s_per_1000": cpu * 1000.0 / a.payments,
        # ru_maxrss is KiB on Linux
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "outcomes": counts, "mode": "threads",
    }
    sys.stdout.write(json.dumps(line) + "\n")


local = threading.local()
