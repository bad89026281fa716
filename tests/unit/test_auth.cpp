// Built-in authentication (issue 15): the `auth` config forms, the WeChat Pay
// v3 and Alipay RSA2 signers and answer checks, Alipay's flat gateway form,
// OAuth2 client credentials, and how the engine uses an Authenticator.
//
// Every signature is checked independently of the code under test: the signed
// message is rebuilt here from the wire formats in the design note, and
// verified (or made) with OpenSSL directly on the test keys of tests/keys/.
#include <cJSON.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <strings.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "auth.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "fakes.hpp"
#include "form_encoding.hpp"
#include "profile.hpp"

namespace payretry {
namespace {

using namespace payretry::test;

// ---- test keys and ids (tests/keys/README.md) ---------------------------------------------

std::string key_path(const std::string& name) { return std::string(PAYRETRY_TEST_KEYS) + "/" + name; }

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const char kMchid[] = "1900000109";
const char kMerchantSerial[] = "3775B6A45ACD588826D15E583A95F5DD3F3B4DD8";
const char kPlatformSerial[] = "PUB_KEY_ID_0119000001092026120200000000";
const char kAlipayAppId[] = "2021000000000001";

// ---- OpenSSL, independently of src/auth/rsa_signature.cpp ------------------------------------

using Pkey = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

Pkey load_key(const std::string& file, bool is_private) {
  const std::string pem = read_file(key_path(file));
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* k = is_private ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr)
                           : PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return Pkey(k, EVP_PKEY_free);
}

std::string b64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool unb64(const std::string& text, std::string& out) {
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

// base64(RSA-SHA256 PKCS#1 v1.5) of `message` with the private key in tests/keys/`file`.
std::string ossl_sign(const std::string& file, const std::string& message) {
  Pkey key = load_key(file, true);
  if (!key) {
    ADD_FAILURE() << "cannot load " << file;
    return "";
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t len = 0;
  std::string sig;
  if (EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key.get()) == 1 &&
      EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1) {
    sig.resize(len);
    if (EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(&sig[0]), &len,
                       reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1)
      sig.clear();
    sig.resize(len);
  }
  EVP_MD_CTX_free(ctx);
  if (sig.empty()) ADD_FAILURE() << "OpenSSL could not sign";
  return b64(sig);
}

// Whether `sig_b64` is the public key in tests/keys/`file`'s RSA-SHA256 signature of `message`.
bool ossl_verifies(const std::string& file, const std::string& message, const std::string& sig_b64) {
  Pkey key = load_key(file, false);
  if (!key) {
    ADD_FAILURE() << "cannot load " << file;
    return false;
  }
  std::string sig;
  if (!unb64(sig_b64, sig)) return false;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key.get()) == 1 &&
                  EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                                   reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

// ---- form fields, decoded here (not with form_decode) -------------------------------------

std::string pct_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> fields_of(const std::string& form) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t at = 0;
  while (at <= form.size()) {
    size_t amp = form.find('&', at);
    if (amp == std::string::npos) amp = form.size();
    const std::string f = form.substr(at, amp - at);
    if (!f.empty()) {
      const size_t eq = f.find('=');
      out.emplace_back(pct_decode(f.substr(0, eq)), eq == std::string::npos ? "" : pct_decode(f.substr(eq + 1)));
    }
    at = amp + 1;
  }
  return out;
}

std::string query_of(const std::string& url_or_path) {
  const size_t q = url_or_path.find('?');
  return q == std::string::npos ? "" : url_or_path.substr(q + 1);
}

// Percent-encoding as a form writes it (unreserved pass, space '+').
std::string pct_encode(const std::string& s) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out.push_back(static_cast<char>(c));
    else if (c == ' ') out.push_back('+');
    else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
    }
  }
  return out;
}

// Alipay's string to sign: every parameter but sign with a value, sorted by
// name, name=value joined by '&', raw values.
std::string alipay_content(const std::map<std::string, std::string>& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    if (k == "sign" || v.empty()) continue;
    if (!out.empty()) out += "&";
    out += k + "=" + v;
  }
  return out;
}

// "WECHATPAY2-SHA256-RSA2048 k=\"v\",..." -> {k: v}; empty when the scheme is wrong.
std::map<std::string, std::string> wechat_auth_fields(const std::string& value) {
  std::map<std::string, std::string> out;
  const std::string scheme = "WECHATPAY2-SHA256-RSA2048 ";
  if (value.rfind(scheme, 0) != 0) return out;
  const std::string rest = value.substr(scheme.size());
  size_t at = 0;
  while (at < rest.size()) {
    const size_t eq = rest.find("=\"", at);
    if (eq == std::string::npos) break;
    const size_t close = rest.find('"', eq + 2);
    if (close == std::string::npos) break;
    out[rest.substr(at, eq - at)] = rest.substr(eq + 2, close - eq - 2);
    at = close + 1;
    if (at < rest.size() && rest[at] == ',') ++at;
  }
  return out;
}

std::string header_of(const Headers& h, const std::string& name) {
  std::string found = "<none>";
  int n = 0;
  for (const auto& [k, v] : h)
    if (strcasecmp(k.c_str(), name.c_str()) == 0) found = v, ++n;
  return n > 1 ? "<" + std::to_string(n) + " values>" : found;
}

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::string config_error(const std::string& json) {
  try {
    (void)parse_config(json);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A config with `auth` (JSON text) and the rest minimal.
std::string with_auth(const std::string& auth, const std::string& provider = "generic",
                      const std::string& extra = "") {
  return R"({"provider":")" + provider + R"(","base_url":"https://api.provider.test","ledger":"memory:",)" + extra +
         R"("auth":)" + auth + "}";
}

std::string wechat_auth_json(const std::string& platform_serial = "") {
  return R"({"wechatpay":{"serial_no":")" + std::string(kMerchantSerial) + R"(","private_key_file":")" +
         key_path("wechat_merchant_key.pem") + R"(","platform_public_key_file":")" + key_path("wechat_platform_pub.pem") +
         "\"" + (platform_serial.empty() ? "" : R"(,"platform_serial":")" + platform_serial + "\"") + "}}";
}

std::string alipay_auth_json() {
  return R"({"alipay":{"app_id":")" + std::string(kAlipayAppId) + R"(","private_key_file":")" +
         key_path("alipay_app_key.pem") + R"(","alipay_public_key_file":")" + key_path("alipay_pub.pem") + "\"}}";
}

// Sets an environment variable for one test.
struct ScopedEnv {
  ScopedEnv(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name_); }
  const char* name_;
};

// =========================================================================================
// 1. Config
// =========================================================================================

TEST(AuthConfig, BearerBecomesAnAuthorizationHeader) {
  const Config c = parse_config(with_auth(R"({"bearer":"sk_test_bearer_1"})"));
  EXPECT_EQ(c.auth.kind, AuthConfig::Kind::fixed_headers);
  ASSERT_EQ(c.auth_headers.size(), 1u);
  EXPECT_EQ(c.auth_headers[0], (std::pair<std::string, std::string>{"Authorization", "Bearer sk_test_bearer_1"}));
}

TEST(AuthConfig, HeaderAndValueBecomeThatHeader) {
  const Config c = parse_config(with_auth(R"({"header":"X-Api-Token","value":"tok-123"})"));
  EXPECT_EQ(c.auth.kind, AuthConfig::Kind::fixed_headers);
  ASSERT_EQ(c.auth_headers.size(), 1u);
  EXPECT_EQ(c.auth_headers[0], (std::pair<std::string, std::string>{"X-Api-Token", "tok-123"}));
}

TEST(AuthConfig, ApiKeyIsKeptForTheProfilesHeader) {
  const Config c = parse_config(with_auth(R"({"api_key":"AQEyhmfxLI3MaBFLw0m"})", "adyen"));
  EXPECT_EQ(c.auth.kind, AuthConfig::Kind::api_key);
  EXPECT_EQ(c.auth.api_key, "AQEyhmfxLI3MaBFLw0m");
  EXPECT_TRUE(c.auth_headers.empty()) << "the header name is the profile's, added when the client is built";
}

TEST(AuthConfig, BasicBecomesBase64OfUserColonPassword) {
  // RFC 7617's example.
  const Config c = parse_config(with_auth(R"({"basic":{"username":"Aladdin","password":"open sesame"}})"));
  EXPECT_EQ(c.auth.kind, AuthConfig::Kind::fixed_headers);
  ASSERT_EQ(c.auth_headers.size(), 1u);
  EXPECT_EQ(c.auth_headers[0].first, "Authorization");
  EXPECT_EQ(c.auth_headers[0].second, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  EXPECT_EQ(c.auth_headers[0].second, "Basic " + b64("Aladdin:open sesame"));
}

TEST(AuthConfig, OAuth2WithAnInlineSecret) {
  const Config c = parse_config(with_auth(
      R"({"oauth2":{"client_id":"test-client-id","client_secret":"test-client-secret","token_path":"/v1/oauth2/token","scope":"https://uri.paypal.com/services/payments"}})",
      "paypal"));
  EXPECT_EQ(c.auth.kind, AuthConfig::Kind::oauth2);
  EXPECT_EQ(c.auth.client_id, "test-client-id");
  EXPECT_EQ(c.auth.client_secret, "test-client-secret");
  EXPECT_EQ(c.auth.token_path, "/v1/oauth2/token");
  EXPECT_EQ(c.auth.scope, "https://uri.paypal.com/services/payments");
  EXPECT_TRUE(c.auth_headers.empty()) << "no fixed header: the token is fetched";
}

TEST(AuthConfig, OAuth2WithTheSecretInAnEnvironmentVariable) {
  ScopedEnv env("PAYRETRY_TEST_OAUTH_SECRET", "secret-from-env-42");
  const Config c = parse_config(
      with_auth(R"({"oauth2":{"client_id":"test-client-id","client_secret_env":"PAYRETRY_TEST_OAUTH_SECRET"}})", "paypal"));
  EXPECT_EQ(c.auth.kind, AuthConfig::Kind::oauth2);
  EXPECT_EQ(c.auth.client_secret, "secret-from-env-42");
  EXPECT_EQ(c.auth.token_path, "") << "unset: the profile's";
}

TEST(AuthConfig, WeChatPayWithKeyFiles) {
  const Config c = parse_config(with_auth(wechat_auth_json(kPlatformSerial), "wechatpay_v3",
                                          R"("merchant_id":"1900000109",)"));
  EXPECT_EQ(c.auth.kind, AuthConfig::Kind::wechatpay);
  EXPECT_EQ(c.auth.serial_no, kMerchantSerial);
  EXPECT_EQ(c.auth.platform_serial, kPlatformSerial);
  EXPECT_EQ(c.auth.private_key_pem, read_file(key_path("wechat_merchant_key.pem")));
  EXPECT_EQ(c.auth.peer_public_key_pem, read_file(key_path("wechat_platform_pub.pem")));
  EXPECT_EQ(c.merchant_id, kMchid);
}

TEST(AuthConfig, AlipayWithKeyFiles) {
  const Config c = parse_config(with_auth(alipay_auth_json(), "alipay"));
  EXPECT_EQ(c.auth.kind, AuthConfig::Kind::alipay);
  EXPECT_EQ(c.auth.app_id, kAlipayAppId);
  EXPECT_EQ(c.auth.private_key_pem, read_file(key_path("alipay_app_key.pem")));
  EXPECT_EQ(c.auth.peer_public_key_pem, read_file(key_path("alipay_pub.pem")));
}

TEST(AuthConfig, AlipayWithThePemTextInEnvironmentVariables) {
  ScopedEnv priv("PAYRETRY_TEST_ALIPAY_PRIV", read_file(key_path("alipay_app_key.pem")));
  ScopedEnv pub("PAYRETRY_TEST_ALIPAY_PUB", read_file(key_path("alipay_pub.pem")));
  const Config c = parse_config(with_auth(
      R"({"alipay":{"app_id":"2021000000000001","private_key_env":"PAYRETRY_TEST_ALIPAY_PRIV","alipay_public_key_env":"PAYRETRY_TEST_ALIPAY_PUB"}})",
      "alipay"));
  EXPECT_EQ(c.auth.kind, AuthConfig::Kind::alipay);
  EXPECT_EQ(c.auth.private_key_pem, read_file(key_path("alipay_app_key.pem")));
  EXPECT_EQ(c.auth.peer_public_key_pem, read_file(key_path("alipay_pub.pem")));
}

TEST(AuthConfig, ErrorsNameTheKey) {
  struct Case {
    std::string auth;
    std::string key;  // the error must start with it
  };
  const std::string wkey = key_path("wechat_merchant_key.pem"), wpub = key_path("wechat_platform_pub.pem");
  const std::vector<Case> cases = {
      // two forms at once
      {R"({"bearer":"a","api_key":"b"})", "auth:"},
      {R"({"bearer":"a","oauth2":{"client_id":"x","client_secret":"y"}})", "auth:"},
      {R"({"header":"X-K","value":"v","basic":{"username":"u","password":"p"}})", "auth:"},
      {R"({})", "auth:"},
      // missing required fields
      {R"({"header":"X-K"})", "auth.value:"},
      {R"({"value":"v"})", "auth.header:"},
      {R"({"basic":{"password":"p"}})", "auth.basic.username:"},
      {R"({"basic":{"username":"u"}})", "auth.basic.password:"},
      {R"({"oauth2":{"client_secret":"s"}})", "auth.oauth2.client_id:"},
      {R"({"oauth2":{"client_id":"id"}})", "auth.oauth2.client_secret:"},
      {R"({"oauth2":{"client_id":"id","client_secret":"s","client_secret_env":"X"}})", "auth.oauth2.client_secret:"},
      {R"({"wechatpay":{"private_key_file":")" + wkey + R"(","platform_public_key_file":")" + wpub + R"("}})",
       "auth.wechatpay.serial_no:"},
      {R"({"wechatpay":{"serial_no":"S","platform_public_key_file":")" + wpub + R"("}})", "auth.wechatpay.private_key:"},
      {R"({"wechatpay":{"serial_no":"S","private_key_file":")" + wkey + R"("}})",
       "auth.wechatpay.platform_public_key:"},
      {R"({"alipay":{"private_key_file":"/x","alipay_public_key_file":"/y"}})", "auth.alipay.app_id:"},
      {R"({"alipay":{"app_id":"1","alipay_public_key_file":")" + wpub + R"("}})", "auth.alipay.private_key:"},
      // unreadable file, unset variable
      {R"({"wechatpay":{"serial_no":"S","private_key_file":"/nonexistent/payretry/k.pem","platform_public_key_file":")" +
           wpub + R"("}})",
       "auth.wechatpay.private_key_file:"},
      {R"({"alipay":{"app_id":"1","private_key_file":")" + wkey +
           R"(","alipay_public_key_file":"/nonexistent/payretry/p.pem"}})",
       "auth.alipay.alipay_public_key_file:"},
      {R"({"alipay":{"app_id":"1","private_key_env":"PAYRETRY_TEST_SURELY_UNSET_VAR","alipay_public_key_file":")" +
           wpub + R"("}})",
       "auth.alipay.private_key_env:"},
      {R"({"oauth2":{"client_id":"id","client_secret_env":"PAYRETRY_TEST_SURELY_UNSET_VAR"}})",
       "auth.oauth2.client_secret_env:"},
      // ':' moves the Basic boundary
      {R"({"basic":{"username":"us:er","password":"p"}})", "auth.basic.username:"},
      {R"({"oauth2":{"client_id":"cli:ent","client_secret":"s"}})", "auth.oauth2.client_id:"},
      // unknown members
      {R"({"bearer":"a","scheme":"x"})", "auth.scheme:"},
      {R"({"oauth2":{"client_id":"id","client_secret":"s","grant":"x"}})", "auth.oauth2.grant:"},
      {R"({"basic":{"username":"u","password":"p","realm":"x"}})", "auth.basic.realm:"},
      {R"({"wechatpay":{"serial_no":"S","private_key_file":")" + wkey + R"(","platform_public_key_file":")" + wpub +
           R"(","mchid":"1"}})",
       "auth.wechatpay.mchid:"},
      {R"({"alipay":{"app_id":"1","private_key_file":")" + wkey + R"(","alipay_public_key_file":")" + wpub +
           R"(","sign_type":"RSA"}})",
       "auth.alipay.sign_type:"},
  };
  for (const Case& c : cases) {
    const std::string e = config_error(with_auth(c.auth));
    EXPECT_EQ(e.rfind(c.key, 0), 0u) << "auth " << c.auth << "\n  error: " << (e.empty() ? "<parsed>" : e);
  }
  // The unreadable file and the unset variable are named.
  EXPECT_TRUE(has(config_error(with_auth(cases[16].auth)), "/nonexistent/payretry/k.pem"));
  EXPECT_TRUE(has(config_error(with_auth(cases[18].auth)), "PAYRETRY_TEST_SURELY_UNSET_VAR"));
}

