// Operations (captures, refunds, cancels: src/model/operation_rules.hpp) on
// every backend: memory:, SQLite and PostgreSQL (when PAYRETRY_TEST_PG_URL
// names a server). Ledger::create_operation_and_claim guards a new
// operation in the transaction that inserts it: a refusal writes nothing, a
// retry of an existing one is answered as it stands, and operations racing
// on one payment (threads here; for the durable backends child processes
// too, the conformance suite's --ledger-child) never take more than the
// payment has.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "ledger.hpp"
#include "ledger_fixture.hpp"

using namespace payretry;
using namespace ledger_test;

namespace ledger_test {

// One racer's refunds of `parent` (scope-a), refs "<name>-<k>" for k <
// `count`, each of `amount`, claimed for `name` at `now`: the refs created,
// and the refusals' count. Shared with the conformance suite's child
// process (test_conformance.cpp, command "refund").
std::vector<std::string> refund_race_pass(Ledger& l, const std::string& parent, const std::string& name, int count,
                                          int64_t amount, int64_t now, int* refused);

}  // namespace ledger_test

namespace {

constexpr int64_t kNow = 1'700'000'000'000;
constexpr int64_t kLease = 30'000;
constexpr int64_t kDay = 86'400'000;
const std::string kScope = "scope-a";

PaymentRow payment_proposal(const std::string& order, int64_t amount) {
  PaymentRow r;
  r.order_id = order;
  r.idempotency_key = "key-" + order;
  r.fingerprint = std::string(64, 'a');
  r.key_expires_at = kNow + kDay;
  r.scope = kScope;
  r.amount = amount;
  return r;
}

PaymentRow operation_proposal(const std::string& parent, OperationKind kind, const std::string& ref, int64_t amount,
                              const std::string& scope = kScope) {
  PaymentRow r;
  r.order_id = operation_row_id(parent, kind, ref);
  r.idempotency_key = "key-" + parent + "-" + operation_kind_name(kind) + "-" + ref;
  r.fingerprint = std::string(64, 'b');
  r.key_expires_at = kNow + kDay;
  r.scope = scope;
  r.operation = kind;
  r.parent_order_id = parent;
  r.operation_ref = ref;
  r.amount = amount;
  return r;
}

Settlement settlement(PaymentState state, MoneyState money = MoneyState::unknown) {
  Settlement s;
  s.state = state;
  s.delivery = "delivered";
  s.money_state = money;
  return s;
}

// A payment of `amount` created at `at`; settled `state` with `money` read,
// or left IN_FLIGHT under "creator".
void make_payment(Ledger& l, const std::string& order, PaymentState state, MoneyState money, int64_t amount,
                  int64_t at = kNow) {
  ASSERT_TRUE(l.create_and_claim(payment_proposal(order, amount), "creator", at, at + kLease).created) << order;
  if (state == PaymentState::in_flight) return;
  ASSERT_TRUE(l.settle(order, "creator", nullptr, settlement(state, money), at + 1)) << order;
}

Ledger::OperationOutcome operate(Ledger& l, const std::string& parent, OperationKind kind, const std::string& ref,
                                 int64_t amount, const std::string& owner = "worker", int64_t at = kNow + 100) {
  return l.create_operation_and_claim(operation_proposal(parent, kind, ref, amount), owner, at, at + kLease);
}

// An operation created and claimed by `owner`, then settled `state`.
void make_operation(Ledger& l, const std::string& parent, OperationKind kind, const std::string& ref, int64_t amount,
                    PaymentState state, int64_t at = kNow + 100) {
  const Ledger::OperationOutcome o = operate(l, parent, kind, ref, amount, "op-" + ref, at);
  ASSERT_EQ(o.refused, "") << ref;
  ASSERT_TRUE(o.created) << ref;
  if (state == PaymentState::in_flight) return;
  ASSERT_TRUE(l.settle(o.row.order_id, "op-" + ref, nullptr, settlement(state), at + 1)) << ref;
}

void expect_same_row(const PaymentRow& want, const PaymentRow& got) {
  EXPECT_EQ(want.order_id, got.order_id);
  EXPECT_EQ(want.idempotency_key, got.idempotency_key);
  EXPECT_EQ(want.fingerprint, got.fingerprint);
  EXPECT_EQ(want.state, got.state);
  EXPECT_EQ(want.delivery, got.delivery);
  EXPECT_EQ(want.detail, got.detail);
  EXPECT_EQ(want.provider_payment_id, got.provider_payment_id);
  EXPECT_EQ(want.money_state, got.money_state);
  EXPECT_EQ(want.attempts, got.attempts);
  EXPECT_EQ(want.created_at, got.created_at);
  EXPECT_EQ(want.lease_owner, got.lease_owner);
  EXPECT_EQ(want.lease_until, got.lease_until);
  EXPECT_EQ(want.updated_at, got.updated_at);
  EXPECT_EQ(want.scope, got.scope);
  EXPECT_EQ(want.operation, got.operation);
  EXPECT_EQ(want.parent_order_id, got.parent_order_id);
  EXPECT_EQ(want.operation_ref, got.operation_ref);
  EXPECT_EQ(want.amount, got.amount);
}

size_t row_count(Ledger& l) { return l.list(std::nullopt, 0, -1, std::nullopt).size(); }

std::string param_name(const ::testing::TestParamInfo<Kind>& info) { return kind_name(info.param); }

class LedgerOperations : public ::testing::TestWithParam<Kind> {
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

