// The simulation's only source of chance: SplitMix64 seeded by the schedule
// number, so a seed names one schedule on every machine and compiler
// (std::uniform_int_distribution is not portable across standard libraries).
#pragma once
#include <cstdint>

namespace payretry::dst {

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi], inclusive; the modulo bias is irrelevant here.
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
  bool chance(int percent) { return range(0, 99) < percent; }

 private:
  uint64_t s_;
};

}  // namespace payretry::dst
