"""Captures, refunds and cancels through the real C ABI
(pay_submit_operation), against a real payretry-sim in Stripe mode and a
SQLite ledger: the simulator's truth (GET /__admin/truth?order_id=...) says
what moved, and a refund that does not fit is refused before any byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import pytest

import payretry
from conftest import Sim, config


def stripe_config(sim: Sim, tmp_path: Path) -> Dict[str, Any]:
    # The stripe profile's own create path: a PaymentIntent, whose id the
    # refund names (conftest's config posts to the simulator's /v1/payments).
    cfg = config(sim, ledger=f"sqlite://{tmp_path}/ops.db")
    del cfg["create_path"]
    return cfg


def stripe_body(order_id: str, hold: bool = False) -> Dict[str, Any]:
    b: Dict[str, Any] = {"amount": 1000, "currency": "usd", "metadata": {"order_id": order_id}}
    if hold:
        b.update(confirm=True, payment_method="pm_card_visa", capture_method="manual")
    return b


def payment_truth(sim: Sim, order_id: str) -> Dict[str, Any]:
    truth = sim.admin(f"truth?order_id={order_id}")
    assert len(truth["payments"]) == 1, truth
    p: Dict[str, Any] = truth["payments"][0]
    return p


def test_the_kinds_are_the_c_enums_and_named_as_the_ledger_names_them() -> None:
    assert [int(k) for k in payretry.Operation] == [1, 2, 3]  # PAY_OPERATION_CAPTURE, REFUND, CANCEL
    assert [str(k) for k in payretry.Operation] == ["capture", "refund", "cancel"]


def test_a_partial_refund_moves_the_money_once_and_one_that_does_not_fit_is_refused_nothing_sent(
    sim: Sim, tmp_path: Path
) -> None:
    with payretry.Client(stripe_config(sim, tmp_path)) as c:
        paid = c.submit("py-op-r", stripe_body("py-op-r"))
        assert paid.money_state is payretry.MoneyState.PAID, paid

        r = c.refund("py-op-r", ref="r1", amount=400, body={"reason": "requested_by_customer"})
        assert r.outcome is payretry.Outcome.SUCCEEDED, r
        assert r.money_state is payretry.MoneyState.REFUNDED
        assert r.order_id == "py-op-r refund r1"
        assert c.ledger_get("py-op-r")["payment"]["money_state"] == "partly_refunded"
        truth = payment_truth(sim, "py-op-r")
        assert truth["refunded"] == 400
        assert truth["movements_by_key"] == {r.idempotency_key: 1}

        # 700 of the 600 left: the ledger's guard refuses it; no row, no request.
        with pytest.raises(payretry.InvalidArgumentError) as refused:
            c.submit_operation("py-op-r", payretry.Operation.REFUND, ref="r2", amount=700)
        assert "refused, nothing sent" in refused.value.message
        with pytest.raises(payretry.NotFoundError):
            c.ledger_get("py-op-r refund r2")
        truth = payment_truth(sim, "py-op-r")
        assert truth["refunded"] == 400 and len(truth["operations"]) == 1

        # The same ref again is the same refund; asked otherwise, a mismatch.
        again = c.refund("py-op-r", ref="r1", amount=400, body={"reason": "requested_by_customer"})
        assert again.from_ledger and again.idempotency_key == r.idempotency_key
        with pytest.raises(payretry.MismatchError):
            c.refund("py-op-r", ref="r1", amount=300, body={"reason": "requested_by_customer"})
        # The rest: 600.
        rest = c.refund("py-op-r", ref="r3")
        assert rest.outcome is payretry.Outcome.SUCCEEDED, rest
        assert c.ledger_get("py-op-r refund r3")["payment"]["amount"] == 600
    assert payment_truth(sim, "py-op-r")["refunded"] == 1000


def test_a_hold_is_captured_in_part_and_another_canceled(sim: Sim, tmp_path: Path) -> None:
    with payretry.Client(stripe_config(sim, tmp_path)) as c:
        assert c.submit("py-op-c", stripe_body("py-op-c", hold=True)).money_state is payretry.MoneyState.AUTHORIZED
        cap = c.capture("py-op-c", ref="c1", amount=600)
        assert cap.outcome is payretry.Outcome.SUCCEEDED and cap.money_state is payretry.MoneyState.PAID, cap
        assert payment_truth(sim, "py-op-c")["captured"] == 600
        # A captured payment is not canceled.
        with pytest.raises(payretry.InvalidArgumentError):
            c.cancel("py-op-c", ref="x1")

        assert c.submit("py-op-x", stripe_body("py-op-x", hold=True)).money_state is payretry.MoneyState.AUTHORIZED
        x = c.cancel("py-op-x", ref="x1")
        assert x.outcome is payretry.Outcome.SUCCEEDED, x
        assert c.ledger_get("py-op-x")["payment"]["money_state"] == "failed"


def test_an_order_the_ledger_does_not_hold_and_bad_arguments_raise(sim: Sim, tmp_path: Path) -> None:
    with payretry.Client(stripe_config(sim, tmp_path)) as c:
        with pytest.raises(payretry.NotFoundError):
            c.refund("py-op-never", ref="r1", amount=100)
        with pytest.raises(TypeError):
            c.submit_operation("py-op-never", 2, ref="r1")  # type: ignore[arg-type]
        with pytest.raises(payretry.InvalidArgumentError):
            c.refund("py-op-never", ref="r1", amount=-1)
        with pytest.raises(TypeError):
            c.refund("py-op-never", ref="r1", amount=1.5)  # type: ignore[arg-type]
        with pytest.raises(payretry.InvalidArgumentError):
            c.refund("py-op-never", ref="r\x001", amount=100)
