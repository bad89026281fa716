"""The names the Python fragments of README.md and docs/*.md use without
defining them, so that run_snippets.py can run each fragment as a script
(`from harness import *` first) against payretry-sim.

Every name a fragment leaves to its reader (the application's "fulfil the
order", the body of an order, a client made earlier, a secret) is here, and
nothing else. The driver passes what depends on the run in the environment:
DOCS_CONFIG (the config of the clients below: the simulator's address and
key, a ledger in the run's own folder), DOCS_BODY (a payment body for
order-1042, naming its order in metadata.order_id as the stripe profile
requires) and DOCS_HMAC_SECRET (what the simulator checks X-Signature with,
clause "sim --hmac-secret S").
"""

import json
import os
import sys
import urllib.request  # noqa: F401  (for the fragments' "then:" checks)

import payretry

config = json.loads(os.environ["DOCS_CONFIG"])
body = os.environ["DOCS_BODY"].encode()
SECRET = os.environ.get("DOCS_HMAC_SECRET", "").encode()

# Outcomes the documents do not promise (finish() exits 1 after any).
unexpected = []


def fulfil(provider_payment_id):
    print("docs-harness: fulfil", provider_payment_id, flush=True)


def show_error(error):
    print("docs-harness: show_error", error, flush=True)
    unexpected.append("show_error(%r)" % (error,))


def load_body(order_id):
    """The very bytes first submitted, as the driver wrote them."""
    return json.dumps({"amount": 1000, "currency": "eur", "metadata": {"order_id": order_id}},
                      separators=(",", ":")).encode()


# The client a fragment takes as made earlier.
client = payretry.Client(config)


def finish():
    """Appended to every script: exits 1 after an outcome the document does not promise."""
    if unexpected:
        sys.exit("docs-harness: outcomes the document does not promise: " + ", ".join(unexpected))
