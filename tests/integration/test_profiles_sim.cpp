// Each built-in provider profile against the simulator playing that
// provider: its identity, its replay semantics, and how an undetermined
// payment is settled (a same-key retry where the provider replays, a query
// where a blind retry could charge twice).
#include <cJSON.h>

#include <string>
#include <vector>

#include "sim_fixture.hpp"

namespace payretry_test {
namespace {

class ProfileSim : public SimTest {
 protected:
  void SetUp() override {}  // each test starts the simulator as the provider it needs
  void start(const std::string& profile) {
    auto o = sim_options();
    o.profile = profile;
    sim_ = std::make_unique<payretry_sim::Server>(o);
  }
  // What each provider takes as authentication (tests/keys/README.md); the
  // fixture's simulator checks WeChat Pay's and Alipay's signatures and takes
  // only PayPal's OAuth2 tokens.
  static std::string auth_for(const std::string& provider) {
    const std::string keys = PAYRETRY_TEST_KEYS;
    if (provider == "paypal")
      return R"({"oauth2":{"client_id":"test-client-id","client_secret":"test-client-secret"}})";
    if (provider == "wechatpay_v3")
      return R"({"wechatpay":{"serial_no":"3775B6A45ACD588826D15E583A95F5DD3F3B4DD8","private_key_file":")" + keys +
             R"(/wechat_merchant_key.pem","platform_public_key_file":")" + keys + R"(/wechat_platform_pub.pem"}})";
    if (provider == "alipay")
      return R"({"alipay":{"app_id":"2021000000000001","private_key_file":")" + keys +
             R"(/alipay_app_key.pem","alipay_public_key_file":")" + keys + R"(/alipay_pub.pem"}})";
    return R"({"bearer":"sk_test_integration_secret"})";
  }
  // The profile's own create path; only the retry timings are the test's.
  std::string cfg(const std::string& provider, const std::string& extra = "") {
    return R"({"provider":")" + provider + R"(","base_url":")" + base_url() + R"(","auth":)" + auth_for(provider) +
           R"(,"retry":{"max_attempts":4,"connect_timeout_ms":300,)"
           R"("attempt_timeout_ms":300,"deadline_ms":6000,"backoff_base_ms":20,"backoff_cap_ms":200,"min_attempt_ms":50,)"
           R"("jitter_seed":7},"not_found_grace_ms":0)" +
           (extra.find("\"ledger\"") == std::string::npos ? R"(,"ledger":"memory:")" : "") +
           (extra.empty() ? "" : "," + extra) + "}";
  }
  ResultPtr query(pay_client* c, const std::string& order) {
    pay_result* r = nullptr;
    EXPECT_EQ(pay_query(&r, c, order.c_str()), PAY_OK) << pay_error_last()->message;
    return ResultPtr(r);
  }
  static std::string attempt_field(const pay_result* r, int i, const char* k) {
    cJSON* j = cJSON_Parse(pay_result_json(r));
    const cJSON* v = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "attempts"), i), k);
    std::string out = cJSON_IsString(v) ? v->valuestring : cJSON_IsNumber(v) ? std::to_string(v->valueint) : "";
    cJSON_Delete(j);
    return out;
  }
};

TEST_F(ProfileSim, CheckoutComServerErrorIsQueriedNeverBlindlyRetried) {
  // Checkout.com caches only 2xx: a same-key retry after a 500 would run the
  // payment again. The profile stops and asks instead.
  start("checkout_com");
  sim_->script("co-500", {"500"});
  auto c = client(cfg("checkout_com"));
  auto r = submit(c.get(), "co-500");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_attempts(r.get()), 1);
  EXPECT_EQ(sim_->charges_for("co-500"), 1);
  auto q = query(c.get(), "co-500");
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(q.get());
  EXPECT_STREQ(pay_result_provider_status(q.get()), "Captured");
  EXPECT_EQ(sim_->charges_for("co-500"), 1);
  EXPECT_EQ(sim_->duplicate_orders(), 0);
}

TEST_F(ProfileSim, CheckoutComDeclineIn201IsFailed) {
  start("checkout_com");
  sim_->script("co-decl", {"decline"});
  auto c = client(cfg("checkout_com"));
  auto r = submit(c.get(), "co-decl");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED) << pay_result_json(r.get());
  EXPECT_EQ(sim_->charges_for("co-decl"), 0);
}

