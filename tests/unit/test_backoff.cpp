// Backoff: exponential with full jitter, U(0, min(cap, base*2^n)) floored at base/2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "backoff.hpp"
#include "random.hpp"

namespace payretry {
namespace {

int64_t ceiling_for(unsigned n, int64_t base, int64_t cap) {
  int64_t c = base;
  for (unsigned i = 0; i < n && c < cap; ++i) c = std::min(cap, c * 2);
  return std::min(c, cap);
}

TEST(Backoff, DelayStaysWithinHalfBaseAndTheExponentialCeilingForManyN) {
  JitterRandom rnd(7);
  const int64_t base = 500, cap = 5000;
  for (unsigned n = 0; n < 64; ++n) {
    const int64_t hi = ceiling_for(n, base, cap);
    for (int k = 0; k < 200; ++k) {
      const int64_t d = backoff_delay_ms(n, base, cap, rnd);
      ASSERT_GE(d, base / 2) << "n=" << n;
      ASSERT_LE(d, hi) << "n=" << n;
    }
  }
}

TEST(Backoff, CeilingDoublesPerRetryUntilTheCap) {
  // The largest draw over many tries approaches base*2^n, and never the next power.
  JitterRandom rnd(11);
  const int64_t base = 100, cap = 1'000'000;
  for (unsigned n = 0; n < 8; ++n) {
    int64_t mx = 0;
    for (int k = 0; k < 4000; ++k) mx = std::max(mx, backoff_delay_ms(n, base, cap, rnd));
    const int64_t hi = base << n;
    EXPECT_LE(mx, hi) << "n=" << n;
    EXPECT_GT(mx, hi * 9 / 10) << "n=" << n;
  }
}

TEST(Backoff, HugeNSaturatesAtTheCapWithoutOverflow) {
  JitterRandom rnd(3);
  const int64_t base = 500, cap = 5000;
  for (unsigned n : {31u, 32u, 62u, 63u, 64u, 65u, 1000u, std::numeric_limits<unsigned>::max()}) {
    int64_t mx = 0;
    for (int k = 0; k < 2000; ++k) {
      const int64_t d = backoff_delay_ms(n, base, cap, rnd);
      ASSERT_GE(d, base / 2) << "n=" << n;
      ASSERT_LE(d, cap) << "n=" << n;
      mx = std::max(mx, d);
    }
    EXPECT_GT(mx, cap * 9 / 10) << "n=" << n << ": the ceiling should be the cap";
  }
}

TEST(Backoff, HugeCapNearInt64MaxSaturatesWithoutOverflow) {
  // base * 2^n must saturate at the cap even when the cap is near INT64_MAX:
  // doubling past INT64_MAX/2 is signed overflow.
  JitterRandom rnd(5);
  const int64_t base = 1000, cap = std::numeric_limits<int64_t>::max();
  int64_t mx = 0;
  for (int k = 0; k < 200; ++k) {
    const int64_t d = backoff_delay_ms(100, base, cap, rnd);
    ASSERT_GE(d, base / 2);
    mx = std::max(mx, d);
  }
  // With the ceiling at the cap, a draw below cap/4 two hundred times in a row
  // has probability 0.25^200.
  EXPECT_GT(mx, cap / 4) << "the ceiling collapsed: base*2^n overflowed instead of saturating at the cap";
}

TEST(Backoff, ZeroBaseMeansNoDelay) {
  JitterRandom rnd(1);
  for (unsigned n : {0u, 1u, 10u, 100u}) {
    EXPECT_EQ(backoff_delay_ms(n, 0, 0, rnd), 0);
    EXPECT_EQ(backoff_delay_ms(n, 0, 5000, rnd), 0);
  }
}

TEST(Backoff, FullJitterSpreadsTheDelayOverTheWholeRange) {
  JitterRandom rnd(99);
  std::set<int64_t> seen;
  int64_t lo = INT64_MAX, hi = 0;
  for (int k = 0; k < 1000; ++k) {
    const int64_t d = backoff_delay_ms(3, 500, 60000, rnd);  // ceiling 4000
    seen.insert(d);
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  EXPECT_GT(seen.size(), 500u) << "the delay looks constant, not jittered";
  EXPECT_LT(lo, 500);   // near the floor (250)...
  EXPECT_GT(hi, 3500);  // ...and near the ceiling
}

TEST(Backoff, FloorAtHalfBaseIsHitOftenOnTheFirstRetry) {
  // n = 0: U(0, base) floored at base/2, so about half of the draws are the floor.
  JitterRandom rnd(2024);
  int at_floor = 0;
  for (int k = 0; k < 2000; ++k) at_floor += backoff_delay_ms(0, 1000, 5000, rnd) == 500;
  EXPECT_GT(at_floor, 800);
  EXPECT_LT(at_floor, 1200);
}

TEST(Backoff, FixedSeedIsRepeatable) {
  JitterRandom a(12345), b(12345), c(54321);
  std::vector<int64_t> da, db, dc;
  for (unsigned n = 0; n < 50; ++n) {
    da.push_back(backoff_delay_ms(n % 6, 500, 5000, a));
    db.push_back(backoff_delay_ms(n % 6, 500, 5000, b));
    dc.push_back(backoff_delay_ms(n % 6, 500, 5000, c));
  }
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);
}

TEST(Backoff, JitterRandomUniformStaysInClosedRange) {
  JitterRandom rnd(8);
  for (uint64_t n : {uint64_t(0), uint64_t(1), uint64_t(2), uint64_t(7), uint64_t(1000)}) {
    std::set<uint64_t> seen;
    for (int k = 0; k < 5000; ++k) {
      const uint64_t v = rnd.uniform(n);
      ASSERT_LE(v, n);
      seen.insert(v);
    }
    if (n <= 7) {
      EXPECT_EQ(seen.size(), n + 1) << "every value of [0, " << n << "] should appear";
    }
  }
  (void)rnd.uniform(UINT64_MAX);  // full range: no division by zero
}

}  // namespace
}  // namespace payretry
