#include "engine.hpp"

#include <cJSON.h>
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "answer_names.hpp"
#include "error.hpp"
#include "form_encoding.hpp"
#include "json_path.hpp"
#include "json_util.hpp"
#include "money_reading.hpp"
#include "path_template.hpp"
#include "redact.hpp"
#include "retry_decision.hpp"
#include "unauthorized_rule.hpp"
#include "validate.hpp"

namespace payretry {
namespace {

// Reads the provider's payment id and status word from a response body.
// What a provider echoes may hold anything (a card number as an "id", a
// token): redacted like every other string that reaches a result, a log or
// the ledger. An answer that is not a success is read only for the id of the payment it
// names (response.error_id_path), kept for a lookup by id.
// `body` is the parsed response body (null: none, or not JSON).
//
// The money state is read from the same answer (money_reading.hpp): a
// success's words, or a refusal's (Stripe names the PaymentIntent a decline
// left payable). finish() keeps it only for an answer that decided the
// outcome.
void read_provider_fields(const Profile& p, const cJSON* body, bool success, PaymentResult& r,
                          const std::vector<std::string>& secrets) {
  r.money_state = money_in_create(p.money, body, success);
  if (!success && p.error_id_path.empty()) return;
  if (!body) return;
  // Each value read once and kept as read (already valid UTF-8) unless it
  // holds something to hide.
  auto shown = [&](std::string read) {
    std::optional<std::string> hidden = redact_if_needed(read, secrets);
    return hidden ? std::move(*hidden) : std::move(read);
  };
  std::optional<std::string> id = json_path_first_string(body, success ? p.id_path : p.error_id_path);
  if (id && !id->empty()) {
    std::optional<std::string> hidden = redact_identifier_if_needed(*id, secrets);
    r.provider_payment_id = hidden ? std::move(*hidden) : std::move(*id);
  }
  if (!success) return;
  std::optional<std::string> status = json_path_first_string(body, p.status_path);
  if (status) r.provider_status = shown(std::move(*status));
}

// True when the response says it replays an earlier answer to this key. A
// replay is what lets a final 4xx after a possibly processed attempt count
// as a decline, so every copy of the header must say so: duplicated,
// contradictory copies (a proxy adding its own) are no proof.
bool says_replayed(const HttpResponse& response, const std::string& header) {
  bool seen = false;
  for (const auto& [name, value] : response.headers) {
    if (strcasecmp(name.c_str(), header.c_str()) != 0) continue;
    if (value != "true") return false;
    seen = true;
  }
  return seen;
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

// Whether every member on the simple path `ref` ($.a.b) is named at most
// once in its object.
bool reference_named_once(const cJSON* doc, const std::string& ref) {
  if (ref.rfind("$.", 0) != 0) return true;
  const cJSON* at = doc;
  size_t from = 2;
  while (at && cJSON_IsObject(at) && from <= ref.size()) {
    const size_t dot = ref.find('.', from);
    const std::string name = ref.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    if (name.find('[') != std::string::npos) return true;  // an index: not a simple path
    int seen = 0;
    const cJSON* next = nullptr;
    for (const cJSON* c = at->child; c; c = c->next)
      if (c->string && name == c->string && ++seen == 1) next = c;
    if (seen > 1) return false;
    if (dot == std::string::npos) return true;
    at = next;
    from = dot + 1;
  }
  return true;
}

// "" when the form `fields` name the reference `ref` ($.a.b, as a[b]) at
// most once and as `order_id`; else why not.
std::string form_reference_other(const std::string& fields, const std::string& ref, std::string_view order_id) {
  if (ref.rfind("$.", 0) != 0 || ref.find('[') != std::string::npos) return {};
  std::string name;
  size_t from = 2;
  for (bool first = true;; first = false) {
    const size_t dot = ref.find('.', from);
    const std::string part = ref.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    name += first ? part : "[" + part + "]";
    if (dot == std::string::npos) break;
    from = dot + 1;
  }
  std::vector<std::pair<std::string, std::string>> decoded;
  if (!form_decode(fields, decoded)) return {};  // not form fields: nothing the provider reads as one
  int seen = 0;
  for (const auto& [k, v] : decoded) {
    if (k != name) continue;
    if (++seen > 1) return "body names " + name + " more than once";
    if (v != order_id) return "body " + name + " must equal the order id";
  }
  return {};
}

}  // namespace

Engine::Engine(const Config& config, const Profile& profile, EngineDeps deps, RequestHook hook, Authenticator* auth)
    : config_(config), profile_(profile), d_(deps), hook_(std::move(hook)), auth_(auth), secrets_(config.secrets()) {}

void Engine::validate(const SubmitRequest& r, JsonPtr* parsed) const {
  if (std::string e = check_order_id(r.order_id); !e.empty()) throw Error(Errc::PAY_EINVALID, e);
  if (r.body.empty()) throw Error(Errc::PAY_EINVALID, "body is empty");
  if (r.body.size() > config_.max_body_bytes)
    throw Error(Errc::PAY_ETOOBIG, "body is " + std::to_string(r.body.size()) + " bytes; max_body_bytes is " +
                                   std::to_string(config_.max_body_bytes));
  if (!r.idempotency_key.empty()) check_key(r.idempotency_key);
  // The checks below that read the body share one parse of it.
  JsonPtr doc;
  bool doc_parsed = false;
  auto body_json = [&]() -> const cJSON* {
    if (!doc_parsed) {
      doc.reset(cJSON_ParseWithLength(r.body.data(), r.body.size()));
      doc_parsed = true;
    }
    return doc.get();
  };
  if (profile_.identity.mode != IdentityMode::header) {
    const cJSON* j = body_json();
    if (!j || !cJSON_IsObject(j))
      throw Error(Errc::PAY_EINVALID, "body must be a JSON object: profile " + profile_.name + " carries the key inside it");
  }
  if (profile_.encoding == Encoding::form_flat) {
    const cJSON* j = body_json();
    if (!j || !cJSON_IsObject(j))
      throw Error(Errc::PAY_EINVALID, "body must be a JSON object (payretry sends each member as a gateway form field): "
                                 "profile " + profile_.name + " sends the gateway's form");
  }
  if (profile_.auth.scheme == AuthScheme::alipay_rsa2 && auth_) {
    // The built-in Alipay signer owns the gateway's common parameters and
    // takes the method from the path: a body that sets one, or a path that
    // names none, could never be signed, on any attempt.
    if (path_for(r).find("method=") == std::string::npos)
      throw Error(Errc::PAY_EINVALID, "the path must name the gateway method (e.g. /gateway.do?method=alipay.trade.pay)");
    const cJSON* j = body_json();
    for (const char* common : {"app_id", "method", "format", "charset", "sign_type", "sign", "timestamp", "version"})
      if (cJSON_GetObjectItemCaseSensitive(j, common))
        throw Error(Errc::PAY_EINVALID, std::string("body must not set the gateway parameter ") + common +
                                       ": auth.alipay writes it (put the trade in biz_content)");
  }
  if (profile_.encoding == Encoding::form && !looks_form_encoded(r.body)) {
    const cJSON* j = body_json();
    if (!j || !cJSON_IsObject(j))
      throw Error(Errc::PAY_EINVALID, "body must be a JSON object (payretry encodes it as form fields) or form fields "
                                 "(name=value&...): profile " + profile_.name + " sends form bodies");
  }
  if (const std::string& ref = profile_.lookup.reference_path; !ref.empty()) {
    // The lookup searches by this reference: a payment made under another
    // one would read as "not found", and could be sent a second time.
    const cJSON* j = body_json();
    if (!j || !cJSON_IsObject(j))
      throw Error(Errc::PAY_EINVALID, "body must be a JSON object: profile " + profile_.name + " looks payments up by " + ref);
    const std::optional<std::string> found = json_path_first_string(j, ref);
    if (found && *found != r.order_id)
      throw Error(Errc::PAY_EINVALID, "body " + ref + " must equal the order id: profile " + profile_.name +
                                     " looks payments up by it");
    if (!found && top_level_member(ref).find_first_of(".[") != std::string::npos)
      throw Error(Errc::PAY_EINVALID, "body must carry the order id at " + ref + ": profile " + profile_.name +
                                     " looks payments up by it");
  }
  if (const std::string& ref = profile_.webhook.reference_path; !ref.empty()) {
    // The provider's notifications name the payment's order by what the body
    // carries here: another order's id would have this payment's events
    // settle that order. (Absent is allowed: the events then name the
    // payment by the provider's id only.) Checked in what the provider will
    // decode: a member named twice (a parser may keep either copy), and,
    // for a form profile, the form fields that go out (a flat
    // "metadata[order_id]" key, or fields written by hand).
    const cJSON* j = body_json();
    if (j && !reference_named_once(j, ref))
      throw Error(Errc::PAY_EINVALID, "body names " + ref + " more than once: profile " + profile_.name +
                                          "'s notifications name the order by it");
    if (const std::optional<std::string> found = j ? json_path_first_string(j, ref) : std::nullopt;
        found && *found != r.order_id)
      throw Error(Errc::PAY_EINVALID, "body " + ref + " must equal the order id: profile " + profile_.name +
                                          "'s notifications name the order by it");
    if (profile_.encoding == Encoding::form) {
      const std::string fields = j && cJSON_IsObject(j) ? form_encode_json(j) : std::string(r.body);
      if (std::string why = form_reference_other(fields, ref, r.order_id); !why.empty())
        throw Error(Errc::PAY_EINVALID, why + ": profile " + profile_.name + "'s notifications name the order by it");
    }
  }
  if (!r.path.empty())
    if (std::string e = check_path(r.path); !e.empty()) throw Error(Errc::PAY_EINVALID, e);
  // A profile without a create path (generic) takes one from the config or
  // from each submit; with neither there is nowhere to send the payment, and
  // it is refused before anything is recorded or sent.
  if (r.path.empty() && config_.create_path.empty() && profile_.create_path.empty())
    throw Error(Errc::PAY_ECONFIG, "create_path: profile " + profile_.name +
                                       " has none; set create_path in the config or give a path with the submit "
                                       "(nothing sent, nothing recorded)");
  check_submission_headers(r);
  if (r.deadline_ms < 0) throw Error(Errc::PAY_EINVALID, "deadline_ms is negative");
  if (r.deadline_ms > 0 && r.deadline_ms < config_.retry.min_attempt_ms)
    throw Error(Errc::PAY_EINVALID, "deadline_ms is below retry.min_attempt_ms");
  if (parsed) *parsed = std::move(doc);
}

void Engine::check_submission_headers(const SubmitRequest& r) const {
  if (r.headers.size() > kMaxSubmissionHeaders)
    throw Error(Errc::PAY_EINVALID, std::to_string(r.headers.size()) + " submission headers; at most " +
                                        std::to_string(kMaxSubmissionHeaders));
  const std::string key_header = profile_.identity.mode == IdentityMode::header ? profile_.identity.name : "";
  auto same = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
  };
  for (std::size_t i = 0; i < r.headers.size(); ++i) {
    const auto& [name, value] = r.headers[i];
    if (std::string e = check_header_name(name); !e.empty()) throw Error(Errc::PAY_EINVALID, e);
    for (std::size_t j = 0; j < i; ++j)
      if (same(name, r.headers[j].first)) throw Error(Errc::PAY_EINVALID, "header " + name + " is given twice");
    if (std::string e = check_header_value(value); !e.empty())
      throw Error(Errc::PAY_EINVALID, "header " + name + ": " + e);
    if (std::string e = check_not_reserved(name, key_header); !e.empty()) throw Error(Errc::PAY_EINVALID, e);
    // A second copy of a header payretry or its signer sets (Authorization,
    // Accept, User-Agent, WeChat Pay's Wechatpay-Serial, traceparent) would
    // leave the provider to pick one; the config's own headers are the
    // client's, for every payment.
    if (same(name, "authorization") || same(name, "traceparent") || same(name, "accept") ||
        same(name, "user-agent") || same(name, "wechatpay-serial"))
      throw Error(Errc::PAY_EINVALID, "header " + name + " is set by payretry itself" +
                                          (same(name, "traceparent") ? " (use the traceparent option)" : ""));
    for (const Headers* set : {&config_.auth_headers, &config_.extra_headers})
      for (const auto& h : *set)
        if (same(name, h.first)) throw Error(Errc::PAY_EINVALID, "header " + name + " is set by the client's config");
    // A payment's own headers are kept in its ledger row (they scope the
    // provider's store, so its lookups and re-sends carry them), and the
    // ledger never holds a credential or card data.
    if (header_carries_secret(name, value))
      throw Error(Errc::PAY_EINVALID, "header " + name +
                                          " looks like it carries a credential or card data: a payment's own "
                                          "headers are kept in the ledger, which holds no secret (put credentials "
                                          "in the config's auth, or add them in a request hook)");
  }
  if (!r.traceparent.empty())
    if (std::string e = check_traceparent(r.traceparent); !e.empty()) throw Error(Errc::PAY_EINVALID, e);
}

void Engine::check_key(const std::string& key) const {
  const Identity& id = profile_.identity;
  if (std::string e = check_idempotency_key(key, id.max_length); !e.empty()) throw Error(Errc::PAY_EKEY, e);
  if (key.size() < id.min_length)
    throw Error(Errc::PAY_EKEY, "idempotency key is shorter than " + std::to_string(id.min_length) + " characters (" +
                               profile_.name + ")");
  if (!id.charset.empty())
    for (char c : key)
      if (!std::isalnum(static_cast<unsigned char>(c)) && id.charset.find(c) == std::string::npos)
        throw Error(Errc::PAY_EKEY, "idempotency key may hold only letters, digits and \"" + id.charset + "\" (" +
                                   profile_.name + ")");
}

std::string Engine::identity_key(const SubmitRequest& r, const cJSON* parsed) const {
  const Identity& id = profile_.identity;
  if (id.mode == IdentityMode::header) return r.idempotency_key;
  JsonPtr own;
  if (!parsed) {
    own.reset(cJSON_ParseWithLength(r.body.data(), r.body.size()));
    parsed = own.get();
  }
  std::optional<std::string> found = json_path_first_string(parsed, id.name);
  if (id.mode == IdentityMode::reference) {
    // The merchant reference is the identity, forever: it must be the order.
    if (!found || *found != r.order_id)
      throw Error(Errc::PAY_EINVALID, "body " + id.name + " must equal the order id (profile " + profile_.name + ")");
    if (!r.idempotency_key.empty() && r.idempotency_key != r.order_id)
      throw Error(Errc::PAY_EKEY, "profile " + profile_.name + " uses the order id as the key; give no other key");
    check_key(r.order_id);
    return r.order_id;
  }
  if (found) {
    if (!r.idempotency_key.empty() && r.idempotency_key != *found)
      throw Error(Errc::PAY_EKEY, "body " + id.name + " differs from the idempotency key given");
    check_key(*found);
    return std::move(*found);
  }
  return r.idempotency_key;
}

std::string Engine::path_for(const SubmitRequest& r) const {
  if (!r.path.empty()) return r.path;
  // The create path may name the merchant or the order (a partner API's
  // /v3/pay/partner/..., /orders/{order_id}/pay).
  return fill_template(!config_.create_path.empty() ? config_.create_path : profile_.create_path,
                       {{"order_id", r.order_id}, {"merchant_id", config_.merchant_id}}, false);
}

Headers Engine::base_headers(const std::string& key, bool has_body) const {
  Headers h;
  h.reserve(6 + config_.auth_headers.size() + config_.extra_headers.size());
  // An empty form is still a form (Stripe's capture of the whole, as its
  // SDKs send it); an empty JSON body is no body at all.
  if (has_body || profile_.encoding != Encoding::json) h.emplace_back("Content-Type", content_type_of(profile_.encoding));
  h.emplace_back("Accept", "application/json");
  h.emplace_back("User-Agent", "payretry/" PAYRETRY_VERSION_STRING);
  if (profile_.identity.mode == IdentityMode::header) h.emplace_back(profile_.identity.name, key);
  h.insert(h.end(), config_.auth_headers.begin(), config_.auth_headers.end());
  h.insert(h.end(), config_.extra_headers.begin(), config_.extra_headers.end());
  return h;
}

PaymentResult Engine::submit(const SubmitRequest& req) {
  AttemptRun run(*this, req);
  for (AttemptRun::Step s = run.begin();;) {
    switch (s.kind) {
      case AttemptRun::Kind::send: s = run.sent(d_.transport.post(*s.request)); break;
      case AttemptRun::Kind::record: s = run.recorded(req.before_retry ? req.before_retry(*s.attempt) : Recorded{}); break;
      case AttemptRun::Kind::sleep:
        d_.sleeper.sleep_ms(s.delay_ms);
        s = run.woke();
        break;
      case AttemptRun::Kind::done: return std::move(run.result());
    }
  }
}

AttemptRun::AttemptRun(Engine& engine, const SubmitRequest& req) : e_(engine), policy_(engine.config_.retry) {
  JsonPtr validated;  // the body as validate() parsed it here, if it did
  if (!req.from_ledger_flow) {
    e_.validate(req, &validated);
  } else if (!req.idempotency_key.empty()) {
    e_.check_key(req.idempotency_key);
  }
  r_.order_id = req.order_id;
  // `doc` is body_ parsed, when needed: the request's own parse while body_
  // is still its body, else one made here, dropped whenever body_ changes.
  const cJSON* doc = req.parsed_body ? req.parsed_body : validated.get();
  // One key for the whole payment: every attempt carries the same one.
  std::string own = e_.identity_key(req, doc);
  const bool generated = own.empty();
  r_.idempotency_key = generated ? e_.d_.keys.new_key() : std::move(own);
  if (generated && req.idempotency_key.empty()) e_.check_key(r_.idempotency_key);
  // The exact bytes of every attempt: the caller's, or with the key field
  // written in when the profile carries the key in the body and it is absent.
  body_ = req.body;
  JsonPtr own_doc;
  auto parsed = [&]() -> const cJSON* {
    if (!doc) {
      own_doc.reset(cJSON_ParseWithLength(body_.data(), body_.size()));
      doc = own_doc.get();
    }
    return doc;
  };
  auto rewrite = [&](std::string bytes) {
    doc = nullptr;
    own_doc.reset();
    keyed_body_ = std::move(bytes);
    body_ = keyed_body_;
  };
  const Profile& profile = e_.profile_;
  if (profile.identity.mode == IdentityMode::body) {
    if (!json_path_first_string(parsed(), profile.identity.name))
      rewrite(body_with_key(body_, top_level_member(profile.identity.name), r_.idempotency_key));
  }
  // Likewise the reference a lookup searches by (validate() checked that a
  // present one equals the order id, and that an absent one is top-level).
  if (const std::string& ref = profile.lookup.reference_path; !ref.empty()) {
    if (!json_path_first_string(parsed(), ref)) rewrite(body_with_key(body_, top_level_member(ref), r_.order_id));
  }
  // A form profile gets the finished document as form fields, encoded once
  // here (the same document always gives the same bytes); fields the caller
  // wrote by hand go as given.
  if (profile.encoding == Encoding::form && !looks_form_encoded(body_)) {
    rewrite(form_encode_json(parsed()));
  } else if (profile.encoding == Encoding::form_flat) {
    rewrite(form_encode_flat(body_));
  }
  path_ = e_.path_for(req);
  url_ = e_.config_.base_url + path_;
  Headers& headers = http_.headers;
  headers = e_.base_headers(r_.idempotency_key, !body_.empty());
  headers.insert(headers.end(), req.headers.begin(), req.headers.end());
  if (!req.traceparent.empty()) headers.emplace_back("traceparent", req.traceparent);
  base_header_count_ = headers.size();
  r_.traceparent = req.traceparent;
  started_ = e_.d_.clock.now_ms();
  const int64_t budget_ms = req.deadline_ms > 0 ? std::min(req.deadline_ms, policy_.deadline_ms) : policy_.deadline_ms;
  deadline_ = started_ + budget_ms;
  lease_until_ = req.lease_until_unix;
  http_.body = body_;
  http_.claim = req.claim;
  // The last word before the first byte leaves: the transport asks this once
  // the connection is ready, however long the request waited for it.
  http_.may_start = [this]() -> std::string {
    Clock& c = e_.d_.clock;
    if (c.now_ms() >= deadline_) return "the payment's deadline passed before the request could be sent";
    // An attempt needs time for its answer, as at any attempt's start.
    if (deadline_ - c.now_ms() < policy_.min_attempt_ms)
      return "too little of the payment's deadline was left when its connection was ready";
    if (lease_until_ > 0 && c.unix_ms() >= lease_until_) return "the payment's lease ended before the request could be sent";
    return {};
  };
  // Over all attempts so far, this run's and those of earlier runs.
  may_have_processed_ = req.prior_may_have_processed;
  cleared_by_lookup_ = req.prior_cleared_by_lookup;
  first_ = std::max(1u, req.first_attempt);
  nonblocking_auth_ = req.on_engine_thread;
}

AttemptRun::Step AttemptRun::finish(Outcome o, const std::string& why) {
  r_.outcome = o;
  // Where the money is, from the answer that decided (read_provider_fields):
  // an answer that decided nothing says nothing about the money, and a
  // refusal whose words the profile does not map moved none.
  if (o == Outcome::unknown || o == Outcome::in_progress) r_.money_state = MoneyState::unknown;
  else if (o == Outcome::failed) r_.money_state = money_of_refusal(r_.money_state);
  // The provider's words may carry anything; results never hold secrets.
  r_.error = redact(why, e_.secrets_);
  if (o == Outcome::succeeded || (o == Outcome::failed && r_.http_status != 0))
    r_.delivery = Delivery::delivered;
  else if (o == Outcome::failed)
    r_.delivery = Delivery::not_sent;  // refused locally (certificate): nothing left this host
  else
    r_.delivery = may_have_processed_ ? Delivery::maybe_processed : Delivery::not_sent;
  r_.elapsed_ms = e_.d_.clock.now_ms() - started_;
  e_.d_.stats.on_payment(o, r_.delivery, r_.elapsed_ms);
  e_.d_.log.outcome(r_);
  return Step{};
}

// a_'s texts move into the result; what follows reads only its numbers.
void AttemptRun::record_attempt() {
  e_.d_.log.attempt(r_, a_);
  r_.attempts.push_back(std::move(a_));
}

AttemptRun::Step AttemptRun::begin() {
  n_ = first_;
  return attempt();
}

AttemptRun::Step AttemptRun::woke() {
  if (awaiting_credential_) {
    // The same attempt, still waiting for its credential.
    awaiting_credential_ = false;
    Clock& clock = e_.d_.clock;
    if (lease_until_ > 0 && clock.unix_ms() >= lease_until_)
      return finish(Outcome::unknown, "lease_ended: another worker may hold this payment now");
    if (deadline_ - clock.now_ms() < policy_.min_attempt_ms)
      return finish(Outcome::unknown, "deadline: no credential could be had in time");
    return authorize_and_send();
  }
  ++n_;
  return attempt();
}

AttemptRun::Step AttemptRun::attempt() {
  Clock& clock = e_.d_.clock;
  if (deadline_ - clock.now_ms() < policy_.min_attempt_ms) return finish(Outcome::unknown, "deadline");
  if (lease_until_ > 0 && clock.unix_ms() >= lease_until_)
    return finish(Outcome::unknown, "lease_ended: another worker may hold this payment now");

  a_ = AttemptRecord{};
  a_.number = n_;
  a_.started_unix_ms = clock.unix_ms();
  attempt_mono_ = clock.now_ms();
  Headers extra;
  if (e_.hook_) {
    const Profile& profile = e_.profile_;
    const std::string key_header = profile.identity.mode == IdentityMode::header ? profile.identity.name : "";
    const AttemptView view{url_, path_, r_.order_id, r_.idempotency_key, key_header, body_, n_, a_.started_unix_ms, "POST"};
    std::string why = e_.hook_(view, extra);
    // The header a payment names its account with (Stripe-Account): set by
    // the hook, the ledger would not know it, and the payment would read as
    // the platform's own, whose notifications (and only those) settle it.
    const std::string& account_header = profile.webhook.account_header;
    for (const auto& h : extra)
      if (why.empty() && !account_header.empty() && h.first.size() == account_header.size() &&
          strncasecmp(h.first.data(), account_header.data(), account_header.size()) == 0)
        why = "header " + account_header + " names the payment's account: give it as the payment's own header "
              "(pay_submit_options.headers), so that its lookups, re-sends and notifications know the account";
    if (!why.empty()) {
      // Nothing of this payment can have reached the provider: a failed
      // call. Otherwise the payment may exist and must be reported; so
      // must one whose request already left once, answered 401 before the
      // credential was renewed (once a byte left, the call has a result).
      if (!may_have_processed_ && !renewed_credentials_) throw Error(Errc::PAY_EHOOK, "request hook: " + why);
      return finish(Outcome::unknown, "request hook failed: " + why);
    }
  }
  http_.url = url_;
  http_.headers.resize(base_header_count_);  // the previous attempt's hook and signer headers go
  http_.headers.insert(http_.headers.end(), std::make_move_iterator(extra.begin()), std::make_move_iterator(extra.end()));
  hook_header_count_ = http_.headers.size();
  return authorize_and_send();
}

// The authenticator signs last, over exactly what leaves; then the attempt's
// timeouts, from what is left of the deadline once the hook and the signer
// took their time.
AttemptRun::Step AttemptRun::authorize_and_send() {
  Clock& clock = e_.d_.clock;
  int64_t left = deadline_ - clock.now_ms();
  if (left < policy_.min_attempt_ms) return finish(Outcome::unknown, "deadline");
  http_.url = url_;
  http_.headers.resize(hook_header_count_);
  if (e_.auth_) {
    OutgoingRequest out{"POST", e_.config_.base_url, path_, body_, {}};
    std::string why;
    if (nonblocking_auth_) {
      // An engine thread never waits for a credential: every other payment
      // of the engine would wait with it. The fetch runs elsewhere; this
      // payment asks again shortly, its deadline running.
      Authenticator::Readiness ready = Authenticator::Readiness::failed;
      try {
        ready = e_.auth_->authorize_now(out, a_.started_unix_ms, awaiting_credential_since_, why);
      } catch (const std::exception& ex) {
        why = std::string("the request could not be signed: ") + ex.what();
      }
      if (ready == Authenticator::Readiness::pending) {
        if (awaiting_credential_since_ < 0) awaiting_credential_since_ = clock.now_ms();
        awaiting_credential_ = true;
        Step s;
        s.kind = Kind::sleep;
        s.delay_ms = std::clamp<int64_t>(left - policy_.min_attempt_ms, 1, kCredentialPollMs);
        return s;
      }
    } else {
      why = authorize_or_why(*e_.auth_, out, a_.started_unix_ms, left);
    }
    awaiting_credential_since_ = -1;
    if (!why.empty()) {
      // No credential, so no byte of the payment left: an attempt that
      // was never sent, retried like a refused connection.
      TransportResult none;
      none.failure = TransportFailure::no_credentials;
      none.error_text = why;
      e_.d_.log.note(kLogWarn, "no_credentials", "payment " + r_.order_id + ": " + redact(why, e_.secrets_));
      return sent(std::move(none));
    }
    http_.url = out.url();
    http_.headers.insert(http_.headers.end(), out.headers.begin(), out.headers.end());
    left = deadline_ - clock.now_ms();
    if (left < policy_.min_attempt_ms) return finish(Outcome::unknown, "deadline");
  }
  // The last attempt's timeout shrinks to what is left of the deadline.
  http_.timeout_ms = std::min(policy_.attempt_timeout_ms, left);
  http_.connect_timeout_ms = std::min(policy_.connect_timeout_ms, http_.timeout_ms);
  // A request may wait for a free connection until min_attempt_ms before
  // the deadline: the wait sends nothing, so it is not charged to the
  // attempt, and the attempt still ends by the deadline.
  http_.wait_limit_ms = left;
  http_.send_margin_ms = policy_.min_attempt_ms;
  e_.d_.stats.on_attempt();
  Step s;
  s.kind = Kind::send;
  s.request = &http_;
  return s;
}

AttemptRun::Step AttemptRun::sent(TransportResult t) {
  e_.d_.stats.on_connections(t.connections_opened);
  const Profile& profile = e_.profile_;
  Clock& clock = e_.d_.clock;
  Authenticator* auth = e_.auth_;
  // A 401 under a cached credential (an OAuth2 token that expired or was
  // revoked on the way): one fresh credential for one more send. The 401 is
  // an attempt like any other (every request that left is in the result,
  // the history and the log), and the re-send follows the re-send rule.
  if (auth && t.failure == TransportFailure::none && t.response.status == 401 && !renewed_credentials_ &&
      auth->renew_after_unauthorized())
    return unauthorized(t);
  // The answer's body, parsed once for the verdict and the provider's fields.
  JsonPtr answer;
  if (t.failure == TransportFailure::none)
    answer.reset(cJSON_ParseWithLength(t.response.body.data(), t.response.body.size()));
  const Classification c = classify(profile, t, answer.get());
  // A provider that signs its answers: a forged signature means nothing in
  // the answer is the provider's, and a success must carry a good one.
  if (auth && auth->signs_answers() && t.failure == TransportFailure::none) {
    std::string why;
    const AnswerTrust trust = auth->check_answer(t.response, path_, clock.unix_ms(), why);
    if (trust == AnswerTrust::forged || (trust == AnswerTrust::unsigned_ && c.verdict == Verdict::success))
      return untrusted(t.response.status, why);
  }
  // A signature does not say which request an answer is for: a success must
  // name this order, and no answer may name another (a proxy replaying
  // another order's signed answer). Neither a success nor a decline then.
  if (!profile.names_request.empty() && t.failure == TransportFailure::none) {
    // No {amount}: a response's names hold it to nothing (only an
    // operation's lookup names its amount).
    const RequestNames names{r_.order_id, e_.config_.merchant_id, {}, r_.idempotency_key, {}};
    const std::string other =
        answer_names_other(profile.names_request, answer.get(), names, c.verdict == Verdict::success);
    if (!other.empty()) return untrusted(t.response.status, other);
  }

  // From the attempt's start to its answer, waits for a connection included:
  // the recorded end is then the latest moment its bytes can have left
  // (the read-lag grace of a "not found" counts from there).
  a_.elapsed_ms = std::max<int64_t>(t.elapsed_ms, clock.now_ms() - attempt_mono_);
  a_.http_status = t.failure == TransportFailure::none ? t.response.status : 0;
  if (t.failure != TransportFailure::none) a_.transport_error = transport_failure_name(t.failure);
  a_.verdict = verdict_name(c.verdict);
  a_.reason = c.reason;
  a_.may_have_processed = c.may_have_processed;
  a_.reused_connection = t.reused_connection;
  if (t.failure == TransportFailure::replay_blocked) e_.d_.stats.on_replay_blocked();
  e_.d_.stats.on_attempt_answer(a_.verdict, a_.reason, a_.elapsed_ms);
  // The result's status and body are those of the latest attempt: a
  // transport failure after a 503 is not "503".
  r_.http_status = 0;
  r_.body.clear();
  if (t.failure == TransportFailure::none) {
    // Provider bytes end up in JSON (results, the ledger, logs): UTF-8 only.
    a_.provider_request_id = redact(first_header(t.response, profile.request_id_headers), e_.secrets_);
    if (!profile.replay_header.empty()) a_.replayed = says_replayed(t.response, profile.replay_header);
    r_.http_status = t.response.status;
    r_.body = std::move(t.response.body);  // parsed above; nothing below reads the body
    if (c.verdict != Verdict::success) read_provider_fields(profile, answer.get(), false, r_, e_.secrets_);
  }
  const bool earlier_may_have_processed = may_have_processed_;
  may_have_processed_ = may_have_processed_ || c.may_have_processed;

  switch (c.verdict) {
    case Verdict::success:
      read_provider_fields(profile, answer.get(), true, r_, e_.secrets_);
      if (profile.success_requires_id && r_.provider_payment_id.empty()) {
        // Not the answer to a payment the provider made (an error body
        // under a 2xx, a proxy's page): the request went out, so query.
        a_.verdict = verdict_name(Verdict::query);
        a_.reason = "success_without_id";
        a_.may_have_processed = true;
        may_have_processed_ = true;
        record_attempt();
        return finish(Outcome::unknown, "a success answer without the payment's id (" + profile.id_path +
                                            "); settle it by query");
      }
      record_attempt();
      e_.d_.budget.on_success(n_ > first_);  // n_ > first_: this run retried
      return finish(Outcome::succeeded, {});
    case Verdict::fail: {
      record_attempt();
      // A final 4xx proves "no charge" only for this request. If an earlier
      // attempt may have been processed, the answer must come from the
      // provider's replay of that attempt; otherwise a layer in front of
      // the idempotency store (auth, gateway) may be speaking.
      const std::string detail = c.provider_code.empty() ? c.reason : c.reason + ": " + c.provider_code;
      if (earlier_may_have_processed && !a_.replayed)
        return finish(Outcome::unknown, "final answer after a possibly processed attempt (" + detail + ")");
      return finish(Outcome::failed, detail);
    }
    case Verdict::mismatch: {
      record_attempt();
      const std::string msg = "the provider says idempotency key " + r_.idempotency_key +
                              " was first used with other parameters";
      e_.d_.log.note(kLogError, "mismatch", msg + " (order " + r_.order_id + ")");
      throw Error(Errc::PAY_EMISMATCH, msg);
    }
    case Verdict::query:
      record_attempt();
      return finish(Outcome::unknown, "provider error needs a query (" + c.reason + ")");
    case Verdict::retry:
    case Verdict::retry_after_backoff:
    case Verdict::in_progress:  // the provider is still running the first request: wait, same key
      break;
  }

  // Retryable. Decide whether, and how long to wait.
  const RetryDecision next = decide_retry(policy_, n_ - first_ + 1, t, clock.now_ms(), clock.unix_ms(), deadline_,
                                          e_.d_.jitter, e_.d_.budget);
  if (!next.retry) {
    record_attempt();
    if (next.stop == "retry_budget_exhausted") e_.d_.stats.on_budget_exhausted();
    if (next.stop == "retry_after_beyond_deadline") return finish(Outcome::unknown, next.stop);
    return finish(Outcome::unknown, next.stop + " (" + c.reason + ")");
  }
  a_.delay_ms = next.delay_ms;
  a_.delay_source = next.delay_source;
  record_attempt();
  retry_reason_ = c.reason;
  Step s;
  s.kind = Kind::record;
  s.attempt = &r_.attempts.back();
  s.delay_ms = next.delay_ms;
  return s;
}

AttemptRun::Step AttemptRun::unauthorized(const TransportResult& t) {
  const Profile& profile = e_.profile_;
  Clock& clock = e_.d_.clock;
  renewed_credentials_ = true;
  a_.elapsed_ms = std::max<int64_t>(t.elapsed_ms, clock.now_ms() - attempt_mono_);
  a_.http_status = 401;
  a_.reason = "unauthorized_credential_renewed";
  const bool attempts_left = n_ - first_ + 1 < static_cast<unsigned>(policy_.max_attempts);
  // A 401 from a gateway in front of the provider says nothing of the key:
  // where only a timed "not found" cleared earlier sends, a FAILED here
  // would rest on the grace alone (D41), so the row stays UNKNOWN, not sent.
  const UnauthorizedReading rule =
      read_unauthorized(profile, may_have_processed_ || cleared_by_lookup_, attempts_left);
  a_.may_have_processed = rule.may_have_processed;
  may_have_processed_ = may_have_processed_ || a_.may_have_processed;
  a_.verdict = verdict_name(rule.resend_safe ? Verdict::retry : Verdict::query);
  a_.provider_request_id = redact(first_header(t.response, profile.request_id_headers), e_.secrets_);
  e_.d_.stats.on_attempt_answer(a_.verdict, a_.reason, a_.elapsed_ms);
  e_.d_.log.note(kLogInfo, "credential_renewed", "payment " + r_.order_id + ": 401 answered; credential renewed");
  r_.http_status = 401;
  r_.body.clear();
  switch (rule.then) {
    case UnauthorizedReading::Then::failed:
      record_attempt();
      return finish(Outcome::failed, "http_401: the credential was refused");
    case UnauthorizedReading::Then::unknown:
      record_attempt();
      if (!attempts_left && rule.resend_safe)
        return finish(Outcome::unknown, "HTTP 401 on the last attempt, after a send that may have been processed");
      return finish(Outcome::unknown, "HTTP 401 after the request was sent: provider " + profile.name +
                                          " may have processed it before refusing the credential, and a same-key "
                                          "re-send may run it again (replay " + replay_kind_name(profile.replay) +
                                          "): settle it by query");
    case UnauthorizedReading::Then::resend:
      break;
  }
  // Sent again at once with the fresh credential, once recorded.
  a_.delay_ms = 0;
  a_.delay_source = "credential_renewed";
  record_attempt();
  retry_reason_ = a_.reason;
  Step s;
  s.kind = Kind::record;
  s.attempt = &r_.attempts.back();
  s.delay_ms = 0;
  return s;
}

AttemptRun::Step AttemptRun::untrusted(int http_status, const std::string& why) {
  a_.http_status = http_status;
  a_.elapsed_ms = e_.d_.clock.now_ms() - attempt_mono_;
  a_.verdict = verdict_name(Verdict::query);
  a_.reason = "answer_not_verified";
  // The request went out: whatever came back, it may have been processed.
  a_.may_have_processed = true;
  may_have_processed_ = true;
  r_.http_status = 0;
  r_.body.clear();
  record_attempt();
  e_.d_.log.note(kLogError, "answer_not_verified", "payment " + r_.order_id + ": " + why);
  return finish(Outcome::unknown, "the provider's answer could not be verified (" + why + "); settle it by query");
}

AttemptRun::Step AttemptRun::recorded(const Recorded& how) {
  // Another worker took the payment over: it alone may send now.
  if (how.kind == Recorded::lease_lost) return finish(Outcome::in_progress, "lease lost to another worker");
  if (how.kind == Recorded::store_failed) {
    // An attempt went out and the ledger cannot hold it: stop here and say
    // so. The payment may exist; the caller must not read this as "nothing
    // was sent", and the row (still IN_FLIGHT) resumes once its lease ends.
    r_.ledger_error = redact(how.why, e_.secrets_);
    return finish(Outcome::unknown, "the ledger could not record attempt " + std::to_string(a_.number) +
                                        "; this result is not durably recorded");
  }
  r_.attempts.back().recorded = true;
  e_.d_.stats.on_retry(retry_reason_);
  Step s;
  s.kind = Kind::sleep;
  s.delay_ms = a_.delay_ms;
  return s;
}

}  // namespace payretry
