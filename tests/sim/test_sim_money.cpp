// Where the money is: each profile's create, lookup and notification carry the provider's own
// word for a payment that waits for its customer, is only held, or is paid, and the word moves
// when the customer acts (POST /__admin/customer, or the seeded clock of the flows config). The
// simulator's truth reports each payment's money state, which must be what the words say by the
// tables of docs/providers.md ("Where the money is"). Every notification must still verify with
// payretry's own verifiers.
#include <gtest/gtest.h>

#include "sim_webhooks.hpp"

namespace {

using namespace simtest;
using payretry_sim::Server;

// ---- each provider's request fields and words --------------------------------------------------

// How the test asks for a payment.
enum class Ask {
  paid,  // nothing: the payment goes through at once
  wait,  // the provider's own way of leaving it to the customer
  hold,  // the provider's own way of asking for an authorization only
};

struct Made {
  Response answer;
  std::string id;    // the payment's id ("" where the answer names none: WeChat Pay)
  std::string word;  // the create's money word
};

// PayPal's money word: the capture's status, else the authorization's, else the order's.
std::string paypal_word(const Json& j) {
  const cJSON* units = j.at("purchase_units");
  const cJSON* payments = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(units, 0), "payments");
  for (const char* kind : {"captures", "authorizations"}) {
    const cJSON* first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(payments, kind), 0);
    const cJSON* status = cJSON_GetObjectItemCaseSensitive(first, "status");
    if (cJSON_IsString(status)) return std::string(kind) + " " + status->valuestring;
  }
  return "order " + j.str("status");
}

Made create(const std::string& profile, uint16_t port, const std::string& order, Ask ask) {
  Conn c(port);
  Made m;
  if (profile == "stripe") {
    std::string body = "amount=1000&currency=usd&metadata%5Border_id%5D=" + order;
    if (ask == Ask::wait) body += "&confirm=true&payment_method=pm_card_threeDSecure2Required";
    if (ask == Ask::hold) body += "&confirm=true&payment_method=pm_card_visa&capture_method=manual";
    m.answer = c.request("POST", "/v1/payment_intents", body,
                         {"Idempotency-Key: k-" + order, "Content-Type: application/x-www-form-urlencoded"});
    const Json j(m.answer.body);
    m.id = j.str("id");
    m.word = j.str("status");
  } else if (profile == "paypal") {
    const std::string source = ask == Ask::wait
                                   ? R"(,"payment_source":{"paypal":{"experience_context":{"return_url":"https://shop.example/r","cancel_url":"https://shop.example/c"}}})"
                                   : R"(,"payment_source":{"card":{"number":"4111111111111111","expiry":"2030-03"}})";
    m.answer = c.request("POST", "/v2/checkout/orders",
                         std::string(R"({"intent":")") + (ask == Ask::hold ? "AUTHORIZE" : "CAPTURE") +
                             R"(","purchase_units":[{"reference_id":")" + order +
                             R"(","amount":{"currency_code":"USD","value":"10.00"}}])" + source + "}",
                         {bearer(paypal_token(port)), "PayPal-Request-Id: k-" + order});
    const Json j(m.answer.body);
    m.id = j.str("id");
    m.word = paypal_word(j);
  } else if (profile == "checkout_com") {
    const std::string extra = ask == Ask::wait ? R"(,"3ds":{"enabled":true})" : ask == Ask::hold ? R"(,"capture":false)" : "";
    m.answer = c.request("POST", "/payments",
                         R"({"reference":")" + order + R"(","amount":1000,"currency":"USD","source":{"type":"card"})" + extra + "}",
                         {"Cko-Idempotency-Key: k-" + order});
    const Json j(m.answer.body);
    m.id = j.str("id");
    m.word = j.str("status");
  } else if (profile == "square") {
    m.answer = c.request("POST", "/v2/payments",
                         R"({"idempotency_key":"k-)" + order + R"(","reference_id":")" + order +
                             R"(","source_id":"cnon:card-nonce-ok","amount_money":{"amount":1000,"currency":"USD"})" +
                             (ask == Ask::hold ? R"(,"autocomplete":false)" : "") + "}");
    const Json j(m.answer.body);
    m.id = j.str("payment.id");
    m.word = j.str("payment.status");
  } else if (profile == "adyen") {
    const std::string method = ask == Ask::wait ? R"({"type":"ideal"})" : R"({"type":"scheme"})";
    m.answer = c.request("POST", "/v71/payments",
                         R"({"reference":")" + order + R"(","amount":{"value":1000,"currency":"EUR"},"merchantAccount":"PayretrySimECOM","paymentMethod":)" +
                             method + "}",
                         {"idempotency-key: k-" + order});
    const Json j(m.answer.body);
    m.id = j.str("pspReference");
    m.word = j.str("resultCode");
  } else if (profile == "mollie") {
    m.answer = c.request("POST", "/v2/payments",
                         R"({"amount":{"currency":"EUR","value":"10.00"},"description":"Order","metadata":{"order_id":")" + order +
                             R"("})" + (ask == Ask::hold ? R"(,"captureMode":"manual")" : "") + "}",
                         {"Idempotency-Key: k-" + order});
    const Json j(m.answer.body);
    m.id = j.str("id");
    m.word = j.str("status");
  } else if (profile == "wechatpay_v3") {
    const std::string target = "/v3/pay/transactions/jsapi";
    const std::string body = R"({"appid":"wxd678efh567hg6787","mchid":"1900000109","description":"test","out_trade_no":")" +
                             order + R"(","notify_url":"https://example.com/n","amount":{"total":1000,"currency":"CNY"},"payer":{"openid":"o1"}})";
    m.answer = c.request("POST", target, body, {wechat_authorization("POST", target, body)});
    m.word = Json(m.answer.body).str("prepay_id").empty() ? "" : "prepay_id";
  } else if (profile == "alipay") {
    const GatewayRequest g = alipay_call(
        "alipay.trade.pay",
        R"({"out_trade_no":")" + order + R"(","total_amount":"10.00","subject":"test","scene":"bar_code","auth_code":"28763443825664394"})");
    m.answer = c.request("POST", g.target, g.body, g.headers);
    const Json j(m.answer.body);
    m.id = j.str("alipay_trade_pay_response.trade_no");
    m.word = j.str("alipay_trade_pay_response.code");
  }
  return m;
}

