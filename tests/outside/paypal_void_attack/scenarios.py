"""PayPal void attack: pay_submit_operation's void (kind cancel) and capture
of an authorization, judged by our own double's counts (double.py).
Run: python3 scenarios.py [function-name ...]. Exit 1 while any scenario
reads BROKEN or ERROR."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pp  # noqa: E402
from double import Double  # noqa: E402

RESULTS = []
PY = sys.executable


def new_client(d, retry=None, db=None, **extra):
    db = db or os.path.join(tempfile.mkdtemp(prefix="pp_void_attack_"), "ledger.db")
    cfg = pp.config(d.url, db, retry, **extra)
    return pp.Client(cfg), cfg, db


def authorize(c, d, order, value="10.00"):
    """Orders v2 create, intent AUTHORIZE, through pay_submit: the
    authorization's id, read from PayPal's own answer (the double's)."""
    body = {"intent": "AUTHORIZE",
            "purchase_units": [{"custom_id": order, "amount": {"currency_code": "USD", "value": value}}],
            "payment_source": {"card": {"number": "4111111111111111", "expiry": "2030-01", "name": "A B"}}}
    r = c.submit(order, json.dumps(body).encode())
    assert r["outcome"] == "SUCCEEDED" and r["money_state"] == "authorized", r
    return d.orders[r["provider_payment_id"]]["auth"]


def kind_of(res):
    parts = (res.get("order_id") or "").split(" ")
    return parts[1] if len(parts) == 3 else "create"


def rows(c, order):
    return {r["order_id"]: r for r in c.ledger_get(order)["operations"]}


def judge(name, d, c, order, auth, results, expect=(), allowed_refusals=0, note=""):
    """results: [(rc, result, msg)] of every operation call. BROKEN when a
    void or a capture executed twice under one key; SUCCEEDED while the
    provider executed nothing under the result's key, FAILED while it did;
    a capture POSTed after a void that is not known to have failed (or the
    other way round); a POST PayPal refuses by the authorization's state
    (422) beyond `allowed_refusals` (those a scenario makes unavoidable by
    acting outside payretry); or a scenario's own check (`expect`: (ok, why))."""
    why = []
    for k, n in list(d.voids_by_key.items()) + list(d.caps_by_key.items()):
        if n > 1:
            why.append(f"key {k[:8]} executed {n} times")
    for rc, res, msg in results:
        if rc or not res:
            continue
        k, out, kind = res.get("idempotency_key"), res.get("outcome"), kind_of(res)
        done = (d.voids_by_key if kind == "cancel" else d.caps_by_key).get(k, 0)
        if out == "SUCCEEDED" and done == 0:
            why.append(f"{kind} SUCCEEDED but PayPal executed no {kind} under {k[:8]}")
        if out == "FAILED" and done > 0:
            why.append(f"{kind} FAILED but PayPal executed it under {k[:8]}")
    ops = rows(c, order)
    posts = d.posts_of(auth)
    for first, later in (("void", "capture"), ("capture", "void")):
        fp = [p for p in posts if p["op"] == first]
        lp = [p for p in posts if p["op"] == later]
        if fp and lp and lp[-1]["at"] > fp[0]["at"]:
            keys = {p["key"] for p in fp}
            settled = [r for r in ops.values() if r["idempotency_key"] in keys]
            if not all(r["state"] == "FAILED" for r in settled) or any(p["acted"] for p in fp):
                why.append(f"a {later} was POSTed after a {first} not known to have failed "
                           f"({[r['state'] for r in settled]}, PayPal acted: {any(p['acted'] for p in fp)})")
    refused = [p for p in posts if p["status"] == 422]
    if len(refused) > allowed_refusals:
        why.append(f"{len(refused) - allowed_refusals} POST(s) PayPal refuses by state (422) went out")
    for ok, w in expect:
        if not ok:
            why.append(w)
    v = "BROKEN" if why else "HELD"
    RESULTS.append((name, v))
    outs = [(rc, pp.short(res) and {k: res.get(k) for k in ("outcome", "money_state")}, msg[:80]) for rc, res, msg in results]
    wire = [(p["op"], p["key"] and p["key"][:8], p["status"]) for p in posts]
    print(f"[{v}] {name}: paypal={d.truth(auth)} posts={wire}; library={outs}"
          + (f"; WHY: {'; '.join(why)}" if why else "") + (f"; {note}" if note else ""), flush=True)


def scenario(fn):
    def run():
        try:
            fn()
        except Exception:
            RESULTS.append((fn.__name__, "ERROR"))
            print(f"[ERROR] {fn.__name__}:\n{traceback.format_exc()}", flush=True)
    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


class Env:
    """One double, one client, one SQLite ledger file, one authorized payment."""

    def __init__(self, order, retry=None, hang_s=1.5, prefer="minimal", **extra):
        self.d = Double(hang_s=hang_s, void_prefer_default=prefer)
        self.c, self.cfg, self.db = new_client(self.d, retry, **extra)
        self.o = order
        self.auth = authorize(self.c, self.d, order)

    def close(self):
        self.c.close()
        self.d.close()


# ---- the wire and the promises ---------------------------------------------

@scenario
def s_void_plain():
    """204, the default: SUCCEEDED, one void under the key."""
    e = Env("o-plain")
    try:
        r = e.c.void(e.o, "v1", e.auth)
        judge("void answered 204", e.d, e.c, e.o, e.auth, [r])
    finally:
        e.close()


@scenario
def s_void_wire():
    """The change's own claim (207e734, providers.md): the void goes out with
    no body and no Content-Type, as paypal-server-sdk sends it."""
    e = Env("o-wire")
    try:
        r = e.c.void(e.o, "v1", e.auth)
        p = e.d.posts_of(e.auth, "void")[0]
        judge("void sent with no body and no Content-Type", e.d, e.c, e.o, e.auth, [r],
              expect=[(p["body_len"] == 0, f"the void carried a {p['body_len']}-byte body"),
                      (p["content_type"] is None, f"the void carried Content-Type: {p['content_type']}")])
    finally:
        e.close()


@scenario
def s_void_moves_payment_money():
    """operation.h: a cancel's result money state is 'failed', and a
    succeeded operation moves its payment's money forward (pay_ledger_get of
    the order shows it)."""
    e = Env("o-money")
    try:
        r = e.c.void(e.o, "v1", e.auth)
        pay = e.c.ledger_get(e.o)["payment"]
        judge("void 204: result and payment money as operation.h promises", e.d, e.c, e.o, e.auth, [r],
              expect=[(r[1]["money_state"] == "failed", f"the SUCCEEDED void's money state is {r[1]['money_state']}, "
                       "operation.h says failed for a cancel"),
                      (pay["money_state"] == "failed", f"pay_ledger_get shows the payment {pay['money_state']} "
                       "after a SUCCEEDED void (PayPal: VOIDED)")])
    finally:
        e.close()


@scenario
def s_void_representation():
    """Prefer return=representation: 200 with the authorization VOIDED."""
    e = Env("o-repr", prefer="representation")
    try:
        r = e.c.void(e.o, "v1", e.auth)
        judge("void answered 200 VOIDED", e.d, e.c, e.o, e.auth, [r],
              expect=[(r[1]["outcome"] == "SUCCEEDED", "not SUCCEEDED"),
                      (e.c.ledger_get(e.o)["payment"]["money_state"] == "failed", "payment money not failed")])
    finally:
        e.close()


# ---- faults around one void --------------------------------------------------

def _fault(name, faults, retry=None, reask=True, expect_first=None, prefer="minimal"):
    e = Env("o-" + name.replace(" ", "-")[:40], retry=retry, prefer=prefer)
    try:
        e.d.fault(r"/void$", *faults)
        res = [e.c.void(e.o, "v1", e.auth)]
        first = res[0][1]["outcome"] if res[0][1] else None
        # The guard while the void stands as it does: a capture must be
        # refused before any byte unless the void FAILED.
        cap = e.c.capture(e.o, "c1", e.auth)
        if reask:
            time.sleep(e.d.hang_s + 0.3)  # what PayPal still holds has finished
            res.append(e.c.void(e.o, "v1", e.auth))  # the same ref again: the same key
        ex = []
        if expect_first:
            ex.append((first in expect_first, f"first call {first}, expected one of {expect_first}"))
        if first != "FAILED":
            ex.append((cap[0] != 0 and not e.d.posts_of(e.auth, "capture"),
                       f"a capture after a {first} void was not refused before any byte: {cap[0]} {cap[2][:60]}"))
        judge(f"void, {name}", e.d, e.c, e.o, e.auth, res + ([cap] if cap[0] == 0 else []), expect=ex,
              note=f"outcomes {[r[1] and r[1]['outcome'] for r in res]}")
    finally:
        e.close()


@scenario
def s_void_act_reset():
    """PayPal voids, the answer is lost (RST); the retry under the same key
    gets the replay."""
    _fault("reset after acting", ["act_reset"], expect_first=["SUCCEEDED"])


@scenario
def s_void_act_reset_one_attempt():
    """One attempt only: UNKNOWN, capture refused, the same ref settles it."""
    _fault("reset after acting, one attempt", ["act_reset"], retry={"max_attempts": 1}, expect_first=["UNKNOWN"])


@scenario
def s_void_act_hang():
    """PayPal voids and holds the answer past the attempt timeout."""
    _fault("answer held past the attempt timeout", ["act_hang"], expect_first=["SUCCEEDED", "UNKNOWN"])


@scenario
def s_void_hang_act_409():
    """PayPal holds the first request before acting; the retries under the
    same key meet 409 PREVIOUS_REQUEST_IN_PROGRESS."""
    _fault("held before acting, retries meet 409", ["hang_act"], expect_first=["SUCCEEDED", "UNKNOWN"])


@scenario
def s_void_hang_act_409_patient():
    """As above with room to wait: the 409s are backed off until the replay."""
    _fault("held before acting, 409 then replay in one call", ["hang_act"],
           retry={"max_attempts": 8, "backoff_base_ms": 200, "backoff_cap_ms": 400, "deadline_ms": 6000},
           reask=False, expect_first=["SUCCEEDED"])


@scenario
def s_void_act_500():
    _fault("500 after acting", ["act_500"], expect_first=["SUCCEEDED"])


@scenario
def s_void_5xx_every_attempt():
    """Acted on the first, 500 then 503 503: UNKNOWN, then the same ref settles."""
    _fault("5xx on every attempt, acted on the first", ["act_500", "503_before", "503_before"],
           expect_first=["UNKNOWN"])


@scenario
def s_void_503_before():
    _fault("503 before acting", ["503_before"], reask=False, expect_first=["SUCCEEDED"])


@scenario
def s_void_reset_before():
    _fault("reset before acting", ["reset_before"], reask=False, expect_first=["SUCCEEDED"])


@scenario
def s_void_garbled_200():
    """PayPal voids and answers 200 with a body cut in half (right length)."""
    _fault("200 with a truncated JSON body after acting", ["garbled_200"], reask=False, expect_first=["SUCCEEDED"],
           prefer="representation")


@scenario
def s_void_short_200():
    """PayPal voids; the 200's Content-Length promises more than comes."""
    _fault("200 cut short on the wire after acting", ["short_200"], reask=False, expect_first=["SUCCEEDED"],
           prefer="representation")


@scenario
def s_void_proxy_204():
    """A 204 that never came from PayPal (a proxy, a load balancer, an egress
    stub): nothing voided. The profile's rule reads any unreadable 2xx of
    the void as done."""
    _fault("204 from a proxy, PayPal never reached", ["proxy_204"], reask=False)


@scenario
def s_void_proxy_200_html():
    """A 200 text/html page from something in front of PayPal: nothing voided."""
    _fault("200 HTML from a proxy, PayPal never reached", ["proxy_200_html"], reask=False)


@scenario
def s_capture_proxy_204():
    """For contrast: the capture's unreadable 2xx (the generic rule) is
    re-sent under its key, and the replay tells."""
    e = Env("o-cap-proxy")
    try:
        e.d.fault(r"/capture$", "proxy_204")
        r = e.c.capture(e.o, "c1", e.auth)
        judge("capture, 204 from a proxy (generic rule, for contrast)", e.d, e.c, e.o, e.auth, [r])
    finally:
        e.close()


@scenario
def s_void_token_revoked():
    """The OAuth token is revoked before the void: 401, new token, once."""
    e = Env("o-401")
    try:
        with e.d.lock:
            e.d.tokens.clear()
        r = e.c.void(e.o, "v1", e.auth)
        judge("void after the token was revoked (401, new token)", e.d, e.c, e.o, e.auth, [r],
              expect=[(r[1] and r[1]["outcome"] == "SUCCEEDED", f"outcome {r[1] and r[1]['outcome']} {r[2]}")])
    finally:
        e.close()


@scenario
def s_void_keyless_provider():
    """PayPal as its 2.5 spec read (no PayPal-Request-Id on the void, n.d.
    which holds today): the same-key retry after a lost answer meets 422
    PREVIOUSLY_VOIDED. The void it executed must not read FAILED."""
    e = Env("o-keyless")
    try:
        e.d.void_ignores_key = True
        e.d.fault(r"/void$", "act_reset")
        r = e.c.void(e.o, "v1", e.auth)
        k = r[1]["idempotency_key"] if r[1] else None
        # The double counts keyless voids per authorization only: credit the
        # key the library sent on the first POST, which PayPal acted on.
        acted = [p for p in e.d.posts_of(e.auth, "void") if p["acted"]]
        if acted and k:
            e.d.voids_by_key[k] = len(acted)
        judge("void whose key PayPal ignores, answer lost then 422 PREVIOUSLY_VOIDED", e.d, e.c, e.o, e.auth, [r],
              allowed_refusals=1, note="the 422 is the provider's answer to the library's own retry")
    finally:
        e.close()


# ---- the same ref, two refs, the window --------------------------------------

@scenario
def s_void_same_ref_twice():
    e = Env("o-same")
    try:
        a = e.c.void(e.o, "v1", e.auth)
        b = e.c.void(e.o, "v1", e.auth)
        judge("void asked twice with the same ref", e.d, e.c, e.o, e.auth, [a, b],
              expect=[(len(e.d.posts_of(e.auth, "void")) == 1, "the second ask sent a POST"),
                      (b[1] and b[1]["idempotency_key"] == a[1]["idempotency_key"], "another key")])
    finally:
        e.close()


@scenario
def s_void_same_ref_two_threads():
    """Two threads ask v1 at once while PayPal holds the first."""
    e = Env("o-same-thr", retry={"deadline_ms": 5000}, in_progress_wait_ms=4000)
    try:
        e.d.fault(r"/void$", "hang_act")
        out = [None, None]

        def go(i):
            out[i] = e.c.void(e.o, "v1", e.auth)
        ts = [threading.Thread(target=go, args=(i,)) for i in range(2)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        time.sleep(e.d.hang_s)  # PayPal finishes what it holds
        again = e.c.void(e.o, "v1", e.auth)  # then v1 once more settles it
        judge("void v1 from two threads at once, then v1 again", e.d, e.c, e.o, e.auth, out + [again],
              expect=[(again[1] and again[1]["outcome"] == "SUCCEEDED", "v1 asked again did not settle")],
              note=f"outcomes {[r[1] and r[1]['outcome'] for r in out + [again]]}")
    finally:
        e.close()


@scenario
def s_void_two_refs():
    """v1 SUCCEEDED, then v2: refused before any byte."""
    e = Env("o-tworefs")
    try:
        a = e.c.void(e.o, "v1", e.auth)
        b = e.c.void(e.o, "v2", e.auth)
        judge("void v1 then v2", e.d, e.c, e.o, e.auth, [a, b],
              expect=[(b[0] != 0 and len(e.d.posts_of(e.auth, "void")) == 1, f"v2 not refused: {b[0]} {b[2][:60]}")])
    finally:
        e.close()


@scenario
def s_void_two_refs_after_unknown():
    """v1 UNKNOWN (answer lost, one attempt), then v2: refused, v1 stands."""
    e = Env("o-tworefs-unk", retry={"max_attempts": 1})
    try:
        e.d.fault(r"/void$", "act_reset")
        a = e.c.void(e.o, "v1", e.auth)
        b = e.c.void(e.o, "v2", e.auth)
        judge("void v1 UNKNOWN then v2", e.d, e.c, e.o, e.auth, [a, b],
              expect=[(b[0] != 0 and len(e.d.posts_of(e.auth, "void")) == 1, f"v2 not refused: {b[0]} {b[2][:60]}")])
    finally:
        e.close()


@scenario
def s_void_after_outside_capture():
    """The authorization was captured in the dashboard: v1 meets 422
    PREVIOUSLY_CAPTURED (unavoidable: payretry could not know) and must read
    FAILED; then v2 and a capture through payretry."""
    e = Env("o-outside-cap")
    try:
        e.d.capture_outside(e.auth)
        a = e.c.void(e.o, "v1", e.auth)
        b = e.c.void(e.o, "v2", e.auth)
        c2 = e.c.capture(e.o, "c1", e.auth)
        judge("void after a capture made outside payretry, then v2 and a capture", e.d, e.c, e.o, e.auth, [a, b, c2],
              allowed_refusals=1, expect=[(a[1] and a[1]["outcome"] == "FAILED", "v1 not FAILED")],
              note="beyond the first 422, what payretry sends after PayPal said PREVIOUSLY_CAPTURED")
    finally:
        e.close()


@scenario
def s_void_after_window():
    """key_retention_ms 2000 (the config's, shorter wins): v1 UNKNOWN, asked
    again after the window: nothing may be sent (PayPal forgot the key; the
    double forgets it too); a capture stays refused."""
    e = Env("o-window", retry={"max_attempts": 1}, key_retention_ms=2000)
    try:
        e.d.key_window_s = 1.5
        e.d.fault(r"/void$", "act_reset")
        a = e.c.void(e.o, "v1", e.auth)
        time.sleep(2.2)
        b = e.c.void(e.o, "v1", e.auth)
        q = e.c.query(e.o + " cancel v1")
        cap = e.c.capture(e.o, "c1", e.auth)
        judge("void v1 UNKNOWN, asked again after the key window", e.d, e.c, e.o, e.auth, [a, b, (0, q, "")],
              expect=[(len(e.d.posts_of(e.auth, "void")) == 1, "a void went out after the window"),
                      (cap[0] != 0 and not e.d.posts_of(e.auth, "capture"), "capture not refused")],
              note=f"after the window: {b[1] and b[1]['outcome']}, query {q['outcome']}")
    finally:
        e.close()


# ---- the guard ----------------------------------------------------------------

@scenario
def s_guard_capture_after_succeeded_void():
    e = Env("o-g1")
    try:
        a = e.c.void(e.o, "v1", e.auth)
        b = e.c.capture(e.o, "c1", e.auth)
        judge("capture after a SUCCEEDED void", e.d, e.c, e.o, e.auth, [a, b],
              expect=[(b[0] != 0, "capture not refused")])
    finally:
        e.close()


@scenario
def s_guard_void_after_capture():
    e = Env("o-g2")
    try:
        a = e.c.capture(e.o, "c1", e.auth)
        b = e.c.void(e.o, "v1", e.auth)
        judge("void after a SUCCEEDED capture", e.d, e.c, e.o, e.auth, [a, b],
              expect=[(b[0] != 0, "void not refused")])
    finally:
        e.close()


@scenario
def s_guard_void_after_unknown_capture():
    e = Env("o-g3", retry={"max_attempts": 1})
    try:
        e.d.fault(r"/capture$", "act_reset")
        a = e.c.capture(e.o, "c1", e.auth)
        b = e.c.void(e.o, "v1", e.auth)
        judge("void after an UNKNOWN capture", e.d, e.c, e.o, e.auth, [a, b],
              expect=[(b[0] != 0, "void not refused")])
    finally:
        e.close()


# ---- races: threads and processes ----------------------------------------------

@scenario
def s_race_void_capture_threads():
    """Void and capture of one authorization from two threads, two clients
    on one SQLite file, five rounds; PayPal holds each a little."""
    for i in range(5):
        d = Double(hang_s=0.2)
        db = os.path.join(tempfile.mkdtemp(prefix="pp_void_race_"), "ledger.db")
        c1, _, _ = new_client(d, db=db)
        c2, _, _ = new_client(d, db=db)
        try:
            o = f"o-race-thr-{i}"
            auth = authorize(c1, d, o)
            d.fault(r"/(void|capture)$", "hang_act", "hang_act")
            out = [None, None]
            go = threading.Event()

            def run(j):
                go.wait()
                out[j] = c1.void(o, "v1", auth) if j == 0 else c2.capture(o, "c1", auth)
            ts = [threading.Thread(target=run, args=(j,)) for j in range(2)]
            [t.start() for t in ts]
            go.set()
            [t.join() for t in ts]
            judge(f"void vs capture, two threads, round {i + 1}", d, c1, o, auth, out,
                  expect=[(sum(1 for r in out if r[0] == 0) == 1, "not exactly one of them admitted")])
        finally:
            c1.close()
            c2.close()
            d.close()


def spawn(cfg, order, action, ref, auth, start):
    return subprocess.Popen([PY, os.path.join(HERE, "worker.py"), json.dumps(cfg), order, action, ref, auth or "-",
                             str(start)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))


def read_result(p, timeout=20):
    out, errs = p.communicate(timeout=timeout)
    lines = [json.loads(x) for x in out.splitlines() if x.strip()]
    last = [x for x in lines if "rc" in x]
    if not last:
        raise RuntimeError(f"worker gave no result: {errs[-500:]}")
    return last[-1]["rc"], last[-1]["result"], last[-1]["msg"]


@scenario
def s_race_void_capture_processes():
    """Void and capture from two processes on one SQLite ledger file, three rounds."""
    for i in range(3):
        d = Double(hang_s=0.2)
        c, cfg, db = new_client(d)
        try:
            o = f"o-race-proc-{i}"
            auth = authorize(c, d, o)
            d.fault(r"/(void|capture)$", "hang_act", "hang_act")
            start = time.time() + 1.0
            ps = [spawn(cfg, o, "void", "v1", auth, start), spawn(cfg, o, "capture", "c1", auth, start)]
            out = [read_result(p) for p in ps]
            judge(f"void vs capture, two processes, round {i + 1}", d, c, o, auth, out,
                  expect=[(sum(1 for r in out if r[0] == 0) == 1, "not exactly one of them admitted")])
        finally:
            c.close()
            d.close()


@scenario
def s_kill_mid_void():
    """The process voiding is killed (SIGKILL) while PayPal holds the void;
    PayPal voids anyway. Another process: capture (refused), query and
    reconcile (no POST), then the same ref (the same key: the replay)."""
    d = Double(hang_s=2.0)
    c, cfg, db = new_client(d, retry={"deadline_ms": 1500})
    try:
        o = "o-kill"
        auth = authorize(c, d, o)
        d.fault(r"/void$", "hang_act")
        p = spawn(cfg, o, "void", "v1", auth, time.time())
        while not d.posts_of(auth, "void"):
            time.sleep(0.02)
        time.sleep(0.2)
        p.send_signal(signal.SIGKILL)
        p.wait()
        cap1 = c.capture(o, "c1", auth)
        time.sleep(2.2)  # the lease (1500 + 300 ms) is over, and PayPal has voided
        posts_before = len(d.posts)
        q = c.query(o + " cancel v1")
        rec = c.reconcile()
        lookups_posted = len(d.posts) - posts_before
        cap2 = c.capture(o, "c2", auth)
        again = c.void(o, "v1", auth)
        judge("process killed mid-void, then capture, query, reconcile, same ref", d, c, o, auth,
              [(0, q, ""), again] + [x for x in (cap1, cap2) if x[0] == 0],
              expect=[(cap1[0] != 0 and cap2[0] != 0, "a capture was admitted while the void stands"),
                      (lookups_posted == 0, f"query/reconcile sent {lookups_posted} POST(s)"),
                      (again[1] and again[1]["outcome"] == "SUCCEEDED", "the same ref did not settle it")],
              note=f"query after the kill: {q['outcome']}; same ref: {again[1] and again[1]['outcome']}")
    finally:
        c.close()
        d.close()


@scenario
def s_kill_then_same_ref_while_paypal_holds():
    """Killed mid-void; the same ref is asked again (another process, after
    the lease) while PayPal still holds the first request: 409, then the
    replay."""
    d = Double(hang_s=3.0)
    c, cfg, db = new_client(d, retry={"deadline_ms": 1500, "max_attempts": 6, "backoff_base_ms": 200,
                                      "backoff_cap_ms": 400})
    try:
        o = "o-kill2"
        auth = authorize(c, d, o)
        d.fault(r"/void$", "hang_act")
        p = spawn(cfg, o, "void", "v1", auth, time.time())
        while not d.posts_of(auth, "void"):
            time.sleep(0.02)
        p.send_signal(signal.SIGKILL)
        p.wait()
        time.sleep(1.9)
        a = c.void(o, "v1", auth)
        time.sleep(1.5)
        b = c.void(o, "v1", auth)
        judge("killed mid-void, same ref while PayPal still holds it", d, c, o, auth, [a, b],
              note=f"outcomes {a[1] and a[1]['outcome']}, {b[1] and b[1]['outcome']}")
    finally:
        c.close()
        d.close()


ALL = [v for k, v in list(globals().items()) if k.startswith("s_") and callable(v)]


def main(argv):
    want = argv[1:]
    t0 = time.time()
    for fn in ALL:
        if want and fn.__name__ not in want:
            continue
        fn()
    counts = {}
    for _, v in RESULTS:
        counts[v] = counts.get(v, 0) + 1
    print(f"\n{len(RESULTS)} verdicts in {time.time() - t0:.0f} s: {counts}")
    for n, v in RESULTS:
        if v != "HELD":
            print(f"  {v}: {n}")
    return 1 if any(v != "HELD" for _, v in RESULTS) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
