// The C++ wrapper, through payretry.hpp only, against an in-process simulator.
// payretry.hpp comes first: it must be self-contained, and this file is built
// with -Wall -Wextra -pedantic -Werror.
#include <payretry/payretry.hpp>

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../sim/sim_client.hpp"
#include "server.hpp"

namespace {

// Move-only handles.
static_assert(!std::is_copy_constructible_v<pay::client> && !std::is_copy_assignable_v<pay::client>);
static_assert(std::is_nothrow_move_constructible_v<pay::client> && std::is_nothrow_move_assignable_v<pay::client>);
static_assert(!std::is_copy_constructible_v<pay::result> && !std::is_copy_assignable_v<pay::result>);
static_assert(std::is_nothrow_move_constructible_v<pay::result> && std::is_nothrow_move_assignable_v<pay::result>);
static_assert(std::is_nothrow_destructible_v<pay::client> && std::is_nothrow_destructible_v<pay::result>);
static_assert(std::is_base_of_v<std::runtime_error, pay::error>);
static_assert(static_cast<int>(pay::outcome::succeeded) == PAY_OUTCOME_SUCCEEDED &&
              static_cast<int>(pay::outcome::failed) == PAY_OUTCOME_FAILED &&
              static_cast<int>(pay::outcome::unknown) == PAY_OUTCOME_UNKNOWN &&
              static_cast<int>(pay::outcome::in_progress) == PAY_OUTCOME_IN_PROGRESS);

static_assert(static_cast<int>(pay::money_state::unknown) == PAY_MONEY_UNKNOWN &&
              static_cast<int>(pay::money_state::awaiting_customer) == PAY_MONEY_AWAITING_CUSTOMER &&
              static_cast<int>(pay::money_state::pending) == PAY_MONEY_PENDING &&
              static_cast<int>(pay::money_state::authorized) == PAY_MONEY_AUTHORIZED &&
              static_cast<int>(pay::money_state::paid) == PAY_MONEY_PAID &&
              static_cast<int>(pay::money_state::partly_refunded) == PAY_MONEY_PARTLY_REFUNDED &&
              static_cast<int>(pay::money_state::refunded) == PAY_MONEY_REFUNDED &&
              static_cast<int>(pay::money_state::failed) == PAY_MONEY_FAILED);

const char* kSecret = "sk_test_wrapper_secret";

class Wrapper : public ::testing::Test {
 protected:
  void SetUp() override {
    payretry_sim::Options o;
    o.api_key = kSecret;
    o.slow_ms = 600;
    o.refuse_ms = 150;
    sim_ = std::make_unique<payretry_sim::Server>(o);
  }
  void TearDown() override { sim_->stop(); }

  std::string config(const std::string& retry = R"("max_attempts":4)") const {
    return R"({"provider":"stripe","base_url":")" + sim_->base_url() +
           R"(","create_path":"/v1/payments","auth":{"bearer":")" + kSecret +
           R"("},"ledger":"memory:","retry":{"connect_timeout_ms":300,"attempt_timeout_ms":300,)"
           R"("deadline_ms":6000,"backoff_base_ms":20,"backoff_cap_ms":200,"min_attempt_ms":50,"jitter_seed":7,)" +
           retry + "}}";
  }
  static std::string body_for(const std::string& order, int amount = 1000) {
    return R"({"order_id":")" + order + R"(","amount":)" + std::to_string(amount) + R"(,"currency":"eur"})";
  }

  std::unique_ptr<payretry_sim::Server> sim_;
};

int code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const pay::error& e) {
    return e.code();
  }
  return PAY_OK;
}

