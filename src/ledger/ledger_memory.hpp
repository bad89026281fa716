// The in-memory ledger: the same state machine without durability, for unit
// tests and for clients configured without a ledger.
#pragma once
#include <memory>
#include <string>

#include "ledger.hpp"

namespace payretry {
std::unique_ptr<Ledger> open_memory_ledger(const std::string& secret_override);
}
