#include "common.hpp"

namespace cli {

int exit_for_error(int pay_code) {
  switch (pay_code) {
    case PAY_ECONFIG: return kExitConfig;
    case PAY_ENOTFOUND: return kExitNotFound;
    case PAY_ELEDGER:
    case PAY_EIO: return kExitLedger;
    case PAY_EMISMATCH: return kExitMismatch;
    // The caller's input was refused before anything was sent.
    case PAY_EINVALID:
    case PAY_ETOOBIG:
    case PAY_EKEY: return kExitUsage;
    default: return kExitInternal;
  }
}

int exit_for_outcome(pay::outcome o) {
  switch (o) {
    case pay::outcome::succeeded: return kExitOk;
    case pay::outcome::failed: return kExitFailed;
    case pay::outcome::unknown: return kExitUnknown;
    case pay::outcome::in_progress: return kExitInProgress;
  }
  return kExitUnknown;
}

int exit_for_outcome_name(const std::string& name) {
  if (name == "SUCCEEDED") return kExitOk;
  if (name == "FAILED") return kExitFailed;
  if (name == "IN_PROGRESS") return kExitInProgress;
  return kExitUnknown;  // never claim more certainty than the document gives
}

}  // namespace cli
