// What every command shares: exit codes, the errors that carry them, and the
// mapping from the library's outcomes and error codes to those exit codes.
#pragma once

#include <payretry/payretry.hpp>

#include <stdexcept>
#include <string>

namespace cli {

// Exit codes are a public contract (docs/cli.md, --help): scripts branch on them.
enum Exit : int {
  kExitOk = 0,          // succeeded, or a read / reconcile / demo that went well
  kExitFailed = 1,      // the provider definitively declined or rejected the payment
  kExitUsage = 2,       // bad flag, missing argument, body not JSON
  kExitConfig = 3,      // PAY_ECONFIG, or no config at all
  kExitUnknown = 4,     // UNKNOWN outcome, or reconcile left some UNKNOWN
  kExitInProgress = 5,  // another worker holds the order
  kExitNotFound = 6,    // PAY_ENOTFOUND
  kExitLedger = 7,      // PAY_ELEDGER / PAY_EIO: unreadable, locked or corrupt ledger
  kExitMismatch = 8,    // PAY_EMISMATCH: the order or key was used with other bytes
  kExitBroken = 9,      // demo: a duplicate charge, or a charged order reported FAILED
  // Anything else (out of memory, an internal error): never 1, which a script
  // would read as "the payment definitively failed, nothing was charged".
  kExitInternal = 10,
  kExitUnreachable = 11,  // check --probe: no HTTP answer from the provider's base_url
};

// A message for stderr and the exit code that goes with it; thrown by any
// command, printed once by main as "payretry: <what>".
class Failure : public std::runtime_error {
 public:
  Failure(int exit_code, const std::string& what) : std::runtime_error(what), code_(exit_code) {}
  int exit_code() const noexcept { return code_; }

 private:
  int code_;
};

inline Failure usage_error(const std::string& what) { return Failure(kExitUsage, what); }

// A failed library call, as an exit code.
int exit_for_error(int pay_code);

// A payment's outcome, as an exit code.
int exit_for_outcome(pay::outcome o);

// The same, from the outcome's name in a JSON document ("SUCCEEDED", ...).
int exit_for_outcome_name(const std::string& name);

}  // namespace cli
