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
