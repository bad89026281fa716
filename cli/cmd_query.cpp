// payretry query: asks the provider what became of one payment, and records it.
#include <cstdio>

#include "client_setup.hpp"
#include "commands.hpp"
#include "output.hpp"

namespace cli {
namespace {

const char kHelp[] =
    "usage: payretry query ORDER [--config FILE] [--json] [--verbose]\n"
    "\n"
    "Asks the provider what happened to ORDER (through the profile's lookup), records\n"
    "the answer in the ledger and prints it. A settled payment comes from the ledger\n"
    "without any HTTP. Where the provider's only lookup is a same-key re-send (Stripe),\n"
    "the payment stays UNKNOWN: use `payretry reconcile --body-dir DIR`.\n"
    "\n"
    "Examples:\n"
    "  payretry query order-1042 --config shop.json\n"
    "  payretry query order-1042 --json | jq -r .outcome\n";

}  // namespace

int cmd_query(const Argv& argv) {
  ArgSpec spec;
  add_client_flags(spec);
  const Args a = Args::parse(argv, spec);
  if (a.has("--help")) {
    std::printf("%s\n%s\n%s", kHelp, kConfigHelp, kExitCodesHelp);
    return kExitOk;
  }
  a.want_positional({"ORDER"});
  const pay::client client = open_client(load_config(a), a.has("--verbose"));
  const pay::result r = call([&] { return client.query(a.positional()[0]); });
  const std::string doc(r.json());
  if (a.has("--json")) print_json_text(doc);
  else print_result(parse_json(doc).get());
  return exit_for_outcome(r.outcome());
}

}  // namespace cli
