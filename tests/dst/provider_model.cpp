#include "provider_model.hpp"

#include <cJSON.h>

#include <cstdio>
#include <ctime>

namespace payretry::dst {
namespace {

// The three HTTP-date forms a hostile Retry-After may take.
std::string http_date(int64_t unix_secs, const char* format) {
  const std::time_t t = static_cast<std::time_t>(unix_secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}
std::string imf_fixdate(int64_t unix_secs) { return http_date(unix_secs, "%a, %d %b %Y %H:%M:%S GMT"); }
std::string rfc850(int64_t unix_secs) { return http_date(unix_secs, "%A, %d-%b-%y %H:%M:%S GMT"); }
std::string asctime_date(int64_t unix_secs) { return http_date(unix_secs, "%a %b %e %H:%M:%S %Y"); }

std::string order_of(std::string_view body) {
  cJSON* j = cJSON_ParseWithLength(body.data(), body.size());
  std::string out;
  if (const cJSON* o = cJSON_GetObjectItemCaseSensitive(j, "order_id"); cJSON_IsString(o)) out = o->valuestring;
  cJSON_Delete(j);
  return out;
}

TransportResult answer(int status, std::string body, int64_t elapsed) {
  TransportResult t;
  t.request_written = true;
  t.elapsed_ms = elapsed;
  t.response.status = status;
  t.response.body = std::move(body);
  return t;
}
TransportResult lost(TransportFailure f, bool written, int64_t elapsed, const char* text) {
  TransportResult t;
  t.failure = f;
  t.request_written = written;
  t.elapsed_ms = elapsed;
  t.error_text = text;
  return t;
}

}  // namespace

const char* fault_name(Fault f) {
  static const char* names[] = {"none", "refuse", "reset_before", "timeout_before", "lost_response", "timeout_after",
                                "slow_processing", "throttled", "unavailable", "error_after", "error_stored",
                                "conflict_storm", "crash_before_send", "crash_after_process"};
  return names[static_cast<int>(f)];
}

RetryAfterTruth make_retry_after(int kind, int64_t now_unix) {
  const int64_t secs = now_unix / 1000;
  switch (kind) {
    case 0: return {"", std::nullopt};
    case 1: return {"0", 0};
    case 2: return {"1", 1000};
    case 3: return {"3", 3000};
    case 4: return {"  2\t", 2000};                                      // OWS around the value
    case 5: return {"99999999999999999999999", int64_t(400) * 24 * 3600 * 1000};  // saturates: past any deadline
    case 6: return {"-5", std::nullopt};
    case 7: return {"1.5", std::nullopt};
    case 8: return {"soon", std::nullopt};
    case 9: return {imf_fixdate(secs - 3600), 0};                        // a date in the past means now
    case 10: return {imf_fixdate(secs + 4), (secs + 4) * 1000 - now_unix};
    case 11: return {imf_fixdate(secs + 86400 * 30), (secs + 86400 * 30) * 1000 - now_unix};
    case 12: return {rfc850(secs + 2), (secs + 2) * 1000 - now_unix};
    default: return {asctime_date(secs + 1), (secs + 1) * 1000 - now_unix};
  }
}

void ProviderModel::complete(KeyState& k) {
  if (!k.processing) return;
  k.processing = false;
  if (k.charge_on_done) ++charges[k.order_id];
}

void ProviderModel::finish_all() {
  for (auto& [key, k] : keys) complete(k);
}

void ProviderModel::process_new(const std::string& key, const std::string& order, std::string_view body, int64_t now,
                                 int64_t slow_ms) {
  KeyState k;
  k.order_id = order;
  k.body.assign(body.data(), body.size());
  const bool decline = declines.count(order) && declines[order];
  k.charge_on_done = !decline;
  if (decline) {
    k.status = 402;
    k.stored_body = R"({"error":{"type":"card_error","code":"card_declined"}})";
  } else {
    k.status = 200;
    k.stored_body = R"({"id":"pi_)" + order + R"(","status":"succeeded"})";
  }
  k.processing = true;
  k.first_seen = now;
  k.done_at = now + slow_ms;
  auto& slot = keys[key] = std::move(k);
  if (slow_ms == 0) complete(slot);
}

ProviderReply ProviderModel::handle(const HttpRequest& req, Fault f, int64_t now_mono, int64_t now_unix,
                                    int64_t latency_ms, int ra_kind, int64_t slow_ms) {
  ProviderReply out;
  const int64_t limit = req.timeout_ms;
  const bool times_out = latency_ms > limit;
  const int64_t elapsed = times_out ? limit : latency_ms;
  const int64_t t_answer = now_mono + elapsed;
  switch (f) {
    case Fault::crash_before_send: out.crash = true; return out;
    case Fault::refuse: out.result = lost(TransportFailure::connect, false, 2, "Couldn't connect to server"); return out;
    case Fault::reset_before:
      out.result = lost(TransportFailure::connection_lost, true, 5, "Connection reset by peer");
      return out;
    case Fault::timeout_before:
      out.result = lost(TransportFailure::timeout, true, limit, "Operation timed out");
      return out;
    case Fault::throttled:
    case Fault::unavailable: {
      const int status = f == Fault::throttled ? 429 : 503;
      out.result = answer(status, status == 429 ? R"({"error":{"type":"rate_limit_error"}})"
                                                : R"({"error":{"type":"api_error","message":"unavailable"}})",
                          elapsed);
      if (times_out) {
        out.result = lost(TransportFailure::timeout, true, limit, "Operation timed out");
        return out;
      }
      out.retry_after = make_retry_after(ra_kind, now_unix + elapsed);
      if (!out.retry_after.header.empty()) out.result.response.headers.emplace_back("Retry-After", out.retry_after.header);
      return out;
    }
    case Fault::conflict_storm:
      out.result = times_out ? lost(TransportFailure::timeout, true, limit, "Operation timed out")
                             : answer(409, R"({"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}})", elapsed);
      return out;
    default: break;
  }

