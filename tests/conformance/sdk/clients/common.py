"""Shared by the SDK client scripts: arguments, the plan, the result file,
assertions.

Each client script follows the runner's plan (--plan: cases.PLANS[profile]
as steps, with the keys payretry used for its operations) through the
provider's official SDK, pointed at the recorder: creates of the fixed
payments, their lookups, and captures, refunds and cancels. It asserts on what
the SDK parsed out of the simulator's answers, and writes {"create": {...},
"lookup": {...}, "steps": {label: {...}}, "notes": [...]} to --out and exits
0, or prints why and exits 1.
"""
import argparse
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cases  # noqa: E402


class Check(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Check(what)


def run(main):
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="the recorder's base URL, http://127.0.0.1:PORT")
    ap.add_argument("--keys", default=cases.KEYS_DIR_DEFAULT, help="tests/keys")
    ap.add_argument("--out", required=True, help="where the parsed results go (JSON)")
    ap.add_argument("--plan", help="the steps to take (runner.py writes it); default: one create and one lookup")
    ap.add_argument("--admin", help="the simulator's own URL, for its /__admin/customer (a customer paying)")
    a = ap.parse_args()
    if a.plan:
        with open(a.plan, encoding="utf-8") as f:
            a.plan = json.load(f)
    else:
        a.plan = [{"do": "create", "payment": "A", "order": cases.ORDER_ID, "variant": "paid",
                   "key": cases.IDEMPOTENCY_KEY}] + ([{"do": "lookup", "payment": "A", "order": cases.ORDER_ID}]
                                                     if cases.HAS_LOOKUP[os.path.basename(sys.argv[0])
                                                                         .replace("_client.py", "")] else [])
    result = {"create": None, "lookup": None, "steps": {}, "notes": []}
    try:
        main(a, result)
        status = 0
    except Check as e:
        print(f"SDK client: FAIL: {e}", file=sys.stderr)
        result["error"] = str(e)
        status = 1
    except Exception as e:  # the SDK refused or failed: its own words
        traceback.print_exc()
        print(f"SDK client: FAIL: the SDK raised {type(e).__name__}: {e}", file=sys.stderr)
        result["error"] = f"{type(e).__name__}: {e}"
        status = 1
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, default=str, ensure_ascii=False)
    return status


def label_of(step):
    return step["do"] if step["payment"] == "A" else f"{step['do']} {step['payment']}"


def admin_pay(a, order):
    """The customer pays `order` at the simulator itself (not through the recorder)."""
    import urllib.request
    req = urllib.request.Request(a.admin + "/__admin/customer", method="POST",
                                 data=json.dumps({"order_id": order, "action": "pay"}).encode())
    with urllib.request.urlopen(req, timeout=10) as r:
        doc = json.loads(r.read() or b"{}")
    expect(doc.get("moved"), f"/__admin/customer pay {order}: {doc}")


def run_plan(a, result, handlers):
    """Each step of the plan by its handler: handlers[do](step, state) returns
    what the SDK parsed ({"id": ..., "status": ...}); state keeps what later
    steps need (the payments' ids, PayPal's authorization and capture ids)."""
    state = {"ids": {}}
    for step in a.plan:
        if step["do"] == "pay":
            admin_pay(a, step["order"])
            continue
        expect(step["do"] in handlers, f"the plan asks for {step['do']}, which this client does not send")
        got = handlers[step["do"]](step, state)
        label = label_of(step)
        result["steps"][label] = got
        if step["do"] == "create":
            state["ids"][step["payment"]] = got["id"]
        if label in ("create", "lookup"):
            result[label] = got
