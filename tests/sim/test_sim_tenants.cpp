// payretry-sim as a provider with many merchants and a slow token endpoint: --scope-header
// (a Stripe-Account-like header partitions keys, payments and lookups), several --api-key (one
// merchant account per key), oauth2_delay_ms (PayPal's token endpoint holds its requests on a
// timer while everything else is answered), and the 401 faults (charged, then a 401: 401_after
// keeps the key as the mode keeps any processed one, 401_after_forgetting forgets it). Every
// check is on a real loopback socket; the truth counts charges per order across every scope,
// which is how a client's double charge shows.
#include <dirent.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server.hpp"
#include "sim_auth.hpp"
#include "sim_client.hpp"

namespace {

using namespace simtest;
using payretry_sim::Server;
using Headers = std::vector<std::string>;

Response call(uint16_t port, const std::string& method, const std::string& target, const std::string& body = "",
              const Headers& headers = {}, int timeout_ms = 5000) {
  Conn c(port);
  if (!c.ok()) {
    Response r;
    r.error = c.connect_error();
    return r;
  }
  return c.request(method, target, body, headers, timeout_ms);
}

std::string payment(const std::string& order, long amount = 1000) {
  return R"({"order_id":")" + order + R"(","amount":)" + std::to_string(amount) + R"(,"currency":"eur"})";
}

long ms_since(Clock::time_point t) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count());
}

// Open descriptors of this process (the simulator runs in it).
int open_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

class Tenants : public ::testing::Test {
 protected:
  void start(Options o) {
    sim_ = std::make_unique<Server>(o);
    port_ = sim_->port();
  }
  void TearDown() override {
    if (sim_) sim_->stop();
  }
  double stat(const char* name) { return Json(get(port_, "/__admin/stats").body).num(name); }
  std::unique_ptr<Server> sim_;
  uint16_t port_ = 0;
};

// ---- --scope-header ---------------------------------------------------------------------------

TEST_F(Tenants, scope_header_partitions_keys_payments_and_lookups_and_the_truth_counts_across_them) {
  Options o = fast_options();
  o.scope_header = "Stripe-Account";
  start(o);
  const Headers a{"Idempotency-Key: k1", "Stripe-Account: acct_A"};
  const Headers b{"Idempotency-Key: k1", "Stripe-Account: acct_B"};
  Response in_a = call(port_, "POST", "/v1/payments", payment("o1"), a);
  ASSERT_EQ(in_a.status, 200) << in_a.body;
  // The same key in the same scope is a replay...
  Response replay = call(port_, "POST", "/v1/payments", payment("o1"), a);
  EXPECT_EQ(replay.header("idempotent-replayed"), "true");
  EXPECT_EQ(replay.body, in_a.body);
  // ...in another scope, and in the default one (no header), a key the account never saw.
  Response in_b = call(port_, "POST", "/v1/payments", payment("o1"), b);
  ASSERT_EQ(in_b.status, 200) << in_b.body;
  EXPECT_EQ(in_b.header("idempotent-replayed"), "");
  EXPECT_NE(Json(in_b.body).str("id"), Json(in_a.body).str("id"));
  Response in_default = call(port_, "POST", "/v1/payments", payment("o1"), {"Idempotency-Key: k1"});
  ASSERT_EQ(in_default.status, 200);
  EXPECT_EQ(in_default.header("idempotent-replayed"), "");
  // An empty value is the default scope too.
  EXPECT_EQ(call(port_, "POST", "/v1/payments", payment("o1"), {"Idempotency-Key: k1", "Stripe-Account: "})
                .header("idempotent-replayed"),
            "true");
  // Another body under the same key is refused within a scope only.
  EXPECT_EQ(call(port_, "POST", "/v1/payments", payment("o1", 7), a).status, 422);

  // The truth counts the order's charges across every scope: that is the double charge.
  EXPECT_EQ(sim_->charges_for("o1"), 3);
  EXPECT_EQ(sim_->duplicate_orders(), 1);

  // A lookup sees its own scope only, by order and by id.
  const std::string id_a = Json(in_a.body).str("id");
  Json list_a(call(port_, "GET", "/v1/payments?order_id=o1", "", {"Stripe-Account: acct_A"}).body);
  EXPECT_EQ(list_a.num("total_count"), 1);
  EXPECT_EQ(call(port_, "GET", "/v1/payments/" + id_a, "", {"Stripe-Account: acct_A"}).status, 200);
  EXPECT_EQ(call(port_, "GET", "/v1/payments/" + id_a, "", {"Stripe-Account: acct_B"}).status, 404);
  EXPECT_EQ(call(port_, "GET", "/v1/payments/" + id_a).status, 404);
  EXPECT_EQ(call(port_, "GET", "/v1/payments?order_id=o1", "", {"Stripe-Account: acct_C"}).body,
            R"({"object":"list","total_count":0,"data":[]})");
  Json cfg(get(port_, "/__admin/config").body);
  EXPECT_EQ(cfg.str("scope_header"), "Stripe-Account");
}

