// `payretry demo --operations`: payments, then captures, partial refunds and
// cancels of them, for each built-in provider against the embedded
// simulator under the default demo's fault mix, checked against the
// simulator's count of money movements per operation key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "output.hpp"

namespace cli {

struct OperationsPlan {
  int payments = 200;        // per provider
  int concurrency = 64;      // creates in flight at once
  int threads = 16;          // workers sending operations (each call blocks)
  uint64_t seed = 42;
  std::vector<std::string> providers;  // each is run with its own simulator and ledger
  std::string ledger = "sqlite";       // sqlite or memory
  bool quiet = false;
};

// Runs every provider of the plan in `dir` (a folder of its own) and
// returns the summary; "ok" is false when the simulator's truth shows an
// operation key that moved money twice, refunds above what was captured, an
// operation SUCCEEDED that the simulator did not execute or FAILED that it
// did, money moved under a key no ledger row holds, or a payment charged twice.
Json run_operations_demo(const OperationsPlan& plan, const std::string& dir);
void print_operations_summary(const cJSON* summary);

}  // namespace cli
