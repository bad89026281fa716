// Randomized property test: thousands of seeded fault schedules through the
// real engine, each checked against the payment invariants that must hold
// whatever the network and the provider do.
#include <cJSON.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fakes.hpp"
#include "form_encoding.hpp"
#include "json_util.hpp"
#include "retry_after.hpp"

namespace payretry {
namespace {

using namespace payretry::test;

enum class Kind {
  refused,           // connect refused: nothing written
  timeout,           // timed out after the request was written
  reset,             // connection reset after write
  ok,                // 200, readable
  malformed,         // 200, unreadable body
  decline,           // 402
  decline_replayed,  // 402 with Idempotent-Replayed: true
  conflict,          // 409 key in use
  throttled,         // 429 without Retry-After
  throttled_ra,      // 429 with Retry-After (seconds or date)
  e500,
  e502,
  e503,
};
constexpr int kKinds = 13;

const char* kind_name(Kind k) {
  static const char* names[] = {"refused", "timeout", "reset", "ok", "malformed", "decline", "decline_replayed",
                                "conflict", "throttled", "throttled_ra", "500", "502", "503"};
  return names[static_cast<int>(k)];
}

// The oracle, written from docs/design.md "Outcomes" and "Verdicts", independent of classify():
// could the provider have acted on the payment in this attempt?
bool may_have_processed(Kind k) {
  switch (k) {
    case Kind::refused:
    case Kind::decline:
    case Kind::decline_replayed:
    case Kind::throttled:
    case Kind::throttled_ra:
      return false;
    default:
      return true;
  }
}

// Does this attempt let the engine go on with the same key?
bool retryable(Kind k, bool stripe) {
  switch (k) {
    case Kind::ok:
    case Kind::decline:
    case Kind::decline_replayed:
      return false;
    case Kind::e500:
      return stripe;
    default:
      return true;
  }
}

struct Schedule {
  std::vector<Kind> kinds;
  std::vector<TransportResult> results;
  std::string describe() const {
    std::ostringstream o;
    for (size_t i = 0; i < kinds.size(); ++i) {
      o << (i ? ", " : "") << kind_name(kinds[i]);
      for (const auto& [k, v] : results[i].response.headers)
        if (k == "Retry-After") o << "(RA " << v << ")";
    }
    return o.str();
  }
};

TransportResult make(Kind k, std::mt19937_64& rng, int64_t unix_start) {
  auto elapsed = [&] { return static_cast<int64_t>(rng() % 3000) + 1; };
  switch (k) {
    case Kind::refused: return transport_failure(TransportFailure::connect, false, elapsed() % 50, "refused");
    case Kind::timeout:
      return timeout_after_write(rng() % 2 ? kWholeTimeout : elapsed());
    case Kind::reset: return transport_failure(TransportFailure::connection_lost, true, elapsed(), "reset");
    case Kind::ok: return http(200, R"({"id":"pi_1","status":"succeeded"})", {}, elapsed());
    case Kind::malformed: return http(200, "<html>", {}, elapsed());
    case Kind::decline: return http(402, R"({"error":{"code":"card_declined"}})", {}, elapsed());
    case Kind::decline_replayed:
      return http(402, R"({"error":{"code":"card_declined"}})", {{"Idempotent-Replayed", "true"}}, elapsed());
    case Kind::conflict: return http(409, R"({"error":{"code":"idempotency_key_in_use"}})", {}, elapsed());
    case Kind::throttled: return http(429, "{}", {}, elapsed());
    case Kind::throttled_ra: {
      static const char* secs[] = {"0", "1", "3", "10", "25", "40", "120", "99999999999999999999"};
      std::string ra;
      if (rng() % 3 == 0) {
        // A date between a minute ago and two minutes ahead of the start.
        ra = imf_fixdate(unix_start + static_cast<int64_t>(rng() % 180000) - 60000);
      } else {
        ra = secs[rng() % 8];
      }
      return http(429, "{}", {{"Retry-After", ra}}, elapsed());
    }
    case Kind::e500: return http(500, "{}", {}, elapsed());
    case Kind::e502: return http(502, "<html>", {}, elapsed());
    case Kind::e503: return http(503, "{}", {}, elapsed());
  }
  return {};
}

template <class T, size_t N>
T pick(std::mt19937_64& rng, const T (&xs)[N]) {
  return xs[rng() % N];
}

class EngineProperty : public ::testing::TestWithParam<const char*> {};

TEST_P(EngineProperty, InvariantsHoldForFiveThousandRandomSchedules) {
  const std::string profile = GetParam();
  const bool stripe = profile == "stripe";
  constexpr int kRuns = 5000;
  std::vector<std::string> violations;
  int outcomes[5] = {};
  std::map<std::string, int> unknown_reasons;  // by the reason's first word

  for (int run = 0; run < kRuns && violations.size() < 10; ++run) {
    const uint64_t seed = 0x5eed0000ull + static_cast<uint64_t>(run) * 7919 + (stripe ? 1 : 0);
    std::mt19937_64 rng(seed);
    Harness h(profile.c_str(), seed);

    RetryPolicy& p = h.config.retry;
    p.max_attempts = static_cast<int>(rng() % 6) + 1;
    p.attempt_timeout_ms = pick(rng, {2000, 5000, 10000});
    p.connect_timeout_ms = pick(rng, {500, 3000});
    p.deadline_ms = pick(rng, {3000, 15000, 30000, 60000});
    p.backoff_base_ms = pick(rng, {0, 100, 500});
    p.backoff_cap_ms = std::max<int64_t>(p.backoff_base_ms, pick(rng, {0, 2000, 5000}));
    p.retry_after_max_ms = pick(rng, {0, 1000, 60000});
    p.min_attempt_ms = pick(rng, {50, 200, 1000});
    h.config.budget = BudgetPolicy{pick(rng, {0, 5, 10, 500}), 5, 1};

    Schedule s;
    for (int i = 0; i < p.max_attempts; ++i) {
      const Kind k = static_cast<Kind>(rng() % kKinds);
      s.kinds.push_back(k);
      s.results.push_back(make(k, rng, h.clock.unix));
    }
    h.transport.script.assign(s.results.begin(), s.results.end());

    const std::string body = R"({"amount":)" + std::to_string(rng() % 100000) + R"(,"currency":"usd"})";
    const std::string given_key = rng() % 2 ? "caller-key-" + std::to_string(run) : "";
    const int64_t start = h.clock.mono;
    const int64_t deadline = start + p.deadline_ms;

    auto violation = [&](const std::string& what) {
      std::ostringstream o;
      o << profile << " run " << run << " (seed " << seed << ", max_attempts " << p.max_attempts << ", deadline "
        << p.deadline_ms << ", tokens " << h.config.budget.tokens << "): " << what << "\n  schedule: " << s.describe();
      violations.push_back(o.str());
    };

    PaymentResult r;
    try {
      r = h.submit("order-" + std::to_string(run), body, given_key);
    } catch (const std::exception& e) {
      violation(std::string("threw: ") + e.what());
      continue;
    }
    outcomes[static_cast<int>(r.outcome)]++;
    if (r.outcome == Outcome::unknown) unknown_reasons[r.error.substr(0, r.error.find(' '))]++;

    const size_t n = h.transport.sent.size();
    if (n == 0) {
      violation("no attempt was made");
      continue;
    }
    if (n > static_cast<size_t>(p.max_attempts)) violation("more attempts than max_attempts");
    if (r.attempts.size() != n) violation("result lists " + std::to_string(r.attempts.size()) + " attempts, sent " + std::to_string(n));

    // One key and the same bytes on every attempt.
    if (!given_key.empty() && r.idempotency_key != given_key) violation("caller key not used");
    // (A form profile sends the document as form fields, encoded once.)
    const std::string sent_body =
        h.profile.encoding == Encoding::form ? form_encode_json(JsonPtr(cJSON_Parse(body.c_str())).get()) : body;
    for (const SentRequest& sr : h.transport.sent) {
      if (sr.all("Idempotency-Key") != std::vector<std::string>{r.idempotency_key}) violation("key header differs");
      if (sr.body != sent_body) violation("body bytes differ");
    }

    // Time: every attempt starts with min_attempt_ms left and ends by the deadline.
    for (size_t i = 0; i < n; ++i) {
      const SentRequest& sr = h.transport.sent[i];
      if (deadline - sr.started_mono_ms < p.min_attempt_ms)
        violation("attempt " + std::to_string(i + 1) + " started with under min_attempt_ms left");
      if (sr.started_mono_ms + sr.timeout_ms > deadline)
        violation("attempt " + std::to_string(i + 1) + " may run past the deadline");
      if (sr.timeout_ms > p.attempt_timeout_ms || sr.timeout_ms <= 0) violation("bad attempt timeout");
      if (sr.connect_timeout_ms > sr.timeout_ms) violation("connect timeout above the attempt timeout");
    }
    if (h.clock.mono > deadline) violation("virtual time ran past the deadline");
    if (h.sleeper.sleeps.size() != n - 1) violation("expected a sleep between attempts and none after the last");

    // Delays: full-jitter backoff, with a parseable Retry-After as a floor capped
    // at retry_after_max_ms.
    for (size_t i = 0; i + 1 < n && i < h.sleeper.sleeps.size(); ++i) {
      const int64_t slept = h.sleeper.sleeps[i];
      int64_t ceiling = p.backoff_base_ms;
      for (size_t k = 0; k < i && ceiling < p.backoff_cap_ms; ++k) ceiling = std::min(p.backoff_cap_ms, ceiling * 2);
      int64_t floor = p.backoff_base_ms / 2;
      if (const std::string* ra = h.transport.returned[i].response.header("Retry-After")) {
        const int64_t unix_then = h.clock.unix - (h.clock.mono - h.transport.sent[i].started_mono_ms) +
                                  h.transport.returned[i].elapsed_ms;
        if (auto wait = parse_retry_after_ms(*ra, unix_then)) {
          const int64_t honoured = std::min(*wait, p.retry_after_max_ms);
          floor = std::max(floor, honoured);
          ceiling = std::max(ceiling, honoured);
        }
      }
      if (slept < floor || slept > ceiling)
        violation("delay " + std::to_string(slept) + " after attempt " + std::to_string(i + 1) + " outside [" +
                  std::to_string(floor) + ", " + std::to_string(ceiling) + "]");
    }

    // Every attempt but the last let the engine go on.
    for (size_t i = 0; i + 1 < n; ++i)
      if (!retryable(s.kinds[i], stripe)) violation("retried after a final answer at attempt " + std::to_string(i + 1));

    const Kind last = s.kinds[n - 1];
    bool earlier_processed = false, any_processed = false;
    for (size_t i = 0; i < n; ++i) {
      if (i + 1 < n) earlier_processed = earlier_processed || may_have_processed(s.kinds[i]);
      any_processed = any_processed || may_have_processed(s.kinds[i]);
    }

    switch (r.outcome) {
      case Outcome::succeeded:
        if (last != Kind::ok) violation("SUCCEEDED but the last attempt was not a readable 2xx");
        if (r.delivery != Delivery::delivered) violation("SUCCEEDED but not delivered");
        break;
      case Outcome::failed:
        if (last != Kind::decline && last != Kind::decline_replayed) violation("FAILED without a final 4xx");
        if (earlier_processed && last != Kind::decline_replayed)
          violation("FAILED although an earlier attempt may have been processed and the answer was no replay");
        if (r.delivery != Delivery::delivered) violation("FAILED but not delivered");
        break;
      case Outcome::unknown: {
        const bool not_sent = r.delivery == Delivery::not_sent;
        if (not_sent == any_processed)
          violation(std::string("UNKNOWN with delivery ") + delivery_name(r.delivery) +
                    (any_processed ? " although an attempt may have been processed" : " although nothing was processed"));
        if (last == Kind::ok) violation("UNKNOWN after a readable 2xx");
        if (last == Kind::decline_replayed) violation("UNKNOWN after a replayed decline");
        if (retryable(last, stripe) && !(starts_with(r.error, "attempts_exhausted") || starts_with(r.error, "deadline") ||
                                        starts_with(r.error, "retry_after_beyond_deadline") ||
                                        starts_with(r.error, "retry_budget_exhausted")))
          violation("UNKNOWN after a retryable attempt for an unexpected reason: " + r.error);
        if (starts_with(r.error, "attempts_exhausted") && n != static_cast<size_t>(p.max_attempts))
          violation("attempts_exhausted before max_attempts");
        break;
      }
      case Outcome::in_progress:
        violation("IN_PROGRESS without a ledger");
        break;
    }
    // Outcome is a pure function of the schedule: a readable 2xx always ends it as SUCCEEDED...
    if (last == Kind::ok && r.outcome != Outcome::succeeded) violation("a readable 2xx did not end as SUCCEEDED");
    // ...and a decline with nothing possibly processed before it is FAILED.
    if ((last == Kind::decline_replayed || (last == Kind::decline && !earlier_processed)) && r.outcome != Outcome::failed)
      violation("a definitive decline did not end as FAILED");

    // The log: one line per attempt, one per outcome.
    if (h.events("attempt").size() != n) violation("attempt log lines != attempts");
    if (h.events("outcome").size() != 1) violation("expected exactly one outcome line");
  }

  for (const std::string& v : violations) ADD_FAILURE() << v;
  EXPECT_TRUE(violations.empty());
  // The draw must reach every outcome, or the test proves little.
  EXPECT_GT(outcomes[static_cast<int>(Outcome::succeeded)], 100);
  EXPECT_GT(outcomes[static_cast<int>(Outcome::failed)], 100);
  EXPECT_GT(outcomes[static_cast<int>(Outcome::unknown)], 100);
  std::ostringstream summary;
  for (const auto& [why, count] : unknown_reasons) summary << " " << why << "=" << count;
  for (const char* why : {"attempts_exhausted", "deadline", "retry_after_beyond_deadline", "retry_budget_exhausted"})
    EXPECT_GT(unknown_reasons[why], 10) << "the draw rarely ends in " << why << ";" << summary.str();
  if (!stripe) {
    EXPECT_GT(unknown_reasons["provider"], 10) << "generic 500 -> query;" << summary.str();
  }
  std::printf("[ property ] %s: %d SUCCEEDED, %d FAILED, %d UNKNOWN:%s\n", profile.c_str(),
              outcomes[static_cast<int>(Outcome::succeeded)], outcomes[static_cast<int>(Outcome::failed)],
              outcomes[static_cast<int>(Outcome::unknown)], summary.str().c_str());
}

INSTANTIATE_TEST_SUITE_P(Engine, EngineProperty, ::testing::Values("generic", "stripe"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace payretry
