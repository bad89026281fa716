"""Operation webhooks attack: the provider's own notifications, authentic
(signed with the configured secret) but adversarial, against captures and
refunds sent through pay_submit_operation. The double (opdouble.py) is the
truth. Run: python3 scenarios.py [name-substring ...]."""
import json
import os
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "operations_attack"))
import op  # noqa: E402  (ctypes over the C ABI: ../operations_attack/op.py over ../webhook_attack/pr.py)
from opdouble import Provider  # noqa: E402

HOUSES = ("adyen", "checkout_com", "stripe")
RESULTS = []
MERCHANT_A, MERCHANT_B = "OpAttackECOM", "OtherMerchantECOM"


class World:
    """One provider, one ledger file, two clients of one config: `c` sends
    (the application), `hook` receives notifications (the webhook host)."""

    def __init__(self, house, pv=None, db=None, retry=None, account_id=None, merchant=MERCHANT_A):
        self.house = house
        self.pv = pv or Provider(house, merchant=merchant)
        self.db = db or os.path.join(tempfile.mkdtemp(prefix="opwh_attack_"), "ledger.db")
        cfg = op.config(self.pv.url, self.db, house, retry)
        if house == "adyen":
            cfg["auth"] = {"api_key": "AQE_attack_key"}
            cfg["merchant_id"] = merchant
        if account_id:
            cfg["account_id"] = account_id
        cfg["webhook"] = {"secret": self.pv.secret}
        self.cfg = cfg
        self.c = op.Client(cfg)
        self.hook = op.Client(cfg)
        self.outcomes = []  # (label, [(order_id, effect, state_after)])
        self.headers = None

    def close(self):
        self.c.close()
        self.hook.close()
        self.pv.close()

    def op_body(self):
        if self.house == "adyen":
            return json.dumps({"merchantAccount": self.pv.merchant, "amount": {"currency": "EUR"}})
        if self.house == "checkout_com":
            return None
        return None

    def pay(self, order, amount=1000, hold=False, headers=None):
        """A payment SUCCEEDED and paid (or held: authorized). Adyen's is
        authorized by its create and made paid by a capture settled by its
        CAPTURE notification."""
        if self.house == "stripe":
            b = {"amount": amount, "currency": "eur", "metadata": {"order_id": order}}
            if hold:
                b["capture_method"] = "manual"
        elif self.house == "adyen":
            b = {"amount": {"value": amount, "currency": "EUR"}, "reference": order,
                 "merchantAccount": self.pv.merchant}
        else:
            b = {"amount": amount, "currency": "EUR", "reference": order,
                 "source": {"type": "token", "token": "tok_x"}}
            if hold:
                b["capture"] = False
        r = self.c.submit(order, json.dumps(b).encode(), key="create-" + order, headers=headers)
        assert r["outcome"] == "SUCCEEDED", r
        if self.house == "adyen" and not hold:
            rc, res, msg = self.op(order, op.CAPTURE, "c0", amount)
            assert rc == 0, msg
            cap = self.pv.ops[-1]
            self.pv.decide(cap, "succeeded")
            self.deliver(self.pv.notify(cap), "setup capture c0")
        st = self.c.ledger_get(order)["payment"]["money_state"]
        assert st == ("authorized" if hold else "paid"), (order, st)
        return self.pv.pid_of(order)

    def op(self, order, kind, ref, amount=0):
        return self.c.operation(order, kind, ref, amount, body=self.op_body())

    def refund(self, order, ref, amount=0):
        rc, res, msg = self.op(order, op.REFUND, ref, amount)
        o = None
        if rc == 0 and res:
            ops = self.pv.ops_of_key(res.get("idempotency_key"))
            o = ops[-1] if ops else None
        return (rc, res, msg), o

    def capture(self, order, ref, amount=0):
        rc, res, msg = self.op(order, op.CAPTURE, ref, amount)
        o = None
        if rc == 0 and res:
            ops = self.pv.ops_of_key(res.get("idempotency_key"))
            o = ops[-1] if ops else None
        return (rc, res, msg), o

    def deliver(self, note, label="", client=None):
        body, headers = note
        rep = (client or self.hook).webhook(body, headers)
        evs = [(e.get("order_id"), e.get("effect"), e.get("state_after")) for e in
               (rep.get("outcome") or {}).get("events") or []]
        self.outcomes.append((label, rep["status"], evs))
        return rep

    def row(self, order_row, client=None):
        try:
            return (client or self.c).ledger_get(order_row)["payment"]
        except op.PayError:
            return None


def known_refundable(pv, pid, exclude_keys=()):
    """What payretry may still refund of `pid` by what its own operations did:
    captured, less its refunds that moved or may still move (dashboard
    refunds are not payretry's to know)."""
    p = pv.payments[pid]
    spent = sum(o["amount"] for o in pv.ops if o["pid"] == pid and o["kind"] == "refund" and o["key"]
                and o["key"] not in exclude_keys and not o["key"].startswith("dash")
                and o["state"] in ("succeeded", "pending") and not o.get("refused"))
    return p["captured"] - spent


