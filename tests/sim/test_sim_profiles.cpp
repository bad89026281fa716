// payretry-sim's provider profiles: for each provider, where the identity comes from, what a
// repeated request gets (stored response, current state, or an error code), the mismatch and
// in-flight shapes, the lookup endpoints, and that the truth still counts every charge.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "profiles.hpp"
#include "server.hpp"
#include "sim_auth.hpp"
#include "sim_client.hpp"

namespace {

using namespace simtest;
using payretry_sim::Server;
using Headers = std::vector<std::string>;

Response call(uint16_t port, const std::string& method, const std::string& path,
              const std::string& body = "", const Headers& headers = {}) {
  Conn c(port);
  if (!c.ok()) {
    Response r;
    r.error = c.connect_error();
    return r;
  }
  return c.request(method, path, body, headers);
}

std::string plain(const std::string& order, long amount = 1000) {
  return R"({"order_id":")" + order + R"(","amount":)" + std::to_string(amount) + R"(,"currency":"eur"})";
}

// A request sent now whose answer is read later (for `slow`).
class Pending {
 public:
  Pending(uint16_t port, const std::string& method, const std::string& path, const std::string& body,
          const Headers& headers)
      : conn_(port) {
    sent_ = conn_.send_raw(Conn::format(method, path, body, headers));
    std::this_thread::sleep_for(std::chrono::milliseconds(60));  // let the server hold it
  }
  Response read() { return sent_ ? conn_.read() : Response{}; }

