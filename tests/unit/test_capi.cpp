// Argument checks of the C ABI, through the public header only. Every failed
// call returns its code at once, sets a message, and sends nothing: the
// clients point at the discard port of loopback, where nothing listens.
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "payretry/payretry.h"

namespace {

// A config whose retries would take seconds of real sleeping, so that a call
// which wrongly reached the network could not return quickly.
const char* kConfig = R"({
  "provider": "generic",
  "base_url": "http://127.0.0.1:9",
  "create_path": "/v1/payments",
  "auth": {"bearer": "sk_live_CAPISECRET"},
  "retry": {"max_attempts": 3, "backoff_base_ms": 2000, "backoff_cap_ms": 2000,
            "connect_timeout_ms": 1000, "attempt_timeout_ms": 2000, "deadline_ms": 20000},
  "max_body_bytes": 64,
  "ledger": "memory:"
})";
const char kBody[] = R"({"amount":100})";

bool has(const char* s, const char* needle) { return s && std::strstr(s, needle) != nullptr; }

// The last error must be `code` with a non-empty message.
void expect_last(int rc, int code) {
  EXPECT_EQ(rc, code);
  const pay_error* e = pay_error_last();
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code, code);
  ASSERT_NE(e->message, nullptr);
  EXPECT_GT(std::strlen(e->message), 0u);
}

struct LogCounter {
  int attempts = 0;
  int lines = 0;
  std::vector<std::string> all;
};

void count_lines(int, const char* line, void* payload) {
  auto* c = static_cast<LogCounter*>(payload);
  c->lines++;
  c->all.emplace_back(line);
  if (has(line, "\"event\":\"attempt\"")) c->attempts++;
}

// A client that counts its attempt log lines.
class CApiClient : public ::testing::Test {
 protected:
  void SetUp() override {
    pay_client_options opts = PAY_CLIENT_OPTIONS_INIT;
    opts.log_cb = count_lines;
    opts.log_payload = &log;
    ASSERT_EQ(pay_client_new(&client, kConfig, &opts), PAY_OK) << pay_error_last()->message;
  }
  void TearDown() override { pay_client_free(client); }

  // Submits, expecting `code` at once, no result and nothing sent.
  void expect_refused(int code, const char* order, const void* body, size_t len, const pay_submit_options* o) {
    pay_result* out = reinterpret_cast<pay_result*>(0x1);  // must be reset to NULL
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = pay_submit(&out, client, order, body, len, o);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    expect_last(rc, code);
    EXPECT_EQ(out, nullptr) << "a result came back with an error code";
    EXPECT_LT(ms, 1000) << "the call did not return at once";
    EXPECT_EQ(log.attempts, 0) << "an attempt was made";
    pay_buf stats{};
    ASSERT_EQ(pay_client_stats(&stats, client), PAY_OK);
    EXPECT_TRUE(has(stats.ptr, "\"attempts\":0")) << stats.ptr;
    pay_buf_dispose(&stats);
    if (out != nullptr && out != reinterpret_cast<pay_result*>(0x1)) pay_result_free(out);
  }

  pay_client* client = nullptr;
  LogCounter log;
};

// ---- errors -----------------------------------------------------------------------

TEST(CApi, ErrorLastIsNeverNullEvenOnAFreshThread) {
  std::thread([] {
    const pay_error* e = pay_error_last();
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->code, PAY_OK);
    ASSERT_NE(e->message, nullptr);
  }).join();
  pay_error_clear();
  ASSERT_NE(pay_error_last(), nullptr);
  EXPECT_EQ(pay_error_last()->code, PAY_OK);
  EXPECT_NE(pay_error_last()->message, nullptr);
}

TEST(CApi, ErrorIsPerThread) {
  expect_last(pay_client_options_init(nullptr, PAY_CLIENT_OPTIONS_VERSION), PAY_EINVALID);
  std::thread([] { EXPECT_EQ(pay_error_last()->code, PAY_OK); }).join();
  EXPECT_EQ(pay_error_last()->code, PAY_EINVALID);
}

TEST(CApi, StrerrorCoversEveryCode) {
#define CHECK_CODE_(name, value, text) EXPECT_STREQ(pay_strerror(name), text);
  PAY_ERROR_MAP(CHECK_CODE_)
#undef CHECK_CODE_
}