def judge(name, w, orders, expect=(), probe=True, client=None, note=""):
    """BROKEN when, by the double's truth: an operation row SUCCEEDED while
    nothing moved under its key; FAILED while money moved (or may still:
    pending), since a FAILED frees its amount for the guard; the payment's
    money state ahead of the truth (refunded while only part was refunded,
    partly_refunded while nothing was, paid/refunded while nothing was
    captured, failed while money was captured); the payment's own row not
    SUCCEEDED; or the guard's "rest" (a probe refund of amount 0, sent last)
    asking more than payretry's own operations left refundable."""
    pv = w.pv
    client = client or w.c
    why = []
    shown = []
    for order in orders:
        led = client.ledger_get(order)
        pay_row = led["payment"]
        pid = pv.pid_of(order)
        p = pv.payments[pid]
        for r in led.get("operations", []):
            ops = pv.ops_of_key(r["idempotency_key"])
            states = [o["state"] for o in ops if not o.get("refused")] + \
                     [o["state"] + "(refused)" for o in ops if o.get("refused")]
            moved = any(o["state"] == "succeeded" for o in ops)
            pending = any(o["state"] == "pending" for o in ops)
            shown.append(f"{r['order_id']}={r['state']}/{r['money_state']} truth={states or ['nothing']}")
            if r["state"] == "SUCCEEDED" and not moved:
                why.append(f"{r['order_id']} SUCCEEDED but the provider moved nothing under its key ({states or 'none made'})")
            if r["state"] == "FAILED" and moved:
                why.append(f"{r['order_id']} FAILED but the provider moved money under its key")
            if r["state"] == "FAILED" and pending:
                why.append(f"{r['order_id']} FAILED while the provider still holds it pending (its amount freed)")
        ms = pay_row["money_state"]
        shown.append(f"{order}: {pay_row['state']}/{ms} truth captured={p['captured']} refunded={p['refunded']}")
        if pay_row["state"] != "SUCCEEDED":
            why.append(f"payment {order} reads {pay_row['state']}")
        if ms == "refunded" and p["refunded"] < p["captured"]:
            why.append(f"{order} money refunded while {p['refunded']} of {p['captured']} was refunded")
        if ms == "partly_refunded" and p["refunded"] == 0:
            why.append(f"{order} money partly_refunded while nothing was refunded")
        if ms in ("paid", "partly_refunded", "refunded") and p["captured"] == 0:
            why.append(f"{order} money {ms} while nothing was captured")
        if ms == "failed" and p["captured"] > 0:
            why.append(f"{order} money failed while {p['captured']} was captured")
    if probe:
        for order in orders:
            pid = pv.pid_of(order)
            left = known_refundable(pv, pid)
            rc, res, msg = client.operation(order, op.REFUND, "probe", 0, body=w.op_body())
            if rc == 0:
                k = res.get("idempotency_key")
                asked = pv.asked.get(k, (None, None, None))[2]
                shown.append(f"probe {order}: asked {asked} (payretry's own left {left})")
                if asked is not None and asked > left:
                    why.append(f"the guard's rest for {order} asked {asked} while payretry's own operations left {left}")
            else:
                shown.append(f"probe {order}: refused rc {rc} ({msg[:60]})")
    for ok, w_ in expect:
        if not ok:
            why.append(w_)
    v = "BROKEN" if why else "HELD"
    RESULTS.append((name, v, "; ".join(why)))
    print(f"[{v}] {name}: {'; '.join(shown)}" + (f"\n    WHY: {'; '.join(why)}" if why else "")
          + (f"\n    note: {note}" if note else ""), flush=True)
    if why or os.environ.get("OPWH_VERBOSE"):
        for label, status, evs in w.outcomes:
            print(f"    webhook {label}: {status} {evs}", flush=True)


def state(w, order_row):
    r = w.row(order_row)
    return r and r["state"]


# ---- 1. another refund's event of the same payment while this one is UNKNOWN ----

def s_other_refund_while_unknown(house):
    """r1 (400) UNKNOWN with its id; r2 (200, payretry's) and a dashboard refund
    (300) succeed and are notified under their own ids. r1 must stay UNKNOWN;
    then r1 is refused by the provider and notified: FAILED."""
    w = World(house)
    try:
        o = "ord-other"
        w.pay(o)
        _, r1 = w.refund(o, "r1", 400)
        _, r2 = w.refund(o, "r2", 200)
        dash = w.pv.dashboard(w.pv.pid_of(o), "refund", 300, key="dash-k-1" if house == "stripe" else None)
        w.deliver(w.pv.notify(dash, etype="refund.created" if house == "stripe" else None), "dashboard refund")
        after_dash = state(w, f"{o} refund r1")
        w.pv.decide(r2, "succeeded")
        w.deliver(w.pv.notify(r2), "r2 succeeded")
        after_r2 = state(w, f"{o} refund r1")
        w.pv.decide(r1, "failed")
        w.deliver(w.pv.notify(r1), "r1 failed")
        judge(f"{house}: another refund's event (own id) while r1 UNKNOWN", w, [o],
              expect=[(after_dash == "UNKNOWN", f"r1 read {after_dash} after the dashboard refund's event"),
                      (after_r2 == "UNKNOWN", f"r1 read {after_r2} after r2's event")])
    finally:
        w.close()


def s_other_refund_while_unknown_noid(house):
    """r1's answer is lost (the provider made it, pending): it knows no id. A
    dashboard refund's success is notified; then r1's own success."""
    w = World(house, retry={"max_attempts": 1})
    try:
        o = "ord-other-noid"
        w.pay(o)
        w.pv.fault(r".*/refunds$", "act_reset")
        (rc, res, msg), r1 = w.refund(o, "r1", 400)
        dash = w.pv.dashboard(w.pv.pid_of(o), "refund", 300, key="dash-k-2" if house == "stripe" else None)
        w.deliver(w.pv.notify(dash, etype="refund.created" if house == "stripe" else None), "dashboard refund")
        after_dash = state(w, f"{o} refund r1")
        w.pv.decide(r1, "succeeded")
        w.deliver(w.pv.notify(r1, etype="refund.created" if house == "stripe" else None), "r1's own success")
        judge(f"{house}: r1's answer lost, a dashboard refund's event, then r1's", w, [o],
              expect=[(res and res["outcome"] == "UNKNOWN", f"r1 after a lost answer: {op.short(res)}"),
                      (after_dash == "UNKNOWN", f"r1 read {after_dash} after the dashboard refund's event")],
              note=f"r1 finally {state(w, o + ' refund r1')}")
    finally:
        w.close()


