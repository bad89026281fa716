#include "provider_model.hpp"

#include <cJSON.h>
#include <strings.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>

#include "base64.hpp"
#include "json_build.hpp"
#include "provider_auth.hpp"

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

// "metadata.order_id" as a bracketed form field name: "metadata[order_id]".
std::string bracketed(const std::string& dotted) {
  const size_t dot = dotted.find('.');
  if (dot == std::string::npos) return dotted;
  std::string out = dotted.substr(0, dot);
  for (size_t from = dot + 1;;) {
    const size_t next = dotted.find('.', from);
    out += "[" + dotted.substr(from, next == std::string::npos ? std::string::npos : next - from) + "]";
    if (next == std::string::npos) break;
    from = next + 1;
  }
  return out;
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

// A body's "amount" in minor units (a JSON number or string, a form
// field), 0 when it names none.
int64_t amount_in(bool form, std::string_view body) {
  std::string text;
  if (form) {
    text = form_field(body, "amount");
  } else {
    cJSON* j = cJSON_ParseWithLength(body.data(), body.size());
    const cJSON* a = cJSON_GetObjectItemCaseSensitive(j, "amount");
    if (cJSON_IsNumber(a)) text = std::to_string(static_cast<int64_t>(a->valuedouble));
    else if (cJSON_IsString(a)) text = a->valuestring;
    cJSON_Delete(j);
  }
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 15) return 0;
  return std::stoll(text);
}

}  // namespace

std::string body_member(const Wire& w, std::string_view body, const std::string& dotted) {
  if (w.form_bodies) return form_field(body, bracketed(dotted));
  if (!w.gateway_form) return member_at(body, dotted);
  const size_t dot = dotted.find('.');
  const std::string field = form_field(body, dotted.substr(0, dot));
  return dot == std::string::npos ? field : member_at(field, dotted.substr(dot + 1));
}

std::optional<std::string> refund_payment(const Wire& w, const HttpRequest& req) {
  if (!w.speaks_refunds() || req.method != "POST") return std::nullopt;
  std::string path = path_of(req.url);
  path = path.substr(0, path.find('?'));
  const Wire::Refunds& r = w.refunds;
  if (r.style == Wire::Refunds::Style::object) {
    if (path != r.path) return std::nullopt;
    return body_member(w, req.body, r.payment_field);
  }
  if (path.rfind(r.path, 0) != 0 || path.size() <= r.path.size() + r.path_suffix.size() ||
      path.compare(path.size() - r.path_suffix.size(), std::string::npos, r.path_suffix) != 0)
    return std::nullopt;
  const std::string id = path.substr(r.path.size(), path.size() - r.path.size() - r.path_suffix.size());
  if (id.find('/') != std::string::npos) return std::nullopt;
  return id;
}

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

std::string ProviderModel::unsigned_why(const HttpRequest& req, int64_t now_unix) const {
  if (wire_.signs == Wire::Signs::none) return "";
  if (keys) {
    return wire_.signs == Wire::Signs::wechatpay ? keys->check_wechatpay(req, merchant_id, now_unix)
                                                 : keys->check_alipay(req);
  }
  const std::string* sig = header_of(req, "X-Dst-Signature");
  return sig && *sig == signature(req) ? "" : "no valid X-Dst-Signature";
}

void ProviderModel::sign(HttpResponse& a, int64_t unix_ms) {
  if (!keys) return;
  if (wire_.signs == Wire::Signs::wechatpay) {
    // The nonce is the provider's own: a counter, so that schedules repeat.
    char nonce[33];
    std::snprintf(nonce, sizeof nonce, "dst%029llu", static_cast<unsigned long long>(++answers_signed_));
    keys->sign_wechatpay(a, unix_ms / 1000, nonce);
  } else if (wire_.signs == Wire::Signs::alipay) {
    keys->sign_alipay(a);
  }
}

