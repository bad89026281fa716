#include "faults.hpp"

#include <cmath>

namespace payretry_sim {

namespace {
constexpr std::array<std::string_view, kFaultCount> kNames = {
    "none", "refuse", "reset_before", "lost_response", "slow", "429",
    "429_date", "502", "503", "500", "decline", "malformed", "401_after",
    "401_after_forgetting",
};
}  // namespace

std::string_view fault_name(Fault f) { return kNames[static_cast<std::size_t>(f)]; }

std::optional<Fault> fault_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Fault>(i);
  }
  return std::nullopt;
}

bool FaultMix::empty() const {
  for (std::size_t i = 1; i < kFaultCount; ++i) {
    if (weight[i] > 0) return false;
  }
  return true;
}

std::optional<FaultMix> FaultMix::from_map(const std::map<std::string, double>& m,
                                           std::string* error) {
  FaultMix mix;
  std::string unknown;
  std::string bad;
  double sum = 0;
  for (const auto& [name, p] : m) {
    auto f = fault_from_name(name);
    if (!f) {
      unknown += unknown.empty() ? name : ", " + name;
      continue;
    }
    if (!(p >= 0 && p <= 1) || !std::isfinite(p)) {
      bad += bad.empty() ? name : ", " + name;
      continue;
    }
    if (*f != Fault::none) sum += p;
    mix.weight[static_cast<std::size_t>(*f)] = p;
  }
  if (!unknown.empty()) {
    if (error) *error = "unknown fault name(s): " + unknown;
    return std::nullopt;
  }
  if (!bad.empty()) {
    if (error) *error = "fault probability out of [0,1]: " + bad;
    return std::nullopt;
  }
  if (sum > 1.0 + 1e-9) {
    if (error) *error = "fault probabilities sum to more than 1";
    return std::nullopt;
  }
  mix.weight[0] = 0;  // `none` is the remainder, never an explicit weight
  return mix;
}

std::map<std::string, double> FaultMix::to_map() const {
  std::map<std::string, double> m;
  for (std::size_t i = 1; i < kFaultCount; ++i) {
    if (weight[i] > 0) m.emplace(std::string(kNames[i]), weight[i]);
  }
  return m;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

Fault choose_fault(const FaultMix& mix, uint64_t seed, std::string_view identity, uint64_t n) {
  if (mix.empty()) return Fault::none;
  const uint64_t h = splitmix64(seed ^ fnv1a64(identity) ^ (n * 0x9E3779B97F4A7C15ULL));
  const double u = static_cast<double>(h >> 11) * 0x1.0p-53;  // uniform in [0, 1)
  double cum = 0;
  for (std::size_t i = 1; i < kFaultCount; ++i) {
    cum += mix.weight[i];
    if (mix.weight[i] > 0 && u < cum) return static_cast<Fault>(i);
  }
  return Fault::none;
}

bool is_pre_fault(Fault f) {
  switch (f) {
    case Fault::refuse:
    case Fault::reset_before:
    case Fault::too_many_requests:
    case Fault::too_many_requests_date:
    case Fault::bad_gateway:
    case Fault::service_unavailable:
      return true;
    default:
      return false;
  }
}

}  // namespace payretry_sim