# ---- 2. an event naming this refund's id but another payment -------------------

def s_same_id_other_payment(house):
    """r1 on o1 (400) UNKNOWN with id X. o2 (payretry's too) gets refund r1 with
    the same id X (the provider reuses it), which succeeds and is notified
    naming o2's payment. o1's r1 must stay UNKNOWN."""
    w = World(house)
    try:
        w.pay("o1")
        w.pay("o2")
        xid = {"stripe": "re_COLLIDE0001", "adyen": "8812345678901234", "checkout_com": "act_collide0000000000000000001"}[house]
        w.pv.next_ids = [xid]
        _, a = w.refund("o1", "r1", 400)
        w.pv.next_ids = [xid]
        _, b = w.refund("o2", "r1", 400)
        w.pv.decide(b, "succeeded")
        w.deliver(w.pv.notify(b), "o2's r1 succeeded (same id as o1's r1)")
        judge(f"{house}: an event with r1's id naming another payment (payretry's)", w, ["o1", "o2"],
              expect=[(state(w, "o1 refund r1") == "UNKNOWN", f"o1's r1 read {state(w, 'o1 refund r1')}")])
    finally:
        w.close()


def _foreign_refund_with_id(w, xid, where):
    """A dashboard refund (no key) with id `xid`: on a payment payretry never
    made (where="foreign": no row names it) or on payretry's own o2 (where="o2":
    its payment is found, no row of it holds the id, so the event is kept)."""
    if where == "foreign":
        st, body, _ = w.pv.create("foreign-order", 1000, False)
        pid = body.get("id") or body.get("pspReference")
        w.pv.payments[pid]["captured"] = 1000
    else:
        pid = w.pv.pid_of("o2")
    w.pv.next_ids = [xid]
    return w.pv.dashboard(pid, "refund", 500)


def s_same_id_kept_then_queried(house, where):
    """r1 on o1 UNKNOWN with id X. A dashboard refund with id X on another
    payment (see _foreign_refund_with_id) succeeds and is notified. Then o1's
    r1 is queried (kept events land before any lookup)."""
    w = World(house)
    try:
        w.pay("o1")
        if where == "o2":
            w.pay("o2")
        xid = {"stripe": "re_COLLIDE0002", "adyen": "8812345678905678", "checkout_com": "act_collide0000000000000000002"}[house]
        w.pv.next_ids = [xid]
        _, a = w.refund("o1", "r1", 400)
        f = _foreign_refund_with_id(w, xid, where)
        w.deliver(w.pv.notify(f, key=None), f"dashboard refund on {where} with r1's id")
        before_q = state(w, "o1 refund r1")
        try:
            q = op.short(w.c.query("o1 refund r1"))
        except op.PayError as e:
            q = {"error": str(e)}
        judge(f"{house}: a refund event of {where} with r1's id, then r1 queried", w,
              ["o1"] + (["o2"] if where == "o2" else []),
              expect=[(before_q == "UNKNOWN", f"o1's r1 read {before_q} right after the event")],
              note=f"query -> {q}; effects {[e for _, _, e in w.outcomes[-1:]]}")
    finally:
        w.close()


def s_same_id_kept_then_learned(house, where):
    """r1's answer is lost (no id); a dashboard refund with the id r1 will get
    (X), on another payment, is notified (kept under X where its payment is
    payretry's); then r1 is asked again with the same ref and learns X from
    the provider's replayed answer, if the profile re-sends."""
    w = World(house, retry={"max_attempts": 1})
    try:
        w.pay("o1")
        if where == "o2":
            w.pay("o2")
        xid = {"stripe": "re_COLLIDE0003", "adyen": "8812345678909999", "checkout_com": "act_collide0000000000000000003"}[house]
        w.pv.next_ids = [xid]
        w.pv.fault(r".*/refunds$", "act_reset")
        (rc, res, msg), a = w.refund("o1", "r1", 400)
        f = _foreign_refund_with_id(w, xid, where)
        w.deliver(w.pv.notify(f, key=None), f"dashboard refund on {where} with the id r1 will learn")
        posts = w.pv.op_posts()
        again = w.refund("o1", "r1", 400)[0]
        learned = (w.row("o1 refund r1") or {}).get("provider_payment_id")
        judge(f"{house}: a refund event of {where} kept under X, then r1 learns X by its same-ref re-ask", w,
              ["o1"] + (["o2"] if where == "o2" else []),
              note=f"first {res and res['outcome']}, re-ask -> rc {again[0]} {again[1] and again[1]['outcome']} "
                   f"({w.pv.op_posts() - posts} POST), r1 knows id {learned!r}; "
                   f"effects {[e for _, _, e in w.outcomes[-1:]]}")
    finally:
        w.close()


# ---- 3. a success and a failure of the same refund, both orders --------------

