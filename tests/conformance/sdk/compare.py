#!/usr/bin/env python3
"""Compares what a provider's official SDK sent with what payretry sent for the
same payment, request by request and field by field, from the two recorder
JSONL files, and prints a table. Exit 0 when everything matches (or differs
only where the difference is listed below as legitimate), 1 otherwise.

    compare.py --profile stripe --sdk sdk.jsonl --payretry payretry.jsonl [--keys tests/keys]
               [--requests WORK/requests.json]

Requests are paired in send order: PayPal's token requests (POST
/v1/oauth2/token) apart, then every other request with the runner's list of
them (requests.json: label, kind, payment, the key it must carry; without it,
one create and one lookup). An id an earlier answer gave (a payment's, PayPal's
authorization and capture) is written as a placeholder ({A}, {B.capture}) in
later paths, query values and body leaves on both sides.
"""
import argparse
import base64
import json
import os
import re
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
from recorder import read_jsonl  # noqa: E402

# ---- what may differ, and why -------------------------------------------------------------------

# Headers whose value (and presence) legitimately differ between two clients.
IGNORED_HEADERS = {
    "user-agent": "names the client and its version (payretry sends payretry/<version>)",
    "x-stripe-client-user-agent": "stripe-python telemetry: bindings version, OS, Python",
    "x-stripe-client-telemetry": "stripe-python telemetry: the previous request's id and duration",
    "adyen-library-name": "Adyen library identification (telemetry)",
    "adyen-library-version": "Adyen library identification (telemetry)",
    "x-fern-language": "Square SDK generator (Fern) telemetry",
    "x-fern-runtime": "Square SDK generator (Fern) telemetry",
    "x-fern-platform": "Square SDK generator (Fern) telemetry",
    "x-fern-sdk-name": "Square SDK generator (Fern) telemetry",
    "x-fern-sdk-version": "Square SDK generator (Fern) telemetry",
    "x-mollie-client-info": "mollie-api-python telemetry: uname of the host",
    "log-uuid": "alipay-sdk-python's random per-call log correlation id",
    "accept-encoding": "transport: the compressions the HTTP library accepts",
    "connection": "transport: keep-alive handling of the HTTP library",
    "keep-alive": "transport",
    "expect": "transport: libcurl's 100-continue handshake",
    "host": "the recorder's address (each side had its own port)",
    "content-length": "follows from the body, which is compared itself",
    "transfer-encoding": "transport framing; the body is compared itself",
}

# Headers the SDK sends that payretry may leave out: the provider does not need them.
OPTIONAL_SDK_HEADERS = {
    "stripe": {"stripe-version": "optional: without it Stripe applies the account's default API version "
                                 "(docs.stripe.com/api/versioning); the profile pins none"},
    "square": {"square-version": "optional: without it Square applies the application's version set in the "
                                 "Developer Console (developer.squareup.com/docs/build-basics/versioning-overview)"},
    "wechatpay_v3": {"wechatpay-serial": "WeChat Pay needs it only when the request carries fields encrypted with "
                                         "the platform key (none here); wechatpayv3 sends it on every request in "
                                         "public-key mode"},
    "alipay": {"cache-control": "alipay-sdk-python's 'no-cache' request directive for intermediaries; the gateway "
                                "does not read it"},
    "paypal": {}, "adyen": {}, "checkout_com": {}, "mollie": {},
}

# Body members an SDK always writes at the API's own default, which payretry
# leaves out (the provider then applies that same default): (value, why).
SDK_DEFAULT_BODY = {
    "paypal": {"final_capture": (False, "paypal-server-sdk's CaptureRequest writes final_capture=False whenever it is "
                                        "not set (models/capture_request.py: the one optional member with a default, "
                                        "not SKIP: the generator's copy of the spec's default); absent, PayPal "
                                        "applies that default: more captures stay possible")},
}

# Headers payretry sends that the SDK does not, and why that is fine.
PAYRETRY_EXTRA_OK = {
    "accept": "payretry asks for JSON, which every provider answers",
}

