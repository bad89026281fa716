#include "wechat_auth.hpp"

#include <charconv>
#include <map>

namespace payretry_sim {

namespace {

constexpr std::string_view kScheme = "WECHATPAY2-SHA256-RSA2048";
constexpr const char* kFields[] = {"mchid", "nonce_str", "signature", "timestamp", "serial_no"};

bool known_field(std::string_view name) {
  for (const char* f : kFields) {
    if (name == f) return true;
  }
  return false;
}

void skip_spaces(std::string_view& s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
}

// `name="value"` pairs separated by commas (spaces allowed around them). Returns "" or the fault.
std::string parse_fields(std::string_view s, std::map<std::string, std::string>* fields) {
  skip_spaces(s);
  while (!s.empty()) {
    const std::size_t eq = s.find('=');
    if (eq == std::string_view::npos || eq == 0) return "malformed Authorization parameters";
    const std::string name(s.substr(0, eq));
    s.remove_prefix(eq + 1);
    if (s.empty() || s.front() != '"') return "Authorization field " + name + " is not a quoted string";
    const std::size_t close = s.find('"', 1);
    if (close == std::string_view::npos) return "Authorization field " + name + " has no closing quote";
    const std::string value(s.substr(1, close - 1));
    s.remove_prefix(close + 1);
    if (!known_field(name)) return "unknown Authorization field " + name;
    if (!fields->emplace(name, value).second) return "Authorization field " + name + " appears twice";
    skip_spaces(s);
    if (s.empty()) break;
    if (s.front() != ',') return "Authorization fields must be separated by commas";
    s.remove_prefix(1);
    skip_spaces(s);
    if (s.empty()) return "malformed Authorization parameters";
  }
  return "";
}

}  // namespace

std::string check_wechat_request(std::string_view authorization, std::string_view method,
                                 std::string_view target, std::string_view body,
                                 const RsaKey* merchant_public, int64_t now_s) {
  if (authorization.empty()) return "Authorization header is missing";
  if (authorization.substr(0, kScheme.size()) != kScheme || authorization.size() == kScheme.size() ||
      authorization[kScheme.size()] != ' ') {
    return "Authorization scheme must be WECHATPAY2-SHA256-RSA2048";
  }
  std::map<std::string, std::string> f;
  std::string fault = parse_fields(authorization.substr(kScheme.size()), &f);
  if (!fault.empty()) return fault;
  for (const char* name : kFields) {
    auto it = f.find(name);
    if (it == f.end() || it->second.empty()) return std::string("Authorization field ") + name + " is missing";
  }
  const std::string& ts = f["timestamp"];
  int64_t t = 0;
  const auto r = std::from_chars(ts.data(), ts.data() + ts.size(), t);
  if (r.ec != std::errc() || r.ptr != ts.data() + ts.size() || t < 0 || ts.size() > 12) {
    return "timestamp must be Unix seconds";
  }
  std::string raw;
  if (!base64_decode(f["signature"], &raw) || raw.empty()) return "signature is not base64";
  if (!merchant_public) return "";

  if (t < now_s - kWechatMaxSkewS || t > now_s + kWechatMaxSkewS) {
    return "timestamp " + ts + " is more than 5 minutes away from the server's time " + std::to_string(now_s);
  }
  std::string message;
  message.reserve(method.size() + target.size() + ts.size() + f["nonce_str"].size() + body.size() + 5);
  message.append(method).append("\n").append(target).append("\n").append(ts).append("\n");
  message.append(f["nonce_str"]).append("\n").append(body).append("\n");
  if (!merchant_public->verify(message, f["signature"])) {
    return "signature does not verify with the merchant's public key";
  }
  return "";
}

void append_wechat_answer_signature(std::string& headers, std::string_view body,
                                    const RsaKey& platform_key, int64_t now_s) {
  const std::string ts = std::to_string(now_s);
  const std::string nonce = random_hex(16);
  std::string message;
  message.reserve(ts.size() + nonce.size() + body.size() + 3);
  message.append(ts).append("\n").append(nonce).append("\n").append(body).append("\n");
  headers.append("Wechatpay-Timestamp: ").append(ts).append("\r\n");
  headers.append("Wechatpay-Nonce: ").append(nonce).append("\r\n");
  headers.append("Wechatpay-Serial: ").append(kWechatPlatformSerial).append("\r\n");
  headers.append("Wechatpay-Signature: ").append(platform_key.sign(message)).append("\r\n");
  // The algorithm, which clients (wechatpayv3 among them) check before verifying.
  headers.append("Wechatpay-Signature-Type: WECHATPAY2-SHA256-RSA2048\r\n");
}

}  // namespace payretry_sim
