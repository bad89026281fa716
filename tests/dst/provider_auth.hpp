// The provider's side of the built-in signers, written here with OpenSSL and
// independently of src/auth (as sim/ does): checking a request's
// WECHATPAY2-SHA256-RSA2048 or Alipay RSA2 signature with the merchant's
// public key, and signing answers with the platform / Alipay key. The keys
// are tests/keys/ (tests/keys/README.md).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "transport.hpp"

namespace payretry::dst {

// The test identities (tests/keys/README.md).
inline constexpr const char* kWechatMchid = "1900000109";
inline constexpr const char* kWechatMerchantSerial = "3775B6A45ACD588826D15E583A95F5DD3F3B4DD8";
inline constexpr const char* kWechatPlatformSerial = "PUB_KEY_ID_0119000001092026120200000000";
inline constexpr const char* kAlipayAppId = "2021000000000001";

class ProviderKeys {
 public:
  // Loaded once from `dir` (tests/keys); throws std::runtime_error naming a
  // key that does not load.
  static const ProviderKeys& load(const std::string& dir);
  // The PEM text of tests/keys/`file`, for the client's config.
  static std::string pem(const std::string& dir, const std::string& file);

  // "" when the request carries a valid WeChat Pay v3 signature for
  // `mchid`, made within 5 minutes of `now_unix_ms`; else why not.
  std::string check_wechatpay(const HttpRequest& req, const std::string& mchid, int64_t now_unix_ms) const;
  // "" when the request carries a valid Alipay RSA2 sign by the test app
  // over its query and form body; else why not.
  std::string check_alipay(const HttpRequest& req) const;
  // Signs an answer as WeChat Pay does (Wechatpay-Timestamp, -Nonce,
  // -Serial, -Signature over timestamp, nonce and body).
  void sign_wechatpay(HttpResponse& a, int64_t unix_s, const std::string& nonce) const;
  // Adds Alipay's "sign" over the exact bytes of the answer's *_response
  // member; an answer of another shape (the gateway's error_response, a
  // proxy's page) is left unsigned.
  void sign_alipay(HttpResponse& a) const;
  // Alipay's RSA2 signature (base64) over `content` with Alipay's key: what
  // signs a notification's sorted fields.
  std::string sign_alipay_content(std::string_view content) const;
  // Breaks the signature an answer carries (one base64 character changed):
  // what an answer altered on the way, or made without the key, looks like.
  static void forge(HttpResponse& a);

  struct Key;

 private:
  std::shared_ptr<Key> merchant_pub_, platform_key_, app_pub_, alipay_key_;
};

}  // namespace payretry::dst