// The lookup's money word ("" where the provider has no lookup: Adyen).
std::string look_up(const std::string& profile, uint16_t port, const std::string& id, const std::string& order) {
  Conn c(port);
  if (profile == "stripe") return Json(c.request("GET", "/v1/payment_intents/" + id).body).str("status");
  if (profile == "paypal") {
    return paypal_word(Json(c.request("GET", "/v2/checkout/orders/" + id, "", {bearer(paypal_token(port))}).body));
  }
  if (profile == "checkout_com") return Json(c.request("GET", "/payments/" + id).body).str("status");
  if (profile == "square") return Json(c.request("GET", "/v2/payments/" + id).body).str("payment.status");
  if (profile == "mollie") return Json(c.request("GET", "/v2/payments/" + id).body).str("status");
  if (profile == "wechatpay_v3") {
    const std::string target = "/v3/pay/transactions/out-trade-no/" + order + "?mchid=1900000109";
    return Json(c.request("GET", target, "", {wechat_authorization("GET", target, "")}).body).str("trade_state");
  }
  if (profile == "alipay") {
    const GatewayRequest g = alipay_call("alipay.trade.query", R"({"out_trade_no":")" + order + R"("})");
    return Json(c.request("POST", g.target, g.body, g.headers).body).str("alipay_trade_query_response.trade_status");
  }
  return "";
}

// The money state the simulator's truth holds for the order's only payment.
std::string truth_state(uint16_t port, const std::string& order) {
  const Json j(get(port, "/__admin/truth?order_id=" + order).body);
  const cJSON* first = cJSON_GetArrayItem(j.at("payments"), 0);
  const cJSON* state = cJSON_GetObjectItemCaseSensitive(first, "money_state");
  return cJSON_IsString(state) ? state->valuestring : "";
}

Response act(uint16_t port, const std::string& order, const std::string& action) {
  return admin_post(port, "/__admin/customer", R"({"order_id":")" + order + R"(","action":")" + action + R"("})");
}

