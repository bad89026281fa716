// Lookups (query, reconcile) take the payments' retry decision: classify()
// says whether an answer is final, decide_retry() how long to wait, and the
// client's retry budget and attempt log see every lookup attempt.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "fakes.hpp"
#include "history.hpp"
#include "ledger_memory.hpp"
#include "lookup_rules.hpp"
#include "operation_flow.hpp"
#include "payment_flow.hpp"
#include "settle.hpp"

namespace payretry::test {
namespace {

const std::string kBody = R"({"amount":1000,"currency":"EUR","reference":"order-1","source":{"type":"token","token":"tok_x"}})";
TransportResult found_captured() {
  return http(200, R"({"data":[{"id":"pay_abc","status":"Captured","reference":"order-1"}]})");
}

// The Harness's engine, plus a memory ledger, the payment flow and the
// settler, as the client wires them.
class LookupHarness : public Harness {
 public:
  LookupHarness() : Harness("checkout_com") {}

  Settler& settler() {
    if (!settler_) {
      Engine& e = engine();
      ledger_ = open_memory_ledger("");
      log_ = std::make_unique<AttemptLog>(
          [this](int level, const std::string& line) { lines.push_back({level, line}); }, std::string(), kLogDebug,
          config.secrets(), clock);
      flow_ = std::make_unique<PaymentFlow>(e, *ledger_, config, clock, sleeper, keys, stats, *log_, "test-owner", "test-scope");
      settler_ = std::make_unique<Settler>(*ledger_, transport, profile, config, clock, sleeper, jitter, budget(),
                                           *log_, stats, *flow_, hook);
    }
    return *settler_;
  }
  // A payment left UNKNOWN: its one attempt timed out after the write.
  void leave_unknown() {
    settler();
    transport.script = {timeout_after_write()};
    SubmitRequest r;
    r.order_id = "order-1";
    r.body = kBody;
    ASSERT_EQ(flow_->submit(r).outcome, Outcome::unknown);
    transport.sent.clear();
    sleeper.sleeps.clear();
  }

