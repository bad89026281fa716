#include "clock.hpp"

#include <chrono>
#include <thread>

namespace payretry {
namespace {

class SystemClock final : public Clock {
 public:
  int64_t now_ms() override {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
  }
  int64_t unix_ms() override {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  }
};

class SystemSleeper final : public Sleeper {
 public:
  void sleep_ms(int64_t ms) override {
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
};

}  // namespace

Clock& system_clock() {
  static SystemClock c;
  return c;
}

Sleeper& system_sleeper() {
  static SystemSleeper s;
  return s;
}

}  // namespace payretry
