// One payment through the ledger: commit the key before the first byte,
// claim a lease, run the engine's attempts, record them, settle. Resubmitting
// an order returns its stored outcome, resumes it with the same key and
// bytes, or reports that another worker holds it (DESIGN §4).
#pragma once
#include <string>

#include "attempt_log.hpp"
#include "clock.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "ledger.hpp"
#include "random.hpp"
#include "stats.hpp"

namespace payretry {

class PaymentFlow {
 public:
  PaymentFlow(Engine& engine, Ledger& ledger, const Config& config, Clock& clock, Sleeper& sleeper, KeySource& keys,
              Stats& stats, AttemptLog& log, std::string owner);

  // Throws Error (nothing sent, or a mismatch) and LedgerError (the store
  // failed: nothing is sent without a committed record).
  PaymentResult submit(const SubmitRequest& request);
  // The outcome the ledger holds for `row`, as a result; nothing is sent.
  PaymentResult stored_result(const PaymentRow& row, const std::string& why) { return from_ledger(row, why); }

 private:
  PaymentResult from_ledger(const PaymentRow& row, const std::string& why);
  PaymentResult expire(const PaymentRow& claimed);
  PaymentResult run(const SubmitRequest& request, const PaymentRow& row, bool resumed);

  Engine& engine_;
  Ledger& ledger_;
  const Config& config_;
  Clock& clock_;
  Sleeper& sleeper_;
  KeySource& keys_;
  Stats& stats_;
  AttemptLog& log_;
  const std::string owner_;
  const std::string secret_;
};

}  // namespace payretry
