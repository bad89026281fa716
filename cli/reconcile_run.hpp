// One pay_reconcile with a progress display, shared by `reconcile` and `demo`.
// The C API reports nothing until it returns, so progress is estimated from
// the outside: the body callbacks it made, and the ledger rows still waiting.
#pragma once

#include <payretry/payretry.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace cli {

struct ReconcileRun {
  uint32_t limit = 0;          // 0: the library's default (1000)
  int64_t older_than_ms = 0;   // 0: any age
  // The original bytes of an order for a same-key re-send; nullopt: none.
  std::function<std::optional<std::string>(const std::string& order_id)> body_for;
  bool progress = true;
};

// Returns the report JSON; throws Failure for a failed call.
std::string run_reconcile(const pay::client& client, const ReconcileRun& run);

// The exit code a reconcile report deserves: UNKNOWN or per-payment errors
// left -> 4, IN_PROGRESS left -> 5, else 0.
int exit_for_report(const std::string& report_json);

}  // namespace cli
