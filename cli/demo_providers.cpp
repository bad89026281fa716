#include "demo_providers.hpp"

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "common.hpp"
#include "output.hpp"

namespace cli {
namespace {

// The simulator's merchant accounts (docs/simulator.md; tests/keys/README.md).
const char kAdyenAccount[] = "PayretrySimECOM";
const char kWechatMchid[] = "1900000109";
const char kWechatSerial[] = "3775B6A45ACD588826D15E583A95F5DD3F3B4DD8";
const char kAlipayAppId[] = "2021000000000001";
const char kApiKey[] = "sk_test_payretry_demo";

std::string decimal(int64_t minor) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%02lld", static_cast<long long>(minor / 100),
                static_cast<long long>(minor % 100));
  return buf;
}

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
struct FileClose {
  void operator()(FILE* f) const { std::fclose(f); }
};

std::unique_ptr<EVP_PKEY, PkeyFree> rsa_key() {
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nullptr));
  EVP_PKEY* k = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) <= 0 || EVP_PKEY_CTX_set_rsa_keygen_bits(ctx.get(), 2048) <= 0 ||
      EVP_PKEY_keygen(ctx.get(), &k) <= 0)
    throw Failure(kExitInternal, "cannot make an RSA key for the demo's WeChat Pay and Alipay accounts");
  return std::unique_ptr<EVP_PKEY, PkeyFree>(k);
}

void write_pem(const std::string& path, EVP_PKEY* k, bool priv) {
  std::unique_ptr<FILE, FileClose> f(std::fopen(path.c_str(), "w"));
  const bool ok = f && (priv ? PEM_write_PrivateKey(f.get(), k, nullptr, nullptr, 0, nullptr, nullptr)
                             : PEM_write_PUBKEY(f.get(), k)) == 1;
  if (!ok) throw Failure(kExitInternal, "cannot write " + path);
}

// A member of a parsed answer by a dotted path with array indexes
// ("purchase_units.0.payments.captures.0.id"); "" when absent.
std::string at_path(const std::string& json, const std::vector<std::string>& path) {
  Json doc(cJSON_ParseWithLength(json.data(), json.size()));
  const cJSON* at = doc.get();
  for (const std::string& p : path) {
    if (!at) return "";
    if (cJSON_IsArray(at)) at = cJSON_GetArrayItem(at, std::atoi(p.c_str()));
    else at = cJSON_GetObjectItemCaseSensitive(at, p.c_str());
  }
  return cJSON_IsString(at) ? at->valuestring : "";
}

}  // namespace

const std::vector<std::string>& demo_provider_names() {
  static const std::vector<std::string> names = {"stripe", "paypal", "checkout_com", "adyen",
                                                 "square", "mollie", "wechatpay_v3", "alipay"};
  return names;
}

DemoProvider demo_provider(const std::string& name) {
  DemoProvider p;
  p.name = name;
  if (name == "stripe" || name == "checkout_com" || name == "square") p.holds = true;
  else if (name == "paypal") {
    p.holds = true;
    p.needs_target = true;
  } else if (name == "mollie") p.holds = true;  // captureMode manual: the customer pays, then it is held
  else if (name == "adyen") {
    // Every Adyen payment of the simulator's account is authorized only:
    // it captures by hand, and a capture is settled by its notification.
  } else if (name != "wechatpay_v3" && name != "alipay") {
    std::string all;
    for (const std::string& n : demo_provider_names()) all += (all.empty() ? "" : ", ") + n;
    throw usage_error("--provider wants one of " + all + ", got '" + name + "'");
  }
  // The providers whose operations the simulator notifies and the profiles
  // read (operations.<kind>.webhook); the others' are settled by lookup.
  p.notifies = name == "adyen" || name == "checkout_com" || name == "stripe";
  p.key_is_order = name == "wechatpay_v3" || name == "alipay";
  // Square completes the whole amount (docs/simulator.md, "The money rules").
  p.partial_capture = name != "square";
  return p;
}