TEST_F(ProfileSim, PaypalReplayReturnsTheCurrentState) {
  start("paypal");
  sim_->script("pp-lost", {"lost_response", "none"});
  auto c = client(cfg("paypal"));
  auto r = submit(c.get(), "pp-lost");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_http_status(r.get()), 200);  // the replay: current state, not the first 201
  EXPECT_STREQ(pay_result_provider_status(r.get()), "COMPLETED");
  EXPECT_EQ(sim_->charges_for("pp-lost"), 1);
  expect_one_key_and_identical_bytes();
}

TEST_F(ProfileSim, PaypalTokensServeTheConcurrentEngineAndAreRenewedOnceAfterARevocation) {
  // The concurrent engine signs on its own thread: one token for a whole
  // batch, and after PayPal forgets it, one renewal for the next batch.
  start("paypal");
  auto c = client(cfg("paypal"));
  auto batch = [&](const std::string& prefix) {
    std::vector<std::string> orders, bodies;
    for (int i = 0; i < 20; ++i) {
      orders.push_back(prefix + std::to_string(i));
      bodies.push_back(R"({"intent":"CAPTURE","purchase_units":[{"reference_id":")" + orders.back() +
                       R"(","amount":{"currency_code":"EUR","value":"10.00"}}]})");
    }
    std::vector<pay_batch_item> items(orders.size());
    for (size_t i = 0; i < items.size(); ++i) {
      items[i] = pay_batch_item{};
      items[i].order_id = orders[i].c_str();
      items[i].body = bodies[i].data();
      items[i].body_len = bodies[i].size();
    }
    ASSERT_EQ(pay_submit_batch(items.data(), items.size(), c.get(), nullptr), PAY_OK) << pay_error_last()->message;
    for (size_t i = 0; i < items.size(); ++i) {
      ASSERT_EQ(items[i].rc, PAY_OK) << items[i].message;
      EXPECT_EQ(pay_result_outcome(items[i].result), PAY_OUTCOME_SUCCEEDED) << pay_result_json(items[i].result);
      EXPECT_EQ(sim_->charges_for(orders[i]), 1);
      pay_result_free(items[i].result);
    }
  };
  batch("pp-b1-");
  const auto tokens = [&] {
    cJSON* j = cJSON_Parse(sim_->stats_json().c_str());
    const cJSON* n = cJSON_GetObjectItem(j, "oauth2_tokens_issued");
    const int out = cJSON_IsNumber(n) ? n->valueint : -1;
    cJSON_Delete(j);
    return out;
  };
  EXPECT_EQ(tokens(), 1);
  sim_->revoke_oauth2_tokens();
  batch("pp-b2-");
  // Every payment in flight may see the 401 before the renewal lands; each
  // renews at most once, and the token is shared once fetched.
  EXPECT_GE(tokens(), 2);
  EXPECT_LE(tokens(), 21);
}

TEST_F(ProfileSim, SquareKeyTravelsInTheBodyAndIsWrittenInWhenAbsent) {
  start("square");
  // A gateway error is still retried (with the same key, in the same bytes).
  sim_->script("sq-503", {"503", "none"});
  auto c = client(cfg("square"));
  auto r = submit(c.get(), "sq-503");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_attempts(r.get()), 2);
  EXPECT_EQ(sim_->charges_for("sq-503"), 1);
  expect_one_key_and_identical_bytes();
  std::lock_guard<std::mutex> lock(rec_.mu);
  const std::string sent = rec_.sent.front().body;
  EXPECT_EQ(sent.find(std::string(R"("idempotency_key":")") + pay_result_idempotency_key(r.get()) + "\""), 1u) << sent;
  EXPECT_NE(sent.find(R"("order_id":"sq-503")"), std::string::npos);  // the caller's bytes follow untouched
}

TEST_F(ProfileSim, SquareLostResponseIsUnknownAndNeverResent) {
  // Square replays only a success: an error answer that followed a charge
  // may not be stored, so a same-key re-send after a lost connection could
  // charge again. UNKNOWN, one attempt.
  start("square");
  sim_->script("sq-lost", {"lost_response", "none"});
  auto c = client(cfg("square"));
  auto r = submit(c.get(), "sq-lost");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_MAYBE_PROCESSED);
  EXPECT_EQ(pay_result_attempts(r.get()), 1);
  EXPECT_EQ(sim_->charges_for("sq-lost"), 1);
}

