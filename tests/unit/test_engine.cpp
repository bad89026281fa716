// The engine: one logical payment as a safe sequence of attempts, driven
// through scripted transport results under a virtual clock.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine.hpp"
#include "error.hpp"
#include "fakes.hpp"

namespace payretry {
namespace {

using namespace payretry::test;

const std::string kBody = std::string(R"({"amount":2000,"currency":"eur","note":"caf)") + "\xC3\xA9" + R"("})";

// Runs `f` and returns the Errc it threw; fails the test when nothing was thrown.
template <class F>
std::optional<Errc> thrown(F&& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  ADD_FAILURE() << "no payretry::Error thrown";
  return std::nullopt;
}

// ---- keys and bytes -------------------------------------------------------------

TEST(Engine, EveryAttemptCarriesTheSameKeyAndByteIdenticalBody) {
  Harness h;
  h.transport.script = {timeout_after_write(), http(503), connect_refused(), reset_after_write(), ok_200()};
  h.config.retry.max_attempts = 5;
  h.config.retry.deadline_ms = 120000;
  const std::string body = kBody + std::string("\0tail", 5);  // bytes, not a C string
  const PaymentResult r = h.submit("order-1", body);
  ASSERT_EQ(h.transport.sent.size(), 5u);
  EXPECT_EQ(r.outcome, Outcome::succeeded);
  for (const SentRequest& s : h.transport.sent) {
    EXPECT_EQ(s.one("Idempotency-Key"), r.idempotency_key);
    EXPECT_EQ(s.body, body);
    EXPECT_EQ(s.body.size(), body.size());
    EXPECT_EQ(s.url, "https://api.provider.test/v1/payments");
    EXPECT_EQ(s.one("Authorization"), std::string("Bearer ") + kBearer);
    EXPECT_EQ(s.one("Content-Type"), "application/json");
  }
  EXPECT_EQ(r.attempts.size(), 5u);
  for (size_t i = 0; i < r.attempts.size(); ++i) EXPECT_EQ(r.attempts[i].number, i + 1);
}

TEST(Engine, CallerKeyIsUsedAsGiven) {
  Harness h;
  h.transport.script = {http(503), ok_200()};
  const std::string key = "merchant-key_42:~!";
  const PaymentResult r = h.submit("order-1", kBody, key);
  EXPECT_EQ(r.idempotency_key, key);
  EXPECT_EQ(h.keys.calls, 0) << "a key was generated although the caller gave one";
  ASSERT_EQ(h.transport.sent.size(), 2u);
  for (const auto& s : h.transport.sent) EXPECT_EQ(s.one("Idempotency-Key"), key);
}

TEST(Engine, GeneratedKeyIsUsedWhenNoneIsGiven) {
  Harness h;
  h.transport.script = {timeout_after_write(), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(h.keys.calls, 1) << "exactly one key per payment";
  EXPECT_EQ(r.idempotency_key, "gen-key-1");
  for (const auto& s : h.transport.sent) EXPECT_EQ(s.one("Idempotency-Key"), "gen-key-1");
}

TEST(Engine, EachPaymentGetsItsOwnGeneratedKey) {
  Harness h;
  h.transport.script = {ok_200(), ok_200()};
  EXPECT_EQ(h.submit("order-1", kBody).idempotency_key, "gen-key-1");
  EXPECT_EQ(h.submit("order-2", kBody).idempotency_key, "gen-key-2");
}

TEST(Engine, StripeProfileSendsToItsCreatePathWithTheKeyHeader) {
  Harness h("stripe");
  h.config.create_path.clear();
  h.transport.script = {ok_200()};
  h.submit("order-1", kBody, "k1");
  ASSERT_EQ(h.transport.sent.size(), 1u);
  EXPECT_EQ(h.transport.sent[0].url, "https://api.provider.test/v1/payment_intents");
  EXPECT_EQ(h.transport.sent[0].one("Idempotency-Key"), "k1");
}

TEST(Engine, AnErrorThatNamesItsPaymentIntentKeepsTheIdForALookup) {
  // Stripe answers an error about a PaymentIntent with the object itself
  // (error.payment_intent); a payment left UNKNOWN can then be read by id.
  Harness h("stripe");
  h.transport.script = {http(500, R"({"error":{"type":"api_error","payment_intent":{"id":"pi_kept","status":"processing"}}})",
                             {{"Stripe-Should-Retry", "false"}})};
  const PaymentResult r = h.submit("order-1", R"({"amount":100,"currency":"usd"})", "k1");
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.provider_payment_id, "pi_kept");
  // A profile without error_id_path reads no id from errors.
  Harness g("generic");
  g.transport.script = {http(400, R"({"error":{"payment_intent":{"id":"pi_x"}},"id":"err_1"})")};
  EXPECT_EQ(g.submit("order-1", kBody, "k1").provider_payment_id, "");
}

TEST(Engine, PerRequestPathOverridesTheConfigPath) {
  Harness h;
  h.transport.script = {ok_200()};
  h.submit("order-1", kBody, "", 0, "/v2/charges");
  EXPECT_EQ(h.transport.sent.at(0).url, "https://api.provider.test/v2/charges");
}

// ---- attempts and outcomes ------------------------------------------------------

TEST(Engine, AttemptsNeverExceedMaxAttempts) {
  for (int max : {1, 2, 3, 4, 7}) {
    Harness h;
    h.config.retry.max_attempts = max;
    h.config.retry.deadline_ms = 10 * 60 * 1000;
    for (int i = 0; i < 20; ++i) h.transport.script.push_back(http(503));
    const PaymentResult r = h.submit("order-1", kBody);
    EXPECT_EQ(h.transport.sent.size(), static_cast<size_t>(max));
    EXPECT_EQ(r.attempts.size(), static_cast<size_t>(max));
    EXPECT_EQ(r.outcome, Outcome::unknown);
    EXPECT_TRUE(starts_with(r.error, "attempts_exhausted")) << r.error;
    EXPECT_EQ(h.sleeper.sleeps.size(), static_cast<size_t>(max - 1)) << "no sleep after the last attempt";
  }
}

TEST(Engine, ExhaustedRetriesAfterOnlyConnectFailuresAreUnknownNotSent) {
  Harness h;
  h.transport.script = {connect_refused(), dns_failure(), tls_handshake_failure()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown) << "exhausting retries is never FAILED";
  EXPECT_EQ(r.delivery, Delivery::not_sent);
  EXPECT_EQ(r.attempts.size(), 3u);
}

TEST(Engine, ExhaustedRetriesAfterAnyTimeoutAreUnknownMaybeProcessed) {
  Harness h;
  h.transport.script = {connect_refused(), timeout_after_write(), connect_refused()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.delivery, Delivery::maybe_processed);
}

TEST(Engine, ExhaustedRetriesAfterAResetAreUnknownMaybeProcessed) {
  Harness h;
  h.transport.script = {reset_after_write(), connect_refused(), connect_refused()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.delivery, Delivery::maybe_processed);
}

TEST(Engine, ExhaustedRetriesAfterOnly429sAreUnknownNotSent) {
  Harness h;
  h.transport.script = {throttled_429(), throttled_429(), throttled_429()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.delivery, Delivery::not_sent);
}

TEST(Engine, SuccessReadsTheProviderIdAndStatus) {
  Harness h;
  h.transport.script = {http(200, R"({"id":"pi_9","status":"requires_action"})", {{"Request-Id", "req_77"}})};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::succeeded);
  EXPECT_EQ(r.delivery, Delivery::delivered);
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.provider_payment_id, "pi_9");
  EXPECT_EQ(r.provider_status, "requires_action");
  EXPECT_EQ(r.error, "");
  ASSERT_EQ(r.attempts.size(), 1u);
  EXPECT_EQ(r.attempts[0].provider_request_id, "req_77");
}

TEST(Engine, MalformedSuccessIsRetriedWithTheSameKey) {
  Harness h;
  h.transport.script = {malformed_200(), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::succeeded);
  EXPECT_EQ(h.transport.sent.size(), 2u);
}

TEST(Engine, MalformedSuccessOnTheLastAttemptIsUnknownMaybeProcessed) {
  Harness h;
  h.config.retry.max_attempts = 1;
  h.transport.script = {malformed_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.delivery, Delivery::maybe_processed);
}

TEST(Engine, DeclineOnTheFirstAttemptIsFailed) {
  Harness h;
  h.transport.script = {decline_402()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_EQ(r.delivery, Delivery::delivered);
  EXPECT_EQ(r.http_status, 402);
  EXPECT_TRUE(contains(r.error, "card_declined")) << r.error;
  EXPECT_EQ(h.transport.sent.size(), 1u) << "a decline is never retried";
}

TEST(Engine, DeclineAfterOnlyConnectFailuresIsFailed) {
  Harness h;
  h.transport.script = {connect_refused(), decline_402()};
  EXPECT_EQ(h.submit("order-1", kBody).outcome, Outcome::failed);
}

TEST(Engine, DeclineAfterALostResponseIsUnknown) {
  // The timed-out attempt may have charged; a 402 that is not a replay of it
  // may come from a layer in front of the idempotency store.
  Harness h;
  h.transport.script = {timeout_after_write(), decline_402(/*replayed=*/false)};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.delivery, Delivery::maybe_processed);
  EXPECT_EQ(h.transport.sent.size(), 2u);
}

TEST(Engine, ReplayedDeclineAfterALostResponseIsFailed) {
  Harness h;
  h.transport.script = {timeout_after_write(), decline_402(/*replayed=*/true)};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::failed);
  ASSERT_EQ(r.attempts.size(), 2u);
  EXPECT_TRUE(r.attempts[1].replayed);
}