TEST(AuthConfig, SecretsHoldEveryCredential) {
  auto contains_all = [](const Config& c, std::vector<std::string> wanted) {
    const auto s = c.secrets();
    for (const auto& w : wanted)
      EXPECT_NE(std::find(s.begin(), s.end(), w), s.end()) << "secrets() lacks " << w.substr(0, 40);
  };
  contains_all(parse_config(with_auth(R"({"oauth2":{"client_id":"id","client_secret":"cs-9f8e7d"}})", "paypal")),
               {"cs-9f8e7d"});
  contains_all(parse_config(with_auth(R"({"api_key":"ak-1234567890"})", "adyen")), {"ak-1234567890"});
  contains_all(parse_config(with_auth(R"({"bearer":"sk_bearer_77"})")), {"sk_bearer_77"});
  contains_all(parse_config(with_auth(R"({"basic":{"username":"u","password":"pw-abcdef"}})")),
               {"pw-abcdef", b64("u:pw-abcdef")});
  contains_all(parse_config(with_auth(wechat_auth_json(), "wechatpay_v3", R"("merchant_id":"1900000109",)")),
               {read_file(key_path("wechat_merchant_key.pem"))});
  contains_all(parse_config(with_auth(alipay_auth_json(), "alipay")), {read_file(key_path("alipay_app_key.pem"))});
  ScopedEnv env("PAYRETRY_TEST_OAUTH_SECRET2", "env-secret-5566");
  contains_all(parse_config(with_auth(R"({"oauth2":{"client_id":"id","client_secret_env":"PAYRETRY_TEST_OAUTH_SECRET2"}})",
                                      "paypal")),
               {"env-secret-5566"});
}

TEST(AuthConfig, AnErrorNeverHoldsASecretValue) {
  const std::string S = "SeCrEt-Value-31337";
  ScopedEnv env("PAYRETRY_TEST_SECRET_ENV", S);
  ScopedEnv pem("PAYRETRY_TEST_PEM_ENV", read_file(key_path("alipay_app_key.pem")));
  const std::string wpub = key_path("wechat_platform_pub.pem");
  const std::vector<std::string> auths = {
      R"({"bearer":")" + S + R"(","api_key":")" + S + R"("})",
      R"({"bearer":")" + S + R"(\n"})",
      R"({"header":"Bad Header","value":")" + S + R"("})",
      R"({"header":"X-K","value":")" + S + R"(\r\nX: y"})",
      R"({"api_key":")" + S + R"(","basic":{"username":"u","password":")" + S + R"("}})",
      R"({"basic":{"username":"u:x","password":")" + S + R"("}})",
      R"({"basic":{"username":"u","password":")" + S + R"(","password_env":"PAYRETRY_TEST_SECRET_ENV"}})",
      R"({"oauth2":{"client_id":"a:b","client_secret":")" + S + R"("}})",
      R"({"oauth2":{"client_id":"id","client_secret":")" + S + R"(","client_secret_env":"PAYRETRY_TEST_SECRET_ENV"}})",
      R"({"oauth2":{"client_id":"id","client_secret":")" + S + R"(\r\n"}})",
      R"({"oauth2":{"client_id":"id","client_secret":")" + S + R"(","token_path":"no-slash"}})",
      R"({"oauth2":{"client_id":"id","client_secret":")" + S + R"(","extra":1}})",
      R"({"alipay":{"app_id":"1","private_key_env":"PAYRETRY_TEST_PEM_ENV","private_key_file":"/x","alipay_public_key_file":")" +
          wpub + R"("}})",
      R"({"alipay":{"app_id":"1","private_key_env":"PAYRETRY_TEST_PEM_ENV","alipay_public_key_file":"/nonexistent/p.pem"}})",
      R"({"wechatpay":{"serial_no":"S","private_key_env":"PAYRETRY_TEST_PEM_ENV","platform_public_key_file":")" + wpub +
          R"(","bogus":true}})",
  };
  const std::string pem_line = read_file(key_path("alipay_app_key.pem")).substr(28, 40);  // a line of the key
  for (const std::string& a : auths) {
    const std::string e = config_error(with_auth(a));
    EXPECT_FALSE(e.empty()) << "parsed: " << a;
    EXPECT_FALSE(has(e, S)) << "the error shows the secret: " << e;
    EXPECT_FALSE(has(e, pem_line)) << "the error shows the private key: " << e;
    EXPECT_FALSE(has(e, "PRIVATE KEY")) << e;
  }
}

TEST(AuthConfig, AKeyFileFieldHoldingThePemTextIsNotEchoed) {
  // A likely mistake: the PEM text itself where its path belongs (or in the
  // _env field). The error must name the key without showing the key.
  const std::string pem = read_file(key_path("wechat_merchant_key.pem"));
  cJSON* s = cJSON_CreateString(pem.c_str());
  char* quoted = cJSON_PrintUnformatted(s);
  const std::string pem_json = quoted;
  cJSON_free(quoted);
  cJSON_Delete(s);
  const std::string pem_line = pem.substr(28, 40);
  for (const char* field : {"private_key_file", "private_key_env"}) {
    const std::string auth = R"({"wechatpay":{"serial_no":"S",")" + std::string(field) + "\":" + pem_json +
                             R"(,"platform_public_key_file":")" + key_path("wechat_platform_pub.pem") + R"("}})";
    const std::string e = config_error(with_auth(auth, "wechatpay_v3", R"("merchant_id":"1900000109",)"));
    EXPECT_EQ(e.rfind(std::string("auth.wechatpay.") + field, 0), 0u) << e;
    EXPECT_FALSE(has(e, pem_line)) << field << ": the error shows the private key: " << e.substr(0, 160) << "...";
  }
}

TEST(AuthConfig, MakeAuthenticatorFitsTheProfile) {
  FakeClock clock;
  ScriptedTransport unused_transport{clock};
  auto make = [&](const std::string& json) {
    const Config c = parse_config(json);
    const Profile p = *builtin_profile(c.provider);
    return make_authenticator(c, p, unused_transport, clock);
  };
  auto error_of = [&](const std::string& json) -> std::string {
    try {
      make(json);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(make(with_auth(R"({"bearer":"x"})", "stripe")), nullptr) << "a fixed header needs no authenticator";
  EXPECT_EQ(make(with_auth(R"({"api_key":"x"})", "adyen")), nullptr);
  EXPECT_NE(make(with_auth(R"({"oauth2":{"client_id":"i","client_secret":"s"}})", "paypal")), nullptr);
  EXPECT_NE(make(with_auth(wechat_auth_json(), "wechatpay_v3", R"("merchant_id":"1900000109",)")), nullptr);
  EXPECT_NE(make(with_auth(alipay_auth_json(), "alipay")), nullptr);
  // stripe names no token endpoint and the config gives none.
  EXPECT_EQ(error_of(with_auth(R"({"oauth2":{"client_id":"i","client_secret":"s"}})", "stripe"))
                .rfind("auth.oauth2.token_path:", 0),
            0u);
  EXPECT_NE(make(with_auth(R"({"oauth2":{"client_id":"i","client_secret":"s","token_path":"/oauth/token"}})", "stripe")),
            nullptr);
  EXPECT_EQ(error_of(with_auth(wechat_auth_json(), "stripe", R"("merchant_id":"1900000109",)")).rfind("auth.wechatpay", 0),
            0u);
  EXPECT_EQ(error_of(with_auth(wechat_auth_json(), "wechatpay_v3")).rfind("merchant_id:", 0), 0u);
  EXPECT_EQ(error_of(with_auth(alipay_auth_json(), "generic")).rfind("auth.alipay", 0), 0u);
  // A key file that holds no key of the right kind.
  const std::string swapped = R"({"wechatpay":{"serial_no":"S","private_key_file":")" +
                              key_path("wechat_merchant_pub.pem") + R"(","platform_public_key_file":")" +
                              key_path("wechat_platform_pub.pem") + R"("}})";
  const std::string e = error_of(with_auth(swapped, "wechatpay_v3", R"("merchant_id":"1900000109",)"));
  EXPECT_EQ(e.rfind("auth.wechatpay.private_key", 0), 0u) << e;
  const std::string garbage = testing::TempDir() + "payretry_garbage_key.pem";
  std::ofstream(garbage) << "-----BEGIN PUBLIC KEY-----\nnot base64 at all\n-----END PUBLIC KEY-----\n";
  const std::string bad_pub = R"({"alipay":{"app_id":"1","private_key_file":")" + key_path("alipay_app_key.pem") +
                              R"(","alipay_public_key_file":")" + garbage + R"("}})";
  EXPECT_EQ(error_of(with_auth(bad_pub, "alipay")).rfind("auth.alipay.alipay_public_key", 0), 0u);
  std::remove(garbage.c_str());
}

