#include "provider_model.hpp"

#include <cJSON.h>
#include <strings.h>

#include <algorithm>
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

// A string member at a dotted path ("biz_content.out_trade_no").
std::string member_at(std::string_view body, const std::string& dotted) {
  cJSON* j = cJSON_ParseWithLength(body.data(), body.size());
  const cJSON* at = j;
  size_t from = 0;
  while (at && from <= dotted.size()) {
    const size_t dot = dotted.find('.', from);
    const std::string name = dotted.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    at = cJSON_GetObjectItemCaseSensitive(at, name.c_str());
    if (dot == std::string::npos) break;
    from = dot + 1;
  }
  std::string out = cJSON_IsString(at) ? at->valuestring : "";
  cJSON_Delete(j);
  return out;
}

// The decoded value of one form field ("metadata[order_id]"), or "".
std::string form_field(std::string_view body, const std::string& name) {
  auto decode = [](std::string_view in) {
    std::string out;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i] == '+') out.push_back(' ');
      else if (in[i] == '%' && i + 2 < in.size()) {
        out.push_back(static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16)));
        i += 2;
      } else out.push_back(in[i]);
    }
    return out;
  };
  while (!body.empty()) {
    const size_t amp = body.find('&');
    const std::string_view field = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view{} : body.substr(amp + 1);
    const size_t eq = field.find('=');
    if (decode(field.substr(0, eq)) == name)
      return eq == std::string_view::npos ? "" : decode(field.substr(eq + 1));
  }
  return "";
}

// A member of the request body at a dotted path, read the way the provider
// reads its encoding: JSON, or the gateway form whose first segment names a
// field holding JSON text (biz_content.out_trade_no).
std::string body_member(const Wire& w, std::string_view body, const std::string& dotted) {
  if (!w.gateway_form) return member_at(body, dotted);
  const size_t dot = dotted.find('.');
  const std::string field = form_field(body, dotted.substr(0, dot));
  return dot == std::string::npos ? field : member_at(field, dotted.substr(dot + 1));
}

