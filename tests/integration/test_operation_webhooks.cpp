// Operations settled by their own notifications (operations.<kind>.webhook,
// src/core/webhook_receiver.cpp apply_operation_event), end to end through
// the C ABI: a real client (libcurl, a SQLite ledger file) pays and operates
// against payretry-sim, whose answers give each operation its id; the
// provider's notifications are then written here in its own format, signed
// its way (tests/lib/provider_notices.hpp), and handed to pay_webhook_apply
// as a merchant's endpoint would. What counts is the operation's own row,
// and the payment's money, which only an operation that settled moves.
//
//   Adyen          a capture and refunds answered "received" read UNKNOWN
//                  until their CAPTURE/REFUND notification; true settles the
//                  row and moves the payment's money, false settles it FAILED
//                  and frees its amount; a redelivery is a duplicate; one
//                  that comes while the refund is being sent is kept and
//                  lands when the run ends.
//   Checkout.com   payment_refund_declined / payment_refunded by data.action_id
//                  settle that refund alone; an action id no row knows is
//                  kept, never landed on the payment's open refund.
//   Stripe         refund.* by request.idempotency_key teach the refund row
//                  whose answer was lost its id; by id alone, on no row that
//                  does not hold it; another PaymentIntent's, or an object
//                  that is no refund, land nowhere.
#include <cJSON.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "../lib/provider_notices.hpp"
#include "../sim/sim_client.hpp"
#include "capi_probe.hpp"

namespace payretry_test {
namespace {

const char kStripeSecret[] = "whsec_operation_webhooks_test";
const char kAdyenKey[] = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
const char kCkoKey[] = "cko-signature-key-test";
const char kAdyenAccount[] = "PayretrySimECOM";

int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What pay_webhook_apply said of one notification.
struct EventOut {
  std::string event_id, type, order_id, provider_payment_id, finding, effect, before, after, why;
};
struct Applied {
  int rc = 0, status = 0;
  std::string verdict, raw;
  std::vector<EventOut> events;
  // The event an operation's block read (its ledger id ends ":<kind>"); the
  // payment's block may have read the same notification too.
  EventOut op(const std::string& kind) const {
    for (const EventOut& e : events)
      if (e.event_id.size() > kind.size() && e.event_id.compare(e.event_id.size() - kind.size() - 1, std::string::npos,
                                                                ":" + kind) == 0)
        return e;
    ADD_FAILURE() << "no " << kind << " event in " << raw;
    return {};
  }
};

Applied apply(pay_client* c, const notices::Signed& n) {
  std::vector<pay_header> hs{{"Content-Type", "application/json"}};
  for (const auto& [name, value] : n.headers) hs.push_back(pay_header{name.c_str(), value.c_str()});
  pay_webhook_request req = PAY_WEBHOOK_REQUEST_INIT;
  req.method = "POST";
  req.url = "https://shop.example/hooks/payments";
  req.headers = hs.data();
  req.header_count = hs.size();
  req.body = n.body.data();
  req.body_len = n.body.size();
  pay_webhook_reply reply{};
  Applied a;
  a.rc = pay_webhook_apply(&reply, c, &req);
  if (a.rc != PAY_OK) {
    ADD_FAILURE() << "pay_webhook_apply: " << pay_error_last()->message;
    return a;
  }
  a.status = reply.status;
  a.raw = reply.outcome.ptr ? reply.outcome.ptr : "";
  pay_webhook_reply_dispose(&reply);
  Json j(a.raw);
  a.verdict = str(j.j, "verdict");
  const cJSON* e = nullptr;
  cJSON_ArrayForEach(e, at(j.j, "events")) {
    a.events.push_back({str(e, "event_id"), str(e, "type"), str(e, "order_id"), str(e, "provider_payment_id"),
                        str(e, "finding"), str(e, "effect"), str(e, "state_before"), str(e, "state_after"),
                        str(e, "why")});
  }
  return a;
}

class OperationWebhooks : public SimTest {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/payretry-opwh-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    client_.reset();
    if (sim_) sim_->stop();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  // The simulator as `profile`, sending no notifications of its own (each
  // test writes the ones it needs, at the moment it needs them).
  void start(const std::string& profile) {
    profile_ = profile;
    payretry_sim::Options o = SimTest::sim_options();
    o.profile = profile;
    o.seed = 48;
    sim_ = std::make_unique<payretry_sim::Server>(o);
    const std::string secret = profile == "stripe" ? kStripeSecret : profile == "adyen" ? kAdyenKey : kCkoKey;
    std::string c = R"({"provider":")" + profile + R"(","base_url":")" + base_url() +
                    R"(","auth":{"bearer":"sk_test_integration_secret"},"webhook":{"secret":")" + secret + R"("},)"
                    R"("retry":{"max_attempts":4,"connect_timeout_ms":300,"attempt_timeout_ms":1000,"deadline_ms":5000,)"
                    R"("backoff_base_ms":20,"backoff_cap_ms":100,"min_attempt_ms":50,"jitter_seed":7},)"
                    R"("not_found_grace_ms":0,"ledger":"sqlite://)" + dir_ + "/ops.db\"";
    if (profile == "adyen") c += std::string(R"(,"merchant_id":")") + kAdyenAccount + "\"";
    client_ = probed_client(c + "}", probe_);
    ASSERT_TRUE(client_);
  }

