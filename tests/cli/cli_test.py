#!/usr/bin/env python3
"""The payretry command line, end to end.

The real `payretry` binary against the real `payretry-sim` on 127.0.0.1 (a
free port), with real SQLite ledgers in temporary folders. Faults come from
exact per-order scripts (POST /__admin/script) on a simulator whose seeded mix
is empty, so every outcome below is fixed; the demo tests run the seeded mix.

Checks: every command and every exit code, the --json documents field by
field, and that bad input (unknown order, bad config, a body that is not JSON,
an unreadable or corrupt ledger) gives one clear message on stderr, a
non-zero exit and never a stack trace.

    cli_test.py --cli build/cli/payretry --sim build/sim/payretry-sim [unittest args]
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.dont_write_bytecode = True

CLI = SIM = None
API_KEY = "sk_test_cli_secret_value"
CARD = "4242424242424242"

# What must never reach a user's terminal.
CRASH_MARKERS = ("Traceback", "terminate called", "AddressSanitizer", "runtime error:", "Segmentation",
                 "core dumped", "what():")


class Simulator:
    """payretry-sim as a process, with an empty fault mix: only scripts fault."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [SIM, "--port", "0", "--seed", "7", "--api-key", API_KEY, "--slow-ms", "2000",
             "--retry-after-s", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if "listening on 127.0.0.1:" not in line:
            self.proc.kill()
            raise RuntimeError("payretry-sim did not start: %r %s" % (line, self.proc.stderr.read()))
        self.port = int(line.rsplit(":", 1)[1])
        self.url = "http://127.0.0.1:%d" % self.port

    def admin(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + "/__admin/" + path, data=data,
                                     method="GET" if body is None else "POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def script(self, order, faults):
        self.admin("script", {"order_id": order, "faults": faults})

    def charges(self, order):
        return self.admin("truth?order_id=" + order)["charges"]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class CliCase(unittest.TestCase):
    sim = None

    @classmethod
    def setUpClass(cls):
        cls.sim = Simulator()

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="payretry-cli-test-")
        self.ledger = os.path.join(self.dir, "ledger.db")
        self.config = self.write_config()
        # Order ids unique per test, so the shared simulator's truth is per test.
        self.prefix = self.id().rsplit(".", 1)[1][:40] + "-"

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write_config(self, name="config.json", **extra):
        cfg = {
            "provider": "stripe",
            "base_url": self.sim.url,
            "create_path": "/v1/payments",
            "auth": {"bearer": API_KEY},
            "retry": {"max_attempts": 3, "connect_timeout_ms": 300, "attempt_timeout_ms": 1000,
                      "deadline_ms": 5000, "backoff_base_ms": 10, "backoff_cap_ms": 50,
                      "min_attempt_ms": 50, "jitter_seed": 11},
            "ledger": "sqlite://" + self.ledger,
        }
        cfg.update(extra)
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def order(self, name):
        return self.prefix + name

    @staticmethod
    def body(order, amount=1000, extra=""):
        return '{"order_id":"%s","amount":%d,"currency":"eur"%s}' % (order, amount, extra)

    def run_cli(self, *args, config=True, stdin=None, env=None, timeout=120):
        argv = [CLI] + list(args)
        if config:
            argv += ["--config", self.config]
        e = dict(os.environ)
        e.pop("PAYRETRY_CONFIG", None)
        if env:
            e.update(env)
        p = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=e, timeout=timeout)
        for marker in CRASH_MARKERS:
            self.assertNotIn(marker, p.stderr, "crash marker in stderr of %r" % (args[:2],))
        self.assertNotIn(API_KEY, p.stdout + p.stderr, "the config's credential was printed")
        return p

    def submit(self, order, body=None, *more, **kw):
        return self.run_cli("submit", order, "--body", body or self.body(order), *more, **kw)

    def json_of(self, p):
        self.assertEqual(p.stdout.count("\n"), 1, "--json prints exactly one line: %r" % p.stdout)
        return json.loads(p.stdout)

    def assert_clear_error(self, p, code, *phrases):
        self.assertEqual(p.returncode, code, "stdout=%r stderr=%r" % (p.stdout, p.stderr))
        self.assertTrue(p.stderr.startswith("payretry: "), p.stderr)
        for phrase in phrases:
            self.assertIn(phrase, p.stderr)
        self.assertEqual(p.stdout, "", "errors go to stderr only")