const std::string* header_of(const HttpRequest& req, const std::string& name) {
  for (const auto& [n, v] : req.headers)
    if (strcasecmp(n.c_str(), name.c_str()) == 0) return &v;
  return nullptr;
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

std::string path_of(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return slash == std::string::npos ? "/" : url.substr(slash);
}

// What each provider answers, in the shapes its profile reads.
enum class Say { success, decline, error, in_progress, mismatch, already_paid, unsigned_request };

TransportResult say(const Wire& w, Say what, const std::string& id, const std::string& reference, int64_t elapsed) {
  const std::string& p = w.profile;
  auto a = [&](int status, const std::string& body) { return answer(status, body, elapsed); };
  if (p == "adyen") {
    switch (what) {
      case Say::success: return a(200, R"({"pspReference":")" + id + R"(","resultCode":"Authorised"})");
      case Say::decline: return a(200, R"({"pspReference":")" + id + R"(","resultCode":"Refused"})");
      case Say::error: return a(500, R"({"status":500,"errorCode":"905"})");
      case Say::in_progress: {
        TransportResult t = a(422, R"({"status":422,"errorCode":"704"})");
        t.response.headers.emplace_back("transient-error", "true");
        return t;
      }
      default: return a(422, R"({"status":422,"errorCode":"704"})");
    }
  }
  if (p == "paypal") {
    switch (what) {
      case Say::success: return a(201, R"({"id":")" + id + R"(","status":"COMPLETED"})");
      case Say::decline: return a(422, R"({"name":"UNPROCESSABLE_ENTITY","details":[{"issue":"INSTRUMENT_DECLINED"}]})");
      case Say::error: return a(500, R"({"name":"INTERNAL_SERVER_ERROR"})");
      case Say::in_progress: return a(409, R"({"details":[{"issue":"PREVIOUS_REQUEST_IN_PROGRESS"}]})");
      default: return a(422, R"({"details":[{"issue":"DUPLICATE_INVOICE_ID"}]})");
    }
  }
  if (p == "square") {
    switch (what) {
      case Say::success: return a(200, R"({"payment":{"id":")" + id + R"(","status":"COMPLETED"}})");
      case Say::decline: return a(402, R"({"errors":[{"category":"PAYMENT_METHOD_ERROR","code":"CARD_DECLINED"}]})");
      case Say::error: return a(500, R"({"errors":[{"category":"API_ERROR","code":"INTERNAL_SERVER_ERROR"}]})");
      case Say::in_progress: return a(409, R"({"errors":[{"category":"API_ERROR","code":"CONFLICT"}]})");
      default: return a(400, R"({"errors":[{"category":"INVALID_REQUEST_ERROR","code":"IDEMPOTENCY_KEY_REUSED"}]})");
    }
  }
  if (p == "checkout_com") {
    switch (what) {
      case Say::success:
        return a(201, R"({"id":")" + id + R"(","status":"Authorized","reference":")" + reference + R"("})");
      case Say::decline:
        return a(201, R"({"id":")" + id + R"(","status":"Declined","reference":")" + reference + R"("})");
      case Say::error: return a(500, "{}");
      case Say::in_progress: return a(409, "{}");
      default: return a(422, R"({"error_codes":["request_invalid"]})");
    }
  }
  if (p == "wechatpay_v3") {
    switch (what) {
      case Say::success: return a(200, R"({"prepay_id":")" + id + R"("})");
      case Say::decline: return a(400, R"({"code":"PARAM_ERROR","message":"declined"})");
      case Say::error: return a(500, R"({"code":"SYSTEM_ERROR","message":"retry with the same parameters"})");
      case Say::in_progress: return a(500, R"({"code":"SYSTEM_ERROR","message":"in progress"})");
      case Say::already_paid: return a(200, R"({"prepay_id":")" + id + R"("})");  // re-entry (Wx2)
      case Say::unsigned_request: return a(401, R"({"code":"SIGN_ERROR","message":"signature missing or wrong"})");
      default: return a(400, R"({"code":"OUT_TRADE_NO_USED"})");
    }
  }
  if (p == "alipay") {
    auto gw = [&](const std::string& inner) { return a(200, R"({"alipay_trade_pay_response":{)" + inner + "}}"); };
    switch (what) {
      case Say::success: return gw(R"("code":"10000","msg":"Success","trade_no":")" + id + R"(")");
      // A refusal comes as a listed business failure, or as a code the
      // profile does not list (an HTTP 200 all the same): only 10000 is paid.
      case Say::decline:
        return id.size() % 2 ? gw(R"("code":"40004","msg":"Business Failed","sub_code":"ACQ.PAYMENT_FAIL")")
                             : gw(R"("code":"40003","msg":"Insufficient Conditions","sub_code":"isv.insufficient")");
      case Say::error: return gw(R"("code":"20000","msg":"Service Currently Unavailable","sub_code":"isp.unknow-error")");
      case Say::in_progress: return gw(R"("code":"10003","msg":"WAIT_BUYER_PAY")");
      case Say::already_paid: return gw(R"("code":"40004","msg":"Business Failed","sub_code":"ACQ.TRADE_HAS_SUCCESS")");
      case Say::unsigned_request:
        return a(200, R"({"error_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-signature"}})");
      default: return gw(R"("code":"40004","sub_code":"ACQ.CONTEXT_INCONSISTENT")");
    }
  }
  // generic, stripe, mollie: Stripe-like JSON.
  switch (what) {
    case Say::success:
      return p == "mollie" ? a(201, R"({"id":")" + id + R"(","status":"paid"})")
                           : a(200, R"({"id":")" + id + R"(","status":"succeeded"})");
    case Say::decline: return a(402, R"({"error":{"type":"card_error","code":"card_declined"}})");
    case Say::error: return a(500, R"({"error":{"type":"api_error","message":"internal"}})");
    case Say::in_progress: return a(409, R"({"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}})");
    default:
      return p == "stripe" ? a(400, R"({"error":{"type":"idempotency_error"}})")
                           : a(422, R"({"code":"idempotency_key_reused"})");
  }
}

}  // namespace