# Query parameters whose values legitimately differ (names are always compared).
VOLATILE_QUERY = {
    "alipay": {"timestamp": ("the send time", r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"),
               "sign": ("signature bytes: timestamp is signed; verified below", r"^[A-Za-z0-9+/]+=*$")},
}

# Where the create's answer carries the provider's payment id (substituted as {id} in lookups).
ANSWER_ID = {
    "stripe": ["id"], "adyen": ["pspReference"], "paypal": ["id"], "square": ["payment", "id"],
    "checkout_com": ["id"], "mollie": ["id"], "wechatpay_v3": ["prepay_id"],
    "alipay": ["alipay_trade_pay_response", "trade_no"],
}

TOKEN_PATH = "/v1/oauth2/token"

# ---- decoding -----------------------------------------------------------------------------------


def header(entry, name):
    """(name as sent, value) of the first header of that name, case-insensitively, or None."""
    for k, v in entry["headers"]:
        if k.lower() == name.lower():
            return k, v
    return None


def body_bytes(entry):
    return base64.b64decode(entry["body_b64"])


def media_type(ct):
    return (ct or "").split(";", 1)[0].strip().lower()


def norm_content_type(ct):
    """'Application/JSON; charset=UTF-8' -> 'application/json;charset=utf-8'."""
    if ct is None:
        return None
    parts = [p.strip() for p in ct.split(";") if p.strip()]
    out = [parts[0].lower()] if parts else []
    for p in parts[1:]:
        k, _, v = p.partition("=")
        out.append(f"{k.strip().lower()}={v.strip().strip(chr(34)).lower()}")
    return ";".join(out)


def set_nested(root, key, value):
    """Stripe's bracket nesting: metadata[order_id]=x, items[0][price]=y."""
    m = re.match(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$", key)
    if not m:
        root[key] = value
        return
    parts = [m.group(1)] + re.findall(r"\[([^\[\]]*)\]", m.group(2))
    cur = root
    for i, p in enumerate(parts):
        last = i == len(parts) - 1
        nxt = None if last else parts[i + 1]
        want = [] if (nxt is not None and (nxt.isdigit() or nxt == "")) else {}
        if isinstance(cur, list):
            idx = int(p) if p.isdigit() else len(cur)
            while len(cur) <= idx:
                cur.append(None)
            if last:
                cur[idx] = value
            else:
                if cur[idx] is None:
                    cur[idx] = want
                cur = cur[idx]
        else:
            if last:
                cur[p] = value
            else:
                cur = cur.setdefault(p, want)


def decode_form(text, profile):
    pairs = urllib.parse.parse_qsl(text, keep_blank_values=True, strict_parsing=bool(text))
    out = {}
    for k, v in pairs:
        if profile == "alipay" and isinstance(v, str) and v[:1] in "{[":
            try:  # form_flat: objects and arrays travel as JSON text (biz_content)
                v = {"__json__": json.loads(v)}
            except ValueError:
                pass
        set_nested(out, k, v)
    return out


def decode_body(entry, profile):
    """(kind, decoded) of the request body."""
    raw = body_bytes(entry)
    if not raw:
        return "empty", None
    ct = media_type((header(entry, "Content-Type") or (None, ""))[1])
    text = raw.decode("utf-8", errors="replace")
    if ct == "application/json" or ct.endswith("+json"):
        try:
            return "json", json.loads(text)
        except ValueError as e:
            return "invalid json", f"{e}: {text[:200]}"
    if ct == "application/x-www-form-urlencoded":
        try:
            return "form", decode_form(text, profile)
        except ValueError as e:
            return "invalid form", f"{e}: {text[:200]}"
    return f"raw ({ct or 'no content type'})", text


def flatten(value, prefix=""):
    """{"a": {"b": 1}, "l": [x]} -> {"a.b": 1, "l[0]": x}. A form field holding JSON text
    ({"__json__": v}, Alipay's biz_content) is written f{json}: biz_content{json}.out_trade_no."""
    out = {}
    if isinstance(value, dict) and set(value) == {"__json__"}:
        return flatten(value["__json__"], prefix + "{json}")
    if isinstance(value, dict):
        if not value and prefix:
            out[prefix] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else k))
    elif isinstance(value, list):
        if not value and prefix:
            out[prefix] = []
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}[{i}]"))
    else:
        out[prefix] = value
    return out