 private:
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<AttemptLog> log_;
  std::unique_ptr<PaymentFlow> flow_;
  std::unique_ptr<Settler> settler_;
};

TEST(Lookup, A503IsAskedAgainAfterItsRetryAfterAndBothAttemptsAreLogged) {
  LookupHarness h;
  h.leave_unknown();
  h.transport.script = {http(503, "{}", {{"Retry-After", "2"}}), found_captured()};
  const PaymentResult r = h.settler().query("order-1");
  EXPECT_EQ(r.outcome, Outcome::succeeded) << r.error;
  EXPECT_EQ(h.transport.sent.size(), 2u);
  ASSERT_EQ(h.sleeper.sleeps.size(), 1u);
  EXPECT_EQ(h.sleeper.sleeps[0], 2000) << "Retry-After is the floor of the wait";
  const auto lookups = h.events("lookup");
  ASSERT_EQ(lookups.size(), 2u) << "every lookup attempt is logged";
  JsonDoc first(lookups[0]), second(lookups[1]);
  EXPECT_EQ(first.str("delay_source"), "retry_after");
  EXPECT_EQ(first.str("order_id"), "order-1");
  EXPECT_EQ(second.str("verdict"), "found");
  EXPECT_EQ(second.str("reason"), "Captured");
}

TEST(Lookup, RetriesDrawFromTheClientsRetryBudget) {
  LookupHarness h;
  h.config.budget.tokens = 5;  // one retry's worth
  h.config.budget.retry_cost = 5;
  h.leave_unknown();
  h.transport.script = {http(503), http(503), found_captured()};
  const PaymentResult r = h.settler().query("order-1");
  EXPECT_EQ(r.outcome, Outcome::unknown) << "the budget ran dry before the provider answered";
  EXPECT_EQ(h.transport.sent.size(), 2u) << "one lookup, one retry paid for";
  EXPECT_EQ(h.transport.script.size(), 1u);
  EXPECT_NE(h.stats.to_json(h.budget().tokens()).find("\"budget_exhausted\":1"), std::string::npos);
  EXPECT_NE(r.error.find("retry_budget_exhausted"), std::string::npos) << r.error;
}

TEST(Lookup, AnAnswerTheProfileCallsFinalIsNotAskedAgain) {
  LookupHarness h;
  h.leave_unknown();
  h.transport.script = {http(401, R"({"error_type":"unauthorized"})"), found_captured()};
  const PaymentResult r = h.settler().query("order-1");
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(h.transport.sent.size(), 1u);
  EXPECT_TRUE(h.sleeper.sleeps.empty());
}

TEST(Lookup, AFoundAnswerRefillsTheBudgetAsAPaymentsSuccessDoes) {
  LookupHarness h;
  h.config.budget.tokens = 10;
  h.config.budget.retry_cost = 5;
  h.config.budget.success_refund = 1;
  h.leave_unknown();
  h.transport.script = {http(503), found_captured()};
  EXPECT_EQ(h.settler().query("order-1").outcome, Outcome::succeeded);
  EXPECT_EQ(h.budget().tokens(), 10) << "5 spent on the retry, the retry's 5 back from the answer";
}

// A found answer must describe this payment (Checkout.com: the payment it
// reads carries the order id as its reference): one about another order,
// from a proxy or a cache, settles nothing.
TEST(Lookup, AFoundAnswerAboutAnotherOrderSettlesNothing) {
  LookupHarness h;
  h.leave_unknown();
  h.transport.script = {http(200, R"({"data":[{"id":"pay_zzz","status":"Declined","reference":"order-0"}]})")};
  const PaymentResult r = h.settler().query("order-1");
  EXPECT_EQ(r.outcome, Outcome::unknown) << r.error;
  EXPECT_NE(r.error.find("another request"), std::string::npos) << r.error;
  EXPECT_TRUE(r.provider_payment_id.empty()) << "the other payment's id is not this order's";
}

// Checkout.com's search lists every payment under the reference, newest
// first: a declined payment made later under the same order must not make
// this one FAILED (the outside money attack's case), nor a captured one
// settle it. Only a list of exactly one settles.
TEST(Lookup, ASearchListingSeveralPaymentsUnderTheReferenceSettlesNothing) {
  for (const char* first : {"Declined", "Captured"}) {
    LookupHarness h;
    h.leave_unknown();
    h.transport.script = {http(200, std::string(R"({"total_count":2,"data":[{"id":"pay_new","status":")") + first +
                                        R"(","reference":"order-1"},{"id":"pay_abc","status":"Captured","reference":"order-1"}]})")};
    const PaymentResult r = h.settler().query("order-1");
    EXPECT_EQ(r.outcome, Outcome::unknown) << first << ": " << r.error;
    EXPECT_NE(r.error.find("lists 2 payments"), std::string::npos) << r.error;
    EXPECT_TRUE(r.provider_payment_id.empty());
  }
  LookupHarness h;
  h.leave_unknown();
  h.transport.script = {found_captured()};
  EXPECT_EQ(h.settler().query("order-1").outcome, Outcome::succeeded) << "a list of one settles";
}

// Attempt 1, timed out after the request was written: it may have been
// processed.
AttemptEntry timed_out_send() {
  AttemptEntry sent;
  sent.number = 1;
  sent.kind = "send";
  sent.started_at = 1000;
  sent.ended_at = 1100;
  sent.verdict = "unknown";
  sent.transport_error = "timeout";
  sent.processed = true;
  return sent;
}

