// webhook.h: a provider's notification, from the bytes received to the answer.
#include <string>

#include "api_internal.hpp"

using namespace payretry::capi;

extern "C" {

void pay_webhook_reply_dispose(pay_webhook_reply* reply) {
  if (!reply) return;
  pay_buf_dispose(&reply->content_type);
  pay_buf_dispose(&reply->body);
  pay_buf_dispose(&reply->outcome);
  reply->status = 0;
}

int pay_webhook_apply(pay_webhook_reply* reply, pay_client* client, const pay_webhook_request* request) {
  if (reply) *reply = pay_webhook_reply{0, {nullptr, 0}, {nullptr, 0}, {nullptr, 0}};
  return guarded([&]() -> int {
    if (!reply) return set_error(PAY_EINVALID, "reply is NULL");
    if (!client || !request) return set_error(PAY_EINVALID, "client or request is NULL");
    if (const int rc = foreign(client)) return rc;
    if (request->version != PAY_WEBHOOK_REQUEST_VERSION) return bad_version(request->version, "pay_webhook_request");
    if (!request->body && request->body_len) return set_error(PAY_EINVALID, "request body is NULL with a length");
    if (!request->headers && request->header_count) return set_error(PAY_EINVALID, "request headers are NULL with a count");
    payretry::WebhookRequest r;
    r.method = request->method ? request->method : "";
    r.url = request->url ? request->url : "";
    for (size_t i = 0; i < request->header_count; ++i) {
      const pay_header& h = request->headers[i];
      if (!h.name || !h.value) return set_error(PAY_EINVALID, "request header " + std::to_string(i) + " has a NULL name or value");
      r.headers.emplace_back(h.name, h.value);
    }
    if (request->body_len) r.body.assign(static_cast<const char*>(request->body), request->body_len);
    // A confirming lookup and the ledger block: on an engine thread they
    // would hold every payment of that engine.
    if (client->impl->on_engine_thread())
      return set_error(PAY_EINVALID, "pay_webhook_apply called from a done callback: it blocks the engine's thread");
    const payretry::WebhookOutcome o = client->impl->apply_webhook(r);
    pay_webhook_reply out{o.status, {nullptr, 0}, {nullptr, 0}, {nullptr, 0}};
    int rc = fill_buf(&out.content_type, o.content_type);
    if (rc == PAY_OK) rc = fill_buf(&out.body, o.body);
    if (rc == PAY_OK) rc = fill_buf(&out.outcome, o.to_json());
    if (rc != PAY_OK) {
      pay_webhook_reply_dispose(&out);
      return rc;
    }
    *reply = out;
    return PAY_OK;
  });
}

}  // extern "C"
