"""Cross-order settlements: one payment's events settle another order."""
from common import *


def stripe_flat_metadata_key():
    # Order A's body names order B through a flat form key ("metadata[order_id]"),
    # which Stripe decodes as metadata.order_id = B. The submit-time check reads only
    # $.metadata.order_id and lets it through.
    p = Provider(); c = pr.Client(cfg(p))
    p.lose["B"] = "before"   # B's create never reaches the provider: nothing charged for B
    rb = c.submit("B", b'{"amount":5000,"currency":"eur","metadata":{"order_id":"B"}}')
    try:
        ra = c.submit("A", b'{"amount":1000,"currency":"eur","metadata[order_id]":"B"}')
    except pr.PayError as e:
        return report("S1 stripe flat metadata[order_id] key", "HELD", f"submit refused: {e}")
    pid = ra["provider_payment_id"]
    r = send_stripe(c, stripe_event("evt_a", pid, "B"))
    detail = (f"A={ra['outcome']} B(before event)={rb['outcome']}; event of A's {pid}: {ev(r)[0]}; "
              f"B now {c.state('B')}; provider charges naming B's own create: "
              f"{[x for x in p.charges if x[0] != pid]}, all charges {p.charges}")
    report("S1 stripe flat metadata[order_id] key", "BROKEN (lost payment)" if c.state("B") == "SUCCEEDED" else "HELD", detail)


def stripe_raw_form_body():
    p = Provider(); c = pr.Client(cfg(p))
    p.lose["B"] = "before"
    c.submit("B", b'{"amount":5000,"currency":"eur","metadata":{"order_id":"B"}}')
    try:
        ra = c.submit("A", b"amount=1000&currency=eur&metadata[order_id]=B")
    except pr.PayError as e:
        return report("S1b stripe raw form body naming another order", "HELD", f"submit refused: {e}")
    pid = ra["provider_payment_id"]
    r = send_stripe(c, stripe_event("evt_a", pid, "B"))
    report("S1b stripe raw form body naming another order",
           "BROKEN (lost payment)" if c.state("B") == "SUCCEEDED" else "HELD",
           f"A={ra['outcome']}; event {ev(r)[0]}; B now {c.state('B')}; charges {p.charges}")


def mollie_duplicate_key():
    # JSON with metadata.order_id twice: payretry checks the FIRST ("A"), Mollie
    # (PHP json_decode, like Python's json) keeps the LAST ("B").
    p = Provider(); c = pr.Client(cfg(p, provider="mollie"))
    p.lose["B"] = "before"
    rb = c.submit("B", b'{"amount":{"currency":"EUR","value":"50.00"},"description":"B","metadata":{"order_id":"B"}}')
    try:
        ra = c.submit("A", b'{"amount":{"currency":"EUR","value":"10.00"},"description":"A",'
                           b'"metadata":{"order_id":"A","order_id":"B"}}')
    except pr.PayError as e:
        return report("S2 mollie duplicate metadata.order_id", "HELD", f"submit refused: {e}")
    pid = ra["provider_payment_id"]
    r = c.webhook(f"id={pid}".encode(), {"Content-Type": "application/x-www-form-urlencoded"})
    report("S2 mollie duplicate metadata.order_id",
           "BROKEN (lost payment)" if c.state("B") == "SUCCEEDED" else "HELD",
           f"A={ra['outcome']} ({pid}), B before={rb['outcome']}; hint id={pid}: {ev(r)[0]}; B now {c.state('B')}; "
           f"provider objects naming B: {[k for k,v in p.objects.items() if (v.get('metadata') or {}).get('order_id')=='B']}")


def mollie_old_payment_same_order():
    # Order B's real payment was created and paid; its answer was lost (UNKNOWN,
    # no provider id). An older, expired Mollie payment for the same order id
    # (an abandoned checkout, a row the memory ledger forgot, another system)
    # exists. Anyone can POST its id to the unauthenticated Mollie endpoint.
    p = Provider(); c = pr.Client(cfg(p, provider="mollie"))
    old = p.mollie_create_elsewhere({"order_id": "B"}, status="expired")
    p.lose["B"] = "after"
    rb = c.submit("B", b'{"amount":{"currency":"EUR","value":"50.00"},"description":"B","metadata":{"order_id":"B"}}')
    real = [k for k, v in p.objects.items() if k != old][0]
    p.mollie_pay(real)  # the customer paid B's real payment
    r = c.webhook(f"id={old}".encode(), {"Content-Type": "application/x-www-form-urlencoded"})
    st = c.state("B")
    # The merchant, told B FAILED, charges the customer again under a new order.
    if st == "FAILED":
        r2 = c.submit("B-retry", b'{"amount":{"currency":"EUR","value":"50.00"},"description":"B","metadata":{"order_id":"B-retry"}}')
        p.mollie_pay(r2["provider_payment_id"])
    report("S3a mollie hint for an older payment of the same order",
           "BROKEN (double charge)" if st == "FAILED" else "HELD",
           f"B={rb['outcome']} (real {real} paid); POST id={old} (expired, metadata B): {ev(r)[0]}; B now {st}; "
           f"provider charges for this customer: {p.charges}")


def stripe_old_event_same_order():
    # Stripe retries an undelivered event for days. An old PaymentIntent for
    # the same order id failed; its payment_intent.payment_failed arrives after
    # B's new row exists and B's own create (charged) ended UNKNOWN.
    p = Provider(); c = pr.Client(cfg(p))
    p.lose["B"] = "after"
    rb = c.submit("B", b'{"amount":5000,"currency":"eur","metadata":{"order_id":"B"}}')
    old = json.dumps({"id": "evt_old", "object": "event", "type": "payment_intent.payment_failed",
                      "created": int(time.time()) - 2 * 86400,
                      "data": {"object": {"id": "pi_OLD", "object": "payment_intent", "created": int(time.time()) - 2 * 86400,
                                          "status": "requires_payment_method", "metadata": {"order_id": "B"}}}},
                     indent=2).encode()
    r = send_stripe(c, old)
    st = c.state("B")
    if st == "FAILED":
        c.submit("B-retry", b'{"amount":5000,"currency":"eur","metadata":{"order_id":"B-retry"}}')
    report("S3b stripe late event of an older PaymentIntent of the same order",
           "BROKEN (double charge)" if st == "FAILED" else "HELD",
           f"B={rb['outcome']}; payment_failed of pi_OLD (created 2 days ago): {ev(r)[0]}; B now {st}; charges {p.charges}")


if __name__ == "__main__":
    for f in (stripe_flat_metadata_key, stripe_raw_form_body, mollie_duplicate_key, mollie_old_payment_same_order,
              stripe_old_event_same_order):
        try:
            f()
        except Exception as e:  # noqa
            report(f.__name__, "ERROR", repr(e))