TEST(WrapperNoServer, BadConfigThrowsEconfigNamingTheKey) {
  try {
    pay::client c(R"({"provider":"stripe","base_url":"http://127.0.0.1:1","ledger":"memory:","retry":{"max_attempts":"x"}})");
    FAIL() << "no exception";
  } catch (const pay::error& e) {
    EXPECT_EQ(e.code(), PAY_ECONFIG);
    EXPECT_NE(std::string(e.what()).find("retry.max_attempts"), std::string::npos) << e.what();
  }
  // check() copied then cleared the thread's error.
  EXPECT_EQ(pay_error_last()->code, PAY_OK);
  EXPECT_EQ(code_of([] { pay::client c("not json"); }), PAY_ECONFIG);
}

TEST(WrapperNoServer, CheckAndVersion) {
  EXPECT_EQ(pay::check(0), 0);
  EXPECT_EQ(pay::check(3), 3);
  EXPECT_EQ(code_of([] { pay::check(PAY_ENOTFOUND); }), PAY_ENOTFOUND);
  EXPECT_FALSE(pay::version().empty());
  EXPECT_EQ(pay::version_number(), pay_version_number());
}

// The names are the ones the result and ledger JSON carry; a value the C enum
// may append later has no name here and reads "?", as pay_money_state_name says.
TEST(WrapperNoServer, MoneyStateNamesMatchTheCNamesAndAnUnnamedValueIsAQuestionMark) {
  const std::pair<pay::money_state, std::string_view> names[] = {
      {pay::money_state::unknown, "unknown"},
      {pay::money_state::awaiting_customer, "awaiting_customer"},
      {pay::money_state::pending, "pending"},
      {pay::money_state::authorized, "authorized"},
      {pay::money_state::paid, "paid"},
      {pay::money_state::partly_refunded, "partly_refunded"},
      {pay::money_state::refunded, "refunded"},
      {pay::money_state::failed, "failed"},
  };
  for (const auto& [m, name] : names) {
    EXPECT_EQ(pay::to_string(m), name);
    EXPECT_EQ(pay::to_string(m), pay_money_state_name(static_cast<int>(m)));
  }
  EXPECT_EQ(pay::to_string(static_cast<pay::money_state>(PAY_MONEY_FAILED + 1)), "?");
  EXPECT_EQ(pay::to_string(static_cast<pay::money_state>(-1)), "?");
}

// Whatever the engine read from the provider, the wrapper reports the C value,
// and the result's JSON names the same state.
void expect_money_state_matches_c(const pay::result& r) {
  EXPECT_EQ(static_cast<int>(r.money_state()), pay_result_money_state(r.get()));
  const std::string field = R"("money_state":")" + std::string(pay::to_string(r.money_state())) + '"';
  EXPECT_NE(r.json().find(field), std::string_view::npos) << field << " in " << r.json();
}

TEST_F(Wrapper, MoneyStateIsTheCResultsAndAnEmptyHandleThrows) {
  pay::client c(config());
  pay::result ok = c.submit("w-money", body_for("w-money"));
  ASSERT_EQ(ok.outcome(), pay::outcome::succeeded) << ok.json();
  expect_money_state_matches_c(ok);
  sim_->script("w-money-declined", {"decline"});
  pay::result declined = c.submit("w-money-declined", body_for("w-money-declined"));
  ASSERT_EQ(declined.outcome(), pay::outcome::failed) << declined.json();
  expect_money_state_matches_c(declined);
  expect_money_state_matches_c(c.query("w-money"));
  pay::result gone = std::move(ok);
  EXPECT_EQ(code_of([&] { (void)ok.money_state(); }), PAY_EINVALID);  // NOLINT(bugprone-use-after-move)
  expect_money_state_matches_c(gone);
}

TEST_F(Wrapper, SubmitSucceeds) {
  pay::client c(config());
  const std::string body = body_for("w-ok");
  pay::result r = c.submit("w-ok", body);
  EXPECT_EQ(r.outcome(), pay::outcome::succeeded) << r.json();
  EXPECT_EQ(r.delivery(), pay::delivery::delivered);
  EXPECT_EQ(r.http_status(), 200);
  EXPECT_FALSE(r.body().empty());
  EXPECT_EQ(r.order_id(), "w-ok");
  EXPECT_FALSE(r.idempotency_key().empty());
  ASSERT_TRUE(r.provider_payment_id().has_value());
  EXPECT_FALSE(r.provider_payment_id()->empty());
  EXPECT_EQ(r.attempts(), 1);
  EXPECT_FALSE(r.from_ledger());
  EXPECT_FALSE(r.error().has_value());
  EXPECT_NE(r.json().find("SUCCEEDED"), std::string_view::npos);
  EXPECT_EQ(sim_->charges_for("w-ok"), 1);
  EXPECT_NE(c.stats().find("attempts"), std::string::npos);
}