  // Refunds of one payment of 1000 captured at its create, from `threads`
  // threads of this process and `children` child processes at once, each
  // asking `per_racer` refunds of 300 under refs of its own: exactly three
  // fit. Over `rounds` payments.
  void refund_race(int threads, int children, int per_racer, int rounds) {
    std::vector<std::unique_ptr<Child>> kids;
    for (int c = 0; c < children; ++c) {
      kids.push_back(std::make_unique<Child>(
          std::vector<std::string>{"--ledger-child", store_->url(), "child" + std::to_string(c)}));
      ASSERT_EQ(kids.back()->read_line(), std::optional<std::string>("started"));
      kids.back()->send("open");
      const auto line = kids.back()->read_line();
      ASSERT_TRUE(line && line->rfind("ready ", 0) == 0) << (line ? *line : "child died");
    }
    for (int round = 0; round < rounds; ++round) {
      const std::string parent = "race-pay-" + std::to_string(round);
      SCOPED_TRACE(parent);
      make_payment(*ledger_, parent, PaymentState::succeeded, MoneyState::paid, 1000);
      ASSERT_FALSE(HasFatalFailure());
      const int64_t at = kNow + 1000 * (round + 1);
      for (auto& k : kids)
        k->send("refund " + parent + " 300 " + std::to_string(per_racer) + " " + std::to_string(at));
      std::atomic<bool> go{false};
      std::mutex mu;
      std::vector<std::string> won, errors;
      int refused = 0;
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          while (!go.load()) std::this_thread::yield();
          int no = 0;
          try {
            auto mine = refund_race_pass(*ledger_, parent, "thread" + std::to_string(t), per_racer, 300, at, &no);
            std::lock_guard<std::mutex> lock(mu);
            won.insert(won.end(), mine.begin(), mine.end());
            refused += no;
          } catch (const std::exception& e) {
            std::lock_guard<std::mutex> lock(mu);
            errors.push_back(e.what());
          }
        });
      go = true;
      for (auto& th : pool) th.join();
      for (size_t c = 0; c < kids.size(); ++c)
        for (;;) {
          const auto line = kids[c]->read_line();
          ASSERT_TRUE(line.has_value()) << "child " << c << " died or hung";
          if (*line == "done") break;
          if (line->rfind("won ", 0) == 0) won.push_back(line->substr(4));
          else if (line->rfind("refused ", 0) == 0) refused += std::stoi(line->substr(8));
          else errors.push_back("child " + std::to_string(c) + ": " + *line);
        }
      for (const auto& e : errors) ADD_FAILURE() << e;
      const int racers = threads + children;
      EXPECT_EQ(won.size(), 3u) << "refunds created of 300 each from 1000";
      EXPECT_EQ(refused, racers * per_racer - static_cast<int>(won.size()));
      // What the ledger holds: exactly the winners, never more than captured.
      int64_t sum = 0;
      std::set<std::string> held;
      for (const PaymentRow& r : ledger_->list(std::nullopt, 0, -1, std::nullopt)) {
        if (r.parent_order_id != parent) continue;
        EXPECT_EQ(r.operation, OperationKind::refund);
        EXPECT_EQ(r.amount, 300);
        EXPECT_EQ(r.state, PaymentState::in_flight);
        sum += r.amount;
        held.insert(r.operation_ref);
      }
      EXPECT_EQ(held, std::set<std::string>(won.begin(), won.end()));
      EXPECT_LE(sum, 1000);
    }
  }

  std::unique_ptr<ScratchStore> store_;
  std::unique_ptr<Ledger> ledger_;
};

