"""What a dict body becomes, and the errors that say why bytes differ."""

from __future__ import annotations

import decimal
import json

import pytest

import payretry
from conftest import Sim, body, config


def test_a_dict_is_its_own_key_order_compact_not_sorted() -> None:
    d = {"order_id": "o1", "amount": 1000, "currency": "eur"}
    assert payretry.body_bytes(d) == b'{"order_id":"o1","amount":1000,"currency":"eur"}'
    # Orders in existing ledgers were fingerprinted over these bytes: they must not change.
    assert payretry.body_bytes(d) == json.dumps(d, separators=(",", ":")).encode()


def test_a_reordered_dict_is_a_mismatch_whose_message_says_why(sim: Sim) -> None:
    first = {"order_id": "o-order", "amount": 1000, "currency": "eur"}
    reordered = {"currency": "eur", "amount": 1000, "order_id": "o-order"}
    assert first == reordered
    with payretry.Client(config(sim)) as c:
        c.submit("o-order", first)
        before = sim.requests()
        with pytest.raises(payretry.MismatchError) as raised:
            c.submit("o-order", reordered)
        with pytest.raises(payretry.MismatchError) as spaced:
            c.submit("o-order", json.dumps(first))  # the same JSON with ", " and ": "
        again = c.submit("o-order", payretry.body_bytes(first))
    for err in (raised.value, spaced.value):
        message = str(err)
        assert "was first submitted with other parameters" in message  # the library's own words
        assert "key order" in message and "other spaces" in message and "body_bytes" in message
    assert again.from_ledger and again.outcome is payretry.Outcome.SUCCEEDED
    assert sim.requests() == before  # nothing was sent for the mismatches


def test_a_mismatch_inside_submit_many_and_submit_async_carries_the_hint_too(sim: Sim) -> None:
    import asyncio

    with payretry.Client(config(sim)) as c:
        c.submit("o-order-m", {"a": 1, "b": 2})
        [err] = c.submit_many([("o-order-m", {"b": 2, "a": 1})])

        async def main() -> None:
            await c.submit_async("o-order-m", {"b": 2, "a": 1})

        with pytest.raises(payretry.MismatchError) as raised:
            asyncio.run(main())
    assert isinstance(err, payretry.MismatchError) and "key order" in str(err)
    assert "key order" in str(raised.value)


def test_a_decimal_amount_is_refused_naming_where_it_is_and_what_to_pass(sim: Sim) -> None:
    b = {"order_id": "o-dec", "amount": {"value": decimal.Decimal("10.50"), "currency": "EUR"}}
    with pytest.raises(TypeError) as raised:
        payretry.body_bytes(b)
    message = str(raised.value)
    assert "body['amount']['value'] is a decimal.Decimal" in message
    assert "minor units" in message and "bytes" in message
    with payretry.Client(config(sim)) as c:
        with pytest.raises(TypeError, match="decimal.Decimal"):
            c.submit("o-dec", b)
        with pytest.raises(TypeError, match=r"body\['items'\]\[1\]"):
            c.submit("o-dec", {"items": [1, decimal.Decimal("2")]})
        # Minor units as an int: what the payment is sent with.
        assert c.submit("o-dec", body("o-dec", amount=1050)).outcome is payretry.Outcome.SUCCEEDED
    assert sim.charges("o-dec") == 1


def test_other_values_json_cannot_hold_keep_the_json_error() -> None:
    with pytest.raises(TypeError, match="set"):
        payretry.body_bytes({"tags": {1, 2}})
