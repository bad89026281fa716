// Provider profiles as data (docs/profiles.md): the JSON schema, its validation and
// the built-in profiles, which are src/profiles/builtin/*.json compiled into the
// library (cmake/embed_profiles.cmake writes builtin_profiles.cpp).
//
// Every error names the field it is about, as a path from "profile"
// ("profile.classify[2].when.status: ..."), because a profile is written by
// hand and a vague message costs a reader far more than a precise one.
#include <cJSON.h>

#include <cctype>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>

#include "json_error.hpp"
#include "json_path.hpp"
#include "json_util.hpp"
#include "profile.hpp"
#include "profile_fields.hpp"
#include "profile_money.hpp"
#include "profile_operations.hpp"
#include "profile_parts.hpp"
#include "profile_webhook.hpp"
#include "spelling.hpp"

namespace payretry {

// Defined in the generated builtin_profiles.cpp: one entry per
// src/profiles/builtin/<name>.json, sorted by name.
namespace builtin_json {
struct Entry {
  const char* name;
  const char* text;
};
extern const Entry entries[];
extern const std::size_t count;
}  // namespace builtin_json

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::success: return "success";
    case Verdict::retry: return "retry";
    case Verdict::retry_after_backoff: return "retry_after_backoff";
    case Verdict::query: return "query";
    case Verdict::fail: return "fail";
    case Verdict::mismatch: return "mismatch";
    case Verdict::in_progress: return "in_progress";
  }
  return "?";
}

std::optional<Verdict> parse_verdict(std::string_view s) {
  for (Verdict v : {Verdict::success, Verdict::retry, Verdict::retry_after_backoff, Verdict::query, Verdict::fail,
                    Verdict::mismatch, Verdict::in_progress})
    if (s == verdict_name(v)) return v;
  return std::nullopt;
}

const char* lookup_by_name(LookupBy b) {
  switch (b) {
    case LookupBy::none: return "none";
    case LookupBy::replay: return "replay";
    case LookupBy::order_id: return "order_id";
    case LookupBy::provider_id: return "provider_id";
  }
  return "?";
}

std::optional<LookupBy> parse_lookup_by(std::string_view s) {
  for (LookupBy b : {LookupBy::none, LookupBy::replay, LookupBy::order_id, LookupBy::provider_id})
    if (s == lookup_by_name(b)) return b;
  return std::nullopt;
}

const char* status_target_name(StatusTarget t) {
  switch (t) {
    case StatusTarget::succeeded: return "SUCCEEDED";
    case StatusTarget::failed: return "FAILED";
    case StatusTarget::pending: return "PENDING";
  }
  return "?";
}

std::optional<StatusTarget> parse_status_target(std::string_view s) {
  for (StatusTarget t : {StatusTarget::succeeded, StatusTarget::failed, StatusTarget::pending})
    if (s == status_target_name(t)) return t;
  return std::nullopt;
}

const char* replay_kind_name(ReplayKind k) {
  switch (k) {
    case ReplayKind::none: return "none";
    case ReplayKind::success_only: return "success_only";
    case ReplayKind::all_answers: return "all_answers";
    case ReplayKind::current_state: return "current_state";
    case ReplayKind::reference: return "reference";
  }
  return "?";
}

const char* encoding_name(Encoding e) {
  switch (e) {
    case Encoding::json: return "json";
    case Encoding::form: return "form";
    case Encoding::form_flat: return "form_flat";
  }
  return "?";
}

const char* content_type_of(Encoding e) {
  switch (e) {
    case Encoding::json: return "application/json";
    case Encoding::form: return "application/x-www-form-urlencoded";
    // What Alipay's SDKs send; its gateway reads the charset from it.
    case Encoding::form_flat: return "application/x-www-form-urlencoded;charset=utf-8";
  }
  return "application/json";
}

const char* auth_scheme_name(AuthScheme s) {
  switch (s) {
    case AuthScheme::bearer: return "bearer";
    case AuthScheme::basic: return "basic";
    case AuthScheme::api_key: return "api_key";
    case AuthScheme::oauth2_client_credentials: return "oauth2_client_credentials";
    case AuthScheme::wechatpay_v3: return "wechatpay_v3";
    case AuthScheme::alipay_rsa2: return "alipay_rsa2";
  }
  return "?";
}

