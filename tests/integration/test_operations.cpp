// Captures, refunds and cancels (issue 47), held against the simulator's
// truth: a real client (libcurl, a SQLite ledger file) makes payments and
// then operations on them through pay_submit_operation, and the simulator
// counts what moved, per operation key (GET /__admin/truth). A refund that
// does not fit is refused before any byte; the same ref asked again is the
// same operation; an answer lost after the provider acted is re-sent with
// the same key and moves the money once.
#include <cJSON.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "../sim/sim_client.hpp"
#include "capi_probe.hpp"

namespace payretry_test {
namespace {

using simtest::admin_post;

class OperationsTest : public SimTest, public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/payretry-ops-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    profile_ = GetParam();
    payretry_sim::Options o = SimTest::sim_options();
    o.profile = profile_;
    o.seed = 47;
    sim_ = std::make_unique<payretry_sim::Server>(o);
    client_ = probed_client(cfg(), probe_);
    ASSERT_TRUE(client_);
  }
  void TearDown() override {
    client_.reset();
    if (sim_) sim_->stop();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  std::string cfg() const {
    return R"({"provider":")" + profile_ + R"(","base_url":")" + base_url() +
           R"(","auth":{"bearer":"sk_test_integration_secret"},)"
           R"("retry":{"max_attempts":4,"connect_timeout_ms":300,"attempt_timeout_ms":500,"deadline_ms":5000,)"
           R"("backoff_base_ms":20,"backoff_cap_ms":100,"min_attempt_ms":50,"jitter_seed":7},)"
           R"("not_found_grace_ms":0,"ledger":"sqlite://)" + dir_ + "/ops.db\"}";
  }

  // The create each provider's own clients send: paid at once, or only held.
  std::string create_body(const std::string& order, bool hold) const {
    if (profile_ == "stripe") {
      std::string b = R"({"amount":1000,"currency":"usd","metadata":{"order_id":")" + order + "\"}";
      if (hold) b += R"(,"confirm":true,"payment_method":"pm_card_visa","capture_method":"manual")";
      return b + "}";
    }
    std::string b = R"({"order_id":")" + order + R"(","amount":1000,"currency":"eur")";
    if (hold) b += R"(,"capture":false)";
    return b + "}";
  }

  void pay(const std::string& order, bool hold, const char* money) {
    const std::string b = create_body(order, hold);
    pay_result* r = nullptr;
    ASSERT_EQ(pay_submit(&r, client_.get(), order.c_str(), b.data(), b.size(), nullptr), PAY_OK)
        << pay_error_last()->message;
    ResultPtr res(r);
    ASSERT_EQ(pay_result_outcome(r), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r);
    ASSERT_STREQ(pay_money_state_name(pay_result_money_state(r)), money) << pay_result_json(r);
  }

  // pay_submit_operation; rc and, when 0, the result.
  int operate(const std::string& order, int kind, const std::string& ref, int64_t amount, ResultPtr* out,
              const char* body = nullptr) {
    pay_operation_options o;
    pay_operation_options_init(&o, PAY_OPERATION_OPTIONS_VERSION);
    o.ref = ref.c_str();
    o.amount = amount;
    o.body = body;
    pay_result* r = nullptr;
    const int rc = pay_submit_operation(&r, client_.get(), order.c_str(), kind, &o);
    if (out) out->reset(r);
    else pay_result_free(r);
    if (rc != PAY_OK) last_error_ = pay_error_last()->message;
    return rc;
  }

  // The simulator's truth of the order's payment.
  struct Truth {
    long captured = 0, refunded = 0, operations = 0;
    std::map<std::string, long> movements_by_key;
    long moves_of(const std::string& key) const {
      const auto it = movements_by_key.find(key);
      return it == movements_by_key.end() ? 0 : it->second;
    }
  };
  Truth truth(const std::string& order) const {
    Truth t;
    const simtest::Json doc(simtest::get(sim_->port(), "/__admin/truth?order_id=" + order).body);
    EXPECT_EQ(cJSON_GetArraySize(doc.at("payments")), 1) << order;
    const cJSON* payment = cJSON_GetArrayItem(doc.at("payments"), 0);
    t.captured = num(payment, "captured");
    t.refunded = num(payment, "refunded");
    t.operations = cJSON_GetArraySize(at(payment, "operations"));
    const cJSON* m = nullptr;
    cJSON_ArrayForEach(m, at(payment, "movements_by_key")) {
      if (m->string) t.movements_by_key[m->string] = static_cast<long>(m->valuedouble);
    }
    return t;
  }
  std::string row(const std::string& id, const char* field) {
    Json j(ledger_get(client_.get(), id));
    return str(at(j.j, "payment"), field);
  }

  // Checkout.com answers an operation 202 with its action id and no
  // status: accepted, not decided. The operation is UNKNOWN (money pending)
  // until its own lookup says: the refund's action in the payment's actions,
  // the capture's or void's payment status.
  bool answers_later() const { return profile_ == "checkout_com"; }
  std::string money(const pay_result* r) const { return pay_money_state_name(pay_result_money_state(r)); }

  // The operation just answered: decided at once (Stripe), or UNKNOWN and
  // then settled by pay_query of its row (Checkout.com). `r` is left
  // holding the decided result.
  void decided(ResultPtr& r) {
    if (!answers_later()) return;
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
    EXPECT_NE(pay_result_provider_payment_id(r.get()), nullptr) << "the 202 names its action: " << pay_result_json(r.get());
    const std::string id = pay_result_order_id(r.get());
    pay_result* q = nullptr;
    ASSERT_EQ(pay_query(&q, client_.get(), id.c_str()), PAY_OK) << pay_error_last()->message;
    r.reset(q);
  }

  std::string profile_, dir_, last_error_;
  Probe probe_;
  ClientPtr client_;
};

