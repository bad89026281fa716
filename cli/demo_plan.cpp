#include "demo_plan.hpp"

#include <cstdio>
#include <cstdlib>
#include <condition_variable>
#include <mutex>

#include "progress.hpp"

namespace cli {

std::string demo_order(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "demo-%05d", i);
  return buf;
}

int demo_index(const std::string& order) {
  if (order.rfind("demo-", 0) != 0 || order.size() < 6) return -1;
  char* end = nullptr;
  const long i = std::strtol(order.c_str() + 5, &end, 10);
  return (*end || i < 0 || i > 10000000) ? -1 : static_cast<int>(i);
}

std::string demo_body(int i) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "{\"order_id\":\"%s\",\"amount\":%d,\"currency\":\"eur\"}", demo_order(i).c_str(),
                500 + (i * 37) % 9500);
  return buf;
}

std::string demo_key(uint64_t seed, int i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "demo-%llu-%d", static_cast<unsigned long long>(seed), i);
  return buf;
}

std::string demo_config(const std::string& base_url, const std::string& ledger_url, const DemoPlan& plan) {
  // The simulator's `slow` fault (1.5 s) outlasts an attempt (800 ms): those
  // attempts time out with the request possibly processed, as in production.
  const int deadline_ms = plan.crash ? 3000 : 8000;
  std::string ledger = "\"" + ledger_url + "\"";
  // A dead worker's lease (deadline + margin) must expire soon for the demo
  // to show the restart taking its payments over.
  if (plan.crash) ledger = "{\"url\":\"" + ledger_url + "\",\"lease_margin_ms\":300}";
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"provider\":\"stripe\",\"base_url\":\"%s\",\"create_path\":\"/v1/payments\","
                "\"auth\":{\"bearer\":\"sk_test_payretry_demo\"},"
                "\"retry\":{\"max_attempts\":4,\"connect_timeout_ms\":500,\"attempt_timeout_ms\":800,"
                "\"deadline_ms\":%d,\"backoff_base_ms\":50,\"backoff_cap_ms\":400,\"min_attempt_ms\":100,"
                "\"jitter_seed\":%llu},"
                "\"ledger\":%s,\"in_progress_wait_ms\":%d}",
                base_url.c_str(), deadline_ms, static_cast<unsigned long long>(plan.seed % (1ULL << 53)),
                ledger.c_str(), plan.crash ? deadline_ms + 2000 : 0);
  return buf;
}

payretry_sim::Options demo_sim_options(uint64_t seed) {
  payretry_sim::Options o;
  o.seed = seed;
  o.threads = 2;
  o.slow_ms = 1500;
  o.retry_after_s = 1;
  o.api_key = "sk_test_payretry_demo";
  o.faults = {{"lost_response", 0.05}, {"reset_before", 0.03}, {"slow", 0.02}, {"429", 0.03},
              {"503", 0.05},           {"500", 0.03},          {"malformed", 0.02}, {"decline", 0.03}};
  return o;
}

void submit_all(const pay::client& client, const DemoPlan& plan, Tally& tally, Progress* progress,
                const SubmitHooks* hooks) {
  // Every payment goes through the client's concurrent engine (one thread,
  // libcurl multi, group commit); this thread only keeps `concurrency` of
  // them in flight and counts the answers, which arrive on the engine thread.
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  auto answered = [&](int i, pay::answer a) {
    if (a.result) {
      if (hooks && hooks->answered) hooks->answered(i, *a.result);
      tally.outcomes[static_cast<int>(a.result->outcome())].fetch_add(1);
      if (progress) progress->add(1, a.result->outcome() == pay::outcome::unknown ? 1 : 0);
    } else {
      // A failed call, not a failed payment: counted and shown, never guessed at.
      tally.errors.fetch_add(1);
      {
        std::lock_guard<std::mutex> lock(mu);
        if (tally.first_error.empty()) tally.first_error = demo_order(i) + ": " + a.failure->what();
      }
      if (progress) progress->add(1, 0);
    }
    std::lock_guard<std::mutex> lock(mu);
    --in_flight;
    cv.notify_all();
  };
  for (int i = 0; i < plan.payments; ++i) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight < plan.concurrency; });
      ++in_flight;
    }
    pay::submit_options o;
    if (!hooks || !hooks->key_is_order) o.idempotency_key = demo_key(plan.seed, i);
    try {
      const std::string body = hooks && hooks->body ? hooks->body(i) : demo_body(i);
      client.submit_async(hooks && hooks->order ? hooks->order(i) : demo_order(i), body, [&answered, i](pay::answer a) { answered(i, std::move(a)); }, o);
    } catch (const pay::error& e) {
      pay::answer a;
      a.failure.emplace(e);
      answered(i, std::move(a));
    }
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return in_flight == 0; });
}

}  // namespace cli
