#include "stats.hpp"

#include "json_util.hpp"

namespace payretry {

void Stats::on_retry(const std::string& reason) {
  retries_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  ++retries_by_reason_[reason];
}

void Stats::on_ledger_batch(long entries) {
  ledger_batches_.fetch_add(1, std::memory_order_relaxed);
  ledger_batch_entries_.fetch_add(entries, std::memory_order_relaxed);
  long seen = ledger_batch_max_.load(std::memory_order_relaxed);
  while (entries > seen && !ledger_batch_max_.compare_exchange_weak(seen, entries, std::memory_order_relaxed)) {
  }
}

void Stats::on_outcome(Outcome o) { outcomes_[static_cast<int>(o)].fetch_add(1, std::memory_order_relaxed); }

std::string Stats::to_json(int budget_tokens) const {
  JsonPtr root(cJSON_CreateObject());
  if (!root) throw std::bad_alloc();
  cJSON* r = root.get();
  json_add(r, "attempts", static_cast<int64_t>(attempts_.load()));
  json_add(r, "retries", static_cast<int64_t>(retries_.load()));
  cJSON* by = cJSON_AddObjectToObject(r, "retries_by_reason");
  if (!by) throw std::bad_alloc();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [reason, n] : retries_by_reason_) json_add(by, reason.c_str(), static_cast<int64_t>(n));
  }
  cJSON* out = cJSON_AddObjectToObject(r, "outcomes");
  if (!out) throw std::bad_alloc();
  for (Outcome o : {Outcome::succeeded, Outcome::failed, Outcome::unknown, Outcome::in_progress})
    json_add(out, outcome_name(o), static_cast<int64_t>(outcomes_[static_cast<int>(o)].load()));
  json_add(r, "budget_exhausted", static_cast<int64_t>(budget_exhausted_.load()));
  json_add(r, "budget_tokens", budget_tokens);
  json_add(r, "replays_blocked", static_cast<int64_t>(replays_blocked_.load()));
  // The concurrent engine's group commits: how many, and how many writes each held.
  json_add(r, "ledger_batches", static_cast<int64_t>(ledger_batches_.load()));
  json_add(r, "ledger_batch_entries", static_cast<int64_t>(ledger_batch_entries_.load()));
  json_add(r, "ledger_batch_max", static_cast<int64_t>(ledger_batch_max_.load()));
  json_add(r, "connections_opened", static_cast<int64_t>(connections_opened_.load()));
  return json_print(r);
}

}  // namespace payretry