class DurableOperations : public LedgerOperations {};
// Many threads on one ledger: CI runs these under ThreadSanitizer too
// (their names match its filter, "Concurrent\.").
class OperationsConcurrent : public LedgerOperations {};

// ---- rows ---------------------------------------------------------------------

TEST_P(LedgerOperations, AnOperationIsARowOfItsOwnCarryingItsKindPaymentRefAndDecidedAmount) {
  Ledger& l = *ledger_;
  make_payment(l, "42", PaymentState::succeeded, MoneyState::paid, 1000);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(l.get("42")->amount, 1000) << "a create keeps the amount it asked";
  EXPECT_EQ(l.get("42")->operation, OperationKind::create);
  const auto o = operate(l, "42", OperationKind::refund, "r1", -1, "worker-a", kNow + 100);
  EXPECT_EQ(o.refused, "");
  ASSERT_TRUE(o.created);
  EXPECT_FALSE(o.key_taken);
  PaymentRow want = operation_proposal("42", OperationKind::refund, "r1", 1000);
  EXPECT_EQ(want.order_id, "42 refund r1");
  want.state = PaymentState::in_flight;
  want.lease_owner = "worker-a";
  want.lease_until = kNow + 100 + kLease;
  want.created_at = want.updated_at = kNow + 100;
  expect_same_row(want, o.row);  // "the rest": 1000, decided by the guard
  expect_same_row(want, *l.get("42 refund r1"));
  // Claimed, fenced and settled like any payment.
  EXPECT_FALSE(l.claim("42 refund r1", "worker-b", kNow + 101, kNow + 200));
  ASSERT_TRUE(l.settle("42 refund r1", "worker-a", nullptr, settlement(PaymentState::succeeded), kNow + 150));
  EXPECT_EQ(l.get("42 refund r1")->state, PaymentState::succeeded);
  EXPECT_EQ(l.get("42 refund r1")->amount, 1000);
}