const char* fault_name(Fault f) {
  static const char* names[] = {"none",          "refuse",       "reset_before",   "timeout_before",
                                "lost_response", "timeout_after", "slow_processing", "throttled",
                                "unavailable",   "error_after",  "error_stored",   "conflict_storm",
                                "stream_reset",  "crash_before_send", "crash_after_process"};
  static_assert(sizeof names / sizeof names[0] == static_cast<size_t>(Fault::kCount), "a name per fault");
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

std::string ProviderModel::signature(const HttpRequest& req) {
  // FNV-1a over method, path and body: a stand-in for an RSA signature that
  // only the client's request hook computes.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  mix(req.method);
  mix(path_of(req.url));
  mix(req.body);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void ProviderModel::complete(KeyState& k, int64_t now) {
  if (!k.processing) return;
  k.processing = false;
  if (k.charge_on_done) {
    ++charges[k.order_id];
    k.charged = true;
  }
  for (Payment& p : payments_)
    if (p.order_id == k.order_id && p.at == k.first_seen && p.charged == false && k.charge_on_done) p.charged = true;
  (void)now;
}

void ProviderModel::finish_all() {
  for (auto& [key, k] : keys_) complete(k, k.done_at);
}

ProviderModel::KeyState& ProviderModel::process_new(const std::string& key, const std::string& order,
                                                    const std::string& reference, std::string_view body, int64_t now,
                                                    int64_t slow_ms) {
  KeyState k;
  k.order_id = order;
  k.body.assign(body.data(), body.size());
  const bool decline = declines.count(order) && declines[order];
  k.charge_on_done = !decline;
  k.processing = true;
  k.first_seen = now;
  k.done_at = now + slow_ms;
  const std::string id = wire_.id_prefix + std::to_string(++next_id_);
  // The outcome the provider stores (error faults replace it later).
  k.stored = true;
  const TransportResult t = say(wire_, decline ? Say::decline : Say::success, id, reference, 0);
  k.status = t.response.status;
  k.stored_body = t.response.body;
  if (!decline && !charged_id.count(order)) charged_id[order] = id;
  // Wechat creates no order for a refused one; every other provider keeps a
  // record a lookup can find, declined or not.
  if (!(decline && wire_.profile == "wechatpay_v3")) payments_.push_back(Payment{order, reference, id, false, now});
  auto& slot = keys_[key] = std::move(k);
  if (slow_ms == 0) complete(slot, now);
  return slot;
}

std::string ProviderModel::identity_of(const HttpRequest& req, const std::string& order, std::string& reference) const {
  reference = wire_.reference_path.empty() ? "" : body_member(wire_, req.body, wire_.reference_path);
  switch (wire_.identity) {
    case Wire::Identity::header: {
      const std::string* k = header_of(req, wire_.key_header);
      return k ? *k : "";
    }
    case Wire::Identity::body_key: return body_member(wire_, req.body, wire_.key_field);
    case Wire::Identity::reference: return reference.empty() ? "" : "ref:" + reference;
  }
  (void)order;
  return "";
}

TransportResult ProviderModel::render_outcome(const KeyState& k, int64_t elapsed) const {
  TransportResult t = answer(k.status, k.stored_body, elapsed);
  return t;
}

ProviderReply ProviderModel::lookup(const HttpRequest& req, int64_t now_mono, int64_t elapsed) {
  ProviderReply out;
  ++lookups;
  const std::string path = path_of(req.url);
  auto visible = [&](const Payment& p) {
    // Replicas lag: a payment processed a moment ago is not found yet.
    if (now_mono - p.at < read_lag_ms) return false;
    for (const auto& [key, k] : keys_)
      if (k.order_id == p.order_id && k.first_seen == p.at && k.processing) return false;
    return true;
  };
  const Payment* found = nullptr;
  if (wire_.lookup == Wire::Lookup::by_reference) {
    std::string ref;
    if (wire_.profile == "alipay") ref = body_member(wire_, req.body, "biz_content.out_trade_no");
    else {
      ref = path.substr(wire_.lookup_path.size());
      ref = ref.substr(0, ref.find('?'));
    }
    // Newest first, like Checkout.com's list.
    for (auto it = payments_.rbegin(); it != payments_.rend(); ++it)
      if (it->reference == ref && visible(*it)) {
        found = &*it;
        break;
      }
  } else if (wire_.lookup == Wire::Lookup::by_id) {
    const std::string id = path.substr(wire_.lookup_path.size());
    for (const Payment& p : payments_)
      if (p.id == id && visible(p)) found = &p;
  }
  const std::string& p = wire_.profile;
  auto ok = [&](const std::string& body) { out.result = answer(200, body, elapsed); };
  const bool charged = found && found->charged;
  if (p == "checkout_com") {
    if (!found) ok(R"({"limit":10,"skip":0,"total_count":0,"data":[]})");
    else
      ok(R"({"limit":10,"skip":0,"total_count":1,"data":[{"id":")" + found->id + R"(","status":")" +
         (charged ? "Authorized" : "Declined") + R"(","reference":")" + found->reference + R"("}]})");
  } else if (p == "wechatpay_v3") {
    if (!found) out.result = answer(404, R"({"code":"ORDER_NOT_EXIST","message":"order does not exist"})", elapsed);
    else ok(R"({"trade_state":")" + std::string(charged ? "NOTPAY" : "PAYERROR") + R"(","transaction_id":")" + found->id + R"("})");
  } else if (p == "alipay") {
    if (!found)
      ok(R"({"alipay_trade_query_response":{"code":"40004","msg":"Business Failed","sub_code":"ACQ.TRADE_NOT_EXIST"}})");
    else
      ok(R"({"alipay_trade_query_response":{"code":"10000","trade_status":")" +
         std::string(charged ? "TRADE_SUCCESS" : "WAIT_BUYER_PAY") + R"(","trade_no":")" + found->id + R"("}})");
  } else if (p == "paypal") {
    if (!found) out.result = answer(404, R"({"name":"RESOURCE_NOT_FOUND"})", elapsed);
    else ok(R"({"id":")" + found->id + R"(","status":")" + (charged ? "COMPLETED" : "VOIDED") + R"("})");
  } else if (p == "square") {
    if (!found) out.result = answer(404, R"({"errors":[{"code":"NOT_FOUND"}]})", elapsed);
    else ok(R"({"payment":{"id":")" + found->id + R"(","status":")" + (charged ? "COMPLETED" : "FAILED") + R"("}})");
  } else if (p == "stripe") {
    // A declined PaymentIntent goes back to requires_payment_method, which a
    // new one also reads (St8): no proof either way.
    if (!found) out.result = answer(404, R"({"error":{"type":"invalid_request_error","code":"resource_missing"}})", elapsed);
    else ok(R"({"id":")" + found->id + R"(","object":"payment_intent","status":")" +
            (charged ? "succeeded" : "requires_payment_method") + R"("})");
  } else {  // mollie
    if (!found) out.result = answer(404, R"({"status":404,"title":"Not Found"})", elapsed);
    else ok(R"({"id":")" + found->id + R"(","status":")" + (charged ? "paid" : "failed") + R"("})");
  }
  return out;
}

