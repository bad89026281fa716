// Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date, relative to now.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "retry_after.hpp"

namespace payretry {
namespace {

constexpr int64_t kRfcExampleUnix = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT
constexpr int64_t kNow = 1'700'000'000'000;     // an unrelated "now" for delta-seconds

TEST(RetryAfter, DeltaSecondsBecomeMilliseconds) {
  EXPECT_EQ(parse_retry_after_ms("0", kNow), 0);
  EXPECT_EQ(parse_retry_after_ms("1", kNow), 1000);
  EXPECT_EQ(parse_retry_after_ms("120", kNow), 120000);
  EXPECT_EQ(parse_retry_after_ms("007", kNow), 7000);
}

TEST(RetryAfter, DeltaSecondsIgnoreSurroundingWhitespace) {
  EXPECT_EQ(parse_retry_after_ms(" 5 ", kNow), 5000);
  EXPECT_EQ(parse_retry_after_ms("\t30\t", kNow), 30000);
}

TEST(RetryAfter, DeltaSecondsDoNotDependOnNow) {
  EXPECT_EQ(parse_retry_after_ms("3", 0), 3000);
  EXPECT_EQ(parse_retry_after_ms("3", kNow), 3000);
}

TEST(RetryAfter, ImfFixdateIsRelativeToNow) {
  const int64_t now = (kRfcExampleUnix - 10) * 1000;
  EXPECT_EQ(parse_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", now), 10000);
  EXPECT_EQ(parse_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", now + 250), 9750);
}

TEST(RetryAfter, Rfc850DateIsRelativeToNow) {
  const int64_t now = (kRfcExampleUnix - 60) * 1000;
  EXPECT_EQ(parse_retry_after_ms("Sunday, 06-Nov-94 08:49:37 GMT", now), 60000);
}

TEST(RetryAfter, AsctimeDateIsRelativeToNow) {
  const int64_t now = (kRfcExampleUnix - 2) * 1000;
  EXPECT_EQ(parse_retry_after_ms("Sun Nov  6 08:49:37 1994", now), 2000);
}

TEST(RetryAfter, AllThreeDateFormsAgree) {
  const auto a = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT");
  const auto b = parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT");
  const auto c = parse_http_date("Sun Nov  6 08:49:37 1994");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, kRfcExampleUnix);
  EXPECT_EQ(*b, kRfcExampleUnix);
  EXPECT_EQ(*c, kRfcExampleUnix);
  EXPECT_EQ(parse_http_date("Sun Nov 16 08:49:37 1994"), kRfcExampleUnix + 10 * 86400);
}

TEST(RetryAfter, LeapDayIsAValidDate) {
  EXPECT_EQ(parse_http_date("Mon, 29 Feb 2016 00:00:00 GMT"), 1456704000);
  EXPECT_EQ(parse_http_date("Sun, 29 Feb 2015 00:00:00 GMT"), std::nullopt);  // 2015 is not a leap year
}

TEST(RetryAfter, PastDateMeansNow) {
  const int64_t later = (kRfcExampleUnix + 3600) * 1000;
  EXPECT_EQ(parse_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", later), 0);
  EXPECT_EQ(parse_retry_after_ms("Sunday, 06-Nov-94 08:49:37 GMT", later), 0);
  EXPECT_EQ(parse_retry_after_ms("Sun Nov  6 08:49:37 1994", later), 0);
  EXPECT_EQ(parse_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", kRfcExampleUnix * 1000), 0);  // exactly now
}

TEST(RetryAfter, GarbageIsIgnored) {
  for (const char* bad : {"soon", "-5", "+5", "1.5", "", "   ", "5s", "5 5", "0x10", "1e3",
                          "Sun, 32 Nov 1994 08:49:37 GMT",   // day 32
                          "Sun, 31 Nov 1994 08:49:37 GMT",   // November has 30 days
                          "Sun, 06 Foo 1994 08:49:37 GMT",   // month
                          "Sun, 06 Nov 1994 24:00:00 GMT",   // hour
                          "Sun, 06 Nov 1994 08:60:00 GMT",   // minute
                          "Sun, 06 Nov 1994 08:49:37 UTC",   // zone
                          "Xyz, 06 Nov 1994 08:49:37 GMT",   // day name
                          "Sun, 6 Nov 1994 08:49:37 GMT",    // day must be 2 digits
                          "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov 31 08:49:37 1994", "Feb 30",
                          "Mon, 30 Feb 2015 00:00:00 GMT", "Sun, 06 Nov 1994", "GMT"}) {
    const std::string v(bad);
    EXPECT_EQ(parse_retry_after_ms(v, kNow), std::nullopt) << "'" << v << "'";
  }
}

TEST(RetryAfter, DateIgnoresSurroundingWhitespace) {
  EXPECT_EQ(parse_retry_after_ms(" Sun, 06 Nov 1994 08:49:37 GMT ", (kRfcExampleUnix - 1) * 1000), 1000);
}

TEST(RetryAfter, EmbeddedNulIsGarbage) {
  const std::string v("12\0" "3", 4);
  EXPECT_EQ(parse_retry_after_ms(v, kNow), std::nullopt);
}

TEST(RetryAfter, HugeDeltaSaturatesInsteadOfOverflowing) {
  EXPECT_EQ(parse_retry_after_ms("99999999999999999999999", kNow), kRetryAfterSaturateMs);
  EXPECT_EQ(parse_retry_after_ms(std::string(5000, '9'), kNow), kRetryAfterSaturateMs);
  EXPECT_EQ(parse_retry_after_ms("9223372036854775807", kNow), kRetryAfterSaturateMs);
  EXPECT_EQ(parse_retry_after_ms("18446744073709551616", kNow), kRetryAfterSaturateMs);
  // Just below the saturation point stays exact.
  const int64_t secs = kRetryAfterSaturateMs / 1000 - 1;
  EXPECT_EQ(parse_retry_after_ms(std::to_string(secs), kNow), secs * 1000);
  EXPECT_EQ(parse_retry_after_ms(std::to_string(secs + 1), kNow), kRetryAfterSaturateMs);
}

TEST(RetryAfter, FarFutureDateSaturates) {
  EXPECT_EQ(parse_retry_after_ms("Fri, 31 Dec 9999 23:59:59 GMT", kNow), kRetryAfterSaturateMs);
  EXPECT_EQ(parse_retry_after_ms("Fri, 31 Dec 9999 23:59:59 GMT", INT64_MIN / 2), kRetryAfterSaturateMs);
}

TEST(RetryAfter, AncientDateIsPastNotNegative) {
  EXPECT_EQ(parse_retry_after_ms("Sat, 01 Jan 0000 00:00:00 GMT", kNow), 0);
  EXPECT_EQ(parse_retry_after_ms("Thu, 01 Jan 1970 00:00:00 GMT", kNow), 0);
}

}  // namespace
}  // namespace payretry