TEST_F(Tenants, scope_header_scopes_a_lookup_by_reference_and_a_reference_identity) {
  Options o = fast_options();
  o.profile = "checkout_com";
  o.scope_header = "X-Tenant";
  start(o);
  // Checkout.com: a 500 after the charge in tenant t1; the lookup by reference finds it there
  // and nowhere else.
  sim_->script("c1", {"500"});
  const Headers t1{"Cko-Idempotency-Key: kc1", "X-Tenant: t1"};
  ASSERT_EQ(call(port_, "POST", "/payments", payment("c1"), t1).status, 500);
  EXPECT_EQ(sim_->charges_for("c1"), 1);
  EXPECT_EQ(Json(call(port_, "GET", "/payments?reference=c1", "", {"X-Tenant: t1"}).body).num("total_count"), 1);
  EXPECT_EQ(Json(call(port_, "GET", "/payments?reference=c1").body).num("total_count"), 0);
  EXPECT_EQ(Json(call(port_, "GET", "/payments?reference=c1", "", {"X-Tenant: t2"}).body).num("total_count"), 0);

  // WeChat Pay: out_trade_no is the identity, per scope; its lookup is scoped too.
  sim_->stop();
  o.profile = "wechatpay_v3";
  start(o);
  const std::string body = R"({"out_trade_no":"wx_t1","amount":{"total":100,"currency":"CNY"}})";
  const std::string auth = "Authorization: WECHATPAY2-SHA256-RSA2048 mchid=\"1\",nonce_str=\"n\",signature=\"c2ln\","
                           "timestamp=\"1700000000\",serial_no=\"s\"";
  ASSERT_EQ(call(port_, "POST", "/v3/pay/transactions/jsapi", body, {auth, "X-Tenant: t1"}).status, 200);
  Response paid = call(port_, "POST", "/v3/pay/transactions/jsapi", body, {auth, "X-Tenant: t1"});
  EXPECT_NE(paid.body.find("ORDERPAID"), std::string::npos) << paid.body;
  EXPECT_EQ(call(port_, "POST", "/v3/pay/transactions/jsapi", body, {auth, "X-Tenant: t2"}).status, 200);
  EXPECT_EQ(sim_->charges_for("wx_t1"), 2);
  const std::string lookup = "/v3/pay/transactions/out-trade-no/wx_t1?mchid=1";
  Response found = call(port_, "GET", lookup, "", {auth, "X-Tenant: t1"});
  EXPECT_EQ(found.status, 200);
  // The answer names its trade and its merchant, so that a client can tell it is this lookup's.
  EXPECT_EQ(Json(found.body).str("out_trade_no"), "wx_t1") << found.body;
  EXPECT_EQ(Json(found.body).str("mchid"), "1") << found.body;
  EXPECT_EQ(Json(found.body).str("trade_state"), "SUCCESS") << found.body;
  Response none = call(port_, "GET", lookup, "", {auth});
  EXPECT_EQ(none.status, 404);
  EXPECT_NE(none.body.find("ORDER_NOT_EXIST"), std::string::npos) << none.body;
}

// ---- several --api-key: one merchant account each ---------------------------------------------