 private:
  Conn conn_;
  bool sent_ = false;
};

class Profiles : public ::testing::Test {
 protected:
  // The signing modes run with the test keys: requests verified, answers signed. PayPal's
  // token is fetched once, as a client would.
  void start(const std::string& profile) {
    Options o = fast_options();
    o.profile = profile;
    o.keys_dir = PAYRETRY_TEST_KEYS_DIR;
    sim_ = std::make_unique<Server>(o);
    port_ = sim_->port();
    token_ = profile == "paypal" ? paypal_token(port_) : "";
  }
  // PayPal's headers: the bearer token and, when given, the PayPal-Request-Id.
  Headers pp(const std::string& request_id = "") const {
    Headers h{bearer(token_)};
    if (!request_id.empty()) h.push_back("PayPal-Request-Id: " + request_id);
    return h;
  }
  void TearDown() override {
    if (sim_) sim_->stop();
  }
  std::unique_ptr<Server> sim_;
  uint16_t port_ = 0;
  std::string token_;
};

// ---- ids ----------------------------------------------------------------------------------------

// Each mode writes its provider's id shape, and a lookup takes back exactly what it wrote.
TEST(IdShapes, each_profile_writes_its_providers_ids_and_parses_only_those) {
  using payretry_sim::find_profile;
  using payretry_sim::format_id;
  using payretry_sim::parse_id;
  const std::vector<std::pair<std::string, std::string>> first = {
      {"stripe", "pi_1"},           {"checkout_com", "pay_1"},
      {"paypal", "ORD00000000000001"}, {"square", "pay_1"},
      {"wechatpay_v3", "4200000000000000000000000001"}, {"adyen", "PSP0000000000001"},
      {"mollie", "tr_1"},           {"alipay", "2024000000000000000000000001"}};
  for (const auto& [name, id1] : first) {
    const payretry_sim::Profile* p = find_profile(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(format_id(p->payment_id, 1), id1) << name;
    const std::string prefix(p->payment_id.prefix);
    for (uint64_t n : {uint64_t{1}, uint64_t{7}, uint64_t{42}, uint64_t{999999}, uint64_t{100000000000000},
                       UINT64_MAX}) {
      const std::string id = format_id(p->payment_id, n);
      uint64_t back = 0;
      EXPECT_TRUE(parse_id(p->payment_id, id, &back)) << name << " " << id;
      EXPECT_EQ(back, n) << name << " " << id;
      const std::string digits = id.substr(prefix.size());
      for (const std::string& bad : {prefix + "0" + digits, prefix + "+" + digits, prefix + "-" + digits,
                                     id + "x", id + " ", " " + id, "x" + id}) {
        EXPECT_FALSE(parse_id(p->payment_id, bad, &back)) << name << " " << bad;
      }
      // Padded shapes: the bare number is not the id.
      if (std::to_string(n) != digits) {
        EXPECT_FALSE(parse_id(p->payment_id, prefix + std::to_string(n), &back)) << name << " " << n;
      }
    }
    uint64_t n = 0;
    for (const std::string& bad : {std::string(), prefix, prefix + "0", format_id(p->payment_id, 0),
                                   prefix + "18446744073709551616"}) {
      EXPECT_FALSE(parse_id(p->payment_id, bad, &n)) << name << " " << bad;
    }
  }
  // Stripe tells a PaymentIntent (pi_) from its charge (latest_charge, ch_).
  EXPECT_EQ(format_id(find_profile("stripe")->charge_id, 5), "ch_5");
  // A padded shape takes only the padded text; a number that outgrew the width has no zeros in front.
  uint64_t n = 0;
  EXPECT_FALSE(parse_id(find_profile("paypal")->payment_id, "ORD1", &n));
  EXPECT_TRUE(parse_id(find_profile("paypal")->payment_id, "ORD100000000000000", &n));
  EXPECT_EQ(n, 100000000000000u);
  EXPECT_FALSE(parse_id(find_profile("paypal")->payment_id, "ORD010000000000000", &n));
}

// ---- selection ----------------------------------------------------------------------------------

TEST(ProfileSelection, names_unknown_names_and_admin_config) {
  EXPECT_EQ(payretry_sim::profiles(),
            (std::vector<std::string>{"stripe", "checkout_com", "paypal", "square", "wechatpay_v3",
                                      "adyen", "mollie", "alipay"}));
  Options bad = fast_options();
  bad.profile = "visa";
  EXPECT_THROW(Server s(bad), std::invalid_argument);

  Server sim(fast_options());
  Json cfg(get(sim.port(), "/__admin/config").body);
  EXPECT_EQ(cfg.str("profile"), "stripe");
  EXPECT_EQ(cfg.str("key_header"), "Idempotency-Key");

  Response rejected = admin_post(sim.port(), "/__admin/config", R"({"profile":"visa"})");
  EXPECT_EQ(rejected.status, 400);
  EXPECT_NE(Json(rejected.body).str("error.message").find("profile"), std::string::npos);
  EXPECT_EQ(admin_post(sim.port(), "/__admin/config", R"({"profile":7})").status, 400);

  Response ok = admin_post(sim.port(), "/__admin/config", R"({"profile":"checkout_com"})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(Json(ok.body).str("profile"), "checkout_com");
  EXPECT_EQ(Json(ok.body).str("key_header"), "Cko-Idempotency-Key");  // follows the profile
  Response created = call(sim.port(), "POST", "/payments", plain("sw"), {"Cko-Idempotency-Key: ksw"});
  EXPECT_EQ(created.status, 201);
  EXPECT_EQ(Json(created.body).str("status"), "Captured");

  sim.set_profile("stripe");
  EXPECT_EQ(call(sim.port(), "POST", "/v1/payments", plain("sw2"), {"Idempotency-Key: ksw2"}).status, 200);
  EXPECT_THROW(sim.set_profile("visa"), std::invalid_argument);
  sim.stop();
}

TEST(ProfileSelection, an_explicit_key_header_overrides_the_profiles) {
  Options o = fast_options();
  o.profile = "checkout_com";
  o.key_header = "X-Key";
  Server sim(o);
  ASSERT_EQ(call(sim.port(), "POST", "/payments", plain("xk"), {"X-Key: a"}).status, 201);
  ASSERT_EQ(call(sim.port(), "POST", "/payments", plain("xk"), {"X-Key: a"}).status, 201);
  EXPECT_EQ(sim.charges_for("xk"), 1);
  ASSERT_EQ(call(sim.port(), "POST", "/payments", plain("xk"), {"Cko-Idempotency-Key: a"}).status, 201);
  EXPECT_EQ(sim.charges_for("xk"), 2);  // not the key header here: a new payment
  sim.stop();
}

// ---- Checkout.com -------------------------------------------------------------------------------

TEST_F(Profiles, checkout_identity_is_cko_idempotency_key_and_2xx_replays_are_stored) {
  start("checkout_com");
  Response first = call(port_, "POST", "/payments", plain("c1"), {"Cko-Idempotency-Key: kc1"});
  ASSERT_EQ(first.status, 201) << first.body;
  Json j(first.body);
  EXPECT_EQ(j.str("id").rfind("pay_", 0), 0u);
  EXPECT_EQ(j.str("status"), "Captured");
  EXPECT_TRUE(cJSON_IsTrue(j.at("approved")));
  EXPECT_EQ(j.str("reference"), "c1");
  EXPECT_EQ(j.num("amount"), 1000);

  Response again = call(port_, "POST", "/payments", plain("c1"), {"cko-idempotency-key: kc1"});
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.header("idempotent-replayed"), "");  // no marker documented
  EXPECT_EQ(sim_->charges_for("c1"), 1);

  // Stripe's header means nothing here: every such request is a new payment.
  call(port_, "POST", "/payments", plain("c2"), {"Idempotency-Key: kc2"});
  call(port_, "POST", "/payments", plain("c2"), {"Idempotency-Key: kc2"});
  EXPECT_EQ(sim_->charges_for("c2"), 2);

  // The generic create path is an alias.
  EXPECT_EQ(call(port_, "POST", "/v1/payments", plain("c1"), {"Cko-Idempotency-Key: kc1"}).body, first.body);
}

TEST_F(Profiles, checkout_500_charges_without_caching_so_a_blind_same_key_retry_charges_twice) {
  start("checkout_com");
  sim_->script("c5", {"500"});
  Response r = call(port_, "POST", "/payments", plain("c5"), {"Cko-Idempotency-Key: kc5"});
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(Json(r.body).str("error_type"), "internal_server_error");
  EXPECT_EQ(sim_->charges_for("c5"), 1);

  // The lookup by reference tells the truth: query first, and there is nothing to re-send.
  Json found(call(port_, "GET", "/payments?reference=c5").body);
  ASSERT_EQ(cJSON_GetArraySize(found.at("data")), 1);

  Response retry = call(port_, "POST", "/payments", plain("c5"), {"Cko-Idempotency-Key: kc5"});
  EXPECT_EQ(retry.status, 201);
  EXPECT_NE(Json(retry.body).str("id"), "");
  EXPECT_EQ(sim_->charges_for("c5"), 2);
  EXPECT_EQ(sim_->duplicate_orders(), 1);
  Json truth(get(port_, "/__admin/truth").body);
  EXPECT_EQ(truth.num("duplicates"), 1);
  EXPECT_EQ(truth.num("by_order.c5"), 2);

  // The retry's 201 is cached: a third request replays it.
  Response third = call(port_, "POST", "/payments", plain("c5"), {"Cko-Idempotency-Key: kc5"});
  EXPECT_EQ(third.body, retry.body);
  EXPECT_EQ(sim_->charges_for("c5"), 2);
}

TEST_F(Profiles, checkout_other_errors_store_nothing_and_declines_are_cached_201s) {
  start("checkout_com");
  sim_->script("c6", {"503"});
  EXPECT_EQ(call(port_, "POST", "/payments", plain("c6"), {"Cko-Idempotency-Key: kc6"}).status, 503);
  // A 4xx stores nothing either: a body the provider rejects leaves the key free.
  Response invalid = call(port_, "POST", "/payments", R"({"amount":5})", {"Cko-Idempotency-Key: kc6"});
  EXPECT_EQ(invalid.status, 422);
  EXPECT_EQ(Json(invalid.body).str("error_type"), "request_invalid");
  EXPECT_EQ(call(port_, "POST", "/payments", plain("c6"), {"Cko-Idempotency-Key: kc6"}).status, 201);
  EXPECT_EQ(sim_->charges_for("c6"), 1);

  sim_->script("cd", {"decline"});
  Response declined = call(port_, "POST", "/payments", plain("cd"), {"Cko-Idempotency-Key: kcd"});
  EXPECT_EQ(declined.status, 201);
  Json d(declined.body);
  EXPECT_EQ(d.str("status"), "Declined");
  EXPECT_TRUE(cJSON_IsFalse(d.at("approved")));
  EXPECT_EQ(d.str("response_code"), "20051");
  Response replay = call(port_, "POST", "/payments", plain("cd"), {"Cko-Idempotency-Key: kcd"});
  EXPECT_EQ(replay.body, declined.body);
  EXPECT_EQ(sim_->charges_for("cd"), 0);
  // Declines are not charges: the lookup does not list them.
  EXPECT_EQ(cJSON_GetArraySize(Json(call(port_, "GET", "/payments?reference=cd").body).at("data")), 0);
}

TEST_F(Profiles, checkout_mismatch_in_flight_and_lookups) {
  start("checkout_com");
  Response created = call(port_, "POST", "/payments", plain("cm", 1000), {"Cko-Idempotency-Key: kcm"});
  Response other = call(port_, "POST", "/payments", plain("cm", 2000), {"Cko-Idempotency-Key: kcm"});
  EXPECT_EQ(other.status, 422);
  EXPECT_EQ(Json(other.body).str("error_type"), "request_invalid");
  EXPECT_NE(other.body.find("idempotency_key_reused"), std::string::npos);

  sim_->script("cs", {"slow"});
  Pending held(port_, "POST", "/payments", plain("cs"), {"Cko-Idempotency-Key: kcs"});
  Response busy = call(port_, "POST", "/payments", plain("cs"), {"Cko-Idempotency-Key: kcs"});
  EXPECT_EQ(busy.status, 409);
  EXPECT_EQ(Json(busy.body).str("error_type"), "conflict");
  EXPECT_EQ(held.read().status, 201);
  EXPECT_EQ(sim_->charges_for("cs"), 1);

  const std::string id = Json(created.body).str("id");
  Response byid = call(port_, "GET", "/payments/" + id);
  EXPECT_EQ(byid.status, 200);
  EXPECT_EQ(byid.body, created.body);
  EXPECT_EQ(call(port_, "GET", "/payments/pay_999999").status, 404);
  Response list = call(port_, "GET", "/payments?reference=cm");
  EXPECT_EQ(list.status, 200);
  Json l(list.body);
  ASSERT_EQ(cJSON_GetArraySize(l.at("data")), 1);
  const cJSON* item = cJSON_GetArrayItem(l.at("data"), 0);
  EXPECT_STREQ(cJSON_GetObjectItem(item, "id")->valuestring, id.c_str());
  EXPECT_STREQ(cJSON_GetObjectItem(item, "status")->valuestring, "Captured");
  EXPECT_STREQ(cJSON_GetObjectItem(item, "reference")->valuestring, "cm");
  EXPECT_EQ(l.num("total_count"), 1);
  Response none = call(port_, "GET", "/payments?reference=nobody");
  EXPECT_EQ(none.status, 200);
  EXPECT_EQ(cJSON_GetArraySize(Json(none.body).at("data")), 0);
  EXPECT_EQ(call(port_, "GET", "/payments").status, 422);  // reference required
  EXPECT_EQ(call(port_, "GET", "/v1/payments/" + id).status, 404);  // Stripe's lookup is not here
  // `reference` is the order when order_id is absent.
  EXPECT_EQ(call(port_, "POST", "/payments", R"({"reference":"cr","amount":5})", {}).status, 201);
  EXPECT_EQ(sim_->charges_for("cr"), 1);
}

// ---- PayPal -------------------------------------------------------------------------------------

TEST_F(Profiles, paypal_replays_the_current_state_with_200_after_a_201) {
  start("paypal");
  Response first = call(port_, "POST", "/v2/checkout/orders", plain("p1"), pp("kp1"));
  ASSERT_EQ(first.status, 201) << first.body;
  Json j(first.body);
  EXPECT_EQ(j.str("status"), "COMPLETED");
  const std::string id = j.str("id");
  // An order id is 17 upper-case letters and digits, as PayPal's.
  EXPECT_EQ(id.size(), 17u) << id;
  EXPECT_EQ(id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"), std::string::npos) << id;
  EXPECT_EQ(sim_->charge_ids_for("p1"), std::vector<std::string>{id});

  Response again = call(port_, "POST", "/v2/checkout/orders", plain("p1"), pp("kp1"));
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(Json(again.body).str("id"), id);
  EXPECT_EQ(Json(again.body).str("status"), "COMPLETED");
  EXPECT_EQ(again.header("idempotent-replayed"), "");
  EXPECT_EQ(sim_->charges_for("p1"), 1);

  // A 500 after the commit: the retry gets the payment's current state, not the 500.
  sim_->script("p5", {"500"});
  Response err = call(port_, "POST", "/v2/checkout/orders", plain("p5"), pp("kp5"));
  EXPECT_EQ(err.status, 500);
  EXPECT_EQ(Json(err.body).str("name"), "INTERNAL_SERVER_ERROR");
  Response current = call(port_, "POST", "/v2/checkout/orders", plain("p5"), pp("kp5"));
  EXPECT_EQ(current.status, 200);
  EXPECT_EQ(Json(current.body).str("status"), "COMPLETED");
  EXPECT_EQ(Json(current.body).str("id"), sim_->charge_ids_for("p5").at(0));
  EXPECT_EQ(sim_->charges_for("p5"), 1);
  EXPECT_EQ(sim_->duplicate_orders(), 0);

  // Without the header every request is a new order.
  call(port_, "POST", "/v2/checkout/orders", plain("pn"), pp());
  call(port_, "POST", "/v2/checkout/orders", plain("pn"), pp());
  EXPECT_EQ(sim_->charges_for("pn"), 2);
}

TEST_F(Profiles, paypal_decline_mismatch_in_flight_and_lookup) {
  start("paypal");
  sim_->script("pd", {"decline"});
  Response d = call(port_, "POST", "/v2/checkout/orders", plain("pd"), pp("kpd"));
  EXPECT_EQ(d.status, 422);
  EXPECT_NE(d.body.find("INSTRUMENT_DECLINED"), std::string::npos);
  Response d2 = call(port_, "POST", "/v2/checkout/orders", plain("pd"), pp("kpd"));
  EXPECT_EQ(d2.status, 422);  // still declined: its current state
  EXPECT_EQ(d2.body, d.body);
  EXPECT_EQ(sim_->charges_for("pd"), 0);

  Response created = call(port_, "POST", "/v2/checkout/orders", plain("pm", 1000), pp("kpm"));
  Response other = call(port_, "POST", "/v2/checkout/orders", plain("pm", 3000), pp("kpm"));
  EXPECT_EQ(other.status, 422);
  EXPECT_NE(other.body.find("PAYPAL_REQUEST_ID_PREVIOUSLY_USED"), std::string::npos);

  sim_->script("ps", {"slow"});
  Pending held(port_, "POST", "/v2/checkout/orders", plain("ps"), pp("kps"));
  Response busy = call(port_, "POST", "/v2/checkout/orders", plain("ps"), pp("kps"));
  EXPECT_EQ(busy.status, 409);
  EXPECT_NE(busy.body.find("PREVIOUS_REQUEST_IN_PROGRESS"), std::string::npos);
  EXPECT_EQ(held.read().status, 201);

  const std::string id = Json(created.body).str("id");
  Response look = call(port_, "GET", "/v2/checkout/orders/" + id, "", pp());
  EXPECT_EQ(look.status, 200);
  EXPECT_EQ(Json(look.body).str("id"), id);
  EXPECT_EQ(Json(look.body).str("status"), "COMPLETED");
  // The number unpadded, or in another mode's shape, is no order id.
  const std::string n = std::to_string(std::stoull(id.substr(3)));
  EXPECT_EQ(call(port_, "GET", "/v2/checkout/orders/ORD" + n, "", pp()).status, 404);
  EXPECT_EQ(call(port_, "GET", "/v2/checkout/orders/pay_" + n, "", pp()).status, 404);
  Response missing = call(port_, "GET", "/v2/checkout/orders/ORD00000000424242", "", pp());
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(Json(missing.body).str("name"), "RESOURCE_NOT_FOUND");
  // PayPal's own body shape is understood too.
  const std::string native =
      R"({"intent":"CAPTURE","purchase_units":[{"reference_id":"pu1","amount":{"currency_code":"USD","value":"12.50"}}]})";
  EXPECT_EQ(call(port_, "POST", "/v2/checkout/orders", native, pp("kpu1")).status, 201);
  EXPECT_EQ(sim_->charges_for("pu1"), 1);
}

// ---- Square -------------------------------------------------------------------------------------

std::string square_body(const std::string& order, const std::string& key, long amount = 1000) {
  return R"({"idempotency_key":")" + key + R"(","source_id":"cnon:card-nonce-ok","amount_money":{"amount":)" +
         std::to_string(amount) + R"(,"currency":"USD"},"reference_id":")" + order + R"("})";
}

TEST_F(Profiles, square_key_is_the_body_field_and_is_required) {
  start("square");
  Response missing = call(port_, "POST", "/v2/payments", plain("s0"), {"Idempotency-Key: k"});
  EXPECT_EQ(missing.status, 400);
  Json m(missing.body);
  const cJSON* e = cJSON_GetArrayItem(m.at("errors"), 0);
  ASSERT_TRUE(cJSON_IsString(cJSON_GetObjectItem(e, "code")) && cJSON_IsString(cJSON_GetObjectItem(e, "field")))
      << missing.body;
  EXPECT_STREQ(cJSON_GetObjectItem(e, "code")->valuestring, "MISSING_REQUIRED_PARAMETER");
  EXPECT_STREQ(cJSON_GetObjectItem(e, "field")->valuestring, "idempotency_key");
  EXPECT_EQ(sim_->charges_for("s0"), 0);

  Response first = call(port_, "POST", "/v2/payments", square_body("s1", "ks1"));
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(Json(first.body).str("payment.status"), "COMPLETED");
  EXPECT_EQ(Json(first.body).str("payment.id").rfind("pay_", 0), 0u);
  Response again = call(port_, "POST", "/v2/payments", square_body("s1", "ks1"));
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(sim_->charges_for("s1"), 1);

  // Same key, other request: IDEMPOTENCY_KEY_REUSED, nothing charged.
  Response reused = call(port_, "POST", "/v2/payments", square_body("s1", "ks1", 2000));
  EXPECT_EQ(reused.status, 400);
  EXPECT_EQ(reused.body, R"({"errors":[{"category":"INVALID_REQUEST_ERROR","code":"IDEMPOTENCY_KEY_REUSED"}]})");
  EXPECT_EQ(sim_->charges_for("s1"), 1);
  // A new key is a new payment.
  EXPECT_EQ(call(port_, "POST", "/v2/payments", square_body("s1", "ks1b")).status, 200);
  EXPECT_EQ(sim_->charges_for("s1"), 2);
  EXPECT_EQ(sim_->duplicate_orders(), 1);
}

TEST_F(Profiles, square_faults_decline_and_lookup) {
  start("square");
  sim_->script_key("ksl", {"lost_response"});  // scripts by key use the body key
  Response lost = call(port_, "POST", "/v2/payments", square_body("sl", "ksl"));
  EXPECT_EQ(lost.error, ECONNRESET);
  Response retry = call(port_, "POST", "/v2/payments", square_body("sl", "ksl"));
  EXPECT_EQ(retry.status, 200);
  EXPECT_EQ(sim_->charges_for("sl"), 1);

  sim_->script("sd", {"decline"});
  Response d = call(port_, "POST", "/v2/payments", square_body("sd", "ksd"));
  EXPECT_EQ(d.status, 400);
  EXPECT_EQ(d.body, R"({"errors":[{"category":"PAYMENT_METHOD_ERROR","code":"CARD_DECLINED"}]})");
  EXPECT_EQ(call(port_, "POST", "/v2/payments", square_body("sd", "ksd")).body, d.body);
  EXPECT_EQ(sim_->charges_for("sd"), 0);

  sim_->script("s5", {"503"});
  Response u = call(port_, "POST", "/v2/payments", square_body("s5", "ks5"));
  EXPECT_EQ(u.status, 503);
  EXPECT_NE(u.body.find("SERVICE_UNAVAILABLE"), std::string::npos);

  const std::string id = Json(retry.body).str("payment.id");
  Response look = call(port_, "GET", "/v2/payments/" + id);
  EXPECT_EQ(look.status, 200);
  EXPECT_EQ(look.body, retry.body);
  Response none = call(port_, "GET", "/v2/payments/pay_777777");
  EXPECT_EQ(none.status, 404);
  EXPECT_NE(none.body.find("NOT_FOUND"), std::string::npos);
}

// ---- WeChat Pay v3 ------------------------------------------------------------------------------

std::string wx_body(const std::string& out_trade_no, long total = 100) {
  return R"({"appid":"wxd678efh567hg6787","mchid":"1230000109","description":"test","out_trade_no":")" +
         out_trade_no + R"(","notify_url":"https://example.com/n","amount":{"total":)" + std::to_string(total) +
         R"(,"currency":"CNY"}})";
}
const char kWxCreate[] = "/v3/pay/transactions/native";

// A WeChat Pay request signed with the merchant's test key (target: path and query).
Response wx(uint16_t port, const std::string& method, const std::string& target, const std::string& body = "") {
  return call(port, method, target, body, {wechat_authorization(method, target, body)});
}

TEST_F(Profiles, wechat_out_trade_no_is_the_identity_orderpaid_after_payment) {
  start("wechatpay_v3");
  Response first = wx(port_, "POST", kWxCreate, wx_body("wx_000001"));
  ASSERT_EQ(first.status, 200) << first.body;
  const std::string prepay = Json(first.body).str("prepay_id");
  EXPECT_EQ(prepay.rfind("wx", 0), 0u) << first.body;
  EXPECT_TRUE(wechat_answer_verifies(first));
  EXPECT_EQ(sim_->charges_for("wx_000001"), 1);  // out_trade_no is the order in the truth

  Response again = wx(port_, "POST", kWxCreate, wx_body("wx_000001"));
  EXPECT_EQ(again.status, 400);
  EXPECT_EQ(Json(again.body).str("code"), "ORDERPAID");
  EXPECT_TRUE(wechat_answer_verifies(again));  // errors are signed too
  Response other = wx(port_, "POST", kWxCreate, wx_body("wx_000001", 200));
  EXPECT_EQ(other.status, 400);
  EXPECT_EQ(Json(other.body).str("code"), "OUT_TRADE_NO_USED");
  EXPECT_EQ(sim_->charges_for("wx_000001"), 1);
  EXPECT_EQ(sim_->duplicate_orders(), 0);

  // Any /v3/pay/transactions/{kind} creates; so does the generic alias.
  EXPECT_EQ(wx(port_, "POST", "/v3/pay/transactions/jsapi", wx_body("wx_000002")).status, 200);
  EXPECT_EQ(wx(port_, "POST", "/v1/payments", wx_body("wx_000003")).status, 200);
  EXPECT_EQ(sim_->total_charges(), 3);

  // The identity is required, and order_id (if sent) must be the same order.
  Response none = wx(port_, "POST", kWxCreate, R"({"amount":{"total":1}})");
  EXPECT_EQ(none.status, 400);
  EXPECT_EQ(Json(none.body).str("code"), "PARAM_ERROR");
  Response split = wx(port_, "POST", kWxCreate, R"({"out_trade_no":"wx_a","order_id":"wx_b","amount":1})");
  EXPECT_EQ(split.status, 400);
  EXPECT_EQ(wx(port_, "POST", kWxCreate, R"({"out_trade_no":"wx_c","order_id":"wx_c","amount":1})").status, 200);
}

TEST_F(Profiles, wechat_reentry_while_in_flight_replays_the_same_200) {
  start("wechatpay_v3");
  sim_->script("wx_slow01", {"slow"});
  Pending held(port_, "POST", kWxCreate, wx_body("wx_slow01"),
               {wechat_authorization("POST", kWxCreate, wx_body("wx_slow01"))});
  Response look = wx(port_, "GET", "/v3/pay/transactions/out-trade-no/wx_slow01?mchid=1230000109");
  EXPECT_EQ(look.status, 200);
  EXPECT_EQ(Json(look.body).str("trade_state"), "NOTPAY");
  Response reentry = wx(port_, "POST", kWxCreate, wx_body("wx_slow01"));
  EXPECT_EQ(reentry.status, 200);
  Response changed = wx(port_, "POST", kWxCreate, wx_body("wx_slow01", 999));
  EXPECT_EQ(changed.status, 400);
  EXPECT_EQ(Json(changed.body).str("code"), "OUT_TRADE_NO_USED");
  EXPECT_EQ(sim_->charges_for("wx_slow01"), 0);
  Response done = held.read();
  EXPECT_EQ(done.status, 200);
  EXPECT_EQ(done.body, reentry.body);  // the same prepay_id
  EXPECT_EQ(sim_->charges_for("wx_slow01"), 1);
}

TEST_F(Profiles, wechat_system_error_then_orderpaid_then_lookup_success) {
  start("wechatpay_v3");
  sim_->script("wx_err001", {"500"});
  Response err = wx(port_, "POST", kWxCreate, wx_body("wx_err001"));
  EXPECT_EQ(err.status, 500);
  EXPECT_EQ(Json(err.body).str("code"), "SYSTEM_ERROR");
  EXPECT_EQ(sim_->charges_for("wx_err001"), 1);
  Response again = wx(port_, "POST", kWxCreate, wx_body("wx_err001"));
  EXPECT_EQ(Json(again.body).str("code"), "ORDERPAID");
  Response look = wx(port_, "GET", "/v3/pay/transactions/out-trade-no/wx_err001?mchid=1230000109");
  EXPECT_EQ(look.status, 200);
  Json j(look.body);
  EXPECT_EQ(j.str("out_trade_no"), "wx_err001");
  EXPECT_EQ(j.str("trade_state"), "SUCCESS");
  EXPECT_EQ(j.str("transaction_id").size(), 28u);
  EXPECT_EQ(j.str("transaction_id").rfind("4200", 0), 0u);
  EXPECT_EQ(j.num("amount.total"), 100);
  EXPECT_TRUE(wechat_answer_verifies(look));

  sim_->script("wx_gw0001", {"502", "503"});
  Response gw = wx(port_, "POST", kWxCreate, wx_body("wx_gw0001"));
  EXPECT_EQ(gw.status, 502);
  EXPECT_EQ(Json(gw.body).str("code"), "SYSTEM_ERROR");
  EXPECT_EQ(wx(port_, "POST", kWxCreate, wx_body("wx_gw0001")).status, 503);
  EXPECT_EQ(sim_->charges_for("wx_gw0001"), 0);
  EXPECT_EQ(wx(port_, "GET", "/v3/pay/transactions/out-trade-no/wx_gw0001?mchid=1").status, 404);
  EXPECT_EQ(wx(port_, "POST", kWxCreate, wx_body("wx_gw0001")).status, 200);

  Response missing = wx(port_, "GET", "/v3/pay/transactions/out-trade-no/wx_nobody?mchid=1230000109");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(Json(missing.body).str("code"), "ORDER_NOT_EXIST");

  sim_->script("wx_dec001", {"decline"});
  Response dec = wx(port_, "POST", kWxCreate, wx_body("wx_dec001"));
  EXPECT_EQ(dec.status, 400);
  EXPECT_EQ(Json(dec.body).str("code"), "NOTENOUGH");
  EXPECT_EQ(wx(port_, "POST", kWxCreate, wx_body("wx_dec001")).body, dec.body);
  EXPECT_EQ(Json(wx(port_, "GET", "/v3/pay/transactions/out-trade-no/wx_dec001?mchid=1").body).str("trade_state"),
            "PAYERROR");
  EXPECT_EQ(sim_->charges_for("wx_dec001"), 0);

  sim_->script("wx_429001", {"429"});
  Response rl = wx(port_, "POST", kWxCreate, wx_body("wx_429001"));
  EXPECT_EQ(rl.status, 429);
  EXPECT_EQ(Json(rl.body).str("code"), "FREQUENCY_LIMITED");
  EXPECT_EQ(rl.header("retry-after"), "1");
}

// ---- Adyen --------------------------------------------------------------------------------------

std::string adyen_body(const std::string& ref, long value = 1000) {
  return R"({"merchantAccount":"TestMerchant","reference":")" + ref + R"(","amount":{"value":)" +
         std::to_string(value) + R"(,"currency":"EUR"},"paymentMethod":{"type":"scheme"}})";
}

TEST_F(Profiles, adyen_stored_replay_echoes_the_key_and_refusals_are_200) {
  start("adyen");
  Response first = call(port_, "POST", "/v71/payments", adyen_body("a1"), {"IDEMPOTENCY-KEY: ka1"});
  ASSERT_EQ(first.status, 200) << first.body;
  Json j(first.body);
  EXPECT_EQ(j.str("resultCode"), "Authorised");
  // A pspReference is 16 letters and digits, as Adyen's.
  EXPECT_EQ(j.str("pspReference").size(), 16u) << j.str("pspReference");
  EXPECT_EQ(j.str("pspReference").find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"), std::string::npos);
  EXPECT_EQ(sim_->charge_ids_for("a1"), std::vector<std::string>{j.str("pspReference")});
  EXPECT_EQ(j.str("merchantReference"), "a1");
  EXPECT_EQ(first.header("idempotency-key"), "ka1");
  Response again = call(port_, "POST", "/v71/payments", adyen_body("a1"), {"idempotency-key: ka1"});
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.header("idempotency-key"), "ka1");
  EXPECT_EQ(again.header("idempotent-replayed"), "");
  EXPECT_EQ(sim_->charges_for("a1"), 1);

  sim_->script("ar", {"decline"});
  Response refused = call(port_, "POST", "/v71/payments", adyen_body("ar"), {"idempotency-key: kar"});
  EXPECT_EQ(refused.status, 200);  // Adyen refuses with 200
  EXPECT_EQ(Json(refused.body).str("resultCode"), "Refused");
  EXPECT_EQ(Json(refused.body).str("pspReference").size(), 16u);
  EXPECT_NE(Json(refused.body).str("pspReference"), j.str("pspReference"));
  EXPECT_EQ(call(port_, "POST", "/v71/payments", adyen_body("ar"), {"idempotency-key: kar"}).body, refused.body);
  EXPECT_EQ(sim_->charges_for("ar"), 0);
  EXPECT_EQ(sim_->total_charges(), 1);

  // No key header, no echo.
  EXPECT_EQ(call(port_, "POST", "/v71/payments", adyen_body("an")).header("idempotency-key"), "");
}

TEST_F(Profiles, adyen_transient_errors_mismatch_and_no_lookup) {
  start("adyen");
  sim_->script("a5", {"503", "502", "500"});
  Response u = call(port_, "POST", "/v71/payments", adyen_body("a5"), {"idempotency-key: ka5"});
  EXPECT_EQ(u.status, 503);
  EXPECT_EQ(u.header("transient-error"), "true");
  EXPECT_EQ(Json(u.body).str("errorCode"), "703");
  Response g = call(port_, "POST", "/v71/payments", adyen_body("a5"), {"idempotency-key: ka5"});
  EXPECT_EQ(g.status, 502);
  EXPECT_EQ(g.header("transient-error"), "");
  Response ie = call(port_, "POST", "/v71/payments", adyen_body("a5"), {"idempotency-key: ka5"});
  EXPECT_EQ(ie.status, 500);
  EXPECT_EQ(ie.header("transient-error"), "");
  EXPECT_EQ(sim_->charges_for("a5"), 1);  // the 500 came after the charge
  Response replay = call(port_, "POST", "/v71/payments", adyen_body("a5"), {"idempotency-key: ka5"});
  EXPECT_EQ(Json(replay.body).str("resultCode"), "Authorised");
  EXPECT_EQ(sim_->charges_for("a5"), 1);

  Response other = call(port_, "POST", "/v71/payments", adyen_body("a5", 5), {"idempotency-key: ka5"});
  EXPECT_EQ(other.status, 422);
  EXPECT_EQ(Json(other.body).str("errorCode"), "704");
  EXPECT_EQ(other.header("transient-error"), "");

  sim_->script("as", {"slow"});
  Pending held(port_, "POST", "/v71/payments", adyen_body("as"), {"idempotency-key: kas"});
  Response busy = call(port_, "POST", "/v71/payments", adyen_body("as"), {"idempotency-key: kas"});
  EXPECT_EQ(busy.status, 409);
  EXPECT_EQ(Json(busy.body).str("errorCode"), "704");
  EXPECT_EQ(busy.header("transient-error"), "true");
  Response done = held.read();
  EXPECT_EQ(done.status, 200);
  EXPECT_EQ(done.header("idempotency-key"), "kas");

  EXPECT_EQ(call(port_, "GET", "/v71/payments").status, 405);
  EXPECT_EQ(call(port_, "GET", "/v1/payments/pay_1").status, 404);
}

TEST_F(Profiles, adyen_creates_only_under_a_versioned_path) {
  start("adyen");
  for (const char* path : {"/v72/payments", "/v71/payments", "/v1/payments"}) {
    Response r = call(port_, "POST", path, adyen_body(std::string("av") + path), {"idempotency-key: k" + std::string(path)});
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
  }
  EXPECT_EQ(sim_->total_charges(), 3);
  // The bare path is no Adyen endpoint: 404 like any unknown path, nothing charged.
  Response bare = call(port_, "POST", "/payments", adyen_body("abare"), {"idempotency-key: kbare"});
  EXPECT_EQ(bare.status, 404);
  EXPECT_EQ(Json(bare.body).str("message"), "Not Found");
  EXPECT_EQ(call(port_, "GET", "/payments").status, 404);
  EXPECT_EQ(call(port_, "POST", "/vX/payments", adyen_body("abare")).status, 404);
  EXPECT_EQ(call(port_, "POST", "/v/payments", adyen_body("abare")).status, 404);
  EXPECT_EQ(call(port_, "POST", "/v72/payments/details", adyen_body("abare")).status, 404);
  EXPECT_EQ(sim_->charges_for("abare"), 0);
  EXPECT_EQ(sim_->total_charges(), 3);
}

// ---- Mollie -------------------------------------------------------------------------------------

TEST_F(Profiles, mollie_stored_replay_with_marker_409_in_flight_and_lookup) {
  start("mollie");
  const std::string native =
      R"({"amount":{"currency":"EUR","value":"10.00"},"description":"Order m1","metadata":{"order_id":"m1"}})";
  Response first = call(port_, "POST", "/v2/payments", native, {"Idempotency-Key: km1"});
  ASSERT_EQ(first.status, 201) << first.body;
  Json j(first.body);
  EXPECT_EQ(j.str("resource"), "payment");
  EXPECT_EQ(j.str("status"), "paid");
  EXPECT_EQ(j.str("amount.value"), "10.00");
  EXPECT_EQ(j.str("amount.currency"), "EUR");
  Response again = call(port_, "POST", "/v2/payments", native, {"Idempotency-Key: km1"});
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.header("idempotent-replayed"), "true");
  EXPECT_EQ(sim_->charges_for("m1"), 1);

  Response other = call(port_, "POST", "/v2/payments", plain("m1"), {"Idempotency-Key: km1"});
  EXPECT_EQ(other.status, 400);
  EXPECT_EQ(Json(other.body).num("status"), 400);

  sim_->script("ms", {"slow"});
  Pending held(port_, "POST", "/v2/payments", plain("ms"), {"Idempotency-Key: kms"});
  Response busy = call(port_, "POST", "/v2/payments", plain("ms"), {"Idempotency-Key: kms"});
  EXPECT_EQ(busy.status, 409);
  EXPECT_EQ(Json(busy.body).str("title"), "Conflict");
  EXPECT_EQ(held.read().status, 201);

  sim_->script("md", {"decline"});
  Response d = call(port_, "POST", "/v2/payments", plain("md"), {"Idempotency-Key: kmd"});
  EXPECT_EQ(d.status, 422);
  EXPECT_EQ(Json(d.body).str("extra.failureReason"), "insufficient_funds");
  EXPECT_EQ(sim_->charges_for("md"), 0);

  // Mollie payment ids are tr_...: mollie-api-python's payments.get refuses any other.
  const std::string id = j.str("id");
  ASSERT_EQ(id.rfind("tr_", 0), 0u) << id;
  EXPECT_EQ(sim_->charge_ids_for("m1"), std::vector<std::string>{id});
  Response look = call(port_, "GET", "/v2/payments/" + id);
  EXPECT_EQ(look.status, 200);
  EXPECT_EQ(look.body, first.body);
  EXPECT_EQ(call(port_, "GET", "/v2/payments/pay_" + id.substr(3)).status, 404);
  EXPECT_EQ(call(port_, "GET", "/v2/payments/tr_0" + id.substr(3)).status, 404);
  Response none = call(port_, "GET", "/v2/payments/tr_31337");
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(Json(none.body).num("status"), 404);
}

// ---- Alipay -------------------------------------------------------------------------------------

std::string ali_biz(const std::string& no, const std::string& total = "10.00") {
  return R"({"out_trade_no":")" + no + R"(","total_amount":")" + total +
         R"(","subject":"test","scene":"bar_code","auth_code":"28763443825664394"})";
}

