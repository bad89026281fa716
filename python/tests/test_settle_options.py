"""reconcile(limit=..., older_than=...), query_async and reconcile_async."""

from __future__ import annotations

import asyncio
import datetime
import time
from typing import Any, List

import pytest

import payretry
from conftest import Sim, body, config


def leave_unknown(sim: Sim, c: payretry.Client, order_ids: List[str]) -> None:
    for oid in order_ids:
        sim.script(oid, ["lost_response", "lost_response"])
        assert c.submit(oid, body(oid)).outcome is payretry.Outcome.UNKNOWN


def test_reconcile_limit_takes_at_most_that_many(sim: Sim) -> None:
    with payretry.Client(config(sim, {"max_attempts": 2})) as c:
        leave_unknown(sim, c, ["o-lim-1", "o-lim-2", "o-lim-3"])
        first = c.reconcile(lambda oid: body(oid), limit=2)
        rest = c.reconcile(lambda oid: body(oid), limit=2)
    assert first.examined == 2 and first.succeeded == 2
    assert rest.examined == 1 and rest.succeeded == 1
    assert sorted(p.order_id for p in list(first) + list(rest)) == ["o-lim-1", "o-lim-2", "o-lim-3"]
    assert all(sim.charges(o) == 1 for o in ("o-lim-1", "o-lim-2", "o-lim-3"))


@pytest.mark.parametrize("age", [datetime.timedelta(hours=1), 3600, 3600.0])
def test_reconcile_older_than_leaves_recent_payments_alone(sim: Sim, age: Any) -> None:
    with payretry.Client(config(sim, {"max_attempts": 2})) as c:
        leave_unknown(sim, c, ["o-age"])
        recent = c.reconcile(lambda oid: body(oid), older_than=age)
        assert recent.examined == 0
        assert c.ledger_get("o-age")["payment"]["state"] == "UNKNOWN"
        time.sleep(0.05)
        settled = c.reconcile(lambda oid: body(oid), older_than=datetime.timedelta(milliseconds=10))
    assert settled.examined == 1 and settled.succeeded == 1


def test_reconcile_options_of_the_wrong_kind_are_refused_before_anything_runs(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        with pytest.raises(payretry.InvalidArgumentError, match="limit"):
            c.reconcile(limit=0)
        with pytest.raises(TypeError, match="limit"):
            c.reconcile(limit=True)
        with pytest.raises(payretry.InvalidArgumentError, match="older_than"):
            c.reconcile(older_than=-1)
        with pytest.raises(payretry.InvalidArgumentError, match="older_than"):
            c.reconcile(older_than=float("nan"))
        with pytest.raises(TypeError, match="older_than"):
            c.reconcile(older_than="1h")  # type: ignore[arg-type]
    assert sim.requests() == 0


def test_query_async_and_reconcile_async_do_not_block_the_loop(sim: Sim) -> None:
    with payretry.Client(config(sim, {"max_attempts": 2})) as c:
        c.submit("o-qa", body("o-qa"))
        leave_unknown(sim, c, ["o-ra"])

        async def main() -> tuple[payretry.Result, payretry.ReconcileReport, int]:
            ticks = 0
            stop = asyncio.Event()

            async def ticker() -> None:
                nonlocal ticks
                while not stop.is_set():
                    await asyncio.sleep(0.001)
                    ticks += 1

            t = asyncio.create_task(ticker())
            q = await c.query_async("o-qa")
            r = await c.reconcile_async(lambda oid: body(oid), limit=10, older_than=0)
            stop.set()
            await t
            return q, r, ticks

        q, report, ticks = asyncio.run(main())
        with pytest.raises(payretry.NotFoundError):
            asyncio.run(c.query_async("o-never-submitted"))
    assert q.outcome is payretry.Outcome.SUCCEEDED
    assert report.examined == 1 and report.succeeded == 1
    assert ticks > 0
    assert sim.charges("o-ra") == 1
