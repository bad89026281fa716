// The HMAC-SHA256 webhook schemes, side by side as they differ only in what
// is signed and how the signature is written:
//   stripe         Stripe-Signature: t=<unix s>,v1=<hex>[,v1=<hex>...] over "<t>.<body>"
//   adyen          each NotificationRequestItem's additionalData.hmacSignature (base64),
//                  keyed by the hex-decoded key, over eight fields joined by ':'
//   square         x-square-hmacsha256-signature (base64) over notification URL + body
//   checkout_com   Cko-Signature (hex) over the body
//   mollie_signed  X-Mollie-Signature ([sha256=]hex) over the body
// Every comparison is constant time, every configured key is tried (a
// rotation), and nothing is parsed before it is authenticated except what
// names the signature.
#include <cJSON.h>
#include <strings.h>

#include <cmath>
#include <memory>

#include "base64.hpp"
#include "hmac.hpp"
#include "webhook_scheme.hpp"

namespace payretry {
namespace webhook {
namespace {

constexpr size_t kSha256Bytes = 32;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A key list with an empty key (an unset variable, a trailing comma in a
// rotation list) would let anyone sign: an HMAC under "" is computable by all.
std::string unusable_key(const std::vector<std::string>& keys) {
  for (const std::string& key : keys)
    if (key.empty()) return "a configured signature key is empty";
  return "";
}

// Whether any key's HMAC of `message` is one of `signatures` (raw bytes).
bool any_key_matches(const std::vector<std::string>& keys, std::string_view message,
                     const std::vector<std::string>& signatures) {
  bool match = false;
  for (const std::string& key : keys) {
    const std::string expected = hmac_sha256(key, message);
    for (const std::string& sig : signatures) match = constant_time_equal(expected, sig) || match;
  }
  return match;
}

// The schemes that sign the body (or URL + body) with one header: the
// header's signatures decoded by `decode`, unreadable ones skipped.
template <typename Decode>
WebhookVerdict verify_signatures(const WebhookRequest& request, const WebhookSecrets& secrets,
                                 const std::vector<std::string_view>& values, std::string_view header,
                                 std::string_view message, Decode decode) {
  if (secrets.keys.empty()) return refuse("no signature key configured");
  if (const std::string why = unusable_key(secrets.keys); !why.empty()) return refuse(why);
  if (values.empty()) return refuse("not signed: no " + std::string(header) + " header");
  std::vector<std::string> signatures;
  for (std::string_view value : values) {
    std::string raw;
    if (decode(trim(value), raw) && raw.size() == kSha256Bytes) signatures.push_back(std::move(raw));
  }
  if (signatures.empty()) return refuse("malformed " + std::string(header) + " header: no readable signature");
  if (!any_key_matches(secrets.keys, message, signatures))
    return refuse("no valid signature: " + std::string(header) + " does not match the body under any configured key");
  return accept(request.body);
}

bool decode_hex(std::string_view text, std::string& out) { return hex_decode(text, out); }
bool decode_base64(std::string_view text, std::string& out) { return base64_decode(text, out); }

// ---- Adyen -----------------------------------------------------------------------------------

struct JsonFree {
  void operator()(cJSON* j) const { cJSON_Delete(j); }
};
using JsonPtr = std::unique_ptr<cJSON, JsonFree>;

// A field of the signed string as Adyen's libraries write it: a string as
// is, a number as its integer text, a missing field empty. Anything else
// cannot be what Adyen signed: false.
bool field_text(const cJSON* item, const char* name, std::string& out) {
  const cJSON* f = cJSON_GetObjectItemCaseSensitive(item, name);
  out.clear();
  if (!f || cJSON_IsNull(f)) return true;
  if (cJSON_IsString(f)) {
    out = f->valuestring;
    return true;
  }
  if (cJSON_IsBool(f)) {
    out = cJSON_IsTrue(f) ? "true" : "false";
    return true;
  }
  if (cJSON_IsNumber(f)) {
    const double d = f->valuedouble;
    // Minor units are integers; beyond 2^53 a double no longer says which one.
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9007199254740992.0) return false;
    out = std::to_string(static_cast<long long>(d));
    return true;
  }
  return false;
}

// Whether two members of `object` share a name (in any case). The signed
// string takes the first; a reader of the item might take the last, so an
// unsigned second copy of a signed field could be read as if signed.
bool repeats_a_name(const cJSON* object) {
  int n = 0;
  for (const cJSON* a = object ? object->child : nullptr; a; a = a->next) {
    if (++n > 512 || !a->string) return true;
    for (const cJSON* b = a->next; b; b = b->next)
      if (b->string && strcasecmp(a->string, b->string) == 0) return true;
  }
  return false;
}

}  // namespace

WebhookVerdict verify_stripe(const WebhookRequest& request, const WebhookSecrets& secrets, int64_t now_unix_ms,
                             int64_t tolerance_ms) {
  if (secrets.keys.empty()) return refuse("no endpoint secret configured");
  if (const std::string why = unusable_key(secrets.keys); !why.empty()) return refuse(why);
  bool repeated = false;
  const std::string* header = single_header(request.headers, "Stripe-Signature", repeated);
  if (!header || trim(*header).empty()) return refuse("not signed: no Stripe-Signature header");
  if (repeated) return refuse("malformed Stripe-Signature header: sent more than once");
  // t=<unix seconds>,v1=<hex>,v1=<hex>,v0=...: other schemes are ignored,
  // as Stripe's SDKs ignore them; one t only (two would be chosen between).
  std::string_view rest = *header;
  std::string_view t;
  bool have_t = false;
  std::vector<std::string> signatures;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    if (name == "t") {
      if (have_t) return refuse("malformed Stripe-Signature header: more than one t");
      have_t = true;
      t = value;
    } else if (name == "v1") {
      std::string raw;
      if (hex_decode(value, raw) && raw.size() == kSha256Bytes) signatures.push_back(std::move(raw));
    }
  }
  int64_t t_s = 0;
  if (!have_t || !parse_unix_seconds(t, t_s)) return refuse("malformed Stripe-Signature header: no timestamp t");
  if (signatures.empty()) return refuse("no valid signature: the header carries no readable v1 signature");
  std::string message(t);
  message.push_back('.');
  message += request.body;
  if (!any_key_matches(secrets.keys, message, signatures))
    return refuse("no valid signature: no v1 matches the payload under any configured secret");
  // Checked after the signature, so a time says something only when signed.
  const std::string late = outside_window(t_s * 1000, now_unix_ms, tolerance_ms);
  if (!late.empty()) return refuse(late);
  return accept(request.body);
}

WebhookVerdict verify_adyen(const WebhookRequest& request, const WebhookSecrets& secrets, int64_t, int64_t) {
  if (secrets.keys.empty()) return refuse("no HMAC key configured");
  std::vector<std::string> keys;
  for (const std::string& hex : secrets.keys) {
    std::string raw;
    if (!hex_decode(hex, raw) || raw.empty()) return refuse("a configured Adyen HMAC key is not hex");
    keys.push_back(std::move(raw));
  }
  JsonPtr root(cJSON_ParseWithLength(request.body.data(), request.body.size()));
  if (!root || !cJSON_IsObject(root.get())) return refuse("malformed Adyen notification: the body is not a JSON object");
  const cJSON* list = cJSON_GetObjectItemCaseSensitive(root.get(), "notificationItems");
  if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0)
    return refuse("malformed Adyen notification: no notificationItems");
  static const char* const kFields[] = {"pspReference", "originalReference", "merchantAccountCode",
                                        "merchantReference"};
  WebhookVerdict v = accept(request.body);
  int index = 0;
  for (const cJSON* wrapper = list->child; wrapper; wrapper = wrapper->next, ++index) {
    const std::string at = "item " + std::to_string(index);
    const cJSON* item = cJSON_GetObjectItemCaseSensitive(wrapper, "NotificationRequestItem");
    if (!cJSON_IsObject(item)) return refuse("malformed Adyen notification: " + at + " is no NotificationRequestItem");
    if (repeats_a_name(item) || repeats_a_name(cJSON_GetObjectItemCaseSensitive(item, "amount")))
      return refuse("malformed Adyen notification: " + at + " names a member twice");
    const cJSON* extra = cJSON_GetObjectItemCaseSensitive(item, "additionalData");
    const cJSON* sig = cJSON_IsObject(extra) ? cJSON_GetObjectItemCaseSensitive(extra, "hmacSignature") : nullptr;
    if (!cJSON_IsString(sig) || !*sig->valuestring) return refuse("not signed: " + at + " has no hmacSignature");
    std::string raw;
    if (!base64_decode(sig->valuestring, raw) || raw.size() != kSha256Bytes)
      return refuse("malformed hmacSignature in " + at);
    // pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success
    std::string message, text;
    for (const char* name : kFields) {
      if (!field_text(item, name, text)) return refuse("malformed Adyen notification: " + at + "'s " + name);
      // The fields are joined with ':', so a ':' moved from one into its
      // neighbour keeps the signature: only merchantReference (the
      // merchant's own text) may hold one, which leaves every boundary fixed.
      if (std::string_view(name) != "merchantReference" && text.find(':') != std::string::npos)
        return refuse("malformed Adyen notification: " + at + "'s " + name + " holds a ':'");
      message += text;
      message.push_back(':');
    }
    const cJSON* amount = cJSON_GetObjectItemCaseSensitive(item, "amount");
    if (amount && !cJSON_IsObject(amount)) return refuse("malformed Adyen notification: " + at + "'s amount");
    if (!field_text(amount, "value", text)) return refuse("malformed Adyen notification: " + at + "'s amount.value");
    message += text + ":";
    if (!field_text(amount, "currency", text) || text.find(':') != std::string::npos)
      return refuse("malformed Adyen notification: " + at + "'s currency");
    message += text + ":";
    if (!field_text(item, "eventCode", text) || text.find(':') != std::string::npos)
      return refuse("malformed Adyen notification: " + at + "'s eventCode");
    message += text + ":";
    if (!field_text(item, "success", text) || text.find(':') != std::string::npos)
      return refuse("malformed Adyen notification: " + at + "'s success");
    message += text;
    // One bad item refuses the batch: what arrives together is accepted together or not at all.
    if (!any_key_matches(keys, message, {raw})) return refuse("no valid signature: " + at + "'s hmacSignature does not match");
    std::unique_ptr<char, void (*)(void*)> json(cJSON_PrintUnformatted(item), cJSON_free);
    if (!json) return refuse("out of memory");
    v.items.emplace_back(json.get());
  }
  return v;
}

