#include "stats.hpp"

#include "json_util.hpp"

namespace payretry {

void Histogram::observe_us(int64_t us) {
  if (us < 0) us = 0;
  const double s = static_cast<double>(us) / 1e6;
  std::size_t i = 0;
  while (i < kBounds.size() && s > kBounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(us, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot out;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    out.counts[i] = buckets_[i].load(std::memory_order_relaxed);
    out.count += out.counts[i];
  }
  out.sum_seconds = static_cast<double>(sum_us_.load(std::memory_order_relaxed)) / 1e6;
  return out;
}

void Stats::on_attempt_answer(std::string_view verdict, std::string_view reason, int64_t elapsed_ms) {
  attempt_latency_.observe_us(elapsed_ms * 1000);
  char buf[128];
  std::string_view key;
  std::string long_key;
  if (verdict.size() + 1 + reason.size() <= sizeof buf) {
    verdict.copy(buf, verdict.size());
    buf[verdict.size()] = kVerdictReasonSeparator;
    reason.copy(buf + verdict.size() + 1, reason.size());
    key = std::string_view(buf, verdict.size() + 1 + reason.size());
  } else {
    long_key.append(verdict).push_back(kVerdictReasonSeparator);
    long_key.append(reason);
    key = long_key;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = answers_by_verdict_reason_.find(key);
  if (it != answers_by_verdict_reason_.end()) ++it->second;
  else answers_by_verdict_reason_.emplace(std::string(key), 1);
}

void Stats::on_retry(const std::string& reason) {
  retries_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  ++retries_by_reason_[reason];
}

void Stats::on_reconcile_left(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++reconcile_left_by_reason_[reason];
}

const char* Stats::settled_by_name(SettledBy b) {
  switch (b) {
    case SettledBy::lookup: return "lookup";
    case SettledBy::resend: return "resend";
    case SettledBy::webhook: return "webhook";
  }
  return "lookup";
}

long Stats::settlements_with(Outcome o) const {
  long n = 0;
  for (int b = 0; b < kSettledBy; ++b) n += settlements_[b][static_cast<int>(o)].load(std::memory_order_relaxed);
  return n;
}

void Stats::on_webhook_event(const std::string& provider, const std::string& finding, const std::string& effect) {
  std::lock_guard<std::mutex> lock(mu_);
  ++webhook_events_[{provider, finding, effect}];
}

void Stats::on_payment(Outcome o, Delivery d, int64_t elapsed_ms) {
  payments_[static_cast<int>(o)][static_cast<int>(d)].fetch_add(1, std::memory_order_relaxed);
  payment_latency_.observe_us(elapsed_ms * 1000);
}

void Stats::on_ledger_batch(long entries, int64_t elapsed_us) {
  ledger_batches_.fetch_add(1, std::memory_order_relaxed);
  ledger_batch_entries_.fetch_add(entries, std::memory_order_relaxed);
  long seen = ledger_batch_max_.load(std::memory_order_relaxed);
  while (entries > seen && !ledger_batch_max_.compare_exchange_weak(seen, entries, std::memory_order_relaxed)) {
  }
  ledger_commit_.observe_us(elapsed_us);
}

long Stats::payments_with(Outcome o) const {
  long n = 0;
  for (const auto& by_delivery : payments_[static_cast<int>(o)]) n += by_delivery.load(std::memory_order_relaxed);
  return n;
}

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
  cJSON* left = cJSON_AddObjectToObject(r, "reconcile_left_unknown");
  if (!left) throw std::bad_alloc();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [reason, n] : reconcile_left_by_reason_) json_add(left, reason.c_str(), static_cast<int64_t>(n));
  }
  cJSON* hooks = cJSON_AddObjectToObject(r, "webhook_events");
  if (!hooks) throw std::bad_alloc();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, n] : webhook_events_)
      json_add(hooks, (std::get<0>(k) + "/" + std::get<1>(k) + "/" + std::get<2>(k)).c_str(), static_cast<int64_t>(n));
  }
  // Payment runs only: a submission answered from the ledger and a lookup
  // are counted apart, so that these add up to the payments the engine ran.
  auto by_outcome = [&](const char* name, auto&& count) {
    cJSON* out = cJSON_AddObjectToObject(r, name);
    if (!out) throw std::bad_alloc();
    for (Outcome o : {Outcome::succeeded, Outcome::failed, Outcome::unknown, Outcome::in_progress})
      json_add(out, outcome_name(o), static_cast<int64_t>(count(o)));
  };
  by_outcome("outcomes", [&](Outcome o) { return payments_with(o); });
  by_outcome("ledger_answers", [&](Outcome o) { return ledger_answers_[static_cast<int>(o)].load(); });
  by_outcome("settlements", [&](Outcome o) { return settlements_with(o); });
  cJSON* how = cJSON_AddObjectToObject(r, "settlements_by");
  if (!how) throw std::bad_alloc();
  for (int b = 0; b < kSettledBy; ++b) {
    cJSON* out = cJSON_AddObjectToObject(how, settled_by_name(static_cast<SettledBy>(b)));
    if (!out) throw std::bad_alloc();
    for (Outcome o : {Outcome::succeeded, Outcome::failed, Outcome::unknown, Outcome::in_progress})
      json_add(out, outcome_name(o), static_cast<int64_t>(settlements_[b][static_cast<int>(o)].load()));
  }
  json_add(r, "lookup_attempts", static_cast<int64_t>(lookup_attempts_.load()));
  json_add(r, "in_flight", static_cast<int64_t>(in_flight_.load()));
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
