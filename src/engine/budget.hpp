// Client-wide retry budget (token bucket, as the AWS SDKs do): when the
// provider is down, every payment retrying at once would make it worse, so
// retries draw from a shared pool that only successes refill.
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
  void on_success() {
    int have = tokens_.load(std::memory_order_relaxed);
    int next;
    do {
      next = have + refund_ > max_ ? max_ : have + refund_;
    } while (!tokens_.compare_exchange_weak(have, next, std::memory_order_relaxed));
  }
  int tokens() const { return tokens_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int> tokens_;
  const int max_, cost_, refund_;
};

}  // namespace payretry
