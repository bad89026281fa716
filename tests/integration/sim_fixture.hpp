// A real payretry client (through the C ABI) against a real simulator on
// loopback, with helpers to read what the provider saw.
#pragma once
#include <gtest/gtest.h>
#include <payretry/payretry.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server.hpp"

namespace payretry_test {

struct SentAttempt {
  unsigned attempt;
  std::string key;
  std::string body;
  std::string method;  // "GET" for the simulator's lookups
  std::string url;     // full URL, query included
};

// Collects what the request hook saw of every attempt, and the log lines.
struct Recorder {
  std::mutex mu;
  std::vector<SentAttempt> sent;
  std::vector<std::string> log_lines;

  static int hook(pay_headers*, const pay_attempt_info* info, void* self) {
    auto* r = static_cast<Recorder*>(self);
    std::lock_guard<std::mutex> lock(r->mu);
    r->sent.push_back({info->attempt, info->idempotency_key,
                       std::string(static_cast<const char*>(info->body), info->body_len), info->method,
                       info->url ? info->url : ""});
    return 0;
  }
  static void log(int, const char* line, void* self) {
    auto* r = static_cast<Recorder*>(self);
    std::lock_guard<std::mutex> lock(r->mu);
    r->log_lines.emplace_back(line);
  }
};

struct ClientDeleter {
  void operator()(pay_client* c) const { pay_client_free(c); }
};
struct ResultDeleter {
  void operator()(pay_result* r) const { pay_result_free(r); }
};
using ClientPtr = std::unique_ptr<pay_client, ClientDeleter>;
using ResultPtr = std::unique_ptr<pay_result, ResultDeleter>;

class SimTest : public ::testing::Test {
 protected:
  // Fast settings so that every fault resolves within a second or two.
  virtual payretry_sim::Options sim_options() {
    payretry_sim::Options o;
    o.slow_ms = 600;
    o.retry_after_s = 1;
    o.refuse_ms = 150;
    o.api_key = "sk_test_integration_secret";
    // As strict as the providers: WeChat Pay and Alipay requests verified,
    // and their answers signed, with the test keys (tests/keys/README.md).
    o.keys_dir = PAYRETRY_TEST_KEYS;
    return o;
  }

  void SetUp() override { sim_ = std::make_unique<payretry_sim::Server>(sim_options()); }
  void TearDown() override {
    if (sim_) sim_->stop();
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(sim_->port()); }

  // `retry` holds "key":value pairs that replace or add to the defaults below;
  // `extra` more top-level members ("ledger" among them: memory: if absent).
  std::string config(const std::string& provider = "stripe", const std::string& retry = "",
                     const std::string& extra = "") const {
    std::map<std::string, std::string> r = {
        {"max_attempts", "4"},     {"connect_timeout_ms", "300"}, {"attempt_timeout_ms", "300"},
        {"deadline_ms", "6000"},   {"backoff_base_ms", "20"},     {"backoff_cap_ms", "200"},
        {"min_attempt_ms", "50"},  {"jitter_seed", "7"}};
    // Parse the overrides: "\"name\":value" pairs separated by commas.
    size_t at = 0;
    while (at < retry.size()) {
      const size_t q1 = retry.find('"', at), q2 = retry.find('"', q1 + 1), colon = retry.find(':', q2);
      size_t end = retry.find(',', colon);
      if (end == std::string::npos) end = retry.size();
      r[retry.substr(q1 + 1, q2 - q1 - 1)] = retry.substr(colon + 1, end - colon - 1);
      at = end + 1;
    }
    std::string obj;
    for (const auto& [k, v] : r) obj += (obj.empty() ? "\"" : ",\"") + k + "\":" + v;
    // A config must name its ledger; tests that do not care keep keys in
    // memory, and a test that passes its own "ledger" in `extra` gets that.
    const std::string ledger = extra.find("\"ledger\"") == std::string::npos ? R"(,"ledger":"memory:")" : "";
    return R"({"provider":")" + provider + R"(","base_url":")" + base_url() +
           R"(","create_path":"/v1/payments","auth":{"bearer":"sk_test_integration_secret"},"retry":{)" + obj + "}" +
           ledger + (extra.empty() ? "" : "," + extra) + "}";
  }

  ClientPtr client(const std::string& cfg) {
    pay_client_options o;
    pay_client_options_init(&o, PAY_CLIENT_OPTIONS_VERSION);
    o.request_hook = &Recorder::hook;
    o.hook_payload = &rec_;
    o.log_cb = &Recorder::log;
    o.log_payload = &rec_;
    pay_client* c = nullptr;
    const int rc = pay_client_new(&c, cfg.c_str(), &o);
    EXPECT_EQ(rc, PAY_OK) << pay_error_last()->message;
    return ClientPtr(c);
  }

  static std::string body_for(const std::string& order, int amount = 1000) {
    return R"({"order_id":")" + order + R"(","amount":)" + std::to_string(amount) + R"(,"currency":"eur"})";
  }

  ResultPtr submit(pay_client* c, const std::string& order, const std::string& body = "") {
    const std::string b = body.empty() ? body_for(order) : body;
    pay_result* r = nullptr;
    const int rc = pay_submit(&r, c, order.c_str(), b.data(), b.size(), nullptr);
    EXPECT_EQ(rc, PAY_OK) << pay_error_last()->message;
    return ResultPtr(r);
  }

  // Every attempt of this test carried one key and the same bytes (the
  // hook also sees lookups, GETs here, which carry no payment body).
  void expect_one_key_and_identical_bytes() {
    std::lock_guard<std::mutex> lock(rec_.mu);
    ASSERT_FALSE(rec_.sent.empty());
    const SentAttempt* first = nullptr;
    for (const SentAttempt& s : rec_.sent) {
      if (s.method == "GET") continue;
      if (!first) first = &s;
      EXPECT_EQ(s.key, first->key);
      EXPECT_EQ(s.body, first->body);
    }
    ASSERT_NE(first, nullptr);
  }

  std::unique_ptr<payretry_sim::Server> sim_;
  Recorder rec_;
};

}  // namespace payretry_test