TransportResult ProviderModel::say(Say what, const std::string& id, const std::string& reference, int64_t elapsed,
                                   Phase phase) const {
  const AnswerShape* s = nullptr;
  switch (what) {
    case Say::success: s = &wire_.success; break;
    case Say::decline:
      // Some providers refuse in more than one shape (Alipay: a listed
      // business failure, or a code the profile does not list).
      s = wire_.decline_alt.status != 0 && id.size() % 2 == 0 ? &wire_.decline_alt : &wire_.decline;
      break;
    case Say::error: s = &wire_.error; break;
    case Say::in_progress: s = &wire_.in_progress; break;
    case Say::mismatch: s = &wire_.mismatch; break;
    case Say::already_paid: s = &wire_.already_paid; break;
    case Say::unsigned_request: s = &wire_.unsigned_request; break;
  }
  const Wire::MoneyWords& words = wire_.money[static_cast<size_t>(phase)];
  TransportResult t = what == Say::success ? answer(s->status, fill_answer(s->body, id, reference, words.create, words.extra), elapsed)
                                           : answer(s->status, fill_answer(s->body, id, reference, ""), elapsed);
  for (const auto& h : s->headers) t.response.headers.push_back(h);
  return t;
}

void ProviderModel::complete(KeyState& k) {
  if (!k.processing) return;
  k.processing = false;
  if (!k.refund_id.empty()) {
    // A refund's processing is over: it is accepted, and decided now or
    // at its moment. It is no payment: nothing is charged; it is told as
    // a refund (refund_news), where it stands once accepted.
    for (Refund& r : refunds_)
      if (r.id == k.refund_id) {
        r.processing = false;
        if (r.decides_at <= k.done_at) decide(r, k.done_at);
        tell(r, true);
      }
    return;
  }
  if (k.charge_on_done) {
    ++charges[k.order_id];
    k.charged = true;
  }
  Phase phase = k.charge_on_done ? wire_.at_once : Phase::declined;
  for (Payment& p : payments_)
    if (p.id == k.id) {
      p.processing = false;
      p.charged = k.charge_on_done;
      phase = p.phase;
    }
  decided.push_back(Decided{k.store, k.order_id, k.id, k.charge_on_done, k.identity, phase});
}

void ProviderModel::customers_act(int64_t now_mono) {
  for (Payment& p : payments_) {
    if (p.processing || !p.charged || p.then == p.phase || now_mono < p.acts_at) continue;
    p.phase = p.then;
    p.ever_held = p.ever_held || money_of(p.phase) == Money::held;
    p.ever_captured = p.ever_captured || money_of(p.phase) == Money::captured;
    decided.push_back(Decided{p.store, p.order_id, p.id, true, p.identity, p.phase});
  }
}

Phase ProviderModel::phase_of(const std::string& id) const {
  for (const Payment& p : payments_)
    if (p.id == id) return p.phase;
  return wire_.at_once;
}

void ProviderModel::finish_all() {
  for (auto& [key, k] : keys_) complete(k);
  // And every refund is decided, as it will be after the run.
  for (Refund& r : refunds_)
    if (!r.decided) decide(r, std::max(r.decides_at, r.decided_at));
}

void ProviderModel::complete_due(int64_t now_mono) {
  for (auto& [key, k] : keys_)
    if (k.processing && now_mono >= k.done_at) complete(k);
  customers_act(now_mono);
  refunds_act(now_mono);
}

void ProviderModel::refunds_act(int64_t now_mono) {
  for (Refund& r : refunds_)
    if (!r.processing && !r.decided && now_mono >= r.decides_at) decide(r, r.decides_at);
}

void ProviderModel::decide(Refund& r, int64_t now_mono) {
  if (r.decided) return;
  r.decided = true;
  r.decided_at = now_mono;
  // A refund already told as accepted is told again, decided.
  if (r.told) tell(r, false);
  if (!r.approved) return;  // declined: nothing moved
  if (!r.row.empty()) ++charges[r.row];
  for (Payment& p : payments_)
    if (p.id == r.payment_id && p.store == r.store) {
      p.refunded += r.amount;
      ++refunds_moved[p.order_id];
    }
}

void ProviderModel::tell(Refund& r, bool accepted) {
  r.told = r.told || accepted;
  RefundNews n;
  n.store = r.store;
  n.refund_id = r.id;
  n.payment_id = r.payment_id;
  n.row = r.row;
  n.identity = r.identity;
  n.accepted = accepted;
  n.decided = r.decided;
  n.approved = r.approved;
  n.amount = r.amount;
  for (const Payment& p : payments_)
    if (p.id == r.payment_id && p.store == r.store) n.order_id = p.order_id;
  refund_news.push_back(std::move(n));
}

