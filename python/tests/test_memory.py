"""10,000 results created and dropped leave memory flat (a leak check on the
native result, its JSON and the Python objects built from it)."""

from __future__ import annotations

import gc
import os

import payretry
from conftest import Sim, body, config


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_ten_thousand_results_created_and_dropped_keep_memory_flat(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        b = body("o-mem")
        first = c.submit("o-mem", b)
        assert first.succeeded

        def churn(n: int) -> None:
            for _ in range(n):
                r = c.submit("o-mem", b)  # from the ledger: a full pay_submit and result each time
                assert r.from_ledger
                r.to_dict()
                del r

        churn(2000)
        gc.collect()
        before = rss_bytes()
        churn(10_000)
        gc.collect()
        after = rss_bytes()
    growth = after - before
    print(f"\nRSS before {before / 2**20:.1f} MiB, after 10,000 more results {after / 2**20:.1f} MiB "
          f"(+{growth / 2**20:.2f} MiB)")
    assert growth < 20 * 2**20
