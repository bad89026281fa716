"""The money state (docs/providers.md, "Where the money is") through the real
C ABI: the enum's names are the C library's, a result's state is the one the
accessor and the JSON report, and the ledger and webhook records carry it.
Fulfil on PAID (or AUTHORIZED where you capture later), never on SUCCEEDED
alone."""

from __future__ import annotations

import payretry
from payretry import _payretry
from conftest import Sim, body, config


def test_every_money_state_is_named_as_the_c_library_names_it_in_its_c_order() -> None:
    # PAY_MONEY_UNKNOWN = 0 ... PAY_MONEY_FAILED = 7, only appended to.
    assert [_payretry.money_state_name(n) for n in range(len(payretry.MoneyState))] == [
        m.value for m in payretry.MoneyState
    ]
    assert [m.value for m in payretry.MoneyState] == [
        "unknown", "awaiting_customer", "pending", "authorized", "paid", "partly_refunded", "refunded", "failed",
    ]
    assert str(payretry.MoneyState.PAID) == "paid"


def test_a_number_the_c_enum_does_not_name_is_a_question_mark() -> None:
    assert _payretry.money_state_name(len(payretry.MoneyState)) == "?"
    assert _payretry.money_state_name(-1) == "?"


def test_a_result_carries_the_money_state_its_accessor_and_json_report(sim: Sim) -> None:
    sim.script("m-decline", ["decline"])
    with payretry.Client(config(sim)) as c:
        ok = c.submit("m-ok", body("m-ok"))
        declined = c.submit("m-decline", body("m-decline"))
        again = c.query("m-ok")
    for r in (ok, declined, again):
        # result_from_native has already checked the accessor against the JSON.
        assert isinstance(r.money_state, payretry.MoneyState)
        assert r.to_dict()["money_state"] == r.money_state.value
        assert f"money_state={r.money_state.value}" in repr(r)
    assert ok.outcome is payretry.Outcome.SUCCEEDED and declined.outcome is payretry.Outcome.FAILED


def test_ledger_rows_and_their_history_entries_name_a_money_state(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        r = c.submit("m-led", body("m-led"))
        got = c.ledger_get("m-led")
        listed = c.ledger_list()
    assert payretry.MoneyState(got["payment"]["money_state"]) is r.money_state
    assert got["attempts"] and all(payretry.MoneyState(a["money_state"]) for a in got["attempts"])
    assert [payretry.MoneyState(p["money_state"]) for p in listed] == [r.money_state]


def test_a_reconciled_payment_carries_its_money_state(sim: Sim) -> None:
    sim.script("m-rec", ["lost_response", "lost_response"])
    with payretry.Client(config(sim, {"max_attempts": 2})) as c:
        assert c.submit("m-rec", body("m-rec")).outcome is payretry.Outcome.UNKNOWN
        report = c.reconcile(lambda order_id: body(order_id))
        ledger = c.ledger_get("m-rec")["payment"]
    [p] = report.payments
    assert p.outcome is payretry.Outcome.SUCCEEDED
    assert p.money_state is payretry.MoneyState(ledger["money_state"])


def test_a_webhook_events_money_state_reads_unknown_unless_it_names_a_known_one() -> None:
    events = [
        {"event_id": "evt_paid", "money_state": "paid"},
        {"event_id": "evt_later", "money_state": "a_state_appended_later"},
        {"event_id": "evt_old"},  # a library from before the money state
    ]
    reply = payretry.WebhookReply(status=200, content_type="", body=b"", outcome={"events": events})
    assert reply.money_states == [payretry.MoneyState.PAID, payretry.MoneyState.UNKNOWN, payretry.MoneyState.UNKNOWN]