TEST(CApi, StrerrorOfAnUnknownCodeIsNeverNull) {
  for (int code : {1, 42, -1000, -100, INT_MIN, INT_MAX}) {
    ASSERT_NE(pay_strerror(code), nullptr);
    EXPECT_STREQ(pay_strerror(code), "unknown error code");
  }
}

// ---- NULL arguments ---------------------------------------------------------------

TEST(CApi, NullArgumentsGiveEinvalidWithAMessage) {
  pay_client* c = reinterpret_cast<pay_client*>(0x1);
  expect_last(pay_client_new(nullptr, kConfig, nullptr), PAY_EINVALID);
  expect_last(pay_client_new(&c, nullptr, nullptr), PAY_EINVALID);
  EXPECT_EQ(c, nullptr) << "*out not reset on error";

  pay_result* r = nullptr;
  expect_last(pay_submit(nullptr, nullptr, "o", kBody, sizeof kBody - 1, nullptr), PAY_EINVALID);
  expect_last(pay_submit(&r, nullptr, "o", kBody, sizeof kBody - 1, nullptr), PAY_EINVALID);
  EXPECT_EQ(r, nullptr);

  expect_last(pay_client_options_init(nullptr, PAY_CLIENT_OPTIONS_VERSION), PAY_EINVALID);
  expect_last(pay_submit_options_init(nullptr, PAY_SUBMIT_OPTIONS_VERSION), PAY_EINVALID);
  expect_last(pay_client_stats(nullptr, nullptr), PAY_EINVALID);
  pay_buf b{};
  expect_last(pay_client_stats(&b, nullptr), PAY_EINVALID);
  EXPECT_EQ(b.ptr, nullptr);
}

TEST_F(CApiClient, LedgerPruneRefusesNoClientAndNoTimeAndCountsWhatItDeletes) {
  uint64_t pruned = 99;
  expect_last(pay_ledger_prune(nullptr, 1, &pruned), PAY_EINVALID);
  EXPECT_EQ(pruned, 0u) << "*pruned not reset on error";
  expect_last(pay_ledger_prune(client, 0, &pruned), PAY_EINVALID);
  expect_last(pay_ledger_prune(client, -5, nullptr), PAY_EINVALID);
  // An empty ledger: nothing to delete; a NULL count is allowed.
  EXPECT_EQ(pay_ledger_prune(client, 1, &pruned), PAY_OK);
  EXPECT_EQ(pruned, 0u);
  EXPECT_EQ(pay_ledger_prune(client, 1, nullptr), PAY_OK);
  // A cutoff younger than a day is refused: such an order may still be submitted again.
  expect_last(pay_ledger_prune(client, INT64_MAX, &pruned), PAY_EINVALID);
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  expect_last(pay_ledger_prune(client, now_ms - 3600 * 1000, &pruned), PAY_EINVALID);
  EXPECT_EQ(pay_ledger_prune(client, now_ms - 25 * 3600 * 1000LL, &pruned), PAY_OK);
}

TEST_F(CApiClient, NullOrderOrBodyGiveEinvalid) {
  expect_refused(PAY_EINVALID, nullptr, kBody, sizeof kBody - 1, nullptr);
  expect_refused(PAY_EINVALID, "order-1", nullptr, 10, nullptr);
  expect_refused(PAY_EINVALID, "order-1", nullptr, 0, nullptr);
}

TEST(CApi, ResultAccessorsToleratNull) {
  EXPECT_EQ(pay_result_outcome(nullptr), PAY_EINVALID);
  EXPECT_EQ(pay_result_delivery(nullptr), PAY_EINVALID);
  EXPECT_EQ(pay_result_http_status(nullptr), 0);
  size_t len = 99;
  EXPECT_EQ(pay_result_body(nullptr, &len), nullptr);
  EXPECT_EQ(len, 0u);
  EXPECT_EQ(pay_result_body(nullptr, nullptr), nullptr);
  EXPECT_EQ(pay_result_order_id(nullptr), nullptr);
  EXPECT_EQ(pay_result_idempotency_key(nullptr), nullptr);
  EXPECT_EQ(pay_result_provider_payment_id(nullptr), nullptr);
  EXPECT_EQ(pay_result_provider_status(nullptr), nullptr);
  EXPECT_EQ(pay_result_attempts(nullptr), 0);
  EXPECT_EQ(pay_result_error(nullptr), nullptr);
  EXPECT_EQ(pay_result_json(nullptr), nullptr);
  EXPECT_STREQ(pay_outcome_name(0), "?");
  EXPECT_STREQ(pay_outcome_name(PAY_OUTCOME_UNKNOWN), "UNKNOWN");
  EXPECT_STREQ(pay_delivery_name(99), "?");
  EXPECT_STREQ(pay_delivery_name(PAY_DELIVERY_NOT_SENT), "not_sent");
}

