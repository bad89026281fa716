// An operation's own notifications (profile operations.<kind>.webhook):
//   - the loader refuses an incomplete or ambiguous block and names its path;
//   - the receiver (payretry::Client::apply_webhook over a real SQLite
//     ledger) lands an event on the one operation row it provably is: the
//     row of that kind holding the id it names, of the payment it names.
//     The rows are staged through a second handle on the same ledger file,
//     in the states no simulator answer leaves them in: a Stripe refund
//     UNKNOWN that knows its id, two captures holding one PaymentIntent id.
// Nothing is sent (base_url is a closed port); notifications are signed as
// the provider signs them (tests/lib/provider_notices.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include "../lib/provider_notices.hpp"
#include "client.hpp"
#include "config.hpp"
#include "ledger.hpp"
#include "profile.hpp"
#include "scope.hpp"

namespace payretry {
namespace {

// ---- the loader -------------------------------------------------------------------------------

std::string error_of(const std::string& json) {
  try {
    parse_profile(json);
  } catch (const ProfileError& e) {
    return e.what();
  }
  return "";
}

// A profile over generic whose refund (and capture, when given) carry `refund_webhook`
// (and `capture_webhook`).
std::string ops_with(const std::string& refund_webhook, const std::string& capture_webhook = "") {
  std::string ops = R"({"refund":{"path":"/v1/payments/{provider_id}/refunds","webhook":)" + refund_webhook + "}";
  if (!capture_webhook.empty())
    ops += R"(,"capture":{"path":"/v1/payments/{provider_id}/capture","webhook":)" + capture_webhook + "}";
  return R"({"name":"o","extends":"generic","operations":)" + ops + "}}";
}

TEST(OperationWebhookProfile, a_whole_block_loads_with_its_events_and_fields) {
  const Profile p = parse_profile(
      ops_with(R"({"events":{"refund.done":"SUCCEEDED","refund.lost":"FAILED"},"operation_id":"$.data.id",)"
               R"("payment_id":"$.data.payment","status":"$.data.status","idempotency_key":"$.request.key"})"));
  const OperationWebhook& w = p.operations.at("refund").webhook;
  ASSERT_EQ(w.events.size(), 2u);
  EXPECT_EQ(w.events.at("refund.done"), StatusTarget::succeeded);
  EXPECT_EQ(w.events.at("refund.lost"), StatusTarget::failed);
  ASSERT_EQ(w.payment_id.size(), 1u);
  EXPECT_EQ(w.payment_id[0], "$.data.payment");
  EXPECT_FALSE(w.requires_given) << "no requires of its own: the profile's webhook.requires";
}

TEST(OperationWebhookProfile, fields_without_events_are_refused_at_the_events_path) {
  const std::string e = error_of(ops_with(R"({"operation_id":"$.data.id","payment_id":"$.data.payment"})"));
  EXPECT_EQ(e.rfind("profile.operations.refund.webhook.events: missing", 0), 0u) << e;
}

TEST(OperationWebhookProfile, events_without_the_payment_they_are_of_are_refused_at_payment_id) {
  const std::string e = error_of(ops_with(R"({"events":{"refund.done":"SUCCEEDED"},"operation_id":"$.data.id"})"));
  EXPECT_EQ(e.rfind("profile.operations.refund.webhook.payment_id: missing", 0), 0u) << e;
}

TEST(OperationWebhookProfile, events_naming_neither_the_operation_id_nor_its_key_are_refused_at_operation_id) {
  const std::string e = error_of(ops_with(R"({"events":{"refund.done":"SUCCEEDED"},"payment_id":"$.data.payment"})"));
  EXPECT_EQ(e.rfind("profile.operations.refund.webhook.operation_id: missing", 0), 0u) << e;
  EXPECT_NE(e.find("idempotency_key"), std::string::npos) << e;
  // The key alone names it: that loads.
  EXPECT_EQ(error_of(ops_with(R"({"events":{"refund.done":"SUCCEEDED"},"payment_id":"$.data.payment",)"
                              R"("idempotency_key":"$.request.key"})")),
            "");
}

TEST(OperationWebhookProfile, one_event_type_in_two_operations_is_refused_at_the_second_ones_type) {
  const std::string block = R"({"events":{"money.moved":"SUCCEEDED"},"operation_id":"$.id","payment_id":"$.p"})";
  const std::string e = error_of(ops_with(block, block));
  // Operations are checked by name: capture first, so refund's is the second.
  EXPECT_EQ(e.rfind("profile.operations.refund.webhook.events.money.moved: is the capture's event type too", 0), 0u)
      << e;
  // Two types, one each: loads.
  EXPECT_EQ(error_of(ops_with(block, R"({"events":{"money.held":"SUCCEEDED"},"operation_id":"$.id","payment_id":"$.p"})")),
            "");
}

TEST(OperationWebhookProfile, an_unknown_member_and_a_bad_target_are_named) {
  EXPECT_EQ(error_of(ops_with(R"({"events":{"r":"SUCCEEDED"},"payment_id":"$.p","operation_id":"$.i","order_id":"$.o"})"))
                .rfind("profile.operations.refund.webhook", 0),
            0u);
  const std::string e = error_of(ops_with(R"({"events":{"r":"DONE"},"payment_id":"$.p","operation_id":"$.i"})"));
  EXPECT_EQ(e.rfind("profile.operations.refund.webhook.events.r: must be", 0), 0u) << e;
}

// ---- the receiver over staged rows --------------------------------------------------------------

const char kSecret[] = "whsec_unit_operation_events";

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class OperationEvents : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/payretry-opev-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    client_.reset();
    ledger_.reset();
    std::system(("rm -rf " + dir_).c_str());
  }

