// payretry refund / capture / cancel: an operation on a payment the ledger
// holds (pay_submit_operation), printed and exited as submit is.
#include <cjson/cJSON.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

#include "client_setup.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "sighup.hpp"

namespace cli {
namespace {

const char kRefundHelp[] =
    "usage: payretry refund ORDER --ref R [--amount N] [--body JSON] [--target-id ID] [options]\n"
    "\n"
    "Gives (part of) a paid payment back. The refund is a ledger row of its own,\n"
    "\"ORDER refund R\", its key committed before the first byte and the same key and\n"
    "bytes on every attempt; refunding with the same --ref again is the same refund\n"
    "(answered from the ledger, or resumed), never a second one. A refund the payment\n"
    "does not allow (not paid, or more than is left to refund) is refused, nothing sent.\n";

const char kCaptureHelp[] =
    "usage: payretry capture ORDER --ref R [--amount N] [--body JSON] [--target-id ID] [options]\n"
    "\n"
    "Takes (part of) an authorized hold. The capture is a ledger row of its own,\n"
    "\"ORDER capture R\", sent as safely as the payment; the same --ref again is the\n"
    "same capture. A payment that is not an uncaptured hold, or an amount beyond it,\n"
    "is refused, nothing sent.\n";

const char kCancelHelp[] =
    "usage: payretry cancel ORDER --ref R [--body JSON] [--target-id ID] [options]\n"
    "\n"
    "Voids a payment no money has moved for yet (an uncaptured hold). The cancel is a\n"
    "ledger row of its own, \"ORDER cancel R\"; the same --ref again is the same cancel.\n"
    "A payment with money captured is refused, nothing sent: refund it instead.\n";

const char kFlagsHelp[] =
    "\n"
    "  --ref R             required: your name for this operation, unique per payment and\n"
    "                      kind (visible ASCII, no spaces). An UNKNOWN one is settled by\n"
    "                      running the same command again, never with a new ref\n"
    "  --amount N          in the provider's units, as the payment's amount was (default:\n"
    "                      all that is left, as the ledger counts it; not for cancel)\n"
    "  --body JSON         a JSON object of further fields the provider takes (a reason,\n"
    "                      metadata); never the amount, the payment's id or the key\n"
    "  --target-id ID      the second id the provider's path names, where it names one\n"
    "                      (PayPal refunds a capture: its id)\n"
    "  --deadline-ms N     a shorter deadline than the config's\n"
    "  --config FILE       the client config (JSON)\n"
    "  --json              print the operation's result as one JSON document\n"
    "  --verbose           the library's redacted log lines on stderr\n"
    "\n"
    "The result printed is the operation's (its order is \"ORDER KIND R\"); the payment's\n"
    "money moves forward with it (payretry ledger show ORDER lists its operations).\n"
    "Exit codes as for submit; 2 for an operation the payment does not allow.\n";

const char kRefundExamples[] =
    "\n"
    "Examples:\n"
    "  payretry refund order-1042 --ref r1 --amount 400 --config shop.json\n"
    "  payretry refund order-1042 --ref r2 --config shop.json --json | jq '{outcome, money_state}'\n"
    "  payretry ledger show order-1042 --config shop.json\n";

// A hold to capture and one to cancel: the Stripe body of a card payment
// authorized only (capture_method manual), as Stripe's own clients send it.
const char kCaptureExamples[] =
    "\n"
    "Examples:\n"
    "  payretry submit order-2001 --config shop.json --body '{\"amount\":1000,\"currency\":\"eur\",\"metadata\":{\"order_id\":\"order-2001\"},\"confirm\":true,\"payment_method\":\"pm_card_visa\",\"capture_method\":\"manual\"}' && \\\n"
    "    payretry capture order-2001 --ref c1 --amount 600 --config shop.json\n";

const char kCancelExamples[] =
    "\n"
    "Examples:\n"
    "  payretry submit order-2002 --config shop.json --body '{\"amount\":1000,\"currency\":\"eur\",\"metadata\":{\"order_id\":\"order-2002\"},\"confirm\":true,\"payment_method\":\"pm_card_visa\",\"capture_method\":\"manual\"}' && \\\n"
    "    payretry cancel order-2002 --ref x1 --config shop.json\n";

// The caller's further fields must be one JSON object: say so before the
// library is asked, never echoing them.
void check_body_object(const std::string& body) {
  const char* end = nullptr;
  Json doc(cJSON_ParseWithLengthOpts(body.data(), body.size(), &end, 0));
  const bool trailing = doc && body.find_first_not_of(" \t\r\n", static_cast<size_t>(end - body.data())) !=
                                   std::string::npos;
  if (!doc || trailing || !cJSON_IsObject(doc.get())) throw usage_error("--body must be one JSON object");
}

int run_operation(const Argv& argv, pay::operation kind, const char* help, const char* examples) {
  ArgSpec spec;
  add_client_flags(spec);
  spec.valued.insert({"--ref", "--amount", "--body", "--target-id", "--deadline-ms"});
  const Args a = Args::parse(argv, spec);
  if (a.has("--help")) {
    std::printf("%s%s%s\n%s\n%s", help, kFlagsHelp, examples, kConfigHelp, kExitCodesHelp);
    return kExitOk;
  }
  const std::string name(pay::to_string(kind));
  if (a.positional().empty()) throw usage_error("missing ORDER");
  if (a.positional().size() > 1) throw usage_error("unexpected argument '" + a.positional()[1] + "'");
  const std::string order = a.positional()[0];
  pay::operation_options o;
  if (auto r = a.value("--ref")) o.ref = *r;
  else throw usage_error(name + " wants --ref R: your name for this " + name + " (the same ref again is the same " +
                         name + ")");
  if (kind == pay::operation::cancel && a.has("--amount")) throw usage_error("a cancel takes no --amount");
  // Absent: the rest, as the ledger counts it (the C API's 0).
  o.amount = a.integer("--amount", 1, INT64_MAX, 0);
  if (auto b = a.value("--body")) {
    check_body_object(*b);
    o.body = *b;
  }
  if (auto t = a.value("--target-id")) o.target_id = *t;
  o.deadline = std::chrono::milliseconds(a.integer("--deadline-ms", 1, 86400000, 0));

  const pay::client client = open_client(load_config(a), a.has("--verbose"));
  const ReopenLogOnSighup rotation(client);
  pay::result r;
  try {
    r = call([&] { return client.submit_operation(order, kind, o); });
  } catch (const Failure& f) {
    // The library's message does not always say which order; a script's log should.
    if (f.exit_code() != kExitNotFound) throw;
    throw Failure(kExitNotFound, "no payment for order " + order + " in the ledger: " + f.what());
  }
  const std::string doc(r.json());
  if (a.has("--json")) print_json_text(doc);
  else print_result(parse_json(doc).get());
  return exit_for_outcome(r.outcome());
}

}  // namespace

int cmd_refund(const Argv& argv) { return run_operation(argv, pay::operation::refund, kRefundHelp, kRefundExamples); }
int cmd_capture(const Argv& argv) {
  return run_operation(argv, pay::operation::capture, kCaptureHelp, kCaptureExamples);
}
int cmd_cancel(const Argv& argv) { return run_operation(argv, pay::operation::cancel, kCancelHelp, kCancelExamples); }

}  // namespace cli
