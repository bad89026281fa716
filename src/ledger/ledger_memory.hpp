// The in-memory ledger: the same state machine without durability, for unit
// tests and for one process that accepts losing its keys when it ends.
//
// It keeps every open row (IN_FLIGHT, UNKNOWN) for as long as the process
// lives: those still need settling. A settled row (SUCCEEDED, FAILED) only
// answers a later submit of its order; it is forgotten, with its history and
// its key, when more than `max_settled` settled rows are held (the first
// settled first). A forgotten order submitted again is a new payment
// (docs/design.md, "The memory ledger").
//
// Operation rows (captures, refunds, cancels) are not counted: each is
// forgotten only with its payment, and a payment with an operation still
// open is passed over (Ledger::prune_settled says why), so the guard of the
// payment's next operation always sees every one it had.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "ledger.hpp"

namespace payretry {

// 100,000 settled rows is about 100 MB (a row and its history take about
// 1 KB) and covers more than a day of a service doing one payment a second,
// the window in which a caller plausibly submits an order again.
inline constexpr size_t kDefaultMaxSettled = 100000;
inline constexpr size_t kMaxMaxSettled = 1000000000;

struct MemoryLedgerOptions {
  // Settled rows kept to answer re-submissions; 0: no cap (every row is
  // kept for the life of the process).
  size_t max_settled = kDefaultMaxSettled;
};

// Reads "memory:" or "memory:?max_settled=N". Throws LedgerError naming the
// parameter that is unknown, repeated or malformed.
MemoryLedgerOptions parse_memory_ledger_url(const std::string& url);

std::unique_ptr<Ledger> open_memory_ledger(const std::string& secret_override, const MemoryLedgerOptions& options = {});

}  // namespace payretry