// =========================================================================================
// 2. WeChat Pay v3
// =========================================================================================

class WeChatAuth : public ::testing::Test {
 protected:
  std::unique_ptr<Authenticator> make(const std::string& base_url = "https://api.mch.weixin.qq.com",
                                      const std::string& platform_serial = "") {
    config = parse_config(R"({"provider":"wechatpay_v3","base_url":")" + base_url +
                          R"(","ledger":"memory:","merchant_id":"1900000109","auth":)" +
                          wechat_auth_json(platform_serial) + "}");
    profile = *builtin_profile("wechatpay_v3");
    return make_authenticator(config, profile, transport, clock);
  }

  // The Authorization header of `r` after authorize(), checked for its five fields.
  std::map<std::string, std::string> signed_fields(const OutgoingRequest& r) {
    EXPECT_EQ(r.headers.size(), 1u);
    const std::string value = header_of(r.headers, "Authorization");
    auto f = wechat_auth_fields(value);
    EXPECT_EQ(f.size(), 5u) << value;
    const std::set<std::string> names = {"mchid", "nonce_str", "signature", "timestamp", "serial_no"};
    for (const auto& [k, v] : f) EXPECT_TRUE(names.count(k)) << "unexpected field " << k;
    EXPECT_EQ(f["mchid"], kMchid);
    EXPECT_EQ(f["serial_no"], kMerchantSerial);
    EXPECT_FALSE(f["nonce_str"].empty());
    for (char c : f["nonce_str"]) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << f["nonce_str"];
    return f;
  }

  // An answer signed as WeChat signs it.
  static HttpResponse answer(int status, const std::string& body, int64_t ts_s, const std::string& nonce = "ANSWERNONCE01",
                             const std::string& serial = kPlatformSerial,
                             const std::string& key = "wechat_platform_key.pem") {
    HttpResponse a;
    a.status = status;
    a.body = body;
    const std::string ts = std::to_string(ts_s);
    a.headers = {{"Content-Type", "application/json"},
                 {"Wechatpay-Timestamp", ts},
                 {"Wechatpay-Nonce", nonce},
                 {"Wechatpay-Signature", ossl_sign(key, ts + "\n" + nonce + "\n" + body + "\n")},
                 {"Wechatpay-Serial", serial}};
    return a;
  }

  Config config;
  Profile profile;
  FakeClock clock;
  ScriptedTransport transport{clock};
};

const std::string kWxBody =
    R"({"appid":"wxd678efh567hg6787","mchid":"1900000109","description":"Image形象店-深圳腾大-QQ公仔","out_trade_no":"order-0001","notify_url":"https://www.weixin.qq.com/wxpay/pay.php","amount":{"total":100,"currency":"CNY"},"payer":{"openid":"oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"}})";

TEST_F(WeChatAuth, SignsAPostWithItsBody) {
  auto auth = make();
  ASSERT_NE(auth, nullptr);
  const int64_t unix_ms = 1'700'000'123'456;
  OutgoingRequest r{"POST", "https://api.mch.weixin.qq.com", "/v3/pay/transactions/jsapi", kWxBody, {}};
  ASSERT_EQ(auth->authorize(r, unix_ms, 5000), "");
  auto f = signed_fields(r);
  EXPECT_EQ(f["timestamp"], "1700000123");
  const std::string message =
      "POST\n/v3/pay/transactions/jsapi\n1700000123\n" + f["nonce_str"] + "\n" + kWxBody + "\n";
  EXPECT_TRUE(ossl_verifies("wechat_merchant_pub.pem", message, f["signature"])) << "signature " << f["signature"];
  // Not some other message: the trailing newline, the key, the method all count.
  EXPECT_FALSE(ossl_verifies("wechat_merchant_pub.pem", message.substr(0, message.size() - 1), f["signature"]));
  EXPECT_FALSE(ossl_verifies("wechat_platform_pub.pem", message, f["signature"]));
  EXPECT_FALSE(ossl_verifies("wechat_merchant_pub.pem", "GET" + message.substr(4), f["signature"]));
  // The request itself is not changed.
  EXPECT_EQ(r.url(), "https://api.mch.weixin.qq.com/v3/pay/transactions/jsapi");
  EXPECT_EQ(std::string(r.body), kWxBody);
}

TEST_F(WeChatAuth, SignsAGetWithItsQueryAndAnEmptyBody) {
  auto auth = make();
  OutgoingRequest r{"GET", "https://api.mch.weixin.qq.com", "/v3/pay/transactions/out-trade-no/order-0001?mchid=1900000109",
                    "", {}};
  ASSERT_EQ(auth->authorize(r, 1'700'000'000'000, 5000), "");
  auto f = signed_fields(r);
  EXPECT_EQ(f["timestamp"], "1700000000");
  const std::string message = "GET\n/v3/pay/transactions/out-trade-no/order-0001?mchid=1900000109\n1700000000\n" +
                              f["nonce_str"] + "\n\n";
  EXPECT_TRUE(ossl_verifies("wechat_merchant_pub.pem", message, f["signature"]));
  EXPECT_FALSE(ossl_verifies("wechat_merchant_pub.pem",
                             "GET\n/v3/pay/transactions/out-trade-no/order-0001\n1700000000\n" + f["nonce_str"] + "\n\n",
                             f["signature"]))
      << "the query is part of the signed URL";
}

TEST_F(WeChatAuth, TheSignedPathIncludesTheBaseUrlsPrefix) {
  auto auth = make("https://gateway.example.com:8443/wxpay");
  OutgoingRequest r{"POST", config.base_url, "/v3/pay/transactions/jsapi", kWxBody, {}};
  ASSERT_EQ(auth->authorize(r, 1'700'000'000'000, 5000), "");
  auto f = signed_fields(r);
  EXPECT_TRUE(ossl_verifies("wechat_merchant_pub.pem",
                            "POST\n/wxpay/v3/pay/transactions/jsapi\n1700000000\n" + f["nonce_str"] + "\n" + kWxBody + "\n",
                            f["signature"]));
}

TEST_F(WeChatAuth, EveryCallHasItsOwnNonce) {
  auto auth = make();
  std::set<std::string> nonces, signatures;
  for (int i = 0; i < 20; ++i) {
    OutgoingRequest r{"POST", "https://api.mch.weixin.qq.com", "/v3/pay/transactions/jsapi", kWxBody, {}};
    ASSERT_EQ(auth->authorize(r, 1'700'000'000'000, 5000), "");
    auto f = wechat_auth_fields(header_of(r.headers, "Authorization"));
    EXPECT_GE(f["nonce_str"].size(), 16u);
    nonces.insert(f["nonce_str"]);
    signatures.insert(f["signature"]);
  }
  EXPECT_EQ(nonces.size(), 20u);
  EXPECT_EQ(signatures.size(), 20u);
}

const std::string kWxPath = "/v3/pay/transactions/jsapi";

TEST_F(WeChatAuth, AnAnswerSignedByThePlatformKeyIsVerified) {
  auto auth = make();
  EXPECT_TRUE(auth->signs_answers());
  const int64_t now_ms = 1'700'000'000'000;
  const std::string body = R"({"prepay_id":"wx26112221580621e9b071c00d9e093b0000"})";
  std::string why;
  EXPECT_EQ(auth->check_answer(answer(200, body, now_ms / 1000), kWxPath, now_ms, why), AnswerTrust::verified) << why;
  // A few minutes of skew either way is fine.
  EXPECT_EQ(auth->check_answer(answer(200, body, now_ms / 1000 - 290), kWxPath, now_ms, why), AnswerTrust::verified) << why;
  EXPECT_EQ(auth->check_answer(answer(200, body, now_ms / 1000 + 290), kWxPath, now_ms, why), AnswerTrust::verified) << why;
  // An empty body (204) is signed over "TS\nNONCE\n\n".
  EXPECT_EQ(auth->check_answer(answer(204, "", now_ms / 1000), kWxPath, now_ms, why), AnswerTrust::verified) << why;
}

TEST_F(WeChatAuth, AChangedBodyByteIsForged) {
  auto auth = make();
  const int64_t now_ms = 1'700'000'000'000;
  const std::string body = R"({"prepay_id":"wx26112221580621e9b071c00d9e093b0000"})";
  HttpResponse a = answer(200, body, now_ms / 1000);
  a.body[15] ^= 0x01;
  std::string why;
  EXPECT_EQ(auth->check_answer(a, kWxPath, now_ms, why), AnswerTrust::forged);
  EXPECT_FALSE(why.empty());
  // A trailing byte added, too.
  a = answer(200, body, now_ms / 1000);
  a.body += " ";
  EXPECT_EQ(auth->check_answer(a, kWxPath, now_ms, why), AnswerTrust::forged);
  // The nonce is signed as well.
  a = answer(200, body, now_ms / 1000);
  for (auto& [k, v] : a.headers)
    if (k == "Wechatpay-Nonce") v = "OTHERNONCE";
  EXPECT_EQ(auth->check_answer(a, kWxPath, now_ms, why), AnswerTrust::forged);
  // Signed by another key (the merchant's).
  EXPECT_EQ(auth->check_answer(answer(200, body, now_ms / 1000, "N1", kPlatformSerial, "wechat_merchant_key.pem"), kWxPath, now_ms,
                               why),
            AnswerTrust::forged);
  // A signature that is not base64.
  a = answer(200, body, now_ms / 1000);
  for (auto& [k, v] : a.headers)
    if (k == "Wechatpay-Signature") v = "!!not base64!!";
  EXPECT_EQ(auth->check_answer(a, kWxPath, now_ms, why), AnswerTrust::forged);
}

TEST_F(WeChatAuth, AnAnswerWithoutSignatureHeadersIsUnsigned) {
  auto auth = make();
  HttpResponse a;
  a.status = 200;
  a.body = R"({"prepay_id":"wx1"})";
  a.headers = {{"Content-Type", "application/json"}, {"Request-ID", "08F78BB5AF0610D302"}};
  std::string why;
  EXPECT_EQ(auth->check_answer(a, kWxPath, 1'700'000'000'000, why), AnswerTrust::unsigned_);
  EXPECT_FALSE(why.empty());
  // Only some of them: not a clean "unsigned".
  a.headers.emplace_back("Wechatpay-Timestamp", "1700000000");
  EXPECT_EQ(auth->check_answer(a, kWxPath, 1'700'000'000'000, why), AnswerTrust::forged);
}

TEST_F(WeChatAuth, AStaleAnswerIsForged) {
  auto auth = make();
  const int64_t now_ms = 1'700'000'000'000;
  const std::string body = R"({"prepay_id":"wx1"})";
  std::string why;
  EXPECT_EQ(auth->check_answer(answer(200, body, now_ms / 1000 - 600), kWxPath, now_ms, why), AnswerTrust::forged);
  EXPECT_TRUE(has(why, "Timestamp")) << why;
  EXPECT_EQ(auth->check_answer(answer(200, body, now_ms / 1000 + 600), kWxPath, now_ms, why), AnswerTrust::forged);
  HttpResponse a = answer(200, body, now_ms / 1000);
  for (auto& [k, v] : a.headers)
    if (k == "Wechatpay-Timestamp") v = "1700000000x";
  EXPECT_EQ(auth->check_answer(a, kWxPath, now_ms, why), AnswerTrust::forged);
}

TEST_F(WeChatAuth, TheConfiguredPlatformSerialMustBeTheAnswersKey) {
  auto auth = make("https://api.mch.weixin.qq.com", kPlatformSerial);
  const int64_t now_ms = 1'700'000'000'000;
  const std::string body = R"({"prepay_id":"wx1"})";
  std::string why;
  EXPECT_EQ(auth->check_answer(answer(200, body, now_ms / 1000), kWxPath, now_ms, why), AnswerTrust::verified) << why;
  EXPECT_EQ(auth->check_answer(answer(200, body, now_ms / 1000, "N", "PUB_KEY_ID_0000000000000000000000000000"), kWxPath, now_ms,
                               why),
            AnswerTrust::forged);
  EXPECT_TRUE(has(why, "PUB_KEY_ID_0000000000000000000000000000")) << why;
  HttpResponse a = answer(200, body, now_ms / 1000);
  a.headers.erase(std::remove_if(a.headers.begin(), a.headers.end(),
                                 [](const auto& h) { return h.first == "Wechatpay-Serial"; }),
                  a.headers.end());
  EXPECT_EQ(auth->check_answer(a, kWxPath, now_ms, why), AnswerTrust::forged) << "no serial at all";
  // Without platform_serial in the config, any serial is accepted.
  auto any = make();
  EXPECT_EQ(any->check_answer(answer(200, body, now_ms / 1000, "N", "PUB_KEY_ID_0000000000000000000000000000"), kWxPath, now_ms,
                              why),
            AnswerTrust::verified)
      << why;
}

