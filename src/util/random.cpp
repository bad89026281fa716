#include "random.hpp"

#include <openssl/rand.h>

#include <random>
#include <stdexcept>

namespace payretry {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

JitterRandom::JitterRandom() : JitterRandom(std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32)) {}

JitterRandom::JitterRandom(uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

uint64_t JitterRandom::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

uint64_t JitterRandom::uniform(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (n == UINT64_MAX) return next();
  // Rejection sampling keeps the draw unbiased for any n.
  const uint64_t range = n + 1;
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % range);
  uint64_t v;
  do v = next(); while (v >= limit);
  return v % range;
}

std::string UuidKeySource::new_key() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) throw std::runtime_error("CSPRNG failure: cannot create an idempotency key");
  b[6] = static_cast<unsigned char>((b[6] & 0x0F) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3F) | 0x80);  // RFC variant
  static const char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(hex[b[i] >> 4]);
    out.push_back(hex[b[i] & 0xF]);
  }
  return out;
}

}  // namespace payretry