TEST_F(ProfileSim, SquareBodyKeyIsUsedAsTheKey) {
  start("square");
  auto c = client(cfg("square"));
  const std::string body = R"({"idempotency_key":"sq-own-key-1","order_id":"sq-own","amount":500})";
  auto r = submit(c.get(), "sq-own", body);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_STREQ(pay_result_idempotency_key(r.get()), "sq-own-key-1");
  std::lock_guard<std::mutex> lock(rec_.mu);
  EXPECT_EQ(rec_.sent.front().body, body);
}

TEST_F(ProfileSim, WechatOrderPaidIsSettledByQuery) {
  // The merchant reference is the identity: the retry after a lost response
  // hears ORDERPAID, which only a lookup turns into SUCCEEDED.
  start("wechatpay_v3");
  sim_->script("wx-000042", {"lost_response", "none"});
  auto c = client(cfg("wechatpay_v3", R"("merchant_id":"1230000109")"));
  const std::string body = R"({"out_trade_no":"wx-000042","order_id":"wx-000042","amount":100})";
  auto r = submit(c.get(), "wx-000042", body);
  // A lost connection with a reference identity is settled by lookup first.
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_attempts(r.get()), 1);
  EXPECT_STREQ(pay_result_idempotency_key(r.get()), "wx-000042");
  // Resubmitting re-sends the same reference and bytes: WeChat says ORDERPAID.
  auto again = submit(c.get(), "wx-000042", body);
  EXPECT_EQ(pay_result_outcome(again.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(again.get());
  EXPECT_NE(std::string(pay_result_body(again.get(), nullptr)).find("ORDERPAID"), std::string::npos)
      << pay_result_json(again.get());
  auto q = query(c.get(), "wx-000042");
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(q.get());
  EXPECT_STREQ(pay_result_provider_status(q.get()), "SUCCESS");
  EXPECT_EQ(sim_->charges_for("wx-000042"), 1);
  // WeChat's lookup names the merchant: the config's merchant_id fills it.
  std::lock_guard<std::mutex> lock(rec_.mu);
  bool looked_up = false;
  for (const SentAttempt& s : rec_.sent) {
    if (s.method != "GET") continue;
    looked_up = true;
    EXPECT_NE(s.url.find("/v3/pay/transactions/out-trade-no/wx-000042?mchid=1230000109"), std::string::npos) << s.url;
  }
  EXPECT_TRUE(looked_up);
}

TEST_F(ProfileSim, WechatWithoutMerchantIdIsAConfigErrorNamingIt) {
  // The lookup cannot be built without the merchant's id: refused up front,
  // not at the first payment that needs a lookup.
  start("wechatpay_v3");
  pay_client* raw = nullptr;
  EXPECT_EQ(pay_client_new(&raw, cfg("wechatpay_v3").c_str(), nullptr), PAY_ECONFIG);
  EXPECT_EQ(raw, nullptr);
  EXPECT_NE(std::string(pay_error_last()->message).find("merchant_id"), std::string::npos)
      << pay_error_last()->message;
}

TEST_F(ProfileSim, WechatReferenceMustBeTheOrderId) {
  start("wechatpay_v3");
  auto c = client(cfg("wechatpay_v3", R"("merchant_id":"1230000109")"));
  const std::string body = R"({"out_trade_no":"another-1","amount":100})";
  pay_result* r = nullptr;
  EXPECT_EQ(pay_submit(&r, c.get(), "wx-000043", body.data(), body.size(), nullptr), PAY_EINVALID);
  EXPECT_EQ(sim_->requests(), 0);
}

TEST_F(ProfileSim, AdyenTransientErrorIsRetriedAndARefusalIsFailed) {
  start("adyen");
  sim_->script("ad-503", {"503", "none"});
  sim_->script("ad-ref", {"decline"});
  auto c = client(cfg("adyen", R"("create_path":"/v71/payments")"));
  auto ok = submit(c.get(), "ad-503");
  EXPECT_EQ(pay_result_outcome(ok.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(ok.get());
  EXPECT_EQ(pay_result_attempts(ok.get()), 2);
  auto refused = submit(c.get(), "ad-ref");
  EXPECT_EQ(pay_result_outcome(refused.get()), PAY_OUTCOME_FAILED) << pay_result_json(refused.get());
  EXPECT_EQ(pay_result_http_status(refused.get()), 200);  // Adyen refuses inside a 200
  EXPECT_EQ(sim_->charges_for("ad-ref"), 0);
}

TEST_F(ProfileSim, MollieLostResponseIsReplayed) {
  start("mollie");
  sim_->script("mo-lost", {"lost_response", "none"});
  auto c = client(cfg("mollie"));
  auto r = submit(c.get(), "mo-lost");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(attempt_field(r.get(), 1, "replayed"), "");  // a bool: checked through the JSON below
  EXPECT_NE(std::string(pay_result_json(r.get())).find("\"replayed\":true"), std::string::npos);
  EXPECT_EQ(sim_->charges_for("mo-lost"), 1);
}

TEST_F(ProfileSim, AlipaySystemErrorInsideA200IsQueried) {
  start("alipay");
  sim_->script("ali_9", {"500"});
  auto c = client(cfg("alipay"));
  const std::string body = R"({"biz_content":{"out_trade_no":"ali_9","total_amount":"1.00"}})";
  auto r = submit(c.get(), "ali_9", body);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_http_status(r.get()), 200);
  auto q = query(c.get(), "ali_9");
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(q.get());
  EXPECT_STREQ(pay_result_provider_status(q.get()), "TRADE_SUCCESS");
  EXPECT_EQ(sim_->charges_for("ali_9"), 1);
}

TEST_F(ProfileSim, AlipayDeclineIsFailed) {
  start("alipay");
  sim_->script("ali_d", {"decline"});
  auto c = client(cfg("alipay"));
  const std::string body = R"({"biz_content":{"out_trade_no":"ali_d","total_amount":"1.00"}})";
  auto r = submit(c.get(), "ali_d", body);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED) << pay_result_json(r.get());
  EXPECT_EQ(sim_->charges_for("ali_d"), 0);
}

}  // namespace
}  // namespace payretry_test

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace payretry_test {
namespace {

std::string hmac_hex(const std::string& secret, const std::string& msg) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), reinterpret_cast<const unsigned char*>(msg.data()),
       msg.size(), mac, &len);
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) out += {hex[mac[i] >> 4], hex[mac[i] & 15]};
  return out;
}

