// Settling what a submission could not: pay_query asks the provider what
// really happened to one payment (the profile's lookup), pay_reconcile walks
// every UNKNOWN payment and every abandoned IN_FLIGHT one and settles each by
// query, or by a same-key re-send where that is the only safe way.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attempt_log.hpp"
#include "clock.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "history.hpp"
#include "ledger.hpp"
#include "payment_flow.hpp"
#include "profile.hpp"
#include "random.hpp"
#include "retry_decision.hpp"
#include "stats.hpp"
#include "transport.hpp"

namespace payretry {

struct ReconcileOptions {
  // Returns the exact body of an order when the application still has it;
  // nullopt when it does not (the payment then stays UNKNOWN, with why).
  std::function<std::optional<std::string>(const std::string& order_id)> body_for;
  int limit = 1000;
  int64_t older_than_ms = 0;  // only payments last updated at least this long ago
};

struct ReconcileReport {
  int examined = 0;
  std::vector<PaymentResult> results;
  std::vector<std::pair<std::string, std::string>> errors;  // order id, why
  std::string to_json() const;
};

// The payment's own submission headers as its row keeps them. Throws
// LedgerError for a value the ledger holds that is not readable.
Headers submission_headers_of(const PaymentRow& row);

class Settler {
 public:
  Settler(Ledger& ledger, Transport& transport, const Profile& profile, const Config& config, Clock& clock,
          Sleeper& sleeper, Random& jitter, RetryBudget& budget, AttemptLog& log, Stats& stats, PaymentFlow& flow,
          RequestHook hook, Authenticator* auth = nullptr);

  // Throws Error(Errc::PAY_ENOTFOUND) for an order the ledger does not know.
  PaymentResult query(const std::string& order_id);
  // Settles every UNKNOWN payment and every one a dead run left IN_FLIGHT:
  // by lookup where the profile has one, and by a same-key re-send only
  // where the history says it cannot charge twice (history.hpp), or a lookup
  // proved that no payment exists.
  ReconcileReport reconcile(const ReconcileOptions& options);

  // What the provider's lookup says of the payment `provider_id`, asked
  // without a row (a webhook that only names an id: Mollie's). Only for a
  // profile that looks up by provider id; nothing is written.
  struct Finding {
    enum Kind { found, not_found, failed } kind = failed;
    std::string provider_status;
    std::string provider_id;
    MoneyState money_state = MoneyState::unknown;  // what the found answer says (money.lookup)
    std::string body;  // the found answer, for the caller to read names from
    int http_status = 0;
    std::string why;
  };
  Finding look_up_provider_payment(const std::string& provider_id);
  // Lands the webhook events kept for `row` (its order's, and its provider
  // id's) that came after the row was made (kept_event_applies), oldest
  // first; the row as it then stands. Throws LedgerError.
  PaymentRow apply_kept_events(const PaymentRow& row);

  // Where query and reconcile send an operation's row (a capture, refund
  // or cancel): the owner's settler for that operation (OperationFlow).
  void settle_operations_by(std::function<PaymentResult(const PaymentRow&)> settle) {
    settle_operation_ = std::move(settle);
  }
  // For a settler made with an operation's profile (operation_profile):
  // settles one of its rows by the operation's own lookup, or leaves it
  // UNKNOWN with why. Never re-sends.
  PaymentResult settle_operation(const PaymentRow& row);

 private:
  struct Answer;        // what the lookup found
  struct LookupTarget;  // what every attempt of one lookup sends
  bool can_look_up(const PaymentRow& row) const;
  LookupTarget lookup_target(const PaymentRow& row) const;
  std::string prepare_lookup(const PaymentRow& row, const LookupTarget& target, unsigned n, int64_t deadline,
                             HttpRequest& h);
  bool read_lookup_answer(const PaymentRow& row, const LookupTarget& target, const TransportResult& t, Answer& a,
                          std::string& verdict, std::string& reason);
  void log_lookup(const PaymentRow& row, unsigned n, int64_t asked_at, const TransportResult& t,
                  const std::string& verdict, const std::string& reason, const RetryDecision& next);
  Answer look_up(const PaymentRow& row);
  AttemptEntry lookup_entry(const PaymentRow& claimed, const Answer& a, const HistoryReading& h, int64_t now) const;
  PaymentResult settle_from(const PaymentRow& claimed, const Answer& a);
  // A settled payment whose money may still move (its customer may yet
  // pay, its hold be captured or voided): the provider is asked again and
  // what it says moves the money forward, outcome unchanged.
  PaymentResult refresh_money(const PaymentRow& row);
  PaymentResult leave_operation(const PaymentRow& row);
  PaymentResult unchanged(const PaymentRow& row, const std::string& why);
  PaymentResult settle_unknown(const PaymentRow& row, const std::string& why);
  PaymentResult reconcile_one(const PaymentRow& row, const ReconcileOptions& o);

  Ledger& ledger_;
  Transport& transport_;
  const Profile& profile_;
  const Config& config_;
  Clock& clock_;
  Sleeper& sleeper_;
  Random& jitter_;
  RetryBudget& budget_;  // the client's: lookups' retries draw from it too
  AttemptLog& log_;
  Stats& stats_;
  PaymentFlow& flow_;
  RequestHook hook_;
  Authenticator* auth_;  // may be null; signs lookups and checks their answers like creates
  std::function<PaymentResult(const PaymentRow&)> settle_operation_;
};

}  // namespace payretry
