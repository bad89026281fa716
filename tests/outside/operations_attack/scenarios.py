"""Operations attack: refunds through pay_submit_operation against our own
double's counts. Run: python3 scenarios.py [function-name ...]."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import op  # noqa: E402
from double import Double  # noqa: E402

RESULTS = []
PY = sys.executable


def new_client(d, provider="stripe", retry=None, db=None):
    db = db or os.path.join(tempfile.mkdtemp(prefix="ops_attack_"), "ledger.db")
    cfg = op.config(d.url, db, provider, retry)
    return op.Client(cfg), cfg, db


def pay(c, d, order, amount=1000, provider="stripe", extra=None):
    if provider == "stripe":
        b = {"amount": amount, "currency": "eur", "metadata": {"order_id": order}}
    else:
        b = {"amount": amount, "currency": "EUR", "reference": order, "source": {"type": "token", "token": "tok_x"}}
    b.update(extra or {})
    r = c.submit(order, json.dumps(b).encode(), key="create-" + order)
    return r


def pid_of(d, order):
    return [i for i, p in d.payments.items() if p["order"] == order][0]


def op_kind(res):
    parts = (res.get("order_id") or "").split(" ")
    return parts[1] if len(parts) == 3 else "create"


def judge(name, d, order, results, nothing_sent_after=None, expect=None, note=""):
    """results: [(rc, result, msg)]. BROKEN when: a key moved money twice; the
    distinct keys the library sent for one payment asked more than was
    captured; an outcome contradicts the double (SUCCEEDED with nothing
    executed under its key, FAILED with something executed); or a refusal
    that must send nothing sent something (`nothing_sent_after`: the number
    of refund POSTs before the refused calls); `expect` is a list of extra
    (ok, why) checks."""
    pid = pid_of(d, order)
    t = d.truth(pid)
    why = []
    for k, n in d.moves_by_key.items():
        if n > 1 and k in d.keys_of(pid):
            why.append(f"key {k} moved money {n} times")
    asked = sum(amt for k, amt in d.sent.items() if d.sent_pid.get(k) == pid)
    if asked > d.payments[pid]["captured"]:
        why.append(f"the library sent refunds asking {asked} in all of {d.payments[pid]['captured']} captured")
    for rc, res, msg in results:
        if rc or not res:
            continue
        k, out = res.get("idempotency_key"), res.get("outcome")
        moved = d.moves_by_key.get(k, 0)
        if out == "SUCCEEDED" and moved == 0:
            if res.get("money_state") in ("refunded", "paid", "failed") or op_kind(res) != "refund":
                why.append(f"SUCCEEDED (money {res.get('money_state')}) but the provider executed nothing under {k}")
            else:
                # The library's own reading: SUCCEEDED = the provider took the
                # request, the money state says whether it refunded. The
                # brief's promise 5 says SUCCEEDED = refunded: reported apart.
                why.append(f"SUCCEEDED with money {res.get('money_state')} (accepted, not refunded) but the "
                           f"provider executed nothing under {k} [promise 5 as briefed]")
        if out == "FAILED" and moved > 0:
            why.append(f"FAILED but the provider refunded under {k}")
    if nothing_sent_after is not None and d.refund_posts() != nothing_sent_after:
        why.append(f"a refused call sent {d.refund_posts() - nothing_sent_after} refund request(s)")
    for ok, w in expect or []:
        if not ok:
            why.append(w)
    v = "BROKEN" if why else "HELD"
    RESULTS.append((name, v))
    outs = [(rc, op.short(res) and {k: op.short(res)[k] for k in ("outcome", "money_state") if k in op.short(res)},
             msg[:90]) for rc, res, msg in results]
    print(f"[{v}] {name}: provider={t}, refund POSTs={d.refund_posts()}; library={outs}"
          + (f"; WHY: {'; '.join(why)}" if why else "") + (f"; {note}" if note else ""), flush=True)


# ---- Stripe: faults around one refund ---------------------------------------

def _one_fault(fault, retry=None, reask=True):
    d = Double("stripe")
    try:
        c, _, _ = new_client(d, retry=retry)
        o = "ord-" + fault
        pay(c, d, o)
        d.fault(r"^/v1/refunds$", fault)
        res = [c.refund(o, "r1", 400)]
        if reask:
            time.sleep(0.1)
            res.append(c.refund(o, "r1", 400))  # the caller asks again with the same ref
            time.sleep(d.hang_s + 0.5)  # whatever the provider still holds has finished
            res.append(c.refund(o, "r1", 400))
        first = res[0][1] or {}
        note_outs = [op.short(r[1]) and r[1]["outcome"] for r in res]
        judge(f"stripe refund, {fault} on the first attempt", d, o, res,
              note=f"outcomes {note_outs}; first after {len(first.get('attempts') or [])} attempt(s)")
    finally:
        d.close()


def s_stripe_act_reset():
    _one_fault("act_reset")


def s_stripe_act_500():
    _one_fault("act_500")


def s_stripe_act_500_kept():
    _one_fault("act_500_kept")


def s_stripe_act_hang():
    _one_fault("act_hang")


def s_stripe_hang_act():
    _one_fault("hang_act")


def s_stripe_reset_before():
    _one_fault("reset_before")


def s_stripe_503_before():
    _one_fault("503_before")


def s_stripe_unknown_then_reask():
    """Every attempt of the first call loses its answer after the provider
    acted (one attempt only): UNKNOWN. The caller asks again with the same
    ref (must resume the same key: the replay settles it), then with the same
    ref and another amount (PAY_EMISMATCH, nothing sent), then a new ref for
    the rest (the UNKNOWN one, now settled, counts as spent)."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d, retry={"max_attempts": 1})
        o = "ord-unknown-reask"
        pay(c, d, o)
        d.fault(r"^/v1/refunds$", "act_hang")
        r1 = c.refund(o, "r1", 600)
        r2 = c.refund(o, "r1", 600)
        before = d.refund_posts()
        r3 = c.refund(o, "r1", 500)
        r4 = c.refund(o, "r2", 500)
        judge("stripe refund UNKNOWN, re-asked; same ref other amount; new ref over the rest", d, o,
              [r1, r2, r3, r4], nothing_sent_after=before,
              expect=[(r1[1] and r1[1]["outcome"] in ("UNKNOWN", "SUCCEEDED"), f"first outcome {op.short(r1[1])}"),
                      (r3[0] == -5, f"same ref, other amount: rc {r3[0]} (want PAY_EMISMATCH -5)"),
                      (r4[0] == -2, f"over the rest: rc {r4[0]} (want PAY_EINVALID -2)")])
    finally:
        d.close()


def s_stripe_unknown_counts_spent():
    """A refund left UNKNOWN (answers lost, re-sends replaying a kept 500)
    still counts as spent: a second ref that would exceed the payment with it
    is refused before a byte."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d, retry={"max_attempts": 2})
        o = "ord-unknown-spent"
        pay(c, d, o)
        d.fault(r"^/v1/refunds$", "act_500_kept")
        r1 = c.refund(o, "r1", 700)
        before = d.refund_posts()
        r2 = c.refund(o, "r2", 400)
        after_r2 = d.refund_posts()
        r3 = c.refund(o, "r3", 0)  # "the rest": 300, which fits beside the UNKNOWN 700
        judge("stripe refund UNKNOWN (kept 500) counts as spent", d, o, [r1, r2, r3],
              expect=[(r1[1] and r1[1]["outcome"] != "FAILED", f"kept 500 after acting: {op.short(r1[1])}"),
                      (r2[0] == -2 and after_r2 == before, f"r2 rc {r2[0]}, sent {after_r2 - before}"),
                      (r3[0] == 0 and d.sent.get(r3[1]["idempotency_key"]) == 300, f"r3 rc {r3[0]}")],
              note=f"r3 (the rest) -> {r3[0]} {r3[1] and r3[1]['outcome']} asking {r3[1] and d.sent.get(r3[1]['idempotency_key'])}")
    finally:
        d.close()


def s_stripe_guard_amounts():
    """700 then 400 of 1000: refused, nothing sent. The rest twice: the second
    refused. Zero-amount and huge amounts."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        o = "ord-guard"
        pay(c, d, o)
        a = c.refund(o, "a", 700)
        before = d.refund_posts()
        b = c.refund(o, "b", 400)
        h = c.refund(o, "huge", 2 ** 62)
        h2 = c.refund(o, "huge2", 2 ** 63 - 1)
        rest = c.refund(o, "rest1", 0)
        sent_rest = d.refund_posts()
        rest2 = c.refund(o, "rest2", 0)
        one = c.refund(o, "one", 1)
        judge("stripe guard: over the rest, huge amounts, rest twice", d, o, [a, b, h, h2, rest, rest2, one],
              expect=[(b[0] == -2, f"b rc {b[0]}"), (h[0] == -2 and h2[0] == -2, f"huge rc {h[0]} {h2[0]}"),
                      (rest[0] == 0 and rest[1]["outcome"] == "SUCCEEDED", f"rest {op.short(rest[1])}"),
                      (rest2[0] == -2 and one[0] == -2, f"after the rest: rc {rest2[0]}, {one[0]}"),
                      (d.refund_posts() == sent_rest == before + 1, f"refund POSTs {d.refund_posts()}")])
    finally:
        d.close()


