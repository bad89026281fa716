// payretry reconcile: settles every UNKNOWN payment and every one a dead worker
// left IN_FLIGHT, by query or by a same-key re-send of the original body.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "client_setup.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "reconcile_run.hpp"
#include "sighup.hpp"

namespace cli {
namespace {

const char kHelp[] =
    "usage: payretry reconcile [--limit N] [--older-than-ms N] [--body-dir DIR] [options]\n"
    "\n"
    "Settles every UNKNOWN payment in the ledger, and every IN_FLIGHT one whose worker\n"
    "died (its lease expired): asks the provider, or, where the provider's only lookup\n"
    "is a same-key re-send (Stripe, PayPal) or it has no such payment, re-sends the\n"
    "original body with the stored key. The body of ORDER is read from DIR/ORDER.json\n"
    "and must be the very bytes first submitted (its fingerprint is checked).\n"
    "\n"
    "  --limit N           at most N payments (default 1000)\n"
    "  --older-than-ms N   only payments untouched for N ms\n"
    "  --body-dir DIR      where the original bodies are, one ORDER.json per order\n"
    "  --quiet             no progress display on stderr\n"
    "  --config FILE, --json, --verbose   as for every command\n"
    "\n"
    "Exit 0 when nothing is left UNKNOWN, 4 when some payment still is (or could not\n"
    "be examined), 5 when another worker still holds one.\n"
    "\n"
    "Examples:\n"
    "  payretry reconcile --config shop.json --body-dir /var/lib/shop/bodies\n"
    "  payretry reconcile --older-than-ms 60000 --json | jq '.payments[] | {order_id, outcome}'\n";

// An order id becomes a file name: refuse anything that could leave DIR.
bool safe_file_name(const std::string& order) {
  return !order.empty() && order[0] != '.' && order.find('/') == std::string::npos &&
         order.find('\0') == std::string::npos;
}

}  // namespace

int cmd_reconcile(const Argv& argv) {
  ArgSpec spec;
  add_client_flags(spec);
  spec.valued.insert({"--limit", "--older-than-ms", "--body-dir"});
  spec.flags.insert("--quiet");
  const Args a = Args::parse(argv, spec);
  if (a.has("--help")) {
    std::printf("%s\n%s\n%s", kHelp, kConfigHelp, kExitCodesHelp);
    return kExitOk;
  }
  a.want_positional({});
  ReconcileRun run;
  run.limit = static_cast<uint32_t>(a.integer("--limit", 1, 1000000, 0));
  run.older_than_ms = a.integer("--older-than-ms", 0, INT64_C(1) << 50, 0);
  run.progress = !a.has("--quiet");
  if (auto dir = a.value("--body-dir")) {
    const std::string d = *dir;
    run.body_for = [d](const std::string& order) -> std::optional<std::string> {
      if (!safe_file_name(order)) return std::nullopt;
      std::ifstream in(d + "/" + order + ".json", std::ios::binary);
      if (!in) return std::nullopt;  // the payment stays UNKNOWN, with that reason
      return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
  }
  const pay::client client = open_client(load_config(a), a.has("--verbose"));
  const ReopenLogOnSighup rotation(client);
  const std::string report = run_reconcile(client, run);
  if (a.has("--json")) {
    print_json_text(report);
    return exit_for_report(report);
  }
  const Json doc = parse_json(report);
  const cJSON* d = doc.get();
  print_fields({{"examined", std::to_string(jint(d, "examined"))},
                {"SUCCEEDED", std::to_string(jint(d, "SUCCEEDED"))},
                {"FAILED", std::to_string(jint(d, "FAILED"))},
                {"UNKNOWN", std::to_string(jint(d, "UNKNOWN"))},
                {"IN_PROGRESS", std::to_string(jint(d, "IN_PROGRESS"))},
                {"errors", std::to_string(jint(d, "errors"))}});
  Rows rows;
  const cJSON* p = nullptr;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(d, "payments")) {
    rows.push_back({jstr(p, "order_id"), jstr(p, "outcome"), jstr(p, "delivery"),
                    std::to_string(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "attempts"))),
                    or_dash(jstr(p, "error"))});
  }
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(d, "failures")) {
    rows.push_back({jstr(p, "order_id"), "error", "-", "-", jstr(p, "error")});
  }
  if (!rows.empty()) {
    std::puts("");
    print_table({"order", "outcome", "delivery", "attempts", "why"}, rows);
  }
  return exit_for_report(report);
}

}  // namespace cli
