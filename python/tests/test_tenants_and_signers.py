"""The six findings of the outside audit (issue 45), from Python: each against
payretry-sim playing the provider, charges counted by the simulator's truth
(per order id, across every merchant account and scope). The C ABI versions,
with more detail, are tests/integration/test_tenants_and_signers.cpp."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import payretry
from conftest import API_KEY, Sim, body, config

KEYS = Path(__file__).resolve().parents[2] / "tests" / "keys"
TENANT_B_KEY = "sk_test_python_tenant_b"
PAYPAL_AUTH = {"oauth2": {"client_id": "test-client-id", "client_secret": "test-client-secret"}}


def sqlite(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path / 'ledger.db'}"


# ---- 1. lookups carry the payment's own submission headers ------------------------------------


def test_lookups_carry_the_payments_own_submission_headers(start_sim: Any, tmp_path: Path) -> None:
    sim: Sim = start_sim("--profile", "checkout_com", "--scope-header", "X-Tenant")
    cfg = config(sim, {"max_attempts": 1}, provider="checkout_com", not_found_grace_ms=100, ledger=sqlite(tmp_path))
    tenant = {"X-Tenant": "t1"}
    sim.script("py1", ["500"])  # charged in tenant t1; Checkout.com does not cache the 500
    with payretry.Client(cfg) as c:
        first = c.submit("py1", body("py1"), headers=tenant)
        assert first.outcome is payretry.Outcome.UNKNOWN, first
        time.sleep(0.25)  # past not_found_grace_ms
        q = c.query("py1")
        assert q.outcome is payretry.Outcome.SUCCEEDED, q.to_json()
        assert all(e["verdict"] != "absent" for e in c.ledger_get("py1")["attempts"])
        again = c.submit("py1", body("py1"), headers=tenant)
        assert again.outcome is payretry.Outcome.SUCCEEDED, again.to_json()
    assert sim.requests() == 1, "the order was sent again"
    assert sim.charges("py1") == 1, "charged twice"


# ---- 2. scope is part of a payment's identity -------------------------------------------------


@pytest.mark.parametrize("variant", ["api_key_per_tenant", "stripe_account_per_tenant"])
def test_scope_is_part_of_a_payments_identity(start_sim: Any, tmp_path: Path, variant: str) -> None:
    if variant == "api_key_per_tenant":
        sim: Sim = start_sim("--api-key", TENANT_B_KEY)
        extra_a: Dict[str, Any] = {"auth": {"bearer": API_KEY}}
        extra_b: Dict[str, Any] = {"auth": {"bearer": TENANT_B_KEY}}
    else:
        sim = start_sim("--scope-header", "Stripe-Account")
        extra_a = {"headers": {"Stripe-Account": "acct_A"}}
        extra_b = {"headers": {"Stripe-Account": "acct_B"}}
    retry = {"max_attempts": 1}
    ledger = sqlite(tmp_path)
    sim.script("py2-a", ["lost_response"])  # charged in A's account, the answer lost
    sim.script("py2-b", ["lost_response"])  # B's own payment
    with payretry.Client(config(sim, retry, ledger=ledger, **extra_a)) as a, \
            payretry.Client(config(sim, retry, ledger=ledger, **extra_b)) as b:
        assert a.submit("py2-a", body("py2-a")).outcome is payretry.Outcome.UNKNOWN
        assert b.submit("py2-b", body("py2-b")).outcome is payretry.Outcome.UNKNOWN
        sent = sim.requests()

        report = b.reconcile(body)
        examined = [p.order_id for p in report.payments] + [f.order_id for f in report.failures]
        assert "py2-a" not in examined, f"B's reconcile examined A's order: {examined}"
        assert examined == ["py2-b"]
        assert sim.charges("py2-a") == 1, "B's reconcile charged A's order in B's account"
        assert sim.requests() == sent + 1  # B's own re-send only
        with pytest.raises(payretry.MismatchError):
            b.submit("py2-a", body("py2-a"))
        with pytest.raises(payretry.MismatchError):
            b.query("py2-a")
        assert sim.requests() == sent + 1

        a.reconcile(body)
        assert a.ledger_get("py2-a")["payment"]["state"] == "SUCCEEDED"
    assert sim.charges("py2-a") == 1 and sim.charges("py2-b") == 1
    assert sim.admin("truth")["duplicates"] == 0


# ---- 3. no blocking work under an engine lock -------------------------------------------------


@pytest.mark.parametrize("engine_threads", [1, 4])
def test_no_blocking_work_under_an_engine_lock(start_sim: Any, engine_threads: int) -> None:
    sim: Sim = start_sim("--profile", "paypal", "--oauth2-delay-ms", "-1")  # the token endpoint hangs
    deadline_ms, bound_ms = 1000, 500
    cfg = config(sim, {"deadline_ms": deadline_ms, "attempt_timeout_ms": 10000, "connect_timeout_ms": 1000},
                 provider="paypal", auth=PAYPAL_AUTH, engine_threads=engine_threads)
    timings: List[Tuple[str, float, payretry.Result]] = []
    lock = threading.Lock()

    def blocking(c: payretry.Client, order: str) -> None:
        t0 = time.monotonic()
        r = c.submit(order, body(order))
        with lock:
            timings.append((order, time.monotonic() - t0, r))

    async def one(c: payretry.Client, order: str) -> None:
        t0 = time.monotonic()
        r = await c.submit_async(order, body(order))
        with lock:
            timings.append((order, time.monotonic() - t0, r))

    async def at_once(c: payretry.Client, threads: List[threading.Thread]) -> None:
        # 16 payments on the engine; 100 ms later, while the token request hangs, 16 more
        # and 8 threads calling the blocking submit.
        tasks = [asyncio.ensure_future(one(c, f"py3-a{engine_threads}-{i}")) for i in range(16)]
        await asyncio.sleep(0.1)
        tasks += [asyncio.ensure_future(one(c, f"py3-a{engine_threads}-{i}")) for i in range(16, 32)]
        for t in threads:
            t.start()
        await asyncio.gather(*tasks)

    with payretry.Client(cfg) as c:
        threads = [threading.Thread(target=blocking, args=(c, f"py3-b{engine_threads}-{i}")) for i in range(8)]
        asyncio.run(at_once(c, threads))
        for t in threads:
            t.join()
    assert len(timings) == 40
    worst = max(took for _, took, _ in timings) * 1000 - deadline_ms
    print(f"[ finding 3 ] engine_threads {engine_threads}: worst answer {worst:.0f} ms past the deadline")
    late = [(o, round(took * 1000)) for o, took, _ in timings if took * 1000 > deadline_ms + bound_ms]
    assert not late, f"answered later than deadline + {bound_ms} ms: {late}"
    for order, _, r in timings:
        assert r.outcome is not payretry.Outcome.SUCCEEDED, (order, r)
        assert r.delivery is payretry.Delivery.NOT_SENT, (order, r.to_json())
    assert sim.requests() == 0, "a payment left without a token"


# ---- 4. a verified answer must name this request ----------------------------------------------


class ReplayProxy:
    """Forwards each request (one per connection) to the simulator, except the
    lookup `replay` picks, which it answers with the answer it kept of the
    lookup `record` picked: a man in the middle with genuinely signed answers."""

    def __init__(self, sim: Sim, record: Callable[[bytes, bytes], bool], replay: Callable[[bytes, bytes], bool]):
        self.sim, self.record, self.replay = sim, record, replay
        self.kept = b""
        self.replayed = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.sock.close()

    @staticmethod
    def _read_request(conn: socket.socket) -> Optional[Tuple[bytes, bytes]]:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(rest) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            rest += chunk
        return head, rest

    def _forward(self, head: bytes, body_bytes: bytes) -> bytes:
        with socket.create_connection(("127.0.0.1", self.sim.port), timeout=5) as up:
            up.sendall(head + b"\r\nConnection: close\r\n\r\n" + body_bytes)
            answer = b""
            try:
                while True:
                    chunk = up.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
            except ConnectionResetError:
                return b""  # the simulator reset it: the client sees a lost connection
        return answer if b"\r\n\r\n" in answer else b""

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                req = self._read_request(conn)
                if req is None:
                    continue
                head, body_bytes = req
                if self.replay(head, body_bytes):
                    self.replayed += 1
                    answer = self.kept
                else:
                    answer = self._forward(head, body_bytes)
                    if self.record(head, body_bytes):
                        self.kept = answer
                if answer:
                    conn.sendall(answer)


def wechat_lookup_of(order: str) -> Callable[[bytes, bytes], bool]:
    return lambda head, _: head.startswith(b"GET ") and f"/out-trade-no/{order}?".encode() in head


def alipay_lookup_of(order: str) -> Callable[[bytes, bytes], bool]:
    return lambda head, b: b"alipay.trade.query" in head.split(b"\r\n", 1)[0] and order.encode() in b


@pytest.mark.parametrize("provider", ["wechatpay_v3", "alipay"])
def test_a_verified_answer_must_name_this_request(start_sim: Any, tmp_path: Path, provider: str) -> None:
    sim: Sim = start_sim("--profile", provider, "--keys", str(KEYS))
    extra: Dict[str, Any]
    if provider == "wechatpay_v3":
        order_a, order_b = "wxPyA0001", "wxPyB0002"

        def make(o: str) -> Dict[str, Any]:
            return {"out_trade_no": o, "amount": {"total": 100, "currency": "CNY"}}

        auth = {"wechatpay": {"serial_no": "3775B6A45ACD588826D15E583A95F5DD3F3B4DD8",
                              "private_key_file": str(KEYS / "wechat_merchant_key.pem"),
                              "platform_public_key_file": str(KEYS / "wechat_platform_pub.pem")}}
        extra = {"merchant_id": "1900000109"}
        lookup_of = wechat_lookup_of
    else:
        order_a, order_b = "aliPyA0001", "aliPyB0002"

        def make(o: str) -> Dict[str, Any]:
            return {"biz_content": {"out_trade_no": o, "total_amount": "10.00", "subject": "x"}}

        auth = {"alipay": {"app_id": "2021000000000001", "private_key_file": str(KEYS / "alipay_app_key.pem"),
                           "alipay_public_key_file": str(KEYS / "alipay_pub.pem")}}
        extra = {}
        lookup_of = alipay_lookup_of
    proxy = ReplayProxy(sim, lookup_of(order_a), lookup_of(order_b))
    cfg = config(sim, {"max_attempts": 1, "attempt_timeout_ms": 3000}, provider=provider, auth=auth,
                 base_url=proxy.url, ledger=sqlite(tmp_path), **extra)
    del cfg["create_path"]  # the profile's own
    try:
        sim.script(order_a, ["lost_response"])  # A: charged, its answer lost
        sim.script(order_b, ["reset_before"])   # B: never charged
        with payretry.Client(cfg) as c:
            assert c.submit(order_a, make(order_a)).outcome is payretry.Outcome.UNKNOWN
            qa = c.query(order_a)  # the proxy keeps this signed answer
            assert qa.outcome is payretry.Outcome.SUCCEEDED, qa.to_json()
            assert order_a.encode() in proxy.kept
            assert c.submit(order_b, make(order_b)).outcome is payretry.Outcome.UNKNOWN
            qb = c.query(order_b)  # answered with A's answer
            assert proxy.replayed >= 1
            assert qb.outcome is payretry.Outcome.UNKNOWN, qb.to_json()
            assert qb.provider_payment_id != qa.provider_payment_id or qa.provider_payment_id is None, qb.to_json()
            why = (qb.error or "") + str(c.ledger_get(order_b))
            assert "verif" in why or "another order" in why or order_a in why, qb.to_json()
    finally:
        proxy.close()
    assert sim.charges(order_b) == 0 and sim.charges(order_a) == 1


# ---- 5. every request that left is an attempt -------------------------------------------------


def sends(row: Dict[str, Any]) -> List[Tuple[int, int]]:
    return [(e["attempt"], e["http_status"]) for e in row["attempts"] if e.get("kind", "send") == "send"]


def test_every_request_that_left_is_an_attempt_a_401_after_processing(start_sim: Any, tmp_path: Path) -> None:
    sim: Sim = start_sim("--profile", "paypal")
    profile = {"extends": "paypal", "name": "paypal_no_replay", "replay": "none"}
    with payretry.Client(config(sim, provider=profile, auth=PAYPAL_AUTH, ledger=sqlite(tmp_path))) as c:
        assert c.submit("py5-warm", body("py5-warm")).succeeded  # a token first
        # Charged, then 401 invalid_token, and no record of the request id: what a
        # profile that promises no replay must assume a 401 can hide.
        sim.script("py5", ["401_after_forgetting"])
        r = c.submit("py5", body("py5"))
        assert sim.charges("py5") == 1, f"the 401 was followed by a re-send that charged again: {r.to_json()}"
        assert r.outcome is payretry.Outcome.UNKNOWN, r.to_json()
        assert r.delivery is payretry.Delivery.MAYBE_PROCESSED
        assert [(a.number, a.http_status) for a in r.attempts] == [(1, 401)], r.to_json()
        assert sends(c.ledger_get("py5")) == [(1, 401)]


def test_every_request_that_left_is_an_attempt_a_401_and_the_renewed_resend(start_sim: Any, tmp_path: Path) -> None:
    sim: Sim = start_sim("--profile", "paypal")
    with payretry.Client(config(sim, provider="paypal", auth=PAYPAL_AUTH, ledger=sqlite(tmp_path))) as c:
        assert c.submit("py5-warm2", body("py5-warm2")).succeeded
        sim.admin("oauth2/revoke", {})  # a plain 401, before anything is processed
        r = c.submit("py5-renewed", body("py5-renewed"))
        assert r.outcome is payretry.Outcome.SUCCEEDED, r.to_json()
        assert [a.number for a in r.attempts] == [1, 2], r.to_json()
        assert r.attempts[0].http_status == 401, r.to_json()
        history = sends(c.ledger_get("py5-renewed"))
        assert [n for n, _ in history] == [1, 2] and history[0][1] == 401, history
    assert sim.charges("py5-renewed") == 1


def test_a_resend_after_a_401_gets_paypals_current_state_not_a_second_charge(start_sim: Any, tmp_path: Path) -> None:
    # PayPal: a re-send with the same PayPal-Request-Id returns the current state of the earlier request.
    sim: Sim = start_sim("--profile", "paypal")
    with payretry.Client(config(sim, provider="paypal", auth=PAYPAL_AUTH, ledger=sqlite(tmp_path))) as c:
        assert c.submit("py5-warm3", body("py5-warm3")).succeeded
        sim.script("py5-paypal", ["401_after"])  # charged, then 401 invalid_token; the request id kept
        r = c.submit("py5-paypal", body("py5-paypal"))
        assert r.outcome is payretry.Outcome.SUCCEEDED, r.to_json()
        assert [a.number for a in r.attempts] == [1, 2], r.to_json()
        assert r.attempts[0].http_status == 401, r.to_json()
        history = sends(c.ledger_get("py5-paypal"))
        assert [n for n, _ in history] == [1, 2] and history[0][1] == 401, history
    assert sim.charges("py5-paypal") == 1


# ---- a 401 on the last allowed attempt --------------------------------------------------------


def test_a_401_on_the_last_attempt_is_never_failed_when_it_may_have_been_processed(
        start_sim: Any, tmp_path: Path) -> None:
    sim: Sim = start_sim("--profile", "paypal")
    cfg = config(sim, {"max_attempts": 1}, provider="paypal", auth=PAYPAL_AUTH, ledger=sqlite(tmp_path))
    with payretry.Client(cfg) as c:
        assert c.submit("py7-warm", body("py7-warm")).succeeded
        sim.script("py7", ["401_after"])  # charged, then 401 invalid_token, and no attempt left
        r = c.submit("py7", body("py7"))
        assert r.outcome is not payretry.Outcome.FAILED, f"FAILED, and the provider charged: {r.to_json()}"
        assert r.outcome is payretry.Outcome.UNKNOWN, r.to_json()
        assert r.delivery is payretry.Delivery.MAYBE_PROCESSED
        assert [(a.number, a.http_status) for a in r.attempts] == [(1, 401)], r.to_json()
        assert sends(c.ledger_get("py7")) == [(1, 401)]
    assert sim.charges("py7") == 1


def test_a_401_on_the_last_attempt_after_429s_is_never_failed_when_it_may_have_been_processed(
        start_sim: Any, tmp_path: Path) -> None:
    sim: Sim = start_sim("--profile", "paypal", "--retry-after-s", "0")
    with payretry.Client(config(sim, provider="paypal", auth=PAYPAL_AUTH, ledger=sqlite(tmp_path))) as c:
        sim.script("py7-429s", ["429", "429", "429", "401_after"])  # the fourth and last send: charged, then 401
        r = c.submit("py7-429s", body("py7-429s"))
        assert r.outcome is not payretry.Outcome.FAILED, f"FAILED, and the provider charged: {r.to_json()}"
        assert r.outcome is payretry.Outcome.UNKNOWN, r.to_json()
        want = [(1, 429), (2, 429), (3, 429), (4, 401)]
        assert [(a.number, a.http_status) for a in r.attempts] == want, r.to_json()
        assert sends(c.ledger_get("py7-429s")) == want
    assert sim.charges("py7-429s") == 1


# ---- 6. reconcile does not repeat what cannot help --------------------------------------------


def test_reconcile_does_not_repeat_what_cannot_help(start_sim: Any, tmp_path: Path) -> None:
    sim: Sim = start_sim("--profile", "paypal")
    sim.script("py6", ["503", "decline"])
    with payretry.Client(config(sim, provider="paypal", auth=PAYPAL_AUTH, ledger=sqlite(tmp_path))) as c:
        r = c.submit("py6", body("py6"))
        assert r.outcome is payretry.Outcome.UNKNOWN, r.to_json()
        sent = sim.requests()
        for _ in range(3):
            report = c.reconcile(body)
            assert sim.requests() == sent, "reconcile sent the payment again"
            assert [p.outcome for p in report] == [payretry.Outcome.UNKNOWN]
            assert report.payments[0].error
        assert c.ledger_get("py6")["payment"]["state"] == "UNKNOWN"
        assert c.stats()["reconcile_left_unknown"].get("final_answer", 0) >= 1
    assert sim.charges("py6") == 0
