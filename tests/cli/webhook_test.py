#!/usr/bin/env python3
"""`payretry webhook verify` and `payretry webhook apply`, end to end.

The real `payretry` binary (cli_test.py's harness) on captured raw HTTP/1.1
requests: Stripe events signed here with HMAC as Stripe signs them, and one
Adyen item read with --provider. verify says verified or refused and names
the events without opening the config's ledger; apply records them in it,
settling an UNKNOWN payment once.

    webhook_test.py --cli build/cli/payretry --sim build/sim/payretry-sim [unittest args]
"""

import base64
import hashlib
import hmac
import json
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_test  # noqa: E402  (the harness: Simulator, CliCase)

SECRET = "whsec_cli_webhook_test_secret"
ADYEN_KEY = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"


def stripe_event(event_id, order_id, status="succeeded"):
    return json.dumps({
        "id": event_id, "object": "event", "type": "payment_intent." + status,
        "data": {"object": {"id": "pi_" + event_id, "object": "payment_intent", "status": status,
                            "metadata": {"order_id": order_id}}},
    }, indent=2).encode()


def stripe_signature(body, secret=SECRET, t=None):
    t = int(time.time()) if t is None else t
    return "t=%d,v1=%s" % (t, hmac.new(secret.encode(), b"%d." % t + body, hashlib.sha256).hexdigest())


def raw_request(body, headers, target="/hooks/stripe", eol=b"\n", content_length=True):
    lines = [b"POST " + target.encode() + b" HTTP/1.1", b"Host: shop.example"]
    lines += [("%s: %s" % (k, v)).encode() for k, v in headers]
    if content_length:
        lines.append(b"Content-Length: %d" % len(body))
    return eol.join(lines) + eol + eol + body