std::string demo_operation_body(const DemoProvider& p, int64_t amount) {
  if (p.name == "adyen") return std::string("{\"merchantAccount\":\"") + kAdyenAccount + "\"}";
  if (p.name == "wechatpay_v3") return "{\"amount\":{\"total\":" + std::to_string(amount) + ",\"currency\":\"CNY\"}}";
  return "";
}

std::string demo_op_order(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "demo_%05d", i);
  return buf;
}

int demo_op_index(const std::string& order) {
  if (order.rfind("demo_", 0) != 0 || order.size() < 6) return -1;
  char* end = nullptr;
  const long i = std::strtol(order.c_str() + 5, &end, 10);
  return (*end || i < 0 || i > 10000000) ? -1 : static_cast<int>(i);
}

int64_t demo_op_amount(int i) { return 1000 + (static_cast<int64_t>(i) * 37) % 9000; }

std::string demo_provider_body(const DemoProvider& p, const std::string& order, int64_t amount, bool hold) {
  const std::string a = std::to_string(amount), o = "\"" + order + "\"";
  const std::string& n = p.name;
  if (n == "stripe")
    return "{\"amount\":" + a + ",\"currency\":\"eur\",\"metadata\":{\"order_id\":" + o + "}" +
           (hold ? ",\"confirm\":true,\"payment_method\":\"pm_card_visa\",\"capture_method\":\"manual\"" : "") + "}";
  if (n == "paypal")
    return std::string("{\"intent\":\"") + (hold ? "AUTHORIZE" : "CAPTURE") + "\",\"purchase_units\":[{\"reference_id\":" +
           o + ",\"amount\":{\"currency_code\":\"EUR\",\"value\":\"" + decimal(amount) + "\"}}]}";
  if (n == "checkout_com")
    return "{\"amount\":" + a + ",\"currency\":\"EUR\",\"reference\":" + o + (hold ? ",\"capture\":false" : "") + "}";
  if (n == "adyen")
    return "{\"amount\":{\"value\":" + a + ",\"currency\":\"EUR\"},\"reference\":" + o +
           ",\"paymentMethod\":{\"type\":\"scheme\"},\"merchantAccount\":\"" + kAdyenAccount + "\"}";
  if (n == "square")
    return "{\"amount_money\":{\"amount\":" + a + ",\"currency\":\"EUR\"},\"reference_id\":" + o +
           ",\"source_id\":\"cnon:card-nonce-ok\"" + (hold ? ",\"autocomplete\":false" : "") + "}";
  if (n == "mollie")
    return "{\"amount\":{\"currency\":\"EUR\",\"value\":\"" + decimal(amount) + "\"},\"metadata\":{\"order_id\":" + o +
           "},\"description\":\"payretry demo\"" + (hold ? ",\"captureMode\":\"manual\"" : "") + "}";
  if (n == "wechatpay_v3")
    return "{\"out_trade_no\":" + o + ",\"description\":\"payretry demo\",\"amount\":{\"total\":" + a +
           ",\"currency\":\"CNY\"},\"payer\":{\"openid\":\"oUpF8uMuAJO_M2pxb1Q9zNjWeS6o\"}}";
  // alipay: a face-to-face payment (the customer's code scanned), paid at once.
  return "{\"biz_content\":{\"out_trade_no\":" + o + ",\"total_amount\":\"" + decimal(amount) +
         "\",\"subject\":\"payretry demo\",\"scene\":\"bar_code\",\"auth_code\":\"28763443825664394\"}}";
}

std::string demo_hmac_key_hex() {
  unsigned char k[32];
  if (RAND_bytes(k, sizeof k) != 1) throw Failure(kExitInternal, "no random bytes for the demo's notification key");
  std::string hex;
  char b[3];
  for (unsigned char c : k) {
    std::snprintf(b, sizeof b, "%02X", c);
    hex += b;
  }
  return hex;
}

