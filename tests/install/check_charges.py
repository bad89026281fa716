#!/usr/bin/env python3
"""check_charges.py SIM_URL OUTCOMES_FILE EXPECTED_PAYMENTS

Holds a run of examples/submit_example.c (its OUTCOMES_FILE: one line
"order_id OUTCOME delivery attempts" per payment) against the simulator's
truth (GET /__admin/truth): as many outcomes as payments, no order charged
twice, every SUCCEEDED order charged exactly once, every FAILED order never
charged, and at least one charge (a run that charged nothing proves nothing).
"""
import json
import sys
import urllib.request


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    sim_url, outcomes_path, expected = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with urllib.request.urlopen(sim_url + "/__admin/truth", timeout=10) as response:
        truth = json.load(response)
    with open(outcomes_path, encoding="utf-8") as f:
        outcomes = [line.split() for line in f if line.strip()]

    problems = []
    if len(outcomes) != expected:
        problems.append(f"{len(outcomes)} outcomes for {expected} payments")
    if truth["duplicates"] != 0:
        problems.append(f"{truth['duplicates']} orders charged more than once")
    charged = truth["by_order"]
    for order_id, outcome, *_ in outcomes:
        if outcome == "SUCCEEDED" and charged.get(order_id, 0) != 1:
            problems.append(f"{order_id} SUCCEEDED but charged {charged.get(order_id, 0)} times")
        if outcome == "FAILED" and charged.get(order_id, 0) != 0:
            problems.append(f"{order_id} FAILED but charged {charged[order_id]} times")
    if truth["charges"] == 0:
        problems.append("the simulator charged nothing")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    succeeded = sum(1 for o in outcomes if o[1] == "SUCCEEDED")
    print(f"{len(outcomes)} payments: {succeeded} SUCCEEDED each charged once, "
          f"{truth['charges']} charges in all, 0 duplicates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
