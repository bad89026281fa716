// Where the money is (issue 47 item 0), held against something this file did
// not write: the simulator's truth. Per built-in profile, a real client
// (libcurl, a SQLite ledger file) submits payments the simulator pays at
// once, leaves to their customer, or only holds; the customer acts through
// POST /__admin/customer; the simulator's signed notifications are handed to
// pay_webhook_apply as it sent them, and pay_query asks where the provider
// has a lookup. After every step the C accessor, the result JSON and
// pay_ledger_get must say one money state, and it must be the truth's
// (GET /__admin/truth: payments[0].money_state); an older word read later
// never moves it back, and a paid payment never reads failed.
#include <cJSON.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <sstream>
#include <thread>

#include "../sim/sim_client.hpp"
#include "capi_probe.hpp"
#include "raw_server.hpp"

namespace payretry_test {
namespace {

using Clock = std::chrono::steady_clock;
using simtest::admin_post;

// ---- what each profile's merchant configures, and the simulator signs with ----------------------

const char kStripeSecret[] = "whsec_payretry_sim_test";
const char kAdyenKey[] = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
const char kSquareKey[] = "sq-signature-key-test";
const char kCkoKey[] = "cko-signature-key-test";
const char kApiV3Key[] = "payretrysdkconformanceapiv3key32";
const char kPaypalWebhookId[] = "1JE4291016473214C";

// How a test asks for its payment: the provider's own request fields (docs/simulator.md "Where
// the money is"), or the flows config where the provider's request has none.
enum class Ask { now, wait, hold };

struct Spec {
  const char* profile;
  const char* now_money;   // a payment paid at once (Adyen's account captures by hand: held)
  const char* wait_money;  // a create left to its customer; "" when the provider has no such create
  bool wait_by_config;     // Mollie, WeChat Pay, Alipay: only the flows config leaves one waiting
  bool holds;              // a request field asks for an authorization only
};

const Spec kSpecs[] = {
    {"stripe", "paid", "awaiting_customer", false, true},
    {"paypal", "paid", "awaiting_customer", false, true},
    {"checkout_com", "paid", "pending", false, true},  // 202 Pending: the customer's 3-D Secure
    {"adyen", "authorized", "awaiting_customer", false, true},
    {"square", "paid", "", false, true},
    {"mollie", "paid", "awaiting_customer", true, true},
    {"wechatpay_v3", "paid", "awaiting_customer", true, false},
    {"alipay", "paid", "awaiting_customer", true, false},
};

// gtest names a failing case by its profile, not by the bytes of the struct.
void PrintTo(const Spec& s, std::ostream* os) { *os << s.profile; }

// ---- a notification as the simulator sent it --------------------------------------------------

struct Notice {
  std::string url, body;
  std::vector<std::pair<std::string, std::string>> headers;
};

Notice notice_of(const RawRequest& r, const std::string& base) {
  Notice n;
  std::istringstream head(r.head);
  std::string line, method, target;
  std::getline(head, line);
  std::istringstream(line) >> method >> target;
  n.url = base + target;  // as the provider called it (Square signs the URL)
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    n.headers.emplace_back(line.substr(0, colon), value);
  }
  n.body = r.body;
  return n;
}

// What pay_webhook_apply said of one event.
struct EventSaid {
  std::string type, effect, money, state_after;
};

class MoneyTest : public SimTest {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/payretry-money-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (sim_) sim_->stop();
    client_.reset();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  void start(const std::string& profile) {
    profile_ = profile;
    payretry_sim::Options o = SimTest::sim_options();
    o.profile = profile;
    o.seed = 47;
    o.webhook_url = hooks_.url() + "/hooks/payments";
    if (profile == "stripe") o.webhook_secret = kStripeSecret;
    if (profile == "adyen") o.webhook_secret = kAdyenKey;
    if (profile == "square") o.webhook_secret = kSquareKey;
    if (profile == "checkout_com") o.webhook_secret = kCkoKey;
    if (profile == "wechatpay_v3") o.webhook_api_v3_key = kApiV3Key;
    if (profile == "paypal") o.webhook_id = kPaypalWebhookId;
    sim_ = std::make_unique<payretry_sim::Server>(o);
    client_ = probed_client(cfg(), probe_);
    ASSERT_TRUE(client_);
  }

