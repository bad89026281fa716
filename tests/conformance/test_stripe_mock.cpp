// The stripe profile against stripe-mock: Stripe's own mock server, built
// from Stripe's OpenAPI document, which checks every request the way the API
// does (content type, authentication, the parameters each path takes) and
// answers with Stripe's objects. Nothing here is payretry's own simulator:
// run_stripe_mock.sh starts the mock and sets STRIPE_MOCK_URL.
//
// Where a test needs an answer the mock never gives (a lost response, a 500
// that names its PaymentIntent), a raw socket stands in for the first
// attempt and the mock answers everything after it.
#include <cJSON.h>
#include <gtest/gtest.h>
#include <payretry/payretry.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "raw_server.hpp"

namespace payretry_test {
namespace {

struct ClientFree {
  void operator()(pay_client* c) const { pay_client_free(c); }
};
struct ResultFree {
  void operator()(pay_result* r) const { pay_result_free(r); }
};
struct JsonFree {
  void operator()(cJSON* j) const { cJSON_Delete(j); }
};
using Client = std::unique_ptr<pay_client, ClientFree>;
using Result = std::unique_ptr<pay_result, ResultFree>;
using Json = std::unique_ptr<cJSON, JsonFree>;

const cJSON* member(const cJSON* o, const char* name) { return o ? cJSON_GetObjectItemCaseSensitive(o, name) : nullptr; }
std::string text(const cJSON* o, const char* name) {
  const cJSON* v = member(o, name);
  return cJSON_IsString(v) ? v->valuestring : "";
}

// A PaymentIntent as Stripe's docs create one: nested metadata, a list, text
// that must be escaped.
const std::string kDocument =
    R"({"amount":2000,"currency":"usd","payment_method_types":["card"],"description":"Caf\u00e9 & bar = 100%",)"
    R"("metadata":{"order_id":"ORDER","note":"a+b"}})";
std::string document(const std::string& order) {
  std::string d = kDocument;
  d.replace(d.find("ORDER"), 5, order);
  return d;
}
// The same document as Stripe's SDKs encode it (stripe-python's _api_encode
// then urlencode): what must reach the wire.
std::string form(const std::string& order) {
  return "amount=2000&currency=usd&payment_method_types%5B0%5D=card&description=Caf%C3%A9+%26+bar+%3D+100%25&"
         "metadata%5Border_id%5D=" + order + "&metadata%5Bnote%5D=a%2Bb";
}

class StripeMock : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* url = std::getenv("STRIPE_MOCK_URL");
    ASSERT_TRUE(url && *url) << "STRIPE_MOCK_URL is not set: run through run_stripe_mock.sh";
    mock_ = url;
    char tmpl[] = "/tmp/payretry-stripe-mock-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const char* f : {"/l.db", "/l.db-wal", "/l.db-shm", "/l.db-journal"}) std::remove((dir_ + f).c_str());
    rmdir(dir_.c_str());
  }

  // A client of `base_url` with the stripe profile (or `provider`, a profile
  // in JSON), a test-mode key and this test's SQLite ledger.
  // `proxy`: a server every request goes through instead (it answers for
  // the mock: loses the answer, says 500), so that the payment is made by a
  // client of the mock's own scope (its base URL) and later settled there.
  Client client(const std::string& base_url, const std::string& provider = R"("stripe")",
                const std::string& retry = R"({"max_attempts":2,"deadline_ms":10000,"backoff_base_ms":10})",
                const std::string& proxy = "") {
    const std::string cfg = R"({"provider":)" + provider + R"(,"base_url":")" + base_url +
                            R"(","auth":{"bearer":"sk_test_123"},"ledger":"sqlite://)" + dir_ + R"(/l.db","retry":)" +
                            retry + (proxy.empty() ? "" : R"(,"proxy":")" + proxy + "\"") + "}";
    pay_client* c = nullptr;
    const int rc = pay_client_new(&c, cfg.c_str(), nullptr);
    EXPECT_EQ(rc, PAY_OK) << (pay_error_last() ? pay_error_last()->message : "") << "\n" << cfg;
    return Client(c);
  }
  Result submit(pay_client* c, const std::string& order, const std::string& body, int* rc_out = nullptr) {
    pay_result* r = nullptr;
    const int rc = pay_submit(&r, c, order.c_str(), body.data(), body.size(), nullptr);
    if (rc_out) *rc_out = rc;
    else EXPECT_EQ(rc, PAY_OK) << (pay_error_last() ? pay_error_last()->message : "");
    return Result(r);
  }
  Json ledger_entry(pay_client* c, const std::string& order) {
    pay_buf b{};
    EXPECT_EQ(pay_ledger_get(&b, c, order.c_str()), PAY_OK);
    Json j(cJSON_Parse(b.ptr ? b.ptr : ""));
    pay_buf_dispose(&b);
    return j;
  }
  static std::string body_of(const pay_result* r) {
    size_t len = 0;
    const char* b = pay_result_body(r, &len);
    return b ? std::string(b, len) : "";
  }

  std::string mock_, dir_;
};

