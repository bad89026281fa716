"""The receiver itself: hangs, refusals of genuine events, duplicates, faults, leaks."""
import hashlib
import hmac
import multiprocessing
import os
import sqlite3
import subprocess
from common import *

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def unknown_stripe(c, p, order, charged=True):
    p.lose[order] = "after" if charged else "before"
    return c.submit(order, json.dumps({"amount": 1000, "currency": "eur", "metadata": {"order_id": order}}).encode())


def mollie_hint_hang():
    p = Provider(); c = pr.Client(cfg(p, provider="mollie", retry={"deadline_ms": 2000, "attempt_timeout_ms": 600}))
    p.hang_lookups_s = 20
    t0 = time.time()
    r = c.webhook(b"id=tr_whatever1", FORM)
    dt = time.time() - t0
    report("S8 mollie hint against a hanging provider (deadline 2 s)",
           "HELD" if dt < 3 and r["status"] == 503 else "BROKEN (hang)", f"answered {r['status']} after {dt:.1f} s, {ev(r)}")
    # Many unauthenticated hints in a row: each costs a lookup (documented; rate-limit in the server).
    p.hang_lookups_s = 0
    t0 = time.time(); n0 = p.lookups
    for i in range(20):
        c.webhook(f"id=tr_spam{i}".encode(), FORM)
    report("S8b mollie hint amplification", "NOTE (documented)",
           f"20 forged hints -> {p.lookups - n0} provider lookups in {time.time() - t0:.1f} s")


def stripe_header_variants():
    p = Provider(); c = pr.Client(cfg(p, webhook={"secret": "whsec_new_0000000000", "previous_secret": STRIPE_WHSEC}))
    out = []
    for i, (name, mk) in enumerate([
        ("lower-case header name", lambda b: [("stripe-signature", stripe_sign(b))]),
        ("spaces after commas", lambda b: [("Stripe-Signature", stripe_sign(b).replace(",", ", "))]),
        ("v1 (bogus) + v1 (good) + v0", lambda b: [("Stripe-Signature", stripe_sign(b).replace("v1=", "v1=" + "0" * 64 + ",v1=") + ",v0=" + "ab" * 32)]),
        ("signed by previous secret (rotation)", lambda b: [("Stripe-Signature", stripe_sign(b))]),
        ("signed by new secret", lambda b: [("Stripe-Signature", stripe_sign(b, secret="whsec_new_0000000000"))]),
        ("both secrets, two v1", lambda b: [("Stripe-Signature", stripe_sign(b) + ",v1=" + stripe_sign(b, secret="whsec_new_0000000000").split("v1=")[1])]),
        ("scheme order v1 before t", lambda b: [("Stripe-Signature", ",".join(reversed(stripe_sign(b).split(","))))]),
    ]):
        body = stripe_event(f"evt_h{i}", f"pi_h{i}", f"o_h{i}")
        r = c.webhook(body, mk(body))
        out.append(f"{name}: {r['status']}{'' if r['status'] == 200 else ' ' + str(ev(r)[2])}")
    bad = [x for x in out if not x.split(": ")[1].startswith("200")]
    report("S10 stripe genuine header variants", "HELD" if not bad else "BROKEN (false refusal)", "; ".join(out))