// One signed gateway call, as the SDKs send it.
Response ali(uint16_t port, const std::string& method, const std::string& biz_content) {
  const GatewayRequest g = alipay_call(method, biz_content);
  return call(port, "POST", g.target, g.body, g.headers);
}
Response ali_pay(uint16_t port, const std::string& no, const std::string& total = "10.00") {
  return ali(port, "alipay.trade.pay", ali_biz(no, total));
}
Response ali_query(uint16_t port, const std::string& no) {
  return ali(port, "alipay.trade.query", R"({"out_trade_no":")" + no + R"("})");
}

TEST_F(Profiles, alipay_trade_pay_replays_as_error_codes) {
  start("alipay");
  Response first = ali_pay(port_, "al1");
  ASSERT_EQ(first.status, 200) << first.body;
  Json j(first.body);
  EXPECT_EQ(j.str("alipay_trade_pay_response.code"), "10000");
  EXPECT_EQ(j.str("alipay_trade_pay_response.out_trade_no"), "al1");
  EXPECT_EQ(j.str("alipay_trade_pay_response.trade_no").size(), 28u);
  EXPECT_EQ(j.str("alipay_trade_pay_response.total_amount"), "10.00");
  EXPECT_TRUE(alipay_answer_verifies(first.body)) << first.body;
  EXPECT_EQ(sim_->charges_for("al1"), 1);

  Response again = ali_pay(port_, "al1");
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(Json(again.body).str("alipay_trade_pay_response.code"), "40004");
  EXPECT_EQ(Json(again.body).str("alipay_trade_pay_response.sub_code"), "ACQ.TRADE_HAS_SUCCESS");
  EXPECT_TRUE(alipay_answer_verifies(again.body));
  Response other = ali_pay(port_, "al1", "11.00");
  EXPECT_EQ(Json(other.body).str("alipay_trade_pay_response.sub_code"), "ACQ.CONTEXT_INCONSISTENT");
  EXPECT_EQ(sim_->charges_for("al1"), 1);

  // The common parameters may travel in the form body too.
  Params p = alipay_params("alipay.trade.pay", ali_biz("al2", "0.01"));
  p["sign"] = alipay_sign(p);
  const GatewayRequest in_body = gateway_request(p, {"biz_content", "timestamp", "sign", "app_id"});
  Response s = call(port_, "POST", in_body.target, in_body.body, in_body.headers);
  EXPECT_EQ(Json(s.body).str("alipay_trade_pay_response.code"), "10000") << s.body;
  EXPECT_EQ(sim_->charges_for("al2"), 1);

  Response bad = ali(port_, "alipay.trade.pay", "{}");
  EXPECT_EQ(bad.status, 200);
  EXPECT_EQ(Json(bad.body).str("alipay_trade_pay_response.code"), "40002");
  EXPECT_EQ(Json(bad.body).str("alipay_trade_pay_response.sub_code"), "isv.missing-parameter");
  Response unknown = ali(port_, "alipay.trade.precreate", R"({"out_trade_no":"al1"})");
  EXPECT_EQ(Json(unknown.body).str("error_response.sub_code"), "isv.invalid-method");
  EXPECT_TRUE(alipay_answer_verifies(unknown.body));
}