TEST(CApi, FreeOfNullIsANoOp) {
  pay_client_free(nullptr);
  pay_result_free(nullptr);
  pay_buf_dispose(nullptr);
  pay_buf empty{};
  pay_buf_dispose(&empty);
  EXPECT_EQ(empty.ptr, nullptr);
  EXPECT_EQ(empty.size, 0u);
}

// ---- versions ---------------------------------------------------------------------

TEST(CApi, OptionsInitWithABadVersionIsEversion) {
  pay_client_options co;
  pay_submit_options so;
  for (unsigned v : {0u, 2u, 999u, 0xFFFFFFFFu}) expect_last(pay_client_options_init(&co, v), PAY_EVERSION);
  for (unsigned v : {0u, 3u, 999u, 0xFFFFFFFFu}) expect_last(pay_submit_options_init(&so, v), PAY_EVERSION);
  EXPECT_EQ(pay_client_options_init(&co, PAY_CLIENT_OPTIONS_VERSION), PAY_OK);
  EXPECT_EQ(co.version, unsigned(PAY_CLIENT_OPTIONS_VERSION));
  EXPECT_EQ(co.log_cb, nullptr);
  EXPECT_EQ(pay_submit_options_init(&so, PAY_SUBMIT_OPTIONS_VERSION), PAY_OK);
  EXPECT_EQ(so.idempotency_key, nullptr);
  EXPECT_EQ(so.deadline_ms, 0u);
}

TEST(CApi, ClientNewWithABadOptionsVersionIsEversion) {
  pay_client_options opts = PAY_CLIENT_OPTIONS_INIT;
  opts.version = 7;
  pay_client* c = reinterpret_cast<pay_client*>(0x1);
  expect_last(pay_client_new(&c, kConfig, &opts), PAY_EVERSION);
  EXPECT_EQ(c, nullptr);
}

TEST_F(CApiClient, SubmitWithABadOptionsVersionIsEversion) {
  pay_submit_options o = PAY_SUBMIT_OPTIONS_INIT;
  o.version = 0;
  expect_refused(PAY_EVERSION, "order-1", kBody, sizeof kBody - 1, &o);
}

TEST(CApi, VersionIsNeverNull) {
  ASSERT_NE(pay_version(), nullptr);
  EXPECT_GT(std::strlen(pay_version()), 0u);
  EXPECT_EQ(pay_version_number(), PAY_VERSION_NUMBER);
}

// ---- configs ----------------------------------------------------------------------

struct BadClientConfig {
  const char* json;
  const char* key;
};

