// The SQLite ledger: the embedded default. WAL, synchronous=FULL, a busy
// timeout, and a versioned schema; safe for several processes on one host.
#pragma once
#include <memory>
#include <string>

#include "ledger.hpp"

namespace payretry {
std::unique_ptr<Ledger> open_sqlite_ledger(const std::string& path, const std::string& secret_override,
                                           int64_t timeout_ms = 5000);
}