TEST(Engine, ReplayMarkerSetToFalseIsNoReplay) {
  Harness h;
  auto not_replayed = decline_402();
  not_replayed.response.headers.emplace_back("Idempotent-Replayed", "false");
  h.transport.script = {timeout_after_write(), not_replayed};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  ASSERT_EQ(r.attempts.size(), 2u);
  EXPECT_FALSE(r.attempts[1].replayed);
}

TEST(Engine, TlsVerifyFailureIsFailedWithoutRetry) {
  Harness h;
  h.transport.script = {tls_verify_failure()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_EQ(h.transport.sent.size(), 1u);
}

TEST(Engine, TlsVerifyFailureIsNotReportedAsDelivered) {
  // result.h: DELIVERED means "the provider answered definitively"; a
  // rejected certificate means the request never left this host.
  Harness h;
  h.transport.script = {tls_verify_failure()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_EQ(r.delivery, Delivery::not_sent);
}

TEST(Engine, HttpStatusIsZeroWhenATransportFailureDecidedTheOutcome) {
  // result.h: pay_result_http_status is "the response that decided the
  // outcome; 0 when no response decided it (a transport failure ...)", and
  // pay_result_body is the body of that response.
  Harness h;
  h.transport.script = {http(503, "<html>503 from an earlier attempt</html>"), timeout_after_write(1000),
                        timeout_after_write(1000)};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.http_status, 0) << "reports the status of an earlier, non-deciding attempt";
  EXPECT_EQ(r.body, "");
}

TEST(Engine, GenericInternalErrorStopsWithUnknownForAQuery) {
  Harness h("generic");
  h.transport.script = {http(500)};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.delivery, Delivery::maybe_processed);
  EXPECT_EQ(h.transport.sent.size(), 1u);
}