TEST_P(LedgerOperations, ABatchCreateKeepsItsAmountAndCreateAndClaimRefusesAnOperation) {
  Ledger& l = *ledger_;
  LedgerBatch b;
  for (const char* o : {"b-1", "b-2"}) {
    LedgerBatch::Create c;
    c.owner = "worker-a";
    c.proposed = payment_proposal(o, o[2] == '1' ? 250 : -1);
    c.now = kNow;
    c.lease_until = kNow + kLease;
    b.creates.push_back(c);
  }
  l.apply(b);
  ASSERT_EQ(b.creates[0].error, "");
  ASSERT_EQ(b.creates[1].error, "");
  EXPECT_EQ(l.get("b-1")->amount, 250);
  EXPECT_EQ(l.get("b-2")->amount, -1);
  // An operation through create_and_claim would pass the guard by.
  make_payment(l, "p", PaymentState::succeeded, MoneyState::paid, 100);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_THROW(l.create_and_claim(operation_proposal("p", OperationKind::refund, "r1", 500), "w", kNow, kNow + kLease),
               LedgerError);
  LedgerBatch c;
  LedgerBatch::Create e;
  e.owner = "w";
  e.proposed = operation_proposal("p", OperationKind::refund, "r2", 500);
  e.now = kNow;
  e.lease_until = kNow + kLease;
  c.creates.push_back(e);
  c.creates.push_back(b.creates[0]);
  c.creates.back().proposed = payment_proposal("b-3", 7);
  l.apply(c);
  EXPECT_NE(c.creates[0].error, "") << "refused, alone";
  EXPECT_EQ(c.creates[1].error, "");
  EXPECT_FALSE(l.get("p refund r1"));
  EXPECT_FALSE(l.get("p refund r2"));
  EXPECT_EQ(l.get("b-3")->amount, 7);
}

TEST_P(LedgerOperations, AProposalWhoseRowIdIsNotItsOwnIsRefusedAndNothingWritten) {
  Ledger& l = *ledger_;
  make_payment(l, "p", PaymentState::succeeded, MoneyState::paid, 100);
  ASSERT_FALSE(HasFatalFailure());
  const size_t before = row_count(l);
  PaymentRow wrong = operation_proposal("p", OperationKind::refund, "r1", 10);
  wrong.order_id = "p-refund-r1";
  EXPECT_THROW(l.create_operation_and_claim(wrong, "w", kNow, kNow + kLease), LedgerError);
  EXPECT_THROW(l.create_operation_and_claim(operation_proposal("p", OperationKind::refund, "r 1", 10), "w", kNow,
                                            kNow + kLease),
               LedgerError);
  EXPECT_THROW(l.create_operation_and_claim(payment_proposal("q", 10), "w", kNow, kNow + kLease), LedgerError)
      << "a create is not an operation";
  EXPECT_EQ(row_count(l), before);
}

// ---- the guard in the transaction ----------------------------------------------

TEST_P(LedgerOperations, ARefusalWritesNothingAndLeavesThePaymentAsItWas) {
  Ledger& l = *ledger_;
  make_payment(l, "held", PaymentState::succeeded, MoneyState::authorized, 1000);
  make_payment(l, "open", PaymentState::unknown, MoneyState::unknown, 1000);
  make_payment(l, "declined", PaymentState::failed, MoneyState::failed, 1000);
  ASSERT_FALSE(HasFatalFailure());
  const PaymentRow held = *l.get("held"), open = *l.get("open");
  const size_t before = row_count(l);
  auto expect_refused = [&](const Ledger::OperationOutcome& o, const std::string& part) {
    EXPECT_NE(o.refused.find(part), std::string::npos) << "refused: '" << o.refused << "'";
    EXPECT_FALSE(o.created);
    EXPECT_FALSE(o.key_taken);
  };
  expect_refused(operate(l, "held", OperationKind::refund, "r1", 100), "nothing captured");
  expect_refused(operate(l, "held", OperationKind::capture, "c1", 1001), "more than is left");
  expect_refused(operate(l, "open", OperationKind::capture, "c1", -1), "not settled");
  expect_refused(operate(l, "declined", OperationKind::cancel, "x1", -1), "payment failed");
  expect_refused(operate(l, "nobody", OperationKind::refund, "r1", -1), "no payment");
  // Another client's scope.
  expect_refused(l.create_operation_and_claim(operation_proposal("held", OperationKind::capture, "c2", 10, "scope-b"),
                                              "w", kNow, kNow + kLease),
                 "scope");
  for (const char* id : {"held refund r1", "held capture c1", "open capture c1", "declined cancel x1",
                         "nobody refund r1", "held capture c2"})
    EXPECT_FALSE(l.get(id)) << id;
  EXPECT_EQ(row_count(l), before);
  expect_same_row(held, *l.get("held"));
  expect_same_row(open, *l.get("open"));
  // A refused ref is no row: it may be asked again once allowed.
  const auto c = operate(l, "held", OperationKind::capture, "c1", 1000);
  EXPECT_EQ(c.refused, "");
  EXPECT_TRUE(c.created);
}

