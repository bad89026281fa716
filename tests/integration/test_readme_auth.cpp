// The README's PayPal, WeChat Pay and Alipay examples, read from README.md
// itself, run against the simulator playing each provider with its
// authentication enforced: PayPal's OAuth2 tokens, WeChat Pay's and
// Alipay's request signatures checked with the test keys and their answers
// signed. Only the host, the ledger, the key files and the PayPal client
// (tests/keys/README.md) are swapped for the test's own.
#include <cJSON.h>
#include <gtest/gtest.h>
#include <payretry/payretry.h>
#include <stdlib.h>

#include <fstream>
#include <iterator>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "server.hpp"

namespace {

struct JsonDeleter {
  void operator()(cJSON* j) const { cJSON_Delete(j); }
};
using Json = std::unique_ptr<cJSON, JsonDeleter>;
struct ClientDeleter {
  void operator()(pay_client* c) const { pay_client_free(c); }
};
struct ResultDeleter {
  void operator()(pay_result* r) const { pay_result_free(r); }
};
using Client = std::unique_ptr<pay_client, ClientDeleter>;
using Result = std::unique_ptr<pay_result, ResultDeleter>;

const std::string kKeys = PAYRETRY_TEST_KEYS;

struct Example {
  std::string config;
  std::string body;
};

// The ```json block after `<!-- readme-example: NAME -->`, and the body in
// backquotes after "with a body such as".
Example readme_example(const std::string& name) {
  std::ifstream f(PAYRETRY_README);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t marker = text.find("<!-- readme-example: " + name + " -->");
  if (marker == std::string::npos) throw std::runtime_error("README.md has no example " + name);
  const size_t open = text.find("```json\n", marker) + 8;
  const size_t close = text.find("```", open);
  const size_t body_at = text.find("with a body such as\n`", close) + 21;
  const size_t body_end = text.find('`', body_at);
  return {text.substr(open, close - open), text.substr(body_at, body_end - body_at)};
}

void set_string(cJSON* obj, const char* name, const std::string& value) {
  ASSERT_TRUE(cJSON_GetObjectItemCaseSensitive(obj, name)) << "README example lacks " << name;
  cJSON_ReplaceItemInObjectCaseSensitive(obj, name, cJSON_CreateString(value.c_str()));
}

class ReadmeAuth : public ::testing::Test {
 protected:
  void start(const std::string& profile, const std::string& keys_dir = kKeys) {
    payretry_sim::Options o;
    o.profile = profile;
    o.keys_dir = keys_dir;
    sim_ = std::make_unique<payretry_sim::Server>(o);
  }
  void TearDown() override {
    if (sim_) sim_->stop();
  }