def s_pair(house, truth, order):
    """r1 (400) UNKNOWN; the provider's final word is `truth`; a success and a
    failure of r1 are delivered in `order` ("SF": success first). For Stripe
    a refund may really go succeeded -> failed (the money comes back), so
    truth failed with SF is what Stripe sends in order."""
    w = World(house)
    try:
        o = f"ord-pair-{truth}-{order}"
        w.pay(o)
        _, r1 = w.refund(o, "r1", 400)
        w.pv.decide(r1, "succeeded")
        s_note = w.pv.notify(r1, success=True)
        w.pv.decide(r1, "failed")
        f_note = w.pv.notify(r1, success=False)
        w.pv.decide(r1, truth)
        for ch in order:
            w.deliver(s_note if ch == "S" else f_note, "success" if ch == "S" else "failure")
        first_lie = (order[0] == "S") != (truth == "succeeded")
        judge(f"{house}: r1 {truth} in truth, success and failure delivered {order}", w, [o],
              note="the first event delivered contradicts the final truth (no receiver can tell then)"
                   if first_lie else "")
    finally:
        w.close()


# ---- 4. redeliveries -----------------------------------------------------------

def s_redeliveries(house):
    """r1 (400) and r2 (200) succeed; each notification is delivered again
    and again (same bytes; a second notification of the same operation under
    another event id; Adyen: the item twice in one batch). 600 of 1000 was
    refunded: partly_refunded, never refunded. Then the capture's (or the
    payment's) own success is delivered again after the refunds."""
    w = World(house)
    try:
        o = "ord-redeliver"
        w.pay(o)
        _, r1 = w.refund(o, "r1", 400)
        _, r2 = w.refund(o, "r2", 200)
        w.pv.decide(r1, "succeeded")
        n1 = w.pv.notify(r1)
        for i in range(3):
            w.deliver(n1, f"r1 #{i}")
        if house == "adyen":
            item = w.pv.adyen_item(r1, True)
            w.deliver(w.pv.adyen_batch([item, item]), "r1 twice in one batch")
        else:
            w.deliver(w.pv.notify(r1), "r1 again, another event id")
        w.pv.decide(r2, "succeeded")
        for i in range(2):
            w.deliver(w.pv.notify(r2), f"r2 #{i} (new event id)")
        before = w.c.ledger_get(o)["payment"]["money_state"]
        if house == "adyen":
            cap = [x for x in w.pv.ops if x["kind"] == "capture" and x["pid"] == w.pv.pid_of(o)][0]
            w.deliver(w.pv.notify(cap), "capture c0 redelivered after the refunds")
        elif house == "stripe":
            w.deliver(w.pv.stripe_pi_event(w.pv.pid_of(o)), "payment_intent.succeeded after the refunds")
        after = w.c.ledger_get(o)["payment"]["money_state"]
        judge(f"{house}: redeliveries of r1's and r2's successes", w, [o],
              expect=[(after == before, f"money moved {before} -> {after} on a redelivered capture/payment event")])
    finally:
        w.close()


# ---- 5. an event while the refund is in flight ---------------------------------

def s_in_flight(house, outcome, then="answer"):
    """The provider acts on r1 (400), decides it `outcome` and notifies it while
    r1's answer is still held (the double answers slowly); then it answers
    (then="answer") or resets the connection (then="lost")."""
    w = World(house, retry={"max_attempts": 1, "attempt_timeout_ms": 3000, "deadline_ms": 6000})
    try:
        o = f"ord-inflight-{outcome}-{then}"
        w.pay(o)
        seen = {}

        def during(opx):
            w.pv.decide(opx, outcome)
            seen["rep"] = w.deliver(w.pv.notify(opx, etype="refund.created" if house == "stripe" and outcome ==
                                                "succeeded" else None), "in flight")
            seen["row"] = state(w, f"{o} refund r1")
        w.pv.during = during
        w.pv.fault(r".*/refunds$", "act_hold" if then == "answer" else "act_hold_reset")
        (rc, res, msg), r1 = w.refund(o, "r1", 400)
        # The scenario's premise: the event came while the row was being sent.
        assert seen.get("row") == "IN_FLIGHT", f"the event did not come in flight: {seen.get('row')}"
        judge(f"{house}: r1 {outcome} notified while in flight, then its answer {'arrives' if then == 'answer' else 'is lost'}",
              w, [o], note=f"submit -> {res and res['outcome']}, row during flight {seen.get('row')}, "
                           f"finally {state(w, o + ' refund r1')}")
    finally:
        w.close()


# ---- 6. the answer lost (no id), then the refund's own event ------------------

def s_lost_then_event(house, outcome):
    w = World(house, retry={"max_attempts": 1})
    try:
        o = f"ord-lost-{outcome}"
        w.pay(o)
        w.pv.fault(r".*/refunds$", "act_reset")
        (rc, res, msg), r1 = w.refund(o, "r1", 400)
        w.pv.decide(r1, outcome)
        if house == "stripe":
            # Stripe: refund.created names the request's key; a later change
            # (refund.updated, refund.failed) is Stripe's own doing and names none.
            w.deliver(w.pv.notify(r1, etype="refund.created", status="pending", success=True), "refund.created pending")
            w.deliver(w.pv.notify(r1, key=None), "final word, no key")
        else:
            w.deliver(w.pv.notify(r1), "r1's own event")
        mid = state(w, f"{o} refund r1")
        posts = w.pv.op_posts()
        again = w.refund(o, "r1", 400)[0]
        judge(f"{house}: r1's answer lost, then its own {outcome} event; same ref asked again", w, [o],
              note=f"after the events {mid}; re-ask -> {again[1] and again[1]['outcome']} "
                   f"({w.pv.op_posts() - posts} POST)")
    finally:
        w.close()


