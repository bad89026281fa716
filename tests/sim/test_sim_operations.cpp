// Operations on a payment (sim/operations.hpp): each provider's capture, refund and cancel at its
// own endpoint, through plain HTTP on a real loopback socket. What every provider must keep: a
// partial capture and a partial refund move what they name, a same-key retry moves nothing
// more where the provider promises it, a refund beyond what was captured is refused with the
// provider's own error, only an uncaptured payment is canceled, and the truth counts each money
// movement once. Where a provider promises less (a Mollie key after its hour, a Checkout.com
// refund re-sent after a 5xx) the simulator moves money twice, as the provider would.
#include <gtest/gtest.h>
#include <openssl/hmac.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "sim_auth.hpp"
#include "sim_client.hpp"

namespace {

using namespace simtest;
using payretry_sim::Server;

// ---- the truth of one order ----------------------------------------------------------------------

struct Truth {
  std::string money_state;
  double captured = -1, refunded = -1;
  int operations = 0, moved = 0;
  std::map<std::string, int> moves_by_key;
  std::vector<std::string> kinds;  // the operations' kinds, in order
  int moves(const std::string& key) const {
    auto it = moves_by_key.find(key);
    return it == moves_by_key.end() ? 0 : it->second;
  }
};

Truth truth(uint16_t port, const std::string& order) {
  const Response r = get(port, "/__admin/truth?order_id=" + order);
  Json j(r.body);
  Truth t;
  const cJSON* p = cJSON_GetArrayItem(j.at("payments"), 0);
  if (!p) return t;
  auto num = [&](const char* n) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(p, n);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
  };
  const cJSON* ms = cJSON_GetObjectItemCaseSensitive(p, "money_state");
  t.money_state = cJSON_IsString(ms) ? ms->valuestring : "";
  t.captured = num("captured");
  t.refunded = num("refunded");
  const cJSON* ops = cJSON_GetObjectItemCaseSensitive(p, "operations");
  for (const cJSON* o = ops ? ops->child : nullptr; o; o = o->next) {
    ++t.operations;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "moved"))) ++t.moved;
    t.kinds.push_back(cJSON_GetObjectItemCaseSensitive(o, "kind")->valuestring);
  }
  const cJSON* moves = cJSON_GetObjectItemCaseSensitive(p, "movements_by_key");
  for (const cJSON* m = moves ? moves->child : nullptr; m; m = m->next) t.moves_by_key[m->string] = m->valueint;
  return t;
}

double duplicate_movements(uint16_t port) { return Json(get(port, "/__admin/truth").body).num("operations.duplicate_movements"); }

Options options(const std::string& profile) {
  Options o = fast_options();
  o.profile = profile;
  o.keys_dir = PAYRETRY_TEST_KEYS_DIR;
  return o;
}

// ---- each provider's own calls -------------------------------------------------------------------

// How a provider's client asks for a held payment, captures, refunds and cancels, and what its
// answers and refusals say.
struct Provider {
  std::string name;
  // Makes a held (authorized, uncaptured) payment for `order`; returns its id.
  std::function<std::string(uint16_t, const std::string&)> hold;
  // Captures `amount` (minor units) with `key`; returns the answer and, in *capture, what a
  // refund then names (PayPal: the capture's id; the others: the payment's).
  std::function<Response(uint16_t, const std::string& id, int amount, const std::string& key, std::string* capture)> capture;
  std::function<Response(uint16_t, const std::string& target, int amount, const std::string& key)> refund;
  std::function<Response(uint16_t, const std::string& id)> cancel;
  int captured_partially;     // what a partial capture of 600 captures (Square completes the whole)
  int refused_status;         // the status of a refund beyond what was captured
  std::string refused_code;   // ... and what its body says
};

// gtest prints a parameter by its name, not its bytes.
void PrintTo(const Provider& p, std::ostream* os) { *os << p.name; }

std::string paypal_authorization(const Response& r) {
  const Json j(r.body);
  const cJSON* units = j.at("purchase_units");
  const cJSON* payments = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(units, 0), "payments");
  const cJSON* auth = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(payments, "authorizations"), 0);
  const cJSON* id = cJSON_GetObjectItemCaseSensitive(auth, "id");
  return cJSON_IsString(id) ? id->valuestring : "";
}