int64_t ProviderModel::left_to_refund(const std::string& store, const std::string& payment_id) const {
  int64_t left = 0;
  for (const Payment& p : payments_)
    if (p.id == payment_id && p.store == store) left = p.amount;
  for (const Refund& r : refunds_)
    if (r.payment_id == payment_id && r.store == store && !(r.decided && !r.approved)) left -= r.amount;
  return std::max<int64_t>(0, left);
}

bool ProviderModel::refund_elsewhere(const std::string& store, const std::string& payment_id, int64_t amount,
                                     bool approved, int64_t decides_at, int64_t now_mono) {
  const Payment* p = payment_by_id(store, payment_id);
  // Only money the payment captured can be given back.
  if (!p || !p->charged || p->processing || money_of(p->phase) != Money::captured || amount <= 0 ||
      amount > left_to_refund(store, payment_id))
    return false;
  Refund r;
  r.store = store;
  r.id = wire_.refunds.id_prefix + std::to_string(++next_id_);
  r.payment_id = payment_id;
  r.amount = amount;
  r.approved = approved;
  // A merchant's own reference for the action, or none (every other one):
  // never a key of the client's, so no row finds it by its key.
  if (next_id_ % 2) r.reference = "dashboard-" + std::to_string(next_id_);
  r.decides_at = std::max(decides_at, now_mono);
  r.processing = false;
  refunds_.push_back(std::move(r));
  Refund& made = refunds_.back();
  if (made.decides_at <= now_mono) decide(made, now_mono);
  tell(made, true);
  return true;
}

ProviderModel::Payment* ProviderModel::payment_by_id(const std::string& store, const std::string& id) {
  for (Payment& p : payments_)
    if (p.id == id && p.store == store) return &p;
  return nullptr;
}

ProviderModel::KeyState& ProviderModel::process_new(const std::string& store, const std::string& key,
                                                    const std::string& identity, const std::string& order,
                                                    const std::string& reference, std::string_view body, int64_t now,
                                                    int64_t slow_ms, const std::string& refund_of) {
  if (!refund_of.empty()) return process_refund(store, key, identity, order, refund_of, body, now, slow_ms);
  KeyState k;
  k.store = store;
  k.identity = identity;
  k.order_id = order;
  k.body.assign(body.data(), body.size());
  k.reference = reference;
  const bool decline = declines.count(order) && declines[order];
  k.charge_on_done = !decline;
  k.processing = true;
  k.first_seen = now;
  k.done_at = now + slow_ms;
  k.id = wire_.id_prefix + std::to_string(++next_id_);
  order_of_id[k.id] = order;
  // Where its money goes: the order's flow, or paid at once for good.
  const auto flow = flows.find(order);
  const Flow f = decline ? Flow{Phase::declined, Phase::declined, 0}
                 : flow != flows.end() ? flow->second
                                       : Flow{wire_.at_once, wire_.at_once, 0};
  // The outcome the provider stores (error faults replace it later).
  k.stored = true;
  const TransportResult t = say(decline ? Say::decline : Say::success, k.id, reference, 0, f.first);
  k.status = t.response.status;
  k.stored_body = t.response.body;
  k.stored_headers = t.response.headers;
  if (!decline && !charged_id.count(order)) charged_id[order] = k.id;
  if (!decline || wire_.decline_leaves_record) {
    Payment p{store, order, reference, k.id, false, true, now, identity, f.first, f.then, now + slow_ms + f.after_ms};
    p.ever_held = money_of(f.first) == Money::held;
    p.ever_captured = money_of(f.first) == Money::captured;
    p.amount = amount_in(wire_.form_bodies, body);
    payments_.push_back(std::move(p));
  }
  auto& slot = keys_[key] = std::move(k);
  if (slow_ms == 0) complete(slot);
  return slot;
}

