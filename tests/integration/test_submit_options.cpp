// pay_submit_options version 2: a submission's own headers and its W3C
// traceparent go on every attempt of that payment, in both drivers; what
// payretry or the config sets cannot be overridden, and a refused option
// sends nothing and writes nothing; a version-1 caller still works.
#include <cJSON.h>
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "raw_server.hpp"
#include "sim_fixture.hpp"

namespace payretry_test {
namespace {

const char kTrace[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

std::string http(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

// A provider that fails the first attempt of every payment with a 503, then
// charges: every payment is sent twice.
std::string flaky(const RawRequest& q) {
  static std::mutex mu;
  static std::vector<std::string> seen;
  std::lock_guard<std::mutex> l(mu);
  const std::string key_line = q.head.substr(q.head.find("Idempotency-Key:"));
  const std::string key = key_line.substr(0, key_line.find("\r\n"));
  for (const std::string& k : seen)
    if (k == key) return http(200, R"({"id":"pi_1","object":"payment_intent","status":"succeeded"})");
  seen.push_back(key);
  return http(503, R"({"error":{"type":"api_error"}})");
}

bool has_header(const RawRequest& q, const std::string& line) {
  return q.head.find("\r\n" + line + "\r\n") != std::string::npos;
}

struct Logs {
  std::mutex mu;
  std::vector<std::string> lines;
  static void cb(int, const char* line, void* self) {
    auto* l = static_cast<Logs*>(self);
    std::lock_guard<std::mutex> g(l->mu);
    l->lines.emplace_back(line);
  }
};

class SubmitOptions : public SimTest {
 protected:
  ClientPtr client_at(const std::string& url, Logs* logs, const std::string& extra = "") {
    std::string c = config("stripe", R"("attempt_timeout_ms":2000)", extra);
    const std::string from = R"("base_url":")" + base_url() + "\"";
    c.replace(c.find(from), from.size(), R"("base_url":")" + url + "\"");
    pay_client_options o;
    pay_client_options_init(&o, PAY_CLIENT_OPTIONS_VERSION);
    o.log_cb = &Logs::cb;
    o.log_payload = logs;
    pay_client* out = nullptr;
    EXPECT_EQ(pay_client_new(&out, c.c_str(), &o), PAY_OK) << pay_error_last()->message;
    return ClientPtr(out);
  }
};

TEST_F(SubmitOptions, HeadersAndTraceparentGoOnEveryAttemptAndTheTraceInEveryLogLine) {
  RawServer server(&flaky);
  Logs logs;
  auto c = client_at(server.url(), &logs);
  const pay_header headers[] = {{"Stripe-Account", "acct_1Abc"}, {"X-Tenant", "t-7"}};
  pay_submit_options o;
  ASSERT_EQ(pay_submit_options_init(&o, PAY_SUBMIT_OPTIONS_VERSION), PAY_OK);
  o.headers = headers;
  o.header_count = 2;
  o.traceparent = kTrace;

  // The caller's thread.
  const std::string body = body_for("so-1");
  pay_result* r = nullptr;
  ASSERT_EQ(pay_submit(&r, c.get(), "so-1", body.data(), body.size(), &o), PAY_OK) << pay_error_last()->message;
  ResultPtr blocking(r);
  EXPECT_EQ(pay_result_outcome(r), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r);
  EXPECT_EQ(pay_result_attempts(r), 2);

  // The engine thread.
  const std::string body2 = body_for("so-2");
  pay_pending* p = nullptr;
  ASSERT_EQ(pay_submit_start(&p, c.get(), "so-2", body2.data(), body2.size(), &o), PAY_OK) << pay_error_last()->message;
  ASSERT_EQ(pay_pending_wait(&r, p, -1), PAY_OK) << pay_error_last()->message;
  pay_pending_free(p);
  ResultPtr async(r);
  EXPECT_EQ(pay_result_outcome(r), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r);

  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 4u);
  for (const RawRequest& q : seen) {
    EXPECT_TRUE(has_header(q, "Stripe-Account: acct_1Abc")) << q.head;
    EXPECT_TRUE(has_header(q, "X-Tenant: t-7")) << q.head;
    EXPECT_TRUE(has_header(q, std::string("traceparent: ") + kTrace)) << q.head;
  }
  std::lock_guard<std::mutex> l(logs.mu);
  int attempt_lines = 0, outcome_lines = 0;
  for (const std::string& line : logs.lines) {
    const bool attempt = line.find(R"("event":"attempt")") != std::string::npos;
    const bool outcome = line.find(R"("event":"outcome")") != std::string::npos;
    if (!attempt && !outcome) continue;
    attempt_lines += attempt;
    outcome_lines += outcome;
    EXPECT_NE(line.find(std::string(R"("traceparent":")") + kTrace + "\""), std::string::npos) << line;
  }
  EXPECT_EQ(attempt_lines, 4);
  EXPECT_EQ(outcome_lines, 2);
}

TEST_F(SubmitOptions, AHeaderPayretryOrTheConfigSetsOrABadTraceIsRefusedAndNothingIsSentOrWritten) {
  RawServer server(&flaky);
  Logs logs;
  auto c = client_at(server.url(), &logs, R"("headers":{"X-Client":"shop-1"})");
  const std::string body = body_for("so-bad");
  struct Case {
    pay_header header;
    const char* trace;
    const char* why;
  };
  const Case cases[] = {
      {{"Idempotency-Key", "other"}, nullptr, "set by payretry"},
      {{"content-type", "text/plain"}, nullptr, "set by payretry"},
      {{"Authorization", "Bearer sk_other"}, nullptr, "set by payretry"},
      {{"User-Agent", "mine/1.0"}, nullptr, "set by payretry"},
      {{"Wechatpay-Serial", "ABC"}, nullptr, "set by payretry"},
      {{"traceparent", kTrace}, nullptr, "traceparent option"},
      {{"X-Client", "shop-2"}, nullptr, "config"},
      {{"Bad Name", "v"}, nullptr, "header"},
      {{"X-Split", "a\r\nInjected: 1"}, nullptr, "X-Split"},
      {{"X-Ok", "v"}, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "traceparent"},
      {{"X-Ok", "v"}, "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "trace id"},
      {{"X-Ok", "v"}, "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "version"},
      {{"X-Ok", "v"}, "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "trace id"},
  };
  for (const Case& k : cases) {
    pay_submit_options o;
    ASSERT_EQ(pay_submit_options_init(&o, PAY_SUBMIT_OPTIONS_VERSION), PAY_OK);
    o.headers = &k.header;
    o.header_count = 1;
    o.traceparent = k.trace;
    pay_result* r = nullptr;
    EXPECT_EQ(pay_submit(&r, c.get(), "so-bad", body.data(), body.size(), &o), PAY_EINVALID) << k.header.name;
    EXPECT_EQ(r, nullptr);
    EXPECT_NE(std::string(pay_error_last()->message).find(k.why), std::string::npos)
        << k.header.name << ": " << pay_error_last()->message;
    pay_pending* p = nullptr;
    EXPECT_EQ(pay_submit_start(&p, c.get(), "so-bad", body.data(), body.size(), &o), PAY_OK);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(pay_pending_wait(&r, p, -1), PAY_EINVALID) << k.header.name;
    pay_pending_free(p);
  }
  // NULL where a header should be, and more than 64.
  pay_submit_options o;
  ASSERT_EQ(pay_submit_options_init(&o, PAY_SUBMIT_OPTIONS_VERSION), PAY_OK);
  o.header_count = 1;
  pay_result* r = nullptr;
  EXPECT_EQ(pay_submit(&r, c.get(), "so-bad", body.data(), body.size(), &o), PAY_EINVALID);
  std::vector<std::string> names;
  std::vector<pay_header> many;
  for (int i = 0; i < 65; ++i) names.push_back("X-H" + std::to_string(i));
  for (const std::string& n : names) many.push_back({n.c_str(), "v"});
  o.headers = many.data();
  o.header_count = many.size();
  EXPECT_EQ(pay_submit(&r, c.get(), "so-bad", body.data(), body.size(), &o), PAY_EINVALID);
  EXPECT_NE(std::string(pay_error_last()->message).find("at most 64"), std::string::npos) << pay_error_last()->message;

  EXPECT_TRUE(server.requests().empty());
  pay_buf row{};
  EXPECT_EQ(pay_ledger_get(&row, c.get(), "so-bad"), PAY_ENOTFOUND);
  pay_buf_dispose(&row);
}

TEST_F(SubmitOptions, AVersionOneCallerIsReadAsVersionOne) {
  RawServer server(&flaky);
  Logs logs;
  auto c = client_at(server.url(), &logs);
  // A version-1 caller's struct ends after deadline_ms: init must not write
  // past it, and nothing after it may be read.
  pay_submit_options o;
  const pay_header* sentinel = reinterpret_cast<const pay_header*>(0x1);
  o.headers = sentinel;
  o.header_count = 99;
  o.traceparent = "garbage";
  ASSERT_EQ(pay_submit_options_init(&o, 1), PAY_OK);
  EXPECT_EQ(o.headers, sentinel);
  EXPECT_EQ(o.header_count, 99u);
  o.idempotency_key = "v1-caller-key-0001";
  const std::string body = body_for("so-v1");
  pay_result* r = nullptr;
  ASSERT_EQ(pay_submit(&r, c.get(), "so-v1", body.data(), body.size(), &o), PAY_OK) << pay_error_last()->message;
  ResultPtr res(r);
  EXPECT_EQ(pay_result_outcome(r), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r);
  EXPECT_STREQ(pay_result_idempotency_key(r), "v1-caller-key-0001");
  for (const RawRequest& q : server.requests()) EXPECT_EQ(q.head.find("traceparent"), std::string::npos) << q.head;
  o.version = 3;
  EXPECT_EQ(pay_submit(&r, c.get(), "so-v3", body.data(), body.size(), &o), PAY_EVERSION);
  EXPECT_EQ(pay_submit_options_init(&o, 3), PAY_EVERSION);
}

// A Stripe-Account scopes the key and the charge to a connected account: the
// same key sent without it would be a new charge on the platform account. So
// the submission's headers are part of its fingerprint and kept with its
// ledger row: a re-submission without them (or with another account) sends
// nothing, and reconcile re-sends with exactly them, under the same key.
int give_body(pay_body* out, const char* order_id, void*) {
  const std::string b = R"({"order_id":")" + std::string(order_id) + R"(","amount":1000,"currency":"eur"})";
  return pay_body_set(out, b.data(), b.size());
}

TEST_F(SubmitOptions, ASubmissionsHeadersAreInItsFingerprintAndEveryReSendCarriesThem) {
  auto c = client(config("stripe", R"("max_attempts":2)", R"("ledger":"memory:")"));
  sim_->script("so-acct", {"lost_response", "lost_response"});
  const pay_header acct[] = {{"Stripe-Account", "acct_1Connected"}};
  pay_submit_options o;
  ASSERT_EQ(pay_submit_options_init(&o, PAY_SUBMIT_OPTIONS_VERSION), PAY_OK);
  o.headers = acct;
  o.header_count = 1;
  const std::string body = body_for("so-acct");
  pay_result* r = nullptr;
  ASSERT_EQ(pay_submit(&r, c.get(), "so-acct", body.data(), body.size(), &o), PAY_OK) << pay_error_last()->message;
  ResultPtr first(r);
  ASSERT_EQ(pay_result_outcome(r), PAY_OUTCOME_UNKNOWN) << pay_result_json(r);
  const long sent = sim_->requests();

  // A re-submission without the header, or with another account: a mismatch, nothing sent.
  EXPECT_EQ(pay_submit(&r, c.get(), "so-acct", body.data(), body.size(), nullptr), PAY_EMISMATCH);
  const pay_header other[] = {{"Stripe-Account", "acct_2Other"}};
  o.headers = other;
  EXPECT_EQ(pay_submit(&r, c.get(), "so-acct", body.data(), body.size(), &o), PAY_EMISMATCH);
  EXPECT_EQ(sim_->requests(), sent);

  // Reconcile re-sends it with the header its row keeps, under its own key:
  // the provider replays the payment it made, one charge in all.
  pay_reconcile_options ro = PAY_RECONCILE_OPTIONS_INIT;
  ro.body_for = &give_body;
  pay_buf report{nullptr, 0};
  ASSERT_EQ(pay_reconcile(&report, c.get(), &ro), PAY_OK) << pay_error_last()->message;
  const std::string rep(report.ptr ? report.ptr : "");
  pay_buf_dispose(&report);
  EXPECT_NE(rep.find("\"SUCCEEDED\":1"), std::string::npos) << rep;
  EXPECT_EQ(sim_->requests(), sent + 1);
  EXPECT_EQ(sim_->charges_for("so-acct"), 1);

  // With the same header (any case), a re-submission answers from the ledger.
  const pay_header same[] = {{"stripe-account", "acct_1Connected"}};
  o.headers = same;
  ASSERT_EQ(pay_submit(&r, c.get(), "so-acct", body.data(), body.size(), &o), PAY_OK) << pay_error_last()->message;
  ResultPtr again(r);
  EXPECT_EQ(pay_result_outcome(r), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r);
  EXPECT_STREQ(pay_result_idempotency_key(r), pay_result_idempotency_key(first.get()));
  EXPECT_EQ(sim_->requests(), sent + 1);
  EXPECT_EQ(sim_->charges_for("so-acct"), 1);

  // A header given twice is refused before anything is written.
  const pay_header twice[] = {{"X-Tenant", "a"}, {"x-tenant", "b"}};
  o.headers = twice;
  o.header_count = 2;
  EXPECT_EQ(pay_submit(&r, c.get(), "so-twice", body.data(), body.size(), &o), PAY_EINVALID);
  EXPECT_NE(std::string(pay_error_last()->message).find("twice"), std::string::npos);
}

}  // namespace
}  // namespace payretry_test