std::vector<Provider> providers() {
  std::vector<Provider> v;
  const std::string form = "Content-Type: application/x-www-form-urlencoded";
  v.push_back({"stripe",
               [form](uint16_t port, const std::string& order) {
                 Conn c(port);
                 return Json(c.request("POST", "/v1/payment_intents",
                                       "amount=1000&currency=usd&metadata%5Border_id%5D=" + order +
                                           "&confirm=true&payment_method=pm_card_visa&capture_method=manual",
                                       {"Idempotency-Key: k-" + order, form})
                                 .body)
                     .str("id");
               },
               [form](uint16_t port, const std::string& id, int amount, const std::string& key, std::string* capture) {
                 *capture = id;
                 Conn c(port);
                 return c.request("POST", "/v1/payment_intents/" + id + "/capture",
                                  "amount_to_capture=" + std::to_string(amount), {"Idempotency-Key: " + key, form});
               },
               [form](uint16_t port, const std::string& id, int amount, const std::string& key) {
                 Conn c(port);
                 return c.request("POST", "/v1/refunds", "payment_intent=" + id + "&amount=" + std::to_string(amount),
                                  {"Idempotency-Key: " + key, form});
               },
               [form](uint16_t port, const std::string& id) {
                 Conn c(port);
                 return c.request("POST", "/v1/payment_intents/" + id + "/cancel", "", {"Idempotency-Key: x-" + id, form});
               },
               600, 400, "amount_too_large"});
  v.push_back({"adyen",
               [](uint16_t port, const std::string& order) {
                 Conn c(port);
                 return Json(c.request("POST", "/v71/payments",
                                       R"({"reference":")" + order +
                                           R"(","amount":{"value":1000,"currency":"EUR"},"merchantAccount":"PayretrySimECOM"})",
                                       {"idempotency-key: k-" + order})
                                 .body)
                     .str("pspReference");
               },
               [](uint16_t port, const std::string& id, int amount, const std::string& key, std::string* capture) {
                 *capture = id;
                 Conn c(port);
                 return c.request("POST", "/v71/payments/" + id + "/captures",
                                  R"({"merchantAccount":"PayretrySimECOM","amount":{"value":)" + std::to_string(amount) +
                                      R"(,"currency":"EUR"}})",
                                  {"Idempotency-Key: " + key});
               },
               [](uint16_t port, const std::string& id, int amount, const std::string& key) {
                 Conn c(port);
                 return c.request("POST", "/v71/payments/" + id + "/refunds",
                                  R"({"merchantAccount":"PayretrySimECOM","amount":{"value":)" + std::to_string(amount) +
                                      R"(,"currency":"EUR"}})",
                                  {"Idempotency-Key: " + key});
               },
               [](uint16_t port, const std::string& id) {
                 Conn c(port);
                 return c.request("POST", "/v71/payments/" + id + "/cancels", R"({"merchantAccount":"PayretrySimECOM"})",
                                  {"Idempotency-Key: x-" + id});
               },
               // Adyen takes the refund (201 received) and refuses it by notification.
               600, 201, "received"});
  v.push_back({"paypal",
               [](uint16_t port, const std::string& order) {
                 Conn c(port);
                 return paypal_authorization(c.request(
                     "POST", "/v2/checkout/orders",
                     R"({"intent":"AUTHORIZE","purchase_units":[{"reference_id":")" + order +
                         R"(","amount":{"currency_code":"USD","value":"10.00"}}],"payment_source":{"card":{"number":"4111111111111111","expiry":"2030-03"}}})",
                     {bearer(paypal_token(port)), "PayPal-Request-Id: k-" + order}));
               },
               [](uint16_t port, const std::string& id, int amount, const std::string& key, std::string* capture) {
                 Conn c(port);
                 Response r = c.request("POST", "/v2/payments/authorizations/" + id + "/capture",
                                        R"({"amount":{"currency_code":"USD","value":")" + std::to_string(amount / 100) + "." +
                                            (amount % 100 < 10 ? "0" : "") + std::to_string(amount % 100) + R"("}})",
                                        {bearer(paypal_token(port)), "PayPal-Request-Id: " + key});
                 *capture = Json(r.body).str("id");
                 return r;
               },
               [](uint16_t port, const std::string& capture, int amount, const std::string& key) {
                 Conn c(port);
                 return c.request("POST", "/v2/payments/captures/" + capture + "/refund",
                                  R"({"amount":{"currency_code":"USD","value":")" + std::to_string(amount / 100) + "." +
                                      (amount % 100 < 10 ? "0" : "") + std::to_string(amount % 100) + R"("}})",
                                  {bearer(paypal_token(port)), "PayPal-Request-Id: " + key});
               },
               [](uint16_t port, const std::string& id) {
                 Conn c(port);
                 return c.request("POST", "/v2/payments/authorizations/" + id + "/void", "", {bearer(paypal_token(port))});
               },
               600, 422, "REFUND_AMOUNT_EXCEEDED"});
  v.push_back({"square",
               [](uint16_t port, const std::string& order) {
                 Conn c(port);
                 return Json(c.request("POST", "/v2/payments",
                                       R"({"idempotency_key":"k-)" + order + R"(","reference_id":")" + order +
                                           R"(","source_id":"cnon:card-nonce-ok","amount_money":{"amount":1000,"currency":"USD"},"autocomplete":false})")
                                 .body)
                     .str("payment.id");
               },
               // CompletePayment takes no amount and no key: the whole payment.
               [](uint16_t port, const std::string& id, int, const std::string&, std::string* capture) {
                 *capture = id;
                 Conn c(port);
                 return c.request("POST", "/v2/payments/" + id + "/complete", "{}");
               },
               [](uint16_t port, const std::string& id, int amount, const std::string& key) {
                 Conn c(port);
                 return c.request("POST", "/v2/refunds",
                                  R"({"idempotency_key":")" + key + R"(","payment_id":")" + id +
                                      R"(","amount_money":{"amount":)" + std::to_string(amount) + R"(,"currency":"USD"}})");
               },
               [](uint16_t port, const std::string& id) {
                 Conn c(port);
                 return c.request("POST", "/v2/payments/" + id + "/cancel", "{}");
               },
               1000, 400, "REFUND_AMOUNT_INVALID"});
  v.push_back({"checkout_com",
               [](uint16_t port, const std::string& order) {
                 Conn c(port);
                 return Json(c.request("POST", "/payments",
                                       R"({"reference":")" + order + R"(","amount":1000,"currency":"USD","capture":false})",
                                       {"Cko-Idempotency-Key: k-" + order})
                                 .body)
                     .str("id");
               },
               [](uint16_t port, const std::string& id, int amount, const std::string& key, std::string* capture) {
                 *capture = id;
                 Conn c(port);
                 return c.request("POST", "/payments/" + id + "/captures", R"({"amount":)" + std::to_string(amount) + "}",
                                  {"Cko-Idempotency-Key: " + key});
               },
               [](uint16_t port, const std::string& id, int amount, const std::string& key) {
                 Conn c(port);
                 return c.request("POST", "/payments/" + id + "/refunds", R"({"amount":)" + std::to_string(amount) + "}",
                                  {"Cko-Idempotency-Key: " + key});
               },
               [](uint16_t port, const std::string& id) {
                 Conn c(port);
                 return c.request("POST", "/payments/" + id + "/voids", "{}", {"Cko-Idempotency-Key: x-" + id});
               },
               600, 422, "refund_amount_exceeds_balance"});
  v.push_back({"mollie",
               [](uint16_t port, const std::string& order) {
                 Conn c(port);
                 const std::string id =
                     Json(c.request("POST", "/v2/payments",
                                    R"({"amount":{"currency":"EUR","value":"10.00"},"description":"Order","metadata":{"order_id":")" +
                                        order + R"("},"captureMode":"manual"})",
                                    {"Idempotency-Key: k-" + order})
                              .body)
                         .str("id");
                 // Held only once its customer authorized it at the checkout.
                 admin_post(port, "/__admin/customer", R"({"id":")" + id + R"(","action":"pay"})");
                 return id;
               },
               [](uint16_t port, const std::string& id, int amount, const std::string& key, std::string* capture) {
                 *capture = id;
                 Conn c(port);
                 return c.request("POST", "/v2/payments/" + id + "/captures",
                                  R"({"amount":{"currency":"EUR","value":")" + std::to_string(amount / 100) + "." +
                                      (amount % 100 < 10 ? "0" : "") + std::to_string(amount % 100) + R"("}})",
                                  {"Idempotency-Key: " + key});
               },
               [](uint16_t port, const std::string& id, int amount, const std::string& key) {
                 Conn c(port);
                 return c.request("POST", "/v2/payments/" + id + "/refunds",
                                  R"({"amount":{"currency":"EUR","value":")" + std::to_string(amount / 100) + "." +
                                      (amount % 100 < 10 ? "0" : "") + std::to_string(amount % 100) + R"("}})",
                                  {"Idempotency-Key: " + key});
               },
               // A held payment is let go by release-authorization (DELETE cancels open ones).
               [](uint16_t port, const std::string& id) {
                 Conn c(port);
                 return c.request("POST", "/v2/payments/" + id + "/release-authorization", "{}",
                                  {"Idempotency-Key: x-" + id});
               },
               600, 422, "The specified amount cannot be refunded"});
  return v;
}

bool ok(const Response& r) { return r.status >= 200 && r.status <= 299; }

class Operations : public ::testing::TestWithParam<Provider> {};

// A partial capture and a partial refund each move money once, however often the client
// re-sends them with their key; a refund beyond what is left is refused with the provider's
// own error and moves nothing; the truth agrees.
TEST_P(Operations, partial_capture_and_refund_move_money_once_per_key_and_never_beyond_the_capture) {
  const Provider& p = GetParam();
  Server sim(options(p.name));
  const uint16_t port = sim.port();
  const std::string order = "op-" + p.name;
  const std::string id = p.hold(port, order);
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(truth(port, order).money_state, "authorized");

  std::string capture;
  const Response c1 = p.capture(port, id, 600, "cap-" + order, &capture);
  ASSERT_TRUE(ok(c1)) << c1.status << " " << c1.body;
  ASSERT_FALSE(capture.empty());
  if (p.name != "square") {  // Square's complete has no key to retry with
    std::string again;
    const Response c2 = p.capture(port, id, 600, "cap-" + order, &again);
    EXPECT_TRUE(ok(c2)) << c2.status << " " << c2.body;
    EXPECT_EQ(again, capture);
  }
  Truth t = truth(port, order);
  EXPECT_EQ(t.money_state, "paid");
  EXPECT_EQ(t.captured, p.captured_partially);

  const Response r1 = p.refund(port, capture, 200, "ref-" + order);
  ASSERT_TRUE(ok(r1)) << r1.status << " " << r1.body;
  const Response r2 = p.refund(port, capture, 200, "ref-" + order);
  ASSERT_TRUE(ok(r2)) << r2.status << " " << r2.body;
  if (p.name == "stripe" || p.name == "mollie") {
    EXPECT_EQ(r2.header("idempotent-replayed"), "true");
  }
  t = truth(port, order);
  EXPECT_EQ(t.refunded, 200);

  // More than is left of the capture.
  const Response beyond = p.refund(port, capture, p.captured_partially, "ref2-" + order);
  EXPECT_EQ(beyond.status, p.refused_status) << beyond.body;
  EXPECT_NE(beyond.body.find(p.refused_code), std::string::npos) << beyond.body;

  t = truth(port, order);
  EXPECT_EQ(t.refunded, 200);
  EXPECT_EQ(t.moves("ref-" + order), 1);
  EXPECT_EQ(t.moves("ref2-" + order), 0);
  if (p.name != "square") {
    EXPECT_EQ(t.moves("cap-" + order), 1);
  }
  EXPECT_EQ(t.moved, 2);  // one capture, one refund
  EXPECT_EQ(duplicate_movements(port), 0);
}