ProviderModel::KeyState& ProviderModel::process_refund(const std::string& store, const std::string& key,
                                                       const std::string& identity, const std::string& row,
                                                       const std::string& payment, std::string_view body, int64_t now,
                                                       int64_t slow_ms) {
  const Payment* paid = payment_by_id(store, payment);
  Refund r;
  r.store = store;
  r.id = wire_.refunds.id_prefix + std::to_string(++next_id_);
  r.payment_id = payment;
  r.row = row;
  r.identity = identity;
  if (!wire_.refunds.reference_field.empty())
    r.reference = body_member(wire_, body, wire_.refunds.reference_field);
  // Its amount, or the rest of the payment's (what no other refund
  // accepted and not declined took).
  r.amount = amount_in(wire_.form_bodies, body);
  if (r.amount == 0 && paid) {
    int64_t taken = 0;
    for (const Refund& o : refunds_)
      if (o.payment_id == payment && o.store == store && !(o.decided && !o.approved)) taken += o.amount;
    r.amount = std::max<int64_t>(0, paid->amount - taken);
  }
  // The provider's decision, drawn as it accepts the refund.
  const bool later = refund_rng.chance(refund_later_percent);
  r.approved = !refund_rng.chance(refund_declined_percent);
  // (Stripe declines at once only what it refuses to start; a failure
  // comes later, after a pending answer.)
  if (wire_.refunds.style == Wire::Refunds::Style::object && !later) r.approved = true;
  r.decides_at = now + slow_ms + (later ? refund_rng.range(1, std::max<int64_t>(1, refund_later_max_ms)) : 0);
  r.processing = true;
  KeyState k;
  k.store = store;
  k.identity = identity;
  k.order_id = row;
  k.body.assign(body.data(), body.size());
  k.processing = true;
  k.first_seen = now;
  k.done_at = now + slow_ms;
  k.id = r.id;
  k.refund_id = r.id;
  k.stored = true;
  const TransportResult t = refund_answer(r, 0, !later);
  k.status = t.response.status;
  k.stored_body = t.response.body;
  k.stored_headers = t.response.headers;
  refunds_.push_back(std::move(r));
  auto& slot = keys_[key] = std::move(k);
  if (slow_ms == 0) complete(slot);
  return slot;
}

TransportResult ProviderModel::refund_answer(const Refund& r, int64_t elapsed, bool decided) const {
  if (wire_.refunds.style == Wire::Refunds::Style::actions)
    return answer(202, R"({"action_id":")" + r.id + R"("})", elapsed);
  // Stripe's Refund object as it stands: succeeded or failed once decided, pending until then.
  const char* status = !decided ? "pending" : r.approved ? "succeeded" : "failed";
  return answer(200,
                R"({"id":")" + r.id + R"(","object":"refund","amount":)" + std::to_string(r.amount) +
                    R"(,"payment_intent":")" + r.payment_id + R"(","status":")" + status + R"("})",
                elapsed);
}

// A refund's own lookup: Stripe's Refund by its id; Checkout.com's list of
// the payment's actions, newest first: its refunds once processed, each
// with the reference its request carried (none when it carried none),
// then its own authorization (and capture).
ProviderReply ProviderModel::refund_lookup(const HttpRequest& req, int64_t elapsed) {
  ProviderReply out;
  out.lookup = true;
  const std::string store = store_of(req);
  std::string path = path_of(req.url);
  path = path.substr(0, path.find('?'));
  const Wire::Refunds& w = wire_.refunds;
  if (w.style == Wire::Refunds::Style::object) {
    const std::string id = path.substr(w.lookup_path.size());
    for (const Refund& r : refunds_)
      if (r.id == id && r.store == store && !r.processing) {
        out.result = refund_answer(r, elapsed, r.decided);
        return out;
      }
    out.result = answer(404, R"({"error":{"type":"invalid_request_error","code":"resource_missing"}})", elapsed);
    return out;
  }
  const std::string pid = path.substr(w.path.size(), path.size() - w.path.size() - w.lookup_path.size());
  const Payment* p = payment_by_id(store, pid);
  if (!p || p->processing) {
    out.result = answer(404, "", elapsed);
    return out;
  }
  std::vector<const Refund*> listed;
  for (const Refund& r : refunds_)
    if (r.payment_id == pid && r.store == store && r.decided) listed.push_back(&r);
  std::stable_sort(listed.begin(), listed.end(),
                   [](const Refund* a, const Refund* b) { return a->decided_at > b->decided_at; });
  std::string body = "[";
  for (const Refund* r : listed)
    body += R"({"id":")" + r->id + R"(","type":"Refund",)" +
            (r->reference.empty() ? "" : R"("reference":)" + json_quote(r->reference) + ",") +
            R"("amount":)" + std::to_string(r->amount) +
            R"(,"approved":)" + (r->approved ? "true" : "false") + R"(,"response_code":")" +
            (r->approved ? "10000" : "20005") + R"("},)";
  if (p->ever_captured)
    body += R"({"id":"act_c)" + pid + R"(","type":"Capture","amount":)" + std::to_string(p->amount) +
            R"(,"approved":true,"response_code":"10000"},)";
  // (The authorization carries the payment's own reference, as its
  // create's body did: an order's, never an operation's key.)
  body += R"({"id":"act_a)" + pid + R"(","type":"Authorization",)" +
          (p->reference.empty() ? "" : R"("reference":)" + json_quote(p->reference) + ",") +
          R"("amount":)" + std::to_string(p->amount) +
          R"(,"approved":)" + (p->charged ? "true" : "false") + R"(,"response_code":")" +
          (p->charged ? "10000" : "20005") + R"("}])";
  out.result = answer(200, std::move(body), elapsed);
  return out;
}