TEST_F(Wrapper, LostResponseThenSuccessKeepsOneKey) {
  std::mutex mu;
  std::vector<std::string> keys;
  pay::client c(config(), [&](pay::headers&, const pay_attempt_info& info) {
    std::lock_guard<std::mutex> lock(mu);
    keys.emplace_back(info.idempotency_key);
    return true;
  });
  pay::submit_options o;
  o.idempotency_key = "wrapper-key-0001";
  o.deadline = std::chrono::milliseconds(5000);
  pay::result r = c.submit("w-lost", body_for("w-lost"), o);
  sim_->script("w-lost2", {"lost_response"});
  pay::result r2 = c.submit("w-lost2", body_for("w-lost2"));
  EXPECT_EQ(r.outcome(), pay::outcome::succeeded);
  EXPECT_EQ(r.idempotency_key(), "wrapper-key-0001");
  EXPECT_EQ(r2.outcome(), pay::outcome::succeeded) << r2.json();
  EXPECT_EQ(r2.attempts(), 2);
  EXPECT_EQ(sim_->charges_for("w-lost2"), 1);
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[0], "wrapper-key-0001");
  EXPECT_EQ(keys[1], keys[2]);
  EXPECT_EQ(std::string(r2.idempotency_key()), keys[1]);
}

TEST_F(Wrapper, DeclineIsFailedDataNotAnException) {
  pay::client c(config());
  sim_->script("w-decl", {"decline"});
  pay::result r = c.submit("w-decl", body_for("w-decl"));
  EXPECT_EQ(r.outcome(), pay::outcome::failed) << r.json();
  EXPECT_EQ(r.delivery(), pay::delivery::delivered);
  ASSERT_TRUE(r.error().has_value());
  EXPECT_NE(r.error()->find("declined"), std::string_view::npos);
  EXPECT_EQ(sim_->charges_for("w-decl"), 0);
}

TEST_F(Wrapper, SameOrderOtherBodyThrowsEmismatch) {
  pay::client c(config());
  EXPECT_EQ(c.submit("w-mm", body_for("w-mm", 1000)).outcome(), pay::outcome::succeeded);
  try {
    (void)c.submit("w-mm", body_for("w-mm", 2000));
    FAIL() << "no exception";
  } catch (const pay::error& e) {
    EXPECT_EQ(e.code(), PAY_EMISMATCH);
    EXPECT_STRNE(e.what(), "");
  }
  EXPECT_EQ(sim_->charges_for("w-mm"), 1);
  // The same order and body again comes back from the ledger.
  pay::result again = c.submit("w-mm", body_for("w-mm", 1000));
  EXPECT_TRUE(again.from_ledger());
  EXPECT_EQ(again.outcome(), pay::outcome::succeeded);
}

