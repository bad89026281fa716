// What a provider's client does about authentication, for the simulator's tests, with the test
// keys of tests/keys/: WeChat Pay v3 request signatures and answer checks, Alipay's signed
// gateway form and answer checks, PayPal's OAuth2 token. Written from the providers' wire
// formats with OpenSSL directly, independently of the simulator's own code, so each side
// checks the other.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cctype>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim_client.hpp"

namespace simtest {

inline std::string key_file(const std::string& name) { return std::string(PAYRETRY_TEST_KEYS_DIR) + "/" + name; }

// The ids tests/keys/README.md pairs with the keys.
inline const char kMchid[] = "1900000109";
inline const char kMerchantSerial[] = "3775B6A45ACD588826D15E583A95F5DD3F3B4DD8";
inline const char kPlatformSerial[] = "PUB_KEY_ID_0119000001092026120200000000";
inline const char kAlipayAppId[] = "2021000000000001";

// ---- RSA-SHA256 and base64 ----------------------------------------------------------------------

using PkeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

inline PkeyPtr read_key(const std::string& path, bool private_key) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  EVP_PKEY* k = nullptr;
  if (f) {
    k = private_key ? PEM_read_PrivateKey(f, nullptr, nullptr, nullptr) : PEM_read_PUBKEY(f, nullptr, nullptr, nullptr);
    std::fclose(f);
  }
  return PkeyPtr(k, EVP_PKEY_free);
}

inline std::string to_base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

inline std::string from_base64(const std::string& text) {
  std::string out(text.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return "";
  std::size_t len = static_cast<std::size_t>(n);
  // EVP_DecodeBlock counts the padding as zero bytes.
  for (std::size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) --len;
  out.resize(len);
  return out;
}

// base64(RSA-SHA256(message)) with the private key in `pem` ("" if the key cannot be read).
inline std::string rsa_sign(const std::string& pem, const std::string& message) {
  PkeyPtr key = read_key(pem, true);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::size_t len = 0;
  if (!key || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1) {
    return "";
  }
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(&sig[0]), &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
    return "";
  }
  sig.resize(len);
  return to_base64(sig);
}

inline bool rsa_verify(const std::string& pem, const std::string& message, const std::string& signature_b64) {
  PkeyPtr key = read_key(pem, false);
  const std::string sig = from_base64(signature_b64);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  return key && !sig.empty() && EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                          reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
}

// ---- WeChat Pay v3 ------------------------------------------------------------------------------

struct WechatSigning {
  long long timestamp = static_cast<long long>(std::time(nullptr));
  std::string nonce = "593BEC0C930BF1AFEB40B4A08C8FB242";
  std::string key = key_file("wechat_merchant_key.pem");
};

// The signature WeChat Pay v3 wants over one request.
inline std::string wechat_signature(const std::string& method, const std::string& target, const std::string& body,
                                    const WechatSigning& s = {}) {
  return rsa_sign(s.key, method + "\n" + target + "\n" + std::to_string(s.timestamp) + "\n" + s.nonce + "\n" + body + "\n");
}

// "Authorization: WECHATPAY2-SHA256-RSA2048 mchid=...,..." for one request (target: path?query).
inline std::string wechat_authorization(const std::string& method, const std::string& target,
                                        const std::string& body, const WechatSigning& s = {}) {
  return std::string("Authorization: WECHATPAY2-SHA256-RSA2048 mchid=\"") + kMchid + "\",nonce_str=\"" + s.nonce +
         "\",signature=\"" + wechat_signature(method, target, body, s) + "\",timestamp=\"" +
         std::to_string(s.timestamp) + "\",serial_no=\"" + kMerchantSerial + "\"";
}

// What a WeChat Pay client checks on an answer: the platform's signature over
// "TIMESTAMP\nNONCE\nBODY\n" and the platform key id.
inline bool wechat_answer_verifies(const Response& r) {
  return r.header("wechatpay-serial") == kPlatformSerial &&
         rsa_verify(key_file("wechat_platform_pub.pem"),
                    r.header("wechatpay-timestamp") + "\n" + r.header("wechatpay-nonce") + "\n" + r.body + "\n",
                    r.header("wechatpay-signature"));
}

