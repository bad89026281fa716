// One attempt -> one verdict (docs/design.md "Verdicts"), under the generic and stripe profiles.
#include <gtest/gtest.h>

#include <string>

#include "classify.hpp"
#include "fakes.hpp"
#include "profile.hpp"

namespace payretry {
namespace {

using test::http;

const Profile& generic() {
  static const Profile p = *builtin_profile("generic");
  return p;
}
const Profile& stripe() {
  static const Profile p = *builtin_profile("stripe");
  return p;
}

void expect(const Profile& p, const TransportResult& t, Verdict v, bool processed, const std::string& what) {
  const Classification c = classify(p, t);
  EXPECT_EQ(verdict_name(c.verdict), std::string(verdict_name(v))) << p.name << ": " << what << " (reason " << c.reason << ")";
  EXPECT_EQ(c.may_have_processed, processed) << p.name << ": " << what;
  EXPECT_FALSE(c.reason.empty()) << p.name << ": " << what;
}

void both(const TransportResult& t, Verdict v, bool processed, const std::string& what) {
  expect(generic(), t, v, processed, what);
  expect(stripe(), t, v, processed, what);
}

TEST(Classify, BuiltinProfilesExist) {
  ASSERT_TRUE(builtin_profile("generic").has_value());
  ASSERT_TRUE(builtin_profile("stripe").has_value());
  EXPECT_FALSE(builtin_profile("nope").has_value());
  EXPECT_FALSE(builtin_profile("").has_value());
}

TEST(Classify, ConnectFailuresRetryAndWereNotProcessed) {
  both(test::connect_refused(), Verdict::retry, false, "connection refused");
  both(test::dns_failure(), Verdict::retry, false, "DNS failure");
  both(test::tls_handshake_failure(), Verdict::retry, false, "TLS handshake failure");
  both(test::connect_timeout(), Verdict::retry, false, "connect timeout");
}

TEST(Classify, TimeoutAfterTheRequestWasWrittenRetriesAndMayHaveProcessed) {
  both(test::timeout_after_write(), Verdict::retry, true, "timeout after write");
}

TEST(Classify, ResetOrEofAfterWriteRetriesAndMayHaveProcessed) {
  both(test::reset_after_write(), Verdict::retry, true, "reset after write");
  both(test::transport_failure(TransportFailure::replay_blocked, true, 5, "x"), Verdict::retry, true, "replay blocked");
  both(test::transport_failure(TransportFailure::response_too_large, true, 5, "x"), Verdict::retry, true, "too large");
  both(test::transport_failure(TransportFailure::other, true, 5, "x"), Verdict::retry, true, "other");
}

// Hole 6: an HTTP/2 stream reset, a weird reply, an answer too large to
// read or any other failure after the request may have been written is
// "connection_lost" for a profile's rule, so checkout_com's "look up first"
// catches it instead of generic's plain retry behind it.
TEST(Classify, EveryFailureAfterTheWriteMeetsTheProfilesConnectionLostRule) {
  const Profile ck = *builtin_profile("checkout_com");
  for (TransportFailure f : {TransportFailure::connection_lost, TransportFailure::replay_blocked,
                             TransportFailure::response_too_large, TransportFailure::other})
    expect(ck, test::transport_failure(f, true, 5, "stream not closed cleanly"), Verdict::query, true,
           transport_failure_name(f));
  expect(ck, test::timeout_after_write(), Verdict::query, true, "timeout after write");
  // Nothing written: a plain retry, whatever libcurl called it.
  for (TransportFailure f : {TransportFailure::other, TransportFailure::connection_lost, TransportFailure::not_started})
    expect(ck, test::transport_failure(f, false, 5, "x"), Verdict::retry, false, transport_failure_name(f));
}

TEST(Classify, TransportFailureFollowsWhetherAnythingWasWritten) {
  // Without proof of non-delivery, assume it may have been processed.
  both(test::transport_failure(TransportFailure::connect, true, 5, "x"), Verdict::retry, true, "connect, written");
  both(test::transport_failure(TransportFailure::timeout, false, 5, "x"), Verdict::retry, false, "timeout, not written");
}

TEST(Classify, TlsVerifyFailureIsFinalAndNotProcessed) {
  both(test::tls_verify_failure(), Verdict::fail, false, "certificate rejected");
}

TEST(Classify, ReadableTwoHundredIsSuccess) {
  both(http(200, R"({"id":"pi_1","status":"succeeded"})"), Verdict::success, true, "200");
  both(http(201, R"({"id":"pi_1"})"), Verdict::success, true, "201");
  both(http(202, R"({})"), Verdict::success, true, "202 empty object");
}

TEST(Classify, UnreadableTwoHundredIsRetriedAsMaybeProcessed) {
  both(http(200, "<html>oops</html>"), Verdict::retry, true, "HTML 200");
  both(http(200, ""), Verdict::retry, true, "empty 200");
  both(http(200, R"({"id":"pi_1")"), Verdict::retry, true, "truncated JSON 200");
  both(http(200, "[1,2]"), Verdict::retry, true, "JSON array 200");
  both(http(200, "\"ok\""), Verdict::retry, true, "JSON string 200");
}

TEST(Classify, ThrottledOrTooEarlyRetriesAndWasNotProcessed) {
  for (int s : {408, 425, 429}) both(http(s), Verdict::retry, false, std::to_string(s));
}

TEST(Classify, GatewayErrorsRetryAndMayHaveProcessed) {
  for (int s : {502, 503, 504}) both(http(s, "<html>bad gateway</html>"), Verdict::retry, true, std::to_string(s));
}

TEST(Classify, InternalErrorIsQueryUnderGenericButRetryUnderStripe) {
  for (int s : {500, 501, 507, 599}) {
    expect(generic(), http(s), Verdict::query, true, std::to_string(s));
    expect(stripe(), http(s), Verdict::retry, true, std::to_string(s));
  }
}

TEST(Classify, ConflictKeyInUseIsRetryAfterBackoff) {
  both(test::conflict_409(), Verdict::retry_after_backoff, true, "409 key in use");
  both(http(409), Verdict::retry_after_backoff, true, "409 no body");
}

TEST(Classify, SameKeyOtherParametersIsMismatch) {
  both(http(400, R"({"error":{"type":"idempotency_error","message":"..."}})"), Verdict::mismatch, false, "400 type");
  both(http(422, R"({"error":{"type":"idempotency_error"}})"), Verdict::mismatch, false, "422 type");
  both(http(400, R"({"error":{"code":"idempotency_key_reused"}})"), Verdict::mismatch, false, "400 code");
  both(http(422, R"({"code":"idempotency_key_reused"})"), Verdict::mismatch, false, "422 top-level code");
}

TEST(Classify, OtherIdempotencyCodesOnOtherStatusesAreNotMismatch) {
  both(http(402, R"({"error":{"type":"idempotency_error"}})"), Verdict::fail, false, "402 with idempotency_error");
  both(http(400, R"({"error":{"type":"invalid_request_error"}})"), Verdict::fail, false, "400 invalid request");
}

TEST(Classify, DefinitiveClientErrorsFailWithoutProcessing) {
  for (int s : {400, 401, 402, 403, 404, 405, 413, 422, 418, 451})
    both(http(s, R"({"error":{"type":"card_error","code":"card_declined"}})"), Verdict::fail, false, std::to_string(s));
}

TEST(Classify, DeclineCarriesTheProviderCode) {
  const Classification c = classify(generic(), test::decline_402());
  EXPECT_EQ(c.provider_code, "card_declined");
  EXPECT_EQ(c.reason, "http_402");
}

TEST(Classify, RedirectIsSettledByQuery) {
  for (int s : {301, 302, 303, 307}) both(http(s), Verdict::query, true, std::to_string(s));
}

TEST(Classify, StripeShouldRetryTrueOverridesAFinalStatus) {
  for (int s : {400, 402, 404}) {
    const auto t = http(s, "{}", {{"Stripe-Should-Retry", "true"}});
    expect(stripe(), t, Verdict::retry, true, "Stripe-Should-Retry: true on " + std::to_string(s));
    // The generic profile has no such header: the status decides.
    expect(generic(), t, Verdict::fail, false, "generic ignores Stripe-Should-Retry on " + std::to_string(s));
  }
}

TEST(Classify, StripeShouldRetryFalseOverridesARetryable5xx) {
  for (int s : {500, 502, 503}) {
    const auto t = http(s, "{}", {{"Stripe-Should-Retry", "false"}});
    expect(stripe(), t, Verdict::query, true, "Stripe-Should-Retry: false on " + std::to_string(s));
  }
}

TEST(Classify, StripeShouldRetryHeaderNameAndValueAreCaseInsensitive) {
  expect(stripe(), http(400, "{}", {{"stripe-should-retry", "TRUE"}}), Verdict::retry, true, "lower-case name");
  expect(stripe(), http(500, "{}", {{"STRIPE-SHOULD-RETRY", "False"}}), Verdict::query, true, "upper-case name");
}

TEST(Classify, StripeShouldRetryDoesNotTurnASuccessIntoARetry) {
  expect(stripe(), http(200, R"({"id":"pi_1"})", {{"Stripe-Should-Retry", "true"}}), Verdict::success, true, "200");
}

TEST(Classify, VerdictNamesAreStable) {
  EXPECT_STREQ(verdict_name(Verdict::success), "success");
  EXPECT_STREQ(verdict_name(Verdict::retry), "retry");
  EXPECT_STREQ(verdict_name(Verdict::retry_after_backoff), "retry_after_backoff");
  EXPECT_STREQ(verdict_name(Verdict::query), "query");
  EXPECT_STREQ(verdict_name(Verdict::fail), "fail");
  EXPECT_STREQ(verdict_name(Verdict::mismatch), "mismatch");
}

}  // namespace
}  // namespace payretry
