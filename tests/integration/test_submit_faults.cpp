// pay_submit against the simulator, one socket-level fault at a time: the
// outcome, the delivery class, the attempts, one key, and the provider's
// count of charges.
#include <cJSON.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>

#include <cstdio>
#include <cstdlib>

#include <chrono>
#include <filesystem>
#include <thread>

#include "sim_fixture.hpp"

namespace payretry_test {
namespace {

struct Json {
  cJSON* j;
  explicit Json(const char* s) : j(cJSON_Parse(s)) {}
  ~Json() { cJSON_Delete(j); }
  const cJSON* attempt(int i) const { return cJSON_GetArrayItem(cJSON_GetObjectItem(j, "attempts"), i); }
  static std::string str(const cJSON* o, const char* k) {
    const cJSON* v = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
  }
  static double num(const cJSON* o, const char* k) {
    const cJSON* v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
  }
  static bool flag(const cJSON* o, const char* k) { return cJSON_IsTrue(cJSON_GetObjectItem(o, k)); }
};

using Submit = SimTest;

TEST_F(Submit, PlainSuccessChargesOnceAndReadsProviderFields) {
  auto c = client(config());
  auto r = submit(c.get(), "o-plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_DELIVERED);
  EXPECT_EQ(pay_result_attempts(r.get()), 1);
  EXPECT_EQ(pay_result_http_status(r.get()), 200);
  ASSERT_NE(pay_result_provider_payment_id(r.get()), nullptr);
  EXPECT_EQ(std::string(pay_result_provider_payment_id(r.get())).rfind("pi_", 0), 0u);
  EXPECT_STREQ(pay_result_provider_status(r.get()), "succeeded");
  EXPECT_EQ(std::string(pay_result_idempotency_key(r.get())).size(), 36u);  // UUIDv4
  EXPECT_EQ(sim_->charges_for("o-plain"), 1);
}

TEST_F(Submit, ResetBeforeProcessingIsRetriedWithTheSameKey) {
  sim_->script("o-reset", {"reset_before", "none"});
  auto c = client(config());
  auto r = submit(c.get(), "o-reset");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_result_attempts(r.get()), 2);
  Json j(pay_result_json(r.get()));
  EXPECT_EQ(Json::str(j.attempt(0), "transport_error"), "connection_lost");
  EXPECT_TRUE(Json::flag(j.attempt(0), "may_have_processed"));
  expect_one_key_and_identical_bytes();
  EXPECT_EQ(sim_->charges_for("o-reset"), 1);
}

TEST_F(Submit, LostResponseIsSettledByTheProvidersReplay) {
  sim_->script("o-lost", {"lost_response", "none"});
  auto c = client(config());
  auto r = submit(c.get(), "o-lost");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_result_attempts(r.get()), 2);
  Json j(pay_result_json(r.get()));
  EXPECT_TRUE(Json::flag(j.attempt(1), "replayed"));
  expect_one_key_and_identical_bytes();
  EXPECT_EQ(sim_->charges_for("o-lost"), 1);
}

TEST_F(Submit, LostResponsesUntilAttemptsRunOutIsUnknownNeverFailed) {
  sim_->script("o-lost4", {"lost_response", "lost_response", "lost_response", "lost_response"});
  auto c = client(config());
  auto r = submit(c.get(), "o-lost4");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_MAYBE_PROCESSED);
  EXPECT_EQ(pay_result_attempts(r.get()), 4);
  EXPECT_NE(std::string(pay_result_error(r.get())).find("attempts_exhausted"), std::string::npos);
  expect_one_key_and_identical_bytes();
  EXPECT_EQ(sim_->charges_for("o-lost4"), 1);  // the provider did charge: only UNKNOWN is honest
}

TEST_F(Submit, SlowProviderTimesOutThenKeyInUseThenReplaysTheCharge) {
  sim_->script("o-slow", {"slow"});
  auto c = client(config("stripe", R"("max_attempts":8,"backoff_base_ms":100,"backoff_cap_ms":300)"));
  auto r = submit(c.get(), "o-slow");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  Json j(pay_result_json(r.get()));
  EXPECT_EQ(Json::str(j.attempt(0), "transport_error"), "timeout");
  bool saw_409 = false;
  for (int i = 1; i < pay_result_attempts(r.get()); ++i) saw_409 |= Json::num(j.attempt(i), "http_status") == 409;
  EXPECT_TRUE(saw_409) << pay_result_json(r.get());
  expect_one_key_and_identical_bytes();
  EXPECT_EQ(sim_->charges_for("o-slow"), 1);
}

