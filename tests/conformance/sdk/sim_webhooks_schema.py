"""sim_webhooks_schema: payretry-sim's notifications (webhooks) held against the providers' published schemas.

Direction checked: what the simulator SENDS (payretry-sim -> a receiver here) against the schema the
provider publishes for what it sends. For stripe and for adyen, payretry-sim runs with --webhook-url
pointing at a receiver here (Receiver, Sim and pay() come from sim_webhooks_sdk.py); a charged and a
declined payment are made through the simulator's API, and every notification body received (the
real ones and their forged copies, which differ in the signature only) is validated with jsonschema
(Draft 2020-12):

  stripe  Stripe's OpenAPI document as stripe-mock embeds it (embedded/openapi/spec3.json of the Go
          module github.com/stripe/stripe-mock at the version run_stripe_mock.sh pins, v0.203.0: API
          version 2026-08-26.dahlia; MIT). The body must be an `event`, its data.object a
          `payment_intent` (the event schema types data.object as any object) and, where present,
          last_payment_error an `api_errors`. $refs are resolved within the spec; OpenAPI 3.0's
          `nullable: true` is read as "or null". Stripe's objects allow fields their schema does not
          name, so besides the schema every field the sim writes into these three must be one the
          schema names (nothing invented).
  adyen   Adyen's Webhooks-v1.json (github.com/Adyen/adyen-openapi, OpenAPI 3.1, MIT; see
          schemas/README.md for the commit): each body against the schema the spec's own webhook
          entry for the item's eventCode names (/AUTHORISATION: AuthorisationNotificationRequest,
          whose items and additionalData are closed: additionalProperties false). The generic
          NotificationRequest/NotificationRequestItem is not used: it names neither `operations` nor
          additionalData.hmacSignature, which Adyen's own AUTHORISATION webhooks carry. The spec
          is read from --adyen-spec (the whole Webhooks-v1.json, or the subset that
          schemas/extract_adyen_schema.py writes); without one the adyen half is skipped, saying so.

Negative controls, so that the check can fail: a copy of a received body with a required field
removed (Stripe: event.type and data.object.status; Adyen: NotificationRequestItem.pspReference) and
one with a field the schema does not name must each be refused.
"""
import argparse
import copy
import json
import os
import sys

from jsonschema import Draft202012Validator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_webhooks_sdk import Receiver, Sim, pay  # noqa: E402

REF = "#/components/schemas/"


# ---- schemas from an OpenAPI document ------------------------------------------------------------

def refs_in(node, out):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith(REF):
            out.add(r[len(REF):])
        for v in node.values():
            refs_in(v, out)
    elif isinstance(node, list):
        for v in node:
            refs_in(v, out)


def closure(schemas, roots):
    """The names of `roots` and of every component schema they reach through $ref."""
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found = set()
        refs_in(schemas[name], found)
        todo.extend(found - seen)
    return seen


def openapi30_to_jsonschema(node):
    """OpenAPI 3.0's `nullable: true` as JSON Schema's "or null"; everything else as it is (jsonschema
    ignores the x-* keywords and formats it does not know)."""
    if isinstance(node, list):
        return [openapi30_to_jsonschema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: openapi30_to_jsonschema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") is True:
        return {"anyOf": [{"type": "null"}, out]}
    return out


class Spec:
    def __init__(self, doc, roots, openapi30):
        schemas = doc["components"]["schemas"]
        names = closure(schemas, roots)
        conv = openapi30_to_jsonschema if openapi30 else (lambda n: n)
        self.schemas = {n: conv(schemas[n]) for n in names}
        self.raw = {n: schemas[n] for n in names}

    def validator(self, name):
        root = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                "components": {"schemas": self.schemas}, "$ref": REF + name}
        return Draft202012Validator(root)


def errors(validator, instance):
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}"
            for e in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))]


def unknown_fields(spec, name, instance):
    """Top-level fields of `instance` that component schema `name` does not name."""
    props = spec.raw[name].get("properties", {})
    return [k for k in instance if k not in props]


# ---- Stripe --------------------------------------------------------------------------------------

def stripe_problems(spec, body):
    doc = json.loads(body)
    out = [f"event {m}" for m in errors(spec.validator("event"), doc)]
    obj = doc.get("data", {}).get("object")
    if isinstance(obj, dict):
        out += [f"data.object (payment_intent) {m}" for m in errors(spec.validator("payment_intent"), obj)]
        out += [f"data.object has {k!r}, which payment_intent does not name"
                for k in unknown_fields(spec, "payment_intent", obj)]
        err = obj.get("last_payment_error")
        if isinstance(err, dict):
            out += [f"data.object.last_payment_error has {k!r}, which api_errors does not name"
                    for k in unknown_fields(spec, "api_errors", err)]
    out += [f"event has {k!r}, which event does not name" for k in unknown_fields(spec, "event", doc)]
    return out