# ---- 7. Stripe: refund.created carrying another refund's idempotency key -------

def s_stripe_other_key(variant):
    """r1 (400) is lost before Stripe saw it (nothing made under k1). Then:
    "lost": r2 (300) is made but its answer lost, and refund.created of r2
    carries k1; "dash": a dashboard refund's refund.created carries k1;
    "known": r1 knows its own id (pending) and r2's event carries k1;
    "fail": r1 WAS made (succeeded, its answer lost) and a dashboard
    refund's refund.failed carries k1 (a FAILED believed on the wrong row
    frees r1's 400 for the guard)."""
    w = World("stripe", retry={"max_attempts": 1})
    try:
        o = f"ord-otherkey-{variant}"
        w.pay(o)
        if variant == "known":
            (rc, res1, _), r1 = w.refund(o, "r1", 400)
        elif variant == "fail":
            w.pv.op_mode = "succeeded"
            w.pv.fault(r"^/v1/refunds$", "act_reset")
            (rc, res1, _), r1 = w.refund(o, "r1", 400)
        else:
            w.pv.fault(r"^/v1/refunds$", "reset_before")
            (rc, res1, _), r1 = w.refund(o, "r1", 400)
        k1 = res1["idempotency_key"]
        if variant == "dash":
            x = w.pv.dashboard(w.pv.pid_of(o), "refund", 300, key="dash-k-3")
        elif variant == "fail":
            x = w.pv.dashboard(w.pv.pid_of(o), "refund", 300, key="dash-k-5", state="failed")
        else:
            w.pv.op_mode = "succeeded"
            w.pv.fault(r"^/v1/refunds$", "act_reset")
            _, x = w.refund(o, "r2", 300)
        etype = "refund.failed" if variant == "fail" else "refund.created"
        w.deliver(w.pv.notify(x, etype=etype, key=k1), f"another refund's {etype} carrying r1's key")
        judge(f"stripe: {etype} of another refund carrying r1's key ({variant})", w, [o])
    finally:
        w.close()


# ---- 8. two captures sharing an id --------------------------------------------

def s_two_captures_one_id(house):
    """A held payment of 1000; c1 (400) and c2 (300) are accepted with the
    same id (the provider reuses it). c2 is captured and notified; c1 is
    declined and notified. Neither row may read the other's word."""
    w = World(house)
    try:
        o = "ord-2cap"
        w.pay(o, hold=True)
        xid = {"adyen": "7712345678901234", "checkout_com": "act_capcollide00000000000000001"}[house]
        w.pv.next_ids = [xid]
        _, c1 = w.capture(o, "c1", 400)
        w.pv.next_ids = [xid]
        _, c2 = w.capture(o, "c2", 300)
        w.pv.decide(c2, "succeeded")
        w.deliver(w.pv.notify(c2), "c2 captured")
        mid = (state(w, f"{o} capture c1"), state(w, f"{o} capture c2"))
        w.pv.decide(c1, "failed")
        w.deliver(w.pv.notify(c1), "c1 declined")
        judge(f"{house}: two captures sharing one id, one captured, one declined", w, [o],
              note=f"after c2's event c1/c2 = {mid}")
    finally:
        w.close()


def s_stripe_capture_lost_payment_event():
    """Stripe (no capture webhook: a capture's id is its PaymentIntent's): c1
    (400) lost before Stripe saw it, c2 (300) captured; payment_intent.
    succeeded delivered. c1 must not read SUCCEEDED."""
    w = World("stripe", retry={"max_attempts": 1})
    try:
        o = "ord-stripe-2cap"
        w.pay(o, hold=True)
        w.pv.fault(r".*/capture$", "reset_before")
        (_, res1, _), c1 = w.capture(o, "c1", 400)
        (_, res2, m2), c2 = w.capture(o, "c2", 300)
        w.deliver(w.pv.stripe_pi_event(w.pv.pid_of(o)), "payment_intent.succeeded")
        judge("stripe: capture c1 lost, c2 captured, the payment's succeeded event", w, [o],
              note=f"c1 {res1 and res1['outcome']}, c2 {res2 and res2['outcome']} {m2[:60]}")
    finally:
        w.close()


def s_partial_captures(house):
    """A held payment of 1000: c1 (400) and c2 (300) each settled by its own
    notification, c2's delivered twice. 700 was captured: the guard's rest
    must be 700, never the payment's 1000."""
    w = World(house)
    try:
        o = "ord-partial-cap"
        w.pay(o, hold=True)
        _, c1 = w.capture(o, "c1", 400)
        _, c2 = w.capture(o, "c2", 300)
        w.pv.decide(c1, "succeeded")
        w.deliver(w.pv.notify(c1), "c1 captured")
        w.pv.decide(c2, "succeeded")
        n2 = w.pv.notify(c2)
        w.deliver(n2, "c2 captured")
        w.deliver(n2, "c2 captured, again")
        judge(f"{house}: two partial captures settled by their events, then the rest refunded", w, [o])
    finally:
        w.close()