def stripe_types_and_dups():
    p = Provider(); c = pr.Client(cfg(p))
    unknown_stripe(c, p, "T1", charged=False)
    rows = []
    for i, (obj, et, st) in enumerate([("charge", "charge.succeeded", "succeeded"), ("refund", "charge.refunded", "succeeded"),
                                       ("checkout.session", "checkout.session.completed", "complete"),
                                       ("payment_intent", "payment_intent.created", "requires_payment_method")]):
        r = send_stripe(c, stripe_event(f"evt_t{i}", f"x_{i}", "T1", etype=et, status=st, obj=obj))
        rows.append((et, ev(r)[0][0][1]))
    report("S4 stripe events of other object types for an UNKNOWN order (nothing charged)",
           "HELD" if c.state("T1") == "UNKNOWN" else "BROKEN", f"{rows}; T1 {c.state('T1')}")
    unknown_stripe(c, p, "D1", charged=True)
    pid = p.charges[-1][0]
    r1 = send_stripe(c, stripe_event("evt_d", pid, "D1"))
    r2 = send_stripe(c, stripe_event("evt_d", pid, "D1", etype="payment_intent.payment_failed", status="requires_payment_method"))
    r3 = send_stripe(c, stripe_event("evt_d2", pid, "D1", etype="payment_intent.payment_failed", status="requires_payment_method"))
    report("S5 same event id other body / contrary later event",
           "HELD" if c.state("D1") == "SUCCEEDED" else "BROKEN", f"{ev(r1)[0]} | {ev(r2)[0]} | {ev(r3)[0]}; D1 {c.state('D1')}")
    # An event before the row existed: kept, never applied to the later row.
    # Received in the same millisecond as the row's creation, it is applied
    # (kept_event_applies: received_at >= created_at).
    states = []
    for i in range(10):
        o = f"E{i}"
        r = send_stripe(c, stripe_event(f"evt_early{i}", f"pi_early{i}", o, etype="payment_intent.payment_failed",
                                        status="requires_payment_method"))
        unknown_stripe(c, p, o, charged=True)
        c.query(o)
        states.append(c.state(o))
    n = states.count("FAILED")
    report("S12 event received before the row existed (same millisecond), row then UNKNOWN+charged",
           "BROKEN (double charge after merchant retry)" if n else "HELD",
           f"{ev(r)[0]}; after query: {n}/10 rows FAILED though their payment was charged: {states}")
    # Odd ids.
    odd = []
    for name, oid in [("NUL in order id", "X1\u0000"), ("4 KB order id", "X" * 4096), ("unicode order id", "X1\u200b"),
                      ("order id with space", "X1 ")]:
        r = send_stripe(c, stripe_event("evt_odd_" + hashlib.sha1(oid.encode()).hexdigest()[:8], "pi_odd", oid))
        odd.append((name, r["status"], ev(r)[0][0][1] if ev(r)[0] else ev(r)[2]))
    unknown_stripe(c, p, "X1", charged=False)
    report("S15 odd ids", "HELD" if c.state("X1") == "UNKNOWN" else "BROKEN", f"{odd}; X1 {c.state('X1')}")


def ledger_faults():
    p = Provider()
    d, url = tmpdb()
    c = pr.Client(cfg(p, ledger=url))
    unknown_stripe(c, p, "L1", charged=True)
    pid = p.charges[-1][0]
    # A: another process holds the write lock (locked database).
    hold = sqlite3.connect(os.path.join(d, "ledger.db"), isolation_level=None, timeout=1)
    hold.execute("BEGIN EXCLUSIVE")
    t0 = time.time()
    r = send_stripe(c, stripe_event("evt_l1", pid, "L1"))
    dt = time.time() - t0
    hold.execute("ROLLBACK"); hold.close()
    report("S7a locked SQLite ledger", "HELD" if r["status"] == 503 else "BROKEN (2xx not stored)",
           f"{r['status']} after {dt:.1f}s {ev(r)[1]} why={str(ev(r)[2])[:120]}; L1 {c.state('L1')}")
    r = send_stripe(c, stripe_event("evt_l1", pid, "L1"))
    report("S7a' redelivery after the lock", "HELD" if c.state("L1") == "SUCCEEDED" else "BROKEN", f"{ev(r)[0]}")
    # B: a read-only ledger file (root ignores modes: open it read-only by URL? use chattr if present).
    c.close()
    unknown_ro = "L2"
    c = pr.Client(cfg(p, ledger=url)); unknown_stripe(c, p, unknown_ro, charged=True); pid2 = p.charges[-1][0]; c.close()
    ro = subprocess.run(["chattr", "+i", os.path.join(d, "ledger.db")], capture_output=True)
    try:
        c = pr.Client(cfg(p, ledger=url))
        r = send_stripe(c, stripe_event("evt_l2", pid2, unknown_ro))
        report("S7b immutable (read-only) SQLite file", "HELD" if r["status"] == 503 else "BROKEN (2xx not stored)",
               f"chattr rc={ro.returncode}; {r['status']} {ev(r)[1]} {str(ev(r)[2])[:120]}")
        c.close()
    except pr.PayError as e:
        report("S7b immutable (read-only) SQLite file", "HELD", f"chattr rc={ro.returncode} {ro.stderr[:60]!r}; client refused: {str(e)[:120]}")
    finally:
        subprocess.run(["chattr", "-i", os.path.join(d, "ledger.db")], capture_output=True)