  // The idempotency layer: the request reached the provider's application.
  const std::string* key = nullptr;
  for (const auto& [n, v] : req.headers)
    if (n == "Idempotency-Key") key = &v;
  const std::string order = order_of(req.body);
  int status;
  std::string body;
  bool replayed = false;
  if (!key) {
    // No key: every request is a new payment. The client must never do this.
    process_new("<none>#" + std::to_string(keys.size()), order, req.body, now_mono, 0);
    status = 200;
    body = R"({"id":"pi_)" + order + R"(","status":"succeeded"})";
  } else if (auto it = keys.find(*key); it != keys.end() && !(retention_ms > 0 && !it->second.processing &&
                                                                now_mono - it->second.first_seen > retention_ms)) {
    KeyState& k = it->second;
    if (k.processing && now_mono >= k.done_at) complete(k);
    if (k.body != req.body) {
      status = 400;
      body = R"({"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters"}})";
    } else if (k.processing) {
      status = 409;
      body = R"({"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}})";
    } else {
      status = k.status;
      body = k.stored_body;
      replayed = true;
    }
  } else {
    // A new key, or one the provider has forgotten: a new payment either way.
    process_new(*key, order, req.body, now_mono, f == Fault::slow_processing ? slow_ms : 0);
    KeyState& k = keys[*key];
    if (f == Fault::error_stored) {
      k.status = 500;
      k.stored_body = R"({"error":{"type":"api_error","message":"internal"}})";
    }
    status = k.processing ? 409 : k.status;
    body = k.stored_body;
  }

  // What becomes of the answer on its way back.
  if (f == Fault::crash_after_process) {
    out.crash = true;
    return out;
  }
  if (f == Fault::lost_response) {
    out.result = lost(TransportFailure::connection_lost, true, elapsed, "Connection reset by peer");
    return out;
  }
  if (f == Fault::timeout_after || f == Fault::slow_processing || times_out) {
    out.result = lost(TransportFailure::timeout, true, limit, "Operation timed out");
    return out;
  }
  if (f == Fault::error_after) {
    status = 500;
    body = R"({"error":{"type":"api_error","message":"internal"}})";
    replayed = false;
  }
  out.result = answer(status, body, elapsed);
  out.result.response.headers.emplace_back("Request-Id", "req_" + std::to_string(t_answer));
  if (replayed) out.result.response.headers.emplace_back("Idempotent-Replayed", "true");
  return out;
}

}  // namespace payretry::dst
