// Fault names, the configured mix, and the seeded choice of a fault for one request.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace payretry_sim {

// The order is part of the seeded schedule: the mix is walked in this order, so reordering
// changes which fault a given (seed, key, n) meets.
enum class Fault : uint8_t {
  none,
  refuse,
  reset_before,
  lost_response,
  slow,
  too_many_requests,       // "429"
  too_many_requests_date,  // "429_date"
  bad_gateway,             // "502"
  service_unavailable,     // "503"
  internal_error,          // "500"
  decline,
  malformed,
  unauthorized_after,      // "401_after": processed and charged, then a 401; the key kept
  // "401_after_forgetting": processed and charged, then a 401, the key forgotten. Appended
  // last, like any new fault: the schedule walks this order.
  unauthorized_after_forgetting,
};

inline constexpr std::size_t kFaultCount = 14;

std::string_view fault_name(Fault f);
std::optional<Fault> fault_from_name(std::string_view name);

// Probabilities per fault; whatever they leave below 1 is `none`.
struct FaultMix {
  std::array<double, kFaultCount> weight{};
  bool empty() const;
  // Builds a mix from names; on failure returns nullopt and puts the offending names (or the
  // reason) in *error.
  static std::optional<FaultMix> from_map(const std::map<std::string, double>& m, std::string* error);
  std::map<std::string, double> to_map() const;
};

// Faults that act before the provider: the request never reached it, nothing is processed.
bool is_pre_fault(Fault f);

uint64_t splitmix64(uint64_t x);
uint64_t fnv1a64(std::string_view s);

// The fault met by the n-th request (n from 0) of `identity` (the idempotency key, or the
// order id when there is none). Pure: same inputs, same fault, whatever the thread interleaving.
Fault choose_fault(const FaultMix& mix, uint64_t seed, std::string_view identity, uint64_t n);

}  // namespace payretry_sim
