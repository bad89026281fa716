// Time seams. The engine never reads a clock or sleeps directly, so unit tests
// can drive thousands of fault schedules through it without waiting.
#pragma once
#include <cstdint>

namespace payretry {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic milliseconds: deadlines and elapsed times.
  virtual int64_t now_ms() = 0;
  // Wall-clock Unix milliseconds: Retry-After dates and log timestamps.
  virtual int64_t unix_ms() = 0;
};

class Sleeper {
 public:
  virtual ~Sleeper() = default;
  virtual void sleep_ms(int64_t ms) = 0;
};

Clock& system_clock();
Sleeper& system_sleeper();

}  // namespace payretry
