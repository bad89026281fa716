// payretry-sim's notifications (webhooks) held against payretry's own verifiers
// (src/auth/webhook_scheme.hpp, verify_webhook): a tiny receiver here takes what the simulator
// sends for payments made through its real loopback API, and every notification must verify
// with the secrets a merchant would configure, carry the order the create named and the id the
// simulator gave the payment, and read as the final state. The forged and stale copies the
// delivery faults add must be refused. The verifiers were written apart from the simulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "sim_webhooks.hpp"
#include "webhook_sender.hpp"

namespace {

using namespace simtest;
using payretry::WebhookRequest;
using payretry::WebhookSecrets;
using payretry::WebhookVerdict;
using payretry_sim::Server;

struct Expect {
  const char* profile;
  const char* charged;   // the state word of a charge
  const char* declined;  // ... of a decline; nullptr: the provider notifies none
};

const Expect kProfiles[] = {
    {"stripe", "succeeded", "requires_payment_method"},
    {"adyen", "AUTHORISATION:true", "AUTHORISATION:false"},
    {"square", "COMPLETED", "FAILED"},
    {"checkout_com", "payment_approved", "payment_declined"},
    {"mollie", "paid", nullptr},
    {"wechatpay_v3", "SUCCESS", nullptr},
    {"alipay", "TRADE_SUCCESS", "TRADE_CLOSED"},
    {"paypal", "PAYMENT.CAPTURE.COMPLETED", nullptr},
};

class SimWebhooks : public ::testing::TestWithParam<Expect> {};

TEST_P(SimWebhooks, every_final_state_is_notified_in_a_form_payretry_verifies) {
  const Expect& x = GetParam();
  Receiver rx;
  Server sim(sim_options(x.profile, rx.url()));
  const Merchant s = setup_for(x.profile, rx.url());
  const std::string paid_order = std::string("wh-paid-") + x.profile;
  const std::string declined_order = std::string("wh-declined-") + x.profile;
  const std::string id = pay(x.profile, sim.port(), paid_order);
  script_decline(sim.port(), declined_order);
  pay(x.profile, sim.port(), declined_order);
  const std::size_t expected = x.declined ? 2 : 1;
  const auto got = rx.wait_for(expected);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // nothing more comes
  ASSERT_EQ(rx.all().size(), expected);

  for (const auto& g : got) {
    const WebhookVerdict v = verify(s, g.request);
    if (std::string(x.profile) == "mollie") {
      // Unsigned by design: a hint to look the payment up, which must then tell the order.
      ASSERT_EQ(v.kind, WebhookVerdict::hint_only) << v.why;
      ASSERT_EQ(v.items.size(), 1u);
      EXPECT_EQ(v.items[0], id);
      const Response looked = get(sim.port(), "/v2/payments/" + v.items[0]);
      EXPECT_EQ(Json(looked.body).str("metadata.order_id"), paid_order) << looked.body;
      EXPECT_EQ(Json(looked.body).str("status"), "paid") << looked.body;
      continue;
    }
    ASSERT_EQ(v.kind, WebhookVerdict::verified) << x.profile << ": " << v.why << "\n" << g.request.body;
    EXPECT_EQ(g.request.method, "POST");
    const Read r = read_event(x.profile, v.body);
    const bool paid = r.order == paid_order;
    EXPECT_TRUE(paid || r.order == declined_order) << v.body;
    EXPECT_EQ(r.state, paid ? x.charged : x.declined) << v.body;
    EXPECT_FALSE(r.provider_id.empty()) << v.body;
    if (paid && !id.empty()) {
      EXPECT_EQ(r.provider_id, id) << v.body;
    }
    if (paid) {
      // The id is the one the simulator's truth holds for the order.
      const Json truth(get(sim.port(), "/__admin/truth?order_id=" + paid_order).body);
      EXPECT_EQ(cJSON_GetArrayItem(truth.at("ids"), 0)->valuestring, r.provider_id);
    }
  }
  const Json log(get(sim.port(), "/__admin/webhooks").body);
  ASSERT_EQ(cJSON_GetArraySize(log.at("notifications")), static_cast<int>(expected));
  for (const cJSON* n = log.at("notifications")->child; n; n = n->next) {
    EXPECT_STREQ(cJSON_GetObjectItem(n, "kind")->valuestring, "real");
    EXPECT_EQ(cJSON_GetObjectItem(n, "attempts")->valuedouble, 1);
    EXPECT_EQ(cJSON_GetObjectItem(n, "last_status")->valuedouble, 200);
  }
}

TEST_P(SimWebhooks, forged_copies_are_refused_and_stale_ones_where_the_scheme_has_a_window) {
  const Expect& x = GetParam();
  if (std::string(x.profile) == "mollie") GTEST_SKIP() << "Mollie's id-only notifications are never verified";
  Receiver rx;
  Server sim(sim_options(x.profile, rx.url(), "forge=1,stale=1"));
  const Merchant s = setup_for(x.profile, rx.url());
  pay(x.profile, sim.port(), std::string("wh-forge-") + x.profile);
  const bool windowed = s.scheme == "stripe" || s.scheme == "wechatpay_v3";
  const std::size_t expected = windowed ? 3 : 2;  // the real one, the forged one, (the stale one)
  const auto got = rx.wait_for(expected);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(rx.all().size(), expected);
  int verified = 0, refused = 0;
  for (const auto& g : got) {
    const WebhookVerdict v = verify(s, g.request);
    (v.kind == WebhookVerdict::verified ? verified : refused) += 1;
    if (v.kind != WebhookVerdict::verified) {
      const bool late = v.why.find("too old") != std::string::npos;
      EXPECT_TRUE(late || v.why.find("signature") != std::string::npos) << v.why;
    }
  }
  EXPECT_EQ(verified, 1);
  EXPECT_EQ(refused, static_cast<int>(expected) - 1);
  const std::string log = get(sim.port(), "/__admin/webhooks").body;
  EXPECT_NE(log.find(R"("kind":"forged")"), std::string::npos) << log;
  EXPECT_EQ(log.find(R"("kind":"stale")") != std::string::npos, windowed) << log;
}

INSTANTIATE_TEST_SUITE_P(Profiles, SimWebhooks, ::testing::ValuesIn(kProfiles),
                         [](const ::testing::TestParamInfo<Expect>& i) { return std::string(i.param.profile); });

TEST(SimWebhookDelivery, a_receiver_that_answers_no_2xx_gets_it_again_until_one) {
  Receiver rx;
  rx.fail_next(2, 503);
  Server sim(sim_options("checkout_com", rx.url()));
  pay("checkout_com", sim.port(), "wh-retry");
  const auto got = rx.wait_for(3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].request.body, got[2].request.body);  // the same notification each time
  EXPECT_GE(got[1].at - got[0].at, std::chrono::milliseconds(80));  // with a backoff between
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(rx.all().size(), 3u);  // a 2xx ends it
  const Json log(get(sim.port(), "/__admin/webhooks").body);
  const cJSON* n = cJSON_GetArrayItem(log.at("notifications"), 0);
  EXPECT_EQ(cJSON_GetObjectItem(n, "attempts")->valuedouble, 3);
  EXPECT_EQ(cJSON_GetObjectItem(n, "last_status")->valuedouble, 200);
  EXPECT_TRUE(cJSON_IsTrue(cJSON_GetObjectItem(n, "delivered")));
}

