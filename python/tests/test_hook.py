"""The request hook from Python, against a simulator that checks an HMAC
signature on every create and lookup (`payretry-sim --hmac-secret`): the
hook signs each attempt and each lookup, and the simulator counts what it
verified (`signed_requests`) and what it refused (`bad_signatures`)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import threading
import time
from typing import Any, Dict, List, Mapping, Optional

import pytest

import payretry
from conftest import Sim, body, config

SECRET = "whsec_python_hook_test"

# The Stripe profile looks a payment up by the provider's id, which a payment
# whose answers were lost never got; the simulator also answers a lookup by
# merchant reference, which this profile uses (as tests/integration does).
LOOKUP_BY_ORDER = {
    "extends": "stripe",
    "name": "sim-lookup",
    "lookup": {
        "by": "order_id",
        "method": "GET",
        "path": "/v1/payments?order_id={order_id}",
        "status_path": "$.data[0].status",
        "id_path": "$.data[0].id",
        "status_map": {"succeeded": "SUCCEEDED"},
        "reference_path": "$.order_id",
        "not_found": {"status": 200, "code_path": "$.total_count", "codes": ["0"]},
    },
}


def signature(secret: str, info: payretry.AttemptInfo) -> str:
    message = info.method.encode() + b"\n" + info.path.encode() + b"\n" + info.body
    return "v1=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


class Signer:
    """A request hook that signs every request and remembers what it saw."""

    def __init__(self, secret: str = SECRET) -> None:
        self.secret = secret
        self.seen: List[payretry.AttemptInfo] = []
        self.threads: List[int] = []
        self._lock = threading.Lock()

    def __call__(self, info: payretry.AttemptInfo) -> Optional[Mapping[str, str]]:
        with self._lock:
            self.seen.append(info)
            self.threads.append(threading.get_ident())
        return {"X-Signature": signature(self.secret, info)}


@pytest.fixture
def signing_sim(start_sim: Any) -> Sim:
    s: Sim = start_sim("--hmac-secret", SECRET)
    return s


def signature_counts(sim: Sim) -> Dict[str, int]:
    stats = sim.admin("stats")
    return {"signed": int(stats["signed_requests"]), "bad": int(stats["bad_signatures"])}


def test_every_attempt_and_every_lookup_is_signed_by_the_hook(signing_sim: Sim) -> None:
    signing_sim.script("o-sig-unknown", ["lost_response", "lost_response"])
    signer = Signer()
    cfg = config(signing_sim, {"max_attempts": 2}, provider=LOOKUP_BY_ORDER)
    with payretry.Client(cfg, request_hook=signer) as c:
        ok = c.submit("o-sig-1", body("o-sig-1"))
        unknown = c.submit("o-sig-unknown", body("o-sig-unknown"))
        looked_up = c.query("o-sig-unknown")
        signing_sim.script("o-sig-rec", ["lost_response", "lost_response"])
        assert c.submit("o-sig-rec", body("o-sig-rec")).outcome is payretry.Outcome.UNKNOWN
        report = c.reconcile()
    assert ok.outcome is payretry.Outcome.SUCCEEDED
    assert unknown.outcome is payretry.Outcome.UNKNOWN and len(unknown.attempts) == 2
    assert looked_up.outcome is payretry.Outcome.SUCCEEDED and looked_up.queried
    assert [p.outcome for p in report] == [payretry.Outcome.SUCCEEDED]

    creates = [i for i in signer.seen if i.method == "POST"]
    lookups = [i for i in signer.seen if i.method != "POST"]
    assert [(i.order_id, i.attempt) for i in creates] == [
        ("o-sig-1", 1), ("o-sig-unknown", 1), ("o-sig-unknown", 2), ("o-sig-rec", 1), ("o-sig-rec", 2)
    ]
    retried = [i for i in creates if i.order_id == "o-sig-unknown"]
    # The bytes as sent (the Stripe profile form-encodes a JSON body), the same on every attempt.
    assert retried[0].body == retried[1].body and b"o-sig-unknown" in retried[0].body
    assert retried[0].idempotency_key == retried[1].idempotency_key == unknown.idempotency_key
    assert {i.order_id for i in lookups} == {"o-sig-unknown", "o-sig-rec"}
    assert all(i.method == "GET" and i.path.startswith("/v1/payments?order_id=") and i.body == b"" for i in lookups)
    assert all(i.url.endswith(i.path) and i.unix_time_ms > 0 for i in signer.seen)
    # Every request the hook signed reached the simulator and passed its check.
    assert signature_counts(signing_sim) == {"signed": len(signer.seen), "bad": 0}
    assert signing_sim.charges("o-sig-unknown") == 1 and signing_sim.charges("o-sig-rec") == 1


def test_a_same_key_re_send_of_reconcile_is_signed_too(signing_sim: Sim) -> None:
    # The Stripe profile cannot look up a payment that never got an id: reconcile
    # settles it by re-sending the very bytes under the same key, through the hook.
    signing_sim.script("o-sig-resend", ["lost_response", "lost_response"])
    signer = Signer()
    with payretry.Client(config(signing_sim, {"max_attempts": 2}), request_hook=signer) as c:
        assert c.submit("o-sig-resend", body("o-sig-resend")).outcome is payretry.Outcome.UNKNOWN
        report = c.reconcile(lambda oid: body(oid))
    assert [p.outcome for p in report] == [payretry.Outcome.SUCCEEDED]
    assert [(i.method, i.order_id) for i in signer.seen] == [("POST", "o-sig-resend")] * 3
    assert len({i.idempotency_key for i in signer.seen}) == 1
    assert signature_counts(signing_sim) == {"signed": 3, "bad": 0}
    assert signing_sim.charges("o-sig-resend") == 1


def test_payments_on_the_engine_threads_are_signed_too(signing_sim: Sim) -> None:
    signer = Signer()
    with payretry.Client(config(signing_sim), request_hook=signer) as c:
        many = c.submit_many([(f"o-sig-many-{i}", body(f"o-sig-many-{i}")) for i in range(8)])

        async def main() -> List[payretry.Result]:
            return list(await asyncio.gather(*(c.submit_async(f"o-sig-as-{i}", body(f"o-sig-as-{i}")) for i in range(8))))

        later = asyncio.run(main())
    assert all(isinstance(r, payretry.Result) and r.outcome is payretry.Outcome.SUCCEEDED for r in many + later)
    assert threading.get_ident() not in signer.threads  # the engine threads called it
    assert signature_counts(signing_sim) == {"signed": 16, "bad": 0}


def test_a_hook_signing_with_the_wrong_secret_charges_nothing(signing_sim: Sim) -> None:
    with payretry.Client(config(signing_sim), request_hook=Signer("not-the-secret")) as c:
        r = c.submit("o-sig-wrong", body("o-sig-wrong"))
    assert r.outcome is not payretry.Outcome.SUCCEEDED
    assert r.http_status == 401
    assert signing_sim.charges("o-sig-wrong") == 0
    counts = signature_counts(signing_sim)
    assert counts["signed"] == 0 and counts["bad"] >= 1


def test_no_hook_at_all_is_refused_by_the_signing_simulator(signing_sim: Sim) -> None:
    with payretry.Client(config(signing_sim)) as c:
        r = c.submit("o-sig-none", body("o-sig-none"))
    assert r.outcome is not payretry.Outcome.SUCCEEDED and r.http_status == 401
    assert signing_sim.charges("o-sig-none") == 0


def test_a_raising_hook_sends_nothing_and_raises_hook_error_with_its_exception(sim: Sim) -> None:
    def hook(info: payretry.AttemptInfo) -> Optional[Mapping[str, str]]:
        raise KeyError("signing key not loaded")

    with payretry.Client(config(sim), request_hook=hook) as c:
        with pytest.raises(payretry.HookError) as raised:
            c.submit("o-hook-raise", body("o-hook-raise"))
        many = c.submit_many([("o-hook-raise-many", body("o-hook-raise-many"))])

        async def main() -> None:
            await c.submit_async("o-hook-raise-async", body("o-hook-raise-async"))

        with pytest.raises(payretry.HookError) as raised_async:
            asyncio.run(main())
    for err in (raised.value, raised_async.value, many[0]):
        assert isinstance(err, payretry.HookError)
        assert isinstance(err.__cause__, KeyError)
        assert "KeyError" in str(err) and "signing key" not in str(err)  # the type, not the text
    assert sim.requests() == 0


def test_a_hook_raising_after_a_possibly_processed_attempt_gives_unknown(sim: Sim) -> None:
    sim.script("o-hook-late", ["lost_response", "none"])

    def hook(info: payretry.AttemptInfo) -> Optional[Mapping[str, str]]:
        if info.attempt > 1:
            raise RuntimeError("signer went away")
        return None

    with payretry.Client(config(sim), request_hook=hook) as c:
        r = c.submit("o-hook-late", body("o-hook-late"))
    assert r.outcome is payretry.Outcome.UNKNOWN  # never FAILED: the first attempt may have charged
    assert r.error and "request hook" in r.error
    assert sim.charges("o-hook-late") == 1


def test_headers_the_library_refuses_stop_the_attempt_naming_the_header(sim: Sim) -> None:
    returned: Dict[str, str] = {}

    def hook(info: payretry.AttemptInfo) -> Optional[Mapping[str, str]]:
        return returned

    with payretry.Client(config(sim), request_hook=hook) as c:
        for bad, why in (({"X Sig": "v"}, "X Sig"), ({"Idempotency-Key": "k"}, "Idempotency-Key"),
                         ({"X-Sig": "a\r\nb"}, "CR or LF")):
            returned.clear()
            returned.update(bad)
            with pytest.raises(payretry.HookError) as raised:
                c.submit("o-hook-bad", body("o-hook-bad"))
            assert isinstance(raised.value.__cause__, payretry.InvalidArgumentError)
            assert why in str(raised.value.__cause__)
        returned.clear()
        assert c.submit("o-hook-bad", body("o-hook-bad")).outcome is payretry.Outcome.SUCCEEDED
    assert sim.charges("o-hook-bad") == 1

    def not_a_mapping(info: payretry.AttemptInfo) -> Any:
        return ["X-Sig"]

    with payretry.Client(config(sim), request_hook=not_a_mapping) as c:
        with pytest.raises(payretry.HookError) as wrong_type:
            c.submit("o-hook-type", body("o-hook-type"))
    assert isinstance(wrong_type.value.__cause__, TypeError)
    assert sim.charges("o-hook-type") == 0


def test_a_lookup_the_hook_refuses_leaves_the_payment_unknown(signing_sim: Sim) -> None:
    signing_sim.script("o-hook-lookup", ["lost_response", "lost_response"])
    signer = Signer()
    refuse_lookups = threading.Event()

    def hook(info: payretry.AttemptInfo) -> Optional[Mapping[str, str]]:
        if info.method != "POST" and refuse_lookups.is_set():
            raise PermissionError("lookups not allowed now")
        return signer(info)

    cfg = config(signing_sim, {"max_attempts": 2}, provider=LOOKUP_BY_ORDER)
    with payretry.Client(cfg, request_hook=hook) as c:
        assert c.submit("o-hook-lookup", body("o-hook-lookup")).outcome is payretry.Outcome.UNKNOWN
        refuse_lookups.set()
        refused = c.query("o-hook-lookup")
        assert refused.outcome is payretry.Outcome.UNKNOWN
        assert c.ledger_get("o-hook-lookup")["payment"]["state"] == "UNKNOWN"
        refuse_lookups.clear()
        assert c.query("o-hook-lookup").outcome is payretry.Outcome.SUCCEEDED
    assert signing_sim.charges("o-hook-lookup") == 1
    assert signature_counts(signing_sim)["bad"] == 0


def test_hooks_on_many_threads_and_the_engine_never_deadlock(start_sim: Any) -> None:
    slow = start_sim("--hmac-secret", SECRET, "--latency-ms", "50")
    signer = Signer()
    c = payretry.Client(config(slow, {"attempt_timeout_ms": 3000, "deadline_ms": 20000}), request_hook=signer)
    results: List[Any] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        r = c.submit(f"o-dl-t{i}", body(f"o-dl-t{i}"))
        with lock:
            results.append(r)

    async def main() -> List[payretry.Result]:
        pending = [asyncio.ensure_future(c.submit_async(f"o-dl-a{i}", body(f"o-dl-a{i}"))) for i in range(16)]
        await asyncio.sleep(0)
        # close() with payments in flight waits for the engine, whose hook
        # needs the GIL: it must give the GIL up while it waits.
        c.close()
        return list(await asyncio.gather(*pending))

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    async_results = asyncio.run(asyncio.wait_for(main(), timeout=30))
    elapsed = time.monotonic() - t0
    print(f"\n6 threads + 16 submit_async with a Python hook: {elapsed:.2f} s")
    assert not any(t.is_alive() for t in threads)
    assert all(r.outcome is payretry.Outcome.SUCCEEDED for r in results + async_results)
    assert len(results) == 6 and len(async_results) == 16
    assert signature_counts(slow) == {"signed": 22, "bad": 0}


def test_a_hook_that_is_not_a_plain_function_is_refused_at_once(sim: Sim) -> None:
    async def async_hook(info: payretry.AttemptInfo) -> None:
        return None

    with pytest.raises(TypeError, match="coroutine"):
        payretry.Client(config(sim), request_hook=async_hook)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callable"):
        payretry.Client(config(sim), request_hook={"X-Sig": "v"})  # type: ignore[arg-type]