def stripe_controls(spec, body):
    """Each broken copy must add a problem to those of the body it was made from; returns the ones
    that did not."""
    doc = json.loads(body)
    no_type = copy.deepcopy(doc)
    del no_type["type"]
    no_status = copy.deepcopy(doc)
    del no_status["data"]["object"]["status"]
    invented = copy.deepcopy(doc)
    invented["data"]["object"]["order_state"] = "paid"
    cases = {"event without type": no_type, "payment_intent without status": no_status,
             "payment_intent with an invented field": invented}
    base = set(stripe_problems(spec, body))
    return [name for name, c in cases.items() if not set(stripe_problems(spec, json.dumps(c).encode())) - base]


# ---- Adyen ---------------------------------------------------------------------------------------

def adyen_schema_for(doc, event_code):
    hook = doc.get("webhooks", {}).get("/" + event_code) or doc.get("webhooks", {}).get(event_code)
    if not hook:
        return None
    ref = hook["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    return ref[len(REF):]


def adyen_problems(doc, specs, body):
    req = json.loads(body)
    codes = {i.get("NotificationRequestItem", {}).get("eventCode") for i in req.get("notificationItems", [])}
    out = []
    for code in sorted(c for c in codes if c) or [None]:
        name = adyen_schema_for(doc, code) if code else None
        if not name:
            out.append(f"no webhook in the spec for eventCode {code!r}")
            continue
        if name not in specs:
            specs[name] = Spec(doc, [name], openapi30=False)
        out += [f"{name} {m}" for m in errors(specs[name].validator(name), req)]
    return out


def adyen_controls(doc, specs, body):
    req = json.loads(body)
    no_psp = copy.deepcopy(req)
    del no_psp["notificationItems"][0]["NotificationRequestItem"]["pspReference"]
    invented = copy.deepcopy(req)
    invented["notificationItems"][0]["NotificationRequestItem"]["orderState"] = "paid"
    cases = {"item without pspReference": no_psp, "item with an invented field": invented}
    base = set(adyen_problems(doc, specs, body))
    return [name for name, c in cases.items() if not set(adyen_problems(doc, specs, json.dumps(c).encode())) - base]


# ---- the run -------------------------------------------------------------------------------------

def run_profile(binary, keys, profile, problems, controls):
    rx = Receiver()
    sim = Sim(binary, keys, profile, rx.url)
    failures = []
    try:
        pay(sim, profile, "schema-paid-" + profile, keys)
        sim.decline_next("schema-declined-" + profile)
        pay(sim, profile, "schema-declined-" + profile, keys)
        want = 4  # a charged and a declined one, each with its forged copy
        got = rx.wait_for(want)
        bad = 0
        for g in got:
            found = problems(g["body"])
            if found:
                bad += 1
                print(f"FAIL {profile}: {g['body'][:200]!r}...")
                for m in found:
                    print("       " + m)
        missed = controls(got[0]["body"]) if got else []
        for name in missed:
            print(f"FAIL {profile}: negative control passed the schema: {name}")
        line = f"{profile:7} received={len(got)} valid={len(got) - bad}"
        if len(got) != want or bad or missed:
            failures.append(profile)
            print("FAIL " + line + (f" (want {want})" if len(got) != want else ""))
        else:
            print("ok   " + line + "; negative controls refused")
    finally:
        sim.close()
        rx.server.shutdown()
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", required=True)
    ap.add_argument("--keys", required=True)
    ap.add_argument("--stripe-spec", required=True, help="Stripe's spec3.json (stripe-mock's embedded copy)")
    ap.add_argument("--adyen-spec", action="append", default=[],
                    help="Adyen's Webhooks-v1.json or its extracted subset; the first that exists is used")
    a = ap.parse_args()
    keys = os.path.abspath(a.keys)

    with open(a.stripe_spec, encoding="utf-8") as f:
        stripe_doc = json.load(f)
    print(f"stripe: {a.stripe_spec} (OpenAPI {stripe_doc.get('openapi')}, API {stripe_doc['info']['version']})")
    stripe_spec = Spec(stripe_doc, ["event", "payment_intent", "api_errors"], openapi30=True)
    failures = run_profile(a.sim, keys, "stripe", lambda b: stripe_problems(stripe_spec, b),
                           lambda b: stripe_controls(stripe_spec, b))

    adyen_path = next((p for p in a.adyen_spec if p and os.path.isfile(p)), None)
    if adyen_path:
        with open(adyen_path, encoding="utf-8") as f:
            adyen_doc = json.load(f)
        print(f"adyen: {adyen_path} (OpenAPI {adyen_doc.get('openapi')}, {adyen_doc['info'].get('title')} "
              f"v{adyen_doc['info'].get('version')})")
        specs = {}
        failures += run_profile(a.sim, keys, "adyen", lambda b: adyen_problems(adyen_doc, specs, b),
                                lambda b: adyen_controls(adyen_doc, specs, b))
    else:
        print("SKIP adyen: Adyen's Webhooks-v1.json is not here (looked at: "
              + ", ".join([p for p in a.adyen_spec if p] or ["nothing given"]) + "); see schemas/README.md")

    if failures:
        print(f"FAIL: {', '.join(failures)}", file=sys.stderr)
        return 1
    print("the notifications validate against the providers' published schemas; the broken copies do not")
    return 0


if __name__ == "__main__":
    sys.exit(main())
