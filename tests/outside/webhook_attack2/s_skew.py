"""Kept events across hosts whose clocks differ (several clients on one ledger).

A kept event lands at pay_query / pay_reconcile (Settler::apply_kept_events)
when kept_event_applies says it came after its row was made: received_at
(the receiving host's wall clock) > created_at (the submitting host's). An
event kept because its order had no row yet was never checked against the
payment's account (the receiver checks only a row it read), and nothing
checks it when it lands.

S1: the webhook host runs ATTACK_SKEW_MS (3 s) ahead of the host that submits
(skew.c, LD_PRELOAD). acct_B's charged payment of order X is reported
(Connect event, account acct_B) a moment before our server submits its own
order X in acct_A; that create's connection drops before Stripe made
anything (UNKNOWN, nothing charged). pay_query then lands acct_B's success.
S2 (control): the same hosts with equal clocks.
S3: the same skew without Connect: a platform payment made elsewhere under the
same order id (the case docs/design.md says is "never applied").

The receiving "host" is a child process sharing the SQLite ledger; the event
is signed here, on the true clock.
"""
import json
import os
import subprocess
import sys

from harness import HERE, body_for, config, events, oid, pr, report, row, shared_ledger, shared_ledger_kinds, summary
from stripe_double import StripeDouble, event, sign

SHIM = os.environ.get("ATTACK_SKEW_SO", "/tmp/payretry_attack2_skew.so")


def build_shim():
    if not os.path.exists(SHIM):
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", SHIM, os.path.join(HERE, "skew.c"), "-ldl"], check=True)


def deliver_on_other_host(cfg, body, skew_ms):
    env = dict(os.environ, ATTACK_SKEW_MS=str(skew_ms), LD_PRELOAD=SHIM)
    job = json.dumps({"config": cfg, "body": body.decode(), "signature": sign(body)})
    p = subprocess.run([sys.executable, os.path.join(HERE, "receiver_host.py")], input=job.encode(),
                       capture_output=True, env=env, check=True)
    return json.loads(p.stdout)


def scenario(name, skew_ms, connect, kind):
    d = StripeDouble()
    try:
        cfg = config(d, shared_ledger(kind))
        order = oid("ord-skew-%d-%s-%s" % (skew_ms, "connect" if connect else "platform", kind))
        theirs_in = "acct_B" if connect else "platform"
        theirs = d.make_elsewhere(theirs_in, order)
        body = event("evt_" + order, theirs, "payment_intent.succeeded", account="acct_B" if connect else None,
                     key="their-key")
        reply = deliver_on_other_host(cfg, body, skew_ms)
        c = pr.Client(cfg)
        d.plan = ["drop"]
        ours_in = "acct_A" if connect else "platform"
        headers = [("Stripe-Account", "acct_A")] if connect else None
        res = c.submit(order, body_for(order), headers=headers)
        q = c.query(order)
        r = row(c, order)
        ours = [ch for ch in d.charged(order, ours_in) if ch[2] != theirs["id"]]
        broken = r["state"] == "SUCCEEDED" and not ours
        report("%s (%s)" % (name, kind), "BROKEN" if broken else "HELD",
               {"skew_ms": skew_ms, "event_at_receiver": events(reply), "submit_outcome": res["outcome"],
                "query_outcome": q["outcome"], "row": r, "charges_of_our_payment": ours,
                "their_payment": [theirs["account"], theirs["id"]]})
        c.close()
    finally:
        d.close()


if __name__ == "__main__":
    build_shim()
    for kind in shared_ledger_kinds():
        scenario("S1 Connect: acct_B's success kept, lands on acct_A's order (webhook host 3 s ahead)", 3000, True,
                 kind)
        scenario("S2 control: same, clocks equal", 0, True, kind)
        scenario("S3 platform: another payment's success kept, lands (webhook host 3 s ahead)", 3000, False, kind)
    sys.exit(summary())