TEST(Engine, StripeInternalErrorIsRetriedWithTheSameKey) {
  Harness h("stripe");
  h.transport.script = {http(500), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::succeeded);
  EXPECT_EQ(h.transport.sent.size(), 2u);
}

TEST(Engine, ConflictIsRetriedAfterBackoff) {
  Harness h;
  h.transport.script = {conflict_409(), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::succeeded);
  ASSERT_EQ(h.sleeper.sleeps.size(), 1u);
  EXPECT_GE(h.sleeper.sleeps[0], h.config.retry.backoff_base_ms / 2);
  EXPECT_EQ(r.attempts.at(0).verdict, "retry_after_backoff");
}

// ---- Retry-After -------------------------------------------------------------------

TEST(Engine, RetryAfterSecondsIsAFloorOnTheDelay) {
  Harness h;
  h.transport.script = {throttled_429("7"), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::succeeded);
  ASSERT_EQ(h.sleeper.sleeps.size(), 1u);
  EXPECT_EQ(h.sleeper.sleeps[0], 7000);  // the first backoff is at most 500
  EXPECT_EQ(r.attempts[0].delay_ms, 7000);
  EXPECT_EQ(r.attempts[0].delay_source, "retry_after");
}

TEST(Engine, RetryAfterBelowTheBackoffDoesNotShortenIt) {
  Harness h;
  h.config.retry.backoff_base_ms = 2000;
  h.transport.script = {throttled_429("0"), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  ASSERT_EQ(h.sleeper.sleeps.size(), 1u);
  EXPECT_GE(h.sleeper.sleeps[0], 1000) << "Retry-After: 0 replaced the backoff instead of flooring it";
  EXPECT_EQ(r.attempts[0].delay_source, "backoff");
}

TEST(Engine, RetryAfterHttpDateIsAFloorNotAReplacement) {
  Harness h;
  // The 429 comes back 1 s after the attempt starts and names a time 9 s after that.
  h.transport.script = {http(429, "{}", {{"Retry-After", imf_fixdate(h.clock.unix + 10000)}}, 1000), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::succeeded);
  ASSERT_EQ(h.sleeper.sleeps.size(), 1u);
  EXPECT_EQ(h.sleeper.sleeps[0], 9000);
  EXPECT_EQ(r.attempts[0].delay_source, "retry_after");
}

TEST(Engine, RetryAfterPastDateFallsBackToBackoff) {
  Harness h;
  h.transport.script = {throttled_429(imf_fixdate(h.clock.unix - 3600 * 1000)), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  ASSERT_EQ(h.sleeper.sleeps.size(), 1u);
  EXPECT_GE(h.sleeper.sleeps[0], 250);
  EXPECT_LE(h.sleeper.sleeps[0], 500);
  EXPECT_EQ(r.attempts[0].delay_source, "backoff");
}

TEST(Engine, GarbageRetryAfterIsIgnored) {
  Harness h;
  h.transport.script = {throttled_429("soon"), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::succeeded);
  EXPECT_EQ(r.attempts[0].delay_source, "backoff");
}

TEST(Engine, RetryAfterIsCappedByRetryAfterMax) {
  Harness h;
  h.config.retry.retry_after_max_ms = 2000;
  h.transport.script = {throttled_429("20"), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::succeeded);
  ASSERT_EQ(h.sleeper.sleeps.size(), 1u);
  EXPECT_EQ(h.sleeper.sleeps[0], 2000);
}

TEST(Engine, RetryAfterDateIsCappedByRetryAfterMax) {
  Harness h;
  h.config.retry.retry_after_max_ms = 3000;
  h.transport.script = {throttled_429(imf_fixdate(h.clock.unix + 20000)), ok_200()};
  h.submit("order-1", kBody);
  ASSERT_EQ(h.sleeper.sleeps.size(), 1u);
  EXPECT_EQ(h.sleeper.sleeps[0], 3000);
}

TEST(Engine, RetryAfterBeyondTheDeadlineStopsWithoutAnotherAttempt) {
  Harness h;
  h.transport.script = {throttled_429("60"), ok_200()};  // deadline is 30 s
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.error, "retry_after_beyond_deadline");
  EXPECT_EQ(r.delivery, Delivery::not_sent) << "only a 429 was ever answered: nothing was processed";
  EXPECT_EQ(h.transport.sent.size(), 1u);
  EXPECT_TRUE(h.sleeper.sleeps.empty()) << "it waited although it would not retry";
}

TEST(Engine, RetryAfterDateBeyondTheDeadlineStops) {
  Harness h;
  h.transport.script = {throttled_429(imf_fixdate(h.clock.unix + 3600 * 1000)), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.error, "retry_after_beyond_deadline");
  EXPECT_EQ(r.delivery, Delivery::not_sent);
  EXPECT_EQ(h.transport.sent.size(), 1u);
}

TEST(Engine, RetryAfterBeyondTheDeadlineAfterATimeoutIsMaybeProcessed) {
  Harness h;
  h.transport.script = {timeout_after_write(1000), http(503, "{}", {{"Retry-After", "3600"}}), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.error, "retry_after_beyond_deadline");
  EXPECT_EQ(r.delivery, Delivery::maybe_processed);
  EXPECT_EQ(h.transport.sent.size(), 2u);
}

TEST(Engine, SaturatedRetryAfterStops) {
  Harness h;
  h.transport.script = {throttled_429("99999999999999999999999"), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.error, "retry_after_beyond_deadline");
  EXPECT_EQ(h.transport.sent.size(), 1u);
}

// ---- deadline ---------------------------------------------------------------------

TEST(Engine, NoRetryWhenTheDelayWouldLeaveLessThanMinAttempt) {
  Harness h;
  h.config.retry.attempt_timeout_ms = 30000;
  h.transport.script = {http(503, "{}", {}, 29700), ok_200()};  // 300 ms left: < backoff + min_attempt
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_TRUE(starts_with(r.error, "deadline")) << r.error;
  EXPECT_EQ(h.transport.sent.size(), 1u);
  EXPECT_TRUE(h.sleeper.sleeps.empty());
}

TEST(Engine, NoAttemptStartsWhenTheRemainingDeadlineIsBelowMinAttempt) {
  // The sleeper wakes late (as real ones do): after the sleep less than
  // min_attempt_ms is left, so no attempt may start.
  Harness h;
  h.config.retry.min_attempt_ms = 1000;
  h.config.retry.attempt_timeout_ms = 30000;
  h.sleeper.oversleep_ms = 6500;
  h.transport.script = {http(503, "{}", {}, 23000), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(h.transport.sent.size(), 1u) << "an attempt started with under min_attempt_ms left";
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_TRUE(starts_with(r.error, "deadline")) << r.error;
}

TEST(Engine, EveryAttemptStartsWithAtLeastMinAttemptLeft) {
  Harness h;
  h.config.retry.max_attempts = 20;
  h.config.retry.attempt_timeout_ms = 4000;
  for (int i = 0; i < 20; ++i) h.transport.script.push_back(timeout_after_write());
  const PaymentResult r = h.submit("order-1", kBody);
  const int64_t deadline = h.transport.sent.at(0).started_mono_ms + h.config.retry.deadline_ms;
  for (const auto& s : h.transport.sent) {
    EXPECT_GE(deadline - s.started_mono_ms, h.config.retry.min_attempt_ms);
    EXPECT_LE(s.started_mono_ms + s.timeout_ms, deadline);
  }
  EXPECT_LE(h.clock.mono, deadline);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_LT(h.transport.sent.size(), 20u);
}

TEST(Engine, SlowHookDoesNotPushTheAttemptPastTheDeadline) {
  // A signing hook that takes 2 s (a remote HSM): the time it takes is gone
  // from the deadline, so the attempt's timeout must come from what is left
  // when the request is actually sent.
  Harness h;
  h.config.retry.max_attempts = 5;
  h.hook = [&h](const AttemptView&, Headers&) {
    h.clock.advance(2000);
    return std::string();
  };
  for (int i = 0; i < 5; ++i) h.transport.script.push_back(timeout_after_write());
  const int64_t deadline = h.clock.mono + h.config.retry.deadline_ms;
  h.submit("order-1", kBody);
  ASSERT_FALSE(h.transport.sent.empty());
  for (size_t i = 0; i < h.transport.sent.size(); ++i) {
    const SentRequest& s = h.transport.sent[i];
    EXPECT_LE(s.started_mono_ms + s.timeout_ms, deadline)
        << "attempt " << i + 1 << " may run " << (s.started_mono_ms + s.timeout_ms - deadline) << " ms past the deadline";
  }
  EXPECT_LE(h.clock.mono, deadline);
}

TEST(Engine, LastAttemptTimeoutShrinksToTheRemainingDeadline) {
  Harness h;
  h.config.retry.max_attempts = 5;
  h.config.retry.backoff_cap_ms = 500;
  h.transport.script = {timeout_after_write(), timeout_after_write(), timeout_after_write(), timeout_after_write()};
  h.submit("order-1", kBody);
  ASSERT_EQ(h.transport.sent.size(), 3u);
  const int64_t deadline = h.transport.sent[0].started_mono_ms + 30000;
  EXPECT_EQ(h.transport.sent[0].timeout_ms, 10000);
  EXPECT_EQ(h.transport.sent[1].timeout_ms, 10000);
  const SentRequest& last = h.transport.sent[2];
  EXPECT_LT(last.timeout_ms, 10000);
  EXPECT_EQ(last.timeout_ms, deadline - last.started_mono_ms);
  EXPECT_LE(last.connect_timeout_ms, last.timeout_ms);
  for (const auto& s : h.transport.sent) EXPECT_EQ(s.connect_timeout_ms, std::min<int64_t>(3000, s.timeout_ms));
}

TEST(Engine, RequestDeadlineIsTheSmallerOfTheTwo) {
  Harness h;
  h.transport.script = {timeout_after_write(), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody, "", /*deadline_ms=*/5000);
  ASSERT_EQ(h.transport.sent.size(), 1u);
  EXPECT_EQ(h.transport.sent[0].timeout_ms, 5000);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.elapsed_ms, 5000);

  Harness g;
  g.transport.script = {ok_200()};
  g.submit("order-1", kBody, "", /*deadline_ms=*/10 * 60 * 1000);
  EXPECT_EQ(g.transport.sent.at(0).timeout_ms, 10000);
}

// ---- retry budget -------------------------------------------------------------------

TEST(Engine, RetryBudgetStopsRetriesWhenExhausted) {
  Harness h;
  h.config.retry.max_attempts = 10;
  h.config.retry.deadline_ms = 10 * 60 * 1000;
  h.config.budget = BudgetPolicy{10, 5, 1};  // two retries, client-wide
  for (int i = 0; i < 10; ++i) h.transport.script.push_back(http(503));
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(h.transport.sent.size(), 3u);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_TRUE(starts_with(r.error, "retry_budget_exhausted")) << r.error;
  EXPECT_EQ(h.budget().tokens(), 0);

  // The next payment of the same client cannot retry at all.
  const PaymentResult r2 = h.submit("order-2", kBody);
  EXPECT_EQ(h.transport.sent.size(), 4u);
  EXPECT_TRUE(starts_with(r2.error, "retry_budget_exhausted")) << r2.error;

  JsonDoc stats(h.stats.to_json(h.budget().tokens()));
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats.num("budget_exhausted"), 2);
  EXPECT_EQ(stats.num("attempts"), 4);
  EXPECT_EQ(stats.num("retries"), 2);
}

