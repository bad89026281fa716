"""Every outcome, through the real C ABI against the real simulator."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import pytest

import payretry
from conftest import API_KEY, Sim, body, config


def test_a_plain_payment_succeeds_with_every_field_filled(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        r = c.submit("o-ok", body("o-ok"))
    assert r.outcome is payretry.Outcome.SUCCEEDED
    assert r.succeeded
    assert r.delivery is payretry.Delivery.DELIVERED
    assert r.http_status == 200
    assert r.order_id == "o-ok"
    assert len(r.idempotency_key) == 36  # a UUIDv4
    assert r.provider_payment_id and r.provider_status
    assert r.error is None
    assert not r.from_ledger
    assert isinstance(r.attempts, tuple) and len(r.attempts) == 1
    a = r.attempts[0]
    assert isinstance(a, payretry.Attempt) and a.number == 1 and a.http_status == 200
    assert isinstance(r.body, bytes) and r.json()["id"] == r.provider_payment_id
    assert r.to_dict()["outcome"] == "SUCCEEDED"
    assert "body" not in r.to_dict()
    assert sim.charges("o-ok") == 1


def test_results_are_frozen_and_their_repr_never_shows_the_body(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        r = c.submit("o-repr", body("o-repr"))
    text = repr(r)
    assert "SUCCEEDED" in text and "o-repr" in text
    assert r.body and r.body.decode() not in text
    assert "amount" not in text
    with pytest.raises(AttributeError):
        r.outcome = payretry.Outcome.FAILED  # type: ignore[misc]
    with pytest.raises(AttributeError):
        r.attempts[0].verdict = "x"  # type: ignore[misc]


def test_a_decline_is_a_failed_result_not_an_exception(sim: Sim) -> None:
    sim.script("o-decline", ["decline"])
    with payretry.Client(config(sim)) as c:
        r = c.submit("o-decline", body("o-decline"))
    assert r.outcome is payretry.Outcome.FAILED
    assert r.delivery is payretry.Delivery.DELIVERED
    assert r.http_status == 402
    assert r.error and "declined" in r.error
    assert len(r.attempts) == 1
    assert sim.charges("o-decline") == 0


def test_lost_responses_until_attempts_run_out_are_unknown_never_failed(sim: Sim) -> None:
    sim.script("o-lost", ["lost_response", "lost_response"])
    with payretry.Client(config(sim, {"max_attempts": 2})) as c:
        r = c.submit("o-lost", body("o-lost"))
    assert r.outcome is payretry.Outcome.UNKNOWN
    assert r.delivery is payretry.Delivery.MAYBE_PROCESSED
    assert len(r.attempts) == 2
    assert all(a.may_have_processed for a in r.attempts)
    assert len({r.idempotency_key}) == 1
    assert sim.charges("o-lost") == 1  # charged once, never twice


def test_a_second_submitter_of_a_held_order_gets_in_progress(sim: Sim) -> None:
    sim.script("o-held", ["slow"])  # the simulator holds the first request 1.5 s
    with payretry.Client(config(sim, {"attempt_timeout_ms": 5000}, in_progress_wait_ms=0)) as c:
        first: list[payretry.Result] = []
        t = threading.Thread(target=lambda: first.append(c.submit("o-held", body("o-held"))))
        t.start()
        deadline = time.monotonic() + 10
        while sim.requests() < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        second = c.submit("o-held", body("o-held"))
        t.join()
    assert second.outcome is payretry.Outcome.IN_PROGRESS
    assert second.from_ledger
    assert first[0].outcome is payretry.Outcome.SUCCEEDED
    assert second.idempotency_key == first[0].idempotency_key
    assert sim.charges("o-held") == 1


def test_submitting_an_order_again_returns_the_stored_outcome_without_http(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        r1 = c.submit("o-again", body("o-again"))
        before = sim.requests()
        r2 = c.submit("o-again", body("o-again"))
    assert r2.from_ledger and r2.outcome is payretry.Outcome.SUCCEEDED
    assert r2.idempotency_key == r1.idempotency_key
    assert sim.requests() == before


def test_the_callers_idempotency_key_is_the_one_sent(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        r = c.submit("o-key", body("o-key"), idempotency_key="my-key-0001")
    assert r.idempotency_key == "my-key-0001"


def test_a_dict_str_and_bytes_body_of_the_same_json_are_the_same_payment(sim: Sim) -> None:
    b = body("o-forms")
    text = json.dumps(b, separators=(",", ":"))
    assert payretry.body_bytes(b) == text.encode()
    with payretry.Client(config(sim)) as c:
        c.submit("o-forms", b)
        assert c.submit("o-forms", text).from_ledger
        assert c.submit("o-forms", text.encode()).from_ledger
        assert c.submit("o-forms", bytearray(text.encode())).from_ledger


def test_unknown_then_reconcile_with_the_body_settles_it(sim: Sim) -> None:
    sim.script("o-rec", ["lost_response", "lost_response"])
    with payretry.Client(config(sim, {"max_attempts": 2})) as c:
        assert c.submit("o-rec", body("o-rec")).outcome is payretry.Outcome.UNKNOWN
        without = c.reconcile()
        assert without.examined == 1 and without.unknown == 1
        assert [p.outcome for p in without] == [payretry.Outcome.UNKNOWN]
        asked: list[str] = []

        def body_for(order_id: str) -> Any:
            asked.append(order_id)
            return body(order_id)

        report = c.reconcile(body_for)
        assert asked == ["o-rec"]
        assert isinstance(report, payretry.ReconcileReport)
        assert report.examined == 1 and report.succeeded == 1 and len(report) == 1
        assert report.payments[0].outcome is payretry.Outcome.SUCCEEDED
        assert report.failures == ()
        assert c.ledger_get("o-rec")["payment"]["state"] == "SUCCEEDED"
    assert sim.charges("o-rec") == 1


def test_an_exception_in_body_for_is_raised_after_the_pass(sim: Sim) -> None:
    sim.script("o-recx", ["lost_response", "lost_response"])
    with payretry.Client(config(sim, {"max_attempts": 2})) as c:
        c.submit("o-recx", body("o-recx"))

        def body_for(order_id: str) -> Any:
            raise LookupError(f"no body kept for {order_id}")

        with pytest.raises(LookupError, match="o-recx"):
            c.reconcile(body_for)
        assert c.ledger_get("o-recx")["payment"]["state"] == "UNKNOWN"


def test_query_asks_the_provider_and_records_the_answer(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        c.submit("o-q", body("o-q"))
        r = c.query("o-q")
    assert r.outcome is payretry.Outcome.SUCCEEDED


def test_ledger_and_counters_read_as_dicts(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        c.submit("o-l1", body("o-l1"))
        sim.script("o-l2", ["decline"])
        c.submit("o-l2", body("o-l2"))
        got = c.ledger_get("o-l1")
        assert got["payment"]["order_id"] == "o-l1" and got["payment"]["state"] == "SUCCEEDED"
        assert len(got["attempts"]) == 1
        assert [p["order_id"] for p in c.ledger_list("FAILED")] == ["o-l2"]
        assert {p["order_id"] for p in c.ledger_list()} == {"o-l1", "o-l2"}
        stats = c.stats()
        assert stats["outcomes"]["SUCCEEDED"] == 1 and stats["outcomes"]["FAILED"] == 1
        assert stats["attempts"] == 2
        with pytest.raises(payretry.InvalidArgumentError):
            c.ledger_list("BOGUS")


def test_attempt_log_lines_go_to_the_payretry_logger_redacted(sim: Sim, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="payretry")
    sim.script("o-log", ["503", "none"])
    with payretry.Client(config(sim)) as c:
        c.submit("o-log", body("o-log"))
    records = [r for r in caplog.records if r.name == "payretry"]
    lines = [json.loads(r.getMessage()) for r in records]
    attempts = [ln for ln in lines if ln.get("event") == "attempt"]
    outcomes = [ln for ln in lines if ln.get("event") == "outcome"]
    assert len(attempts) == 2 and len(outcomes) == 1
    assert all(r.levelno in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR) for r in records)
    assert not any(API_KEY in r.getMessage() for r in records)
