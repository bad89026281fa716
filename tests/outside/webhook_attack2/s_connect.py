"""Stripe Connect: an event lands only on a row whose payment was made in the
account it names (issue 46 change 3: WebhookReceiver::payment_account).

Every scenario: order ids collide across accounts. acct_B (another connected
account of the same platform) has its own, charged PaymentIntent that names
the same order id as ours; our payment of the order was never charged (the
create's connection dropped before the provider made anything: UNKNOWN).
Whatever lands from acct_B (or from the platform) on our row and settles it
SUCCEEDED is a lost payment.

C1 the foreign success arrives while our payment is in flight (kept events).
C2 the payment's header is spelled stripe-account (lower case).
C3 the payment's Stripe-Account comes from a request hook (pay_headers_add),
   as submit.h suggests for per-attempt headers; a platform event arrives.
C4 the payment's own header value has a blank around the account id.
C5 a platform payment (no header) and a Connect event of acct_B.
C6 two clients on one SQLite ledger (the platform's config, and acct_A's config
   with headers.Stripe-Account); the endpoint hands every event to one of them.
"""
import sys
import threading
import time

from harness import HookedClient, body_for, config, deliver, events, pr, reconcile_with_bodies, report, row, \
    sqlite_ledger, summary
from stripe_double import StripeDouble, event


def foreign_success(d, order, account, evt):
    pi = d.make_elsewhere(account, order)
    return event(evt, pi, "payment_intent.succeeded", account=None if account == "platform" else account,
                 key="their-key-" + evt)


def lost(r, d, order, account):
    return r["state"] == "SUCCEEDED" and not d.charged(order, account)


def c1():
    d = StripeDouble()
    try:
        c = pr.Client(config(d, sqlite_ledger()))
        order = "ord-c1"
        d.plan = ["slow_drop"]
        out = {}
        t = threading.Thread(target=lambda: out.setdefault(
            "submit", c.submit(order, body_for(order), headers=[("Stripe-Account", "acct_A")])))
        t.start()
        time.sleep(0.4)
        in_flight = row(c, order)["state"]
        rb = deliver(c, foreign_success(d, order, "acct_B", "evt_c1_b"))
        rp = deliver(c, foreign_success(d, order, "platform", "evt_c1_p"))
        t.join()
        q = c.query(order)
        r = row(c, order)
        report("C1 foreign successes while in flight", "BROKEN" if lost(r, d, order, "acct_A") else "HELD",
               {"state_when_delivered": in_flight, "acct_B_event": events(rb), "platform_event": events(rp),
                "submit_outcome": out["submit"]["outcome"], "query_outcome": q["outcome"], "row": r,
                "charges_acct_A": d.charged(order, "acct_A")})
        c.close()
    finally:
        d.close()


def c2():
    d = StripeDouble()
    try:
        c = pr.Client(config(d))
        order = "ord-c2"
        d.plan = ["drop"]
        res = c.submit(order, body_for(order), headers=[("stripe-account", "acct_A")])
        rb = deliver(c, foreign_success(d, order, "acct_B", "evt_c2_b"))
        rp = deliver(c, foreign_success(d, order, "platform", "evt_c2_p"))
        r = row(c, order)
        sent_in = [a for m, p, a, k in d.requests if m == "POST"]
        report("C2 header name in lower case", "BROKEN" if lost(r, d, order, "acct_A") else "HELD",
               {"create_sent_in": sent_in, "submit_outcome": res["outcome"], "acct_B_event": events(rb),
                "platform_event": events(rp), "row": r})
        c.close()
    finally:
        d.close()


def c3():
    d = StripeDouble()
    try:
        c = HookedClient(config(d), [("Stripe-Account", "acct_A")])
        order = "ord-c3"
        d.plan = ["drop"]
        try:
            res = c.submit(order, body_for(order))
        except pr.PayError as e:
            # Since the fix: the hook may not set the account header; the
            # call fails before any byte leaves, and nothing is charged.
            sent_in = [a for m, p, a, k in d.requests if m == "POST"]
            held = "names the payment's account" in str(e) and not sent_in and not d.charged(order)
            report("C3 Stripe-Account from the request hook, a platform event", "HELD" if held else "BROKEN",
                   {"submit_error": str(e), "create_sent_in": sent_in})
            c.close()
            return
        rp = deliver(c, foreign_success(d, order, "platform", "evt_c3_p"))
        r = row(c, order)
        sent_in = [a for m, p, a, k in d.requests if m == "POST"]
        report("C3 Stripe-Account from the request hook, a platform event",
               "BROKEN" if lost(r, d, order, "acct_A") else "HELD",
               {"create_sent_in": sent_in, "submit_outcome": res["outcome"], "platform_event": events(rp), "row": r,
                "charges_acct_A": d.charged(order, "acct_A"), "charges_platform": d.charged(order, "platform")})
        c.close()
    finally:
        d.close()


def c4():
    d = StripeDouble()
    try:
        c = pr.Client(config(d))
        order = "ord-c4"
        d.plan = ["charge_then_drop"]
        res = c.submit(order, body_for(order), headers=[("Stripe-Account", "acct_A ")])
        own = d.pis_of(order, "acct_A")[0]
        ro = deliver(c, event("evt_c4_own", own, "payment_intent.succeeded", account="acct_A"))
        after_event = row(c, order)
        rec = reconcile_with_bodies(c, {order: body_for(order)})
        r = row(c, order)
        charges = d.charged(order)
        verdict = "HELD" if r["state"] == "SUCCEEDED" and len(charges) == 1 else "BROKEN"
        report("C4 header value 'acct_A ' (trailing blank): its own event", verdict,
               {"submit_outcome": res["outcome"], "own_event": events(ro), "row_after_event": after_event,
                "reconcile": {k: rec[k] for k in ("SUCCEEDED", "FAILED", "UNKNOWN")}, "row": r,
                "charges_at_provider": charges})
        c.close()
    finally:
        d.close()


def c5():
    d = StripeDouble()
    try:
        c = pr.Client(config(d))
        order = "ord-c5"
        d.plan = ["drop"]
        res = c.submit(order, body_for(order))
        rb = deliver(c, foreign_success(d, order, "acct_B", "evt_c5_b"))
        r = row(c, order)
        report("C5 platform payment, Connect event of acct_B", "BROKEN" if lost(r, d, order, "platform") else "HELD",
               {"submit_outcome": res["outcome"], "acct_B_event": events(rb), "row": r})
        c.close()
    finally:
        d.close()


def c6():
    d = StripeDouble()
    try:
        ledger = sqlite_ledger()
        plat = pr.Client(config(d, ledger))
        a = pr.Client(config(d, ledger, headers={"Stripe-Account": "acct_A"}))
        order = "ord-c6"
        d.plan = ["drop"]
        res = a.submit(order, body_for(order))
        out = {"submit_outcome": res["outcome"]}
        for name, cl in (("to_platform_client", plat), ("to_acct_A_client", a)):
            rb = deliver(cl, foreign_success(d, order, "acct_B", "evt_c6_b_" + name))
            rp = deliver(cl, foreign_success(d, order, "platform", "evt_c6_p_" + name))
            out[name] = {"acct_B_event": events(rb), "platform_event": events(rp)}
        q = a.query(order)
        r = row(a, order)
        out.update(query_outcome=q["outcome"], row=r)
        report("C6 two clients on one ledger", "BROKEN" if lost(r, d, order, "acct_A") else "HELD", out)
        plat.close()
        a.close()
    finally:
        d.close()


if __name__ == "__main__":
    for f in (c1, c2, c3, c4, c5, c6):
        f()
    sys.exit(summary())