TEST(Engine, ASuccessAfterARetryGivesTheRetrysCostBack) {
  Harness h;
  h.config.budget = BudgetPolicy{5, 5, 1};  // one retry; a first-attempt success gives back only 1
  h.transport.script = {http(503), ok_200(), http(503), ok_200(), http(503), ok_200()};
  for (const char* order : {"order-1", "order-2", "order-3"}) {
    const PaymentResult r = h.submit(order, kBody);
    EXPECT_EQ(r.outcome, Outcome::succeeded) << order << ": " << r.error;
    EXPECT_EQ(h.budget().tokens(), 5) << "the fault the retry healed cost nothing in the end";
  }
  EXPECT_EQ(h.transport.sent.size(), 6u);
}

TEST(Engine, ASuccessGivesBackOneRetrysCostAtMostAndAFirstAttemptOneOnlyTheRefund) {
  Harness h;
  h.config.retry.max_attempts = 5;
  h.config.budget = BudgetPolicy{10, 5, 1};
  h.transport.script = {http(503), http(503), ok_200(), ok_200()};
  EXPECT_EQ(h.submit("order-1", kBody).outcome, Outcome::succeeded);
  EXPECT_EQ(h.budget().tokens(), 5) << "two retries took 10; the success gives back the last one's 5";
  EXPECT_EQ(h.submit("order-2", kBody).outcome, Outcome::succeeded);
  EXPECT_EQ(h.budget().tokens(), 6) << "a first-attempt success gives back success_refund";
}

