// Hostile HTTP framing: redirects on a POST, enormous and duplicated headers.
#include <atomic>
#include <string>

#include "hostile_client.hpp"
#include "hostile_server.hpp"

namespace payretry_hostile {
namespace {

void redirect_is_never_followed(int status) {
  HostileServer elsewhere([](Conn& c, const Request&, const std::atomic<bool>&) {
    c.write(response(200, R"({"id":"pi_stolen","status":"succeeded"})"));
  });
  const std::string location = elsewhere.url() + "/v1/payments";
  HostileServer server([&](Conn& c, const Request&, const std::atomic<bool>&) {
    c.write(response(status, "{}", "Location: " + location + "\r\n"));
  });
  Client client = make_client(config_for(server.url()));
  Result r = submit(client.get(), "order-redirect-" + std::to_string(status));
  EXPECT_TRUE(elsewhere.requests().empty()) << "a POST followed a " << status << " to another host";
  // Every request the provider got is one the attempt log shows.
  EXPECT_EQ(static_cast<int>(server.requests().size()), pay_result_attempts(r.get()));
  for (const Request& q : server.requests()) EXPECT_EQ(q.target(), "/v1/payments");
  EXPECT_NE(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  expect_clean_json(r.get());
}

TEST(HostileHttp, a_307_redirect_on_post_is_never_followed) { redirect_is_never_followed(307); }
TEST(HostileHttp, a_302_redirect_on_post_is_never_followed) { redirect_is_never_followed(302); }

// A 200 the client cannot read whole is still a 200 that may have charged.
void huge_headers_never_turn_a_200_into_failed(const std::string& headers) {
  HostileServer server([&](Conn& c, const Request&, const std::atomic<bool>&) {
    c.write(response(200, R"({"id":"pi_1","status":"succeeded"})", headers));
  });
  Client client = make_client(config_for(server.url()));
  Result r = submit(client.get(), "order-headers");
  EXPECT_NE(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED);
  if (pay_result_outcome(r.get()) == PAY_OUTCOME_UNKNOWN) {
    EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_MAYBE_PROCESSED);
  }
  expect_clean_json(r.get());
}

TEST(HostileHttp, a_100_kib_header_never_turns_a_200_into_failed) {
  huge_headers_never_turn_a_200_into_failed("X-Big: " + std::string(100 * 1024, 'a') + "\r\n");
}

TEST(HostileHttp, ten_thousand_headers_never_turn_a_200_into_failed) {
  std::string h;
  for (int i = 0; i < 10000; ++i) h += "X-H" + std::to_string(i) + ": v\r\n";
  huge_headers_never_turn_a_200_into_failed(h);
}

// Retry-After is a singleton field; two of them contradict each other. The
// wait that protects the provider is the longer one: here it is beyond the
// deadline, so the client stops instead of hammering.
TEST(HostileHttp, duplicated_retry_after_honours_the_longest_wait) {
  for (const char* order : {"3600 then 0", "0 then 3600"}) {
    const bool long_first = std::string(order).rfind("3600", 0) == 0;
    HostileServer server([&](Conn& c, const Request&, const std::atomic<bool>&) {
      c.write(response(429, R"({"error":{"type":"rate_limit_error"}})",
                       long_first ? "Retry-After: 3600\r\nRetry-After: 0\r\n" : "Retry-After: 0\r\nRetry-After: 3600\r\n"));
    });
    Client client = make_client(config_for(server.url()));
    Result r = submit(client.get(), std::string("order-ra-") + (long_first ? "a" : "b"));
    EXPECT_EQ(server.requests().size(), 1u) << order << ": retried although one Retry-After asked for an hour";
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << order;
    EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_NOT_SENT) << order;
    expect_clean_json(r.get());
  }
}

// After a possibly processed attempt only the provider's replay proves a
// decline; "Idempotent-Replayed: false" and "true" together prove nothing.
TEST(HostileHttp, contradictory_duplicated_idempotent_replayed_is_no_proof_of_a_decline) {
  std::atomic<int> n{0};
  HostileServer server([&](Conn& c, const Request&, const std::atomic<bool>&) {
    if (n++ == 0) {
      c.write(response(500, R"({"error":{"type":"api_error"}})"));
    } else {
      c.write(response(402, R"({"error":{"type":"card_error","code":"card_declined"}})",
                       "Idempotent-Replayed: false\r\nIdempotent-Replayed: true\r\n"));
    }
  });
  Client client = make_client(config_for(server.url(), "stripe"));
  Result r = submit(client.get(), "order-replayed");
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  expect_clean_json(r.get());
}

// The plain case next to it, so the test above fails for the right reason.
TEST(HostileHttp, a_single_idempotent_replayed_true_proves_the_decline) {
  std::atomic<int> n{0};
  HostileServer server([&](Conn& c, const Request&, const std::atomic<bool>&) {
    if (n++ == 0) {
      c.write(response(500, R"({"error":{"type":"api_error"}})"));
    } else {
      c.write(response(402, R"({"error":{"type":"card_error","code":"card_declined"}})", "Idempotent-Replayed: true\r\n"));
    }
  });
  Client client = make_client(config_for(server.url(), "stripe"));
  Result r = submit(client.get(), "order-replayed-once");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED) << pay_result_json(r.get());
}

}  // namespace
}  // namespace payretry_hostile