  // A payment of 1000 made as each provider's clients make it: Adyen's
  // simulated account holds it until a capture; the others take it at once.
  std::string pay(const std::string& order, const char* money) {
    std::string b;
    if (profile_ == "stripe")
      b = R"({"amount":1000,"currency":"usd","metadata":{"order_id":")" + order + "\"}}";
    else if (profile_ == "adyen")
      b = R"({"amount":{"value":1000,"currency":"EUR"},"reference":")" + order +
          R"(","paymentMethod":{"type":"scheme"},"merchantAccount":")" + kAdyenAccount + "\"}";
    else
      b = R"({"amount":1000,"currency":"EUR","reference":")" + order + "\"}";
    pay_result* r = nullptr;
    EXPECT_EQ(pay_submit(&r, client_.get(), order.c_str(), b.data(), b.size(), nullptr), PAY_OK)
        << pay_error_last()->message;
    ResultPtr res(r);
    if (!r) return "";
    EXPECT_EQ(pay_result_outcome(r), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r);
    EXPECT_STREQ(pay_money_state_name(pay_result_money_state(r)), money) << pay_result_json(r);
    return pay_result_provider_payment_id(r) ? pay_result_provider_payment_id(r) : "";
  }

  // pay_submit_operation; its rc, and the result when 0.
  int operate(const std::string& order, int kind, const std::string& ref, int64_t amount, ResultPtr* out = nullptr) {
    const std::string body = profile_ == "adyen" ? std::string(R"({"merchantAccount":")") + kAdyenAccount + "\"}" : "";
    pay_operation_options o;
    pay_operation_options_init(&o, PAY_OPERATION_OPTIONS_VERSION);
    o.ref = ref.c_str();
    o.amount = amount;
    o.body = body.empty() ? nullptr : body.c_str();
    pay_result* r = nullptr;
    const int rc = pay_submit_operation(&r, client_.get(), order.c_str(), kind, &o);
    if (out) out->reset(r);
    else pay_result_free(r);
    if (rc != PAY_OK) last_error_ = pay_error_last()->message;
    return rc;
  }
  // An operation the provider took but has not decided: UNKNOWN, its id known.
  std::string taken(const std::string& order, int kind, const std::string& ref, int64_t amount) {
    ResultPtr r;
    EXPECT_EQ(operate(order, kind, ref, amount, &r), PAY_OK) << last_error_;
    if (!r) return "";
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
    const char* id = pay_result_provider_payment_id(r.get());
    EXPECT_NE(id, nullptr) << "its answer names it: " << pay_result_json(r.get());
    return id ? id : "";
  }

  std::string row(const std::string& id, const char* field) {
    Json j(ledger_get(client_.get(), id));
    return str(at(j.j, "payment"), field);
  }
  std::string dump(const std::string& id) { return ledger_get(client_.get(), id); }
  // How many entries a row's history holds (attempts and landed events).
  int history(const std::string& id) {
    Json j(ledger_get(client_.get(), id));
    return cJSON_GetArraySize(at(j.j, "attempts"));
  }

  // The simulator's record of the operation it made under `key`: its id
  // and whether it moved money.
  struct SimOp {
    std::string id;
    bool moved = false;
    bool found = false;
  };
  SimOp sim_op(const std::string& order, const std::string& key) {
    SimOp out;
    const simtest::Json doc(simtest::get(sim_->port(), "/__admin/truth?order_id=" + order).body);
    const cJSON* op = nullptr;
    cJSON_ArrayForEach(op, at(cJSON_GetArrayItem(doc.at("payments"), 0), "operations")) {
      if (str(op, "key") != key) continue;
      out.id = str(op, "id");
      out.moved = cJSON_IsTrue(at(op, "moved"));
      out.found = true;
    }
    return out;
  }

  // Refund r1 of `amount` on `order`, every answer lost after Stripe
  // refunded: the row is UNKNOWN and knows no refund id. Sets the row's
  // key and the refund's id at the provider.
  void stripe_refund_answer_lost(const std::string& order, int64_t amount, std::string& key, std::string& refund_id) {
    const std::string rid = order + " refund r1";
    sim_->script(order, {"lost_response", "lost_response", "lost_response", "lost_response"});
    ResultPtr r;
    ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r1", amount, &r), PAY_OK) << last_error_;
    ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
    ASSERT_EQ(row(rid, "provider_payment_id"), "");
    key = row(rid, "idempotency_key");
    const SimOp made = sim_op(order, key);
    ASSERT_TRUE(made.found && made.moved) << "Stripe refunded it";
    refund_id = made.id;
  }

  notices::Signed adyen(const std::string& psp, const std::string& payment_psp, const std::string& order,
                        int64_t value, const char* code, bool success, const std::string& reason = "") {
    notices::AdyenItem i;
    i.psp = psp;
    i.original = payment_psp;
    i.merchant_account = kAdyenAccount;
    i.merchant_ref = order;
    i.value = value;
    i.event = code;
    i.success = success ? "true" : "false";
    i.reason = reason;
    return notices::adyen_notification(kAdyenKey, i);
  }

  std::string profile_, dir_, last_error_;
  Probe probe_;
  ClientPtr client_;
};