TEST_F(Profiles, alipay_faults_are_200_system_errors_and_query_tells_the_truth) {
  start("alipay");
  sim_->script("al5", {"500"});
  Response err = ali_pay(port_, "al5");
  EXPECT_EQ(err.status, 200);  // errors in the body
  EXPECT_EQ(Json(err.body).str("alipay_trade_pay_response.code"), "20000");
  EXPECT_EQ(Json(err.body).str("alipay_trade_pay_response.sub_code"), "ACQ.SYSTEM_ERROR");
  EXPECT_EQ(sim_->charges_for("al5"), 1);
  Response q = ali_query(port_, "al5");
  EXPECT_EQ(q.status, 200);
  EXPECT_EQ(Json(q.body).str("alipay_trade_query_response.code"), "10000");
  EXPECT_EQ(Json(q.body).str("alipay_trade_query_response.trade_status"), "TRADE_SUCCESS");
  EXPECT_EQ(Json(q.body).str("alipay_trade_query_response.out_trade_no"), "al5");
  EXPECT_TRUE(alipay_answer_verifies(q.body));
  EXPECT_EQ(Json(ali_pay(port_, "al5").body).str("alipay_trade_pay_response.sub_code"), "ACQ.TRADE_HAS_SUCCESS");

  sim_->script("al3", {"503"});
  Response u = ali_pay(port_, "al3");
  EXPECT_EQ(u.status, 200);
  EXPECT_EQ(Json(u.body).str("alipay_trade_pay_response.sub_code"), "ACQ.SYSTEM_ERROR");
  EXPECT_EQ(sim_->charges_for("al3"), 0);
  Response nx = ali_query(port_, "al3");
  EXPECT_EQ(Json(nx.body).str("alipay_trade_query_response.code"), "40004");
  EXPECT_EQ(Json(nx.body).str("alipay_trade_query_response.sub_code"), "ACQ.TRADE_NOT_EXIST");
  EXPECT_EQ(Json(ali_pay(port_, "al3").body).str("alipay_trade_pay_response.code"), "10000");
  Response no_trade = ali(port_, "alipay.trade.query", R"({"trade_no":"x"})");
  EXPECT_EQ(Json(no_trade.body).str("alipay_trade_query_response.sub_code"), "isv.missing-parameter");

  sim_->script("als", {"slow"});
  const GatewayRequest slow = alipay_call("alipay.trade.pay", ali_biz("als"));
  Pending held(port_, "POST", slow.target, slow.body, slow.headers);
  Response waiting = ali_pay(port_, "als");
  EXPECT_EQ(Json(waiting.body).str("alipay_trade_pay_response.code"), "10003");
  EXPECT_EQ(Json(ali_query(port_, "als").body).str("alipay_trade_query_response.trade_status"), "WAIT_BUYER_PAY");
  Response done = held.read();
  EXPECT_EQ(Json(done.body).str("alipay_trade_pay_response.code"), "10000");
  EXPECT_TRUE(alipay_answer_verifies(done.body));  // signed when it finally goes out
  EXPECT_EQ(sim_->charges_for("als"), 1);

  sim_->script("ald", {"decline"});
  Response d = ali_pay(port_, "ald");
  EXPECT_EQ(Json(d.body).str("alipay_trade_pay_response.sub_code"), "ACQ.BUYER_BALANCE_NOT_ENOUGH");
  EXPECT_EQ(Json(ali_query(port_, "ald").body).str("alipay_trade_query_response.trade_status"), "TRADE_CLOSED");
  EXPECT_EQ(sim_->charges_for("ald"), 0);

  sim_->script("alr", {"429"});
  Response rl = ali_pay(port_, "alr");
  EXPECT_EQ(rl.status, 429);
  EXPECT_EQ(rl.header("retry-after"), "1");
  EXPECT_TRUE(alipay_answer_verifies(rl.body));

  Json truth(get(port_, "/__admin/truth").body);
  EXPECT_EQ(truth.num("charges"), 3);
  EXPECT_EQ(truth.num("duplicates"), 0);
}

