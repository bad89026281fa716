// A Checkout.com operation whose 202 was lost (issue 47): the action's
// request carried the operation's idempotency key as its `reference`
// (checkout_com.json operations.*.body), and GET /payments/{id}/actions lists
// each action with the reference of its request (Ck7), so the row that never
// read its action_id is found there by its key (lookup.item_key_path,
// src/core/settle.cpp) and learns its id. Played by a raw-socket provider
// of our own that keeps its actions as Checkout.com documents them, newest
// first, and closes the connection after reading each operation's request:
// what counts is which listed action the row settles by.
//
// Taking the key match out (the row that knows no id reads the first listed
// action, tests/dst/reverts/o_lost_answer_takes_the_newest_action.patch) settles the refund by another action;
// taking item_key_path out of the profile leaves it UNKNOWN forever.
#include <cJSON.h>

#include <mutex>
#include <string>
#include <vector>

#include "capi_probe.hpp"
#include "raw_server.hpp"

namespace payretry_test {
namespace {

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// One action of the payment, as GET /payments/{id}/actions lists it.
struct Action {
  std::string id, type, reference;  // reference "" = its request carried none
  bool approved = true;
  long amount = 0;
};

// The provider: a payment captured at once; each operation's request is
// read, its action recorded (decided at once, approved as `approve` says),
// and the answer lost. The actions list shows what `listed` returns.
class CheckoutDouble {
 public:
  CheckoutDouble()
      : server_([this](const RawRequest& q) { return answer(q); }) {}
  std::string url() const { return server_.url(); }
  // Actions made outside payretry (the dashboard), listed beside ours.
  void add_action(const Action& a) {
    std::lock_guard<std::mutex> l(mu_);
    actions_.insert(actions_.begin(), a);
  }
  bool approve_next = true;
  bool list_ours_twice = false;  // a provider that lists one action twice
  std::string reference_of_last_operation() {
    std::lock_guard<std::mutex> l(mu_);
    return last_reference_;
  }
  std::vector<RawRequest> requests() { return server_.requests(); }

 private:
  std::string answer(const RawRequest& q) {
    std::lock_guard<std::mutex> l(mu_);
    const std::string line = q.head.substr(0, q.head.find("\r\n"));
    if (line.rfind("POST /payments/pay_lost1/refunds ", 0) == 0 ||
        line.rfind("POST /payments/pay_lost1/captures ", 0) == 0) {
      cJSON* b = cJSON_Parse(q.body.c_str());
      const cJSON* ref = cJSON_GetObjectItemCaseSensitive(b, "reference");
      last_reference_ = cJSON_IsString(ref) ? ref->valuestring : "";
      const cJSON* amount = cJSON_GetObjectItemCaseSensitive(b, "amount");
      Action a{"act_ours" + std::to_string(++made_), "Refund", last_reference_, approve_next,
               cJSON_IsNumber(amount) ? static_cast<long>(amount->valuedouble) : 0};
      cJSON_Delete(b);
      actions_.insert(actions_.begin(), a);
      if (list_ours_twice) actions_.insert(actions_.begin(), a);
      return std::string();  // processed; the answer is lost
    }
    if (line.rfind("POST /payments ", 0) == 0)
      return http(201, R"({"id":"pay_lost1","status":"Captured","approved":true,"amount":5000,"currency":"EUR"})");
    if (line.rfind("GET /payments/pay_lost1/actions ", 0) == 0) {
      std::string out = "[";
      for (size_t i = 0; i < actions_.size(); ++i) {
        const Action& a = actions_[i];
        out += std::string(i ? "," : "") + R"({"id":")" + a.id + R"(","type":")" + a.type +
               R"(","amount":)" + std::to_string(a.amount) + R"(,"approved":)" + (a.approved ? "true" : "false") +
               R"(,"response_code":")" + (a.approved ? "10000" : "20005") + R"(","processed_on":"2026-12-07T19:40:00Z")" +
               (a.reference.empty() ? std::string() : R"(,"reference":")" + a.reference + "\"") + "}";
      }
      return http(200, out + "]");
    }
    return http(404, "");
  }

  std::mutex mu_;
  std::vector<Action> actions_{{"act_auth", "Authorization", "ord-lost", true, 5000},
                               {"act_cap", "Capture", "", true, 5000}};
  std::string last_reference_;
  int made_ = 0;
  RawServer server_;  // last: its thread calls answer(), which uses the members above
};

std::string config_for(const std::string& url) {
  return R"({"provider":"checkout_com","base_url":")" + url +
         R"(","auth":{"bearer":"sk_test_lost_answer"},)"
         R"("retry":{"max_attempts":1,"connect_timeout_ms":300,"attempt_timeout_ms":1000,"deadline_ms":3000,)"
         R"("backoff_base_ms":10,"backoff_cap_ms":20,"min_attempt_ms":50,"jitter_seed":7},)"
         R"("ledger":"memory:"})";
}