ProviderReply ProviderModel::handle(const HttpRequest& req, Fault f, int64_t now_mono, int64_t now_unix,
                                    int64_t latency_ms, int ra_kind, int64_t slow_ms) {
  ProviderReply out;
  const int64_t limit = req.timeout_ms;
  // A provider that shows every error it does not store never lets one
  // hide behind a lost answer (Wire::hidden_uncached_errors).
  const bool shown = f == Fault::error_stored && wire_.replay == ReplayKind::success_only && !wire_.hidden_uncached_errors;
  const bool times_out = latency_ms > limit && !shown;
  const int64_t elapsed = std::min(latency_ms, limit);
  const int64_t t_answer = now_mono + elapsed;
  const bool is_lookup = !wire_.lookup_path.empty() && path_of(req.url).rfind(wire_.lookup_path, 0) == 0;
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
    default: break;
  }
  // Providers that sign check the signature before anything else.
  if (wire_.signed_requests) {
    const std::string* sig = header_of(req, "X-Dst-Signature");
    if (!sig || *sig != signature(req)) {
      ++rejected_unsigned;
      out.result = say(wire_, Say::unsigned_request, "", "", elapsed);
      return out;
    }
  }
  if (is_lookup) {
    if (times_out) {
      out.result = lost(TransportFailure::timeout, true, limit, "Operation timed out");
      return out;
    }
    return lookup(req, now_mono, elapsed);
  }
  if (f == Fault::conflict_storm) {
    out.result = times_out ? lost(TransportFailure::timeout, true, limit, "Operation timed out")
                           : say(wire_, Say::in_progress, "", "", elapsed);
    return out;
  }

  if (wire_.form_bodies || wire_.gateway_form) {
    const std::string* type = header_of(req, "Content-Type");
    if (!type || type->rfind("application/x-www-form-urlencoded", 0) != 0) {
      ++wrong_encodings;
      out.result = answer(400, R"({"error":{"type":"invalid_request_error","message":"Request's `Content-Type` didn't match the path's expected media type."}})", elapsed);
      return out;
    }
  }
  // The idempotency layer: the request reached the provider's application.
  const std::string order =
      wire_.form_bodies ? form_field(req.body, "metadata[order_id]") : body_member(wire_, req.body, "order_id");
  std::string reference;
  const std::string key = identity_of(req, order, reference);
  TransportResult result;
  bool replayed = false;
  auto it = keys_.find(key);
  if (it != keys_.end() && it->second.processing && now_mono >= it->second.done_at) complete(it->second, now_mono);
  const bool remembered = it != keys_.end() && !key.empty() &&
                          (wire_.replay == ReplayKind::reference || retention_ms <= 0 || it->second.processing ||
                           now_mono - it->second.first_seen <= retention_ms);
  if (key.empty()) {
    // No key: every request is a new payment. The client must never do this.
    KeyState& k = process_new("<none>#" + std::to_string(keys_.size()), order, reference, req.body, now_mono, 0);
    result = render_outcome(k, elapsed);
  } else if (remembered) {
    KeyState& k = it->second;
    const bool resend_runs_again =
        (wire_.replay == ReplayKind::success_only && !(k.stored && k.status / 100 == 2)) ||
        (wire_.replay == ReplayKind::reference && !k.processing && !k.charged);
    if (k.body != req.body) {
      result = say(wire_, Say::mismatch, "", reference, elapsed);
    } else if (k.processing) {
      result = say(wire_, Say::in_progress, "", reference, elapsed);
    } else if (resend_runs_again) {
      // Nothing (successful) was stored: the provider runs the payment again,
      // as Checkout.com documents for any 4xx or 5xx (Ck1).
      KeyState& again = process_new(key, order, reference, req.body, now_mono, f == Fault::slow_processing ? slow_ms : 0);
      result = again.processing ? say(wire_, Say::in_progress, "", reference, elapsed) : render_outcome(again, elapsed);
      out.processed = true;
    } else if (wire_.replay == ReplayKind::current_state) {
      const std::string id = charged_id.count(order) ? charged_id[order] : "";
      result = say(wire_, k.charged ? Say::success : Say::decline, id, reference, elapsed);
      if (result.response.status == 201) result.response.status = 200;  // "already created" (Pp4)
    } else if (wire_.replay == ReplayKind::reference) {
      result = say(wire_, Say::already_paid, charged_id.count(order) ? charged_id[order] : "", reference, elapsed);
    } else {
      result = render_outcome(k, elapsed);
      replayed = true;
    }
  } else {
    // A new key, or one the provider has forgotten: a new payment either way.
    KeyState& k = process_new(key, order, reference, req.body, now_mono, f == Fault::slow_processing ? slow_ms : 0);
    out.processed = true;
    // The client may also die before it reads such an answer: a success-only
    // provider then keeps nothing of a payment it charged.
    const bool uncached_then_crash = f == Fault::crash_after_process && wire_.replay == ReplayKind::success_only &&
                                     wire_.hidden_uncached_errors && latency_ms % 2 == 0;
    if (f == Fault::error_stored || uncached_then_crash) {
      // The provider's own answer was an error after it charged: the one it
      // stores (all_answers replays it; success_only stores nothing).
      const TransportResult e = say(wire_, Say::error, "", reference, 0);
      k.status = e.response.status;
      k.stored_body = e.response.body;
      k.stored = wire_.replay != ReplayKind::success_only;
    }
    result = k.processing ? say(wire_, Say::in_progress, "", reference, elapsed) : render_outcome(k, elapsed);
  }
  out.processed = out.processed || (!key.empty() && !remembered);

  // What becomes of the answer on its way back.
  if (f == Fault::crash_after_process) {
    out.crash = true;
    return out;
  }
  if (f == Fault::lost_response) {
    out.result = lost(TransportFailure::connection_lost, true, elapsed, "Connection reset by peer");
    return out;
  }
  if (f == Fault::stream_reset) {
    // HTTP/2: the stream closed uncleanly after the request was processed.
    out.result = lost(TransportFailure::other, true, elapsed, "HTTP/2 stream 1 was not closed cleanly");
    return out;
  }
  // An error the provider did not store (it charged, then failed) may be
  // lost on its way back as a reset or an HTTP/2 stream error, not only as a
  // timeout: whatever libcurl calls it, a re-send would charge again.
  if (f == Fault::error_stored && wire_.replay == ReplayKind::success_only && wire_.hidden_uncached_errors &&
      !times_out && latency_ms % 3 != 0) {
    out.result = latency_ms % 3 == 1 ? lost(TransportFailure::other, true, elapsed, "HTTP/2 stream 1 was not closed cleanly")
                                     : lost(TransportFailure::connection_lost, true, elapsed, "Connection reset by peer");
    return out;
  }
  if (f == Fault::timeout_after || f == Fault::slow_processing || times_out) {
    out.result = lost(TransportFailure::timeout, true, limit, "Operation timed out");
    return out;
  }
  if (f == Fault::error_after && out.processed) {
    result = say(wire_, Say::error, "", reference, elapsed);
    replayed = false;
  }
  out.result = std::move(result);
  out.result.elapsed_ms = elapsed;
  out.result.request_written = true;
  out.result.response.headers.emplace_back("Request-Id", "req_" + std::to_string(t_answer));
  if (replayed && (wire_.profile == "stripe" || wire_.profile == "mollie" || wire_.profile == "generic"))
    out.result.response.headers.emplace_back("Idempotent-Replayed", "true");
  return out;
}

}  // namespace payretry::dst
