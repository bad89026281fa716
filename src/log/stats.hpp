// Client-wide counters (docs/design.md "Attempt log"), readable at any time
// from any thread: the JSON of pay_client_stats and the Prometheus text of
// pay_client_metrics (metrics_text.cpp) are two views of one set.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "result.hpp"

namespace payretry {

// A latency histogram with fixed bounds, lock-free: each observation is two
// relaxed atomic adds. Bounds in seconds, as Prometheus expects.
class Histogram {
 public:
  static constexpr std::array<double, 14> kBounds = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                     0.5,   1,     2.5,  5,     10,   30,  60};
  void observe_us(int64_t us);
  struct Snapshot {
    std::array<long, kBounds.size() + 1> counts{};  // per bucket; the last is +Inf only
    long count = 0;
    double sum_seconds = 0;
  };
  Snapshot snapshot() const;

 private:
  std::array<std::atomic<long>, kBounds.size() + 1> buckets_{};
  std::atomic<int64_t> sum_us_{0};
};

class Stats {
 public:
  static constexpr char kVerdictReasonSeparator = '\x1f';
  // An attempt handed to the transport (before its answer).
  void on_attempt() { attempts_.fetch_add(1, std::memory_order_relaxed); }
  // An attempt's answer read: its verdict and reason, and how long it took.
  void on_attempt_answer(std::string_view verdict, std::string_view reason, int64_t elapsed_ms);
  void on_retry(const std::string& reason);
  // A payment run's outcome (the engine decided it: one per run of a submission).
  void on_payment(Outcome o, Delivery d, int64_t elapsed_ms);
  // A submission answered from the ledger without a run (settled before, held
  // by another worker, or its key expired).
  void on_ledger_answer(Outcome o) { ledger_answers_[static_cast<int>(o)].fetch_add(1, std::memory_order_relaxed); }
  // How query and reconcile settled a payment: a lookup at the provider, a
  // same-key re-send by reconcile, or a notification kept until then.
  enum class SettledBy { lookup = 0, resend = 1, webhook = 2 };
  static constexpr int kSettledBy = 3;
  static const char* settled_by_name(SettledBy b);
  // A payment query or reconcile examined, by how and by what it left.
  void on_settlement(Outcome o, SettledBy by = SettledBy::lookup) {
    settlements_[static_cast<int>(by)][static_cast<int>(o)].fetch_add(1, std::memory_order_relaxed);
  }
  // A reconcile pass that left a payment UNKNOWN without sending anything
  // (a final answer already in its history, a re-send the rule forbids, an
  // expired key, no body), by that reason: the payments a person or a
  // webhook has to settle.
  void on_reconcile_left(const std::string& reason);
  // A webhook notification or one event of it, by the profile, what it was found to say
  // (succeeded, failed, noted; refused for one that did not verify) and
  // what it did (settled, recorded, duplicate, kept, ignored, conflict,
  // refused, error).
  void on_webhook_event(const std::string& provider, const std::string& finding, const std::string& effect);
  void on_lookup_attempt() { lookup_attempts_.fetch_add(1, std::memory_order_relaxed); }
  void on_budget_exhausted() { budget_exhausted_.fetch_add(1, std::memory_order_relaxed); }
  void on_replay_blocked() { replays_blocked_.fetch_add(1, std::memory_order_relaxed); }
  // One group commit of the concurrent engine, holding `entries` writes, and how long it took.
  void on_ledger_batch(long entries, int64_t elapsed_us);
  // A ledger write on the caller's thread (the blocking driver's create, record, settle).
  void on_ledger_commit(int64_t elapsed_us) { ledger_commit_.observe_us(elapsed_us); }
  // New connections a transfer opened (the rest were reused), in either driver.
  void on_connections(long n) { connections_opened_.fetch_add(n, std::memory_order_relaxed); }
  // Payments accepted and not yet answered, in either driver.
  void payment_started() { in_flight_.fetch_add(1, std::memory_order_relaxed); }
  void payment_ended() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

  std::string to_json(int budget_tokens) const;
  // Prometheus text exposition format 0.0.4 (metrics_text.cpp).
  std::string to_prometheus(int budget_tokens, int budget_capacity) const;

 private:
  static constexpr int kOutcomes = 5;    // indexed by Outcome's value (1..4)
  static constexpr int kDeliveries = 4;  // indexed by Delivery's value (1..3)
  std::atomic<long> attempts_{0}, retries_{0}, budget_exhausted_{0}, replays_blocked_{0}, lookup_attempts_{0};
  std::atomic<long> ledger_batches_{0}, ledger_batch_entries_{0}, ledger_batch_max_{0}, connections_opened_{0};
  std::atomic<long> in_flight_{0};
  std::atomic<long> payments_[kOutcomes][kDeliveries] = {};
  std::atomic<long> ledger_answers_[kOutcomes] = {};
  std::atomic<long> settlements_[kSettledBy][kOutcomes] = {};
  long settlements_with(Outcome o) const;
  Histogram attempt_latency_, payment_latency_, ledger_commit_;
  mutable std::mutex mu_;
  std::map<std::string, long> retries_by_reason_;
  std::map<std::string, long> reconcile_left_by_reason_;
  std::map<std::tuple<std::string, std::string, std::string>, long> webhook_events_;  // (provider, finding, effect)
  // "verdict\x1freason" -> count; looked up without an allocation (std::less<>),
  // since every attempt of every payment counts here.
  std::map<std::string, long, std::less<>> answers_by_verdict_reason_;

  long payments_with(Outcome o) const;
};

}  // namespace payretry
