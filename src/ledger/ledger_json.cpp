#include "ledger_json.hpp"

#include <new>

#include "json_util.hpp"

namespace payretry {
namespace {

cJSON* row_object(const PaymentRow& p) {
  cJSON* o = cJSON_CreateObject();
  if (!o) throw std::bad_alloc();
  JsonPtr guard(o);
  json_add(o, "order_id", p.order_id);
  json_add(o, "idempotency_key", p.idempotency_key);
  json_add(o, "state", state_name(p.state));
  json_add_or_null(o, "delivery", p.delivery);
  json_add_or_null(o, "detail", p.detail);
  json_add_or_null(o, "provider_payment_id", p.provider_payment_id);
  json_add_or_null(o, "provider_status", p.provider_status);
  json_add(o, "money_state", money_state_name(p.money_state));
  json_add(o, "http_status", p.http_status);
  json_add(o, "attempts", p.attempts);
  json_add(o, "created_at", p.created_at);
  json_add(o, "key_expires_at", p.key_expires_at);
  json_add_or_null(o, "lease_owner", p.lease_owner);
  json_add(o, "lease_until", p.lease_until);
  json_add(o, "updated_at", p.updated_at);
  json_add_or_null(o, "scope", p.scope);
  json_add_or_null(o, "submission_path", p.submission_path);
  // Schema 6. A reader sees every kind by name, "create" too (stored as
  // ""); a create has no parent and no ref (null); amount -1: not known.
  json_add(o, "operation", p.operation == OperationKind::create ? "create" : operation_kind_name(p.operation));
  json_add_or_null(o, "parent_order_id", p.parent_order_id);
  json_add_or_null(o, "operation_ref", p.operation_ref);
  json_add(o, "amount", p.amount);
  if (p.submission_headers.empty()) {
    if (!cJSON_AddNullToObject(o, "submission_headers")) throw std::bad_alloc();
  } else {
    // Stored as JSON text by the flow that wrote it; shown as the array it is.
    cJSON* h = cJSON_Parse(p.submission_headers.c_str());
    if (!h) throw std::bad_alloc();
    cJSON_AddItemToObject(o, "submission_headers", h);
  }
  return guard.release();
}

}  // namespace

std::string payment_json(const PaymentRow& row, const std::vector<AttemptEntry>& attempts,
                         const std::vector<PaymentRow>* operations) {
  JsonPtr root(cJSON_CreateObject());
  if (!root) throw std::bad_alloc();
  cJSON_AddItemToObject(root.get(), "payment", row_object(row));
  cJSON* list = cJSON_AddArrayToObject(root.get(), "attempts");
  if (!list) throw std::bad_alloc();
  for (const AttemptEntry& a : attempts) {
    cJSON* o = cJSON_CreateObject();
    if (!o) throw std::bad_alloc();
    cJSON_AddItemToArray(list, o);
    json_add(o, "attempt", a.number);
    json_add(o, "kind", a.kind);
    json_add(o, "started_at", a.started_at);
    json_add(o, "ended_at", a.ended_at);
    json_add(o, "http_status", a.http_status);
    json_add_or_null(o, "transport_error", a.transport_error);
    json_add(o, "verdict", a.verdict);
    json_add(o, "reason", a.reason);
    json_add(o, "money_state", money_state_name(a.money_state));
    if (a.delay_ms >= 0) json_add(o, "delay_ms", a.delay_ms);
    json_add_or_null(o, "provider_request_id", a.provider_request_id);
    json_add_bool(o, "replayed", a.replayed);
    // null: recorded before the ledger kept it (read as "may have been processed").
    if (a.processed) json_add_bool(o, "may_have_processed", *a.processed);
    else if (!cJSON_AddNullToObject(o, "may_have_processed")) throw std::bad_alloc();
  }
  if (operations) {
    cJSON* ops = cJSON_AddArrayToObject(root.get(), "operations");
    if (!ops) throw std::bad_alloc();
    for (const PaymentRow& r : *operations) cJSON_AddItemToArray(ops, row_object(r));
  }
  return json_print(root.get());
}

std::string payments_json(const std::vector<PaymentRow>& rows) {
  JsonPtr root(cJSON_CreateArray());
  if (!root) throw std::bad_alloc();
  for (const PaymentRow& r : rows) cJSON_AddItemToArray(root.get(), row_object(r));
  return json_print(root.get());
}

}  // namespace payretry
