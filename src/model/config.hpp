// The client's JSON configuration (docs/design.md "Configuration"), parsed strictly: unknown keys,
// wrong types and out-of-range values are errors that name the key.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "http.hpp"

namespace payretry {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RetryPolicy {
  int max_attempts = 4;
  int64_t connect_timeout_ms = 3000;
  int64_t attempt_timeout_ms = 10000;
  int64_t deadline_ms = 30000;
  int64_t backoff_base_ms = 500;
  int64_t backoff_cap_ms = 5000;
  int64_t retry_after_max_ms = 60000;
  int64_t min_attempt_ms = 200;
  std::optional<uint64_t> jitter_seed;  // tests only: repeatable jitter
};

struct BudgetPolicy {
  int tokens = 500;
  int retry_cost = 5;
  int success_refund = 1;
};

// Credentials that are more than a fixed header: read and checked when the
// config is parsed, used by the authenticator the profile's scheme names
// (auth.hpp). Never logged.
struct AuthConfig {
  enum class Kind { none, fixed_headers, api_key, oauth2, wechatpay, alipay } kind = Kind::none;
  std::string api_key;  // api_key: sent in the profile's header
  // oauth2 (client credentials)
  std::string client_id;
  std::string client_secret;
  std::string token_path;  // empty: the profile's
  std::string scope;
  // wechatpay, alipay: PEM text, read from the file or environment variable
  // the config names
  std::string private_key_pem;      // the merchant's: signs requests
  std::string peer_public_key_pem;  // the provider's: verifies its answers
  std::string serial_no;            // wechatpay: the merchant certificate's serial
  std::string platform_serial;      // wechatpay: answers must name this key (empty: any)
  std::string app_id;               // alipay
};

// The secrets that verify the provider's notifications (config "webhook";
// the profile's webhook block says how they are read). Never logged.
struct WebhookConfig {
  std::vector<std::string> secrets;  // the current HMAC key, then the previous one during a rotation
  std::string api_v3_key;            // WeChat Pay
  std::string public_key_pem;        // empty: auth's provider key (WeChat Pay, Alipay)
  std::string public_key_id;         // empty: auth's platform_serial
  std::string webhook_id;            // PayPal
  std::string notification_url;      // Square; empty: the request's
  int64_t tolerance_ms = 0;          // 0: the scheme's
  bool configured = false;           // the config has a webhook block
};

struct Config {
  std::string provider = "generic";  // a built-in profile's name
  std::string provider_json;         // or an inline / file profile (JSON text)
  std::string base_url;        // scheme://host[:port][/prefix], no trailing '/'
  std::string create_path;     // empty: the profile's
  Headers auth_headers;        // fixed credentials (bearer, basic, header): never logged
  AuthConfig auth;
  WebhookConfig webhook;
  Headers extra_headers;       // e.g. a provider API version header
  RetryPolicy retry;
  BudgetPolicy budget;
  bool tls_verify = true;
  std::string ca_file;
  std::string log_path;
  int log_level = 20;
  std::string log_name;  // "client" of each log line; empty: the profile's name
  size_t max_body_bytes = 1u << 20;
  // Ledger (docs/design.md "Ledger"). Required in the JSON: "memory:" keeps keys in this
  // process only, and must be written out to be had.
  std::string ledger_url = "memory:";
  std::string ledger_secret;            // empty: the ledger's own
  int64_t ledger_timeout_ms = 5000;     // bound on every wait for the store (lock, pool, statement)
  int64_t in_progress_wait_ms = 0;
  int64_t lease_margin_ms = 30000;      // lease = deadline + this
  // How long the provider honours a key; unset: the profile's.
  std::optional<int64_t> key_retention_ms;
  // "Not found" at the provider proves "no payment" only this long after the
  // payment's last attempt (providers read from lagging replicas).
  int64_t not_found_grace_ms = 60000;
  // Connections the concurrent engine keeps to the provider's host; more
  // payments in flight wait for a free one (or share one over HTTP/2).
  int64_t max_connections = 256;
  // Connections being opened at once at most (a SYN and a TLS handshake
  // each), shared out among the engine threads like max_connections; the
  // rest wait in the transport's line. A burst of payments on a cold pool
  // would otherwise open hundreds at the same moment and overflow the
  // provider's listen backlog (dropped SYNs, connect timeouts, retries).
  int64_t max_opening_connections = 64;
  // Threads of the concurrent engine, each with its own libcurl multi,
  // timers and group commits; a payment stays on the one it starts on (its
  // order id's, or its done callback's: Client::multi_for). 0: one per
  // core, and at least one per 1,000 of max_connections (up to 64).
  // max_connections is shared out among them.
  int engine_threads = 0;
  // The only proxy requests may take; empty: none, whatever the
  // environment's http_proxy / https_proxy say.
  std::string proxy;
  // The merchant's id at the provider, for lookup templates ({merchant_id}:
  // WeChat Pay's mchid).
  std::string merchant_id;
  // The merchant account this client acts for, part of its scope (core/scope.hpp);
  // empty: a keyed hash of the credential and the headers stands for it.
  std::string account_id;
  // Rows written before rows recorded a scope ("") are this client's to act on.
  bool adopt_unscoped_rows = false;

  // Every credential the config holds, for redaction.
  std::vector<std::string> secrets() const;
};

// Throws ConfigError("<key>: <what is wrong>"); never includes secret values.
Config parse_config(std::string_view json);

}  // namespace payretry