// A webhook entry (Ledger::record_event) is evidence the re-send rule does
// not read yet: it acts on nothing, like a lookup that found nothing, so a
// history with one reads exactly as the same history without it, whatever
// the entry says (even "processed", even a final-looking verdict).
TEST(Lookup, AWebhookEntryInTheHistoryChangesNothingTheReSendRuleReads) {
  Profile p = *builtin_profile("checkout_com");
  p.replay = ReplayKind::none;  // a possibly processed send forbids a re-send
  const AttemptEntry sent = timed_out_send();
  AttemptEntry hook;
  hook.number = 2;
  hook.kind = "webhook";
  hook.started_at = hook.ended_at = 5000;
  hook.http_status = 402;
  hook.verdict = "fail";  // what would make a send a final answer
  hook.reason = "declined";
  hook.processed = true;   // what would make a send possibly processed
  for (const std::vector<AttemptEntry>& history :
       {std::vector<AttemptEntry>{hook}, std::vector<AttemptEntry>{sent, hook}, std::vector<AttemptEntry>{hook, sent}}) {
    std::vector<AttemptEntry> without;
    for (const AttemptEntry& e : history)
      if (e.kind != "webhook") without.push_back(e);
    const HistoryReading with_it = read_history(p, history), plain = read_history(p, without);
    EXPECT_EQ(with_it.may_have_processed, plain.may_have_processed);
    EXPECT_EQ(with_it.resend_safe, plain.resend_safe);
    EXPECT_EQ(with_it.why, plain.why);
    EXPECT_EQ(with_it.last_possible_send, plain.last_possible_send);
    EXPECT_EQ(with_it.final_answer, plain.final_answer);
    EXPECT_EQ(with_it.final_why, plain.final_why);
  }
  HistoryFold fold(p);
  fold.add(hook);
  EXPECT_FALSE(fold.may_have_processed());
  EXPECT_FALSE(fold.forbidding());
  EXPECT_FALSE(fold.final_answer());
}

// D41: a lookup's "absent" clears the sends before it, and the reading
// remembers that only a timed "not found" did (cleared_by_lookup), through
// later sends too; with nothing sent before, there was nothing to clear.
TEST(Lookup, AnAbsentThatClearedPossiblyProcessedSendsIsRemembered) {
  const Profile p = *builtin_profile("checkout_com");
  const AttemptEntry sent = timed_out_send();
  AttemptEntry absent;
  absent.kind = "lookup";
  absent.started_at = absent.ended_at = 90000;
  absent.verdict = kLookupAbsent;
  AttemptEntry again = sent;
  again.number = 2;
  again.started_at = 91000;
  again.ended_at = 91100;
  const HistoryReading cleared = read_history(p, {sent, absent});
  EXPECT_TRUE(cleared.cleared_by_lookup);
  EXPECT_FALSE(cleared.may_have_processed);
  EXPECT_TRUE(cleared.resend_safe);
  EXPECT_FALSE(read_history(p, {absent}).cleared_by_lookup) << "nothing was sent before it";
  const HistoryReading later = read_history(p, {sent, absent, again});
  EXPECT_TRUE(later.cleared_by_lookup);
  EXPECT_TRUE(later.may_have_processed);
  EXPECT_TRUE(read_history(p, {sent, absent, again, absent}).cleared_by_lookup);
}

// An operation's "not found" never proves it absent, for every built-in
// operation, whatever the history: the profile it is looked up by searches
// by no reference the request carried (operation_profile clears the
// create's, and an operation's identity is never the payment's reference).
// Nothing is re-sent on it.
TEST(Lookup, AnOperationsNotFoundNeverProvesItAbsent) {
  const HistoryReading quiet;  // nothing may have been processed: the most a "not found" can say
  for (const std::string& name : builtin_profile_names()) {
    const std::optional<Profile> p = builtin_profile(name);
    ASSERT_TRUE(p) << name;
    for (const auto& [kind, op] : p->operations) {
      const Profile asked = operation_profile(*p, op);
      EXPECT_FALSE(read_not_found(asked, quiet, 1000000, 0, true).proves_absence) << name << " " << kind;
    }
  }
}

}  // namespace
}  // namespace payretry::test
