"""Webhook benchmark (reported, never asserted): notifications verified and applied per second.

For each scheme, one row is payretry's pay_webhook_apply (through ctypes, as any binding
calls it) on a client whose ledger is a SQLite file on disk: verify, read, record the event
in the ledger durably (synchronous=FULL) on a payment it names. Beside it, the provider's
official SDK verifying the very same notifications (a floor: it writes nothing). Rows run
in interleaved rounds, each row `--seconds` long, and report the median rate with min-max
and the machine's load; the ratio is payretry / SDK in the same round.

Each notification is a new event (its own id) about one of a few payments made first
through the same client against a local stand-in provider, so every apply is a durable
write: the event's row, the payment's history entry and the row's update, in one commit.

A webhook endpoint serves deliveries at once, so the SQLite rows run again with `--threads`
threads (8 and 32 by default) calling pay_webhook_apply on the one client, each with events
of its own (ctypes releases the GIL during the call): the events that arrive together share
one SQLite commit, and each call still returns only once its own event is durable. The SDK's
verify runs on as many threads too, beside its one-thread row: it holds the GIL, so threads
give it nothing, and its best row is the floor.
(Adyen names an event by pspReference, eventCode and success: its bench events carry codes
the profile does not map, recorded and noted, written like any other.)

  webhook_bench.py --lib build/src/api/libpayretry.so [--seconds 10] [--rounds 3] [--threads 8,32]

Run with the SDK venv's python (tests/conformance/sdk/sdk_venv.sh builds it).
"""
import argparse
import base64
import ctypes
import hashlib
import hmac
import http.server
import json
import os
import statistics
import tempfile
import threading
import time

STRIPE_SECRET = "whsec_bench_secret_0123456789"
ADYEN_KEY_HEX = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
SQUARE_KEY = "square-bench-signature-key"
SQUARE_URL = "https://shop.example/hooks/square"
ORDERS = 8


# ---- the C ABI through ctypes --------------------------------------------------------------

class Header(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class Buf(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_char_p), ("size", ctypes.c_size_t)]


class Request(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("method", ctypes.c_char_p), ("url", ctypes.c_char_p),
                ("headers", ctypes.POINTER(Header)), ("header_count", ctypes.c_size_t),
                ("body", ctypes.c_char_p), ("body_len", ctypes.c_size_t)]


class Reply(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("content_type", Buf), ("body", Buf), ("outcome", Buf)]


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char_p)]


class Lib:
    def __init__(self, path):
        self.c = ctypes.CDLL(path)
        self.c.pay_error_last.restype = ctypes.POINTER(Error)

    def client(self, config):
        c = ctypes.c_void_p()
        if self.c.pay_client_new(ctypes.byref(c), json.dumps(config).encode(), None) != 0:
            raise RuntimeError(self.c.pay_error_last().contents.message.decode())
        return c

    def submit(self, client, order, body):
        r = ctypes.c_void_p()
        b = json.dumps(body).encode()
        if self.c.pay_submit(ctypes.byref(r), client, order.encode(), b, len(b), None) != 0:
            raise RuntimeError(self.c.pay_error_last().contents.message.decode())
        self.c.pay_result_free(r)

    def apply(self, client, url, headers, body):
        hs = (Header * len(headers))(*[Header(k.encode(), v.encode()) for k, v in headers])
        req = Request(1, b"POST", url.encode(), hs, len(headers), body, len(body))
        rep = Reply()
        if self.c.pay_webhook_apply(ctypes.byref(rep), client, ctypes.byref(req)) != 0:
            raise RuntimeError(self.c.pay_error_last().contents.message.decode())
        status = rep.status
        self.c.pay_webhook_reply_dispose(ctypes.byref(rep))
        return status


# ---- a stand-in provider the payments are made at (creates only) ---------------------------