  // A client of `provider` (a name in quotes, or an inline profile) on a
  // SQLite ledger, and a second handle on that ledger to stage its rows
  // in the client's scope.
  void open(const std::string& provider) {
    const std::string url = "sqlite://" + dir_ + "/ledger.db";
    const std::string cfg = R"({"provider":)" + provider +
                            R"(,"base_url":"http://127.0.0.1:9","auth":{"bearer":"sk_test_unit_0123456789"},)"
                            R"("webhook":{"secret":")" + std::string(kSecret) + R"("},"ledger":")" + url + "\"}";
    client_ = std::make_unique<Client>(cfg, AttemptLog::Sink{}, RequestHook{});
    ledger_ = open_ledger(url, "");
    Config c = parse_config(cfg);
    scope_ = client_scope(c, bind_profile(c, false), ledger_->secret());
  }

  PaymentRow proposal(const std::string& order, int64_t amount) const {
    PaymentRow r;
    r.order_id = order;
    r.idempotency_key = "key-" + std::to_string(++serial_) + "-" + std::to_string(getpid());
    r.fingerprint = std::string(64, 'a');
    r.key_expires_at = now_ms() + 86'400'000;
    r.scope = scope_;
    r.amount = amount;
    return r;
  }
  static Settlement settled(PaymentState state, const std::string& id, MoneyState money) {
    Settlement s;
    s.state = state;
    s.delivery = "delivered";
    s.provider_payment_id = id;
    s.money_state = money;
    return s;
  }

  // A payment of 1000 the provider knows as `id`, its money at `money`.
  void payment(const std::string& order, const std::string& id, MoneyState money) {
    const int64_t t = now_ms();
    ASSERT_TRUE(ledger_->create_and_claim(proposal(order, 1000), "stager", t, t + 30'000).created) << order;
    ASSERT_TRUE(ledger_->settle(order, "stager", nullptr, settled(PaymentState::succeeded, id, money), t)) << order;
  }
  // An operation the provider took (its answer named it `id`) and has not
  // decided: UNKNOWN.
  std::string operation(const std::string& parent, OperationKind kind, const std::string& ref, int64_t amount,
                        const std::string& id) {
    PaymentRow p = proposal(operation_row_id(parent, kind, ref), amount);
    p.operation = kind;
    p.parent_order_id = parent;
    p.operation_ref = ref;
    const int64_t t = now_ms();
    const Ledger::OperationOutcome o = ledger_->create_operation_and_claim(p, "stager", t, t + 30'000);
    EXPECT_EQ(o.refused, "") << p.order_id;
    EXPECT_TRUE(o.created) << p.order_id;
    EXPECT_TRUE(ledger_->settle(p.order_id, "stager", nullptr, settled(PaymentState::unknown, id, MoneyState::unknown), t))
        << p.order_id;
    return p.order_id;
  }

  WebhookOutcome deliver(const notices::Signed& n) {
    WebhookRequest r;
    r.method = "POST";
    r.url = "https://shop.example/hooks/stripe";
    r.headers.emplace_back("Content-Type", "application/json");
    for (const auto& h : n.headers) r.headers.push_back(h);
    r.body = n.body;
    WebhookOutcome o = client_->apply_webhook(r);
    EXPECT_EQ(o.verdict, "accepted") << o.to_json();
    return o;
  }
  notices::Signed stripe(const std::string& event_id, const std::string& type, const std::string& object,
                         const std::string& key = "") {
    return notices::stripe_event(kSecret, event_id, type, object, key, now_ms() / 1000);
  }
  // The one event an operation's block read from `o` (its ledger id ends ":<kind>").
  static WebhookEventResult op_event(const WebhookOutcome& o, const std::string& kind) {
    for (const WebhookEventResult& e : o.events)
      if (e.event_id.size() > kind.size() && e.event_id.substr(e.event_id.size() - kind.size() - 1) == ":" + kind)
        return e;
    ADD_FAILURE() << "no " << kind << " event: " << o.to_json();
    return {};
  }
  PaymentRow row(const std::string& id) {
    const std::optional<PaymentRow> r = ledger_->get(id);
    EXPECT_TRUE(r.has_value()) << id;
    return r.value_or(PaymentRow{});
  }

  std::string dir_, scope_;
  mutable int serial_ = 0;
  std::unique_ptr<Client> client_;
  std::unique_ptr<Ledger> ledger_;
};

// refund.updated is Stripe's word when a refund moves on by itself (no
// request caused it: no key): by the refund's id, on the refund row that
// holds it, never on its sibling; refund.failed likewise. The payment's
// money follows the refund that succeeded (OperationFlow::settled_by_event).
TEST_F(OperationEvents, StripeRefundUpdatedByIdSettlesThatRefundAndMovesItsPaymentsMoney) {
  open("\"stripe\"");
  payment("st_pay", "pi_unit_A", MoneyState::paid);
  const std::string r1 = operation("st_pay", OperationKind::refund, "r1", 300, "re_unit_1");
  const std::string r2 = operation("st_pay", OperationKind::refund, "r2", 200, "re_unit_2");

  WebhookOutcome o = deliver(stripe("evt_unit_upd2", "refund.updated",
                                    notices::stripe_refund("re_unit_2", "pi_unit_A", "succeeded", 200)));
  WebhookEventResult e = op_event(o, "refund");
  EXPECT_EQ(e.order_id, r2) << o.to_json();
  EXPECT_EQ(e.effect, "settled") << o.to_json();
  EXPECT_EQ(row(r2).state, PaymentState::succeeded);
  EXPECT_EQ(row(r2).money_state, MoneyState::refunded);
  EXPECT_EQ(row(r1).state, PaymentState::unknown) << "its sibling is untouched";
  EXPECT_EQ(row("st_pay").money_state, MoneyState::partly_refunded);

  o = deliver(stripe("evt_unit_fail1", "refund.failed", notices::stripe_refund("re_unit_1", "pi_unit_A", "failed", 300)));
  e = op_event(o, "refund");
  EXPECT_EQ(e.order_id, r1) << o.to_json();
  EXPECT_EQ(e.finding, "failed") << o.to_json();
  EXPECT_EQ(e.effect, "settled") << o.to_json();
  EXPECT_EQ(row(r1).state, PaymentState::failed);
  EXPECT_EQ(row("st_pay").money_state, MoneyState::partly_refunded) << "a failed refund moves nothing";

  // A pending word settles nothing (status_map: pending is PENDING).
  const std::string r3 = operation("st_pay", OperationKind::refund, "r3", 100, "re_unit_3");
  o = deliver(stripe("evt_unit_pend3", "refund.updated", notices::stripe_refund("re_unit_3", "pi_unit_A", "pending", 100)));
  EXPECT_EQ(op_event(o, "refund").finding, "noted") << o.to_json();
  EXPECT_EQ(row(r3).state, PaymentState::unknown);
}

// The refund's id on another PaymentIntent: the event contradicts the
// row's payment, so it lands nowhere, whether that PaymentIntent is
// another payment of this client's or none of its.
TEST_F(OperationEvents, StripeRefundEventOfAnotherPaymentIntentLandsNowhere) {
  open("\"stripe\"");
  payment("sa_pay", "pi_unit_A", MoneyState::paid);
  payment("sb_pay", "pi_unit_B", MoneyState::paid);
  const std::string r1 = operation("sa_pay", OperationKind::refund, "r1", 300, "re_unit_1");
  const int before = row(r1).attempts;

  WebhookOutcome o = deliver(stripe("evt_unit_x1", "refund.updated",
                                    notices::stripe_refund("re_unit_1", "pi_unit_B", "succeeded", 300)));
  WebhookEventResult e = op_event(o, "refund");
  EXPECT_EQ(e.effect, "ignored") << o.to_json();
  EXPECT_EQ(e.order_id, "") << o.to_json();
  o = deliver(stripe("evt_unit_x2", "refund.updated",
                     notices::stripe_refund("re_unit_1", "pi_unit_nobody", "succeeded", 300)));
  EXPECT_EQ(op_event(o, "refund").effect, "ignored") << o.to_json();
  EXPECT_EQ(row(r1).state, PaymentState::unknown);
  EXPECT_EQ(row(r1).attempts, before) << "nothing in its history";
  EXPECT_EQ(row("sa_pay").money_state, MoneyState::paid);
  EXPECT_EQ(row("sb_pay").money_state, MoneyState::paid);

  // Its own PaymentIntent: settles it.
  o = deliver(stripe("evt_unit_x3", "refund.updated", notices::stripe_refund("re_unit_1", "pi_unit_A", "succeeded", 300)));
  EXPECT_EQ(op_event(o, "refund").effect, "settled") << o.to_json();
  EXPECT_EQ(row("sa_pay").money_state, MoneyState::partly_refunded);
}

// A refund that knows its id and is being sent again by some run (here a
// claim of the second handle: another process's): its notification is kept
// under the row, never written beneath the claim. The run ends UNKNOWN
// without landing it (that process went away after its settle); pay_query
// of the refund lands it before any lookup, and moves the payment's money.
TEST_F(OperationEvents, ARefundNotifiedWhileInFlightIsKeptAndLandsAtItsQuery) {
  open("\"stripe\"");
  payment("fl_pay", "pi_unit_F", MoneyState::paid);
  const std::string r1 = operation("fl_pay", OperationKind::refund, "r1", 1000, "re_unit_F1");
  const int64_t t = now_ms();
  ASSERT_TRUE(ledger_->claim(r1, "other-run", t, t + 30'000));
  ASSERT_EQ(row(r1).state, PaymentState::in_flight);

  WebhookOutcome o = deliver(stripe("evt_unit_fl1", "refund.updated",
                                    notices::stripe_refund("re_unit_F1", "pi_unit_F", "succeeded", 1000)));
  WebhookEventResult e = op_event(o, "refund");
  EXPECT_EQ(e.effect, "kept") << o.to_json();
  EXPECT_EQ(e.order_id, r1) << o.to_json();
  EXPECT_EQ(e.state_before, "IN_FLIGHT") << o.to_json();
  EXPECT_EQ(row(r1).state, PaymentState::in_flight) << "nothing written beneath the claim";
  EXPECT_EQ(row("fl_pay").money_state, MoneyState::paid);

  ASSERT_TRUE(ledger_->settle(r1, "other-run", nullptr, settlement_of(row(r1)), now_ms()));
  ASSERT_EQ(row(r1).state, PaymentState::unknown);
  const PaymentResult q = client_->query(r1);
  EXPECT_EQ(q.outcome, Outcome::succeeded) << q.error;
  EXPECT_EQ(row(r1).state, PaymentState::succeeded);
  EXPECT_EQ(row("fl_pay").money_state, MoneyState::refunded) << "all of it came back";
}

// A profile that gives Stripe's captures a webhook: a capture's answer is
// the PaymentIntent, so every capture row of a payment holds the same id
// (the payment's). An event naming that id could be either capture's: it
// lands on neither. With one capture row holding it, it lands there (and
// its money word, events charge.captured, makes the payment paid).
const char kCapturesNotified[] =
    R"({"name":"stripe_captures_notified","extends":"stripe","operations":{"capture":{"webhook":{)"
    R"("events":{"charge.captured":"SUCCEEDED"},"requires":{"$.data.object.object":"charge"},)"
    R"("operation_id":"$.data.object.payment_intent","payment_id":"$.data.object.payment_intent"},)"
    R"("money":{"events":{"charge.captured":"paid"}}}}})";

std::string charge(const std::string& pi, int64_t amount) {
  return "{\"id\":\"ch_" + pi.substr(3) + "\",\"object\":\"charge\",\"amount_captured\":" + std::to_string(amount) +
         ",\"captured\":true,\"payment_intent\":" + notices::q(pi) + ",\"status\":\"succeeded\"}";
}

TEST_F(OperationEvents, TwoOperationRowsOfOneKindHoldingTheSameIdAreNeitherTheEventsRow) {
  open(kCapturesNotified);
  payment("cap2_pay", "pi_unit_C", MoneyState::authorized);
  const std::string c1 = operation("cap2_pay", OperationKind::capture, "c1", 400, "pi_unit_C");
  const std::string c2 = operation("cap2_pay", OperationKind::capture, "c2", 400, "pi_unit_C");
  WebhookOutcome o = deliver(stripe("evt_unit_cap2", "charge.captured", charge("pi_unit_C", 400)));
  EXPECT_EQ(op_event(o, "capture").effect, "ignored") << o.to_json();
  EXPECT_EQ(row(c1).state, PaymentState::unknown);
  EXPECT_EQ(row(c2).state, PaymentState::unknown);
  EXPECT_EQ(row("cap2_pay").money_state, MoneyState::authorized);

  payment("cap1_pay", "pi_unit_D", MoneyState::authorized);
  const std::string only = operation("cap1_pay", OperationKind::capture, "c1", 400, "pi_unit_D");
  o = deliver(stripe("evt_unit_cap1", "charge.captured", charge("pi_unit_D", 400)));
  EXPECT_EQ(op_event(o, "capture").order_id, only) << o.to_json();
  EXPECT_EQ(op_event(o, "capture").effect, "settled") << o.to_json();
  EXPECT_EQ(row(only).state, PaymentState::succeeded);
  EXPECT_EQ(row("cap1_pay").money_state, MoneyState::paid);
}

}  // namespace
}  // namespace payretry
