"""Shared by the SDK client scripts: arguments, the result file, assertions.

Each client script sends ONE create and (where the provider has one) ONE
lookup of the fixed payment in cases.py through the provider's official SDK,
pointed at the recorder, and asserts on what the SDK parsed out of the
simulator's answers. It writes {"create": {...}, "lookup": {...}, "notes": [...]}
to --out and exits 0, or prints why and exits 1.
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
    a = ap.parse_args()
    result = {"create": None, "lookup": None, "notes": []}
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
