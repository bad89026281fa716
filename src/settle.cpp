#include "settle.hpp"

#include <cJSON.h>

#include <algorithm>
#include <cctype>

#include "backoff.hpp"
#include "classify.hpp"
#include "error.hpp"
#include "json_path.hpp"
#include "json_util.hpp"
#include "redact.hpp"

namespace payretry {
namespace {

// RFC 3986 unreserved characters pass; everything else is percent-encoded.
std::string url_encode(const std::string& s) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
    }
  }
  return out;
}

// JSON string contents (no quotes) for a value placed in a body template.
std::string json_escape(const std::string& s) {
  const std::string quoted = json_print(JsonPtr(cJSON_CreateString(s.c_str())).get());
  return quoted.substr(1, quoted.size() - 2);
}

// Fills {order_id}, {provider_id} and {key} in a lookup path (URL-encoded)
// or body template (JSON-escaped).
std::string fill(std::string text, const PaymentRow& row, bool for_json) {
  const std::pair<const char*, const std::string*> vars[] = {
      {"{order_id}", &row.order_id}, {"{provider_id}", &row.provider_payment_id}, {"{key}", &row.idempotency_key}};
  std::string& path = text;
  for (const auto& [name, value] : vars) {
    const std::string token(name), encoded = for_json ? json_escape(*value) : url_encode(*value);
    for (size_t at = path.find(token); at != std::string::npos; at = path.find(token, at + encoded.size()))
      path.replace(at, token.size(), encoded);
  }
  return path;
}

}  // namespace

struct Settler::Answer {
  enum Kind { found, not_found, failed } kind = failed;
  std::string provider_status;
  std::string provider_id;
  int http_status = 0;
  std::string why;
};

Settler::Settler(Ledger& ledger, Transport& transport, const Profile& profile, const Config& config, Clock& clock,
                 Sleeper& sleeper, Random& jitter, AttemptLog& log, Stats& stats, PaymentFlow& flow,
                 std::string owner)
    : ledger_(ledger), transport_(transport), profile_(profile), config_(config), clock_(clock), sleeper_(sleeper),
      jitter_(jitter), log_(log), stats_(stats), flow_(flow), owner_(std::move(owner)) {}

Settler::Answer Settler::look_up(const PaymentRow& row) {
  const Lookup& lk = profile_.lookup;
  const RetryPolicy& policy = config_.retry;
  HttpRequest h;
  h.method = lk.method;
  h.url = config_.base_url + fill(lk.path, row, false);
  h.headers = {{"Accept", "application/json"}, {"User-Agent", "payretry/" PAYRETRY_VERSION_STRING}};
  const std::string body = lk.body.empty() ? "" : fill(lk.body, row, true);
  if (!body.empty()) {
    h.body = body;
    h.headers.emplace_back("Content-Type", "application/json");
  }
  h.headers.insert(h.headers.end(), config_.auth_headers.begin(), config_.auth_headers.end());
  h.headers.insert(h.headers.end(), config_.extra_headers.begin(), config_.extra_headers.end());
  const int64_t deadline = clock_.now_ms() + policy.deadline_ms;
  Answer a;
  // A lookup is a read: retrying it is always safe, but it gets the same
  // bounds as a payment (attempts, deadline, backoff).
  for (int n = 1; n <= policy.max_attempts; ++n) {
    const int64_t left = deadline - clock_.now_ms();
    if (left < policy.min_attempt_ms) break;
    h.timeout_ms = std::min(policy.attempt_timeout_ms, left);
    h.connect_timeout_ms = std::min(policy.connect_timeout_ms, h.timeout_ms);
    const TransportResult t = transport_.post(h);
    if (t.failure == TransportFailure::none) {
      a.http_status = t.response.status;
      JsonPtr answer(cJSON_ParseWithLength(t.response.body.data(), t.response.body.size()));
      if (!lk.not_found.empty() && rule_matches(lk.not_found, t)) {
        a.kind = Answer::not_found;
        return a;
      }
      const int s = t.response.status;
      if (s >= 200 && s < 300 && answer) {
        const auto status = json_path_strings(answer.get(), lk.status_path);
        if (status.empty()) {
          // An empty search result means "no such payment" only for a
          // profile that has no explicit not-found signal; otherwise (Alipay
          // answers 200 with errors inside) it is an answer we cannot read.
          if (lk.not_found.empty()) {
            a.kind = Answer::not_found;
          } else {
            a.why = "the lookup answer holds no status";
          }
          return a;
        }
        a.kind = Answer::found;
        a.provider_status = status.front();
        const auto id = json_path_strings(answer.get(), lk.id_path);
        if (!id.empty()) a.provider_id = id.front();
        return a;
      }
      if (s == 404 && lk.not_found.empty()) {
        a.kind = Answer::not_found;
        return a;
      }
      a.why = "lookup answered HTTP " + std::to_string(s);
      if (!(s == 408 || s == 425 || s == 429 || s >= 500) && !(s >= 200 && s < 300)) return a;
    } else {
      a.why = std::string("lookup failed: ") + transport_failure_name(t.failure);
    }
    if (n < policy.max_attempts) {
      const int64_t delay = backoff_delay_ms(static_cast<unsigned>(n - 1), policy.backoff_base_ms, policy.backoff_cap_ms, jitter_);
      if (clock_.now_ms() + delay + policy.min_attempt_ms > deadline) break;
      sleeper_.sleep_ms(delay);
    }
  }
  return a;
}