TEST_F(Submit, RetryAfterSecondsIsAFloorOnTheDelay) {
  sim_->script("o-429", {"429", "none"});
  auto c = client(config());
  auto r = submit(c.get(), "o-429");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  Json j(pay_result_json(r.get()));
  EXPECT_EQ(Json::str(j.attempt(0), "delay_source"), "retry_after");
  EXPECT_GE(Json::num(j.attempt(0), "delay_ms"), 1000);
  EXPECT_FALSE(Json::flag(j.attempt(0), "may_have_processed"));
  EXPECT_EQ(sim_->charges_for("o-429"), 1);
}

class SubmitSlowRetryAfter : public SimTest {
 protected:
  payretry_sim::Options sim_options() override {
    auto o = SimTest::sim_options();
    o.retry_after_s = 2;
    return o;
  }
};

TEST_F(SubmitSlowRetryAfter, RetryAfterHttpDateIsHonoured) {
  sim_->script("o-429d", {"429_date", "none"});
  auto c = client(config());
  auto r = submit(c.get(), "o-429d");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  Json j(pay_result_json(r.get()));
  // The date has one-second resolution: the simulator's now + 2 s is at
  // least 1 s after it wrote the answer, less the time the answer took to
  // be read here (999 ms was seen once on a loaded machine).
  EXPECT_EQ(Json::str(j.attempt(0), "delay_source"), "retry_after");
  EXPECT_GE(Json::num(j.attempt(0), "delay_ms"), 900);
}

TEST_F(SubmitSlowRetryAfter, RetryAfterBeyondTheDeadlineStopsAsUnknownNotSent) {
  sim_->script("o-429x", {"429", "none"});
  auto c = client(config("stripe", R"("deadline_ms":1500)"));
  auto r = submit(c.get(), "o-429x");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_NOT_SENT);
  EXPECT_EQ(pay_result_attempts(r.get()), 1);
  EXPECT_STREQ(pay_result_error(r.get()), "retry_after_beyond_deadline");
  EXPECT_EQ(sim_->charges_for("o-429x"), 0);
}

TEST_F(Submit, GatewayErrorsAreRetried) {
  sim_->script("o-503", {"503", "502", "none"});
  auto c = client(config());
  auto r = submit(c.get(), "o-503");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_result_attempts(r.get()), 3);
  EXPECT_EQ(sim_->charges_for("o-503"), 1);
}

TEST_F(Submit, GatewayErrorsUntilAttemptsRunOutAreUnknownMaybeProcessed) {
  sim_->script("o-502", {"502", "502", "502", "502"});
  auto c = client(config());
  auto r = submit(c.get(), "o-502");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_MAYBE_PROCESSED);
  EXPECT_EQ(pay_result_attempts(r.get()), 4);
  EXPECT_EQ(pay_result_http_status(r.get()), 502);
}

TEST_F(Submit, Generic500StopsForAQueryStripe500RetriesTheSameKey) {
  sim_->script("o-500g", {"500", "none"});
  auto g = client(config("generic"));
  auto rg = submit(g.get(), "o-500g");
  EXPECT_EQ(pay_result_outcome(rg.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_delivery(rg.get()), PAY_DELIVERY_MAYBE_PROCESSED);
  EXPECT_EQ(pay_result_attempts(rg.get()), 1);
  EXPECT_EQ(sim_->charges_for("o-500g"), 1);

  sim_->script("o-500s", {"500", "none"});
  auto s = client(config("stripe"));
  auto rs = submit(s.get(), "o-500s");
  EXPECT_EQ(pay_result_outcome(rs.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_result_attempts(rs.get()), 2);
  EXPECT_EQ(sim_->charges_for("o-500s"), 1);
}

TEST_F(Submit, DeclineIsFailedOnTheFirstAttempt) {
  sim_->script("o-decl", {"decline"});
  auto c = client(config());
  auto r = submit(c.get(), "o-decl");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED);
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_DELIVERED);
  EXPECT_EQ(pay_result_attempts(r.get()), 1);
  EXPECT_EQ(pay_result_http_status(r.get()), 402);
  EXPECT_NE(std::string(pay_result_error(r.get())).find("card_declined"), std::string::npos);
  EXPECT_EQ(sim_->charges_for("o-decl"), 0);
}