def s_stripe_not_succeeded_payment():
    """Refunds of a declined payment and of an UNKNOWN one (create answer lost
    after the provider charged it): refused, nothing sent."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d, retry={"max_attempts": 1})
        o1, o2 = "ord-declined", "ord-create-unknown"
        d.create_status[o1] = "decline"
        p1 = pay(c, d, o1)
        d.fault(r"^/v1/payment_intents$", "act_hang")
        p2 = pay(c, d, o2)
        r1 = c.refund(o1, "r1", 100)
        r2 = c.refund(o2, "r1", 100)
        r3 = c.refund(o2, "r2", 0)
        judge("stripe refund of a declined / UNKNOWN payment", d, o2, [r1, r2, r3], nothing_sent_after=0,
              expect=[(r1[0] != 0, f"declined: rc {r1[0]}"), (r2[0] != 0 and r3[0] != 0, f"unknown: rc {r2[0]} {r3[0]}")],
              note=f"payments: {p1['outcome']}, {p2['outcome']}; msgs {r1[2][:60]!r} / {r2[2][:60]!r}")
    finally:
        d.close()


def s_stripe_provider_refuses():
    """Money refunded outside the library (the dashboard) leaves less than the
    ledger thinks; the provider refuses the library's refund with 400
    amount_too_large: the outcome must be FAILED (or UNKNOWN), never
    SUCCEEDED, and the payment's money must not read refunded."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        o = "ord-outside"
        pay(c, d, o)
        pid = pid_of(d, o)
        d.payments[pid]["refunded"] = 900  # the dashboard's refund
        r = c.refund(o, "r1", 500)
        money = c.ledger_get(o)["payment"]["money_state"]
        judge("stripe refund refused by the provider (400 amount_too_large)", d, o, [r],
              expect=[(money == "paid", f"payment money {money} after a refused refund")])
    finally:
        d.close()


def s_stripe_capture_then_refund_faults():
    """Manual capture answered after acting then reset; then a refund whose
    first two attempts are 503 and reset-before: the capture runs once and
    the refund once."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d, retry={"max_attempts": 4})
        o = "ord-capture"
        r0 = pay(c, d, o, extra={"capture_method": "manual"})
        d.fault(r"^/v1/payment_intents/[^/]+/capture$", "act_reset")
        cap = c.operation(o, op.CAPTURE, "c1", 0)
        d.fault(r"^/v1/refunds$", "503_before", "reset_before")
        ref = c.refund(o, "r1", 0)
        pid = pid_of(d, o)
        caps = d.moves_by_key.get("capture:" + pid, 0)
        judge("stripe capture act_reset, refund after 503 + reset", d, o, [ref],
              expect=[(caps == 1, f"captures executed: {caps}"),
                      (cap[0] == 0 and cap[1]["outcome"] == "SUCCEEDED", f"capture {cap[0]} {op.short(cap[1])} {cap[2]}")],
              note=f"create money {r0.get('money_state')}; capture {op.short(cap[1])}")
    finally:
        d.close()


# ---- processes: SIGKILL and races -------------------------------------------

def _worker(cfg, order, ref, amount, start, kind=op.REFUND):
    # stderr to a file: a full stderr pipe would block the worker.
    err = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen([PY, os.path.join(HERE, "worker.py"), json.dumps(cfg), order, str(kind), ref, str(amount),
                          str(start)], stdout=subprocess.PIPE, stderr=err, text=True)
    p.errfile = err
    line = p.stdout.readline()
    if not line:
        p.wait()
        p.errfile.seek(0)
        raise RuntimeError("worker did not start: " + p.errfile.read()[-500:])
    assert json.loads(line).get("ready")
    return p


def _finish(p, timeout=30):
    # Read through the same buffered file the ready line came from
    # (communicate() would bypass what it already buffered).
    out = p.stdout.read()
    p.wait(timeout=timeout)
    p.errfile.seek(0)
    err = p.errfile.read()
    lines = [json.loads(x) for x in out.splitlines() if x.strip()]
    lines = [x for x in lines if "rc" in x]
    if not lines:
        return (None, None, f"no output, exit {p.returncode}: " + err[-300:])
    j = lines[-1]
    res = dict(j["result"] or {}, idempotency_key=j["key"]) if j["result"] else None
    return (j["rc"], res, j["msg"])


def _kill_mid(fault):
    d = Double("stripe", hang_s=1.5)
    try:
        c, cfg, db = new_client(d, retry={"deadline_ms": 3000, "attempt_timeout_ms": 2500})
        o = "ord-kill-" + fault
        pay(c, d, o)
        d.fault(r"^/v1/refunds$", fault)
        w = _worker(cfg, o, "r1", 500, 0)
        t0 = time.time()
        while d.refund_posts() == 0 and time.time() - t0 < 10:
            time.sleep(0.01)
        time.sleep(0.2)
        os.kill(w.pid, signal.SIGKILL)
        w.wait()
        time.sleep(1.6)  # the provider finishes its part meanwhile
        res = []
        # Restart: the dead run's lease (deadline 3 s + margin 0.3 s) may still
        # hold; ask until the answer is final or 12 s pass.
        t1 = time.time()
        while time.time() - t1 < 12:
            r = _finish(_worker(cfg, o, "r1", 500, 0))
            res.append(r)
            if r[0] == 0 and r[1] and r[1]["outcome"] in ("SUCCEEDED", "FAILED"):
                break
            time.sleep(1.0)
        judge(f"stripe refund, SIGKILL during {fault}, restarted with the same ref", d, o, res,
              note=f"restarts: {[(r[0], (r[1] or {}).get('outcome')) for r in res]}")
    finally:
        d.close()


def s_kill_after_act():
    _kill_mid("act_hang")


def s_kill_before_act():
    _kill_mid("hang_act")


def s_race_same_ref():
    """Two processes, one ref, started at the same instant; 6 rounds."""
    d = Double("stripe")
    try:
        for i in range(6):
            c, cfg, db = new_client(d)
            o = f"ord-race-same-{i}"
            pay(c, d, o)
            if i % 2:
                d.fault(r"^/v1/refunds$", "act_hang")
            start = time.time() + 0.6
            ws = [_worker(cfg, o, "r1", 300, start) for _ in range(2)]
            res = [_finish(w) for w in ws]
            res.append(c.refund(o, "r1", 300))
            judge(f"two processes race refund ref r1 (round {i}{', act_hang' if i % 2 else ''})", d, o, res)
            d.faults.clear()
    finally:
        d.close()


def s_race_two_refs_over():
    """Two processes refund 600 each (refs a, b) of one 1000 payment at the
    same instant (rounds 6-7: "the rest" (0) against 600, and the rest twice):
    the guard must let at most one be sent; 8 rounds."""
    d = Double("stripe")
    try:
        for i in range(8):
            c, cfg, db = new_client(d)
            o = f"ord-race-over-{i}"
            pay(c, d, o)
            start = time.time() + 0.6
            amounts = (600, 0) if i == 6 else (0, 0) if i == 7 else (600, 600)
            ws = [_worker(cfg, o, ref, a, start) for ref, a in zip(("a", "b"), amounts)]
            res = [_finish(w) for w in ws]
            # 600 and the rest may both go (the rest is then 400): the sum
            # check in judge() covers it; otherwise at most one.
            judge(f"two processes refund {amounts[0] or 'rest'} + {amounts[1] or 'rest'} of 1000 (round {i})", d, o, res,
                  expect=[(i == 6 or sum(1 for r in res if r[0] == 0) <= 1, f"both admitted: {[r[0] for r in res]} {[r[2][:60] for r in res]}")])
    finally:
        d.close()


def s_race_threads_over():
    """The same race inside one process: two clients, one ledger, threads."""
    d = Double("stripe")
    try:
        for i in range(8):
            c, cfg, db = new_client(d)
            # Rounds 4-7: both threads on the one client.
            c2 = op.Client(cfg) if i < 4 else c
            o = f"ord-thr-over-{i}"
            pay(c, d, o)
            res = [None, None]
            bar = threading.Barrier(2)

            def go(j, cl, ref):
                bar.wait()
                res[j] = cl.refund(o, ref, 600)
            ts = [threading.Thread(target=go, args=(0, c, "a")), threading.Thread(target=go, args=(1, c2, "b"))]
            [t.start() for t in ts]
            [t.join() for t in ts]
            judge(f"two clients (threads) refund 600 + 600 of 1000 (round {i})", d, o, res,
                  expect=[(sum(1 for r in res if r[0] == 0) <= 1, f"both admitted: {[r[0] for r in res]}")])
            if c2 is not c:
                c2.close()
    finally:
        d.close()


# ---- Checkout.com: only 2xx answers kept --------------------------------------

def _cko(fault, reconcile=False, retry=None):
    d = Double("checkout_com")
    try:
        c, _, _ = new_client(d, "checkout_com", retry=retry)
        o = "ord-cko-" + fault
        r0 = pay(c, d, o, provider="checkout_com")
        d.fault(r"^/payments/[^/]+/refunds$", fault)
        res = [c.refund(o, "r1", 400)]
        time.sleep(0.1)
        res.append(c.refund(o, "r1", 400))
        extra = ""
        if reconcile:
            try:
                extra = json.dumps(c.reconcile())[:200]
            except op.PayError as e:
                extra = f"reconcile error {e}"
            time.sleep(1.0)
            res.append(c.refund(o, "r1", 400))
        judge(f"checkout_com refund, {fault}{' + reconcile' if reconcile else ''}", d, o, res,
              note=f"create {r0['outcome']}/{r0.get('money_state')}; outcomes {[op.short(r[1]) and r[1]['outcome'] for r in res]} {extra}")
    finally:
        d.close()


def s_cko_none():
    _cko("none")


def s_cko_act_500():
    _cko("act_500")


def s_cko_act_500_reconcile():
    _cko("act_500", reconcile=True)


def s_cko_act_reset():
    _cko("act_reset")


def s_cko_act_hang():
    _cko("act_hang")


def s_cko_hang_act():
    _cko("hang_act")


def s_cko_503_before():
    _cko("503_before")


def s_cko_reset_before():
    _cko("reset_before")



def s_cko_accepted_then_declined():
    """Checkout.com answers a card refund 202 (accepted, processed later) and
    then declines it (payment_refund_declined): nothing moved. The outcome
    must not be SUCCEEDED (promise: SUCCEEDED means the provider refunded)."""
    d = Double("checkout_com")
    try:
        c, _, _ = new_client(d, "checkout_com")
        o = "ord-cko-async"
        pay(c, d, o, provider="checkout_com")
        d.async_decline = True
        r = c.refund(o, "r1", 400)
        money = c.ledger_get(o)["payment"]["money_state"]
        judge("checkout_com refund 202 accepted, later declined", d, o, [r],
              note=f"declined actions {d.declined}; payment money {money}; op money {r[1] and r[1].get('money_state')}")
    finally:
        d.close()


def _cko_kill(fault):
    """Checkout.com keeps only 2xx answers: a process killed while its refund
    was at the provider, restarted with the same ref, must not send it again
    (a same-key re-send after no stored answer refunds twice)."""
    d = Double("checkout_com", hang_s=1.5)
    try:
        c, cfg, db = new_client(d, "checkout_com", retry={"deadline_ms": 3000, "attempt_timeout_ms": 2500})
        o = "ord-cko-kill-" + fault
        pay(c, d, o, provider="checkout_com")
        d.fault(r"^/payments/[^/]+/refunds$", fault)
        w = _worker(cfg, o, "r1", 500, 0)
        t0 = time.time()
        while d.refund_posts() == 0 and time.time() - t0 < 10:
            time.sleep(0.01)
        time.sleep(0.2)
        os.kill(w.pid, signal.SIGKILL)
        w.wait()
        time.sleep(1.6)
        res = []
        t1 = time.time()
        while time.time() - t1 < 8:
            r = _finish(_worker(cfg, o, "r1", 500, 0))
            res.append(r)
            if r[0] == 0 and r[1] and r[1]["outcome"] in ("SUCCEEDED", "FAILED", "UNKNOWN"):
                break
            time.sleep(1.0)
        try:
            rec = c.reconcile()
            rec = (rec.get("examined"), rec.get("UNKNOWN"), rec.get("SUCCEEDED"))
        except op.PayError as e:
            rec = str(e)
        res.append(c.refund(o, "r1", 500))
        judge(f"checkout_com refund, SIGKILL during {fault}, restarted + reconcile + re-ask", d, o, res,
              note=f"restarts {[(r[0], (r[1] or {}).get('outcome')) for r in res]}; reconcile {rec}")
    finally:
        d.close()


def s_cko_kill_after_act():
    _cko_kill("act_hang")


def s_cko_kill_before_act():
    _cko_kill("hang_act")


def s_stripe_key_expired_unknown():
    """A refund left UNKNOWN (answer lost), asked again after Stripe has
    forgotten its key (24 h; simulated: the double drops its stored answers
    and the ledger row's key_expires_at is set to the past, as a clock 25 h
    later would find it). A re-send now would refund again: it must not be
    sent."""
    import sqlite3
    d = Double("stripe")
    try:
        c, cfg, db = new_client(d, retry={"max_attempts": 1})
        o = "ord-key-expired"
        pay(c, d, o)
        d.fault(r"^/v1/refunds$", "act_hang")
        r1 = c.refund(o, "r1", 400)
        time.sleep(d.hang_s + 0.3)
        d.idem.clear()  # Stripe prunes keys after 24 h
        con = sqlite3.connect(db)
        n = con.execute("UPDATE payments SET key_expires_at = ? WHERE order_id = ?",
                        (int(time.time() * 1000) - 1000, o + " refund r1")).rowcount
        con.commit()
        con.close()
        before = d.refund_posts()
        r2 = c.refund(o, "r1", 400)
        judge("stripe UNKNOWN refund re-asked after its key expired", d, o, [r1, r2], nothing_sent_after=before,
              note=f"rows changed {n}; r2 {op.short(r2[1])} {r2[2][:100]}")
    finally:
        d.close()


def s_stripe_mismatch_variants():
    """The same ref asked with other fields (a reason), or with the rest (0)
    where it first gave an amount: PAY_EMISMATCH, nothing sent. The same ref
    as a capture is another operation (refused by the guard here)."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        o = "ord-mismatch"
        pay(c, d, o)
        r1 = c.refund(o, "r1", 1000)
        before = d.refund_posts()
        r2 = c.refund(o, "r1", 1000, body='{"reason":"duplicate"}')
        r3 = c.refund(o, "r1", 0)
        r4 = c.refund(o, "r1", 1000, body='{"payment_intent":"pi_other"}')
        r5 = c.refund(o, "r1", 1000, body='{"amount":5}')
        r6 = c.refund(o, "r1", 1000)  # the same again: resumed, nothing new moves
        judge("stripe same ref with other fields / amount / payretry's own fields", d, o, [r1, r2, r3, r4, r5, r6],
              expect=[(r2[0] == -5 and r3[0] == -5, f"rc {r2[0]} {r3[0]}"), (r4[0] != 0 and r5[0] != 0, f"rc {r4[0]} {r5[0]}"),
                      (d.refund_posts() - before <= 1, f"sent {d.refund_posts() - before}")],
              note=f"r6 {op.short(r6[1]) and r6[1]['outcome']}, from_ledger {r6[1] and r6[1].get('from_ledger')}")
    finally:
        d.close()


