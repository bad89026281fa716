// Alipay open-platform gateway signatures (RSA2) and answer verification.
// A request's parameters are the common ones (app_id, method, format,
// charset, sign_type, timestamp, version), any the path's query names and
// the body's form fields (biz_content=<JSON text>). sign = base64(
// SHA256withRSA(app key, every parameter but sign with a value, sorted by
// name, as name=value joined by '&', raw values)). The common parameters and
// sign travel in the URL's query, the body's fields in the body, as Ant
// Group's SDKs send them.
//
// Answers: {"<method with _>_response": {...}, "sign": "..."}; the sign
// covers the exact bytes of the *_response member's value, verified with
// Alipay's public key.
#include <algorithm>
#include <ctime>
#include <map>

#include "auth.hpp"
#include "form_encoding.hpp"
#include "json_raw.hpp"
#include "rsa_signature.hpp"

namespace payretry {
namespace {

// Alipay reads timestamps as China Standard Time (UTC+8, no DST).
std::string beijing_time(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000 + 8 * 3600);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// The gateway method a request path names (?method=...), decoded; "" if none.
std::string method_of(std::string_view path) {
  const size_t q = path.find('?');
  std::vector<std::pair<std::string, std::string>> query;
  if (q == std::string_view::npos || !form_decode(path.substr(q + 1), query)) return {};
  for (const auto& [name, value] : query)
    if (name == "method") return value;
  return {};
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

class AlipayRsa2 final : public Authenticator {
 public:
  explicit AlipayRsa2(const Config& config)
      : app_id_(config.auth.app_id),
        key_(load(config.auth.private_key_pem, true)),
        alipay_(load(config.auth.peer_public_key_pem, false)) {}

  std::string authorize(OutgoingRequest& r, int64_t unix_ms, int64_t) override {
    const size_t q = r.path.find('?');
    const std::string path = r.path.substr(0, q);
    std::vector<std::pair<std::string, std::string>> query, body;
    if (q != std::string::npos && !form_decode(std::string_view(r.path).substr(q + 1), query))
      return "the gateway path's query is not name=value pairs";
    if (!form_decode(r.body, body)) return "the gateway body is not form fields";
    std::map<std::string, std::string> in_url(query.begin(), query.end());
    if (!in_url.count("method") || in_url["method"].empty())
      return "the gateway path names no method (e.g. /gateway.do?method=alipay.trade.pay)";
    in_url["app_id"] = app_id_;
    // Lower case, as Ant Group's SDKs send it (alipay-sdk-python and the
    // Java SDK's AlipayConstants.FORMAT_JSON); the gateway reads either.
    in_url["format"] = "json";
    in_url["charset"] = "utf-8";
    in_url["sign_type"] = "RSA2";
    in_url["timestamp"] = beijing_time(unix_ms);
    in_url["version"] = "1.0";
    std::map<std::string, std::string> all = in_url;
    for (const auto& [name, value] : body)
      if (!all.emplace(name, value).second) return "the body repeats the gateway parameter " + name;
    std::string content;
    for (const auto& [name, value] : all) {
      if (value.empty() || name == "sign") continue;
      if (!content.empty()) content.push_back('&');
      content.append(name).append("=").append(value);
    }
    in_url["sign"] = key_.sign_base64(content);
    std::string signed_path = path + "?";
    bool first = true;
    for (const auto& [name, value] : in_url) {
      if (!first) signed_path.push_back('&');
      first = false;
      signed_path += form_escape(name) + "=" + form_escape(value);
    }
    r.path = std::move(signed_path);
    return {};
  }

  bool signs_answers() const override { return true; }

  AnswerTrust check_answer(const HttpResponse& a, std::string_view request_path, int64_t,
                           std::string& why) const override {
    // The member this request's answer must be in: alipay.trade.pay ->
    // alipay_trade_pay_response. The only other is the gateway's own
    // error_response (a refusal before the app was authenticated, unsigned).
    std::string expected = method_of(request_path);
    for (char& c : expected)
      if (c == '.') c = '_';
    expected += "_response";
    std::vector<RawMember> members;
    if (!json_raw_members(a.body, members)) {
      why = "the answer is not one JSON object";
      return AnswerTrust::forged;
    }
    std::string_view response, sign;
    bool gateway_error = false;
    std::vector<std::string_view> seen;
    for (const RawMember& m : members) {
      // Names are compared as sent: an escape could make the JSON paths
      // that classify the answer read a member this check did not.
      if (m.name.find('\\') != std::string_view::npos) {
        why = "the answer has a member name with an escape";
        return AnswerTrust::forged;
      }
      for (std::string_view before : seen)
        if (before == m.name) {
          why = "the answer repeats the member " + std::string(m.name);
          return AnswerTrust::forged;
        }
      seen.push_back(m.name);
      if (m.name == "sign") {
        if (m.value.size() < 2 || m.value.front() != '"') {
          why = "the answer's sign is not a string";
          return AnswerTrust::forged;
        }
        sign = m.value.substr(1, m.value.size() - 2);
      } else if (m.name == expected || m.name == "error_response") {
        if (!response.empty()) {
          why = "the answer holds two response members";
          return AnswerTrust::forged;
        }
        response = m.value;
        gateway_error = m.name == "error_response";
      } else if (ends_with(m.name, "_response")) {
        // Only the verified member may be read: a second one would be
        // classified without being signed.
        why = "the answer holds " + std::string(m.name) + " beside " + expected;
        return AnswerTrust::forged;
      }
    }
    if (response.empty()) {
      why = "the answer holds no " + expected;
      return AnswerTrust::forged;
    }
    if (sign.empty()) {
      why = "the answer carries no sign";
      // Alipay signs every answer of an authenticated app; only the
      // gateway's own refusals come unsigned.
      return gateway_error ? AnswerTrust::unsigned_ : AnswerTrust::forged;
    }
    // Base64 holds no JSON escapes but "\/", which a JSON writer may use.
    std::string signature(sign);
    for (size_t at = signature.find("\\/"); at != std::string::npos; at = signature.find("\\/", at))
      signature.erase(at, 1);
    if (!alipay_.verifies(response, signature)) {
      why = "the answer's sign does not verify with Alipay's public key";
      return AnswerTrust::forged;
    }
    return AnswerTrust::verified;
  }

 private:
  static RsaKey load(const std::string& pem, bool is_private) {
    try {
      return is_private ? RsaKey::private_from_pem(pem, "auth.alipay.private_key")
                        : RsaKey::public_from_pem(pem, "auth.alipay.alipay_public_key");
    } catch (const std::invalid_argument& e) {
      throw ConfigError(e.what());
    }
  }

  const std::string app_id_;
  const RsaKey key_;
  const RsaKey alipay_;
};

}  // namespace

std::unique_ptr<Authenticator> make_alipay_authenticator(const Config& config) {
  return std::make_unique<AlipayRsa2>(config);
}

}  // namespace payretry
