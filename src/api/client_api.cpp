// client.h: creating and freeing a client, its options (log callback, request
// hook) and its counters.
#include <string>

#include "api_internal.hpp"
#include "validate.hpp"

namespace payretry::capi {

int foreign(const pay_client* c) {
  if (c->pid == getpid()) return PAY_OK;
  return set_error(PAY_EINVALID, "this client was created by process " + std::to_string(c->pid) +
                                     " before fork(); create a new client in this process");
}

int check_submit_args(const pay_client* client, const char* order_id, const void* body,
                      const pay_submit_options* opts) {
  if (!client) return set_error(PAY_EINVALID, "client is NULL");
  if (const int rc = foreign(client)) return rc;
  if (!order_id) return set_error(PAY_EINVALID, "order_id is NULL");
  if (!body) return set_error(PAY_EINVALID, "body is NULL");
  if (opts && opts->version != 1 && opts->version != PAY_SUBMIT_OPTIONS_VERSION)
    return bad_version(opts->version, "pay_submit_options");
  return PAY_OK;
}

}  // namespace payretry::capi

using namespace payretry::capi;

extern "C" {

int pay_client_options_init(pay_client_options* opts, unsigned int version) {
  return init_options(opts, version, PAY_CLIENT_OPTIONS_VERSION, "pay_client_options");
}

int pay_headers_add(pay_headers* headers, const char* name, const char* value) {
  return guarded([&]() -> int {
    if (!headers || !name || !value) return set_error(PAY_EINVALID, "pay_headers_add: NULL argument");
    if (std::string e = payretry::check_header_name(name); !e.empty()) return set_error(PAY_EINVALID, e);
    if (std::string e = payretry::check_header_value(value); !e.empty()) return set_error(PAY_EINVALID, e);
    if (std::string e = payretry::check_not_reserved(name, *headers->key_header); !e.empty())
      return set_error(PAY_EINVALID, e);
    if (headers->list->size() >= 64) return set_error(PAY_EINVALID, "more than 64 hook headers");
    headers->list->emplace_back(name, value);
    return PAY_OK;
  });
}

int pay_client_new(pay_client** out, const char* config_json, const pay_client_options* opts) {
  if (out) *out = nullptr;
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    if (!config_json) return set_error(PAY_EINVALID, "config_json is NULL");
    if (const int rc = check_options(opts, PAY_CLIENT_OPTIONS_VERSION, "pay_client_options")) return rc;
    payretry::AttemptLog::Sink sink;
    payretry::RequestHook hook;
    if (opts && opts->log_cb) {
      pay_log_cb cb = opts->log_cb;
      void* payload = opts->log_payload;
      sink = [cb, payload](int level, const std::string& line) { cb(level, line.c_str(), payload); };
    }
    if (opts && opts->request_hook) {
      pay_request_hook cb = opts->request_hook;
      void* payload = opts->hook_payload;
      hook = [cb, payload](const payretry::AttemptView& v, payretry::Headers& extra) -> std::string {
        pay_headers h{&extra, &v.key_header};
        pay_attempt_info info;
        info.method = v.method;
        info.url = v.url.c_str();
        info.path = v.path.c_str();
        info.order_id = v.order_id.c_str();
        info.idempotency_key = v.idempotency_key.c_str();
        info.body = v.body.data();
        info.body_len = v.body.size();
        info.attempt = v.attempt;
        info.unix_time_ms = v.unix_ms;
        const int rc = cb(&h, &info, payload);
        return rc == 0 ? std::string() : "returned " + std::to_string(rc);
      };
    }
    auto c = std::make_unique<pay_client>();
    c->impl = std::make_unique<payretry::Client>(config_json, std::move(sink), std::move(hook));
    *out = c.release();
    return PAY_OK;
  });
}

void pay_client_free(pay_client* client) {
  if (client && client->pid != getpid()) {
    // A forked child: the parent's engine thread does not exist here, and its
    // connections are the parent's. Destroying the client would wait for that
    // thread forever or close what the parent still uses: leave it to exit.
    (void)client->impl.release();
  }
  delete client;
}

int pay_client_stats(pay_buf* out, const pay_client* client) {
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    *out = pay_buf{nullptr, 0};
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    return fill_buf(out, client->impl->stats_json());
  });
}

int pay_client_metrics(pay_buf* out, const pay_client* client) {
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    *out = pay_buf{nullptr, 0};
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    return fill_buf(out, client->impl->metrics_text());
  });
}

int pay_client_reopen_log(pay_client* client) {
  return guarded([&]() -> int {
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    client->impl->reopen_log();
    return PAY_OK;
  });
}

}  // extern "C"
