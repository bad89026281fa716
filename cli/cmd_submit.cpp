// payretry submit: one payment, from a config, an order id and a body.
#include <cjson/cJSON.h>

#include <cstdio>

#include "client_setup.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "sighup.hpp"

namespace cli {
namespace {

const char kHelp[] =
    "usage: payretry submit ORDER (--body JSON | --body-file FILE | -) [options]\n"
    "\n"
    "Submits one payment: POSTs the body with one idempotency key (committed to the\n"
    "ledger before the first byte is sent), retrying only what can recover. Submitting\n"
    "the same ORDER again returns its recorded outcome, or resumes it with the same key\n"
    "and bytes; it never creates a second payment.\n"
    "\n"
    "  --body JSON         the exact JSON the provider receives (stripe: the order id in\n"
    "                      metadata.order_id, where Stripe's notifications name it)\n"
    "  --body-file FILE    read it from FILE ('-' or a lone '-' argument: stdin)\n"
    "  --key K             your idempotency key (default: a fresh UUIDv4, kept in the ledger)\n"
    "  --path P            POST to P instead of the profile's create path\n"
    "  --deadline-ms N     a shorter deadline for this payment than the config's\n"
    "  --config FILE       the client config (JSON)\n"
    "  --json              print the result as one JSON document\n"
    "  --verbose           the library's redacted log lines on stderr\n"
    "\n"
    "Examples:\n"
    "  payretry submit order-1042 --config shop.json --body '{\"amount\":1000,\"currency\":\"eur\",\"metadata\":{\"order_id\":\"order-1042\"}}'\n"
    "  payretry submit order-1042 --body-file order-1042.json --json | jq .outcome\n"
    "  echo '{\"amount\":500,\"currency\":\"eur\",\"metadata\":{\"order_id\":\"order-7\"}}' |\n"
    "    PAYRETRY_CONFIG=shop.json payretry submit order-7 -\n";

// A body that is not JSON is the caller's mistake: say where, never echo the
// bytes (they may hold card data).
void check_body_json(const std::string& body) {
  if (body.empty()) throw usage_error("the body is empty");
  const char* end = nullptr;
  Json doc(cJSON_ParseWithLengthOpts(body.data(), body.size(), &end, 0));
  if (!doc) {
    const size_t at = end && end >= body.data() ? static_cast<size_t>(end - body.data()) : 0;
    throw usage_error("the body is not valid JSON (error near byte " + std::to_string(at) + " of " +
                      std::to_string(body.size()) + ")");
  }
  const size_t used = static_cast<size_t>(end - body.data());
  if (body.find_first_not_of(" \t\r\n", used) != std::string::npos)
    throw usage_error("the body is not valid JSON (text after the document, at byte " + std::to_string(used) + ")");
}

std::string read_body(const Args& a, const std::vector<std::string>& rest) {
  const int sources = a.has("--body") + a.has("--body-file") + static_cast<int>(!rest.empty());
  if (sources == 0) throw usage_error("no body: give --body JSON, --body-file FILE or - for stdin");
  if (sources > 1) throw usage_error("give the body once: --body, --body-file or -");
  if (!rest.empty()) {
    if (rest.size() > 1 || rest[0] != "-") throw usage_error("unexpected argument '" + rest[0] + "'");
    return read_file("-", kExitUsage, "body");
  }
  if (auto b = a.value("--body")) return *b;
  return read_file(*a.value("--body-file"), kExitUsage, "body file");
}

}  // namespace

int cmd_submit(const Argv& argv) {
  ArgSpec spec;
  add_client_flags(spec);
  spec.valued.insert({"--body", "--body-file", "--key", "--path", "--deadline-ms"});
  const Args a = Args::parse(argv, spec);
  if (a.has("--help")) {
    std::printf("%s\n%s\n%s", kHelp, kConfigHelp, kExitCodesHelp);
    return kExitOk;
  }
  if (a.positional().empty()) throw usage_error("missing ORDER");
  const std::string order = a.positional()[0];
  const std::vector<std::string> rest(a.positional().begin() + 1, a.positional().end());
  const std::string body = read_body(a, rest);
  check_body_json(body);
  pay::submit_options o;
  if (auto k = a.value("--key")) o.idempotency_key = *k;
  if (auto p = a.value("--path")) o.path = *p;
  o.deadline = std::chrono::milliseconds(a.integer("--deadline-ms", 1, 86400000, 0));

  const pay::client client = open_client(load_config(a), a.has("--verbose"));
  const ReopenLogOnSighup rotation(client);
  const pay::result r = call([&] { return client.submit(order, body, o); });
  const std::string doc(r.json());
  if (a.has("--json")) {
    print_json_text(doc);
  } else {
    print_result(parse_json(doc).get());
  }
  return exit_for_outcome(r.outcome());
}

}  // namespace cli