TEST(SimWebhookDelivery, a_receiver_that_never_answers_2xx_is_given_up_on_after_a_few_tries) {
  Receiver rx;
  rx.fail_next(1000, 500);
  Server sim(sim_options("stripe", rx.url()));
  pay("stripe", sim.port(), "wh-never");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // 100 + 200 + 400 ms of backoff
  EXPECT_EQ(rx.all().size(), static_cast<std::size_t>(payretry_sim::WebhookSender::kMaxAttempts));
  const Json log(get(sim.port(), "/__admin/webhooks").body);
  const cJSON* n = cJSON_GetArrayItem(log.at("notifications"), 0);
  EXPECT_FALSE(cJSON_IsTrue(cJSON_GetObjectItem(n, "delivered")));
  EXPECT_EQ(cJSON_GetObjectItem(n, "last_status")->valuedouble, 500);
}

TEST(SimWebhookDelivery, an_early_notification_arrives_before_the_client_has_its_answer) {
  Receiver rx;
  Server sim(sim_options("adyen", rx.url(), "early=1"));
  pay("adyen", sim.port(), "wh-early");
  const auto answered = Clock::now();
  const auto got = rx.wait_for(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_LT(got[0].at, answered);
  EXPECT_NE(get(sim.port(), "/__admin/webhooks").body.find(R"("early":true)"), std::string::npos);
}

TEST(SimWebhookDelivery, dup_and_replay_resend_a_notification_a_receiver_must_dedupe) {
  Receiver rx;
  Server sim(sim_options("stripe", rx.url(), "dup=1,replay=1"));
  pay("stripe", sim.port(), "wh-a");
  rx.wait_for(2);  // a's real one and its dup (its replay resends a itself: nothing earlier)
  pay("stripe", sim.port(), "wh-b");
  const auto got = rx.wait_for(6);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const auto all = rx.all();
  ASSERT_EQ(all.size(), 6u);
  const Merchant s = setup_for("stripe", rx.url());
  std::map<std::string, int> per_event;
  for (const auto& g : all) {
    const WebhookVerdict v = verify(s, g.request);
    ASSERT_EQ(v.kind, WebhookVerdict::verified) << v.why;  // replays of signed bytes still verify
    ++per_event[Json(v.body).str("id")];
  }
  // a: real, dup, its own replay and b's replay of it; b: real and dup.
  ASSERT_EQ(per_event.size(), 2u);
  std::vector<int> counts;
  for (const auto& [id, n] : per_event) counts.push_back(n);
  std::sort(counts.begin(), counts.end());
  EXPECT_EQ(counts, (std::vector<int>{2, 4}));
}

TEST(SimWebhookDelivery, one_seed_writes_the_same_notifications_and_faults) {
  auto run = [](uint64_t seed) {
    Receiver rx;
    Options o = sim_options("checkout_com", rx.url(), "forge=0.5,dup=0.5,reorder=0.5");
    o.seed = seed;
    Server sim(o);
    for (int i = 0; i < 6; ++i) pay("checkout_com", sim.port(), "wh-seed-" + std::to_string(i));
    std::this_thread::sleep_for(std::chrono::milliseconds(900));
    std::string kinds;
    const Json log(get(sim.port(), "/__admin/webhooks").body);
    for (const cJSON* n = log.at("notifications")->child; n; n = n->next) {
      kinds += std::string(cJSON_GetObjectItem(n, "event_id")->valuestring) + "/" +
               cJSON_GetObjectItem(n, "kind")->valuestring + "/" +
               (cJSON_IsTrue(cJSON_GetObjectItem(n, "reordered")) ? "r" : "-") + " ";
    }
    return kinds;
  };
  const std::string first = run(7);
  EXPECT_EQ(first, run(7));
  EXPECT_NE(first, run(8));
  EXPECT_NE(first.find("forged"), std::string::npos) << first;
  EXPECT_NE(first.find("dup"), std::string::npos) << first;
}

TEST(SimWebhookOptions, settings_a_profile_needs_are_asked_for_at_start) {
  Options o = sim_options("stripe", "http://127.0.0.1:9/h");
  o.webhook_secret.clear();
  EXPECT_THROW(Server{o}, std::invalid_argument);
  o = sim_options("wechatpay_v3", "http://127.0.0.1:9/h");
  o.webhook_api_v3_key = "short";
  EXPECT_THROW(Server{o}, std::invalid_argument);
  o = sim_options("adyen", "http://127.0.0.1:9/h");
  o.webhook_secret = "not hex";
  EXPECT_THROW(Server{o}, std::invalid_argument);
  o = sim_options("stripe", "https://127.0.0.1:9/h");
  EXPECT_THROW(Server{o}, std::invalid_argument);
  o = sim_options("stripe", "http://127.0.0.1:9/h", "dup=2");
  EXPECT_THROW(Server{o}, std::invalid_argument);
  o = sim_options("stripe", "http://127.0.0.1:9/h", "lost=0.1");
  EXPECT_THROW(Server{o}, std::invalid_argument);
}

TEST(SimWebhookOptions, webhook_faults_can_be_changed_at_run_time) {
  Receiver rx;
  Server sim(sim_options("square", rx.url()));
  Response r = admin_post(sim.port(), "/__admin/config", R"({"webhook_faults":"forge=1","latency_ms":0})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(admin_post(sim.port(), "/__admin/config", R"({"webhook_faults":"bogus=1"})").status, 400);
  pay("square", sim.port(), "wh-runtime");
  rx.wait_for(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(rx.all().size(), 2u);
  EXPECT_NE(get(sim.port(), "/__admin/webhooks").body.find(R"("forge":1)"), std::string::npos);
}

}  // namespace