  std::string cfg() const {
    const std::string keys = PAYRETRY_TEST_KEYS;
    std::string auth = R"({"bearer":"sk_test_integration_secret"})", webhook = "{}";
    if (profile_ == "paypal") {
      auth = R"({"oauth2":{"client_id":"test-client-id","client_secret":"test-client-secret"}})";
      webhook = R"({"public_key_file":")" + keys + R"(/paypal_webhook_cert.pem","webhook_id":")" + kPaypalWebhookId + "\"}";
    }
    if (profile_ == "wechatpay_v3") {
      auth = R"({"wechatpay":{"serial_no":"3775B6A45ACD588826D15E583A95F5DD3F3B4DD8","private_key_file":")" + keys +
             R"(/wechat_merchant_key.pem","platform_public_key_file":")" + keys + R"(/wechat_platform_pub.pem"}})";
      webhook = std::string(R"({"api_v3_key":")") + kApiV3Key + "\"}";
    }
    if (profile_ == "alipay")
      auth = R"({"alipay":{"app_id":"2021000000000001","private_key_file":")" + keys +
             R"(/alipay_app_key.pem","alipay_public_key_file":")" + keys + R"(/alipay_pub.pem"}})";
    if (profile_ == "stripe") webhook = std::string(R"({"secret":")") + kStripeSecret + "\"}";
    if (profile_ == "adyen") webhook = std::string(R"({"secret":")") + kAdyenKey + "\"}";
    if (profile_ == "square") webhook = std::string(R"({"secret":")") + kSquareKey + "\"}";
    if (profile_ == "checkout_com") webhook = std::string(R"({"secret":")") + kCkoKey + "\"}";
    std::string c = R"({"provider":")" + profile_ + R"(","base_url":")" + base_url() + R"(","auth":)" + auth +
                    R"(,"webhook":)" + webhook +
                    R"(,"retry":{"max_attempts":3,"connect_timeout_ms":300,"attempt_timeout_ms":500,"deadline_ms":4000,)"
                    R"("backoff_base_ms":20,"backoff_cap_ms":100,"min_attempt_ms":50,"jitter_seed":7},)"
                    R"("not_found_grace_ms":0,"ledger":"sqlite://)" + dir_ + "/" + profile_ + R"(.db")";
    if (profile_ == "adyen") c += R"(,"merchant_id":"PayretrySimECOM")";
    if (profile_ == "square") c += R"(,"merchant_id":"MLPAYRETRYSIM")";
    if (profile_ == "wechatpay_v3") c += R"(,"merchant_id":"1900000109")";
    return c + "}";
  }

  // The create body each provider's own clients send, with the fields that ask for `ask`.
  std::string body(const std::string& order, Ask ask) const {
    if (profile_ == "stripe") {
      std::string b = R"({"amount":1000,"currency":"usd","metadata":{"order_id":")" + order + "\"}";
      if (ask == Ask::wait) b += R"(,"confirm":true,"payment_method":"pm_card_threeDSecure2Required")";
      if (ask == Ask::hold) b += R"(,"confirm":true,"payment_method":"pm_card_visa","capture_method":"manual")";
      return b + "}";
    }
    if (profile_ == "wechatpay_v3")
      return R"({"out_trade_no":")" + order + R"(","order_id":")" + order + R"(","amount":100})";
    if (profile_ == "alipay")
      return R"({"biz_content":{"out_trade_no":")" + order + R"(","total_amount":"10.00"}})";
    std::string b = R"({"order_id":")" + order + R"(","amount":1000,"currency":"eur")";
    if (profile_ == "paypal" && ask == Ask::wait)
      b += R"(,"payment_source":{"paypal":{"experience_context":{"return_url":"https://shop.example/r","cancel_url":"https://shop.example/c"}}})";
    if (profile_ == "paypal" && ask == Ask::hold) b += R"(,"intent":"AUTHORIZE")";
    if (profile_ == "checkout_com" && ask == Ask::wait) b += R"(,"3ds":{"enabled":true})";
    if (profile_ == "checkout_com" && ask == Ask::hold) b += R"(,"capture":false)";
    if (profile_ == "adyen") b += ask == Ask::wait ? R"(,"paymentMethod":{"type":"ideal"})" : R"(,"paymentMethod":{"type":"scheme"})";
    if (profile_ == "square" && ask == Ask::hold) b += R"(,"autocomplete":false)";
    if (profile_ == "mollie" && ask == Ask::hold) b += R"(,"captureMode":"manual")";
    return b + "}";
  }

  ResultPtr submit_ask(const std::string& order, Ask ask, bool by_config = false) {
    if (by_config) flows(R"({"wait":1})");
    const std::string b = body(order, ask);
    pay_result* r = nullptr;
    EXPECT_EQ(pay_submit(&r, client_.get(), order.c_str(), b.data(), b.size(), nullptr), PAY_OK)
        << pay_error_last()->message;
    if (by_config) flows(R"({"wait":0})");
    return ResultPtr(r);
  }
  void flows(const std::string& f) {
    const auto a = admin_post(sim_->port(), "/__admin/config", R"({"flows":)" + f + "}");
    ASSERT_EQ(a.status, 200) << a.body;
  }
  void act(const std::string& order, const std::string& action) {
    const auto a = admin_post(sim_->port(), "/__admin/customer",
                              R"({"order_id":")" + order + R"(","action":")" + action + R"("})");
    ASSERT_EQ(a.status, 200) << action << ": " << a.body;
  }

  // The simulator's truth: the money state of the order's only payment.
  std::string truth(const std::string& order) const {
    const simtest::Json j(simtest::get(sim_->port(), "/__admin/truth?order_id=" + order).body);
    const cJSON* first = cJSON_GetArrayItem(j.at("payments"), 0);
    EXPECT_EQ(cJSON_GetArraySize(j.at("payments")), 1) << order;
    return str(first, "money_state");
  }

  // The ledger's money state for the order, after checking every history
  // entry carries a known name.
  std::string row_money(const std::string& order) {
    const std::string text = ledger_get(client_.get(), order);
    Json j(text);
    const cJSON* e = nullptr;
    cJSON_ArrayForEach(e, at(j.j, "attempts")) {
      EXPECT_TRUE(kNames.count(str(e, "money_state"))) << text;
    }
    return str(at(j.j, "payment"), "money_state");
  }
  std::string row_state(const std::string& order) {
    Json j(ledger_get(client_.get(), order));
    return str(at(j.j, "payment"), "state");
  }

  // The C accessor, the result JSON and the ledger say one state; it is returned.
  std::string agreed(const pay_result* r, const std::string& order) {
    const std::string c_api = pay_money_state_name(pay_result_money_state(r));
    Json j(pay_result_json(r));
    EXPECT_EQ(str(j.j, "money_state"), c_api) << pay_result_json(r);
    EXPECT_EQ(row_money(order), c_api) << ledger_get(client_.get(), order);
    return c_api;
  }

  // Waits for the simulator's notifications beyond those taken already (at
  // least `at_least` more, up to 5 s; 300 ms more for stragglers), and
  // returns them in the order they came.
  std::vector<Notice> take_notices(size_t at_least) {
    const auto until = Clock::now() + std::chrono::seconds(5);
    while (hooks_.requests().size() < taken_ + at_least && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto all = hooks_.requests();
    std::vector<Notice> out;
    for (size_t i = taken_; i < all.size(); ++i) out.push_back(notice_of(all[i], hooks_.url()));
    taken_ = all.size();
    EXPECT_GE(out.size(), at_least) << profile_ << ": the simulator sent fewer notifications than expected";
    return out;
  }

  // Hands one notification to pay_webhook_apply; what each event said.
  std::vector<EventSaid> apply(const Notice& n) {
    std::vector<pay_header> hs;
    for (const auto& [k, v] : n.headers) hs.push_back(pay_header{k.c_str(), v.c_str()});
    pay_webhook_request req = PAY_WEBHOOK_REQUEST_INIT;
    req.method = "POST";
    req.url = n.url.c_str();
    req.headers = hs.data();
    req.header_count = hs.size();
    req.body = n.body.data();
    req.body_len = n.body.size();
    pay_webhook_reply reply{};
    const int rc = pay_webhook_apply(&reply, client_.get(), &req);
    EXPECT_EQ(rc, PAY_OK) << pay_error_last()->message;
    std::vector<EventSaid> out;
    if (rc != PAY_OK) return out;
    const std::string outcome = reply.outcome.ptr ? reply.outcome.ptr : "";
    pay_webhook_reply_dispose(&reply);
    Json j(outcome);
    EXPECT_EQ(str(j.j, "verdict"), "accepted") << outcome << "\n" << n.body;
    const cJSON* e = nullptr;
    cJSON_ArrayForEach(e, at(j.j, "events")) {
      EXPECT_TRUE(kNames.count(str(e, "money_state"))) << outcome;
      out.push_back({str(e, "type"), str(e, "effect"), str(e, "money_state"), str(e, "state_after")});
    }
    log_ += outcome + "\n";
    return out;
  }
  void apply_all(const std::vector<Notice>& ns) {
    for (const Notice& n : ns) apply(n);
  }
  ResultPtr query(const std::string& order) { return query_ok(client_.get(), order); }

  // The notifications applied, the row must read `want`; where none moved it, the provider's
  // lookup (pay_query) must.
  void reaches(const std::string& order, const std::string& want) {
    if (row_money(order) != want) {
      auto q = query(order);
      EXPECT_EQ(agreed(q.get(), order), want) << pay_result_json(q.get()) << "\n" << log_;
    }
    EXPECT_EQ(row_money(order), want) << log_ << ledger_get(client_.get(), order);
  }

  // A waiting create's money: its own answer's when the create decided (SUCCEEDED), else (Alipay's
  // 10003 asks for a query: UNKNOWN) the lookup's, and never more than waiting meanwhile.
  std::string money_after_create(const pay_result* r, const std::string& order) {
    EXPECT_NE(pay_result_outcome(r), PAY_OUTCOME_FAILED) << pay_result_json(r);
    const std::string created = agreed(r, order);
    if (pay_result_outcome(r) == PAY_OUTCOME_SUCCEEDED) return created;
    EXPECT_EQ(created, "unknown") << pay_result_json(r);
    auto q = query(order);
    EXPECT_NE(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(q.get());
    return agreed(q.get(), order);
  }

  static inline const std::set<std::string> kNames = {"unknown",         "awaiting_customer", "pending", "authorized",
                                                      "paid",            "partly_refunded",   "refunded", "failed"};
  RawServer hooks_{[](const RawRequest&) { return std::string("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"); }};
  size_t taken_ = 0;
  Probe probe_;
  ClientPtr client_;
  std::string profile_, dir_, log_;
};

class MoneyPerProfile : public MoneyTest, public ::testing::WithParamInterface<Spec> {};

// ---- paid at once -------------------------------------------------------------------------------

TEST_P(MoneyPerProfile, a_payment_paid_at_once_reads_the_truths_money_state_in_the_result_and_the_ledger) {
  const Spec& s = GetParam();
  start(s.profile);
  const std::string order = std::string("mnow_") + s.profile;
  auto r = submit_ask(order, Ask::now);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  const std::string t = truth(order);
  EXPECT_EQ(t, s.now_money);
  // WeChat Pay's create answers a prepay_id only (awaiting_customer); its
  // lookup says SUCCESS: the payment is paid only once something asks.
  if (std::string(s.profile) == "wechatpay_v3") {
    EXPECT_EQ(agreed(r.get(), order), "awaiting_customer");
    apply_all(take_notices(1));
    auto q = query(order);
    EXPECT_EQ(agreed(q.get(), order), t) << log_ << ledger_get(client_.get(), order);
    return;
  }
  EXPECT_EQ(agreed(r.get(), order), t) << pay_result_json(r.get());
  // What the create notifies (Checkout.com: payment_approved, an authorization word) lands on a
  // row that is already further: nothing moves back.
  apply_all(take_notices(0));
  EXPECT_EQ(row_money(order), t) << log_;
  EXPECT_EQ(truth(order), t);
}

// ---- left to the customer, who pays --------------------------------------------------------------

TEST_P(MoneyPerProfile, a_payment_left_to_its_customer_is_not_paid_until_the_customer_pays_and_never_moves_back) {
  const Spec& s = GetParam();
  if (!*s.wait_money) GTEST_SKIP() << s.profile << " has no card payment that waits for its customer";
  start(s.profile);
  const std::string order = std::string("mwait_") + s.profile;
  auto r = submit_ask(order, Ask::wait, s.wait_by_config);
  ASSERT_TRUE(r);
  EXPECT_EQ(truth(order), s.wait_money);
  EXPECT_EQ(money_after_create(r.get(), order), s.wait_money) << pay_result_json(r.get()) << ledger_get(client_.get(), order);
  // What the create notifies (Stripe requires_action, Checkout.com payment_pending) is kept
  // back, to be handed over only after the payment is paid: an older word, read later.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::vector<Notice> early = take_notices(0);

  act(order, "pay");
  const std::string paid = truth(order);
  EXPECT_EQ(paid, std::string(s.profile) == "adyen" ? "authorized" : "paid");
  apply_all(take_notices(1));
  reaches(order, paid);

  // The older words now: the create's notifications, then every notification again.
  for (const Notice& n : early)
    for (const EventSaid& e : apply(n)) EXPECT_NE(e.money, paid) << "not an older word: " << e.type;
  EXPECT_EQ(row_money(order), paid) << log_;
  auto q = query(order);
  EXPECT_EQ(agreed(q.get(), order), paid);
  EXPECT_EQ(truth(order), paid);
}

// ---- left to the customer, who abandons it -------------------------------------------------------

TEST_P(MoneyPerProfile, a_payment_its_customer_abandons_reads_failed) {
  const Spec& s = GetParam();
  if (!*s.wait_money) GTEST_SKIP() << s.profile << " has no card payment that waits for its customer";
  start(s.profile);
  const std::string order = std::string("mfail_") + s.profile;
  auto r = submit_ask(order, Ask::wait, s.wait_by_config);
  ASSERT_TRUE(r);
  EXPECT_EQ(money_after_create(r.get(), order), s.wait_money) << pay_result_json(r.get());
  apply_all(take_notices(0));
  act(order, "fail");
  EXPECT_EQ(truth(order), "failed");
  const auto notices = take_notices(0);
  apply_all(notices);
  // PayPal does not notify a voided order, nor WeChat Pay a closed one:
  // pay_query asks the provider again about a settled (SUCCEEDED) payment
  // whose money may still move, and its answer moves the money, the
  // outcome unchanged.
  reaches(order, "failed");
  if (notices.empty()) {
    auto q = query(order);
    EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(q.get());
  }
}

// ---- held, then captured ------------------------------------------------------------------------

TEST_P(MoneyPerProfile, a_held_payment_reads_authorized_until_captured_then_paid) {
  const Spec& s = GetParam();
  if (!s.holds) GTEST_SKIP() << s.profile << " has no request field for an authorization only";
  start(s.profile);
  const std::string order = std::string("mhold_") + s.profile;
  auto r = submit_ask(order, Ask::hold);
  ASSERT_TRUE(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  if (std::string(s.profile) == "mollie") {
    // Mollie's manual capture is open until its customer pays, then authorized.
    EXPECT_EQ(truth(order), "awaiting_customer");
    EXPECT_EQ(agreed(r.get(), order), "awaiting_customer");
    act(order, "pay");
  } else {
    EXPECT_EQ(agreed(r.get(), order), "authorized");
  }
  EXPECT_EQ(truth(order), "authorized");
  const std::vector<Notice> held = take_notices(0);
  apply_all(held);
  reaches(order, "authorized");

  act(order, "capture");
  EXPECT_EQ(truth(order), "paid");
  apply_all(take_notices(1));
  reaches(order, "paid");
  // The hold's notifications again: a duplicate each, and the row stays paid.
  apply_all(held);
  EXPECT_EQ(row_money(order), "paid") << log_;
}

INSTANTIATE_TEST_SUITE_P(Money, MoneyPerProfile, ::testing::ValuesIn(kSpecs),
                         [](const ::testing::TestParamInfo<Spec>& i) { return std::string(i.param.profile); });

// ---- a paid payment never reads failed -----------------------------------------------------------

// A second simulator, numbering PaymentIntents and keyed as the first, makes the same PaymentIntent id for the
// same order and has its customer abandon it: its payment_intent.canceled is signed with the
// merchant's secret and names the order, the key and the PaymentIntent of the first simulator's
// paid row.
// However late such a word comes, the row stays paid.
TEST_F(MoneyTest, a_paid_row_never_reads_failed_however_late_a_failure_word_for_it_comes) {
  start("stripe");
  const std::string order = "mlate_1";
  auto r = submit_ask(order, Ask::wait);
  ASSERT_EQ(agreed(r.get(), order), "awaiting_customer");
  const std::string id = pay_result_provider_payment_id(r.get()) ? pay_result_provider_payment_id(r.get()) : "";
  ASSERT_FALSE(id.empty());
  // The same key too: an event of another request is not this row's (the receiver ignores it).
  const std::string key = pay_result_idempotency_key(r.get());
  act(order, "pay");
  apply_all(take_notices(2));  // requires_action, then succeeded
  ASSERT_EQ(row_money(order), "paid") << log_;

  RawServer other_hooks([](const RawRequest&) {
    return std::string("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  });
  payretry_sim::Options o = SimTest::sim_options();
  o.profile = "stripe";
  o.seed = 48;  // its event ids come from the seed: another seed, no duplicate of the first's
  o.webhook_url = other_hooks.url() + "/hooks/payments";
  o.webhook_secret = kStripeSecret;
  payretry_sim::Server other(o);
  simtest::Conn conn(other.port());
  const std::string form = "amount=1000&currency=usd&metadata%5Border_id%5D=" + order +
                           "&confirm=true&payment_method=pm_card_threeDSecure2Required";
  const auto made = conn.request("POST", "/v1/payment_intents", form,
                                 {"Idempotency-Key: " + key, "Content-Type: application/x-www-form-urlencoded",
                                  "Authorization: Bearer sk_test_integration_secret"});
  ASSERT_EQ(simtest::Json(made.body).str("id"), id) << made.body;
  ASSERT_EQ(admin_post(other.port(), "/__admin/customer", R"({"order_id":")" + order + R"(","action":"fail"})").status, 200);
  const auto until = Clock::now() + std::chrono::seconds(5);
  while (other_hooks.requests().size() < 2 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto late = other_hooks.requests();
  ASSERT_EQ(late.size(), 2u);  // requires_action, canceled
  bool read_failed = false;
  for (const EventSaid& e : apply(notice_of(late[1], other_hooks.url()))) {
    EXPECT_EQ(e.type, "payment_intent.canceled");
    read_failed = read_failed || e.money == "failed";
    // Landed on the row (a failure word on a SUCCEEDED row is a conflict), not ignored as
    // another request's nor taken for a duplicate.
    EXPECT_EQ(e.effect, "conflict") << log_;
    EXPECT_EQ(e.state_after, "SUCCEEDED") << log_;
  }
  EXPECT_TRUE(read_failed) << log_;  // the event did say failed, and was about this row
  EXPECT_EQ(row_money(order), "paid") << log_ << ledger_get(client_.get(), order);
  EXPECT_EQ(row_state(order), "SUCCEEDED");
  auto q = query(order);
  EXPECT_EQ(agreed(q.get(), order), "paid");
  other.stop();
}

// ---- refusals ----------------------------------------------------------------------------------

// A decline is FAILED; its money is what the answer's words say where the profile maps them, else
// failed: a request the provider refused for good moved no money.
TEST_F(MoneyTest, a_decline_whose_words_the_profile_does_not_map_reads_failed) {
  for (const char* p : {"stripe", "alipay", "checkout_com"}) {
    start(p);
    const std::string order = std::string("mdecl_") + p;
    sim_->script(order, {"decline"});
    auto r = submit_ask(order, Ask::now);
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED) << pay_result_json(r.get());
    // The simulator's Stripe decline names no PaymentIntent (no error.payment_intent), Alipay's
    // code is none of the create's, Checkout.com's Declined maps to failed itself.
    EXPECT_EQ(agreed(r.get(), order), "failed") << pay_result_json(r.get());
    EXPECT_EQ(sim_->charges_for(order), 0);
    sim_->stop();
    sim_.reset();
    client_.reset();
  }
}

TEST_F(MoneyTest, a_decline_under_a_profile_that_maps_no_word_at_all_reads_failed) {
  start("stripe");
  profile_ = "generic";
  client_ = probed_client(config("generic", "", R"("ledger":"sqlite://)" + dir_ + R"(/generic.db")"), probe_);
  sim_->script("mgen_1", {"decline"});
  auto r = submit(client_.get(), "mgen_1");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED) << pay_result_json(r.get());
  EXPECT_EQ(agreed(r.get(), "mgen_1"), "failed");
  // And a success under it says nothing about the money: unknown, not paid.
  auto ok = submit(client_.get(), "mgen_2");
  EXPECT_EQ(pay_result_outcome(ok.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(ok.get());
  EXPECT_EQ(agreed(ok.get(), "mgen_2"), "unknown");
  EXPECT_EQ(truth("mgen_2"), "paid");
}

// Stripe's own decline of a PaymentIntent names it in error.payment_intent, whose status
// requires_payment_method says it can still be paid with another method (docs/providers.md): the
// simulator does not send that member, so a raw server answers as Stripe does.
TEST_F(MoneyTest, a_stripe_decline_naming_its_payment_intent_is_failed_with_the_money_awaiting_the_customer) {
  RawServer stripe([](const RawRequest&) {
    const std::string b =
        R"({"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds",)"
        R"("payment_intent":{"id":"pi_3Decl","object":"payment_intent","status":"requires_payment_method"}}})";
    return "HTTP/1.1 402 Payment Required\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(b.size()) + "\r\nConnection: close\r\n\r\n" + b;
  });
  profile_ = "stripe";
  const std::string c = R"({"provider":"stripe","base_url":")" + stripe.url() +
                        R"(","auth":{"bearer":"sk_test_x"},"retry":{"max_attempts":2,"deadline_ms":3000},)"
                        R"("ledger":"sqlite://)" + dir_ + R"(/raw.db"})";
  client_ = probed_client(c, probe_);
  auto r = submit_ask("mraw_1", Ask::wait);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED) << pay_result_json(r.get());
  EXPECT_EQ(agreed(r.get(), "mraw_1"), "awaiting_customer") << pay_result_json(r.get());
  EXPECT_EQ(stripe.requests().size(), 1u);
}

}  // namespace
}  // namespace payretry_test
