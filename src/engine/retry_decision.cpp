#include "retry_decision.hpp"

#include <algorithm>

#include "backoff.hpp"
#include "retry_after.hpp"

namespace payretry {

RetryDecision decide_retry(const RetryPolicy& policy, unsigned attempts_made, const TransportResult& answer,
                           int64_t now_ms, int64_t now_unix_ms, int64_t deadline_ms, Random& jitter,
                           RetryBudget& budget) {
  RetryDecision d;
  if (static_cast<int>(attempts_made) >= policy.max_attempts) {
    d.stop = "attempts_exhausted";
    return d;
  }
  int64_t delay = backoff_delay_ms(attempts_made - 1, policy.backoff_base_ms, policy.backoff_cap_ms, jitter);
  std::string source = "backoff";
  if (answer.failure == TransportFailure::none) {
    if (auto wait = response_retry_after_ms(answer.response, now_unix_ms)) {
      // The server's wish is a floor; if honouring it would pass the
      // deadline, stop now rather than hammer it early.
      if (now_ms + *wait > deadline_ms) {
        d.stop = "retry_after_beyond_deadline";
        return d;
      }
      const int64_t floor = std::min(*wait, policy.retry_after_max_ms);
      if (floor > delay) {
        delay = floor;
        source = "retry_after";
      }
    }
  }
  if (now_ms + delay + policy.min_attempt_ms > deadline_ms) {
    d.stop = "deadline";
    return d;
  }
  if (!budget.try_spend()) {
    d.stop = "retry_budget_exhausted";
    return d;
  }
  d.retry = true;
  d.delay_ms = delay;
  d.delay_source = source;
  return d;
}

}  // namespace payretry