TEST_F(StripeMock, creates_a_payment_intent_from_a_json_document) {
  Client c = client(mock_);
  ASSERT_TRUE(c);
  Result r = submit(c.get(), "sm-create-1", document("sm-create-1"));
  ASSERT_TRUE(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_http_status(r.get()), 200);
  // Stripe's validator decoded every field: the PaymentIntent it made
  // carries the amount, currency and description it was sent.
  Json pi(cJSON_Parse(body_of(r.get()).c_str()));
  ASSERT_TRUE(pi) << body_of(r.get());
  EXPECT_EQ(text(pi.get(), "object"), "payment_intent");
  EXPECT_EQ(member(pi.get(), "amount") ? member(pi.get(), "amount")->valuedouble : 0, 2000);
  EXPECT_EQ(text(pi.get(), "currency"), "usd");
  EXPECT_EQ(text(pi.get(), "description"), "Caf\xC3\xA9 & bar = 100%");
  const std::string id = pay_result_provider_payment_id(r.get()) ? pay_result_provider_payment_id(r.get()) : "";
  EXPECT_EQ(id.rfind("pi_", 0), 0u) << id;
  EXPECT_EQ(id, text(pi.get(), "id"));
}

TEST_F(StripeMock, the_readme_examples_create_payment_intents) {
  // The bodies of the README's C / Rust and Python examples (the latter as
  // json.dumps writes it), with the README's stripe config. (The README
  // submits both as order-1042; the metadata names the order each is
  // submitted as here, which submit checks: profile stripe's notifications
  // name the order by it. tests/docs runs the README's programs themselves.)
  Client c = client(mock_);
  ASSERT_TRUE(c);
  const std::pair<const char*, const char*> examples[] = {
      {"order-1042-c", R"({"amount":1000,"currency":"eur","metadata":{"order_id":"order-1042-c"}})"},
      {"order-1042-py", R"({"amount": 1000, "currency": "eur", "metadata": {"order_id": "order-1042-py"}})"},
  };
  for (const auto& [order, body] : examples) {
    Result r = submit(c.get(), order, body);
    ASSERT_TRUE(r);
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << order << ": " << body_of(r.get());
    Json pi(cJSON_Parse(body_of(r.get()).c_str()));
    EXPECT_EQ(text(pi.get(), "currency"), "eur") << order;
  }
}

TEST_F(StripeMock, a_json_body_is_what_stripe_refuses) {
  // The control: the same profile sending JSON (as payretry did before form
  // encoding) is refused before anything is created.
  Client c = client(mock_, R"({"name":"stripe_json","extends":"stripe","encoding":"json"})");
  ASSERT_TRUE(c);
  Result r = submit(c.get(), "sm-json-1", R"({"amount":2000,"currency":"usd","metadata":{"order_id":"sm-json-1"}})");
  ASSERT_TRUE(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED);
  EXPECT_EQ(pay_result_http_status(r.get()), 400);
  EXPECT_NE(body_of(r.get()).find("Expected: `application/x-www-form-urlencoded`. Was: `application/json`"),
            std::string::npos)
      << body_of(r.get());
}