// ==== Adyen: "received" is not done; the modification's notification says ========================

// A capture and refunds Adyen answered "received" (201, its only status)
// are UNKNOWN until their notification: CAPTURE:true makes the payment paid,
// REFUND:true settles the refund and makes the payment partly refunded;
// REFUND:false (Adyen took the request and refused it: here because the
// merchant's back office refunded most of the payment at Adyen directly)
// settles it FAILED, and the amount it held is free again for the guard.
TEST_F(OperationWebhooks, AdyenReceivedIsUnknownTrueSettlesAndMovesTheMoneyFalseFreesTheAmount) {
  start("adyen");
  const std::string order = "opwh_ad1";
  const std::string psp = pay(order, "authorized");
  ASSERT_FALSE(psp.empty());

  const std::string capture = taken(order, PAY_OPERATION_CAPTURE, "c1", 1000);
  EXPECT_EQ(row(order, "money_state"), "authorized") << "a capture only received moves nothing";
  Applied a = apply(client_.get(), adyen(capture, psp, order, 1000, "CAPTURE", true));
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.op("capture").order_id, order + " capture c1") << a.raw;
  EXPECT_EQ(a.op("capture").effect, "settled") << a.raw;
  EXPECT_EQ(row(order + " capture c1", "state"), "SUCCEEDED") << dump(order + " capture c1");
  EXPECT_EQ(row(order, "money_state"), "paid") << dump(order);

  const std::string r1 = taken(order, PAY_OPERATION_REFUND, "r1", 400);
  EXPECT_EQ(row(order + " refund r1", "state"), "UNKNOWN");
  EXPECT_EQ(row(order, "money_state"), "paid") << "a refund only received moves nothing";
  const notices::Signed refunded = adyen(r1, psp, order, 400, "REFUND", true);
  a = apply(client_.get(), refunded);
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  const EventOut ev = a.op("refund");
  EXPECT_EQ(ev.order_id, order + " refund r1") << a.raw;
  EXPECT_EQ(ev.provider_payment_id, r1) << a.raw;
  EXPECT_EQ(ev.finding, "succeeded") << a.raw;
  EXPECT_EQ(ev.effect, "settled") << a.raw;
  EXPECT_EQ(ev.before, "UNKNOWN") << a.raw;
  EXPECT_EQ(ev.after, "SUCCEEDED") << a.raw;
  EXPECT_EQ(row(order + " refund r1", "state"), "SUCCEEDED");
  EXPECT_EQ(row(order + " refund r1", "money_state"), "refunded") << dump(order + " refund r1");
  EXPECT_EQ(row(order, "money_state"), "partly_refunded") << dump(order);
  EXPECT_EQ(row(order, "state"), "SUCCEEDED");
  const int landed = history(order + " refund r1");

  // Adyen delivers again until it gets its [accepted]: nothing moves twice.
  a = apply(client_.get(), refunded);
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_EQ(a.op("refund").effect, "duplicate") << a.raw;
  EXPECT_EQ(history(order + " refund r1"), landed);
  EXPECT_EQ(row(order, "money_state"), "partly_refunded");

  // The back office refunds 500 at Adyen, past this ledger: 100 is left
  // there, while the ledger still counts 600.
  simtest::Conn backoffice(sim_->port());
  const simtest::Response direct = backoffice.request(
      "POST", "/v72/payments/" + psp + "/refunds",
      std::string(R"({"amount":{"value":500,"currency":"EUR"},"merchantAccount":")") + kAdyenAccount + "\"}",
      {"Authorization: Bearer sk_test_integration_secret", "Idempotency-Key: backoffice-" + order});
  ASSERT_EQ(direct.status, 201) << direct.body;
  const std::string r2 = taken(order, PAY_OPERATION_REFUND, "r2", 600);
  const SimOp refused = sim_op(order, row(order + " refund r2", "idempotency_key"));
  ASSERT_TRUE(refused.found);
  ASSERT_EQ(refused.id, r2);
  ASSERT_FALSE(refused.moved) << "Adyen took it and refused it: more than it had left";
  // While r2 is open its 600 counts as spent: nothing is left.
  EXPECT_EQ(operate(order, PAY_OPERATION_REFUND, "r3", 600), PAY_EINVALID) << "the guard let r3 through";
  EXPECT_NE(last_error_.find("refused, nothing sent"), std::string::npos) << last_error_;

  a = apply(client_.get(), adyen(r2, psp, order, 600, "REFUND", false, "Insufficient in-process funds on paymentmethod"));
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_EQ(a.op("refund").order_id, order + " refund r2") << a.raw;
  EXPECT_EQ(a.op("refund").finding, "failed") << a.raw;
  EXPECT_EQ(a.op("refund").effect, "settled") << a.raw;
  EXPECT_EQ(row(order + " refund r2", "state"), "FAILED") << dump(order + " refund r2");
  EXPECT_EQ(row(order, "money_state"), "partly_refunded") << "a refused refund moves nothing: " << dump(order);
  // Its 600 is free again: the same amount passes the guard and is sent.
  ResultPtr r;
  ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r3", 600, &r), PAY_OK) << last_error_;
  EXPECT_TRUE(sim_op(order, row(order + " refund r3", "idempotency_key")).found) << "r3 was sent";
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
}

