// The JSON configuration (DESIGN §7): strict, and every error names its key.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"

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
  "log": {"path": null, "level": "warn"}
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
}

TEST(Config, DefaultsApplyWhenOnlyBaseUrlIsGiven) {
  const Config c = parse_config(R"({"base_url":"http://127.0.0.1:8080"})");
  EXPECT_EQ(c.provider, "generic");
  EXPECT_TRUE(c.auth_headers.empty());
  EXPECT_EQ(c.retry.max_attempts, 3);
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
}

TEST(Config, PartialRetryKeepsTheOtherDefaults) {
  const Config c = parse_config(R"({"base_url":"https://a.test","retry":{"max_attempts":5}})");
  EXPECT_EQ(c.retry.max_attempts, 5);
  EXPECT_EQ(c.retry.deadline_ms, 30000);
}

TEST(Config, TrailingSlashesAreStrippedFromBaseUrl) {
  EXPECT_EQ(parse_config(R"({"base_url":"https://a.test/api//"})").base_url, "https://a.test/api");
}

TEST(Config, HeaderAuthAndItsSecret) {
  const Config c = parse_config(R"({"base_url":"https://a.test","auth":{"header":"X-Api-Key","value":"key_live_777"}})");
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
  EXPECT_EQ(parse_config(R"({"base_url":"https://a.test","retry":{"jitter_seed":42}})").retry.jitter_seed, 42u);
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

const std::string B = R"("base_url":"https://a.test")";

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
        BadConfig{"BaseUrlMissing", R"({"provider":"generic"})", "base_url"},
        BadConfig{"BaseUrlNotString", R"({"base_url":5})", "base_url"},
        BadConfig{"BaseUrlEmpty", R"({"base_url":""})", "base_url"},
        BadConfig{"BaseUrlFtp", R"({"base_url":"ftp://a.test"})", "base_url"},
        BadConfig{"BaseUrlNoScheme", R"({"base_url":"a.test"})", "base_url"},
        BadConfig{"BaseUrlFile", R"({"base_url":"file:///etc/passwd"})", "base_url"},
        BadConfig{"BaseUrlNoHost", R"({"base_url":"https://"})", "base_url"},
        BadConfig{"BaseUrlCredentials", R"({"base_url":"https://user:pw@a.test"})", "base_url"},
        BadConfig{"BaseUrlQuery", R"({"base_url":"https://a.test/?x=1"})", "base_url"},
        BadConfig{"BaseUrlSpace", R"({"base_url":"https://a .test"})", "base_url"},
        BadConfig{"BaseUrlCrLf", R"({"base_url":"https://a.test\r\nX: y"})", "base_url"},
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
        BadConfig{"CreatePathRelative", "{" + B + R"(,"create_path":"v1/pay"})", "create_path"}),
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
  EXPECT_NE(config_error(R"({"base_url":"https://a.test"} trailing)"), "");
}

}  // namespace
}  // namespace payretry