PaymentResult Settler::unchanged(const PaymentRow& row, const std::string& why) {
  PaymentResult r = flow_.stored_result(row, why);
  return r;
}

PaymentResult Settler::settle_from(const PaymentRow& row, const Answer& a) {
  Settlement s = settlement_of(row);
  const int64_t now = clock_.unix_ms();
  switch (a.kind) {
    case Answer::found: {
      s.provider_status = a.provider_status;
      if (!a.provider_id.empty()) s.provider_payment_id = a.provider_id;
      s.http_status = a.http_status;
      const auto m = profile_.lookup.status_map.find(a.provider_status);
      const std::string mapped = m == profile_.lookup.status_map.end() ? "" : m->second;
      if (mapped == "SUCCEEDED" || mapped == "FAILED") {
        s.state = mapped == "SUCCEEDED" ? PaymentState::succeeded : PaymentState::failed;
        s.delivery = "delivered";
        s.detail = "settled by query: the provider reports " + a.provider_status;
      } else {
        s.delivery = "maybe_processed";
        s.detail = "the provider reports " + a.provider_status + "; query again later";
      }
      break;
    }
    case Answer::not_found:
      // Providers read from replicas: a payment made a moment ago may not be
      // visible yet. Only after the grace period is "not found" proof.
      if (now - row.updated_at >= config_.not_found_grace_ms) {
        s.delivery = "not_sent";
        s.detail = "the provider has no such payment: a same-key re-send is safe";
      } else {
        s.detail = "not found yet; within the provider's read-lag grace period";
      }
      break;
    case Answer::failed:
      s.detail = "query failed: " + a.why;
      break;
  }
  s.detail = redact(s.detail, config_.secrets());
  ledger_.settle(row.order_id, owner_, nullptr, s, now);
  const PaymentRow after = with_settlement(row, s);
  PaymentResult r = flow_.stored_result(after, s.detail);
  r.from_ledger = false;
  r.queried = true;
  return r;
}

PaymentResult Settler::query(const std::string& order_id) {
  const auto found = ledger_.get(order_id);
  if (!found) throw Error(Errc::not_found, "no payment for order " + order_id + " in the ledger");
  const PaymentRow& row = *found;
  const int64_t now = clock_.unix_ms();
  if (row.state == PaymentState::succeeded || row.state == PaymentState::failed) return flow_.stored_result(row, {});
  if (row.state == PaymentState::in_flight && row.lease_until >= now)
    return flow_.stored_result(row, "another worker holds this payment");
  const Lookup& lk = profile_.lookup;
  if (lk.by == "none") return unchanged(row, "provider " + profile_.name + " offers no status lookup");
  if (lk.by == "replay")
    return unchanged(row, "provider " + profile_.name + "'s only lookup is a same-key re-send: reconcile with the body");
  if (lk.by == "provider_id" && row.provider_payment_id.empty())
    return unchanged(row, "no provider payment id is known, and provider " + profile_.name + " looks up by id only");
  if (!ledger_.claim(order_id, owner_, now, now + config_.retry.deadline_ms + config_.lease_margin_ms))
    return flow_.stored_result(row, "another worker holds this payment");
  Answer a;
  try {
    a = look_up(row);
  } catch (...) {
    const Settlement back = settlement_of(row);  // the lookup failed: release the row as it was
    ledger_.settle(order_id, owner_, nullptr, back, clock_.unix_ms());
    throw;
  }
  return settle_from(row, a);
}