// A refund's notification may come before its own answer (Adyen sends it
// as soon as it decided): the row is IN_FLIGHT and knows no pspReference
// yet. The event is kept, by the id it names, and lands when the run that
// learns that id ends: the refund's result is the notification's. A refund
// of all that is left then reads the payment refunded.
TEST_F(OperationWebhooks, AdyenRefundNotifiedWhileItIsBeingSentIsKeptAndLandsWhenItsRunEnds) {
  start("adyen");
  const std::string order = "opwh_ad2";
  const std::string psp = pay(order, "authorized");
  ASSERT_FALSE(psp.empty());
  const std::string capture = taken(order, PAY_OPERATION_CAPTURE, "c1", 1000);
  ASSERT_EQ(apply(client_.get(), adyen(capture, psp, order, 1000, "CAPTURE", true)).op("capture").effect, "settled");

  // The first answer is lost after Adyen acted; the second attempt (same
  // key) gets it again. Just before it, the notification arrives.
  sim_->script(order, {"lost_response", "none"});
  Applied early;
  bool applied = false;
  probe_.on_attempt = [&](const Seen& s) {
    if (s.order_id != order + " refund r1" || s.attempt != 2 || applied) return;
    const SimOp op = sim_op(order, s.key);
    if (!op.found) return;
    applied = true;
    EXPECT_EQ(row(order + " refund r1", "state"), "IN_FLIGHT");
    early = apply(client_.get(), adyen(op.id, psp, order, 300, "REFUND", true));
  };
  ResultPtr r;
  ASSERT_EQ(operate(order, PAY_OPERATION_REFUND, "r1", 300, &r), PAY_OK) << last_error_;
  probe_.on_attempt = nullptr;
  ASSERT_TRUE(applied) << "no second attempt: " << pay_result_json(r.get());
  EXPECT_EQ(early.verdict, "accepted") << early.raw;
  EXPECT_EQ(early.op("refund").effect, "kept") << early.raw;
  EXPECT_EQ(early.op("refund").order_id, "") << "no row knew its id yet: " << early.raw;
  // The run learnt the id from the answer, then landed what was kept.
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(row(order + " refund r1", "state"), "SUCCEEDED") << dump(order + " refund r1");
  EXPECT_EQ(row(order, "money_state"), "partly_refunded") << dump(order);

  // The rest (700): its REFUND:true makes the payment wholly refunded.
  const std::string r2 = taken(order, PAY_OPERATION_REFUND, "r2", 700);
  const Applied rest = apply(client_.get(), adyen(r2, psp, order, 700, "REFUND", true));
  EXPECT_EQ(rest.op("refund").effect, "settled") << rest.raw;
  EXPECT_EQ(row(order + " refund r2", "state"), "SUCCEEDED") << dump(order + " refund r2");
  EXPECT_EQ(row(order, "money_state"), "refunded") << "all that was captured came back: " << dump(order);
}