// A cancel releases a held payment; a captured one is not canceled.
TEST_P(Operations, only_an_uncaptured_payment_is_canceled) {
  const Provider& p = GetParam();
  Server sim(options(p.name));
  const uint16_t port = sim.port();
  const std::string held = p.hold(port, "held-" + p.name);
  const Response r = p.cancel(port, held);
  ASSERT_TRUE(ok(r)) << r.status << " " << r.body;
  Truth t = truth(port, "held-" + p.name);
  EXPECT_EQ(t.money_state, "failed");
  ASSERT_EQ(t.kinds, std::vector<std::string>{"cancel"});
  EXPECT_EQ(t.moved, 1);

  const std::string taken = p.hold(port, "taken-" + p.name);
  std::string capture;
  ASSERT_TRUE(ok(p.capture(port, taken, 1000, "cap-taken-" + p.name, &capture)));
  const Response refused = p.cancel(port, taken);
  t = truth(port, "taken-" + p.name);
  EXPECT_EQ(t.money_state, "paid");
  if (p.name == "adyen") {
    // Taken, and refused by notification: recorded, nothing moved.
    EXPECT_EQ(refused.status, 201);
    EXPECT_EQ(t.operations, 2);
  } else {
    EXPECT_GE(refused.status, 400) << refused.body;
    EXPECT_EQ(t.operations, 1);
  }
  EXPECT_EQ(t.moved, 1);
}

INSTANTIATE_TEST_SUITE_P(Providers, Operations, ::testing::ValuesIn(providers()),
                         [](const auto& info) { return info.param.name; });

// The payment's own lookup and the operation's tell what the operations did, each in its
// provider's words.
TEST(OperationsLookups, the_payment_and_its_operations_are_looked_up_as_their_provider_shows_them) {
  const std::vector<Provider> all = providers();
  {
    Server sim(options("checkout_com"));
    const uint16_t port = sim.port();
    const std::string id = all[4].hold(port, "lc");
    std::string capture;
    ASSERT_EQ(all[4].capture(port, id, 600, "cap-lc", &capture).status, 202);
    EXPECT_EQ(Json(get(port, "/payments/" + id).body).str("status"), "Partially Captured");
    ASSERT_EQ(all[4].refund(port, id, 200, "ref-lc").status, 202);
    EXPECT_EQ(Json(get(port, "/payments/" + id).body).str("status"), "Partially Refunded");
    const Response actions = get(port, "/payments/" + id + "/actions");
    ASSERT_EQ(actions.status, 200);
    const Json list(actions.body);
    ASSERT_EQ(cJSON_GetArraySize(list.j), 3);  // the refund, the capture, the authorization
    EXPECT_STREQ(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list.j, 0), "type")->valuestring, "Refund");
  }
  {
    Server sim(options("stripe"));
    const uint16_t port = sim.port();
    const std::string id = all[0].hold(port, "ls");
    std::string capture;
    ASSERT_EQ(all[0].capture(port, id, 600, "cap-ls", &capture).status, 200);
    const Json pi(get(port, "/v1/payment_intents/" + id).body);
    EXPECT_EQ(pi.str("status"), "succeeded");
    EXPECT_EQ(pi.num("amount_received"), 600);
    const Response refund = all[0].refund(port, id, 200, "ref-ls");
    const Json looked(get(port, "/v1/refunds/" + Json(refund.body).str("id")).body);
    EXPECT_EQ(looked.str("payment_intent"), id);
    EXPECT_EQ(looked.num("amount"), 200);
    EXPECT_EQ(get(port, "/v1/refunds/re_999999").status, 404);
    // The capture's operation number is no refund's id.
    const std::string refund_id = Json(refund.body).str("id");
    const std::string capture_number = "re_" + std::to_string(std::stoi(refund_id.substr(3)) - 1);
    EXPECT_EQ(get(port, "/v1/refunds/" + capture_number).status, 404);
  }
  {
    Server sim(options("mollie"));
    const uint16_t port = sim.port();
    const std::string id = all[5].hold(port, "lm");
    std::string capture;
    const Response c = all[5].capture(port, id, 600, "cap-lm", &capture);
    ASSERT_EQ(c.status, 201);
    const std::string cpt = Json(c.body).str("id");
    EXPECT_EQ(cpt.rfind("cpt_", 0), 0u) << cpt;
    const Json looked(get(port, "/v2/payments/" + id + "/captures/" + cpt).body);
    EXPECT_EQ(looked.str("status"), "succeeded");
    EXPECT_EQ(looked.str("paymentId"), id);
    const Response r = all[5].refund(port, id, 200, "ref-lm");
    const std::string re = Json(r.body).str("id");
    EXPECT_EQ(Json(get(port, "/v2/payments/" + id + "/refunds/" + re).body).str("status"), "refunded");
    // A refund looked up under another payment is not found.
    EXPECT_EQ(get(port, "/v2/payments/tr_999999/refunds/" + re).status, 404);
    const Json payment(get(port, "/v2/payments/" + id).body);
    EXPECT_EQ(payment.str("amountCaptured.value"), "6.00");
    EXPECT_EQ(payment.str("amountRefunded.value"), "2.00");
  }
}

// Mollie cancels an open payment with DELETE and lets go of a held one with
// release-authorization; neither crosses over.
TEST(OperationsMollie, delete_cancels_an_open_payment_and_release_authorization_a_held_one) {
  Server sim(options("mollie"));
  const uint16_t port = sim.port();
  Conn c(port);
  const std::string open = Json(c.request("POST", "/v2/payments",
                                          R"({"amount":{"currency":"EUR","value":"10.00"},"metadata":{"order_id":"mo"},"captureMode":"manual"})",
                                          {"Idempotency-Key: k-mo"})
                                    .body)
                               .str("id");
  EXPECT_EQ(c.request("POST", "/v2/payments/" + open + "/release-authorization", "{}").status, 422);
  const Response deleted = c.request("DELETE", "/v2/payments/" + open);
  EXPECT_EQ(deleted.status, 200);
  EXPECT_EQ(Json(deleted.body).str("status"), "canceled");
  EXPECT_EQ(truth(port, "mo").money_state, "failed");

  const std::string held = providers()[5].hold(port, "mh");
  EXPECT_EQ(Conn(port).request("DELETE", "/v2/payments/" + held).status, 422);
  EXPECT_EQ(truth(port, "mh").money_state, "authorized");
}

