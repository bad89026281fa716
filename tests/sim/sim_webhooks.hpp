// What the simulator's notification tests share: a loopback receiver that records every
// notification, the secrets a merchant configures per profile, a payment made through each
// profile's own API, and what payretry's webhook blocks read out of an event.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "sim_auth.hpp"
#include "sim_client.hpp"
#include "webhook_scheme.hpp"

namespace simtest {

using payretry::WebhookRequest;
using payretry::WebhookSecrets;
using payretry::WebhookVerdict;

// ---- a receiver: one loopback listener, every POST recorded and answered -----------------------

class Receiver {
 public:
  struct Got {
    WebhookRequest request;
    Clock::time_point at;
  };

  Receiver() {
    fd_ = Sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd_.get(), 64) != 0) {
      throw std::runtime_error("receiver cannot listen");
    }
    socklen_t len = sizeof sa;
    getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~Receiver() {
    stop_ = true;
    ::shutdown(fd_.get(), SHUT_RDWR);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hooks/payments"; }
  // The next `n` notifications are answered `status` (then 200 again).
  void fail_next(int n, int status) {
    std::lock_guard<std::mutex> lk(mu_);
    failures_ = n;
    failure_status_ = status;
  }
  // Waits until `n` notifications arrived (or 10 s went by); returns all so far.
  std::vector<Got> wait_for(std::size_t n) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, std::chrono::seconds(10), [&] { return got_.size() >= n; });
    return got_;
  }
  std::vector<Got> all() {
    std::lock_guard<std::mutex> lk(mu_);
    return got_;
  }

 private:
  void run() {
    while (!stop_) {
      Sock c(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c.ok()) continue;
      std::string buf;
      char tmp[8192];
      std::size_t end = std::string::npos, length = 0;
      for (;;) {
        if (end == std::string::npos && (end = buf.find("\r\n\r\n")) != std::string::npos) {
          const std::string head = lower(buf.substr(0, end));
          const std::size_t cl = head.find("content-length:");
          length = cl == std::string::npos ? 0 : std::strtoul(head.c_str() + cl + 15, nullptr, 10);
        }
        if (end != std::string::npos && buf.size() >= end + 4 + length) break;
        const ssize_t r = ::recv(c.get(), tmp, sizeof tmp, 0);
        if (r <= 0) break;
        buf.append(tmp, static_cast<std::size_t>(r));
      }
      if (end == std::string::npos) continue;
      Got g;
      g.at = Clock::now();
      std::istringstream head(buf.substr(0, end));
      std::string line;
      std::getline(head, line);
      std::istringstream first(line);
      std::string target;
      first >> g.request.method >> target;
      g.request.url = url_base() + target;
      while (std::getline(head, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        g.request.headers.emplace_back(line.substr(0, colon), value);
      }
      g.request.body = buf.substr(end + 4, length);
      int status = 200;
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (failures_ > 0) {
          --failures_;
          status = failure_status_;
        }
        got_.push_back(std::move(g));
      }
      cv_.notify_all();
      const std::string answer = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)::send(c.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
    }
  }
  std::string url_base() const { return "http://127.0.0.1:" + std::to_string(port_); }

  Sock fd_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Got> got_;
  int failures_ = 0;
  int failure_status_ = 500;
};

// ---- what a merchant configures, per profile -----------------------------------------------------

inline const char kStripeSecret[] = "whsec_payretry_sim_test";
inline const char kAdyenKey[] = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
inline const char kSquareKey[] = "sq-signature-key-test";
inline const char kCkoKey[] = "cko-signature-key-test";
inline const char kApiV3Key[] = "payretrysdkconformanceapiv3key32";
inline const char kPaypalWebhookId[] = "1JE4291016473214C";

inline std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Merchant {
  std::string profile;
  std::string scheme;  // payretry's row (src/profiles/builtin/<profile>.json "webhook".scheme)
  WebhookSecrets secrets;
};

inline Merchant setup_for(const std::string& profile, const std::string& url) {
  Merchant s{profile, profile, {}};
  if (profile == "stripe") s.secrets.keys = {kStripeSecret};
  if (profile == "adyen") s.secrets.keys = {kAdyenKey};
  if (profile == "square") {
    s.secrets.keys = {kSquareKey};
    s.secrets.notification_url = url;
  }
  if (profile == "checkout_com") s.secrets.keys = {kCkoKey};
  if (profile == "mollie") s.scheme = "mollie_id_only";
  if (profile == "wechatpay_v3") {
    s.secrets.api_v3_key = kApiV3Key;
    s.secrets.public_key_pem = read_file(key_file("wechat_platform_pub.pem"));
    s.secrets.public_key_id = kPlatformSerial;
  }
  if (profile == "alipay") s.secrets.public_key_pem = read_file(key_file("alipay_pub.pem"));
  if (profile == "paypal") {
    s.scheme = "paypal_offline";
    s.secrets.public_key_pem = read_file(key_file("paypal_webhook_cert.pem"));
    s.secrets.webhook_id = kPaypalWebhookId;
  }
  return s;
}

inline Options sim_options(const std::string& profile, const std::string& url, const std::string& faults = "") {
  Options o = fast_options();
  o.profile = profile;
  o.keys_dir = PAYRETRY_TEST_KEYS_DIR;
  o.webhook_url = url;
  o.webhook_faults = faults;
  o.seed = 46;
  if (profile == "stripe") o.webhook_secret = kStripeSecret;
  if (profile == "adyen") o.webhook_secret = kAdyenKey;
  if (profile == "square") o.webhook_secret = kSquareKey;
  if (profile == "checkout_com") o.webhook_secret = kCkoKey;
  if (profile == "wechatpay_v3") o.webhook_api_v3_key = kApiV3Key;
  if (profile == "paypal") o.webhook_id = kPaypalWebhookId;
  return o;
}