TEST_F(Submit, MalformedSuccessBodyIsRetriedAndReplayed) {
  sim_->script("o-mal", {"malformed", "none"});
  auto c = client(config());
  auto r = submit(c.get(), "o-mal");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_result_attempts(r.get()), 2);
  EXPECT_NE(pay_result_provider_payment_id(r.get()), nullptr);
  EXPECT_EQ(sim_->charges_for("o-mal"), 1);
}

TEST_F(Submit, RefusedConnectionsAreUnknownNotSent) {
  // A port nobody listens on: the kernel refuses, nothing is ever written.
  auto c = client(R"({"base_url":"http://127.0.0.1:9","create_path":"/v1/payments","ledger":"memory:","retry":{"max_attempts":3,"backoff_base_ms":10,"backoff_cap_ms":20,"deadline_ms":3000}})");
  auto r = submit(c.get(), "o-refused");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_NOT_SENT);
  EXPECT_EQ(pay_result_attempts(r.get()), 3);
  Json j(pay_result_json(r.get()));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Json::str(j.attempt(i), "transport_error"), "connect_failed");
  expect_one_key_and_identical_bytes();
}

TEST_F(Submit, ProviderOutageRefusesThenRecovers) {
  sim_->script("o-refuse", {"refuse", "none"});
  auto c = client(config("stripe", R"("max_attempts":8,"backoff_base_ms":60,"backoff_cap_ms":200)"));
  auto r = submit(c.get(), "o-refuse");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(sim_->charges_for("o-refuse"), 1);
  expect_one_key_and_identical_bytes();
}

// A server that answers every connection with plain HTTP bytes: a TLS client
// fails its handshake on them, before writing any request.
class PlainTextListener {
 public:
  PlainTextListener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("listener");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        unsigned char first = 0;
        if (recv(c, &first, 1, 0) == 1 && first != 0x16) http_requests_++;  // 0x16: TLS handshake record
        static const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        (void)!send(c, reply, sizeof reply - 1, MSG_NOSIGNAL);
        close(c);
      }
    });
  }
  ~PlainTextListener() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  int http_requests() const { return http_requests_; }

 private:
  int fd_ = -1, port_ = 0;
  std::atomic<int> http_requests_{0};
  std::thread thread_;
};

TEST_F(Submit, TlsHandshakeFailureIsNotSent) {
  PlainTextListener plain;
  const std::string cfg = R"({"base_url":"https://127.0.0.1:)" + std::to_string(plain.port()) +
                          R"(","create_path":"/v1/payments","ledger":"memory:","retry":{"max_attempts":2,"backoff_base_ms":10,"backoff_cap_ms":20}})";
  auto c = client(cfg);
  auto r = submit(c.get(), "o-tls");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_NOT_SENT);
  EXPECT_EQ(pay_result_attempts(r.get()), 2);
  Json j(pay_result_json(r.get()));
  EXPECT_EQ(Json::str(j.attempt(0), "transport_error"), "tls_handshake_failed") << pay_result_json(r.get());
  EXPECT_EQ(plain.http_requests(), 0);
}