// PayPal's void under its PayPal-Request-Id (its reference page and SDKs send one): sent again
// with the key, as payretry does after a lost answer, it answers as the first did (204, no body)
// and voids once; the truth holds one cancel under that key.
TEST(OperationsPaypal, a_void_sent_again_under_its_key_answers_as_the_first_and_voids_once) {
  Server sim(options("paypal"));
  const uint16_t port = sim.port();
  const std::string auth = providers()[2].hold(port, "pv");
  ASSERT_FALSE(auth.empty());
  const std::string path = "/v2/payments/authorizations/" + auth + "/void";
  const Response first = Conn(port).request("POST", path, "", {bearer(paypal_token(port)), "PayPal-Request-Id: void-pv"});
  EXPECT_EQ(first.status, 204) << first.body;
  const Response again = Conn(port).request("POST", path, "", {bearer(paypal_token(port)), "PayPal-Request-Id: void-pv"});
  EXPECT_EQ(again.status, 204) << again.body;
  const Truth t = truth(port, "pv");
  EXPECT_EQ(t.money_state, "failed");
  EXPECT_EQ(t.kinds, std::vector<std::string>{"cancel"});
  EXPECT_EQ(t.moves("void-pv"), 1);
  EXPECT_EQ(duplicate_movements(port), 0);
}

// ---- where a provider promises less --------------------------------------------------------------

Response mollie_refund(uint16_t port, const std::string& id, const std::string& key) {
  Conn c(port);
  return c.request("POST", "/v2/payments/" + id + "/refunds", R"({"amount":{"currency":"EUR","value":"1.00"}})",
                   {"Idempotency-Key: " + key});
}

// Mollie keeps a key for one hour: within it the refund is replayed, after it the same request
// is a new refund, and the money moves twice.
TEST(OperationsWindow, mollie_refund_resent_after_its_key_hour_moves_money_twice) {
  Server sim(options("mollie"));
  const uint16_t port = sim.port();
  Conn c(port);
  const std::string id = Json(c.request("POST", "/v2/payments",
                                        R"({"amount":{"currency":"EUR","value":"10.00"},"metadata":{"order_id":"mw"}})",
                                        {"Idempotency-Key: k-mw"})
                                  .body)
                             .str("id");
  ASSERT_EQ(mollie_refund(port, id, "r-mw").status, 201);
  const Response again = mollie_refund(port, id, "r-mw");
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.header("idempotent-replayed"), "true");
  EXPECT_EQ(truth(port, "mw").moves("r-mw"), 1);

  ASSERT_EQ(admin_post(port, "/__admin/clock", R"({"advance_s":3601})").status, 200);
  const Response late = mollie_refund(port, id, "r-mw");
  EXPECT_EQ(late.status, 201);
  EXPECT_EQ(late.header("idempotent-replayed"), "");
  EXPECT_NE(Json(late.body).str("id"), Json(again.body).str("id"));
  const Truth t = truth(port, "mw");
  EXPECT_EQ(t.moves("r-mw"), 2);
  EXPECT_EQ(t.refunded, 200);
  EXPECT_EQ(duplicate_movements(port), 1);
}

Response keyed_refund(const std::string& profile, uint16_t port, const std::string& id, const std::string& key) {
  Conn c(port);
  if (profile == "checkout_com") {
    return c.request("POST", "/payments/" + id + "/refunds", R"({"amount":100})", {"Cko-Idempotency-Key: " + key});
  }
  return c.request("POST", "/v1/refunds", "payment_intent=" + id + "&amount=100",
                   {"Idempotency-Key: " + key, "Content-Type: application/x-www-form-urlencoded"});
}

std::string paid(const std::string& profile, uint16_t port, const std::string& order) {
  Conn c(port);
  if (profile == "checkout_com") {
    return Json(c.request("POST", "/payments", R"({"reference":")" + order + R"(","amount":1000,"currency":"USD"})",
                          {"Cko-Idempotency-Key: k-" + order})
                    .body)
        .str("id");
  }
  return Json(c.request("POST", "/v1/payments", R"({"order_id":")" + order + R"(","amount":1000})", {"Idempotency-Key: k-" + order})
                  .body)
      .str("id");
}

// Checkout.com caches only 2xx answers: a refund that was made and then answered 500 is made
// again by its same-key re-send. Stripe replays what it stored: the re-send moves nothing.
TEST(OperationsAfter5xx, checkout_refund_resent_after_a_500_moves_money_twice_stripe_replays) {
  for (const std::string profile : {"checkout_com", "stripe"}) {
    Server sim(options(profile));
    const uint16_t port = sim.port();
    const std::string id = paid(profile, port, "o5");
    sim.script_key("r5", {"500"});
    const Response first = keyed_refund(profile, port, id, "r5");
    EXPECT_EQ(first.status, 500) << profile;
    const Response again = keyed_refund(profile, port, id, "r5");
    EXPECT_TRUE(ok(again)) << profile << " " << again.body;
    const Truth t = truth(port, "o5");
    EXPECT_EQ(t.moves("r5"), profile == "checkout_com" ? 2 : 1) << profile;
    EXPECT_EQ(t.refunded, profile == "checkout_com" ? 200 : 100) << profile;
  }
}

// Refunds racing on one payment from many connections and two workers: exactly as many go
// through as the capture holds, the others are refused, and the money refunded is the capture.
TEST(OperationsRace, concurrent_refunds_never_sum_to_more_than_was_captured) {
  Options o = options("stripe");
  o.threads = 2;
  Server sim(o);
  const uint16_t port = sim.port();
  const std::string id = paid("stripe", port, "race");
  std::atomic<int> made{0}, refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      const Response r = keyed_refund("stripe", port, id, "race-" + std::to_string(i));
      if (r.status == 200) ++made;
      if (r.status == 400 && r.body.find("amount_too_large") != std::string::npos) ++refused;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(made.load(), 10);
  EXPECT_EQ(refused.load(), 6);
  const Truth t = truth(port, "race");
  EXPECT_EQ(t.refunded, 1000);
  EXPECT_EQ(t.moved, 10);
}

// ---- the chaos switches apply to operations ------------------------------------------------------

// A refund made and then lost on the wire (the connection reset after acting): the money moved
// once; the client's same-key retry gets the stored answer and moves nothing.
TEST(OperationsFaults, a_refund_lost_after_acting_moved_money_once_and_its_retry_replays) {
  Server sim(options("stripe"));
  const uint16_t port = sim.port();
  const std::string id = paid("stripe", port, "lost");
  sim.script_key("r-lost", {"lost_response"});
  const Response lost = keyed_refund("stripe", port, id, "r-lost");
  EXPECT_EQ(lost.status, 0);
  EXPECT_TRUE(lost.error == ECONNRESET || lost.eof) << lost.error;
  EXPECT_EQ(truth(port, "lost").refunded, 100);
  const Response again = keyed_refund("stripe", port, id, "r-lost");
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.header("idempotent-replayed"), "true");
  EXPECT_EQ(truth(port, "lost").moves("r-lost"), 1);
  // And a fault before the provider (503) moves nothing: the retry is the first to act.
  sim.script_key("r-503", {"503"});
  EXPECT_EQ(keyed_refund("stripe", port, id, "r-503").status, 503);
  EXPECT_EQ(truth(port, "lost").refunded, 100);
  EXPECT_EQ(keyed_refund("stripe", port, id, "r-503").status, 200);
  EXPECT_EQ(truth(port, "lost").refunded, 200);
}

