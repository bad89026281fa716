// submit.h: one payment, blocking on the caller's thread.
#include <string>
#include <string_view>

#include "api_internal.hpp"

using namespace payretry::capi;

extern "C" {

int pay_submit_options_init(pay_submit_options* opts, unsigned int version) {
  return init_options(opts, version, PAY_SUBMIT_OPTIONS_VERSION, "pay_submit_options");
}

int pay_submit(pay_result** out, pay_client* client, const char* order_id, const void* body, size_t body_len,
               const pay_submit_options* opts) {
  if (out) *out = nullptr;
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    if (const int rc = check_submit_args(client, order_id, body, opts)) return rc;
    payretry::SubmitRequest req;
    req.order_id = order_id;
    req.body = std::string_view(static_cast<const char*>(body), body_len);
    if (opts) {
      if (opts->idempotency_key) {
        req.idempotency_key = opts->idempotency_key;
        if (req.idempotency_key.empty()) return set_error(PAY_EKEY, "idempotency key is empty");
      }
      if (opts->path) {
        req.path = opts->path;
        if (req.path.empty()) return set_error(PAY_EINVALID, "path is empty");
      }
      req.deadline_ms = opts->deadline_ms;
    }
    *out = make_result(client->impl->submit(req)).release();
    return PAY_OK;
  });
}

}  // extern "C"