struct Signed {
  std::string timestamp, signature, key, body;
};

// A provider that signs requests (WeChat Pay v3, Alipay, HMAC schemes) needs
// a fresh signature per attempt: the timestamp moves, the bytes do not.
int sign(pay_headers* h, const pay_attempt_info* info, void* payload) {
  auto* log = static_cast<std::vector<Signed>*>(payload);
  const std::string ts = std::to_string(info->unix_time_ms);
  const std::string body(static_cast<const char*>(info->body), info->body_len);
  const std::string sig = hmac_hex("whsec_test_signing", ts + "." + info->idempotency_key + "." + body);
  log->push_back({ts, sig, info->idempotency_key, body});
  if (pay_headers_add(h, "X-Timestamp", ts.c_str()) != PAY_OK) return 1;
  return pay_headers_add(h, "X-Signature", sig.c_str()) == PAY_OK ? 0 : 1;
}

TEST_F(ProfileSim, SigningHookRecomputesItsHmacOnEveryAttempt) {
  start("stripe");
  sim_->script("sig-1", {"lost_response", "503", "none"});
  std::vector<Signed> signed_attempts;
  pay_client_options o;
  pay_client_options_init(&o, PAY_CLIENT_OPTIONS_VERSION);
  o.request_hook = &sign;
  o.hook_payload = &signed_attempts;
  pay_client* raw = nullptr;
  ASSERT_EQ(pay_client_new(&raw, cfg("stripe", R"("create_path":"/v1/payments")").c_str(), &o), PAY_OK)
      << pay_error_last()->message;
  ClientPtr c(raw);
  auto r = submit(c.get(), "sig-1");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  ASSERT_EQ(signed_attempts.size(), 3u);
  for (const Signed& s : signed_attempts) {
    EXPECT_EQ(s.signature, hmac_hex("whsec_test_signing", s.timestamp + "." + s.key + "." + s.body));
    EXPECT_EQ(s.key, signed_attempts.front().key);
    EXPECT_EQ(s.body, signed_attempts.front().body);
  }
  EXPECT_NE(signed_attempts[0].signature, signed_attempts[1].signature);
  EXPECT_NE(signed_attempts[1].signature, signed_attempts[2].signature);
  EXPECT_EQ(sim_->charges_for("sig-1"), 1);
}

}  // namespace
}  // namespace payretry_test

