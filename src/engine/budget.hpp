// Client-wide retry budget: the retry quota of the AWS SDKs' "standard" retry
// mode (botocore retries/standard.py, RetryQuotaChecker). When the provider is
// down, every payment retrying at once would make it worse, so retries draw
// from a shared pool that only successes refill:
//   - a retry takes `retry_cost` (5), or is refused when fewer are left;
//   - a success after retries gives back what its run's last retry took
//     (`retry_cost`): a fault the retry healed costs nothing in the end;
//   - a success at the first attempt gives back `success_refund` (1).
// So the bucket holds while the faults heal (a success after a retry is free,
// each first-attempt success buys a fifth of a retry), drains when failures
// outnumber successes, and is empty in an outage, where no retry heals
// anything: the first 500 / 5 = 100 retries are spent, then none.
// An earlier version gave back only `success_refund` after retries too, which
// drained the bucket at ~20 % faults and left ~6 % of payments UNKNOWN under
// the demo's fault mix (docs/design.md, "Retry budget").
#pragma once
#include <atomic>

#include "config.hpp"

namespace payretry {

class RetryBudget {
 public:
  explicit RetryBudget(const BudgetPolicy& p) : tokens_(p.tokens), max_(p.tokens), cost_(p.retry_cost), refund_(p.success_refund) {}
  // Takes the cost of one retry; false (and nothing taken) when too few are left.
  bool try_spend() {
    int have = tokens_.load(std::memory_order_relaxed);
    do {
      if (have < cost_) return false;
    } while (!tokens_.compare_exchange_weak(have, have - cost_, std::memory_order_relaxed));
    return true;
  }
  // A success answer. `after_retry`: its run (a payment's attempts, or one
  // lookup's) took at least one retry from this budget.
  void on_success(bool after_retry) { give_back(after_retry ? cost_ : refund_); }
  int tokens() const { return tokens_.load(std::memory_order_relaxed); }
  int capacity() const { return max_; }

 private:
  void give_back(int amount) {
    int have = tokens_.load(std::memory_order_relaxed);
    int next;
    do {
      next = have + amount > max_ ? max_ : have + amount;
    } while (!tokens_.compare_exchange_weak(have, next, std::memory_order_relaxed));
  }

  std::atomic<int> tokens_;
  const int max_, cost_, refund_;
};

}  // namespace payretry
