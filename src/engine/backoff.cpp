#include "backoff.hpp"

#include <algorithm>

namespace payretry {

int64_t backoff_delay_ms(unsigned n, int64_t base_ms, int64_t cap_ms, Random& rnd) {
  if (base_ms <= 0) return 0;
  cap_ms = std::max(cap_ms, base_ms);
  // Doubling saturates at the cap long before 2^n could overflow.
  int64_t ceiling = base_ms;
  for (unsigned i = 0; i < n && ceiling < cap_ms; ++i) ceiling = ceiling > cap_ms / 2 ? cap_ms : ceiling * 2;
  ceiling = std::min(ceiling, cap_ms);
  const int64_t drawn = static_cast<int64_t>(rnd.uniform(static_cast<uint64_t>(ceiling)));
  return std::max(drawn, base_ms / 2);
}

}  // namespace payretry