std::optional<ReplayKind> parse_replay_kind(std::string_view s) {
  for (ReplayKind k : {ReplayKind::none, ReplayKind::success_only, ReplayKind::all_answers, ReplayKind::current_state,
                       ReplayKind::reference})
    if (s == replay_kind_name(k)) return k;
  return std::nullopt;
}

// The readers below are shared with the operations block
// (profile_operations.cpp), which reads rules, identities and lookups in
// the same vocabulary (profile_parts.hpp).
namespace profile_parts {

constexpr const char* kVerdicts = "success, retry, retry_after_backoff, query, fail, mismatch, in_progress";
constexpr const char* kTransports = "not_sent, timeout, connection_lost, tls_verify, malformed_2xx, any_failure";
const std::vector<std::string>& create_placeholders() {
  static const std::vector<std::string> names = {"{order_id}", "{provider_id}", "{key}", "{merchant_id}"};
  return names;
}

using BaseLookup = std::function<const Profile*(std::string_view name)>;

using namespace profile_fields;

// A path or body template may name only the placeholders the lookup fills.
void check_placeholders(const std::string& tmpl, const std::string& path, const std::vector<std::string>& known) {
  for (size_t at = tmpl.find('{'); at != std::string::npos; at = tmpl.find('{', at + 1)) {
    size_t end = at + 1;
    while (end < tmpl.size() && (std::isalnum(static_cast<unsigned char>(tmpl[end])) || tmpl[end] == '_')) ++end;
    // Only "{identifier}" is a placeholder: the braces of a JSON body are not.
    if (end == at + 1 || end >= tmpl.size() || tmpl[end] != '}' || std::isdigit(static_cast<unsigned char>(tmpl[at + 1])))
      continue;
    const std::string name = tmpl.substr(at, end - at + 1);
    bool ok = false;
    std::string list;
    for (const std::string& k : known) {
      ok = ok || name == k;
      list += (list.empty() ? "" : ", ") + k;
    }
    if (!ok) fail(path, "unknown placeholder " + name + " (known: " + list + ")");
  }
}

std::vector<std::pair<int, int>> status_at(const cJSON* v, const std::string& path) {
  const char* want = "must be an HTTP status (100-599), a non-empty list of them, or one of \"1xx\"..\"5xx\"";
  if (cJSON_IsString(v)) {
    const std::string s = v->valuestring ? v->valuestring : "";
    if (s.size() == 3 && s[0] >= '1' && s[0] <= '5' && s[1] == 'x' && s[2] == 'x') {
      const int lo = (s[0] - '0') * 100;
      return {{lo, lo + 99}};
    }
    fail(path, want);
  }
  if (cJSON_IsNumber(v)) {
    const int s = static_cast<int>(int_at(v, path, 100, 599));
    return {{s, s}};
  }
  if (cJSON_IsArray(v)) {
    std::vector<std::pair<int, int>> out;
    int i = 0;
    for (const cJSON* c = v->child; c; c = c->next, ++i) {
      if (!cJSON_IsNumber(c)) fail(element(path, i), "must be an HTTP status (100-599); classes like \"5xx\" stand alone");
      const int s = static_cast<int>(int_at(c, element(path, i), 100, 599));
      out.emplace_back(s, s);
    }
    if (out.empty()) fail(path, want);
    return out;
  }
  fail(path, want);
}

// A rule's "when", or a lookup's "not_found" (which cannot be a transport
// class: a lookup that failed to arrive proves nothing).
Matcher matcher_at(const cJSON* v, const std::string& path, bool allow_transport, bool allow_empty) {
  object_at(v, path);
  if (allow_transport)
    check_members(v, path, {"status", "header", "code_path", "codes", "transport"});
  else
    check_members(v, path, {"status", "header", "code_path", "codes"});
  Matcher m;
  if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(v, "status")) m.status = status_at(s, member(path, "status"));
  if (const cJSON* h = cJSON_GetObjectItemCaseSensitive(v, "header")) {
    const std::string hp = member(path, "header");
    object_at(h, hp);
    std::set<std::string> seen;
    for (const cJSON* c = h->child; c; c = c->next) {
      const std::string name = c->string ? c->string : "";
      const std::string ep = hp + "." + name;
      if (!header_token(name)) fail(ep, quoted(name) + " is not an HTTP header name");
      std::string lower;
      for (char ch : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (!seen.insert(lower).second) fail(ep, "given twice (header names are case-insensitive)");
      std::string value = string_at(c, ep);
      if (value.empty()) fail(ep, "must not be empty (\"*\" means: present, any value)");
      m.headers.emplace_back(name, std::move(value));
    }
    if (m.headers.empty()) fail(hp, "must name at least one header");
  }
  const cJSON* cp = cJSON_GetObjectItemCaseSensitive(v, "code_path");
  const cJSON* codes = cJSON_GetObjectItemCaseSensitive(v, "codes");
  if (cp) m.code_path = json_path_at(cp, member(path, "code_path"), false);
  if (codes) m.codes = strings_at(codes, member(path, "codes"), false);
  if (cp && !codes) fail(member(path, "codes"), "missing: code_path needs the codes it must find");
  if (codes && !cp) fail(member(path, "code_path"), "missing: codes need the code_path where they are found");
  if (const cJSON* t = cJSON_GetObjectItemCaseSensitive(v, "transport")) {
    const std::string tp = member(path, "transport");
    m.transport = string_at(t, tp);
    bool known = false;
    for (const char* k : {"not_sent", "timeout", "connection_lost", "tls_verify", "malformed_2xx", "any_failure"})
      known = known || m.transport == k;
    if (!known) fail(tp, quoted(m.transport) + " is not a transport class (" + kTransports + ")");
    // A transport failure has no status, headers or body to match; a 2xx
    // whose body cannot be read has its status and headers still (PayPal's
    // void answers 204 with no body), never a body to read codes from.
    if (m.transport == "malformed_2xx") {
      if (!m.code_path.empty()) fail(tp, "malformed_2xx cannot be combined with code_path: its body is not read");
    } else if (!m.status.empty() || !m.headers.empty() || !m.code_path.empty()) {
      fail(tp, "cannot be combined with status, header or code_path");
    }
  }
  if (m.empty() && !allow_empty) fail(path, "must match on at least one of status, header, code_path, transport");
  return m;
}

Rule rule_at(const cJSON* v, const std::string& path) {
  object_at(v, path);
  check_members(v, path, {"when", "verdict", "processed", "reason"});
  Rule r;
  const cJSON* when = cJSON_GetObjectItemCaseSensitive(v, "when");
  if (!when) fail(member(path, "when"), "missing");
  r.when = matcher_at(when, member(path, "when"), true, false);
  const cJSON* verdict = cJSON_GetObjectItemCaseSensitive(v, "verdict");
  if (!verdict) fail(member(path, "verdict"), "missing");
  const std::string vs = string_at(verdict, member(path, "verdict"));
  const auto parsed = parse_verdict(vs);
  if (!parsed) fail(member(path, "verdict"), quoted(vs) + " is not a verdict (" + kVerdicts + ")");
  r.verdict = *parsed;
  if (const cJSON* p = cJSON_GetObjectItemCaseSensitive(v, "processed")) r.processed = bool_at(p, member(path, "processed"));
  if (const cJSON* reason = cJSON_GetObjectItemCaseSensitive(v, "reason")) {
    r.reason = string_at(reason, member(path, "reason"));
    bool ok = !r.reason.empty() && r.reason.size() <= 64;
    for (char c : r.reason) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
    if (!ok) fail(member(path, "reason"), "must be a short token of letters, digits, _ - . (at most 64)");
  }
  return r;
}

void apply_identity(Identity& id, const cJSON* v, const std::string& path) {
  object_at(v, path);
  check_members(v, path, {"mode", "name", "min_length", "max_length", "charset"});
  if (const cJSON* m = cJSON_GetObjectItemCaseSensitive(v, "mode")) {
    const std::string s = string_at(m, member(path, "mode"));
    if (s == "header") id.mode = IdentityMode::header;
    else if (s == "body") id.mode = IdentityMode::body;
    else if (s == "reference") id.mode = IdentityMode::reference;
    else if (s == "none") id.mode = IdentityMode::none;
    else fail(member(path, "mode"), quoted(s) + " is not an identity mode (header, body, reference, none)");
  }
  if (const cJSON* n = cJSON_GetObjectItemCaseSensitive(v, "name")) id.name = string_at(n, member(path, "name"));
  if (const cJSON* n = cJSON_GetObjectItemCaseSensitive(v, "min_length"))
    id.min_length = static_cast<size_t>(int_at(n, member(path, "min_length"), 1, 4096));
  if (const cJSON* n = cJSON_GetObjectItemCaseSensitive(v, "max_length"))
    id.max_length = static_cast<size_t>(int_at(n, member(path, "max_length"), 1, 4096));
  if (const cJSON* c = cJSON_GetObjectItemCaseSensitive(v, "charset")) {
    id.charset = string_at(c, member(path, "charset"));
    if (!visible_ascii(id.charset)) fail(member(path, "charset"), "must hold only visible ASCII characters");
  }
}

// The identity as a whole, after every layer of "extends" is applied: a
// child may change the mode and inherit a name that no longer fits it.
void check_identity(const Identity& id, const std::string& path) {
  const std::string np = member(path, "name");
  switch (id.mode) {
    case IdentityMode::header:
      // "$" is a legal header character, but "$.key" is a body path given to the wrong mode.
      if (!header_token(id.name) || id.name[0] == '$')
        fail(np, "identity mode \"header\" needs an HTTP header name, not " + quoted(id.name));
      break;
    case IdentityMode::body: {
      // The engine writes the key into the body: a top-level member only.
      bool ok = id.name.size() > 2 && id.name.compare(0, 2, "$.") == 0 && valid_json_path(id.name);
      for (size_t i = 2; ok && i < id.name.size(); ++i) ok = id.name[i] != '.' && id.name[i] != '[' && id.name[i] != '*';
      if (!ok) fail(np, "identity mode \"body\" needs a top-level body member such as $.idempotency_key, not " + quoted(id.name));
      break;
    }
    case IdentityMode::reference: {
      // Read, never written: any concrete path, but no wildcard.
      const bool ok = id.name.size() > 2 && id.name.compare(0, 2, "$.") == 0 && valid_json_path(id.name) &&
                      id.name.find('*') == std::string::npos;
      if (!ok) fail(np, "identity mode \"reference\" needs a JSON path into the body such as $.out_trade_no, not " + quoted(id.name));
      break;
    }
    case IdentityMode::none:
      // A create without a key could never be retried safely.
      fail(member(path, "mode"), "\"none\" is for an operation the provider takes no key for, never a create");
  }
  if (id.min_length > id.max_length)
    fail(member(path, "min_length"), "is " + std::to_string(id.min_length) + ", above max_length " + std::to_string(id.max_length));
}

void apply_auth(ProfileAuth& auth, const cJSON* v, const std::string& path) {
  object_at(v, path);
  check_members(v, path, {"scheme", "header", "token_path", "unauthorized_not_processed"});
  if (const cJSON* u = cJSON_GetObjectItemCaseSensitive(v, "unauthorized_not_processed")) {
    if (!cJSON_IsBool(u)) fail(member(path, "unauthorized_not_processed"), "must be true or false");
    auth.unauthorized_not_processed = cJSON_IsTrue(u);
  }
  if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(v, "scheme")) {
    const std::string sp = member(path, "scheme");
    const std::string name = string_at(s, sp);
    bool known = false;
    for (AuthScheme k : {AuthScheme::bearer, AuthScheme::basic, AuthScheme::api_key,
                         AuthScheme::oauth2_client_credentials, AuthScheme::wechatpay_v3, AuthScheme::alipay_rsa2})
      if (name == auth_scheme_name(k)) {
        auth.scheme = k;
        known = true;
      }
    if (!known)
      fail(sp, "must be bearer, basic, api_key, oauth2_client_credentials, wechatpay_v3 or alipay_rsa2");
  }
  if (const cJSON* h = cJSON_GetObjectItemCaseSensitive(v, "header")) auth.header = header_at(h, member(path, "header"), false);
  if (const cJSON* t = cJSON_GetObjectItemCaseSensitive(v, "token_path")) {
    const std::string tp = member(path, "token_path");
    auth.token_path = string_at(t, tp);
    if (auth.token_path.empty() || auth.token_path[0] != '/' || !visible_ascii(auth.token_path))
      fail(tp, "must start with / and hold no spaces or control characters");
  }
  if (auth.scheme == AuthScheme::api_key && auth.header.empty()) fail(member(path, "header"), "is required by api_key");
  if (auth.scheme == AuthScheme::oauth2_client_credentials && auth.token_path.empty())
    fail(member(path, "token_path"), "is required by oauth2_client_credentials");
}

