// The engine's account of one submission: outcome, delivery and every attempt.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "money_state.hpp"

namespace payretry {

class JsonWriter;

enum class Outcome { succeeded = 1, failed = 2, unknown = 3, in_progress = 4 };
enum class Delivery { not_sent = 1, maybe_processed = 2, delivered = 3 };

const char* outcome_name(Outcome o);
const char* delivery_name(Delivery d);

struct AttemptRecord {
  unsigned number = 0;
  int64_t started_unix_ms = 0;
  int64_t elapsed_ms = 0;
  int http_status = 0;              // 0: no response
  std::string transport_error;      // empty when a response came back
  std::string verdict;
  std::string reason;
  bool may_have_processed = false;
  int64_t delay_ms = -1;            // delay chosen after this attempt; -1: none
  std::string delay_source;         // "backoff" | "retry_after" | "credential_renewed"
  std::string provider_request_id;
  bool replayed = false;            // provider said: replay of a stored response
  bool reused_connection = false;
  // The driver made it durable before the backoff (the record step): the
  // settlement must not write it a second time.
  bool recorded = false;
};

// Writes an attempt's fields into the open object: the one JSON shape of an
// attempt, as the result JSON and the attempt log both write it. The two
// strings that may come from outside are passed in so that a writer that
// must clean them (the log) need not copy the record. Throws std::bad_alloc.
void write_attempt_fields(JsonWriter& w, const AttemptRecord& a, std::string_view transport_error,
                          std::string_view provider_request_id);
inline void write_attempt_fields(JsonWriter& w, const AttemptRecord& a) {
  write_attempt_fields(w, a, a.transport_error, a.provider_request_id);
}

struct PaymentResult {
  Outcome outcome = Outcome::unknown;
  Delivery delivery = Delivery::not_sent;
  std::string order_id;
  std::string idempotency_key;
  int http_status = 0;
  std::string body;
  std::string provider_payment_id;  // empty: none
  std::string provider_status;
  // Where the money is (money_state.hpp): what the profile reads from the
  // provider's words, moved forward only from what the ledger held.
  MoneyState money_state = MoneyState::unknown;
  std::string error;                // empty: none
  int64_t elapsed_ms = 0;
  // True when the outcome was read from the ledger and nothing was sent.
  bool from_ledger = false;
  // True when a status lookup at the provider (pay_query) decided it.
  bool queried = false;
  // Empty when the ledger holds this result. Otherwise the store's error:
  // something was sent, so this is a result, not a failed call, but a
  // restart will not find it (the row stays IN_FLIGHT or UNKNOWN and is
  // resumed or reconciled once its lease ends).
  std::string ledger_error;
  std::vector<AttemptRecord> attempts;
  // The submission's W3C trace context, for the log lines (not in the JSON
  // view). Empty: none.
  std::string traceparent;

  // The stable JSON view (without the body).
  std::string to_json() const;
};

}  // namespace payretry