// ==== Checkout.com: the event names its action ====================================================

// Two refunds of one payment, both accepted (202, an action id each) and
// UNKNOWN. payment_refund_declined naming the first's action settles that
// one FAILED (Checkout.com may decline a refund after its 202; the
// simulator approves all, so its word here is written by the test);
// payment_refunded naming the second settles it. An event naming an action
// no row knows is kept, even where its payment has one open refund.
TEST_F(OperationWebhooks, CheckoutRefundEventsSettleTheRefundTheirActionIdNamesAndNoOther) {
  start("checkout_com");
  const std::string order = "opwh_ck1";
  const std::string pay_id = pay(order, "paid");
  ASSERT_FALSE(pay_id.empty());
  const std::string a1 = taken(order, PAY_OPERATION_REFUND, "r1", 300);
  const std::string a2 = taken(order, PAY_OPERATION_REFUND, "r2", 200);
  ASSERT_NE(a1, a2);

  Applied a = apply(client_.get(),
                    notices::checkout_event(kCkoKey, "evt_opwh_decl1", "payment_refund_declined", pay_id, a1, 300, order));
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_EQ(a.op("refund").order_id, order + " refund r1") << a.raw;
  EXPECT_EQ(a.op("refund").effect, "settled") << a.raw;
  EXPECT_EQ(row(order + " refund r1", "state"), "FAILED") << dump(order + " refund r1");
  EXPECT_EQ(row(order + " refund r2", "state"), "UNKNOWN");
  EXPECT_EQ(row(order, "money_state"), "paid") << "a declined refund moves nothing: " << dump(order);

  a = apply(client_.get(), notices::checkout_event(kCkoKey, "evt_opwh_ref2", "payment_refunded", pay_id, a2, 200, order));
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_EQ(a.op("refund").order_id, order + " refund r2") << a.raw;
  EXPECT_EQ(a.op("refund").effect, "settled") << a.raw;
  EXPECT_EQ(row(order + " refund r2", "state"), "SUCCEEDED") << dump(order + " refund r2");
  EXPECT_EQ(row(order, "money_state"), "partly_refunded") << dump(order);

  // An action no row knows (made elsewhere, or whose answer was lost), on
  // a payment whose one refund is open: that refund is still not proven to
  // be it.
  const std::string order2 = "opwh_ck2";
  const std::string pay_id2 = pay(order2, "paid");
  const std::string q1 = taken(order2, PAY_OPERATION_REFUND, "q1", 100);
  const int q1_history = history(order2 + " refund q1");
  a = apply(client_.get(), notices::checkout_event(kCkoKey, "evt_opwh_ref9", "payment_refunded", pay_id2,
                                                   "act_opwhnorowknowsthis00000", 100, order2));
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_EQ(a.op("refund").effect, "kept") << a.raw;
  EXPECT_EQ(a.op("refund").order_id, "") << a.raw;
  EXPECT_EQ(row(order2 + " refund q1", "state"), "UNKNOWN") << dump(order2 + " refund q1");
  EXPECT_EQ(history(order2 + " refund q1"), q1_history) << "nothing landed on q1";
  EXPECT_EQ(row(order2 + " refund q1", "provider_payment_id"), q1);
  EXPECT_EQ(row(order2, "money_state"), "paid") << dump(order2);
}

