// The PostgreSQL ledger's connections: how many, how often a pooled one's
// clock offset is measured again, and what is kept of each.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "ledger_postgres_session.hpp"

namespace payretry {
namespace pg {

// Connections one ledger opens at most; more threads wait for a free one
// (at most the ledger timeout).
constexpr size_t kMaxConnections = 8;
// A pooled connection's clock offset is measured again when it is older than this.
constexpr auto kRemeasureEvery = std::chrono::seconds(30);
// Two clocks whose measured offset is within the measurement's own
// uncertainty plus this much are taken as agreeing.
constexpr int64_t kClockSlackMs = 10;

// One pooled connection and what was measured on it.
struct Conn {
  ConnPtr pg;
  int64_t offset = 0;  // server clock minus client clock, ms
  Steady::time_point measured;
};

int64_t system_unix_ms();

}  // namespace pg
}  // namespace payretry
