// Captures, refunds and cancels of a payment (issue 47), sent as safely as
// a create: each is a ledger row of its own (operation_rules.hpp), made by
// the ledger's guarded create_operation_and_claim before anything is sent,
// with its own key, window, rules and bytes, and then run by the payment
// flow's own decide/run loop under a profile made from the operation's
// (operation_profile). What the operation did moves its payment's money
// forward, as the provider's word about that payment (an event of the
// ledger's).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "attempt_log.hpp"
#include "auth.hpp"
#include "clock.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "fingerprint.hpp"
#include "ledger.hpp"
#include "operation_rules.hpp"
#include "payment_flow.hpp"
#include "profile.hpp"
#include "random.hpp"
#include "settle.hpp"
#include "stats.hpp"

namespace payretry {

struct OperationRequest {
  std::string order_id;  // the payment's
  OperationKind kind = OperationKind::refund;
  std::string ref;       // the caller's name for it, unique per payment and kind ("r1")
  // In the provider's units (operation's amount reader); -1: the rest
  // (what is left to capture or to refund). Ignored for a cancel.
  int64_t amount = -1;
  // A JSON object of further fields the provider takes (a reason, a
  // metadata member); "" none. Never the fields payretry writes.
  std::string body;
  // The id the operation's path names besides the payment's (PayPal's
  // capture to refund); "" none.
  std::string target_id;
  int64_t deadline_ms = 0;  // 0: the config's
};

// The profile an operation is sent by: the payment's, with the operation's
// path, identity, window, replay kind, rules, answer reading and money in
// place of the create's. Its create-only checks (the create's reference,
// what a create's answer must name) do not apply to an operation's answer.
Profile operation_profile(const Profile& payment, const ProfileOperation& op);

class OperationFlow {
 public:
  struct Deps {
    Transport& transport;
    Clock& clock;
    Sleeper& sleeper;
    Random& jitter;
    KeySource& keys;
    AttemptLog& log;
    RetryBudget& budget;
    Stats& stats;
    Authenticator* auth;
    RequestHook hook;
  };
  OperationFlow(const Config& config, const Profile& profile, Ledger& ledger, PaymentFlow& payments, Deps deps);

  // Throws Error (nothing sent: bad input, no such payment, refused by the
  // guard, a mismatch) and LedgerError (the store failed before a send).
  // Once a request may have left, a result.
  PaymentResult submit(const OperationRequest& request);

  // Settles an operation's row that is not settled (UNKNOWN, or abandoned
  // IN_FLIGHT) by the operation's own lookup, never by a re-send; what it
  // finds moves the payment's money as a submit's answer would. pay_query
  // and pay_reconcile come here for operation rows.
  PaymentResult settle(const PaymentRow& row);

  // An operation's row a notification has settled SUCCEEDED
  // (WebhookReceiver::on_operation_settled): its payment's money moves as
  // the operation's own answer would have moved it. Anything else: nothing.
  void settled_by_event(const PaymentRow& row);

 private:
  // One kind's engine and flow, made on first use.
  struct Sender {
    Config config;
    Profile profile;
    std::unique_ptr<Engine> engine;
    std::unique_ptr<PaymentFlow> flow;
    std::unique_ptr<Settler> settler;  // the operation's lookup
  };
  Sender& sender_for(const std::string& kind, const ProfileOperation& op);
  std::string body_for(const OperationRequest& r, const ProfileOperation& op, const PaymentRow& payment,
                       const PaymentRow& row) const;
  void move_payment_money(const PaymentRow& payment, const PaymentRow& row, const PaymentResult& result);

  const Config& config_;
  const Profile& profile_;
  Ledger& ledger_;
  PaymentFlow& payments_;
  Deps d_;
  const Fingerprinter fingerprint_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Sender>> senders_;
};

}  // namespace payretry