TEST_F(Tenants, each_api_key_is_its_own_merchant_account) {
  Options o = fast_options();
  o.api_key = "sk_tenant_a";
  o.api_keys = {"sk_tenant_b"};
  start(o);
  const Headers a{"Authorization: Bearer sk_tenant_a", "Idempotency-Key: k1"};
  const Headers b{"Authorization: Bearer sk_tenant_b", "Idempotency-Key: k1"};
  Response in_a = call(port_, "POST", "/v1/payments", payment("o1"), a);
  ASSERT_EQ(in_a.status, 200) << in_a.body;
  EXPECT_EQ(call(port_, "POST", "/v1/payments", payment("o1"), a).header("idempotent-replayed"), "true");
  // Tenant B's account has never seen k1: a second charge for the same order.
  Response in_b = call(port_, "POST", "/v1/payments", payment("o1"), b);
  ASSERT_EQ(in_b.status, 200);
  EXPECT_EQ(in_b.header("idempotent-replayed"), "");
  EXPECT_EQ(sim_->charges_for("o1"), 2);
  EXPECT_EQ(sim_->duplicate_orders(), 1);
  // Lookups see their own account's payments.
  const std::string id_a = Json(in_a.body).str("id");
  EXPECT_EQ(call(port_, "GET", "/v1/payments/" + id_a, "", {"Authorization: Bearer sk_tenant_a"}).status, 200);
  EXPECT_EQ(call(port_, "GET", "/v1/payments/" + id_a, "", {"Authorization: Bearer sk_tenant_b"}).status, 404);
  Json list_b(call(port_, "GET", "/v1/payments?order_id=o1", "", {"Authorization: Bearer sk_tenant_b"}).body);
  EXPECT_EQ(list_b.num("total_count"), 1);
  // Any other key is refused, as with one key.
  EXPECT_EQ(call(port_, "POST", "/v1/payments", payment("o2"), {"Authorization: Bearer sk_other"}).status, 401);
  EXPECT_EQ(call(port_, "GET", "/v1/payments?order_id=o1").status, 401);
  Json cfg(get(port_, "/__admin/config").body);
  EXPECT_EQ(cfg.num("accounts"), 2);

  // With a scope header as well, each account has its scopes.
  sim_->stop();
  o.scope_header = "Stripe-Account";
  start(o);
  ASSERT_EQ(call(port_, "POST", "/v1/payments", payment("o3"), {a[0], a[1], "Stripe-Account: acct_1"}).status, 200);
  EXPECT_EQ(call(port_, "POST", "/v1/payments", payment("o3"), {a[0], a[1], "Stripe-Account: acct_1"})
                .header("idempotent-replayed"),
            "true");
  EXPECT_EQ(call(port_, "POST", "/v1/payments", payment("o3"), {b[0], b[1], "Stripe-Account: acct_1"})
                .header("idempotent-replayed"),
            "");
  EXPECT_EQ(sim_->charges_for("o3"), 2);
}

TEST_F(Tenants, one_api_key_is_one_account_as_before) {
  Options o = fast_options();
  o.api_key = "sk_only";
  o.api_keys = {"sk_only"};  // the same key twice is still one account
  start(o);
  const Headers h{"Authorization: Bearer sk_only", "Idempotency-Key: k1"};
  ASSERT_EQ(call(port_, "POST", "/v1/payments", payment("o1"), h).status, 200);
  EXPECT_EQ(call(port_, "POST", "/v1/payments", payment("o1"), h).header("idempotent-replayed"), "true");
  EXPECT_EQ(sim_->charges_for("o1"), 1);
  EXPECT_EQ(Json(get(port_, "/__admin/config").body).num("accounts"), 1);
}

// ---- PayPal's token endpoint, slow or hanging -------------------------------------------------

