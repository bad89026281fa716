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

size_t skip_ws(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

// End (one past) of the JSON string starting at s[i] == '"'; npos if unclosed.
size_t string_end(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') ++i;
    else if (s[i] == '"') return i + 1;
  }
  return std::string_view::npos;
}

// End of the JSON value starting at s[i]; npos if it runs off the text.
size_t value_end(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return string_end(s, i);
  if (s[i] != '{' && s[i] != '[') {
    while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' && s[i] != '\r' &&
           s[i] != '\t')
      ++i;
    return i;
  }
  int depth = 0;
  for (; i < s.size(); ++i) {
    if (s[i] == '"') {
      i = string_end(s, i);
      if (i == std::string_view::npos) return i;
      --i;
    } else if (s[i] == '{' || s[i] == '[') {
      ++depth;
    } else if (s[i] == '}' || s[i] == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// The top-level members of a JSON object as raw text: name (still quoted,
// escapes as sent) -> the exact bytes of its value. False if malformed.
bool raw_members(std::string_view s, std::vector<std::pair<std::string_view, std::string_view>>& out) {
  size_t i = skip_ws(s, 0);
  if (i >= s.size() || s[i] != '{') return false;
  i = skip_ws(s, i + 1);
  if (i < s.size() && s[i] == '}') return true;
  for (;;) {
    if (i >= s.size() || s[i] != '"') return false;
    const size_t name_end = string_end(s, i);
    if (name_end == std::string_view::npos) return false;
    const std::string_view name = s.substr(i + 1, name_end - i - 2);
    i = skip_ws(s, name_end);
    if (i >= s.size() || s[i] != ':') return false;
    i = skip_ws(s, i + 1);
    const size_t end = value_end(s, i);
    if (end == std::string_view::npos) return false;
    out.emplace_back(name, s.substr(i, end - i));
    i = skip_ws(s, end);
    if (i < s.size() && s[i] == ',') {
      i = skip_ws(s, i + 1);
      continue;
    }
    return i < s.size() && s[i] == '}';
  }
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

  AnswerTrust check_answer(const HttpResponse& a, int64_t, std::string& why) const override {
    std::vector<std::pair<std::string_view, std::string_view>> members;
    if (!raw_members(a.body, members)) {
      why = "the answer is not a JSON object";
      return AnswerTrust::unsigned_;
    }
    std::string_view response, sign;
    for (const auto& [name, value] : members) {
      if (ends_with(name, "_response") && response.empty()) response = value;
      if (name == "sign" && value.size() >= 2 && value.front() == '"') sign = value.substr(1, value.size() - 2);
    }
    if (sign.empty()) {
      why = "the answer carries no sign";
      return AnswerTrust::unsigned_;
    }
    // Base64 holds no JSON escapes but "\/", which a JSON writer may use.
    std::string signature(sign);
    for (size_t at = signature.find("\\/"); at != std::string::npos; at = signature.find("\\/", at))
      signature.erase(at, 1);
    if (response.empty() || !alipay_.verifies(response, signature)) {
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