TEST_F(StripeMock, a_parameter_stripe_does_not_know_is_refused) {
  // The mock checks parameters against the OpenAPI document: an order id at
  // the top level (where payretry's own simulator takes it) is no Stripe
  // parameter; it belongs in metadata.
  Client c = client(mock_);
  ASSERT_TRUE(c);
  Result r = submit(c.get(), "sm-param-1", R"({"amount":2000,"currency":"usd","order_id":"sm-param-1"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED);
  EXPECT_EQ(pay_result_http_status(r.get()), 400);
  EXPECT_NE(body_of(r.get()).find("invalid_request_error"), std::string::npos) << body_of(r.get());
}

int body_for(pay_body* out, const char* order_id, void*) {
  const std::string d = document(order_id);
  return pay_body_set(out, d.data(), d.size());
}

TEST_F(StripeMock, a_lost_answer_is_re_sent_with_the_same_key_and_bytes) {
  // The first attempt is read, then the connection drops: the payment may
  // exist. Stripe replays every answer for a key (all_answers), so reconcile
  // re-sends it, with the same key and bytes, and the mock creates it.
  RawServer lost([](const RawRequest&) { return std::string(); });
  const std::string order = "sm-lost-1";
  std::string key;
  {
    Client first = client(mock_, R"("stripe")", R"({"max_attempts":1,"deadline_ms":5000})", lost.url());
    ASSERT_TRUE(first);
    Result r = submit(first.get(), order, document(order));
    ASSERT_TRUE(r);
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
    EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_MAYBE_PROCESSED);
    key = pay_result_idempotency_key(r.get());
  }
  const auto seen = lost.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].head.find("Content-Type: application/x-www-form-urlencoded"), std::string::npos) << seen[0].head;
  EXPECT_NE(seen[0].head.find("Idempotency-Key: " + key), std::string::npos) << seen[0].head;
  EXPECT_EQ(seen[0].body, form(order));

  Client second = client(mock_);
  ASSERT_TRUE(second);
  pay_reconcile_options o = PAY_RECONCILE_OPTIONS_INIT;
  o.body_for = body_for;
  pay_buf report{};
  ASSERT_EQ(pay_reconcile(&report, second.get(), &o), PAY_OK);
  Json rep(cJSON_Parse(report.ptr));
  pay_buf_dispose(&report);
  ASSERT_TRUE(rep);
  EXPECT_EQ(member(rep.get(), "SUCCEEDED") ? member(rep.get(), "SUCCEEDED")->valueint : -1, 1);
  Json entry = ledger_entry(second.get(), order);
  const cJSON* payment = member(entry.get(), "payment");
  EXPECT_EQ(text(payment, "state"), "SUCCEEDED");
  EXPECT_EQ(text(payment, "idempotency_key"), key);
  EXPECT_EQ(text(payment, "provider_payment_id").rfind("pi_", 0), 0u);
  EXPECT_EQ(cJSON_GetArraySize(member(entry.get(), "attempts")), 2);
}

TEST_F(StripeMock, an_unknown_payment_with_a_known_id_is_read_by_id) {
  // A 500 that Stripe marks not to be retried names the PaymentIntent it is
  // about: the payment is UNKNOWN, but its id is known, and a query reads it
  // with GET /v1/payment_intents/{id} from the mock.
  RawServer failing([](const RawRequest&) {
    return http(500, R"({"error":{"type":"api_error","payment_intent":{"id":"pi_conformance1","object":"payment_intent"}}})",
                "Stripe-Should-Retry: false\r\n");
  });
  const std::string order = "sm-read-1";
  {
    Client first = client(mock_, R"("stripe")", R"({"max_attempts":2,"deadline_ms":10000,"backoff_base_ms":10})",
                          failing.url());
    ASSERT_TRUE(first);
    Result r = submit(first.get(), order, document(order));
    ASSERT_TRUE(r);
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
    EXPECT_STREQ(pay_result_provider_payment_id(r.get()), "pi_conformance1");
  }
  Client second = client(mock_);
  ASSERT_TRUE(second);
  pay_result* raw = nullptr;
  ASSERT_EQ(pay_query(&raw, second.get(), order.c_str()), PAY_OK);
  Result q(raw);
  // The mock's PaymentIntent reads requires_payment_method, which every new
  // one has and a declined one goes back to: no proof either way, so the
  // payment stays UNKNOWN, with the answer recorded.
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(q.get());
  EXPECT_STREQ(pay_result_provider_status(q.get()), "requires_payment_method");
  Json entry = ledger_entry(second.get(), order);
  const cJSON* attempts = member(entry.get(), "attempts");
  ASSERT_EQ(cJSON_GetArraySize(attempts), 2) << cJSON_PrintUnformatted(entry.get());
  const cJSON* lookup = cJSON_GetArrayItem(attempts, 1);
  EXPECT_EQ(text(lookup, "kind"), "lookup");
  EXPECT_EQ(member(lookup, "http_status") ? member(lookup, "http_status")->valueint : 0, 200);
  EXPECT_EQ(text(lookup, "verdict"), "found");
}

