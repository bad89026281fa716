// result.h: reading a pay_result. Only pay_result_json allocates (its text is
// written on the first call); no accessor throws, and each answers a NULL
// result as result.h says.
#include "api_internal.hpp"

static_assert(PAY_OUTCOME_SUCCEEDED == static_cast<int>(payretry::Outcome::succeeded) &&
                  PAY_OUTCOME_IN_PROGRESS == static_cast<int>(payretry::Outcome::in_progress) &&
                  PAY_DELIVERY_DELIVERED == static_cast<int>(payretry::Delivery::delivered),
              "C enums mirror the engine's");
static_assert(PAY_MONEY_UNKNOWN == static_cast<int>(payretry::MoneyState::unknown) &&
                  PAY_MONEY_AWAITING_CUSTOMER == static_cast<int>(payretry::MoneyState::awaiting_customer) &&
                  PAY_MONEY_PENDING == static_cast<int>(payretry::MoneyState::pending) &&
                  PAY_MONEY_AUTHORIZED == static_cast<int>(payretry::MoneyState::authorized) &&
                  PAY_MONEY_PAID == static_cast<int>(payretry::MoneyState::paid) &&
                  PAY_MONEY_PARTLY_REFUNDED == static_cast<int>(payretry::MoneyState::partly_refunded) &&
                  PAY_MONEY_REFUNDED == static_cast<int>(payretry::MoneyState::refunded) &&
                  PAY_MONEY_FAILED == static_cast<int>(payretry::MoneyState::failed),
              "pay_money_state mirrors MoneyState");

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
int pay_result_money_state(const pay_result* r) { return r ? static_cast<int>(r->r.money_state) : PAY_EINVALID; }
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

const char* pay_money_state_name(int state) {
  if (state < PAY_MONEY_UNKNOWN || state > PAY_MONEY_FAILED) return "?";
  return payretry::money_state_name(static_cast<payretry::MoneyState>(state));
}

}  // extern "C"
