// submit.h: one payment, blocking on the caller's thread, and the options
// every submission takes.
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include "api_internal.hpp"
#include "error.hpp"

using namespace payretry::capi;
using payretry::Errc;

namespace payretry::capi {

namespace {
// A version-1 struct is the fields before `headers`.
constexpr size_t kSubmitOptionsV1Size = offsetof(pay_submit_options, headers);
}  // namespace

SubmitOptions submit_options_of(const pay_submit_options* opts) {
  SubmitOptions o;
  if (!opts) return o;
  if (opts->version != 1 && opts->version != PAY_SUBMIT_OPTIONS_VERSION)
    throw Error(Errc::PAY_EVERSION, "invalid version " + std::to_string(opts->version) + " on pay_submit_options");
  o.idempotency_key = opts->idempotency_key;
  o.path = opts->path;
  o.deadline_ms = opts->deadline_ms;
  if (opts->version < 2) return o;
  if (opts->header_count > 0 && !opts->headers)
    throw Error(Errc::PAY_EINVALID, "pay_submit_options.headers is NULL but header_count is " +
                                        std::to_string(opts->header_count));
  // More than the engine takes is refused there, with the limit named; a
  // count this large is a caller's bug, not a list to copy.
  if (opts->header_count > 1024)
    throw Error(Errc::PAY_EINVALID, "pay_submit_options.header_count is " + std::to_string(opts->header_count) +
                                        "; at most 64 headers");
  o.headers.reserve(opts->header_count);
  for (size_t i = 0; i < opts->header_count; ++i) {
    const pay_header& h = opts->headers[i];
    if (!h.name || !h.value)
      throw Error(Errc::PAY_EINVALID, "pay_submit_options.headers[" + std::to_string(i) + "] has a NULL name or value");
    o.headers.emplace_back(h.name, h.value);
  }
  if (opts->traceparent) {
    o.traceparent = opts->traceparent;
    if (o.traceparent.empty()) throw Error(Errc::PAY_EINVALID, "traceparent is empty");
  }
  return o;
}

}  // namespace payretry::capi

extern "C" {

int pay_submit_options_init(pay_submit_options* opts, unsigned int version) {
  return guarded([&]() -> int {
    if (!opts) return set_error(PAY_EINVALID, "opts is NULL");
    if (version != 1 && version != PAY_SUBMIT_OPTIONS_VERSION) return bad_version(version, "pay_submit_options");
    // A version-1 caller's struct is shorter: zero only what it has.
    std::memset(opts, 0, version == 1 ? kSubmitOptionsV1Size : sizeof *opts);
    opts->version = version;
    return PAY_OK;
  });
}

int pay_submit(pay_result** out, pay_client* client, const char* order_id, const void* body, size_t body_len,
               const pay_submit_options* opts) {
  if (out) *out = nullptr;
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    if (const int rc = check_submit_args(client, order_id, body, opts)) return rc;
    // From here the client is usable: a failed call is logged too.
    try {
      SubmitOptions o = submit_options_of(opts);
      payretry::SubmitRequest req;
      req.order_id = order_id;
      req.body = std::string_view(static_cast<const char*>(body), body_len);
      if (o.idempotency_key) {
        req.idempotency_key = o.idempotency_key;
        if (req.idempotency_key.empty()) throw payretry::Error(Errc::PAY_EKEY, "idempotency key is empty");
      }
      if (o.path) {
        req.path = o.path;
        if (req.path.empty()) throw payretry::Error(Errc::PAY_EINVALID, "path is empty");
      }
      req.deadline_ms = o.deadline_ms;
      req.headers = std::move(o.headers);
      req.traceparent = std::move(o.traceparent);
      *out = make_result(client->impl->submit(req)).release();
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