def s_stripe_partial_capture_over_refund():
    """Authorized 1000, captured 400: a refund of 600 (and 400 + 400 under two
    refs) must be refused before a byte."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        o = "ord-partcap"
        pay(c, d, o, extra={"capture_method": "manual"})
        cap = c.operation(o, op.CAPTURE, "c1", 400)
        before = d.refund_posts()
        r1 = c.refund(o, "big", 600)
        r2 = c.refund(o, "a", 300)
        r3 = c.refund(o, "b", 300)
        r4 = c.refund(o, "rest", 0)
        judge("stripe capture 400 of 1000, then refunds over 400", d, o, [r1, r2, r3, r4],
              expect=[(cap[0] == 0, f"capture rc {cap[0]} {cap[2]}"), (r1[0] == -2 and r3[0] == -2, f"rc {r1[0]} {r3[0]}")],
              note=f"capture {cap[1] and cap[1]['outcome']}; rest -> {r4[0]} {r4[1] and d.sent.get(r4[1]['idempotency_key'])}")
    finally:
        d.close()


def s_stripe_amount_not_read():
    """A payment whose amount the profile could not read (a string amount in
    the create body): only one whole refund may be made."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        o = "ord-noamount"
        r0 = c.submit(o, json.dumps({"amount": "1000", "currency": "eur", "metadata": {"order_id": o}}).encode(),
                      key="create-" + o)
        row_amount = c.ledger_get(o)["payment"].get("amount")
        r1 = c.refund(o, "a", 600)
        r2 = c.refund(o, "b", 600)
        r3 = c.refund(o, "w1", 0)
        r4 = c.refund(o, "w2", 0)
        ok = sum(1 for r in (r1, r2, r3, r4) if r[0] == 0)
        judge("stripe payment amount not read: refunds", d, o, [r1, r2, r3, r4],
              expect=[(ok <= 1 or row_amount not in (None, -1), f"{ok} refunds admitted")],
              note=f"create {r0['outcome']}, row amount {row_amount}; rcs {[r[0] for r in (r1, r2, r3, r4)]}")
    finally:
        d.close()


