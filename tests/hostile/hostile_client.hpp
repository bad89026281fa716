// The payretry side of a hostile-provider test: a real client through the C
// ABI, pointed at a HostileServer, and checks on what it hands back.
#pragma once
#include <cJSON.h>
#include <gtest/gtest.h>
#include <payretry/payretry.h>

#include <memory>
#include <string>

namespace payretry_hostile {

struct ClientFree {
  void operator()(pay_client* c) const { pay_client_free(c); }
};
struct ResultFree {
  void operator()(pay_result* r) const { pay_result_free(r); }
};
using Client = std::unique_ptr<pay_client, ClientFree>;
using Result = std::unique_ptr<pay_result, ResultFree>;

// `retry` and `extra` are JSON members spliced into the config object; the
// ledger is memory: unless `extra` names one.
inline std::string config_for(const std::string& base_url, const std::string& provider = "generic",
                              const std::string& retry = R"("max_attempts":3,"attempt_timeout_ms":2000,"deadline_ms":5000,"backoff_base_ms":10,"backoff_cap_ms":50)",
                              const std::string& extra = "") {
  return R"({"provider":")" + provider + R"(","base_url":")" + base_url +
         R"(","create_path":"/v1/payments","auth":{"bearer":"sk_test_hostile_secret"},"retry":{)" + retry + "}" +
         (extra.find("\"ledger\"") == std::string::npos ? R"(,"ledger":"memory:")" : "") +
         (extra.empty() ? "" : "," + extra) + "}";
}

inline Client make_client(const std::string& config) {
  pay_client* c = nullptr;
  const int rc = pay_client_new(&c, config.c_str(), nullptr);
  EXPECT_EQ(rc, PAY_OK) << pay_error_last()->message;
  return Client(c);
}

inline std::string body_for(const std::string& order) {
  return R"({"order_id":")" + order + R"(","amount":1000,"currency":"eur"})";
}

inline Result submit(pay_client* c, const std::string& order, const std::string& body = "") {
  const std::string b = body.empty() ? body_for(order) : body;
  pay_result* r = nullptr;
  const int rc = pay_submit(&r, c, order.c_str(), b.data(), b.size(), nullptr);
  EXPECT_EQ(rc, PAY_OK) << pay_error_last()->message;
  return Result(r);
}

// RFC 8259 §8.1: JSON text exchanged between systems is UTF-8.
inline bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : 99;
    if (n == 99 || (n == 1 && c < 0xC2) || i + n >= s.size() + (n ? 0 : 1)) return false;
    uint32_t cp = n == 0 ? c : n == 1 ? c & 0x1F : n == 2 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; k <= n; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    i += n + 1;
  }
  return true;
}

// The result's JSON view parses, is UTF-8, and never carries the credential.
inline void expect_clean_json(const pay_result* r) {
  const std::string json = pay_result_json(r);
  cJSON* j = cJSON_Parse(json.c_str());
  EXPECT_NE(j, nullptr) << "pay_result_json is not JSON: " << json.substr(0, 300);
  cJSON_Delete(j);
  EXPECT_TRUE(valid_utf8(json)) << "pay_result_json is not UTF-8";
  EXPECT_EQ(json.find("sk_test_hostile_secret"), std::string::npos);
}

}  // namespace payretry_hostile
