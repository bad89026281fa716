#!/usr/bin/env python3
"""Compares what a provider's official SDK sent with what payretry sent for the
same payment, request by request and field by field, from the two recorder
JSONL files, and prints a table. Exit 0 when everything matches (or differs
only where the difference is listed below as legitimate), 1 otherwise.

    compare.py --profile stripe --sdk sdk.jsonl --payretry payretry.jsonl [--keys tests/keys]

Requests are paired by role: PayPal's token request (POST /v1/oauth2/token),
then the create (the first other request), then the lookup (the second).
A provider id from the create's answer is written {id} in both lookup paths.
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
        if not isinstance(cur, dict) or p not in cur:
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
        widths = [min(w, cap) for w, cap in zip(widths, (8, 44, 40, 40, 200))]
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


def roles(entries):
    """{"token": [...], "create": e|None, "lookup": e|None, "extra": [...]} in send order."""
    out = {"token": [], "create": None, "lookup": None, "extra": []}
    rest = []
    for e in entries:
        if e["method"] == "POST" and e["path"].endswith(TOKEN_PATH):
            out["token"].append(e)
        else:
            rest.append(e)
    if rest:
        out["create"] = rest[0]
    if len(rest) > 1:
        out["lookup"] = rest[1]
    out["extra"] = rest[2:]
    return out


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


def compare_request(t, label, sdk, pr, profile, ctx):
    """One pair of requests (either may be None: not sent)."""
    if sdk is None or pr is None:
        t.add(label, "sent", "yes" if sdk else "NO", "yes" if pr else "NO",
              "DIFF: only one side sent this request" if (sdk or pr) else "neither sent it")
        return
    handled = {"authorization", "content-type"}
    t.same_or_diff(label, "method", sdk["method"], pr["method"])
    ids = ctx.get("ids", {})
    sp, pp = sdk["path"], pr["path"]
    if label == "lookup":
        if ids.get("sdk"):
            sp = sp.replace(urllib.parse.quote(ids["sdk"], safe=""), "{id}").replace(ids["sdk"], "{id}")
        if ids.get("payretry"):
            pp = pp.replace(urllib.parse.quote(ids["payretry"], safe=""), "{id}").replace(ids["payretry"], "{id}")
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
                t.same_or_diff(label, f"query {k}", sd[k], pd[k])
            else:
                t.add(label, f"query {k}", sd.get(k), pd.get(k), "DIFF: only one side sends it")

    # Body and its content type.
    skind, sbody = decode_body(sdk, profile)
    pkind, pbody = decode_body(pr, profile)
    sct = (header(sdk, "Content-Type") or (None, None))[1]
    pct = (header(pr, "Content-Type") or (None, None))[1]
    if skind == "empty" and pkind == "empty":
        if sct or pct:
            t.add(label, "content type", sct, pct, "ignored: no body on either side, so it describes nothing")
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
            for k in sorted(set(sf) | set(pf), key=lambda x: (x.lower(), x)):
                if k in sf and k in pf:
                    t.same_or_diff(label, f"body {k}", sf[k], pf[k])
                elif k in sf:
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

    # Where the idempotency key (or merchant reference) travels.
    if label == "create":
        compare_identity(t, label, sdk, pr, sbody, pbody, profile)

    # Signatures, checked independently of both clients.
    if profile == "wechatpay_v3":
        verify_wechat(t, label, sdk, pr, ctx)
        handled.add("authorization")
    if profile == "alipay":
        verify_alipay(t, label, sdk, pr, ctx)

    # Every other header (a key header on a lookup too: the SDKs send none there).
    ident = cases.IDENTITY[profile]
    if ident[0] == "header" and label == "create":
        handled.add(ident[1].lower())
    compare_headers(t, label, sdk, pr, profile, handled)


def compare_identity(t, label, sdk, pr, sbody, pbody, profile):
    kind, where = cases.IDENTITY[profile]
    want = cases.IDEMPOTENCY_KEY if kind != "reference" else cases.ORDER_ID
    if kind == "header":
        sh, ph = header(sdk, where), header(pr, where)
        t.add(label, "idempotency key travels in",
              f"header {sh[0]}" if sh else "(no such header)", f"header {ph[0]}" if ph else "(no such header)",
              "same (header names are case-insensitive)" if sh and ph else "DIFF")
        sv, pv = sh[1] if sh else None, ph[1] if ph else None
    else:
        key = "biz_content{json}.out_trade_no" if profile == "alipay" else where
        sv = flatten(sbody).get(key) if isinstance(sbody, (dict, list)) else None
        pv = flatten(pbody).get(key) if isinstance(pbody, (dict, list)) else None
        what = "idempotency key travels in" if kind == "body" else "identity (merchant reference) travels in"
        t.add(label, what, f"body {where}" if sv is not None else "(absent)",
              f"body {where}" if pv is not None else "(absent)",
              "same" if sv is not None and pv is not None else "DIFF")
    t.add(label, "key / reference value", sv, pv,
          "same, the fixed one" if sv == pv == want else f"DIFF: want {want}")


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


def compare(profile, sdk_entries, pr_entries, keys, payretry_processes=2):
    """payretry_processes: how many payretry commands sent (submit, query: each has its own token cache)."""
    t = Table()
    s, p = roles(sdk_entries), roles(pr_entries)
    ctx = {"keys": keys, "ids": {}, "tokens": {}, "payretry_processes": payretry_processes}
    for side, r in (("sdk", s), ("payretry", p)):
        if r["create"] is not None:
            ctx["ids"][side] = dig(answer_json(r["create"]), ANSWER_ID[profile])
        if r["token"]:
            ctx["tokens"][side] = dig(answer_json(r["token"][-1]), ["access_token"])

    ctx["token_entries"] = {"sdk": s["token"], "payretry": p["token"]}
    if profile == "paypal" or s["token"] or p["token"]:
        def first_before_create(r):
            if not r["token"]:
                return "no token request"
            if r["create"] is not None and r["token"][0]["seq"] > r["create"]["seq"]:
                return "token fetched AFTER the create"
            st = r["token"][0]["response"]["status"]
            return f"POST {TOKEN_PATH} first (answered {st})"
        a, b = first_before_create(s), first_before_create(p)
        t.add("token", "OAuth2 token fetched first", a, b,
              "same" if a == b and a.startswith("POST") else "DIFF")
        compare_request(t, "token", s["token"][0] if s["token"] else None,
                        p["token"][0] if p["token"] else None, profile, ctx)
        for side, r, runs in (("SDK", s, 1), ("payretry", p, ctx.get("payretry_processes", 1))):
            # A token is fetched once per process and reused while valid: never twice in a row.
            seq = [("token" if e in r["token"] else "call") for e in sorted(
                r["token"] + [x for x in (r["create"], r["lookup"]) if x] + r["extra"], key=lambda e: e["seq"])]
            twice = any(a == b == "token" for a, b in zip(seq, seq[1:]))
            if twice or len(r["token"]) > runs:
                t.add("token", f"{side}: token requests", " ".join(seq), f"{runs} process(es)",
                      "DIFF: a token is fetched once per process and reused while valid")
        if len(s["token"]) != len(p["token"]):
            t.add("token", "token requests", len(s["token"]), len(p["token"]),
                  "ignored: payretry ran as two processes (submit, then query), each fetching its token once; "
                  "the SDK made both calls in one")
    compare_request(t, "create", s["create"], p["create"], profile, ctx)
    if s["create"] is not None and p["create"] is not None:
        si, pi = ctx["ids"].get("sdk"), ctx["ids"].get("payretry")
        t.add("create", f"answer's payment id ({'.'.join(ANSWER_ID[profile])})", si, pi,
              "not in either answer" if si is None and pi is None else
              "same (each side's own simulator answered the same)" if si == pi else
              "ignored: the simulator numbers payments; lookups compare it as {id}")
    if cases.HAS_LOOKUP[profile]:
        compare_request(t, "lookup", s["lookup"], p["lookup"], profile, ctx)
    if s["extra"] or p["extra"]:
        t.add("other", "requests after the lookup", [e["method"] + " " + e["target"] for e in s["extra"]],
              [e["method"] + " " + e["target"] for e in p["extra"]], "DIFF: one create and one lookup expected")
    return t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True, choices=cases.PROFILES)
    ap.add_argument("--sdk", required=True)
    ap.add_argument("--payretry", required=True)
    ap.add_argument("--keys", default=cases.KEYS_DIR_DEFAULT)
    ap.add_argument("--payretry-processes", type=int, default=2,
                    help="payretry commands that sent requests (submit, query): each fetches its own token")
    a = ap.parse_args(argv)
    t = compare(a.profile, read_jsonl(a.sdk), read_jsonl(a.payretry), a.keys, a.payretry_processes)
    print(t.render())
    print()
    if t.failures:
        print(f"{a.profile}: {t.failures} difference(s) between the SDK and payretry (rows marked DIFF/FAIL)")
        return 1
    print(f"{a.profile}: payretry sends what the SDK sends (ignored/allowed rows say why they may differ)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