TEST_P(LedgerOperations, ARefundOverTheCapturedAmountIsRefusedAndAnUnknownOneCountsAsSpent) {
  Ledger& l = *ledger_;
  make_payment(l, "p", PaymentState::succeeded, MoneyState::authorized, 1000);
  ASSERT_FALSE(HasFatalFailure());
  make_operation(l, "p", OperationKind::capture, "c1", 600, PaymentState::succeeded);
  make_operation(l, "p", OperationKind::capture, "c2", 400, PaymentState::failed);  // frees its 400
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_NE(operate(l, "p", OperationKind::refund, "r1", 601).refused, "");
  EXPECT_FALSE(l.get("p refund r1"));
  make_operation(l, "p", OperationKind::refund, "r1", 250, PaymentState::unknown, kNow + 200);
  ASSERT_FALSE(HasFatalFailure());
  const auto over = operate(l, "p", OperationKind::refund, "r2", 351);
  EXPECT_NE(over.refused.find("more than is left (350 of 600)"), std::string::npos) << over.refused;
  EXPECT_FALSE(l.get("p refund r2"));
  const auto rest = operate(l, "p", OperationKind::refund, "r2", -1);
  EXPECT_EQ(rest.refused, "");
  EXPECT_EQ(rest.row.amount, 350);
  EXPECT_NE(operate(l, "p", OperationKind::refund, "r3", 1).refused, "") << "nothing left";
  // The UNKNOWN refund failed after all (a provider's final word): its 250
  // is free again.
  ASSERT_TRUE(l.claim("p refund r1", "again", kNow + 300, kNow + 300 + kLease));
  ASSERT_TRUE(l.settle("p refund r1", "again", nullptr, settlement(PaymentState::failed), kNow + 301));
  const auto freed = operate(l, "p", OperationKind::refund, "r3", -1);
  EXPECT_EQ(freed.refused, "");
  EXPECT_EQ(freed.row.amount, 250);
  // What c2's failure freed may still be captured.
  EXPECT_EQ(operate(l, "p", OperationKind::capture, "c3", -1).row.amount, 400);
}

// operations_of reads a payment's family: its own operation rows only, not
// another payment's whose order id merely starts the same, nor the payment.
TEST_P(LedgerOperations, OperationsOfListsThePaymentsOwnOperationRowsOnly) {
  Ledger& l = *ledger_;
  make_payment(l, "p", PaymentState::succeeded, MoneyState::paid, 1000);
  make_payment(l, "p2", PaymentState::succeeded, MoneyState::paid, 1000);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(l.operations_of("p").empty());
  make_operation(l, "p", OperationKind::refund, "r2", 300, PaymentState::succeeded);
  make_operation(l, "p", OperationKind::refund, "r1", 200, PaymentState::unknown);
  make_operation(l, "p2", OperationKind::refund, "r1", 100, PaymentState::succeeded);
  ASSERT_FALSE(HasFatalFailure());
  const std::vector<PaymentRow> ops = l.operations_of("p");
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].order_id, "p refund r1");
  EXPECT_EQ(ops[0].amount, 200);
  EXPECT_EQ(ops[0].state, PaymentState::unknown);
  EXPECT_EQ(ops[1].order_id, "p refund r2");
  EXPECT_EQ(ops[1].state, PaymentState::succeeded);
  ASSERT_EQ(l.operations_of("p2").size(), 1u);
  EXPECT_TRUE(l.operations_of("p refund r1").empty()) << "an operation has no operations";
  EXPECT_TRUE(l.operations_of("nope").empty());
}