TEST_F(Wrapper, HandlesMoveAndMovedFromIsSafe) {
  pay::client a(config(), [](int, std::string_view) {});
  pay::client b(std::move(a));
  EXPECT_EQ(a.get(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  EXPECT_EQ(code_of([&] { (void)a.submit("w-mv", body_for("w-mv")); }), PAY_EINVALID);
  pay::client c(config());
  c = std::move(b);  // frees c's own client; b's callbacks move with it
  pay::result r = c.submit("w-mv", body_for("w-mv"));
  EXPECT_EQ(r.outcome(), pay::outcome::succeeded);
  pay::result r2 = std::move(r);
  EXPECT_EQ(r.get(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(r2.order_id(), "w-mv");
  pay_result* raw = r2.release();
  ASSERT_NE(raw, nullptr);
  pay::result r3(raw);
  EXPECT_EQ(r3.order_id(), "w-mv");
  {
    pay::client gone = std::move(c);
  }  // moved-from `a`, `b` and `c` are destroyed at scope end: no double free
}

TEST_F(Wrapper, ResultOutlivesItsClient) {
  pay::result r;
  {
    pay::client c(config());
    r = c.submit("w-out", body_for("w-out"));
  }
  EXPECT_EQ(r.outcome(), pay::outcome::succeeded);
  EXPECT_EQ(r.order_id(), "w-out");
  EXPECT_NE(r.json().find("w-out"), std::string_view::npos);
}

TEST_F(Wrapper, HookAddsAHeaderAndRejectsABadOne) {
  std::atomic<int> added{0}, rejected{0};
  pay::client c(config(), [&](pay::headers& h, const pay_attempt_info& info) {
    EXPECT_STREQ(info.method, "POST");
    h.add("X-Signature", "sig-" + std::to_string(info.attempt));
    ++added;
    try {
      h.add("Bad Name", "v");
    } catch (const pay::error& e) {
      if (e.code() == PAY_EINVALID) ++rejected;
    }
    return true;
  });
  EXPECT_EQ(c.submit("w-hook", body_for("w-hook")).outcome(), pay::outcome::succeeded);
  EXPECT_EQ(added.load(), 1);
  EXPECT_EQ(rejected.load(), 1);
}

TEST_F(Wrapper, ThrowingOrRefusingHookSendsNothing) {
  pay::client thrower(config(), [](pay::headers&, const pay_attempt_info&) -> bool {
    throw std::runtime_error("signing key unavailable");
  });
  EXPECT_EQ(code_of([&] { (void)thrower.submit("w-throw", body_for("w-throw")); }), PAY_EHOOK);
  pay::client refuser(config(), [](pay::headers&, const pay_attempt_info&) { return false; });
  EXPECT_EQ(code_of([&] { (void)refuser.submit("w-refuse", body_for("w-refuse")); }), PAY_EHOOK);
  EXPECT_EQ(sim_->requests(), 0);
  EXPECT_EQ(sim_->charges_for("w-throw"), 0);
}

TEST_F(Wrapper, LogCallbackReceivesLinesAndMayThrow) {
  std::mutex mu;
  std::vector<std::string> lines;
  pay::client c(config(), [&](int level, std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_GE(level, PAY_LOG_DEBUG);
    lines.emplace_back(line);
  });
  EXPECT_EQ(c.submit("w-log", body_for("w-log")).outcome(), pay::outcome::succeeded);
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_FALSE(lines.empty());
    bool saw_order = false;
    for (const auto& l : lines) {
      EXPECT_EQ(l.front(), '{') << l;
      EXPECT_EQ(l.find(kSecret), std::string::npos) << l;
      saw_order = saw_order || l.find("w-log") != std::string::npos;
    }
    EXPECT_TRUE(saw_order);
  }
  // A throwing log callback is swallowed.
  pay::client t(config(), [](int, std::string_view) { throw std::runtime_error("log sink down"); });
  EXPECT_EQ(t.submit("w-log2", body_for("w-log2")).outcome(), pay::outcome::succeeded);
}

TEST_F(Wrapper, QueryReconcileAndLedgerRoundTrips) {
  pay::client c(config(R"("max_attempts":2)"));
  EXPECT_EQ(c.submit("w-led-ok", body_for("w-led-ok")).outcome(), pay::outcome::succeeded);
  sim_->script("w-led-unk", {"lost_response", "lost_response"});
  pay::result unk = c.submit("w-led-unk", body_for("w-led-unk"));
  ASSERT_EQ(unk.outcome(), pay::outcome::unknown) << unk.json();
  EXPECT_EQ(unk.delivery(), pay::delivery::maybe_processed);

  // ledger_get / ledger_list
  const std::string one = c.ledger_get("w-led-ok");
  EXPECT_NE(one.find(R"("payment")"), std::string::npos) << one;
  EXPECT_NE(one.find("SUCCEEDED"), std::string::npos) << one;
  EXPECT_EQ(code_of([&] { (void)c.ledger_get("w-nope"); }), PAY_ENOTFOUND);
  const std::string all = c.ledger_list();
  EXPECT_NE(all.find("w-led-ok"), std::string::npos) << all;
  EXPECT_NE(all.find("w-led-unk"), std::string::npos) << all;
  const std::string unknown_only = c.ledger_list("UNKNOWN");
  EXPECT_EQ(unknown_only.find("w-led-ok"), std::string::npos) << unknown_only;
  EXPECT_NE(unknown_only.find("w-led-unk"), std::string::npos) << unknown_only;
  EXPECT_EQ(c.ledger_list(std::nullopt, 0, 1).find("w-led-unk"), std::string::npos);
  EXPECT_EQ(code_of([&] { (void)c.ledger_list("BOGUS"); }), PAY_EINVALID);

  // query: a settled order comes from the ledger; an unknown order id throws.
  pay::result q = c.query("w-led-ok");
  EXPECT_EQ(q.outcome(), pay::outcome::succeeded);
  EXPECT_EQ(code_of([&] { (void)c.query("w-nope"); }), PAY_ENOTFOUND);

  // reconcile: a same-key re-send of the original bytes settles the UNKNOWN one.
  std::vector<std::string> asked;
  const std::string report = c.reconcile([&](std::string_view order) -> std::optional<std::string> {
    asked.emplace_back(order);
    return body_for(std::string(order));
  });
  EXPECT_NE(report.find(R"("examined")"), std::string::npos) << report;
  EXPECT_EQ(asked, std::vector<std::string>{"w-led-unk"}) << report;
  EXPECT_EQ(c.ledger_list("UNKNOWN").find("w-led-unk"), std::string::npos) << report;
  EXPECT_NE(c.ledger_get("w-led-unk").find("SUCCEEDED"), std::string::npos) << report;
  EXPECT_EQ(sim_->charges_for("w-led-unk"), 1);
  EXPECT_NE(c.reconcile().find(R"("examined")"), std::string::npos);
}

TEST_F(Wrapper, ReconcileWithAThrowingBodyCallbackLeavesUnknown) {
  pay::client c(config(R"("max_attempts":1)"));
  sim_->script("w-rc", {"lost_response"});
  ASSERT_EQ(c.submit("w-rc", body_for("w-rc")).outcome(), pay::outcome::unknown);
  const std::string report =
      c.reconcile([](std::string_view) -> std::optional<std::string> { throw std::runtime_error("no body"); });
  EXPECT_NE(report.find(R"("examined")"), std::string::npos) << report;
  EXPECT_NE(c.ledger_get("w-rc").find("UNKNOWN"), std::string::npos);
}

}  // namespace

namespace {

TEST_F(Wrapper, SubmitBatchAnswersEveryPaymentInOrderWithResultsOrErrors) {
  pay::client c(config(R"("max_attempts":4)"));
  sim_->script("wb-1", {"503"});
  std::vector<pay::payment> ps;
  for (int i = 0; i < 20; ++i) ps.push_back({"wb-" + std::to_string(i), body_for("wb-" + std::to_string(i)), {}});
  ps[5].options.idempotency_key = "bad\r\nkey";
  std::vector<pay::answer> out = c.submit_batch(ps, 8);
  ASSERT_EQ(out.size(), ps.size());
  for (int i = 0; i < 20; ++i) {
    if (i == 5) {
      ASSERT_TRUE(out[i].failure.has_value());
      EXPECT_EQ(out[i].failure->code(), PAY_EKEY);
      EXPECT_FALSE(out[i].result.has_value());
      continue;
    }
    ASSERT_TRUE(out[i].result.has_value()) << out[i].failure->what();
    EXPECT_EQ(out[i].result->order_id(), ps[i].order_id);
    EXPECT_EQ(out[i].result->outcome(), pay::outcome::succeeded);
  }
  EXPECT_EQ(out[1].result->attempts(), 2);
  EXPECT_EQ(sim_->charges_for("wb-5"), 0);
  EXPECT_EQ(sim_->duplicate_orders(), 0);
  EXPECT_TRUE(c.submit_batch({}).empty());
}

TEST_F(Wrapper, SubmitAsyncDeliversEachAnswerOnceAndTheClientWaitsForThem) {
  std::mutex mu;
  std::vector<std::string> succeeded;
  std::vector<int> failed_codes;
  {
    pay::client c(config());
    for (int i = 0; i < 30; ++i) {
      const std::string order = "wa-" + std::to_string(i);
      c.submit_async(order, body_for(order), [&](pay::answer a) {
        std::lock_guard<std::mutex> lock(mu);
        if (a.result) succeeded.emplace_back(a.result->order_id());
        else failed_codes.push_back(a.failure->code());
      });
    }
    c.submit_async("wa-bad", "", [&](pay::answer a) {
      std::lock_guard<std::mutex> lock(mu);
      failed_codes.push_back(a.failure ? a.failure->code() : 0);
    });
    EXPECT_EQ(code_of([&] { c.submit_async("x", "{}", pay::done_callback{}); }), PAY_EINVALID);
  }  // the client waits for every started payment
  EXPECT_EQ(succeeded.size(), 30u);
  ASSERT_EQ(failed_codes.size(), 1u);
  EXPECT_EQ(failed_codes[0], PAY_EINVALID);
  EXPECT_EQ(sim_->total_charges(), 30);
}

}  // namespace

TEST_F(Wrapper, SubmitOptionsCarryHeadersAndATraceparentButNotIntoABatch) {
  std::mutex mu;
  std::vector<std::string> lines;
  pay::client c(config(), [&](int, std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.emplace_back(line);
  });
  const std::string trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  pay::submit_options o;
  o.headers = {{"Stripe-Account", "acct_1W"}};
  o.traceparent = trace;
  EXPECT_EQ(c.submit("w-trace", body_for("w-trace"), o).outcome(), pay::outcome::succeeded);
  {
    std::lock_guard<std::mutex> lock(mu);
    bool traced = false;
    for (const auto& l : lines) traced = traced || l.find(trace) != std::string::npos;
    EXPECT_TRUE(traced);
  }
  pay::submit_options reserved;
  reserved.headers = {{"Idempotency-Key", "mine"}};
  EXPECT_EQ(code_of([&] { c.submit("w-reserved", body_for("w-reserved"), reserved); }), PAY_EINVALID);
  EXPECT_EQ(code_of([&] { c.submit_batch({{"w-batch", body_for("w-batch"), o}}); }), PAY_EINVALID);
  EXPECT_EQ(sim_->charges_for("w-reserved") + sim_->charges_for("w-batch"), 0);
}

// ---- Webhooks -----------------------------------------------------------------

namespace {

const char kWebhookSecret[] = "whsec_wrapper_test_secret";

std::string hex_of(const unsigned char* p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

// Stripe's Stripe-Signature over `body` at `t`, as Stripe signs it:
// t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>.
std::string stripe_signature(const std::string& secret, long long t, const std::string& body) {
  const std::string signed_text = std::to_string(t) + "." + body;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signed_text.data()), signed_text.size(), mac, &len);
  return "t=" + std::to_string(t) + ",v1=" + hex_of(mac, len);
}

std::string stripe_event(const std::string& id, const std::string& object, const std::string& order,
                         const std::string& status) {
  return R"({"id":")" + id + R"(","object":"event","type":"payment_intent.)" + status +
         R"(","data":{"object":{"id":"pi_w_1","object":")" + object + R"(","status":")" + status +
         R"(","metadata":{"order_id":")" + order + R"("}}}})";
}

