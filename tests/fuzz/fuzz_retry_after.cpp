// Retry-After comes straight from the provider (or whatever sits in front of
// it): any bytes must give either "ignore" or a delay in [0, saturation].
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "retry_after.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view v(reinterpret_cast<const char*>(data), size);
  // Now: a few fixed instants, including before 1970 and far in the future.
  for (int64_t now : {int64_t(0), int64_t(1'700'000'000'123), int64_t(-86'400'000), int64_t(253'402'300'799'000)}) {
    const auto ms = payretry::parse_retry_after_ms(v, now);
    if (ms && (*ms < 0 || *ms > payretry::kRetryAfterSaturateMs)) std::abort();
  }
  if (auto secs = payretry::parse_http_date(v)) {
    // Four-digit years at most: 0000-01-01 .. 9999-12-31T23:59:60.
    if (*secs < -62'167'219'200 || *secs > 253'402'300'800) std::abort();
  }
  return 0;
}