// Under a seeded mix of faults, a client that re-sends each refund with its key until it gets a
// 2xx moves each refund's money once at Stripe, which replays what it stored; at Checkout.com,
// which keeps only 2xx answers, the re-sends after its 500s move money again.
TEST(OperationsFaults, same_key_retries_under_a_fault_mix_move_money_once_where_the_provider_replays) {
  for (const std::string profile : {"stripe", "checkout_com"}) {
    Options o = options(profile);
    o.faults = {{"lost_response", 0.15}, {"500", 0.15}, {"503", 0.15}, {"reset_before", 0.1}};
    o.seed = 47;
    Server sim(o);
    const uint16_t port = sim.port();
    int tries = 0;
    for (int i = 0; i < 12; ++i) {
      const std::string order = "mix" + std::to_string(i);
      sim.script(order, {"none"});  // the create goes through; the refunds meet the mix
      const std::string id = paid(profile, port, order);
      ASSERT_FALSE(id.empty()) << profile << " " << order;
      for (int attempt = 0; attempt < 30; ++attempt) {
        ++tries;
        if (ok(keyed_refund(profile, port, id, "r-" + order))) break;
      }
    }
    long refunded = 0, duplicated = 0;
    for (int i = 0; i < 12; ++i) {
      const Truth t = truth(port, "mix" + std::to_string(i));
      refunded += static_cast<long>(t.refunded);
      duplicated += t.moves("r-mix" + std::to_string(i)) > 1;
    }
    EXPECT_GT(tries, 12) << profile << ": the mix dealt no fault";
    if (profile == "stripe") {
      EXPECT_EQ(refunded, 12 * 100);
      EXPECT_EQ(duplicated, 0);
      EXPECT_EQ(duplicate_movements(port), 0);
    } else {
      // The seed deals at least one 500 after acting: that refund was made twice.
      EXPECT_GT(refunded, 12 * 100);
      EXPECT_GT(duplicated, 0);
      EXPECT_EQ(duplicate_movements(port), duplicated);
    }
  }
}

// A `slow` operation is made at once and answered slow_ms later; meanwhile its key is in use.
TEST(OperationsFaults, a_slow_refund_answers_in_use_to_a_same_key_retry_while_held) {
  Server sim(options("stripe"));
  const uint16_t port = sim.port();
  const std::string id = paid("stripe", port, "slow");
  sim.script_key("r-slow", {"slow"});
  Conn first(port);
  ASSERT_TRUE(first.send_raw(Conn::format("POST", "/v1/refunds", "payment_intent=" + id + "&amount=100",
                                          {"Idempotency-Key: r-slow", "Content-Type: application/x-www-form-urlencoded"})));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const Response during = keyed_refund("stripe", port, id, "r-slow");
  EXPECT_EQ(during.status, 409);
  EXPECT_NE(during.body.find("idempotency_key_in_use"), std::string::npos);
  const Response held = first.read(3000);
  EXPECT_EQ(held.status, 200);
  EXPECT_EQ(truth(port, "slow").moves("r-slow"), 1);
}

// ---- WeChat Pay and Alipay: the merchant's own refund numbers --------------------------------------

Response wechat(uint16_t port, const std::string& method, const std::string& target, const std::string& body) {
  Conn c(port);
  return c.request(method, target, body, {wechat_authorization(method, target, body)});
}

std::string wechat_refund_body(const std::string& trade, const std::string& no, int amount) {
  return R"({"out_trade_no":")" + trade + R"(","out_refund_no":")" + no + R"(","amount":{"refund":)" +
         std::to_string(amount) + R"(,"total":1000,"currency":"CNY"}})";
}

TEST(OperationsWechat, out_refund_no_refunds_once_beyond_is_refused_and_a_paid_trade_is_not_closed) {
  Server sim(options("wechatpay_v3"));
  const uint16_t port = sim.port();
  const std::string order_body = R"({"appid":"wxd678efh567hg6787","mchid":"1900000109","description":"t","out_trade_no":"wx1","notify_url":"https://example.com/n","amount":{"total":1000,"currency":"CNY"}})";
  ASSERT_EQ(wechat(port, "POST", "/v3/pay/transactions/native", order_body).status, 200);

  const Response r1 = wechat(port, "POST", "/v3/refund/domestic/refunds", wechat_refund_body("wx1", "R1", 300));
  ASSERT_EQ(r1.status, 200) << r1.body;
  EXPECT_TRUE(wechat_answer_verifies(r1));
  EXPECT_EQ(Json(r1.body).str("status"), "PROCESSING");
  const Response r2 = wechat(port, "POST", "/v3/refund/domestic/refunds", wechat_refund_body("wx1", "R1", 300));
  EXPECT_EQ(r2.status, 200);
  EXPECT_EQ(Json(r2.body).str("refund_id"), Json(r1.body).str("refund_id"));
  EXPECT_EQ(Json(r2.body).str("status"), "SUCCESS");
  const Response other = wechat(port, "POST", "/v3/refund/domestic/refunds", wechat_refund_body("wx1", "R1", 400));
  EXPECT_EQ(other.status, 400);
  EXPECT_EQ(Json(other.body).str("code"), "INVALID_REQUEST");
  const Response beyond = wechat(port, "POST", "/v3/refund/domestic/refunds", wechat_refund_body("wx1", "R2", 800));
  EXPECT_EQ(beyond.status, 400);
  EXPECT_EQ(Json(beyond.body).str("code"), "INVALID_REQUEST");
  const Response looked = wechat(port, "GET", "/v3/refund/domestic/refunds/R1", "");
  EXPECT_EQ(looked.status, 200);
  EXPECT_EQ(Json(looked.body).num("amount.refund"), 300);
  const Response close = wechat(port, "POST", "/v3/pay/transactions/out-trade-no/wx1/close", R"({"mchid":"1900000109"})");
  EXPECT_EQ(close.status, 400);
  EXPECT_EQ(Json(close.body).str("code"), "ORDERPAID");

  const Truth t = truth(port, "wx1");
  EXPECT_EQ(t.refunded, 300);
  EXPECT_EQ(t.moves("R1"), 1);
  EXPECT_EQ(t.moved, 1);
  EXPECT_EQ(duplicate_movements(port), 0);

  // A trade its payer has not paid is closed.
  ASSERT_EQ(admin_post(port, "/__admin/config", R"({"flows":{"wait":1}})").status, 200);
  std::string waiting = order_body;
  waiting.replace(waiting.find("wx1"), 3, "wx2");
  ASSERT_EQ(wechat(port, "POST", "/v3/pay/transactions/native", waiting).status, 200);
  EXPECT_EQ(wechat(port, "POST", "/v3/pay/transactions/out-trade-no/wx2/close", R"({"mchid":"1900000109"})").status, 204);
  EXPECT_EQ(truth(port, "wx2").money_state, "failed");
}

Response alipay(uint16_t port, const std::string& method, const std::string& biz) {
  const GatewayRequest g = alipay_call(method, biz);
  Conn c(port);
  return c.request("POST", g.target, g.body, g.headers);
}