// =========================================================================================
// 3. Alipay RSA2
// =========================================================================================

class AlipayAuth : public ::testing::Test {
 protected:
  std::unique_ptr<Authenticator> make(const std::string& base_url = "https://openapi.alipay.com") {
    config = parse_config(R"({"provider":"alipay","base_url":")" + base_url + R"(","ledger":"memory:","auth":)" +
                          alipay_auth_json() + "}");
    profile = *builtin_profile("alipay");
    return make_authenticator(config, profile, transport, clock);
  }

  Config config;
  Profile profile;
  FakeClock clock;
  ScriptedTransport transport{clock};
};

const std::string kBizContent =
    R"({"out_trade_no":"20150320010101001","scene":"bar_code","auth_code":"28763443825664394","subject":"Iphone6 16G","total_amount":"88.88"})";

// The body a form_flat profile sends for {"biz_content": ..., "notify_url": ...}, written by hand.
const std::string kAlipayBody =
    "biz_content=" + pct_encode(kBizContent) + "&notify_url=" + pct_encode("https://m.example.com/notify?a=1&b=2");

TEST_F(AlipayAuth, MovesTheCommonParametersAndTheSignIntoTheQuery) {
  auto auth = make();
  ASSERT_NE(auth, nullptr);
  const std::string body = kAlipayBody;
  OutgoingRequest r{"POST", "https://openapi.alipay.com", "/gateway.do?method=alipay.trade.pay", body, {}};
  ASSERT_EQ(auth->authorize(r, 1'700'000'000'999, 5000), "");
  // The body is the same bytes; nothing of it moved.
  EXPECT_EQ(r.body.data(), body.data());
  EXPECT_EQ(std::string(r.body), kAlipayBody);
  EXPECT_TRUE(r.headers.empty() || header_of(r.headers, "Authorization") == "<none>");
  ASSERT_EQ(r.url().rfind("https://openapi.alipay.com/gateway.do?", 0), 0u) << r.url();

  std::map<std::string, std::string> query;
  for (const auto& [k, v] : fields_of(query_of(r.path))) EXPECT_TRUE(query.emplace(k, v).second) << "repeated " << k;
  const std::map<std::string, std::string> expected_common = {
      {"app_id", kAlipayAppId}, {"method", "alipay.trade.pay"}, {"format", "json"},      {"charset", "utf-8"},
      {"sign_type", "RSA2"},    {"timestamp", "2023-11-15 06:13:20"}, {"version", "1.0"},
  };
  for (const auto& [k, v] : expected_common) EXPECT_EQ(query[k], v) << k;
  ASSERT_EQ(query.size(), 8u) << "seven common parameters and sign, nothing of the body: " << r.path;
  ASSERT_TRUE(query.count("sign"));

  std::map<std::string, std::string> all = query;
  for (const auto& [k, v] : fields_of(body)) all[k] = v;
  EXPECT_EQ(all["biz_content"], kBizContent);
  const std::string content = alipay_content(all);
  EXPECT_TRUE(ossl_verifies("alipay_app_pub.pem", content, query["sign"])) << content;
  // The sign is over raw values, not the escaped ones.
  std::string escaped;
  for (const auto& [k, v] : all)
    if (k != "sign") escaped += (escaped.empty() ? "" : "&") + k + "=" + pct_encode(v);
  EXPECT_FALSE(ossl_verifies("alipay_app_pub.pem", escaped, query["sign"]));
}

TEST_F(AlipayAuth, TimestampIsChinaStandardTime) {
  auto auth = make();
  const std::string body = kAlipayBody;
  struct Case {
    int64_t unix_ms;
    const char* text;
  };
  for (const Case& c : {Case{1'700'000'000'000, "2023-11-15 06:13:20"}, Case{1'704'038'400'000, "2024-01-01 00:00:00"},
                        Case{1'704'038'399'999, "2023-12-31 23:59:59"}, Case{1'709'136'000'500, "2024-02-29 00:00:00"}}) {
    OutgoingRequest r{"POST", "https://openapi.alipay.com", "/gateway.do?method=alipay.trade.pay", body, {}};
    ASSERT_EQ(auth->authorize(r, c.unix_ms, 5000), "");
    std::map<std::string, std::string> q;
    for (const auto& [k, v] : fields_of(query_of(r.path))) q[k] = v;
    EXPECT_EQ(q["timestamp"], c.text) << c.unix_ms;
    std::map<std::string, std::string> all = q;
    for (const auto& [k, v] : fields_of(body)) all[k] = v;
    EXPECT_TRUE(ossl_verifies("alipay_app_pub.pem", alipay_content(all), q["sign"]));
  }
}

TEST_F(AlipayAuth, PathQueryParametersAreSignedAndEmptyValuesSkipped) {
  auto auth = make("https://openapi.alipay.com/sandbox");
  const std::string body = "biz_content=" + pct_encode(kBizContent) + "&return_url=&app_auth_token=tok+with+space";
  OutgoingRequest r{"POST", config.base_url, "/gateway.do?method=alipay.trade.pay&notify_url=https%3A%2F%2Fn.example.com%2Fx",
                    body, {}};
  ASSERT_EQ(auth->authorize(r, 1'700'000'000'000, 5000), "");
  EXPECT_EQ(r.url().rfind("https://openapi.alipay.com/sandbox/gateway.do?", 0), 0u) << r.url();
  std::map<std::string, std::string> q;
  for (const auto& [k, v] : fields_of(query_of(r.path))) q[k] = v;
  EXPECT_EQ(q["notify_url"], "https://n.example.com/x");
  EXPECT_EQ(q["method"], "alipay.trade.pay");
  std::map<std::string, std::string> all = q;
  for (const auto& [k, v] : fields_of(body)) all[k] = v;
  EXPECT_EQ(all["app_auth_token"], "tok with space");
  const std::string content = alipay_content(all);
  EXPECT_FALSE(has(content, "return_url")) << "empty values are skipped";
  EXPECT_TRUE(has(content, "notify_url=https://n.example.com/x"));
  EXPECT_TRUE(ossl_verifies("alipay_app_pub.pem", content, q["sign"])) << content;
}

TEST_F(AlipayAuth, APathWithoutAMethodIsRefusedWithAReason) {
  auto auth = make();
  const std::string body = kAlipayBody;
  for (const char* path : {"/gateway.do", "/gateway.do?method=", "/gateway.do?format=JSON"}) {
    OutgoingRequest r{"POST", "https://openapi.alipay.com", path, body, {}};
    const std::string why = auth->authorize(r, 1'700'000'000'000, 5000);
    EXPECT_TRUE(has(why, "method")) << path << ": " << why;
    EXPECT_EQ(r.path, path) << "nothing signed";
  }
  // A body that repeats a common parameter cannot be signed unambiguously.
  const std::string dup = kAlipayBody + "&app_id=2021999999999999";
  OutgoingRequest r{"POST", "https://openapi.alipay.com", "/gateway.do?method=alipay.trade.pay", dup, {}};
  EXPECT_FALSE(auth->authorize(r, 1'700'000'000'000, 5000).empty());
}

// The answer Alipay sends: {"<member>": <value>, "sign": "<sig over value>"}.
std::string alipay_answer(const std::string& value, const std::string& sig, const std::string& member = "alipay_trade_pay_response") {
  return "{\"" + member + "\":" + value + ",\"sign\":\"" + sig + "\"}";
}

const std::string kAliPath = "/gateway.do?method=alipay.trade.pay";
const std::string kPayResponse =
    R"({"code":"10000","msg":"Success","buyer_logon_id":"15901825620","buyer_pay_amount":"88.88","out_trade_no":"20150320010101001","trade_no":"2013112011001004330000121536","gmt_payment":"2014-11-27 15:45:57","total_amount":"88.88"})";

TEST_F(AlipayAuth, AnAnswerSignedByAlipayIsVerified) {
  auto auth = make();
  EXPECT_TRUE(auth->signs_answers());
  HttpResponse a;
  a.status = 200;
  a.body = alipay_answer(kPayResponse, ossl_sign("alipay_key.pem", kPayResponse));
  std::string why;
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::verified) << why;
  // The sign first, then the member.
  a.body = R"({"sign":")" + ossl_sign("alipay_key.pem", kPayResponse) + R"(","alipay_trade_pay_response":)" +
           kPayResponse + "}";
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::verified) << why;
  // A gateway error answer.
  const std::string err = R"({"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-signature"})";
  a.body = alipay_answer(err, ossl_sign("alipay_key.pem", err), "error_response");
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::verified) << why;
}

TEST_F(AlipayAuth, WhitespaceInsideAndAroundTheMemberAndEscapedSlashesInTheSign) {
  auto auth = make();
  // Member text with whitespace, newlines, nested values and tricky strings inside.
  std::string member;
  std::string sig;
  for (int i = 0; i < 50; ++i) {  // until the signature holds a '/' to escape
    member = "{\n    \"code\" : \"10000\",\t\"msg\": \"Success\",\r\n    \"note\": \"a \\\"}\\\" b, {[\",\n"
             "    \"fund_bill_list\": [ {\"amount\": \"88.88\", \"fund_channel\": \"ALIPAYACCOUNT\"} ],\n"
             "    \"n\": " + std::to_string(i) + " ,\n    \"trade_no\": \"2013112011001004330000121536\"\n  }";
    sig = ossl_sign("alipay_key.pem", member);
    if (has(sig, "/")) break;
  }
  ASSERT_TRUE(has(sig, "/"));
  std::string escaped;
  for (char c : sig) escaped += c == '/' ? std::string("\\/") : std::string(1, c);
  HttpResponse a;
  a.status = 200;
  a.body = "\n{\n  \"alipay_trade_pay_response\" :  " + member + "  \n ,\n  \"sign\"  :\t\"" + escaped + "\"\n}\n";
  std::string why;
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::verified) << why << "\n" << a.body;
  // The same with the sign unescaped.
  a.body = "{ \"alipay_trade_pay_response\" : " + member + " , \"sign\" : \"" + sig + "\" }";
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::verified) << why;
}

TEST_F(AlipayAuth, AChangedByteIsForged) {
  auto auth = make();
  const std::string sig = ossl_sign("alipay_key.pem", kPayResponse);
  std::string changed = kPayResponse;
  changed[changed.find("88.88")] = '9';
  HttpResponse a;
  a.status = 200;
  a.body = alipay_answer(changed, sig);
  std::string why;
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::forged);
  EXPECT_FALSE(why.empty());
  // Signed by the merchant's app key, not Alipay's.
  a.body = alipay_answer(kPayResponse, ossl_sign("alipay_app_key.pem", kPayResponse));
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::forged);
  // One character of the sign changed.
  std::string bad = sig;
  bad[10] = bad[10] == 'A' ? 'B' : 'A';
  a.body = alipay_answer(kPayResponse, bad);
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::forged);
  // A sign but no *_response member.
  a.body = R"({"other":)" + kPayResponse + R"(,"sign":")" + sig + "\"}";
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::forged);
}

TEST_F(AlipayAuth, OnlyTheGatewaysOwnRefusalMayBeUnsigned) {
  auto auth = make();
  HttpResponse a;
  a.status = 200;
  std::string why;
  // Alipay signs every answer of an authenticated app: an unsigned business
  // answer (a decline, "no such trade") is not Alipay's.
  a.body = R"({"alipay_trade_pay_response":)" + kPayResponse + "}";
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::forged);
  EXPECT_FALSE(why.empty());
  a.body = R"({"error_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-app-id"}})";
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::unsigned_) << why;
  a.body = "<html>502 Bad Gateway</html>";
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::forged);
}

TEST_F(AlipayAuth, OnlyTheSignedMemberMayBeReadSoNoOtherResponseMemberIsAccepted) {
  // A genuinely signed decline with a forged success beside it: the paths
  // that classify the answer ($.*_response.code) would read the forgery.
  auto auth = make();
  const std::string decline = R"({"code":"40004","msg":"Business Failed","sub_code":"ACQ.PAYMENT_AUTH_CODE_INVALID"})";
  const std::string sig = ossl_sign("alipay_key.pem", decline);
  HttpResponse a;
  a.status = 200;
  std::string why;
  a.body = R"({"alipay_trade_pay_response":)" + decline + R"(,"zz_response":{"code":"10000","trade_no":"FORGED"},"sign":")" + sig + "\"}";
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::forged) << why;
  // The forgery under an escaped name the scanner would not compare.
  a.body = R"({"alipay_trade_pay\u005fresponse":{"code":"10000"},"alipay_trade_pay_response":)" + decline + R"(,"sign":")" + sig + "\"}";
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::forged) << why;
  // The member twice.
  a.body = R"({"alipay_trade_pay_response":{"code":"10000"},"alipay_trade_pay_response":)" + decline + R"(,"sign":")" + sig + "\"}";
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::forged) << why;
  // A signed answer to another method (an old pay answer) for a query.
  a.body = alipay_answer(decline, sig);
  EXPECT_EQ(auth->check_answer(a, "/gateway.do?method=alipay.trade.query", 0, why), AnswerTrust::forged) << why;
  EXPECT_EQ(auth->check_answer(a, kAliPath, 0, why), AnswerTrust::verified) << why;
}

