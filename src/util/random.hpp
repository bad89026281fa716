// Randomness seams. Jitter needs speed and, in tests, a seed; idempotency keys
// need unpredictability, so they come from OpenSSL's CSPRNG and nothing else.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>

namespace payretry {

// Source of jitter. uniform(n) returns a value in [0, n].
class Random {
 public:
  virtual ~Random() = default;
  virtual uint64_t uniform(uint64_t n) = 0;
};

// xoshiro256** seeded from the OS (or a fixed seed for tests); thread-safe.
class JitterRandom final : public Random {
 public:
  JitterRandom();                      // seeded from the OS
  explicit JitterRandom(uint64_t seed);  // repeatable
  uint64_t uniform(uint64_t n) override;

 private:
  uint64_t next();
  std::mutex mu_;
  uint64_t s_[4];
};

// Source of idempotency keys.
class KeySource {
 public:
  virtual ~KeySource() = default;
  virtual std::string new_key() = 0;
};

// RFC 9562 version-4 UUIDs from RAND_bytes; throws std::runtime_error when the
// CSPRNG cannot deliver (never falls back to a weaker source).
class UuidKeySource final : public KeySource {
 public:
  std::string new_key() override;
};

}  // namespace payretry
