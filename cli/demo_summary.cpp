#include "demo_summary.hpp"

#include <cstdio>
#include <vector>

#include "metrics_scrape.hpp"

namespace cli {
namespace {

const char* const kOutcomes[] = {"SUCCEEDED", "FAILED", "UNKNOWN", "IN_PROGRESS"};
const char* const kStates[] = {"SUCCEEDED", "FAILED", "UNKNOWN", "IN_FLIGHT", "PENDING"};
const char* const kMoney[] = {"unknown", "awaiting_customer", "pending", "authorized", "paid",
                              "partly_refunded", "refunded", "failed"};

// Money the merchant may act on (ship, or capture then ship): it must have
// moved at the provider.
bool money_held_or_paid(const std::string& m) {
  return m == "authorized" || m == "paid" || m == "partly_refunded" || m == "refunded";
}

void add_num(cJSON* o, const char* k, double v) { cJSON_AddNumberToObject(o, k, v); }

void bump(cJSON* o, const char* k, double v) {
  cJSON* item = cJSON_GetObjectItemCaseSensitive(o, k);
  if (item) cJSON_SetNumberValue(item, item->valuedouble + v);
  else add_num(o, k, v);
}

// Sums a stats document into `into`: the restarted worker's and this process's.
void merge_stats(cJSON* into, const std::string& stats) {
  if (stats.empty()) return;
  const Json s = parse_json(stats);
  for (const char* k : {"attempts", "retries", "budget_exhausted"}) bump(into, k, static_cast<double>(jint(s.get(), k)));
  cJSON* by = cJSON_GetObjectItemCaseSensitive(into, "retries_by_reason");
  const cJSON* r = nullptr;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(s.get(), "retries_by_reason")) bump(by, r->string, r->valuedouble);
}

}  // namespace