std::string demo_provider_config(const DemoProvider& p, const std::string& base_url, const std::string& ledger_url,
                                 const std::string& keys_dir, uint64_t seed, const std::string& webhook_secret) {
  std::string auth = std::string("{\"bearer\":\"") + kApiKey + "\"}", extra;
  if (p.name == "paypal")
    auth = "{\"oauth2\":{\"client_id\":\"test-client-id\",\"client_secret\":\"test-client-secret\"}}";
  if (p.name == "wechatpay_v3") {
    auth = std::string("{\"wechatpay\":{\"serial_no\":\"") + kWechatSerial + "\",\"private_key_file\":\"" + keys_dir +
           "/merchant_key.pem\",\"platform_public_key_file\":\"" + keys_dir + "/provider_pub.pem\"}}";
    extra = std::string(",\"merchant_id\":\"") + kWechatMchid + "\"";
  }
  if (p.name == "alipay")
    auth = std::string("{\"alipay\":{\"app_id\":\"") + kAlipayAppId + "\",\"private_key_file\":\"" + keys_dir +
           "/merchant_key.pem\",\"alipay_public_key_file\":\"" + keys_dir + "/provider_pub.pem\"}}";
  if (p.name == "adyen") extra = std::string(",\"merchant_id\":\"") + kAdyenAccount + "\"";
  if (!webhook_secret.empty()) extra += ",\"webhook\":{\"secret\":\"" + webhook_secret + "\"}";
  // The default demo's timings: the `slow` fault (1.5 s) outlasts an attempt
  // (800 ms). A second worker asking for the same operation waits for the
  // first one's answer instead of answering IN_PROGRESS at once.
  char retry[512];
  std::snprintf(retry, sizeof retry,
                "\"retry\":{\"max_attempts\":4,\"connect_timeout_ms\":500,\"attempt_timeout_ms\":800,"
                "\"deadline_ms\":8000,\"backoff_base_ms\":50,\"backoff_cap_ms\":400,\"min_attempt_ms\":100,"
                "\"jitter_seed\":%llu}",
                static_cast<unsigned long long>(seed % (1ULL << 53)));
  return "{\"provider\":\"" + p.name + "\",\"base_url\":\"" + base_url + "\",\"auth\":" + auth + extra + "," + retry +
         ",\"not_found_grace_ms\":0,\"in_progress_wait_ms\":12000,\"ledger\":\"" + ledger_url + "\"}";
}

void write_demo_keys(const std::string& dir) {
  // One key pair is the merchant's (signs requests), the other the
  // provider's (signs answers); the simulator's --keys layout names each
  // half by the role it plays for WeChat Pay and for Alipay.
  const auto merchant = rsa_key(), provider = rsa_key();
  write_pem(dir + "/merchant_key.pem", merchant.get(), true);
  write_pem(dir + "/provider_pub.pem", provider.get(), false);
  write_pem(dir + "/wechat_merchant_pub.pem", merchant.get(), false);
  write_pem(dir + "/alipay_app_pub.pem", merchant.get(), false);
  write_pem(dir + "/wechat_platform_key.pem", provider.get(), true);
  write_pem(dir + "/alipay_key.pem", provider.get(), true);
}

std::string demo_target_id(const DemoProvider& p, bool refund, const std::string& payment_answer,
                           const std::string& capture_answer) {
  if (!p.needs_target) return "";
  // PayPal (its profile's target_id paths): a capture names the order's
  // authorization; a refund the capture, the one the capture made when the
  // payment was held, else the one the order's create made.
  if (!refund) return at_path(payment_answer, {"purchase_units", "0", "payments", "authorizations", "0", "id"});
  if (!capture_answer.empty()) return at_path(capture_answer, {"id"});
  return at_path(payment_answer, {"purchase_units", "0", "payments", "captures", "0", "id"});
}

}  // namespace cli
