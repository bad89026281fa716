#!/usr/bin/env python3
"""One SDK conformance case: the provider's official SDK and payretry each send
the same payment (one create, one lookup) through a recorder to a payretry-sim
playing that provider; compare.py then compares the two recordings.

    runner.py --profile NAME --payretry BIN --sim BIN [--keys DIR] [--work DIR]

Runs in the venv that holds the SDKs (run_sdk_conformance.sh makes it).
Steps:
 1. payretry-sim --port 0 --profile NAME (--keys DIR for WeChat Pay and Alipay:
    it checks the requests' signatures and signs its answers);
 2. the SDK client (clients/NAME_client.py) through recorder A -> sdk.jsonl;
    it asserts on what its SDK parsed from the simulator's answers;
 3. a second, fresh payretry-sim for payretry (same state, same answers);
 4. through recorder B -> payretry.jsonl: `payretry submit ORDER --config CFG
    --body JSON --key KEY --json`, then `payretry query ORDER --config CFG --json`.
    `query` answers a settled payment from the ledger without HTTP, so before
    it the row is set UNKNOWN in the test's own SQLite ledger (its provider id
    kept): payretry then asks the provider, through the profile's lookup;
 5. compare.py: the field-by-field table.
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


def run_sdk(profile, sim_url, keys, work):
    rec = Recorder(sim_url, os.path.join(work, "sdk.jsonl"))
    base = rec.start()
    out = os.path.join(work, "sdk_result.json")
    argv = [sys.executable, os.path.join(HERE, "clients", f"{profile}_client.py"), "--base", base,
            "--keys", keys, "--out", out]
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


def run_payretry(profile, binary, sim_url, keys, work):
    """(problems, submit doc, query doc)"""
    problems = []
    rec = Recorder(sim_url, os.path.join(work, "payretry.jsonl"))
    base = rec.start()
    ledger = os.path.join(work, "ledger.db")
    cfg = {"provider": profile, "base_url": base, "ledger": f"sqlite://{ledger}",
           "retry": {"deadline_ms": 15000, "max_attempts": 3}}
    cfg.update(cases.payretry_auth(profile, keys))
    cfg_path = os.path.join(work, "payretry.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=2)
    body = json.dumps(cases.payretry_body(profile), separators=(",", ":"), ensure_ascii=False)
    sub_doc = q_doc = None
    # WeChat Pay and Alipay have no key: the merchant reference (out_trade_no, the order id) is the identity.
    key = cases.ORDER_ID if cases.IDENTITY[profile][0] == "reference" else cases.IDEMPOTENCY_KEY
    try:
        rc, sub_doc = payretry_cli(binary, ["submit", cases.ORDER_ID, "--config", cfg_path, "--body", body,
                                            "--key", key, "--json"])
        outcome = (sub_doc or {}).get("outcome")
        log(f"  submit: exit {rc}, outcome {outcome}, provider id {(sub_doc or {}).get('provider_payment_id')!r}")
        if rc != 0 or outcome != "SUCCEEDED":
            problems.append(f"payretry submit: exit {rc}, outcome {outcome}: {(sub_doc or {}).get('error')}")
        if cases.HAS_LOOKUP[profile] and sub_doc is not None:
            with sqlite3.connect(ledger) as db:
                n = db.execute("UPDATE payments SET state='UNKNOWN' WHERE order_id=?", (cases.ORDER_ID,)).rowcount
            if n != 1:
                problems.append(f"ledger: no row for {cases.ORDER_ID} to mark UNKNOWN")
            rc, q_doc = payretry_cli(binary, ["query", cases.ORDER_ID, "--config", cfg_path, "--json"])
            qo = (q_doc or {}).get("outcome")
            log(f"  query: exit {rc}, outcome {qo}, queried {(q_doc or {}).get('queried')}, "
                f"provider id {(q_doc or {}).get('provider_payment_id')!r}")
            if rc != 0 or qo != "SUCCEEDED" or not (q_doc or {}).get("queried"):
                problems.append(f"payretry query: exit {rc}, outcome {qo}, queried {(q_doc or {}).get('queried')}: "
                                f"{(q_doc or {}).get('error')}")
    finally:
        rec.stop()
    return problems, sub_doc, q_doc


def self_check(profile, sdk_entries, pr_entries, keys):
    """The comparison must be able to fail: plant a difference in a copy of
    payretry's create (its key or merchant reference, wherever it travels,
    written backwards) and expect compare.py to flag it."""
    creates = [e for e in pr_entries if not e["path"].endswith(compare.TOKEN_PATH)]
    if not sdk_entries or not creates:
        return None
    want = cases.ORDER_ID if cases.IDENTITY[profile][0] == "reference" else cases.IDEMPOTENCY_KEY
    copy = json.loads(json.dumps(pr_entries))
    e = next(x for x in copy if x["seq"] == creates[0]["seq"])
    swap = lambda b: b.replace(want.encode(), want[::-1].encode())  # noqa: E731
    e["headers"] = [[k, v.replace(want, want[::-1])] for k, v in e["headers"]]
    e["body_b64"] = base64.b64encode(swap(base64.b64decode(e["body_b64"]))).decode()
    runs = 2 if cases.HAS_LOOKUP[profile] else 1
    rows = {(r[0], r[1]): r[4] for r in compare.compare(profile, sdk_entries, copy, keys, runs).rows}
    caught = rows.get(("create", "key / reference value"), "").startswith("DIFF")
    if not caught:
        return "self-check: a planted key/reference difference was NOT caught by compare.py"
    log("self-check: compare.py flags a planted difference in the key/reference value (as it should)")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True, choices=cases.PROFILES)
    ap.add_argument("--payretry", required=True, help="the payretry CLI")
    ap.add_argument("--sim", required=True, help="payretry-sim")
    ap.add_argument("--keys", default=cases.KEYS_DIR_DEFAULT)
    ap.add_argument("--work", help="keep the recordings here (default: a temporary directory, removed)")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix=f"sdkconf-{a.profile}-")
    os.makedirs(work, exist_ok=True)
    for f in os.listdir(work):  # a kept --work dir from an earlier run: start afresh
        if f in ("sdk.jsonl", "payretry.jsonl", "sdk_result.json", "payretry.json") or f.startswith("ledger.db") \
                or f.startswith("sim_"):
            os.remove(os.path.join(work, f))
    keys = os.path.abspath(a.keys)
    problems = []
    # One simulator per side, both fresh: each client meets the same provider
    # state and gets the same answers (the same payment ids too).
    sims = []
    try:
        log(f"== {a.profile}: the official SDK")
        sim, sim_url = start_sim(a.sim, a.profile, keys, work, "sim_sdk.log")
        sims.append(sim)
        ok, sdk_result = run_sdk(a.profile, sim_url, keys, work)
        if not ok:
            problems.append(f"SDK client: {sdk_result.get('error')}")
        log(f"  SDK parsed: create {sdk_result.get('create')}, lookup {sdk_result.get('lookup')}")
        log(f"== {a.profile}: payretry")
        sim, sim_url = start_sim(a.sim, a.profile, keys, work, "sim_payretry.log")
        sims.append(sim)
        pr_problems, sub_doc, q_doc = run_payretry(a.profile, a.payretry, sim_url, keys, work)
        problems += pr_problems
        # Both read the same answer from their own fresh simulator: what they made of it must agree.
        sdk_id = (sdk_result.get("create") or {}).get("id")
        if ok and sub_doc and sdk_id and sub_doc.get("provider_payment_id") != sdk_id:
            problems.append(f"create: payretry read provider id {sub_doc.get('provider_payment_id')!r} from the "
                            f"answer, the SDK {sdk_id!r}")
        sdk_lid = (sdk_result.get("lookup") or {}).get("id")
        if ok and q_doc and sdk_lid and q_doc.get("provider_payment_id") != sdk_lid:
            problems.append(f"lookup: payretry read provider id {q_doc.get('provider_payment_id')!r}, "
                            f"the SDK {sdk_lid!r}")
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
    table = compare.compare(a.profile, sdk_entries, pr_entries, keys,
                            payretry_processes=2 if cases.HAS_LOOKUP[a.profile] else 1)
    log(table.render())
    if table.failures:
        problems.append(f"{table.failures} field(s) differ (rows marked DIFF/FAIL above)")
    planted = self_check(a.profile, sdk_entries, pr_entries, keys)
    if planted:
        problems.append(planted)
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