// =========================================================================================
// 4. form_encode_flat, form_decode
// =========================================================================================

struct Doc {
  explicit Doc(const std::string& s) : j(cJSON_Parse(s.c_str())) {}
  ~Doc() { cJSON_Delete(j); }
  cJSON* j;
};

TEST(FormFlat, ObjectsAndArraysTravelAsCompactJsonText) {
  const std::string text = (R"({
    "biz_content": {"out_trade_no": "o 1", "total_amount": 88.88, "goods": [1, 2], "sub": {"a": null, "b": true}},
    "notify_url": "https://x.test/n?a=b&c=d",
    "n": 12, "f": 1.5, "t": true, "no": false, "z": null,
    "arr": ["a", {"b": 1}], "empty_obj": {}, "empty_arr": []
  })");
  const std::string expected =
      "biz_content=%7B%22out_trade_no%22%3A%22o+1%22%2C%22total_amount%22%3A88.88%2C%22goods%22%3A%5B1%2C2%5D%2C"
      "%22sub%22%3A%7B%22a%22%3Anull%2C%22b%22%3Atrue%7D%7D"
      "&notify_url=https%3A%2F%2Fx.test%2Fn%3Fa%3Db%26c%3Dd"
      "&n=12&f=1.5&t=true&no=false&z="
      "&arr=%5B%22a%22%2C%7B%22b%22%3A1%7D%5D&empty_obj=%7B%7D&empty_arr=%5B%5D";
  EXPECT_EQ(form_encode_flat(text), expected);
  // Numbers inside travel exactly as written, never through a double.
  EXPECT_EQ(form_encode_flat(R"({"biz_content":{"id":20150320010101001,"x":1.10}})"),
            "biz_content=%7B%22id%22%3A20150320010101001%2C%22x%22%3A1.10%7D");
  // Whitespace inside strings stays.
  EXPECT_EQ(form_encode_flat(R"({"b": { "s" : "a \" b" } })"), "b=%7B%22s%22%3A%22a+%5C%22+b%22%7D");
  EXPECT_EQ(form_encode_flat("not json"), "");
}

TEST(FormFlat, StringsAndNumbersArePlainAndSpaceIsPlus) {
  EXPECT_EQ(form_encode_flat(R"({"subject":"Iphone6 16G +1/2 ~ok* é","amount":2000,"big":9007199254740991,"neg":-3})"),
            "subject=Iphone6+16G+%2B1%2F2+~ok%2A+%C3%A9&amount=2000&big=9007199254740991&neg=-3");
  EXPECT_EQ(form_escape("a b+c&d=e%f"), "a+b%2Bc%26d%3De%25f");
  EXPECT_EQ(form_escape("AZaz09-_.~"), "AZaz09-_.~");
  EXPECT_EQ(form_encode_flat("{}"), "");
}

TEST(FormFlat, DecodeReadsBackWhatTheEncoderWrote) {
  const std::string text = R"({"biz_content":{"out_trade_no":"o&1=2","subject":"a b+c 形"},"notify_url":"https://x.test/?q=1 2","n":7})";
  std::vector<std::pair<std::string, std::string>> fields;
  ASSERT_TRUE(form_decode(form_encode_flat(text), fields));
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(fields[0].first, "biz_content");
  EXPECT_EQ(fields[0].second, R"({"out_trade_no":"o&1=2","subject":"a b+c 形"})");
  EXPECT_EQ(fields[1], (std::pair<std::string, std::string>{"notify_url", "https://x.test/?q=1 2"}));
  EXPECT_EQ(fields[2], (std::pair<std::string, std::string>{"n", "7"}));
  // form_escape and form_decode are inverse for any bytes.
  std::string all;
  for (int c = 1; c < 256; ++c) all.push_back(static_cast<char>(c));
  ASSERT_TRUE(form_decode("k=" + form_escape(all), fields));
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields[0].second, all);
}

TEST(FormFlat, DecodeOfHandWrittenFields) {
  std::vector<std::pair<std::string, std::string>> f;
  ASSERT_TRUE(form_decode("a=1&b=x+y&c=%2B%26%3d&d=&e&&f=%E5%BD%A2&", f));
  const std::vector<std::pair<std::string, std::string>> want = {
      {"a", "1"}, {"b", "x y"}, {"c", "+&="}, {"d", ""}, {"e", ""}, {"f", "形"}};
  EXPECT_EQ(f, want);
  ASSERT_TRUE(form_decode("", f));
  EXPECT_TRUE(f.empty());
}

TEST(FormFlat, DecodeRefusesMalformedInput) {
  std::vector<std::pair<std::string, std::string>> f;
  for (const char* bad : {"a=%G1", "a=%2", "a=%", "=x", "a=1&=2", "%zz=1", "a%=1", "a=%2&b=1"})
    EXPECT_FALSE(form_decode(bad, f)) << bad;
}

// =========================================================================================
// 5. OAuth2 client credentials
// =========================================================================================

// Records each request's method on top of the scripted transport.
class MethodRecorder final : public Transport {
 public:
  explicit MethodRecorder(ScriptedTransport& inner) : inner_(inner) {}
  TransportResult post(const HttpRequest& r) override {
    methods.push_back(r.method);
    return inner_.post(r);
  }
  std::vector<std::string> methods;

 private:
  ScriptedTransport& inner_;
};

TransportResult token(const std::string& access, int expires_in = 32400) {
  return http(200, R"({"scope":"https://uri.paypal.com/services/payments","access_token":")" + access +
                       R"(","token_type":"Bearer","app_id":"APP-80W284485P519543T","expires_in":)" +
                       std::to_string(expires_in) + R"(,"nonce":"2020-04-03T15:35:36ZaYZlGvEkV4yVSz8g6bAKFoGSEzuy3CQcz3ljhibkOHg"})");
}

class OAuth2Auth : public ::testing::Test {
 protected:
  std::unique_ptr<Authenticator> make(const std::string& oauth = R"({"client_id":"test-client-id","client_secret":"test-client-secret"})") {
    config = parse_config(R"({"provider":"paypal","base_url":"https://api-m.sandbox.paypal.com","ledger":"memory:",)"
                          R"("headers":{"PayPal-Partner-Attribution-Id":"BN-CODE"},"auth":{"oauth2":)" +
                          oauth + "}}");
    profile = *builtin_profile("paypal");
    return make_authenticator(config, profile, recorder, clock);
  }
  OutgoingRequest request() {
    return OutgoingRequest{"POST", "https://api-m.sandbox.paypal.com", "/v2/checkout/orders", body, {}};
  }
  std::string bearer_of(const OutgoingRequest& r) { return header_of(r.headers, "Authorization"); }

  const std::string body = R"({"intent":"CAPTURE"})";
  Config config;
  Profile profile;
  FakeClock clock;
  ScriptedTransport transport{clock};
  MethodRecorder recorder{transport};
};

// A runner with no thread: the test says when a posted fetch runs.
struct ManualRunner final : BackgroundRunner {
  void post(std::function<void()> task) override { tasks.push_back(std::move(task)); }
  bool run_pending() override {
    if (tasks.empty()) return false;
    auto now = std::move(tasks);
    tasks.clear();
    for (auto& t : now) t();
    return true;
  }
  std::vector<std::function<void()>> tasks;
};

// A concurrent engine's thread carries every payment of its engine: it never
// waits for a token. It hands the fetch to the runner, gets "pending", and
// asks again later; the token then comes without a second fetch.
TEST_F(OAuth2Auth, AnEngineThreadNeverWaitsForATokenItAsksAgainOnceTheRunnerFetchedIt) {
  make();
  ManualRunner runner;
  auto auth = make_authenticator(config, profile, recorder, clock, &runner);
  transport.script = {token("tok-1")};
  OutgoingRequest r = request();
  std::string why;
  EXPECT_EQ(auth->authorize_now(r, clock.unix_ms(), -1, why), Authenticator::Readiness::pending);
  EXPECT_TRUE(transport.sent.empty()) << "nothing fetched on the engine's thread";
  EXPECT_EQ(runner.tasks.size(), 1u);
  // A second payment asking meanwhile starts no second fetch.
  OutgoingRequest r2 = request();
  EXPECT_EQ(auth->authorize_now(r2, clock.unix_ms(), clock.now_ms(), why), Authenticator::Readiness::pending);
  EXPECT_EQ(runner.tasks.size(), 1u);
  ASSERT_TRUE(runner.run_pending());
  EXPECT_EQ(transport.sent.size(), 1u);
  r = request();
  ASSERT_EQ(auth->authorize_now(r, clock.unix_ms(), clock.now_ms(), why), Authenticator::Readiness::ready) << why;
  EXPECT_EQ(bearer_of(r), "Bearer tok-1");
}

// A fetch that fails while a payment waits is that payment's answer (its
// attempt is then an unsent one, retried with backoff), not a reason to
// fetch again at once.
TEST_F(OAuth2Auth, AFetchThatFailsWhileAPaymentWaitsIsItsAnswer) {
  make();
  ManualRunner runner;
  auto auth = make_authenticator(config, profile, recorder, clock, &runner);
  transport.script = {http(503, "{}"), token("tok-2")};
  OutgoingRequest r = request();
  std::string why;
  const int64_t since = clock.now_ms();
  ASSERT_EQ(auth->authorize_now(r, clock.unix_ms(), -1, why), Authenticator::Readiness::pending);
  clock.advance(10);
  runner.run_pending();
  EXPECT_EQ(auth->authorize_now(r, clock.unix_ms(), since, why), Authenticator::Readiness::failed);
  EXPECT_TRUE(has(why, "503")) << why;
  EXPECT_TRUE(runner.tasks.empty());
  // A payment that arrives afterwards starts a new fetch.
  clock.advance(10);
  OutgoingRequest later = request();
  EXPECT_EQ(auth->authorize_now(later, clock.unix_ms(), -1, why), Authenticator::Readiness::pending);
  runner.run_pending();
  EXPECT_EQ(auth->authorize_now(later, clock.unix_ms(), clock.now_ms(), why), Authenticator::Readiness::ready);
}

// A token still valid but due for renewal is used at once; the renewal runs
// on the runner, never on the engine's thread.
TEST_F(OAuth2Auth, ATokenDueForRenewalIsUsedWhileTheRunnerRenewsIt) {
  make();
  ManualRunner runner;
  auto auth = make_authenticator(config, profile, recorder, clock, &runner);
  transport.script = {token("tok-1", 3600), token("tok-2", 3600)};
  OutgoingRequest r = request();
  std::string why;
  ASSERT_EQ(auth->authorize_now(r, clock.unix_ms(), -1, why), Authenticator::Readiness::pending);
  runner.run_pending();
  clock.advance(3600 * 1000 - 300 * 1000);  // the renewal margin
  r = request();
  ASSERT_EQ(auth->authorize_now(r, clock.unix_ms(), -1, why), Authenticator::Readiness::ready);
  EXPECT_EQ(bearer_of(r), "Bearer tok-1");
  EXPECT_EQ(transport.sent.size(), 1u);
  ASSERT_EQ(runner.tasks.size(), 1u);
  runner.run_pending();
  r = request();
  ASSERT_EQ(auth->authorize_now(r, clock.unix_ms(), -1, why), Authenticator::Readiness::ready);
  EXPECT_EQ(bearer_of(r), "Bearer tok-2");
}