class WebhookTests(cli_test.CliCase):
    def setUp(self):
        super().setUp()
        self.config = self.write_config(webhook={"secret": SECRET})

    def request_file(self, data, name="request.http"):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def signed_request(self, event_id, order, **kw):
        body = stripe_event(event_id, order)
        return self.request_file(raw_request(body, [("Content-Type", "application/json"),
                                                    ("Stripe-Signature", stripe_signature(body))], **kw))

    def test_verify_says_verified_names_the_events_and_never_opens_the_ledger(self):
        o = self.order("v")
        p = self.run_cli("webhook", "verify", "--request", self.signed_request("evt_v1", o))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"verdict\s+verified")
        self.assertRegex(p.stdout, r"scheme\s+stripe")
        self.assertRegex(p.stdout, r"reply\s+200, no body")
        self.assertRegex(p.stdout, r"evt_v1\s+payment_intent\.succeeded\s+" + o + r"\s+pi_evt_v1\s+succeeded")
        self.assertNotIn("effect", p.stdout)
        self.assertFalse(os.path.exists(self.ledger), "verify opened the config's ledger")

    def test_verify_refuses_another_secret_a_stale_signature_and_a_tampered_body(self):
        o = self.order("forged")
        body = stripe_event("evt_f", o)
        cases = {
            "secret": raw_request(body, [("Stripe-Signature", stripe_signature(body, secret="whsec_other"))]),
            "stale": raw_request(body, [("Stripe-Signature", stripe_signature(body, t=int(time.time()) - 3600))]),
            "tampered": raw_request(body.replace(b"succeeded", b"canceled"),
                                    [("Stripe-Signature", stripe_signature(body))]),
        }
        for what, data in cases.items():
            p = self.run_cli("webhook", "verify", "--request", self.request_file(data), "--json")
            self.assertEqual(p.returncode, 1, (what, p.stdout, p.stderr))
            d = self.json_of(p)
            self.assertFalse(d["verified"])
            self.assertFalse(d["recorded"])
            self.assertEqual(d["reply"], {"status": 400, "content_type": "text/plain", "body": "refused"})
            self.assertEqual(d["outcome"]["verdict"], "refused")
            self.assertTrue(d["outcome"]["why"])
        p = self.run_cli("webhook", "verify", "--request", self.request_file(cases["secret"]))
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stdout, r"verdict\s+refused \(not verified\)")
        # A stale capture's signature checks out with a wider window.
        p = self.run_cli("webhook", "verify", "--request", self.request_file(cases["stale"]), "--tolerance", "2h")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertFalse(os.path.exists(self.ledger))

    def test_verify_reads_stdin_with_crlf_lines_and_honours_content_length(self):
        o = self.order("stdin")
        body = stripe_event("evt_s", o)
        data = raw_request(body, [("Stripe-Signature", stripe_signature(body))], eol=b"\r\n") + b"\r\n"
        p = self.run_cli("webhook", "verify", "--request", "-", "--json", stdin=data.decode())
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        d = self.json_of(p)
        self.assertTrue(d["verified"])
        self.assertEqual([e["event_id"] for e in d["outcome"]["events"]], ["evt_s"])
        # Without Content-Length the body is the rest of the file: an extra newline is another body.
        data = raw_request(body, [("Stripe-Signature", stripe_signature(body))], content_length=False)
        self.assertEqual(self.run_cli("webhook", "verify", "--request", self.request_file(data)).returncode, 0)
        self.assertEqual(self.run_cli("webhook", "verify", "--request", self.request_file(data + b"\n")).returncode, 1)

    def test_provider_overrides_the_configs_to_read_an_adyen_item(self):
        config = self.write_config("adyen.json", webhook={"secret": ADYEN_KEY})
        fields = ["8815", "", "ShopAccount", "ad-1", "1130", "EUR", "AUTHORISATION", "true"]
        sig = base64.b64encode(hmac.new(bytes.fromhex(ADYEN_KEY), ":".join(fields).encode(), hashlib.sha256).digest())
        item = {"NotificationRequestItem": {
            "additionalData": {"hmacSignature": sig.decode()}, "amount": {"currency": "EUR", "value": 1130},
            "eventCode": "AUTHORISATION", "merchantAccountCode": "ShopAccount", "merchantReference": "ad-1",
            "pspReference": "8815", "success": "true"}}
        body = json.dumps({"live": "false", "notificationItems": [item]}).encode()
        req = self.request_file(raw_request(body, [("Content-Type", "application/json")], target="/hooks/adyen"))
        p = self.run_cli("webhook", "verify", "--request", req, "--provider", "adyen", "--config", config, config=False)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"scheme\s+adyen")
        self.assertRegex(p.stdout, r"reply\s+200 text/plain, body \[accepted\]")
        self.assertIn("8815:AUTHORISATION:true", p.stdout)
        # Read as the config's Stripe, the same request is refused.
        p = self.run_cli("webhook", "verify", "--request", req, "--config", config, config=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)

    def test_apply_records_settles_an_unknown_payment_once_then_a_duplicate(self):
        o = self.order("apply")
        self.sim.script(o, ["lost_response"] * 3)
        self.assertEqual(self.submit(o).returncode, 4)  # UNKNOWN
        req = self.signed_request("evt_a1", o)
        p = self.run_cli("webhook", "apply", "--request", req)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"verdict\s+accepted")
        self.assertRegex(p.stdout, r"evt_a1\s+.*\s+succeeded\s+settled\s+UNKNOWN -> SUCCEEDED")
        # The event's money state in its own column ("-" from a library whose
        # events do not name one yet).
        self.assertRegex(p.stdout, r"effect\s+state\s+money")
        self.assertRegex(p.stdout, r"(?m)UNKNOWN -> SUCCEEDED\s+(-|unknown|awaiting_customer|pending|authorized|paid"
                                   r"|partly_refunded|refunded|failed)$")
        show = self.json_of(self.run_cli("ledger", "show", o, "--json"))
        self.assertEqual(show["payment"]["state"], "SUCCEEDED")
        p = self.run_cli("webhook", "apply", "--request", req, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        d = self.json_of(p)
        self.assertTrue(d["recorded"])
        self.assertEqual([e["effect"] for e in d["outcome"]["events"]], ["duplicate"])
        self.assertEqual(self.sim.charges(o), 1)

    def test_bad_requests_and_configs_are_clear_errors(self):
        p = self.run_cli("webhook", "verify")
        self.assert_clear_error(p, 2, "--request")
        p = self.run_cli("webhook", "check", "--request", "x")
        self.assert_clear_error(p, 2, "verify or apply")
        p = self.run_cli("webhook", "verify", "--request", self.request_file(b"hello\n\n{}"))
        self.assert_clear_error(p, 2, "METHOD TARGET HTTP/1.1")
        p = self.run_cli("webhook", "verify", "--request", self.request_file(b"POST / HTTP/1.1\nContent-Length: 9\n\n{}"))
        self.assert_clear_error(p, 2, "Content-Length")
        p = self.run_cli("webhook", "verify", "--request", os.path.join(self.dir, "missing.http"))
        self.assert_clear_error(p, 2, "missing.http")
        p = self.run_cli("webhook", "apply", "--request", self.signed_request("evt_x", "o"), "--tolerance", "1h")
        self.assert_clear_error(p, 2, "--tolerance")
        no_webhook = self.write_config("plain.json")
        p = self.run_cli("webhook", "verify", "--request", self.signed_request("evt_y", "o"), "--config", no_webhook,
                         config=False)
        self.assert_clear_error(p, 3, "webhook.secret")

    def test_help_documents_the_request_format_and_the_memory_ledger(self):
        p = self.run_cli("webhook", "--help", config=False)
        self.assertEqual(p.returncode, 0)
        self.assertIn("WITHOUT RECORDING ANYTHING", p.stdout)
        self.assertIn('"ledger": "memory:"', p.stdout)
        self.assertIn("POST /hooks/stripe HTTP/1.1", p.stdout)
        top = self.run_cli("--help", config=False)
        self.assertIn("webhook verify", top.stdout)
        self.assertIn("webhook apply", top.stdout)


if __name__ == "__main__":
    cli_test.main()  # the harness's flags; runs this module's tests
