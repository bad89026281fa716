#!/usr/bin/env python3
"""`payretry check` and the safer config, end to end.

The real `payretry` binary against the real `payretry-sim` (cli_test.py's
harness): `check` exits 0, 3, 7 or 11 as docs/cli.md says; secrets come from
*_env variables and *_file files, and a missing one is refused naming the key
and never the secret; a typo gets "did you mean"; a submit with no create path
anywhere is refused with nothing sent and nothing recorded.

    config_check_test.py --cli build/cli/payretry --sim build/sim/payretry-sim [unittest args]
"""

import json
import os
import socket
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_test  # noqa: E402  (the harness: Simulator, CliCase)

API_KEY = cli_test.API_KEY


def closed_port():
    """A loopback port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class CheckTests(cli_test.CliCase):
    def test_a_good_config_exits_0_and_opens_and_reads_its_ledger(self):
        p = self.run_cli("check", self.config, config=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("config    valid", p.stdout)
        self.assertIn("stripe", p.stdout)
        self.assertIn("opened and read", p.stdout)
        self.assertTrue(os.path.exists(self.ledger), "the SQLite ledger was opened (created)")
        doc = self.json_of(self.run_cli("check", "--json"))
        self.assertEqual(doc["ok"], True)
        self.assertEqual(doc["provider"], "stripe")
        self.assertEqual(doc["base_url"], self.sim.url)
        self.assertEqual(doc["ledger"], "sqlite://" + self.ledger)
        self.assertEqual(doc["warnings"], [])
        self.assertIsNone(doc["probe"])

    def test_probe_gets_an_http_answer_from_base_url_and_makes_no_payment(self):
        before = self.sim.admin("truth")
        doc = self.json_of(self.run_cli("check", "--probe", "--json"))
        self.assertEqual(doc["ok"], True)
        self.assertTrue(doc["probe"]["reachable"])
        self.assertGreaterEqual(doc["probe"]["http_status"], 100)
        after = self.sim.admin("truth")
        self.assertEqual(after["charges"], before["charges"], "the probe charged")
        self.assertEqual(after["requests"], before["requests"], "the probe reached the payment endpoint")

    def test_probe_of_a_closed_port_exits_11_with_one_document(self):
        path = self.write_config("closed.json", base_url="http://127.0.0.1:%d" % closed_port())
        p = self.run_cli("check", path, "--probe", "--timeout-ms", "2000", "--json", config=False)
        self.assertEqual(p.returncode, 11, p.stderr)
        doc = self.json_of(p)
        self.assertFalse(doc["ok"])
        self.assertFalse(doc["probe"]["reachable"])
        self.assertTrue(doc["probe"]["error"])
        self.assertIn("payretry: provider unreachable", p.stderr)
        # Without --probe the same config is fine: nothing is sent.
        self.assertEqual(self.run_cli("check", path, config=False).returncode, 0)

    def test_a_typo_exits_3_with_did_you_mean(self):
        path = self.write_config("typo.json", retry={"max_attemps": 3})
        p = self.run_cli("check", path, config=False)
        self.assert_clear_error(p, 3, 'retry.max_attemps: unknown key; did you mean "max_attempts"?')
        p = self.run_cli("check", path, "--json", config=False)
        self.assertEqual(p.returncode, 3)
        self.assertEqual(self.json_of(p)["error"]["exit_code"], 3)

    def test_a_ledger_that_cannot_be_opened_exits_7(self):
        path = self.write_config("noledger.json", ledger="sqlite://" + os.path.join(self.dir, "missing", "l.db"))
        self.assert_clear_error(self.run_cli("check", path, config=False), 7, "ledger")

    def test_warnings_name_a_memory_ledger_and_a_missing_create_path(self):
        path = self.write_config("generic.json", provider="generic", ledger="memory:")
        with open(path) as f:
            cfg = json.load(f)
        del cfg["create_path"]
        with open(path, "w") as f:
            json.dump(cfg, f)
        doc = self.json_of(self.run_cli("check", path, "--json", config=False))
        self.assertEqual(doc["ok"], True)
        warnings = " ".join(doc["warnings"])
        self.assertIn("create_path: provider generic has none", warnings)
        self.assertIn("ledger is memory:", warnings)

    def test_a_sqlite_ledger_that_did_not_exist_is_a_warning(self):
        fresh = os.path.join(self.dir, "fresh.db")
        path = self.write_config("fresh.json", ledger="sqlite://" + fresh)
        doc = self.json_of(self.run_cli("check", path, "--json", config=False))
        self.assertEqual(doc["ok"], True)
        self.assertIn("ledger: %s did not exist" % fresh, " ".join(doc["warnings"]))
        # Once it exists, no warning.
        doc = self.json_of(self.run_cli("check", path, "--json", config=False))
        self.assertEqual(doc["warnings"], [])

    def test_warnings_show_even_when_the_service_logs_only_errors(self):
        path = self.write_config("quiet.json", provider="generic", log={"level": "error"})
        with open(path) as f:
            cfg = json.load(f)
        del cfg["create_path"]
        with open(path, "w") as f:
            json.dump(cfg, f)
        doc = self.json_of(self.run_cli("check", path, "--json", config=False))
        self.assertIn("create_path: provider generic has none", " ".join(doc["warnings"]))

    def test_usage_errors_exit_2(self):
        self.assert_clear_error(self.run_cli("check", "a.json", "b.json", config=False), 2, "unexpected argument")
        self.assert_clear_error(self.run_cli("check", self.config), 2, "give the config once")
        self.assert_clear_error(self.run_cli("check", "--timeout-ms", "0"), 2, "--timeout-ms")

    def test_help_lists_check_and_exit_code_11(self):
        p = self.run_cli("--help", config=False)
        self.assertEqual(p.returncode, 0)
        self.assertIn("check [CONFIG]", p.stdout)
        self.assertIn(" 11  check --probe", p.stdout)


class SecretTests(cli_test.CliCase):
    def config_with_auth(self, name, auth):
        return self.write_config(name, auth=auth)

    def test_bearer_from_an_environment_variable_pays(self):
        path = self.config_with_auth("env.json", {"bearer_env": "PAYRETRY_CLI_TEST_KEY"})
        o = self.order("env")
        p = self.run_cli("submit", o, "--body", self.body(o), "--config", path, config=False,
                         env={"PAYRETRY_CLI_TEST_KEY": API_KEY})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.sim.charges(o), 1)

    def test_bearer_from_a_file_with_a_trailing_newline_pays(self):
        secret = os.path.join(self.dir, "stripe-key")
        with open(secret, "w") as f:
            f.write(API_KEY + "\n")
        path = self.config_with_auth("file.json", {"bearer_file": secret})
        o = self.order("file")
        p = self.run_cli("submit", o, "--body", self.body(o), "--config", path, config=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.sim.charges(o), 1)

    def test_a_missing_variable_or_file_exits_3_naming_key_and_source_and_sends_nothing(self):
        requests = self.sim.admin("truth")["requests"]
        path = self.config_with_auth("unset.json", {"bearer_env": "PAYRETRY_CLI_TEST_UNSET"})
        o = self.order("unset")
        p = self.run_cli("submit", o, "--body", self.body(o), "--config", path, config=False)
        self.assert_clear_error(p, 3, "auth.bearer_env", "PAYRETRY_CLI_TEST_UNSET", "is not set")
        missing = os.path.join(self.dir, "no-such-secret")
        path = self.config_with_auth("nofile.json", {"bearer_file": missing})
        p = self.run_cli("check", path, config=False)
        self.assert_clear_error(p, 3, "auth.bearer_file", missing)
        self.assertEqual(self.sim.admin("truth")["requests"], requests, "a request was sent")

    def test_two_forms_of_one_secret_exit_3_without_echoing_it(self):
        path = self.config_with_auth("both.json", {"bearer": API_KEY, "bearer_env": "PAYRETRY_CLI_TEST_KEY"})
        p = self.run_cli("check", path, config=False, env={"PAYRETRY_CLI_TEST_KEY": API_KEY})
        self.assert_clear_error(p, 3, "auth.bearer: give only one of bearer, bearer_env or bearer_file")
        # run_cli asserts API_KEY appears in neither stream.


class CreatePathTests(cli_test.CliCase):
    def generic_config(self):
        path = self.write_config("generic.json", provider="generic")
        with open(path) as f:
            cfg = json.load(f)
        del cfg["create_path"]
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def test_no_create_path_anywhere_is_refused_with_nothing_sent_or_recorded(self):
        path = self.generic_config()
        o = self.order("nopath")
        stats = self.sim.admin("stats")["requests"]
        p = self.run_cli("submit", o, "--body", self.body(o), "--config", path, config=False)
        self.assert_clear_error(p, 3, "create_path: profile generic has none", "nothing sent")
        self.assertEqual(self.sim.admin("stats")["requests"], stats, "a request was sent")
        self.assert_clear_error(self.run_cli("ledger", "show", o, "--config", path, config=False), 6)
        # The same order goes through once the submit names a path.
        p = self.run_cli("submit", o, "--body", self.body(o), "--path", "/v1/payments", "--config", path,
                         config=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.sim.charges(o), 1)


if __name__ == "__main__":
    cli_test.main()  # the harness's flags; runs this module's tests