// {"$.path": "{placeholder}", ...}: where an answer names its request.
AnswerNames names_at(const cJSON* v, const std::string& path) {
  object_at(v, path);
  AnswerNames out;
  for (const cJSON* c = v->child; c; c = c->next) {
    const std::string jp = c->string ? c->string : "";
    const std::string ep = path + "." + jp;
    if (jp.empty() || jp.compare(0, 2, "$.") != 0 || !valid_json_path(jp))
      fail(ep, "must be a JSON path into the answer, e.g. $.out_trade_no");
    const std::string value = string_at(c, ep);
    if (value != "{order_id}" && value != "{merchant_id}" && value != "{provider_id}" && value != "{key}" &&
        value != "{amount}")
      fail(ep, "must be one of {order_id}, {merchant_id}, {provider_id}, {key}, {amount}");
    out.emplace_back(jp, value);
  }
  return out;
}

void apply_lookup(Lookup& lk, const cJSON* v, const std::string& path, const std::vector<std::string>& placeholders) {
  object_at(v, path);
  check_members(v, path,
                {"by", "method", "path", "body", "status_path", "id_path", "status_map", "not_found", "reference_path",
                 "names_request", "found_ids", "items", "item_key_path"});
  if (const cJSON* b = cJSON_GetObjectItemCaseSensitive(v, "by")) {
    const std::string by = string_at(b, member(path, "by"));
    const std::optional<LookupBy> kind = parse_lookup_by(by);
    if (!kind) fail(member(path, "by"), quoted(by) + " is not a lookup kind (order_id, provider_id, replay, none)");
    lk.by = *kind;
  }
  if (const cJSON* m = cJSON_GetObjectItemCaseSensitive(v, "method")) {
    lk.method = string_at(m, member(path, "method"));
    if (lk.method != "GET" && lk.method != "POST") fail(member(path, "method"), "must be \"GET\" or \"POST\"");
  }
  if (const cJSON* p = cJSON_GetObjectItemCaseSensitive(v, "path")) {
    const std::string pp = member(path, "path");
    lk.path = string_at(p, pp);
    if (!lk.path.empty() && (lk.path[0] != '/' || !visible_ascii(lk.path)))
      fail(pp, "must start with / and hold no spaces or control characters");
    check_placeholders(lk.path, pp, placeholders);
  }
  if (const cJSON* b = cJSON_GetObjectItemCaseSensitive(v, "body")) {
    lk.body = string_at(b, member(path, "body"));
    check_placeholders(lk.body, member(path, "body"), placeholders);
  }
  if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(v, "status_path"))
    lk.status_path = json_path_at(s, member(path, "status_path"), false);
  if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(v, "id_path"))
    lk.id_path = json_path_at(s, member(path, "id_path"), true);
  if (const cJSON* sm = cJSON_GetObjectItemCaseSensitive(v, "status_map")) {
    // The child's map is the whole answer: merging would keep stale words.
    const std::string mp = member(path, "status_map");
    object_at(sm, mp);
    lk.status_map.clear();
    for (const cJSON* c = sm->child; c; c = c->next) {
      const std::string word = c->string ? c->string : "";
      const std::string ep = mp + "." + word;
      if (word.empty()) fail(ep, "a provider status must not be empty");
      if (lk.status_map.count(word)) fail(ep, "given twice");
      const std::optional<StatusTarget> target = parse_status_target(string_at(c, ep));
      if (!target) fail(ep, "must be \"SUCCEEDED\", \"FAILED\" or \"PENDING\"");
      lk.status_map.emplace(word, *target);
    }
  }
  // {} clears an inherited matcher.
  if (const cJSON* nf = cJSON_GetObjectItemCaseSensitive(v, "not_found"))
    lk.not_found = matcher_at(nf, member(path, "not_found"), false, true);
  if (const cJSON* n = cJSON_GetObjectItemCaseSensitive(v, "names_request"))
    lk.names_request = names_at(n, member(path, "names_request"));
  if (const cJSON* f = cJSON_GetObjectItemCaseSensitive(v, "found_ids"))
    lk.found_ids = json_path_at(f, member(path, "found_ids"), true);
  if (const cJSON* f = cJSON_GetObjectItemCaseSensitive(v, "items"))
    lk.items = json_path_at(f, member(path, "items"), true);
  if (const cJSON* f = cJSON_GetObjectItemCaseSensitive(v, "item_key_path"))
    lk.item_key_path = json_path_at(f, member(path, "item_key_path"), true);
  if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, "reference_path")) {
    const std::string rp = member(path, "reference_path");
    lk.reference_path = json_path_at(r, rp, true);
    if (!lk.reference_path.empty() && lk.reference_path.find('*') != std::string::npos)
      fail(rp, "must name one place in the body, without a wildcard");
  }
}

