// What the demo and its crash worker must agree on, so that a restarted
// process re-creates the very same payments: order ids, bodies, keys, the
// client config, and the loop that submits them from many threads.
#pragma once

#include <payretry/payretry.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "server.hpp"

namespace cli {

class Progress;

struct DemoPlan {
  int payments = 2000;
  int concurrency = 256;  // payments in flight at once
  uint64_t seed = 42;
  bool crash = false;
};

std::string demo_order(int i);
int demo_index(const std::string& order);  // -1 when not a demo order
// The exact bytes of order i: the same in every process, so a resumed or
// reconciled payment re-sends what was first sent.
std::string demo_body(int i);
// Keys derived from the seed make the simulator's fault schedule (chosen per
// key) repeatable from run to run.
std::string demo_key(uint64_t seed, int i);

// The client config: short timeouts so the demo ends quickly; in crash mode a
// short lease, and a wait long enough for a restarted worker to outlast the
// dead one's leases.
std::string demo_config(const std::string& base_url, const std::string& ledger_url, const DemoPlan& plan);

struct Tally {
  std::atomic<long> outcomes[5] = {};  // by pay_outcome
  std::atomic<long> errors{0};         // failed calls (not payments)
  std::string first_error;             // the first failed call's message
};

// What `demo --operations` changes in submit_all: each order's body (the
// provider's own), and a look at each answer (the ids an operation names).
struct SubmitHooks {
  std::function<std::string(int i)> order;                     // empty: demo_order(i)
  std::function<std::string(int i)> body;                      // empty: demo_body(i)
  std::function<void(int i, const pay::result& r)> answered;  // on the engine thread; may be empty
  // The provider's key is the order's own reference (WeChat Pay's and
  // Alipay's out_trade_no): no key of the demo's is given.
  bool key_is_order = false;
};

// Submits orders [0, plan.payments) through one client's concurrent engine,
// plan.concurrency in flight at once. `progress` and `hooks` may be null.
void submit_all(const pay::client& client, const DemoPlan& plan, Tally& tally, Progress* progress,
                const SubmitHooks* hooks = nullptr);

// The simulator of every demo: the realistic fault mix, seeded.
payretry_sim::Options demo_sim_options(uint64_t seed);

}  // namespace cli
