// Hostile response bodies: too big to hold, too slow to wait for, not UTF-8.
#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "hostile_client.hpp"
#include "hostile_server.hpp"

namespace payretry_hostile {
namespace {

// Peak resident set of this process, in KiB (VmHWM).
long peak_rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

TEST(HostileBodies, a_one_gibibyte_response_is_cut_off_at_the_cap_without_growing_memory) {
  constexpr size_t kGiB = size_t(1) << 30;
  HostileServer server([](Conn& c, const Request&, const std::atomic<bool>& stopping) {
    if (!c.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(kGiB) + "\r\n\r\n"))
      return;
    const std::string chunk(1 << 16, 'x');
    for (size_t sent = 0; sent < kGiB && !stopping; sent += chunk.size())
      if (!c.write(chunk)) return;  // the client hung up: what we want
  });
  Client client = make_client(config_for(server.url()));
  const long before = peak_rss_kib();
  Result r = submit(client.get(), "order-huge");
  const long grown_mib = (peak_rss_kib() - before) / 1024;

  // A 200 was on its way: the payment may exist, so never FAILED, never SUCCEEDED unread.
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_MAYBE_PROCESSED);
  EXPECT_NE(std::string(pay_result_json(r.get())).find("response_too_large"), std::string::npos);
  // Each attempt stops near the cap (4 MiB plus socket buffers), far from 1 GiB.
  EXPECT_LT(server.bytes_written(), size_t(3) * 64 << 20) << "the client kept reading";
  EXPECT_LT(grown_mib, 256) << "peak RSS grew by " << grown_mib << " MiB";
  expect_clean_json(r.get());
}

TEST(HostileBodies, a_provider_trickling_one_byte_a_second_cannot_hold_the_submit_past_its_deadline) {
  HostileServer server([](Conn& c, const Request&, const std::atomic<bool>& stopping) {
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    for (char ch : head) {
      if (stopping || !c.write(std::string(1, ch))) return;
      for (int i = 0; i < 10 && !stopping; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  Client client = make_client(config_for(
      server.url(), "generic",
      R"("max_attempts":5,"connect_timeout_ms":500,"attempt_timeout_ms":1500,"deadline_ms":3000,"backoff_base_ms":10,"backoff_cap_ms":50)"));
  const auto t0 = std::chrono::steady_clock::now();
  Result r = submit(client.get(), "order-trickle");
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  // A correctness bound (the deadline plus generous slack), not a performance one.
  EXPECT_LT(ms, 3000 + 2000) << "the deadline did not hold";
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
  expect_clean_json(r.get());
}

TEST(HostileBodies, invalid_utf8_in_a_decline_keeps_the_result_json_valid) {
  HostileServer server([](Conn& c, const Request&, const std::atomic<bool>&) {
    c.write(response(402, "{\"error\":{\"type\":\"card_error\",\"code\":\"card_\xff\xfe\x64\x65\x63lined\","
                          "\"message\":\"caf\xc3 \xed\xa0\x80 \xc0\xaf\"}}",
                     "Request-Id: req_\xff\xc3\r\n"));
  });
  Client client = make_client(config_for(server.url()));
  Result r = submit(client.get(), "order-utf8");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED);
  expect_clean_json(r.get());
  const char* err = pay_result_error(r.get());
  EXPECT_TRUE(valid_utf8(err ? err : "")) << "pay_result_error is not UTF-8";
}

TEST(HostileBodies, invalid_utf8_in_a_success_keeps_the_result_json_valid) {
  HostileServer server([](Conn& c, const Request&, const std::atomic<bool>&) {
    c.write(response(200, "{\"id\":\"pi_\xff\xfe\",\"status\":\"succ\xc3\x28\"}"));
  });
  Client client = make_client(config_for(server.url()));
  Result r = submit(client.get(), "order-utf8-ok");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  expect_clean_json(r.get());
}

}  // namespace
}  // namespace payretry_hostile
