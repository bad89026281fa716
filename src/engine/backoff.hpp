// Delay before retry number n: exponential with full jitter (docs/design.md "Retries").
#pragma once
#include <cstdint>

#include "random.hpp"

namespace payretry {

// U(0, min(cap, base * 2^n)), floored at base/2 so that a retry never fires
// back-to-back into a provider that just failed. n is 0 for the first retry.
int64_t backoff_delay_ms(unsigned n, int64_t base_ms, int64_t cap_ms, Random& rnd);

}  // namespace payretry