TEST(OperationsAlipay, out_request_no_refunds_once_and_a_repeat_answers_fund_change_n) {
  Server sim(options("alipay"));
  const uint16_t port = sim.port();
  ASSERT_EQ(alipay(port, "alipay.trade.pay",
                   R"({"out_trade_no":"al1","total_amount":"10.00","subject":"t","scene":"bar_code","auth_code":"28763443825664394"})")
                .status,
            200);
  const std::string refund = R"({"out_trade_no":"al1","refund_amount":"3.00","out_request_no":"q1"})";
  const Response r1 = alipay(port, "alipay.trade.refund", refund);
  EXPECT_TRUE(alipay_answer_verifies(r1.body)) << r1.body;
  EXPECT_EQ(Json(r1.body).str("alipay_trade_refund_response.fund_change"), "Y") << r1.body;
  const Response r2 = alipay(port, "alipay.trade.refund", refund);
  EXPECT_EQ(Json(r2.body).str("alipay_trade_refund_response.fund_change"), "N") << r2.body;
  EXPECT_EQ(Json(r2.body).str("alipay_trade_refund_response.refund_fee"), "3.00");
  const Response beyond = alipay(port, "alipay.trade.refund", R"({"out_trade_no":"al1","refund_amount":"8.00","out_request_no":"q2"})");
  EXPECT_EQ(Json(beyond.body).str("alipay_trade_refund_response.sub_code"), "ACQ.REFUND_AMT_NOT_EQUAL_TOTAL") << beyond.body;
  const Response q = alipay(port, "alipay.trade.fastpay.refund.query", R"({"out_trade_no":"al1","out_request_no":"q1"})");
  EXPECT_EQ(Json(q.body).str("alipay_trade_fastpay_refund_query_response.refund_status"), "REFUND_SUCCESS") << q.body;
  const Response closed = alipay(port, "alipay.trade.close", R"({"out_trade_no":"al1"})");
  EXPECT_EQ(Json(closed.body).str("alipay_trade_close_response.sub_code"), "ACQ.TRADE_STATUS_ERROR") << closed.body;

  const Truth t = truth(port, "al1");
  EXPECT_EQ(t.refunded, 300);
  EXPECT_EQ(t.moves("q1"), 1);
  EXPECT_EQ(t.moved, 1);
}

// ---- Adyen: the outcome comes by notification ----------------------------------------------------

// One loopback listener that records every notification's body.
class Hooks {
 public:
  Hooks() {
    fd_ = Sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd_.get(), 16) != 0) {
      throw std::runtime_error("cannot listen");
    }
    socklen_t len = sizeof sa;
    getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~Hooks() {
    stop_ = true;
    ::shutdown(fd_.get(), SHUT_RDWR);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hooks"; }
  // The bodies received so far, once one contains `needle` (or 10 s went by).
  std::vector<std::string> wait_for(const std::string& needle) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, std::chrono::seconds(10), [&] {
      for (const auto& b : bodies_)
        if (b.find(needle) != std::string::npos) return true;
      return false;
    });
    return bodies_;
  }

 private:
  void run() {
    while (!stop_) {
      Sock c(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c.ok()) continue;
      std::string buf;
      char tmp[8192];
      for (;;) {
        const std::size_t end = buf.find("\r\n\r\n");
        if (end != std::string::npos) {
          const std::string head = lower(buf.substr(0, end));
          const std::size_t cl = head.find("content-length:");
          const std::size_t n = cl == std::string::npos ? 0 : std::strtoul(head.c_str() + cl + 15, nullptr, 10);
          if (buf.size() >= end + 4 + n) {
            std::lock_guard<std::mutex> lk(mu_);
            bodies_.push_back(buf.substr(end + 4, n));
            heads_.push_back(head);
            break;
          }
        }
        const ssize_t r = ::recv(c.get(), tmp, sizeof tmp, 0);
        if (r <= 0) break;
        buf.append(tmp, static_cast<std::size_t>(r));
      }
      cv_.notify_all();
      const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\n[accepted]";
      (void)::send(c.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
    }
  }
  Sock fd_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> bodies_;
  std::vector<std::string> heads_;  // lower-cased, one per body

 public:
  // The value of header `name` (lower case) of the i-th notification.
  std::string header(std::size_t i, const std::string& name) {
    std::lock_guard<std::mutex> lk(mu_);
    const std::string& h = heads_.at(i);
    const std::size_t at = h.find("\r\n" + name + ":");
    if (at == std::string::npos) return "";
    std::size_t v = at + 3 + name.size();
    while (v < h.size() && h[v] == ' ') ++v;
    return h.substr(v, h.find("\r\n", v) - v);
  }
};

const char kAdyenHmacKey[] = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";

// Adyen's HMAC over a NotificationRequestItem, computed here with OpenSSL (not the simulator's
// code): base64 HMAC-SHA256 under the hex-decoded key of
// pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success.
std::string adyen_hmac(const cJSON* item) {
  auto s = [&](const char* path) {
    const cJSON* cur = item;
    std::string p = path;
    std::size_t start = 0;
    while (cur) {
      const std::size_t dot = p.find('.', start);
      cur = cJSON_GetObjectItemCaseSensitive(cur, p.substr(start, dot - start).c_str());
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    if (cJSON_IsNumber(cur)) return std::to_string(static_cast<long long>(cur->valuedouble));
    return std::string(cJSON_IsString(cur) ? cur->valuestring : "");
  };
  const std::string data = s("pspReference") + ":" + s("originalReference") + ":" + s("merchantAccountCode") + ":" +
                           s("merchantReference") + ":" + s("amount.value") + ":" + s("amount.currency") + ":" +
                           s("eventCode") + ":" + s("success");
  std::string key;
  const std::string hex = kAdyenHmacKey;
  for (std::size_t i = 0; i < hex.size(); i += 2) key.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  unsigned char mac[32];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), mac, &len);
  return to_base64(std::string(reinterpret_cast<char*>(mac), len));
}

TEST(OperationsAdyen, a_refund_is_notified_with_its_own_psp_reference_and_one_beyond_the_capture_as_refused) {
  Hooks hooks;
  Options o = options("adyen");
  o.webhook_url = hooks.url();
  o.webhook_secret = kAdyenHmacKey;
  Server sim(o);
  const uint16_t port = sim.port();
  const Provider adyen = providers()[1];
  const std::string psp = adyen.hold(port, "ad1");
  std::string capture;
  ASSERT_EQ(adyen.capture(port, psp, 1000, "cap-ad1", &capture).status, 201);
  const Response refund = adyen.refund(port, psp, 300, "ref-ad1");
  ASSERT_EQ(refund.status, 201);
  const Json answer(refund.body);
  EXPECT_EQ(answer.str("status"), "received");
  EXPECT_EQ(answer.str("paymentPspReference"), psp);
  const std::string modification = answer.str("pspReference");
  ASSERT_FALSE(modification.empty());
  EXPECT_NE(modification, psp);
  // merchantAccount is required of a modification: refused, nothing recorded.
  const Response unnamed = Conn(port).request("POST", "/v71/payments/" + psp + "/refunds",
                                              R"({"amount":{"value":100,"currency":"EUR"}})", {"Idempotency-Key: ref0-ad1"});
  EXPECT_EQ(unnamed.status, 422);
  EXPECT_NE(unnamed.body.find("merchantAccount"), std::string::npos) << unnamed.body;
  const Response beyond = adyen.refund(port, psp, 900, "ref2-ad1");
  ASSERT_EQ(beyond.status, 201);
  const std::string refused = Json(beyond.body).str("pspReference");

  bool saw_refund = false, saw_refused = false;
  for (const std::string& body : hooks.wait_for(refused)) {
    Json j(body);
    const cJSON* item = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(j.at("notificationItems"), 0),
                                                         "NotificationRequestItem");
    auto str = [&](const char* n) {
      const cJSON* v = cJSON_GetObjectItemCaseSensitive(item, n);
      return std::string(cJSON_IsString(v) ? v->valuestring : "");
    };
    const cJSON* sig = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(item, "additionalData"), "hmacSignature");
    ASSERT_TRUE(cJSON_IsString(sig));
    EXPECT_EQ(std::string(sig->valuestring), adyen_hmac(item)) << body;
    if (str("eventCode") != "REFUND") continue;
    EXPECT_EQ(str("originalReference"), psp);
    EXPECT_EQ(str("merchantReference"), "ad1");
    if (str("pspReference") == modification) {
      saw_refund = true;
      EXPECT_EQ(str("success"), "true");
      EXPECT_EQ(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(item, "amount"), "value")->valueint, 300);
    }
    if (str("pspReference") == refused) {
      saw_refused = true;
      EXPECT_EQ(str("success"), "false");
      EXPECT_FALSE(str("reason").empty());
    }
  }
  EXPECT_TRUE(saw_refund);
  EXPECT_TRUE(saw_refused);
  const Truth t = truth(port, "ad1");
  EXPECT_EQ(t.refunded, 300);
  EXPECT_EQ(t.moved, 2);  // the capture and the first refund
  EXPECT_EQ(t.operations, 3);
}

