// Webhook (notification) signature verification, one row per provider scheme,
// as curl's `struct Curl_ssl` keeps one table row per TLS backend: a name,
// what the scheme can promise (capability bits), and a pure `verify`. No I/O
// and no wall clock: the caller passes `now_unix_ms`; a scheme that would
// need the network (PayPal's certificate URL, a verification call) verifies
// offline against what the config pins, or is a hint.
//
// Nothing here decides what an event does to a payment; that is the core's,
// which asks the bits, never the names. A scheme that is not configured is
// `none`: refused, never verified by default.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "http.hpp"

namespace payretry {

// A notification as it reached the receiver: the raw body, byte for byte
// (every scheme signs bytes, never parsed JSON).
struct WebhookRequest {
  std::string method;
  std::string url;  // as received; Square signs the subscription's URL (WebhookSecrets::notification_url)
  Headers headers;  // names in any case
  std::string body;
};

// What the schemes need from the config. Several `keys` during a rotation:
// a notification verifies when any of them verifies it.
struct WebhookSecrets {
  // HMAC secrets: Stripe's endpoint secret (whsec_..., used as its text),
  // Adyen's HMAC key (hex, decoded to bytes), Square's signature key,
  // Checkout.com's signature key, Mollie's shared secret.
  std::vector<std::string> keys;
  std::string api_v3_key;      // WeChat Pay: the 32-byte APIv3 key that decrypts `resource`
  std::string public_key_pem;  // WeChat Pay's platform key, Alipay's public key, PayPal's pinned certificate or key
  std::string public_key_id;   // WeChat Pay: the Wechatpay-Serial the key answers to ("" = any)
  std::string webhook_id;      // PayPal: this endpoint's webhook id (signed)
  std::string notification_url;  // Square: the subscription's URL; "" = the request's
};

struct WebhookVerdict {
  enum Kind { verified, hint_only, refused } kind = refused;
  std::string why;   // empty when verified
  // What may be read: WeChat Pay's decrypted resource, otherwise the raw
  // body. Empty when refused.
  std::string body;
  // Adyen: each verified NotificationRequestItem's JSON, in order. Mollie's
  // id-only hint: the object id it names.
  std::vector<std::string> items;
};

// Capability bits: what a verified verdict of the scheme means.
enum WebhookCapability : unsigned {
  webhook_signed = 1u << 0,          // the body is authenticated by a key
  webhook_timestamped = 1u << 1,     // a signed time bounds replays (the tolerance applies)
  webhook_encrypted_body = 1u << 2,  // the verdict's body is a decrypted plaintext, not the raw body
  webhook_id_only = 1u << 3,         // the notification names an object only: always a hint, look it up
  webhook_batch = 1u << 4,           // one notification carries several events (WebhookVerdict::items)
};

using WebhookVerifyFn = WebhookVerdict (*)(const WebhookRequest& request, const WebhookSecrets& secrets,
                                           int64_t now_unix_ms, int64_t tolerance_ms);

struct WebhookScheme {
  const char* name;
  unsigned capabilities;
  int64_t default_tolerance_ms;  // timestamped schemes: the provider's (or its SDK's) window
  WebhookVerifyFn verify;        // pure; never throws
};

// Every scheme, `none` first.
const std::vector<WebhookScheme>& webhook_schemes();
// The row named `name`; nullptr for a name no row has.
const WebhookScheme* find_webhook_scheme(std::string_view name);

// The scheme named `scheme` ("" = none) verifies `request`. tolerance_ms <= 0
// takes the scheme's default. Never throws: an unknown scheme, an unusable
// key or any failure inside is a refusal that says why.
WebhookVerdict verify_webhook(std::string_view scheme, const WebhookRequest& request, const WebhookSecrets& secrets,
                              int64_t now_unix_ms, int64_t tolerance_ms = 0);

// ---- the rows' functions and their shared helpers (call them through the table) ----------
namespace webhook {

WebhookVerdict refuse(std::string why);
WebhookVerdict accept(std::string body);
// Every value of the header `name` (case-insensitive), in order.
std::vector<std::string_view> header_values(const Headers& headers, std::string_view name);
// The one value of `name`: nullptr when absent; `repeated` is set when it
// comes more than once (a second value is refused, never chosen between).
const std::string* single_header(const Headers& headers, std::string_view name, bool& repeated);
// Unix seconds as sent: 1 to 12 digits, nothing else.
bool parse_unix_seconds(std::string_view text, int64_t& seconds);
// "" when `signed_unix_ms` is within `tolerance_ms` of `now_unix_ms`,
// otherwise why not ("too old" / "too far in the future").
std::string outside_window(int64_t signed_unix_ms, int64_t now_unix_ms, int64_t tolerance_ms);

WebhookVerdict verify_none(const WebhookRequest&, const WebhookSecrets&, int64_t, int64_t);
WebhookVerdict verify_stripe(const WebhookRequest&, const WebhookSecrets&, int64_t, int64_t);
WebhookVerdict verify_adyen(const WebhookRequest&, const WebhookSecrets&, int64_t, int64_t);
WebhookVerdict verify_square(const WebhookRequest&, const WebhookSecrets&, int64_t, int64_t);
WebhookVerdict verify_checkout_com(const WebhookRequest&, const WebhookSecrets&, int64_t, int64_t);
WebhookVerdict verify_mollie_signed(const WebhookRequest&, const WebhookSecrets&, int64_t, int64_t);
WebhookVerdict verify_mollie_id_only(const WebhookRequest&, const WebhookSecrets&, int64_t, int64_t);
WebhookVerdict verify_wechatpay_v3(const WebhookRequest&, const WebhookSecrets&, int64_t, int64_t);
WebhookVerdict verify_alipay(const WebhookRequest&, const WebhookSecrets&, int64_t, int64_t);
WebhookVerdict verify_paypal_offline(const WebhookRequest&, const WebhookSecrets&, int64_t, int64_t);

}  // namespace webhook
}  // namespace payretry