void check_lookup(const Lookup& lk, const std::string& path) {
  const std::string pp = member(path, "path");
  if (lk.by == LookupBy::order_id && lk.path.find("{order_id}") == std::string::npos &&
      lk.body.find("{order_id}") == std::string::npos)
    fail(pp, "lookup by order_id needs {order_id} in its path (or body), e.g. /payments?reference={order_id}");
  if (lk.by != LookupBy::none && lk.by != LookupBy::replay && lk.path.empty())
    fail(pp, std::string("lookup by ") + lookup_by_name(lk.by) + " needs a path");
  if (lk.by == LookupBy::provider_id && lk.path.find("{provider_id}") == std::string::npos)
    fail(pp, "lookup by provider_id needs a path with {provider_id}, e.g. /v1/payments/{provider_id}");
  if (!lk.reference_path.empty() && lk.by != LookupBy::order_id)
    fail(member(path, "reference_path"), "only a lookup by order_id searches by a reference");
  if (!lk.items.empty() && lk.by != LookupBy::provider_id)
    fail(member(path, "items"), "picks the item naming the row's own provider id: only a lookup by provider_id has one");
  if (!lk.items.empty() && lk.id_path.empty())
    fail(member(path, "items"), "needs id_path, where each item names itself");
  if (!lk.item_key_path.empty())
    fail(member(path, "item_key_path"), "finds an operation's action by the key its body carried: only an "
                                        "operation's lookup has one");
}

}  // namespace profile_parts