long long now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

TEST_F(Wrapper, ApplyWebhookSettlesAnUnknownPaymentOnceAndRefusesAForgery) {
  std::string cfg = config(R"("max_attempts":2)");
  cfg.pop_back();
  cfg += R"(,"webhook":{"secret":")" + std::string(kWebhookSecret) + R"("}})";
  pay::client c(cfg);
  sim_->script("w-hook", {"lost_response", "lost_response"});
  ASSERT_EQ(c.submit("w-hook", body_for("w-hook")).outcome(), pay::outcome::unknown);

  const std::string event = stripe_event("evt_w_1", "payment_intent", "w-hook", "succeeded");
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"Content-Type", "application/json"}, {"Stripe-Signature", stripe_signature(kWebhookSecret, now_s(), event)}};
  const pay::webhook_reply r = c.apply_webhook("POST", "https://shop.example/hooks/stripe", headers, event);
  EXPECT_EQ(r.status, 200) << r.outcome;
  EXPECT_EQ(r.body, "");
  EXPECT_NE(r.outcome.find(R"("verdict":"accepted")"), std::string::npos) << r.outcome;
  EXPECT_NE(r.outcome.find(R"("effect":"settled")"), std::string::npos) << r.outcome;
  EXPECT_NE(c.ledger_get("w-hook").find("SUCCEEDED"), std::string::npos);

  // Delivered again: a duplicate, acknowledged, nothing changes.
  const pay::webhook_reply again = c.apply_webhook("POST", "https://shop.example/hooks/stripe", headers, event);
  EXPECT_EQ(again.status, 200);
  EXPECT_NE(again.outcome.find(R"("effect":"duplicate")"), std::string::npos) << again.outcome;

  // Signed with another secret: refused, 400.
  const pay::webhook_reply forged = c.apply_webhook(
      "POST", "https://shop.example/hooks/stripe",
      {{"Stripe-Signature", stripe_signature("whsec_someone_else", now_s(), event)}}, event);
  EXPECT_EQ(forged.status, 400);
  EXPECT_EQ(forged.content_type, "text/plain");
  EXPECT_NE(forged.outcome.find(R"("verdict":"refused")"), std::string::npos) << forged.outcome;

  // A NUL inside a header would cut the C string: refused before the call.
  EXPECT_EQ(code_of([&] {
              (void)c.apply_webhook("POST", "https://x/", {{"Stripe-Signature", std::string("t=1\0x", 5)}}, event);
            }),
            PAY_EINVALID);
}