class LostOperationAnswer : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = probed_client(config_for(provider_.url()), probe_);
    ASSERT_TRUE(client_);
    const std::string body = R"({"amount":5000,"currency":"EUR","reference":"ord-lost"})";
    pay_result* r = nullptr;
    ASSERT_EQ(pay_submit(&r, client_.get(), "ord-lost", body.data(), body.size(), nullptr), PAY_OK)
        << pay_error_last()->message;
    ResultPtr paid(r);
    ASSERT_EQ(pay_result_outcome(r), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r);
  }
  // A refund of `amount`, whose answer the provider loses: UNKNOWN, no id.
  std::string refund_lost(const char* ref, int64_t amount, const char* body = nullptr, int* rc_out = nullptr) {
    pay_operation_options o;
    pay_operation_options_init(&o, PAY_OPERATION_OPTIONS_VERSION);
    o.ref = ref;
    o.amount = amount;
    o.body = body;
    pay_result* r = nullptr;
    const int rc = pay_submit_operation(&r, client_.get(), "ord-lost", PAY_OPERATION_REFUND, &o);
    ResultPtr res(r);
    if (rc_out) *rc_out = rc;
    if (rc != PAY_OK) return std::string();
    EXPECT_EQ(pay_result_outcome(r), PAY_OUTCOME_UNKNOWN) << pay_result_json(r);
    EXPECT_EQ(pay_result_provider_payment_id(r), nullptr) << "the 202 was lost: " << pay_result_json(r);
    return pay_result_order_id(r);
  }
  ResultPtr query(const std::string& row) {
    pay_result* q = nullptr;
    EXPECT_EQ(pay_query(&q, client_.get(), row.c_str()), PAY_OK) << pay_error_last()->message;
    return ResultPtr(q);
  }
  std::string key_of(const std::string& row) {
    Json j(ledger_get(client_.get(), row));
    return str(at(j.j, "payment"), "idempotency_key");
  }

  CheckoutDouble provider_;
  Probe probe_;
  ClientPtr client_;
};

TEST_F(LostOperationAnswer, the_refund_carries_its_key_as_reference_and_is_found_by_it_among_newer_actions) {
  const std::string row = refund_lost("r1", 1200);
  ASSERT_FALSE(row.empty());
  const std::string key = key_of(row);
  ASSERT_FALSE(key.empty());
  EXPECT_EQ(provider_.reference_of_last_operation(), key) << "the refund's reference is its idempotency key";
  // Newer than ours, listed first: a dashboard refund without a reference,
  // and one under a reference of the merchant's own, declined.
  provider_.add_action({"act_dash", "Refund", "", true, 300});
  provider_.add_action({"act_other", "Refund", "merchant-ref-9", false, 700});
  ResultPtr q = query(row);
  ASSERT_TRUE(q);
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(q.get());
  ASSERT_NE(pay_result_provider_payment_id(q.get()), nullptr) << pay_result_json(q.get());
  EXPECT_STREQ(pay_result_provider_payment_id(q.get()), "act_ours1") << "learned its own action's id";
  Json j(ledger_get(client_.get(), row));
  EXPECT_EQ(str(at(j.j, "payment"), "provider_payment_id"), "act_ours1");
}

TEST_F(LostOperationAnswer, a_declined_action_found_by_key_settles_failed_and_the_newest_approved_one_is_not_read) {
  provider_.approve_next = false;
  const std::string row = refund_lost("r1", 1200);
  ASSERT_FALSE(row.empty());
  provider_.add_action({"act_dash", "Refund", "", true, 1200});  // newest, approved, not ours
  ResultPtr q = query(row);
  ASSERT_TRUE(q);
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_FAILED) << pay_result_json(q.get());
  EXPECT_STREQ(pay_result_provider_payment_id(q.get()), "act_ours1");
}

TEST_F(LostOperationAnswer, an_action_listed_twice_under_the_key_settles_nothing) {
  provider_.list_ours_twice = true;
  const std::string row = refund_lost("r1", 1200);
  ASSERT_FALSE(row.empty());
  ResultPtr q = query(row);
  ASSERT_TRUE(q);
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(q.get());
  EXPECT_EQ(pay_result_provider_payment_id(q.get()), nullptr) << pay_result_json(q.get());
  EXPECT_TRUE(has(pay_result_json(q.get()), "2 times")) << pay_result_json(q.get());
}

TEST_F(LostOperationAnswer, a_reference_of_the_callers_own_is_refused_before_any_byte) {
  const size_t before = provider_.requests().size();
  int rc = 0;
  refund_lost("r2", 500, R"({"reference":"my-own-ref"})", &rc);
  EXPECT_EQ(rc, PAY_EINVALID);
  EXPECT_TRUE(has(pay_error_last()->message, "$.reference")) << pay_error_last()->message;
  EXPECT_EQ(provider_.requests().size(), before) << "nothing sent";
}

}  // namespace
}  // namespace payretry_test