// ---- Operations: capture, partial refund, cancel ---------------------------
//
// stripe-mock keeps no state: every PaymentIntent it makes reads
// requires_payment_method. A capture needs a hold and a refund a paid
// payment in payretry's ledger (its guard refuses anything else, nothing
// sent), so those payments are made through a stand-in that answers the
// create as Stripe would (requires_capture, or succeeded) under a client of
// the mock's own scope; the operations themselves go to the mock, which
// validates each against Stripe's OpenAPI document (the path, the form
// parameters it takes, the content type, the key) and answers 200, or 400
// naming what it refused.

// A stand-in for Stripe's create: the PaymentIntent `id` in `status`.
RawServer* made_as(const std::string& id, const std::string& status) {
  return new RawServer([id, status](const RawRequest&) {
    return http(200, R"({"id":")" + id + R"(","object":"payment_intent","amount":1000,"amount_capturable":)" +
                         (status == "requires_capture" ? "1000" : "0") + R"(,"amount_received":)" +
                         (status == "succeeded" ? "1000" : "0") + R"(,"currency":"usd","capture_method":")" +
                         (status == "requires_capture" ? "manual" : "automatic") + R"(","status":")" + status +
                         R"(","metadata":{}})",
                "Content-Type: application/json\r\n");
  });
}

struct OperationSent {
  int rc = 0;
  Result result;
  Json answer;
};

OperationSent operate(pay_client* c, const std::string& order, int kind, const char* ref, int64_t amount) {
  pay_operation_options o = PAY_OPERATION_OPTIONS_INIT;
  o.ref = ref;
  o.amount = amount;
  pay_result* r = nullptr;
  OperationSent out;
  out.rc = pay_submit_operation(&r, c, order.c_str(), kind, &o);
  out.result.reset(r);
  if (r) {
    size_t len = 0;
    const char* b = pay_result_body(r, &len);
    out.answer.reset(cJSON_ParseWithLength(b ? b : "", b ? len : 0));
  }
  return out;
}

std::string error_of(const OperationSent& s) {
  return s.result ? pay_result_json(s.result.get()) : (pay_error_last() ? pay_error_last()->message : "");
}

TEST_F(StripeMock, a_hold_is_captured_in_part) {
  const std::string order = "sm-op-capture-1", pi = "pi_smcapture1";
  {
    std::unique_ptr<RawServer> create(made_as(pi, "requires_capture"));
    Client maker = client(mock_, R"("stripe")", R"({"max_attempts":1,"deadline_ms":5000})", create->url());
    ASSERT_TRUE(maker);
    Result r = submit(maker.get(), order, document(order));
    ASSERT_EQ(pay_result_money_state(r.get()), PAY_MONEY_AUTHORIZED) << pay_result_json(r.get());
  }
  Client c = client(mock_);
  ASSERT_TRUE(c);
  OperationSent s = operate(c.get(), order, PAY_OPERATION_CAPTURE, "c1", 600);
  ASSERT_EQ(s.rc, PAY_OK) << error_of(s);
  // POST /v1/payment_intents/{id}/capture with amount_to_capture=600: the mock
  // took every parameter (a 400 names one it does not know) and answers the
  // PaymentIntent of the path.
  EXPECT_EQ(pay_result_http_status(s.result.get()), 200) << error_of(s);
  EXPECT_EQ(text(s.answer.get(), "object"), "payment_intent") << error_of(s);
  EXPECT_EQ(text(s.answer.get(), "id"), pi);
}

