#!/usr/bin/env python3
"""One SDK conformance case: the provider's official SDK and payretry each run
the same plan (cases.PLANS: creates, lookups, and the captures, refunds and
cancels the provider has) through a recorder to a payretry-sim playing that
provider; compare.py then compares the two recordings.

    runner.py --profile NAME --payretry BIN --sim BIN [--keys DIR] [--work DIR] [--provider-json JSON]

Runs in the venv that holds the SDKs (run_sdk_conformance.sh makes it).
Steps:
 1. payretry-sim --port 0 --profile NAME (--keys DIR for WeChat Pay and Alipay:
    it checks the requests' signatures and signs its answers);
 2. through recorder B -> payretry.jsonl, the plan by payretry's CLI: `submit
    ORDER --key KEY --json`; `query ORDER --json` (query answers a settled
    payment from the ledger without HTTP, so before it the row is set UNKNOWN
    in the test's own SQLite ledger, its provider id kept: payretry then asks
    the provider, through the profile's lookup); `capture|refund|cancel ORDER
    --ref R [--amount N] [--body JSON] [--target-id ID] --json`, each
    operation's key then read from its ledger row; the operations payretry
    refuses (no key, not a POST) checked refused with nothing sent;
 3. a second, fresh payretry-sim (same state, same answers);
 4. the SDK client (clients/NAME_client.py) through recorder A -> sdk.jsonl,
    the same plan with payretry's operation keys; it asserts on what its SDK
    parsed from the simulator's answers;
 5. compare.py: the field-by-field table, and the self-check (planted
    differences must be flagged).
Exit 0 only if the SDK, payretry and the comparison all pass.
"""
import argparse
import base64
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402
import compare  # noqa: E402
from recorder import Recorder, read_jsonl  # noqa: E402

SIGNED = {"wechatpay_v3", "alipay"}


def log(msg):
    print(msg, flush=True)


def start_sim(sim, profile, keys, work, log_name):
    argv = [sim, "--port", "0", "--profile", profile] + (["--keys", keys] if profile in SIGNED else [])
    out = open(os.path.join(work, log_name), "w")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=out, text=True)
    deadline = time.time() + 10
    line = ""
    while time.time() < deadline:
        line = proc.stdout.readline()
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            log(f"$ {' '.join(argv)}  # {line.strip()}")

            def drain():  # the rest of its stdout, so that a full pipe never blocks it
                for rest in proc.stdout:
                    out.write(rest)
                    out.flush()
            threading.Thread(target=drain, daemon=True).start()
            return proc, f"http://127.0.0.1:{m.group(1)}"
        if proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit(f"FAIL: payretry-sim did not start: {line!r} (see {out.name})")


def run_sdk(profile, sim_url, keys, work, plan):
    rec = Recorder(sim_url, os.path.join(work, "sdk.jsonl"))
    base = rec.start()
    out = os.path.join(work, "sdk_result.json")
    plan_path = os.path.join(work, "sdk_plan.json")
    with open(plan_path, "w") as f:
        json.dump(plan, f, indent=2)
    argv = [sys.executable, os.path.join(HERE, "clients", f"{profile}_client.py"), "--base", base,
            "--keys", keys, "--out", out, "--plan", plan_path, "--admin", sim_url]
    log(f"$ {' '.join(argv)}")
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    finally:
        rec.stop()
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    result = json.load(open(out)) if os.path.exists(out) else {"error": "no result written"}
    for n in result.get("notes", []):
        log(f"SDK note: {n}")
    return p.returncode == 0, result


def payretry_cli(binary, argv, env=None):
    log("$ payretry " + " ".join(argv))
    p = subprocess.run([binary] + argv, capture_output=True, text=True, timeout=120, env=env)
    if p.stderr.strip():
        sys.stdout.write("".join("  stderr: " + ln + "\n" for ln in p.stderr.strip().splitlines()))
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
        if p.stdout.strip():
            log("  stdout: " + p.stdout.strip())
    return p.returncode, doc


def last_answer(rec_path):
    """The JSON answer of the last request the recorder saw (it writes each entry
    before answering), or None."""
    entries = read_jsonl(rec_path) if os.path.exists(rec_path) else []
    return compare.answer_json(entries[-1]) if entries else None


# Adyen's modifications answer "received" and are settled only by their notification
# (docs/providers.md, adyen operations): the shop's endpoint hands it to payretry. This is that
# notification, as Adyen signs it (base64 HMAC-SHA256 under the hex-decoded key, over
# pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success).
ADYEN_HMAC_KEY = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"


