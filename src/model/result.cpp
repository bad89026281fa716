#include "result.hpp"

#include <cJSON.h>

#include <memory>
#include <new>

#include "json_util.hpp"

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

void json_add_attempt(cJSON* o, const AttemptRecord& a) {
  json_add(o, "attempt", a.number);
  json_add(o, "started_unix_ms", a.started_unix_ms);
  json_add(o, "elapsed_ms", a.elapsed_ms);
  if (a.http_status) json_add(o, "http_status", a.http_status);
  else if (!cJSON_AddNullToObject(o, "http_status")) throw std::bad_alloc();
  json_add_or_null(o, "transport_error", a.transport_error);
  json_add(o, "verdict", a.verdict);
  json_add(o, "reason", a.reason);
  json_add_bool(o, "may_have_processed", a.may_have_processed);
  if (a.delay_ms >= 0) {
    json_add(o, "delay_ms", a.delay_ms);
    json_add(o, "delay_source", a.delay_source);
  }
  json_add_or_null(o, "provider_request_id", a.provider_request_id);
  json_add_bool(o, "replayed", a.replayed);
  json_add_bool(o, "reused_connection", a.reused_connection);
}

std::string PaymentResult::to_json() const {
  JsonPtr root(cJSON_CreateObject());
  cJSON* r = root.get();
  json_add(r, "outcome", outcome_name(outcome));
  json_add(r, "delivery", delivery_name(delivery));
  json_add(r, "order_id", order_id);
  json_add(r, "idempotency_key", idempotency_key);
  json_add(r, "http_status", http_status);
  json_add_or_null(r, "provider_payment_id", provider_payment_id);
  json_add_or_null(r, "provider_status", provider_status);
  json_add_or_null(r, "error", error);
  json_add(r, "elapsed_ms", elapsed_ms);
  json_add_bool(r, "from_ledger", from_ledger);
  json_add_bool(r, "queried", queried);
  json_add_bool(r, "recorded", ledger_error.empty());
  json_add_or_null(r, "ledger_error", ledger_error);
  cJSON* list = cJSON_AddArrayToObject(r, "attempts");
  if (!list) throw std::bad_alloc();
  for (const AttemptRecord& a : attempts) {
    cJSON* o = cJSON_CreateObject();
    if (!o) throw std::bad_alloc();
    cJSON_AddItemToArray(list, o);
    json_add_attempt(o, a);
  }
  return json_print(r);
}

}  // namespace payretry