def s_order_id_collision():
    """pay_submit with an order id shaped like an operation row id
    ("o refund r1") before the refund r1 of "o": the refund must not be
    taken for it (nor send under its key)."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        o = "ord-coll"
        pay(c, d, o)
        try:
            x = c.submit(o + " refund r1", json.dumps({"amount": 5, "currency": "eur",
                                                       "metadata": {"order_id": "x"}}).encode(), key="coll-key")
            xs = x["outcome"]
        except op.PayError as e:
            xs = f"refused {e.rc}"
        r = c.refund(o, "r1", 300)
        judge("order id shaped like an operation row id", d, o, [r],
              note=f"collision create: {xs}; refund {r[0]} {op.short(r[1]) and r[1]['outcome']} {r[2][:100]}")
    finally:
        d.close()


def _stop_past_lease(house, fault):
    """A process paused (SIGSTOP) while its refund is at the provider, past
    its lease; another process asks the same ref meanwhile (takes the row
    over); then the first resumes. One refund at most, whatever each says."""
    d = Double(house, hang_s=1.0)
    try:
        c, cfg, db = new_client(d, house, retry={"deadline_ms": 2000, "attempt_timeout_ms": 1500})
        o = f"ord-stop-{house}-{fault}"
        pay(c, d, o, provider=house)
        d.fault(r"^/v1/refunds$" if house == "stripe" else r"^/payments/[^/]+/refunds$", fault)
        w = _worker(cfg, o, "r1", 500, 0)
        t0 = time.time()
        while d.refund_posts() == 0 and time.time() - t0 < 10:
            time.sleep(0.005)
        os.kill(w.pid, signal.SIGSTOP)
        time.sleep(2.6)  # past deadline 2 s + lease margin 0.3 s
        other = _finish(_worker(cfg, o, "r1", 500, 0))
        os.kill(w.pid, signal.SIGCONT)
        first = _finish(w)
        time.sleep(1.2)
        again = c.refund(o, "r1", 500)
        judge(f"{house} refund, first process SIGSTOPped past its lease during {fault}, second takes over", d, o,
              [first, other, again],
              note=f"first {first[0]} {(first[1] or {}).get('outcome')} {first[2][:80]}; other {(other[1] or {}).get('outcome')}; "
                   f"again {(again[1] or {}).get('outcome')}")
    finally:
        d.close()


def s_stop_stripe_hang_act():
    _stop_past_lease("stripe", "hang_act")


def s_stop_cko_hang_act():
    _stop_past_lease("checkout_com", "hang_act")


def s_stop_cko_act_hang():
    _stop_past_lease("checkout_com", "act_hang")


def s_race_four_procs():
    """Four processes refund 300 each (refs a-d) of 1000 at once: at most three
    may be sent; 4 rounds."""
    d = Double("stripe")
    try:
        for i in range(4):
            c, cfg, db = new_client(d)
            o = f"ord-race4-{i}"
            pay(c, d, o)
            start = time.time() + 0.8
            ws = [_worker(cfg, o, ref, 300, start) for ref in "abcd"]
            res = [_finish(w) for w in ws]
            judge(f"four processes refund 300 each of 1000 (round {i})", d, o, res,
                  expect=[(sum(1 for r in res if r[0] == 0) <= 3, f"admitted {[r[0] for r in res]}"),
                          (all(r[0] in (0, -2) for r in res), f"rcs {[(r[0], r[2][:50]) for r in res]}")])
    finally:
        d.close()


def s_race_capture_cancel():
    """An authorized payment: one process captures it, another cancels it, at
    once. The guard must not let both be sent; 6 rounds."""
    d = Double("stripe")
    try:
        for i in range(6):
            c, cfg, db = new_client(d)
            o = f"ord-capcan-{i}"
            pay(c, d, o, extra={"capture_method": "manual"})
            start = time.time() + 0.6
            ws = [_worker(cfg, o, "x", 0, start, kind=op.CAPTURE), _worker(cfg, o, "x", 0, start, kind=op.CANCEL)]
            res = [_finish(w) for w in ws]
            pid = pid_of(d, o)
            posts = [p for m, p, k in d.requests if m == "POST" and pid in p]
            judge(f"capture and cancel race (round {i})", d, o, res,
                  expect=[(len(posts) <= 1, f"both sent: {posts}")],
                  note=f"rcs {[(r[0], (r[1] or {}).get('outcome'), r[2][:60]) for r in res]}")
    finally:
        d.close()


def s_query_operation_row():
    """pay_query and pay_submit on an UNKNOWN refund's row id (Stripe, answer
    lost): neither may send the refund again under a new key nor move money."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d, retry={"max_attempts": 1})
        o = "ord-query-op"
        pay(c, d, o)
        d.fault(r"^/v1/refunds$", "act_hang")
        r1 = c.refund(o, "r1", 400)
        time.sleep(d.hang_s + 0.2)
        outs = []
        for f in (lambda: c.query(o + " refund r1"),
                  lambda: c.submit(o + " refund r1", b'{"amount":400,"currency":"eur"}'),
                  lambda: c.query(o)):
            try:
                x = f()
                outs.append((0, x.get("outcome"), x.get("money_state")))
            except op.PayError as e:
                outs.append((e.rc, str(e)[:80]))
        r2 = c.refund(o, "r1", 400)
        judge("pay_query / pay_submit on a refund's row id", d, o, [r1, r2],
              note=f"query/submit/query-payment: {outs}; re-ask {op.short(r2[1]) and r2[1]['outcome']}")
    finally:
        d.close()


def s_stripe_reset_then_refusal():
    """The first attempt refunds and loses its answer (reset); the retry meets
    a 400 refusal that did not look at the key. A refusal after a send that
    may have been processed is not proof that nothing moved: FAILED would
    free the amount for a second refund."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        o = "ord-reset-refuse"
        pay(c, d, o)
        d.fault(r"^/v1/refunds$", "act_reset", "400_refuse")
        r1 = c.refund(o, "r1", 600)
        r2 = c.refund(o, "r2", 600)  # would go through if r1 were FAILED
        judge("stripe refund: act_reset then a 400 refusal", d, o, [r1, r2],
              expect=[(r2[0] != 0, f"second refund admitted: {op.short(r2[1])}")],
              note=f"r1 {op.short(r1[1]) and {k: r1[1][k] for k in ('outcome', 'delivery')}}; r2 rc {r2[0]}")
    finally:
        d.close()


def _stripe_pending(later):
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        o = "ord-pending-" + later
        pay(c, d, o)
        d.refund_status = "pending"
        r1 = c.refund(o, "r1", 600)
        k1 = r1[1] and r1[1].get("idempotency_key")
        for x in d.refunds.values():
            if x["_key"] == k1:
                x["status"] = later
        if later == "failed":  # the money came back to the merchant: nothing moved in the end
            d.fail_refunds_of(k1)
        r2 = c.refund(o, "r1", 600)
        r3 = c.refund(o, "r2", 400)
        judge(f"stripe refund answered pending, later {later}", d, o, [r1, r2, r3],
              note=f"outcomes {[r[0] if r[0] else r[1]['outcome'] for r in (r1, r2, r3)]}; payment money "
                   f"{c.ledger_get(o)['payment']['money_state']}")
    finally:
        d.close()


def s_stripe_pending_then_succeeded():
    _stripe_pending("succeeded")


def s_stripe_pending_then_failed():
    _stripe_pending("failed")


def s_stripe_refund_answered_failed():
    """A refund answered 200 status failed moved nothing: FAILED, and its
    amount is free again for a new ref."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        o = "ord-answer-failed"
        pay(c, d, o)
        d.refund_status = "failed"
        r1 = c.refund(o, "r1", 1000)
        d.fail_refunds_of(r1[1] and r1[1].get("idempotency_key"))  # a failed refund gave nothing back
        d.refund_status = "succeeded"
        r2 = c.refund(o, "r2", 1000)
        judge("stripe refund answered 200 failed, then a new ref", d, o, [r1, r2],
              expect=[(r1[1] and r1[1]["outcome"] == "FAILED", f"r1 {op.short(r1[1])}")])
    finally:
        d.close()


def s_refused_body_leaves_row():
    """A new ref whose body sets a field payretry writes ($.amount,
    $.payment_intent) or is too big is refused (PAY_EINVALID / PAY_ETOOBIG),
    and operation.h says "nothing written, nothing sent". If the row is
    written anyway it stays open and counts as spent: the real refund of the
    payment is then refused, also after the lease ran out and a reconcile."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        bodies = {"amount": '{"amount":5}', "payment_intent": '{"payment_intent":"pi_other"}',
                  "too_big": json.dumps({"metadata": {"k": "v" * 2_000_000}})}
        res, notes, later = [], [], []
        for name, body in bodies.items():
            o = "ord-bad-body-" + name
            pay(c, d, o)
            bad = c.refund(o, "x", 1000, body=body)
            good = c.refund(o, "real", 1000)
            try:
                p = c.ledger_get(f"{o} refund x")["payment"]
                row = (p["state"], p.get("amount"))
            except op.PayError as e:
                row = f"no row ({e.rc})"
            res += [bad, good]
            notes.append((name, bad[0], bad[2][:50], row, good[0]))
            if good[0] != 0:
                later.append(o)
        time.sleep(4.6)  # past the bad run's lease (deadline 4 s + margin 0.3 s)
        try:
            rec = c.reconcile()
            rec = (rec.get("examined"), rec.get("UNKNOWN"), rec.get("FAILED"))
        except op.PayError as e:
            rec = str(e)[:80]
        after = [(o, c.refund(o, "real2", 1000)[0]) for o in later]
        # The same ref asked again without the offending field: another
        # fingerprint, so PAY_EMISMATCH; the row cannot be finished either.
        fixed = [(o, c.refund(o, "x", 1000)[0]) for o in later]
        judge("refused operation body (payretry's fields / too big), then the real refund", d,
              "ord-bad-body-amount", res,
              expect=[(all(n[4] == 0 for n in notes), "a refund refused for its body left a row that blocks the real refund"),
                      (all(rc == 0 for _, rc in after), f"still blocked after the lease and a reconcile: {after}")],
              note=f"(body, rc, msg, row left, real rc): {notes}; reconcile {rec}; after: {after}; same ref fixed: {fixed}")
    finally:
        d.close()


# ---- settled by the operation's own lookup (pay_query / pay_reconcile) ------
#
# Every scenario here counts the provider's side: what each key executed
# (judge), every POST sent while only lookups were asked (a lookup never
# re-sends), and the payment's money against the provider's refunded sum
# (never `refunded` unless all that was captured went back, never backwards).

MONEY_RANK = {"unknown": 0, "awaiting_customer": 0, "pending": 0, "authorized": 1, "paid": 2,
              "partly_refunded": 3, "refunded": 4, "failed": 4}


class Watch:
    """The payment's money as the ledger says it, read after every step."""

    def __init__(self, c, d, o):
        self.c, self.d, self.o, self.seen = c, d, o, []

    def read(self):
        m = self.c.ledger_get(self.o)["payment"]["money_state"]
        self.seen.append(m)
        return m

    def checks(self):
        m = self.read()
        pid = pid_of(self.d, self.o)
        p = self.d.payments[pid]
        _, refunded = self.d.moves(pid)
        why = []
        if m == "refunded" and refunded < p["captured"]:
            why.append(f"money `refunded` while the provider refunded {refunded} of {p['captured']} captured")
        if m == "partly_refunded" and refunded == 0:
            why.append("money `partly_refunded` while the provider refunded nothing")
        ranks = [MONEY_RANK.get(x, 0) for x in self.seen]
        if any(b < a for a, b in zip(ranks, ranks[1:])):
            why.append(f"money moved backwards: {self.seen}")
        return [(not why, "; ".join(why))]