def _deliver(args):
    base, url, body, sig = args

    class P:  # the same base_url (and so the same client scope) as the submitting client
        pass
    p = P(); p.url = base
    c = pr.Client(cfg(p, ledger=url))
    r = c.webhook(body, {"Stripe-Signature": sig})
    c.close()
    return ev(r)[0][0][1] if ev(r)[0] else ev(r)[1], r["status"]


def concurrent_processes():
    p = Provider(); d, url = tmpdb()
    c = pr.Client(cfg(p, ledger=url))
    unknown_stripe(c, p, "C1", charged=True)
    pid = p.charges[-1][0]
    jobs = []
    for i in range(12):
        if i % 2:
            b = stripe_event(f"evt_c{i}", pid, "C1")
        else:
            b = stripe_event(f"evt_c{i}", pid, "C1", etype="payment_intent.payment_failed", status="requires_payment_method")
        jobs.append((p.url, url, b, stripe_sign(b)))
    jobs += jobs  # every event twice
    with multiprocessing.get_context("spawn").Pool(6) as pool:
        res = pool.map(_deliver, jobs)
    hist = c.ledger_get("C1")
    settled = [r for r in res if r[0] == "settled"]
    wh = [a for a in hist["attempts"] if a.get("kind") == "webhook"]
    nums = [a["attempt"] for a in hist["attempts"]]
    ok = len(settled) == 1 and len(wh) == 12 and len(set(nums)) == len(nums) and all(s == 200 for _, s in res)
    report("S6 24 concurrent deliveries (12 events x2, contrary) from 6 processes, one SQLite file",
           "HELD" if ok else "BROKEN", f"effects {sorted(set(res))} settled x{len(settled)}; state {hist['payment']['state']}; "
           f"webhook entries {len(wh)}; numbers unique {len(set(nums)) == len(nums)}")


def leaks():
    p = Provider()
    c = pr.Client(cfg(p, provider="mollie", auth={"bearer": "live_SECRETKEY0123456789abcdefghij"}))
    # A provider that echoes the credential in an error body.
    p.hang_lookups_s = 0
    r = c.webhook(b"id=tr_nope", FORM)
    txt = json.dumps(r)
    report("S9 secrets in outcome JSON", "HELD" if "SECRETKEY" not in txt and STRIPE_WHSEC not in txt else "BROKEN (leak)",
           txt[:200])
    c2 = pr.Client(cfg(p))
    body = stripe_event("evt_leak", "pi_x", "o")
    r = c2.webhook(body, {"Stripe-Signature": "t=1,v1=" + hmac.new(b"x", b"y", hashlib.sha256).hexdigest()})
    report("S9b refusal why", "HELD" if STRIPE_WHSEC not in json.dumps(r) else "BROKEN (leak)", str(ev(r)[2]))


if __name__ == "__main__":
    for f in (mollie_hint_hang, stripe_header_variants, stripe_types_and_dups, ledger_faults, concurrent_processes, leaks):
        try:
            f()
        except Exception as e:  # noqa
            import traceback; traceback.print_exc()
            report(f.__name__, "ERROR", repr(e))
