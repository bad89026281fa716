// Ledger::prune_settled on every backend (memory:, SQLite, PostgreSQL when
// PAYRETRY_TEST_PG_URL names a server): only SUCCEEDED and FAILED rows last
// updated before the cut go, each with its history; UNKNOWN, PENDING and
// IN_FLIGHT rows stay whatever their age, since forgetting one would let its
// order be paid again.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ledger.hpp"
#include "ledger_fixture.hpp"
#include "ledger_memory.hpp"

namespace payretry {
namespace {

using ledger_test::Kind;
using ledger_test::ScratchStore;

constexpr int64_t kOld = 1'700'000'000'000;  // settled long ago
constexpr int64_t kCut = kOld + 3'600'000;    // prune what was last updated before this
constexpr int64_t kNew = kCut + 60'000;       // settled after the cut

class LedgerPrune : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::postgres) LEDGER_REQUIRE_PG();
    store_ = std::make_unique<ScratchStore>(GetParam());
    ledger_ = open_ledger(store_->url(), "");
  }

  // An order created at `at`, one send recorded, then settled as `state`
  // (or left IN_FLIGHT when `settle` is false).
  void stage(const std::string& order, int64_t at, PaymentState state, bool settle = true) {
    PaymentRow p;
    p.order_id = order;
    p.idempotency_key = "key-" + order;
    p.fingerprint = "fp-" + order;
    p.key_expires_at = at + 86'400'000;
    const std::string owner = "owner-" + order;
    ASSERT_TRUE(ledger_->create_and_claim(p, owner, at, at + 30'000).created) << order;
    AttemptEntry a;
    a.number = 1;
    a.started_at = at;
    a.ended_at = at + 5;
    a.http_status = state == PaymentState::unknown ? 0 : 200;
    a.transport_error = state == PaymentState::unknown ? "timeout" : "";
    a.verdict = state == PaymentState::unknown ? "retry" : "success";
    a.reason = "staged";
    ASSERT_TRUE(ledger_->record_attempt(order, owner, a)) << order;
    if (!settle) return;
    Settlement s;
    s.state = state;
    ASSERT_TRUE(ledger_->settle(order, owner, nullptr, s, at + 10)) << order;
  }

  std::unique_ptr<ScratchStore> store_;
  std::unique_ptr<Ledger> ledger_;
};

TEST_P(LedgerPrune, OnlyFinalRowsOlderThanTheCutGoAndTheirHistoryWithThem) {
  stage("old-succeeded", kOld, PaymentState::succeeded);
  stage("old-failed", kOld, PaymentState::failed);
  stage("old-unknown", kOld, PaymentState::unknown);
  stage("old-in-flight", kOld, PaymentState::in_flight, false);
  stage("new-succeeded", kNew, PaymentState::succeeded);
  ASSERT_FALSE(HasFatalFailure());

  EXPECT_EQ(ledger_->prune_settled(kCut), 2);
  for (const char* gone : {"old-succeeded", "old-failed"}) {
    EXPECT_FALSE(ledger_->get(gone)) << gone;
    EXPECT_TRUE(ledger_->attempts(gone).empty()) << gone;
  }
  for (const char* kept : {"old-unknown", "old-in-flight", "new-succeeded"}) {
    ASSERT_TRUE(ledger_->get(kept)) << kept << " must stay";
    EXPECT_EQ(ledger_->attempts(kept).size(), 1u) << kept << "'s history must stay";
  }
  EXPECT_EQ(ledger_->get("old-unknown")->state, PaymentState::unknown);
  if (GetParam() != Kind::memory) {
    EXPECT_EQ(store_->query_raw("SELECT count(*) FROM attempts WHERE order_id IN ('old-succeeded','old-failed')"), "0");
    EXPECT_EQ(store_->query_raw("SELECT count(*) FROM payments"), "3");
  }
  EXPECT_EQ(ledger_->prune_settled(kCut), 0) << "a second prune finds nothing more";
}

TEST_P(LedgerPrune, APrunedOrderAndItsKeyAreFreeAgain) {
  stage("order-1", kOld, PaymentState::succeeded);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(ledger_->prune_settled(kCut), 1);
  // The store holds nothing of it: the same order and key make a new row
  // (which is why a pruned order must never be submitted again).
  PaymentRow p;
  p.order_id = "order-1";
  p.idempotency_key = "key-order-1";
  p.fingerprint = "fp-order-1";
  p.key_expires_at = kNew + 86'400'000;
  const Ledger::CreateOutcome again = ledger_->create_and_claim(p, "owner-2", kNew, kNew + 30'000);
  EXPECT_TRUE(again.created);
  EXPECT_FALSE(again.key_taken);
}

TEST_P(LedgerPrune, TheCutIsStrictAndRowsAtItStay) {
  stage("at-the-cut", kCut - 10, PaymentState::failed);  // settled at kCut exactly
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(ledger_->get("at-the-cut")->updated_at, kCut);
  EXPECT_EQ(ledger_->prune_settled(kCut), 0);
  EXPECT_EQ(ledger_->prune_settled(kCut + 1), 1);
}

// SQLite and PostgreSQL only: memory: does not outlive its ledger.
class DurableLedgerPrune : public LedgerPrune {};

TEST_P(DurableLedgerPrune, ReopeningTheStoreShowsThePruneWasCommitted) {
  stage("old", kOld, PaymentState::succeeded);
  stage("new", kNew, PaymentState::succeeded);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(ledger_->prune_settled(kCut), 1);
  ledger_.reset();
  const std::unique_ptr<Ledger> reopened = open_ledger(store_->url(), "");
  EXPECT_FALSE(reopened->get("old"));
  EXPECT_TRUE(reopened->get("new"));
}

std::string backend_name(const ::testing::TestParamInfo<Kind>& info) { return ledger_test::kind_name(info.param); }

INSTANTIATE_TEST_SUITE_P(Backends, LedgerPrune, ::testing::Values(Kind::memory, Kind::sqlite, Kind::postgres),
                         backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, DurableLedgerPrune, ::testing::Values(Kind::sqlite, Kind::postgres), backend_name);

// The memory ledger's own cap (memory:?max_settled=N) keeps an index of its
// final rows: a prune must leave it whole, so later settles still forget the
// oldest beyond the cap and never a row that is gone already.
TEST(MemoryLedgerPrune, TheMaxSettledCapStillHoldsAfterAPrune) {
  MemoryLedgerOptions o;
  o.max_settled = 2;
  const std::unique_ptr<Ledger> l = open_memory_ledger("", o);
  auto settle = [&](const std::string& order, int64_t at) {
    PaymentRow p;
    p.order_id = order;
    p.idempotency_key = "key-" + order;
    p.fingerprint = "fp";
    p.key_expires_at = at + 1;
    ASSERT_TRUE(l->create_and_claim(p, "o-" + order, at, at + 10).created);
    Settlement s;
    s.state = PaymentState::succeeded;
    ASSERT_TRUE(l->settle(order, "o-" + order, nullptr, s, at));
  };
  settle("a", 100);
  settle("b", 200);
  EXPECT_EQ(l->prune_settled(150), 1);  // a
  settle("c", 300);
  settle("d", 400);  // the cap of 2 forgets b, the oldest left
  EXPECT_FALSE(l->get("a"));
  EXPECT_FALSE(l->get("b"));
  EXPECT_TRUE(l->get("c"));
  EXPECT_TRUE(l->get("d"));
  EXPECT_EQ(l->prune_settled(1000), 2);
  settle("e", 500);
  EXPECT_TRUE(l->get("e"));
}

}  // namespace
}  // namespace payretry