namespace {

using namespace profile_parts;

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

// One profile object applied on top of its base. `root` marks the one
// profile with no base at all (generic); every other one without "extends"
// extends generic, because its default rules follow every profile's
// (docs/design.md "Verdicts").
Profile parse_impl(std::string_view json, const BaseLookup& base_of, bool root) {
  const std::string P = "profile";
  JsonPtr doc(cJSON_ParseWithLength(json.data(), json.size()));
  if (!doc) {
    fail(P, "not valid JSON" + json_error_where(json, cJSON_GetErrorPtr()));
  }
  const cJSON* v = doc.get();
  object_at(v, P);
  check_members(v, P,
                {"name", "extends", "sources", "notes", "identity", "create_path", "encoding", "auth", "retention_ms",
                 "replays_server_errors", "replay", "replay_header", "request_id_headers", "response", "classify",
                 "lookup", "webhook", "money", "amount", "operations"});

  Profile p;
  const cJSON* ext = cJSON_GetObjectItemCaseSensitive(v, "extends");
  std::string base_name = root ? "" : "generic";
  if (ext) {
    base_name = string_at(ext, member(P, "extends"));
    if (base_name.empty()) fail(member(P, "extends"), "must name a built-in profile");
  }
  if (!base_name.empty()) {
    const Profile* base = base_of(base_name);
    if (!base) {
      std::string known;
      for (const std::string& n : builtin_profile_names()) known += std::string(known.empty() ? "" : ", ") + n;
      fail(member(P, "extends"), quoted(base_name) + " is not a built-in profile (built-ins: " + known + ")");
    }
    p = *base;
    p.extends = base_name;
  }

  if (const cJSON* n = cJSON_GetObjectItemCaseSensitive(v, "name")) {
    p.name = string_at(n, member(P, "name"));
    if (!valid_name(p.name)) fail(member(P, "name"), "must be 1-64 letters, digits, _ - .");
  } else if (root) {
    fail(member(P, "name"), "missing");
  }
  // Provenance accumulates: the base's tags and caveats stay true of the child.
  if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(v, "sources")) {
    auto more = strings_at(s, member(P, "sources"), true);
    p.sources.insert(p.sources.end(), more.begin(), more.end());
  }
  if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(v, "notes")) {
    auto more = strings_at(s, member(P, "notes"), true);
    p.notes.insert(p.notes.end(), more.begin(), more.end());
  }
  if (const cJSON* id = cJSON_GetObjectItemCaseSensitive(v, "identity")) apply_identity(p.identity, id, member(P, "identity"));
  if (const cJSON* cp = cJSON_GetObjectItemCaseSensitive(v, "create_path")) {
    p.create_path = string_at(cp, member(P, "create_path"));
    if (!p.create_path.empty() && (p.create_path[0] != '/' || !visible_ascii(p.create_path)))
      fail(member(P, "create_path"), "must be empty or start with / and hold no spaces or control characters");
    check_placeholders(p.create_path, member(P, "create_path"), create_placeholders());
    if (p.create_path.find("{provider_id}") != std::string::npos || p.create_path.find("{key}") != std::string::npos)
      fail(member(P, "create_path"), "may name only {order_id} and {merchant_id}");
  }
  if (const cJSON* e = cJSON_GetObjectItemCaseSensitive(v, "encoding")) {
    const std::string ep = member(P, "encoding");
    const std::string s = string_at(e, ep);
    if (s == "json") p.encoding = Encoding::json;
    else if (s == "form") p.encoding = Encoding::form;
    else if (s == "form_flat") p.encoding = Encoding::form_flat;
    else fail(ep, "must be json, form or form_flat");
  }
  if (const cJSON* a = cJSON_GetObjectItemCaseSensitive(v, "auth")) apply_auth(p.auth, a, member(P, "auth"));
  if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, "retention_ms")) {
    // null: the identity never expires (a merchant reference).
    if (cJSON_IsNull(r)) p.retention_ms.reset();
    else p.retention_ms = int_at(r, member(P, "retention_ms"), 1, int64_t(1) << 53);
  }
  if (cJSON_GetObjectItemCaseSensitive(v, "replays_server_errors"))
    fail(member(P, "replays_server_errors"),
         "was replaced by \"replay\": none, success_only, all_answers, current_state or reference");
  if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, "replay")) {
    const std::string rp = member(P, "replay");
    const auto kind = parse_replay_kind(string_at(r, rp));
    if (!kind) fail(rp, "must be none, success_only, all_answers, current_state or reference");
    p.replay = *kind;
  }
  if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, "replay_header"))
    p.replay_header = header_at(r, member(P, "replay_header"), true);
  if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, "request_id_headers")) {
    const std::string rp = member(P, "request_id_headers");
    if (!cJSON_IsArray(r)) fail(rp, "must be an array of header names");
    p.request_id_headers.clear();
    int i = 0;
    for (const cJSON* c = r->child; c; c = c->next, ++i) p.request_id_headers.push_back(header_at(c, element(rp, i), false));
  }
  if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, "response")) {
    const std::string rp = member(P, "response");
    object_at(r, rp);
    check_members(r, rp, {"id_path", "status_path", "error_id_path", "success_requires_id", "names_request"});
    if (const cJSON* n = cJSON_GetObjectItemCaseSensitive(r, "names_request"))
      p.names_request = names_at(n, member(rp, "names_request"));
    if (const cJSON* b = cJSON_GetObjectItemCaseSensitive(r, "success_requires_id")) {
      if (!cJSON_IsBool(b)) fail(member(rp, "success_requires_id"), "must be true or false");
      p.success_requires_id = cJSON_IsTrue(b);
    }
    if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(r, "id_path")) p.id_path = json_path_at(s, member(rp, "id_path"), true);
    if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(r, "error_id_path"))
      p.error_id_path = json_path_at(s, member(rp, "error_id_path"), true);
    if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(r, "status_path"))
      p.status_path = json_path_at(s, member(rp, "status_path"), true);
  }
  if (const cJSON* c = cJSON_GetObjectItemCaseSensitive(v, "classify")) {
    const std::string cp = member(P, "classify");
    if (!cJSON_IsArray(c)) fail(cp, "must be an array of rules");
    // The child's rules come first; the base's stay behind them as the fallback.
    std::vector<Rule> rules;
    int i = 0;
    for (const cJSON* r = c->child; r; r = r->next, ++i) rules.push_back(rule_at(r, element(cp, i)));
    rules.insert(rules.end(), p.classify.begin(), p.classify.end());
    p.classify = std::move(rules);
  }
  if (const cJSON* l = cJSON_GetObjectItemCaseSensitive(v, "lookup"))
    apply_lookup(p.lookup, l, member(P, "lookup"), create_placeholders());
  if (const cJSON* w = cJSON_GetObjectItemCaseSensitive(v, "webhook")) apply_webhook(p.webhook, w, member(P, "webhook"));
  if (const cJSON* m = cJSON_GetObjectItemCaseSensitive(v, "money")) apply_money(p.money, m, member(P, "money"));
  if (const cJSON* a = cJSON_GetObjectItemCaseSensitive(v, "amount")) p.amount = amount_field_at(a, member(P, "amount"));
  if (const cJSON* o = cJSON_GetObjectItemCaseSensitive(v, "operations"))
    apply_operations(p.operations, o, member(P, "operations"));

  check_identity(p.identity, member(P, "identity"));
  check_lookup(p.lookup, member(P, "lookup"));
  check_webhook(p.webhook, p.lookup, member(P, "webhook"));
  check_money(p.money, member(P, "money"));
  check_operations(p, member(P, "operations"));
  if (p.name.empty()) fail(member(P, "name"), "missing");
  return p;
}

