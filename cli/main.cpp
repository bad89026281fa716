// payretry: the command line over the public C API. Dispatches to one command
// per file; every error ends here as one "payretry: <what>" line on stderr and
// an exit code from common.hpp, never an uncaught exception.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "cjson/cJSON.h"
#include "commands.hpp"
#include "common.hpp"
#include "output.hpp"

namespace cli {

const char kExitCodesHelp[] =
    "Exit codes:\n"
    "  0  succeeded (or a read, reconcile or demo that went well)\n"
    "  1  failed: the provider definitively declined or rejected the payment\n"
    "     (webhook: the notification is refused, not verified)\n"
    "  2  usage error: bad flag, missing argument, body not JSON\n"
    "  3  config error: no config, or one the library refuses (the message names the key)\n"
    "  4  unknown: the payment may have been processed (reconcile: some left UNKNOWN)\n"
    "  5  in progress: another worker holds the order\n"
    "  6  not found: no such order in the ledger\n"
    "  7  ledger error: the ledger cannot be opened, read or written (or another I/O error;\n"
    "     webhook apply: verified but not stored, the provider must deliver it again)\n"
    "  8  mismatch: the order or key was used before with other bytes; nothing sent\n"
    "  9  demo: a duplicate charge, or a charged order reported FAILED (must never happen)\n"
    " 10  internal error\n"
    " 11  check --probe: the provider's base_url gave no HTTP answer\n";

const char kConfigHelp[] =
    "Config: --config FILE, or the environment variable PAYRETRY_CONFIG holding a path\n"
    "or the JSON itself (text starting with '{'). It must name a ledger; name a durable\n"
    "one, e.g. \"ledger\": \"sqlite:///var/lib/shop/payments.db\" (with \"memory:\" nothing\n"
    "survives the command).\n";

namespace {

const char kHelp[] =
    "usage: payretry COMMAND [options]    (payretry COMMAND --help for more)\n"
    "\n"
    "Safe retries for payment-provider POSTs: one idempotency key per payment, kept in\n"
    "a durable ledger, the same key and bytes on every attempt, UNKNOWN (never FAILED)\n"
    "when the provider may have charged.\n"
    "\n"
    "Commands:\n"
    "  submit ORDER     submit one payment (body from --body, --body-file or stdin)\n"
    "  query ORDER      ask the provider what became of one payment\n"
    "  refund ORDER     give (part of) a paid payment back (--ref R [--amount N])\n"
    "  capture ORDER    take (part of) an authorized hold (--ref R [--amount N])\n"
    "  cancel ORDER     void a hold no money has moved for (--ref R)\n"
    "  reconcile        settle every UNKNOWN and abandoned payment\n"
    "  ledger list      payments in the ledger, by state and age\n"
    "  ledger show ORDER  one payment, its attempts and its operations\n"
    "  ledger prune     delete SUCCEEDED/FAILED payments older than --older-than\n"
    "  demo             the whole idea against the bundled simulator, in one command\n"
    "  check [CONFIG]   validate a config, open its ledger (--probe: reach the provider)\n"
    "  webhook verify   check a captured provider notification's signature; records nothing\n"
    "  webhook apply    record a captured provider notification in the ledger\n"
    "  version          library and CLI version\n"
    "\n"
    "Every command prints one JSON document on stdout with --json, a readable table\n"
    "otherwise. Messages and progress go to stderr.\n"
    "\n"
    "Examples:\n"
    "  payretry demo\n"
    "  payretry submit order-1042 --config shop.json --body '{\"amount\":1000,\"currency\":\"eur\",\"metadata\":{\"order_id\":\"order-1042\"}}'\n"
    "  payretry ledger list --state UNKNOWN --older-than 10m --config shop.json\n"
    "  payretry reconcile --config shop.json --body-dir bodies/\n";

}  // namespace

int cmd_version(const Argv& argv) {
  bool json = false;
  for (const std::string& a : argv) {
    if (a == "--json") json = true;
    else if (a == "--help" || a == "-h") {
      std::puts("usage: payretry version [--json]\n\nPrints the library's version (and the header's it was built with).\n\n"
                "Examples:\n  payretry version\n  payretry version --json | jq .version_number");
      return kExitOk;
    } else {
      throw usage_error("unexpected argument '" + a + "'");
    }
  }
  if (json) {
    Json doc(cJSON_CreateObject());
    cJSON_AddStringToObject(doc.get(), "version", pay_version());
    cJSON_AddNumberToObject(doc.get(), "version_number", pay_version_number());
    cJSON_AddNumberToObject(doc.get(), "built_with_version_number", PAY_VERSION_NUMBER);
    print_json(doc.get());
  } else {
    std::printf("payretry %s\n", pay_version());
  }
  return kExitOk;
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kHelp, stderr);
    return kExitUsage;
  }
  const std::string cmd = argv[1];
  const Argv rest(argv + 2, argv + argc);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::printf("%s\n%s\n%s", kHelp, kConfigHelp, kExitCodesHelp);
    return kExitOk;
  }
  if (cmd == "--version") return cmd_version({});
  if (cmd == "submit") return cmd_submit(rest);
  if (cmd == "query") return cmd_query(rest);
  if (cmd == "refund") return cmd_refund(rest);
  if (cmd == "capture") return cmd_capture(rest);
  if (cmd == "cancel") return cmd_cancel(rest);
  if (cmd == "reconcile") return cmd_reconcile(rest);
  if (cmd == "ledger") return cmd_ledger(rest);
  if (cmd == "demo") return cmd_demo(rest);
  if (cmd == "__demo-worker") return cmd_demo_worker(rest);
  if (cmd == "version") return cmd_version(rest);
  if (cmd == "check") return cmd_check(rest);
  if (cmd == "webhook") return cmd_webhook(rest);
  throw usage_error("unknown command '" + cmd + "' (try payretry --help)");
}

}  // namespace cli

int main(int argc, char** argv) {
  // A closed pipe (payretry ... | head) must end the output, not the process mid-write.
  std::signal(SIGPIPE, SIG_IGN);
  // Asked for JSON anywhere on the line: a failure is a document too.
  bool json = false;
  for (int i = 2; i < argc; ++i) json = json || std::strcmp(argv[i], "--json") == 0;
  char message[512] = "internal error";  // no allocation on the way out
  try {
    return cli::run(argc, argv);
  } catch (const cli::Failure& f) {
    std::fprintf(stderr, "payretry: %s\n", f.what());
    if (f.exit_code() == cli::kExitUsage) std::fputs("(try payretry --help)\n", stderr);
    if (json) cli::print_error_json(f.exit_code(), f.what());
    return f.exit_code();
  } catch (const std::bad_alloc&) {
    std::snprintf(message, sizeof message, "out of memory");
    std::fputs("payretry: out of memory\n", stderr);
  } catch (const std::exception& e) {
    std::snprintf(message, sizeof message, "internal error: %s", e.what());
    std::fprintf(stderr, "payretry: %s\n", message);
  } catch (...) {
    std::fputs("payretry: internal error\n", stderr);
  }
  if (json) cli::print_error_json(cli::kExitInternal, message);
  return cli::kExitInternal;
}
