"""The webhook host of s_skew.py: applies one signed Stripe event with its own
client on the shared ledger and prints the reply. Reads {config, body,
signature} as JSON on stdin."""
import json
import sys

from harness import pr

job = json.load(sys.stdin)
c = pr.Client(job["config"])
body = job["body"].encode()
print(json.dumps(c.webhook(body, {"Stripe-Signature": job["signature"], "Content-Type": "application/json"})))
c.close()