// Hex HMAC-SHA256 of `data` under `key`, computed here with OpenSSL (Cko-Signature; Stripe's v1).
std::string hmac_hex(const std::string& key, const std::string& data) {
  unsigned char mac[32];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), mac, &len);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int k = 0; k < len; ++k) {
    hex.push_back(kHex[mac[k] >> 4]);
    hex.push_back(kHex[mac[k] & 15]);
  }
  return hex;
}

// Checkout.com answers an operation 202 "accepted"; its events say what happened, each naming
// the action: a refund's only word is payment_refunded, signed with Cko-Signature.
TEST(OperationsCheckout, a_refund_is_notified_payment_refunded_with_its_action_id) {
  Hooks hooks;
  Options o = options("checkout_com");
  o.webhook_url = hooks.url();
  o.webhook_secret = "cko-signature-key-test";
  Server sim(o);
  const uint16_t port = sim.port();
  const Provider checkout = providers()[4];
  const std::string id = checkout.hold(port, "ck1");
  std::string capture;
  const Response c = checkout.capture(port, id, 1000, "cap-ck1", &capture);
  ASSERT_EQ(c.status, 202);
  const Response r = checkout.refund(port, id, 300, "ref-ck1");
  ASSERT_EQ(r.status, 202);
  const std::string action = Json(r.body).str("action_id");
  ASSERT_FALSE(action.empty());
  const std::vector<std::string> bodies = hooks.wait_for(action);
  bool refunded = false, captured = false;
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    const Json j(bodies[i]);
    EXPECT_EQ(hooks.header(i, "cko-signature"), hmac_hex("cko-signature-key-test", bodies[i])) << bodies[i];
    if (j.str("type") == "payment_refunded") {
      refunded = true;
      EXPECT_EQ(j.str("data.action_id"), action);
      EXPECT_EQ(j.str("data.id"), id);
      EXPECT_EQ(j.num("data.amount"), 300);
      EXPECT_EQ(j.str("data.reference"), "ck1");
    }
    if (j.str("type") == "payment_captured") {
      captured = true;
      EXPECT_EQ(j.str("data.action_id"), Json(c.body).str("action_id"));
    }
  }
  EXPECT_TRUE(refunded);
  EXPECT_TRUE(captured);
}

// An action Checkout.com declines after its 202 (the decline fault, scripted here) moves
// nothing, is listed approved false by GET /payments/{id}/actions, and is notified
// payment_capture_declined, payment_refund_declined or payment_void_declined, naming the action
// and its payment as the profile reads them (data.action_id, data.id).
TEST(OperationsCheckout, an_action_declined_after_its_202_is_listed_not_approved_and_notified_declined) {
  Hooks hooks;
  Options o = options("checkout_com");
  o.webhook_url = hooks.url();
  o.webhook_secret = "cko-signature-key-test";
  Server sim(o);
  const uint16_t port = sim.port();
  const Provider checkout = providers()[4];
  auto decline = [&](const std::string& key) {
    ASSERT_EQ(admin_post(port, "/__admin/script", R"({"key":")" + key + R"(","faults":["decline"]})").status, 200);
  };
  const std::string id = checkout.hold(port, "ck2");
  std::string ignored;
  decline("cap-ck2");
  const Response c1 = checkout.capture(port, id, 1000, "cap-ck2", &ignored);
  ASSERT_EQ(c1.status, 202) << c1.body;
  const std::string declined_capture = Json(c1.body).str("action_id");
  Truth t = truth(port, "ck2");
  EXPECT_EQ(t.money_state, "authorized");
  EXPECT_EQ(t.operations, 1);
  EXPECT_EQ(t.moved, 0);
  const Response c2 = checkout.capture(port, id, 1000, "cap2-ck2", &ignored);
  ASSERT_EQ(c2.status, 202) << c2.body;
  const std::string capture = Json(c2.body).str("action_id");
  decline("ref-ck2");
  const Response r = checkout.refund(port, id, 300, "ref-ck2");
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string declined_refund = Json(r.body).str("action_id");
  // The same key again: the stored 202, nothing more.
  EXPECT_EQ(checkout.refund(port, id, 300, "ref-ck2").body, r.body);
  t = truth(port, "ck2");
  EXPECT_EQ(t.money_state, "paid");
  EXPECT_EQ(t.refunded, 0);
  EXPECT_EQ(t.moved, 1);
  EXPECT_EQ(t.operations, 3);

  const Json actions(get(port, "/payments/" + id + "/actions").body);
  std::map<std::string, bool> approved;
  for (const cJSON* a = actions.j ? actions.j->child : nullptr; a; a = a->next)
    approved[cJSON_GetObjectItemCaseSensitive(a, "id")->valuestring] = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "approved"));
  EXPECT_EQ(approved.at(declined_capture), false);
  EXPECT_EQ(approved.at(capture), true);
  EXPECT_EQ(approved.at(declined_refund), false);

  const std::string held = checkout.hold(port, "ck3");
  decline("x-" + held);
  const Response v = checkout.cancel(port, held);
  ASSERT_EQ(v.status, 202) << v.body;
  const std::string declined_void = Json(v.body).str("action_id");
  EXPECT_EQ(truth(port, "ck3").money_state, "authorized");

  std::map<std::string, std::string> type_of;  // action id -> the type of its event
  const std::vector<std::string> bodies = hooks.wait_for(declined_void);
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    const Json j(bodies[i]);
    EXPECT_EQ(hooks.header(i, "cko-signature"), hmac_hex("cko-signature-key-test", bodies[i])) << bodies[i];
    const std::string action = j.str("data.action_id");
    if (action == declined_capture || action == capture || action == declined_refund || action == declined_void) {
      EXPECT_TRUE(type_of.emplace(action, j.str("type")).second) << "notified twice: " << bodies[i];
      EXPECT_EQ(j.str("data.id"), action == declined_void ? held : id);
    }
    if (action == declined_refund) {
      EXPECT_EQ(j.num("data.amount"), 300);
    }
    if (j.str("type").find("_declined") != std::string::npos) {
      EXPECT_EQ(j.str("data.response_code"), "20006");
    }
  }
  EXPECT_EQ(type_of[declined_capture], "payment_capture_declined");
  EXPECT_EQ(type_of[capture], "payment_captured");
  EXPECT_EQ(type_of[declined_refund], "payment_refund_declined");
  EXPECT_EQ(type_of[declined_void], "payment_void_declined");
}

