#!/usr/bin/env python3
"""Every example runs as written (issue 48): the code blocks of README.md and
docs/*.md, and the examples of the CLI's --help, run against payretry-sim.

Each fenced block is read with its language and the HTML comments right above
it. What happens to it (tests/docs/README.md has the whole contract):

  c, cpp               compiled as the body of a main() (harness/harness.h
                       declares the names a fragment leaves to its reader)
                       against the built library, and run
  python               run as a script after `from harness import *`
                       (harness/harness.py), with the built package
  go, rust             built as a program of its own against an installed
                       prefix (harness/main.go, harness/main.rs), and run
  json                 a payretry config: `payretry check` must pass it
  sh                   commands: a block that runs `payretry` runs with
                       `set -e` in one sandbox per page (every command must
                       exit 0: succeeded); one that runs `payretry-sim` must
                       start listening; one that runs curl at $u is a
                       transcript of the simulator's HTTP API (below)
  (no language)        text: output, a synopsis, a diagram; never run

A block that is none of these (another language, a json block that is no
config, an sh block without payretry) fails the inventory unless a marker
says why it is not run:

  <!-- snippet: skip: WHY -->

Other clauses of a marker (joined with ";") set up or check a run:

  given ORDER UNKNOWN     before the block, ORDER is submitted with its answer
                          lost (the provider charged it), so it is UNKNOWN
  given ORDER paid        before the block, ORDER is submitted and paid (a
                          block that refunds it)
  webhook ORDER           the harness's body is a signed Stripe notification
                          that ORDER's payment succeeded (sig_header its
                          Stripe-Signature)
  sim FLAGS               extra payretry-sim flags (e.g. --hmac-secret S)
  expect no payment       the block makes no payment
  then: CODE              code run after the block, in its language (last)

A transcript runs with bash against a payretry-sim started with the flags
of the block's own `payretry-sim ...` line (not run itself; the runner picks
the port) and of a `sim` clause, without --api-key unless those name one. A
page's transcripts with the same flags share one simulator, in the page's
order, as a reader who keeps it running; $u is its URL, and any
http://127.0.0.1:PORT in the block becomes it. The comment lines right below
a command are its answer (a comment at the end of a command's line is a
note, never checked):

  # curl: (N) ...         curl exits N (its message is not compared)
  # [STATUS] JSON (NOTE)  exit 0; that HTTP status (none shown: a 2xx); JSON
                          with each member and element shown and no others,
                          where "..." leaves out members, elements or part
                          of a string, and an id like pi_2 stands for any
                          pi_<n> (generated values compare by shape)
  # TEXT  (NOTE)          exit 0, a 2xx, and exactly TEXT printed
  (no comment)            exit 0, and a 2xx for each curl in it
A NOTE in parentheses after two spaces is the reader's. The simulator's
truth is not checked after a transcript: its comments say what it charged.

After a program or a page of commands, every payment in the run's ledgers
must be SUCCEEDED and charged exactly once by the simulator's truth, with no
duplicate anywhere (a block that needs a payment made first says "given");
a capture, refund or cancel row must have moved its payment's money exactly
once under its key.

The only rewrites are printed with each run: https://api.stripe.com becomes
the simulator's URL, sk_test_.../sk_... its API key, and absolute paths under
/etc and /var move under the run's own folder (a fake root, where the folders
a page names exist and /etc/.../payretry.json is the run's config).

A program whose config names Stripe's API (https://api.stripe.com) and needs
no "given" runs a second time against stripe-mock (--stripe-mock URL), which
checks each request against Stripe's OpenAPI document: there its payments
must end SUCCEEDED.

Blocks of pages whose owners add their markers later are marked in
markers.txt (page, the block's first line, the marker).

    run_snippets.py --repo DIR --list
    run_snippets.py --repo DIR --run commands|c|python|go|rust [--cli ... --sim ... ...]
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))

RUN_LANGS = ("c", "cpp", "python", "go", "rust", "sh", "json")
PROGRAM_LANGS = ("c", "cpp", "python", "go", "rust")
# The simulator's API key in every run: the documents' sk_test_... becomes it.
API_KEY = "sk_test_docs_snippets"
# The notification secret of the run's config: hex, so that it serves as
# Stripe's signing secret and as Adyen's HMAC key alike.
WEBHOOK_SECRET = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
HMAC_SECRET_ENV = "DOCS_HMAC_SECRET"
DEFAULT_ORDER = "order-1042"


def fixture_body(order):
    """The body of an order wherever the harness supplies one (harness.h,
    harness.py and main.rs write the same bytes): the stripe profile wants the
    order in metadata.order_id, and a re-send must carry the first bytes."""
    return '{"amount":1000,"currency":"eur","metadata":{"order_id":"%s"}}' % order


# ---- Reading the pages -------------------------------------------------------

@dataclass
class Block:
    page: str
    line: int                     # the opening fence's line, 1-based
    lang: str
    text: str
    marker: str = ""              # the snippet marker's text ("" when none)
    marker_from: str = ""         # "page" or "markers.txt"
    clauses: dict = field(default_factory=dict)
    kind: str = ""                # program, config, commands, server, text, skip, unrunnable
    why: str = ""

    @property
    def where(self):
        return "%s:%d" % (self.page, self.line)

    @property
    def first_line(self):
        return next((ln.strip() for ln in self.text.splitlines() if ln.strip()), "")


FENCE = re.compile(r"^(\s*)```([\w+-]*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(.*?)\s*-->\s*$")
COMMENT = re.compile(r"^\s*<!--.*-->\s*$")


def pages(repo):
    out = ["README.md"]
    out += sorted("docs/" + f for f in os.listdir(os.path.join(repo, "docs")) if f.endswith(".md"))
    return out


def extract(repo, page):
    with open(os.path.join(repo, page), encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m.group(1), m.group(2).lower(), i
        i += 1
        body = []
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        if i == len(lines):
            raise SystemExit("%s:%d: a fence that is never closed" % (page, start + 1))
        i += 1
        # The HTML comments right above the fence (other tests' markers too).
        markers, j = [], start - 1
        while j >= 0 and COMMENT.match(lines[j]):
            mm = MARKER.match(lines[j])
            if mm:
                markers.append(mm.group(1))
            j -= 1
        if len(markers) > 1:
            raise SystemExit("%s:%d: more than one snippet marker; join the clauses with ';'" % (page, start + 1))
        blocks.append(Block(page, start + 1, lang, "\n".join(body) + "\n",
                            markers[0] if markers else "", "page" if markers else ""))
    return blocks


def read_side_markers(path):
    """markers.txt: PAGE :: FIRST LINE :: MARKER, for pages edited by others."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            s = raw.strip()
            if not s or s.startswith("#"):
                continue
            parts = [p.strip() for p in s.split(" :: ")]
            if len(parts) != 3:
                raise SystemExit("%s:%d: want PAGE :: FIRST LINE :: MARKER" % (path, n))
            out[(parts[0], parts[1])] = [parts[2], n, False]
    return out