// Blocking callers never wait on a lock held across a fetch: while one
// thread's fetch hangs, each other caller waits no longer than its own
// payment's time (the audit saw 1 s payments answered after 7.7-9.7 s,
// queued on the mutex one fetch after another).
TEST(OAuth2Waiters, EachBlockingCallerWaitsForAHangingFetchNoLongerThanItsOwnBudget) {
  struct HangingEndpoint final : Transport {
    TransportResult post(const HttpRequest& h) override {
      ++calls;
      entered = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(h.timeout_ms));
      TransportResult t;
      t.failure = TransportFailure::timeout;
      t.request_written = true;
      return t;
    }
    std::atomic<int> calls{0};
    std::atomic<bool> entered{false};
  };
  struct RealClock final : Clock {
    int64_t now_ms() override { return system_clock().now_ms(); }
    int64_t unix_ms() override { return system_clock().unix_ms(); }
  } clock;
  HangingEndpoint endpoint;
  const Config config = parse_config(R"({"provider":"paypal","base_url":"https://api-m.sandbox.paypal.com",)"
                                     R"("ledger":"memory:","retry":{"attempt_timeout_ms":3000},)"
                                     R"("auth":{"oauth2":{"client_id":"id","client_secret":"s"}}})");
  const Profile profile = *builtin_profile("paypal");
  auto auth = make_authenticator(config, profile, endpoint, clock);
  const std::string body = "{}";
  std::thread first([&] {
    OutgoingRequest r{"POST", config.base_url, "/v2/checkout/orders", body, {}};
    auth->authorize(r, clock.unix_ms(), 3000);
  });
  while (!endpoint.entered) std::this_thread::yield();
  std::vector<std::thread> waiters;
  std::vector<int64_t> took(6);
  for (size_t i = 0; i < took.size(); ++i)
    waiters.emplace_back([&, i] {
      const int64_t start = clock.now_ms();
      OutgoingRequest r{"POST", config.base_url, "/v2/checkout/orders", body, {}};
      const std::string why = auth->authorize(r, clock.unix_ms(), 200);
      took[i] = clock.now_ms() - start;
      EXPECT_FALSE(why.empty());
    });
  for (auto& w : waiters) w.join();
  for (int64_t ms : took) EXPECT_LT(ms, 200 + 300) << "a caller waited past its own budget";
  EXPECT_EQ(endpoint.calls, 1) << "the waiters started no fetch of their own";
  first.join();
}

