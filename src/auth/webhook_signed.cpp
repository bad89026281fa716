// The RSA webhook schemes (SHA256withRSA, PKCS#1 v1.5, through RsaKey):
//   wechatpay_v3    Wechatpay-Signature over "<Wechatpay-Timestamp>\n<Wechatpay-Nonce>\n<body>\n"
//                   with the platform key Wechatpay-Serial names, five minutes either way;
//                   then resource.ciphertext decrypted (AEAD_AES_256_GCM, the APIv3 key):
//                   the plaintext is the event
//   alipay          the form's fields but sign and sign_type, decoded, sorted by name,
//                   name=value joined by '&' (empty values too, as Alipay's
//                   AlipaySignature.getSignCheckContentV1), verified with Alipay's key
//   paypal_offline  PAYPAL-TRANSMISSION-SIG over
//                   "<transmission id>|<transmission time>|<webhook id>|<crc32(body), decimal>"
//                   with the certificate the config pins; PAYPAL-CERT-URL is never fetched
// WeChat Pay's answers are checked the same way in auth_wechatpay.cpp
// (check_answer); the two share RsaKey, not yet the message builder.
#include <cJSON.h>

#include <array>
#include <map>
#include <memory>
#include <stdexcept>

#include "aead.hpp"
#include "base64.hpp"
#include "form_encoding.hpp"
#include "rsa_signature.hpp"
#include "webhook_scheme.hpp"

