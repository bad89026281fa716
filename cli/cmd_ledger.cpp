// payretry ledger list / show: reads the durable state of payments.
#include <cctype>
#include <chrono>
#include <cstdio>

#include "client_setup.hpp"
#include "commands.hpp"
#include "output.hpp"

namespace cli {
namespace {

const char kHelp[] =
    "usage: payretry ledger list [--state S] [--older-than DURATION] [--limit N] [options]\n"
    "       payretry ledger show ORDER [options]\n"
    "\n"
    "Reads the ledger named in the config, without any HTTP.\n"
    "\n"
    "  list                oldest update first\n"
    "    --state S         PENDING, IN_FLIGHT, SUCCEEDED, FAILED or UNKNOWN\n"
    "    --older-than D    only payments last updated more than D ago (30s, 10m, 2h, 1d; the unit is required)\n"
    "    --limit N         at most N rows (default 1000)\n"
    "  show ORDER          one payment with every attempt recorded for it\n"
    "  --config FILE, --json, --verbose   as for every command\n"
    "\n"
    "Examples:\n"
    "  payretry ledger list --state UNKNOWN --older-than 10m --config shop.json\n"
    "  payretry ledger show order-1042 --json | jq '.attempts | length'\n";

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const char* const kStates[] = {"PENDING", "IN_FLIGHT", "SUCCEEDED", "FAILED", "UNKNOWN"};

}  // namespace

int cmd_ledger(const Argv& argv) {
  ArgSpec spec;
  add_client_flags(spec);
  spec.valued.insert({"--state", "--older-than", "--limit"});
  const Args a = Args::parse(argv, spec);
  if (a.has("--help") || a.positional().empty()) {
    if (!a.has("--help")) throw usage_error("ledger wants a subcommand: list or show ORDER (try --help)");
    std::printf("%s\n%s\n%s", kHelp, kConfigHelp, kExitCodesHelp);
    return kExitOk;
  }
  const std::string sub = a.positional()[0];
  if (sub == "list") {
    if (a.positional().size() > 1) throw usage_error("unexpected argument '" + a.positional()[1] + "'");
    std::optional<std::string> state = a.value("--state");
    if (state) {
      // The states are upper case in the ledger; "unknown" means UNKNOWN.
      for (char& ch : *state) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      bool known = false;
      for (const char* s : kStates) known = known || *state == s;
      if (!known) throw usage_error("--state wants PENDING, IN_FLIGHT, SUCCEEDED, FAILED or UNKNOWN, got '" + *state + "'");
    }
    int64_t before = 0;
    if (auto d = a.value("--older-than")) before = now_unix_ms() - parse_duration_ms("--older-than", *d);
    const auto limit = static_cast<uint32_t>(a.integer("--limit", 1, 1000000, 0));
    const pay::client client = open_client(load_config(a), a.has("--verbose"));
    const std::string rows = call([&] {
      return state ? client.ledger_list(std::string_view(*state), before, limit)
                   : client.ledger_list(std::nullopt, before, limit);
    });
    if (a.has("--json")) print_json_text(rows);
    else print_ledger_rows(parse_json(rows).get());
    return kExitOk;
  }
  if (sub == "show") {
    if (a.positional().size() < 2) throw usage_error("ledger show wants an ORDER");
    if (a.positional().size() > 2) throw usage_error("unexpected argument '" + a.positional()[2] + "'");
    if (a.has("--state") || a.has("--older-than") || a.has("--limit"))
      throw usage_error("--state, --older-than and --limit are for ledger list");
    const pay::client client = open_client(load_config(a), a.has("--verbose"));
    const std::string& order = a.positional()[1];
    std::string doc;
    try {
      doc = call([&] { return client.ledger_get(order); });
    } catch (const Failure& f) {
      // The library's message does not say which order; a script's log should.
      if (f.exit_code() != kExitNotFound) throw;
      throw Failure(kExitNotFound, "no payment for order " + order + " in the ledger");
    }
    if (a.has("--json")) print_json_text(doc);
    else print_ledger_payment(parse_json(doc).get());
    return kExitOk;
  }
  throw usage_error("unknown ledger subcommand '" + sub + "': list or show ORDER");
}

}  // namespace cli