TEST_F(Tenants, oauth2_delay_holds_token_requests_and_nothing_else) {
  Options o = fast_options();
  o.profile = "paypal";
  start(o);
  const std::string token = paypal_token(port_);
  ASSERT_FALSE(token.empty());
  Response bad = admin_post(port_, "/__admin/config", R"({"oauth2_delay_ms":-2})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("oauth2_delay_ms"), std::string::npos) << bad.body;
  Response set = admin_post(port_, "/__admin/config", R"({"oauth2_delay_ms":400})");
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(Json(set.body).num("oauth2_delay_ms"), 400);

  // A token request waits 400 ms; meanwhile the same worker answers everything else at once.
  const auto asked = Clock::now();
  Conn slow(port_);
  ASSERT_TRUE(slow.send_raw(Conn::format("POST", "/v1/oauth2/token", "grant_type=client_credentials",
                                         {basic_authorization("test-client-id", "test-client-secret"),
                                          "Content-Type: application/x-www-form-urlencoded"})));
  const auto create_at = Clock::now();
  Response created = call(port_, "POST", "/v2/checkout/orders", payment("p1"),
                          {bearer(token), "PayPal-Request-Id: r1"});
  EXPECT_EQ(created.status, 201) << created.body;
  EXPECT_LT(ms_since(create_at), 200);
  EXPECT_EQ(get(port_, "/__admin/health").status, 200);
  Response t = slow.read();
  EXPECT_GE(ms_since(asked), 390);
  ASSERT_EQ(t.status, 200) << t.body;
  const std::string late = Json(t.body).str("access_token");
  EXPECT_FALSE(late.empty());
  // The token is issued when it is answered, and works.
  EXPECT_EQ(call(port_, "GET", "/v2/checkout/orders/" + Json(created.body).str("id"), "", {bearer(late)}).status, 200);
  EXPECT_EQ(stat("oauth2_token_requests_held"), 1);
}

TEST_F(Tenants, oauth2_delay_minus_one_never_answers_and_a_client_that_gives_up_leaves_nothing) {
  Options o = fast_options();
  o.profile = "paypal";
  o.oauth2_delay_ms = -1;
  start(o);
  EXPECT_EQ(Json(get(port_, "/__admin/config").body).num("oauth2_delay_ms"), -1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the admin call's connection closed
  const int before = open_fds();
  {
    Conn hung(port_);
    Response t = hung.request("POST", "/v1/oauth2/token", "grant_type=client_credentials",
                              {basic_authorization("test-client-id", "test-client-secret"),
                               "Content-Type: application/x-www-form-urlencoded"},
                              700);
    EXPECT_TRUE(t.timeout) << t.status << " " << t.body;
    EXPECT_EQ(get(port_, "/__admin/health").status, 200);  // the worker is free meanwhile
    EXPECT_EQ(stat("oauth2_token_requests_held"), 1);
    EXPECT_EQ(stat("oauth2_tokens_issued"), 0);
  }
  // The client closed: the simulator closes its side too (no descriptor is kept).
  const auto closed = Clock::now();
  while (open_fds() > before && ms_since(closed) < 2000) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_LE(open_fds(), before);
  EXPECT_EQ(stat("oauth2_tokens_issued"), 0);
  // Back to 0: tokens at once.
  sim_->set_oauth2_delay_ms(0);
  const auto asked = Clock::now();
  EXPECT_FALSE(paypal_token(port_).empty());
  EXPECT_LT(ms_since(asked), 200);
  EXPECT_THROW(sim_->set_oauth2_delay_ms(-5), std::invalid_argument);
}

// ---- 401_after and 401_after_forgetting --------------------------------------------------------

// 401_after: the answer is refused after the charge (a token noticed late), and the provider keeps
// the key as it keeps any processed one. PayPal documents that a same-request-id re-send returns
// the current state of the earlier request: the renewed re-send gets the payment, not a second one.
TEST_F(Tenants, fault_401_after_charges_answers_401_and_paypal_replays_the_current_state) {
  Options o = fast_options();
  o.profile = "paypal";
  start(o);
  const std::string token = paypal_token(port_);
  const Headers h{bearer(token), "PayPal-Request-Id: r1"};
  sim_->script("p401", {"401_after"});
  Response refused = call(port_, "POST", "/v2/checkout/orders", payment("p401"), h);
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.body, R"({"error":"invalid_token","error_description":"Token signature verification failed"})");
  EXPECT_EQ(sim_->charges_for("p401"), 1);  // processed all the same
  Response again = call(port_, "POST", "/v2/checkout/orders", payment("p401"), h);
  EXPECT_EQ(again.status, 200) << again.body;  // the current state of the earlier request
  EXPECT_EQ(Json(again.body).str("id").rfind("ORD", 0), 0u) << again.body;
  EXPECT_EQ(sim_->charges_for("p401"), 1);
  Json s(get(port_, "/__admin/stats").body);
  EXPECT_EQ(s.num("faults.401_after"), 1);
  EXPECT_EQ(s.num("faults.401_after_forgetting"), 0);
  EXPECT_EQ(s.num("replays"), 1);
  EXPECT_EQ(s.num("auth_refused"), 0);  // the token was good: this is no authentication refusal

  // On a key already done, 401_after only spoils the answer.
  sim_->script("p401", {"401_after"});
  EXPECT_EQ(call(port_, "POST", "/v2/checkout/orders", payment("p401"), h).status, 401);
  EXPECT_EQ(call(port_, "POST", "/v2/checkout/orders", payment("p401"), h).status, 200);
  EXPECT_EQ(sim_->charges_for("p401"), 1);
}

// 401_after in the other modes: their own 401, and then their own replay of a processed key.
TEST_F(Tenants, fault_401_after_answers_each_modes_own_refusal_then_its_own_replay) {
  Options o = fast_options();
  start(o);
  // Stripe: the stored answer, marked as a replay.
  sim_->script("s401", {"401_after"});
  Response r = call(port_, "POST", "/v1/payments", payment("s401"), {"Idempotency-Key: ks"});
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(Json(r.body).str("error.type"), "authentication_error");
  EXPECT_EQ(sim_->charges_for("s401"), 1);
  Response again = call(port_, "POST", "/v1/payments", payment("s401"), {"Idempotency-Key: ks"});
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.header("idempotent-replayed"), "true");
  EXPECT_EQ(sim_->charges_for("s401"), 1);
  // By key too.
  sim_->script_key("ks2", {"401_after"});
  EXPECT_EQ(call(port_, "POST", "/v1/payments", payment("s402"), {"Idempotency-Key: ks2"}).status, 401);
  EXPECT_EQ(call(port_, "POST", "/v1/payments", payment("s402"), {"Idempotency-Key: ks2"}).status, 200);
  EXPECT_EQ(sim_->charges_for("s402"), 1);

  // Checkout.com caches only 2xx answers; the provider's own answer was one, so it is kept.
  sim_->set_profile("checkout_com");
  sim_->script("c401", {"401_after"});
  const Headers cko{"Cko-Idempotency-Key: kc"};
  EXPECT_EQ(call(port_, "POST", "/v1/payments", payment("c401"), cko).status, 401);
  Response cached = call(port_, "POST", "/v1/payments", payment("c401"), cko);
  EXPECT_EQ(cached.status / 100, 2) << cached.body;
  EXPECT_EQ(sim_->charges_for("c401"), 1);

  // WeChat Pay: the out_trade_no is the key; a paid one answers ORDERPAID.
  sim_->set_profile("wechatpay_v3");
  const std::string wx = R"({"appid":"wxd678efh567hg6787","mchid":"1230000109","description":"t",)"
                         R"("out_trade_no":"wx401","amount":{"total":100,"currency":"CNY"}})";
  const char create[] = "/v3/pay/transactions/native";
  sim_->script("wx401", {"401_after"});
  Response wr = call(port_, "POST", create, wx, {wechat_authorization("POST", create, wx)});
  EXPECT_EQ(wr.status, 401);
  EXPECT_EQ(Json(wr.body).str("code"), "SIGN_ERROR") << wr.body;
  Response paid = call(port_, "POST", create, wx, {wechat_authorization("POST", create, wx)});
  EXPECT_EQ(Json(paid.body).str("code"), "ORDERPAID") << paid.body;
  EXPECT_EQ(sim_->charges_for("wx401"), 1);
}

