"""submit_many and submit_async run on the client's engine thread (libcurl
multi): many payments in flight without a Python thread each, with the same
rules as submit."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Dict, List, Union

import pytest

import payretry
from conftest import Sim, body, config

HOLD_MS = 300


@pytest.fixture
def held_sim(start_sim: Any) -> Sim:
    # Every payment request is held HOLD_MS, then processed.
    s: Sim = start_sim("--fault", "slow=1", "--slow-ms", str(HOLD_MS))
    return s


def calm(sim: Sim, **extra: Any) -> Any:
    return config(sim, {"attempt_timeout_ms": 5000, "deadline_ms": 20000, "max_attempts": 2}, **extra)


def test_submit_many_answers_every_payment_in_order_and_charges_each_once(sim: Sim, tmp_path: Any) -> None:
    sim.script("many-3", ["503"])
    payments: List[Union[payretry.Payment, Any]] = [(f"many-{i}", body(f"many-{i}")) for i in range(150)]
    payments[7] = payretry.Payment("many-7", body("many-7"), idempotency_key="bad\r\nX-Injected: 1")
    with payretry.Client(calm(sim, ledger=f"sqlite://{tmp_path}/ledger.db")) as c:
        out = c.submit_many(payments, max_in_flight=64)
        stats = c.stats()
    assert len(out) == 150
    for i, r in enumerate(out):
        if i == 7:
            assert isinstance(r, payretry.IdempotencyKeyError)
            continue
        assert isinstance(r, payretry.Result), r
        assert r.order_id == f"many-{i}"
        assert r.outcome is payretry.Outcome.SUCCEEDED
    r3 = out[3]
    assert isinstance(r3, payretry.Result) and len(r3.attempts) == 2
    assert sim.charges("many-7") == 0
    assert all(sim.charges(f"many-{i}") == 1 for i in (0, 3, 149))
    # The ledger writes of the payments in flight shared commits.
    assert stats["ledger_batch_max"] > 1


def test_submit_many_refuses_arguments_of_the_wrong_type_before_sending_anything(sim: Sim) -> None:
    with payretry.Client(calm(sim)) as c:
        with pytest.raises(TypeError):
            c.submit_many([("ok", body("ok")), 42])  # type: ignore[list-item]
        with pytest.raises(payretry.InvalidArgumentError):
            c.submit_many([(None, body("x"))])  # type: ignore[list-item]
        with pytest.raises(TypeError):
            c.submit_many([], max_in_flight=-1)
        assert c.submit_many([]) == []
    assert sim.requests() == 0


def test_submit_async_needs_no_thread_per_payment(held_sim: Sim) -> None:
    with payretry.Client(calm(held_sim)) as c:
        c.submit("warm", body("warm"))  # the engine thread itself may start here

        async def main() -> tuple[float, int, List[payretry.Result]]:
            before = threading.active_count()
            peak = before

            async def watch() -> None:
                nonlocal peak
                while True:
                    peak = max(peak, threading.active_count())
                    await asyncio.sleep(0.005)

            watcher = asyncio.create_task(watch())
            t0 = time.perf_counter()
            rs = await asyncio.gather(*(c.submit_async(f"nt-{i}", body(f"nt-{i}")) for i in range(100)))
            elapsed = time.perf_counter() - t0
            watcher.cancel()
            return elapsed, peak - before, list(rs)

        elapsed, extra_threads, rs = asyncio.run(main())
    assert all(r.outcome is payretry.Outcome.SUCCEEDED for r in rs)
    print(f"\n100 submit_async against a provider holding each {HOLD_MS} ms: {elapsed:.3f} s, "
          f"{extra_threads} extra threads")
    # One engine thread for all of them, not one thread per payment.
    assert extra_threads <= 1
    assert held_sim.requests() == 101


def test_submit_async_reports_a_failed_call_as_its_exception(sim: Sim) -> None:
    with payretry.Client(calm(sim, max_body_bytes=100)) as c:

        async def main() -> None:
            with pytest.raises(payretry.TooBigError):
                await c.submit_async("big", {"order_id": "big", "pad": "x" * 200})

        asyncio.run(main())
    assert sim.requests() == 0


def test_a_client_dropped_with_payments_in_flight_finishes_them(held_sim: Sim) -> None:
    answers: List[Any] = []

    async def main() -> None:
        c = payretry.Client(calm(held_sim))
        tasks = [asyncio.ensure_future(c.submit_async(f"drop-{i}", body(f"drop-{i}"))) for i in range(5)]
        await asyncio.sleep(0)
        c.close()  # waits for the engine to answer every started payment
        answers.extend(await asyncio.gather(*tasks, return_exceptions=True))

    asyncio.run(main())
    assert all(isinstance(a, payretry.Result) and a.outcome is payretry.Outcome.SUCCEEDED for a in answers), answers
    assert all(held_sim.charges(f"drop-{i}") == 1 for i in range(5))


def test_a_blocking_submit_that_outlives_close_frees_the_client_without_deadlock(held_sim: Sim) -> None:
    # close() leaves the running submit holding the last reference to the C
    # client. When that submit returns it frees the client, which waits for
    # the async payments still on the engine; their answers need the GIL, so
    # the free must not hold it (it did once: a deadlock, not a failure).
    c = payretry.Client(calm(held_sim))
    out: Dict[str, payretry.Result] = {}

    def blocking() -> None:
        out["sync"] = c.submit("cl-sync", body("cl-sync"))

    async def main() -> List[payretry.Result]:
        t = threading.Thread(target=blocking)
        t.start()
        await asyncio.sleep(0.1)  # the blocking submit is held by the provider
        tasks = [asyncio.ensure_future(c.submit_async(f"cl-{i}", body(f"cl-{i}"))) for i in range(3)]
        await asyncio.sleep(0.05)  # the async payments are on the engine, held too
        c.close()
        assert c.closed
        # The blocking submit returns first and frees the client while the
        # async payments are still held; join without blocking the loop.
        await asyncio.get_running_loop().run_in_executor(None, t.join, 30)
        assert not t.is_alive()
        return list(await asyncio.wait_for(asyncio.gather(*tasks), 30))

    rs = asyncio.run(main())
    assert out["sync"].outcome is payretry.Outcome.SUCCEEDED
    assert [r.outcome for r in rs] == [payretry.Outcome.SUCCEEDED] * 3
    assert all(held_sim.charges(f"cl-{i}") == 1 for i in range(3))
    assert held_sim.charges("cl-sync") == 1