// ==== Stripe: by key where the answer was lost, by id otherwise, for that PaymentIntent only ======

TEST_F(OperationWebhooks, StripeRefundEventsLandByKeyOrIdOnTheirPaymentIntentsRefundAndNowhereElse) {
  start("stripe");
  const std::string order = "opwh_st1", other = "opwh_st2";
  const std::string pi = pay(order, "paid"), other_pi = pay(other, "paid");
  ASSERT_FALSE(pi.empty());
  ASSERT_FALSE(other_pi.empty());
  const std::string rid = order + " refund r1";

  // Every answer lost after Stripe refunded: UNKNOWN, and no refund id.
  std::string key, re;
  ASSERT_NO_FATAL_FAILURE(stripe_refund_answer_lost(order, 250, key, re));

  // By id alone (an automatic event: no request, no key): no row knows
  // re; r1, the payment's only open refund, is not proven to be it.
  Applied a = apply(client_.get(), notices::stripe_event(kStripeSecret, "evt_opwh_st_upd", "refund.updated",
                                                         notices::stripe_refund(re, pi, "succeeded", 250), "", now_s()));
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_EQ(a.op("refund").effect, "kept") << a.raw;
  EXPECT_EQ(row(rid, "state"), "UNKNOWN") << dump(rid);

  // Named by its key and id, but as something other than a refund: not
  // this operation's event at all.
  a = apply(client_.get(), notices::stripe_event(kStripeSecret, "evt_opwh_st_obj", "refund.created",
                                                 notices::stripe_refund(re, pi, "succeeded", 250, "charge"), key,
                                                 now_s()));
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_EQ(a.op("refund").effect, "ignored") << a.raw;
  EXPECT_EQ(row(rid, "state"), "UNKNOWN") << dump(rid);

  // Its key, on another PaymentIntent: not this payment's refund.
  a = apply(client_.get(), notices::stripe_event(kStripeSecret, "evt_opwh_st_oth", "refund.created",
                                                 notices::stripe_refund(re, other_pi, "succeeded", 250), key, now_s()));
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_NE(a.op("refund").effect, "settled") << a.raw;
  EXPECT_EQ(a.op("refund").order_id, "") << a.raw;
  EXPECT_EQ(row(rid, "state"), "UNKNOWN") << dump(rid);

  // refund.created carries the request that made it: r1's key. It lands
  // on r1 and teaches it the refund's id.
  a = apply(client_.get(), notices::stripe_event(kStripeSecret, "evt_opwh_st_new", "refund.created",
                                                 notices::stripe_refund(re, pi, "succeeded", 250), key, now_s()));
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_EQ(a.op("refund").order_id, rid) << a.raw;
  EXPECT_EQ(a.op("refund").effect, "settled") << a.raw;
  EXPECT_EQ(row(rid, "state"), "SUCCEEDED") << dump(rid);
  EXPECT_EQ(row(rid, "provider_payment_id"), re) << dump(rid);
  EXPECT_EQ(row(order, "money_state"), "partly_refunded") << dump(order);
  EXPECT_EQ(row(other, "money_state"), "paid") << dump(other);

  // Now that r1 holds re, an event naming re on the other PaymentIntent
  // still lands nowhere (not on r1, not on the other payment).
  const int r1_history = history(rid), other_history = history(other);
  a = apply(client_.get(), notices::stripe_event(kStripeSecret, "evt_opwh_st_x", "refund.failed",
                                                 notices::stripe_refund(re, other_pi, "failed", 250), "", now_s()));
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_EQ(a.op("refund").effect, "ignored") << a.raw;
  EXPECT_EQ(history(rid), r1_history) << dump(rid);
  EXPECT_EQ(history(other), other_history) << dump(other);
}