TEST(Engine, InAnOutageTheBudgetEmptiesAndStaysEmpty) {
  // Nothing heals, so nothing gives back: after the bucket's worth of
  // retries, every payment stops at its first attempt.
  Harness h;
  h.config.retry.max_attempts = 3;
  h.config.retry.deadline_ms = 10 * 60 * 1000;
  h.config.budget = BudgetPolicy{20, 5, 1};
  for (int i = 0; i < 40; ++i) h.transport.script.push_back(http(503));
  size_t sent_before = 0;
  int retries = 0;
  for (int i = 0; i < 20; ++i) {
    const PaymentResult r = h.submit("order-" + std::to_string(i), kBody);
    EXPECT_EQ(r.outcome, Outcome::unknown);
    retries += static_cast<int>(h.transport.sent.size() - sent_before) - 1;
    sent_before = h.transport.sent.size();
  }
  EXPECT_EQ(retries, 4) << "20 tokens at 5 a retry";
  EXPECT_EQ(h.budget().tokens(), 0);
}

TEST(Engine, RefundsNeverExceedTheBucket) {
  Harness h;
  h.config.budget = BudgetPolicy{10, 5, 3};
  h.transport.script = {ok_200(), ok_200(), ok_200()};
  for (const char* order : {"a", "b", "c"}) h.submit(order, kBody);
  EXPECT_EQ(h.budget().tokens(), 10);
}

// ---- mismatch and hooks -----------------------------------------------------------------

TEST(Engine, MismatchThrowsErrcMismatch) {
  Harness h;
  h.transport.script = {mismatch_400()};
  std::string msg;
  EXPECT_EQ(thrown([&] { h.submit("order-1", kBody, "key-abc"); }, &msg), Errc::PAY_EMISMATCH);
  EXPECT_TRUE(contains(msg, "key-abc")) << "the message names the key: " << msg;
  EXPECT_EQ(h.transport.sent.size(), 1u);
}

TEST(Engine, MismatchAfterALostResponseStillThrows) {
  Harness h("stripe");
  h.transport.script = {timeout_after_write(), http(422, R"({"error":{"code":"idempotency_key_reused"}})")};
  EXPECT_EQ(thrown([&] { h.submit("order-1", kBody); }), Errc::PAY_EMISMATCH);
}

