"""The GIL is released while a payment waits on the network: other Python
threads run, and concurrent submits overlap. Bounds are relative to times
measured in the same test, and generous; the numbers are printed."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Callable, List

import pytest

import payretry
from conftest import Sim, body, config

SLOW_MS = 400


@pytest.fixture
def slow_sim(start_sim: Any) -> Sim:
    # Every payment request is held SLOW_MS, then processed: a fixed latency.
    s: Sim = start_sim("--fault", "slow=1", "--slow-ms", str(SLOW_MS))
    return s


def slow_config(sim: Sim) -> Any:
    return config(sim, {"attempt_timeout_ms": 5000, "deadline_ms": 20000, "max_attempts": 1})


def count_while(run: Callable[[], None]) -> tuple[float, int]:
    """Counts loop iterations of another thread while run() runs; returns (seconds, count)."""
    stop = threading.Event()
    counted = [0]

    def counter() -> None:
        n = 0
        while not stop.is_set():
            n += 1
        counted[0] = n

    t = threading.Thread(target=counter)
    t0 = time.perf_counter()
    t.start()
    run()
    stop.set()
    t.join()
    return time.perf_counter() - t0, counted[0]


@pytest.mark.parametrize("caller", ["main_thread", "worker_thread"])
def test_another_python_thread_runs_while_a_slow_attempt_is_in_flight(slow_sim: Sim, caller: str) -> None:
    with payretry.Client(slow_config(slow_sim)) as c:
        c.submit("warm-" + caller, body("warm-" + caller))  # connection and ledger set up
        base_s, base_n = count_while(lambda: time.sleep(SLOW_MS / 1000))
        results: List[payretry.Result] = []

        def submit() -> None:
            if caller == "main_thread":
                results.append(c.submit("o-gil-" + caller, body("o-gil-" + caller)))
            else:
                t = threading.Thread(target=lambda: results.append(c.submit("o-gil-" + caller, body("o-gil-" + caller))))
                t.start()
                t.join()

        busy_s, busy_n = count_while(submit)
    assert results[0].outcome is payretry.Outcome.SUCCEEDED
    assert busy_s >= SLOW_MS / 1000 * 0.9  # the attempt really was slow
    base_rate, busy_rate = base_n / base_s, busy_n / busy_s
    print(f"\n[{caller}] counter: {base_rate:,.0f} it/s alone, {busy_rate:,.0f} it/s during a {busy_s:.3f} s submit "
          f"({busy_rate / base_rate:.0%})")
    assert busy_rate > 0.25 * base_rate


def test_eight_threads_through_one_client_take_about_the_slowest_not_the_sum(slow_sim: Sim) -> None:
    with payretry.Client(slow_config(slow_sim)) as c:
        c.submit("warm", body("warm"))
        t0 = time.perf_counter()
        c.submit("one", body("one"))
        single = time.perf_counter() - t0

        barrier = threading.Barrier(8)
        results: List[payretry.Result] = []
        lock = threading.Lock()

        def worker(i: int) -> None:
            barrier.wait()
            r = c.submit(f"par-{i}", body(f"par-{i}"))
            with lock:
                results.append(r)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        eight = time.perf_counter() - t0
    assert len(results) == 8 and all(r.outcome is payretry.Outcome.SUCCEEDED for r in results)
    print(f"\none submit: {single:.3f} s; 8 threads: {eight:.3f} s "
          f"({eight / single:.2f}x one submit; serialised would be ~8x)")
    assert eight < 3 * single


def test_submit_async_does_not_block_the_event_loop(slow_sim: Sim) -> None:
    with payretry.Client(slow_config(slow_sim)) as c:
        c.submit("warm", body("warm"))

        async def main() -> tuple[float, int, List[payretry.Result]]:
            ticks = 0
            done = asyncio.Event()

            async def ticker() -> None:
                nonlocal ticks
                while not done.is_set():
                    await asyncio.sleep(0.01)
                    ticks += 1

            tick_task = asyncio.create_task(ticker())
            t0 = time.perf_counter()
            rs = await asyncio.gather(*(c.submit_async(f"as-{i}", body(f"as-{i}")) for i in range(8)))
            elapsed = time.perf_counter() - t0
            done.set()
            await tick_task
            return elapsed, ticks, list(rs)

        elapsed, ticks, rs = asyncio.run(main())
    assert all(r.outcome is payretry.Outcome.SUCCEEDED for r in rs)
    expected = elapsed / 0.01
    print(f"\n8 submit_async: {elapsed:.3f} s; event loop ticked {ticks} times of ~{expected:.0f} possible")
    assert ticks > 0.25 * expected
    assert elapsed < 8 * SLOW_MS / 1000  # they overlapped


def test_a_cancelled_submit_async_still_records_the_payment(slow_sim: Sim) -> None:
    with payretry.Client(slow_config(slow_sim)) as c:

        async def main() -> None:
            task = asyncio.create_task(c.submit_async("o-cancel", body("o-cancel")))
            await asyncio.sleep(SLOW_MS / 4000)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(main())
        deadline = time.monotonic() + 10
        while c.ledger_get("o-cancel")["payment"]["state"] != "SUCCEEDED" and time.monotonic() < deadline:
            time.sleep(0.05)
        r = c.submit("o-cancel", body("o-cancel"))
    assert r.outcome is payretry.Outcome.SUCCEEDED and r.from_ledger
    assert slow_sim.charges("o-cancel") == 1
