// What a provider's notification may settle, as pure rules (webhook_rules.hpp):
// the receiver's and the kept events' decisions, read by the SPIN model too.
#include <gtest/gtest.h>

#include "ledger.hpp"
#include "profile.hpp"
#include "webhook_rules.hpp"

namespace payretry {
namespace {

PaymentRow row_with(const std::string& provider_id, int64_t created_at = 1000) {
  PaymentRow r;
  r.order_id = "o-1";
  r.idempotency_key = "key-o-1";
  r.provider_payment_id = provider_id;
  r.created_at = created_at;
  r.state = PaymentState::unknown;
  return r;
}

// A failure read by the order alone may be another payment's of that order
// (an older one, redelivered for days): told FAILED, the merchant charges
// again while this payment may have been charged. Only the payment's own id
// settles FAILED.
TEST(WebhookRules, AFailureSettlesOnlyARowThatKnowsTheIdTheEventNames) {
  const PaymentRow known = row_with("pi_1"), unknown_id = row_with("");
  EXPECT_STREQ(event_finding_on(kEventFailed, &known, "pi_1", ""), kEventFailed);
  EXPECT_STREQ(event_finding_on(kEventFailed, &known, "pi_OLD", ""), kEventNoted);
  EXPECT_STREQ(event_finding_on(kEventFailed, &unknown_id, "pi_1", ""), kEventNoted);
  EXPECT_STREQ(event_finding_on(kEventFailed, nullptr, "pi_1", ""), kEventNoted);
  EXPECT_STREQ(event_finding_on(kEventFailed, &known, "", ""), kEventNoted);
  // A success and a note land as they are.
  EXPECT_STREQ(event_finding_on(kEventSucceeded, &unknown_id, "", ""), kEventSucceeded);
  EXPECT_STREQ(event_finding_on(kEventNoted, nullptr, "", ""), kEventNoted);
}

// A success whose words say no money moved (another payment's requires_action
// or void, by the order's name alone) must not settle a row that does not
// know its id: it would take the row's id and its cancel would read failed
// on an order whose own payment was charged (tests/outside/money_attack).
TEST(WebhookRules, ASuccessThatMovedNoMoneySettlesOnlyARowThatKnowsItsId) {
  const PaymentRow known = row_with("pi_1"), unknown_id = row_with("");
  for (MoneyState m : {MoneyState::awaiting_customer, MoneyState::pending, MoneyState::failed}) {
    EXPECT_STREQ(event_finding_by_money(kEventSucceeded, m, &unknown_id, "pi_2"), kEventNoted);
    EXPECT_STREQ(event_finding_by_money(kEventSucceeded, m, &known, "pi_2"), kEventNoted);
    EXPECT_STREQ(event_finding_by_money(kEventSucceeded, m, nullptr, "pi_2"), kEventNoted);
    EXPECT_STREQ(event_finding_by_money(kEventSucceeded, m, &known, "pi_1"), kEventSucceeded);
  }
  // Money that moved, or words the profile does not map, land as before.
  for (MoneyState m : {MoneyState::authorized, MoneyState::paid, MoneyState::unknown})
    EXPECT_STREQ(event_finding_by_money(kEventSucceeded, m, &unknown_id, "pi_2"), kEventSucceeded);
  EXPECT_STREQ(event_finding_by_money(kEventFailed, MoneyState::failed, &unknown_id, "pi_2"), kEventFailed);
}

// Only the row's own requests carried its idempotency key: a failure caused
// by a request with that key is the row's own payment's, even when the
// create's answer (and the id) was lost. Another key, or none (a failure
// the provider decided later, with no request behind it), proves nothing.
TEST(WebhookRules, AFailureCarryingTheRowsOwnKeySettlesARowThatKnowsNoId) {
  const PaymentRow unknown_id = row_with("");
  EXPECT_STREQ(event_finding_on(kEventFailed, &unknown_id, "pi_1", "key-o-1"), kEventFailed);
  EXPECT_STREQ(event_finding_on(kEventFailed, &unknown_id, "pi_1", "key-other"), kEventNoted);
  EXPECT_STREQ(event_finding_on(kEventFailed, &unknown_id, "pi_1", ""), kEventNoted);
  EXPECT_STREQ(event_finding_on(kEventFailed, nullptr, "pi_1", "key-o-1"), kEventNoted);
  PaymentRow no_key = row_with("");
  no_key.idempotency_key.clear();
  EXPECT_STREQ(event_finding_on(kEventFailed, &no_key, "pi_1", ""), kEventNoted) << "two empty keys prove nothing";
}

// A caller's own key (an order id) used again once the provider forgot it
// names an older payment too: its redelivered "failed" carries the row's
// key. The key proves only for a payment made inside the key's window
// before the row (less an hour for the clocks), or for a key kept forever.
TEST(WebhookRules, AKeyProvesOnlyForAPaymentMadeInsideItsWindowBeforeTheRow) {
  PaymentRow r = row_with("");
  const int64_t day = 24LL * 3600 * 1000, hour = 3600LL * 1000;
  r.created_at = 10 * day;
  const std::optional<int64_t> window = day;
  EXPECT_EQ(key_as_proof(r, "key-o-1", r.created_at / 1000 + 5, window), "key-o-1") << "made after the row";
  EXPECT_EQ(key_as_proof(r, "key-o-1", (r.created_at - day + hour) / 1000, window), "key-o-1");
  EXPECT_EQ(key_as_proof(r, "key-o-1", (r.created_at - day + hour) / 1000 - 1, window), "");
  EXPECT_EQ(key_as_proof(r, "key-o-1", (r.created_at - 2 * day) / 1000, window), "") << "an older payment's";
  EXPECT_EQ(key_as_proof(r, "key-o-1", 0, window), "") << "no creation time: no proof";
  EXPECT_EQ(key_as_proof(r, "key-o-1", 0, std::nullopt), "key-o-1") << "a reference is kept forever";
  EXPECT_EQ(key_as_proof(r, "", r.created_at / 1000, window), "");
}

// The key is committed before the first byte leaves: an event stamped no
// later than the row's own making is about a payment made elsewhere.
TEST(WebhookRules, AKeptEventLandsOnlyIfItCameStrictlyAfterItsRowWasMade) {
  const PaymentRow r = row_with("", 1000);
  LedgerEvent e;
  e.received_at = 999;
  EXPECT_FALSE(kept_event_applies(r, e));
  e.received_at = 1000;
  EXPECT_FALSE(kept_event_applies(r, e)) << "the same millisecond may have come first";
  e.received_at = 1001;
  EXPECT_TRUE(kept_event_applies(r, e));
}

// No row for the order an event names: another payment's, kept by its id
// alone (never by the order's name, which would find the row made later),
// or ignored when it names no id.
TEST(WebhookRules, AnEventNamingAnOrderWithNoRowIsKeptByItsIdAloneOrIgnored) {
  EXPECT_EQ(event_without_row("pi_1"), EventWithoutRow::kept_by_id);
  EXPECT_EQ(event_without_row(""), EventWithoutRow::ignored);
}

// Stripe Connect: one store, many accounts. Another account's payment under
// the same order id never lands on the row; a profile without accounts
// compares nothing.
TEST(WebhookRules, AnEventOfAnotherAccountNeverLandsWhereTheProfileHasAccounts) {
  const Profile stripe = *builtin_profile("stripe");
  ASSERT_FALSE(stripe.webhook.account_header.empty());
  EXPECT_TRUE(event_in_payment_account(stripe, "acct_a", "acct_a"));
  EXPECT_TRUE(event_in_payment_account(stripe, "", ""));
  EXPECT_FALSE(event_in_payment_account(stripe, "acct_a", "acct_b"));
  EXPECT_FALSE(event_in_payment_account(stripe, "", "acct_b")) << "the platform's payment, another account's event";
  EXPECT_FALSE(event_in_payment_account(stripe, "acct_a", "")) << "a connected account's payment, the platform's event";
  const Profile square = *builtin_profile("square");
  ASSERT_TRUE(square.webhook.account_header.empty());
  EXPECT_TRUE(event_in_payment_account(square, "", "anything"));
}

// A success and a failure of one payment arriving together: both read the
// row UNKNOWN, one settles it, and the other must be reported as the
// conflict it is (found by tests/outside/group_commit_attack, 4a), not as
// "recorded".
TEST(WebhookRules, AnEventThatDisagreesWithTheRowAfterItsCommitIsAConflict) {
  const std::string mine = "settled by webhook: succeeded";
  PaymentRow open = row_with(""), paid = row_with(""), declined = row_with("");
  paid.state = PaymentState::succeeded;
  paid.detail = mine;
  declined.state = PaymentState::failed;
  declined.detail = "settled by webhook: requires_payment_method";
  EXPECT_STREQ(recorded_event_effect(&open, &paid, "succeeded", mine), "settled");
  EXPECT_STREQ(recorded_event_effect(&open, &declined, "succeeded", mine), "conflict") << "settled by the other";
  EXPECT_STREQ(recorded_event_effect(&open, &paid, "failed", "settled by webhook: x"), "conflict");
  EXPECT_STREQ(recorded_event_effect(&paid, &paid, "failed", "settled by webhook: x"), "conflict") << "final when read";
  EXPECT_STREQ(recorded_event_effect(&paid, &paid, "succeeded", mine), "recorded") << "agrees: already settled";
  EXPECT_STREQ(recorded_event_effect(&open, &paid, "noted", "settled by webhook: x"), "recorded");
  EXPECT_STREQ(recorded_event_effect(&open, &open, "failed", "settled by webhook: x"), "recorded") << "held back";
  EXPECT_STREQ(recorded_event_effect(nullptr, nullptr, "failed", "settled by webhook: x"), "recorded");
  PaymentRow by_run = paid;
  by_run.detail = "the provider's 2xx";
  EXPECT_STREQ(recorded_event_effect(&open, &by_run, "succeeded", mine), "recorded") << "its own run settled it";
}

TEST(WebhookRules, WhatAnEventSaysIsItsTypeFirstThenItsStatusThroughTheLookupsMap) {
  const Profile stripe = *builtin_profile("stripe");
  EXPECT_STREQ(event_finding(stripe, "payment_intent.payment_failed", "requires_payment_method"), kEventFailed);
  EXPECT_STREQ(event_finding(stripe, "payment_intent.succeeded", "succeeded"), kEventSucceeded);
  EXPECT_STREQ(event_finding(stripe, "payment_intent.processing", "processing"), kEventNoted);
  EXPECT_STREQ(event_finding(stripe, "payment_intent.created", "requires_payment_method"), kEventNoted);
  EXPECT_STREQ(event_finding(stripe, "", "succeeded"), kEventSucceeded);
}

}  // namespace
}  // namespace payretry