  // The README's config with this machine's host, ledger and test keys.
  std::string adapt(const std::string& readme_config, const std::string& auth_member,
                    const std::vector<std::pair<const char*, std::string>>& auth_values) {
    Json c(cJSON_Parse(readme_config.c_str()));
    EXPECT_TRUE(c) << readme_config;
    if (!c) return {};
    set_string(c.get(), "base_url", "http://127.0.0.1:" + std::to_string(sim_->port()));
    set_string(c.get(), "ledger", "sqlite://" + db_path());
    cJSON* a = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c.get(), "auth"), auth_member.c_str());
    EXPECT_TRUE(a) << "README example has no auth." << auth_member;
    for (const auto& [name, value] : auth_values) set_string(a, name, value);
    // Quick retries: the examples keep the defaults otherwise.
    cJSON_AddItemToObject(c.get(), "retry",
                          cJSON_Parse(R"({"max_attempts":3,"backoff_base_ms":20,"backoff_cap_ms":100,"attempt_timeout_ms":2000})"));
    char* s = cJSON_PrintUnformatted(c.get());
    std::string out(s);
    cJSON_free(s);
    return out;
  }

  std::string db_path() {
    const std::string dir = ::testing::TempDir();
    return dir + (dir.back() == '/' ? "" : "/") + "readme_auth_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
  }

  Client client(const std::string& config) {
    std::remove(db_path().c_str());
    pay_client_options o;
    pay_client_options_init(&o, PAY_CLIENT_OPTIONS_VERSION);
    o.log_cb = [](int, const char* line, void* self) { static_cast<std::string*>(self)->append(line).append("\n"); };
    o.log_payload = &log_;
    pay_client* c = nullptr;
    EXPECT_EQ(pay_client_new(&c, config.c_str(), &o), PAY_OK) << pay_error_last()->message;
    return Client(c);
  }

  Result submit(pay_client* c, const std::string& order, const std::string& body) {
    pay_result* r = nullptr;
    EXPECT_EQ(pay_submit(&r, c, order.c_str(), body.data(), body.size(), nullptr), PAY_OK) << pay_error_last()->message;
    return Result(r);
  }
  Result query(pay_client* c, const std::string& order) {
    pay_result* r = nullptr;
    EXPECT_EQ(pay_query(&r, c, order.c_str()), PAY_OK) << pay_error_last()->message;
    return Result(r);
  }
  static std::string json_of(const pay_result* r) {
    const char* s = pay_result_json(r);
    return s ? s : "(no json)";
  }
  static std::string body_of(const pay_result* r) {
    size_t len = 0;
    const char* b = pay_result_body(r, &len);
    return b ? std::string(b, len) : "";
  }

  std::unique_ptr<payretry_sim::Server> sim_;
  std::string log_;
};

TEST_F(ReadmeAuth, the_paypal_example_pays_with_oauth2_tokens_and_renews_one_after_a_401) {
  start("paypal");
  setenv("PAYPAL_CLIENT_SECRET", "test-client-secret", 1);
  const Example ex = readme_example("paypal");
  Client c = client(adapt(ex.config, "oauth2", {{"client_id", "test-client-id"}}));
  ASSERT_TRUE(c);
  Result r = submit(c.get(), "order-1042", ex.body);
  ASSERT_TRUE(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << json_of(r.get());
  EXPECT_EQ(sim_->charges_for("order-1042"), 1);
  // The lookup by PayPal's order id carries a token too.
  Result q = query(c.get(), "order-1042");
  ASSERT_TRUE(q);
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << json_of(q.get());

  // PayPal forgets the token: the next create is answered 401, a new token
  // is fetched, and the request goes again, once, with the same key: the
  // 401 is attempt 1 (every request that left is an attempt), the re-send
  // attempt 2 (PayPal answers a known request id with its current state).
  sim_->revoke_oauth2_tokens();
  std::string body = ex.body;
  body.replace(body.find("order-1042"), 10, "order-1043");
  Result r2 = submit(c.get(), "order-1043", body);
  ASSERT_TRUE(r2);
  EXPECT_EQ(pay_result_outcome(r2.get()), PAY_OUTCOME_SUCCEEDED) << json_of(r2.get());
  EXPECT_EQ(pay_result_attempts(r2.get()), 2) << json_of(r2.get());
  EXPECT_EQ(sim_->charges_for("order-1043"), 1);
  EXPECT_NE(log_.find("credential_renewed"), std::string::npos) << log_;
  EXPECT_EQ(log_.find("test-client-secret"), std::string::npos) << "a secret reached the log";
}

TEST_F(ReadmeAuth, paypal_with_a_wrong_client_secret_sends_no_payment) {
  start("paypal");
  setenv("PAYPAL_CLIENT_SECRET", "not-the-secret", 1);
  const Example ex = readme_example("paypal");
  Client c = client(adapt(ex.config, "oauth2", {{"client_id", "test-client-id"}}));
  ASSERT_TRUE(c);
  Result r = submit(c.get(), "order-1042", ex.body);
  ASSERT_TRUE(r);
  // No token, so no byte of the payment left: UNKNOWN but not sent.
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << json_of(r.get());
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_NOT_SENT) << json_of(r.get());
  EXPECT_NE(json_of(r.get()).find("no_credentials"), std::string::npos) << json_of(r.get());
  EXPECT_EQ(sim_->charges_for("order-1042"), 0);
  EXPECT_EQ(log_.find("not-the-secret"), std::string::npos) << "a secret reached the log";
}