TEST_P(LedgerOperations, AnExistingOperationIsAnsweredAsItStandsWithoutTheGuard) {
  Ledger& l = *ledger_;
  make_payment(l, "p", PaymentState::succeeded, MoneyState::paid, 1000);
  ASSERT_FALSE(HasFatalFailure());
  const auto first = operate(l, "p", OperationKind::refund, "r1", -1, "worker-a", kNow + 100);
  ASSERT_TRUE(first.created);
  EXPECT_EQ(first.row.amount, 1000);
  // A new ref is refused now (nothing left), but the retry of r1 is not
  // guarded again: its row comes back as it stands, not claimed anew (its
  // lease is live), whatever the retry's proposal says.
  EXPECT_NE(operate(l, "p", OperationKind::refund, "r2", -1).refused, "");
  const auto retry = operate(l, "p", OperationKind::refund, "r1", 5, "worker-b", kNow + 200);
  EXPECT_EQ(retry.refused, "");
  EXPECT_FALSE(retry.created);
  EXPECT_FALSE(retry.key_taken);
  expect_same_row(first.row, retry.row);
  // Settled UNKNOWN, then retried after its lease: the row as it stands,
  // for the caller to claim as it claims a create's.
  ASSERT_TRUE(l.settle("p refund r1", "worker-a", nullptr, settlement(PaymentState::unknown), kNow + 300));
  const auto later = operate(l, "p", OperationKind::refund, "r1", -1, "worker-c", kNow + 400);
  EXPECT_EQ(later.refused, "");
  EXPECT_FALSE(later.created);
  EXPECT_EQ(later.row.state, PaymentState::unknown);
  EXPECT_EQ(later.row.amount, 1000);
  EXPECT_TRUE(l.claim("p refund r1", "worker-c", kNow + 401, kNow + 401 + kLease));
}

TEST_P(LedgerOperations, AnOperationWhoseKeyAnotherRowHoldsIsKeyTakenAndNothingIsWritten) {
  Ledger& l = *ledger_;
  make_payment(l, "p", PaymentState::succeeded, MoneyState::paid, 1000);
  ASSERT_FALSE(HasFatalFailure());
  PaymentRow clash = operation_proposal("p", OperationKind::refund, "r1", 100);
  clash.idempotency_key = "key-p";  // the payment's own
  const auto o = l.create_operation_and_claim(clash, "w", kNow + 100, kNow + 100 + kLease);
  EXPECT_EQ(o.refused, "");
  EXPECT_TRUE(o.key_taken);
  EXPECT_FALSE(o.created);
  EXPECT_FALSE(l.get("p refund r1"));
}

TEST_P(LedgerOperations, ACancelIsOneAndNeverBesideACapture) {
  Ledger& l = *ledger_;
  make_payment(l, "p", PaymentState::succeeded, MoneyState::authorized, 1000);
  ASSERT_FALSE(HasFatalFailure());
  const auto cancel = operate(l, "p", OperationKind::cancel, "x1", -1);
  EXPECT_EQ(cancel.refused, "");
  EXPECT_EQ(cancel.row.amount, 0);
  EXPECT_NE(operate(l, "p", OperationKind::cancel, "x2", -1).refused, "");
  EXPECT_NE(operate(l, "p", OperationKind::capture, "c1", -1).refused, "");
  ASSERT_TRUE(l.settle("p cancel x1", "worker", nullptr, settlement(PaymentState::failed), kNow + 200));
  EXPECT_EQ(operate(l, "p", OperationKind::capture, "c1", 10).refused, "");
  EXPECT_NE(operate(l, "p", OperationKind::cancel, "x2", -1).refused, "") << "a capture is under way";
}