// A refund whose answer was lost, and whose refund.created says only
// "pending": the event carries r1's key, so it lands on r1 and, though it
// settles nothing, teaches r1 the refund's id (event_teaches_id: an
// operation's noted event). The row can then be looked up by that id; the
// refund.updated that came earlier by id alone, kept, lands on it too.
TEST_F(OperationWebhooks, StripePendingRefundCreatedByKeyTeachesTheIdSoTheRefundIsLookedUp) {
  start("stripe");
  const std::string order = "opwh_st3";
  const std::string pi = pay(order, "paid");
  ASSERT_FALSE(pi.empty());
  const std::string rid = order + " refund r1";
  std::string key, re;
  ASSERT_NO_FATAL_FAILURE(stripe_refund_answer_lost(order, 300, key, re));

  // Without the id, a query has nothing to ask by.
  pay_result* q = nullptr;
  ASSERT_EQ(pay_query(&q, client_.get(), rid.c_str()), PAY_OK) << pay_error_last()->message;
  ResultPtr before(q);
  EXPECT_EQ(pay_result_outcome(q), PAY_OUTCOME_UNKNOWN) << pay_result_json(q);

  Applied a = apply(client_.get(), notices::stripe_event(kStripeSecret, "evt_opwh_st3_upd", "refund.updated",
                                                         notices::stripe_refund(re, pi, "succeeded", 300), "", now_s()));
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_EQ(a.op("refund").effect, "kept") << a.raw;

  a = apply(client_.get(), notices::stripe_event(kStripeSecret, "evt_opwh_st3_new", "refund.created",
                                                 notices::stripe_refund(re, pi, "pending", 300), key, now_s()));
  ASSERT_EQ(a.verdict, "accepted") << a.raw;
  EXPECT_EQ(a.op("refund").order_id, rid) << a.raw;
  EXPECT_EQ(a.op("refund").effect, "recorded") << a.raw;
  EXPECT_EQ(row(rid, "state"), "UNKNOWN") << "pending settles nothing: " << dump(rid);
  EXPECT_EQ(row(rid, "provider_payment_id"), re) << "the key named it: " << dump(rid);
  EXPECT_EQ(row(order, "money_state"), "paid") << dump(order);

  ASSERT_EQ(pay_query(&q, client_.get(), rid.c_str()), PAY_OK) << pay_error_last()->message;
  ResultPtr after(q);
  EXPECT_EQ(pay_result_outcome(q), PAY_OUTCOME_SUCCEEDED) << pay_result_json(q);
  EXPECT_STREQ(pay_result_provider_payment_id(q), re.c_str());
  EXPECT_EQ(row(order, "money_state"), "partly_refunded") << dump(order);
}

}  // namespace
}  // namespace payretry_test
