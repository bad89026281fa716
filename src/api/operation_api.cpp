// operation.h: a capture, refund or cancel of a payment, blocking on the
// caller's thread.
#include <string>

#include "api_internal.hpp"
#include "error.hpp"

using namespace payretry::capi;
using payretry::Errc;

extern "C" {

int pay_operation_options_init(pay_operation_options* opts, unsigned int version) {
  return init_options(opts, version, PAY_OPERATION_OPTIONS_VERSION, "pay_operation_options");
}

int pay_submit_operation(pay_result** out, pay_client* client, const char* order_id, int kind,
                         const pay_operation_options* opts) {
  if (out) *out = nullptr;
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    if (!order_id) return set_error(PAY_EINVALID, "order_id is NULL");
    if (!opts) return set_error(PAY_EINVALID, "opts is NULL: an operation needs its ref");
    if (opts->version != PAY_OPERATION_OPTIONS_VERSION) return bad_version(opts->version, "pay_operation_options");
    if (!opts->ref) return set_error(PAY_EINVALID, "opts->ref is NULL: an operation needs the caller's name for it");
    payretry::OperationRequest r;
    switch (kind) {
      case PAY_OPERATION_CAPTURE: r.kind = payretry::OperationKind::capture; break;
      case PAY_OPERATION_REFUND: r.kind = payretry::OperationKind::refund; break;
      case PAY_OPERATION_CANCEL: r.kind = payretry::OperationKind::cancel; break;
      default: return set_error(PAY_EINVALID, "kind " + std::to_string(kind) + " is not a pay_operation");
    }
    if (opts->amount < 0) return set_error(PAY_EINVALID, "amount is negative; 0 asks for the rest");
    try {
      r.order_id = order_id;
      r.ref = opts->ref;
      r.amount = opts->amount == 0 ? -1 : opts->amount;
      if (opts->body) r.body = opts->body;
      if (opts->target_id) r.target_id = opts->target_id;
      r.deadline_ms = opts->deadline_ms;
      *out = make_result(client->impl->submit_operation(r)).release();
    } catch (...) {
      std::string message;
      const int rc = translate(std::current_exception(), message);
      client->impl->log_failed_call(order_id, rc, message);
      return set_error(rc, message);
    }
    return PAY_OK;
  });
}

}  // extern "C"
