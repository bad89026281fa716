// Ten thousand payments through the C ABI against the simulator with faults
// injected: run in the ASan build with detect_leaks=1, LeakSanitizer fails
// this test at exit on any leak across them (results, clients, handles,
// curl and OpenSSL state). In the plain build it still checks the outcomes.
#include <gtest/gtest.h>
#include <payretry/payretry.h>

#include <string>

#include "hostile_client.hpp"
#include "server.hpp"

namespace payretry_hostile {
namespace {

TEST(Leaks, ten_thousand_submits_through_the_c_abi_with_faults_leak_nothing) {
  payretry_sim::Options o;
  o.seed = 9;
  o.slow_ms = 50;
  o.refuse_ms = 10;
  o.retry_after_s = 0;
  o.faults = {{"lost_response", 0.03}, {"503", 0.03}, {"reset_before", 0.02}, {"decline", 0.02}, {"500", 0.01}};
  payretry_sim::Server sim(o);
  const std::string url = "http://127.0.0.1:" + std::to_string(sim.port());
  Client client = make_client(config_for(
      url, "stripe",
      R"("max_attempts":3,"connect_timeout_ms":500,"attempt_timeout_ms":500,"deadline_ms":3000,"backoff_base_ms":1,"backoff_cap_ms":4)",
      R"("budget":{"tokens":100000,"retry_cost":1,"success_refund":1})"));
  int outcomes[5] = {};
  for (int i = 0; i < 10000; ++i) {
    const std::string order = "leak-" + std::to_string(i);
    Result r = submit(client.get(), order);
    ASSERT_NE(r, nullptr);
    ++outcomes[pay_result_outcome(r.get())];
    ASSERT_NE(pay_result_json(r.get()), nullptr);
    if (i % 100 == 0) {
      // The stored-outcome path and a ledger read allocate too.
      Result again = submit(client.get(), order);
      pay_buf b{};
      ASSERT_EQ(pay_ledger_get(&b, client.get(), order.c_str()), PAY_OK);
      pay_buf_dispose(&b);
    }
  }
  sim.stop();
  EXPECT_EQ(outcomes[PAY_OUTCOME_SUCCEEDED] + outcomes[PAY_OUTCOME_FAILED] + outcomes[PAY_OUTCOME_UNKNOWN], 10000);
  EXPECT_GT(outcomes[PAY_OUTCOME_SUCCEEDED], 9000);
}

}  // namespace
}  // namespace payretry_hostile
