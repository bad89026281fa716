// Client-wide counters (docs/design.md "Attempt log"), readable at any time from any thread.
#pragma once
#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include "result.hpp"

namespace payretry {

class Stats {
 public:
  void on_attempt() { attempts_.fetch_add(1, std::memory_order_relaxed); }
  void on_retry(const std::string& reason);
  void on_outcome(Outcome o);
  void on_budget_exhausted() { budget_exhausted_.fetch_add(1, std::memory_order_relaxed); }
  void on_replay_blocked() { replays_blocked_.fetch_add(1, std::memory_order_relaxed); }
  // One group commit of the concurrent engine, holding `entries` writes.
  void on_ledger_batch(long entries);
  // New connections the concurrent engine opened (the rest were reused).
  void on_connections(long n) { connections_opened_.fetch_add(n, std::memory_order_relaxed); }
  std::string to_json(int budget_tokens) const;

 private:
  std::atomic<long> attempts_{0}, retries_{0}, budget_exhausted_{0}, replays_blocked_{0};
  std::atomic<long> ledger_batches_{0}, ledger_batch_entries_{0}, ledger_batch_max_{0}, connections_opened_{0};
  std::atomic<long> outcomes_[5] = {};
  mutable std::mutex mu_;
  std::map<std::string, long> retries_by_reason_;
};

}  // namespace payretry