Json build_summary(const DemoFacts& f) {
  Json doc(cJSON_CreateObject());
  cJSON* d = doc.get();
  add_num(d, "payments", f.plan.payments);
  add_num(d, "concurrency", f.plan.concurrency);
  add_num(d, "seed", static_cast<double>(f.plan.seed));
  cJSON_AddStringToObject(d, "ledger", f.ledger.c_str());
  cJSON_AddBoolToObject(d, "crash", f.plan.crash);

  // Attempts and retries, summed over every process that submitted.
  cJSON* attempts = cJSON_AddObjectToObject(d, "client");
  add_num(attempts, "attempts", 0);
  add_num(attempts, "retries", 0);
  add_num(attempts, "budget_exhausted", 0);
  cJSON_AddObjectToObject(attempts, "retries_by_reason");
  merge_stats(attempts, f.client_stats);
  merge_stats(attempts, f.worker_stats);
  {
    const Json before = parse_json(f.submit_stats), after = parse_json(f.client_stats);
    add_num(attempts, "attempts_by_reconcile",
            static_cast<double>(jint(after.get(), "attempts") - jint(before.get(), "attempts")));
  }
  add_num(d, "provider_requests", static_cast<double>(f.provider_requests));

  cJSON* before = cJSON_AddObjectToObject(d, "before_reconcile");
  for (const char* o : kOutcomes) add_num(before, o, static_cast<double>(f.before.count(o) ? f.before.at(o) : 0));
  add_num(before, "call_errors", static_cast<double>(f.call_errors));
  if (!f.first_error.empty()) cJSON_AddStringToObject(before, "first_call_error", f.first_error.c_str());

  // Settled counts add up over the passes; what is left is the last pass's.
  cJSON* rec = cJSON_AddObjectToObject(d, "reconcile");
  add_num(rec, "passes", static_cast<double>(f.reconcile_reports.size()));
  for (size_t i = 0; i < f.reconcile_reports.size(); ++i) {
    const Json rep = parse_json(f.reconcile_reports[i]);
    const bool last = i + 1 == f.reconcile_reports.size();
    for (const char* k : {"examined", "SUCCEEDED", "FAILED"}) bump(rec, k, static_cast<double>(jint(rep.get(), k)));
    for (const char* k : {"UNKNOWN", "IN_PROGRESS", "errors"})
      bump(rec, k, last ? static_cast<double>(jint(rep.get(), k)) : 0.0);
  }

  cJSON* after = cJSON_AddObjectToObject(d, "after_reconcile");
  std::map<std::string, long> counts;
  for (const auto& [order, st] : f.final_states) ++counts[st];
  for (const char* s : kStates) add_num(after, s, static_cast<double>(counts[s]));
  add_num(after, "never_recorded", static_cast<double>(f.plan.payments - static_cast<long>(f.final_states.size())));
  cJSON* money = cJSON_AddObjectToObject(after, "money");
  std::map<std::string, long> by_money;
  for (const auto& [order, m] : f.final_money) ++by_money[m];
  for (const char* m : kMoney) add_num(money, m, static_cast<double>(by_money[m]));

  // The provider's truth, order by order.
  const Json truth = parse_json(f.truth);
  const cJSON* by_order = cJSON_GetObjectItemCaseSensitive(truth.get(), "by_order");
  long charged_failed = 0, charged_unknown = 0, succeeded_uncharged = 0;
  std::vector<std::string> bad;
  for (const auto& [order, st] : f.final_states) {
    const int64_t charges = jint(by_order, order.c_str());
    if (st == "FAILED" && charges > 0) {
      ++charged_failed;
      if (bad.size() < 10) bad.push_back(order);
    }
    if (st == "UNKNOWN" && charges > 0) ++charged_unknown;
    if (st == "SUCCEEDED" && charges == 0) ++succeeded_uncharged;
  }
  // The money state against the provider's truth: a merchant ships on it.
  long money_uncharged = 0, money_failed_charged = 0;
  for (const auto& [order, m] : f.final_money) {
    const int64_t charges = jint(by_order, order.c_str());
    if (money_held_or_paid(m) && charges == 0) ++money_uncharged;
    if (m == "failed" && charges > 0) ++money_failed_charged;
  }
  const int64_t duplicates = jint(truth.get(), "duplicates");
  cJSON* prov = cJSON_AddObjectToObject(d, "provider");
  add_num(prov, "charges", static_cast<double>(jint(truth.get(), "charges")));
  add_num(prov, "orders_charged", static_cast<double>(jint(truth.get(), "orders")));
  add_num(prov, "duplicate_charges", static_cast<double>(duplicates));
  add_num(prov, "charged_orders_reported_failed", static_cast<double>(charged_failed));
  add_num(prov, "charged_orders_still_unknown", static_cast<double>(charged_unknown));
  add_num(prov, "succeeded_orders_not_charged", static_cast<double>(succeeded_uncharged));
  add_num(prov, "paid_orders_not_charged", static_cast<double>(money_uncharged));
  add_num(prov, "charged_orders_money_failed", static_cast<double>(money_failed_charged));
  if (!bad.empty()) {
    cJSON* list = cJSON_AddArrayToObject(prov, "charged_but_failed_examples");
    for (const std::string& o : bad) cJSON_AddItemToArray(list, cJSON_CreateString(o.c_str()));
  }

  if (f.plan.crash) {
    cJSON* c = cJSON_AddObjectToObject(d, "crash_run");
    cJSON_AddBoolToObject(c, "worker_killed", f.crash.killed);
    add_num(c, "kill_after_created", static_cast<double>(f.crash.kill_after_created));
    add_num(c, "created_at_kill", static_cast<double>(f.crash.created_at_kill));
    cJSON* at = cJSON_AddObjectToObject(c, "states_at_kill");
    for (const auto& [s, n] : f.crash.states_at_kill) add_num(at, s.c_str(), static_cast<double>(n));
    cJSON* left = cJSON_AddObjectToObject(c, "left_unsettled_now");
    long dup_left = 0;
    std::map<std::string, long> now;
    for (const std::string& o : f.crash.left_unsettled) {
      auto it = f.final_states.find(o);
      ++now[it == f.final_states.end() ? "never_recorded" : it->second];
      dup_left += jint(by_order, o.c_str()) > 1;
    }
    add_num(c, "left_unsettled", static_cast<double>(f.crash.left_unsettled.size()));
    for (const auto& [s, n] : now) add_num(left, s.c_str(), static_cast<double>(n));
    add_num(c, "duplicate_charges_among_them", static_cast<double>(dup_left));
  }
  add_num(d, "elapsed_ms", static_cast<double>(f.elapsed_ms));
  if (!f.submit_metrics.empty()) {
    // A scrape after submitting must say what the demo counted itself: a
    // payment per submission, by outcome, and every attempt sent.
    cJSON* m = cJSON_AddObjectToObject(d, "metrics");
    const auto runs = sum_by_label(f.submit_metrics, "payretry_payments_total", "outcome");
    const auto from_ledger = sum_by_label(f.submit_metrics, "payretry_ledger_answers_total", "outcome");
    cJSON* payments = cJSON_AddObjectToObject(m, "payments");
    bool agree = true;
    for (const char* o : kOutcomes) {
      const double scraped = (runs.count(o) ? runs.at(o) : 0) + (from_ledger.count(o) ? from_ledger.at(o) : 0);
      add_num(payments, o, scraped);
      agree = agree && static_cast<long>(scraped) == (f.before.count(o) ? f.before.at(o) : 0);
    }
    const Json submitted = parse_json(f.submit_stats);
    const double started = sum_of(f.submit_metrics, "payretry_attempts_started_total");
    add_num(m, "attempts_started", started);
    agree = agree && static_cast<long>(started) == jint(submitted.get(), "attempts");
    cJSON_AddBoolToObject(m, "agree", agree);
  }
  const bool ok = duplicates == 0 && charged_failed == 0 && money_uncharged == 0 && money_failed_charged == 0;
  cJSON_AddBoolToObject(d, "ok", ok);
  return doc;
}