TEST_F(ReadmeAuth, the_wechatpay_example_signs_creates_and_lookups_and_verifies_answers) {
  start("wechatpay_v3");
  const Example ex = readme_example("wechatpay_v3");
  Client c = client(adapt(ex.config, "wechatpay",
                          {{"private_key_file", kKeys + "/wechat_merchant_key.pem"},
                           {"platform_public_key_file", kKeys + "/wechat_platform_pub.pem"}}));
  ASSERT_TRUE(c);
  Result r = submit(c.get(), "order1042", ex.body);
  ASSERT_TRUE(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << json_of(r.get());
  EXPECT_EQ(sim_->charges_for("order1042"), 1);
  Result q = query(c.get(), "order1042");
  ASSERT_TRUE(q);
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << json_of(q.get());
}

TEST_F(ReadmeAuth, a_wechatpay_answer_signed_by_another_key_is_unknown_never_a_payment) {
  start("wechatpay_v3");
  const Example ex = readme_example("wechatpay_v3");
  // The client trusts a platform key the answers were not signed with.
  Client c = client(adapt(ex.config, "wechatpay",
                          {{"private_key_file", kKeys + "/wechat_merchant_key.pem"},
                           {"platform_public_key_file", kKeys + "/alipay_pub.pem"}}));
  ASSERT_TRUE(c);
  Result r = submit(c.get(), "order1042", ex.body);
  ASSERT_TRUE(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << json_of(r.get());
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_MAYBE_PROCESSED) << json_of(r.get());
  EXPECT_NE(json_of(r.get()).find("answer_not_verified"), std::string::npos) << json_of(r.get());
  // The provider did charge: that is why the answer is UNKNOWN, not FAILED.
  EXPECT_EQ(sim_->charges_for("order1042"), 1);
  // Nor does a lookup settle it from an answer that fails verification.
  Result q = query(c.get(), "order1042");
  ASSERT_TRUE(q);
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_UNKNOWN) << json_of(q.get());
}

TEST_F(ReadmeAuth, the_alipay_example_sends_the_signed_gateway_form_and_verifies_answers) {
  start("alipay");
  const Example ex = readme_example("alipay");
  Client c = client(adapt(ex.config, "alipay",
                          {{"private_key_file", kKeys + "/alipay_app_key.pem"},
                           {"alipay_public_key_file", kKeys + "/alipay_pub.pem"}}));
  ASSERT_TRUE(c);
  Result r = submit(c.get(), "order1042", ex.body);
  ASSERT_TRUE(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << json_of(r.get());
  EXPECT_EQ(sim_->charges_for("order1042"), 1);
  Result q = query(c.get(), "order1042");
  ASSERT_TRUE(q);
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << json_of(q.get());
}

TEST_F(ReadmeAuth, alipay_signed_with_a_key_the_gateway_does_not_know_is_refused_and_charges_nothing) {
  start("alipay");
  const Example ex = readme_example("alipay");
  Client c = client(adapt(ex.config, "alipay",
                          {{"private_key_file", kKeys + "/wechat_merchant_key.pem"},
                           {"alipay_public_key_file", kKeys + "/alipay_pub.pem"}}));
  ASSERT_TRUE(c);
  Result r = submit(c.get(), "order1042", ex.body);
  ASSERT_TRUE(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED) << json_of(r.get());
  EXPECT_NE(body_of(r.get()).find("isv.invalid-signature"), std::string::npos) << json_of(r.get());
  EXPECT_EQ(sim_->charges_for("order1042"), 0);
}

}  // namespace