def dig(doc, path):
    cur = doc
    for p in path:
        if isinstance(p, int):
            if not isinstance(cur, list) or len(cur) <= p:
                return None
        elif not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


def answer_json(entry):
    try:
        return json.loads(base64.b64decode(entry["response"]["body_b64"]) or b"null")
    except ValueError:
        return None


def load_pub(path):
    from cryptography.hazmat.primitives import serialization
    with open(path, "rb") as f:
        return serialization.load_pem_public_key(f.read())


def rsa_sha256_verifies(pub, message, sig_b64):
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    try:
        sig = base64.b64decode(sig_b64, validate=True)
    except (ValueError, TypeError) as e:
        return False, f"signature is not base64: {e}"
    try:
        pub.verify(sig, message, padding.PKCS1v15(), hashes.SHA256())
        return True, "verifies"
    except InvalidSignature:
        return False, "does NOT verify"


WECHAT_AUTH_RE = re.compile(r'^(\S+)\s+(.*)$', re.S)


def parse_wechat_auth(value):
    m = WECHAT_AUTH_RE.match(value or "")
    if not m:
        return None, []
    fields = []
    for part in re.findall(r'([A-Za-z_]+)="([^"]*)"', m.group(2)):
        fields.append(part)
    return m.group(1), fields


def origin_target(entry):
    return entry["path"] + ("?" + entry["query"] if entry["query"] else "")


# ---- the table ----------------------------------------------------------------------------------


class Table:
    def __init__(self):
        self.rows = []  # (request, field, sdk, payretry, verdict)
        self.failures = 0

    def add(self, request, field, sdk, pr, verdict):
        if verdict.startswith("DIFF") or verdict.startswith("FAIL"):
            self.failures += 1
        self.rows.append((request, field, fmt(sdk), fmt(pr), verdict))

    def same_or_diff(self, request, field, sdk, pr, same_note="same", diff_note="DIFF"):
        self.add(request, field, sdk, pr, same_note if sdk == pr else diff_note)

    def render(self):
        heads = ("request", "field", "SDK", "payretry", "result")
        widths = [max(len(h), *(len(r[i]) for r in self.rows)) if self.rows else len(h) for i, h in enumerate(heads)]
        widths = [min(w, cap) for w, cap in zip(widths, (10, 44, 40, 40, 200))]
        lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths)).rstrip()]
        lines.append("  ".join("-" * w for w in widths))
        for r in self.rows:
            cells = [clip(c, w) for c, w in zip(r[:4], widths[:4])] + [r[4]]
            lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
        return "\n".join(lines)


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def clip(s, w):
    return s if len(s) <= w else s[: w - 1] + "…"


# ---- comparing ----------------------------------------------------------------------------------


def split_tokens(entries):
    """(token requests, every other request), each in send order."""
    tokens = [e for e in entries if e["method"] == "POST" and e["path"].endswith(TOKEN_PATH)]
    return tokens, [e for e in entries if e not in tokens]


def default_requests(profile):
    """Without the runner's list: one create (the fixed payment) and, where the
    provider has one, one lookup."""
    key = cases.ORDER_ID if cases.IDENTITY[profile][0] == "reference" else cases.IDEMPOTENCY_KEY
    out = [{"label": "create", "kind": "create", "payment": "A", "key": key}]
    if cases.HAS_LOOKUP[profile]:
        out.append({"label": "lookup", "kind": "lookup", "payment": "A"})
    return out


