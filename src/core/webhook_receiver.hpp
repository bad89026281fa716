// A provider's notification (webhook), from the bytes the application's
// HTTP server received to the answer it sends back: verified by the
// profile's scheme with the config's secrets (src/auth/webhook_scheme.hpp),
// read through the profile's webhook block, each event recorded in the
// ledger once, in the same commit as the state it settles
// (Ledger::record_event), forward only (event_moves). docs/design.md
// "Webhooks".
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "attempt_log.hpp"
#include "clock.hpp"
#include "config.hpp"
#include "ledger.hpp"
#include "payment_flow.hpp"
#include "profile.hpp"
#include "settle.hpp"
#include "stats.hpp"
#include "webhook_scheme.hpp"

namespace payretry {

// What one event of a notification did.
struct WebhookEventResult {
  std::string event_id;
  std::string event_type;
  std::string order_id;             // as the event names it ("" none)
  std::string provider_payment_id;  // likewise
  std::string provider_status;      // the status word or the type the finding was read from
  std::string idempotency_key;      // the key of the request that caused it, where the profile reads one (not shown)
  std::string account;              // the account it names, where the profile reads one ("" the platform's own; not shown)
  int64_t object_created_s = 0;     // when its payment was made, where the profile reads it (0 unknown; not shown)
  std::string finding;              // succeeded | failed | noted
  // Where the event says the money is (money_in_event); it moves the row's
  // only when the event is provably that payment's (event_moves_money).
  MoneyState money_state = MoneyState::unknown;
  // settled: its row moved to the event's state; recorded: in the row's
  // history, the state unchanged (it says nothing final, or the row already
  // says it); conflict: recorded, and the row's final state is the other
  // one (never moved: a person looks); duplicate: seen before, nothing
  // changed; kept: stored until its row is free (a run holds it) or exists;
  // ignored: authentic, but not about a payment of this client's (another
  // account, another kind of object, no name of ours).
  std::string effect;
  std::string state_before;  // the order's row before ("" when not read: no order named, or no row)
  std::string state_after;
  std::string why;
};

struct WebhookOutcome {
  // accepted: verified and every event stored (or ignored); refused: not
  // verified, malformed or stale, nothing changed; retry: verified but not
  // stored (the ledger failed, a confirming lookup failed), so the provider
  // must deliver it again.
  std::string verdict = "refused";
  std::string why;
  std::string scheme;
  // What to answer the provider: its ack only when accepted.
  int status = 400;
  std::string content_type = "text/plain";
  std::string body;
  std::vector<WebhookEventResult> events;
  std::string to_json() const;
};

// The secrets the scheme needs, from the config (the auth block's provider
// key and serial stand in for webhook.public_key and public_key_id); "" when
// all are there, else what is missing, naming the config key.
std::string webhook_secrets_missing(const std::string& scheme, const WebhookSecrets& secrets);
WebhookSecrets webhook_secrets_of(const Config& config);

class WebhookReceiver {
 public:
  // `settler` answers the lookups of a profile that confirms notifications
  // by one (Mollie). Throws Error(PAY_ECONFIG) when the profile reads no
  // notifications or the config lacks a secret its scheme needs.
  WebhookReceiver(Ledger& ledger, const Profile& profile, const Config& config, Clock& clock, Stats& stats,
                  AttemptLog& log, PaymentFlow& flow, Settler& settler);

  // Never throws for anything the request holds: a notification that cannot
  // be verified or read is refused with why; one that could not be stored
  // is answered `retry` (never 2xx), so that the provider delivers it again.
  WebhookOutcome apply(const WebhookRequest& request);

  // Told of each operation row an event has just settled SUCCEEDED, so that
  // its payment's money moves as the operation's own answer would move it
  // (the client wires OperationFlow here). Called after the event's commit;
  // what it fails to do a later query of the operation does again.
  void on_operation_settled(std::function<void(const PaymentRow&)> f) { operation_settled_ = std::move(f); }

 private:
  void apply_event(const cJSON* doc, WebhookOutcome& out);
  // An event the profile lists under one of its operations (kind): landed
  // on that operation's own row (operation_event_row), never the payment's.
  void apply_operation_event(const cJSON* doc, const std::string& kind, WebhookOutcome& out);
  void apply_hint(const std::string& provider_id, WebhookOutcome& out);
  void record(LedgerEvent e, WebhookEventResult r, WebhookOutcome& out);
  std::string not_ours(const cJSON* doc, const std::vector<std::pair<std::string, std::string>>& names) const;
  // The account `row`'s payment was made in, by the profile's
  // webhook.account_header ("" the platform's own).
  std::string payment_account(const PaymentRow& row) const;

  Ledger& ledger_;
  const Profile& profile_;
  const Config& config_;
  Clock& clock_;
  Stats& stats_;
  AttemptLog& log_;
  PaymentFlow& flow_;
  Settler& settler_;
  const WebhookSecrets secrets_;
  std::function<void(const PaymentRow&)> operation_settled_;
};

}  // namespace payretry
