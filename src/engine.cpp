#include "engine.hpp"

#include <cJSON.h>

#include <algorithm>
#include <cctype>

#include "backoff.hpp"
#include "error.hpp"
#include "json_path.hpp"
#include "json_util.hpp"
#include "redact.hpp"
#include "retry_after.hpp"
#include "validate.hpp"

namespace payretry {
namespace {

// Reads the provider's payment id and status word from a response body.
void read_provider_fields(const Profile& p, const std::string& body, PaymentResult& r) {
  JsonPtr j(cJSON_ParseWithLength(body.data(), body.size()));
  if (!j) return;
  const auto id = json_path_strings(j.get(), p.id_path);
  const auto status = json_path_strings(j.get(), p.status_path);
  if (!id.empty()) r.provider_payment_id = id.front();
  if (!status.empty()) r.provider_status = status.front();
}

// "$.idempotency_key" -> "idempotency_key": body-mode keys live at the top.
std::string top_level_member(const std::string& path) { return path.size() > 2 ? path.substr(2) : path; }

std::string json_string_literal(const std::string& s) {
  JsonPtr str(cJSON_CreateString(s.c_str()));
  if (!str) throw std::bad_alloc();
  return json_print(str.get());
}

// The bytes every attempt sends. In body mode without the key field, the
// field is written in right after the opening brace, leaving every other
// byte of the caller's body as it was.
std::string body_with_key(std::string_view body, const std::string& member, const std::string& key) {
  const size_t brace = body.find('{');
  size_t next = brace + 1;
  while (next < body.size() && (body[next] == ' ' || body[next] == '\t' || body[next] == '\n' || body[next] == '\r')) ++next;
  const bool empty_object = next < body.size() && body[next] == '}';
  std::string out;
  out.reserve(body.size() + member.size() + key.size() + 8);
  out.append(body.substr(0, brace + 1));
  out += json_string_literal(member) + ":" + json_string_literal(key) + (empty_object ? "" : ",");
  out.append(body.substr(brace + 1));
  return out;
}

std::string first_header(const HttpResponse& resp, const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (const std::string* v = resp.header(n)) return *v;
  return {};
}

}  // namespace

Engine::Engine(const Config& config, const Profile& profile, EngineDeps deps, RequestHook hook)
    : config_(config), profile_(profile), d_(deps), hook_(std::move(hook)), secrets_(config.secrets()) {}

void Engine::validate(const SubmitRequest& r) const {
  if (std::string e = check_order_id(r.order_id); !e.empty()) throw Error(Errc::invalid, e);
  if (r.body.empty()) throw Error(Errc::invalid, "body is empty");
  if (r.body.size() > config_.max_body_bytes)
    throw Error(Errc::too_big, "body is " + std::to_string(r.body.size()) + " bytes; max_body_bytes is " +
                                   std::to_string(config_.max_body_bytes));
  if (!r.idempotency_key.empty()) check_key(r.idempotency_key);
  if (profile_.identity.mode != IdentityMode::header) {
    JsonPtr j(cJSON_ParseWithLength(r.body.data(), r.body.size()));
    if (!j || !cJSON_IsObject(j.get()))
      throw Error(Errc::invalid, "body must be a JSON object: profile " + profile_.name + " carries the key inside it");
  }
  if (!r.path.empty())
    if (std::string e = check_path(r.path); !e.empty()) throw Error(Errc::invalid, e);
  if (r.deadline_ms < 0) throw Error(Errc::invalid, "deadline_ms is negative");
  if (r.deadline_ms > 0 && r.deadline_ms < config_.retry.min_attempt_ms)
    throw Error(Errc::invalid, "deadline_ms is below retry.min_attempt_ms");
}

void Engine::check_key(const std::string& key) const {
  const Identity& id = profile_.identity;
  if (std::string e = check_idempotency_key(key, id.max_length); !e.empty()) throw Error(Errc::key, e);
  if (key.size() < id.min_length)
    throw Error(Errc::key, "idempotency key is shorter than " + std::to_string(id.min_length) + " characters (" +
                               profile_.name + ")");
  if (!id.charset.empty())
    for (char c : key)
      if (!std::isalnum(static_cast<unsigned char>(c)) && id.charset.find(c) == std::string::npos)
        throw Error(Errc::key, "idempotency key may hold only letters, digits and \"" + id.charset + "\" (" +
                                   profile_.name + ")");
}

std::string Engine::identity_key(const SubmitRequest& r) const {
  const Identity& id = profile_.identity;
  if (id.mode == IdentityMode::header) return r.idempotency_key;
  JsonPtr j(cJSON_ParseWithLength(r.body.data(), r.body.size()));
  const auto found = j ? json_path_strings(j.get(), id.name) : std::vector<std::string>{};
  if (id.mode == IdentityMode::reference) {
    // The merchant reference is the identity, forever: it must be the order.
    if (found.empty() || found.front() != r.order_id)
      throw Error(Errc::invalid, "body " + id.name + " must equal the order id (profile " + profile_.name + ")");
    if (!r.idempotency_key.empty() && r.idempotency_key != r.order_id)
      throw Error(Errc::key, "profile " + profile_.name + " uses the order id as the key; give no other key");
    check_key(r.order_id);
    return r.order_id;
  }
  if (!found.empty()) {
    if (!r.idempotency_key.empty() && r.idempotency_key != found.front())
      throw Error(Errc::key, "body " + id.name + " differs from the idempotency key given");
    check_key(found.front());
    return found.front();
  }
  return r.idempotency_key;
}

std::string Engine::path_for(const SubmitRequest& r) const {
  return !r.path.empty() ? r.path : !config_.create_path.empty() ? config_.create_path : profile_.create_path;
}

Headers Engine::base_headers(const std::string& key) const {
  Headers h;
  h.reserve(6 + config_.auth_headers.size() + config_.extra_headers.size());
  h.emplace_back("Content-Type", "application/json");
  h.emplace_back("Accept", "application/json");
  h.emplace_back("User-Agent", "payretry/" PAYRETRY_VERSION_STRING);
  if (profile_.identity.mode == IdentityMode::header) h.emplace_back(profile_.identity.name, key);
  h.insert(h.end(), config_.auth_headers.begin(), config_.auth_headers.end());
  h.insert(h.end(), config_.extra_headers.begin(), config_.extra_headers.end());
  return h;
}

PaymentResult Engine::submit(const SubmitRequest& req) {
  validate(req);
  const RetryPolicy& policy = config_.retry;
  PaymentResult r;
  r.order_id = req.order_id;
  // One key for the whole payment: every attempt carries the same one.
  const std::string own = identity_key(req);
  r.idempotency_key = own.empty() ? d_.keys.new_key() : own;
  if (own.empty() && req.idempotency_key.empty()) check_key(r.idempotency_key);
  // The exact bytes of every attempt: the caller's, or with the key field
  // written in when the profile carries the key in the body and it is absent.
  std::string keyed_body;
  std::string_view body = req.body;
  if (profile_.identity.mode == IdentityMode::body) {
    JsonPtr j(cJSON_ParseWithLength(req.body.data(), req.body.size()));
    if (json_path_strings(j.get(), profile_.identity.name).empty()) {
      keyed_body = body_with_key(req.body, top_level_member(profile_.identity.name), r.idempotency_key);
      body = keyed_body;
    }
  }

  const std::string path = path_for(req);
  const std::string url = config_.base_url + path;
  const Headers headers = base_headers(r.idempotency_key);

  const int64_t started = d_.clock.now_ms();
  const int64_t budget_ms = req.deadline_ms > 0 ? std::min(req.deadline_ms, policy.deadline_ms) : policy.deadline_ms;
  const int64_t deadline = started + budget_ms;
  // Over all attempts so far, this run's and those of earlier runs.
  bool may_have_processed = req.prior_may_have_processed;

  auto finish = [&](Outcome o, const std::string& why) {
    r.outcome = o;
    // The provider's words may carry anything; results never hold secrets.
    r.error = redact(why, secrets_);
    if (o == Outcome::succeeded || (o == Outcome::failed && r.http_status != 0))
      r.delivery = Delivery::delivered;
    else if (o == Outcome::failed)
      r.delivery = Delivery::not_sent;  // refused locally (certificate): nothing left this host
    else
      r.delivery = may_have_processed ? Delivery::maybe_processed : Delivery::not_sent;
    r.elapsed_ms = d_.clock.now_ms() - started;
    d_.stats.on_outcome(o);
    d_.log.outcome(r);
    return r;
  };

  const unsigned first = std::max(1u, req.first_attempt);
  for (unsigned n = first;; ++n) {
    const int64_t now = d_.clock.now_ms();
    const int64_t remaining = deadline - now;
    if (remaining < policy.min_attempt_ms) return finish(Outcome::unknown, "deadline");

    AttemptRecord a;
    a.number = n;
    a.started_unix_ms = d_.clock.unix_ms();
    Headers extra;
    if (hook_) {
      const std::string key_header = profile_.identity.mode == IdentityMode::header ? profile_.identity.name : "";
      const AttemptView view{url, path, r.order_id, r.idempotency_key, key_header, body, n, a.started_unix_ms};
      std::string why = hook_(view, extra);
      if (!why.empty()) {
        // Nothing of this payment can have reached the provider: a failed
        // call. Otherwise the payment may exist and must be reported.
        if (!may_have_processed) throw Error(Errc::hook, "request hook: " + why);
        return finish(Outcome::unknown, "request hook failed: " + why);
      }
    }
    // The hook (a signer, say) took time too: measure what is left after it.
    const int64_t left = deadline - d_.clock.now_ms();
    if (left < policy.min_attempt_ms) return finish(Outcome::unknown, "deadline");

    HttpRequest http;
    http.url = url;
    http.headers = headers;
    http.headers.insert(http.headers.end(), extra.begin(), extra.end());
    http.body = body;
    // The last attempt's timeout shrinks to what is left of the deadline.
    http.timeout_ms = std::min(policy.attempt_timeout_ms, left);
    http.connect_timeout_ms = std::min(policy.connect_timeout_ms, http.timeout_ms);

    d_.stats.on_attempt();
    const TransportResult t = d_.transport.post(http);
    const Classification c = classify(profile_, t);

    a.elapsed_ms = t.elapsed_ms;
    a.http_status = t.failure == TransportFailure::none ? t.response.status : 0;
    if (t.failure != TransportFailure::none) a.transport_error = transport_failure_name(t.failure);
    a.verdict = verdict_name(c.verdict);
    a.reason = c.reason;
    a.may_have_processed = c.may_have_processed;
    a.reused_connection = t.reused_connection;
    if (t.failure == TransportFailure::replay_blocked) d_.stats.on_replay_blocked();
    // The result's status and body are those of the latest attempt: a
    // transport failure after a 503 is not "503".
    r.http_status = 0;
    r.body.clear();
    if (t.failure == TransportFailure::none) {
      a.provider_request_id = first_header(t.response, profile_.request_id_headers);
      if (!profile_.replay_header.empty())
        if (const std::string* v = t.response.header(profile_.replay_header)) a.replayed = (*v == "true");
      r.http_status = t.response.status;
      r.body = t.response.body;
    }
    const bool earlier_may_have_processed = may_have_processed;
    may_have_processed = may_have_processed || c.may_have_processed;

    auto record = [&]() {
      d_.log.attempt(r, a);
      r.attempts.push_back(a);
    };

    switch (c.verdict) {
      case Verdict::success:
        record();
        read_provider_fields(profile_, r.body, r);
        d_.budget.on_success();
        return finish(Outcome::succeeded, {});
      case Verdict::fail: {
        record();
        // A final 4xx proves "no charge" only for this request. If an earlier
        // attempt may have been processed, the answer must come from the
        // provider's replay of that attempt; otherwise a layer in front of
        // the idempotency store (auth, gateway) may be speaking.
        const std::string detail = c.provider_code.empty() ? c.reason : c.reason + ": " + c.provider_code;
        if (earlier_may_have_processed && !a.replayed)
          return finish(Outcome::unknown, "final answer after a possibly processed attempt (" + detail + ")");
        return finish(Outcome::failed, detail);
      }
      case Verdict::mismatch:
      {
        record();
        const std::string msg = "the provider says idempotency key " + r.idempotency_key +
                                " was first used with other parameters";
        d_.log.note(kLogError, "mismatch", msg + " (order " + r.order_id + ")");
        throw Error(Errc::mismatch, msg);
      }
      case Verdict::query:
        record();
        return finish(Outcome::unknown, "provider error needs a query (" + c.reason + ")");
      case Verdict::retry:
      case Verdict::retry_after_backoff:
      case Verdict::in_progress:  // the provider is still running the first request: wait, same key
        break;
    }

    // Retryable. Decide whether, and how long to wait.
    if (static_cast<int>(n - first + 1) >= policy.max_attempts) {
      record();
      return finish(Outcome::unknown, "attempts_exhausted (" + c.reason + ")");
    }
    int64_t delay = backoff_delay_ms(n - first, policy.backoff_base_ms, policy.backoff_cap_ms, d_.jitter);
    std::string source = "backoff";
    if (t.failure == TransportFailure::none) {
      if (const std::string* ra = t.response.header("Retry-After")) {
        if (auto wait = parse_retry_after_ms(*ra, d_.clock.unix_ms())) {
          // The server's wish is a floor; if honouring it would pass the
          // deadline, stop now rather than hammer it early.
          if (d_.clock.now_ms() + *wait > deadline) {
            record();
            return finish(Outcome::unknown, "retry_after_beyond_deadline");
          }
          const int64_t floor = std::min(*wait, policy.retry_after_max_ms);
          if (floor > delay) {
            delay = floor;
            source = "retry_after";
          }
        }
      }
    }
    if (d_.clock.now_ms() + delay + policy.min_attempt_ms > deadline) {
      record();
      return finish(Outcome::unknown, "deadline (" + c.reason + ")");
    }
    if (!d_.budget.try_spend()) {
      record();
      d_.stats.on_budget_exhausted();
      return finish(Outcome::unknown, "retry_budget_exhausted (" + c.reason + ")");
    }
    a.delay_ms = delay;
    a.delay_source = source;
    record();
    if (req.before_retry && !req.before_retry(a)) {
      // Another worker took the payment over: it alone may send now.
      return finish(Outcome::in_progress, "lease lost to another worker");
    }
    d_.stats.on_retry(c.reason);
    d_.sleeper.sleep_ms(delay);
  }
}

}  // namespace payretry