def q(c, row):
    """pay_query of a row, as the judge's (rc, result, msg)."""
    try:
        return (0, c.query(row), "")
    except op.PayError as e:
        return (e.rc, None, str(e))


def rec(c, row):
    """pay_reconcile; the report's result for `row`."""
    try:
        rep = c.reconcile()
    except op.PayError as e:
        return (e.rc, None, str(e))
    mine = [p for p in rep.get("payments", []) if p.get("order_id") == row]
    return (0, mine[0] if mine else None, "" if mine else f"not examined ({rep.get('examined')} rows)")


def outc(r):
    return r[1]["outcome"] if r[0] == 0 and r[1] else f"rc {r[0]} {r[2][:60]}"


def cko_setup(house_mode="approve", amount=1000, order="ord-cko-lk", authorize=False, hang_s=2.0, retry=None):
    d = Double("checkout_com", hang_s=hang_s)
    c, cfg, db = new_client(d, "checkout_com", retry=retry)
    if authorize:
        d.create_status[order] = "authorize"
    pay(c, d, order, amount=amount, provider="checkout_com")
    d.cko_refund = house_mode
    return d, c, cfg, db


def _cko_refund_later(approved, how):
    """A refund accepted (202) and processed later: asked before it is
    listed (UNKNOWN, nothing sent), then approved or declined and asked
    again by `how` (query or reconcile)."""
    o = f"ord-cko-later-{approved}-{how}"
    d, c, cfg, db = cko_setup("pending", order=o)
    try:
        w = Watch(c, d, o)
        r1 = c.refund(o, "r1", 400)
        row = o + " refund r1"
        posts = d.posts()
        early = (q if how == "query" else rec)(c, row)
        w.read()
        d.decide(r1[1]["provider_payment_id"], approved)
        late = (q if how == "query" else rec)(c, row)
        again = q(c, row)  # settled: from the ledger
        sent_during = d.posts() - posts
        m = w.read()
        # A FAILED refund frees its amount: the whole 1000 may be asked anew.
        r2 = c.refund(o, "r2", 1000 if not approved else 600)
        want = "SUCCEEDED" if approved else "FAILED"
        judge(f"checkout_com refund 202, processed later ({'approved' if approved else 'declined'}), {how}", d, o,
              [r1, early, late, again, r2],
              expect=[(outc(early) == "UNKNOWN", f"before it is listed: {outc(early)}"),
                      (outc(late) == want and outc(again) == want, f"after: {outc(late)}, {outc(again)} (want {want})"),
                      (sent_during == 0, f"{sent_during} POST(s) sent by {how}"),
                      (m == ("partly_refunded" if approved else "paid"), f"payment money {m}"),
                      (r2[0] == 0, f"the rest after it: rc {r2[0]} {r2[2][:80]}")] + w.checks(),
              note=f"early {outc(early)}, late {outc(late)}, money {w.seen}, next ref {outc(r2)}")
    finally:
        d.close()


def s_lk_cko_later_approved_query():
    _cko_refund_later(True, "query")


def s_lk_cko_later_declined_query():
    _cko_refund_later(False, "query")


def s_lk_cko_later_approved_reconcile():
    _cko_refund_later(True, "reconcile")


def s_lk_cko_later_declined_reconcile():
    _cko_refund_later(False, "reconcile")


def s_lk_cko_declined_at_once_pair():
    """Two refunds of one payment: r1 declined, r2 approved, both listed
    (r2 newest first). Each must be read from its own item, not from its
    neighbour's approved."""
    o = "ord-cko-pair"
    d, c, cfg, db = cko_setup("decline", order=o)
    try:
        w = Watch(c, d, o)
        r1 = c.refund(o, "r1", 300)
        d.cko_refund = "approve"
        r2 = c.refund(o, "r2", 300)
        posts = d.posts()
        a, b = q(c, o + " refund r1"), q(c, o + " refund r2")
        judge("checkout_com refunds r1 declined + r2 approved, each by its own action", d, o, [r1, r2, a, b],
              expect=[(outc(a) == "FAILED" and outc(b) == "SUCCEEDED", f"r1 {outc(a)}, r2 {outc(b)}"),
                      (d.posts() == posts, "a lookup sent a POST")] + w.checks(),
              note=f"money {w.seen}")
    finally:
        d.close()


def s_lk_cko_listed_twice():
    """The actions list names the refund's action twice (an approved and a
    declined copy, or the same twice): which one is true cannot be told, so
    nothing settles, and nothing is sent."""
    o = "ord-cko-twice"
    d, c, cfg, db = cko_setup("pending", order=o)
    try:
        w = Watch(c, d, o)
        r1 = c.refund(o, "r1", 400)
        rid = r1[1]["provider_payment_id"]
        d.decide(rid, False)
        d.list_twice.add(rid)
        # and a forged approved copy of the same id, newest first
        d.extra_actions[pid_of(d, o)] = [{"id": rid, "type": "Refund", "amount": 400, "approved": True,
                                         "response_code": "10000", "processed_on": "x"}]
        posts = d.posts()
        a = q(c, o + " refund r1")
        b = rec(c, o + " refund r1")
        d.list_twice.clear()
        d.extra_actions.clear()
        e = q(c, o + " refund r1")
        judge("checkout_com refund listed twice (approved + declined copies), then once", d, o, [r1, a, b, e],
              expect=[(outc(a) == "UNKNOWN" and outc(b) == "UNKNOWN", f"listed twice: {outc(a)} / {outc(b)}"),
                      (outc(e) == "FAILED", f"listed once (declined): {outc(e)}"),
                      (d.posts() == posts, "a lookup sent a POST")] + w.checks())
    finally:
        d.close()


def s_lk_cko_other_payments_list():
    """GET /payments/A/actions answered with payment B's actions (a proxy's
    mix-up): B has an approved refund of the same id format. A's refund (not
    executed) must not be settled by it."""
    o, o2 = "ord-cko-misroute", "ord-cko-misroute-b"
    d, c, cfg, db = cko_setup("pending", order=o)
    try:
        pay(c, d, o2, provider="checkout_com")
        w = Watch(c, d, o)
        r1 = c.refund(o, "r1", 400)
        d.cko_refund = "approve"
        rb = c.refund(o2, "rb", 400)
        d.actions_of[pid_of(d, o)] = pid_of(d, o2)
        posts = d.posts()
        a = q(c, o + " refund r1")
        b = rec(c, o + " refund r1")
        judge("checkout_com refund: the actions list of another payment answered", d, o, [r1, a, b],
              expect=[(outc(a) == "UNKNOWN" and outc(b) == "UNKNOWN", f"{outc(a)} / {outc(b)}"),
                      (d.posts() == posts, "a lookup sent a POST")] + w.checks(),
              note=f"B's refund {outc(rb)}")
    finally:
        d.close()


def s_lk_cko_forged_item_other_id():
    """Our refund is declined; the list also holds a forged item of another
    id, approved, with our amount and type. The other id must not count."""
    o = "ord-cko-forged"
    d, c, cfg, db = cko_setup("decline", order=o)
    try:
        w = Watch(c, d, o)
        r1 = c.refund(o, "r1", 400)
        rid = r1[1]["provider_payment_id"]
        d.extra_actions[pid_of(d, o)] = [{"id": rid[:-1] + "9", "type": "Refund", "amount": 400, "approved": True,
                                         "response_code": "10000", "processed_on": "x"},
                                        {"id": rid.upper(), "type": "Refund", "amount": 400, "approved": True},
                                        {"id": " " + rid, "type": "Refund", "amount": 400, "approved": True},
                                        {"id": [rid], "type": "Refund", "amount": 400, "approved": True}]
        posts = d.posts()
        a = q(c, o + " refund r1")
        judge("checkout_com refund declined, forged approved items of near-identical ids", d, o, [r1, a],
              expect=[(outc(a) == "FAILED", f"{outc(a)}"), (d.posts() == posts, "a lookup sent a POST")] + w.checks())
    finally:
        d.close()


def _cko_get_faults(faults):
    o = "ord-cko-getf-" + "-".join(faults)
    d, c, cfg, db = cko_setup("approve", order=o, hang_s=1.0,
                              retry={"max_attempts": 2, "attempt_timeout_ms": 500, "deadline_ms": 2500})
    try:
        w = Watch(c, d, o)
        r1 = c.refund(o, "r1", 400)
        d.get_fault(r"^/payments/[^/]+/actions$", *faults)
        posts = d.posts()
        a = q(c, o + " refund r1")
        w.read()
        b = rec(c, o + " refund r1")
        w.read()
        e = q(c, o + " refund r1")
        judge(f"checkout_com refund lookup faults {faults}, then answered", d, o, [r1, a, b, e],
              expect=[(outc(e) == "SUCCEEDED", f"finally {outc(e)}"),
                      (outc(a) in ("UNKNOWN", "SUCCEEDED"), f"under faults {outc(a)}"),
                      (d.posts() == posts, f"{d.posts() - posts} POST(s) during lookups")] + w.checks(),
              note=f"{outc(a)} -> {outc(b)} -> {outc(e)}; GETs {d.gets('/actions')}")
    finally:
        d.close()