// The words of the notifications that verified and name `order`, in the order they came. Mollie's
// carry only an id, which the lookup turns into its status, as its receivers do.
std::vector<std::string> notified(const Merchant& m, Receiver& rx, uint16_t port, const std::string& order) {
  std::vector<std::string> words;
  for (const auto& g : rx.all()) {
    const WebhookVerdict v = verify(m, g.request);
    if (m.profile == "mollie") {
      if (v.kind != WebhookVerdict::hint_only || v.items.empty()) continue;
      const Json looked(get(port, "/v2/payments/" + v.items[0]).body);
      if (looked.str("metadata.order_id") == order) words.push_back(looked.str("status"));
      continue;
    }
    EXPECT_EQ(v.kind, WebhookVerdict::verified) << m.profile << ": " << v.why << "\n" << g.request.body;
    if (v.kind != WebhookVerdict::verified) continue;
    const Json j(v.body);
    const Read r = read_event(m.profile, v.body);
    // Adyen names a capture's payment in originalReference and the order in merchantReference.
    if (r.order != order) continue;
    // Stripe's, Checkout.com's and PayPal's event type says the move; the others' status word.
    if (m.profile == "stripe") words.push_back(j.str("type"));
    else words.push_back(r.state);
  }
  return words;
}

// Waits until `n` notifications name `order` (or 5 s went by).
std::vector<std::string> wait_notified(const Merchant& m, Receiver& rx, uint16_t port, const std::string& order,
                                       std::size_t n) {
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  std::vector<std::string> words;
  while ((words = notified(m, rx, port, order)).size() < n && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return words;
}

// One provider's expected words. A notification list names the words in the order they come;
// "" for a lookup where the provider has none.
struct Words {
  const char* profile;
  // A payment that waits for its customer, then the customer pays; or abandons it.
  Ask wait_ask;  // Ask::wait, or Ask::hold where the provider's waiting create is the held one's
  const char* wait_create;
  const char* wait_lookup;
  const char* wait_truth;
  std::vector<std::string> wait_notices;  // of the create
  const char* paid_lookup;                // after the customer paid
  const char* paid_truth;
  std::vector<std::string> paid_notices;  // of the move
  const char* failed_lookup;              // after the customer abandoned
  std::vector<std::string> failed_notices;
  // A payment paid at once.
  const char* now_create;
  const char* now_lookup;
  const char* now_truth;
  std::vector<std::string> now_notices;
  // Whether the flow needs the flows config (the provider's request has no such field).
  bool needs_config;
};

const Words kWords[] = {
    {"stripe", Ask::wait, "requires_action", "requires_action", "awaiting_customer",
     {"payment_intent.requires_action"}, "succeeded", "paid", {"payment_intent.succeeded"},
     "canceled", {"payment_intent.canceled"},
     "succeeded", "succeeded", "paid", {"payment_intent.succeeded"}, false},
    {"paypal", Ask::wait, "order PAYER_ACTION_REQUIRED", "order PAYER_ACTION_REQUIRED", "awaiting_customer", {},
     "captures COMPLETED", "paid", {"PAYMENT.CAPTURE.COMPLETED"}, "order VOIDED", {},
     "captures COMPLETED", "captures COMPLETED", "paid", {"PAYMENT.CAPTURE.COMPLETED"}, false},
    {"checkout_com", Ask::wait, "Pending", "Pending", "pending", {"payment_pending"}, "Captured", "paid",
     {"payment_captured"}, "Declined", {"payment_declined"},
     "Captured", "Captured", "paid", {"payment_approved"}, false},
    {"adyen", Ask::wait, "RedirectShopper", "", "awaiting_customer", {}, "", "authorized", {"AUTHORISATION:true"}, "",
     {"AUTHORISATION:false"},
     "Authorised", "", "authorized", {"AUTHORISATION:true"}, false},
    {"mollie", Ask::wait, "open", "open", "awaiting_customer", {}, "paid", "paid", {"paid"}, "expired", {"expired"},
     "paid", "paid", "paid", {"paid"}, true},
    {"wechatpay_v3", Ask::wait, "prepay_id", "NOTPAY", "awaiting_customer", {}, "SUCCESS", "paid", {"SUCCESS"}, "CLOSED", {},
     "prepay_id", "SUCCESS", "paid", {"SUCCESS"}, true},
    {"alipay", Ask::wait, "10003", "WAIT_BUYER_PAY", "awaiting_customer", {}, "TRADE_SUCCESS", "paid", {"TRADE_SUCCESS"},
     "TRADE_CLOSED", {"TRADE_CLOSED"},
     "10000", "TRADE_SUCCESS", "paid", {"TRADE_SUCCESS"}, true},
};

class SimMoney : public ::testing::TestWithParam<Words> {
 protected:
  void SetUp() override {
    sim_ = std::make_unique<Server>(sim_options(GetParam().profile, rx_.url()));
    merchant_ = setup_for(GetParam().profile, rx_.url());
  }
  uint16_t port() const { return sim_->port(); }
  // Mollie, WeChat Pay and Alipay leave a payment to its customer by the flows config: their
  // requests have no field for it (every real one waits; the simulator's default pays at once).
  void wait_by_config(bool on) {
    const std::string flows = on ? R"({"flows":{"wait":1}})" : R"({"flows":{"wait":0}})";
    ASSERT_EQ(admin_post(port(), "/__admin/config", flows).status, 200);
  }
  Made make_waiting(const std::string& order) {
    const Words& w = GetParam();
    if (w.needs_config) wait_by_config(true);
    Made m = create(w.profile, port(), order, w.wait_ask);
    if (w.needs_config) wait_by_config(false);
    return m;
  }

  Receiver rx_;
  std::unique_ptr<Server> sim_;
  Merchant merchant_;
};

TEST_P(SimMoney, a_payment_that_waits_for_its_customer_says_so_until_the_customer_pays) {
  const Words& w = GetParam();
  const std::string order = std::string("wait-pay-") + w.profile;
  const Made m = make_waiting(order);
  ASSERT_GE(m.answer.status, 200) << m.answer.body;
  ASSERT_LE(m.answer.status, 299) << m.answer.body;
  EXPECT_EQ(m.word, w.wait_create) << m.answer.body;
  EXPECT_EQ(look_up(w.profile, port(), m.id, order), w.wait_lookup);
  EXPECT_EQ(truth_state(port(), order), w.wait_truth);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // what the create notifies has come
  EXPECT_EQ(notified(merchant_, rx_, port(), order), w.wait_notices);

  const Response acted = act(port(), order, "pay");
  ASSERT_EQ(acted.status, 200) << acted.body;
  EXPECT_EQ(look_up(w.profile, port(), m.id, order), w.paid_lookup);
  EXPECT_EQ(truth_state(port(), order), w.paid_truth);
  std::vector<std::string> expected = w.wait_notices;
  expected.insert(expected.end(), w.paid_notices.begin(), w.paid_notices.end());
  EXPECT_EQ(wait_notified(merchant_, rx_, port(), order, expected.size()), expected);
  // The payment does not move twice.
  EXPECT_EQ(act(port(), order, "pay").status, 409);
}

TEST_P(SimMoney, a_payment_its_customer_abandons_fails_and_moved_no_money) {
  const Words& w = GetParam();
  const std::string order = std::string("wait-fail-") + w.profile;
  const Made m = make_waiting(order);
  ASSERT_EQ(m.word, w.wait_create) << m.answer.body;
  const Response acted = act(port(), order, "fail");
  ASSERT_EQ(acted.status, 200) << acted.body;
  EXPECT_EQ(look_up(w.profile, port(), m.id, order), w.failed_lookup);
  EXPECT_EQ(truth_state(port(), order), "failed");
  std::vector<std::string> expected = w.wait_notices;
  expected.insert(expected.end(), w.failed_notices.begin(), w.failed_notices.end());
  EXPECT_EQ(wait_notified(merchant_, rx_, port(), order, expected.size()), expected);
  // Failed is final: the customer cannot pay it any more.
  EXPECT_EQ(act(port(), order, "pay").status, 409);
  const Json truth(get(port(), "/__admin/truth").body);
  EXPECT_EQ(truth.num("money.failed"), 1);
  EXPECT_EQ(truth.num("money.paid"), 0);
  EXPECT_EQ(truth.num("charges"), 1);  // a payment was made; no money moved
}

TEST_P(SimMoney, a_payment_paid_at_once_says_paid_in_its_answer_lookup_and_notification) {
  const Words& w = GetParam();
  const std::string order = std::string("now-") + w.profile;
  const Made m = create(w.profile, port(), order, Ask::paid);
  EXPECT_EQ(m.word, w.now_create) << m.answer.body;
  EXPECT_EQ(look_up(w.profile, port(), m.id, order), w.now_lookup);
  EXPECT_EQ(truth_state(port(), order), w.now_truth);
  EXPECT_EQ(wait_notified(merchant_, rx_, port(), order, w.now_notices.size()), w.now_notices);
}

INSTANTIATE_TEST_SUITE_P(Profiles, SimMoney, ::testing::ValuesIn(kWords),
                         [](const ::testing::TestParamInfo<Words>& i) { return std::string(i.param.profile); });

// ---- held payments: authorized, then captured or voided -----------------------------------------

struct Hold {
  const char* profile;
  const char* create, *lookup;         // held
  std::vector<std::string> notices;    // of the create
  const char* captured_lookup;
  std::vector<std::string> captured_notices;
  const char* voided_lookup;
  std::vector<std::string> voided_notices;
};

const Hold kHolds[] = {
    {"stripe", "requires_capture", "requires_capture", {"payment_intent.amount_capturable_updated"}, "succeeded",
     {"payment_intent.succeeded"}, "canceled", {"payment_intent.canceled"}},
    {"paypal", "authorizations CREATED", "authorizations CREATED", {"PAYMENT.AUTHORIZATION.CREATED"}, "captures COMPLETED",
     {"PAYMENT.CAPTURE.COMPLETED"}, "authorizations VOIDED", {"PAYMENT.AUTHORIZATION.VOIDED"}},
    {"checkout_com", "Authorized", "Authorized", {"payment_approved"}, "Captured", {"payment_captured"}, "Voided",
     {"payment_voided"}},
    {"square", "APPROVED", "APPROVED", {"APPROVED"}, "COMPLETED", {"COMPLETED"}, "CANCELED", {"CANCELED"}},
    {"adyen", "Authorised", "", {"AUTHORISATION:true"}, "", {"CAPTURE:true"}, "", {"CANCELLATION:true"}},
};

class SimHold : public ::testing::TestWithParam<Hold> {};

TEST_P(SimHold, a_held_payment_is_authorized_until_captured_or_voided) {
  const Hold& h = GetParam();
  Receiver rx;
  Server sim(sim_options(h.profile, rx.url()));
  const Merchant merchant = setup_for(h.profile, rx.url());
  for (const std::string end : {"capture", "fail"}) {
    const std::string order = std::string("hold-") + end + "-" + h.profile;
    const Made m = create(h.profile, sim.port(), order, Ask::hold);
    EXPECT_EQ(m.word, h.create) << m.answer.body;
    EXPECT_EQ(look_up(h.profile, sim.port(), m.id, order), h.lookup);
    EXPECT_EQ(truth_state(sim.port(), order), "authorized");
    EXPECT_EQ(wait_notified(merchant, rx, sim.port(), order, h.notices.size()), h.notices);
    ASSERT_EQ(act(sim.port(), order, end).status, 200);
    const bool captured = end == "capture";
    EXPECT_EQ(look_up(h.profile, sim.port(), m.id, order), captured ? h.captured_lookup : h.voided_lookup);
    EXPECT_EQ(truth_state(sim.port(), order), captured ? "paid" : "failed");
    std::vector<std::string> expected = h.notices;
    const auto& more = captured ? h.captured_notices : h.voided_notices;
    expected.insert(expected.end(), more.begin(), more.end());
    EXPECT_EQ(wait_notified(merchant, rx, sim.port(), order, expected.size()), expected) << end;
  }
  const Json truth(get(sim.port(), "/__admin/truth").body);
  EXPECT_EQ(truth.num("money.paid"), 1);
  EXPECT_EQ(truth.num("money.failed"), 1);
  EXPECT_EQ(truth.num("money.authorized"), 0);
}

INSTANTIATE_TEST_SUITE_P(Profiles, SimHold, ::testing::ValuesIn(kHolds),
                         [](const ::testing::TestParamInfo<Hold>& i) { return std::string(i.param.profile); });

// ---- the seeded customer -----------------------------------------------------------------------

// The flows config picks, per order and from the seed, which payments wait and whether their
// customer pays; the clock moves them after_ms later. Two runs with one seed agree.
std::map<std::string, std::string> seeded_run(uint64_t seed) {
  Options o = fast_options();
  o.profile = "stripe";
  o.seed = seed;
  Server sim(o);
  EXPECT_EQ(admin_post(sim.port(), "/__admin/config", R"({"flows":{"wait":0.5,"after_ms":100,"pays":0.5}})").status, 200);
  std::map<std::string, std::string> first;
  for (int i = 0; i < 24; ++i) {
    const std::string order = "seeded-" + std::to_string(i);
    first[order] = create("stripe", sim.port(), order, Ask::paid).word;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  std::map<std::string, std::string> out;
  for (const auto& [order, word] : first) out[order] = word + " -> " + truth_state(sim.port(), order);
  return out;
}

TEST(SimMoneyClock, the_seeded_customer_pays_or_abandons_the_same_payments_in_every_run) {
  const auto a = seeded_run(7);
  const auto b = seeded_run(7);
  EXPECT_EQ(a, b);
  int waited = 0, paid_later = 0, abandoned = 0, paid_now = 0;
  for (const auto& [order, seen] : a) {
    if (seen == "requires_action -> paid") ++paid_later, ++waited;
    else if (seen == "requires_action -> failed") ++abandoned, ++waited;
    else if (seen == "succeeded -> paid") ++paid_now;
    else ADD_FAILURE() << order << ": " << seen;
  }
  // 24 orders at one half each way: every kind is there.
  EXPECT_GT(paid_later, 0);
  EXPECT_GT(abandoned, 0);
  EXPECT_GT(paid_now, 0);
  EXPECT_EQ(waited + paid_now, 24);
  EXPECT_NE(seeded_run(8), a);  // another seed, other choices
}

TEST(SimMoneyAdmin, the_customer_call_names_a_payment_by_id_or_order_and_refuses_what_it_cannot_do) {
  Options o = fast_options();
  Server sim(o);
  const Made m = create("stripe", sim.port(), "adm-1", Ask::wait);
  ASSERT_EQ(m.word, "requires_action");
  EXPECT_EQ(admin_post(sim.port(), "/__admin/customer", R"({"id":"pi_999999","action":"pay"})").status, 404);
  EXPECT_EQ(admin_post(sim.port(), "/__admin/customer", R"({"order_id":"nobody","action":"pay"})").status, 404);
  EXPECT_EQ(admin_post(sim.port(), "/__admin/customer", R"({"id":")" + m.id + R"(","action":"dance"})").status, 400);
  EXPECT_EQ(admin_post(sim.port(), "/__admin/customer", R"({"id":")" + m.id + R"(","action":"capture"})").status, 409);
  const Response paid = admin_post(sim.port(), "/__admin/customer", R"({"id":")" + m.id + R"(","action":"pay"})");
  ASSERT_EQ(paid.status, 200) << paid.body;
  const Json j(paid.body);
  const cJSON* first = cJSON_GetArrayItem(j.at("moved"), 0);
  EXPECT_STREQ(cJSON_GetObjectItem(first, "id")->valuestring, m.id.c_str());
  EXPECT_STREQ(cJSON_GetObjectItem(first, "money_state")->valuestring, "paid");
  EXPECT_EQ(admin_post(sim.port(), "/__admin/config", R"({"flows":{"wait":0.7,"hold":0.5}})").status, 400);
  EXPECT_EQ(admin_post(sim.port(), "/__admin/config", R"({"flows":{"tip":1}})").status, 400);
}

}  // namespace
