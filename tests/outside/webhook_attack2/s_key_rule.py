"""The failure-by-idempotency-key rule (event_finding_on, issue 46 change 1).

K1: the merchant names its keys after its orders (Idempotency-Key = order id, a
common choice the API allows: pay_submit_options.idempotency_key). An earlier
PaymentIntent of the same order was declined more than 24 h ago under that
key (Stripe prunes keys after 24 h, so the key is free again) and its
payment_intent.payment_failed is still being redelivered (Stripe retries for
up to 3 days). payretry's new payment of the order is charged, its answer
lost: UNKNOWN, no id. The old failure carries the row's own key.

K2 (control): the same with payretry's default key (a fresh UUID): the old
failure is noted, and reconcile settles the row SUCCEEDED by a same-key
re-send, one charge.

K3 (control): the event's key differs from the row's only in case, or is
empty: never settles FAILED.
"""
import sys
import time

from harness import (body_for, config, deliver, events, ledger_kinds, oid, pr, reconcile_with_bodies, report, row,
                     shared_ledger, summary)
from stripe_double import StripeDouble, event

TWO_DAYS = 2 * 24 * 3600


def k1(ledger_kind):
    d = StripeDouble()
    try:
        c = pr.Client(config(d, shared_ledger(ledger_kind)))
        order = oid("ord-k1-" + ledger_kind)
        old = d.make_elsewhere("platform", order, status="requires_payment_method", key=order)
        d.plan = ["charge_then_drop"]
        res = c.submit(order, body_for(order), key=order)
        reply = deliver(c, event("evt_" + order, old, "payment_intent.payment_failed", key=order,
                                 created=int(time.time()) - TWO_DAYS))
        r = row(c, order)
        # What a merchant does with FAILED: the customer pays again.
        again = c.submit(order + "-retry", body_for(order + "-retry"))
        charges = d.charged(order) + d.charged(order + "-retry")
        broken = r["state"] == "FAILED" and len(d.charged(order)) == 1
        report("K1 key=order id, old decline redelivered (%s)" % ledger_kind, "BROKEN" if broken else "HELD",
               {"submit_outcome": res["outcome"], "event": events(reply), "row": r,
                "second_order_outcome": again["outcome"], "charges_at_provider": charges,
                "old_pi": old["id"]})
        c.close()
    finally:
        d.close()


def k2():
    d = StripeDouble()
    try:
        c = pr.Client(config(d))
        order = "ord-k2"
        old = d.make_elsewhere("platform", order, status="requires_payment_method", key="some-older-key")
        d.plan = ["charge_then_drop"]
        res = c.submit(order, body_for(order))
        reply = deliver(c, event("evt_k2", old, "payment_intent.payment_failed", key="some-older-key"))
        before = row(c, order)
        rec = reconcile_with_bodies(c, {order: body_for(order)})
        after = row(c, order)
        ok = before["state"] == "UNKNOWN" and after["state"] == "SUCCEEDED" and len(d.charged(order)) == 1
        report("K2 control: default key, old decline", "HELD" if ok else "BROKEN",
               {"submit_outcome": res["outcome"], "event": events(reply), "row_after_event": before,
                "reconcile": {k: rec[k] for k in ("SUCCEEDED", "FAILED", "UNKNOWN")}, "row_after_reconcile": after,
                "charges_at_provider": d.charged(order)})
        c.close()
    finally:
        d.close()


def k3():
    d = StripeDouble()
    try:
        c = pr.Client(config(d))
        out = {}
        ok = True
        for n, (mine, theirs) in enumerate([("Key-K3-a", "key-k3-a"), ("Key-K3-b", ""), ("Key-K3-c", " Key-K3-c")]):
            order = "ord-k3-%d" % n
            old = d.make_elsewhere("platform", order, status="requires_payment_method", key=theirs or None)
            d.plan = ["charge_then_drop"]
            c.submit(order, body_for(order), key=mine)
            reply = deliver(c, event("evt_k3_%d" % n, old, "payment_intent.payment_failed", key=theirs or None))
            r = row(c, order)
            out[order] = {"row_key": mine, "event_key": theirs, "event": events(reply), "state": r["state"]}
            ok = ok and r["state"] == "UNKNOWN"
        report("K3 control: near-miss keys never settle FAILED", "HELD" if ok else "BROKEN", out)
        c.close()
    finally:
        d.close()


if __name__ == "__main__":
    for kind in ledger_kinds():
        k1(kind)
    k2()
    k3()
    sys.exit(summary())