TEST_F(Wrapper, ApplyWebhookWithoutAWebhookBlockThrowsEconfig) {
  pay::client c(config());
  EXPECT_EQ(code_of([&] { (void)c.apply_webhook("POST", "https://x/", {}, "{}"); }), PAY_ECONFIG);
}

// ---- Operations: captures, refunds and cancels --------------------------------

namespace {

class WrapperOperations : public Wrapper {
 protected:
  // The Stripe profile's own create path (a PaymentIntent, whose id the
  // refund names) and a SQLite ledger, as an application has.
  std::string op_config() {
    char tmpl[] = "/tmp/payretry-cpp-ops-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
    dir_ = tmpl;
    return R"({"provider":"stripe","base_url":")" + sim_->base_url() + R"(","auth":{"bearer":")" + kSecret +
           R"("},"ledger":"sqlite://)" + dir_ + R"(/ops.db","retry":{"max_attempts":4,"connect_timeout_ms":300,)"
           R"("attempt_timeout_ms":500,"deadline_ms":5000,"backoff_base_ms":20,"backoff_cap_ms":100,)"
           R"("min_attempt_ms":50,"jitter_seed":7}})";
  }
  void TearDown() override {
    Wrapper::TearDown();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }
  static std::string stripe_body(const std::string& order, bool hold = false) {
    std::string b = R"({"amount":1000,"currency":"usd","metadata":{"order_id":")" + order + "\"}";
    if (hold) b += R"(,"confirm":true,"payment_method":"pm_card_visa","capture_method":"manual")";
    return b + "}";
  }
  // The simulator's truth of the order's one payment, over its admin HTTP API.
  double truth(const std::string& order, const char* field) const {
    const simtest::Json doc(simtest::get(sim_->port(), "/__admin/truth?order_id=" + order).body);
    const cJSON* payments = doc.at("payments");
    if (cJSON_GetArraySize(payments) != 1) return -1;
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(payments, 0), field);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
  }
  double operations(const std::string& order) const {
    const simtest::Json doc(simtest::get(sim_->port(), "/__admin/truth?order_id=" + order).body);
    const cJSON* payment = cJSON_GetArrayItem(doc.at("payments"), 0);
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(payment, "operations"));
  }

  std::string dir_;
};