def s_cancel_events(house, outcome):
    """A held payment; cancel v1 accepted. "captured": the provider had taken
    a capture of all of it first (the dashboard's), notified, and declines
    v1; "voided": v1 is done and notified. The payment reads paid only when
    money was captured, failed only when none was."""
    w = World(house)
    try:
        o = f"ord-cancel-{outcome}"
        w.pay(o, hold=True)
        rc, res, msg = w.op(o, op.CANCEL, "v1")
        ops = w.pv.ops_of_key(res and res.get("idempotency_key"))
        v1 = ops[-1] if ops else None
        assert v1 is not None, f"cancel refused: rc {rc} {msg}"
        if outcome == "captured":
            d = w.pv.dashboard(w.pv.pid_of(o), "capture", 1000)
            w.deliver(w.pv.notify(d), "dashboard capture")
            w.pv.decide(v1, "failed")
            w.deliver(w.pv.notify(v1), "void declined")
        else:
            w.pv.decide(v1, "succeeded")
            w.deliver(w.pv.notify(v1), "void done")
            n = w.pv.notify(v1, success=False)
            w.deliver(n, "void declined, contradicting")
        judge(f"{house}: cancel v1 notified ({outcome})", w, [o], probe=False,
              note=f"cancel submit {res and res['outcome']}; v1 {state(w, o + ' cancel v1')}, "
                   f"money {w.c.ledger_get(o)['payment']['money_state']}")
    finally:
        w.close()


# ---- 9. another merchant account / another scope on a shared ledger -------------

def s_adyen_other_merchant():
    """Adyen, config merchant_id A. An item of merchant account B (the same
    company-level HMAC key) names our payment's and our r1's pspReferences
    (ids colliding across accounts) with success true. B is not ours."""
    w = World("adyen")
    try:
        o = "ord-merchant"
        w.pay(o)
        _, r1 = w.refund(o, "r1", 400)
        w.deliver(w.pv.notify(r1, success=True, merchant=MERCHANT_B), "merchant B's REFUND true")
        judge("adyen: REFUND true of another merchant account naming our ids", w, [o])
    finally:
        w.close()


def s_shared_ledger_two_scopes(house):
    """Two clients (accounts A and B, two provider accounts whose ids
    coincide) on one ledger file. Each has a paid payment and an UNKNOWN
    refund r1 with the same ids. B's refund succeeds; B's notification reaches
    A's webhook host (one endpoint, one secret). A's r1 must stay UNKNOWN.
    Then it reaches B's host: B's r1 SUCCEEDED."""
    db = os.path.join(tempfile.mkdtemp(prefix="opwh_shared_"), "ledger.db")
    pa = Provider(house, merchant=MERCHANT_A, account="acct_A" if house == "stripe" else None, id_start=1)
    pb = Provider(house, merchant=MERCHANT_B, account="acct_B" if house == "stripe" else None, id_start=1)
    pb.secret = pa.secret
    wa = World(house, pv=pa, db=db, account_id="acct_A", merchant=MERCHANT_A)
    wb = World(house, pv=pb, db=db, account_id="acct_B", merchant=MERCHANT_B)
    try:
        ha = [("Stripe-Account", "acct_A")] if house == "stripe" else None
        hb = [("Stripe-Account", "acct_B")] if house == "stripe" else None
        wa.pay("A-o", headers=ha)
        wb.pay("B-o", headers=hb)
        assert pa.pid_of("A-o") == pb.pid_of("B-o"), "ids must coincide"
        _, ra = wa.refund("A-o", "r1", 400)
        _, rb = wb.refund("B-o", "r1", 400)
        assert ra["id"] == rb["id"]
        pb.decide(rb, "succeeded")
        note = pb.notify(rb)
        wa.deliver(note, "B's event at A's host")
        at_a = state(wa, "A-o refund r1")
        wb.deliver(note, "B's event at B's host")
        judge(f"{house}: shared ledger, B's refund event at A's host (ids coinciding)", wa, ["A-o"], probe=False,
              expect=[(at_a == "UNKNOWN", f"A's r1 read {at_a}")])
        judge(f"{house}: shared ledger, B's own host settles B's r1", wb, ["B-o"], probe=False,
              note=f"B's r1 {state(wb, 'B-o refund r1')}")
    finally:
        wa.close()
        wb.close()


def s_shared_ledger_other_scope_payment(house):
    """Two scopes on one ledger, ids distinct (the realistic case): B's refund
    event (B's payment, B's refund id) reaches A's host, then B's host."""
    db = os.path.join(tempfile.mkdtemp(prefix="opwh_shared2_"), "ledger.db")
    pa = Provider(house, merchant=MERCHANT_A, account="acct_A" if house == "stripe" else None, id_start=1)
    pb = Provider(house, merchant=MERCHANT_B, account="acct_B" if house == "stripe" else None, id_start=500)
    pb.secret = pa.secret
    wa = World(house, pv=pa, db=db, account_id="acct_A", merchant=MERCHANT_A)
    wb = World(house, pv=pb, db=db, account_id="acct_B", merchant=MERCHANT_B)
    try:
        ha = [("Stripe-Account", "acct_A")] if house == "stripe" else None
        hb = [("Stripe-Account", "acct_B")] if house == "stripe" else None
        wa.pay("A-o", headers=ha)
        wb.pay("B-o", headers=hb)
        _, ra = wa.refund("A-o", "r1", 400)
        _, rb = wb.refund("B-o", "r1", 400)
        pb.decide(rb, "succeeded")
        note = pb.notify(rb)
        wa.deliver(note, "B's event at A's host")
        wb.deliver(note, "B's event at B's host")
        judge(f"{house}: shared ledger, distinct ids: A untouched", wa, ["A-o"], probe=False)
        judge(f"{house}: shared ledger, distinct ids: B's r1 settled by its host", wb, ["B-o"], probe=False,
              expect=[(state(wb, "B-o refund r1") in ("SUCCEEDED", "UNKNOWN"), "B's r1")],
              note=f"B's r1 {state(wb, 'B-o refund r1')}")
    finally:
        wa.close()
        wb.close()


