// Ledger::find_by_provider_id on every backend: memory:, SQLite and
// PostgreSQL (when PAYRETRY_TEST_PG_URL names a server). The webhook
// receiver finds an operation event's payment by the provider id the event
// names, and refuses to land an event on a row another row's id makes
// doubtful; both read this. It must keep to the client's scope (another
// merchant account's payment may hold the same id), answer the first row by
// order id (the row record_event lands an event naming only that id on, so
// that the two never disagree), and find nothing for "" (rows that learnt no
// id yet all hold "").
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "ledger.hpp"
#include "ledger_fixture.hpp"

using namespace payretry;
using namespace ledger_test;

namespace {

constexpr int64_t kNow = 1'700'000'000'000;
constexpr int64_t kLease = 30'000;
const std::string kScopeA = "scope-a", kScopeB = "scope-b";

std::string param_name(const ::testing::TestParamInfo<Kind>& info) { return kind_name(info.param); }

class FindByProviderId : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::postgres) LEDGER_REQUIRE_PG();
    store_ = std::make_unique<ScratchStore>(GetParam());
    ledger_ = open_ledger(store_->url(), "");
  }
  void TearDown() override {
    ledger_.reset();
    store_.reset();
  }

  PaymentRow proposal(const std::string& order, const std::string& scope) {
    PaymentRow r;
    r.order_id = order;
    r.idempotency_key = "key-" + scope + "-" + order;
    r.fingerprint = std::string(64, 'a');
    r.key_expires_at = kNow + 86'400'000;
    r.scope = scope;
    r.amount = 1000;
    return r;
  }
  // A payment of `scope` settled `state`, holding `id` ("" none yet).
  void payment(const std::string& order, const std::string& id, const std::string& scope = kScopeA,
               PaymentState state = PaymentState::succeeded) {
    ASSERT_TRUE(ledger_->create_and_claim(proposal(order, scope), "w", kNow, kNow + kLease).created) << order;
    Settlement s;
    s.state = state;
    s.delivery = "delivered";
    s.provider_payment_id = id;
    s.money_state = state == PaymentState::succeeded ? MoneyState::authorized : MoneyState::unknown;
    ASSERT_TRUE(ledger_->settle(order, "w", nullptr, s, kNow + 1)) << order;
  }
  // A capture of `parent` whose answer named it `id` (a Stripe capture's is its PaymentIntent's).
  void capture(const std::string& parent, const std::string& ref, const std::string& id) {
    PaymentRow p = proposal(operation_row_id(parent, OperationKind::capture, ref), kScopeA);
    p.operation = OperationKind::capture;
    p.parent_order_id = parent;
    p.operation_ref = ref;
    p.amount = 400;
    const Ledger::OperationOutcome o = ledger_->create_operation_and_claim(p, "op", kNow + 10, kNow + 10 + kLease);
    ASSERT_EQ(o.refused, "");
    ASSERT_TRUE(o.created);
    Settlement s;
    s.state = PaymentState::unknown;
    s.provider_payment_id = id;
    ASSERT_TRUE(ledger_->settle(p.order_id, "op", nullptr, s, kNow + 11));
  }
  std::string found(const std::string& scope, const std::string& id) {
    const std::optional<PaymentRow> r = ledger_->find_by_provider_id(scope, id);
    return r ? r->order_id : "(none)";
  }

  std::unique_ptr<ScratchStore> store_;
  std::unique_ptr<Ledger> ledger_;
};

