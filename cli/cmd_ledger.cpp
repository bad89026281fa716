// payretry ledger list / show / prune: reads the durable state of payments,
// and forgets old settled ones.
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <new>

#include "client_setup.hpp"
#include "commands.hpp"
#include "output.hpp"

namespace cli {
namespace {

const char kHelp[] =
    "usage: payretry ledger list [--state S] [--older-than DURATION] [--limit N] [options]\n"
    "       payretry ledger show ORDER [options]\n"
    "       payretry ledger prune --older-than DURATION [options]\n"
    "\n"
    "Reads the ledger named in the config, without any HTTP.\n"
    "\n"
    "  list                oldest update first\n"
    "    --state S         PENDING, IN_FLIGHT, SUCCEEDED, FAILED or UNKNOWN\n"
    "    --older-than D    only payments last updated more than D ago (30s, 10m, 2h, 1d; the unit is required)\n"
    "    --limit N         at most N rows (default 1000)\n"
    "  show ORDER          one payment with every attempt recorded for it, then its\n"
    "                      captures, refunds and cancels (--json: \"operations\")\n"
    "  prune               deletes SUCCEEDED and FAILED payments (with their attempts)\n"
    "    --older-than D    last updated more than D ago (required; 30d, 90d, ...); never\n"
    "                      UNKNOWN, PENDING or IN_FLIGHT ones. An order pruned and then\n"
    "                      submitted again is a NEW payment: prune only what no one will\n"
    "                      submit again. At least a day (or the provider's key retention).\n"
    "  --config FILE, --json, --verbose   as for every command\n"
    "\n"
    "Examples:\n"
    "  payretry ledger list --state UNKNOWN --older-than 10m --config shop.json\n"
    "  payretry ledger show order-1042 --json | jq '.attempts | length'\n"
    "  payretry ledger prune --older-than 90d --config shop.json\n";

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
    if (!a.has("--help")) throw usage_error("ledger wants a subcommand: list, show ORDER or prune (try --help)");
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
    Json parsed = parse_json(doc);
    // The payment's captures, refunds and cancels, as pay_ledger_get lists
    // them (an operation's own row has none).
    Json ops(cJSON_DetachItemFromObjectCaseSensitive(parsed.get(), "operations"));
    if (!ops) ops.reset(cJSON_CreateArray());
    if (!ops) throw std::bad_alloc();
    if (a.has("--json")) {
      cJSON_AddItemToObject(parsed.get(), "operations", ops.release());
      print_json(parsed.get());
    } else {
      print_ledger_payment(parsed.get());
      if (cJSON_GetArraySize(ops.get()) > 0) {
        std::printf("\n");
        print_operation_rows(ops.get());
      }
    }
    return kExitOk;
  }
  if (sub == "prune") {
    if (a.positional().size() > 1) throw usage_error("unexpected argument '" + a.positional()[1] + "'");
    if (a.has("--state") || a.has("--limit"))
      throw usage_error("ledger prune takes only --older-than: it prunes SUCCEEDED and FAILED payments");
    const auto d = a.value("--older-than");
    if (!d) throw usage_error("ledger prune wants --older-than DURATION (e.g. 90d)");
    const int64_t age_ms = parse_duration_ms("--older-than", *d);
    if (age_ms <= 0) throw usage_error("--older-than must be longer than 0");
    const int64_t before = now_unix_ms() - age_ms;
    const pay::client client = open_client(load_config(a), a.has("--verbose"));
    uint64_t pruned = 0;
    call([&] { return pay::check(pay_ledger_prune(client.get(), before, &pruned)); });
    if (a.has("--json")) {
      Json doc(cJSON_CreateObject());
      cJSON_AddNumberToObject(doc.get(), "pruned", static_cast<double>(pruned));
      cJSON_AddNumberToObject(doc.get(), "updated_before_unix_ms", static_cast<double>(before));
      print_json(doc.get());
    } else {
      std::printf("pruned %llu SUCCEEDED and FAILED payments last updated before %s\n",
                  static_cast<unsigned long long>(pruned), format_time(before).c_str());
    }
    return kExitOk;
  }
  throw usage_error("unknown ledger subcommand '" + sub + "': list, show ORDER or prune");
}

}  // namespace cli