std::string ProviderModel::identity_of(const HttpRequest& req, std::string& reference) const {
  reference = wire_.search_path.empty() ? "" : body_member(wire_, req.body, wire_.search_path);
  switch (wire_.identity) {
    case Wire::Identity::header: {
      const std::string* k = header_of(req, wire_.key_header);
      return k ? *k : "";
    }
    case Wire::Identity::body_key: return body_member(wire_, req.body, wire_.key_path);
    case Wire::Identity::reference: {
      const std::string ref = body_member(wire_, req.body, wire_.key_path);
      return ref.empty() ? "" : "ref:" + ref;
    }
  }
  return "";
}

TransportResult ProviderModel::render_outcome(const KeyState& k, int64_t elapsed) const {
  TransportResult t = answer(k.status, k.stored_body, elapsed);
  t.response.headers = k.stored_headers;
  return t;
}

HttpResponse ProviderModel::lie(bool is_lookup, const std::string& order, const std::string& fake_id,
                                bool says_charged) const {
  HttpResponse a;
  const AnswerShape& s = is_lookup ? wire_.found : wire_.success;
  a.status = s.status;
  const Wire::MoneyWords& w = wire_.money[static_cast<size_t>(wire_.at_once)];
  a.body = is_lookup ? fill_answer(s.body, fake_id, order, says_charged ? wire_.word_charged : wire_.word_declined)
                     : fill_answer(s.body, fake_id, order, w.create, w.extra);
  a.headers = s.headers;
  return a;
}

ProviderReply ProviderModel::lookup(const HttpRequest& req, int64_t now_mono, int64_t elapsed) {
  ProviderReply out;
  out.lookup = true;
  ++lookups;
  // Processing that is over by now is over for the lookup too.
  complete_due(now_mono);
  if (wire_.is_refund_lookup(req.method, path_of(req.url))) return refund_lookup(req, elapsed);
  const std::string path = path_of(req.url);
  const std::string store = store_of(req);
  auto visible = [&](const Payment& p) {
    // Another store's payments are not there at all.
    if (p.store != store) return false;
    // Replicas lag: a payment processed a moment ago is not found yet; one
    // still processing is not there, or shown as still processing.
    if (now_mono - p.at < read_lag_ms) return false;
    return !p.processing || !wire_.word_processing.empty();
  };
  const Payment* found = nullptr;
  std::string ref_searched;
  if (wire_.lookup == Wire::Lookup::by_reference) {
    std::string& ref = ref_searched;
    if (!wire_.lookup_body_path.empty()) {
      ref = body_member(wire_, req.body, wire_.lookup_body_path);
    } else {
      ref = path.substr(std::min(path.size(), wire_.lookup_path.size()));
      ref = ref.substr(0, ref.find_first_of("?&"));
    }
    // Newest first, like Checkout.com's list.
    for (auto it = payments_.rbegin(); it != payments_.rend(); ++it)
      if (!ref.empty() && it->reference == ref && visible(*it)) {
        found = &*it;
        break;
      }
  } else if (wire_.lookup == Wire::Lookup::by_id) {
    const std::string id = path.substr(std::min(path.size(), wire_.lookup_path.size()));
    for (const Payment& p : payments_)
      if (p.id == id && visible(p)) found = &p;
  }
  if (!found) {
    if (wire_.lookup == Wire::Lookup::by_reference)
      for (const Payment& p : payments_)
        if (p.store == store && !p.reference.empty() && p.reference == ref_searched && (p.charged || p.processing))
          out.hid_a_payment = true;  // (a declined one moved nothing: "no payment" holds for money)
    out.result = answer(wire_.not_found.status, wire_.not_found.body, elapsed);
    return out;
  }
  const std::string& word = found->processing ? wire_.word_processing
                            : found->charged  ? wire_.lookup_word(found->phase)
                                              : wire_.word_declined;
  // Refunds that moved its money change the word where the provider's does.
  const std::string& refunded_word = found->amount > 0 && found->refunded >= found->amount
                                         ? wire_.refunds.word_refunded
                                         : wire_.refunds.word_partly_refunded;
  const std::string& said = found->charged && found->refunded > 0 && !refunded_word.empty() ? refunded_word : word;
  const std::string& extra =
      found->processing || !found->charged ? std::string() : wire_.money[static_cast<size_t>(found->phase)].extra;
  out.result =
      answer(wire_.found.status, fill_answer(wire_.found.body, found->id, found->reference, said, extra), elapsed);
  for (const auto& h : wire_.found.headers) out.result.response.headers.push_back(h);
  out.about_order = found->order_id;
  out.about_id = found->id;
  return out;
}