# ---- 10. an operation payretry never made ---------------------------------------

def s_dashboard_refund(house):
    """A paid payment of 1000; a dashboard refund of 400 is notified (no row is
    that refund's); then payretry's r1 of 700 (the ledger does not know the
    dashboard's 400), which the provider refuses or declines and notifies."""
    w = World(house)
    try:
        o = "ord-dash"
        w.pay(o)
        d = w.pv.dashboard(w.pv.pid_of(o), "refund", 400, key="dash-k-4" if house == "stripe" else None)
        w.deliver(w.pv.notify(d, etype="refund.created" if house == "stripe" else None), "dashboard refund 400")
        ms = w.c.ledger_get(o)["payment"]["money_state"]
        (rc, res, msg), r1 = w.refund(o, "r1", 700)
        if r1 is not None and house != "stripe":
            w.pv.decide(r1, "failed")
            w.deliver(w.pv.notify(r1), "r1 declined")
        judge(f"{house}: a dashboard refund's event, then r1 over what is left", w, [o],
              note=f"money after the dashboard event {ms}; r1 -> {rc} {res and res['outcome']}")
    finally:
        w.close()


def s_dashboard_capture_and_cancel(house):
    """A held payment; a dashboard capture of 300 is notified (no row), then a
    dashboard cancel of the rest. The payment's money must not read more than
    the truth."""
    w = World(house)
    try:
        o = "ord-dash-cap"
        w.pay(o, hold=True)
        pid = w.pv.pid_of(o)
        d = w.pv.dashboard(pid, "capture", 300)
        w.deliver(w.pv.notify(d), "dashboard capture 300")
        judge(f"{house}: a dashboard capture's event on a held payment", w, [o], probe=False,
              note=f"money {w.c.ledger_get(o)['payment']['money_state']}")
    finally:
        w.close()


# ---- 11. an event of another kind naming r1's id --------------------------------

def s_other_kind(house, code):
    """r1 (400) UNKNOWN with id X; the provider sends a capture's or a cancel's
    success naming X (a modification of another kind with the same id)."""
    w = World(house)
    try:
        o = f"ord-kind-{code}"
        w.pay(o)
        _, r1 = w.refund(o, "r1", 400)
        fake = dict(r1, kind=code)
        w.deliver(w.pv.notify(fake, success=True), f"{code} success naming r1's id")
        judge(f"{house}: a {code} success naming r1's id", w, [o])
    finally:
        w.close()


def all_scenarios():
    out = []
    for h in HOUSES:
        out += [(f"s_other_refund_while_unknown_{h}", lambda h=h: s_other_refund_while_unknown(h)),
                (f"s_other_refund_while_unknown_noid_{h}", lambda h=h: s_other_refund_while_unknown_noid(h)),
                (f"s_same_id_other_payment_{h}", lambda h=h: s_same_id_other_payment(h)),
                (f"s_same_id_kept_then_queried_{h}_foreign", lambda h=h: s_same_id_kept_then_queried(h, "foreign")),
                (f"s_same_id_kept_then_queried_{h}_o2", lambda h=h: s_same_id_kept_then_queried(h, "o2")),
                (f"s_same_id_kept_then_learned_{h}_foreign", lambda h=h: s_same_id_kept_then_learned(h, "foreign")),
                (f"s_same_id_kept_then_learned_{h}_o2", lambda h=h: s_same_id_kept_then_learned(h, "o2"))]
        for truth in ("succeeded", "failed"):
            for order in ("SF", "FS"):
                out.append((f"s_pair_{h}_{truth}_{order}", lambda h=h, t=truth, o=order: s_pair(h, t, o)))
        out.append((f"s_redeliveries_{h}", lambda h=h: s_redeliveries(h)))
        for outcome in ("succeeded", "failed"):
            out.append((f"s_in_flight_{h}_{outcome}", lambda h=h, x=outcome: s_in_flight(h, x)))
            out.append((f"s_in_flight_lost_{h}_{outcome}", lambda h=h, x=outcome: s_in_flight(h, x, "lost")))
            out.append((f"s_lost_then_event_{h}_{outcome}", lambda h=h, x=outcome: s_lost_then_event(h, x)))
        out += [(f"s_shared_ledger_two_scopes_{h}", lambda h=h: s_shared_ledger_two_scopes(h)),
                (f"s_shared_ledger_other_scope_payment_{h}", lambda h=h: s_shared_ledger_other_scope_payment(h)),
                (f"s_dashboard_refund_{h}", lambda h=h: s_dashboard_refund(h))]
        if h != "stripe":
            out += [(f"s_two_captures_one_id_{h}", lambda h=h: s_two_captures_one_id(h)),
                    (f"s_dashboard_capture_{h}", lambda h=h: s_dashboard_capture_and_cancel(h)),
                    (f"s_partial_captures_{h}", lambda h=h: s_partial_captures(h)),
                    (f"s_cancel_events_{h}_captured", lambda h=h: s_cancel_events(h, "captured")),
                    (f"s_cancel_events_{h}_voided", lambda h=h: s_cancel_events(h, "voided")),
                    (f"s_other_kind_{h}_capture", lambda h=h: s_other_kind(h, "capture")),
                    (f"s_other_kind_{h}_cancel", lambda h=h: s_other_kind(h, "cancel"))]
    out += [("s_stripe_other_key_lost", lambda: s_stripe_other_key("lost")),
            ("s_stripe_other_key_dash", lambda: s_stripe_other_key("dash")),
            ("s_stripe_other_key_known", lambda: s_stripe_other_key("known")),
            ("s_stripe_other_key_fail", lambda: s_stripe_other_key("fail")),
            ("s_stripe_capture_lost_payment_event", s_stripe_capture_lost_payment_event),
            ("s_adyen_other_merchant", s_adyen_other_merchant)]
    return out