def parse_clauses(marker):
    """The clauses of a marker: skip (the rest is the reason), then (the
    rest is code), given, webhook, sim, expect."""
    c = {}
    rest = marker.strip()
    if rest.startswith("skip:"):
        c["skip"] = rest[5:].strip()
        if not c["skip"]:
            raise ValueError("skip: says why")
        return c
    while rest:
        if rest.startswith("then:"):
            c["then"] = rest[5:].strip()
            break
        clause, _, rest = rest.partition(";")
        clause, rest = clause.strip(), rest.strip()
        words = clause.split()
        if len(words) == 3 and words[0] == "given" and words[2] == "UNKNOWN":
            c.setdefault("given", []).append(words[1])
        elif len(words) == 3 and words[0] == "given" and words[2] == "paid":
            c.setdefault("given_paid", []).append(words[1])
        elif len(words) == 2 and words[0] == "webhook":
            c["webhook"] = words[1]
        elif words and words[0] == "sim":
            c.setdefault("sim", []).extend(words[1:])
        elif clause == "expect no payment":
            c["no_payment"] = True
        else:
            raise ValueError("unknown clause %r" % clause)
    return c


# curl against $u, the simulator's URL: a transcript of its HTTP API.
CURL_AT_SIM = re.compile(r"(^|[\s|;&(])curl\s[^\n]*\$u\b", re.M)


def runs_payretry(text):
    return re.search(r"(^|[\s|;&(])payretry(\s|$)", text, re.M) is not None