class Provider(http.server.BaseHTTPRequestHandler):
    answers = {}
    count = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Provider.count += 1
        n = Provider.count
        body = json.dumps(Provider.answers[self.path](n)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


Provider.answers = {
    "/v1/payment_intents": lambda n: {"id": "pi_%d" % n, "object": "payment_intent", "status": "processing"},
    "/v72/payments": lambda n: {"pspReference": "PSP%013d" % n, "resultCode": "Received"},
    "/v2/payments": lambda n: {"payment": {"id": "sq_%d" % n, "status": "APPROVED"}},
}


# ---- notifications, signed as each provider signs them --------------------------------------

def stripe_event(i, order, provider_id):
    body = json.dumps({"id": "evt_%d" % i, "object": "event", "type": "payment_intent.succeeded",
                       "data": {"object": {"id": provider_id, "object": "payment_intent", "status": "succeeded",
                                           "metadata": {"order_id": order}}}}).encode()
    t = str(int(time.time()))
    sig = hmac.new(STRIPE_SECRET.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return [("Stripe-Signature", "t=%s,v1=%s" % (t, sig))], body


def adyen_item_signed(item):
    fields = [item["pspReference"], item["originalReference"], item["merchantAccountCode"],
              item["merchantReference"], str(item["amount"]["value"]), item["amount"]["currency"],
              item["eventCode"], item["success"]]
    item["additionalData"] = {"hmacSignature": base64.b64encode(hmac.new(
        bytes.fromhex(ADYEN_KEY_HEX), ":".join(fields).encode(), hashlib.sha256).digest()).decode()}
    return item


def adyen_item(i, order, psp):
    item = {"amount": {"currency": "EUR", "value": 1000}, "eventCode": "AUTHORISATION",
            "eventDate": "2026-12-06T10:00:00+01:00", "merchantAccountCode": "BenchAccount",
            "merchantReference": order, "pspReference": psp, "originalReference": "",
            "success": "true", "paymentMethod": "visa", "operations": ["REFUND"], "reason": "bench:%d" % i}
    return adyen_item_signed(item)


def adyen_event(i, order, psp):
    # Adyen's event id is pspReference + eventCode + success: a new event of the same payment
    # needs another code, so the bench's are codes the profile does not map (recorded, noted).
    item = adyen_item(i, order, psp)
    item["eventCode"] = "BENCH_%d" % i
    item = adyen_item_signed(item)
    return [], json.dumps({"live": "false", "notificationItems": [{"NotificationRequestItem": item}]}).encode()


def square_event(i, order, provider_id):
    body = json.dumps({"merchant_id": "ML_BENCH", "type": "payment.updated", "event_id": "ev-%d" % i,
                       "created_at": "2026-12-06T10:00:00Z",
                       "data": {"type": "payment", "id": provider_id,
                                "object": {"payment": {"id": provider_id, "status": "COMPLETED",
                                                       "reference_id": order}}}}).encode()
    sig = base64.b64encode(hmac.new(SQUARE_KEY.encode(), SQUARE_URL.encode() + body, hashlib.sha256).digest())
    return [("x-square-hmacsha256-signature", sig.decode())], body


# ---- the SDKs' own verifiers on the same notifications --------------------------------------

def sdk_verifiers():
    out = {}
    try:
        import stripe

        def stripe_verify(headers, body):
            stripe.Webhook.construct_event(body, dict(headers)["Stripe-Signature"], STRIPE_SECRET)
        out["stripe"] = ("stripe " + stripe.VERSION + " Webhook.construct_event", stripe_verify)
    except ImportError:
        pass
    try:
        import Adyen.util

        def adyen_verify(headers, body):
            item = json.loads(body)["notificationItems"][0]["NotificationRequestItem"]
            if not Adyen.util.is_valid_hmac_notification(item, ADYEN_KEY_HEX):
                raise ValueError("adyen: not valid")
        out["adyen"] = ("Adyen util.is_valid_hmac_notification (json.loads included)", adyen_verify)
    except ImportError:
        pass
    try:
        from square.utils.webhooks_helper import verify_signature

        def square_verify(headers, body):
            if not verify_signature(request_body=body.decode(), signature_header=dict(headers)[
                    "x-square-hmacsha256-signature"], signature_key=SQUARE_KEY, notification_url=SQUARE_URL):
                raise ValueError("square: not valid")
        out["square"] = ("squareup webhooks_helper.verify_signature", square_verify)
    except ImportError:
        pass
    return out


# ---- the rows ---------------------------------------------------------------------------------

SCHEMES = {
    "stripe": {"config": {"provider": "stripe", "auth": {"bearer": "sk_test_bench"},
                          "webhook": {"secret": STRIPE_SECRET}},
               "body": lambda o: {"amount": 1000, "currency": "eur", "metadata": {"order_id": o}},
               "url": "https://shop.example/hooks/stripe", "event": stripe_event},
    "adyen": {"config": {"provider": "adyen", "auth": {"api_key": "bench-key"}, "merchant_id": "BenchAccount",
                         "webhook": {"secret": ADYEN_KEY_HEX}},
              "body": lambda o: {"amount": {"currency": "EUR", "value": 1000}, "reference": o,
                                 "merchantAccount": "BenchAccount",
                                 "paymentMethod": {"type": "scheme", "encryptedCardNumber": "test"}},
              "url": "https://shop.example/hooks/adyen", "event": adyen_event},
    "square": {"config": {"provider": "square", "auth": {"bearer": "sq-bench"},
                          "webhook": {"secret": SQUARE_KEY, "notification_url": SQUARE_URL}},
               "body": lambda o: {"amount_money": {"amount": 1000, "currency": "USD"}, "source_id": "cnon:card",
                                  "reference_id": o},
               "url": SQUARE_URL, "event": square_event},
}


def load():
    return "%.2f" % os.getloadavg()[0]


def run_row(fn, events, seconds):
    n, i = 0, 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        headers, body = events[i % len(events)]
        fn(headers, body)
        n += 1
        i += 1
    return n / (time.perf_counter() - t0)


def run_threads(fn, lists, seconds):
    """Each thread applies its own list for `seconds`, all started together: events per second
    of all of them, and whether any thread ran out of events (then the rate is too low)."""
    counts = [0] * len(lists)
    failures = []
    start = threading.Barrier(len(lists) + 1)

    def work(k):
        events = lists[k]
        start.wait()
        end = time.perf_counter() + seconds
        n = 0
        try:
            while n < len(events) and time.perf_counter() < end:
                headers, body = events[n]
                fn(headers, body)
                n += 1
        except Exception as e:  # noqa: BLE001 - reported below, the row is then void
            failures.append(e)
        counts[k] = n

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(lists))]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if failures:
        raise failures[0]
    return sum(counts) / elapsed, any(c == len(lst) for c, lst in zip(counts, lists))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--schemes", default="stripe,adyen,square")
    ap.add_argument("--threads", default="8,32", help="thread counts of the concurrent rows ('' for none)")
    a = ap.parse_args()
    thread_counts = [int(x) for x in a.threads.split(",") if x]
    lib = Lib(a.lib)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % server.server_address[1]
    sdks = sdk_verifiers()
    tmp = tempfile.mkdtemp(prefix="payretry-webhook-bench-")
    print("webhook bench: %s s per row, %d rounds, SQLite ledger in %s (synchronous=FULL), threads %s, %d cores" % (
        a.seconds, a.rounds, tmp, thread_counts, os.cpu_count()))
    conc = ["SQLite, %d threads" % n for n in thread_counts]
    print("| scheme | payretry, SQLite, 1 thread (/s) | %spayretry, memory, 1 thread (/s) | SDK verify only, "
          "best of 1 and %s threads (/s) | %sSQLite 1 thread / SDK | memory / SDK | SDK call |" % (
              "".join("payretry, %s (/s) | " % c for c in conc), "/".join(map(str, thread_counts)) or "-",
              "".join("%s / SDK | " % c for c in conc)))
    per_row_events = 200000 if a.seconds >= 5 else 20000
    for scheme in a.schemes.split(","):
        spec = SCHEMES[scheme]
        cfg = dict(spec["config"], base_url=base, ledger="sqlite://%s/%s.db" % (tmp, scheme),
                   retry={"max_attempts": 1})
        client = lib.client(cfg)
        # The same client on a memory ledger: verify, read and record without a disk write,
        # what payretry itself costs beside the SDK's verify.
        mem_client = lib.client(dict(cfg, ledger="memory:"))
        orders = ["bench-%s-%d" % (scheme, k) for k in range(ORDERS)]
        for o in orders:
            lib.submit(client, o, spec["body"](o))
            lib.submit(mem_client, o, spec["body"](o))
        ids = {}
        for o in orders:
            buf = Buf()
            lib.c.pay_ledger_get(ctypes.byref(buf), client, o.encode())
            ids[o] = json.loads(buf.ptr.decode()).get("provider_payment_id") or ""
            lib.c.pay_buf_dispose(ctypes.byref(buf))
        counter = [0]

        def fresh_events(n):
            out = []
            for _ in range(n):
                counter[0] += 1
                o = orders[counter[0] % ORDERS]
                out.append(spec["event"](counter[0], o, ids[o]))
            return out

        def applier(c):
            def apply(headers, body):
                status = lib.apply(c, spec["url"], headers, body)
                if status >= 300:
                    raise RuntimeError("%s: answered %d" % (scheme, status))
            return apply

        rows = {"SQLite, 1 thread": [], "memory": [], "sdk": []}
        ratios = {"SQLite, 1 thread": [], "memory": []}
        for c in conc:
            rows[c], ratios[c] = [], []
        for r in range(a.rounds):
            # New events every round and every SQLite row: an event seen before is a duplicate
            # (no write). The memory ledger and the SDK take the one-thread row's again.
            events = fresh_events(per_row_events)
            before = load()
            got = {"SQLite, 1 thread": run_row(applier(client), events, a.seconds)}
            for c, n in zip(conc, thread_counts):
                lists = [fresh_events(per_row_events // n) for _ in range(n)]
                got[c], ran_out = run_threads(applier(client), lists, a.seconds)
                if ran_out:
                    print("  %s round %d: a thread of %s ran out of events; raise per_row_events" % (scheme, r + 1, c))
            got["memory"] = run_row(applier(mem_client), events, a.seconds)
            s = None
            if scheme in sdks:
                verify = sdks[scheme][1]
                s = run_row(verify, events, a.seconds)
                for n in thread_counts:
                    lists = [events[k::n] for k in range(n)]
                    s = max(s, run_threads(verify, lists, a.seconds)[0])
                rows["sdk"].append(s)
            for k, v in got.items():
                rows[k].append(v)
                if s:
                    ratios[k].append(v / s)
            print("  %s round %d: %s%s (load %s -> %s)" % (
                scheme, r + 1, ", ".join("%s %.0f/s" % (k, v) for k, v in got.items()),
                "" if s is None else ", SDK %.0f/s" % s, before, load()))

        def fmt(xs):
            return "%.0f (%.0f-%.0f)" % (statistics.median(xs), min(xs), max(xs)) if xs else "-"
        def ratio(xs):
            return "%.3f (%.3f-%.3f)" % (statistics.median(xs), min(xs), max(xs)) if xs else "-"
        print("| %s | %s | %s%s | %s | %s%s | %s | %s |" % (
            scheme, fmt(rows["SQLite, 1 thread"]), "".join("%s | " % fmt(rows[c]) for c in conc), fmt(rows["memory"]),
            fmt(rows["sdk"]), "".join("%s | " % ratio(ratios[c]) for c in conc), ratio(ratios["SQLite, 1 thread"]),
            ratio(ratios["memory"]), sdks[scheme][0] if scheme in sdks else "no SDK verifier"))
        lib.c.pay_client_free(client)
        lib.c.pay_client_free(mem_client)
    server.shutdown()


if __name__ == "__main__":
    main()