// Checkout.com keeps each action's request reference: the 202 echoes it and
// GET /payments/{id}/actions lists it with the action ("Your reference for the action"), which
// is how a client whose 202 was lost finds its action by key. One longer than the 50 characters
// the spec allows is refused 422 reference_invalid, acting on nothing; 50 characters that take
// more than 50 bytes are taken (maxLength counts characters).
TEST(OperationsCheckout, each_action_lists_its_request_reference_and_one_beyond_50_characters_is_refused) {
  Server sim(options("checkout_com"));
  const uint16_t port = sim.port();
  const Provider checkout = providers()[4];
  const std::string id = checkout.hold(port, "ck4");
  auto post = [&](const std::string& what, const std::string& body, const std::string& key) {
    Conn c(port);
    return c.request("POST", "/payments/" + id + "/" + what, body, {"Cko-Idempotency-Key: " + key});
  };
  const Response c = post("captures", R"({"amount":1000,"reference":"cap-ck4"})", "cap-ck4");
  ASSERT_EQ(c.status, 202) << c.body;
  EXPECT_EQ(Json(c.body).str("reference"), "cap-ck4");
  std::string e50;  // 50 x U+00E9: 50 characters, 100 bytes
  for (int i = 0; i < 50; ++i) e50.append("\xC3\xA9");
  const Response r = post("refunds", R"({"amount":300,"reference":")" + e50 + R"("})", "ref-ck4");
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(Json(r.body).str("reference"), e50);
  const Response bare = post("refunds", R"({"amount":100})", "ref2-ck4");
  ASSERT_EQ(bare.status, 202) << bare.body;
  EXPECT_EQ(cJSON_GetObjectItemCaseSensitive(Json(bare.body).j, "reference"), nullptr) << bare.body;

  const Response too_long = post("refunds", R"({"amount":100,"reference":")" + std::string(51, 'r') + R"("})", "ref3-ck4");
  EXPECT_EQ(too_long.status, 422) << too_long.body;
  EXPECT_EQ(too_long.body, R"({"error_type":"request_invalid","error_codes":["reference_invalid"]})");
  const Response not_text = post("refunds", R"({"amount":100,"reference":7})", "ref4-ck4");
  EXPECT_EQ(not_text.status, 422) << not_text.body;
  Truth t = truth(port, "ck4");
  EXPECT_EQ(t.operations, 3);
  EXPECT_EQ(t.refunded, 400);
  EXPECT_EQ(t.moves("ref3-ck4"), 0);

  std::map<std::string, std::string> reference;  // action id -> its listed reference ("" none)
  const std::string listed = get(port, "/payments/" + id + "/actions").body;
  const Json actions(listed);
  for (const cJSON* a = actions.j ? actions.j->child : nullptr; a; a = a->next) {
    const cJSON* ref = cJSON_GetObjectItemCaseSensitive(a, "reference");
    reference[cJSON_GetObjectItemCaseSensitive(a, "id")->valuestring] = cJSON_IsString(ref) ? ref->valuestring : "";
  }
  ASSERT_EQ(reference.size(), 4u) << listed;  // two refunds, the capture, the authorization
  EXPECT_EQ(reference.at(Json(c.body).str("action_id")), "cap-ck4");
  EXPECT_EQ(reference.at(Json(r.body).str("action_id")), e50);
  EXPECT_EQ(reference.at(Json(bare.body).str("action_id")), "");
}

// ---- Stripe: refunds are notified refund.* -------------------------------------------------------

// Stripe notifies a refund refund.created, its data.object the Refund and its request the POST
// that made it (request.id, and the key it carried, which the profile reads to find the
// refund's row). One Stripe fails later (the decline fault) is answered pending, reads failed
// once looked up, moves nothing, and is notified refund.updated and refund.failed after its
// refund.created, naming no request: Stripe changed it on its own.
TEST(OperationsStripe, a_refund_is_notified_refund_created_with_its_key_and_a_failed_one_updated_and_failed) {
  Hooks hooks;
  Options o = options("stripe");
  o.webhook_url = hooks.url();
  o.webhook_secret = "whsec_sim_refund_test";
  Server sim(o);
  const uint16_t port = sim.port();
  const Provider stripe = providers()[0];
  const std::string id = stripe.hold(port, "st1");
  std::string ignored;
  ASSERT_EQ(stripe.capture(port, id, 1000, "cap-st1", &ignored).status, 200);
  const Response r1 = stripe.refund(port, id, 300, "ref-st1");
  ASSERT_EQ(r1.status, 200) << r1.body;
  const std::string refund = Json(r1.body).str("id");
  EXPECT_EQ(Json(r1.body).str("status"), "succeeded");
  ASSERT_EQ(admin_post(port, "/__admin/script", R"({"key":"ref2-st1","faults":["decline"]})").status, 200);
  const Response r2 = stripe.refund(port, id, 200, "ref2-st1");
  ASSERT_EQ(r2.status, 200) << r2.body;
  const std::string failed = Json(r2.body).str("id");
  EXPECT_EQ(Json(r2.body).str("status"), "pending");
  EXPECT_EQ(Json(get(port, "/v1/refunds/" + failed).body).str("status"), "failed");
  EXPECT_EQ(Json(get(port, "/v1/refunds/" + refund).body).str("status"), "succeeded");
  // The same key again: Stripe's stored first answer.
  EXPECT_EQ(stripe.refund(port, id, 200, "ref2-st1").body, r2.body);
  const Truth t = truth(port, "st1");
  EXPECT_EQ(t.refunded, 300);
  EXPECT_EQ(t.moves("ref2-st1"), 0);
  EXPECT_EQ(t.operations, 3);
  EXPECT_EQ(t.moved, 2);

  std::vector<std::string> order;  // "type refund-id", as they came
  const std::vector<std::string> bodies = hooks.wait_for("refund.failed");
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    const std::string& body = bodies[i];
    const Json j(body);
    const std::string sig = hooks.header(i, "stripe-signature");
    const std::string ts = sig.substr(2, sig.find(',') - 2);
    EXPECT_EQ(sig, "t=" + ts + ",v1=" + hmac_hex("whsec_sim_refund_test", ts + "." + body));
    if (j.str("type").rfind("refund.", 0) != 0) continue;
    order.push_back(j.str("type") + " " + j.str("data.object.id"));
    EXPECT_EQ(j.str("data.object.object"), "refund");
    EXPECT_EQ(j.str("data.object.payment_intent"), id);
    EXPECT_EQ(j.str("api_version"), "2024-10-28.acacia");
    if (j.str("type") == "refund.created") {
      EXPECT_EQ(j.str("request.id").rfind("req_", 0), 0u) << body;
      EXPECT_EQ(j.str("request.idempotency_key"), j.str("data.object.id") == refund ? "ref-st1" : "ref2-st1");
      EXPECT_EQ(j.str("data.object.status"), j.str("data.object.id") == refund ? "succeeded" : "pending");
      EXPECT_EQ(j.num("data.object.amount"), j.str("data.object.id") == refund ? 300 : 200);
    } else {
      EXPECT_TRUE(cJSON_IsNull(j.at("request.id"))) << body;
      EXPECT_TRUE(cJSON_IsNull(j.at("request.idempotency_key"))) << body;
      EXPECT_EQ(j.str("data.object.status"), "failed");
      EXPECT_FALSE(j.str("data.object.failure_reason").empty());
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{"refund.created " + refund, "refund.created " + failed,
                                             "refund.updated " + failed, "refund.failed " + failed}));
}

}  // namespace