# Ids a later request names (in its path or body), by where an earlier answer
# carries them: the payment's id from its create's answer; PayPal's
# authorization (which its capture names) and capture (which its refund names).
LATER_IDS = {
    "create": lambda profile: [(ANSWER_ID[profile], "")] + (
        [(["purchase_units", 0, "payments", "authorizations", 0, "id"], ".authorization")]
        if profile == "paypal" else []),
    "capture": lambda profile: [(["id"], ".capture")] if profile == "paypal" else [],
}


def placeholders(profile, calls, requests):
    """{id: "{A}", ...} for one side: each id an answer gave, named by the
    payment and role, so that the two sides' paths and bodies compare alike."""
    out = {}
    for e, r in zip(calls, requests):
        for path, suffix in LATER_IDS.get(r["kind"], lambda _: [])(profile):
            v = dig(answer_json(e), path)
            if isinstance(v, str) and v:
                out[v] = "{" + r["payment"] + suffix + "}"
    return out


def with_placeholders(text, ids):
    for v, name in sorted(ids.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(urllib.parse.quote(v, safe=""), name).replace(v, name)
    return text


def auth_of(entry):
    """(scheme: the Authorization scheme word or which API-key header, credential or None)."""
    h = header(entry, "Authorization")
    if h:
        scheme, _, cred = h[1].partition(" ")
        return f"Authorization: {scheme}", cred
    h = header(entry, "X-API-Key")  # Adyen's; names are case-insensitive
    if h:
        return "API-key header X-API-Key", h[1]
    return "none", None


def compare_request(t, label, sdk, pr, profile, ctx, req=None):
    """One pair of requests (either may be None: not sent). req: the runner's
    description of it (kind, payment, the key it must carry); None for a token."""
    if sdk is None or pr is None:
        t.add(label, "sent", "yes" if sdk else "NO", "yes" if pr else "NO",
              "DIFF: only one side sent this request" if (sdk or pr) else "neither sent it")
        return
    handled = {"authorization", "content-type"}
    t.same_or_diff(label, "method", sdk["method"], pr["method"])
    sids, pids = ctx["ids"].get("sdk", {}), ctx["ids"].get("payretry", {})
    # Ids an earlier answer gave, as placeholders ({A}: payment A's id).
    sp, pp = with_placeholders(sdk["path"], sids), with_placeholders(pr["path"], pids)
    t.same_or_diff(label, "path", sp, pp)
    if sdk.get("absolute_form") != pr.get("absolute_form"):
        t.add(label, "request-target form", "absolute" if sdk.get("absolute_form") else "origin",
              "absolute" if pr.get("absolute_form") else "origin",
              "ignored: servers must accept both (RFC 9112 3.2.2)")

    # Query parameters.
    sq = urllib.parse.parse_qsl(sdk["query"], keep_blank_values=True)
    pq = urllib.parse.parse_qsl(pr["query"], keep_blank_values=True)
    if sq or pq:
        t.same_or_diff(label, "query parameter names", sorted(k for k, _ in sq), sorted(k for k, _ in pq))
        sd, pd = dict(sq), dict(pq)
        volatile = VOLATILE_QUERY.get(profile, {})
        for k in sorted(set(sd) | set(pd)):
            if k in volatile and k in sd and k in pd:
                why, shape = volatile[k]
                ok = re.match(shape, sd[k]) and re.match(shape, pd[k])
                t.add(label, f"query {k}", sd[k], pd[k],
                      f"ignored: {why}" if ok else f"DIFF: the value is not of the form {shape}")
            elif k in sd and k in pd:
                t.same_or_diff(label, f"query {k}", with_placeholders(sd[k], sids), with_placeholders(pd[k], pids))
            else:
                t.add(label, f"query {k}", sd.get(k), pd.get(k), "DIFF: only one side sends it")

    # Body and its content type.
    skind, sbody = decode_body(sdk, profile)
    pkind, pbody = decode_body(pr, profile)
    sct = (header(sdk, "Content-Type") or (None, None))[1]
    pct = (header(pr, "Content-Type") or (None, None))[1]
    if skind == "empty" and pkind == "empty":
        if norm_content_type(sct) == norm_content_type(pct):
            if sct:
                t.add(label, "content type", sct, pct, "same")
        elif pr["method"] == "GET" and sdk["method"] == "GET":
            t.add(label, "content type", sct, pct, "ignored: a GET with no body, so it describes nothing")
        else:
            # A POST's type is read by the provider even with no body (PayPal's
            # void once went out with libcurl's form default, unseen here).
            t.add(label, "content type", sct, pct, "DIFF")
        t.add(label, "body", "(none)", "(none)", "same")
    else:
        if norm_content_type(sct) == norm_content_type(pct):
            t.add(label, "content type", sct, pct, "same")
        elif media_type(sct) == media_type(pct) and media_type(sct) == "application/json":
            t.add(label, "content type", sct, pct, "same media type; charset is UTF-8 either way (RFC 8259)")
        else:
            t.add(label, "content type", sct, pct, "DIFF")
        t.same_or_diff(label, "body encoding", skind, pkind)
        if skind == pkind and skind in ("json", "form"):
            sf, pf = flatten(sbody), flatten(pbody)
            # A leaf that is an id an earlier answer gave (a refund's payment_intent) as its placeholder.
            sf = {k: sids.get(v, v) if isinstance(v, str) else v for k, v in sf.items()}
            pf = {k: pids.get(v, v) if isinstance(v, str) else v for k, v in pf.items()}
            for k in sorted(set(sf) | set(pf), key=lambda x: (x.lower(), x)):
                if k in sf and k in pf:
                    t.same_or_diff(label, f"body {k}", sf[k], pf[k])
                elif k in sf:
                    dflt = SDK_DEFAULT_BODY.get(profile, {}).get(k)
                    if dflt is not None and sf[k] == dflt[0]:
                        t.add(label, f"body {k}", sf[k], None, f"allowed: {dflt[1]}")
                    else:
                        t.add(label, f"body {k}", sf[k], None, "DIFF: payretry does not send it")
                else:
                    t.add(label, f"body {k}", None, pf[k], "DIFF: the SDK does not send it")
        else:
            t.same_or_diff(label, "body", sbody, pbody)

    # Authentication.
    sscheme, scred = auth_of(sdk)
    pscheme, pcred = auth_of(pr)
    handled.add("x-api-key")
    t.same_or_diff(label, "auth scheme", sscheme, pscheme)
    if sscheme == pscheme:
        if sscheme == "Authorization: WECHATPAY2-SHA256-RSA2048":
            compare_wechat_auth(t, label, sdk, pr, ctx)
        elif profile == "paypal" and label != "token" and sscheme == "Authorization: Bearer":
            # The token in use: the access_token of the last token answer before this request.
            got = []
            for side, e, cred in (("sdk", sdk, scred), ("payretry", pr, pcred)):
                prior = [tk for tk in ctx["token_entries"][side] if tk["seq"] < e["seq"]]
                tok = dig(answer_json(prior[-1]), ["access_token"]) if prior else None
                got.append(tok is not None and cred == tok)
            t.add(label, "Bearer = the token answer's access_token", "yes" if got[0] else "NO",
                  "yes" if got[1] else "NO",
                  "same (the token values themselves differ per fetch: ignored)" if all(got) else "DIFF")
        elif profile == "paypal" and label == "token":
            dec = lambda c: base64.b64decode(c or "").decode(errors="replace") if c else None  # noqa: E731
            t.same_or_diff(label, "Basic credentials (decoded)", dec(scred), dec(pcred))
            want = f"{cases.PAYPAL_CLIENT_ID}:{cases.PAYPAL_CLIENT_SECRET}"
            if dec(scred) != want or dec(pcred) != want:
                t.add(label, "Basic = client_id:client_secret", dec(scred), dec(pcred), f"DIFF: want {want}")
        elif sscheme != "none":
            t.same_or_diff(label, "auth credential", scred, pcred)

    # Where the idempotency key (or merchant reference) travels: a create's, or an operation's own.
    ident = None
    if req is not None and req["kind"] not in ("lookup",):
        ident = cases.IDENTITY[profile] if req["kind"] == "create" else cases.op_identity(profile, req["kind"])
        compare_identity(t, label, sdk, pr, sbody, pbody, profile, ident, req["key"])

    # Signatures, checked independently of both clients.
    if profile == "wechatpay_v3":
        verify_wechat(t, label, sdk, pr, ctx)
        handled.add("authorization")
    if profile == "alipay":
        verify_alipay(t, label, sdk, pr, ctx)

    # Every other header (a key header on a lookup too: the SDKs send none there).
    if ident and ident[0] == "header":
        handled.add(ident[1].lower())
    compare_headers(t, label, sdk, pr, profile, handled)


def compare_identity(t, label, sdk, pr, sbody, pbody, profile, ident, want):
    """ident: (header, name) | (body, path) | (reference, path); want: the value both must carry."""
    kind, where = ident
    if kind == "header":
        sh, ph = header(sdk, where), header(pr, where)
        t.add(label, "idempotency key travels in",
              f"header {sh[0]}" if sh else "(no such header)", f"header {ph[0]}" if ph else "(no such header)",
              "same (header names are case-insensitive)" if sh and ph else "DIFF")
        sv, pv = sh[1] if sh else None, ph[1] if ph else None
    else:
        # Alipay's biz_content travels as JSON text in a form field (flatten writes it {json}).
        key = where.replace("biz_content.", "biz_content{json}.") if profile == "alipay" else where
        sv = flatten(sbody).get(key) if isinstance(sbody, (dict, list)) else None
        pv = flatten(pbody).get(key) if isinstance(pbody, (dict, list)) else None
        what = "idempotency key travels in" if kind == "body" else "identity (merchant reference) travels in"
        t.add(label, what, f"body {where}" if sv is not None else "(absent)",
              f"body {where}" if pv is not None else "(absent)",
              "same" if sv is not None and pv is not None else "DIFF")
    t.add(label, "key / reference value", sv, pv,
          "same, the one given to both" if sv == pv == want else f"DIFF: want {want}")


def compare_headers(t, label, sdk, pr, profile, handled):
    names = []
    for k, _ in sdk["headers"] + pr["headers"]:
        if k.lower() not in names:
            names.append(k.lower())
    optional = OPTIONAL_SDK_HEADERS.get(profile, {})
    for n in sorted(names):
        if n in handled:
            continue
        sh, ph = header(sdk, n), header(pr, n)
        sv, pv = (sh[1] if sh else None), (ph[1] if ph else None)
        shown = (sh or ph)[0]
        if n in IGNORED_HEADERS:
            t.add(label, f"header {shown}", sv, pv, f"ignored: {IGNORED_HEADERS[n]}")
        elif n == "accept":
            sm = media_type(sv) if sv else None
            pm = media_type(pv) if pv else None
            if sm in (None, "*/*"):
                t.add(label, f"header {shown}", sv, pv, "same" if sv == pv else
                      "ignored: the SDK accepts anything; payretry asks for JSON, which the provider answers")
            elif sm == pm:
                t.add(label, f"header {shown}", sv, pv, "same")
            else:
                t.add(label, f"header {shown}", sv, pv, "DIFF: the SDK asks for this media type")
        elif sh and ph:
            t.same_or_diff(label, f"header {shown}", sv, pv)
        elif sh:
            if n in optional:
                t.add(label, f"header {shown}", sv, pv, f"allowed: {optional[n]}")
            else:
                t.add(label, f"header {shown}", sv, pv, "DIFF: payretry does not send it")
        else:
            if n in PAYRETRY_EXTRA_OK:
                t.add(label, f"header {shown}", sv, pv, f"allowed: {PAYRETRY_EXTRA_OK[n]}")
            else:
                t.add(label, f"header {shown}", sv, pv, "DIFF: the SDK does not send it")


def compare_wechat_auth(t, label, sdk, pr, ctx):
    _, sf = parse_wechat_auth(header(sdk, "Authorization")[1])
    _, pf = parse_wechat_auth(header(pr, "Authorization")[1])
    t.same_or_diff(label, "Authorization field order", ",".join(k for k, _ in sf), ",".join(k for k, _ in pf))
    sd, pd = dict(sf), dict(pf)
    for k in ("mchid", "serial_no"):
        t.same_or_diff(label, f"Authorization {k}", sd.get(k), pd.get(k))
    shapes = {"nonce_str": (r"^[0-9A-Za-z]{1,32}$", "random per request"),
              "timestamp": (r"^\d{10}$", "the send time (Unix seconds)"),
              "signature": (r"^[A-Za-z0-9+/]+=*$", "signature bytes: nonce and timestamp are signed; verified below")}
    for k, (shape, why) in shapes.items():
        sv, pv = sd.get(k), pd.get(k)
        ok = bool(sv and pv and re.match(shape, sv) and re.match(shape, pv))
        t.add(label, f"Authorization {k}", sv, pv, f"ignored: {why}" if ok else f"DIFF: want {shape} on both")


def verify_wechat(t, label, sdk, pr, ctx):
    pub = load_pub(os.path.join(ctx["keys"], "wechat_merchant_pub.pem"))
    res = []
    for e in (sdk, pr):
        h = header(e, "Authorization")
        scheme, fields = parse_wechat_auth(h[1] if h else "")
        d = dict(fields)
        if scheme != "WECHATPAY2-SHA256-RSA2048" or not all(k in d for k in ("timestamp", "nonce_str", "signature")):
            res.append((False, "no WECHATPAY2-SHA256-RSA2048 Authorization"))
            continue
        msg = (f"{e['method']}\n{origin_target(e)}\n{d['timestamp']}\n{d['nonce_str']}\n".encode()
               + body_bytes(e) + b"\n")
        res.append(rsa_sha256_verifies(pub, msg, d["signature"]))
    t.add(label, "signature (wechat_merchant_pub.pem)", res[0][1], res[1][1],
          "same: both verify" if res[0][0] and res[1][0] else "FAIL: a signature does not verify")


def verify_alipay(t, label, sdk, pr, ctx):
    pub = load_pub(os.path.join(ctx["keys"], "alipay_app_pub.pem"))
    res = []
    for e in (sdk, pr):
        params = urllib.parse.parse_qsl(e["query"], keep_blank_values=True)
        ct = media_type((header(e, "Content-Type") or (None, ""))[1])
        raw = body_bytes(e)
        if raw and ct == "application/x-www-form-urlencoded":
            params += urllib.parse.parse_qsl(raw.decode("utf-8"), keep_blank_values=True)
        d = {}
        dup = [k for k, _ in params if sum(1 for kk, _ in params if kk == k) > 1]
        for k, v in params:
            d[k] = v
        if "sign" not in d:
            res.append((False, "no sign parameter"))
            continue
        content = "&".join(f"{k}={d[k]}" for k in sorted(d) if k != "sign" and d[k] != "")
        ok, why = rsa_sha256_verifies(pub, content.encode("utf-8"), d["sign"])
        if dup:
            ok, why = False, f"parameter(s) {sorted(set(dup))} given twice (query and body?)"
        res.append((ok, why))
    t.add(label, "sign (alipay_app_pub.pem)", res[0][1], res[1][1],
          "same: both verify" if res[0][0] and res[1][0] else "FAIL: a sign does not verify")


def compare(profile, sdk_entries, pr_entries, keys, payretry_processes=2, requests=None):
    """payretry_processes: how many payretry commands sent requests (each has its own token cache).
    requests: the runner's list of the requests both sides sent, in order ({label, kind, payment,
    key}); the default is one create and one lookup."""
    requests = requests or default_requests(profile)
    t = Table()
    stoks, scalls = split_tokens(sdk_entries)
    ptoks, pcalls = split_tokens(pr_entries)
    ctx = {"keys": keys, "ids": {"sdk": placeholders(profile, scalls, requests),
                                 "payretry": placeholders(profile, pcalls, requests)},
           "payretry_processes": payretry_processes,
           "token_entries": {"sdk": stoks, "payretry": ptoks}}
    if profile == "paypal" or stoks or ptoks:
        def first_before_calls(toks, calls):
            if not toks:
                return "no token request"
            if calls and toks[0]["seq"] > calls[0]["seq"]:
                return "token fetched AFTER the create"
            return f"POST {TOKEN_PATH} first (answered {toks[0]['response']['status']})"
        a, b = first_before_calls(stoks, scalls), first_before_calls(ptoks, pcalls)
        t.add("token", "OAuth2 token fetched first", a, b,
              "same" if a == b and a.startswith("POST") else "DIFF")
        compare_request(t, "token", stoks[0] if stoks else None, ptoks[0] if ptoks else None, profile, ctx)
        for side, toks, calls, runs in (("SDK", stoks, scalls, 1), ("payretry", ptoks, pcalls, payretry_processes)):
            # A token is fetched once per process and reused while valid: never twice in a row.
            seq = [("token" if e in toks else "call") for e in sorted(toks + calls, key=lambda e: e["seq"])]
            twice = any(x == y == "token" for x, y in zip(seq, seq[1:]))
            if twice or len(toks) > runs:
                t.add("token", f"{side}: token requests", " ".join(seq), f"{runs} process(es)",
                      "DIFF: a token is fetched once per process and reused while valid")
        if len(stoks) != len(ptoks):
            t.add("token", "token requests", len(stoks), len(ptoks),
                  f"ignored: payretry ran as {payretry_processes} processes (one per command), each fetching its "
                  "token once; the SDK made every call in one")
    for i, r in enumerate(requests):
        s = scalls[i] if i < len(scalls) else None
        p = pcalls[i] if i < len(pcalls) else None
        compare_request(t, r["label"], s, p, profile, ctx, r)
        if r["kind"] == "create" and s is not None and p is not None:
            si, pi = dig(answer_json(s), ANSWER_ID[profile]), dig(answer_json(p), ANSWER_ID[profile])
            t.add(r["label"], f"answer's payment id ({'.'.join(ANSWER_ID[profile])})", si, pi,
                  "not in either answer" if si is None and pi is None else
                  "same (each side's own simulator answered the same)" if si == pi else
                  "ignored: the simulator numbers payments; later requests compare it as {" + r["payment"] + "}")
    extra_s, extra_p = scalls[len(requests):], pcalls[len(requests):]
    if extra_s or extra_p:
        t.add("other", "requests after the plan's", [e["method"] + " " + e["target"] for e in extra_s],
              [e["method"] + " " + e["target"] for e in extra_p],
              f"DIFF: {len(requests)} request(s) expected: " + ", ".join(r["label"] for r in requests))
    return t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True, choices=cases.PROFILES)
    ap.add_argument("--sdk", required=True)
    ap.add_argument("--payretry", required=True)
    ap.add_argument("--keys", default=cases.KEYS_DIR_DEFAULT)
    ap.add_argument("--payretry-processes", type=int, default=2,
                    help="payretry commands that sent requests (submit, query): each fetches its own token")
    ap.add_argument("--requests", help="the runner's requests.json (the plan's requests and payretry's "
                                       "process count); default: one create and one lookup")
    a = ap.parse_args(argv)
    requests, processes = None, a.payretry_processes
    if a.requests:
        with open(a.requests) as f:
            doc = json.load(f)
        requests, processes = doc["requests"], doc["payretry_processes"]
    t = compare(a.profile, read_jsonl(a.sdk), read_jsonl(a.payretry), a.keys, processes, requests)
    print(t.render())
    print()
    if t.failures:
        print(f"{a.profile}: {t.failures} difference(s) between the SDK and payretry (rows marked DIFF/FAIL)")
        return 1
    print(f"{a.profile}: payretry sends what the SDK sends (ignored/allowed rows say why they may differ)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