// ---- prune ----------------------------------------------------------------------------

TEST_P(LedgerOperations, PruneKeepsAPaymentWithAnOpenOperationAndTakesAFamilyOnlyWhole) {
  Ledger& l = *ledger_;
  const int64_t cut = kNow + kDay;
  make_payment(l, "a", PaymentState::succeeded, MoneyState::paid, 1000);
  make_payment(l, "b", PaymentState::succeeded, MoneyState::paid, 1000);
  make_payment(l, "c", PaymentState::succeeded, MoneyState::paid, 1000);
  ASSERT_FALSE(HasFatalFailure());
  make_operation(l, "a", OperationKind::refund, "r1", 100, PaymentState::unknown);  // open, old
  make_operation(l, "b", OperationKind::refund, "r1", 100, PaymentState::succeeded);
  make_operation(l, "b", OperationKind::refund, "r2", 100, PaymentState::succeeded, cut + 10);  // after the cut
  make_operation(l, "c", OperationKind::refund, "r1", 100, PaymentState::succeeded);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(l.prune_settled(cut), 2) << "c and its refund";
  EXPECT_TRUE(l.get("a"));
  EXPECT_TRUE(l.get("a refund r1"));
  // b's old refund would drop out of the guard while b stays: the refund
  // made already could be made again.
  EXPECT_TRUE(l.get("b"));
  EXPECT_TRUE(l.get("b refund r1"));
  EXPECT_TRUE(l.get("b refund r2"));
  EXPECT_FALSE(l.get("c"));
  EXPECT_FALSE(l.get("c refund r1"));
  EXPECT_NE(operate(l, "b", OperationKind::refund, "r3", 801).refused, "");
  // Settled, and all older than a later cut: the families go whole.
  ASSERT_TRUE(l.claim("a refund r1", "again", kNow + 500, kNow + 500 + kLease));
  ASSERT_TRUE(l.settle("a refund r1", "again", nullptr, settlement(PaymentState::failed), kNow + 501));
  EXPECT_EQ(l.prune_settled(cut + kDay), 5);
  EXPECT_EQ(row_count(l), 0u);
}

TEST(MemoryLedgerOperations, TheCapOfSettledRowsNeverForgetsAnOperationBeforeItsPayment) {
  auto l = open_ledger("memory:?max_settled=1", "");
  make_payment(*l, "p", PaymentState::succeeded, MoneyState::paid, 1000);
  ASSERT_FALSE(HasFatalFailure());
  make_operation(*l, "p", OperationKind::refund, "r1", 600, PaymentState::succeeded);
  make_operation(*l, "p", OperationKind::refund, "r2", 100, PaymentState::unknown);
  ASSERT_FALSE(HasFatalFailure());
  // Another payment settles: the cap (1) is exceeded, but p has an open
  // refund, so it stays, and so does each of its refunds.
  make_payment(*l, "q", PaymentState::succeeded, MoneyState::paid, 5, kNow + 1000);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(l->get("p"));
  EXPECT_TRUE(l->get("p refund r1"));
  EXPECT_NE(operate(*l, "p", OperationKind::refund, "r3", 301).refused, "") << "600 + 100 of 1000 taken";
  // Once its refunds are final, the next settle forgets p with them.
  ASSERT_TRUE(l->claim("p refund r2", "again", kNow + 2000, kNow + 2000 + kLease));
  ASSERT_TRUE(l->settle("p refund r2", "again", nullptr, settlement(PaymentState::succeeded), kNow + 2001));
  make_payment(*l, "s", PaymentState::succeeded, MoneyState::paid, 5, kNow + 3000);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_FALSE(l->get("p"));
  EXPECT_FALSE(l->get("p refund r1"));
  EXPECT_FALSE(l->get("p refund r2"));
}

