#include "config.hpp"

#include <cJSON.h>

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <set>

#include "base64.hpp"
#include "config_keys.hpp"
#include "json_error.hpp"
#include "json_util.hpp"
#include "spelling.hpp"
#include "validate.hpp"

namespace payretry {
namespace {


[[noreturn]] void fail(const std::string& key, const std::string& what) { throw ConfigError(key + ": " + what); }

// Rejects any member of `obj` the key table (config_keys.cpp) does not give
// the level `parent` ("" for the top, "auth.basic"), naming it and the
// closest valid name.
void only_keys(const cJSON* obj, const std::string& parent) {
  const std::vector<std::string> valid = config_names_at(parent);
  const std::set<std::string> ok(valid.begin(), valid.end());
  std::set<std::string> seen;
  const std::string prefix = parent.empty() ? "" : parent + ".";
  for (const cJSON* it = obj->child; it; it = it->next) {
    if (!ok.count(it->string)) fail(prefix + it->string, "unknown key" + did_you_mean(it->string, valid));
    // cJSON would silently use the first copy; an ambiguous config is an error.
    if (!seen.insert(it->string).second) fail(prefix + it->string, "appears more than once");
  }
}

const cJSON* member(const cJSON* obj, const char* name) { return cJSON_GetObjectItemCaseSensitive(obj, name); }

int64_t integer(const cJSON* v, const std::string& key, int64_t lo, int64_t hi) {
  if (!cJSON_IsNumber(v) || std::floor(v->valuedouble) != v->valuedouble)
    fail(key, "must be an integer");
  if (v->valuedouble < static_cast<double>(lo) || v->valuedouble > static_cast<double>(hi))
    fail(key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return static_cast<int64_t>(v->valuedouble);
}

// An integer key, in the range the key table gives it.
int64_t integer(const cJSON* v, const std::string& key) {
  const ConfigKey& k = config_key(key);
  return integer(v, key, k.min, k.max);
}

// Characters, as JSON and the schema count them (UTF-8 code points), not bytes.
size_t characters(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The length the key table gives a string key (in characters, as the schema's minLength
// and maxLength count): the same rule for a value given inline, in a variable or a file.
void check_length(const std::string& value, const std::string& key) {
  const ConfigKey* k = find_config_key(key);
  if (!k || (k->type != ConfigKeyType::string && k->type != ConfigKeyType::string_or_object)) return;
  const size_t length = characters(value);
  const bool too_short = k->min > 1 && length < static_cast<size_t>(k->min);
  const bool too_long = k->max > 0 && length > static_cast<size_t>(k->max);
  if (!too_short && !too_long) return;
  const std::string lo = std::to_string(k->min), hi = std::to_string(k->max);
  if (k->min > 1 && k->max > 0) fail(key, "must be " + (lo == hi ? lo : lo + " to " + hi) + " characters");
  fail(key, too_short ? "must be at least " + lo + " characters" : "must be at most " + hi + " characters");
}

std::string string(const cJSON* v, const std::string& key, bool allow_empty = false, bool check_len = true) {
  if (!cJSON_IsString(v)) fail(key, "must be a string");
  std::string s = v->valuestring;
  if (!allow_empty && s.empty()) fail(key, "must not be empty");
  if (check_len) check_length(s, key);
  return s;
}

void check_base_url(const std::string& url) {
  const bool http = url.rfind("http://", 0) == 0, https = url.rfind("https://", 0) == 0;
  if (!http && !https) fail("base_url", "must start with http:// or https://");
  const size_t host_at = url.find("://") + 3;
  if (url.size() <= host_at || url[host_at] == '/') fail("base_url", "has no host");
  for (unsigned char c : url)
    if (c <= 0x20 || c >= 0x7F) fail("base_url", "contains a space, control or non-ASCII byte");
  if (url.find('?') != std::string::npos || url.find('#') != std::string::npos)
    fail("base_url", "must not contain a query or fragment");
  if (url.find('@') != std::string::npos) fail("base_url", "must not contain credentials; use auth");
}

void parse_retry(const cJSON* r, RetryPolicy& p) {
  if (!cJSON_IsObject(r)) fail("retry", "must be an object");
  only_keys(r, "retry");
  if (auto v = member(r, "max_attempts")) p.max_attempts = static_cast<int>(integer(v, "retry.max_attempts"));
  if (auto v = member(r, "connect_timeout_ms")) p.connect_timeout_ms = integer(v, "retry.connect_timeout_ms");
  if (auto v = member(r, "attempt_timeout_ms")) p.attempt_timeout_ms = integer(v, "retry.attempt_timeout_ms");
  if (auto v = member(r, "deadline_ms")) p.deadline_ms = integer(v, "retry.deadline_ms");
  if (auto v = member(r, "backoff_base_ms")) p.backoff_base_ms = integer(v, "retry.backoff_base_ms");
  if (auto v = member(r, "backoff_cap_ms")) p.backoff_cap_ms = integer(v, "retry.backoff_cap_ms");
  if (auto v = member(r, "retry_after_max_ms")) p.retry_after_max_ms = integer(v, "retry.retry_after_max_ms");
  if (auto v = member(r, "min_attempt_ms")) p.min_attempt_ms = integer(v, "retry.min_attempt_ms");
  if (auto v = member(r, "jitter_seed")) p.jitter_seed = static_cast<uint64_t>(integer(v, "retry.jitter_seed"));
  if (p.backoff_cap_ms < p.backoff_base_ms) fail("retry.backoff_cap_ms", "must not be below retry.backoff_base_ms");
  if (p.deadline_ms < p.min_attempt_ms) fail("retry.deadline_ms", "must not be below retry.min_attempt_ms");
}

void parse_budget(const cJSON* b, BudgetPolicy& p) {
  if (!cJSON_IsObject(b)) fail("budget", "must be an object");
  only_keys(b, "budget");
  if (auto v = member(b, "tokens")) p.tokens = static_cast<int>(integer(v, "budget.tokens"));
  if (auto v = member(b, "retry_cost")) p.retry_cost = static_cast<int>(integer(v, "budget.retry_cost"));
  if (auto v = member(b, "success_refund")) p.success_refund = static_cast<int>(integer(v, "budget.success_refund"));
}

// A credential that travels in a header: the header's length and characters. The message
// never shows the value.
void check_printable(const std::string& value, const std::string& key) {
  if (value.size() > kMaxHeaderValueLength)
    fail(key, "must be at most " + std::to_string(kMaxHeaderValueLength) + " characters");
  if (!check_header_value(value).empty()) fail(key, "must be printable with no CR/LF");
}

std::string printable_secret(const cJSON* v, const std::string& key) {
  std::string s = string(v, key);
  check_printable(s, key);
  return s;
}

std::string leaf_of(const std::string& path) { return path.substr(path.rfind('.') + 1); }

// Whether any form of the indirect key `name` (NAME, NAME_env, NAME_file) is in `obj`.
bool given(const cJSON* obj, const std::string& name) {
  return member(obj, name.c_str()) || member(obj, (name + "_env").c_str()) || member(obj, (name + "_file").c_str());
}

// The forms the key table gives `path`, for messages: "password, password_env or password_file".
std::string forms_text(const ConfigKey& k) {
  const std::string name = leaf_of(std::string(k.path));
  std::string out = k.has(kKeyNoInline) ? "" : name;
  if (k.has(kKeyIndirect)) out += (out.empty() ? "" : ", ") + name + "_env or " + name + "_file";
  return out;
}

// A PEM key with its certificate chain is a few KiB; anything this large is
// the wrong file.
constexpr off_t kMaxSecretFileBytes = 1 << 20;

// What a NAME_file holds, without one trailing newline (the one an editor or
// `echo` adds, never part of a token) unless `verbatim` (a PEM file, whose
// final newline is part of its format). A message names the key and the
// path, never the content.
std::string read_secret_file(const std::string& key, const std::string& path, bool verbatim) {
  bool plain = !path.empty() && characters(path) <= 4096 && path.find("-----") == std::string::npos;
  for (unsigned char ch : path) plain = plain && ch >= 0x20 && ch != 0x7F;
  // The path is echoed in errors; a secret pasted where it belongs must not be.
  if (!plain) fail(key, "must be a file's path, not the secret itself");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(key, "cannot read " + path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(key, "cannot read " + path + ": it is a directory");
  // A device or a pipe could be endless or block the client's creation
  // forever; a secret is a small regular file.
  if (!S_ISREG(st.st_mode)) fail(key, "cannot read " + path + ": not a regular file");
  if (st.st_size > kMaxSecretFileBytes)
    fail(key, path + " is larger than " + std::to_string(kMaxSecretFileBytes) + " bytes: not a secret or key");
  errno = 0;
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(key, "cannot read " + path + (errno ? std::string(": ") + std::strerror(errno) : ""));
  std::string text(static_cast<size_t>(kMaxSecretFileBytes) + 1, '\0');
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (f.bad()) fail(key, "cannot read " + path);
  text.resize(static_cast<size_t>(f.gcount()));
  if (text.size() > static_cast<size_t>(kMaxSecretFileBytes))  // it grew since stat
    fail(key, path + " is larger than " + std::to_string(kMaxSecretFileBytes) + " bytes: not a secret or key");
  if (!verbatim && !text.empty() && text.back() == '\n') {
    text.pop_back();
    if (!text.empty() && text.back() == '\r') text.pop_back();
  }
  if (text.find_first_not_of("\r\n") == std::string::npos) fail(key, path + " is empty");
  return text;
}

// An environment variable's value. Only the variable's name is ever echoed.
std::string read_secret_env(const std::string& key, const std::string& var) {
  bool valid = !var.empty() && !std::isdigit(static_cast<unsigned char>(var[0])) && var.size() <= 256;
  for (char ch : var) valid = valid && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
  if (!valid) fail(key, "must name an environment variable (letters, digits and _), not hold the secret");
  const char* value = std::getenv(var.c_str());
  if (!value) fail(key, "the environment variable " + var + " is not set");
  if (!*value) fail(key, "the environment variable " + var + " is empty");
  return value;
}

// A key the table marks indirect (kKeyIndirect): given inline (unless
// kKeyNoInline), as NAME_env or as NAME_file, exactly one of them. nullopt:
// none given and the key is optional.
std::optional<std::string> indirect(const cJSON* obj, const std::string& path, bool check_len = true) {
  const ConfigKey& k = config_key(path);
  const std::string name = leaf_of(path);
  const cJSON* in = k.has(kKeyNoInline) ? nullptr : member(obj, name.c_str());
  const cJSON* env = member(obj, (name + "_env").c_str());
  const cJSON* file = member(obj, (name + "_file").c_str());
  const int count = (in != nullptr) + (env != nullptr) + (file != nullptr);
  if (count == 0) {
    if (k.has(kKeyRequired)) fail(path, "is required (give " + forms_text(k) + ")");
    return std::nullopt;
  }
  if (count > 1) fail(path, "give only one of " + forms_text(k));
  std::string value;
  if (in) value = string(in, path, false, check_len);
  else if (env) value = read_secret_env(path + "_env", string(env, path + "_env"));
  else value = read_secret_file(path + "_file", string(file, path + "_file"), k.has(kKeyNoInline));
  if (check_len) check_length(value, path);
  return value;
}

// An indirect credential that travels in a header.
std::string header_secret(const cJSON* obj, const std::string& path) {
  // Printable first: a stray line break from a file is the likelier mistake than the length.
  std::string value = *indirect(obj, path, false);
  check_printable(value, path);
  check_length(value, path);
  return value;
}

void parse_oauth2(const cJSON* o, AuthConfig& a) {
  const std::string P = "auth.oauth2.";
  if (!cJSON_IsObject(o)) fail("auth.oauth2", "must be an object");
  only_keys(o, "auth.oauth2");
  a.kind = AuthConfig::Kind::oauth2;
  const cJSON* id = member(o, "client_id");
  if (!id) fail(P + "client_id", "is required");
  a.client_id = printable_secret(id, P + "client_id");
  // The id and secret travel as Basic user:password: a ':' in the id would
  // move the boundary.
  if (a.client_id.find(':') != std::string::npos) fail(P + "client_id", "must not contain ':'");
  a.client_secret = header_secret(o, P + "client_secret");
  if (auto v = member(o, "token_path")) {
    a.token_path = string(v, P + "token_path");
    if (std::string e = check_path(a.token_path); !e.empty()) fail(P + "token_path", e);
  }
  if (auto v = member(o, "scope")) a.scope = printable_secret(v, P + "scope");
}

void parse_wechatpay(const cJSON* w, AuthConfig& a) {
  const std::string P = "auth.wechatpay.";
  if (!cJSON_IsObject(w)) fail("auth.wechatpay", "must be an object");
  only_keys(w, "auth.wechatpay");
  a.kind = AuthConfig::Kind::wechatpay;
  const cJSON* serial = member(w, "serial_no");
  if (!serial) fail(P + "serial_no", "is required (the merchant API certificate's serial number)");
  a.serial_no = printable_secret(serial, P + "serial_no");
  a.private_key_pem = *indirect(w, P + "private_key");
  // Without the platform key answers cannot be verified, and an answer
  // nobody signed must never read as a payment.
  a.peer_public_key_pem = *indirect(w, P + "platform_public_key");
  if (auto v = member(w, "platform_serial")) a.platform_serial = printable_secret(v, P + "platform_serial");
}

void parse_alipay(const cJSON* al, AuthConfig& a) {
  const std::string P = "auth.alipay.";
  if (!cJSON_IsObject(al)) fail("auth.alipay", "must be an object");
  only_keys(al, "auth.alipay");
  a.kind = AuthConfig::Kind::alipay;
  const cJSON* app = member(al, "app_id");
  if (!app) fail(P + "app_id", "is required");
  a.app_id = printable_secret(app, P + "app_id");
  a.private_key_pem = *indirect(al, P + "private_key");
  a.peer_public_key_pem = *indirect(al, P + "alipay_public_key");
}

void parse_webhook(const cJSON* w, Config& c) {
  const std::string P = "webhook.";
  if (!cJSON_IsObject(w)) fail("webhook", "must be an object");
  only_keys(w, "webhook");
  WebhookConfig& out = c.webhook;
  out.configured = true;
  // Printable, as every credential here: a stray CR/LF from a file would
  // make a key nobody can sign with.
  for (const char* name : {"secret", "previous_secret"})
    if (given(w, name)) out.secrets.push_back(header_secret(w, P + name));
  if (given(w, "api_v3_key")) {
    out.api_v3_key = header_secret(w, P + "api_v3_key");
    if (out.api_v3_key.size() != 32) fail(P + "api_v3_key", "must be the 32 bytes WeChat Pay gives as the APIv3 key");
  }
  if (std::optional<std::string> v = indirect(w, P + "public_key")) out.public_key_pem = std::move(*v);
  if (auto v = member(w, "public_key_id")) out.public_key_id = printable_secret(v, P + "public_key_id");
  if (auto v = member(w, "webhook_id")) out.webhook_id = printable_secret(v, P + "webhook_id");
  if (auto v = member(w, "notification_url")) {
    out.notification_url = string(v, P + "notification_url");
    if (out.notification_url.rfind("https://", 0) != 0 && out.notification_url.rfind("http://", 0) != 0)
      fail(P + "notification_url", "must be an http:// or https:// URL, as the subscription names it");
  }
  if (auto v = member(w, "tolerance_ms")) out.tolerance_ms = integer(v, P + "tolerance_ms");
}

// One form: {"bearer": T} | {"header": H, "value": V} | {"api_key": V} |
// {"basic": {"username", "password"}} | {"oauth2": {...}} |
// {"wechatpay": {...}} | {"alipay": {...}}. bearer, value, api_key and
// password may each be given as NAME_env or NAME_file instead.
void parse_auth(const cJSON* a, Config& c) {
  if (!cJSON_IsObject(a)) fail("auth", "must be an object");
  only_keys(a, "auth");
  const bool header_form = member(a, "header") || given(a, "value");
  int forms = header_form;
  for (const char* k : {"bearer", "api_key"}) forms += given(a, k);
  for (const char* k : {"basic", "oauth2", "wechatpay", "alipay"}) forms += member(a, k) != nullptr;
  if (forms == 0) fail("auth", "needs one of bearer, header and value, api_key, basic, oauth2, wechatpay, alipay");
  if (forms > 1) fail("auth", "give one form only (bearer, header+value, api_key, basic, oauth2, wechatpay or alipay)");
  AuthConfig& out = c.auth;
  if (given(a, "bearer")) {
    out.kind = AuthConfig::Kind::fixed_headers;
    c.auth_headers.emplace_back("Authorization", "Bearer " + header_secret(a, "auth.bearer"));
  } else if (header_form) {
    const cJSON* header = member(a, "header");
    if (!header) fail("auth.header", "is required with auth.value");
    if (!given(a, "value")) fail("auth.value", "is required with auth.header (give value, value_env or value_file)");
    std::string name = string(header, "auth.header");
    if (std::string e = check_header_name(name); !e.empty()) fail("auth.header", e);
    if (std::string e = check_not_reserved(name, "Idempotency-Key"); !e.empty()) fail("auth.header", e);
    out.kind = AuthConfig::Kind::fixed_headers;
    c.auth_headers.emplace_back(name, header_secret(a, "auth.value"));
  } else if (given(a, "api_key")) {
    out.kind = AuthConfig::Kind::api_key;
    out.api_key = header_secret(a, "auth.api_key");
  } else if (const cJSON* basic = member(a, "basic")) {
    if (!cJSON_IsObject(basic)) fail("auth.basic", "must be an object with username and password");
    only_keys(basic, "auth.basic");
    const cJSON* user = member(basic, "username");
    if (!user) fail("auth.basic.username", "is required");
    const std::string u = printable_secret(user, "auth.basic.username");
    if (u.find(':') != std::string::npos) fail("auth.basic.username", "must not contain ':'");
    const std::string pw = header_secret(basic, "auth.basic.password");
    out.kind = AuthConfig::Kind::fixed_headers;
    c.auth_headers.emplace_back("Authorization", "Basic " + base64_encode(u + ":" + pw));
    out.client_secret = pw;  // kept for redaction only
  } else if (const cJSON* o = member(a, "oauth2")) {
    parse_oauth2(o, out);
  } else if (const cJSON* w = member(a, "wechatpay")) {
    parse_wechatpay(w, out);
  } else {
    parse_alipay(member(a, "alipay"), out);
  }
}

void parse_headers(const cJSON* h, Config& c) {
  if (!cJSON_IsObject(h)) fail("headers", "must be an object of strings");
  for (const cJSON* it = h->child; it; it = it->next) {
    const std::string key = std::string("headers.") + it->string;
    if (std::string e = check_header_name(it->string); !e.empty()) fail(key, e);
    if (std::string e = check_not_reserved(it->string, "Idempotency-Key"); !e.empty()) fail(key, e);
    std::string v = string(it, key, true);
    if (std::string e = check_header_value(v); !e.empty()) fail(key, e);
    c.extra_headers.emplace_back(it->string, v);
  }
}

void parse_tls(const cJSON* t, Config& c) {
  if (!cJSON_IsObject(t)) fail("tls", "must be an object");
  only_keys(t, "tls");
  if (auto v = member(t, "verify")) {
    if (!cJSON_IsBool(v)) fail("tls.verify", "must be true or false");
    c.tls_verify = cJSON_IsTrue(v);
  }
  if (auto v = member(t, "ca_file"); v && !cJSON_IsNull(v)) c.ca_file = string(v, "tls.ca_file");
}

void parse_log(const cJSON* l, Config& c) {
  if (!cJSON_IsObject(l)) fail("log", "must be an object");
  only_keys(l, "log");
  if (auto v = member(l, "name")) {
    c.log_name = string(v, "log.name");  // 1 to 64 characters (the key table)
    for (unsigned char ch : c.log_name)
      if (ch < 0x20 || ch == 0x7f) fail("log.name", "must not hold control characters");
  }
  if (auto v = member(l, "path"); v && !cJSON_IsNull(v)) c.log_path = string(v, "log.path");
  if (auto v = member(l, "level")) {
    const std::string s = string(v, "log.level");
    if (s == "debug") c.log_level = 10;
    else if (s == "info") c.log_level = 20;
    else if (s == "warn") c.log_level = 30;
    else if (s == "error") c.log_level = 40;
    else fail("log.level", "must be one of debug, info, warn, error");
  }
}

// "provider": "stripe" | "/etc/app/acme.json" | {"extends": "stripe", ...}
void parse_provider(const cJSON* v, Config& c) {
  if (cJSON_IsObject(v)) {
    c.provider.clear();
    c.provider_json = json_print(v);
    return;
  }
  const std::string s = string(v, "provider");
  if (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0) {
    std::ifstream f(s, std::ios::binary);
    if (!f) fail("provider", "cannot read the profile file");
    c.provider.clear();
    c.provider_json.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    return;
  }
  c.provider = s;
}

// The scheme only: the ledger reads the rest when it opens (a PostgreSQL
// URL through libpq, the memory ledger's max_settled), and refuses what it
// cannot read with a message naming the part.
void check_ledger_url(const std::string& url, const std::string& key) {
  // Never echoed: the URL may hold a password.
  for (unsigned char ch : url)
    if (ch < 0x20 || ch == 0x7F) fail(key, "contains a control character (a line break?)");
  if (url == "memory:" || url.rfind("memory:?", 0) == 0) return;
  if (url.rfind("sqlite:///", 0) == 0 && url.size() > 10) return;
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) return;
  fail(key, "must be memory: (or memory:?max_settled=N), sqlite:///abs/path.db or postgresql://...");
}

// "ledger": "sqlite:///..."  or  {"url": "...", "secret": "...", "lease_margin_ms": N, "timeout_ms": N},
// url and secret also as url_env / url_file, secret_env / secret_file (a
// PostgreSQL URL may hold a password).
void parse_ledger(const cJSON* l, Config& c) {
  if (cJSON_IsString(l)) {
    c.ledger_url = string(l, "ledger");
    check_ledger_url(c.ledger_url, "ledger");
    return;
  }
  if (!cJSON_IsObject(l)) fail("ledger", "must be a URL string or an object");
  only_keys(l, "ledger");
  c.ledger_url = *indirect(l, "ledger.url");
  check_ledger_url(c.ledger_url, "ledger.url");
  if (auto secret = indirect(l, "ledger.secret")) c.ledger_secret = *secret;
  if (auto v = member(l, "lease_margin_ms")) c.lease_margin_ms = integer(v, "ledger.lease_margin_ms");
  if (auto v = member(l, "timeout_ms")) c.ledger_timeout_ms = integer(v, "ledger.timeout_ms");
}

// An HTTP(S) or SOCKS proxy URL. Without one, proxy environment variables
// are ignored: a payment (card data, credentials) leaves only through a
// proxy the config names.
void parse_proxy(const cJSON* root, Config& c) {
  // null is "no proxy" only alone: beside proxy_env or proxy_file it is a second form.
  if (const cJSON* v = member(root, "proxy"); v && cJSON_IsNull(v) && !member(root, "proxy_env") && !member(root, "proxy_file"))
    return;
  std::optional<std::string> url = indirect(root, "proxy");
  if (!url) return;
  c.proxy = std::move(*url);
  static const char* const schemes[] = {"http://", "https://", "socks5://", "socks5h://"};
  bool ok = false;
  for (const char* s : schemes) ok = ok || c.proxy.rfind(s, 0) == 0;
  if (!ok) fail("proxy", "must be an http://, https://, socks5:// or socks5h:// URL");
  for (unsigned char ch : c.proxy)
    if (ch <= 0x20 || ch >= 0x7F) fail("proxy", "contains a space, control or non-ASCII byte");
}

}  // namespace

std::vector<std::string> Config::secrets() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : auth_headers) {
    out.push_back(v);
    if (v.rfind("Bearer ", 0) == 0) out.push_back(v.substr(7));
    if (v.rfind("Basic ", 0) == 0) out.push_back(v.substr(6));
  }
  for (const std::string* s : {&auth.api_key, &auth.client_secret, &auth.private_key_pem, &webhook.api_v3_key})
    if (!s->empty()) out.push_back(*s);
  for (const std::string& s : webhook.secrets) out.push_back(s);
  if (!ledger_secret.empty()) out.push_back(ledger_secret);
  // A database URL may carry a password (user:pass@host). A password may
  // hold a raw '@' or '/' itself: the host starts after the last '@' before
  // the query (as the PostgreSQL ledger reads it), so everything between the
  // first ':' and that '@' is the password.
  if (const size_t scheme = ledger_url.find("://"); scheme != std::string::npos) {
    const size_t query = ledger_url.find('?', scheme + 3);
    const size_t at = ledger_url.rfind('@', query == std::string::npos ? std::string::npos : query);
    if (at != std::string::npos && at > scheme) {
      const size_t colon = ledger_url.find(':', scheme + 3);
      if (colon != std::string::npos && colon < at) out.push_back(ledger_url.substr(colon + 1, at - colon - 1));
    }
  }
  // The same for a proxy's credentials.
  if (const size_t scheme = proxy.find("://"); scheme != std::string::npos) {
    const size_t at = proxy.rfind('@');
    const size_t colon = proxy.find(':', scheme + 3);
    if (at != std::string::npos && colon != std::string::npos && colon < at)
      out.push_back(proxy.substr(colon + 1, at - colon - 1));
  }
  return out;
}

namespace {
// Values that go into request paths, headers and the client's scope: no
// control characters, no spaces, nothing outside ASCII.
bool printable_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c <= 0x20 || c >= 0x7F) return false;
  return true;
}
}  // namespace