TEST(OAuth2Waiters, PaymentsWaitingOnAFailedFetchTakeItsAnswerInsteadOfFetchingInTurn) {
  // A token endpoint that hangs and fails: the payments that queued behind
  // the fetch must not each hang on it again, one after another.
  struct AtomicClock final : Clock {
    std::atomic<int64_t> t{1000};
    int64_t now_ms() override { return t; }
    int64_t unix_ms() override { return 1'700'000'000'000 + t; }
  };
  struct SlowFailingEndpoint final : Transport {
    explicit SlowFailingEndpoint(AtomicClock& c) : clock(c) {}
    TransportResult post(const HttpRequest&) override {
      ++calls;
      in_fetch = true;
      // The others arrive and queue behind this fetch before it fails.
      for (int i = 0; i < 5000 && queued < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      clock.t += 150;
      TransportResult t;
      t.failure = TransportFailure::connect;
      return t;
    }
    AtomicClock& clock;
    std::atomic<int> calls{0};
    std::atomic<int> queued{0};
    std::atomic<bool> in_fetch{false};
  };
  AtomicClock clock;
  SlowFailingEndpoint endpoint(clock);
  const Config config = parse_config(R"({"provider":"paypal","base_url":"https://api-m.sandbox.paypal.com",)"
                                     R"("ledger":"memory:","auth":{"oauth2":{"client_id":"id","client_secret":"s"}}})");
  const Profile profile = *builtin_profile("paypal");
  auto auth = make_authenticator(config, profile, endpoint, clock);
  const std::string body = "{}";
  auto ask = [&] {
    OutgoingRequest r{"POST", config.base_url, "/v2/checkout/orders", body, {}};
    return auth->authorize(r, clock.unix_ms(), 5000);
  };
  std::string first_why;
  std::thread first([&] { first_why = ask(); });
  while (!endpoint.in_fetch) std::this_thread::yield();
  std::vector<std::string> whys(3);
  std::vector<std::thread> queued;
  for (auto& w : whys)
    queued.emplace_back([&w, &ask, &endpoint] {
      ++endpoint.queued;
      w = ask();
    });
  first.join();
  for (auto& t : queued) t.join();
  EXPECT_FALSE(first_why.empty());
  for (const auto& w : whys) EXPECT_EQ(w, first_why);
  EXPECT_EQ(endpoint.calls, 1) << "the queued payments took the failed fetch's answer";
  // A payment that arrives after the failure asks again.
  EXPECT_FALSE(ask().empty());
  EXPECT_EQ(endpoint.calls, 2);
}

TEST_F(OAuth2Auth, TheFirstRequestFetchesATokenAndCarriesIt) {
  auto auth = make();
  ASSERT_NE(auth, nullptr);
  EXPECT_FALSE(auth->signs_answers());
  transport.script = {token("A21AAFEpH4PsADK7qSS7pSRsgzfENtu-Q1ysgEDVDESseMHBYXVJYE8ovjj68elIDy8nF26AwPhfXTIeWAZHSLIsQkSYz9ifg")};
  OutgoingRequest r = request();
  ASSERT_EQ(auth->authorize(r, clock.unix_ms(), 7000), "");
  ASSERT_EQ(transport.sent.size(), 1u);
  const SentRequest& t = transport.sent[0];
  EXPECT_EQ(recorder.methods.at(0), "POST");
  EXPECT_EQ(t.url, "https://api-m.sandbox.paypal.com/v1/oauth2/token");
  EXPECT_EQ(t.one("Authorization"), "Basic dGVzdC1jbGllbnQtaWQ6dGVzdC1jbGllbnQtc2VjcmV0");
  EXPECT_EQ(t.one("Authorization"), "Basic " + b64("test-client-id:test-client-secret"));
  EXPECT_EQ(t.one("Content-Type"), "application/x-www-form-urlencoded");
  EXPECT_EQ(t.body, "grant_type=client_credentials");
  EXPECT_LE(t.timeout_ms, 7000) << "the token fetch is bounded by the budget";
  EXPECT_GT(t.timeout_ms, 0);
  EXPECT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(bearer_of(r),
            "Bearer A21AAFEpH4PsADK7qSS7pSRsgzfENtu-Q1ysgEDVDESseMHBYXVJYE8ovjj68elIDy8nF26AwPhfXTIeWAZHSLIsQkSYz9ifg");
  EXPECT_EQ(r.url(), "https://api-m.sandbox.paypal.com/v2/checkout/orders");
}

TEST_F(OAuth2Auth, TheConfigsTokenPathAndScopeAreUsed) {
  auto auth = make(R"({"client_id":"id-2","client_secret":"s 2","token_path":"/oauth/v2/token","scope":"a b/c"})");
  transport.script = {token("tok-1")};
  OutgoingRequest r = request();
  ASSERT_EQ(auth->authorize(r, clock.unix_ms(), 5000), "");
  ASSERT_EQ(transport.sent.size(), 1u);
  EXPECT_EQ(transport.sent[0].url, "https://api-m.sandbox.paypal.com/oauth/v2/token");
  EXPECT_EQ(transport.sent[0].one("Authorization"), "Basic " + b64("id-2:s 2"));
  const auto f = fields_of(transport.sent[0].body);
  const std::vector<std::pair<std::string, std::string>> want = {{"grant_type", "client_credentials"}, {"scope", "a b/c"}};
  EXPECT_EQ(f, want) << transport.sent[0].body;
}

TEST_F(OAuth2Auth, ASecondRequestReusesTheToken) {
  auto auth = make();
  transport.script = {token("tok-1")};
  OutgoingRequest r1 = request(), r2 = request();
  ASSERT_EQ(auth->authorize(r1, clock.unix_ms(), 5000), "");
  clock.advance(60'000);
  ASSERT_EQ(auth->authorize(r2, clock.unix_ms(), 5000), "");
  EXPECT_EQ(transport.sent.size(), 1u) << "no second fetch";
  EXPECT_EQ(bearer_of(r2), "Bearer tok-1");
}

TEST_F(OAuth2Auth, ANewTokenIsFetchedOnceTheClockPassesExpiryLessTheMargin) {
  auto auth = make();
  transport.script = {token("tok-1", 3600), token("tok-2", 3600)};
  const int64_t asked = clock.now_ms();
  OutgoingRequest r = request();
  ASSERT_EQ(auth->authorize(r, clock.unix_ms(), 5000), "");
  // Renewed five minutes (the margin) before the hour is up.
  const int64_t renew_at = asked + 3600 * 1000 - 300 * 1000;
  clock.advance(renew_at - 1 - clock.now_ms());
  r = request();
  ASSERT_EQ(auth->authorize(r, clock.unix_ms(), 5000), "");
  EXPECT_EQ(bearer_of(r), "Bearer tok-1");
  EXPECT_EQ(transport.sent.size(), 1u);
  clock.advance(1);
  r = request();
  ASSERT_EQ(auth->authorize(r, clock.unix_ms(), 5000), "");
  EXPECT_EQ(transport.sent.size(), 2u);
  EXPECT_EQ(bearer_of(r), "Bearer tok-2");
  // Well before the hour, well after the renewal: still fetched before the expiry.
  EXPECT_LT(renew_at, asked + 3600 * 1000);
}

TEST_F(OAuth2Auth, AShortLivedTokenIsRenewedBeforeItExpires) {
  auto auth = make();
  transport.script = {token("short", 60), token("next", 60)};
  const int64_t asked = clock.now_ms();
  OutgoingRequest r = request();
  ASSERT_EQ(auth->authorize(r, clock.unix_ms(), 5000), "");
  // Whatever the rule, the token is never used at or after its expiry.
  clock.advance(asked + 59'999 - clock.now_ms());
  r = request();
  ASSERT_EQ(auth->authorize(r, clock.unix_ms(), 5000), "");
  EXPECT_EQ(transport.sent.size(), 2u) << "a 60 s token was still used 59.999 s after it was asked for";
  EXPECT_EQ(bearer_of(r), "Bearer next");
}

TEST_F(OAuth2Auth, RenewAfterUnauthorizedForcesAFetch) {
  auto auth = make();
  transport.script = {token("tok-1"), token("tok-2")};
  OutgoingRequest r = request();
  ASSERT_EQ(auth->authorize(r, clock.unix_ms(), 5000), "");
  EXPECT_TRUE(auth->renew_after_unauthorized());
  r = request();
  ASSERT_EQ(auth->authorize(r, clock.unix_ms(), 5000), "");
  EXPECT_EQ(transport.sent.size(), 2u);
  EXPECT_EQ(bearer_of(r), "Bearer tok-2");
}

TEST_F(OAuth2Auth, AFailedTokenRequestGivesAReasonAndCachesNothing) {
  struct Case {
    const char* name;
    TransportResult answer;
  };
  const std::vector<Case> cases = {
      {"401", http(401, R"({"error":"invalid_client","error_description":"Client Authentication failed"})")},
      {"non-JSON", http(200, "<html>login</html>")},
      {"no access_token", http(200, R"({"token_type":"Bearer","expires_in":32400})")},
      {"empty access_token", http(200, R"({"access_token":"","token_type":"Bearer","expires_in":32400})")},
      {"not a bearer", http(200, R"({"access_token":"x","token_type":"mac","expires_in":32400})")},
      {"500", http(500, "{}")},
      {"refused", connect_refused()},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    transport.sent.clear();
    auto auth = make();
    transport.script = {c.answer, c.answer, token("good")};
    OutgoingRequest r = request();
    const std::string why = auth->authorize(r, clock.unix_ms(), 5000);
    EXPECT_FALSE(why.empty());
    EXPECT_TRUE(r.headers.empty()) << "no Authorization on a request that cannot be authenticated";
    EXPECT_FALSE(has(why, "test-client-secret"));
    // Nothing cached: the next request asks again, and again.
    r = request();
    EXPECT_FALSE(auth->authorize(r, clock.unix_ms(), 5000).empty());
    EXPECT_EQ(transport.sent.size(), 2u);
    r = request();
    EXPECT_EQ(auth->authorize(r, clock.unix_ms(), 5000), "");
    EXPECT_EQ(bearer_of(r), "Bearer good");
    EXPECT_EQ(transport.sent.size(), 3u);
  }
  {
    transport.sent.clear();
    transport.script = {http(401, R"({"error":"invalid_client"})")};
    auto auth = make();
    OutgoingRequest r = request();
    EXPECT_TRUE(has(auth->authorize(r, clock.unix_ms(), 5000), "401"));
  }
}

TEST_F(OAuth2Auth, AnExpiredTokenIsNotUsedWhenItsRenewalFails) {
  auto auth = make();
  transport.script = {token("old", 3600), http(503, "{}")};
  OutgoingRequest r = request();
  ASSERT_EQ(auth->authorize(r, clock.unix_ms(), 5000), "");
  clock.advance(3600 * 1000);
  r = request();
  EXPECT_FALSE(auth->authorize(r, clock.unix_ms(), 5000).empty());
  EXPECT_TRUE(r.headers.empty()) << "the expired token was sent: " << bearer_of(r);
}

// =========================================================================================
// 6. The engine with an Authenticator
// =========================================================================================

// Like fakes.hpp's Harness, with an Authenticator made from the config; its
// token requests go through their own scripted transport (`token_transport`).
class AuthHarness {
 public:
  explicit AuthHarness(const std::string& config_json) : config(parse_config(config_json)) {
    profile = config.provider_json.empty() ? *builtin_profile(config.provider) : parse_profile(config.provider_json);
  }

  PaymentResult submit(const std::string& order_id, std::string_view body, const std::string& key = {}) {
    SubmitRequest r;
    r.order_id = order_id;
    r.body = body;
    r.idempotency_key = key;
    return engine().submit(r);
  }

  Engine& engine() {
    if (!engine_) {
      auth = make_authenticator(config, profile, token_transport, clock);
      log_ = std::make_unique<AttemptLog>(
          [this](int level, const std::string& line) { lines.push_back({level, line}); }, std::string(), kLogDebug,
          config.secrets(), clock);
      budget_ = std::make_unique<RetryBudget>(config.budget);
      engine_ = std::make_unique<Engine>(
          config, profile, EngineDeps{transport, clock, sleeper, jitter, keys, *log_, *budget_, stats}, hook,
          auth.get());
    }
    return *engine_;
  }
  bool logged(const std::string& event) const {
    for (const auto& l : lines)
      if (has(l.text, "\"" + event + "\"")) return true;
    return false;
  }

  Config config;
  Profile profile;
  FakeClock clock;
  FakeSleeper sleeper{clock};
  ScriptedTransport transport{clock};
  ScriptedTransport token_transport{clock};
  JitterRandom jitter{42};
  CountingKeySource keys;
  Stats stats;
  std::vector<LogLine> lines;
  std::unique_ptr<Authenticator> auth;
  RequestHook hook;  // set before the first submit

 private:
  std::unique_ptr<AttemptLog> log_;
  std::unique_ptr<RetryBudget> budget_;
  std::unique_ptr<Engine> engine_;
};

const std::string kPayPalConfig =
    R"({"provider":"paypal","base_url":"https://api-m.sandbox.paypal.com","ledger":"memory:",)"
    R"("auth":{"oauth2":{"client_id":"test-client-id","client_secret":"test-client-secret"}}})";
const std::string kPayPalBody =
    R"({"intent":"CAPTURE","purchase_units":[{"reference_id":"order-1","amount":{"currency_code":"USD","value":"100.00"}}]})";
TransportResult paypal_created() { return http(201, R"({"id":"5O190127TN364715T","status":"CREATED"})"); }
TransportResult paypal_401() {
  return http(401, R"({"error":"invalid_token","error_description":"Access Token not found in cache"})");
}

// Every request that left is an attempt: the 401 is attempt 1 in the result
// (and the ledger's history and the log), the renewed re-send attempt 2.
// PayPal does not state that a 401 proves nothing was processed, so the 401
// counts as possibly processed; its replay kind (current_state) makes the
// same-key re-send safe anyway.
TEST(EngineAuth, A401IsAnAttemptAndTheRenewedReSendIsTheNext) {
  AuthHarness h(kPayPalConfig);
  h.token_transport.script = {token("tok-1"), token("tok-2")};
  h.transport.script = {paypal_401(), paypal_created()};
  const PaymentResult r = h.submit("order-1", kPayPalBody, "req-1");
  EXPECT_EQ(r.outcome, Outcome::succeeded) << r.error;
  EXPECT_EQ(r.provider_payment_id, "5O190127TN364715T");
  ASSERT_EQ(h.token_transport.sent.size(), 2u) << "exactly one refetch";
  ASSERT_EQ(h.transport.sent.size(), 2u) << "exactly one re-send";
  const SentRequest &first = h.transport.sent[0], &second = h.transport.sent[1];
  EXPECT_EQ(first.one("Authorization"), "Bearer tok-1");
  EXPECT_EQ(second.one("Authorization"), "Bearer tok-2");
  EXPECT_EQ(first.one("PayPal-Request-Id"), "req-1");
  EXPECT_EQ(second.one("PayPal-Request-Id"), "req-1");
  EXPECT_EQ(first.body, kPayPalBody);
  EXPECT_EQ(second.body, first.body);
  EXPECT_EQ(second.url, first.url);
  ASSERT_EQ(r.attempts.size(), 2u) << "the 401 is an attempt of its own";
  EXPECT_EQ(r.attempts[0].number, 1u);
  EXPECT_EQ(r.attempts[0].http_status, 401);
  EXPECT_EQ(r.attempts[0].reason, "unauthorized_credential_renewed");
  EXPECT_TRUE(r.attempts[0].may_have_processed);
  EXPECT_EQ(r.attempts[0].delay_source, "credential_renewed");
  EXPECT_EQ(r.attempts[1].number, 2u);
  EXPECT_EQ(r.attempts[1].http_status, 201);
  for (int64_t ms : h.sleeper.sleeps) EXPECT_EQ(ms, 0) << "no backoff before the re-send";
}

// A provider that promises no replay: the 401 may have come after the
// payment was processed, and a re-send could run it again. Not re-sent:
// UNKNOWN, with the 401 as the one attempt.
TEST(EngineAuth, A401UnderAProviderThatDoesNotReplayIsNotReSent) {
  AuthHarness h(R"({"provider":{"extends":"paypal","name":"no-replay","replay":"none"},)"
                R"("base_url":"https://api-m.sandbox.paypal.com","ledger":"memory:",)"
                R"("auth":{"oauth2":{"client_id":"test-client-id","client_secret":"test-client-secret"}}})");
  h.token_transport.script = {token("tok-1"), token("tok-2")};
  h.transport.script = {paypal_401(), paypal_created()};
  const PaymentResult r = h.submit("order-1", kPayPalBody, "req-1");
  EXPECT_EQ(r.outcome, Outcome::unknown) << r.error;
  EXPECT_EQ(r.delivery, Delivery::maybe_processed);
  EXPECT_EQ(h.transport.sent.size(), 1u) << "never re-sent";
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].http_status, 401);
  EXPECT_EQ(r.attempts[0].verdict, "query");
  EXPECT_TRUE(has(r.error, "401")) << r.error;
}

// Where the profile states that a 401 proves nothing was processed, the 401
// is a not-processed attempt and the re-send follows whatever the replay.
TEST(EngineAuth, A401TheProfileCallsNotProcessedIsReSentWhateverTheReplay) {
  AuthHarness h(R"({"provider":{"extends":"paypal","name":"no-replay","replay":"none",)"
                R"("auth":{"scheme":"oauth2_client_credentials","token_path":"/v1/oauth2/token",)"
                R"("unauthorized_not_processed":true}},)"
                R"("base_url":"https://api-m.sandbox.paypal.com","ledger":"memory:",)"
                R"("auth":{"oauth2":{"client_id":"test-client-id","client_secret":"test-client-secret"}}})");
  h.token_transport.script = {token("tok-1"), token("tok-2")};
  h.transport.script = {paypal_401(), paypal_created()};
  const PaymentResult r = h.submit("order-1", kPayPalBody, "req-1");
  EXPECT_EQ(r.outcome, Outcome::succeeded) << r.error;
  ASSERT_EQ(r.attempts.size(), 2u);
  EXPECT_FALSE(r.attempts[0].may_have_processed);
  EXPECT_EQ(r.attempts[0].verdict, "retry");
}

// D41: a resumed run whose earlier sends were cleared only by a lookup's
// timed "not found" (not_found_grace_ms passed) gets a 401 from a gateway in
// front of the provider on its last attempt. The 401 says nothing of the
// key, and the grace is a judgement of how long the provider may still be
// processing: UNKNOWN and not sent (a re-send stays safe), never FAILED.
// The same 401 on a run with nothing sent before is the credential's final
// answer: FAILED.
TEST(EngineAuth, A401AfterSendsClearedOnlyByATimedNotFoundIsUnknownNotFailed) {
  for (const bool cleared : {true, false}) {
    AuthHarness h(R"({"provider":{"extends":"paypal","name":"gated",)"
                  R"("auth":{"scheme":"oauth2_client_credentials","token_path":"/v1/oauth2/token",)"
                  R"("unauthorized_not_processed":true}},)"
                  R"("base_url":"https://api-m.sandbox.paypal.com","ledger":"memory:","retry":{"max_attempts":1},)"
                  R"("auth":{"oauth2":{"client_id":"test-client-id","client_secret":"test-client-secret"}}})");
    h.token_transport.script = {token("tok-1"), token("tok-2")};
    h.transport.script = {paypal_401()};
    SubmitRequest r;
    r.order_id = "order-1";
    r.body = kPayPalBody;
    r.idempotency_key = "req-1";
    r.first_attempt = 2;  // resumed: attempt 1 timed out, then a lookup proved "no payment" by the grace
    r.prior_cleared_by_lookup = cleared;
    const PaymentResult out = h.engine().submit(r);
    EXPECT_EQ(h.transport.sent.size(), 1u);
    if (cleared) {
      EXPECT_EQ(out.outcome, Outcome::unknown) << out.error;
      EXPECT_EQ(out.delivery, Delivery::not_sent) << "the 401 processed nothing; a re-send stays safe";
    } else {
      EXPECT_EQ(out.outcome, Outcome::failed) << out.error;
    }
  }
}

// The credential is renewed once a run. A second 401 is an answer like any
// other (a final 4xx), and after the first one, which may have been
// processed, it proves nothing: UNKNOWN, never FAILED.
TEST(EngineAuth, ASecond401IsNotRenewedAgainAndProvesNothing) {
  AuthHarness h(kPayPalConfig);
  h.token_transport.script = {token("tok-1"), token("tok-2"), token("tok-3")};
  h.transport.script = {paypal_401(), paypal_401(), paypal_created()};
  const PaymentResult r = h.submit("order-1", kPayPalBody, "req-1");
  EXPECT_EQ(r.outcome, Outcome::unknown) << r.error;
  EXPECT_EQ(r.http_status, 401);
  EXPECT_EQ(h.transport.sent.size(), 2u);
  EXPECT_EQ(h.token_transport.sent.size(), 2u) << "not renewed a second time";
  ASSERT_EQ(r.attempts.size(), 2u);
  EXPECT_EQ(r.attempts[0].number, 1u);
  EXPECT_EQ(r.attempts[0].http_status, 401);
  EXPECT_EQ(r.attempts[1].number, 2u);
  EXPECT_EQ(r.attempts[1].http_status, 401);
}

// The 401'd request left the process; a hook that refuses the re-send must
// not turn that into a bare error: the call answers with a result.
TEST(EngineAuth, AHookThatRefusesTheResendAfterA401StillAnswersAResult) {
  AuthHarness h(kPayPalConfig);
  h.token_transport.script = {token("tok-1"), token("tok-2")};
  h.transport.script = {paypal_401(), paypal_created()};
  int calls = 0;
  h.hook = [&calls](const AttemptView&, Headers&) -> std::string { return ++calls == 1 ? "" : "signer offline"; };
  PaymentResult r;
  ASSERT_NO_THROW(r = h.submit("order-1", kPayPalBody, "req-1"));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(h.transport.sent.size(), 1u) << "the refused re-send never left";
  EXPECT_EQ(r.outcome, Outcome::unknown) << r.error;
  EXPECT_TRUE(has(r.error, "signer offline")) << r.error;
}

TEST(EngineAuth, A401OnALaterAttemptIsTheNextAttempt) {
  AuthHarness h(kPayPalConfig);
  h.token_transport.script = {token("tok-1"), token("tok-2")};
  h.transport.script = {http(503, "{}"), paypal_401(), paypal_created()};
  const PaymentResult r = h.submit("order-1", kPayPalBody, "req-1");
  EXPECT_EQ(r.outcome, Outcome::succeeded) << r.error;
  ASSERT_EQ(h.transport.sent.size(), 3u);
  for (const auto& s : h.transport.sent) {
    EXPECT_EQ(s.one("PayPal-Request-Id"), "req-1");
    EXPECT_EQ(s.body, kPayPalBody);
  }
  EXPECT_EQ(h.transport.sent[2].one("Authorization"), "Bearer tok-2");
  ASSERT_EQ(r.attempts.size(), 3u);
  EXPECT_EQ(r.attempts[0].number, 1u);
  EXPECT_EQ(r.attempts[1].number, 2u);
  EXPECT_EQ(r.attempts[1].http_status, 401);
  EXPECT_EQ(r.attempts[2].number, 3u);
  EXPECT_EQ(r.attempts[2].http_status, 201);
}

TEST(EngineAuth, ATokenThatCannotBeHadIsAnUnsentAttemptThatIsRetried) {
  AuthHarness h(kPayPalConfig);
  h.token_transport.script = {http(500, "{}"), connect_refused(), token("tok-1")};
  h.transport.script = {paypal_created()};
  const PaymentResult r = h.submit("order-1", kPayPalBody, "req-1");
  EXPECT_EQ(r.outcome, Outcome::succeeded) << r.error;
  ASSERT_EQ(r.attempts.size(), 3u);
  for (int i : {0, 1}) {
    EXPECT_EQ(r.attempts[i].transport_error, "no_credentials") << i;
    EXPECT_EQ(r.attempts[i].http_status, 0);
    EXPECT_FALSE(r.attempts[i].may_have_processed);
    EXPECT_EQ(r.attempts[i].number, static_cast<unsigned>(i + 1));
  }
  EXPECT_EQ(h.transport.sent.size(), 1u) << "only the authorized attempt reached the transport";
  EXPECT_EQ(h.transport.sent[0].one("Authorization"), "Bearer tok-1");
  EXPECT_EQ(h.sleeper.sleeps.size(), 2u) << "retried after backoff";
  EXPECT_TRUE(h.logged("no_credentials"));
}

TEST(EngineAuth, NoTokenAtAllSendsNothing) {
  AuthHarness h(kPayPalConfig);
  h.token_transport.script = {http(401, R"({"error":"invalid_client"})"), http(401, "{}"), http(401, "{}"),
                               http(401, "{}")};
  const PaymentResult r = h.submit("order-1", kPayPalBody, "req-1");
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.delivery, Delivery::not_sent);
  EXPECT_TRUE(h.transport.sent.empty());
  ASSERT_EQ(r.attempts.size(), 4u) << "max_attempts by default";
  for (const auto& a : r.attempts) EXPECT_EQ(a.transport_error, "no_credentials");
  EXPECT_FALSE(has(r.error, "test-client-secret"));
}