def classify(b):
    if b.marker:
        try:
            b.clauses = parse_clauses(b.marker)
        except ValueError as e:
            b.kind, b.why = "unrunnable", "bad marker %r: %s" % (b.marker, e)
            return
        if "skip" in b.clauses:
            b.kind, b.why = "skip", b.clauses["skip"]
            return
    if b.lang == "":
        b.kind, b.why = "text", "no language: output, a synopsis or a diagram"
    elif b.lang in PROGRAM_LANGS:
        b.kind = "program"
    elif b.lang == "json":
        try:
            doc = json.loads(b.text)
        except ValueError as e:
            doc, err = None, str(e)
        if isinstance(doc, dict) and ("provider" in doc or "ledger" in doc):
            b.kind = "config"
        else:
            b.kind = "unrunnable"
            b.why = "a json block that is no payretry config (%s)" % (err if doc is None else "no provider or ledger")
    elif b.lang == "sh":
        lines = [ln for ln in b.text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
        if lines and all(ln.split()[0] == "payretry-sim" for ln in lines):
            b.kind = "server"
        elif runs_payretry(b.text):
            b.kind = "commands"
        elif CURL_AT_SIM.search(b.text):
            b.kind = "transcript"
        else:
            b.kind, b.why = "unrunnable", "an sh block that runs neither payretry nor payretry-sim (nor curl at $u)"
    else:
        b.kind, b.why = "unrunnable", "language %r is not run (%s)" % (b.lang, ", ".join(RUN_LANGS))
    # A clause that would do nothing is a mistake.
    if b.kind in ("text", "unrunnable") and b.clauses:
        b.kind, b.why = "unrunnable", "marker %r on a block that is not run" % b.marker


def inventory(repo):
    side = read_side_markers(os.path.join(HERE, "markers.txt"))
    blocks, problems = [], []
    for page in pages(repo):
        for b in extract(repo, page):
            key = (b.page, b.first_line)
            if key in side:
                if b.marker:
                    problems.append("%s: marked in the page and in markers.txt (line %d)" % (b.where, side[key][1]))
                b.marker, b.marker_from = side[key][0], "markers.txt"
                side[key][2] = True
            classify(b)
            blocks.append(b)
    for (page, first), (_, n, used) in side.items():
        if not used:
            problems.append("markers.txt:%d: no block of %s starts with %r" % (n, page, first))
    for b in blocks:
        if b.kind == "unrunnable":
            problems.append("%s: %s: run it, or say why not with <!-- snippet: skip: WHY -->" % (b.where, b.why))
    return blocks, problems


def print_inventory(blocks):
    counts = {}
    for b in blocks:
        counts[b.kind] = counts.get(b.kind, 0) + 1
    print("%d blocks in README.md and docs/*.md: %s" % (
        len(blocks), ", ".join("%s %d" % (k, v) for k, v in sorted(counts.items()))))
    skipped = [b for b in blocks if b.kind == "skip"]
    if skipped:
        print("not run, and why:")
        for b in skipped:
            src = " (markers.txt)" if b.marker_from == "markers.txt" else ""
            print("  %-24s %-6s %s%s" % (b.where, b.lang, b.why, src))


# ---- The run's world: a simulator, a fake root, a config ---------------------

class Tools:
    def __init__(self, args):
        self.repo = os.path.abspath(args.repo)
        self.cli = os.path.abspath(args.cli) if args.cli else None
        self.sim = os.path.abspath(args.sim) if args.sim else None
        for name in ("lib", "python", "cargo_target_dir"):
            if getattr(args, name) and os.sep in getattr(args, name):
                setattr(args, name, os.path.abspath(getattr(args, name)))
        args.include = [os.path.abspath(d) for d in args.include]
        self.args = args


def wait_listening(url, seconds):
    host, port = url.rsplit("/", 1)[1].rsplit(":", 1)
    end = time.time() + seconds
    while time.time() < end:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def run(argv, timeout=120, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


# The CLI tests' simulator and signed Stripe notifications.
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
import cli_test  # noqa: E402
import webhook_test  # noqa: E402


class Sim(cli_test.Simulator):
    """The CLI tests' payretry-sim (an empty fault mix: only scripts fault),
    with this run's key and a block's own flags."""

    def __init__(self, path, flags=(), api_key=API_KEY):  # pylint: disable=super-init-not-called
        key = ["--api-key", api_key] if api_key else []
        self.proc = subprocess.Popen([path, "--port", "0"] + key + list(flags),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if "listening on 127.0.0.1:" not in line:
            self.proc.kill()
            raise RuntimeError("payretry-sim did not start: %r %s" % (line, self.proc.stderr.read()))
        self.url = "http://127.0.0.1:%d" % int(line.rsplit(":", 1)[1])


def stripe_notification(order):
    """A signed Stripe event saying ORDER's payment succeeded: (body, Stripe-Signature)."""
    body = webhook_test.stripe_event("evt_docs_" + order, order)
    return body, webhook_test.stripe_signature(body, secret=WEBHOOK_SECRET)


def adyen_notification(order):
    fields = ["8815", "", "ShopAccount", order, "1000", "EUR", "AUTHORISATION", "true"]
    sig = base64.b64encode(hmac.new(bytes.fromhex(WEBHOOK_SECRET), ":".join(fields).encode(),
                                    hashlib.sha256).digest()).decode()
    item = {"NotificationRequestItem": {
        "additionalData": {"hmacSignature": sig}, "amount": {"currency": "EUR", "value": 1000},
        "eventCode": "AUTHORISATION", "merchantAccountCode": "ShopAccount", "merchantReference": order,
        "pspReference": "8815", "success": "true"}}
    return json.dumps({"live": "false", "notificationItems": [item]}).encode()


# The PEM files the documents' signing configs name, by key: the test keys.
KEY_FILES = {
    "private_key_file": {"wechatpay": "wechat_merchant_key.pem", "alipay": "alipay_app_key.pem"},
    "platform_public_key_file": {"wechatpay": "wechat_platform_pub.pem"},
    "alipay_public_key_file": {"alipay": "alipay_pub.pem"},
}
FAKE_ROOT_PATH = re.compile(r"(?<![\w.~-])/(?:etc|var)/[\w./-]*")


class Sandbox:
    """One run's world: its own folder with a fake root (root/) and a working
    folder (work/, the commands' cwd), a simulator (or stripe-mock), and the
    config of the harness's clients, at shop.json and wherever a page names
    /etc/.../payretry.json."""

    def __init__(self, tools, sim_flags=(), stripe_mock=None):
        self.tools = tools
        self.dir = tempfile.mkdtemp(prefix="payretry-docs-")
        self.root = os.path.join(self.dir, "root")
        self.work = os.path.join(self.dir, "work")
        os.makedirs(self.work)
        os.makedirs(self.root)
        self.sim = None if stripe_mock else Sim(tools.sim, sim_flags)
        self.base_url = stripe_mock or self.sim.url
        self.key = "sk_test_123" if stripe_mock else API_KEY
        self.ledger = self.root + "/var/lib/shop/payments.db"
        os.makedirs(os.path.dirname(self.ledger))
        self.config = {"provider": "stripe", "base_url": self.base_url, "auth": {"bearer": self.key},
                       "ledger": "sqlite://" + self.ledger, "webhook": {"secret": WEBHOOK_SECRET}}
        self.config_path = os.path.join(self.work, "shop.json")
        self.write(self.config_path, json.dumps(self.config))
        self.hmac_secret = ""
        if "--hmac-secret" in sim_flags:
            self.hmac_secret = list(sim_flags)[list(sim_flags).index("--hmac-secret") + 1]

    def close(self):
        if self.sim:
            self.sim.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    @staticmethod
    def write(path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def env(self, **more):
        e = dict(os.environ)
        e.pop("PAYRETRY_CONFIG", None)
        e.update({"DOCS_CONFIG": json.dumps(self.config), "DOCS_BODY": fixture_body(DEFAULT_ORDER)})
        if self.hmac_secret:
            e[HMAC_SECRET_ENV] = self.hmac_secret
        e.update(more)
        return e

    # -- rewrites: the base URL, the secret, the fake root

    def rewrite(self, text):
        done = []

        def sub(pattern, repl, what, s):
            n = len(re.findall(pattern, s))
            if n:
                done.append(what)
            return re.sub(pattern, repl, s)
        text = sub(re.escape("https://api.stripe.com"), self.base_url,
                   "https://api.stripe.com -> " + self.base_url, text)
        text = sub(r"sk_(?:test_)?\.\.\.", self.key, "sk_test_... -> the %s key" % (
            "simulator's" if self.sim else "stripe-mock"), text)
        paths = sorted(set(FAKE_ROOT_PATH.findall(text)))
        for p in paths:
            self.make_fake_path(p)
        if paths:
            done.append("%s -> %s/..." % (", ".join(paths), self.root))
        text = FAKE_ROOT_PATH.sub(lambda m: self.root + m.group(0), text)
        return text, done

    def make_fake_path(self, p):
        """What the page takes as there: the folders it names, and its config
        file where it names one under /etc."""
        real = self.root + p
        if p.endswith("/") or not os.path.splitext(p)[1]:
            os.makedirs(real, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(real), exist_ok=True)
            if p.startswith("/etc/") and p.endswith(".json") and not os.path.exists(real):
                self.write(real, json.dumps(self.config))

    # -- the files the pages' commands name

    def write_fixtures(self):
        """Rewritten before every block, so that a notification's signed
        timestamp is fresh."""
        body = fixture_body(DEFAULT_ORDER)
        for path in ("order.json", "order-1042.json", "bodies/order-1042.json"):
            self.write(os.path.join(self.work, path), body)
        self.write(self.root + "/var/lib/shop/bodies/order-1042.json", body)
        os.makedirs(os.path.join(self.work, "results"), exist_ok=True)
        event, signature = stripe_notification(DEFAULT_ORDER)
        self.write(os.path.join(self.work, "captured.http"), webhook_test.raw_request(
            event, [("Content-Type", "application/json"), ("Stripe-Signature", signature)]).decode())
        self.write(os.path.join(self.work, "adyen.http"), webhook_test.raw_request(
            adyen_notification(DEFAULT_ORDER), [("Content-Type", "application/json")], target="/hooks/adyen").decode())

    # -- before and after a block

    def given_unknown(self, order):
        """ORDER submitted through the run's config, its answer lost: the
        provider charged it, the ledger says UNKNOWN."""
        self.sim.admin("script", {"order_id": order, "faults": ["lost_response"]})
        cfg = dict(self.config, retry={"max_attempts": 1})
        p = run([self.tools.cli, "submit", order, "--body", fixture_body(order), "--json"],
                env=dict(self.env(), PAYRETRY_CONFIG=json.dumps(cfg)))
        if p.returncode != 4:
            raise RuntimeError("given %s UNKNOWN: submit exited %d, not 4: %s %s" % (order, p.returncode, p.stdout, p.stderr))

    def given_paid(self, order):
        """ORDER submitted through the run's config and paid."""
        p = run([self.tools.cli, "submit", order, "--body", fixture_body(order), "--json"],
                env=dict(self.env(), PAYRETRY_CONFIG=json.dumps(self.config)))
        if p.returncode != 0 or json.loads(p.stdout).get("money_state") != "paid":
            raise RuntimeError("given %s paid: submit exited %d: %s %s" % (order, p.returncode, p.stdout, p.stderr))

    def check_payments(self, expect):
        """Every payment in the run's ledgers SUCCEEDED and charged exactly
        once by the simulator's truth, no duplicate, no charge outside the
        ledgers, and `expect` ("some", "none" or "any") payments; returns the
        problems and the rows."""
        problems, rows = [], []
        for top, _, files in os.walk(self.dir):
            for f in files:
                if f.endswith(".db"):
                    path = os.path.join(top, f)
                    cfg = dict(self.config, ledger="sqlite://" + path)
                    cfg.pop("webhook")
                    p = run([self.tools.cli, "ledger", "list", "--json"], env=dict(self.env(), PAYRETRY_CONFIG=json.dumps(cfg)))
                    if p.returncode != 0:
                        problems.append("ledger list of %s exited %d: %s" % (path, p.returncode, p.stderr.strip()))
                        continue
                    rows += json.loads(p.stdout)
        for r in rows:
            if r["state"] != "SUCCEEDED":
                problems.append("%s is %s (%s)" % (r["order_id"], r["state"], r.get("detail")))
            if not self.sim:
                continue
            if r.get("operation", "create") != "create":
                # A capture, refund or cancel is a row of its own that charges
                # nothing: its key must have moved its payment's money exactly
                # once (the truth counts a cancel's release as its movement).
                truth = self.sim.admin("truth?order_id=" + urllib.parse.quote(r["parent_order_id"]))
                moved = sum(p.get("movements_by_key", {}).get(r["idempotency_key"], 0) for p in truth["payments"])
                if moved != 1:
                    problems.append("%s: the simulator moved its money %d times" % (r["order_id"], moved))
                continue
            charges = self.sim.admin("truth?order_id=" + r["order_id"])["charges"]
            if charges != 1:
                problems.append("%s: the simulator charged it %d times" % (r["order_id"], charges))
        if self.sim:
            truth = self.sim.admin("truth")
            if truth["duplicates"]:
                problems.append("the simulator counts %d orders charged twice" % truth["duplicates"])
            unrecorded = sorted(set(truth["by_order"]) - {r["order_id"] for r in rows})
            if unrecorded:
                problems.append("charged but in no ledger: %s" % ", ".join(unrecorded))
        if expect == "some" and not rows:
            problems.append("no payment in the ledger: the block made none (say 'expect no payment' if so)")
        if expect == "none" and rows:
            problems.append("'expect no payment', but the ledger holds %s" % ", ".join(r["order_id"] for r in rows))
        return problems, rows


# ---- Runners -----------------------------------------------------------------

class Report:
    def __init__(self):
        self.failures, self.passed, self.lock = [], [], threading.Lock()

    def ok(self, what, detail=""):
        with self.lock:
            self.passed.append(what)
            print("ok    %s%s" % (what, "  " + detail if detail else ""), flush=True)

    def fail(self, what, detail):
        with self.lock:
            self.failures.append(what)
            print("FAIL  %s\n%s" % (what, indent(detail)), flush=True)


def indent(s, by="      "):
    return "\n".join(by + ln for ln in s.rstrip().splitlines())


def describe_rewrites(done):
    return "rewritten: " + "; ".join(done) if done else "as written"


# -- commands, configs, servers: one sandbox per page, in the page's order

SH_PRELUDE = r"""set -eo pipefail
trap 'echo "docs: exit $? at: $BASH_COMMAND" >&2' ERR
# What the pages' scripts leave to their reader.
order=order-1042
fulfil() { echo "docs-harness: fulfil $1"; }
tell_customer() { echo "docs-harness: tell_customer $1 (a decline: not what the page promises)" >&2; return 1; }
alert() { echo "docs-harness: alert $*" >&2; return 1; }
"""


def bin_path(tools):
    """PATH with the built payretry and payretry-sim first, as if installed."""
    bins = sorted({os.path.dirname(tools.cli), os.path.dirname(tools.sim)})
    return ":".join(bins) + ":" + os.environ.get("PATH", "")


def sh_env(sandbox, tools):
    return sandbox.env(PATH=bin_path(tools),
                       PAYRETRY_CONFIG=os.path.join(sandbox.root, "etc/shop/payretry.json"))


def run_sh(sandbox, tools, script, timeout=300):
    sandbox.make_fake_path("/etc/shop/payretry.json")
    return run(["bash", "-c", SH_PRELUDE + script], cwd=sandbox.work, env=sh_env(sandbox, tools), timeout=timeout)


def is_demo(script):
    lines = [ln for ln in script.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return bool(lines) and all(ln.split()[:2] == ["payretry", "demo"] for ln in lines)


class CommandPage:
    """The sh and json blocks of one page (or one --help text), in order, in
    one sandbox. `payretry demo` commands start their own simulator and
    ledger: they run beside the rest, each distinct command once."""

    def __init__(self, tools, report, name, demos):
        self.tools, self.report, self.name, self.demos = tools, report, name, demos
        self.sandbox = Sandbox(tools)
        self.transcript_sims = {}  # the flags -> the simulator the page's transcripts share

    def commands(self, what, script):
        if is_demo(script):
            # One command a line, its trailing comment aside.
            lines = [re.sub(r"\s+#.*$", "", ln.strip()) for ln in script.splitlines()
                     if ln.strip() and not ln.strip().startswith("#")]
            for ln in lines:
                self.demos.start(what if len(lines) == 1 else "%s: %s" % (what, ln), ln, self)
            return
        sb = self.sandbox
        sb.write_fixtures()
        text, done = sb.rewrite(script)
        p = run_sh(sb, self.tools, text)
        if p.returncode != 0:
            self.report.fail(what, "exit %d (every command must exit 0)\n%s\n--- stdout\n%s\n--- stderr\n%s" % (
                p.returncode, text, p.stdout[-3000:], p.stderr[-3000:]))
        else:
            self.report.ok(what, describe_rewrites(done))

    def config(self, b):
        sb = self.sandbox
        text, done = sb.rewrite(b.text)
        cfg = json.loads(text)
        env = sb.env()
        # The secrets it reads from the environment, and the key files it names.
        for path, key, value in walk_json(cfg):
            if key.endswith("_env"):
                env[value] = "docs-secret-for-" + value
            if key.endswith("_file") and value.startswith(sb.root):
                owner = path[-1] if path else ""
                name = KEY_FILES.get(key, {}).get(owner)
                src = os.path.join(self.tools.repo, "tests/keys", name) if name else None
                if not src:
                    self.report.fail(b.where, "%s names %s: the harness has no file for %s.%s" % (b.where, value, owner, key))
                    return
                shutil.copyfile(src, value)
        path = os.path.join(sb.work, "config-%d.json" % b.line)
        sb.write(path, text)
        p = run([self.tools.cli, "check", path], env=env)
        if p.returncode != 0:
            self.report.fail(b.where, "payretry check exited %d\n%s\n%s%s" % (p.returncode, text, p.stdout, p.stderr))
        else:
            self.report.ok(b.where, "payretry check: valid; " + describe_rewrites(done))

    def server(self, b):
        """payretry-sim as the page starts it (its port made 0: any free one):
        it must be listening within 5 s."""
        text = next(ln for ln in b.text.splitlines() if ln.strip() and not ln.strip().startswith("#"))
        text = re.sub(r"--port \d+", "--port 0", text.strip())
        argv = text.split()
        argv[0] = self.tools.sim
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = [""]
        t = threading.Thread(target=lambda: line.__setitem__(0, proc.stdout.readline()))
        t.start()
        t.join(5)
        alive = proc.poll() is None
        proc.kill()
        proc.wait()
        t.join()
        if alive and line[0].startswith("listening on 127.0.0.1:"):
            self.report.ok(b.where, "listening (rewritten: --port N -> --port 0)")
        else:
            self.report.fail(b.where, "%s: not listening: %r %s" % (text, line[0], proc.stderr.read()))

    def transcript(self, b):
        """curl against the simulator, each answer checked against the comment
        below its command. Blocks that need the same simulator flags share one
        simulator, in the page's order, as a reader who keeps it running."""
        flags, steps = transcript_steps(b)
        flags = b.clauses.get("sim", []) + flags
        try:
            answers = [parse_answer(st.answer) if st.answer else None for st in steps]
        except ValueError as e:
            self.report.fail(b.where, "an answer the test cannot read: %s" % e)
            return
        key = tuple(flags)
        if key not in self.transcript_sims:
            # No --api-key: the pages' curls carry none (a block that wants one says sim --api-key K).
            self.transcript_sims[key] = Sim(self.tools.sim, flags, api_key=None)
        url = self.transcript_sims[key].url
        out_dir = tempfile.mkdtemp(prefix="payretry-docs-curl-", dir=self.sandbox.dir)
        script = [TRANSCRIPT_PRELUDE, "u=" + url]
        for i, st in enumerate(steps):
            script.append('{ %s\n} >"%s/out.%d" 2>"%s/err.%d"; echo $? >"%s/rc.%d"' % (
                SIM_URL.sub(url, st.command), out_dir, i, out_dir, i, out_dir, i))
        p = run(["bash", "-c", "\n".join(script)], cwd=self.sandbox.work, env=dict(os.environ, PATH=bin_path(self.tools)))
        problems, checked = [], 0
        for i, (st, want) in enumerate(zip(steps, answers)):
            def read(name, i=i):
                path = "%s/%s.%d" % (out_dir, name, i)
                return open(path, encoding="utf-8", errors="replace").read() if os.path.exists(path) else ""
            rc = read("rc").strip()
            got = read("out")
            statuses = HTTP_STATUS.findall(read("err"))
            bad = check_answer(want, int(rc) if rc else None, statuses[-1] if statuses else None, got)
            checked += want is not None
            if bad:
                problems.append("%s:%d: %s\n%s\n      --- the comment\n%s\n      --- what it printed (exit %s, HTTP %s)\n%s" % (
                    b.page, st.line, st.command.strip(), indent("; ".join(bad), "      "),
                    indent("# " + (st.answer or "(none: exit 0 and a 2xx)"), "      "), rc or "?",
                    statuses[-1] if statuses else "-", indent(got.strip()[:1500] or "(nothing)", "      ")))
        note = "payretry-sim %s at %s" % (" ".join(flags) or "(default stripe mode)", url)
        if p.returncode != 0:
            problems.append("the script itself exited %d: %s" % (p.returncode, p.stderr[-2000:]))
        if SIM_URL.search(b.text):
            note += "; rewritten: http://127.0.0.1:PORT -> its URL"
        if any(ln.split()[:1] == ["payretry-sim"] for ln in b.text.splitlines()):
            note += "; the block's payretry-sim line not run: the runner started it"
        if problems:
            self.report.fail(b.where, "\n".join(problems) + "\n      (" + note + ")")
        else:
            self.report.ok(b.where, "%d commands, %d answers as the comments show; %s" % (len(steps), checked, note))

    def finish(self):
        for sim in self.transcript_sims.values():
            sim.stop()
        problems, rows = self.sandbox.check_payments("any")
        if problems:
            self.report.fail(self.name + ": its payments", "\n".join(problems))
        else:
            self.report.ok(self.name + ": its payments", "%d, each SUCCEEDED and charged once" % len(rows)
                           if rows else "none made")
        self.sandbox.close()


# -- transcripts: curl against the simulator's HTTP API, its answers as comments

# curl notes each answer's HTTP status on stderr, where the block's own output is not.
TRANSCRIPT_PRELUDE = r"""set -o pipefail
curl() { command curl -w '%{stderr}\n@docs-http %{http_code}\n' "$@"; }"""
HTTP_STATUS = re.compile(r"@docs-http (\d{3})")
SIM_URL = re.compile(r"http://127\.0\.0\.1:\d+")
# What stands for a "..." of a comment's JSON where members or elements are left out.
ELIDED = "\0..."


@dataclass
class Step:
    line: int                     # the command's first line in the page
    command: str
    answer: str = ""              # the comment lines right below it, joined


def transcript_steps(b):
    """The simulator flags of the block's payretry-sim lines (--port dropped:
    the runner picks one) and its commands, each with the comment below it."""
    flags, steps, cont, answering = [], [], False, False
    for n, raw in enumerate(b.text.splitlines(), b.line + 1):
        ln = raw.strip()
        if cont:
            steps[-1].command += "\n" + raw
            cont = ln.endswith("\\")
        elif not ln:
            answering = False
        elif ln.startswith("#"):
            if answering:
                steps[-1].answer = (steps[-1].answer + " " + ln[1:].strip()).strip()
        elif ln.split()[0] == "payretry-sim":
            words = shlex.split(ln)[1:]
            while words:
                w = words.pop(0)
                if w == "--port":
                    words.pop(0)
                else:
                    flags.append(w)
            answering = False
        else:
            steps.append(Step(n, raw))
            answering, cont = True, ln.endswith("\\")
    return flags, steps


def parse_answer(text):
    """A command's answer comment: `curl: (N) ...` is curl's exit N (the rest is
    the reader's); else an optional HTTP status, then JSON whose "..." leave out
    members, elements or part of a string, or the exact text printed; a note in
    parentheses after it is the reader's."""
    m = re.match(r"curl: \((\d+)\)", text)
    if m:
        return {"exit": int(m.group(1))}
    want = {"exit": 0, "status": None, "json": None, "text": None}
    m = re.match(r"(\d{3})(?:\s+|$)(.*)$", text)
    if m:
        want["status"], text = int(m.group(1)), m.group(2)
    if text[:1] in ("{", "["):
        value, rest = loads_elided(text)
        if rest.strip() and not re.fullmatch(r"\(.*\)", rest.strip()):
            raise ValueError("%r after the JSON (a note goes in parentheses)" % rest.strip())
        want["json"] = value
    elif text:
        want["text"] = re.sub(r"\s{2,}\(.*\)$", "", text).strip()
    return want


def loads_elided(text):
    """The first JSON value of TEXT, a "..." outside a string read as ELIDED
    (a member or an element left out); returns it and the text after it."""
    out, depth, i, in_str = [], [], 0, False
    while i < len(text):
        c = text[i]
        if in_str:
            out.append(text[i:i + 2] if c == "\\" else c)
            in_str = c != '"'
            i += 2 if c == "\\" else 1
            continue
        if text.startswith("...", i):
            out.append(json.dumps(ELIDED) + (":null" if depth and depth[-1] == "{" else ""))
            i += 3
            continue
        out.append(c)
        i += 1
        if c == '"':
            in_str = True
        elif c in "{[":
            depth.append(c)
        elif c in "}]":
            depth.pop()
            if not depth:
                break
    try:
        return json.loads("".join(out)), text[i:]
    except ValueError as e:
        raise ValueError("not JSON with ... (%s): %s" % (e, text)) from None


def string_matches(want, got):
    """A "..." inside a string is any text; an id such as pi_2 or ch_2 is
    generated, so only its shape counts."""
    if re.fullmatch(r"[a-z]+_\d+", want):
        return re.fullmatch(re.escape(want.rsplit("_", 1)[0]) + r"_\d+", got) is not None
    return re.fullmatch(".*".join(re.escape(p) for p in want.split("...")), got, re.S) is not None


def json_mismatches(want, got, path="$"):
    """Where GOT differs from what WANT shows: every member and element shown,
    with its value; no other member unless WANT leaves some out with "..."."""
    kind = lambda v: type(v).__name__ if not isinstance(v, dict) else "object"  # noqa: E731
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return ["%s: an object in the comment, a %s printed" % (path, kind(got))]
        out = []
        for k, v in want.items():
            if k == ELIDED:
                continue
            if k not in got:
                out.append("%s: no %s" % (path, k))
            else:
                out += json_mismatches(v, got[k], "%s.%s" % (path, k))
        extra = sorted(set(got) - set(want))
        if extra and ELIDED not in want:
            out.append("%s: also %s, which the comment neither shows nor leaves out with ..." % (path, ", ".join(extra)))
        return out
    if isinstance(want, list):
        if not isinstance(got, list):
            return ["%s: an array in the comment, a %s printed" % (path, kind(got))]
        shown = [w for w in want if w != ELIDED]
        if len(got) < len(shown) or (ELIDED not in want and len(got) != len(shown)):
            return ["%s: %d elements, the comment shows %d" % (path, len(got), len(shown))]
        out = []
        for n, (w, g) in enumerate(zip(shown, got)):
            out += json_mismatches(w, g, "%s[%d]" % (path, n))
        return out
    if isinstance(want, str):
        if not isinstance(got, str) or not string_matches(want, got):
            return ["%s: %s, the comment says %s" % (path, json.dumps(got), json.dumps(want))]
        return []
    if want != got or isinstance(want, bool) != isinstance(got, bool):
        return ["%s: %s, the comment says %s" % (path, json.dumps(got), json.dumps(want))]
    return []


def check_answer(want, rc, status, printed):
    """What differs between one command's run and its answer comment (no
    comment: it must exit 0, and a curl in it must get a 2xx)."""
    if rc is None:
        return ["it did not run (an earlier command ended the script)"]
    if want is None or want["exit"]:
        exit_wanted = want["exit"] if want else 0
        if rc != exit_wanted:
            return ["exit %d, the comment says %d" % (rc, exit_wanted)]
        if not want and status and not status.startswith("2"):
            return ["HTTP %s: a command with no answer below it must succeed" % status]
        return []
    if rc != 0:
        return ["exit %d" % rc]
    bad = []
    if want["status"] is not None:
        if status != str(want["status"]):
            bad.append("HTTP %s, the comment says %d" % (status, want["status"]))
    elif status and not status.startswith("2"):
        bad.append("HTTP %s, and the comment shows no status (a success)" % status)
    if want["json"] is not None:
        try:
            bad += json_mismatches(want["json"], json.loads(printed))
        except ValueError:
            bad.append("it printed no JSON")
    elif want["text"] is not None and " ".join(printed.split()) != " ".join(want["text"].split()):
        bad.append("it printed other text than %r" % want["text"])
    return bad


def walk_json(v, path=()):
    if isinstance(v, dict):
        for k, x in v.items():
            if isinstance(x, str):
                yield path, k, x
            else:
                yield from walk_json(x, path + (k,))
    elif isinstance(v, list):
        for x in v:
            yield from walk_json(x, path)


class Demos:
    """`payretry demo` commands: each starts its own simulator and ledger, so
    they run one a thread beside the rest (they mostly wait), each distinct
    command line once."""

    def __init__(self, report):
        self.report, self.threads, self.seen = report, [], {}

    def start(self, what, script, page):
        key = script.strip()
        if key in self.seen:
            self.report.ok(what, "the same command as %s" % self.seen[key])
            return
        self.seen[key] = what

        def go():
            cwd = tempfile.mkdtemp(prefix="payretry-docs-demo-")
            try:
                p = run(["bash", "-c", SH_PRELUDE + script], cwd=cwd, timeout=600,
                        env=dict(os.environ, PATH=bin_path(page.tools)))
            except subprocess.TimeoutExpired:
                self.report.fail(what, "still running after 600 s")
                return
            finally:
                shutil.rmtree(cwd, ignore_errors=True)
            if p.returncode != 0:
                self.report.fail(what, "exit %d\n%s\n--- stdout\n%s\n--- stderr\n%s" % (
                    p.returncode, script, p.stdout[-3000:], p.stderr[-3000:]))
            else:
                self.report.ok(what, "the demo's own checks passed")
        t = threading.Thread(target=go)
        t.start()
        self.threads.append(t)

    def wait(self):
        for t in self.threads:
            t.join()


def help_examples(cli):
    """`payretry --help` and each command's, in the order of the top help's
    command list: [(source, [example lines])]."""
    top = run([cli, "--help"]).stdout
    commands = []
    for ln in top.split("Commands:", 1)[1].split("\n\n", 1)[0].splitlines():
        if ln.strip() and ln.split()[0] not in commands:
            commands.append(ln.split()[0])
    out = [("payretry --help", examples_of(top))]
    for c in commands:
        p = run([cli, c, "--help"])
        if p.returncode != 0:
            raise RuntimeError("payretry %s --help exited %d" % (c, p.returncode))
        out.append(("payretry %s --help" % c, examples_of(p.stdout)))
    return out


def examples_of(text):
    if "Examples:\n" not in text:
        return []
    part = text.split("Examples:\n", 1)[1].split("\n\n", 1)[0]
    out = []
    for ln in part.splitlines():
        # A line ending in | or \ goes on in the next, as in the shell.
        if out and out[-1].rstrip().endswith(("|", "\\")):
            out[-1] += "\n" + ln.strip()
        elif ln.strip():
            out.append(ln.strip())
    return out


def run_commands(tools, blocks, report):
    if not shutil.which("jq"):
        report.fail("jq", "jq is not installed, and the pages' commands pipe into it: .ci/setup installs it")
        return
    demos = Demos(report)
    by_page = {}
    for b in blocks:
        if b.kind in ("commands", "config", "server", "transcript"):
            by_page.setdefault(b.page, []).append(b)
    for page, bs in by_page.items():
        cp = CommandPage(tools, report, page, demos)
        try:
            for b in bs:
                if b.kind == "commands":
                    cp.commands(b.where, b.text)
                elif b.kind == "config":
                    cp.config(b)
                elif b.kind == "transcript":
                    cp.transcript(b)
                else:
                    cp.server(b)
        finally:
            cp.finish()
    cp = CommandPage(tools, report, "payretry --help", demos)
    try:
        helps = help_examples(tools.cli)
        for source, lines in helps:
            if not lines:
                report.fail(source, "no Examples: section")
            for n, ln in enumerate(lines, 1):
                cp.commands("%s, example %d: %s" % (source, n, ln.replace("\n", " ")), ln)
    finally:
        cp.finish()
    demos.wait()


# -- programs

GO_IMPORTS = {"context.": "context", "errors.": "errors", "fmt.": "fmt", "log.": "log", "time.": "time",
              "payretry.": 'payretry "github.com/payretry/payretry/bindings/go"', "http.": "net/http"}


class Programs:
    def __init__(self, tools, report):
        self.tools, self.report = tools, report
        a = tools.args
        self.stripe_mock = a.stripe_mock

    def each(self, blocks, langs, build_and_run):
        mine = [b for b in blocks if b.kind == "program" and b.lang in langs]
        for b in mine:
            self.one(b, build_and_run, None)
        # A block whose config names Stripe's API pays there too (last:
        # stripe-mock takes seconds to start).
        stripe = [b for b in mine if "https://api.stripe.com" in b.text and not b.clauses.get("given")
                  and not b.clauses.get("given_paid")
                  and not b.clauses.get("webhook") and not b.clauses.get("no_payment")]
        if stripe and self.stripe_mock:
            if not wait_listening(self.stripe_mock, 60):
                self.report.fail("stripe-mock", "not listening on %s after 60 s (BUILD_DIR/tests/docs-stripe-mock.log)"
                                 % self.stripe_mock)
                return
            for b in stripe:
                self.one(b, build_and_run, self.stripe_mock)

    def one(self, b, build_and_run, mock):
        what = b.where + (" against stripe-mock" if mock else "")
        sb = Sandbox(self.tools, b.clauses.get("sim", ()), stripe_mock=mock)
        try:
            for order in b.clauses.get("given", []):
                sb.given_unknown(order)
            for order in b.clauses.get("given_paid", []):
                sb.given_paid(order)
            env = sb.env()
            if "webhook" in b.clauses:
                event, signature = stripe_notification(b.clauses["webhook"])
                env.update(DOCS_BODY=event.decode(), DOCS_SIG_HEADER=signature)
            text, done = sb.rewrite(b.text)
            then = b.clauses.get("then", "")
            if then:
                then, more = sb.rewrite(then)
                done += [d for d in more if d not in done]
            p = build_and_run(sb, b, text, then, env)
            if p.returncode != 0:
                self.report.fail(what, "exit %d\n--- program\n%s\n--- stdout\n%s\n--- stderr\n%s" % (
                    p.returncode, text, p.stdout[-3000:], p.stderr[-3000:]))
                return
            problems, rows = sb.check_payments("none" if b.clauses.get("no_payment") else "some")
            if problems:
                self.report.fail(what, "\n".join(problems) + "\n--- stdout\n" + p.stdout[-3000:])
            else:
                self.report.ok(what, "%s; %s" % (
                    "%d payment(s) SUCCEEDED%s" % (len(rows), "" if mock else ", each charged once") if rows
                    else "no payment, as marked", describe_rewrites(done)))
        except Exception as e:  # a harness failure is this block's failure, not the run's end
            self.report.fail(what, "%s: %s" % (type(e).__name__, e))
        finally:
            sb.close()

    # C and C++: the fragment is main()'s body; its #include lines go on top.
    def c(self, sb, b, text, then, env):
        includes = [ln for ln in text.splitlines() if ln.startswith("#include")]
        rest = [ln for ln in text.splitlines() if not ln.startswith("#include")]
        src = "\n".join(includes + [
            '#include "harness.h"',
            "int main(void) {",
            "  docs_setup();",
            "  {",
            '#line %d "%s"' % (b.line + 1 + len(includes), b.page)] + rest + [
            "  }",
            then,
            "  return docs_finish();",
            "}", ""])
        cxx = b.lang == "cpp"
        path = os.path.join(sb.dir, "snippet." + ("cpp" if cxx else "c"))
        sb.write(path, src)
        a = self.tools.args
        cc = a.cxx if cxx else a.cc
        std = "-std=c++17" if cxx else "-std=c99"
        exe = os.path.join(sb.dir, "snippet")
        argv = [cc, std, "-Wall", "-Wextra", "-Werror", "-Wno-unused-variable", "-I" + os.path.join(HERE, "harness")]
        argv += ["-I" + d for d in a.include] + [path, "-o", exe, a.lib, "-Wl,-rpath," + os.path.dirname(a.lib)]
        p = run(argv)
        if p.returncode != 0:
            return p
        return run([exe], cwd=sb.work, env=env, timeout=120)

    def python(self, sb, b, text, then, env):
        path = os.path.join(sb.dir, "snippet.py")
        sb.write(path, "from harness import *  # noqa\n" + text + ("\n" + then + "\n" if then else "") + "finish()\n")
        env = dict(env, PYTHONPATH=os.path.join(HERE, "harness"))
        return run([self.tools.args.python, path], cwd=sb.work, env=env, timeout=120)

    def go(self, sb, b, text, then, env):
        mod = os.path.join(sb.dir, "go")
        os.makedirs(mod)
        shutil.copyfile(os.path.join(HERE, "harness/main.go"), os.path.join(mod, "main.go"))
        imports = sorted({imp for prefix, imp in GO_IMPORTS.items()
                          if re.search(r"(?<![\w.])" + re.escape(prefix), text + then)} | {"context"})
        src = ["// Generated by tests/docs/run_snippets.py from %s." % b.where, "package main", "", "import ("]
        src += ["\t" + (i if " " in i else '"%s"' % i) for i in imports] + [")", "",
                "func snippet(ctx context.Context, configJSON string, body []byte) error {",
                "//line %s:%d" % (b.page, b.line + 1), text, then, "\treturn nil", "}", ""]
        sb.write(os.path.join(mod, "snippet.go"), "\n".join(src))
        sb.write(os.path.join(mod, "go.mod"), "module docs.example/snippet\n\ngo 1.24\n\n"
                 "require github.com/payretry/payretry/bindings/go v0.0.0\n\n"
                 "replace github.com/payretry/payretry/bindings/go => %s\n" % os.path.join(self.tools.repo, "bindings/go"))
        go = self.tools.args.go
        p = run([go, "build", "-o", os.path.join(sb.dir, "snippet-go"), "."], cwd=mod, timeout=600,
                env=dict(os.environ, GOTOOLCHAIN="local", CGO_ENABLED="1"))
        if p.returncode != 0:
            return p
        return run([os.path.join(sb.dir, "snippet-go")], cwd=sb.work, env=env, timeout=120)

    def rust(self, sb, b, text, then, env):
        crate = os.path.join(sb.dir, "rust")
        os.makedirs(os.path.join(crate, "src"))
        with open(os.path.join(HERE, "harness/main.rs"), encoding="utf-8") as f:
            template = f.read()
        marker = "    // THE FRAGMENT\n"
        assert marker in template
        sb.write(os.path.join(crate, "src/main.rs"), template.replace(marker, text + then + "\n"))
        sb.write(os.path.join(crate, "Cargo.toml"), '[package]\nname = "docs-snippet"\nversion = "0.1.0"\n'
                 'edition = "2021"\npublish = false\n\n[workspace]\n\n[dependencies]\npayretry = { path = "%s" }\n'
                 % os.path.join(self.tools.repo, "bindings/rust/payretry"))
        shutil.copyfile(os.path.join(self.tools.repo, "bindings/rust/Cargo.lock"), os.path.join(crate, "Cargo.lock"))
        cargo = self.tools.args.cargo
        p = run([cargo, "build", "--quiet"], cwd=crate, timeout=900,
                env=dict(os.environ, CARGO_TARGET_DIR=self.tools.args.cargo_target_dir))
        if p.returncode != 0:
            return p
        exe = os.path.join(self.tools.args.cargo_target_dir, "debug", "docs-snippet")
        return run([exe], cwd=sb.work, env=env, timeout=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--list", action="store_true", help="the inventory only: fails on a block neither run nor marked")
    ap.add_argument("--run", choices=("commands", "c", "python", "go", "rust"), action="append", default=[])
    ap.add_argument("--cli")
    ap.add_argument("--sim")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--cxx", default="c++")
    ap.add_argument("--include", action="append", default=[], help="C: an include folder of the built library")
    ap.add_argument("--lib", help="C: the built libpayretry.so")
    ap.add_argument("--python", help="an interpreter that imports the built payretry package")
    ap.add_argument("--go", default="go")
    ap.add_argument("--cargo", default="cargo")
    ap.add_argument("--cargo-target-dir")
    ap.add_argument("--stripe-mock", help="stripe-mock's URL: the programs that name Stripe's API run there too")
    args = ap.parse_args()

    blocks, problems = inventory(args.repo)
    if args.list:
        print_inventory(blocks)
        for p in problems:
            print("FAIL  " + p)
        return 1 if problems else 0

    tools = Tools(args)
    report = Report()
    t0 = time.time()
    programs = Programs(tools, report)
    for what in args.run:
        if what == "commands":
            run_commands(tools, blocks, report)
        elif what == "c":
            programs.each(blocks, ("c", "cpp"), programs.c)
        elif what == "python":
            programs.each(blocks, ("python",), programs.python)
        elif what == "go":
            programs.each(blocks, ("go",), programs.go)
        elif what == "rust":
            programs.each(blocks, ("rust",), programs.rust)
    print("%d ran, %d failed, in %.1f s" % (len(report.passed) + len(report.failures), len(report.failures),
                                           time.time() - t0))
    if not report.passed and not report.failures:
        print("FAIL  nothing of %s to run" % ", ".join(args.run))
        return 1
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
