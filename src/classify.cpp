#include "classify.hpp"

#include "json_util.hpp"

#include <cJSON.h>
#include <strings.h>

#include <memory>

namespace payretry {
namespace {


std::string string_at(const cJSON* obj, const char* a, const char* b = nullptr) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(obj, a);
  if (b) v = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, b) : nullptr;
  return cJSON_IsString(v) ? v->valuestring : "";
}

Classification make(Verdict v, std::string reason, bool processed, std::string code = {}) {
  return Classification{v, std::move(reason), processed, std::move(code)};
}

Classification classify_transport(const TransportResult& t) {
  const char* why = transport_failure_name(t.failure);
  switch (t.failure) {
    case TransportFailure::tls_verify:
      // Nothing was sent and retrying cannot fix a certificate.
      return make(Verdict::fail, why, false);
    case TransportFailure::resolve:
    case TransportFailure::connect:
    case TransportFailure::tls_handshake:
    case TransportFailure::connect_timeout:
      return make(Verdict::retry, why, t.request_written);
    default:
      // Timeout, reset, EOF, blocked replay, unreadable response: the
      // provider may have charged; only a same-key retry can find out.
      return make(Verdict::retry, why, t.request_written);
  }
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::success: return "success";
    case Verdict::retry: return "retry";
    case Verdict::retry_after_backoff: return "retry_after_backoff";
    case Verdict::query: return "query";
    case Verdict::fail: return "fail";
    case Verdict::mismatch: return "mismatch";
  }
  return "?";
}

Classification classify(const Profile& profile, const TransportResult& t) {
  if (t.failure != TransportFailure::none) return classify_transport(t);

  const int status = t.response.status;
  const std::string http = "http_" + std::to_string(status);
  JsonPtr body(cJSON_ParseWithLength(t.response.body.data(), t.response.body.size()));
  const std::string type = body ? string_at(body.get(), "error", "type") : "";
  std::string code = body ? string_at(body.get(), "error", "code") : "";
  if (code.empty() && body) code = string_at(body.get(), "code");

  // The provider's explicit hint outranks the status (Stripe-Should-Retry).
  if (!profile.should_retry_header.empty() && status >= 300) {
    if (const std::string* hint = t.response.header(profile.should_retry_header)) {
      if (strcasecmp(hint->c_str(), "true") == 0) return make(Verdict::retry, http + "_should_retry", true, code);
      if (strcasecmp(hint->c_str(), "false") == 0 && status >= 500) return make(Verdict::query, http + "_should_not_retry", true, code);
    }
  }
  if (status >= 200 && status < 300) {
    // A 2xx we cannot read may hide a charge: retry with the same key, whose
    // replay tells us what happened.
    if (!body || !cJSON_IsObject(body.get())) return make(Verdict::retry, "malformed_2xx", true);
    return make(Verdict::success, http, true);
  }
  if (status == 409) {
    // The first request with this key is still running at the provider.
    return make(Verdict::retry_after_backoff, "key_in_use", true, code);
  }
  if ((status == 400 || status == 422) &&
      (type == "idempotency_error" || code == "idempotency_key_reused"))
    return make(Verdict::mismatch, "key_reused_with_other_parameters", false, code);
  // Refused before processing: throttled, timed out waiting, too early.
  if (status == 408 || status == 425 || status == 429) return make(Verdict::retry, http, false, code);
  // Gateways: the request may or may not have reached the application.
  if (status == 502 || status == 503 || status == 504) return make(Verdict::retry, http, true, code);
  if (status >= 500) return make(profile.retry_other_5xx ? Verdict::retry : Verdict::query, http, true, code);
  // A redirect answering a POST may follow a created payment (303 See Other);
  // it is not proof of anything: settle by query.
  if (status >= 300 && status < 400) return make(Verdict::query, http, true, code);
  // 400, 401, 402, 403, 404, 405, 413, 422 and other 4xx: final.
  return make(Verdict::fail, http, false, code);
}

}  // namespace payretry