// Every profile: the seeded mix applies the same way, and with its identity in use no order is
// ever charged twice by retries that repeat the identity, except where the provider itself
// re-runs a payment (Checkout.com after a 500).
TEST_F(Profiles, every_profile_keeps_the_truth_under_a_seeded_mix) {
  for (const std::string& name : payretry_sim::profiles()) {
    start(name);
    sim_->set_faults({{"lost_response", 0.2}, {"503", 0.2}, {"500", 0.1}});
    const std::string first = name.substr(0, 2) + "_order_0";
    sim_->script(first, {"500", "none"});  // a 500 on the first processing, then a clean retry
    for (int i = 0; i < 20; ++i) {
      const std::string order = name.substr(0, 2) + "_order_" + std::to_string(i);
      std::string path = "/v1/payments";
      std::string body = plain(order);
      Headers headers;
      if (name == "square") {
        body = square_body(order, "key-" + order);
      } else if (name == "wechatpay_v3") {
        body = wx_body(order);
        headers.push_back(wechat_authorization("POST", path, body));
      } else if (name == "alipay") {
        const GatewayRequest g = alipay_call("alipay.trade.pay", ali_biz(order));
        path = g.target;
        body = g.body;
        headers = g.headers;
      } else {
        const char* header = name == "checkout_com" ? "Cko-Idempotency-Key"
                             : name == "paypal"     ? "PayPal-Request-Id"
                                                    : "Idempotency-Key";
        headers.push_back(std::string(header) + ": key-" + order);
        if (name == "paypal") headers.push_back(bearer(token_));
      }
      for (int attempt = 0; attempt < 4; ++attempt) call(port_, "POST", path, body, headers);
    }
    Json truth(get(port_, "/__admin/truth").body);
    EXPECT_EQ(truth.num("requests"), 80) << name;
    EXPECT_EQ(truth.num("orders"), 20) << name;
    // Checkout.com is the one provider whose 500 is not cached: a blind retry duplicates.
    EXPECT_EQ(sim_->charges_for(first), name == "checkout_com" ? 2 : 1) << name;
    if (name == "checkout_com") EXPECT_GE(truth.num("duplicates"), 1) << name;
    else EXPECT_EQ(truth.num("duplicates"), 0) << name;
    sim_->stop();
    sim_.reset();
  }
}


