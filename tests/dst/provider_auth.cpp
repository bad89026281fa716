#include "provider_auth.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <strings.h>

#include <cctype>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace payretry::dst {

struct ProviderKeys::Key {
  std::shared_ptr<EVP_PKEY> pkey;
};

namespace {

using MdCtx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

std::shared_ptr<ProviderKeys::Key> read_key(const std::string& dir, const std::string& file, bool is_private) {
  const std::string text = ProviderKeys::pem(dir, file);
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), BIO_free);
  EVP_PKEY* k = bio ? (is_private ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                                  : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr))
                    : nullptr;
  if (!k) throw std::runtime_error("dst: cannot load the test key " + dir + "/" + file);
  return std::make_shared<ProviderKeys::Key>(ProviderKeys::Key{std::shared_ptr<EVP_PKEY>(k, EVP_PKEY_free)});
}

std::string b64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool unb64(std::string_view text, std::string& out) {
  if (text.empty() || text.size() % 4 != 0) return false;
  out.assign(text.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return false;
  size_t len = static_cast<size_t>(n);
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) --len;
  out.resize(len);
  return true;
}

std::string rsa_sign(const ProviderKeys::Key& key, std::string_view message) {
  MdCtx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  size_t len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.pkey.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1)
    throw std::runtime_error("dst: RSA-SHA256 signing failed");
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(&sig[0]), &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1)
    throw std::runtime_error("dst: RSA-SHA256 signing failed");
  sig.resize(len);
  return b64(sig);
}

bool rsa_verifies(const ProviderKeys::Key& key, std::string_view message, std::string_view sig_b64) {
  std::string sig;
  if (!unb64(sig_b64, sig)) return false;
  MdCtx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.pkey.get()) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                          reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
}

const std::string* header(const HttpRequest& req, const char* name) {
  for (const auto& [n, v] : req.headers)
    if (strcasecmp(n.c_str(), name) == 0) return &v;
  return nullptr;
}

std::string path_of(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return slash == std::string::npos ? "/" : url.substr(slash);
}

// application/x-www-form-urlencoded, decoded; false on a bad escape.
bool decode(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out.push_back(' ');
    } else if (in[i] == '%') {
      if (i + 2 >= in.size()) return false;
      const std::string hex(in.substr(i + 1, 2));
      if (!isxdigit(static_cast<unsigned char>(hex[0])) || !isxdigit(static_cast<unsigned char>(hex[1])))
        return false;
      out.push_back(static_cast<char>(std::stoi(hex, nullptr, 16)));
      i += 2;
    } else {
      out.push_back(in[i]);
    }
  }
  return true;
}

bool read_pairs(std::string_view s, std::multimap<std::string, std::string>& out) {
  std::string name, value;
  while (!s.empty()) {
    const size_t amp = s.find('&');
    const std::string_view pair = s.substr(0, amp);
    s = amp == std::string_view::npos ? std::string_view{} : s.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    if (!decode(pair.substr(0, eq), name) ||
        !decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), value))
      return false;
    out.emplace(name, value);
  }
  return true;
}

}  // namespace