TEST_P(FindByProviderId, TheRowIsFoundWholeInItsOwnScopeAndNeverInAnothers) {
  payment("pay-a", "pi_shared", kScopeA);
  payment("pay-b", "pi_only_b", kScopeB);
  const std::optional<PaymentRow> got = ledger_->find_by_provider_id(kScopeA, "pi_shared");
  ASSERT_TRUE(got.has_value());
  const PaymentRow want = *ledger_->get("pay-a");
  EXPECT_EQ(got->order_id, want.order_id);
  EXPECT_EQ(got->scope, kScopeA);
  EXPECT_EQ(got->state, want.state);
  EXPECT_EQ(got->provider_payment_id, "pi_shared");
  EXPECT_EQ(got->money_state, want.money_state);
  EXPECT_EQ(got->idempotency_key, want.idempotency_key);
  EXPECT_EQ(got->amount, want.amount);
  EXPECT_EQ(got->operation, OperationKind::create);

  EXPECT_EQ(found(kScopeB, "pi_shared"), "(none)") << "scope-a's payment answered to scope-b";
  EXPECT_EQ(found(kScopeA, "pi_only_b"), "(none)") << "scope-b's payment answered to scope-a";
  EXPECT_EQ(found("", "pi_shared"), "(none)") << "a scoped payment answered to the unscoped rows";
  // Another account's payment with the very same id: each scope finds its own.
  payment("pay-b2", "pi_shared", kScopeB);
  EXPECT_EQ(found(kScopeA, "pi_shared"), "pay-a");
  EXPECT_EQ(found(kScopeB, "pi_shared"), "pay-b2");
}

// Rows made in another order than their ids sort: the first by order id is
// found, and an event naming only that id lands on that same row.
TEST_P(FindByProviderId, OfSeveralHoldersTheFirstByOrderIdIsFoundAndIsTheRowAnIdOnlyEventLandsOn) {
  payment("m-2", "pi_dup");
  payment("m-10", "pi_dup");
  payment("m-1", "pi_dup");
  payment("l-9", "pi_dup", kScopeB);  // sorts first, another scope
  EXPECT_EQ(found(kScopeA, "pi_dup"), "m-1");

  LedgerEvent e;
  e.scope = kScopeA;
  e.scheme = "stripe";
  e.event_id = "evt_only_the_id";
  e.provider_payment_id = "pi_dup";
  e.received_at = kNow + 100;
  e.entry.kind = "webhook";
  e.entry.verdict = kEventNoted;
  e.entry.reason = "payment_intent.processing";
  ASSERT_EQ(ledger_->record_event(e), EventRecording::recorded);
  for (const char* id : {"m-1", "m-10", "m-2"})
    EXPECT_EQ(ledger_->attempts(id).size(), std::string(id) == "m-1" ? 1u : 0u) << id;

  // A payment and its capture holding its id (Stripe's capture answers the
  // PaymentIntent): the payment's row, which sorts before its operations.
  payment("cap", "pi_cap", kScopeA, PaymentState::succeeded);
  capture("cap", "c1", "pi_cap");
  EXPECT_EQ(found(kScopeA, "pi_cap"), "cap");
}

TEST_P(FindByProviderId, AnEmptyOrUnknownIdFindsNothingThoughRowsWithoutAnIdExist) {
  payment("no-id", "", kScopeA, PaymentState::unknown);
  payment("has-id", "pi_1", kScopeA);
  ASSERT_EQ(ledger_->get("no-id")->provider_payment_id, "");
  EXPECT_EQ(found(kScopeA, ""), "(none)");
  EXPECT_EQ(found(kScopeA, "pi_unknown"), "(none)");
  EXPECT_EQ(found(kScopeA, "pi_"), "(none)") << "a prefix is not the id";
}

// An id a row learns from an event (an UNKNOWN row settled by one naming
// its key's payment) is found at once.
TEST_P(FindByProviderId, AnIdLearntFromAnEventIsFound) {
  payment("learner", "", kScopeA, PaymentState::unknown);
  EXPECT_EQ(found(kScopeA, "pi_learnt"), "(none)");
  LedgerEvent e;
  e.scope = kScopeA;
  e.scheme = "stripe";
  e.event_id = "evt_teaches";
  e.order_id = "learner";
  e.provider_payment_id = "pi_learnt";
  e.received_at = kNow + 100;
  e.entry.kind = "webhook";
  e.entry.verdict = kEventSucceeded;
  e.entry.reason = "succeeded";
  ASSERT_EQ(ledger_->record_event(e), EventRecording::recorded);
  ASSERT_EQ(ledger_->get("learner")->provider_payment_id, "pi_learnt");
  EXPECT_EQ(found(kScopeA, "pi_learnt"), "learner");
  EXPECT_EQ(found(kScopeB, "pi_learnt"), "(none)");
}

INSTANTIATE_TEST_SUITE_P(Backends, FindByProviderId, ::testing::Values(Kind::memory, Kind::sqlite, Kind::postgres),
                         param_name);

}  // namespace