// ---- refused creates ------------------------------------------------------------------------------

// The member `name` of item `i` of the array at `path`, or item `i` itself when `name` is
// null ("" when any step is missing or not a string).
std::string item_str(const Json& j, const char* path, int i, const char* name = nullptr) {
  const cJSON* v = cJSON_GetArrayItem(j.at(path), i);
  if (name) v = cJSON_GetObjectItemCaseSensitive(v, name);
  return cJSON_IsString(v) ? v->valuestring : "";
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Each mode refuses a create it cannot read as its provider does, naming the parameter where
// that provider names it and saying why, and records nothing (so the key stays free).
TEST_F(Profiles, checkout_refusals_name_the_field_in_the_error_code) {
  start("checkout_com");
  Response none = call(port_, "POST", "/payments", R"({"amount":5,"currency":"EUR"})", {"Cko-Idempotency-Key: kr"});
  EXPECT_EQ(none.status, 422);
  Json n(none.body);
  EXPECT_EQ(n.str("error_type"), "request_invalid");
  EXPECT_EQ(item_str(n, "error_codes", 0), "reference_required") << none.body;
  Response amount = call(port_, "POST", "/payments", R"({"reference":"cr","amount":"5"})", {"Cko-Idempotency-Key: kr"});
  EXPECT_EQ(item_str(Json(amount.body), "error_codes", 0), "amount_invalid") << amount.body;
  Response fraction = call(port_, "POST", "/payments", R"({"reference":"cr","amount":5.5})", {"Cko-Idempotency-Key: kr"});
  EXPECT_EQ(item_str(Json(fraction.body), "error_codes", 0), "amount_invalid");
  EXPECT_EQ(sim_->total_charges(), 0);
  EXPECT_EQ(call(port_, "POST", "/payments", R"({"reference":"cr","amount":5})", {"Cko-Idempotency-Key: kr"}).status, 201);
}

TEST_F(Profiles, paypal_refusals_name_the_field_as_a_json_pointer) {
  start("paypal");
  Response none = call(port_, "POST", "/v2/checkout/orders",
                       R"({"intent":"CAPTURE","purchase_units":[{"amount":{"currency_code":"USD","value":"10.00"}}]})",
                       pp("kpr"));
  EXPECT_EQ(none.status, 400);
  Json n(none.body);
  EXPECT_EQ(n.str("name"), "INVALID_REQUEST");
  EXPECT_EQ(item_str(n, "details", 0, "field"), "/purchase_units/0/reference_id") << none.body;
  EXPECT_EQ(item_str(n, "details", 0, "location"), "body");
  EXPECT_EQ(item_str(n, "details", 0, "issue"), "MISSING_REQUIRED_PARAMETER");
  EXPECT_TRUE(has(item_str(n, "details", 0, "description"), "order id")) << none.body;
  const std::string three_places =
      R"({"purchase_units":[{"reference_id":"pr","amount":{"currency_code":"USD","value":"10.001"}}]})";
  Json syntax(call(port_, "POST", "/v2/checkout/orders", three_places, pp("kpr")).body);
  EXPECT_EQ(item_str(syntax, "details", 0, "field"), "/purchase_units/0/amount/value");
  EXPECT_EQ(item_str(syntax, "details", 0, "issue"), "INVALID_PARAMETER_SYNTAX");
  EXPECT_TRUE(has(item_str(syntax, "details", 0, "description"), "two places"));
  const std::string zero = R"({"purchase_units":[{"reference_id":"pr","amount":{"currency_code":"USD","value":"0.00"}}]})";
  EXPECT_EQ(item_str(Json(call(port_, "POST", "/v2/checkout/orders", zero, pp("kpr")).body), "details", 0, "issue"),
            "INVALID_PARAMETER_VALUE");
  Json junk(call(port_, "POST", "/v2/checkout/orders", "{not json", pp("kpr")).body);
  EXPECT_EQ(item_str(junk, "details", 0, "issue"), "MALFORMED_REQUEST_JSON");
  EXPECT_EQ(item_str(junk, "details", 0, "field"), "");
  EXPECT_EQ(sim_->total_charges(), 0);
}

TEST_F(Profiles, square_refusals_name_the_field_and_the_code) {
  start("square");
  Response none = call(port_, "POST", "/v2/payments",
                       R"({"idempotency_key":"ksr","amount_money":{"amount":100,"currency":"USD"}})");
  EXPECT_EQ(none.status, 400);
  Json n(none.body);
  EXPECT_EQ(item_str(n, "errors", 0, "category"), "INVALID_REQUEST_ERROR");
  EXPECT_EQ(item_str(n, "errors", 0, "code"), "MISSING_REQUIRED_PARAMETER");
  EXPECT_EQ(item_str(n, "errors", 0, "field"), "reference_id");
  EXPECT_TRUE(has(item_str(n, "errors", 0, "detail"), "reference_id is required")) << none.body;
  Json text(call(port_, "POST", "/v2/payments",
                 R"({"idempotency_key":"ksr","reference_id":"sr","amount_money":{"amount":"100","currency":"USD"}})")
                .body);
  EXPECT_EQ(item_str(text, "errors", 0, "code"), "EXPECTED_INTEGER");
  EXPECT_EQ(item_str(text, "errors", 0, "field"), "amount_money.amount");
  Json empty(call(port_, "POST", "/v2/payments", R"({"idempotency_key":"","reference_id":"sr","amount":1})").body);
  EXPECT_EQ(item_str(empty, "errors", 0, "code"), "VALUE_EMPTY");
  EXPECT_EQ(item_str(empty, "errors", 0, "field"), "idempotency_key");
  EXPECT_EQ(sim_->total_charges(), 0);
}

TEST_F(Profiles, wechat_refusals_name_the_field_in_detail) {
  start("wechatpay_v3");
  Response none = wx(port_, "POST", kWxCreate, R"({"amount":{"total":1,"currency":"CNY"}})");
  EXPECT_EQ(none.status, 400);
  Json n(none.body);
  EXPECT_EQ(n.str("code"), "PARAM_ERROR");
  EXPECT_EQ(n.str("detail.field"), "/out_trade_no") << none.body;
  EXPECT_EQ(n.str("detail.location"), "body");
  EXPECT_TRUE(has(n.str("detail.issue"), "out_trade_no is required")) << none.body;
  EXPECT_TRUE(has(n.str("message"), "/out_trade_no"));
  EXPECT_TRUE(wechat_answer_verifies(none));  // a refusal is signed like every answer
  Json fraction(wx(port_, "POST", kWxCreate, R"({"out_trade_no":"wr","amount":{"total":1.5}})").body);
  EXPECT_EQ(fraction.str("detail.field"), "/amount/total");
  Json missing(wx(port_, "POST", kWxCreate, R"({"out_trade_no":"wr","amount":{"currency":"CNY"}})").body);
  EXPECT_EQ(missing.str("detail.field"), "/amount/total");
  EXPECT_TRUE(has(missing.str("detail.issue"), "is required"));
  Json split(wx(port_, "POST", kWxCreate, R"({"out_trade_no":"wr","order_id":"other","amount":1})").body);
  EXPECT_EQ(split.str("detail.field"), "/order_id");
  EXPECT_EQ(sim_->total_charges(), 0);
}

TEST_F(Profiles, adyen_refusals_name_the_field_in_the_message) {
  start("adyen");
  Response no_amount = call(port_, "POST", "/v71/payments", R"({"reference":"ar","amount":{"currency":"EUR"}})",
                            {"idempotency-key: kar"});
  EXPECT_EQ(no_amount.status, 422);  // Adyen: 422 for a validation error, 400 for a body it cannot read
  Json a(no_amount.body);
  EXPECT_EQ(a.num("status"), 422);
  EXPECT_EQ(a.str("errorCode"), "100");
  EXPECT_EQ(a.str("errorType"), "validation");
  EXPECT_TRUE(has(a.str("message"), "'amount.value'")) << no_amount.body;
  Json no_ref(call(port_, "POST", "/v71/payments", R"({"amount":{"value":100,"currency":"EUR"}})").body);
  EXPECT_EQ(no_ref.str("errorCode"), "702");
  EXPECT_TRUE(has(no_ref.str("message"), "'reference'")) << no_ref.str("message");
  Response unreadable = call(port_, "POST", "/v71/payments", R"({"reference":)", {"idempotency-key: kau"});
  EXPECT_EQ(unreadable.status, 400);
  Json u(unreadable.body);
  EXPECT_EQ(u.num("status"), 400);
  EXPECT_EQ(u.str("errorCode"), "702");
  EXPECT_EQ(u.str("errorType"), "validation");
  EXPECT_EQ(sim_->total_charges(), 0);
}

TEST_F(Profiles, mollie_refusals_name_the_field) {
  start("mollie");
  Response none = call(port_, "POST", "/v2/payments", R"({"amount":{"value":"10.00","currency":"EUR"}})");
  EXPECT_EQ(none.status, 422);
  Json n(none.body);
  EXPECT_EQ(n.num("status"), 422);
  EXPECT_EQ(n.str("field"), "metadata.order_id") << none.body;
  EXPECT_TRUE(has(n.str("detail"), "metadata.order_id is required"));
  Json ten(call(port_, "POST", "/v2/payments",
                R"({"metadata":{"order_id":"mr"},"amount":{"value":"ten","currency":"EUR"}})").body);
  EXPECT_EQ(ten.str("field"), "amount.value");
  EXPECT_TRUE(has(ten.str("detail"), "\"10.00\""));
  EXPECT_EQ(sim_->total_charges(), 0);
}

TEST_F(Profiles, alipay_refusals_name_the_business_parameter) {
  start("alipay");
  Json none(ali(port_, "alipay.trade.pay", R"({"total_amount":"1.00","subject":"t"})").body);
  EXPECT_EQ(none.str("alipay_trade_pay_response.code"), "40002");
  EXPECT_EQ(none.str("alipay_trade_pay_response.sub_code"), "isv.missing-parameter");
  EXPECT_TRUE(has(none.str("alipay_trade_pay_response.sub_msg"), "out_trade_no"));
  Response amount = ali(port_, "alipay.trade.pay", R"({"out_trade_no":"alr","total_amount":"abc","subject":"t"})");
  Json a(amount.body);
  EXPECT_EQ(a.str("alipay_trade_pay_response.sub_code"), "isv.invalid-parameter");
  EXPECT_TRUE(has(a.str("alipay_trade_pay_response.sub_msg"), "total_amount"));
  EXPECT_TRUE(alipay_answer_verifies(amount.body));
  EXPECT_EQ(sim_->total_charges(), 0);
}

}  // namespace
