#include "config_keys.hpp"

#include <cJSON.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>

#include "json_util.hpp"
#include "validate.hpp"

namespace payretry {
namespace {

constexpr int64_t kDay = 24LL * 3600 * 1000;
// The largest integer a JSON number (a double) holds exactly, with its neighbour above distinct.
constexpr int64_t kMax53 = (int64_t(1) << 53) - 1;

using T = ConfigKeyType;

// Parents before children; within a level, in the order a reader meets them.
const std::vector<ConfigKey>& table() {
  static const std::vector<ConfigKey> keys = {
      {"provider", T::string_or_object, 0, 1, 0, "generic|stripe|adyen|paypal|square|checkout_com|mollie|wechatpay_v3|alipay",
       "\"generic\"", "\"stripe\"",
       "A built-in profile, a profile file (a path ending in .json), or an inline profile object, e.g. "
       "{\"extends\": \"stripe\", \"create_path\": \"/v1/charges\"} (docs/profiles.md)."},
      {"base_url", T::string, kKeyRequired, 1, 0, "", "", "\"https://api.stripe.com\"",
       "The provider's API: http:// or https://, a host, an optional port and path prefix; no query, fragment or "
       "credentials. A trailing / is dropped."},
      {"create_path", T::string, 0, 1, 0, "", "the profile's", "\"/v1/payment_intents\"",
       "Where payments are POSTed, under base_url; may name {order_id} and {merchant_id}. A profile without one "
       "(generic) needs it here, or a path with every submit (else that submit is refused, nothing sent)."},
      {"merchant_id", T::string, 0, 1, 128, "", "none", "\"1900000109\"",
       "The merchant's id at the provider, for paths that name {merchant_id} (WeChat Pay's mchid)."},
      {"account_id", T::string, 0, 1, 128, "", "none: the credential stands for it",
       "\"acct_1Nv0FGQ9RKHgCVdK\"",
       "The merchant account this client acts for. A ledger row belongs to the scope of the client that made it "
       "(profile, base_url, merchant_id, the account, the config's headers); only a client of the same scope "
       "resumes, queries or reconciles it. Without it the account is a keyed hash of the credential, so rotating "
       "a key makes a new scope: name the account before you rotate."},
      {"adopt_unscoped_rows", T::boolean, 0, 0, 0, "", "false", "true",
       "Act on ledger rows written before rows recorded their scope (payretry 0.x, schema 2), as if this "
       "client had made them. Set it only where every such row is this account's (one client per ledger)."},

      {"auth", T::object, 0, 0, 0, "", "none", "{\"bearer\": \"sk_test_xxx\"}",
       "The credentials, in exactly one form: bearer, header with value, api_key, basic, oauth2, wechatpay or "
       "alipay. Without it requests carry none (a request hook may add them)."},
      {"auth.bearer", T::string, kKeyIndirect | kKeySecret, 1, 0, "", "", "\"sk_test_xxx\"",
       "Sent as Authorization: Bearer <token>."},
      {"auth.header", T::string, 0, 1, 0, "", "", "\"X-Api-Key\"",
       "A header that carries the credential; give auth.value with it."},
      {"auth.value", T::string, kKeyIndirect | kKeySecret, 1, 0, "", "", "\"key_live_abc123\"",
       "The value of auth.header."},
      {"auth.api_key", T::string, kKeyIndirect | kKeySecret, 1, 0, "", "", "\"AQE1hmfxK...\"",
       "Sent in the header the profile names (Adyen: X-API-Key)."},
      {"auth.basic", T::object, 0, 0, 0, "", "", "{\"username\": \"shop\", \"password_env\": \"SHOP_PASSWORD\"}",
       "Authorization: Basic base64(username:password)."},
      {"auth.basic.username", T::string, kKeyRequired, 1, 0, "", "", "\"shop\"", "Must not contain ':'."},
      {"auth.basic.password", T::string, kKeyRequired | kKeyIndirect | kKeySecret, 1, 0, "", "", "\"hunter2-long\"",
       "The password."},
      {"auth.oauth2", T::object, 0, 0, 0, "", "",
       "{\"client_id\": \"AZ1\", \"client_secret_env\": \"PAYPAL_CLIENT_SECRET\"}",
       "OAuth2 client credentials: a token fetched from the token path, cached, renewed before it expires and once "
       "after a 401 (PayPal)."},
      {"auth.oauth2.client_id", T::string, kKeyRequired, 1, 0, "", "", "\"AZ1\"", "Must not contain ':'."},
      {"auth.oauth2.client_secret", T::string, kKeyRequired | kKeyIndirect | kKeySecret, 1, 0, "", "",
       "\"EL1-secret\"", "The client secret."},
      {"auth.oauth2.token_path", T::string, 0, 1, 0, "", "the profile's", "\"/v1/oauth2/token\"",
       "Where tokens are issued, under base_url."},
      {"auth.oauth2.scope", T::string, 0, 1, 0, "", "none", "\"payments\"", "The scope asked for."},
      {"auth.wechatpay", T::object, 0, 0, 0, "", "",
       "{\"serial_no\": \"3775B6A45ACD588826D15E583A95F5DD3F3B4DD8\", \"private_key_env\": \"WECHATPAY_KEY\", "
       "\"platform_public_key_env\": \"WECHATPAY_PLATFORM_KEY\"}",
       "WeChat Pay v3: every request signed WECHATPAY2-SHA256-RSA2048, every answer verified."},
      {"auth.wechatpay.serial_no", T::string, kKeyRequired, 1, 0, "", "", "\"3775B6A45ACD588826D15E583A95F5DD3F3B4DD8\"",
       "The merchant API certificate's serial number."},
      {"auth.wechatpay.private_key", T::string, kKeyRequired | kKeyIndirect | kKeyNoInline | kKeySecret, 1, 0, "", "",
       "\"/etc/app/wechatpay/apiclient_key.pem\"", "The merchant's private key (PEM), which signs requests."},
      {"auth.wechatpay.platform_public_key", T::string, kKeyRequired | kKeyIndirect | kKeyNoInline, 1, 0, "", "",
       "\"/etc/app/wechatpay/pub_key.pem\"", "The platform's public key (PEM), which verifies answers."},
      {"auth.wechatpay.platform_serial", T::string, 0, 1, 0, "", "any", "\"PUB_KEY_ID_0114232...\"",
       "The serial answers must be signed under."},
      {"auth.alipay", T::object, 0, 0, 0, "", "",
       "{\"app_id\": \"2021000000000001\", \"private_key_env\": \"ALIPAY_KEY\", "
       "\"alipay_public_key_env\": \"ALIPAY_PUBLIC_KEY\"}",
       "Alipay: the gateway's form signed RSA2, answers verified."},
      {"auth.alipay.app_id", T::string, kKeyRequired, 1, 0, "", "", "\"2021000000000001\"", "The app's id."},
      {"auth.alipay.private_key", T::string, kKeyRequired | kKeyIndirect | kKeyNoInline | kKeySecret, 1, 0, "", "",
       "\"/etc/app/alipay/app_private_key.pem\"", "The app's private key (PEM), which signs requests."},
      {"auth.alipay.alipay_public_key", T::string, kKeyRequired | kKeyIndirect | kKeyNoInline, 1, 0, "", "",
       "\"/etc/app/alipay/alipay_public_key.pem\"", "Alipay's public key (PEM), which verifies answers."},

      {"headers", T::string_map, 0, 0, 0, "", "none", "{\"Stripe-Version\": \"2024-06-20\"}",
       "Extra headers on every request (names are HTTP tokens, values printable). The idempotency key's header, "
       "Content-Type and the credentials' cannot be set here."},

      {"retry", T::object, 0, 0, 0, "", "", "{\"max_attempts\": 4, \"deadline_ms\": 30000}",
       "How often and how long one payment is tried."},
      {"retry.max_attempts", T::integer, 0, 1, 20, "", "4", "4", "Attempts per payment, the first included."},
      {"retry.connect_timeout_ms", T::integer, 0, 1, kDay, "", "3000", "3000", "Bound on connecting, per attempt."},
      {"retry.attempt_timeout_ms", T::integer, 0, 1, kDay, "", "10000", "10000",
       "Bound on one attempt, connecting included; a wait for a free connection of the pool is not part of it (the deadline bounds that)."},
      {"retry.deadline_ms", T::integer, 0, 1, kDay, "", "30000", "30000",
       "Bound on the whole payment, retries included; at least retry.min_attempt_ms."},
      {"retry.backoff_base_ms", T::integer, 0, 0, kDay, "", "500", "500", "The first retry's backoff (full jitter)."},
      {"retry.backoff_cap_ms", T::integer, 0, 0, kDay, "", "5000", "5000",
       "The largest backoff; at least retry.backoff_base_ms."},
      {"retry.retry_after_max_ms", T::integer, 0, 0, kDay, "", "60000", "60000",
       "The longest Retry-After honoured as a backoff floor."},
      {"retry.min_attempt_ms", T::integer, 0, 1, kDay, "", "200", "200",
       "No attempt starts with less time than this left before the deadline."},
      {"retry.jitter_seed", T::integer, 0, 0, kMax53, "", "random", "42", "Tests only: repeatable jitter."},

      {"budget", T::object, 0, 0, 0, "", "", "{\"tokens\": 500}",
       "The client-wide retry budget: in an outage it stops retrying instead of multiplying the load."},
      {"budget.tokens", T::integer, 0, 0, 1000000, "", "500", "500", "Tokens the budget holds (and starts with)."},
      {"budget.retry_cost", T::integer, 0, 0, 1000000, "", "5", "5", "Tokens one retry takes."},
      {"budget.success_refund", T::integer, 0, 0, 1000000, "", "1", "1", "Tokens a success gives back."},

      {"tls", T::object, 0, 0, 0, "", "", "{\"verify\": true}", "Certificate checks."},
      {"tls.verify", T::boolean, 0, 0, 0, "", "true", "true",
       "Check the provider's certificate; false only for tests (a warning is logged)."},
      {"tls.ca_file", T::string, kKeyNullable, 1, 0, "", "the system's CAs", "\"/etc/ssl/certs/ca-certificates.crt\"",
       "A CA bundle to verify the provider with."},

      {"log", T::object, 0, 0, 0, "", "", "{\"path\": \"/var/log/app/payretry.jsonl\", \"level\": \"info\"}",
       "The attempt log: one redacted JSON line per attempt and outcome."},
      {"log.path", T::string, kKeyNullable, 1, 0, "", "no file", "\"/var/log/app/payretry.jsonl\"",
       "A file the lines are appended to."},
      {"log.level", T::string, 0, 0, 0, "debug|info|warn|error", "\"info\"", "\"info\"", "The least level written."},
      {"log.name", T::string, 0, 1, 64, "", "the profile's name", "\"checkout-eu\"",
       "Written as \"client\" in every line, to tell apart the clients of one process or fleet."},

      {"max_body_bytes", T::integer, 0, 1, 64LL << 20, "", "1048576", "1048576",
       "The largest request body accepted (PAY_ETOOBIG above it)."},

      {"ledger", T::string_or_object, kKeyRequired, 1, 0, "", "", "\"sqlite:///var/lib/app/payments.db\"",
       "Where idempotency keys are kept: memory: (or memory:?max_settled=N; lost when the process ends), "
       "sqlite:///abs/path.db or postgresql://...; or an object with url and the options below. No default: a "
       "forgotten ledger would lose every key on restart."},
      {"ledger.url", T::string, kKeyRequired | kKeyIndirect | kKeySecret, 1, 0, "", "",
       "\"postgresql://payretry@db.internal/payments\"",
       "The ledger's URL, as above; a password in it is a secret."},
      {"ledger.secret", T::string, kKeyIndirect | kKeySecret, 16, 0, "", "the ledger's own",
       "\"a-long-random-fingerprint-secret\"",
       "The key of the request fingerprints (at least 16 characters); a durable ledger refuses another than the "
       "one it was made with."},
      {"ledger.lease_margin_ms", T::integer, 0, 0, kDay, "", "30000", "30000",
       "A payment's lease is its deadline plus this; a worker that dies is taken over after it."},
      {"ledger.timeout_ms", T::integer, 0, 50, 600000, "", "5000", "5000",
       "Bound on every wait for the store (a lock, the pool, a statement)."},

      {"webhook", T::object, 0, 0, 0, "", "none: every notification is refused",
       "{\"secret\": \"whsec_...\"}",
       "The secrets that verify the provider's notifications (pay_webhook_apply); the profile's webhook block says "
       "how they are read."},
      {"webhook.secret", T::string, kKeyIndirect | kKeySecret, 1, 0, "", "none", "\"whsec_...\"",
       "The HMAC key: Stripe's endpoint secret, Adyen's HMAC key (hex), Square's signature key, Checkout.com's "
       "signature key, Mollie's shared secret."},
      {"webhook.previous_secret", T::string, kKeyIndirect | kKeySecret, 1, 0, "", "none", "\"whsec_old...\"",
       "During a rotation: a notification verified by this key is accepted too."},
      {"webhook.api_v3_key", T::string, kKeyIndirect | kKeySecret, 32, 32, "", "none", "\"0123456789abcdef0123456789abcdef\"",
       "WeChat Pay: the 32-byte APIv3 key that decrypts a notification's resource."},
      {"webhook.public_key", T::string, kKeyIndirect | kKeyNoInline, 1, 0, "", "auth's provider key",
       "\"/etc/app/wechatpay/pub_key.pem\"",
       "The provider's key or certificate (PEM) that signs notifications: WeChat Pay's platform key, Alipay's "
       "public key, PayPal's pinned certificate."},
      {"webhook.public_key_id", T::string, 0, 1, 128, "", "auth's platform_serial, else any",
       "\"PUB_KEY_ID_0114232...\"", "WeChat Pay: the Wechatpay-Serial notifications must name."},
      {"webhook.webhook_id", T::string, 0, 1, 128, "", "none", "\"8PT597110X687430LKGECATA\"",
       "PayPal: this endpoint's webhook id (part of what PayPal signs)."},
      {"webhook.notification_url", T::string, 0, 1, 2048, "", "the URL of each request", "\"https://shop.example/hooks/square\"",
       "Square: the subscription's notification URL (Square signs it with the body); set it when a proxy rewrites "
       "the URL the server sees."},
      {"webhook.tolerance_ms", T::integer, 0, 1000, kDay, "", "the scheme's", "300000",
       "How old a signed timestamp may be (Stripe, WeChat Pay, PayPal)."},

      {"in_progress_wait_ms", T::integer, 0, 0, kDay, "", "0", "0",
       "How long a submit waits for another worker holding the same order before answering IN_PROGRESS."},
      {"key_retention_ms", T::integer, 0, 1000, 400 * kDay, "", "the profile's", "86400000",
       "How long the provider honours a key; a payment is never re-sent once it may have expired."},
      {"not_found_grace_ms", T::integer, 0, 0, 30 * kDay, "", "60000", "60000",
       "\"Not found\" proves \"no payment\" only this long after the payment's last attempt: longer than the "
       "provider's read lag and than it may go on processing a request the client stopped waiting for."},
      {"max_connections", T::integer, 0, 1, 65536, "", "256", "256",
       "Connections the concurrent engine keeps to the provider; beyond them, payments wait in line for a free one."},
      {"max_opening_connections", T::integer, 0, 1, 65536, "", "64", "64",
       "Connections the concurrent engine opens at once, shared among its threads (at least one each); other "
       "payments that need a new connection wait in line for one, not charged to the attempt, so that a burst "
       "does not overflow the provider's listen backlog."},
      {"engine_threads", T::integer, 0, 0, 64, "", "0", "0",
       "Threads of the concurrent engine; 0: one per core, and at least one per 1,000 max_connections (up to 64)."},
      {"proxy", T::string, kKeyIndirect | kKeySecret | kKeyNullable, 1, 0, "", "none", "\"http://proxy.internal:3128\"",
       "The only proxy requests take (http://, https://, socks5://, socks5h://); the environment's http_proxy and "
       "the like are ignored. Credentials in it are secrets."},
  };
  return keys;
}

// What the parser checks of a string beyond its type and length, as a pattern on the value
// given inline: ECMA-262, the dialect of JSON Schema's "pattern", which Python's re reads alike.
// Each mirrors a check of config.cpp or validate.cpp, named beside it; the schema agreement
// test (tests/unit/config_schema_agreement.py) feeds examples and counter-examples of each
// through the schema and the parser.
struct StringRule {
  std::string pattern;
  std::string_view or_text;  // with choices: what else the parser takes, for docs/config.md
};

std::string n(size_t v) { return std::to_string(v); }

// A character that is no C0 control nor DEL (config.cpp check_ledger_url, parse_log).
const std::string kNoControl = "[^\\x00-\\x1f\\x7f]";

// The end of the value. Not "$": in Python's re (python-jsonschema) "$" also matches before a
// final newline, so "https://a.example\n" would pass a pattern the parser refuses; a lookahead
// for no character left means the end in both dialects.
const std::string kEnd = "(?![\\s\\S])";

// check_header_name (an RFC 9110 token) and check_not_reserved (a header payretry sets
// itself, in any case).
std::string header_name_pattern() {
  std::string reserved;
  for (std::string_view r : reserved_header_names()) {
    if (!reserved.empty()) reserved += '|';
    for (char c : r) {
      if (std::isalpha(static_cast<unsigned char>(c))) {
        reserved += '[';
        reserved += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        reserved += c;
        reserved += ']';
      } else {
        reserved += c;
      }
    }
  }
  return "^(?!(?:" + reserved + ")" + kEnd + ")[!#$%&'*+.^_`|~0-9A-Za-z-]{1," + n(kMaxHeaderNameLength) + "}" + kEnd;
}

// check_header_value: visible ASCII, space and tab (no CR or LF).
std::string header_value_pattern() { return "^[\\t -~]{0," + n(kMaxHeaderValueLength) + "}" + kEnd; }

const std::map<std::string_view, StringRule>& string_rules() {
  static const std::map<std::string_view, StringRule> rules = [] {
    // check_path: '/', then visible ASCII but '#'.
    const std::string path = "^/[!\"$-~]{0," + n(kMaxPathLength - 1) + "}" + kEnd;
    // printable_ascii (merchant_id, account_id): visible ASCII.
    const std::string visible = "^[!-~]*" + kEnd;
    // The Basic user and the OAuth2 client id: a header value without ':' (it would move the
    // boundary between user and password).
    const std::string no_colon = "^[\\t -9;-~]{0," + n(kMaxHeaderValueLength) + "}" + kEnd;
    // check_ledger_url: no control character, then memory:[?...], sqlite:///<path> or
    // postgres[ql]://...
    const std::string ledger = "^(memory:(\\?" + kNoControl + "*)?|sqlite:///" + kNoControl + "+|postgres(ql)?://" +
                               kNoControl + "*)" + kEnd;
    std::map<std::string_view, StringRule> r = {
        // parse_provider: a name, or a profile file when it ends in .json after something.
        {"provider", {"^[\\s\\S]+[.]json" + kEnd, "or a path ending in .json"}},
        // check_base_url: http(s)://, a host (not '/'), visible ASCII without ?, # or @.
        {"base_url", {"^https?://[!\"$-.0->A-~][!\"$-/0->A-~]*" + kEnd, ""}},
        {"create_path", {path, ""}},
        {"auth.oauth2.token_path", {path, ""}},
        {"merchant_id", {visible, ""}},
        {"account_id", {visible, ""}},
        {"auth.header", {header_name_pattern(), ""}},
        {"auth.basic.username", {no_colon, ""}},
        {"auth.oauth2.client_id", {no_colon, ""}},
        // parse_log: no control characters.
        {"log.name", {"^" + kNoControl + "*" + kEnd, ""}},
        {"ledger", {ledger, ""}},
        {"ledger.url", {ledger, ""}},
        // parse_proxy: one of four schemes, then visible ASCII.
        {"proxy", {"^(https?|socks5h?)://[!-~]*" + kEnd, ""}},
        // parse_webhook: the URL the subscription names.
        {"webhook.notification_url", {"^https?://", ""}},
    };
    // Credentials that travel in a header (header_secret, printable_secret).
    for (std::string_view key : {"auth.bearer", "auth.value", "auth.api_key", "auth.basic.password",
                                 "auth.oauth2.client_secret", "auth.oauth2.scope", "auth.wechatpay.serial_no",
                                 "auth.wechatpay.platform_serial", "auth.alipay.app_id", "webhook.secret",
                                 "webhook.previous_secret", "webhook.api_v3_key", "webhook.public_key_id",
                                 "webhook.webhook_id"})
      r.emplace(key, StringRule{header_value_pattern(), ""});
    return r;
  }();
  return rules;
}

const StringRule* string_rule(std::string_view path) {
  const auto it = string_rules().find(path);
  return it == string_rules().end() ? nullptr : &it->second;
}

// The forms auth takes, exactly one of them (config.cpp parse_auth): the keys of each.
const std::vector<std::vector<std::string_view>>& auth_forms() {
  static const std::vector<std::vector<std::string_view>> forms = {
      {"bearer"}, {"header", "value"}, {"api_key"}, {"basic"}, {"oauth2"}, {"wechatpay"}, {"alipay"}};
  return forms;
}

std::string_view parent_of(std::string_view path) {
  const size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
}

std::string_view leaf_of(std::string_view path) {
  const size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

// The names one key takes in JSON.
std::vector<std::string> forms_of(const ConfigKey& k) {
  const std::string leaf(leaf_of(k.path));
  std::vector<std::string> out;
  if (!k.has(kKeyNoInline)) out.push_back(leaf);
  if (k.has(kKeyIndirect)) {
    out.push_back(leaf + "_env");
    out.push_back(leaf + "_file");
  }
  return out;
}

std::string range_text(const ConfigKey& k) {
  if (k.type == T::integer) return std::to_string(k.min) + " to " + std::to_string(k.max);
  if (!k.choices.empty()) {
    std::string s(k.choices);
    for (size_t at; (at = s.find('|')) != std::string::npos;) s.replace(at, 1, ", ");
    const StringRule* rule = string_rule(k.path);
    return "one of " + s + (rule && !rule->or_text.empty() ? ", " + std::string(rule->or_text) : "");
  }
  if (k.type == T::string && k.min > 1 && k.max > 0)
    return std::to_string(k.min) + " to " + std::to_string(k.max) + " characters";
  if (k.type == T::string && k.max > 0) return "at most " + std::to_string(k.max) + " characters";
  if (k.type == T::string && k.min > 1) return "at least " + std::to_string(k.min) + " characters";
  return "";
}

std::string type_text(const ConfigKey& k) {
  std::string t = config_key_type_name(k.type);
  if (k.has(kKeyNullable)) t += " or null";
  return t;
}

std::string code(std::string_view s) { return "`" + std::string(s) + "`"; }

// A table cell: no raw '|' or newline may end it early.
std::string cell(std::string s) {
  for (size_t at = 0; (at = s.find('|', at)) != std::string::npos; at += 2) s.replace(at, 1, "\\|");
  return s;
}

std::string key_cell(const ConfigKey& k) {
  std::string s;
  for (const std::string& f : forms_of(k)) s += (s.empty() ? "" : "<br>") + code(f);
  return s;
}

// The meaning of a key, and what its flags add, for the Markdown table
// (`markdown`) or a schema's description (plain text).
std::string notes_text(const ConfigKey& k, bool markdown) {
  const std::string tick = markdown ? "`" : "";
  std::string s(k.doc);
  if (k.has(kKeyRequired)) s = (markdown ? "**Required.** " : "Required. ") + s;
  if (k.has(kKeyIndirect))
    s += std::string(k.has(kKeyNoInline) ? " Give" : " Or give") + " " + tick + std::string(leaf_of(k.path)) + "_env" +
         tick + " (an environment variable's name) or " + tick + std::string(leaf_of(k.path)) + "_file" + tick +
         (k.has(kKeyNoInline) ? " (a file's path, read as it is); only one form."
                              : " (a file's path; one trailing newline is dropped); only one form.");
  if (k.has(kKeySecret)) s += " Never logged.";
  return s;
}

cJSON* schema_for(const ConfigKey& k, std::string_view form);

cJSON* required_one(std::string_view name) {
  cJSON* alt = cJSON_CreateObject();
  cJSON* req = cJSON_AddArrayToObject(alt, "required");
  cJSON_AddItemToArray(req, cJSON_CreateString(std::string(name).c_str()));
  return alt;
}

// {"anyOf": [{"required": [f]}, ...]} over every form of every key named: "one of them is given".
cJSON* any_form_of(std::string_view parent, const std::vector<std::string_view>& leaves) {
  cJSON* any_of = cJSON_CreateArray();
  for (std::string_view leaf : leaves)
    for (const std::string& f : forms_of(config_key(std::string(parent) + "." + std::string(leaf))))
      cJSON_AddItemToArray(any_of, required_one(f));
  if (cJSON_GetArraySize(any_of) == 1) {
    cJSON* only = cJSON_DetachItemFromArray(any_of, 0);
    cJSON_Delete(any_of);
    return only;
  }
  cJSON* wrap = cJSON_CreateObject();
  cJSON_AddItemToObject(wrap, "anyOf", any_of);
  return wrap;
}

// auth: exactly one form (config.cpp parse_auth), and header and value only together.
void add_auth_forms(cJSON* o) {
  cJSON* one_of = cJSON_AddArrayToObject(o, "oneOf");
  for (const std::vector<std::string_view>& form : auth_forms()) cJSON_AddItemToArray(one_of, any_form_of("auth", form));
  cJSON* with_header = cJSON_AddObjectToObject(o, "dependentRequired");
  for (const std::string& f : forms_of(config_key("auth.value"))) {
    cJSON* need = cJSON_AddArrayToObject(with_header, f.c_str());
    cJSON_AddItemToArray(need, cJSON_CreateString("header"));
  }
  cJSON* with_value = cJSON_AddObjectToObject(o, "dependentSchemas");
  cJSON_AddItemToObject(with_value, "header", any_form_of("auth", {"value"}));
}

cJSON* object_schema(std::string_view parent) {
  cJSON* o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", "object");
  cJSON* props = cJSON_AddObjectToObject(o, "properties");
  cJSON* required = cJSON_CreateArray();
  cJSON* all_of = cJSON_CreateArray();
  for (const ConfigKey& k : table()) {
    if (parent_of(k.path) != parent) continue;
    const std::vector<std::string> forms = forms_of(k);
    const std::string leaf(leaf_of(k.path));
    for (const std::string& f : forms) cJSON_AddItemToObject(props, f.c_str(), schema_for(k, f.substr(leaf.size())));
    if (k.has(kKeyRequired) && forms.size() == 1) {
      cJSON_AddItemToArray(required, cJSON_CreateString(forms[0].c_str()));
    } else if (k.has(kKeyRequired)) {
      // One of its forms is required: {"oneOf": [{"required": [f]}, ...]}.
      cJSON* one_of = cJSON_CreateArray();
      for (const std::string& f : forms) cJSON_AddItemToArray(one_of, required_one(f));
      cJSON* wrap = cJSON_CreateObject();
      cJSON_AddItemToObject(wrap, "oneOf", one_of);
      cJSON_AddItemToArray(all_of, wrap);
    } else {
      // An optional key in at most one form ("give only one of"): {"not": {"required": [a, b]}}
      // for each two of its forms.
      for (size_t a = 0; a < forms.size(); ++a)
        for (size_t b = a + 1; b < forms.size(); ++b) {
          cJSON* both = cJSON_CreateObject();
          cJSON* req = cJSON_AddArrayToObject(both, "required");
          cJSON_AddItemToArray(req, cJSON_CreateString(forms[a].c_str()));
          cJSON_AddItemToArray(req, cJSON_CreateString(forms[b].c_str()));
          cJSON* no = cJSON_CreateObject();
          cJSON_AddItemToObject(no, "not", both);
          cJSON_AddItemToArray(all_of, no);
        }
    }
  }
  if (cJSON_GetArraySize(required) > 0) cJSON_AddItemToObject(o, "required", required);
  else cJSON_Delete(required);
  if (cJSON_GetArraySize(all_of) > 0) cJSON_AddItemToObject(o, "allOf", all_of);
  else cJSON_Delete(all_of);
  if (parent == "auth") add_auth_forms(o);
  cJSON_AddFalseToObject(o, "additionalProperties");
  return o;
}

// The inline string: its length in characters, its choices and its pattern. A key with both
// (provider) takes either: {"anyOf": [{"enum": [...]}, {"pattern": ...}]}.
cJSON* string_schema(const ConfigKey& k) {
  cJSON* s = cJSON_CreateObject();
  cJSON_AddStringToObject(s, "type", "string");
  if (k.min > 0) cJSON_AddNumberToObject(s, "minLength", static_cast<double>(k.min));
  if (k.max > 0) cJSON_AddNumberToObject(s, "maxLength", static_cast<double>(k.max));
  cJSON* choices = nullptr;
  if (!k.choices.empty()) {
    choices = cJSON_CreateObject();
    cJSON* e = cJSON_AddArrayToObject(choices, "enum");
    std::string_view rest = k.choices;
    while (!rest.empty()) {
      const size_t bar = rest.find('|');
      cJSON_AddItemToArray(e, cJSON_CreateString(std::string(rest.substr(0, bar)).c_str()));
      rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
    }
  }
  const StringRule* rule = string_rule(k.path);
  if (choices && rule) {
    cJSON* any_of = cJSON_AddArrayToObject(s, "anyOf");
    cJSON_AddItemToArray(any_of, choices);
    cJSON* pattern = cJSON_CreateObject();
    cJSON_AddStringToObject(pattern, "pattern", rule->pattern.c_str());
    cJSON_AddItemToArray(any_of, pattern);
  } else if (choices) {
    cJSON_AddItemToObject(s, "enum", cJSON_DetachItemFromObject(choices, "enum"));
    cJSON_Delete(choices);
  } else if (rule) {
    cJSON_AddStringToObject(s, "pattern", rule->pattern.c_str());
  }
  return s;
}

// A NAME_env or NAME_file form (`form` "_env", "_file"), checked as config.cpp reads it:
// read_secret_env takes a variable's name, read_secret_file a path that cannot be a secret
// pasted in its place (no control character, no PEM "-----").
cJSON* indirect_schema(const ConfigKey& k, std::string_view form) {
  cJSON* s = cJSON_CreateObject();
  cJSON_AddStringToObject(s, "type", "string");
  cJSON_AddNumberToObject(s, "minLength", 1);
  if (form == "_env") {
    cJSON_AddNumberToObject(s, "maxLength", 256);
    cJSON_AddStringToObject(s, "pattern", ("^[A-Za-z_][A-Za-z0-9_]*" + kEnd).c_str());
  } else {
    cJSON_AddNumberToObject(s, "maxLength", 4096);
    cJSON_AddStringToObject(s, "pattern", ("^" + kNoControl + "*" + kEnd).c_str());
    cJSON* no_pem = cJSON_AddObjectToObject(s, "not");
    cJSON_AddStringToObject(no_pem, "pattern", "-----");
  }
  const std::string what = "The " + std::string(k.path) + " read from an environment variable (NAME_env) or a file " +
                           (k.has(kKeyNoInline) ? "(NAME_file, read as it is)" : "(NAME_file; one trailing newline dropped)") +
                           ". Only one form of the key.";
  cJSON_AddStringToObject(s, "description", what.c_str());
  return s;
}

cJSON* schema_for(const ConfigKey& k, std::string_view form) {
  if (!form.empty()) return indirect_schema(k, form);
  cJSON* s = nullptr;
  switch (k.type) {
    case T::object: s = object_schema(k.path); break;
    case T::integer:
      s = cJSON_CreateObject();
      cJSON_AddStringToObject(s, "type", "integer");
      // Written as digits: cJSON prints a double with 15 significant digits when that reads
      // back "close enough", which made retry.jitter_seed's 2^53-1 a maximum of 9007199254740990.
      cJSON_AddItemToObject(s, "minimum", cJSON_CreateRaw(std::to_string(k.min).c_str()));
      cJSON_AddItemToObject(s, "maximum", cJSON_CreateRaw(std::to_string(k.max).c_str()));
      break;
    case T::boolean:
      s = cJSON_CreateObject();
      cJSON_AddStringToObject(s, "type", "boolean");
      break;
    case T::string:
      s = string_schema(k);
      break;
    case T::string_map: {
      // headers (config.cpp parse_headers): token names payretry does not set itself,
      // header values (which may be empty).
      s = cJSON_CreateObject();
      cJSON_AddStringToObject(s, "type", "object");
      cJSON* names = cJSON_AddObjectToObject(s, "propertyNames");
      cJSON_AddStringToObject(names, "pattern", header_name_pattern().c_str());
      cJSON* values = cJSON_AddObjectToObject(s, "additionalProperties");
      cJSON_AddStringToObject(values, "type", "string");
      cJSON_AddStringToObject(values, "pattern", header_value_pattern().c_str());
      break;
    }
    case T::string_or_object: {
      s = cJSON_CreateObject();
      cJSON* one_of = cJSON_AddArrayToObject(s, "oneOf");
      cJSON_AddItemToArray(one_of, string_schema(k));
      bool has_children = false;
      for (const ConfigKey& c : table()) has_children = has_children || parent_of(c.path) == k.path;
      cJSON* obj = has_children ? object_schema(k.path) : cJSON_CreateObject();
      if (!has_children) cJSON_AddStringToObject(obj, "type", "object");  // a profile: docs/profiles.md
      cJSON_AddItemToArray(one_of, obj);
      break;
    }
  }
  if (k.has(kKeyNullable)) {
    // {"type": ["string", "null"]}
    cJSON* t = cJSON_DetachItemFromObjectCaseSensitive(s, "type");
    cJSON* both = cJSON_CreateArray();
    cJSON_AddItemToArray(both, t);
    cJSON_AddItemToArray(both, cJSON_CreateString("null"));
    cJSON_AddItemToObject(s, "type", both);
  }
  cJSON_AddStringToObject(s, "description", notes_text(k, false).c_str());
  if (cJSON* d = k.type == T::integer || k.type == T::boolean || !k.choices.empty()
                     ? cJSON_Parse(std::string(k.default_text).c_str())
                     : nullptr)
    cJSON_AddItemToObject(s, "default", d);
  cJSON* examples = cJSON_AddArrayToObject(s, "examples");
  cJSON_AddItemToArray(examples, cJSON_Parse(std::string(k.example).c_str()));
  return s;
}

}  // namespace

const char* config_key_type_name(ConfigKeyType t) {
  switch (t) {
    case T::string: return "string";
    case T::integer: return "integer";
    case T::boolean: return "boolean";
    case T::object: return "object";
    case T::string_or_object: return "string or object";
    case T::string_map: return "object of strings";
  }
  return "?";
}

const std::vector<ConfigKey>& config_keys() { return table(); }

const ConfigKey* find_config_key(std::string_view path) {
  static const std::map<std::string_view, const ConfigKey*> index = [] {
    std::map<std::string_view, const ConfigKey*> m;
    for (const ConfigKey& k : table()) m.emplace(k.path, &k);
    return m;
  }();
  const auto it = index.find(path);
  return it == index.end() ? nullptr : it->second;
}

const ConfigKey& config_key(std::string_view path) {
  if (const ConfigKey* k = find_config_key(path)) return *k;
  throw std::logic_error("config key table has no " + std::string(path));
}

std::vector<std::string> config_names_at(std::string_view parent) {
  std::vector<std::string> out;
  for (const ConfigKey& k : table())
    if (parent_of(k.path) == parent)
      for (std::string& f : forms_of(k)) out.push_back(std::move(f));
  return out;
}

std::string config_reference_markdown() {
  // One table per level, the levels in the order the table first names them.
  std::vector<std::string_view> levels;
  for (const ConfigKey& k : table())
    if (std::find(levels.begin(), levels.end(), parent_of(k.path)) == levels.end()) levels.push_back(parent_of(k.path));
  std::string md;
  for (const std::string_view level : levels) {
    md += std::string(md.empty() ? "" : "\n") + "### " + (level.empty() ? "Top level" : code(level)) + "\n\n";
    if (!level.empty()) md += cell(std::string(config_key(level).doc)) + "\n\n";
    md += "| key | type | default | range | example | meaning |\n|---|---|---|---|---|---|\n";
    for (const ConfigKey& k : table()) {
      if (parent_of(k.path) != level) continue;
      const std::string dflt = k.default_text.empty() ? (k.has(kKeyRequired) ? "required" : "-")
                               : k.type == T::integer || k.type == T::boolean || k.default_text[0] == '"'
                                   ? code(k.default_text)
                                   : std::string(k.default_text);
      const std::string range = range_text(k);
      md += "| " + key_cell(k) + " | " + type_text(k) + " | " + cell(dflt) + " | " +
            cell(range.empty() ? "-" : range) + " | " + cell(code(k.example)) + " | " + cell(notes_text(k, true)) +
            " |\n";
    }
  }
  return md;
}

std::string config_python_types() {
  // "auth.basic" -> "AuthBasicConfig"; the top level is ClientConfig.
  auto class_of = [](std::string_view level) {
    if (level.empty()) return std::string("ClientConfig");
    std::string name;
    bool up = true;
    for (char c : level) {
      if (c == '.' || c == '_') {
        up = true;
        continue;
      }
      name += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      up = false;
    }
    return name + "Config";
  };
  auto has_children = [](std::string_view path) {
    for (const ConfigKey& c : table())
      if (parent_of(c.path) == path) return true;
    return false;
  };
  std::vector<std::string_view> levels;
  for (const ConfigKey& k : table())
    if (std::find(levels.begin(), levels.end(), parent_of(k.path)) == levels.end()) levels.push_back(parent_of(k.path));
  std::string py =
      "\"\"\"The client config as TypedDicts, for type checkers: annotate a config dict as\n"
      "``payretry.ClientConfig`` and mypy checks its keys and value types.\n\n"
      "Generated from the parser's key table (src/model/config_keys.cpp) by\n"
      "``build/tests/unit/config_reference_tool --write .``; do not edit. Every key is optional\n"
      "here (total=False); docs/config.md says which are required, and the parser checks\n"
      "ranges, choices and that exactly one form of a secret is given.\n"
      "\"\"\"\n\nfrom __future__ import annotations\n\nfrom typing import Any, Dict, Optional, TypedDict, Union\n";
  // Nested levels first: the functional form evaluates its value types at once.
  for (auto level = levels.rbegin(); level != levels.rend(); ++level) {
    py += "\n" + class_of(*level) + " = TypedDict(\n    \"" + class_of(*level) + "\",\n    {\n";
    for (const ConfigKey& k : table()) {
      if (parent_of(k.path) != *level) continue;
      std::string type;
      switch (k.type) {
        case T::string: type = "str"; break;
        case T::integer: type = "int"; break;
        case T::boolean: type = "bool"; break;
        case T::object: type = class_of(k.path); break;
        case T::string_or_object:
          type = "Union[str, " + (has_children(k.path) ? class_of(k.path) : std::string("Dict[str, Any]")) + "]";
          break;
        case T::string_map: type = "Dict[str, str]"; break;
      }
      if (k.has(kKeyNullable)) type = "Optional[" + type + "]";
      for (const std::string& form : forms_of(k))
        py += "        \"" + form + "\": " + (form == std::string(leaf_of(k.path)) ? type : std::string("str")) + ",\n";
    }
    py += "    },\n    total=False,\n)\n";
  }
  py += "\n__all__ = [";
  std::vector<std::string> names;
  for (const std::string_view level : levels) names.push_back(class_of(level));
  std::sort(names.begin(), names.end());
  for (size_t i = 0; i < names.size(); ++i) py += (i ? ", \"" : "\"") + names[i] + "\"";
  py += "]\n";
  return py;
}

std::string config_json_schema() {
  JsonPtr root(object_schema(""));
  cJSON* r = root.get();
  // The meta keys go first: detach the body and re-add it after them.
  JsonPtr schema(cJSON_CreateObject());
  cJSON_AddStringToObject(schema.get(), "$schema", "https://json-schema.org/draft/2020-12/schema");
  cJSON_AddStringToObject(schema.get(), "$id", "https://payretry.invalid/config.schema.json");
  cJSON_AddStringToObject(schema.get(), "title", "payretry client config");
  cJSON_AddStringToObject(
      schema.get(), "description",
      "Generated from the parser's key table (src/model/config_keys.cpp); see docs/config.md. The parser also "
      "refuses what a schema cannot say: a key given twice, text after the object, \\u0000 in a string; a *_env "
      "variable that is not set or a *_file that cannot be read, and a value read from either that breaks its "
      "key's rule here; retry.backoff_cap_ms below retry.backoff_base_ms, retry.deadline_ms below "
      "retry.min_attempt_ms (defaults included); and what the provider's profile asks: an inline profile or a "
      "profile file is read as docs/profiles.md says, merchant_id is required where the profile's paths name "
      "{merchant_id}, auth.wechatpay or auth.alipay (or a request hook) where the provider signs, auth.api_key "
      "only where the profile names an API-key header, and no header named as the profile's idempotency-key "
      "header.");
  while (cJSON* item = r->child) {
    cJSON_DetachItemViaPointer(r, item);
    cJSON_AddItemToObject(schema.get(), item->string, item);
  }
  // Pretty, for readers and diffs; cJSON indents with tabs.
  std::unique_ptr<char, void (*)(void*)> text(cJSON_Print(schema.get()), cJSON_free);
  if (!text) throw std::bad_alloc();
  return std::string(text.get()) + "\n";
}

}  // namespace payretry