namespace payretry {
namespace webhook {
namespace {

struct JsonFree {
  void operator()(cJSON* j) const { cJSON_Delete(j); }
};
using JsonPtr = std::unique_ptr<cJSON, JsonFree>;

// The configured public key, or why it cannot be used.
bool load_public(const WebhookSecrets& secrets, const char* what, std::unique_ptr<RsaKey>& key, std::string& why) {
  if (secrets.public_key_pem.empty()) {
    why = std::string("no ") + what + " configured";
    return false;
  }
  try {
    key = std::make_unique<RsaKey>(RsaKey::public_from_pem(secrets.public_key_pem, what));
    return true;
  } catch (const std::exception& e) {
    why = e.what();
    return false;
  }
}

// A member that must be a string: its text, or nullptr.
const char* string_member(const cJSON* object, const char* name) {
  const cJSON* m = cJSON_GetObjectItemCaseSensitive(object, name);
  return cJSON_IsString(m) ? m->valuestring : nullptr;
}

// CRC-32 (IEEE 802.3, reflected, as zlib's crc32 and Python's binascii.crc32).
uint32_t crc32_ieee(std::string_view bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : bytes) crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace

WebhookVerdict verify_wechatpay_v3(const WebhookRequest& request, const WebhookSecrets& secrets, int64_t now_unix_ms,
                                   int64_t tolerance_ms) {
  bool repeated = false;
  const std::string* signature = single_header(request.headers, "Wechatpay-Signature", repeated);
  const std::string* timestamp = single_header(request.headers, "Wechatpay-Timestamp", repeated);
  const std::string* nonce = single_header(request.headers, "Wechatpay-Nonce", repeated);
  const std::string* serial = single_header(request.headers, "Wechatpay-Serial", repeated);
  const std::string* type = single_header(request.headers, "Wechatpay-Signature-Type", repeated);
  if (!signature && !timestamp && !nonce) return refuse("not signed: no Wechatpay-Signature header");
  if (repeated) return refuse("malformed Wechatpay headers: one is sent more than once");
  if (!signature || !timestamp || !nonce || !serial || signature->empty() || nonce->empty())
    return refuse("malformed Wechatpay headers: Signature, Timestamp, Nonce and Serial are not all present");
  if (type && *type != "WECHATPAY2-SHA256-RSA2048")
    return refuse("malformed Wechatpay headers: unsupported Wechatpay-Signature-Type " + type->substr(0, 64));
  int64_t ts = 0;
  if (!parse_unix_seconds(*timestamp, ts)) return refuse("malformed Wechatpay-Timestamp: not unix seconds");
  if (!secrets.public_key_id.empty() && *serial != secrets.public_key_id)
    return refuse("signed by key " + serial->substr(0, 64) + ", not the configured platform key " +
                  secrets.public_key_id);
  std::unique_ptr<RsaKey> platform;
  std::string why;
  if (!load_public(secrets, "WeChat Pay platform public key", platform, why)) return refuse(why);
  std::string message;
  message.reserve(timestamp->size() + nonce->size() + request.body.size() + 3);
  message.append(*timestamp).append("\n").append(*nonce).append("\n").append(request.body).append("\n");
  if (!platform->verifies(message, *signature))
    return refuse("no valid signature: Wechatpay-Signature does not verify with the platform key");
  const std::string late = outside_window(ts * 1000, now_unix_ms, tolerance_ms);
  if (!late.empty()) return refuse(late);

  // The event itself travels encrypted; the signature covered the envelope.
  JsonPtr root(cJSON_ParseWithLength(request.body.data(), request.body.size()));
  const char* resource_type = root ? string_member(root.get(), "resource_type") : nullptr;
  const cJSON* resource = root ? cJSON_GetObjectItemCaseSensitive(root.get(), "resource") : nullptr;
  if (!resource_type || std::string_view(resource_type) != "encrypt-resource" || !cJSON_IsObject(resource))
    return refuse("malformed WeChat Pay notification: no encrypt-resource");
  const char* algorithm = string_member(resource, "algorithm");
  const char* ciphertext = string_member(resource, "ciphertext");
  const char* resource_nonce = string_member(resource, "nonce");
  const char* associated = string_member(resource, "associated_data");
  if (!algorithm || std::string_view(algorithm) != "AEAD_AES_256_GCM")
    return refuse("malformed WeChat Pay notification: the resource is not AEAD_AES_256_GCM");
  if (!ciphertext || !resource_nonce || !*resource_nonce)
    return refuse("malformed WeChat Pay notification: the resource has no ciphertext or nonce");
  if (secrets.api_v3_key.size() != 32) return refuse("the APIv3 key is not 32 bytes");
  std::string sealed, plaintext;
  if (!base64_decode(ciphertext, sealed)) return refuse("malformed WeChat Pay notification: ciphertext is not base64");
  if (!aes_256_gcm_decrypt(secrets.api_v3_key, resource_nonce, associated ? associated : "", sealed, plaintext))
    return refuse("the resource does not decrypt with the APIv3 key (wrong key, nonce or associated_data)");
  return accept(std::move(plaintext));
}

WebhookVerdict verify_alipay(const WebhookRequest& request, const WebhookSecrets& secrets, int64_t, int64_t) {
  std::vector<std::pair<std::string, std::string>> fields;
  if (!form_decode(request.body, fields)) return refuse("malformed Alipay notification: the body is not form fields");
  std::map<std::string, std::string> sorted;  // byte order = Java's String order for the ASCII names Alipay sends
  std::string sign, sign_type;
  bool have_sign = false;
  for (auto& [name, value] : fields) {
    if (name == "sign") {
      if (have_sign) return refuse("malformed Alipay notification: sign is sent more than once");
      have_sign = true;
      sign = std::move(value);
    } else if (name == "sign_type") {
      sign_type = std::move(value);
    } else if (!sorted.emplace(name, std::move(value)).second) {
      // Two values under one name: which was signed cannot be told.
      return refuse("malformed Alipay notification: " + name.substr(0, 64) + " is sent more than once");
    }
  }
  if (!have_sign || sign.empty()) return refuse("not signed: the notification has no sign");
  if (!sign_type.empty() && sign_type != "RSA2")
    return refuse("malformed Alipay notification: sign_type " + sign_type.substr(0, 16) + " is not RSA2");
  std::unique_ptr<RsaKey> alipay;
  std::string why;
  if (!load_public(secrets, "Alipay public key", alipay, why)) return refuse(why);
  std::string content;
  for (const auto& [name, value] : sorted) {
    if (!content.empty()) content.push_back('&');
    content.append(name).append("=").append(value);
  }
  if (!alipay->verifies(content, sign))
    return refuse("no valid signature: sign does not verify with Alipay's public key");
  return accept(request.body);
}

WebhookVerdict verify_paypal_offline(const WebhookRequest& request, const WebhookSecrets& secrets, int64_t, int64_t) {
  bool repeated = false;
  const std::string* id = single_header(request.headers, "PAYPAL-TRANSMISSION-ID", repeated);
  const std::string* time = single_header(request.headers, "PAYPAL-TRANSMISSION-TIME", repeated);
  const std::string* sig = single_header(request.headers, "PAYPAL-TRANSMISSION-SIG", repeated);
  const std::string* algo = single_header(request.headers, "PAYPAL-AUTH-ALGO", repeated);
  if (!sig) return refuse("not signed: no PAYPAL-TRANSMISSION-SIG header");
  if (repeated) return refuse("malformed PAYPAL-* headers: one is sent more than once");
  if (!id || !time || id->empty() || time->empty() || sig->empty())
    return refuse("malformed PAYPAL-* headers: TRANSMISSION-ID, -TIME and -SIG are not all present");
  if (algo && *algo != "SHA256withRSA")
    return refuse("malformed PAYPAL-AUTH-ALGO: " + algo->substr(0, 32) + " is not SHA256withRSA");
  if (secrets.webhook_id.empty()) return refuse("no PayPal webhook id configured");
  std::unique_ptr<RsaKey> cert;
  std::string why;
  if (!load_public(secrets, "PayPal certificate", cert, why)) return refuse(why);
  const std::string message =
      *id + "|" + *time + "|" + secrets.webhook_id + "|" + std::to_string(crc32_ieee(request.body));
  if (!cert->verifies(message, *sig))
    return refuse("no valid signature: PAYPAL-TRANSMISSION-SIG does not verify with the pinned certificate");
  return accept(request.body);
}

}  // namespace webhook
}  // namespace payretry