def selftest_judge():
    """Each check of judge() fires on the ledger it guards against (crafted
    rows over a crafted truth; no library, no network): take a check out of
    judge() and its line here fails."""

    class FakeClient:
        def __init__(self, led, probe_rc=0):
            self.led, self.probe_rc = led, probe_rc

        def ledger_get(self, order):
            return self.led

        def operation(self, order, kind, ref, amount, body=None):
            return (0, {"idempotency_key": "kprobe"}, "") if self.probe_rc == 0 else (self.probe_rc, None, "refused")

    class FakePv:
        def __init__(self, ops, captured, refunded, asked=1000):
            self.ops = ops
            self.payments = {"p1": {"captured": captured, "refunded": refunded, "order": "o"}}
            self.asked = {"kprobe": ("refund", "p1", asked)}

        def pid_of(self, order):
            return "p1"

        def ops_of_key(self, key):
            return [o for o in self.ops if o["key"] == key]

    class FakeWorld:
        def __init__(self, pv, c):
            self.pv, self.c, self.outcomes = pv, c, []

        def op_body(self):
            return None

    def row(state_, key="k1"):
        return {"order_id": "o refund r1", "state": state_, "money_state": "unknown", "idempotency_key": key}

    def op_(state_, amount=400, key="k1"):
        return {"id": "x", "kind": "refund", "pid": "p1", "amount": amount, "key": key, "state": state_}

    def verdict(row_state, op_state, pay_state="SUCCEEDED", money="paid", captured=1000, refunded=0, asked=0,
                probe=False):
        led = {"payment": {"state": pay_state, "money_state": money},
               "operations": [row(row_state)] if row_state else []}
        pv = FakePv([op_(op_state)] if op_state else [], captured, refunded, asked)
        n = len(RESULTS)
        judge("selftest", FakeWorld(pv, FakeClient(led)), ["o"], probe=probe)
        v = RESULTS[n][1]
        del RESULTS[n:]
        return v

    cases = [  # (what, expected verdict, arguments)
        ("SUCCEEDED, nothing made under the key", "BROKEN", dict(row_state="SUCCEEDED", op_state=None)),
        ("SUCCEEDED, its refund failed", "BROKEN", dict(row_state="SUCCEEDED", op_state="failed")),
        ("SUCCEEDED, its refund succeeded", "HELD", dict(row_state="SUCCEEDED", op_state="succeeded",
                                                         money="partly_refunded", refunded=400)),
        ("FAILED, money moved", "BROKEN", dict(row_state="FAILED", op_state="succeeded", refunded=400)),
        ("FAILED, still pending", "BROKEN", dict(row_state="FAILED", op_state="pending")),
        ("FAILED, failed", "HELD", dict(row_state="FAILED", op_state="failed")),
        ("UNKNOWN, succeeded", "HELD", dict(row_state="UNKNOWN", op_state="succeeded", refunded=400)),
        ("refunded while part refunded", "BROKEN", dict(row_state=None, op_state=None, money="refunded",
                                                        refunded=400)),
        ("refunded while all refunded", "HELD", dict(row_state=None, op_state=None, money="refunded",
                                                     refunded=1000)),
        ("partly_refunded while none", "BROKEN", dict(row_state=None, op_state=None, money="partly_refunded")),
        ("paid while nothing captured", "BROKEN", dict(row_state=None, op_state=None, money="paid", captured=0)),
        ("authorized while nothing captured", "HELD", dict(row_state=None, op_state=None, money="authorized",
                                                           captured=0)),
        ("failed while captured", "BROKEN", dict(row_state=None, op_state=None, money="failed")),
        ("payment row not SUCCEEDED", "BROKEN", dict(row_state=None, op_state=None, pay_state="UNKNOWN")),
        ("probe asks more than left", "BROKEN", dict(row_state="UNKNOWN", op_state="pending", asked=700,
                                                     probe=True)),
        ("probe asks what is left", "HELD", dict(row_state="UNKNOWN", op_state="pending", asked=600, probe=True)),
    ]
    bad = []
    for what, want, kw in cases:
        got = verdict(**kw)
        print(f"  judge selftest: {what}: {got} (want {want})")
        if got != want:
            bad.append(what)
    print(f"judge selftest: {len(cases) - len(bad)}/{len(cases)} as expected" + (f"; WRONG: {bad}" if bad else ""))
    return not bad


def main(argv):
    if argv[:1] == ["--selftest"]:
        return 0 if selftest_judge() else 1
    t0 = time.time()
    chosen = [(n, f) for n, f in all_scenarios() if not argv or any(a in n for a in argv)]
    for n, f in chosen:
        try:
            f()
        except Exception:  # a scenario that could not run is no verdict: ERROR
            RESULTS.append((n, "ERROR", traceback.format_exc().strip().splitlines()[-1]))
            print(f"[ERROR] {n}:\n{traceback.format_exc()}", flush=True)
    held = sum(1 for r in RESULTS if r[1] == "HELD")
    broken = [r for r in RESULTS if r[1] != "HELD"]
    print(f"\n{len(RESULTS)} verdicts: {held} HELD, {len(broken)} BROKEN/ERROR ({time.time() - t0:.1f} s)")
    for n, v, why in broken:
        print(f"  {v} {n}: {why}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