def s_lk_cko_get_500s():
    _cko_get_faults(["get_500", "get_500", "get_503", "get_500"])


def s_lk_cko_get_reset_hang():
    _cko_get_faults(["get_reset", "get_hang", "get_hang", "get_reset"])


def s_lk_cko_get_404():
    _cko_get_faults(["get_404", "get_404"])


def s_lk_cko_whole_in_parts():
    """400 + 600 of 1000, both accepted and processed later: r1 approved
    (partly), r2 UNKNOWN (not refunded wholly while it is), r2 approved
    (wholly refunded); then the reverse: r2 declined leaves it partly and
    frees 600 for r3."""
    for second in (True, False):
        o = f"ord-cko-parts-{second}"
        d, c, cfg, db = cko_setup("pending", order=o)
        try:
            w = Watch(c, d, o)
            r1 = c.refund(o, "r1", 400)
            r2 = c.refund(o, "r2", 600)
            d.decide(r1[1]["provider_payment_id"], True)
            a = q(c, o + " refund r1")
            m1 = w.read()
            b = q(c, o + " refund r2")  # not listed yet
            m2 = w.read()
            d.decide(r2[1]["provider_payment_id"], second)
            e = rec(c, o + " refund r2")
            m3 = w.read()
            r3 = c.refund(o, "r3", 600)
            want = "refunded" if second else "partly_refunded"
            judge(f"checkout_com 400 + 600 of 1000, second {'approved' if second else 'declined'}", d, o,
                  [r1, r2, a, b, e] + ([r3] if r3[0] == 0 else []),
                  expect=[(m1 == m2 == "partly_refunded", f"money after r1 {m1}, with r2 open {m2}"),
                          (m3 == want, f"money after r2 {m3} (want {want})"),
                          ((r3[0] == 0) == (not second), f"r3 of 600 after: rc {r3[0]} {r3[2][:60]}")] + w.checks(),
                  note=f"money {w.seen}")
        finally:
            d.close()


def s_lk_cko_capture_partial_refund_whole():
    """Authorized 1000, captured 400 (capture settled by the payment's
    status), refunded 400: wholly refunded (all that was captured)."""
    o = "ord-cko-cap400"
    d, c, cfg, db = cko_setup("approve", order=o, authorize=True)
    try:
        w = Watch(c, d, o)
        d.cko_capture = "pending"
        cap = c.operation(o, op.CAPTURE, "c1", 400)
        qa = q(c, o + " capture c1")
        d.decide(cap[1]["provider_payment_id"], True)
        qb = q(c, o + " capture c1")
        w.read()
        r1 = c.refund(o, "r1", 400)
        qr = q(c, o + " refund r1")
        m = w.read()
        judge("checkout_com capture 400 of 1000 (202, later), refund 400", d, o, [cap, qa, qb, r1, qr],
              expect=[(outc(qa) == "UNKNOWN" and outc(qb) == "SUCCEEDED", f"capture {outc(qa)} -> {outc(qb)}"),
                      (m == "refunded", f"money {m} after refunding all 400 captured")] + w.checks(),
              note=f"money {w.seen}; refund {outc(r1)}/{outc(qr)}")
    finally:
        d.close()


def s_lk_cko_two_captures_one_declined():
    """Authorized 1000. Capture c1 400 accepted (202) and later declined;
    capture c2 300 accepted and approved: the payment reads Partially
    Captured. c1's lookup reads the payment's status: a capture the provider
    never executed must not be SUCCEEDED because another one was."""
    o = "ord-cko-2cap"
    d, c, cfg, db = cko_setup("approve", order=o, authorize=True)
    try:
        w = Watch(c, d, o)
        d.cko_capture = "pending"
        c1 = c.operation(o, op.CAPTURE, "c1", 400, body='{"capture_type":"NonFinal"}')
        d.cko_capture = "approve"
        c2 = c.operation(o, op.CAPTURE, "c2", 300, body='{"capture_type":"NonFinal"}')
        q2 = q(c, o + " capture c2")
        posts = d.posts()
        q1 = q(c, o + " capture c1")  # c1 not processed yet
        d.decide(c1[1]["provider_payment_id"], False)
        q1b = rec(c, o + " capture c1")
        w.read()
        sent_by_lookups = d.posts() - posts
        # What the library thinks was captured: a refund of 700 is admitted
        # only if it believes both captures went through.
        r = c.refund(o, "r700", 700)
        # Then all that was really captured (300) is refunded: wholly
        # refunded at the provider; the ledger sums against what it believes.
        r3 = c.refund(o, "r300", 300)
        q3 = q(c, o + " refund r300")
        m = w.read()
        judge("checkout_com captures c1 400 (declined later) + c2 300 (approved): c1 by the payment's status", d, o,
              [c1, c2, q2, q1, q1b, r3, q3],
              expect=[(sent_by_lookups == 0, "a lookup sent a POST"),
                      (m == "refunded", f"money {m} after refunding all 300 captured")] + w.checks(),
              note=f"c1 {outc(c1)} -> query {outc(q1)} -> reconcile {outc(q1b)}; c2 {outc(q2)}; payment status "
                   f"{d.payments[pid_of(d, o)]['status']}; refund 700 -> {outc(r)} {r[2][:70]}; refund 300 -> "
                   f"{outc(q3)}, money {w.seen}")
    finally:
        d.close()


def s_lk_stripe_capture_unknown_then_other_ref():
    """Stripe, authorized 1000: capture c1 400 loses its connection before
    Stripe acts (one attempt: UNKNOWN); the application captures c2 300
    under a new ref (the guard admits it: 700 of 1000). c1's lookup reads the
    PaymentIntent, which c2 made succeeded: c1 must not be SUCCEEDED."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d, retry={"max_attempts": 1})
        o = "ord-stripe-2cap"
        pay(c, d, o, extra={"capture_method": "manual"})
        w = Watch(c, d, o)
        d.fault(r"^/v1/payment_intents/[^/]+/capture$", "reset_before")
        c1 = c.operation(o, op.CAPTURE, "c1", 400)
        c2 = c.operation(o, op.CAPTURE, "c2", 300)
        posts = d.posts()
        q1 = q(c, o + " capture c1")
        w.read()
        sent_by_lookups = d.posts() - posts
        r = c.refund(o, "r700", 700)
        r3 = c.refund(o, "r300", 300)  # all that Stripe captured
        m = w.read()
        judge("stripe capture c1 UNKNOWN (not executed), c2 captured: c1 by the PaymentIntent's status", d, o,
              [c1, c2, q1, r3],
              expect=[(sent_by_lookups == 0, "a lookup sent a POST"),
                      (m == "refunded", f"money {m} after refunding all 300 captured")] + w.checks(),
              note=f"c1 {outc(c1)} -> query {outc(q1)}; c2 {outc(c2)}; Stripe captured "
                   f"{d.payments[pid_of(d, o)]['captured']}; refund 700 -> {outc(r)} {r[2][:70]}; refund 300 -> "
                   f"{outc(r3)}, money {w.seen}")
    finally:
        d.close()


def s_lk_cko_void_later():
    """Authorized; a void accepted (202) and processed later: UNKNOWN while
    the payment is Authorized, SUCCEEDED once Voided (money failed)."""
    o = "ord-cko-void"
    d, c, cfg, db = cko_setup("approve", order=o, authorize=True)
    try:
        d.cko_capture = "pending"
        v = c.operation(o, op.CANCEL, "v1", 0)
        posts = d.posts()
        a = q(c, o + " cancel v1")
        d.decide(v[1]["provider_payment_id"], True)
        b = rec(c, o + " cancel v1")
        m = c.ledger_get(o)["payment"]["money_state"]
        judge("checkout_com void 202, processed later", d, o, [v, a, b],
              expect=[(outc(a) == "UNKNOWN" and outc(b) == "SUCCEEDED", f"{outc(a)} -> {outc(b)}"),
                      (m == "failed", f"money {m}"), (d.posts() == posts, "a lookup sent a POST")])
    finally:
        d.close()


def s_lk_cko_capture_lookup_other_payment():
    """GET /payments/A answered with payment B (Captured) while A's capture
    is not processed: the capture must stay UNKNOWN (names_request $.id)."""
    o, o2 = "ord-cko-cap-other", "ord-cko-cap-other-b"
    d, c, cfg, db = cko_setup("approve", order=o, authorize=True)
    try:
        pay(c, d, o2, provider="checkout_com")
        d.cko_capture = "pending"
        cap = c.operation(o, op.CAPTURE, "c1", 0)
        d.actions_of[pid_of(d, o)] = pid_of(d, o2)
        posts = d.posts()
        a = q(c, o + " capture c1")
        judge("checkout_com capture: GET /payments/{id} answers another payment", d, o, [cap, a],
              expect=[(outc(a) == "UNKNOWN", outc(a)), (d.posts() == posts, "a lookup sent a POST")])
    finally:
        d.close()


# ---- Stripe refunds settled by GET /v1/refunds/{id} --------------------------

def _stripe_pending_lookup(later, how):
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        o = f"ord-st-lk-{later}-{how}"
        pay(c, d, o)
        w = Watch(c, d, o)
        d.refund_status = "pending"
        r1 = c.refund(o, "r1", 1000)
        rid = r1[1]["provider_payment_id"]
        posts = d.posts()
        a = q(c, o + " refund r1")
        w.read()
        d.set_refund_status(rid, later)
        b = (q if how == "query" else rec)(c, o + " refund r1")
        m = w.read()
        d.refund_status = "succeeded"
        r2 = c.refund(o, "r2", 1000)
        want = {"succeeded": "SUCCEEDED", "failed": "FAILED", "canceled": "FAILED"}[later]
        judge(f"stripe refund pending, later {later}, {how}", d, o, [r1, a, b] + ([r2] if r2[0] == 0 else []),
              expect=[(outc(a) == "UNKNOWN" and outc(b) == want, f"{outc(a)} -> {outc(b)} (want {want})"),
                      (d.posts() - posts == (1 if r2[0] == 0 else 0), "a lookup sent a POST"),
                      ((r2[0] == 0) == (want == "FAILED"), f"r2 of 1000 after: rc {r2[0]} {r2[2][:60]}"),
                      (m == ("refunded" if want == "SUCCEEDED" else "paid"), f"money {m}")] + w.checks(),
              note=f"money {w.seen}")
    finally:
        d.close()


def s_lk_stripe_pending_succeeded_query():
    _stripe_pending_lookup("succeeded", "query")


def s_lk_stripe_pending_failed_reconcile():
    _stripe_pending_lookup("failed", "reconcile")


def s_lk_stripe_pending_canceled_query():
    _stripe_pending_lookup("canceled", "query")


def s_lk_stripe_refund_names_other_pi():
    """GET /v1/refunds/{id} answers succeeded but names another
    PaymentIntent: settles nothing (the refund truly failed here)."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        o = "ord-st-otherpi"
        pay(c, d, o)
        w = Watch(c, d, o)
        d.refund_status = "pending"
        r1 = c.refund(o, "r1", 500)
        rid = r1[1]["provider_payment_id"]
        d.set_refund_status(rid, "failed")
        d.refunds[rid]["status"] = "succeeded"  # the answer lies about status...
        d.refund_pi[rid] = "pi_999999"          # ...and is another payment's
        posts = d.posts()
        a, b = q(c, o + " refund r1"), rec(c, o + " refund r1")
        judge("stripe refund lookup answer names another payment_intent", d, o, [r1, a, b],
              expect=[(outc(a) == "UNKNOWN" and outc(b) == "UNKNOWN", f"{outc(a)} / {outc(b)}"),
                      (d.posts() == posts, "a lookup sent a POST")] + w.checks())
    finally:
        d.close()