inline int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline WebhookVerdict verify(const Merchant& s, const WebhookRequest& r) {
  return payretry::verify_webhook(s.scheme, r, s.secrets, now_ms());
}

// ---- payments through the simulator's own API, as each provider's clients make them -------------

// Makes a payment for `order`; returns the id the simulator's answer gave it ("" when the answer
// names none: WeChat Pay's prepay answer, a decline).
inline std::string pay(const std::string& profile, uint16_t port, const std::string& order) {
  Conn c(port);
  Response r;
  if (profile == "stripe") {
    r = c.request("POST", "/v1/payments", R"({"order_id":")" + order + R"(","amount":1000,"currency":"usd"})",
                  {"Idempotency-Key: k-" + order});
    return Json(r.body).str("id");
  }
  if (profile == "adyen") {
    r = c.request("POST", "/v71/payments",
                  R"({"reference":")" + order + R"(","amount":{"value":1000,"currency":"EUR"},"merchantAccount":"PayretrySimECOM"})",
                  {"idempotency-key: k-" + order});
    return Json(r.body).str("pspReference");
  }
  if (profile == "square") {
    r = c.request("POST", "/v2/payments",
                  R"({"idempotency_key":"k-)" + order + R"(","reference_id":")" + order +
                      R"(","source_id":"cnon:card-nonce-ok","amount_money":{"amount":1000,"currency":"USD"}})");
    return Json(r.body).str("payment.id");
  }
  if (profile == "checkout_com") {
    r = c.request("POST", "/payments", R"({"reference":")" + order + R"(","amount":1000,"currency":"USD"})",
                  {"Cko-Idempotency-Key: k-" + order});
    return Json(r.body).str("id");
  }
  if (profile == "mollie") {
    r = c.request("POST", "/v2/payments",
                  R"({"amount":{"currency":"EUR","value":"10.00"},"description":"Order","metadata":{"order_id":")" + order +
                      R"("}})",
                  {"Idempotency-Key: k-" + order});
    return Json(r.body).str("id");
  }
  if (profile == "wechatpay_v3") {
    const std::string target = "/v3/pay/transactions/native";
    const std::string body = R"({"appid":"wxd678efh567hg6787","mchid":"1900000109","description":"test","out_trade_no":")" +
                             order + R"(","notify_url":"https://example.com/n","amount":{"total":100,"currency":"CNY"}})";
    r = c.request("POST", target, body, {wechat_authorization("POST", target, body)});
    return "";
  }
  if (profile == "alipay") {
    const GatewayRequest g = alipay_call(
        "alipay.trade.pay",
        R"({"out_trade_no":")" + order + R"(","total_amount":"10.00","subject":"test","scene":"bar_code","auth_code":"28763443825664394"})");
    r = c.request("POST", g.target, g.body, g.headers);
    return Json(r.body).str("alipay_trade_pay_response.trade_no");
  }
  if (profile == "paypal") {
    const std::string token = paypal_token(port);
    r = c.request("POST", "/v2/checkout/orders",
                  R"({"intent":"CAPTURE","purchase_units":[{"reference_id":")" + order +
                      R"(","amount":{"currency_code":"USD","value":"10.00"}}]})",
                  {bearer(token), "PayPal-Request-Id: k-" + order});
    return Json(r.body).str("id");
  }
  return "";
}

inline void script_decline(uint16_t port, const std::string& order) {
  ASSERT_EQ(admin_post(port, "/__admin/script", R"({"order_id":")" + order + R"(","faults":["decline"]})").status, 200);
}

// What the profile's webhook block reads (src/profiles/builtin/<profile>.json "webhook"): the
// order, the provider's id and the state word its `events` or `status` map.
struct Read {
  std::string order, provider_id, state;
};

inline Read read_event(const std::string& profile, const std::string& body) {
  Json j(body);
  Read r;
  if (profile == "stripe") {
    r = {j.str("data.object.metadata.order_id"), j.str("data.object.id"), j.str("data.object.status")};
  } else if (profile == "adyen") {
    const cJSON* items = j.at("notificationItems");
    const cJSON* item = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(items, 0), "NotificationRequestItem");
    auto str = [&](const char* n) {
      const cJSON* v = cJSON_GetObjectItemCaseSensitive(item, n);
      return std::string(cJSON_IsString(v) ? v->valuestring : "");
    };
    r = {str("merchantReference"), str("pspReference"), str("eventCode") + ":" + str("success")};
  } else if (profile == "square") {
    r = {j.str("data.object.payment.reference_id"), j.str("data.object.payment.id"), j.str("data.object.payment.status")};
  } else if (profile == "checkout_com") {
    r = {j.str("data.reference"), j.str("data.id"), j.str("type")};
  } else if (profile == "wechatpay_v3") {
    r = {j.str("out_trade_no"), j.str("transaction_id"), j.str("trade_state")};
  } else if (profile == "paypal") {
    r = {j.str("resource.custom_id"), j.str("resource.supplementary_data.related_ids.order_id"), j.str("event_type")};
  } else if (profile == "alipay") {
    std::map<std::string, std::string> f;
    std::istringstream in(body);
    std::string pair;
    while (std::getline(in, pair, '&')) {
      const std::size_t eq = pair.find('=');
      f[pair.substr(0, eq)] = pair.substr(eq + 1);
    }
    r = {f["out_trade_no"], f["trade_no"], f["trade_status"]};
  }
  return r;
}

}  // namespace simtest