WebhookVerdict verify_square(const WebhookRequest& request, const WebhookSecrets& secrets, int64_t, int64_t) {
  // Square signs the URL the subscription names; behind a proxy the URL the
  // request arrived at may differ, so the config's wins.
  const std::string& url = secrets.notification_url.empty() ? request.url : secrets.notification_url;
  if (url.empty()) return refuse("no notification URL configured: Square signs URL + body");
  if (request.body.empty()) return refuse("malformed Square notification: empty body");
  return verify_signatures(request, secrets, header_values(request.headers, "x-square-hmacsha256-signature"),
                           "x-square-hmacsha256-signature", url + request.body, decode_base64);
}

WebhookVerdict verify_checkout_com(const WebhookRequest& request, const WebhookSecrets& secrets, int64_t, int64_t) {
  return verify_signatures(request, secrets, header_values(request.headers, "Cko-Signature"), "Cko-Signature",
                           request.body, decode_hex);
}

WebhookVerdict verify_mollie_signed(const WebhookRequest& request, const WebhookSecrets& secrets, int64_t, int64_t) {
  // Mollie's PHP SDK (Webhooks/SignatureValidator) strips an optional
  // "sha256=" and takes several X-Mollie-Signature values (a secret being
  // rotated); a receiver that joined them reads "a, b".
  std::vector<std::string_view> signatures;
  for (std::string_view value : header_values(request.headers, "X-Mollie-Signature")) {
    while (!value.empty()) {
      const size_t comma = value.find(',');
      std::string_view one = trim(value.substr(0, comma));
      value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
      if (one.substr(0, 7) == "sha256=") one.remove_prefix(7);
      signatures.push_back(one);
    }
  }
  if (signatures.empty()) return refuse("not signed: no X-Mollie-Signature header");
  return verify_signatures(request, secrets, signatures, "X-Mollie-Signature", request.body, decode_hex);
}

}  // namespace webhook
}  // namespace payretry
