// Chaos: many payments from several threads through one client, against a
// simulator injecting a seeded mix of every fault. Whatever happens, the
// provider never charges an order twice, and no charged order is FAILED.
#include <atomic>
#include <map>
#include <thread>

#include "sim_fixture.hpp"

namespace payretry_test {
namespace {

class Chaos : public SimTest {
 protected:
  payretry_sim::Options sim_options() override {
    auto o = SimTest::sim_options();
    o.threads = 2;
    o.seed = 20261130;
    o.slow_ms = 400;
    o.refuse_ms = 30;
    o.faults = {{"refuse", 0.005}, {"reset_before", 0.05}, {"lost_response", 0.06}, {"slow", 0.02},
                {"429", 0.03},     {"429_date", 0.01},     {"502", 0.03},           {"503", 0.04},
                {"500", 0.03},     {"decline", 0.04},      {"malformed", 0.02}};
    return o;
  }
};

TEST_F(Chaos, ThousandPaymentsWithMixedFaultsNeverChargeTwiceNorFailACharge) {
  constexpr int kPayments = 1200, kThreads = 8;
  auto c = client(config("stripe", R"("max_attempts":5,"attempt_timeout_ms":250,"deadline_ms":5000,"retry_after_max_ms":1000)",
                         R"("budget":{"tokens":100000})"));
  std::vector<int> outcome(kPayments, 0), delivery(kPayments, 0);
  std::atomic<int> next{0};
  std::atomic<long> attempts{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < kPayments;) {
        const std::string order = "chaos-" + std::to_string(i);
        const std::string body = body_for(order, 100 + i);
        pay_result* r = nullptr;
        if (pay_submit(&r, c.get(), order.c_str(), body.data(), body.size(), nullptr) != PAY_OK) continue;
        outcome[i] = pay_result_outcome(r);
        delivery[i] = pay_result_delivery(r);
        attempts += pay_result_attempts(r);
        pay_result_free(r);
      }
    });
  for (auto& w : workers) w.join();

  std::map<int, int> by_outcome;
  int charged_failed = 0, succeeded_uncharged = 0, not_sent_charged = 0;
  for (int i = 0; i < kPayments; ++i) {
    ASSERT_NE(outcome[i], 0) << "payment " << i << " ended in a call error";
    ++by_outcome[outcome[i]];
    const int charges = sim_->charges_for("chaos-" + std::to_string(i));
    if (outcome[i] == PAY_OUTCOME_FAILED && charges > 0) ++charged_failed;
    if (outcome[i] == PAY_OUTCOME_SUCCEEDED && charges != 1) ++succeeded_uncharged;
    if (outcome[i] == PAY_OUTCOME_UNKNOWN && delivery[i] == PAY_DELIVERY_NOT_SENT && charges > 0) ++not_sent_charged;
  }
  std::printf("chaos: %d payments, %ld attempts, %ld provider requests; SUCCEEDED %d FAILED %d UNKNOWN %d; "
              "duplicate charges %d\n",
              kPayments, attempts.load(), sim_->requests(), by_outcome[PAY_OUTCOME_SUCCEEDED],
              by_outcome[PAY_OUTCOME_FAILED], by_outcome[PAY_OUTCOME_UNKNOWN], sim_->duplicate_orders());
  EXPECT_EQ(sim_->duplicate_orders(), 0);
  EXPECT_EQ(charged_failed, 0);
  EXPECT_EQ(succeeded_uncharged, 0);
  EXPECT_EQ(not_sent_charged, 0);
  EXPECT_GT(attempts.load(), kPayments);  // faults really happened and were retried
}

}  // namespace
}  // namespace payretry_test