TEST(Engine, HookFailingBeforeAnythingWasSentThrowsErrcHook) {
  Harness h;
  h.hook = [](const AttemptView&, Headers&) { return std::string("no signing key"); };
  h.transport.script = {ok_200()};
  std::string msg;
  EXPECT_EQ(thrown([&] { h.submit("order-1", kBody); }, &msg), Errc::PAY_EHOOK);
  EXPECT_TRUE(contains(msg, "no signing key")) << msg;
  EXPECT_TRUE(h.transport.sent.empty());
}

TEST(Engine, HookFailingAfterAMaybeProcessedAttemptGivesUnknown) {
  Harness h;
  h.hook = [](const AttemptView& v, Headers&) { return v.attempt == 1 ? std::string() : std::string("HSM offline"); };
  h.transport.script = {timeout_after_write(), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  EXPECT_EQ(r.delivery, Delivery::maybe_processed);
  EXPECT_TRUE(contains(r.error, "HSM offline")) << r.error;
  EXPECT_EQ(h.transport.sent.size(), 1u);
}

TEST(Engine, HookFailingAfterOnlyRefusedConnectionsThrowsErrcHook) {
  // payretry/client.h: "pay_submit then returns PAY_EHOOK if nothing had been
  // sent yet, or an UNKNOWN result if an earlier attempt may have been
  // processed". A refused connection sent nothing.
  Harness h;
  h.hook = [](const AttemptView& v, Headers&) { return v.attempt == 1 ? std::string() : std::string("HSM offline"); };
  h.transport.script = {connect_refused(), ok_200()};
  std::optional<Errc> code;
  PaymentResult r;
  try {
    r = h.submit("order-1", kBody);
  } catch (const Error& e) {
    code = e.code();
  }
  EXPECT_EQ(code, Errc::PAY_EHOOK) << "got a result instead: outcome " << outcome_name(r.outcome) << ", delivery "
                              << delivery_name(r.delivery) << ", error '" << r.error << "'";
}

TEST(Engine, HookSeesTheAttemptAndItsHeadersGoOutWithThatAttemptOnly) {
  Harness h;
  std::vector<std::string> seen;
  h.hook = [&](const AttemptView& v, Headers& extra) {
    seen.push_back(v.idempotency_key + "|" + std::to_string(v.attempt) + "|" + v.order_id + "|" + v.path + "|" +
                   std::string(v.body) + "|" + v.key_header);
    extra.emplace_back("X-Signature", "sig-" + std::to_string(v.attempt));
    return std::string();
  };
  h.transport.script = {http(503), ok_200()};
  h.submit("order-1", kBody, "k-1");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], "k-1|1|order-1|/v1/payments|" + kBody + "|Idempotency-Key");
  EXPECT_EQ(seen[1], "k-1|2|order-1|/v1/payments|" + kBody + "|Idempotency-Key");
  EXPECT_EQ(h.transport.sent[0].all("X-Signature"), std::vector<std::string>{"sig-1"});
  EXPECT_EQ(h.transport.sent[1].all("X-Signature"), std::vector<std::string>{"sig-2"});
}

TEST(Engine, ConfigHeadersNeverDuplicateTheIdempotencyKey) {
  // A static "Idempotency-Key" in the config's extra headers would give every
  // payment a second, shared key: a provider reading that one would replay
  // the first payment's answer for all later ones. Either the config is
  // refused, or the engine's own key is the only one sent.
  const char* json = R"({"base_url":"https://api.provider.test","create_path":"/v1/payments","ledger":"memory:",
                         "headers":{"Idempotency-Key":"static-key"}})";
  Config parsed;
  try {
    parsed = parse_config(json);
  } catch (const ConfigError& e) {
    EXPECT_TRUE(contains(e.what(), "headers.Idempotency-Key")) << e.what();
    return;
  }
  Harness h;
  h.config = parsed;
  h.transport.script = {ok_200()};
  PaymentResult r;
  try {
    r = h.submit("order-1", kBody);
  } catch (const Error&) {
    EXPECT_TRUE(h.transport.sent.empty());
    return;
  }
  ASSERT_EQ(h.transport.sent.size(), 1u);
  EXPECT_EQ(h.transport.sent[0].all("Idempotency-Key"), std::vector<std::string>{r.idempotency_key});
}

// ---- invalid input ----------------------------------------------------------------------

struct BadInput {
  const char* name;
  std::string order_id;
  std::string body;
  std::string key;
  int64_t deadline_ms;
  std::string path;
  Errc code;
};
void PrintTo(const BadInput& b, std::ostream* os) { *os << b.name; }

class EngineInvalidInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(EngineInvalidInput, ThrowsBeforeAnyTransportCall) {
  const BadInput& in = GetParam();
  Harness h;
  h.config.max_body_bytes = 1024;
  h.transport.script = {ok_200()};
  std::string msg;
  EXPECT_EQ(thrown([&] { h.submit(in.order_id, in.body, in.key, in.deadline_ms, in.path); }, &msg), in.code);
  EXPECT_TRUE(h.transport.sent.empty()) << "sent although the input was invalid";
  EXPECT_TRUE(h.lines.empty()) << "logged an attempt or outcome for a failed call";
  EXPECT_EQ(h.keys.calls, 0);
  EXPECT_FALSE(contains(msg, "\r")) << msg;
  EXPECT_FALSE(contains(msg, "SECRET")) << "the message echoes the value: " << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Engine, EngineInvalidInput,
    ::testing::Values(
        BadInput{"EmptyBody", "order-1", "", "", 0, "", Errc::PAY_EINVALID},
        BadInput{"BodyOverMaxBodyBytes", "order-1", "{\"x\":\"" + std::string(1100, 'a') + "\"}", "", 0, "", Errc::PAY_ETOOBIG},
        BadInput{"KeyWithCrLf", "order-1", kBody, "SECRET\r\nX-Evil: 1", 0, "", Errc::PAY_EKEY},
        BadInput{"KeyWithSpace", "order-1", kBody, "SECRET key", 0, "", Errc::PAY_EKEY},
        BadInput{"KeyWithNul", "order-1", kBody, std::string("SECRET\0k", 8), 0, "", Errc::PAY_EKEY},
        BadInput{"KeyNonAscii", "order-1", kBody, "SECRET\xC3\xA9", 0, "", Errc::PAY_EKEY},
        BadInput{"KeyTooLong", "order-1", kBody, std::string(256, 'k'), 0, "", Errc::PAY_EKEY},
        BadInput{"EmptyOrderId", "", kBody, "", 0, "", Errc::PAY_EINVALID},
        BadInput{"OrderIdWithSpace", "SECRET order", kBody, "", 0, "", Errc::PAY_EINVALID},
        BadInput{"OrderIdWithLf", "SECRET\norder", kBody, "", 0, "", Errc::PAY_EINVALID},
        BadInput{"OrderIdTooLong", std::string(256, 'o'), kBody, "", 0, "", Errc::PAY_EINVALID},
        BadInput{"PathNotAbsolute", "order-1", kBody, "", 0, "v1/SECRET", Errc::PAY_EINVALID},
        BadInput{"PathWithCrLf", "order-1", kBody, "", 0, "/v1\r\nHost: SECRET", Errc::PAY_EINVALID},
        BadInput{"NegativeDeadline", "order-1", kBody, "", -1, "", Errc::PAY_EINVALID},
        BadInput{"DeadlineBelowMinAttempt", "order-1", kBody, "", 100, "", Errc::PAY_EINVALID}),
    [](const ::testing::TestParamInfo<BadInput>& i) { return std::string(i.param.name); });

TEST(Engine, BodyOfExactlyMaxBodyBytesIsAccepted) {
  Harness h;
  h.config.max_body_bytes = 64;
  h.transport.script = {ok_200()};
  EXPECT_EQ(h.submit("order-1", std::string(64, 'x')).outcome, Outcome::succeeded);
}

// ---- attempt log and stats -----------------------------------------------------------------

TEST(Engine, AttemptLogHasOneLinePerAttemptAndOnePerOutcome) {
  Harness h;
  h.transport.script = {timeout_after_write(), throttled_429("2"), ok_200()};
  const PaymentResult r = h.submit("order-77", kBody, "key-77");
  ASSERT_EQ(h.lines.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    JsonDoc d(h.lines[i].text);
    ASSERT_TRUE(d.ok()) << h.lines[i].text;
    EXPECT_EQ(d.str("event"), "attempt");
    EXPECT_EQ(d.num("attempt"), static_cast<double>(i + 1));
    EXPECT_EQ(d.str("idempotency_key"), "key-77");
    EXPECT_EQ(d.str("order_id"), "order-77");
    EXPECT_TRUE(d.has("ts") && d.has("verdict") && d.has("may_have_processed") && d.has("elapsed_ms"));
    EXPECT_EQ(h.lines[i].text.find('\n'), std::string::npos) << "one line per record";
  }
  JsonDoc a0(h.lines[0].text), a1(h.lines[1].text), a2(h.lines[2].text);
  EXPECT_EQ(a0.str("transport_error"), "timeout");
  EXPECT_EQ(a0.str("delay_source"), "backoff");
  EXPECT_EQ(a1.num("http_status"), 429);
  EXPECT_EQ(a1.str("delay_source"), "retry_after");
  EXPECT_EQ(a1.num("delay_ms"), 2000);
  EXPECT_FALSE(a2.has("delay_ms")) << "no delay after the deciding attempt";
  EXPECT_EQ(a2.str("provider_request_id"), "req_ok");
  JsonDoc out(h.lines[3].text);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.str("event"), "outcome");
  EXPECT_EQ(out.str("outcome"), "SUCCEEDED");
  EXPECT_EQ(out.str("idempotency_key"), "key-77");
  EXPECT_EQ(out.num("attempts"), 3);
  EXPECT_EQ(out.str("provider_payment_id"), "pi_123");
  EXPECT_EQ(r.attempts.size(), 3u);
}

TEST(Engine, UnknownOutcomeIsLoggedAsAWarning) {
  Harness h;
  h.transport.script = {timeout_after_write(), timeout_after_write(), timeout_after_write()};
  h.submit("order-1", kBody);
  ASSERT_FALSE(h.lines.empty());
  JsonDoc out(h.lines.back().text);
  EXPECT_EQ(out.str("outcome"), "UNKNOWN");
  EXPECT_EQ(out.str("delivery"), "maybe_processed");
  EXPECT_EQ(h.lines.back().level, kLogWarn);
}

