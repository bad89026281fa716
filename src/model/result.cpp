#include "result.hpp"

#include "json_writer.hpp"

namespace payretry {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::succeeded: return "SUCCEEDED";
    case Outcome::failed: return "FAILED";
    case Outcome::unknown: return "UNKNOWN";
    case Outcome::in_progress: return "IN_PROGRESS";
  }
  return "?";
}

const char* delivery_name(Delivery d) {
  switch (d) {
    case Delivery::not_sent: return "not_sent";
    case Delivery::maybe_processed: return "maybe_processed";
    case Delivery::delivered: return "delivered";
  }
  return "?";
}

void write_attempt_fields(JsonWriter& w, const AttemptRecord& a, std::string_view transport_error,
                          std::string_view provider_request_id) {
  w.field("attempt", a.number);
  w.field("started_unix_ms", a.started_unix_ms);
  w.field("elapsed_ms", a.elapsed_ms);
  if (a.http_status) w.field("http_status", a.http_status);
  else w.field_null("http_status");
  w.field_or_null("transport_error", transport_error);
  w.field("verdict", a.verdict);
  w.field("reason", a.reason);
  w.field_bool("may_have_processed", a.may_have_processed);
  if (a.delay_ms >= 0) {
    w.field("delay_ms", a.delay_ms);
    w.field("delay_source", a.delay_source);
  }
  w.field_or_null("provider_request_id", provider_request_id);
  w.field_bool("replayed", a.replayed);
  w.field_bool("reused_connection", a.reused_connection);
}

std::string PaymentResult::to_json() const {
  std::string out;
  out.reserve(512 + 320 * attempts.size());
  JsonWriter w(out);
  w.begin_object();
  w.field("outcome", outcome_name(outcome));
  w.field("delivery", delivery_name(delivery));
  w.field("order_id", order_id);
  w.field("idempotency_key", idempotency_key);
  w.field("http_status", http_status);
  w.field_or_null("provider_payment_id", provider_payment_id);
  w.field_or_null("provider_status", provider_status);
  w.field("money_state", money_state_name(money_state));
  w.field_or_null("error", error);
  w.field("elapsed_ms", elapsed_ms);
  w.field_bool("from_ledger", from_ledger);
  w.field_bool("queried", queried);
  w.field_bool("recorded", ledger_error.empty());
  w.field_or_null("ledger_error", ledger_error);
  w.begin_array("attempts");
  for (const AttemptRecord& a : attempts) {
    w.begin_object();
    write_attempt_fields(w, a);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return out;
}

}  // namespace payretry