namespace payretry_test {
namespace {

// payretry-sim --hmac-secret: a signing scheme the library does not build in, so the request
// hook alone must sign each attempt and each lookup over the method, the target as sent and
// the exact body.
struct HookSecret {
  std::string secret;
  int signed_posts = 0;
  int signed_gets = 0;
};

int sign_target(pay_headers* h, const pay_attempt_info* info, void* payload) {
  auto* s = static_cast<HookSecret*>(payload);
  const std::string body(static_cast<const char*>(info->body), info->body_len);
  const std::string sig = "v1=" + hmac_hex(s->secret, std::string(info->method) + "\n" + info->path + "\n" + body);
  (std::string(info->method) == "GET" ? s->signed_gets : s->signed_posts)++;
  return pay_headers_add(h, "X-Signature", sig.c_str()) == PAY_OK ? 0 : 1;
}

long stat_of(const payretry_sim::Server& sim, const char* name) {
  cJSON* j = cJSON_Parse(sim.stats_json().c_str());
  const long v = static_cast<long>(cJSON_GetNumberValue(cJSON_GetObjectItem(j, name)));
  cJSON_Delete(j);
  return v;
}

TEST_F(ProfileSim, AHookSignsEveryAttemptAndEveryLookupForASchemeTheLibraryDoesNotKnow) {
  auto o = sim_options();
  o.profile = "checkout_com";
  o.hmac_secret = "hook-secret-1";
  sim_ = std::make_unique<payretry_sim::Server>(o);
  // A 429, then answers lost: the payment is charged but ends UNKNOWN. Checkout.com looks it up by
  // reference (GET /payments?reference=...): the lookup must be signed too, query included.
  sim_->script("hmac-1", {"429", "lost_response", "lost_response", "lost_response"});

  HookSecret good{"hook-secret-1"};
  pay_client_options opts;
  pay_client_options_init(&opts, PAY_CLIENT_OPTIONS_VERSION);
  opts.request_hook = &sign_target;
  opts.hook_payload = &good;
  pay_client* raw = nullptr;
  ASSERT_EQ(pay_client_new(&raw, cfg("checkout_com").c_str(), &opts), PAY_OK) << pay_error_last()->message;
  ClientPtr c(raw);
  auto r = submit(c.get(), "hmac-1");
  ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  auto q = query(c.get(), "hmac-1");
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(q.get());
  auto ok = submit(c.get(), "hmac-2");
  EXPECT_EQ(pay_result_outcome(ok.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_GE(pay_result_attempts(r.get()), 2);
  EXPECT_EQ(good.signed_posts, pay_result_attempts(r.get()) + pay_result_attempts(ok.get()));
  EXPECT_GE(good.signed_gets, 1);
  EXPECT_EQ(stat_of(*sim_, "bad_signatures"), 0);
  EXPECT_EQ(stat_of(*sim_, "signed_requests"), good.signed_posts + good.signed_gets);
  EXPECT_EQ(sim_->charges_for("hmac-1"), 1);
  EXPECT_EQ(sim_->charges_for("hmac-2"), 1);

  // The wrong secret: refused as an authentication error, final, and nothing charged.
  HookSecret wrong{"not-the-secret"};
  opts.hook_payload = &wrong;
  ASSERT_EQ(pay_client_new(&raw, cfg("checkout_com").c_str(), &opts), PAY_OK) << pay_error_last()->message;
  ClientPtr bad(raw);
  auto refused = submit(bad.get(), "hmac-3");
  EXPECT_EQ(pay_result_outcome(refused.get()), PAY_OUTCOME_FAILED);
  EXPECT_EQ(wrong.signed_posts, 1);
  EXPECT_EQ(stat_of(*sim_, "bad_signatures"), 1);
  EXPECT_EQ(sim_->charges_for("hmac-3"), 0);
}

}  // namespace
}  // namespace payretry_test
