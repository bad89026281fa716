// The operation guard (src/model/operation_rules.hpp): which capture,
// refund or cancel of a payment may be made, and for what amount, from the
// payment's row and its existing operation rows alone.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "operation_rules.hpp"

namespace payretry {
namespace {

using K = OperationKind;
using R = OperationRun;

OperationParent payment(MoneyState money, int64_t amount, R run = R::succeeded) {
  OperationParent p;
  p.scope = "scope-a";
  p.run = run;
  p.money = money;
  p.amount = amount;
  return p;
}

OperationSibling op(K kind, R run, int64_t amount) {
  OperationSibling s;
  s.kind = kind;
  s.run = run;
  s.amount = amount;
  return s;
}

// The guard's answer: "" allowed (then `decided` holds the amount it set).
struct Verdict {
  std::string why;
  int64_t decided;
};
Verdict guard(const std::optional<OperationParent>& parent, const std::vector<OperationSibling>& siblings, K kind,
              int64_t amount, const std::string& scope = "scope-a") {
  int64_t a = amount;
  std::string why = operation_refused(parent, siblings, kind, scope, a);
  if (!why.empty()) EXPECT_EQ(a, amount) << "a refusal leaves the amount as asked";
  return {why, a};
}

void expect_allowed(const Verdict& v, int64_t amount) {
  EXPECT_EQ(v.why, "");
  EXPECT_EQ(v.decided, amount);
}

void expect_refused(const Verdict& v, const std::string& part) {
  EXPECT_NE(v.why, "") << "allowed, decided amount " << v.decided;
  EXPECT_NE(v.why.find(part), std::string::npos) << v.why;
}

TEST(OperationRules, KindsHaveOneStoredNameEachAndACreateIsTheEmptyName) {
  for (K k : {K::create, K::capture, K::refund, K::cancel})
    EXPECT_EQ(parse_operation_kind(operation_kind_name(k)), std::optional<K>(k)) << operation_kind_name(k);
  EXPECT_STREQ(operation_kind_name(K::create), "");
  EXPECT_EQ(parse_operation_kind("Refund"), std::nullopt);
  EXPECT_EQ(parse_operation_kind("create"), std::nullopt) << "a create is stored as ''";
  EXPECT_EQ(parse_operation_kind("void"), std::nullopt);
}

TEST(OperationRules, ARowIdIsParentKindRefWithSpacesAndNoOrderIdCanEqualIt) {
  EXPECT_EQ(operation_row_id("42", K::refund, "r1"), "42 refund r1");
  EXPECT_EQ(operation_row_id("ord_9", K::capture, "c"), "ord_9 capture c");
  EXPECT_EQ(check_operation_ids("42", K::refund, "r1"), "");
  // A space in either would let two (parent, kind, ref) compose one id:
  // "4 2" refund "r" and "4" with ref "2 refund r"...
  expect_refused({check_operation_ids("4 2", K::refund, "r1"), 0}, "space");
  expect_refused({check_operation_ids("42", K::refund, "r 1"), 0}, "ref");
  expect_refused({check_operation_ids("", K::refund, "r1"), 0}, "empty");
  expect_refused({check_operation_ids("42", K::refund, ""), 0}, "empty");
  expect_refused({check_operation_ids("42", K::create, "r1"), 0}, "create");
}

TEST(OperationRules, ThePaymentMustExistBeACreateOfTheSameScopeAndHaveSucceeded) {
  expect_refused(guard(std::nullopt, {}, K::refund, 100), "no payment");
  OperationParent not_create = payment(MoneyState::paid, 1000);
  not_create.kind = K::capture;
  expect_refused(guard(not_create, {}, K::refund, 100), "operation, not a payment");
  expect_refused(guard(payment(MoneyState::paid, 1000), {}, K::refund, 100, "scope-b"), "scope");
  expect_refused(guard(payment(MoneyState::paid, 1000, R::open), {}, K::refund, 100), "not settled");
  expect_refused(guard(payment(MoneyState::authorized, 1000, R::open), {}, K::capture, -1), "not settled");
  expect_refused(guard(payment(MoneyState::awaiting_customer, 1000, R::open), {}, K::cancel, -1), "not settled");
  expect_refused(guard(payment(MoneyState::failed, 1000, R::failed), {}, K::cancel, -1), "failed");
  expect_refused(guard(payment(MoneyState::paid, 1000), {}, K::create, 100), "create");
  expect_allowed(guard(payment(MoneyState::paid, 1000), {}, K::refund, 100), 100);
}

TEST(OperationRules, AnAmountIsPositiveOrMinusOneForTheRest) {
  expect_refused(guard(payment(MoneyState::paid, 1000), {}, K::refund, 0), "positive");
  expect_refused(guard(payment(MoneyState::paid, 1000), {}, K::refund, -2), "positive");
  expect_refused(guard(payment(MoneyState::authorized, 1000), {}, K::capture, 0), "positive");
  expect_allowed(guard(payment(MoneyState::paid, 1000), {}, K::refund, -1), 1000);
}

// ---- capture -------------------------------------------------------------------

TEST(OperationRules, ACaptureNeedsAnAuthorizedPayment) {
  for (MoneyState m : {MoneyState::unknown, MoneyState::awaiting_customer, MoneyState::pending, MoneyState::paid,
                       MoneyState::partly_refunded, MoneyState::refunded, MoneyState::failed})
    expect_refused(guard(payment(m, 1000), {}, K::capture, -1), "not authorized");
  expect_allowed(guard(payment(MoneyState::authorized, 1000), {}, K::capture, -1), 1000);
}

TEST(OperationRules, CapturesTakeFromWhatWasAuthorizedAndOpenOnesCountAsTaken) {
  const OperationParent p = payment(MoneyState::authorized, 1000);
  expect_allowed(guard(p, {}, K::capture, 400), 400);
  expect_allowed(guard(p, {op(K::capture, R::succeeded, 400)}, K::capture, 600), 600);
  expect_refused(guard(p, {op(K::capture, R::succeeded, 400)}, K::capture, 601), "more than is left (600 of 1000)");
  expect_allowed(guard(p, {op(K::capture, R::succeeded, 400)}, K::capture, -1), 600);
  // UNKNOWN, PENDING, IN_FLIGHT: may have captured, or may yet.
  expect_refused(guard(p, {op(K::capture, R::open, 700)}, K::capture, 301), "more than is left (300 of 1000)");
  expect_allowed(guard(p, {op(K::capture, R::open, 700)}, K::capture, -1), 300);
  // Only a provider's final failure frees its amount.
  expect_allowed(guard(p, {op(K::capture, R::failed, 1000)}, K::capture, -1), 1000);
  expect_refused(guard(p, {op(K::capture, R::succeeded, 400), op(K::capture, R::open, 600)}, K::capture, -1),
                 "nothing is left");
  // Refunds of the payment are not captures.
  expect_allowed(guard(p, {op(K::refund, R::open, 1000)}, K::capture, -1), 1000);
}

TEST(OperationRules, NoCaptureBesideACancelMadeOrUnderWay) {
  const OperationParent p = payment(MoneyState::authorized, 1000);
  expect_refused(guard(p, {op(K::cancel, R::open, 0)}, K::capture, -1), "cancel");
  expect_refused(guard(p, {op(K::cancel, R::succeeded, 0)}, K::capture, 10), "cancel");
  expect_allowed(guard(p, {op(K::cancel, R::failed, 0)}, K::capture, -1), 1000);
}

TEST(OperationRules, WithTheAmountNotKnownOnlyOneWholeCapture) {
  const OperationParent p = payment(MoneyState::authorized, -1);
  expect_allowed(guard(p, {}, K::capture, -1), -1);
  expect_refused(guard(p, {}, K::capture, 500), "not known");
  expect_refused(guard(p, {op(K::capture, R::open, -1)}, K::capture, -1), "under way");
  expect_refused(guard(p, {op(K::capture, R::succeeded, -1)}, K::capture, -1), "made");
  expect_allowed(guard(p, {op(K::capture, R::failed, -1)}, K::capture, -1), -1);
}

// ---- refund --------------------------------------------------------------------

TEST(OperationRules, ARefundNeedsCapturedMoney) {
  for (MoneyState m : {MoneyState::unknown, MoneyState::awaiting_customer, MoneyState::pending, MoneyState::refunded,
                       MoneyState::failed})
    expect_refused(guard(payment(m, 1000), {}, K::refund, -1), "nothing captured to refund");
  expect_refused(guard(payment(MoneyState::authorized, 1000), {}, K::refund, -1), "no capture");
  expect_refused(guard(payment(MoneyState::authorized, 1000), {op(K::capture, R::open, 1000)}, K::refund, -1),
                 "no capture of the payment has succeeded");
  expect_refused(guard(payment(MoneyState::authorized, 1000), {op(K::capture, R::failed, 1000)}, K::refund, -1),
                 "no capture of the payment has succeeded");
  // Captured at the create.
  expect_allowed(guard(payment(MoneyState::paid, 1000), {}, K::refund, -1), 1000);
  expect_allowed(guard(payment(MoneyState::partly_refunded, 1000), {}, K::refund, 250), 250);
}

TEST(OperationRules, WhatWasCapturedIsTheSucceededCapturesWhenThereAreAny) {
  const OperationParent held = payment(MoneyState::authorized, 1000);
  const std::vector<OperationSibling> captures = {op(K::capture, R::succeeded, 300), op(K::capture, R::open, 200),
                                                  op(K::capture, R::failed, 500)};
  expect_allowed(guard(held, captures, K::refund, -1), 300);
  expect_refused(guard(held, captures, K::refund, 301), "more than is left (300 of 300)");
  // A paid payment with captures of its own: its captures, not its amount.
  expect_allowed(guard(payment(MoneyState::paid, 1000), captures, K::refund, -1), 300);
}

// Wholly refunded only when the refunds that succeeded give back all that
// was captured for sure: an UNKNOWN refund may not have moved its money,
// and with either sum not known, never.
TEST(OperationRules, WhollyRefundedWhenTheSucceededRefundsGiveBackAllThatWasCaptured) {
  const OperationParent paid = payment(MoneyState::partly_refunded, 1000);
  EXPECT_FALSE(wholly_refunded(paid, {}));
  EXPECT_FALSE(wholly_refunded(paid, {op(K::refund, R::succeeded, 600)}));
  EXPECT_FALSE(wholly_refunded(paid, {op(K::refund, R::succeeded, 600), op(K::refund, R::open, 400)}));
  EXPECT_FALSE(wholly_refunded(paid, {op(K::refund, R::succeeded, 600), op(K::refund, R::failed, 400)}));
  EXPECT_TRUE(wholly_refunded(paid, {op(K::refund, R::succeeded, 600), op(K::refund, R::succeeded, 400)}));
  EXPECT_FALSE(wholly_refunded(paid, {op(K::refund, R::succeeded, 600), op(K::refund, R::succeeded, -1)}))
      << "a refund whose amount is not known";
  EXPECT_FALSE(wholly_refunded(payment(MoneyState::paid, -1), {op(K::refund, R::succeeded, 1000)}))
      << "what was captured is not known";
  // Captured in part by its own capture: that part, not the amount asked.
  const OperationParent held = payment(MoneyState::paid, 1000);
  EXPECT_TRUE(wholly_refunded(held, {op(K::capture, R::succeeded, 300), op(K::refund, R::succeeded, 300)}));
  EXPECT_FALSE(wholly_refunded(held, {op(K::capture, R::open, 300), op(K::refund, R::succeeded, 300)}));
  EXPECT_FALSE(wholly_refunded(payment(MoneyState::authorized, 1000), {op(K::refund, R::succeeded, 1000)}));
}

TEST(OperationRules, RefundsTakeFromWhatWasCapturedAndUnknownOnesCountAsTaken) {
  const OperationParent p = payment(MoneyState::paid, 1000);
  expect_allowed(guard(p, {op(K::refund, R::succeeded, 300)}, K::refund, 700), 700);
  expect_refused(guard(p, {op(K::refund, R::succeeded, 300)}, K::refund, 701), "more than is left (700 of 1000)");
  expect_allowed(guard(p, {op(K::refund, R::succeeded, 300)}, K::refund, -1), 700);
  // An UNKNOWN refund may have moved its money: it is spent until the
  // provider says it failed.
  expect_refused(guard(p, {op(K::refund, R::open, 600)}, K::refund, 401), "more than is left (400 of 1000)");
  expect_allowed(guard(p, {op(K::refund, R::failed, 600)}, K::refund, 1000), 1000);
  expect_refused(guard(p, {op(K::refund, R::succeeded, 600), op(K::refund, R::open, 400)}, K::refund, -1),
                 "nothing is left to refund");
  // A retried ref is answered by the ledger before the guard; a new one
  // beside an open refund of everything is refused.
  expect_refused(guard(p, {op(K::refund, R::open, 1000)}, K::refund, 1), "nothing is left");
}

TEST(OperationRules, WithTheCapturedAmountNotKnownOnlyOneWholeRefund) {
  const OperationParent p = payment(MoneyState::paid, -1);
  expect_allowed(guard(p, {}, K::refund, -1), -1);
  expect_refused(guard(p, {}, K::refund, 100), "not known");
  expect_refused(guard(p, {op(K::refund, R::open, -1)}, K::refund, -1), "under way");
  expect_refused(guard(p, {op(K::refund, R::succeeded, -1)}, K::refund, -1), "made");
  expect_allowed(guard(p, {op(K::refund, R::failed, -1)}, K::refund, -1), -1);
  // Captured by a whole capture of a payment whose amount was not known.
  const OperationParent held = payment(MoneyState::authorized, -1);
  expect_allowed(guard(held, {op(K::capture, R::succeeded, -1)}, K::refund, -1), -1);
  expect_refused(guard(held, {op(K::capture, R::succeeded, -1)}, K::refund, 10), "not known");
}

// ---- cancel --------------------------------------------------------------------

TEST(OperationRules, ACancelMovesNothingAndOnlyBeforeMoneyWasTaken) {
  for (MoneyState m : {MoneyState::awaiting_customer, MoneyState::pending, MoneyState::authorized}) {
    expect_allowed(guard(payment(m, 1000), {}, K::cancel, -1), 0);
    expect_allowed(guard(payment(m, -1), {}, K::cancel, 0), 0);
  }
  for (MoneyState m : {MoneyState::unknown, MoneyState::paid, MoneyState::partly_refunded, MoneyState::refunded,
                       MoneyState::failed})
    expect_refused(guard(payment(m, 1000), {}, K::cancel, -1), "cannot be canceled");
  expect_refused(guard(payment(MoneyState::authorized, 1000), {}, K::cancel, 5), "moves no amount");
}

TEST(OperationRules, OneCancelAndNoneBesideACapture) {
  const OperationParent p = payment(MoneyState::authorized, 1000);
  expect_refused(guard(p, {op(K::capture, R::open, 100)}, K::cancel, -1), "capture");
  expect_refused(guard(p, {op(K::capture, R::succeeded, 100)}, K::cancel, -1), "capture");
  expect_allowed(guard(p, {op(K::capture, R::failed, 100)}, K::cancel, -1), 0);
  expect_refused(guard(p, {op(K::cancel, R::open, 0)}, K::cancel, -1), "already");
  expect_refused(guard(p, {op(K::cancel, R::succeeded, 0)}, K::cancel, -1), "already");
  expect_allowed(guard(p, {op(K::cancel, R::failed, 0)}, K::cancel, -1), 0);
}

}  // namespace
}  // namespace payretry
