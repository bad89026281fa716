// Caller strings that reach the wire or the logs are checked before anything
// is sent, and the reason never echoes the value.
#include <gtest/gtest.h>

#include <string>

#include "validate.hpp"

namespace payretry {
namespace {

const std::string kSecretish = "SECRETVALUE";

TEST(Validate, KeyOfMaxLengthIsAccepted) {
  EXPECT_EQ(check_idempotency_key(std::string(255, 'k')), "");
  EXPECT_EQ(check_idempotency_key("a"), "");
  EXPECT_EQ(check_idempotency_key("550e8400-e29b-41d4-a716-446655440000"), "");
  EXPECT_EQ(check_idempotency_key("order_42:attempt!~"), "");
}

TEST(Validate, KeyOverMaxLengthIsRejected) {
  const std::string e = check_idempotency_key(std::string(256, 'k'));
  EXPECT_NE(e, "");
  EXPECT_EQ(e.find("kkkk"), std::string::npos) << e;
}

TEST(Validate, KeyLimitFollowsTheProfile) {
  EXPECT_EQ(check_idempotency_key(std::string(64, 'k'), 64), "");
  EXPECT_NE(check_idempotency_key(std::string(65, 'k'), 64), "");
}

TEST(Validate, EmptyKeyIsRejected) { EXPECT_NE(check_idempotency_key(""), ""); }

TEST(Validate, KeyWithHeaderInjectionBytesIsRejected) {
  for (const std::string& k : {kSecretish + "\r", kSecretish + "\n", kSecretish + "\r\nX-Evil: 1",
                               std::string("ab\0cd", 5), kSecretish + " tail", std::string("tab\there"),
                               std::string("caf\xC3\xA9"), std::string("\x7F"), std::string("\x01")}) {
    const std::string e = check_idempotency_key(k);
    EXPECT_NE(e, "") << "accepted a key with a forbidden byte";
    EXPECT_EQ(e.find(kSecretish), std::string::npos) << "the reason echoes the value: " << e;
  }
}

TEST(Validate, OrderIdRules) {
  EXPECT_EQ(check_order_id("order-2024-0001"), "");
  EXPECT_EQ(check_order_id(std::string(255, 'o')), "");
  EXPECT_NE(check_order_id(std::string(256, 'o')), "");
  EXPECT_NE(check_order_id(""), "");
  for (const std::string& o : {kSecretish + " x", kSecretish + "\r\n", std::string("o\0x", 3),
                               kSecretish + "\xE2\x82\xAC"}) {
    const std::string e = check_order_id(o);
    EXPECT_NE(e, "");
    EXPECT_EQ(e.find(kSecretish), std::string::npos) << e;
  }
}

TEST(Validate, PathRules) {
  EXPECT_EQ(check_path("/v1/payment_intents"), "");
  EXPECT_EQ(check_path("/v1/payments?expand=charges"), "");
  EXPECT_EQ(check_path("/"), "");
  EXPECT_NE(check_path(""), "");
  EXPECT_NE(check_path("v1/payments"), "");          // must start with '/'
  EXPECT_NE(check_path("https://evil.test/x"), "");  // not a path
  EXPECT_NE(check_path("/v1/pay ments"), "");
  EXPECT_NE(check_path("/v1/payments#frag"), "");
  EXPECT_NE(check_path("/v1/\r\nHost: evil"), "");
  EXPECT_NE(check_path(std::string("/v1\0/x", 6)), "");
  EXPECT_NE(check_path("/" + std::string(3000, 'p')), "");
}

TEST(Validate, HeaderNameMustBeAnHttpToken) {
  for (const char* ok : {"X-Api-Key", "Idempotency-Key", "a", "X_Custom.1!#$%&'*+-^`|~"})
    EXPECT_EQ(check_header_name(ok), "") << ok;
  for (const std::string& bad : {std::string(""), std::string("X Api"), std::string("X:Api"), std::string("X\r\nY"),
                                 std::string("X\0Y", 3), std::string("X(Y)"), std::string("X\"Y"),
                                 std::string("\xC3\xA9"), std::string(257, 'h')})
    EXPECT_NE(check_header_name(bad), "") << "accepted a bad header name";
  EXPECT_EQ(check_header_name(std::string(256, 'h')), "");
}

TEST(Validate, HeaderValueIsPrintableWithSpaceAndTab) {
  EXPECT_EQ(check_header_value("Bearer sk_test_123"), "");
  EXPECT_EQ(check_header_value("a\tb c"), "");
  EXPECT_EQ(check_header_value(""), "");
  EXPECT_EQ(check_header_value(std::string(8192, 'v')), "");
  EXPECT_NE(check_header_value(std::string(8193, 'v')), "");
  for (const std::string& bad : {kSecretish + "\r", kSecretish + "\n", kSecretish + "\r\nX-Injected: 1",
                                 kSecretish + std::string("\0", 1), kSecretish + "\x7F", kSecretish + "\xC3\xA9"}) {
    const std::string e = check_header_value(bad);
    EXPECT_NE(e, "");
    EXPECT_EQ(e.find(kSecretish), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace payretry
