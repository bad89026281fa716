// The retry decision: after an answer (or a failure) that may be retried,
// whether another attempt follows and after how long. One function, used by
// the payment's attempt run and by lookups alike, so that attempts, the
// deadline, Retry-After and the client's retry budget bound both the same way.
#pragma once
#include <cstdint>
#include <string>

#include "budget.hpp"
#include "config.hpp"
#include "http.hpp"
#include "random.hpp"

namespace payretry {

struct RetryDecision {
  bool retry = false;
  int64_t delay_ms = 0;
  std::string delay_source;  // "backoff" | "retry_after" (when retry)
  // Why not (when !retry): attempts_exhausted, retry_after_beyond_deadline,
  // deadline, retry_budget_exhausted.
  std::string stop;
};

// `attempts_made` counts the attempts of this run so far (at least 1);
// `now_ms` and `deadline_ms` are on the monotonic clock, `now_unix_ms` reads
// an HTTP-date Retry-After. The budget is spent last, only for a retry that
// would otherwise happen.
RetryDecision decide_retry(const RetryPolicy& policy, unsigned attempts_made, const TransportResult& answer,
                           int64_t now_ms, int64_t now_unix_ms, int64_t deadline_ms, Random& jitter,
                           RetryBudget& budget);

}  // namespace payretry