TEST_P(OperationsTest, partial_refunds_move_the_money_once_each_and_one_that_does_not_fit_sends_nothing) {
  const std::string order = std::string("opr_") + profile_;
  pay(order, false, "paid");

  ResultPtr r;
  ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r1", 400, &r), PAY_OK) << last_error_;
  decided(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(money(r.get()), "refunded") << pay_result_json(r.get());
  EXPECT_EQ(std::string(pay_result_order_id(r.get())), order + " refund r1");
  EXPECT_EQ(row(order, "money_state"), "partly_refunded") << ledger_get(client_.get(), order);
  const std::string key1 = row(order + " refund r1", "idempotency_key");
  Truth t = truth(order);
  EXPECT_EQ(t.refunded, 400);
  EXPECT_EQ(t.moves_of(key1), 1);

  // More than is left: refused by the ledger's guard, nothing written or sent.
  EXPECT_EQ(operate(order, PAY_OPERATION_REFUND, "r2", 700, nullptr), PAY_EINVALID);
  EXPECT_NE(last_error_.find("refused, nothing sent"), std::string::npos) << last_error_;
  EXPECT_EQ(truth(order).operations, 1);
  pay_buf none = {nullptr, 0};
  EXPECT_EQ(pay_ledger_get(&none, client_.get(), (order + " refund r2").c_str()), PAY_ENOTFOUND)
      << "no row for a refused operation";
  pay_buf_dispose(&none);

  // The same ref again is the same refund: answered from the ledger.
  ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r1", 400, &r), PAY_OK) << last_error_;
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_TRUE(pay_result_from_ledger(r.get()));
  // ... and asked otherwise, a mismatch.
  EXPECT_EQ(operate(order, PAY_OPERATION_REFUND, "r1", 300, nullptr), PAY_EMISMATCH) << last_error_;
  EXPECT_EQ(truth(order).operations, 1);

  // The provider refunds, and its answer is lost: the re-send carries the
  // same key and bytes, and the provider's replay answers it.
  const auto s = admin_post(sim_->port(), "/__admin/script", R"({"order_id":")" + order + R"(","faults":["lost_response","none"]})");
  ASSERT_EQ(s.status, 200) << s.body;
  ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r3", 300, &r), PAY_OK) << last_error_;
  if (answers_later()) {
    // Checkout.com caches only a 2xx: a lost answer may have been a 5xx,
    // after which the same key would refund again. The refund is UNKNOWN,
    // and asking for it again sends nothing (the re-send rule).
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
    ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r3", 300, &r), PAY_OK) << last_error_;
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
    // No answer named its action, but the refund carried its key as the
    // action's reference: its lookup finds the one action listing that key,
    // settles it and learns its id.
    pay_result* q = nullptr;
    ASSERT_EQ(pay_query(&q, client_.get(), (order + " refund r3").c_str()), PAY_OK) << pay_error_last()->message;
    ResultPtr found(q);
    EXPECT_EQ(pay_result_outcome(q), PAY_OUTCOME_SUCCEEDED) << pay_result_json(q);
    EXPECT_FALSE(row(order + " refund r3", "provider_payment_id").empty()) << ledger_get(client_.get(), order);
  } else {
    // Stripe stores the answer under the key: the re-send is answered with it.
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
    EXPECT_GE(pay_result_attempts(r.get()), 2) << pay_result_json(r.get());
  }
  const std::string key3 = row(order + " refund r3", "idempotency_key");
  t = truth(order);
  EXPECT_EQ(t.moves_of(key3), 1) << "one refund, one movement";
  EXPECT_EQ(t.refunded, 700);

  // The rest: what the ledger counts as left (1000 - 400 - 300; an UNKNOWN
  // refund counts as spent).
  ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r4", 0, &r), PAY_OK) << last_error_;
  decided(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  {
    Json j(ledger_get(client_.get(), order + " refund r4"));
    EXPECT_EQ(num(at(j.j, "payment"), "amount"), 300) << "the rest, as the guard decided it";
  }
  EXPECT_EQ(truth(order).refunded, 1000);
  // Wholly refunded once the refunds that succeeded add up to the payment
  // (Checkout.com's r3 too: found by its key above).
  EXPECT_EQ(row(order, "money_state"), "refunded") << ledger_get(client_.get(), order);
  EXPECT_EQ(operate(order, PAY_OPERATION_REFUND, "r5", 0, nullptr), PAY_EINVALID) << "nothing is left";
  EXPECT_EQ(truth(order).operations, 3);
  // pay_ledger_get of the payment lists its refunds (rows of their own),
  // the refused ones never written.
  {
    Json j(ledger_get(client_.get(), order));
    const cJSON* ops = at(j.j, "operations");
    ASSERT_EQ(cJSON_GetArraySize(ops), 3) << ledger_get(client_.get(), order);
    EXPECT_EQ(str(cJSON_GetArrayItem(ops, 0), "order_id"), order + " refund r1");
    EXPECT_EQ(str(cJSON_GetArrayItem(ops, 2), "operation_ref"), "r4");
    Json own(ledger_get(client_.get(), order + " refund r1"));
    EXPECT_EQ(cJSON_GetObjectItemCaseSensitive(own.j, "operations"), nullptr) << "an operation has none";
  }
}

TEST_P(OperationsTest, a_hold_is_captured_in_part_and_then_cannot_be_canceled_and_another_is_canceled) {
  const std::string order = std::string("opc_") + profile_;
  pay(order, true, "authorized");
  // Nothing captured yet: nothing to refund.
  EXPECT_EQ(operate(order, PAY_OPERATION_REFUND, "r1", 100, nullptr), PAY_EINVALID);

  ResultPtr r;
  ASSERT_EQ(operate(order, PAY_OPERATION_CAPTURE, "c1", 600, &r), PAY_OK) << last_error_;
  decided(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(money(r.get()), "paid") << pay_result_json(r.get());
  EXPECT_EQ(row(order, "money_state"), "paid") << ledger_get(client_.get(), order);
  EXPECT_EQ(truth(order).captured, 600);
  // A captured payment is not canceled: refused before any byte.
  EXPECT_EQ(operate(order, PAY_OPERATION_CANCEL, "x1", 0, nullptr), PAY_EINVALID) << last_error_;
  // Refunds are held to what was captured, not to what was authorized.
  EXPECT_EQ(operate(order, PAY_OPERATION_REFUND, "r1", 700, nullptr), PAY_EINVALID) << last_error_;
  ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r2", 600, &r), PAY_OK) << last_error_;
  decided(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(truth(order).refunded, 600);

  const std::string other = std::string("opx_") + profile_;
  pay(other, true, "authorized");
  ASSERT_EQ(operate(other, PAY_OPERATION_CANCEL, "x1", 0, &r), PAY_OK) << last_error_;
  decided(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(row(other, "money_state"), "failed") << ledger_get(client_.get(), other);
  EXPECT_EQ(operate(other, PAY_OPERATION_CAPTURE, "c1", 0, nullptr), PAY_EINVALID) << "canceled";
}

TEST_P(OperationsTest, an_operation_on_an_order_the_ledger_does_not_know_or_with_bad_arguments_sends_nothing) {
  EXPECT_EQ(operate("never_paid", PAY_OPERATION_REFUND, "r1", 100, nullptr), PAY_ENOTFOUND);
  const std::string order = std::string("opb_") + profile_;
  pay(order, false, "paid");
  EXPECT_EQ(operate(order, PAY_OPERATION_REFUND, "has space", 100, nullptr), PAY_EINVALID);
  EXPECT_EQ(operate(order, 9, "r1", 100, nullptr), PAY_EINVALID);
  // A body that sets what payretry writes is refused before anything is
  // written: no row is left to hold its amount (the outside attack's case:
  // such a row refused every later refund of the payment).
  EXPECT_EQ(operate(order, PAY_OPERATION_REFUND, "x", 1000, nullptr, R"({"amount":5})"), PAY_EINVALID);
  pay_buf none = {nullptr, 0};
  EXPECT_EQ(pay_ledger_get(&none, client_.get(), (order + " refund x").c_str()), PAY_ENOTFOUND);
  pay_buf_dispose(&none);
  EXPECT_EQ(truth(order).operations, 0);
  ResultPtr r;
  ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r2", 1000, &r), PAY_OK) << last_error_;
  EXPECT_NE(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED) << pay_result_json(r.get());
  EXPECT_EQ(truth(order).refunded, 1000);
}

// pay_reconcile walks UNKNOWN operations too, and settles each by its own
// lookup, never by its payment's: a refund whose request never reached the
// provider is not read as done because its payment is paid.
TEST_P(OperationsTest, reconcile_settles_an_unknown_operation_by_its_own_lookup_never_by_its_payments) {
  const std::string order = std::string("opu_") + profile_;
  pay(order, false, "paid");
  ResultPtr r;
  if (answers_later()) {
    // The 202 names the action: reconcile finds it approved.
    ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r1", 250, &r), PAY_OK) << last_error_;
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  } else {
    // Every attempt's answer lost after Stripe refunded: UNKNOWN, and no
    // refund id to look it up by.
    const auto s = admin_post(sim_->port(), "/__admin/script",
                              R"({"order_id":")" + order + R"(","faults":["lost_response","lost_response","lost_response","lost_response"]})");
    ASSERT_EQ(s.status, 200) << s.body;
    ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r1", 250, &r), PAY_OK) << last_error_;
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  }
  pay_reconcile_options o;
  pay_reconcile_options_init(&o, PAY_RECONCILE_OPTIONS_VERSION);
  pay_buf report = {nullptr, 0};
  ASSERT_EQ(pay_reconcile(&report, client_.get(), &o), PAY_OK) << pay_error_last()->message;
  const std::string text(report.ptr, report.size);
  pay_buf_dispose(&report);
  const std::string state = row(order + " refund r1", "state");
  if (answers_later()) {
    EXPECT_EQ(state, "SUCCEEDED") << text;
    EXPECT_EQ(row(order + " refund r1", "money_state"), "refunded") << text;
    EXPECT_EQ(row(order, "money_state"), "partly_refunded") << ledger_get(client_.get(), order);
  } else {
    // Its payment's lookup would say succeeded; the refund's own needs the
    // id no answer gave: it stays UNKNOWN, and only its ref settles it.
    EXPECT_EQ(state, "UNKNOWN") << text;
    EXPECT_EQ(row(order, "money_state"), "paid") << ledger_get(client_.get(), order);
    ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r1", 250, &r), PAY_OK) << last_error_;
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  }
  const std::string key = row(order + " refund r1", "idempotency_key");
  EXPECT_EQ(truth(order).moves_of(key), 1);
  EXPECT_EQ(truth(order).refunded, 250);
}

// A capture whose every attempt was cut before the provider acted, and then
// another capture of the same hold under another ref: the payment's status
// (Stripe's succeeded, Checkout.com's Partially Captured) is the second
// one's doing, and never settles the first (an outside attack's case: the
// ledger then believed 700 captured where the provider took 300).
TEST_P(OperationsTest, a_capture_that_never_reached_the_provider_is_not_settled_by_another_capture) {
  const std::string order = std::string("opk_") + profile_;
  pay(order, true, "authorized");
  // Stripe retries a reset under the same key (4 attempts here);
  // Checkout.com's profile asks before it re-sends (one attempt).
  const std::string faults = answers_later() ? R"(["reset_before"])"
                                             : R"(["reset_before","reset_before","reset_before","reset_before"])";
  const auto s = admin_post(sim_->port(), "/__admin/script", R"({"order_id":")" + order + R"(","faults":)" + faults + "}");
  ASSERT_EQ(s.status, 200) << s.body;
  ResultPtr r;
  ASSERT_EQ(operate(order, PAY_OPERATION_CAPTURE, "c1", 400, &r), PAY_OK) << last_error_;
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  EXPECT_LE(truth(order).captured, 0) << "nothing captured (-1: no capture at all)";
  // The other capture: 300 of what is left (400 counts as spent).
  ASSERT_EQ(operate(order, PAY_OPERATION_CAPTURE, "c2", 300, &r), PAY_OK) << last_error_;
  decided(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(truth(order).captured, 300);
  pay_result* q = nullptr;
  ASSERT_EQ(pay_query(&q, client_.get(), (order + " capture c1").c_str()), PAY_OK) << pay_error_last()->message;
  ResultPtr first(q);
  EXPECT_EQ(pay_result_outcome(q), PAY_OUTCOME_UNKNOWN) << "settled by another capture's doing: " << pay_result_json(q);
  // What may be refunded is what was captured for sure: 300, not 700.
  EXPECT_EQ(operate(order, PAY_OPERATION_REFUND, "r1", 301, nullptr), PAY_EINVALID) << last_error_;
}

INSTANTIATE_TEST_SUITE_P(Operations, OperationsTest, ::testing::Values("stripe", "checkout_com"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace payretry_test