// PostgreSQL runs under READ COMMITTED: a prune whose DELETE took its
// snapshot before an operation on one of its payments committed would not
// see the operation's row, wait for the payment's row lock, and then delete
// the payment anyway, leaving the open operation without it. Staged here
// by hand: a transaction holds the payment FOR UPDATE and inserts an open
// refund of it, as create_operation_and_claim does, while the prune runs.
TEST(PostgresOperations, APruneRacingAnOperationOnItsPaymentKeepsThePayment) {
  LEDGER_REQUIRE_PG();
  ScratchStore store(Kind::postgres);
  auto l = open_ledger(store.url(), "");
  make_payment(*l, "p", PaymentState::succeeded, MoneyState::paid, 1000);
  ASSERT_FALSE(HasFatalFailure());
  PgSession op(store.url()), watch(store.url());
  op.exec("BEGIN");
  op.exec("SELECT order_id FROM payments WHERE order_id = 'p' FOR UPDATE");
  op.exec("INSERT INTO payments (order_id, idempotency_key, fingerprint, state, created_at, key_expires_at, "
          "updated_at, lease_owner, lease_until, scope, operation, parent_order_id, operation_ref, amount) VALUES "
          "('p refund r1', 'key-p-refund-r1', 'fp', 'IN_FLIGHT', " + std::to_string(kNow + 100) + ", " +
          std::to_string(kNow + kDay) + ", " + std::to_string(kNow + 100) + ", 'worker', " +
          std::to_string(kNow + 100 + kLease) + ", 'scope-a', 'refund', 'p', 'r1', 100)");
  int64_t pruned = -1;
  std::string error;
  std::thread prune([&] {
    try {
      pruned = l->prune_settled(kNow + kDay);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  // The prune waits for the payment's row lock (whichever of its
  // statements meets it first), then the operation commits.
  bool waiting = false;
  for (int i = 0; i < 500 && !waiting; ++i) {
    waiting = watch.exec("SELECT count(*) FROM pg_locks WHERE NOT granted") != "0";
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  op.exec("COMMIT");
  prune.join();
  ASSERT_TRUE(waiting) << "the prune never waited for the payment's lock";
  EXPECT_EQ(error, "");
  EXPECT_EQ(pruned, 0);
  EXPECT_TRUE(l->get("p")) << "the payment of an open refund was pruned";
  EXPECT_TRUE(l->get("p refund r1"));
}

// ---- the race ------------------------------------------------------------------------

TEST_P(OperationsConcurrent, RefundsOfOnePaymentRacingFromEightThreadsCreateOnlyWhatFits) { refund_race(8, 0, 2, 5); }

TEST_P(DurableOperations, RefundsOfOnePaymentRacingFromThreeProcessesAndEightThreadsCreateOnlyWhatFits) {
  refund_race(8, 3, 2, 5);
}

INSTANTIATE_TEST_SUITE_P(Backends, LedgerOperations, ::testing::Values(Kind::memory, Kind::sqlite, Kind::postgres),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Backends, OperationsConcurrent, ::testing::Values(Kind::memory, Kind::sqlite, Kind::postgres),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Backends, DurableOperations, ::testing::Values(Kind::sqlite, Kind::postgres), param_name);

}  // namespace

namespace ledger_test {

std::vector<std::string> refund_race_pass(Ledger& l, const std::string& parent, const std::string& name, int count,
                                          int64_t amount, int64_t now, int* refused) {
  std::vector<std::string> won;
  for (int k = 0; k < count; ++k) {
    const std::string ref = name + "-" + std::to_string(k);
    PaymentRow p = operation_proposal(parent, OperationKind::refund, ref, amount);
    const Ledger::OperationOutcome o = l.create_operation_and_claim(p, name, now, now + kLease);
    if (o.created) won.push_back(ref);
    else if (!o.refused.empty()) ++*refused;
    else throw std::runtime_error("refund " + ref + ": neither created nor refused");
  }
  return won;
}

}  // namespace ledger_test
