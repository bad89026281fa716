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
#include "error.hpp"
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

  // submit() in pieces, for the concurrent engine, which batches the ledger
  // writes of many payments (LedgerBatch) and drives AttemptRun itself.
  //
  // admit: everything that needs no ledger: validation, the key, the
  // fingerprint and the row to propose. Throws Error.
  struct Admission {
    PaymentRow proposed;
    std::string own_key;  // the key the caller or the body fixed; empty: generated
    int64_t lease_ms = 0; // how long a claim lasts
  };
  Admission admit(const SubmitRequest& request);
  // What to do with the order's row as create_and_claim (or a re-read) left
  // it. May claim the row (one commit). Throws Error on a mismatch.
  struct Decision {
    enum Kind { run, answer, reread, wait } kind = answer;
    PaymentRow row;          // run: the claimed row
    bool resumed = false;    // run: an earlier run or worker started it
    PaymentResult result;    // answer
    int64_t wait_ms = 0;     // wait: then re-read the row
  };
  Decision decide(const Admission& admission, const PaymentRow& row, bool created, int64_t wait_until_mono);
  // The request that runs (or resumes) `row`: its key, attempt numbers and
  // what earlier runs may have sent. before_retry is left to the caller.
  SubmitRequest resume_request(const SubmitRequest& request, const PaymentRow& row, bool resumed) const;
  // The settlement that leaves a row resumable after a failed call.
  Settlement failed_call(const PaymentRow& row, const SubmitRequest& resumed_request, const Error& e) const;
  // The settlement of a finished run, and the attempt that goes with it.
  static Settlement settlement_of_result(const PaymentResult& r);
  static AttemptEntry entry_of_attempt(const AttemptRecord& a);
  const std::string& owner() const { return owner_; }
  Ledger& ledger() { return ledger_; }

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