ProviderReply ProviderModel::handle(const HttpRequest& req, Fault f, int64_t now_mono, int64_t now_unix,
                                    int64_t latency_ms, int ra_kind, int64_t slow_ms, AfterProcessing after) {
  ProviderReply out = respond(req, f, now_mono, now_unix, latency_ms, ra_kind, slow_ms, after);
  // A provider that signs its answers signs every answer it writes, but
  // for the refusal of a request it could not authenticate.
  if (keys && out.result.failure == TransportFailure::none && out.result.response.status != 0 &&
      !out.refused_unsigned)
    sign(out.result.response, now_unix + out.result.elapsed_ms);
  return out;
}

ProviderReply ProviderModel::respond(const HttpRequest& req, Fault f, int64_t now_mono, int64_t now_unix,
                                     int64_t latency_ms, int ra_kind, int64_t slow_ms, AfterProcessing after) {
  ProviderReply out;
  const int64_t limit = req.timeout_ms;
  // A provider that shows every error it does not store never lets one
  // hide behind a lost answer (Wire::hidden_uncached_errors).
  const bool shown = f == Fault::error_stored && wire_.replay == ReplayKind::success_only && !wire_.hidden_uncached_errors;
  const bool times_out = latency_ms > limit && !shown;
  const int64_t elapsed = std::min(latency_ms, limit);
  const int64_t t_answer = now_mono + elapsed;
  const bool is_lookup = wire_.is_lookup(req.method, path_of(req.url));
  out.lookup = is_lookup;
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
  if (const std::string why = unsigned_why(req, now_unix); !why.empty()) {
    ++rejected_unsigned;
    rejections.push_back(why);
    out.result = say(Say::unsigned_request, "", "", elapsed);
    out.refused_unsigned = true;
    return out;
  }
  // Then the token, for creates and lookups alike: nothing is processed
  // under a credential that is not live.
  if (const std::string why = token_refusal(req, now_mono); !why.empty()) {
    ++unauthorized;
    out.unauthorized = true;
    out.result = times_out ? lost(TransportFailure::timeout, true, limit, "Operation timed out")
                           : answer(401, R"({"name":"AUTHENTICATION_FAILURE","message":")" + why + "\"}", elapsed);
    return out;
  }
  if (is_lookup) {
    if (times_out) {
      out.result = lost(TransportFailure::timeout, true, limit, "Operation timed out");
      return out;
    }
    ProviderReply l = lookup(req, now_mono, elapsed);
    return l;
  }
  if (f == Fault::conflict_storm) {
    out.result = times_out ? lost(TransportFailure::timeout, true, limit, "Operation timed out")
                           : say(Say::in_progress, "", "", elapsed);
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
  const std::string order = body_member(wire_, req.body, wire_.order_path);
  std::string reference;
  const std::string store = store_of(req);
  // A refund names a payment of this store, or is refused before anything
  // (Stripe: resource_missing; Checkout.com: 404).
  const std::optional<std::string> refund_of = refund_payment(wire_, req);
  if (refund_of && (refund_of->empty() || !payment_by_id(store, *refund_of))) {
    ++refunds_of_no_payment;
    out.result = times_out ? lost(TransportFailure::timeout, true, limit, "Operation timed out")
                           : answer(404, R"({"error":{"type":"invalid_request_error","code":"resource_missing"}})", elapsed);
    return out;
  }
  const std::string refund_payment_id = refund_of.value_or("");
  const std::string identity = identity_of(req, reference);
  // A key exists in its store only: the same key sent to another account is new there.
  const std::string key = identity.empty() ? "" : store + "\n" + identity;
  TransportResult result;
  bool replayed = false;
  const KeyState* about = nullptr;  // the payment the answer states
  customers_act(now_mono);
  refunds_act(now_mono);
  auto it = keys_.find(key);
  if (it != keys_.end() && it->second.processing && now_mono >= it->second.done_at) complete(it->second);
  const bool remembered = it != keys_.end() && !key.empty() &&
                          (wire_.replay == ReplayKind::reference || retention_ms <= 0 || it->second.processing ||
                           now_mono - it->second.first_seen <= retention_ms);
  if (key.empty()) {
    // No key: every request is a new payment. The client must never do this.
    KeyState& k = process_new(store, store + "\n<none>#" + std::to_string(keys_.size()), "", order, reference, req.body,
                              now_mono, 0, refund_payment_id);
    result = render_outcome(k, elapsed);
    about = &k;
  } else if (remembered) {
    KeyState& k = it->second;
    const bool resend_runs_again =
        (wire_.replay == ReplayKind::success_only && !(k.stored && k.status / 100 == 2)) ||
        (wire_.replay == ReplayKind::reference && !k.processing && !k.charged);
    if (k.body != req.body) {
      result = say(Say::mismatch, "", reference, elapsed);
    } else if (k.processing) {
      result = say(Say::in_progress, "", reference, elapsed);
    } else if (resend_runs_again) {
      // Nothing (successful) was stored: the provider runs the payment again,
      // as Checkout.com documents for any 4xx or 5xx (Ck1).
      KeyState& again = process_new(store, key, identity, order, reference, req.body, now_mono,
                                    f == Fault::slow_processing ? slow_ms : 0, refund_payment_id);
      result = again.processing ? say(Say::in_progress, "", reference, elapsed) : render_outcome(again, elapsed);
      if (!again.processing) about = &again;
      out.processed = true;
    } else if (wire_.replay == ReplayKind::current_state) {
      const std::string id = charged_id.count(order) ? charged_id[order] : k.id;
      result = say(k.charged ? Say::success : Say::decline, id, reference, elapsed, phase_of(id));
      if (result.response.status == 201) result.response.status = 200;  // "already created" (Pp4)
      about = &k;
    } else if (wire_.replay == ReplayKind::reference) {
      result = say(Say::already_paid, charged_id.count(order) ? charged_id[order] : "", reference, elapsed);
    } else {
      result = render_outcome(k, elapsed);
      replayed = true;
      about = &k;
    }
  } else {
    // A new key, or one the provider has forgotten: a new payment either way.
    KeyState& k = process_new(store, key, identity, order, reference, req.body, now_mono,
                              f == Fault::slow_processing ? slow_ms : 0, refund_payment_id);
    out.processed = true;
    // The client may also die before it reads such an answer: a success-only
    // provider then keeps nothing of a payment it charged.
    const bool uncached_then_crash = f == Fault::crash_after_process && wire_.replay == ReplayKind::success_only &&
                                     wire_.hidden_uncached_errors && latency_ms % 2 == 0;
    if (f == Fault::error_stored || uncached_then_crash) {
      // The provider's own answer was an error after it charged: the one it
      // stores (all_answers replays it; success_only stores nothing).
      const TransportResult e = say(Say::error, wire_.error_carries_id ? k.id : "", reference, 0);
      k.status = e.response.status;
      k.stored_body = e.response.body;
      k.stored_headers = e.response.headers;
      k.stored = wire_.replay != ReplayKind::success_only;
    }
    result = k.processing ? say(Say::in_progress, "", reference, elapsed) : render_outcome(k, elapsed);
    if (!k.processing) about = &k;
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
    const std::string id = about && wire_.error_carries_id ? about->id : "";
    result = say(Say::error, id, reference, elapsed);
    replayed = false;
    about = nullptr;
  }
  if (after != AfterProcessing::answer) {
    // A gateway in front refuses the credential after the application
    // answered: the payment stands as processed. Forgetting the key, it
    // runs a same-key re-send as a new payment (a key still processing is
    // not forgotten: its payment is not over).
    ++unauthorized_after;
    out.unauthorized = true;
    if (after == AfterProcessing::unauthorized_forgetting_key && !key.empty()) {
      const auto k = keys_.find(key);
      if (k != keys_.end() && !k->second.processing) {
        keys_.erase(k);
        ++keys_forgotten;
      }
    }
    result = answer(401, R"({"name":"AUTHENTICATION_FAILURE","message":"the access token expired"})", elapsed);
    replayed = false;
    about = nullptr;
  }
  out.result = std::move(result);
  out.result.elapsed_ms = elapsed;
  out.result.request_written = true;
  out.result.response.headers.emplace_back("Request-Id", "req_" + std::to_string(t_answer));
  if (replayed && !wire_.replay_marker.empty()) out.result.response.headers.emplace_back(wire_.replay_marker, "true");
  if (about && out.result.response.status / 100 == 2 && !about->id.empty()) {
    out.about_order = about->order_id;
    out.about_id = about->id;
  }
  return out;
}