def _stripe_no_id(fault):
    """The refund's answer is lost (one attempt): no id to look up. Its
    payment is succeeded either way: the refund must not be read as
    SUCCEEDED from it, executed (act_reset) or not (reset_before)."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d, retry={"max_attempts": 1})
        o = "ord-st-noid-" + fault
        pay(c, d, o)
        w = Watch(c, d, o)
        d.fault(r"^/v1/refunds$", fault)
        r1 = c.refund(o, "r1", 400)
        posts = d.posts()
        a, b = q(c, o + " refund r1"), rec(c, o + " refund r1")
        judge(f"stripe refund answer lost ({fault}), no id: query/reconcile", d, o, [r1, a, b],
              expect=[(outc(a) == "UNKNOWN" and outc(b) == "UNKNOWN", f"{outc(a)} / {outc(b)}"),
                      (d.posts() == posts, f"{d.posts() - posts} POST(s) by query/reconcile")] + w.checks(),
              note=f"GETs {d.gets()}")
    finally:
        d.close()


def s_lk_stripe_noid_act_reset():
    _stripe_no_id("act_reset")


def s_lk_stripe_noid_reset_before():
    _stripe_no_id("reset_before")


def s_lk_stripe_get_faults():
    """The refund's lookup meets 500s, a 404 and a reset: UNKNOWN, nothing
    sent; then answered: SUCCEEDED."""
    d = Double("stripe", hang_s=1.0)
    try:
        c, _, _ = new_client(d, retry={"max_attempts": 2, "attempt_timeout_ms": 500, "deadline_ms": 2500})
        o = "ord-st-getf"
        pay(c, d, o)
        w = Watch(c, d, o)
        d.refund_status = "pending"
        r1 = c.refund(o, "r1", 400)
        d.set_refund_status(r1[1]["provider_payment_id"], "succeeded")
        d.get_fault(r"^/v1/refunds/", "get_500", "get_404", "get_reset", "get_hang", "get_503", "get_500")
        posts = d.posts()
        res = [q(c, o + " refund r1") for _ in range(3)]
        e = q(c, o + " refund r1")
        judge("stripe refund lookup faults (500, 404, reset, hang, 503), then answered", d, o, [r1] + res + [e],
              expect=[(all(outc(x) in ("UNKNOWN", "SUCCEEDED") for x in res), f"{[outc(x) for x in res]}"),
                      (outc(e) == "SUCCEEDED", outc(e)), (d.posts() == posts, "a lookup sent a POST")] + w.checks(),
              note=f"{[outc(x) for x in res]} -> {outc(e)}; money {w.seen}")
    finally:
        d.close()


def s_lk_stripe_whole_in_parts():
    """500 settled at once, 500 pending then succeeded by query: partly,
    then wholly refunded; never wholly while the second is UNKNOWN."""
    d = Double("stripe")
    try:
        c, _, _ = new_client(d)
        o = "ord-st-parts"
        pay(c, d, o)
        w = Watch(c, d, o)
        r1 = c.refund(o, "r1", 500)
        m1 = w.read()
        d.refund_status = "pending"
        r2 = c.refund(o, "r2", 500)
        m2 = w.read()
        d.set_refund_status(r2[1]["provider_payment_id"], "succeeded")
        a = q(c, o + " refund r2")
        m3 = w.read()
        judge("stripe 500 + 500 (pending, then succeeded by query)", d, o, [r1, r2, a],
              expect=[(m1 == m2 == "partly_refunded" and m3 == "refunded", f"money {w.seen}")] + w.checks())
    finally:
        d.close()


def s_lk_odd_ids():
    """Provider ids with odd characters: a Stripe refund id holding '/', '..'
    and '?' (its lookup path must carry it as one segment), and Checkout.com
    action ids with spaces, quotes and UTF-8. Each settles by its own id."""
    res_all = []
    for house, rid in (("stripe", "re_1/../../v1/payment_intents/pi_000001?x=1"),
                       ("stripe", "re_%2F..%2Fx"),
                       ("checkout_com", 'act_ "q" é/..'),
                       ("checkout_com", "act_" + "9" * 300)):
        d = Double(house)
        try:
            c, _, _ = new_client(d, house)
            o = f"ord-odd-{len(res_all)}"
            pay(c, d, o, provider=house)
            w = Watch(c, d, o)
            if house == "stripe":
                d.refund_status = "pending"
            else:
                d.cko_refund = "pending"
            d.odd_ids.append(rid)
            r1 = c.refund(o, "r1", 300)
            if house == "stripe":
                d.set_refund_status(rid, "succeeded")
            else:
                d.decide(rid, True)
            posts = d.posts()
            a = q(c, o + " refund r1")
            res_all.append((house, rid[:30], outc(r1), outc(a)))
            gets = [p for m, p, _ in d.requests if m == "GET"]
            judge(f"{house} refund with odd provider id {rid[:40]!r}", d, o, [r1, a],
                  expect=[(outc(a) in ("SUCCEEDED", "UNKNOWN"), outc(a)), (d.posts() == posts, "a lookup sent a POST"),
                          (all(g.startswith("/payments/") or (g.startswith("/v1/refunds/") and "/" not in g[12:])
                               for g in gets), f"lookup went elsewhere: {gets}")]
                  + w.checks(),
                  note=f"r1 {outc(r1)} id {(r1[1] or {}).get('provider_payment_id')!r:.60}; query {outc(a)}; GETs {gets[-1:]}")
        finally:
            d.close()


# ---- processes: races, kills ------------------------------------------------

def _race_query(house, n, rounds):
    for i in range(rounds):
        o = f"ord-race-q-{house}-{n}-{i}"
        if house == "stripe":
            d = Double("stripe", hang_s=0.6)
            c, cfg, db = new_client(d)
            pay(c, d, o)
            d.refund_status = "pending"
        else:
            d, c, cfg, db = cko_setup("pending", order=o, hang_s=0.6)
        try:
            w = Watch(c, d, o)
            r1 = c.refund(o, "r1", 1000 if i % 2 else 600)
            rid = r1[1]["provider_payment_id"]
            if house == "stripe":
                d.set_refund_status(rid, "succeeded" if i % 3 != 2 else "failed")
            else:
                d.decide(rid, i % 3 != 2)
            if i % 2:
                d.get_fault(r".*", "get_hang")
            posts = d.posts()
            start = time.time() + 0.8
            ws = [_worker(cfg, o + " refund r1", "", 0, start, kind="query") for _ in range(n)]
            res = [_finish(x) for x in ws]
            final = q(c, o + " refund r1")
            outs = [outc(r) for r in res]
            settled = [x for x in outs if x in ("SUCCEEDED", "FAILED")]
            judge(f"{house}: {n} processes pay_query one refund at once (round {i})", d, o, [r1] + res + [final],
                  expect=[(d.posts() == posts, f"{d.posts() - posts} POST(s)"),
                          (len(set(settled)) <= 1, f"processes disagree: {outs}"),
                          (outc(final) in ("SUCCEEDED", "FAILED"), f"final {outc(final)}"),
                          (all(x in ("SUCCEEDED", "FAILED", "UNKNOWN", "IN_PROGRESS") for x in outs), f"{outs}")]
                  + w.checks(),
                  note=f"workers {outs}, final {outc(final)}, money {w.seen}")
        finally:
            d.close()


def s_race_query_cko_2():
    _race_query("checkout_com", 2, 3)


def s_race_query_cko_4():
    _race_query("checkout_com", 4, 3)


def s_race_query_stripe_3():
    _race_query("stripe", 3, 3)


def _kill_mid_lookup(house):
    """A process pay_query's an UNKNOWN refund; its lookup hangs at the
    provider and the process is SIGKILLed. Later queries: held while the dead
    claim lasts, then settled by a new lookup; nothing sent."""
    o = f"ord-kill-lk-{house}"
    if house == "stripe":
        d = Double("stripe", hang_s=3.0)
        c, cfg, db = new_client(d, retry={"deadline_ms": 2500, "attempt_timeout_ms": 2000})
        pay(c, d, o)
        d.refund_status = "pending"
    else:
        d, c, cfg, db = cko_setup("pending", order=o, hang_s=3.0,
                                  retry={"deadline_ms": 2500, "attempt_timeout_ms": 2000})
    try:
        w = Watch(c, d, o)
        r1 = c.refund(o, "r1", 400)
        rid = r1[1]["provider_payment_id"]
        if house == "stripe":
            d.set_refund_status(rid, "succeeded")
        else:
            d.decide(rid, True)
        d.get_fault(r".*", "get_hang")
        posts = d.posts()
        g0 = d.gets()
        wk = _worker(cfg, o + " refund r1", "", 0, 0, kind="query")
        t0 = time.time()
        while d.gets() == g0 and time.time() - t0 < 10:
            time.sleep(0.01)
        time.sleep(0.2)
        os.kill(wk.pid, signal.SIGKILL)
        wk.wait()
        res, t1 = [], time.time()
        while time.time() - t1 < 10:
            r = q(c, o + " refund r1")
            res.append(r)
            if outc(r) in ("SUCCEEDED", "FAILED"):
                break
            time.sleep(0.5)
        judge(f"{house}: SIGKILL during a refund's lookup, queried again", d, o, [r1] + res,
              expect=[(outc(res[-1]) == "SUCCEEDED", f"last {outc(res[-1])}"), (d.posts() == posts, "a POST was sent")]
              + w.checks(),
              note=f"after the kill: {[outc(r) for r in res]}")
    finally:
        d.close()


def s_kill_mid_lookup_cko():
    _kill_mid_lookup("checkout_com")


def s_kill_mid_lookup_stripe():
    _kill_mid_lookup("stripe")


def _reconcile_vs_resubmit(house, rounds=3):
    """An UNKNOWN refund: one process runs pay_reconcile while another
    submits the same ref again, at once. One refund at most moves; the two
    agree once settled."""
    for i in range(rounds):
        o = f"ord-rec-resub-{house}-{i}"
        if house == "stripe":
            d = Double("stripe", hang_s=0.5)
            c, cfg, db = new_client(d)
            pay(c, d, o)
            d.refund_status = "pending"
        else:
            d, c, cfg, db = cko_setup("pending", order=o, hang_s=0.5)
        try:
            w = Watch(c, d, o)
            r1 = c.refund(o, "r1", 700)
            rid = r1[1]["provider_payment_id"]
            if house == "stripe":
                d.set_refund_status(rid, "succeeded")
            else:
                d.decide(rid, True)
            if i % 2:
                d.get_fault(r".*", "get_hang")
            start = time.time() + 0.8
            ws = [_worker(cfg, o + " refund r1", "", 0, start, kind="reconcile"),
                  _worker(cfg, o, "r1", 700, start)]
            res = [_finish(x) for x in ws]
            final = q(c, o + " refund r1")
            r2 = c.refund(o, "r2", 300)
            judge(f"{house}: reconcile races a same-ref resubmission (round {i})", d, o, [r1] + res + [final, r2],
                  expect=[(outc(final) == "SUCCEEDED", f"final {outc(final)}")] + w.checks(),
                  note=f"reconcile {outc(res[0])}, resubmit {outc(res[1])}, final {outc(final)}, "
                       f"r2 {outc(r2)}, money {w.seen}, refund POSTs {d.refund_posts()}")
        finally:
            d.close()


def s_race_reconcile_resubmit_stripe():
    _reconcile_vs_resubmit("stripe")


def s_race_reconcile_resubmit_cko():
    _reconcile_vs_resubmit("checkout_com")


def s_race_query_vs_rest():
    """r1 400 UNKNOWN (approved at the provider); one process queries it while
    another asks "the rest" under r2: the rest is 600 either way, never
    1000."""
    for i in range(3):
        o = f"ord-q-rest-{i}"
        d, c, cfg, db = cko_setup("pending", order=o, hang_s=0.4)
        try:
            w = Watch(c, d, o)
            r1 = c.refund(o, "r1", 400)
            d.decide(r1[1]["provider_payment_id"], i != 1)
            d.cko_refund = "approve"
            start = time.time() + 0.8
            ws = [_worker(cfg, o + " refund r1", "", 0, start, kind="query"), _worker(cfg, o, "r2", 0, start)]
            res = [_finish(x) for x in ws]
            q1 = q(c, o + " refund r1")
            k2 = (res[1][1] or {}).get("idempotency_key")
            judge(f"checkout_com query of r1 races the rest under r2 (round {i}, r1 {'approved' if i != 1 else 'declined'})",
                  d, o, [r1] + res + [q1],
                  expect=[(d.sent.get(k2, 0) in (0, 600), f"the rest asked {d.sent.get(k2)}")] + w.checks(),
                  note=f"query {outc(res[0])}, r2 {outc(res[1])} asked {d.sent.get(k2)}, money {w.seen}")
        finally:
            d.close()


def s_lk_cko_pending_listed_null():
    """The actions list names the refund before it is processed, with
    approved null (whether Checkout.com does is not documented): UNKNOWN,
    never FAILED (which would free its amount) nor SUCCEEDED."""
    o = "ord-cko-null"
    d, c, cfg, db = cko_setup("pending", order=o)
    try:
        w = Watch(c, d, o)
        d.list_pending = True
        r1 = c.refund(o, "r1", 1000)
        posts = d.posts()
        a, b = q(c, o + " refund r1"), rec(c, o + " refund r1")
        r2 = c.refund(o, "r2", 1000)  # must be refused while r1 may still refund
        d.decide(r1[1]["provider_payment_id"], True)
        e = q(c, o + " refund r1")
        m = w.read()
        judge("checkout_com refund listed unprocessed (approved null), then approved", d, o, [r1, a, b, e],
              expect=[(outc(a) == "UNKNOWN" and outc(b) == "UNKNOWN", f"{outc(a)} / {outc(b)}"),
                      (r2[0] == -2, f"r2 rc {r2[0]}"), (outc(e) == "SUCCEEDED" and m == "refunded", f"{outc(e)} {m}"),
                      (d.posts() == posts, "a lookup sent a POST")] + w.checks())
    finally:
        d.close()


def s_lk_cko_capture_reads_refunded():
    """Authorized 1000; capture c1 (202) processed, then the payment is
    partly refunded outside the library (the dashboard) before c1 is
    queried: its lookup reads Partially Refunded. The capture is SUCCEEDED;
    the payment's money must not stay `authorized` (captured money the
    ledger does not count)."""
    o = "ord-cko-cap-refd"
    d, c, cfg, db = cko_setup("approve", order=o, authorize=True)
    try:
        w = Watch(c, d, o)
        d.cko_capture = "pending"
        cap = c.operation(o, op.CAPTURE, "c1", 0)
        d.decide(cap[1]["provider_payment_id"], True)
        p = d.payments[pid_of(d, o)]
        p["refunded"], p["status"] = 100, "Partially Refunded"  # the dashboard's refund
        a = q(c, o + " capture c1")
        m = w.read()
        pq = q(c, o)  # the payment's own lookup, for the note: does it repair the money?
        w.read()
        judge("checkout_com capture settled while the payment reads Partially Refunded", d, o, [cap, a],
              expect=[(outc(a) == "SUCCEEDED", outc(a)), (m != "authorized", f"payment money {m} after the capture")],
              note=f"capture money {(a[1] or {}).get('money_state')}, payment {w.seen} (the last after pay_query "
                   f"of the payment: {outc(pq)})")
    finally:
        d.close()


def main(names):
    fs = [(n, f) for n, f in globals().items() if n.startswith("s_") and callable(f)]
    if names:
        fs = [(n, f) for n, f in fs if n in names]
    for n, f in fs:
        try:
            f()
        except Exception as e:  # a crash is reported, not counted as HELD
            import traceback
            traceback.print_exc()
            RESULTS.append((n, "ERROR"))
            print(f"[ERROR] {n}: {e!r}", flush=True)
    held = sum(v == "HELD" for _, v in RESULTS)
    broken = [n for n, v in RESULTS if v != "HELD"]
    print(f"\n{held} HELD, {len(broken)} BROKEN/ERROR: {broken}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