def adyen_notification(psp, original, merchant, order, value, currency, code):
    import hashlib
    import hmac
    signed = ":".join([psp, original, merchant, order, str(value), currency, code, "true"])
    sig = base64.b64encode(hmac.new(bytes.fromhex(ADYEN_HMAC_KEY), signed.encode(), hashlib.sha256).digest()).decode()
    item = {"additionalData": {"hmacSignature": sig}, "amount": {"currency": currency, "value": value},
            "eventCode": code, "eventDate": "2026-12-07T10:00:00+00:00", "merchantAccountCode": merchant,
            "merchantReference": order, "originalReference": original, "pspReference": psp, "success": "true"}
    body = json.dumps({"live": "false", "notificationItems": [{"NotificationRequestItem": item}]})
    return ("POST /hooks/adyen HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body.encode())}\r\n\r\n{body}")


def admin_pay(sim_url, order):
    """The customer pays `order` at the simulator (not through the recorder)."""
    import urllib.request
    req = urllib.request.Request(sim_url + "/__admin/customer", method="POST",
                                 data=json.dumps({"order_id": order, "action": "pay"}).encode())
    with urllib.request.urlopen(req, timeout=10) as r:
        doc = json.loads(r.read() or b"{}")
    if not doc.get("moved"):
        raise SystemExit(f"FAIL: /__admin/customer pay {order}: {doc}")


def step_label(step):
    """The comparison's name for the request a step sends: create, lookup,
    refund, ... for payment A; with the payment's letter for the others."""
    kind, p = step[0], step[1]
    return kind if p == "A" else f"{kind} {p}"