TEST(CApi, ClientNewWithABadConfigIsEconfigNamingTheKey) {
  const BadClientConfig cases[] = {
      {R"({"ledger":"memory:","base_url":"http://127.0.0.1:9","retry":{"max_attempts":0}})", "retry.max_attempts"},
      {R"({"ledger":"memory:","base_url":"http://127.0.0.1:9","retry":{"foo":1}})", "retry.foo"},
      {R"({"ledger":"memory:","base_url":"http://127.0.0.1:9","retry":{"deadline_ms":"soon"}})", "retry.deadline_ms"},
      {R"({"ledger":"memory:","base_url":"ftp://127.0.0.1:9"})", "base_url"},
      {R"({"ledger":"memory:","base_url":"http://u:p@127.0.0.1:9"})", "base_url"},
      {R"({"ledger":"memory:","provider":"generic"})", "base_url"},
      {R"({"ledger":"memory:","base_url":"http://127.0.0.1:9","provider":"nosuchpsp"})", "provider"},
      {R"({"ledger":"memory:","base_url":"http://127.0.0.1:9","auth":{"bearer":"a","header":"X","value":"b"}})", "auth"},
      {R"({"ledger":"memory:","base_url":"http://127.0.0.1:9","tls":{"verify":1}})", "tls.verify"},
      {"not json at all", "config"},
      {"", "config"},
  };
  for (const auto& c : cases) {
    pay_client* out = reinterpret_cast<pay_client*>(0x1);
    const int rc = pay_client_new(&out, c.json, nullptr);
    expect_last(rc, PAY_ECONFIG);
    EXPECT_EQ(out, nullptr);
    EXPECT_TRUE(has(pay_error_last()->message, c.key)) << c.json << " -> " << pay_error_last()->message;
    if (rc == PAY_OK) pay_client_free(out);
  }
}

TEST(CApi, ClientNewWithoutALedgerIsEconfigNamingTheLedger) {
  // No "ledger" used to mean memory: silently; a service that forgot the key
  // lost its idempotency keys on every restart. It must be written out now.
  pay_client* out = reinterpret_cast<pay_client*>(0x1);
  expect_last(pay_client_new(&out, R"({"provider":"stripe","base_url":"http://127.0.0.1:9"})", nullptr), PAY_ECONFIG);
  EXPECT_EQ(out, nullptr);
  const char* m = pay_error_last()->message;
  EXPECT_EQ(std::strncmp(m, "ledger: is required", 19), 0) << m;
  EXPECT_TRUE(has(m, "memory:")) << m;

  // Written out, the in-memory ledger is accepted.
  out = nullptr;
  ASSERT_EQ(pay_client_new(&out, R"({"provider":"stripe","base_url":"http://127.0.0.1:9","ledger":"memory:"})", nullptr),
            PAY_OK)
      << pay_error_last()->message;
  pay_client_free(out);
}

TEST(CApi, AMemoryLedgerWithMaxSettledOpensAsMemoryAndABadParameterIsEledgerNamingIt) {
  LogCounter log;
  pay_client_options opts = PAY_CLIENT_OPTIONS_INIT;
  opts.log_cb = count_lines;
  opts.log_payload = &log;
  pay_client* out = nullptr;
  ASSERT_EQ(pay_client_new(&out, R"({"provider":"stripe","base_url":"http://127.0.0.1:9","ledger":"memory:?max_settled=10"})",
                           &opts),
            PAY_OK)
      << pay_error_last()->message;
  pay_client_free(out);
  int warned = 0;
  for (const auto& line : log.all) warned += has(line.c_str(), "config_warning") && has(line.c_str(), "ledger is memory:");
  EXPECT_EQ(warned, 1) << "a memory ledger with a cap still lives in this process only, and the client says so";

  out = reinterpret_cast<pay_client*>(0x1);
  expect_last(pay_client_new(&out, R"({"provider":"stripe","base_url":"http://127.0.0.1:9","ledger":"memory:?max_setled=10"})",
                             nullptr),
              PAY_ELEDGER);
  EXPECT_EQ(out, nullptr);
  EXPECT_TRUE(has(pay_error_last()->message, "max_setled")) << pay_error_last()->message;
}

TEST(CApi, WechatPayWithoutMerchantIdIsEconfigNamingIt) {
  // WeChat Pay's lookup needs ?mchid=: a client that could never settle an
  // unknown payment is refused when it is made, not at its first lookup.
  pay_client* out = reinterpret_cast<pay_client*>(0x1);
  expect_last(pay_client_new(&out, R"({"provider":"wechatpay_v3","base_url":"http://127.0.0.1:9","ledger":"memory:"})",
                             nullptr),
              PAY_ECONFIG);
  EXPECT_EQ(out, nullptr);
  EXPECT_TRUE(has(pay_error_last()->message, "merchant_id")) << pay_error_last()->message;

  // WeChat Pay refuses unsigned requests: without the signer's keys (or a
  // hook that signs) the client is refused too, saying what to give.
  out = nullptr;
  expect_last(pay_client_new(&out,
                             R"({"provider":"wechatpay_v3","base_url":"http://127.0.0.1:9","ledger":"memory:",)"
                             R"("merchant_id":"1230000109"})",
                             nullptr),
              PAY_ECONFIG);
  EXPECT_TRUE(has(pay_error_last()->message, "auth.wechatpay")) << pay_error_last()->message;

  out = nullptr;
  const std::string keys = PAYRETRY_TEST_KEYS;
  const std::string config = R"({"provider":"wechatpay_v3","base_url":"http://127.0.0.1:9","ledger":"memory:",)"
                             R"("merchant_id":"1230000109","auth":{"wechatpay":{"serial_no":"ABC123",)"
                             R"("private_key_file":")" + keys + R"(/wechat_merchant_key.pem",)"
                             R"("platform_public_key_file":")" + keys + R"(/wechat_platform_pub.pem"}}})";
  ASSERT_EQ(pay_client_new(&out, config.c_str(), nullptr), PAY_OK) << pay_error_last()->message;
  pay_client_free(out);
}

TEST(CApi, ConfigErrorNeverContainsTheSecret) {
  const char* configs[] = {
      R"({"ledger":"memory:","base_url":"http://127.0.0.1:9","auth":{"bearer":"sk_live_NEVERSHOWN\r\nX: 1"}})",
      R"({"ledger":"memory:","base_url":"http://127.0.0.1:9","auth":{"header":"X-Key","value":"sk_live_NEVERSHOWN\n"}})",
  };
  for (const char* json : configs) {
    pay_client* out = nullptr;
    expect_last(pay_client_new(&out, json, nullptr), PAY_ECONFIG);
    EXPECT_FALSE(has(pay_error_last()->message, "NEVERSHOWN")) << pay_error_last()->message;
  }
}

// ---- submissions that must send nothing ----------------------------------------------

TEST_F(CApiClient, OversizeBodyIsEtoobig) {
  const std::string big = "{\"x\":\"" + std::string(100, 'a') + "\"}";
  expect_refused(PAY_ETOOBIG, "order-1", big.data(), big.size(), nullptr);
}

TEST_F(CApiClient, KeyWithCrLfIsEkey) {
  pay_submit_options o = PAY_SUBMIT_OPTIONS_INIT;
  o.idempotency_key = "k-1\r\nX-Injected: yes";
  expect_refused(PAY_EKEY, "order-1", kBody, sizeof kBody - 1, &o);
  EXPECT_FALSE(has(pay_error_last()->message, "X-Injected")) << "the message echoes the key";
}

TEST_F(CApiClient, TooLongOrEmptyKeyIsEkey) {
  const std::string long_key(256, 'k');
  pay_submit_options o = PAY_SUBMIT_OPTIONS_INIT;
  o.idempotency_key = long_key.c_str();
  expect_refused(PAY_EKEY, "order-1", kBody, sizeof kBody - 1, &o);
  o.idempotency_key = "";
  expect_refused(PAY_EKEY, "order-1", kBody, sizeof kBody - 1, &o);
}

TEST_F(CApiClient, EmptyBodyIsEinvalid) {
  expect_refused(PAY_EINVALID, "order-1", kBody, 0, nullptr);
  expect_refused(PAY_EINVALID, "order-1", "", 0, nullptr);
}

TEST_F(CApiClient, BadOrderIdOrPathIsEinvalid) {
  expect_refused(PAY_EINVALID, "", kBody, sizeof kBody - 1, nullptr);
  expect_refused(PAY_EINVALID, "order 1", kBody, sizeof kBody - 1, nullptr);
  expect_refused(PAY_EINVALID, "order-1\r\nX: y", kBody, sizeof kBody - 1, nullptr);
  pay_submit_options o = PAY_SUBMIT_OPTIONS_INIT;
  o.path = "no-leading-slash";
  expect_refused(PAY_EINVALID, "order-1", kBody, sizeof kBody - 1, &o);
  o.path = "";
  expect_refused(PAY_EINVALID, "order-1", kBody, sizeof kBody - 1, &o);
}

TEST_F(CApiClient, DeadlineBelowMinAttemptIsEinvalid) {
  pay_submit_options o = PAY_SUBMIT_OPTIONS_INIT;
  o.deadline_ms = 10;  // below the default min_attempt_ms of 200
  expect_refused(PAY_EINVALID, "order-1", kBody, sizeof kBody - 1, &o);
}

TEST_F(CApiClient, LogLinesNeverHoldTheBearerToken) {
  // Even after the refused calls above, the client logged nothing secret.
  expect_refused(PAY_EINVALID, "", kBody, sizeof kBody - 1, nullptr);
  for (const std::string& l : log.all) EXPECT_EQ(l.find("CAPISECRET"), std::string::npos) << l;
}

}  // namespace

// A misspelt provider is named, with the built-in it most likely meant.
TEST(CApi, AnUnknownProviderIsNamedWithTheBuiltInItMostLikelyMeant) {
  pay_client* c = nullptr;
  const char* config = R"({"provider": "stripee", "base_url": "http://127.0.0.1:9", "ledger": "memory:"})";
  ASSERT_NE(pay_client_new(&c, config, nullptr), PAY_OK);
  EXPECT_EQ(c, nullptr);
  const std::string message = pay_error_last()->message;
  EXPECT_NE(message.find("unknown provider \"stripee\"; did you mean \"stripe\"?"), std::string::npos) << message;
  EXPECT_NE(message.find("built-in: "), std::string::npos) << message;
}