std::string ProviderModel::account_of(const HttpRequest& req) const {
  const std::string* a = header_of(req, "Authorization");
  if (!a || strncasecmp(a->c_str(), "Bearer ", 7) != 0) return "";
  const std::string credential = a->substr(7);
  if (wire_.token_path.empty()) return credential;
  const auto t = tokens_.find(credential);
  return t == tokens_.end() ? "" : t->second.account;
}

std::string ProviderModel::store_of(const HttpRequest& req) const {
  std::string store = account_of(req);
  for (size_t i = 0; i < wire_.store_headers.size(); ++i)
    if (const std::string* v = header_of(req, wire_.store_headers[i])) store.append("|").append(std::to_string(i)).append("=").append(*v);
  const std::string& prefix = wire_.account_path_prefix;
  if (!prefix.empty() && req.url.find(prefix) != std::string::npos) {
    const std::string path = path_of(req.url);
    if (path.rfind(prefix, 0) == 0)
      store.append("|path=").append(path, prefix.size(), path.find('/', prefix.size()) - prefix.size());
  }
  return store;
}

std::string ProviderModel::token_refusal(const HttpRequest& req, int64_t now_mono) const {
  if (wire_.token_path.empty()) return "";
  const std::string* a = header_of(req, "Authorization");
  if (!a || strncasecmp(a->c_str(), "Bearer ", 7) != 0) return "no bearer token";
  const auto t = tokens_.find(a->substr(7));
  if (t == tokens_.end()) return "a token this provider never issued";
  if (t->second.revoked) return "the token was revoked";
  if (now_mono >= t->second.expires_at) return "the token expired";
  return "";
}