namespace {

std::string counts_line(const cJSON* o, std::initializer_list<const char*> keys) {
  std::string s;
  for (const char* k : keys) {
    if (!cJSON_GetObjectItemCaseSensitive(o, k)) continue;
    if (!s.empty()) s += "  ";
    s += std::string(k) + " " + std::to_string(jint(o, k));
  }
  return s;
}

}  // namespace

void print_summary(const cJSON* d) {
  const cJSON* c = cJSON_GetObjectItemCaseSensitive(d, "client");
  const cJSON* p = cJSON_GetObjectItemCaseSensitive(d, "provider");
  std::string reasons;
  const cJSON* r = nullptr;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(c, "retries_by_reason")) {
    if (!reasons.empty()) reasons += ", ";
    reasons += std::string(r->string) + " " + std::to_string(static_cast<long long>(r->valuedouble));
  }
  std::printf("\npayretry demo: %lld payments, %lld in flight, seed %lld, %s ledger%s\n\n",
              static_cast<long long>(jint(d, "payments")), static_cast<long long>(jint(d, "concurrency")),
              static_cast<long long>(jint(d, "seed")), jstr(d, "ledger").c_str(),
              jbool(d, "crash") ? ", a worker SIGKILLed midway" : "");
  std::vector<std::pair<std::string, std::string>> fields = {
      {"attempts", std::to_string(jint(c, "attempts")) + " (" + std::to_string(jint(c, "attempts_by_reconcile")) +
                       " by reconcile; the provider saw " + std::to_string(jint(d, "provider_requests")) +
                       " create requests" +
                       (jbool(d, "crash") ? "; the killed worker's own counters died with it" : "") + ")"},
      {"retries", std::to_string(jint(c, "retries")) + (reasons.empty() ? "" : ": " + reasons)},
      {"retry budget exhausted", std::to_string(jint(c, "budget_exhausted"))},
      {"before reconcile", counts_line(cJSON_GetObjectItemCaseSensitive(d, "before_reconcile"),
                                       {"SUCCEEDED", "FAILED", "UNKNOWN", "IN_PROGRESS", "call_errors"})},
      {"reconcile", counts_line(cJSON_GetObjectItemCaseSensitive(d, "reconcile"),
                                {"passes", "examined", "SUCCEEDED", "FAILED", "UNKNOWN", "errors"})},
      {"after reconcile", counts_line(cJSON_GetObjectItemCaseSensitive(d, "after_reconcile"),
                                      {"SUCCEEDED", "FAILED", "UNKNOWN", "IN_FLIGHT", "PENDING", "never_recorded"})},
      {"money after reconcile",
       counts_line(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "after_reconcile"), "money"),
                   {"paid", "authorized", "awaiting_customer", "pending", "failed", "unknown"})},
  };
  const cJSON* first_err = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "before_reconcile"),
                                                            "first_call_error");
  if (first_err) fields.push_back({"first call error", first_err->valuestring});
  if (const cJSON* k = cJSON_GetObjectItemCaseSensitive(d, "crash_run"); cJSON_IsObject(k)) {
    fields.push_back({"worker killed", std::string(jbool(k, "worker_killed") ? "yes" : "no (it finished first)") +
                                           ", with " + std::to_string(jint(k, "created_at_kill")) +
                                           " payments in the ledger: " +
                                           counts_line(cJSON_GetObjectItemCaseSensitive(k, "states_at_kill"),
                                                       {"SUCCEEDED", "FAILED", "UNKNOWN", "IN_FLIGHT", "PENDING"})});
    fields.push_back({"left unsettled by it", std::to_string(jint(k, "left_unsettled")) + ", now: " +
                                                  counts_line(cJSON_GetObjectItemCaseSensitive(k, "left_unsettled_now"),
                                                              {"SUCCEEDED", "FAILED", "UNKNOWN", "IN_FLIGHT"}) +
                                                  "; charged twice: " +
                                                  std::to_string(jint(k, "duplicate_charges_among_them"))});
  }
  if (const cJSON* m = cJSON_GetObjectItemCaseSensitive(d, "metrics"); cJSON_IsObject(m)) {
    fields.push_back({"metrics scrape", counts_line(cJSON_GetObjectItemCaseSensitive(m, "payments"),
                                                    {"SUCCEEDED", "FAILED", "UNKNOWN", "IN_PROGRESS"}) +
                                            "  attempts " + std::to_string(jint(m, "attempts_started")) +
                                            (jbool(m, "agree") ? "   (agrees)" : "   (DISAGREES with the counts above)")});
  }
  fields.push_back({"provider charges", std::to_string(jint(p, "charges")) + " for " +
                                            std::to_string(jint(p, "orders_charged")) + " orders"});
  fields.push_back({"charged, still UNKNOWN", std::to_string(jint(p, "charged_orders_still_unknown"))});
  fields.push_back({"duplicate charges", std::to_string(jint(p, "duplicate_charges")) + "   (must be 0)"});
  fields.push_back(
      {"charged but FAILED", std::to_string(jint(p, "charged_orders_reported_failed")) + "   (must be 0)"});
  fields.push_back({"paid or held, not charged", std::to_string(jint(p, "paid_orders_not_charged")) + "   (must be 0)"});
  fields.push_back({"charged, money failed", std::to_string(jint(p, "charged_orders_money_failed")) + "   (must be 0)"});
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f s", static_cast<double>(jint(d, "elapsed_ms")) / 1000.0);
  fields.push_back({"elapsed", secs});
  print_fields(fields);
  std::printf("\n%s\n", jbool(d, "ok") ? "OK: every order charged at most once, no charged order reported FAILED, and "
                                         "every order whose money reads paid or held was charged."
                                       : "BROKEN: a duplicate charge, a charged order reported FAILED, or a money state "
                                         "the provider's charges contradict.");
}

}  // namespace cli