TEST_F(StripeMock, a_paid_payment_is_refunded_in_part) {
  const std::string order = "sm-op-refund-1", pi = "pi_smrefund1";
  {
    std::unique_ptr<RawServer> create(made_as(pi, "succeeded"));
    Client maker = client(mock_, R"("stripe")", R"({"max_attempts":1,"deadline_ms":5000})", create->url());
    ASSERT_TRUE(maker);
    Result r = submit(maker.get(), order, document(order));
    ASSERT_EQ(pay_result_money_state(r.get()), PAY_MONEY_PAID) << pay_result_json(r.get());
  }
  Client c = client(mock_);
  ASSERT_TRUE(c);
  OperationSent s = operate(c.get(), order, PAY_OPERATION_REFUND, "r1", 200);
  ASSERT_EQ(s.rc, PAY_OK) << error_of(s);
  // POST /v1/refunds, payment_intent=pi_...&amount=200: the mock's Refund
  // reflects both parameters it validated.
  EXPECT_EQ(pay_result_http_status(s.result.get()), 200) << error_of(s);
  EXPECT_EQ(text(s.answer.get(), "object"), "refund") << error_of(s);
  EXPECT_EQ(text(s.answer.get(), "payment_intent"), pi);
  EXPECT_EQ(member(s.answer.get(), "amount") ? member(s.answer.get(), "amount")->valueint : 0, 200);
  EXPECT_EQ(pay_result_outcome(s.result.get()), PAY_OUTCOME_SUCCEEDED) << error_of(s);
}

TEST_F(StripeMock, a_payment_is_canceled) {
  // The mock's own PaymentIntent (requires_payment_method: awaiting its
  // customer, which a cancel may end).
  const std::string order = "sm-op-cancel-1";
  Client c = client(mock_);
  ASSERT_TRUE(c);
  Result made = submit(c.get(), order, document(order));
  ASSERT_TRUE(made);
  const std::string pi = pay_result_provider_payment_id(made.get()) ? pay_result_provider_payment_id(made.get()) : "";
  ASSERT_EQ(pi.rfind("pi_", 0), 0u) << pay_result_json(made.get());
  OperationSent s = operate(c.get(), order, PAY_OPERATION_CANCEL, "x1", 0);
  ASSERT_EQ(s.rc, PAY_OK) << error_of(s);
  // POST /v1/payment_intents/{id}/cancel with no parameters: the mock wants
  // the form content type even then, and answers the PaymentIntent.
  EXPECT_EQ(pay_result_http_status(s.result.get()), 200) << error_of(s);
  EXPECT_EQ(text(s.answer.get(), "object"), "payment_intent") << error_of(s);
  EXPECT_EQ(text(s.answer.get(), "id"), pi);
}

TEST_F(StripeMock, an_operation_parameter_stripe_does_not_know_is_refused) {
  // The check above can fail: a copy of the stripe profile whose refund
  // writes its amount under a name Stripe's refund does not take. The mock
  // refuses the request (400), which the built-in profile's was not.
  const std::string order = "sm-op-refund-bad-1", pi = "pi_smrefundbad1";
  const std::string planted =
      R"({"extends":"stripe","name":"stripe_planted","operations":{"refund":{"amount":{"path":"$.amount_to_refund","format":"minor"}}}})";
  {
    std::unique_ptr<RawServer> create(made_as(pi, "succeeded"));
    Client maker = client(mock_, planted, R"({"max_attempts":1,"deadline_ms":5000})", create->url());
    ASSERT_TRUE(maker);
    Result r = submit(maker.get(), order, document(order));
    ASSERT_EQ(pay_result_money_state(r.get()), PAY_MONEY_PAID) << pay_result_json(r.get());
  }
  Client c = client(mock_, planted);
  ASSERT_TRUE(c);
  OperationSent s = operate(c.get(), order, PAY_OPERATION_REFUND, "r1", 200);
  ASSERT_EQ(s.rc, PAY_OK) << error_of(s);
  EXPECT_EQ(pay_result_http_status(s.result.get()), 400) << error_of(s);
  const cJSON* err = member(s.answer.get(), "error");
  EXPECT_EQ(text(err, "type"), "invalid_request_error") << error_of(s);
  EXPECT_NE(pay_result_outcome(s.result.get()), PAY_OUTCOME_SUCCEEDED);
}

}  // namespace
}  // namespace payretry_test
