// One payment through the ledger: commit the key before the first byte,
// claim a lease, run the engine's attempts, record them, settle. Resubmitting
// an order returns its stored outcome, resumes it with the same key and
// bytes, or reports that another worker holds it (docs/design.md "Ledger").
#pragma once
#include <atomic>
#include <optional>
#include <string>

#include "attempt_log.hpp"
#include "clock.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "error.hpp"
#include "fingerprint.hpp"
#include "ledger.hpp"
#include "random.hpp"
#include "stats.hpp"

namespace payretry {

class PaymentFlow {
 public:
  // `scope`: the client's (scope.hpp), recorded in every row it creates;
  // a row of another scope is never acted on.
  PaymentFlow(Engine& engine, Ledger& ledger, const Config& config, Clock& clock, Sleeper& sleeper, KeySource& keys,
              Stats& stats, AttemptLog& log, std::string owner, std::string scope);

  // Throws Error (nothing sent, or a mismatch) and LedgerError (the store
  // failed before anything was sent: nothing is sent without a committed
  // record). Once a request may have left, a store failure comes back as a
  // result with ledger_error set, never as an exception.
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
    std::string fence;    // the fencing token of the claim that creates the row
    JsonPtr parsed_body;  // the body as validate() parsed it, if it did (SubmitRequest::parsed_body)
  };
  Admission admit(const SubmitRequest& request);
  // submit() after its row was created (or found) and claimed by
  // admission.fence: decide, then run, answer, wait or re-read. For an
  // operation (OperationFlow), whose row the ledger's guarded
  // create_operation_and_claim made, and whose admission it built.
  PaymentResult go_on(const SubmitRequest& request, const Admission& admission, PaymentRow row, bool created);
  // What to do with the order's row as create_and_claim (or a re-read) left
  // it. May claim the row, and then reads its history: a payment that may
  // have been processed resumes only when a same-key re-send cannot charge
  // it twice (history.hpp); otherwise it is answered UNKNOWN with what would
  // settle it. Throws Error on a mismatch.
  struct Decision {
    enum Kind { run, answer, reread, wait } kind = answer;
    PaymentRow row;          // run: the claimed row (lease_owner: this claim's token)
    bool resumed = false;    // run: an earlier run or worker started it
    bool prior_may_have_processed = false;  // run: from the history
    bool prior_cleared_by_lookup = false;   // run: from the history (HistoryReading::cleared_by_lookup)
    PaymentResult result;    // answer
    int64_t wait_ms = 0;     // wait: then re-read the row
  };
  // `row` is the row of admission.proposed.order_id as read (or as the create
  // stored it); a run takes it over.
  Decision decide(const Admission& admission, PaymentRow row, bool created, int64_t wait_until_mono);
  // The request that runs (or resumes) the claimed row: its key, attempt
  // numbers, what earlier runs may have sent, and a deadline inside its
  // lease and its key's life. before_retry is left to the caller.
  SubmitRequest resume_request(const SubmitRequest& request, const Decision& run) const;

  // A new fencing token: every claim gets its own, so that a stale run of
  // this very client is fenced off like another worker's. `sends` is false
  // for claims that only look up or settle (a takeover of such a claim knows
  // no request can be unrecorded).
  std::string new_fence(bool sends);
  // Claims `row` (UNKNOWN or PENDING, or IN_FLIGHT with an expired lease)
  // with a fresh token. Taking over a sending run's expired lease first
  // records that run's possible last send (history.hpp). nullopt: someone
  // else holds it. Throws LedgerError.
  std::optional<PaymentRow> claim(const PaymentRow& row, int64_t lease_ms, bool sends);
  // The settlement that leaves a row resumable after a failed call.
  Settlement failed_call(const PaymentRow& row, bool prior_may_have_processed, const Error& e) const;
  // The settlement of a finished run, and the attempt that goes with it.
  // What would settle a payment that must never be re-sent, in words.
  std::string settle_hint() const;
  // A result whose settlement was fenced off: another run took the payment.
  void lost_at_settle(PaymentResult& r) const;
  // Marks a result whose request went out but whose ledger write failed.
  void mark_unrecorded(PaymentResult& r, const std::string& why) const;
  static Settlement settlement_of_result(const PaymentResult& r);
  static AttemptEntry entry_of_attempt(const AttemptRecord& a);
  const std::string& owner() const { return owner_; }
  const std::string& scope() const { return scope_; }
  // Throws Error(PAY_EMISMATCH) when `row` is not this client's to act on
  // (another scope, or unscoped and not adopted): nothing is sent.
  void check_scope(const PaymentRow& row) const;
  Ledger& ledger() { return ledger_; }

 private:
  PaymentResult from_ledger(const PaymentRow& row, const std::string& why);
  PaymentResult expire(const PaymentRow& claimed);
  PaymentResult release(const PaymentRow& claimed, Delivery delivery, const std::string& why);
  PaymentResult run(const SubmitRequest& request, const Decision& d, const cJSON* parsed_body);

  Engine& engine_;
  Ledger& ledger_;
  const Config& config_;
  Clock& clock_;
  Sleeper& sleeper_;
  KeySource& keys_;
  Stats& stats_;
  AttemptLog& log_;
  const std::string owner_;
  const std::string scope_;
  const Fingerprinter fingerprint_;  // keyed by the ledger's secret
  std::atomic<uint64_t> claims_{0};
};

}  // namespace payretry