TEST_F(WrapperOperations, PartialRefundMovesTheMoneyOnceAndOneThatDoesNotFitThrowsEinvalidSendingNothing) {
  pay::client c(op_config());
  pay::result paid = c.submit("w-op-r", stripe_body("w-op-r"));
  ASSERT_EQ(paid.money_state(), pay::money_state::paid) << paid.json();

  pay::operation_options r1;
  r1.ref = "r1";
  r1.amount = 400;
  r1.body = R"({"reason":"requested_by_customer"})";
  pay::result r = c.refund("w-op-r", r1);
  EXPECT_EQ(r.outcome(), pay::outcome::succeeded) << r.json();
  EXPECT_EQ(r.money_state(), pay::money_state::refunded) << r.json();
  EXPECT_EQ(r.order_id(), "w-op-r refund r1");
  EXPECT_EQ(truth("w-op-r", "refunded"), 400);
  EXPECT_NE(c.ledger_get("w-op-r").find(R"("money_state":"partly_refunded")"), std::string::npos)
      << c.ledger_get("w-op-r");

  // 700 of the 600 left: the ledger's guard refuses it, nothing is sent or written.
  pay::operation_options r2;
  r2.ref = "r2";
  r2.amount = 700;
  try {
    (void)c.submit_operation("w-op-r", pay::operation::refund, r2);
    ADD_FAILURE() << "a refund beyond what is left was sent";
  } catch (const pay::error& e) {
    EXPECT_EQ(e.code(), PAY_EINVALID);
    EXPECT_NE(std::string(e.what()).find("refused, nothing sent"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pay_error_last()->code, PAY_OK) << "the wrapper clears the thread's error once copied";
  EXPECT_EQ(operations("w-op-r"), 1);
  EXPECT_EQ(truth("w-op-r", "refunded"), 400);
  EXPECT_EQ(code_of([&] { (void)c.ledger_get("w-op-r refund r2"); }), PAY_ENOTFOUND);

  // The same ref again is the same refund, from the ledger; asked otherwise, a mismatch.
  pay::result again = c.refund("w-op-r", r1);
  EXPECT_TRUE(again.from_ledger()) << again.json();
  r1.amount = 300;
  EXPECT_EQ(code_of([&] { (void)c.refund("w-op-r", r1); }), PAY_EMISMATCH);
  pay::operation_options nul;
  nul.ref = std::string("r\0x", 3);
  EXPECT_EQ(code_of([&] { (void)c.refund("w-op-r", nul); }), PAY_EINVALID);
  EXPECT_EQ(code_of([&] { (void)c.refund("w-op-never", r2); }), PAY_ENOTFOUND);
  EXPECT_EQ(operations("w-op-r"), 1);
}

TEST_F(WrapperOperations, AHoldIsCapturedInPartAndAnotherCanceled) {
  pay::client c(op_config());
  ASSERT_EQ(c.submit("w-op-c", stripe_body("w-op-c", true)).money_state(), pay::money_state::authorized);
  pay::operation_options c1;
  c1.ref = "c1";
  c1.amount = 600;
  pay::result cap = c.capture("w-op-c", c1);
  EXPECT_EQ(cap.outcome(), pay::outcome::succeeded) << cap.json();
  EXPECT_EQ(cap.money_state(), pay::money_state::paid) << cap.json();
  EXPECT_EQ(truth("w-op-c", "captured"), 600);

  ASSERT_EQ(c.submit("w-op-x", stripe_body("w-op-x", true)).money_state(), pay::money_state::authorized);
  pay::operation_options x1;
  x1.ref = "x1";
  pay::result cancel = c.cancel("w-op-x", x1);
  EXPECT_EQ(cancel.outcome(), pay::outcome::succeeded) << cancel.json();
  EXPECT_NE(c.ledger_get("w-op-x").find(R"("money_state":"failed")"), std::string::npos) << c.ledger_get("w-op-x");
  EXPECT_EQ(pay::to_string(pay::operation::cancel), "cancel");
}

}  // namespace
