// WeChat Pay API v3 request signatures and answer verification, as WeChat's
// documents and SDKs define them. Every request (creates and lookups) gets
//   Authorization: WECHATPAY2-SHA256-RSA2048 mchid="..",nonce_str="..",
//                  signature="..",timestamp="..",serial_no=".."
// where signature = base64(SHA256withRSA(merchant key,
//   METHOD \n PATH?QUERY \n TIMESTAMP \n NONCE \n BODY \n)).
// WeChat signs its answers: Wechatpay-Signature over
//   TIMESTAMP \n NONCE \n BODY \n
// with the platform key named by Wechatpay-Serial.
#include <cstdlib>

#include "auth.hpp"
#include "rsa_signature.hpp"

namespace payretry {
namespace {

// An answer signed longer ago than this is refused as a replay (WeChat's Go
// SDK uses the same five minutes).
constexpr int64_t kMaxAnswerAgeS = 300;

class WeChatPayV3 final : public Authenticator {
 public:
  explicit WeChatPayV3(const Config& config)
      : mchid_(config.merchant_id),
        serial_no_(config.auth.serial_no),
        platform_serial_(config.auth.platform_serial),
        key_(load_private(config.auth.private_key_pem)),
        platform_(load_public(config.auth.peer_public_key_pem)) {}

  std::string authorize(OutgoingRequest& r, int64_t unix_ms, int64_t) override {
    const std::string timestamp = std::to_string(unix_ms / 1000);
    const std::string nonce = random_token(32);
    std::string message;
    message.reserve(r.method.size() + r.path.size() + r.body.size() + 64);
    message.append(r.method).append("\n").append(url_path(r)).append("\n").append(timestamp).append("\n");
    message.append(nonce).append("\n").append(r.body).append("\n");
    const std::string signature = key_.sign_base64(message);
    r.headers.emplace_back("Authorization", "WECHATPAY2-SHA256-RSA2048 mchid=\"" + mchid_ + "\",nonce_str=\"" + nonce +
                                                "\",signature=\"" + signature + "\",timestamp=\"" + timestamp +
                                                "\",serial_no=\"" + serial_no_ + "\"");
    // Names the platform key the merchant trusts, as wechatpayv3 does on
    // every request (WeChat requires it where fields are encrypted to it).
    if (!platform_serial_.empty()) r.headers.emplace_back("Wechatpay-Serial", platform_serial_);
    return {};
  }

  bool signs_answers() const override { return true; }

  AnswerTrust check_answer(const HttpResponse& a, std::string_view, int64_t unix_ms, std::string& why) const override {
    const std::string* signature = a.header("Wechatpay-Signature");
    const std::string* timestamp = a.header("Wechatpay-Timestamp");
    const std::string* nonce = a.header("Wechatpay-Nonce");
    const std::string* serial = a.header("Wechatpay-Serial");
    if (!signature && !timestamp && !nonce) {
      why = "the answer carries no Wechatpay-Signature";
      return AnswerTrust::unsigned_;
    }
    if (!signature || !timestamp || !nonce) {
      why = "the answer's Wechatpay-Signature, -Timestamp and -Nonce are not all present";
      return AnswerTrust::forged;
    }
    if (!platform_serial_.empty() && (!serial || *serial != platform_serial_)) {
      why = "the answer is signed by key " + (serial ? *serial : std::string("(none)")) + ", not the configured " +
            platform_serial_;
      return AnswerTrust::forged;
    }
    // Unix seconds: digits only, at most 12 (no sign, no space, no overflow).
    bool digits = !timestamp->empty() && timestamp->size() <= 12;
    for (char c : *timestamp) digits = digits && c >= '0' && c <= '9';
    const long long ts = digits ? std::stoll(*timestamp) : 0;
    if (!digits || std::llabs(unix_ms / 1000 - ts) > kMaxAnswerAgeS) {
      why = "the answer's Wechatpay-Timestamp is not within 5 minutes of this host's clock";
      return AnswerTrust::forged;
    }
    const std::string message = *timestamp + "\n" + *nonce + "\n" + a.body + "\n";
    if (!platform_.verifies(message, *signature)) {
      why = "the answer's Wechatpay-Signature does not verify with the platform key";
      return AnswerTrust::forged;
    }
    return AnswerTrust::verified;
  }

 private:
  // The signed URL is the path with its query, without scheme and host (a
  // base_url prefix, if any, is part of it).
  static std::string url_path(const OutgoingRequest& r) {
    const std::string url = r.url();
    const size_t host = url.find("://");
    const size_t slash = host == std::string::npos ? 0 : url.find('/', host + 3);
    return slash == std::string::npos ? "/" : url.substr(slash);
  }
  static RsaKey load_private(const std::string& pem) {
    try {
      return RsaKey::private_from_pem(pem, "auth.wechatpay.private_key");
    } catch (const std::invalid_argument& e) {
      throw ConfigError(e.what());
    }
  }
  static RsaKey load_public(const std::string& pem) {
    try {
      return RsaKey::public_from_pem(pem, "auth.wechatpay.platform_public_key");
    } catch (const std::invalid_argument& e) {
      throw ConfigError(e.what());
    }
  }

  const std::string mchid_;
  const std::string serial_no_;
  const std::string platform_serial_;
  const RsaKey key_;
  const RsaKey platform_;
};

}  // namespace

std::unique_ptr<Authenticator> make_wechatpay_authenticator(const Config& config) {
  return std::make_unique<WeChatPayV3>(config);
}

}  // namespace payretry