TEST(Engine, AttemptLogNeverHoldsCardNumbersOrTheBearerToken) {
  const std::string pan = "4242424242424242", pan_grouped = "4111 1111 1111 1111";
  Harness h;
  h.config.retry.max_attempts = 4;
  h.config.retry.deadline_ms = 120000;
  auto leaky = connect_refused();
  leaky.error_text = "connect to " + pan_grouped + " failed; Authorization: Bearer " + kBearer;
  auto leaky_timeout = timeout_after_write();
  leaky_timeout.error_text = "timeout; card " + pan + " cvc=123 " + kBearer;
  auto leaky_503 = http(503, R"({"card_number":")" + pan + R"(","token":")" + kBearer + R"("})",
                        {{"Request-Id", "req_" + pan + "_" + kBearer}});
  auto leaky_402 = decline_402(/*replayed=*/false);
  leaky_402.response.body = R"({"error":{"type":"card_error","code":"card )" + pan + R"( declined"}})";
  h.transport.script = {leaky, leaky_timeout, leaky_503, leaky_402};
  const std::string body = R"({"card":{"number":")" + pan + R"(","cvc":"123"},"auth":")" + kBearer + R"("})";
  const PaymentResult r = h.submit("order-" + pan, body);
  EXPECT_EQ(r.outcome, Outcome::unknown);
  ASSERT_EQ(h.events("attempt").size(), 4u);
  ASSERT_EQ(h.events("outcome").size(), 1u);
  for (const LogLine& l : h.lines) {
    EXPECT_FALSE(contains(l.text, pan)) << l.text;
    EXPECT_FALSE(contains(l.text, pan_grouped)) << l.text;
    EXPECT_FALSE(contains(l.text, "4111")) << l.text;
    EXPECT_FALSE(contains(l.text, kBearer)) << l.text;
    EXPECT_FALSE(contains(l.text, "sk_live")) << l.text;
    EXPECT_FALSE(contains(l.text, "\"cvc\"")) << "a body reached the log: " << l.text;
  }
}

TEST(Engine, AttemptLogMasksACardNumberFollowedByMoreDigitsInTheOrderId) {
  // An order id such as "cust-<card>-0042": the card number is followed by
  // another digit group (see Redact.PanFollowedByAnotherNumberIsStillMasked).
  const std::string pan = "4242424242424242";
  Harness h;
  h.transport.script = {ok_200()};
  h.submit("cust-" + pan + "-0042", kBody);
  ASSERT_EQ(h.lines.size(), 2u);
  for (const LogLine& l : h.lines) EXPECT_FALSE(contains(l.text, pan)) << l.text;
}

TEST(Engine, MismatchNoteNeverHoldsACardNumberFromTheOrderId) {
  const std::string pan = "4242424242424242";
  Harness h;
  h.transport.script = {mismatch_400()};
  EXPECT_EQ(thrown([&] { h.submit("order-" + pan, kBody); }), Errc::PAY_EMISMATCH);
  ASSERT_FALSE(h.lines.empty());
  for (const LogLine& l : h.lines) EXPECT_FALSE(contains(l.text, pan)) << l.text;
}

TEST(Engine, StatsCountAttemptsRetriesAndOutcomes) {
  Harness h;
  h.transport.script = {http(503), timeout_after_write(), ok_200(), decline_402(),
                        transport_failure(TransportFailure::replay_blocked, true, 5, "x"), ok_200()};
  h.submit("a", kBody);
  h.submit("b", kBody);
  h.submit("c", kBody);
  JsonDoc s(h.stats.to_json(h.budget().tokens()));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.num("attempts"), 6);
  EXPECT_EQ(s.num("retries"), 3);
  EXPECT_EQ(s.num("replays_blocked"), 1);
  const cJSON* outcomes = cJSON_GetObjectItemCaseSensitive(s.j, "outcomes");
  ASSERT_NE(outcomes, nullptr);
  EXPECT_EQ(cJSON_GetObjectItemCaseSensitive(outcomes, "SUCCEEDED")->valuedouble, 2);
  EXPECT_EQ(cJSON_GetObjectItemCaseSensitive(outcomes, "FAILED")->valuedouble, 1);
  const cJSON* by = cJSON_GetObjectItemCaseSensitive(s.j, "retries_by_reason");
  ASSERT_NE(by, nullptr);
  EXPECT_EQ(cJSON_GetObjectItemCaseSensitive(by, "http_503")->valuedouble, 1);
  EXPECT_EQ(cJSON_GetObjectItemCaseSensitive(by, "timeout")->valuedouble, 1);
}

TEST(Engine, ResultJsonListsEveryAttempt) {
  Harness h;
  h.transport.script = {connect_refused(), ok_200()};
  const PaymentResult r = h.submit("order-1", kBody, "k-9");
  JsonDoc d(r.to_json());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.str("outcome"), "SUCCEEDED");
  EXPECT_EQ(d.str("delivery"), "delivered");
  EXPECT_EQ(d.str("idempotency_key"), "k-9");
  EXPECT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d.j, "attempts")), 2);
  EXPECT_FALSE(d.has("body"));
}

TEST(Engine, FixedJitterSeedGivesTheSameDelays) {
  auto delays = [](uint64_t seed) {
    Harness h("generic", seed);
    h.config.retry.max_attempts = 6;
    h.config.retry.deadline_ms = 10 * 60 * 1000;
    for (int i = 0; i < 6; ++i) h.transport.script.push_back(http(503));
    h.submit("order-1", kBody);
    return h.sleeper.sleeps;
  };
  EXPECT_EQ(delays(1), delays(1));
  EXPECT_NE(delays(1), delays(2));
  for (int64_t d : delays(3)) EXPECT_GE(d, 250);
}

}  // namespace
}  // namespace payretry