ReconcileReport Settler::reconcile(const ReconcileOptions& o) {
  ReconcileReport report;
  const int64_t now = clock_.unix_ms();
  const int64_t before = o.older_than_ms > 0 ? now - o.older_than_ms : 0;
  std::vector<PaymentRow> rows = ledger_.list(PaymentState::unknown, before, o.limit);
  for (const PaymentRow& r : ledger_.list(PaymentState::in_flight, before, o.limit))
    if (r.lease_until < now) rows.push_back(r);  // abandoned by a dead worker
  const bool can_query = profile_.lookup.by == "order_id" || profile_.lookup.by == "provider_id";
  for (const PaymentRow& row : rows) {
    ++report.examined;
    try {
      const bool key_valid = clock_.unix_ms() < row.key_expires_at;
      PaymentResult res;
      bool resend = false;
      if (can_query && !(profile_.lookup.by == "provider_id" && row.provider_payment_id.empty())) {
        res = query(row.order_id);
        // The provider has no such payment: finish it with the same key.
        resend = res.outcome == Outcome::unknown && res.delivery == Delivery::not_sent && key_valid;
      } else {
        resend = key_valid;
        if (!key_valid) res = unchanged(row, "key expired and provider " + profile_.name + " offers no lookup by reference");
      }
      if (resend) {
        std::optional<std::string> body = o.body_for ? o.body_for(row.order_id) : std::nullopt;
        if (!body) {
          res = unchanged(row, "settling needs a same-key re-send, and the application gave no body for this order");
        } else {
          SubmitRequest req;
          req.order_id = row.order_id;
          req.body = *body;
          req.idempotency_key = row.idempotency_key;
          res = flow_.submit(req);  // checks the fingerprint, resumes with the stored key
        }
      }
      report.results.push_back(std::move(res));
    } catch (const std::exception& e) {
      report.errors.emplace_back(row.order_id, redact(e.what(), config_.secrets()));
    }
  }
  return report;
}

std::string ReconcileReport::to_json() const {
  JsonPtr root(cJSON_CreateObject());
  if (!root) throw std::bad_alloc();
  json_add(root.get(), "examined", examined);
  int counts[5] = {0, 0, 0, 0, 0};
  for (const PaymentResult& r : results) ++counts[static_cast<int>(r.outcome)];
  for (Outcome o : {Outcome::succeeded, Outcome::failed, Outcome::unknown, Outcome::in_progress})
    json_add(root.get(), outcome_name(o), counts[static_cast<int>(o)]);
  json_add(root.get(), "errors", static_cast<int>(errors.size()));
  cJSON* list = cJSON_AddArrayToObject(root.get(), "payments");
  if (!list) throw std::bad_alloc();
  for (const PaymentResult& r : results) {
    cJSON* item = cJSON_Parse(r.to_json().c_str());
    if (!item) throw std::bad_alloc();
    cJSON_AddItemToArray(list, item);
  }
  cJSON* errs = cJSON_AddArrayToObject(root.get(), "failures");
  if (!errs) throw std::bad_alloc();
  for (const auto& [order, why] : errors) {
    cJSON* e = cJSON_CreateObject();
    if (!e) throw std::bad_alloc();
    cJSON_AddItemToArray(errs, e);
    json_add(e, "order_id", order);
    json_add(e, "error", why);
  }
  return json_print(root.get());
}

}  // namespace payretry