std::string ProviderKeys::pem(const std::string& dir, const std::string& file) {
  std::ifstream f(dir + "/" + file, std::ios::binary);
  if (!f) throw std::runtime_error("dst: cannot read the test key " + dir + "/" + file);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const ProviderKeys& ProviderKeys::load(const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<ProviderKeys>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = loaded[dir];
  if (!slot) {
    auto k = std::make_unique<ProviderKeys>();
    k->merchant_pub_ = read_key(dir, "wechat_merchant_pub.pem", false);
    k->platform_key_ = read_key(dir, "wechat_platform_key.pem", true);
    k->app_pub_ = read_key(dir, "alipay_app_pub.pem", false);
    k->alipay_key_ = read_key(dir, "alipay_key.pem", true);
    slot = std::move(k);
  }
  return *slot;
}

std::string ProviderKeys::check_wechatpay(const HttpRequest& req, const std::string& mchid, int64_t now_unix_ms) const {
  const std::string* auth = header(req, "Authorization");
  static const std::string kScheme = "WECHATPAY2-SHA256-RSA2048 ";
  if (!auth || auth->compare(0, kScheme.size(), kScheme) != 0) return "no WECHATPAY2-SHA256-RSA2048 Authorization";
  std::map<std::string, std::string> f;
  std::string_view s = std::string_view(*auth).substr(kScheme.size());
  while (!s.empty()) {
    while (!s.empty() && (s.front() == ' ' || s.front() == ',')) s.remove_prefix(1);
    const size_t eq = s.find("=\"");
    if (eq == std::string_view::npos) break;
    const size_t close = s.find('"', eq + 2);
    if (close == std::string_view::npos) return "an Authorization field has no closing quote";
    if (!f.emplace(std::string(s.substr(0, eq)), std::string(s.substr(eq + 2, close - eq - 2))).second)
      return "an Authorization field appears twice";
    s.remove_prefix(close + 1);
  }
  for (const char* name : {"mchid", "nonce_str", "signature", "timestamp", "serial_no"})
    if (f[name].empty()) return std::string("Authorization field ") + name + " is missing";
  if (f["mchid"] != mchid) return "signed for mchid " + f["mchid"] + ", not " + mchid;
  if (f["serial_no"] != kWechatMerchantSerial) return "signed with certificate " + f["serial_no"];
  const std::string& ts = f["timestamp"];
  if (ts.empty() || ts.size() > 12 || ts.find_first_not_of("0123456789") != std::string::npos)
    return "timestamp is not Unix seconds";
  const int64_t skew = std::stoll(ts) - now_unix_ms / 1000;
  if (skew > 300 || skew < -300) return "timestamp " + ts + " is more than 5 minutes from the provider's clock";
  std::string message;
  message.append(req.method).append("\n").append(path_of(req.url)).append("\n").append(ts).append("\n");
  message.append(f["nonce_str"]).append("\n").append(req.body).append("\n");
  if (!rsa_verifies(*merchant_pub_, message, f["signature"])) return "signature does not verify with the merchant key";
  return "";
}

std::string ProviderKeys::check_alipay(const HttpRequest& req) const {
  const std::string path = path_of(req.url);
  const size_t q = path.find('?');
  std::multimap<std::string, std::string> params;
  if (q == std::string::npos || !read_pairs(std::string_view(path).substr(q + 1), params))
    return "the gateway URL carries no parameters";
  if (!read_pairs(req.body, params)) return "the body is not form fields";
  std::string sign;
  std::string content;
  std::string last;
  for (const auto& [name, value] : params) {
    if (name == last) return "parameter " + name + " given twice";
    last = name;
    if (name == "sign") {
      sign = value;
      continue;
    }
    if (value.empty()) continue;
    if (!content.empty()) content.push_back('&');
    content.append(name).append("=").append(value);
  }
  auto param = [&](const char* n) {
    const auto it = params.find(n);
    return it == params.end() ? std::string() : it->second;
  };
  if (param("app_id") != kAlipayAppId) return "app_id is not the test app";
  if (param("sign_type") != "RSA2") return "sign_type is not RSA2";
  if (param("method").empty() || param("timestamp").empty() || param("charset").empty() || param("version").empty())
    return "a common gateway parameter is missing";
  if (sign.empty()) return "no sign";
  if (!rsa_verifies(*app_pub_, content, sign)) return "sign does not verify with the app's public key";
  return "";
}

void ProviderKeys::sign_wechatpay(HttpResponse& a, int64_t unix_s, const std::string& nonce) const {
  const std::string ts = std::to_string(unix_s);
  const std::string message = ts + "\n" + nonce + "\n" + a.body + "\n";
  a.headers.emplace_back("Wechatpay-Timestamp", ts);
  a.headers.emplace_back("Wechatpay-Nonce", nonce);
  a.headers.emplace_back("Wechatpay-Serial", kWechatPlatformSerial);
  a.headers.emplace_back("Wechatpay-Signature", rsa_sign(*platform_key_, message));
  a.headers.emplace_back("Wechatpay-Signature-Type", "WECHATPAY2-SHA256-RSA2048");
}

void ProviderKeys::sign_alipay(HttpResponse& a) const {
  // Every gateway answer the model writes is {"<member>":<value>}: the
  // value runs from after the member name's colon to the final brace.
  std::string& body = a.body;
  if (body.size() < 6 || body.compare(0, 2, "{\"") != 0 || body.back() != '}') return;
  const size_t name_end = body.find("\":", 2);
  static const std::string kSuffix = "_response";
  if (name_end == std::string::npos || name_end < 2 + kSuffix.size() ||
      body.compare(name_end - kSuffix.size(), kSuffix.size(), kSuffix) != 0 ||
      body.compare(2, name_end - 2, "error_response") == 0)
    return;
  const size_t value_begin = name_end + 2;
  const std::string sign = rsa_sign(*alipay_key_, std::string_view(body).substr(value_begin, body.size() - 1 - value_begin));
  body.pop_back();
  body += R"(,"sign":")" + sign + "\"}";
}

std::string ProviderKeys::sign_alipay_content(std::string_view content) const {
  return rsa_sign(*alipay_key_, content);
}

void ProviderKeys::forge(HttpResponse& a) {
  auto flip = [](std::string& sig) {
    if (sig.size() < 12) return;
    sig[10] = sig[10] == 'A' ? 'B' : 'A';
  };
  for (auto& [name, value] : a.headers)
    if (strcasecmp(name.c_str(), "Wechatpay-Signature") == 0) flip(value);
  const size_t at = a.body.rfind(R"(,"sign":")");
  if (at != std::string::npos) {
    std::string sig = a.body.substr(at + 9, a.body.size() - 2 - (at + 9));
    flip(sig);
    a.body = a.body.substr(0, at + 9) + sig + "\"}";
  }
}

}  // namespace payretry::dst
