// settle.h: settling UNKNOWN payments, one (pay_query) or all (pay_reconcile).
#include <algorithm>
#include <optional>
#include <string>

#include "api_internal.hpp"

using namespace payretry::capi;

extern "C" {

int pay_query(pay_result** out, pay_client* client, const char* order_id) {
  if (out) *out = nullptr;
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    if (!client || !order_id) return set_error(PAY_EINVALID, "client or order_id is NULL");
    if (const int rc = foreign(client)) return rc;
    // A lookup blocks: on an engine thread it would hold every payment of that engine.
    if (client->impl->on_engine_thread())
      return set_error(PAY_EINVALID, "pay_query called from a done callback: it blocks the engine's thread");
    *out = make_result(client->impl->query(order_id)).release();
    return PAY_OK;
  });
}

int pay_body_set(pay_body* body, const void* data, size_t len) {
  return guarded([&]() -> int {
    if (!body || (!data && len)) return set_error(PAY_EINVALID, "pay_body_set: NULL argument");
    body->bytes = std::string(static_cast<const char*>(data), len);
    return PAY_OK;
  });
}

int pay_reconcile_options_init(pay_reconcile_options* opts, unsigned int version) {
  return init_options(opts, version, PAY_RECONCILE_OPTIONS_VERSION, "pay_reconcile_options");
}

int pay_reconcile(pay_buf* out, pay_client* client, const pay_reconcile_options* opts) {
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    *out = pay_buf{nullptr, 0};
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    if (const int rc = check_options(opts, PAY_RECONCILE_OPTIONS_VERSION, "pay_reconcile_options")) return rc;
    if (client->impl->on_engine_thread())
      return set_error(PAY_EINVALID, "pay_reconcile called from a done callback: it blocks the engine's thread");
    payretry::ReconcileOptions o;
    if (opts && opts->limit) o.limit = static_cast<int>(std::min<uint32_t>(opts->limit, 1000000));
    if (opts) o.older_than_ms = opts->older_than_ms;
    if (opts && opts->body_for) {
      pay_body_cb cb = opts->body_for;
      void* payload = opts->body_payload;
      o.body_for = [cb, payload](const std::string& order_id) -> std::optional<std::string> {
        pay_body b;
        if (cb(&b, order_id.c_str(), payload) != 0) return std::nullopt;
        return b.bytes;
      };
    }
    return fill_buf(out, client->impl->reconcile(o).to_json());
  });
}

}  // extern "C"
