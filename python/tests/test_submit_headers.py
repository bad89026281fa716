"""submit(..., headers=..., traceparent=...): extra headers and a W3C trace
context on every attempt of one payment. The signing simulator proves the
headers arrive: a caller that knows the path and body signs a create itself,
per submission, without a request hook."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
from typing import Any, Dict

import pytest

import payretry
from conftest import Sim, body, config

SECRET = "whsec_python_headers_test"
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
# Stripe, with bodies sent as the JSON bytes given (the Stripe profile would
# form-encode them), so that the caller knows the bytes it signs.
JSON_STRIPE: Dict[str, Any] = {"extends": "stripe", "name": "sim-json", "encoding": "json"}


@pytest.fixture
def signing_sim(start_sim: Any) -> Sim:
    s: Sim = start_sim("--hmac-secret", SECRET)
    return s


def create_signature(order_id: str) -> str:
    message = b"POST\n/v1/payments\n" + payretry.body_bytes(body(order_id))
    return "v1=" + hmac.new(SECRET.encode(), message, hashlib.sha256).hexdigest()


def test_headers_go_out_on_every_attempt_of_the_payment(signing_sim: Sim) -> None:
    signing_sim.script("o-hdr", ["503", "none"])
    signing_sim.script("o-hdr-async", ["503", "none"])
    with payretry.Client(config(signing_sim, provider=JSON_STRIPE)) as c:
        r = c.submit("o-hdr", body("o-hdr"), headers={"X-Signature": create_signature("o-hdr")})

        async def main() -> payretry.Result:
            pairs = [("X-Signature", create_signature("o-hdr-async")), ("X-Tenant", "shop-7")]
            return await c.submit_async("o-hdr-async", body("o-hdr-async"), headers=pairs)

        r_async = asyncio.run(main())
    assert r.outcome is payretry.Outcome.SUCCEEDED and len(r.attempts) == 2
    assert r_async.outcome is payretry.Outcome.SUCCEEDED and len(r_async.attempts) == 2
    stats = signing_sim.admin("stats")
    assert stats["signed_requests"] == 4 and stats["bad_signatures"] == 0


def test_headers_payretry_owns_or_cannot_send_are_refused_naming_them(sim: Sim) -> None:
    with payretry.Client(config(sim)) as c:
        for name, value in (("Idempotency-Key", "k"), ("Content-Type", "text/plain"),
                            ("Authorization", "Bearer x"), ("traceparent", TRACEPARENT)):
            with pytest.raises(payretry.InvalidArgumentError) as raised:
                c.submit("o-hdr-bad", body("o-hdr-bad"), headers={name: value})
            assert name.lower() in str(raised.value).lower()
        with pytest.raises(payretry.InvalidArgumentError, match="HTTP token"):
            c.submit("o-hdr-bad", body("o-hdr-bad"), headers={"X Bad": "v"})
        with pytest.raises(payretry.InvalidArgumentError):
            c.submit("o-hdr-bad", body("o-hdr-bad"), headers={"X-Sig": "a\r\nInjected: 1"})
        with pytest.raises(payretry.InvalidArgumentError, match="NUL"):
            c.submit("o-hdr-bad", body("o-hdr-bad"), headers={"X-Sig": "a\x00b"})
        with pytest.raises(TypeError):
            c.submit("o-hdr-bad", body("o-hdr-bad"), headers="X-Sig: v")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            c.submit("o-hdr-bad", body("o-hdr-bad"), headers={"X-Sig": 1})  # type: ignore[dict-item]
        with pytest.raises(payretry.InvalidArgumentError):
            c.submit("o-hdr-bad", body("o-hdr-bad"), headers=[(f"X-H{i}", "v") for i in range(65)])
        # None of those was sent; the same order then goes out with good headers.
        assert sim.requests() == 0
        assert c.submit("o-hdr-bad", body("o-hdr-bad"), headers={"X-Tenant": "t"}).succeeded
    assert sim.charges("o-hdr-bad") == 1


def test_traceparent_is_in_every_log_line_of_the_payment(sim: Sim, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="payretry")
    sim.script("o-trace", ["503", "none"])
    with payretry.Client(config(sim)) as c:
        r = c.submit("o-trace", body("o-trace"), traceparent=TRACEPARENT)
        other = c.submit("o-untraced", body("o-untraced"))
    assert r.succeeded and len(r.attempts) == 2 and other.succeeded
    lines = [json.loads(rec.getMessage()) for rec in caplog.records if rec.name == "payretry"]
    traced = [ln for ln in lines if ln.get("order_id") == "o-trace"]
    assert len([ln for ln in traced if ln.get("event") == "attempt"]) == 2
    assert traced and all(ln.get("traceparent") == TRACEPARENT for ln in traced)
    assert all("traceparent" not in ln for ln in lines if ln.get("order_id") == "o-untraced")


@pytest.mark.parametrize("bad", ["", "00-abc", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n",
                                 "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01-extra"])
def test_a_malformed_traceparent_is_refused_and_nothing_is_sent(sim: Sim, bad: str) -> None:
    with payretry.Client(config(sim)) as c:
        with pytest.raises(payretry.InvalidArgumentError):
            c.submit("o-trace-bad", body("o-trace-bad"), traceparent=bad)

        async def main() -> None:
            await c.submit_async("o-trace-bad", body("o-trace-bad"), traceparent=bad)

        with pytest.raises(payretry.InvalidArgumentError):
            asyncio.run(main())
    assert sim.requests() == 0
