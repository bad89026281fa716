// result.h: reading a pay_result. Only pay_result_json allocates (its text is
// written on the first call); no accessor throws, and each answers a NULL
// result as result.h says.
#include "api_internal.hpp"

static_assert(PAY_OUTCOME_SUCCEEDED == static_cast<int>(payretry::Outcome::succeeded) &&
                  PAY_OUTCOME_IN_PROGRESS == static_cast<int>(payretry::Outcome::in_progress) &&
                  PAY_DELIVERY_DELIVERED == static_cast<int>(payretry::Delivery::delivered),
              "C enums mirror the engine's");

namespace payretry::capi {

std::unique_ptr<pay_result> make_result(payretry::PaymentResult r) {
  auto res = std::make_unique<pay_result>();
  res->r = std::move(r);
  return res;
}

}  // namespace payretry::capi

extern "C" {

int pay_result_outcome(const pay_result* r) { return r ? static_cast<int>(r->r.outcome) : PAY_EINVALID; }
int pay_result_delivery(const pay_result* r) { return r ? static_cast<int>(r->r.delivery) : PAY_EINVALID; }
int pay_result_http_status(const pay_result* r) { return r ? r->r.http_status : 0; }

const char* pay_result_body(const pay_result* r, size_t* len) {
  if (len) *len = r ? r->r.body.size() : 0;
  return r ? r->r.body.c_str() : nullptr;
}

const char* pay_result_order_id(const pay_result* r) { return r ? r->r.order_id.c_str() : nullptr; }
const char* pay_result_idempotency_key(const pay_result* r) { return r ? r->r.idempotency_key.c_str() : nullptr; }

const char* pay_result_provider_payment_id(const pay_result* r) {
  return r && !r->r.provider_payment_id.empty() ? r->r.provider_payment_id.c_str() : nullptr;
}
const char* pay_result_provider_status(const pay_result* r) {
  return r && !r->r.provider_status.empty() ? r->r.provider_status.c_str() : nullptr;
}
int pay_result_from_ledger(const pay_result* r) { return r && r->r.from_ledger ? 1 : 0; }

const char* pay_result_ledger_error(const pay_result* r) {
  return r && !r->r.ledger_error.empty() ? r->r.ledger_error.c_str() : nullptr;
}
int pay_result_attempts(const pay_result* r) { return r ? static_cast<int>(r->r.attempts.size()) : 0; }
const char* pay_result_error(const pay_result* r) { return r && !r->r.error.empty() ? r->r.error.c_str() : nullptr; }
const char* pay_result_json(const pay_result* r) {
  if (!r) return nullptr;
  try {
    // A render that throws leaves the flag unset: a later call tries again.
    std::call_once(r->json_once, [r] { r->json = r->r.to_json(); });
  } catch (...) {
    std::string message;
    payretry::capi::set_error(payretry::capi::translate(std::current_exception(), message), message);
    return nullptr;
  }
  return r->json.c_str();
}
void pay_result_free(pay_result* r) { delete r; }

const char* pay_outcome_name(int outcome) {
  switch (outcome) {
    case PAY_OUTCOME_SUCCEEDED: return "SUCCEEDED";
    case PAY_OUTCOME_FAILED: return "FAILED";
    case PAY_OUTCOME_UNKNOWN: return "UNKNOWN";
    case PAY_OUTCOME_IN_PROGRESS: return "IN_PROGRESS";
  }
  return "?";
}

const char* pay_delivery_name(int delivery) {
  switch (delivery) {
    case PAY_DELIVERY_NOT_SENT: return "not_sent";
    case PAY_DELIVERY_MAYBE_PROCESSED: return "maybe_processed";
    case PAY_DELIVERY_DELIVERED: return "delivered";
  }
  return "?";
}

}  // extern "C"