std::string wechat_config_json() {
  return R"({"provider":"wechatpay_v3","base_url":"https://api.mch.weixin.qq.com","ledger":"memory:","merchant_id":"1900000109","auth":)" +
         wechat_auth_json(kPlatformSerial) + "}";
}

// A WeChat answer signed with the platform key at `ts_s`.
TransportResult wx_signed(int status, const std::string& body, int64_t ts_s, const std::string& key = "wechat_platform_key.pem") {
  const std::string nonce = "5K8264ILTKCH16CQ2502SI8ZNMTM67VS";
  return http(status, body,
              {{"Request-ID", "08F78BB5AF0610D302"},
               {"Wechatpay-Timestamp", std::to_string(ts_s)},
               {"Wechatpay-Nonce", nonce},
               {"Wechatpay-Signature", ossl_sign(key, std::to_string(ts_s) + "\n" + nonce + "\n" + body + "\n")},
               {"Wechatpay-Serial", kPlatformSerial}});
}

const std::string kPrepay = R"({"prepay_id":"wx26112221580621e9b071c00d9e093b0000"})";

TEST(EngineAuth, WeChatASignedSuccessSucceedsAndTheRequestIsSigned) {
  AuthHarness h(wechat_config_json());
  const int64_t ts = h.clock.unix_ms() / 1000;
  h.transport.script = {wx_signed(200, kPrepay, ts)};
  const PaymentResult r = h.submit("order-0001", kWxBody);
  EXPECT_EQ(r.outcome, Outcome::succeeded) << r.error;
  EXPECT_EQ(r.provider_payment_id, "wx26112221580621e9b071c00d9e093b0000");
  ASSERT_EQ(h.transport.sent.size(), 1u);
  const SentRequest& s = h.transport.sent[0];
  EXPECT_EQ(s.url, "https://api.mch.weixin.qq.com/v3/pay/transactions/jsapi");
  auto f = wechat_auth_fields(s.one("Authorization"));
  EXPECT_EQ(f["mchid"], kMchid);
  EXPECT_EQ(f["serial_no"], kMerchantSerial);
  EXPECT_EQ(f["timestamp"], std::to_string(r.attempts.at(0).started_unix_ms / 1000));
  EXPECT_TRUE(ossl_verifies("wechat_merchant_pub.pem",
                            "POST\n/v3/pay/transactions/jsapi\n" + f["timestamp"] + "\n" + f["nonce_str"] + "\n" + s.body + "\n",
                            f["signature"]));
  EXPECT_EQ(s.body, kWxBody);
}

TEST(EngineAuth, WeChatAnUnsignedSuccessIsUnknown) {
  AuthHarness h(wechat_config_json());
  h.transport.script = {http(200, kPrepay, {{"Request-ID", "08F78BB5AF0610D302"}})};
  const PaymentResult r = h.submit("order-0001", kWxBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.delivery, Delivery::maybe_processed);
  EXPECT_TRUE(has(r.error, "verif")) << r.error;
  EXPECT_EQ(h.transport.sent.size(), 1u) << "settled by query, not re-sent";
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_TRUE(r.attempts[0].may_have_processed);
  EXPECT_EQ(r.provider_payment_id, "") << "nothing of an unverified answer is believed";
  EXPECT_TRUE(h.logged("answer_not_verified"));
}

TEST(EngineAuth, WeChatAForgedAnswerIsUnknownWhateverItSays) {
  for (int status : {200, 400}) {
    SCOPED_TRACE(status);
    AuthHarness h(wechat_config_json());
    const int64_t ts = h.clock.unix_ms() / 1000;
    const std::string body = status == 200 ? kPrepay : R"({"code":"PARAM_ERROR","message":"x"})";
    h.transport.script = {wx_signed(status, body, ts, "wechat_merchant_key.pem")};
    const PaymentResult r = h.submit("order-0001", kWxBody);
    EXPECT_EQ(r.outcome, Outcome::unknown) << r.error;
    EXPECT_EQ(r.delivery, Delivery::maybe_processed);
    EXPECT_TRUE(has(r.error, "verif")) << r.error;
  }
}

TEST(EngineAuth, WeChatAnUnsignedFinal4xxIsStillFailed) {
  AuthHarness h(wechat_config_json());
  h.transport.script = {http(400, R"({"code":"PARAM_ERROR","message":"appid和mch_id不匹配"})")};
  const PaymentResult r = h.submit("order-0001", kWxBody);
  EXPECT_EQ(r.outcome, Outcome::failed) << r.error;
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(h.transport.sent.size(), 1u);
}

TEST(EngineAuth, WeChatAnUnsigned5xxIsRetriedAndASignedSuccessSettlesIt) {
  AuthHarness h(wechat_config_json());
  h.transport.script = {http(500, R"({"code":"SYSTEM_ERROR","message":"busy"})")};
  h.transport.script.push_back(wx_signed(200, kPrepay, h.clock.unix_ms() / 1000 + 2));
  const PaymentResult r = h.submit("order-0001", kWxBody);
  EXPECT_EQ(r.outcome, Outcome::succeeded) << r.error;
  ASSERT_EQ(h.transport.sent.size(), 2u);
  auto f1 = wechat_auth_fields(h.transport.sent[0].one("Authorization"));
  auto f2 = wechat_auth_fields(h.transport.sent[1].one("Authorization"));
  EXPECT_NE(f1["nonce_str"], f2["nonce_str"]) << "every attempt is signed afresh";
  EXPECT_TRUE(ossl_verifies("wechat_merchant_pub.pem",
                            "POST\n/v3/pay/transactions/jsapi\n" + f2["timestamp"] + "\n" + f2["nonce_str"] + "\n" +
                                kWxBody + "\n",
                            f2["signature"]));
}

TEST(EngineAuth, AlipayGatewayRequestIsSignedAndItsSignedAnswerSucceeds) {
  AuthHarness h(R"({"provider":"alipay","base_url":"https://openapi.alipay.com","ledger":"memory:","auth":)" +
                alipay_auth_json() + "}");
  const std::string body =
      R"({"biz_content":{"out_trade_no":"order_0001","scene":"bar_code","auth_code":"28763443825664394","subject":"Iphone6 16G","total_amount":"88.88"},"notify_url":"https://m.example.com/n"})";
  const std::string member =
      R"({"code":"10000","msg":"Success","out_trade_no":"order_0001","trade_no":"2013112011001004330000121536","total_amount":"88.88"})";
  h.transport.script = {http(200, alipay_answer(member, ossl_sign("alipay_key.pem", member)))};
  const PaymentResult r = h.submit("order_0001", body);
  EXPECT_EQ(r.outcome, Outcome::succeeded) << r.error;
  EXPECT_EQ(r.provider_payment_id, "2013112011001004330000121536");
  ASSERT_EQ(h.transport.sent.size(), 1u);
  const SentRequest& s = h.transport.sent[0];
  EXPECT_EQ(s.one("Content-Type"), "application/x-www-form-urlencoded;charset=utf-8");
  EXPECT_EQ(s.url.rfind("https://openapi.alipay.com/gateway.do?", 0), 0u) << s.url;
  std::map<std::string, std::string> q;
  for (const auto& [k, v] : fields_of(query_of(s.url))) q[k] = v;
  EXPECT_EQ(q["method"], "alipay.trade.pay");
  EXPECT_EQ(q["app_id"], kAlipayAppId);
  std::map<std::string, std::string> all = q;
  for (const auto& [k, v] : fields_of(s.body)) all[k] = v;
  EXPECT_EQ(all["notify_url"], "https://m.example.com/n");
  Doc biz(all["biz_content"]);
  ASSERT_NE(biz.j, nullptr) << all["biz_content"];
  EXPECT_STREQ(cJSON_GetObjectItem(biz.j, "out_trade_no")->valuestring, "order_0001");
  EXPECT_STREQ(cJSON_GetObjectItem(biz.j, "subject")->valuestring, "Iphone6 16G");
  EXPECT_TRUE(ossl_verifies("alipay_app_pub.pem", alipay_content(all), q["sign"]));
}

TEST(EngineAuth, AlipayAnUnsignedSuccessIsUnknown) {
  AuthHarness h(R"({"provider":"alipay","base_url":"https://openapi.alipay.com","ledger":"memory:","auth":)" +
                alipay_auth_json() + "}");
  const std::string body = R"({"biz_content":{"out_trade_no":"order_0001","total_amount":"88.88","subject":"x"}})";
  h.transport.script = {http(200, R"({"alipay_trade_pay_response":{"code":"10000","msg":"Success","trade_no":"2013"}})")};
  const PaymentResult r = h.submit("order_0001", body);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.delivery, Delivery::maybe_processed);
  EXPECT_TRUE(has(r.error, "verif")) << r.error;
}

TEST(EngineAuth, AlipayAnUnsignedDeclineIsUnknownNotFailed) {
  // Alipay signs its business answers: an unsigned "balance not enough"
  // for a bar-code payment that may have been debited is not Alipay's word,
  // and a FAILED would have the caller charge the buyer again.
  AuthHarness h(R"({"provider":"alipay","base_url":"https://openapi.alipay.com","ledger":"memory:","auth":)" +
                alipay_auth_json() + "}");
  const std::string body = R"({"biz_content":{"out_trade_no":"order_0001","total_amount":"88.88","subject":"x"}})";
  h.transport.script = {http(200, R"({"alipay_trade_pay_response":{"code":"40004","msg":"Business Failed","sub_code":"ACQ.BUYER_BALANCE_NOT_ENOUGH"}})")};
  const PaymentResult r = h.submit("order_0001", body);
  EXPECT_EQ(r.outcome, Outcome::unknown) << r.error;
  EXPECT_EQ(r.delivery, Delivery::maybe_processed);
}

TEST(EngineAuth, AlipayASignedDeclineWithAForgedSuccessBesideItIsUnknown) {
  AuthHarness h(R"({"provider":"alipay","base_url":"https://openapi.alipay.com","ledger":"memory:","auth":)" +
                alipay_auth_json() + "}");
  const std::string body = R"({"biz_content":{"out_trade_no":"order_0001","total_amount":"88.88","subject":"x"}})";
  const std::string decline = R"({"code":"40004","msg":"Business Failed","sub_code":"ACQ.PAYMENT_AUTH_CODE_INVALID"})";
  h.transport.script = {http(200, R"({"alipay_trade_pay_response":)" + decline +
                                      R"(,"zz_response":{"code":"10000","trade_no":"FORGED"},"sign":")" +
                                      ossl_sign("alipay_key.pem", decline) + "\"}")};
  const PaymentResult r = h.submit("order_0001", body);
  EXPECT_EQ(r.outcome, Outcome::unknown) << r.error;
  EXPECT_NE(r.provider_payment_id, "FORGED");
}

TEST(EngineAuth, WeChatASigned2xxWithoutAPrepayIdIsUnknown) {
  // A signed error body under a 200 (the status is not signed): not the
  // answer WeChat gives to an order it created.
  AuthHarness h(wechat_config_json());
  const int64_t ts = h.clock.unix_ms() / 1000;
  h.transport.script = {wx_signed(200, R"({"code":"PARAM_ERROR","message":"x"})", ts)};
  const PaymentResult r = h.submit("order-0001", kWxBody);
  EXPECT_EQ(r.outcome, Outcome::unknown) << r.error;
  EXPECT_EQ(r.delivery, Delivery::maybe_processed);
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].reason, "success_without_id");
}

}  // namespace
}  // namespace payretry
