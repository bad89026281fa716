#!/usr/bin/env python3
"""`payretry ledger prune --older-than DUR`, end to end.

The real `payretry` binary against the real `payretry-sim` and a real SQLite
ledger (cli_test.py's harness): SUCCEEDED and FAILED payments older than the
duration go, with their attempts; an UNKNOWN one stays, whatever its age.

    ledger_prune_test.py --cli build/cli/payretry --sim build/sim/payretry-sim [unittest args]
"""

import os
import sys
import sqlite3

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_test  # noqa: E402  (the harness: Simulator, CliCase)


class PruneTests(cli_test.CliCase):
    def test_prune_deletes_old_settled_payments_and_never_an_unknown_one(self):
        ok, declined, unknown = self.order("ok"), self.order("declined"), self.order("unknown")
        self.sim.script(declined, ["decline"])
        self.sim.script(unknown, ["lost_response"] * 3)
        self.assertEqual(self.submit(ok).returncode, 0)
        self.assertEqual(self.submit(declined).returncode, 1)
        self.assertEqual(self.submit(unknown).returncode, 4)

        # Nothing is that old yet.
        doc = self.json_of(self.run_cli("ledger", "prune", "--older-than", "1d", "--json"))
        self.assertEqual(doc["pruned"], 0)
        self.assertEqual(self.run_cli("ledger", "show", ok).returncode, 0)

        # Younger than a day is refused: an application may still submit such an order again,
        # and a pruned order would be charged again under a new key.
        self.assert_clear_error(self.run_cli("ledger", "prune", "--older-than", "20ms"), 2, "too recent")
        # Three days pass (the rows are backdated in the SQLite file itself).
        with sqlite3.connect(self.ledger) as db:
            db.execute("UPDATE payments SET updated_at = updated_at - 3 * 86400000, "
                       "created_at = created_at - 3 * 86400000")
        p = self.run_cli("ledger", "prune", "--older-than", "2d")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("pruned 2 SUCCEEDED and FAILED payments", p.stdout)
        for gone in (ok, declined):
            self.assert_clear_error(self.run_cli("ledger", "show", gone), 6, "no payment for order " + gone)
        kept = self.json_of(self.run_cli("ledger", "show", unknown, "--json"))
        self.assertEqual(kept["payment"]["state"], "UNKNOWN")
        self.assertEqual(len(kept["attempts"]), 3, "its history stays with it")
        self.assertEqual(self.sim.charges(ok), 1, "pruning sends nothing")

    def test_a_missing_or_bad_duration_is_a_usage_error(self):
        self.assert_clear_error(self.run_cli("ledger", "prune"), 2, "--older-than")
        self.assert_clear_error(self.run_cli("ledger", "prune", "--older-than", "10"), 2, "--older-than")
        self.assert_clear_error(self.run_cli("ledger", "prune", "--older-than", "0s"), 2, "longer than 0")
        self.assert_clear_error(self.run_cli("ledger", "prune", "--older-than", "1d", "--state", "FAILED"), 2,
                                "only --older-than")


if __name__ == "__main__":
    cli_test.main()  # the harness's flags; runs this module's tests