// 401_after_forgetting: a gateway in front of the idempotency store refused the answer after the
// charge and left no record of the key, breaking the provider's promise; what a client must
// assume of a provider that promises no replay. A same-key re-send runs the payment again.
TEST_F(Tenants, fault_401_after_forgetting_charges_answers_401_and_keeps_no_record_of_the_key) {
  Options o = fast_options();
  o.profile = "paypal";
  start(o);
  const std::string token = paypal_token(port_);
  const Headers h{bearer(token), "PayPal-Request-Id: r2"};
  sim_->script("pf401", {"401_after_forgetting"});
  Response refused = call(port_, "POST", "/v2/checkout/orders", payment("pf401"), h);
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.body, R"({"error":"invalid_token","error_description":"Token signature verification failed"})");
  EXPECT_EQ(sim_->charges_for("pf401"), 1);
  Response again = call(port_, "POST", "/v2/checkout/orders", payment("pf401"), h);
  EXPECT_EQ(again.status, 201) << again.body;  // a new order: no record of the request id
  EXPECT_EQ(sim_->charges_for("pf401"), 2);
  // From here the key is known: a current-state replay.
  EXPECT_EQ(call(port_, "POST", "/v2/checkout/orders", payment("pf401"), h).status, 200);
  EXPECT_EQ(sim_->charges_for("pf401"), 2);
  Json s(get(port_, "/__admin/stats").body);
  EXPECT_EQ(s.num("faults.401_after_forgetting"), 1);
  EXPECT_EQ(s.num("faults.401_after"), 0);
  EXPECT_EQ(s.num("auth_refused"), 0);

  // On a key already done, it only spoils the answer: the key keeps its record.
  sim_->script("pf401", {"401_after_forgetting"});
  EXPECT_EQ(call(port_, "POST", "/v2/checkout/orders", payment("pf401"), h).status, 401);
  EXPECT_EQ(call(port_, "POST", "/v2/checkout/orders", payment("pf401"), h).status, 200);
  EXPECT_EQ(sim_->charges_for("pf401"), 2);
}