def run_payretry(profile, binary, sim_url, keys, work, provider=None):
    """Runs cases.PLANS[profile] through payretry's CLI. Returns (problems,
    docs by label, the plan the SDK client follows (with the keys payretry
    made for its operations), the requests in send order for compare.py,
    payretry processes that sent requests)."""
    problems = []
    rec_path = os.path.join(work, "payretry.jsonl")
    rec = Recorder(sim_url, rec_path)
    base = rec.start()
    ledger = os.path.join(work, "ledger.db")
    cfg = {"provider": provider or profile, "base_url": base, "ledger": f"sqlite://{ledger}",
           "retry": {"deadline_ms": 15000, "max_attempts": 3}}
    cfg.update(cases.payretry_auth(profile, keys))
    if profile == "adyen":
        cfg["webhook"] = {"secret": ADYEN_HMAC_KEY}
    cfg_path = os.path.join(work, "payretry.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=2)
    docs, sdk_plan, requests = {}, [], []
    processes = 0
    targets = {}  # PayPal: the authorization and capture ids a capture, a void and a refund name
    try:
        for step in cases.PLANS[profile]:
            kind, p = step[0], step[1]
            order = cases.ORDERS[p]
            label = step_label(step)
            if kind == "create":
                # WeChat Pay and Alipay have no key: the merchant reference (out_trade_no, the order id) is the identity.
                key = order if cases.IDENTITY[profile][0] == "reference" else cases.CREATE_KEYS[p]
                body = json.dumps(cases.payretry_body(profile, order, step[2]), separators=(",", ":"),
                                  ensure_ascii=False)
                rc, doc = payretry_cli(binary, ["submit", order, "--config", cfg_path, "--body", body,
                                                "--key", key, "--json"])
                processes += 1
                outcome = (doc or {}).get("outcome")
                log(f"  submit {order}: exit {rc}, outcome {outcome}, money {(doc or {}).get('money_state')}, "
                    f"provider id {(doc or {}).get('provider_payment_id')!r}")
                if rc != 0 or outcome != "SUCCEEDED":
                    problems.append(f"payretry submit {order}: exit {rc}, outcome {outcome}: {(doc or {}).get('error')}")
                if profile == "paypal":
                    auth = compare.dig(last_answer(rec_path), ["purchase_units", 0, "payments", "authorizations", 0,
                                                               "id"])
                    if auth:
                        targets[(p, "capture")] = auth
                        targets[(p, "cancel")] = auth
                docs[label] = doc
                sdk_plan.append({"do": "create", "payment": p, "order": order, "key": key, "variant": step[2]})
                requests.append({"label": label, "kind": "create", "payment": p, "key": key})
            elif kind == "lookup":
                with sqlite3.connect(ledger) as db:
                    n = db.execute("UPDATE payments SET state='UNKNOWN' WHERE order_id=?", (order,)).rowcount
                if n != 1:
                    problems.append(f"ledger: no row for {order} to mark UNKNOWN")
                rc, doc = payretry_cli(binary, ["query", order, "--config", cfg_path, "--json"])
                processes += 1
                qo = (doc or {}).get("outcome")
                log(f"  query {order}: exit {rc}, outcome {qo}, money {(doc or {}).get('money_state')}, queried "
                    f"{(doc or {}).get('queried')}, provider id {(doc or {}).get('provider_payment_id')!r}")
                if rc != 0 or qo != "SUCCEEDED" or not (doc or {}).get("queried"):
                    problems.append(f"payretry query {order}: exit {rc}, outcome {qo}, queried "
                                    f"{(doc or {}).get('queried')}: {(doc or {}).get('error')}")
                docs[label] = doc
                sdk_plan.append({"do": "lookup", "payment": p, "order": order})
                requests.append({"label": label, "kind": "lookup", "payment": p})
            elif kind == "pay":
                admin_pay(sim_url, order)
                log(f"  the customer pays {order} (POST /__admin/customer)")
                sdk_plan.append({"do": "pay", "payment": p, "order": order})
            elif kind in ("capture", "refund", "cancel"):
                ref = {"capture": "c1", "refund": "r1", "cancel": "x1"}[kind]
                argv = [kind, order, "--ref", ref, "--config", cfg_path, "--json"]
                if step[2] is not None:
                    argv += ["--amount", str(step[2])]
                extra = cases.op_body(profile, kind)
                if extra:
                    argv += ["--body", json.dumps(extra, separators=(",", ":"))]
                target = targets.get((p, kind))
                if target:
                    argv += ["--target-id", target]
                rc, doc = payretry_cli(binary, argv)
                processes += 1
                d = doc or {}
                log(f"  {kind} {order}: exit {rc}, outcome {d.get('outcome')}, http {d.get('http_status')}, money "
                    f"{d.get('money_state')}, provider status {d.get('provider_status')!r}")
                # The provider took it: SUCCEEDED, or UNKNOWN where its answer says the money is still
                # on its way (a refund pending or processing: the operation's PENDING words).
                if d.get("outcome") not in ("SUCCEEDED", "UNKNOWN") or not 200 <= (d.get("http_status") or 0) < 300:
                    problems.append(f"payretry {kind} {order}: exit {rc}, outcome {d.get('outcome')}, http "
                                    f"{d.get('http_status')}: {d.get('error')}")
                row = f"{order} {kind} {ref}"
                with sqlite3.connect(ledger) as db:
                    got = db.execute("SELECT idempotency_key FROM payments WHERE order_id=?", (row,)).fetchone()
                if not got:
                    problems.append(f"ledger: no row {row!r} for payretry's {kind}")
                    continue
                if profile == "adyen" and d.get("outcome") == "UNKNOWN":
                    # "received": settled by the modification's own notification, delivered as the
                    # shop's endpoint would (payretry webhook apply), before the next step needs it.
                    psp = compare.dig(last_answer(rec_path), ["pspReference"])
                    with sqlite3.connect(ledger) as db:
                        original = db.execute("SELECT provider_payment_id FROM payments WHERE order_id=?",
                                              (order,)).fetchone()[0]
                    code = {"capture": "CAPTURE", "refund": "REFUND", "cancel": "CANCELLATION"}[kind]
                    value = step[2] if step[2] is not None else 0
                    hook = os.path.join(work, f"adyen-{kind}-{p}.http")
                    with open(hook, "w", newline="") as f:
                        f.write(adyen_notification(psp, original, (extra or {}).get("merchantAccount", ""), order,
                                                   value, ((extra or {}).get("amount") or {}).get("currency", "EUR"),
                                                   code))
                    hrc, hdoc = payretry_cli(binary, ["webhook", "apply", "--config", cfg_path, "--request", hook,
                                                      "--json"])
                    with sqlite3.connect(ledger) as db:
                        state = db.execute("SELECT state FROM payments WHERE order_id=?", (row,)).fetchone()[0]
                    log(f"  {code} notification of {row}: exit {hrc}, row now {state}")
                    if hrc != 0 or state != "SUCCEEDED":
                        problems.append(f"adyen {code} notification for {row}: exit {hrc}, row {state}: {hdoc}")
                if profile == "paypal" and kind == "capture":
                    cap = compare.dig(last_answer(rec_path), ["id"])
                    if cap:
                        targets[(p, "refund")] = cap
                docs[label] = doc
                # The operation's key is payretry's own (made before the first byte, kept in its row):
                # the SDK is given the same one, as it is given the create's.
                sdk_plan.append({"do": kind, "payment": p, "order": order, "key": got[0], "amount": step[2],
                                 "body": extra})
                requests.append({"label": label, "kind": kind, "payment": p, "key": got[0]})
            elif kind == "refused":
                op = step[2]
                before = len(read_jsonl(rec_path)) if os.path.exists(rec_path) else 0
                p_ = subprocess.run([binary, op, order, "--ref", "z1", "--config", cfg_path, "--json"],
                                    capture_output=True, text=True, timeout=60)
                log(f"$ payretry {op} {order} --ref z1 --config {cfg_path} --json  # exit {p_.returncode}: "
                    f"{(p_.stderr.strip() or p_.stdout.strip())[:200]}")
                after = len(read_jsonl(rec_path)) if os.path.exists(rec_path) else 0
                with sqlite3.connect(ledger) as db:
                    row = db.execute("SELECT count(*) FROM payments WHERE order_id=?",
                                     (f"{order} {op} z1",)).fetchone()[0]
                said = (p_.stderr + p_.stdout)
                if p_.returncode == 0 or after != before or row != 0 or "this version does not send" not in said:
                    problems.append(f"payretry {op} {order}: the profile's {op} is one this version does not send; "
                                    f"want it refused with nothing sent and no row: exit {p_.returncode}, "
                                    f"{after - before} request(s) sent, {row} row(s): {said.strip()[:200]}")
                else:
                    log(f"  {op} {order}: refused before any byte, no row (as it should: not sent by this version)")
                docs[f"{op} {p} (refused)"] = {"refused": said.strip()}
    finally:
        rec.stop()
    return problems, docs, sdk_plan, requests, processes


def plant(entries, label_index, fn):
    """A copy of the recording with the request at `label_index` (among the
    non-token requests, in send order) changed by fn(entry)."""
    copy = json.loads(json.dumps(entries))
    calls = [e for e in copy if not (e["method"] == "POST" and e["path"].endswith(compare.TOKEN_PATH))]
    fn(calls[label_index])
    return copy


def swap_text(e, old, new):
    """`old` written as `new` wherever the request carries it: headers and body."""
    e["headers"] = [[k, v.replace(old, new)] for k, v in e["headers"]]
    e["body_b64"] = base64.b64encode(base64.b64decode(e["body_b64"]).replace(old.encode(), new.encode())).decode()


def rename_field(e, name):
    """The body member `name` renamed (the first place it is written: JSON,
    a form, or JSON text inside a form field)."""
    raw = base64.b64decode(e["body_b64"])
    for pat, rep in ((f'"{name}"', f'"{name}_planted"'), (f"%22{name}%22", f"%22{name}_planted%22"),
                     (f"{name}=", f"{name}_planted=")):
        if pat.encode() in raw:
            e["body_b64"] = base64.b64encode(raw.replace(pat.encode(), rep.encode(), 1)).decode()
            return True
    return False


# The body member that carries each operation's amount, as the provider names it.
AMOUNT_FIELD = {"stripe": {"capture": "amount_to_capture", "refund": "amount"},
                "adyen": {"capture": "value", "refund": "value"}, "paypal": {"capture": "value", "refund": "value"},
                "square": {"refund": "amount"}, "checkout_com": {"capture": "amount", "refund": "amount"},
                "mollie": {"capture": "value", "refund": "value"}, "wechatpay_v3": {"refund": "refund"},
                "alipay": {"refund": "refund_amount"}}


def self_check(profile, sdk_entries, pr_entries, keys, requests, processes):
    """The comparison must be able to fail: plant differences in copies of
    payretry's recording and expect compare.py to flag each: the create's key
    or merchant reference written backwards; for each operation, its key
    written backwards, and its amount's field renamed."""
    if not sdk_entries or not pr_entries:
        return ["self-check: nothing recorded to plant a difference in"]
    missed = []

    def rows_of(copy):
        return compare.compare(profile, sdk_entries, copy, keys, processes, requests).rows

    for i, r in enumerate(requests):
        if r["kind"] == "lookup":
            continue
        want = r["key"]
        copy = plant(pr_entries, i, lambda e: swap_text(e, want, want[::-1]))
        got = {(x[0], x[1]): x[4] for x in rows_of(copy)}
        if not got.get((r["label"], "key / reference value"), "").startswith("DIFF"):
            missed.append(f"self-check: a planted difference in the {r['label']}'s key was NOT caught")
        field = AMOUNT_FIELD.get(profile, {}).get(r["kind"])
        if field:
            renamed = []
            copy = plant(pr_entries, i, lambda e: renamed.append(rename_field(e, field)))
            bad = [x for x in rows_of(copy) if x[0] == r["label"] and x[1].startswith("body")
                   and (x[4].startswith("DIFF") or x[4].startswith("FAIL"))]
            if not renamed[0] or not bad:
                missed.append(f"self-check: the {r['label']}'s body field {field} renamed was NOT caught"
                              + ("" if renamed[0] else " (not found in the body)"))
    if not missed:
        n = sum(1 for r in requests if r["kind"] != "lookup")
        log(f"self-check: compare.py flags planted differences (each key of {n} request(s), each operation's "
            "amount field renamed), as it should")
    return missed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True, choices=cases.PROFILES)
    ap.add_argument("--payretry", required=True, help="the payretry CLI")
    ap.add_argument("--sim", required=True, help="payretry-sim")
    ap.add_argument("--keys", default=cases.KEYS_DIR_DEFAULT)
    ap.add_argument("--work", help="keep the recordings here (default: a temporary directory, removed)")
    ap.add_argument("--provider-json", help="payretry's side runs this inline profile instead of the built-in "
                                            "(a copy with a planted difference, to watch the comparison fail)")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix=f"sdkconf-{a.profile}-")
    os.makedirs(work, exist_ok=True)
    for f in os.listdir(work):  # a kept --work dir from an earlier run: start afresh
        if f in ("sdk.jsonl", "payretry.jsonl", "sdk_result.json", "payretry.json", "sdk_plan.json",
                 "requests.json") or f.startswith("ledger.db") \
                or f.startswith("sim_"):
            os.remove(os.path.join(work, f))
    keys = os.path.abspath(a.keys)
    problems = []
    # One simulator per side, both fresh: each client meets the same provider
    # state and gets the same answers (the same payment ids too).
    sims = []
    requests, processes = [], 0
    try:
        # payretry first: its operations' keys are its own (made before the first byte), and
        # the SDK is given the same ones. One simulator per side, both fresh: each client meets
        # the same provider state and gets the same answers (the same payment ids too).
        log(f"== {a.profile}: payretry")
        sim, sim_url = start_sim(a.sim, a.profile, keys, work, "sim_payretry.log")
        sims.append(sim)
        pr_problems, docs, sdk_plan, requests, processes = run_payretry(a.profile, a.payretry, sim_url, keys, work,
                                                                     json.loads(a.provider_json) if a.provider_json else None)
        problems += pr_problems
        log(f"== {a.profile}: the official SDK")
        sim, sim_url = start_sim(a.sim, a.profile, keys, work, "sim_sdk.log")
        sims.append(sim)
        ok, sdk_result = run_sdk(a.profile, sim_url, keys, work, sdk_plan)
        if not ok:
            problems.append(f"SDK client: {sdk_result.get('error')}")
        # Both read the same answers from their own fresh simulator: what they made of them must agree.
        for label, parsed in (sdk_result.get("steps") or {}).items():
            log(f"  SDK parsed {label}: {parsed}")
            mine = (docs.get(label) or {}).get("provider_payment_id")
            if ok and parsed.get("id") and label.split()[0] in ("create", "lookup") and mine != parsed["id"]:
                problems.append(f"{label}: payretry read provider id {mine!r} from the answer, the SDK "
                                f"{parsed['id']!r}")
    finally:
        for sim in sims:
            sim.terminate()
            try:
                sim.wait(5)
            except subprocess.TimeoutExpired:
                sim.kill()
    log(f"== {a.profile}: SDK vs payretry, request by request")
    sdk_entries = read_jsonl(os.path.join(work, "sdk.jsonl")) if os.path.exists(os.path.join(work, "sdk.jsonl")) else []
    pr_entries = read_jsonl(os.path.join(work, "payretry.jsonl")) \
        if os.path.exists(os.path.join(work, "payretry.jsonl")) else []
    with open(os.path.join(work, "requests.json"), "w") as f:
        json.dump({"requests": requests, "payretry_processes": processes}, f, indent=2)
    table = compare.compare(a.profile, sdk_entries, pr_entries, keys, processes, requests)
    log(table.render())
    if table.failures:
        problems.append(f"{table.failures} field(s) differ (rows marked DIFF/FAIL above)")
    problems += self_check(a.profile, sdk_entries, pr_entries, keys, requests, processes)
    log("")
    if problems:
        log(f"FAIL sdk_conformance_{a.profile}:")
        for p in problems:
            log(f"  - {p}")
        log(f"  recordings: {work}")
        return 1
    log(f"PASS sdk_conformance_{a.profile}: payretry sends what the official SDK sends")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