class CommandTests(CliCase):
    def test_submit_succeeded_exits_0_with_every_json_field(self):
        o = self.order("ok")
        p = self.submit(o, None, "--key", "cli-key-ok-1", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        r = self.json_of(p)
        self.assertEqual(r["outcome"], "SUCCEEDED")
        self.assertEqual(r["delivery"], "delivered")
        self.assertEqual(r["order_id"], o)
        self.assertEqual(r["idempotency_key"], "cli-key-ok-1")
        self.assertEqual(r["http_status"], 200)
        self.assertTrue(r["provider_payment_id"].startswith("pi_"), r)
        self.assertEqual(r["provider_status"], "succeeded")
        self.assertIsNone(r["error"])
        self.assertFalse(r["from_ledger"])
        self.assertFalse(r["queried"])
        self.assertEqual(len(r["attempts"]), 1)
        a = r["attempts"][0]
        self.assertEqual((a["attempt"], a["http_status"], a["verdict"], a["replayed"]), (1, 200, "success", False))
        self.assertIsNone(a["transport_error"])
        self.assertEqual(self.sim.charges(o), 1)

    def test_resubmitting_an_order_returns_the_ledger_outcome_and_sends_nothing(self):
        o = self.order("again")
        first = self.json_of(self.submit(o, None, "--json"))
        requests = self.sim.admin("truth")["requests"]
        p = self.submit(o, None, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        r = self.json_of(p)
        self.assertEqual(r["outcome"], "SUCCEEDED")
        self.assertTrue(r["from_ledger"])
        self.assertEqual(r["attempts"], [])
        self.assertEqual(r["idempotency_key"], first["idempotency_key"])
        self.assertEqual(r["provider_payment_id"], first["provider_payment_id"])
        self.assertEqual(self.sim.admin("truth")["requests"], requests, "nothing sent")
        self.assertEqual(self.sim.charges(o), 1)

    def test_table_output_is_readable_and_never_shows_the_body(self):
        o = self.order("table")
        p = self.submit(o, self.body(o, extra=',"card":"%s"' % CARD), "--verbose")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"outcome\s+SUCCEEDED")
        self.assertRegex(p.stdout, r"order\s+" + o)
        self.assertIn("verdict", p.stdout)  # the attempts table
        self.assertNotIn(CARD, p.stdout + p.stderr)

    def test_decline_is_failed_and_exits_1(self):
        o = self.order("declined")
        self.sim.script(o, ["decline"])
        p = self.submit(o, None, "--json")
        self.assertEqual(p.returncode, 1, p.stderr)
        r = self.json_of(p)
        self.assertEqual((r["outcome"], r["delivery"], r["http_status"]), ("FAILED", "delivered", 402))
        self.assertIn("card_declined", r["error"])
        self.assertEqual(self.sim.charges(o), 0)

    def test_lost_responses_end_unknown_exit_4_and_reconcile_with_the_body_settles_once(self):
        o = self.order("lost")
        self.sim.script(o, ["lost_response"] * 3)
        p = self.submit(o, None, "--json")
        self.assertEqual(p.returncode, 4, p.stderr)
        r = self.json_of(p)
        self.assertEqual((r["outcome"], r["delivery"]), ("UNKNOWN", "maybe_processed"))
        self.assertEqual(len(r["attempts"]), 3)
        self.assertEqual(len({a["verdict"] for a in r["attempts"]}), 1)
        self.assertEqual(self.sim.charges(o), 1, "charged on the first attempt")

        # Stripe's only lookup is a same-key re-send: query cannot settle it.
        q = self.run_cli("query", o, "--json")
        self.assertEqual(q.returncode, 4, q.stderr)
        self.assertEqual(self.json_of(q)["outcome"], "UNKNOWN")

        # Without the body reconcile leaves it UNKNOWN (exit 4) ...
        rec = self.run_cli("reconcile", "--json", "--quiet")
        self.assertEqual(rec.returncode, 4, rec.stderr)
        doc = self.json_of(rec)
        self.assertEqual((doc["examined"], doc["UNKNOWN"], doc["SUCCEEDED"]), (1, 1, 0))
        self.assertIn("no body", doc["payments"][0]["error"])

        # ... with DIR/ORDER.json it re-sends the same key and bytes (exit 0).
        bodies = os.path.join(self.dir, "bodies")
        os.mkdir(bodies)
        with open(os.path.join(bodies, o + ".json"), "w") as f:
            f.write(self.body(o))
        rec = self.run_cli("reconcile", "--body-dir", bodies, "--json")
        self.assertEqual(rec.returncode, 0, rec.stderr)
        doc = self.json_of(rec)
        self.assertEqual((doc["examined"], doc["SUCCEEDED"], doc["UNKNOWN"], doc["errors"]), (1, 1, 0, 0))
        settled = doc["payments"][0]
        self.assertEqual((settled["order_id"], settled["outcome"]), (o, "SUCCEEDED"))
        self.assertEqual(settled["idempotency_key"], r["idempotency_key"])
        self.assertTrue(settled["attempts"][-1]["replayed"], "the provider replayed the first charge")
        self.assertEqual(self.sim.charges(o), 1, "settled without a second charge")

        # ledger show: the row and every attempt recorded for it.
        s = self.run_cli("ledger", "show", o, "--json")
        self.assertEqual(s.returncode, 0, s.stderr)
        d = self.json_of(s)
        self.assertEqual(d["payment"]["order_id"], o)
        self.assertEqual(d["payment"]["state"], "SUCCEEDED")
        self.assertEqual(d["payment"]["idempotency_key"], r["idempotency_key"])
        self.assertEqual(d["payment"]["attempts"], 4)
        self.assertEqual([a["attempt"] for a in d["attempts"]], [1, 2, 3, 4])
        self.assertEqual(d["attempts"][-1]["http_status"], 200)
        self.assertTrue(d["attempts"][-1]["replayed"])
        t = self.run_cli("ledger", "show", o)
        self.assertEqual(t.returncode, 0, t.stderr)
        self.assertRegex(t.stdout, r"state\s+SUCCEEDED")

    def test_in_progress_exits_5_while_a_killed_workers_lease_lives(self):
        o = self.order("held")
        self.sim.script(o, ["slow"])  # the provider holds it 2 s: the worker is mid-attempt
        worker = subprocess.Popen([CLI, "submit", o, "--body", self.body(o), "--config", self.config],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(400):
                s = self.run_cli("ledger", "list", "--state", "IN_FLIGHT", "--json")
                if any(row["order_id"] == o for row in json.loads(s.stdout)):
                    break
                time.sleep(0.01)
            else:
                self.fail("the payment never became IN_FLIGHT")
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.wait()
        # The lease is the deadline plus 30 s: it outlives this test.
        p = self.submit(o, None, "--json")
        self.assertEqual(p.returncode, 5, p.stderr)
        r = self.json_of(p)
        self.assertEqual(r["outcome"], "IN_PROGRESS")
        self.assertTrue(r["from_ledger"])

    def test_mismatch_exits_8_and_sends_nothing(self):
        o = self.order("mismatch")
        self.assertEqual(self.submit(o).returncode, 0)
        requests = self.sim.admin("truth")["requests"]
        p = self.submit(o, self.body(o, amount=999))
        self.assert_clear_error(p, 8, "mismatch", "other parameters")
        self.assertEqual(self.sim.admin("truth")["requests"], requests)

    def test_ledger_list_filters_by_state_and_age(self):
        ok, declined = self.order("l-ok"), self.order("l-declined")
        self.sim.script(declined, ["decline"])
        self.submit(ok)
        self.submit(declined)
        p = self.run_cli("ledger", "list", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = {r["order_id"]: r for r in self.json_of(p)}
        self.assertEqual(set(rows), {ok, declined})
        self.assertEqual((rows[ok]["state"], rows[declined]["state"]), ("SUCCEEDED", "FAILED"))
        failed = self.json_of(self.run_cli("ledger", "list", "--state", "FAILED", "--json"))
        self.assertEqual([r["order_id"] for r in failed], [declined])
        lower = self.json_of(self.run_cli("ledger", "list", "--state", "failed", "--json"))
        self.assertEqual([r["order_id"] for r in lower], [declined], "--state is not case-sensitive")
        old = self.run_cli("ledger", "list", "--older-than", "1h", "--json")
        self.assertEqual((old.returncode, self.json_of(old)), (0, []))
        one = self.json_of(self.run_cli("ledger", "list", "--limit", "1", "--json"))
        self.assertEqual(len(one), 1)
        table = self.run_cli("ledger", "list")
        self.assertIn(ok, table.stdout)
        self.assertIn("2 payments", table.stdout)

    def test_the_money_state_is_printed_beside_the_outcome_and_passed_through_in_json(self):
        # The outcome says whether the request took effect, the money state
        # whether money moved (fulfil on paid, never on SUCCEEDED alone): the
        # tables must show the second as the library wrote it.
        names = {"unknown", "awaiting_customer", "pending", "authorized", "paid", "partly_refunded",
                 "refunded", "failed"}
        ok, declined = self.order("m-ok"), self.order("m-declined")
        self.sim.script(declined, ["decline"])
        for o in (ok, declined):
            r = self.json_of(self.submit(o, None, "--json"))
            self.assertIn(r["money_state"], names, r)
            table = self.run_cli("query", o)
            self.assertRegex(table.stdout, r"(?m)^money state\s+%s$" % self.json_of(self.run_cli("query", o, "--json"))["money_state"])
            doc = self.json_of(self.run_cli("ledger", "show", o, "--json"))
            money = doc["payment"]["money_state"]
            self.assertIn(money, names, doc)
            show = self.run_cli("ledger", "show", o)
            self.assertRegex(show.stdout, r"(?m)^money state\s+%s$" % money)
            self.assertRegex(show.stdout, r"reason\s+money\s+then wait ms")
            for a in doc["attempts"]:
                self.assertIn(a["money_state"], names, a)
                self.assertRegex(show.stdout, r"(?m)^%d\s.*\s%s\s+\S+\s+(yes|no)$" % (a["attempt"], a["money_state"]))
        rows = {r["order_id"]: r for r in self.json_of(self.run_cli("ledger", "list", "--json"))}
        listed = self.run_cli("ledger", "list").stdout
        self.assertRegex(listed, r"state\s+money\s+delivery")
        for o, state in ((ok, "SUCCEEDED"), (declined, "FAILED")):
            self.assertIn(rows[o]["money_state"], names)
            self.assertRegex(listed, r"(?m)^%s\s+%s\s+%s\s" % (o, state, rows[o]["money_state"]))

    def test_reconcile_with_nothing_to_do_exits_0(self):
        p = self.run_cli("reconcile", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.json_of(p), {"examined": 0, "SUCCEEDED": 0, "FAILED": 0, "UNKNOWN": 0,
                                           "IN_PROGRESS": 0, "errors": 0, "payments": [], "failures": []})

    def test_body_from_a_file_and_from_stdin_is_sent_byte_for_byte(self):
        a, b = self.order("file"), self.order("stdin")
        path = os.path.join(self.dir, "body.json")
        with open(path, "w") as f:
            f.write(self.body(a))
        p = self.run_cli("submit", a, "--body-file", path, "--json")
        self.assertEqual((p.returncode, self.json_of(p)["outcome"]), (0, "SUCCEEDED"))
        p = self.run_cli("submit", b, "-", "--json", stdin=self.body(b))
        self.assertEqual((p.returncode, self.json_of(p)["outcome"]), (0, "SUCCEEDED"))
        # The same bytes again match the fingerprint: no mismatch, from the ledger.
        p = self.run_cli("submit", b, "--body-file", "-", "--json", stdin=self.body(b))
        self.assertEqual((p.returncode, self.json_of(p)["from_ledger"]), (0, True))

    def test_config_from_the_environment_as_a_path_or_as_json_text(self):
        o = self.order("env")
        p = self.run_cli("submit", o, "--body", self.body(o), config=False, env={"PAYRETRY_CONFIG": self.config})
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(self.config) as f:
            text = f.read()
        p = self.run_cli("query", o, "--json", config=False, env={"PAYRETRY_CONFIG": text})
        self.assertEqual((p.returncode, self.json_of(p)["outcome"]), (0, "SUCCEEDED"))

    def test_help_on_every_command_shows_examples_and_exit_codes(self):
        for cmd in (["submit"], ["query"], ["reconcile"], ["ledger"], ["demo"], []):
            p = self.run_cli(*cmd, "--help", config=False)
            self.assertEqual(p.returncode, 0, (cmd, p.stderr))
            self.assertIn("usage: payretry", p.stdout)
            self.assertIn("Examples", p.stdout)
            self.assertIn("Exit codes", p.stdout)
            self.assertIn("6  not found", p.stdout)
        p = self.run_cli("version", "--help", config=False)
        self.assertEqual(p.returncode, 0)

    def test_version_json(self):
        p = self.run_cli("version", "--json", config=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        v = self.json_of(p)
        self.assertRegex(v["version"], r"^\d+\.\d+\.\d+$")
        self.assertEqual(v["version_number"], v["built_with_version_number"])
        self.assertEqual(self.run_cli("version", config=False).stdout, "payretry %s\n" % v["version"])


class LogRotationTests(CliCase):
    @staticmethod
    def read(path):
        if not os.path.exists(path):
            return ""
        with open(path) as f:
            return f.read()

    def test_sighup_reopens_the_log_file_after_it_was_moved(self):
        """logrotate's way: move the file, send SIGHUP; the next lines go to a new file."""
        log = os.path.join(self.dir, "payretry.log")
        rotated = log + ".1"
        self.config = self.write_config(log={"path": log, "level": "info"})
        order = self.order("hup")
        # A 503, then a charge, each answered 600 ms after it arrived: the first attempt's
        # line is written while the second attempt waits.
        self.sim.script(order, ["503"])
        self.sim.admin("config", {"latency_ms": 600})
        try:
            argv = [CLI, "submit", order, "--body", self.body(order), "--config", self.config]
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.time() + 10
            while time.time() < deadline and '"event":"attempt"' not in self.read(log):
                time.sleep(0.02)
            os.rename(log, rotated)
            p.send_signal(signal.SIGHUP)
            out, err = p.communicate(timeout=30)
        finally:
            self.sim.admin("config", {"latency_ms": 0})
        self.assertEqual(p.returncode, 0, err)
        for marker in CRASH_MARKERS:
            self.assertNotIn(marker, err)
        old, new = self.read(rotated), self.read(log)
        self.assertIn('"event":"attempt"', old)
        self.assertNotIn('"event":"outcome"', old, "a line after SIGHUP went to the moved file")
        self.assertIn('"event":"outcome"', new)
        self.assertIn('"level":"info"', new)
        self.assertIn('"client":"stripe"', new)
        self.assertEqual(self.sim.charges(order), 1)


class BadInputTests(CliCase):
    def test_unknown_order_exits_6_for_query_and_ledger_show(self):
        for cmd in ("query", "ledger show"):
            p = self.run_cli(*cmd.split(), self.order("nobody"))
            self.assert_clear_error(p, 6, "no payment for order " + self.order("nobody"))

    def test_bad_config_exits_3_naming_the_key_and_never_the_secret(self):
        path = self.write_config("bad.json", retry={"max_attempts": 99})
        p = self.run_cli("query", "x", config=False, env={"PAYRETRY_CONFIG": path})
        self.assert_clear_error(p, 3, "retry.max_attempts")
        path = self.write_config("typo.json", retyr={})
        p = self.run_cli("query", "x", "--config", path, config=False)
        self.assert_clear_error(p, 3, "retyr", "unknown key")

    def test_config_without_a_ledger_exits_3_and_sends_nothing(self):
        # No "ledger" used to mean memory: silently: every submit of the CLI
        # minted a key that no later query or reconcile could find.
        cfg = {"provider": "stripe", "base_url": self.sim.url, "auth": {"bearer": API_KEY}}
        path = os.path.join(self.dir, "noledger.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        requests = self.sim.admin("truth")["requests"]
        o = self.order("noledger")
        p = self.run_cli("submit", o, "--body", self.body(o), "--config", path, config=False)
        self.assert_clear_error(p, 3, "ledger: is required", '"memory:"')
        self.assertEqual(self.sim.admin("truth")["requests"], requests, "a request was sent")

    def test_config_that_is_not_json_or_missing_exits_3(self):
        path = os.path.join(self.dir, "broken.json")
        with open(path, "w") as f:
            f.write('{"provider": "stripe",')
        self.assert_clear_error(self.run_cli("query", "x", "--config", path, config=False), 3, "not valid JSON")
        self.assert_clear_error(self.run_cli("query", "x", config=False), 3, "no config")
        self.assert_clear_error(self.run_cli("query", "x", "--config", os.path.join(self.dir, "nope.json"),
                                             config=False), 3, "cannot read config file")

    def test_body_that_is_not_json_exits_2_and_nothing_is_sent(self):
        o = self.order("notjson")
        requests = self.sim.admin("truth")["requests"]
        for body in ('{"amount": 10', "amount=10", '{"a":1} trailing'):
            self.assert_clear_error(self.submit(o, body), 2, "not valid JSON")
        self.assertEqual(self.sim.admin("truth")["requests"], requests)
        self.assertEqual(self.run_cli("ledger", "show", o).returncode, 6, "no ledger row either")

    def test_usage_errors_exit_2(self):
        cases = [
            (["submit"], "missing ORDER"),
            (["submit", "o1"], "no body"),
            (["submit", "o1", "--body", "{}", "--bogus"], "unknown option --bogus"),
            (["submit", "o1", "--body", "{}", "--deadline-ms", "soon"], "--deadline-ms"),
            (["query"], "missing ORDER"),
            (["ledger"], "subcommand"),
            (["ledger", "list", "--state", "LOST"], "--state"),
            (["ledger", "list", "--older-than", "ten minutes"], "--older-than"),
            (["ledger", "list", "--older-than", "10"], "--older-than"),  # seconds? minutes? a unit is required
            (["frobnicate"], "unknown command"),
        ]
        for argv, phrase in cases:
            self.assert_clear_error(self.run_cli(*argv), 2, phrase)
            # With --json the failure is the one document on stdout too.
            p = self.run_cli(*argv, "--json")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(phrase, p.stderr)
            doc = self.json_of(p)
            self.assertEqual(doc["error"]["exit_code"], 2, p.stdout)
            self.assertIn(phrase, doc["error"]["message"])
        for argv, phrase in [(["demo", "--crash", "--ledger", "memory"], "--crash needs --ledger sqlite"),
                             (["demo", "--payments", "0"], "--payments"),
                             (["version", "extra"], "unexpected argument")]:
            self.assert_clear_error(self.run_cli(*argv, config=False), 2, phrase)

    def test_corrupt_ledger_file_exits_7_with_a_clear_message(self):
        with open(self.ledger, "wb") as f:
            f.write(b"this is not a database" + bytes(range(256)) * 40)
        for argv in (["ledger", "list"], ["query", "o1"], ["submit", "o1", "--body", "{}"]):
            self.assert_clear_error(self.run_cli(*argv), 7, "ledger", "corrupt")

    def test_unreadable_ledger_path_exits_7(self):
        path = self.write_config("nodir.json", ledger="sqlite://" + os.path.join(self.dir, "missing", "l.db"))
        p = self.run_cli("ledger", "list", "--config", path, config=False)
        self.assert_clear_error(p, 7, "ledger", "does not exist")


class OperationTests(CliCase):
    """refund, capture, cancel and ledger show's operations, with the stripe
    profile's own create path (a PaymentIntent, whose id a refund names)."""

    def setUp(self):
        super().setUp()
        self.config = self.write_config("ops.json")
        with open(self.config) as f:
            cfg = json.load(f)
        del cfg["create_path"]
        with open(self.config, "w") as f:
            json.dump(cfg, f)

    @staticmethod
    def stripe_body(order, hold=False):
        extra = ',"confirm":true,"payment_method":"pm_card_visa","capture_method":"manual"' if hold else ""
        return '{"amount":1000,"currency":"usd","metadata":{"order_id":"%s"}%s}' % (order, extra)

    def payment_truth(self, order):
        truth = self.sim.admin("truth?order_id=" + order)
        self.assertEqual(len(truth["payments"]), 1, truth)
        return truth["payments"][0]

    def test_a_partial_refund_exits_0_and_one_that_does_not_fit_exits_2_with_nothing_sent(self):
        o = self.order("refund")
        self.assertEqual(self.submit(o, self.stripe_body(o)).returncode, 0)
        p = self.run_cli("refund", o, "--ref", "r1", "--amount", "400", "--body",
                         '{"reason":"requested_by_customer"}', "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        r = self.json_of(p)
        self.assertEqual((r["outcome"], r["money_state"], r["order_id"]), ("SUCCEEDED", "refunded", o + " refund r1"))
        truth = self.payment_truth(o)
        self.assertEqual(truth["refunded"], 400)
        self.assertEqual(truth["movements_by_key"], {r["idempotency_key"]: 1})

        # 700 of the 600 left: refused by the library, exit 2, no row, nothing sent.
        p = self.run_cli("refund", o, "--ref", "r2", "--amount", "700")
        self.assert_clear_error(p, 2, "refused, nothing sent")
        self.assert_clear_error(self.run_cli("ledger", "show", o + " refund r2"), 6)
        truth = self.payment_truth(o)
        self.assertEqual((truth["refunded"], len(truth["operations"])), (400, 1))

        # The same command again is the same refund, from the ledger; another amount, exit 8.
        again = self.json_of(self.run_cli("refund", o, "--ref", "r1", "--amount", "400", "--body",
                                          '{"reason":"requested_by_customer"}', "--json"))
        self.assertTrue(again["from_ledger"])
        self.assertEqual(again["idempotency_key"], r["idempotency_key"])
        self.assert_clear_error(self.run_cli("refund", o, "--ref", "r1", "--amount", "300"), 8)

        # The rest, then ledger show lists both refunds under the payment.
        p = self.run_cli("refund", o, "--ref", "r3")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"order\s+" + o + " refund r3")
        self.assertEqual(self.payment_truth(o)["refunded"], 1000)
        shown = self.json_of(self.run_cli("ledger", "show", o, "--json"))
        # All of it given back by refunds that succeeded: wholly refunded.
        self.assertEqual(shown["payment"]["money_state"], "refunded")
        self.assertEqual([(x["operation"], x["operation_ref"], x["amount"], x["state"]) for x in shown["operations"]],
                         [("refund", "r1", 400, "SUCCEEDED"), ("refund", "r3", 600, "SUCCEEDED")])
        table = self.run_cli("ledger", "show", o)
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertRegex(table.stdout, r"refund\s+r3\s+600\s+SUCCEEDED")
        self.assertIn("2 operations", table.stdout)

    def test_capture_and_cancel_of_holds(self):
        held, other = self.order("held"), self.order("other")
        for o in (held, other):
            self.assertEqual(self.json_of(self.submit(o, self.stripe_body(o, True), "--json"))["money_state"],
                             "authorized")
        p = self.run_cli("capture", held, "--ref", "c1", "--amount", "600", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.json_of(p)["money_state"], "paid")
        self.assertEqual(self.payment_truth(held)["captured"], 600)
        self.assert_clear_error(self.run_cli("cancel", held, "--ref", "x1"), 2, "refused, nothing sent")
        p = self.run_cli("cancel", other, "--ref", "x1", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.json_of(self.run_cli("ledger", "show", other, "--json"))["payment"]["money_state"], "failed")

    def test_bad_operation_arguments_exit_2_or_6(self):
        o = self.order("bad")
        self.assert_clear_error(self.run_cli("refund", o, "--amount", "5"), 2, "--ref")
        self.assert_clear_error(self.run_cli("cancel", o, "--ref", "x1", "--amount", "5"), 2, "no --amount")
        self.assert_clear_error(self.run_cli("refund", o, "--ref", "r1", "--body", "[1]"), 2, "one JSON object")
        self.assert_clear_error(self.run_cli("refund", o, "--ref", "r1", "--amount", "0"), 2)
        self.assert_clear_error(self.run_cli("refund", o, "--ref", "r1"), 6, "no payment for order " + o)


class DemoTests(unittest.TestCase):
    def run_demo(self, *args):
        p = subprocess.run([CLI, "demo", "--json", *args], capture_output=True, text=True, timeout=500)
        for marker in CRASH_MARKERS:
            self.assertNotIn(marker, p.stderr)
        return p

    def check_truth(self, d, payments):
        self.assertTrue(d["ok"])
        self.assertEqual(d["payments"], payments)
        self.assertEqual(d["provider"]["duplicate_charges"], 0)
        self.assertEqual(d["provider"]["charged_orders_reported_failed"], 0)
        self.assertEqual(d["provider"]["succeeded_orders_not_charged"], 0)
        # The money state against the simulator's charges: what a merchant ships on.
        self.assertEqual(d["provider"]["paid_orders_not_charged"], 0)
        self.assertEqual(d["provider"]["charged_orders_money_failed"], 0)
        after = d["after_reconcile"]
        money = after["money"]
        self.assertEqual(sum(money.values()), payments - after["never_recorded"])
        # The demo's Stripe payments succeed at once: every SUCCEEDED order
        # reads paid, and nothing else does.
        self.assertEqual(money["paid"], after["SUCCEEDED"])
        self.assertEqual(after["SUCCEEDED"] + after["FAILED"] + after["UNKNOWN"] + after["IN_FLIGHT"] +
                         after["PENDING"] + after["never_recorded"], payments)
        self.assertEqual((after["IN_FLIGHT"], after["PENDING"], after["never_recorded"]), (0, 0, 0))
        # Every SUCCEEDED order is one charge; the provider charged no order the ledger lost.
        self.assertEqual(d["provider"]["orders_charged"],
                         after["SUCCEEDED"] + d["provider"]["charged_orders_still_unknown"])
        self.assertEqual(d["provider"]["charges"], d["provider"]["orders_charged"])

    def test_demo_300_payments_exits_0_with_zero_duplicate_charges(self):
        p = self.run_demo("--payments", "300", "--seed", "42")
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        d = json.loads(p.stdout)
        self.check_truth(d, 300)
        before = d["before_reconcile"]
        self.assertEqual(before["SUCCEEDED"] + before["FAILED"] + before["UNKNOWN"] + before["IN_PROGRESS"], 300)
        self.assertEqual(before["call_errors"], 0)
        self.assertGreater(d["client"]["retries"], 0, "the fault mix made the client retry")
        rec = d["reconcile"]
        self.assertGreaterEqual(rec["examined"], before["UNKNOWN"])
        self.assertEqual(rec["UNKNOWN"], d["after_reconcile"]["UNKNOWN"])
        self.assertEqual(before["SUCCEEDED"] + rec["SUCCEEDED"], d["after_reconcile"]["SUCCEEDED"])
        # Progress went to stderr, never into the JSON on stdout.
        self.assertIn("submitted", p.stderr)
        # A scrape of pay_client_metrics after the chaos run says what the demo counted.
        m = d["metrics"]
        self.assertTrue(m["agree"], m)
        for outcome in ("SUCCEEDED", "FAILED", "UNKNOWN", "IN_PROGRESS"):
            self.assertEqual(m["payments"][outcome], before[outcome])
        self.assertGreater(m["attempts_started"], 300)

    def test_demo_crash_kills_a_worker_and_its_payments_settle_without_a_duplicate(self):
        p = self.run_demo("--crash", "--payments", "200", "--concurrency", "16", "--seed", "5")
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        d = json.loads(p.stdout)
        self.check_truth(d, 200)
        c = d["crash_run"]
        self.assertTrue(c["worker_killed"])
        self.assertGreaterEqual(c["created_at_kill"], 100)
        self.assertEqual(c["duplicate_charges_among_them"], 0)
        self.assertEqual(c["left_unsettled_now"].get("IN_FLIGHT", 0), 0)


def main():
    """Runs the tests of the __main__ module (this one, or a suite built on this harness)."""
    global CLI, SIM
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--sim", required=True)
    args, rest = ap.parse_known_args()
    CLI, SIM = os.path.abspath(args.cli), os.path.abspath(args.sim)
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()