bool ProviderModel::revoke(const HttpRequest& req) {
  const std::string* a = header_of(req, "Authorization");
  if (!a || strncasecmp(a->c_str(), "Bearer ", 7) != 0) return false;
  const auto t = tokens_.find(a->substr(7));
  if (t == tokens_.end() || t->second.revoked) return false;
  t->second.revoked = true;
  return true;
}

TransportResult ProviderModel::token_request(const HttpRequest& req, const TokenAnswer& what, int64_t now_mono,
                                             int64_t elapsed) {
  if (what.kind == TokenAnswer::hang) return lost(TransportFailure::timeout, true, req.timeout_ms, "Operation timed out");
  if (what.kind == TokenAnswer::server_error) return answer(500, R"({"error":"server_error"})", elapsed);
  // The client the Basic credential names; its account owns the token.
  std::string client;
  if (const std::string* a = header_of(req, "Authorization"); a && strncasecmp(a->c_str(), "Basic ", 6) == 0) {
    std::string decoded;
    if (base64_decode(a->substr(6), decoded)) client = decoded.substr(0, decoded.find(':'));
  }
  if (client.empty()) return answer(401, R"({"error":"invalid_client"})", elapsed);
  const std::string token = "at_" + std::to_string(++next_token_);
  tokens_[token] = Token{"oauth2:" + client, now_mono + what.life_ms, false};
  ++tokens_issued;
  return answer(200,
                R"({"access_token":")" + token + R"(","token_type":"Bearer","expires_in":)" +
                    std::to_string(what.life_ms / 1000) + "}",
                elapsed);
}

}  // namespace payretry::dst