TEST_F(Submit, LibcurlSilentReplayOnAReusedConnectionIsRefusedAndCounted) {
  auto c = client(config());
  // Warm one connection, then lose the response on it: libcurl would re-send
  // the POST on a fresh connection by itself. We refuse that, and the engine
  // retries visibly, so the attempt log matches what the provider received.
  auto warm = submit(c.get(), "o-warm");
  ASSERT_EQ(pay_result_outcome(warm.get()), PAY_OUTCOME_SUCCEEDED);
  sim_->script("o-reuse", {"lost_response", "none"});
  const long before = sim_->requests();
  auto r = submit(c.get(), "o-reuse");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  Json j(pay_result_json(r.get()));
  EXPECT_TRUE(Json::flag(j.attempt(0), "reused_connection"));
  EXPECT_EQ(Json::str(j.attempt(0), "transport_error"), "reused_connection_died");
  EXPECT_EQ(sim_->requests() - before, pay_result_attempts(r.get()));
  pay_buf stats = {nullptr, 0};
  ASSERT_EQ(pay_client_stats(&stats, c.get()), PAY_OK);
  EXPECT_NE(std::string(stats.ptr).find("\"replays_blocked\":1"), std::string::npos) << stats.ptr;
  pay_buf_dispose(&stats);
  EXPECT_EQ(sim_->charges_for("o-reuse"), 1);
}

TEST_F(Submit, SameOrderWithOtherBytesIsAMismatchAndNothingIsSent) {
  auto c = client(config());
  const std::string b1 = body_for("o-77"), b2 = body_for("o-77", 2000);
  auto first = submit(c.get(), "o-77", b1);
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_SUCCEEDED);
  const long before = sim_->requests();
  pay_result* r = nullptr;
  EXPECT_EQ(pay_submit(&r, c.get(), "o-77", b2.data(), b2.size(), nullptr), PAY_EMISMATCH);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(sim_->requests(), before);  // the ledger's fingerprint caught it
  EXPECT_EQ(sim_->charges_for("o-77"), 1);
}

TEST_F(Submit, ProviderSaysKeyReusedWithOtherBytesIsAMismatchError) {
  // Two clients with separate ledgers share a caller key by mistake: only
  // the provider can see it, and its 422 is a caller bug, not an outcome.
  const std::string key = "order-78-key";
  pay_submit_options o = PAY_SUBMIT_OPTIONS_INIT;
  o.idempotency_key = key.c_str();
  const std::string b1 = body_for("o-78"), b2 = body_for("o-78b", 2000);
  auto c1 = client(config());
  pay_result* r = nullptr;
  ASSERT_EQ(pay_submit(&r, c1.get(), "o-78", b1.data(), b1.size(), &o), PAY_OK);
  EXPECT_EQ(pay_result_outcome(r), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_result_idempotency_key(r), key);
  pay_result_free(r);
  r = nullptr;
  auto c2 = client(config());
  EXPECT_EQ(pay_submit(&r, c2.get(), "o-78b", b2.data(), b2.size(), &o), PAY_EMISMATCH);
  EXPECT_EQ(r, nullptr);
  EXPECT_NE(std::string(pay_error_last()->message).find(key), std::string::npos);
  EXPECT_EQ(sim_->charges_for("o-78b"), 0);
}

TEST_F(Submit, WrongCredentialsFailWithoutRetryAndNeverLeakTheToken) {
  const std::string cfg = R"({"base_url":")" + base_url() +
                          R"(","create_path":"/v1/payments","ledger":"memory:","auth":{"bearer":"sk_test_WRONG_token_123"}})";
  auto c = client(cfg);
  auto r = submit(c.get(), "o-auth");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED);
  EXPECT_EQ(pay_result_http_status(r.get()), 401);
  EXPECT_EQ(pay_result_attempts(r.get()), 1);
  std::lock_guard<std::mutex> lock(rec_.mu);
  ASSERT_FALSE(rec_.log_lines.empty());
  for (const std::string& line : rec_.log_lines) EXPECT_EQ(line.find("sk_test_WRONG_token_123"), std::string::npos);
  EXPECT_EQ(std::string(pay_result_json(r.get())).find("sk_test_WRONG"), std::string::npos);
}

