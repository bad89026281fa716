// The JSON configuration (docs/design.md "Configuration"): strict, and every error names its key.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"
#include "redact.hpp"

namespace payretry {
namespace {

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// The error message for `json`, or "" when it parsed.
std::string config_error(const std::string& json) {
  try {
    (void)parse_config(json);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

const std::string kFull = R"({
  "provider": "stripe",
  "base_url": "https://api.example.com",
  "auth": {"bearer": "sk_test_abc123"},
  "retry": {"max_attempts": 4, "connect_timeout_ms": 2500, "attempt_timeout_ms": 9000,
            "deadline_ms": 45000, "backoff_base_ms": 250, "backoff_cap_ms": 4000,
            "retry_after_max_ms": 30000, "min_attempt_ms": 150},
  "budget": {"tokens": 300, "retry_cost": 10, "success_refund": 2},
  "tls": {"verify": true, "ca_file": null},
  "log": {"path": null, "level": "warn"},
  "ledger": {"url": "sqlite:///var/lib/app/payments.db", "timeout_ms": 2000}
})";

TEST(Config, FullDesignExampleParsesWithTheRightValues) {
  const Config c = parse_config(kFull);
  EXPECT_EQ(c.provider, "stripe");
  EXPECT_EQ(c.base_url, "https://api.example.com");
  ASSERT_EQ(c.auth_headers.size(), 1u);
  EXPECT_EQ(c.auth_headers[0].first, "Authorization");
  EXPECT_EQ(c.auth_headers[0].second, "Bearer sk_test_abc123");
  EXPECT_EQ(c.retry.max_attempts, 4);
  EXPECT_EQ(c.retry.connect_timeout_ms, 2500);
  EXPECT_EQ(c.retry.attempt_timeout_ms, 9000);
  EXPECT_EQ(c.retry.deadline_ms, 45000);
  EXPECT_EQ(c.retry.backoff_base_ms, 250);
  EXPECT_EQ(c.retry.backoff_cap_ms, 4000);
  EXPECT_EQ(c.retry.retry_after_max_ms, 30000);
  EXPECT_EQ(c.retry.min_attempt_ms, 150);
  EXPECT_FALSE(c.retry.jitter_seed.has_value());
  EXPECT_EQ(c.budget.tokens, 300);
  EXPECT_EQ(c.budget.retry_cost, 10);
  EXPECT_EQ(c.budget.success_refund, 2);
  EXPECT_TRUE(c.tls_verify);
  EXPECT_EQ(c.ca_file, "");
  EXPECT_EQ(c.log_path, "");
  EXPECT_EQ(c.log_level, 30);
  EXPECT_EQ(c.ledger_url, "sqlite:///var/lib/app/payments.db");
  EXPECT_EQ(c.ledger_timeout_ms, 2000);
}

TEST(Config, DefaultsApplyWhenOnlyBaseUrlAndLedgerAreGiven) {
  const Config c = parse_config(R"({"base_url":"http://127.0.0.1:8080","ledger":"memory:"})");
  EXPECT_EQ(c.provider, "generic");
  EXPECT_TRUE(c.auth_headers.empty());
  EXPECT_EQ(c.retry.max_attempts, 4);
  EXPECT_EQ(c.retry.connect_timeout_ms, 3000);
  EXPECT_EQ(c.retry.attempt_timeout_ms, 10000);
  EXPECT_EQ(c.retry.deadline_ms, 30000);
  EXPECT_EQ(c.retry.backoff_base_ms, 500);
  EXPECT_EQ(c.retry.backoff_cap_ms, 5000);
  EXPECT_EQ(c.retry.retry_after_max_ms, 60000);
  EXPECT_EQ(c.retry.min_attempt_ms, 200);
  EXPECT_EQ(c.budget.tokens, 500);
  EXPECT_EQ(c.budget.retry_cost, 5);
  EXPECT_EQ(c.budget.success_refund, 1);
  EXPECT_TRUE(c.tls_verify);
  EXPECT_EQ(c.log_level, 20);
  EXPECT_EQ(c.max_body_bytes, size_t(1) << 20);
  EXPECT_EQ(c.ledger_url, "memory:");
  EXPECT_EQ(c.ledger_timeout_ms, 5000);
  EXPECT_EQ(c.proxy, "");
  EXPECT_EQ(c.merchant_id, "");
}

TEST(Config, PartialRetryKeepsTheOtherDefaults) {
  const Config c = parse_config(R"({"ledger":"memory:","base_url":"https://a.test","retry":{"max_attempts":5}})");
  EXPECT_EQ(c.retry.max_attempts, 5);
  EXPECT_EQ(c.retry.deadline_ms, 30000);
}

TEST(Config, TrailingSlashesAreStrippedFromBaseUrl) {
  EXPECT_EQ(parse_config(R"({"ledger":"memory:","base_url":"https://a.test/api//"})").base_url, "https://a.test/api");
}

TEST(Config, HeaderAuthAndItsSecret) {
  const Config c = parse_config(R"({"ledger":"memory:","base_url":"https://a.test","auth":{"header":"X-Api-Key","value":"key_live_777"}})");
  ASSERT_EQ(c.auth_headers.size(), 1u);
  EXPECT_EQ(c.auth_headers[0].first, "X-Api-Key");
  EXPECT_EQ(c.auth_headers[0].second, "key_live_777");
  EXPECT_EQ(c.secrets(), std::vector<std::string>{"key_live_777"});
}

TEST(Config, SecretsIncludeTheBareBearerToken) {
  const Config c = parse_config(kFull);
  const auto s = c.secrets();
  EXPECT_NE(std::find(s.begin(), s.end(), "sk_test_abc123"), s.end());
}

TEST(Config, JitterSeedIsAccepted) {
  EXPECT_EQ(parse_config(R"({"ledger":"memory:","base_url":"https://a.test","retry":{"jitter_seed":42}})").retry.jitter_seed, 42u);
}

struct BadConfig {
  const char* name;
  std::string json;
  std::string key;  // the message must start with "<key>: "
};
void PrintTo(const BadConfig& b, std::ostream* os) { *os << b.name; }

class ConfigErrors : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ConfigErrors, ErrorNamesTheKey) {
  const std::string e = config_error(GetParam().json);
  ASSERT_NE(e, "") << "accepted: " << GetParam().json;
  EXPECT_EQ(e.rfind(GetParam().key + ": ", 0), 0u) << "message: " << e;
}

const std::string B = R"("base_url":"https://a.test","ledger":"memory:")";
const std::string U = R"("base_url":"https://a.test")";  // no ledger

INSTANTIATE_TEST_SUITE_P(
    Config, ConfigErrors,
    ::testing::Values(
        BadConfig{"MaxAttemptsZero", "{" + B + R"(,"retry":{"max_attempts":0}})", "retry.max_attempts"},
        BadConfig{"MaxAttemptsTooMany", "{" + B + R"(,"retry":{"max_attempts":21}})", "retry.max_attempts"},
        BadConfig{"MaxAttemptsFraction", "{" + B + R"(,"retry":{"max_attempts":2.5}})", "retry.max_attempts"},
        BadConfig{"MaxAttemptsString", "{" + B + R"(,"retry":{"max_attempts":"3"}})", "retry.max_attempts"},
        BadConfig{"MaxAttemptsNull", "{" + B + R"(,"retry":{"max_attempts":null}})", "retry.max_attempts"},
        BadConfig{"UnknownRetryKey", "{" + B + R"(,"retry":{"foo":1}})", "retry.foo"},
        BadConfig{"DuplicateRetryKey", "{" + B + R"(,"retry":{"max_attempts":3,"max_attempts":20}})", "retry.max_attempts"},
        BadConfig{"DuplicateTopKey", "{" + B + R"(,"base_url":"https://b.test"})", "base_url"},
        BadConfig{"UnknownTopKey", "{" + B + R"(,"retries":{}})", "retries"},
        BadConfig{"UnknownBudgetKey", "{" + B + R"(,"budget":{"tokenz":1}})", "budget.tokenz"},
        BadConfig{"UnknownTlsKey", "{" + B + R"(,"tls":{"verify_host":true}})", "tls.verify_host"},
        BadConfig{"UnknownLogKey", "{" + B + R"(,"log":{"file":"x"}})", "log.file"},
        BadConfig{"UnknownAuthKey", "{" + B + R"(,"auth":{"basic":"x"}})", "auth.basic"},
        BadConfig{"RetryNotObject", "{" + B + R"(,"retry":[]})", "retry"},
        BadConfig{"BudgetNotObject", "{" + B + R"(,"budget":5})", "budget"},
        BadConfig{"NegativeDeadline", "{" + B + R"(,"retry":{"deadline_ms":-1}})", "retry.deadline_ms"},
        BadConfig{"ZeroDeadline", "{" + B + R"(,"retry":{"deadline_ms":0}})", "retry.deadline_ms"},
        BadConfig{"HugeDeadline", "{" + B + R"(,"retry":{"deadline_ms":1e300}})", "retry.deadline_ms"},
        BadConfig{"ZeroAttemptTimeout", "{" + B + R"(,"retry":{"attempt_timeout_ms":0}})", "retry.attempt_timeout_ms"},
        BadConfig{"ZeroConnectTimeout", "{" + B + R"(,"retry":{"connect_timeout_ms":0}})", "retry.connect_timeout_ms"},
        BadConfig{"NegativeBase", "{" + B + R"(,"retry":{"backoff_base_ms":-5}})", "retry.backoff_base_ms"},
        BadConfig{"CapBelowBase", "{" + B + R"(,"retry":{"backoff_base_ms":1000,"backoff_cap_ms":10}})", "retry.backoff_cap_ms"},
        BadConfig{"NegativeRetryAfterMax", "{" + B + R"(,"retry":{"retry_after_max_ms":-1}})", "retry.retry_after_max_ms"},
        BadConfig{"ZeroMinAttempt", "{" + B + R"(,"retry":{"min_attempt_ms":0}})", "retry.min_attempt_ms"},
        BadConfig{"DeadlineBelowMinAttempt", "{" + B + R"(,"retry":{"deadline_ms":100,"min_attempt_ms":200}})", "retry.deadline_ms"},
        BadConfig{"NegativeTokens", "{" + B + R"(,"budget":{"tokens":-1}})", "budget.tokens"},
        BadConfig{"CostWrongType", "{" + B + R"(,"budget":{"retry_cost":true}})", "budget.retry_cost"},
        BadConfig{"RefundFraction", "{" + B + R"(,"budget":{"success_refund":0.5}})", "budget.success_refund"},
        BadConfig{"TlsVerifyString", "{" + B + R"(,"tls":{"verify":"yes"}})", "tls.verify"},
        BadConfig{"CaFileNumber", "{" + B + R"(,"tls":{"ca_file":3}})", "tls.ca_file"},
        BadConfig{"LogLevelUnknown", "{" + B + R"(,"log":{"level":"verbose"}})", "log.level"},
        BadConfig{"LogPathNumber", "{" + B + R"(,"log":{"path":1}})", "log.path"},
        BadConfig{"ProviderNumber", "{" + B + R"(,"provider":7})", "provider"},
        BadConfig{"MaxBodyZero", "{" + B + R"(,"max_body_bytes":0})", "max_body_bytes"},
        BadConfig{"BaseUrlMissing", R"({"ledger":"memory:","provider":"generic"})", "base_url"},
        BadConfig{"BaseUrlNotString", R"({"ledger":"memory:","base_url":5})", "base_url"},
        BadConfig{"BaseUrlEmpty", R"({"ledger":"memory:","base_url":""})", "base_url"},
        BadConfig{"BaseUrlFtp", R"({"ledger":"memory:","base_url":"ftp://a.test"})", "base_url"},
        BadConfig{"BaseUrlNoScheme", R"({"ledger":"memory:","base_url":"a.test"})", "base_url"},
        BadConfig{"BaseUrlFile", R"({"ledger":"memory:","base_url":"file:///etc/passwd"})", "base_url"},
        BadConfig{"BaseUrlNoHost", R"({"ledger":"memory:","base_url":"https://"})", "base_url"},
        BadConfig{"BaseUrlCredentials", R"({"ledger":"memory:","base_url":"https://user:pw@a.test"})", "base_url"},
        BadConfig{"BaseUrlQuery", R"({"ledger":"memory:","base_url":"https://a.test/?x=1"})", "base_url"},
        BadConfig{"BaseUrlSpace", R"({"ledger":"memory:","base_url":"https://a .test"})", "base_url"},
        BadConfig{"BaseUrlCrLf", R"({"ledger":"memory:","base_url":"https://a.test\r\nX: y"})", "base_url"},
        BadConfig{"AuthBoth", "{" + B + R"(,"auth":{"bearer":"sk_1","header":"X-Key","value":"v"}})", "auth"},
        BadConfig{"AuthEmptyObject", "{" + B + R"(,"auth":{}})", "auth"},
        BadConfig{"AuthNotObject", "{" + B + R"(,"auth":"sk_live_x"})", "auth"},
        BadConfig{"AuthHeaderWithoutValue", "{" + B + R"(,"auth":{"header":"X-Key"}})", "auth.value"},
        BadConfig{"AuthValueWithoutHeader", "{" + B + R"(,"auth":{"value":"v"}})", "auth.header"},
        BadConfig{"AuthBadHeaderName", "{" + B + R"(,"auth":{"header":"X Key","value":"v"}})", "auth.header"},
        BadConfig{"AuthBearerEmpty", "{" + B + R"(,"auth":{"bearer":""}})", "auth.bearer"},
        BadConfig{"AuthBearerNumber", "{" + B + R"(,"auth":{"bearer":12345}})", "auth.bearer"},
        BadConfig{"AuthBearerCrLf", "{" + B + R"(,"auth":{"bearer":"sk_1\r\nX-Evil: 1"}})", "auth.bearer"},
        BadConfig{"AuthValueLf", "{" + B + R"(,"auth":{"header":"X-Key","value":"v\nX-Evil: 1"}})", "auth.value"},
        BadConfig{"HeaderValueCrLf", "{" + B + R"(,"headers":{"Stripe-Version":"2024\r\nX-Evil: 1"}})", "headers.Stripe-Version"},
        BadConfig{"HeaderBadName", "{" + B + R"(,"headers":{"Bad Name":"x"}})", "headers.Bad Name"},
        BadConfig{"HeaderValueNumber", "{" + B + R"(,"headers":{"X-Num":1}})", "headers.X-Num"},
        BadConfig{"CreatePathRelative", "{" + B + R"(,"create_path":"v1/pay"})", "create_path"},
        BadConfig{"LedgerMissing", "{" + U + "}", "ledger"},
        BadConfig{"LedgerNull", "{" + U + R"(,"ledger":null})", "ledger"},
        BadConfig{"LedgerEmpty", "{" + U + R"(,"ledger":""})", "ledger"},
        BadConfig{"LedgerNumber", "{" + U + R"(,"ledger":1})", "ledger"},
        BadConfig{"LedgerUnknownScheme", "{" + U + R"(,"ledger":"redis://cache/0"})", "ledger"},
        BadConfig{"LedgerMemoryMisspelt", "{" + U + R"(,"ledger":"memory"})", "ledger"},
        BadConfig{"LedgerRelativeSqlite", "{" + U + R"(,"ledger":"sqlite://payments.db"})", "ledger"},
        BadConfig{"LedgerObjectWithoutUrl", "{" + U + R"(,"ledger":{"timeout_ms":1000}})", "ledger.url"},
        BadConfig{"LedgerUnknownKey", "{" + U + R"(,"ledger":{"url":"memory:","timeout":1000}})", "ledger.timeout"},
        BadConfig{"LedgerTimeoutTooShort", "{" + U + R"(,"ledger":{"url":"memory:","timeout_ms":49}})", "ledger.timeout_ms"},
        BadConfig{"LedgerTimeoutZero", "{" + U + R"(,"ledger":{"url":"memory:","timeout_ms":0}})", "ledger.timeout_ms"},
        BadConfig{"LedgerTimeoutTooLong", "{" + U + R"(,"ledger":{"url":"memory:","timeout_ms":600001}})", "ledger.timeout_ms"},
        BadConfig{"LedgerTimeoutFraction", "{" + U + R"(,"ledger":{"url":"memory:","timeout_ms":100.5}})", "ledger.timeout_ms"},
        BadConfig{"LedgerTimeoutString", "{" + U + R"(,"ledger":{"url":"memory:","timeout_ms":"5s"}})", "ledger.timeout_ms"},
        BadConfig{"ProxyEmpty", "{" + B + R"(,"proxy":""})", "proxy"},
        BadConfig{"ProxyNumber", "{" + B + R"(,"proxy":3128})", "proxy"},
        BadConfig{"ProxyNoScheme", "{" + B + R"(,"proxy":"127.0.0.1:3128"})", "proxy"},
        BadConfig{"ProxyFtp", "{" + B + R"(,"proxy":"ftp://proxy.internal:21"})", "proxy"},
        BadConfig{"ProxySocks4", "{" + B + R"(,"proxy":"socks4://proxy.internal:1080"})", "proxy"},
        BadConfig{"ProxySpace", "{" + B + R"(,"proxy":"http://proxy .internal:3128"})", "proxy"},
        BadConfig{"ProxyCrLf", "{" + B + R"(,"proxy":"http://proxy.internal:3128
X: y"})", "proxy"},
        BadConfig{"ProxyNonAscii", "{" + B + R"(,"proxy":"http://pröxy.internal:3128"})", "proxy"},
        BadConfig{"MerchantIdEmpty", "{" + B + R"(,"merchant_id":""})", "merchant_id"},
        BadConfig{"MerchantIdNumber", "{" + B + R"(,"merchant_id":1230000109})", "merchant_id"},
        BadConfig{"MerchantIdTooLong", "{" + B + R"(,"merchant_id":")" + std::string(129, '7') + R"("})",
                  "merchant_id"}),
    [](const ::testing::TestParamInfo<BadConfig>& i) { return std::string(i.param.name); });

TEST(Config, BadAuthValueErrorNeverContainsTheSecret) {
  for (const std::string& json :
       {"{" + B + R"(,"auth":{"bearer":"sk_live_TOPSECRET\r\n"}})",
        "{" + B + R"(,"auth":{"header":"X-Key","value":"sk_live_TOPSECRET\n"}})",
        "{" + B + R"(,"auth":{"header":"X-Key","value":"sk_live_TOPSECRET\u00e9"}})",
        "{" + B + R"(,"auth":{"bearer":"sk_live_TOPSECRET","header":"X-Key","value":"sk_live_TOPSECRET"}})",
        "{" + B + R"(,"auth":{"value":"sk_live_TOPSECRET"}})"}) {
    const std::string e = config_error(json);
    ASSERT_NE(e, "") << json;
    EXPECT_FALSE(has(e, "TOPSECRET")) << "the error echoes the secret: " << e;
  }
}

TEST(Config, NotJsonIsAnError) {
  for (const char* bad : {"", "{", "not json", "{\"base_url\": }", "[1,2]", "\"https://a.test\"", "null", "42"}) {
    const std::string e = config_error(bad);
    EXPECT_NE(e, "") << "accepted: " << bad;
    EXPECT_TRUE(has(e, "config")) << e;
  }
}

TEST(Config, TrailingGarbageAfterTheObjectIsAnError) {
  EXPECT_NE(config_error(R"({"ledger":"memory:","base_url":"https://a.test"} trailing)"), "");
}

// ---- the ledger must be named ------------------------------------------------

TEST(Config, MissingLedgerIsAnErrorThatSaysMemoryMustBeWrittenOut) {
  // Before, no "ledger" meant memory: silently, and a service that forgot it
  // lost every idempotency key on restart (a second charge for an order
  // that was already paid). Now it must say so.
  const std::string e = config_error(R"({"base_url":"https://a.test","provider":"stripe"})");
  EXPECT_EQ(e.rfind("ledger: is required", 0), 0u) << e;
  EXPECT_TRUE(has(e, "\"memory:\"")) << e;
  EXPECT_TRUE(has(e, "sqlite:///")) << e;
  EXPECT_TRUE(has(e, "postgresql://")) << e;
}

TEST(Config, MemoryLedgerWrittenOutIsAccepted) {
  EXPECT_EQ(parse_config(R"({"base_url":"https://a.test","ledger":"memory:"})").ledger_url, "memory:");
  const Config o = parse_config(R"({"base_url":"https://a.test","ledger":{"url":"memory:"}})");
  EXPECT_EQ(o.ledger_url, "memory:");
  EXPECT_EQ(o.ledger_timeout_ms, 5000);
}

TEST(Config, DurableLedgerUrlsAreAccepted) {
  for (const char* url : {"sqlite:///var/lib/app/payments.db", "postgresql://app@db.example/pay",
                          "postgres://app:pw@db.example:5432/pay?sslmode=require"}) {
    const std::string json = std::string(R"({"base_url":"https://a.test","ledger":")") + url + "\"}";
    EXPECT_EQ(config_error(json), "") << json;
  }
}

TEST(Config, LedgerTimeoutBoundsEveryWaitFor50msTo10Minutes) {
  auto timeout = [](int64_t ms) {
    return parse_config(R"({"base_url":"https://a.test","ledger":{"url":"memory:","timeout_ms":)" +
                        std::to_string(ms) + "}}")
        .ledger_timeout_ms;
  };
  EXPECT_EQ(timeout(50), 50);
  EXPECT_EQ(timeout(5000), 5000);
  EXPECT_EQ(timeout(600000), 600000);
  EXPECT_TRUE(has(config_error(R"({"base_url":"https://a.test","ledger":{"url":"memory:","timeout_ms":49}})"),
                  "between 50 and 600000"));
}

// ---- proxy ------------------------------------------------------------------

TEST(Config, ProxyAcceptsHttpHttpsAndSocks5Urls) {
  for (const char* proxy : {"http://127.0.0.1:3128", "https://proxy.internal:8443", "socks5://127.0.0.1:1080",
                            "socks5h://proxy.internal:1080", "http://squid:pw@proxy.internal:3128"}) {
    const std::string json = std::string(R"({"base_url":"https://a.test","ledger":"memory:","proxy":")") + proxy + "\"}";
    EXPECT_EQ(parse_config(json).proxy, proxy) << json;
  }
}

TEST(Config, NoProxyOrANullProxyMeansNone) {
  EXPECT_EQ(parse_config(R"({"base_url":"https://a.test","ledger":"memory:"})").proxy, "");
  EXPECT_EQ(parse_config(R"({"base_url":"https://a.test","ledger":"memory:","proxy":null})").proxy, "");
}

TEST(Config, ProxyPasswordIsASecretAndIsRedacted) {
  const Config c = parse_config(
      R"({"base_url":"https://a.test","ledger":"memory:","proxy":"http://squid:pr0xy-Pa55@proxy.internal:3128"})");
  const auto s = c.secrets();
  EXPECT_NE(std::find(s.begin(), s.end(), "pr0xy-Pa55"), s.end());
  EXPECT_FALSE(has(redact("CONNECT via " + c.proxy + " failed", s), "pr0xy-Pa55"));
}

TEST(Config, ProxyPasswordWithARawAtIsWhollyASecret) {
  const Config c = parse_config(
      R"({"base_url":"https://a.test","ledger":"memory:","proxy":"socks5h://squid:pr0xy@Pa55@proxy.internal:1080"})");
  const auto s = c.secrets();
  EXPECT_NE(std::find(s.begin(), s.end(), "pr0xy@Pa55"), s.end());
  const std::string out = redact("proxy " + c.proxy + " refused", s);
  EXPECT_FALSE(has(out, "pr0xy")) << out;
  EXPECT_FALSE(has(out, "Pa55")) << out;
}

TEST(Config, ProxyWithoutCredentialsHasNoSecret) {
  const Config c = parse_config(R"({"base_url":"https://a.test","ledger":"memory:","proxy":"http://proxy.internal:3128"})");
  EXPECT_TRUE(c.secrets().empty());
}

// ---- ledger URL credentials ------------------------------------------------

TEST(Config, PostgresPasswordIsASecret) {
  const Config c = parse_config(R"({"base_url":"https://a.test","ledger":"postgresql://app:s3cret-pw@db.example:5432/pay"})");
  EXPECT_EQ(c.secrets(), std::vector<std::string>{"s3cret-pw"});
}

TEST(Config, PostgresPasswordWithARawSlashIsWhollyASecret) {
  // The path does not start inside the password: the host is after the last '@'.
  const Config c = parse_config(R"({"base_url":"https://a.test","ledger":"postgresql://app:pa/ss@db.example/pay"})");
  const auto s = c.secrets();
  EXPECT_NE(std::find(s.begin(), s.end(), "pa/ss"), s.end());
  EXPECT_FALSE(has(redact("cannot connect to " + c.ledger_url, s), "pa/ss"));
}

TEST(Config, PostgresPasswordWithARawAtIsWhollyASecret) {
  // The host starts after the LAST '@' before the path: the password is
  // "p@ss", not "p" (which would leave "ss" in every log line).
  const Config c = parse_config(R"({"base_url":"https://a.test","ledger":"postgresql://app:p@ss@db.example/pay"})");
  const auto s = c.secrets();
  EXPECT_NE(std::find(s.begin(), s.end(), "p@ss"), s.end());
  EXPECT_EQ(std::find(s.begin(), s.end(), "p"), s.end());
  const std::string out = redact("cannot connect to " + c.ledger_url, s);
  EXPECT_FALSE(has(out, "p@ss")) << out;
  EXPECT_FALSE(has(out, "ss@db")) << out;
  EXPECT_TRUE(has(out, "db.example/pay")) << out;
}

TEST(Config, PostgresUrlWithoutPasswordHasNoSecret) {
  for (const char* url : {"postgresql://app@db.example/pay", "postgresql://db.example:5432/pay",
                          "postgresql://app@db.example:5432/pay?application_name=a@b"}) {
    const Config c = parse_config(std::string(R"({"base_url":"https://a.test","ledger":")") + url + "\"}");
    EXPECT_TRUE(c.secrets().empty()) << url;
  }
}

// ---- merchant_id ------------------------------------------------------------

TEST(Config, MerchantIdIsKept) {
  EXPECT_EQ(parse_config(R"({"base_url":"https://a.test","ledger":"memory:","merchant_id":"1230000109"})").merchant_id,
            "1230000109");
  const std::string longest(128, '7');
  EXPECT_EQ(parse_config(R"({"base_url":"https://a.test","ledger":"memory:","merchant_id":")" + longest + "\"}")
                .merchant_id,
            longest);
}

}  // namespace
}  // namespace payretry