TEST_F(Tenants, fault_401_after_forgetting_in_a_stored_answer_mode_lets_a_same_key_resend_charge_again) {
  Options o = fast_options();
  start(o);
  sim_->script_key("ks3", {"401_after_forgetting"});
  Response r = call(port_, "POST", "/v1/payments", payment("s403"), {"Idempotency-Key: ks3"});
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(Json(r.body).str("error.type"), "authentication_error");
  Response again = call(port_, "POST", "/v1/payments", payment("s403"), {"Idempotency-Key: ks3"});
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.header("idempotent-replayed"), "");
  EXPECT_EQ(sim_->charges_for("s403"), 2);
  // A seeded mix deals it like any other fault.
  ASSERT_EQ(admin_post(port_, "/__admin/config", R"({"faults":{"401_after_forgetting":1.0}})").status, 200);
  EXPECT_EQ(call(port_, "POST", "/v1/payments", payment("s404"), {"Idempotency-Key: ks4"}).status, 401);
  EXPECT_EQ(call(port_, "POST", "/v1/payments", payment("s404"), {"Idempotency-Key: ks4"}).status, 401);
  EXPECT_EQ(sim_->charges_for("s404"), 2);
}

// ---- PayPal: a decline after a 503 ------------------------------------------------------------

TEST_F(Tenants, paypal_decline_after_a_503_is_the_orders_current_state_from_then_on) {
  Options o = fast_options();
  o.profile = "paypal";
  start(o);
  const Headers h{bearer(paypal_token(port_)), "PayPal-Request-Id: r6"};
  sim_->script("o6", {"503", "decline"});
  Response unavailable = call(port_, "POST", "/v2/checkout/orders", payment("o6"), h);
  EXPECT_EQ(unavailable.status, 503);
  Response declined = call(port_, "POST", "/v2/checkout/orders", payment("o6"), h);
  EXPECT_EQ(declined.status, 422);
  EXPECT_NE(declined.body.find("INSTRUMENT_DECLINED"), std::string::npos) << declined.body;
  // Every same-key re-send gets the decline again, and nothing is charged.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(call(port_, "POST", "/v2/checkout/orders", payment("o6"), h).body, declined.body);
  EXPECT_EQ(sim_->charges_for("o6"), 0);
  EXPECT_EQ(sim_->requests(), 5);
}

// ---- options ------------------------------------------------------------------------------------

TEST(TenantOptions, bad_values_are_refused_at_start) {
  Options o = fast_options();
  o.scope_header = "Bad Header";
  EXPECT_THROW(Server s(o), std::invalid_argument);
  o = fast_options();
  o.api_keys = {""};
  EXPECT_THROW(Server s(o), std::invalid_argument);
  o = fast_options();
  o.oauth2_delay_ms = -2;
  EXPECT_THROW(Server s(o), std::invalid_argument);
}

}  // namespace