TEST_F(Submit, BadInputIsRejectedBeforeAnythingIsSent) {
  auto c = client(config());
  const long before = sim_->requests();
  const std::string body = body_for("o-bad");
  pay_result* r = nullptr;
  pay_submit_options o = PAY_SUBMIT_OPTIONS_INIT;
  o.idempotency_key = "abc\r\nX-Evil: 1";
  EXPECT_EQ(pay_submit(&r, c.get(), "o-bad", body.data(), body.size(), &o), PAY_EKEY);
  o.idempotency_key = nullptr;
  const std::string big(2u << 20, 'x');
  EXPECT_EQ(pay_submit(&r, c.get(), "o-bad", big.data(), big.size(), nullptr), PAY_ETOOBIG);
  EXPECT_EQ(pay_submit(&r, c.get(), "o-bad", body.data(), 0, nullptr), PAY_EINVALID);
  EXPECT_EQ(pay_submit(&r, c.get(), "o\nbad", body.data(), body.size(), nullptr), PAY_EINVALID);
  EXPECT_EQ(pay_submit(&r, nullptr, "o-bad", body.data(), body.size(), nullptr), PAY_EINVALID);
  EXPECT_EQ(pay_submit(&r, c.get(), nullptr, body.data(), body.size(), nullptr), PAY_EINVALID);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(sim_->requests(), before);
}

TEST_F(Submit, AttemptLogFileHasOneRedactedLinePerAttemptAndOutcome) {
  char path[] = "/tmp/payretry-log-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  sim_->script("o-4242424242424242", {"503", "none"});
  auto c = client(config("stripe", "", std::string(R"("log":{"path":")") + path + R"("})"));
  const std::string body =
      R"({"order_id":"o-4242424242424242","amount":500,"card":{"number":"4242424242424242","cvc":"987"}})";
  auto r = submit(c.get(), "o-4242424242424242", body);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  c.reset();
  FILE* f = std::fopen(path, "r");
  ASSERT_NE(f, nullptr);
  std::string all;
  char buf[4096];
  int attempts = 0, outcomes = 0;
  while (std::fgets(buf, sizeof buf, f)) {
    all += buf;
    Json j(buf);
    ASSERT_NE(j.j, nullptr) << buf;
    const std::string ev = Json::str(j.j, "event");
    attempts += ev == "attempt";
    outcomes += ev == "outcome";
    if (ev == "attempt") EXPECT_EQ(Json::str(j.j, "idempotency_key"), pay_result_idempotency_key(r.get()));
  }
  std::fclose(f);
  std::remove(path);
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(outcomes, 1);
  EXPECT_EQ(all.find("4242424242424242"), std::string::npos) << all;
  EXPECT_EQ(all.find("cvc"), std::string::npos);
  EXPECT_EQ(all.find("sk_test_integration_secret"), std::string::npos);
}

}  // namespace
}  // namespace payretry_test

namespace payretry_test {
namespace {

TEST_F(Submit, InsecureTlsIsAnExplicitOptInThatLogsAWarning) {
  auto quiet = client(config());
  {
    // (The memory: ledger of config() has a warning of its own.)
    std::lock_guard<std::mutex> lock(rec_.mu);
    for (const std::string& line : rec_.log_lines)
      EXPECT_FALSE(line.find("config_warning") != std::string::npos && line.find("tls.verify") != std::string::npos)
          << line;
  }
  auto insecure = client(config("stripe", "", R"("tls":{"verify":false})"));
  std::lock_guard<std::mutex> lock(rec_.mu);
  bool warned = false;
  for (const std::string& line : rec_.log_lines)
    warned |= line.find("config_warning") != std::string::npos && line.find("tls.verify") != std::string::npos;
  EXPECT_TRUE(warned);
}

// "memory:" is accepted only written out, and even then the client says,
// once, that its keys die with the process; a durable ledger says nothing.
TEST_F(Submit, MemoryLedgerIsAcceptedWithAWarningThatKeysDieWithTheProcess) {
  auto in_memory = client(config("stripe", "", R"("ledger":"memory:")"));
  auto memory_warnings = [this] {
    std::lock_guard<std::mutex> lock(rec_.mu);
    int n = 0;
    for (const std::string& line : rec_.log_lines)
      n += line.find("config_warning") != std::string::npos && line.find("memory:") != std::string::npos;
    rec_.log_lines.clear();
    return n;
  };
  EXPECT_EQ(memory_warnings(), 1);

  char dir[] = "/tmp/payretry-memwarn-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  {
    auto durable = client(config("stripe", "", R"("ledger":"sqlite://)" + std::string(dir) + R"(/l.db")"));
    EXPECT_EQ(memory_warnings(), 0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace payretry_test
