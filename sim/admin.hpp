// The /__admin/* endpoints: truth, stats, config, scripts, reset, outage, health, oauth2/revoke,
// customer (a payment waiting for its customer, or held, moves on: money.hpp),
// webhooks (the log of the notifications sent).
// Admin requests are never faulted.
#pragma once

#include <string>
#include <string_view>

#include "state.hpp"

namespace payretry_sim {

// What admin needs from the socket layer.
class AdminHooks {
 public:
  virtual ~AdminHooks() = default;
  virtual void outage(int ms) = 0;
};

void handle_admin(State& state, AdminHooks& hooks, std::string_view method, std::string_view path,
                  std::string_view query, std::string_view body, Reply& out);

std::string config_json(const Config& cfg);
std::string truth_json(const State& state);
std::string truth_json(const State& state, std::string_view order_id);
std::string stats_json(const State& state);

// Applies a JSON config patch ({"seed":..,"faults":{..},"slow_ms":..,"retry_after_s":..,
// "refuse_ms":..,"latency_ms":..,"oauth2_delay_ms":..,"profile":"name"}). On error returns false with a message naming the offending keys.
bool apply_config_patch(const Config& base, std::string_view json, Config* out, std::string* error);

}  // namespace payretry_sim