struct Registry {
  std::map<std::string, Profile, std::less<>> profiles;
  std::vector<std::string> names;
};

// Resolves every built-in once, each after the one it extends. A broken
// file is a build bug; the error says which file and which field.
Registry build_registry() {
  Registry reg;
  std::map<std::string, const char*, std::less<>> texts;
  for (std::size_t i = 0; i < builtin_json::count; ++i) {
    texts.emplace(builtin_json::entries[i].name, builtin_json::entries[i].text);
    reg.names.emplace_back(builtin_json::entries[i].name);
  }
  std::set<std::string, std::less<>> resolving;
  std::function<const Profile*(std::string_view)> resolve = [&](std::string_view name) -> const Profile* {
    if (auto done = reg.profiles.find(name); done != reg.profiles.end()) return &done->second;
    const auto text = texts.find(name);
    if (text == texts.end()) return nullptr;
    const std::string n(name);
    if (!resolving.insert(n).second) throw ProfileError("built-in profile " + n + ": \"extends\" forms a cycle");
    Profile p;
    try {
      p = parse_impl(text->second, resolve, n == "generic");
    } catch (const ProfileError& e) {
      const std::string what = e.what();
      // Errors from a base already carry their own "built-in profile" prefix.
      if (what.rfind("built-in profile ", 0) == 0) throw;
      throw ProfileError("built-in profile " + n + " (src/profiles/builtin/" + n + ".json): " + what);
    }
    if (p.name != n)
      throw ProfileError("built-in profile " + n + " (src/profiles/builtin/" + n + ".json): profile.name: is " + quoted(p.name) +
                         ", must be the file's name");
    resolving.erase(n);
    return &reg.profiles.emplace(n, std::move(p)).first->second;
  };
  for (const std::string& n : reg.names) resolve(n);
  return reg;
}

const Registry& registry() {
  static const Registry reg = build_registry();
  return reg;
}

}  // namespace

std::optional<Profile> builtin_profile(std::string_view name) {
  const Registry& reg = registry();
  const auto it = reg.profiles.find(name);
  if (it == reg.profiles.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < builtin_json::count; ++i) names.emplace_back(builtin_json::entries[i].name);
  return names;
}

Profile parse_profile(std::string_view json) {
  const Registry& reg = registry();
  return parse_impl(
      json,
      [&reg](std::string_view name) -> const Profile* {
        const auto it = reg.profiles.find(name);
        return it == reg.profiles.end() ? nullptr : &it->second;
      },
      false);
}

}  // namespace payretry