Config parse_config(std::string_view json) {
  const char* end = nullptr;
  JsonPtr root(cJSON_ParseWithLengthOpts(json.data(), json.size(), &end, false));
  if (!root) throw ConfigError("config: not valid JSON" + json_error_where(json, cJSON_GetErrorPtr()));
  for (const char* p = end; p && p < json.data() + json.size(); ++p)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '\0')
      throw ConfigError("config: text after the JSON object");
  // cJSON ends a string at an escaped NUL, which would silently shorten a
  // value (a key, a path); refuse it instead.
  for (size_t i = 0; i + 6 <= json.size(); ++i)
    if (json[i] == '\\' && (json.compare(i, 6, "\\u0000") == 0)) throw ConfigError("config: \\u0000 is not allowed in strings");
  if (!cJSON_IsObject(root.get())) throw ConfigError("config: must be a JSON object");
  const cJSON* r = root.get();
  only_keys(r, "");
  Config c;
  if (auto v = member(r, "provider")) parse_provider(v, c);
  const cJSON* base = member(r, "base_url");
  if (!base) fail("base_url", "is required");
  c.base_url = string(base, "base_url");
  check_base_url(c.base_url);
  while (!c.base_url.empty() && c.base_url.back() == '/') c.base_url.pop_back();
  if (auto v = member(r, "create_path")) {
    c.create_path = string(v, "create_path");
    if (std::string e = check_path(c.create_path); !e.empty()) fail("create_path", e);
  }
  if (auto v = member(r, "auth")) parse_auth(v, c);
  if (auto v = member(r, "webhook")) parse_webhook(v, c);
  if (auto v = member(r, "headers")) parse_headers(v, c);
  if (auto v = member(r, "retry")) parse_retry(v, c.retry);
  if (auto v = member(r, "budget")) parse_budget(v, c.budget);
  if (auto v = member(r, "tls")) parse_tls(v, c);
  if (auto v = member(r, "log")) parse_log(v, c);
  // No default: a service that forgets the key would keep every idempotency
  // key in memory, lose them on restart, and mint a new key for an order
  // that may already be charged.
  const cJSON* ledger = member(r, "ledger");
  if (!ledger)
    fail("ledger", "is required: name where idempotency keys are kept (sqlite:///abs/path.db or postgresql://...), "
                   "or write \"memory:\" to keep them in this process only (they are lost when it ends)");
  parse_ledger(ledger, c);
  parse_proxy(r, c);
  if (auto v = member(r, "merchant_id")) {
    c.merchant_id = string(v, "merchant_id");
    if (c.merchant_id.empty() || c.merchant_id.size() > static_cast<size_t>(config_key("merchant_id").max) ||
        !printable_ascii(c.merchant_id))
      fail("merchant_id", "must be 1-" + std::to_string(config_key("merchant_id").max) +
                              " printable ASCII characters");
  }
  if (auto v = member(r, "account_id")) {
    c.account_id = string(v, "account_id");
    if (c.account_id.empty() || c.account_id.size() > static_cast<size_t>(config_key("account_id").max) ||
        !printable_ascii(c.account_id))
      fail("account_id", "must be 1-" + std::to_string(config_key("account_id").max) +
                             " printable ASCII characters");
  }
  if (auto v = member(r, "adopt_unscoped_rows")) {
    if (!cJSON_IsBool(v)) fail("adopt_unscoped_rows", "must be true or false");
    c.adopt_unscoped_rows = cJSON_IsTrue(v);
  }
  if (auto v = member(r, "in_progress_wait_ms")) c.in_progress_wait_ms = integer(v, "in_progress_wait_ms");
  if (auto v = member(r, "key_retention_ms")) c.key_retention_ms = integer(v, "key_retention_ms");
  if (auto v = member(r, "not_found_grace_ms")) c.not_found_grace_ms = integer(v, "not_found_grace_ms");
  if (auto v = member(r, "max_body_bytes")) c.max_body_bytes = static_cast<size_t>(integer(v, "max_body_bytes"));
  if (auto v = member(r, "max_connections")) c.max_connections = integer(v, "max_connections");
  if (auto v = member(r, "max_opening_connections"))
    c.max_opening_connections = integer(v, "max_opening_connections");
  if (auto v = member(r, "engine_threads")) c.engine_threads = static_cast<int>(integer(v, "engine_threads"));
  return c;
}

}  // namespace payretry