// ---- Alipay gateway -----------------------------------------------------------------------------

using Params = std::map<std::string, std::string>;

// "yyyy-MM-dd HH:mm:ss" in Beijing time (UTC+8).
inline std::string beijing_time(std::time_t unix_s) {
  const std::time_t t = unix_s + 8 * 3600;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// Every common parameter but sign, and biz_content.
inline Params alipay_params(const std::string& method, const std::string& biz_content,
                            std::time_t when = std::time(nullptr)) {
  return {{"app_id", kAlipayAppId}, {"method", method},   {"format", "JSON"},    {"charset", "utf-8"},
          {"sign_type", "RSA2"},    {"timestamp", beijing_time(when)}, {"version", "1.0"}, {"biz_content", biz_content}};
}

// RSA2 over every parameter but sign, sorted by name, non-empty raw values, "k=v" joined by '&'.
inline std::string alipay_sign(const Params& params, const std::string& key = key_file("alipay_app_key.pem")) {
  std::string content;
  for (const auto& [k, v] : params) {  // std::map: sorted by name
    if (k == "sign" || v.empty()) continue;
    if (!content.empty()) content += "&";
    content += k + "=" + v;
  }
  return rsa_sign(key, content);
}

inline std::string url_encode(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

inline std::string form_encode(const Params& params) {
  std::string out;
  for (const auto& [k, v] : params) out += (out.empty() ? "" : "&") + url_encode(k) + "=" + url_encode(v);
  return out;
}

// One gateway request as the SDKs send it.
struct GatewayRequest {
  std::string target;  // /gateway.do?<query>
  std::string body;    // form fields
  std::vector<std::string> headers{"Content-Type: application/x-www-form-urlencoded;charset=utf-8"};
};

// The names in `in_body` travel in the form body, the others in the query.
inline GatewayRequest gateway_request(const Params& params, const std::vector<std::string>& in_body = {"biz_content"}) {
  Params query, body;
  for (const auto& [k, v] : params) {
    bool b = false;
    for (const auto& n : in_body) b = b || n == k;
    (b ? body : query)[k] = v;
  }
  return {"/gateway.do?" + form_encode(query), form_encode(body)};
}

// A signed call: the common parameters in the query, biz_content in the body.
inline GatewayRequest alipay_call(const std::string& method, const std::string& biz_content) {
  Params p = alipay_params(method, biz_content);
  p["sign"] = alipay_sign(p);
  return gateway_request(p);
}

// What an Alipay client checks on an answer: "sign" over the exact bytes of the member before it.
inline bool alipay_answer_verifies(const std::string& body) {
  const std::string sign_key = ",\"sign\":\"";
  const std::size_t sign_at = body.rfind(sign_key);
  const std::size_t value_at = body.find("\":");
  if (sign_at == std::string::npos || value_at == std::string::npos || value_at > sign_at) return false;
  const std::string value = body.substr(value_at + 2, sign_at - value_at - 2);
  const std::size_t sign_end = body.find('"', sign_at + sign_key.size());
  if (sign_end == std::string::npos || body.substr(sign_end) != "\"}") return false;
  return rsa_verify(key_file("alipay_pub.pem"), value, body.substr(sign_at + sign_key.size(), sign_end - sign_at - sign_key.size()));
}

// ---- PayPal OAuth2 ------------------------------------------------------------------------------

inline std::string basic_authorization(const std::string& id, const std::string& secret) {
  return "Authorization: Basic " + to_base64(id + ":" + secret);
}

inline Response paypal_token_request(uint16_t port, const std::string& id = "test-client-id",
                                     const std::string& secret = "test-client-secret",
                                     const std::string& body = "grant_type=client_credentials") {
  Conn c(port);
  return c.request("POST", "/v1/oauth2/token", body,
                   {basic_authorization(id, secret), "Content-Type: application/x-www-form-urlencoded"});
}

// A fresh access token from the simulator ("" when refused).
inline std::string paypal_token(uint16_t port) {
  return Json(paypal_token_request(port).body).str("access_token");
}

inline std::string bearer(const std::string& token) { return "Authorization: Bearer " + token; }

}  // namespace simtest
