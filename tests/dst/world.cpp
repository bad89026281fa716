#include "world.hpp"

#include <cJSON.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <unistd.h>
#include <vector>

#include "attempt_log.hpp"
#include "budget.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "error.hpp"
#include "ledger.hpp"
#include "payment_flow.hpp"
#include "profile.hpp"
#include "provider_model.hpp"
#include "random.hpp"
#include "rng.hpp"
#include "stats.hpp"

namespace payretry::dst {

Tally tally;

namespace {

// A process dies: thrown through the engine so that nothing after the crash
// point runs, as with SIGKILL. Deliberately not an Error, which PaymentFlow
// would catch and settle.
struct Crash {};

// An invariant broke; unwinds the whole schedule.
struct Broken {
  Violation v;
};

class SimClock final : public Clock {
 public:
  int64_t mono = 1'000'000;
  int64_t unix = 1'700'000'000'123;  // deliberately not a whole second
  int64_t now_ms() override { return mono; }
  int64_t unix_ms() override { return unix; }
  void advance(int64_t ms) {
    mono += ms;
    unix += ms;
  }
};

class Keys final : public KeySource {
 public:
  explicit Keys(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string new_key() override { return prefix_ + std::to_string(++n_); }

 private:
  std::string prefix_;
  int n_ = 0;
};

struct Order {
  std::string id;
  std::string body;
};

struct Seen {
  std::string key;
  std::string body;
};

class World;

class Process;

class ProcTransport final : public Transport {
 public:
  explicit ProcTransport(Process& p) : p_(p) {}
  TransportResult post(const HttpRequest& req) override;

 private:
  Process& p_;
};

class ProcSleeper final : public Sleeper {
 public:
  explicit ProcSleeper(Process& p) : p_(p) {}
  void sleep_ms(int64_t ms) override;

 private:
  Process& p_;
};

class Process {
 public:
  Process(World& w, int id, int depth);
  World& w;
  const int id;
  const int depth;  // 0: a top-level worker; 1: a racer started inside another's sleep
  const std::string owner;
  std::unique_ptr<Ledger> own_ledger;
  Ledger* ledger = nullptr;
  Stats stats;
  std::unique_ptr<AttemptLog> log;
  std::unique_ptr<RetryBudget> budget;
  Keys keys;
  JitterRandom jitter;
  ProcTransport transport{*this};
  ProcSleeper sleeper{*this};
  std::unique_ptr<Engine> engine;
  std::unique_ptr<PaymentFlow> flow;

  // The run in progress.
  const Order* order = nullptr;
  int64_t run_start = 0;
  int64_t run_deadline = 0;
  int run_attempts = 0;
  int run_sends = 0;
  // Over the process's life (the retry budget is per client).
  long retries = 0;
  long successes = 0;
  std::optional<int64_t> last_retry_after;
  bool last_had_retry_after = false;
};

class World {
 public:
  World(uint64_t seed, const Options& opt);
  ~World();
  void run();

  uint64_t seed;
  const Options& opt;
  Rng rng;
  SimClock clock;
  ProviderModel provider;
  Config config;
  Profile profile;
  std::string ledger_url;
  std::unique_ptr<Ledger> shared_ledger;  // memory: one per "machine", surviving its processes
  std::vector<Order> orders;
  std::map<std::string, Seen> first_seen;
  std::map<std::string, std::vector<Outcome>> outcomes;
  int weights[14] = {};
  int total_weight = 0;
  int crash_percent = 0;
  int crashes = 0;
  int race_percent = 0;
  int oversleep_percent = 0;  // a sleeper that wakes late
  int wall_jump_percent = 0;  // the wall clock steps (NTP), the monotonic one does not
  int64_t wall_jump_ms = 5000;
  int next_process = 0;

  int64_t lease_ms() const { return config.retry.deadline_ms + config.lease_margin_ms; }
  Fault pick_fault(bool crashes_allowed);
  [[noreturn]] void fail(const std::string& invariant, const std::string& detail) {
    throw Broken{{invariant, detail}};
  }
  void say(const std::string& s) {
    if (opt.verbose) std::fprintf(stderr, "[t=%lld] %s\n", static_cast<long long>(clock.mono), s.c_str());
  }
  void race(Process& a);
  PaymentResult submit(Process& p, const Order& o, std::string_view body);
  void check_result(const Process& p, const Order& o, const PaymentResult& r);
  void check_final();
};

Process::Process(World& world, int ident, int dep)
    : w(world), id(ident), depth(dep), owner("worker-" + std::to_string(ident)),
      keys("key-" + std::to_string(world.seed) + "-p" + std::to_string(ident) + "-"), jitter(world.seed * 31 + ident) {
  if (w.shared_ledger) {
    ledger = w.shared_ledger.get();
  } else {
    own_ledger = open_ledger(w.ledger_url, "");
    ledger = own_ledger.get();
  }
  AttemptLog::Sink sink;
  if (w.opt.verbose) sink = [this](int, const std::string& line) { w.say("  log p" + std::to_string(id) + " " + line); };
  log = std::make_unique<AttemptLog>(sink, std::string(), kLogDebug, w.config.secrets(), w.clock);
  budget = std::make_unique<RetryBudget>(w.config.budget);
  engine = std::make_unique<Engine>(w.config, w.profile,
                                    EngineDeps{transport, w.clock, sleeper, jitter, keys, *log, *budget, stats});
  flow = std::make_unique<PaymentFlow>(*engine, *ledger, w.config, w.clock, sleeper, keys, stats, *log, owner);
}

TransportResult ProcTransport::post(const HttpRequest& req) {
  Process& p = p_;
  World& w = p.w;
  const int64_t now = w.clock.now_ms();
  ++p.run_attempts;
  ++p.run_sends;
  ++tally.sends;
  if (p.run_attempts > w.config.retry.max_attempts)
    w.fail("retry_budget", "attempt " + std::to_string(p.run_attempts) + " in one run; max_attempts is " +
                               std::to_string(w.config.retry.max_attempts));
  if (now >= p.run_deadline)
    w.fail("no_attempt_after_deadline", "attempt at t=" + std::to_string(now) + ", deadline t=" + std::to_string(p.run_deadline));
  if (req.timeout_ms <= 0 || now + req.timeout_ms > p.run_deadline)
    w.fail("no_attempt_after_deadline", "attempt timeout " + std::to_string(req.timeout_ms) + " ms runs past the deadline");

  std::string key;
  for (const auto& [n, v] : req.headers)
    if (n == "Idempotency-Key") key = v;
  if (w.opt.sabotage == "rekey" && p.run_attempts > 1) key += "-again";
  const std::string body(req.body);
  auto [seen, first] = w.first_seen.try_emplace(p.order->id, Seen{key, body});
  if (!first && (seen->second.key != key || seen->second.body != body))
    w.fail("same_key_and_bytes", "order " + p.order->id + " first sent with key " + seen->second.key + " and " +
                                     std::to_string(seen->second.body.size()) + " bytes, now key " + key + " and " +
                                     std::to_string(body.size()) + " bytes");

  const Fault f = w.pick_fault(p.depth == 0);
  int64_t latency = w.rng.chance(85) ? w.rng.range(1, 300) : w.rng.range(0, 2 * req.timeout_ms + 1);
  const int ra_kind = static_cast<int>(w.rng.range(0, kRetryAfterKinds - 1));
  const int64_t slow = w.rng.range(50, 20000);
  ProviderReply reply = w.provider.handle(req, f, now, w.clock.unix_ms(), latency, ra_kind, slow);
  if (reply.crash) {
    ++w.crashes;
    ++tally.crashes;
    w.say("p" + std::to_string(p.id) + " CRASH (" + fault_name(f) + ")");
    throw Crash{};
  }
  const TransportResult& t = reply.result;
  if (t.elapsed_ms < 0 || t.elapsed_ms > req.timeout_ms) w.fail("model", "transport elapsed outside the timeout");
  w.clock.advance(t.elapsed_ms);
  p.last_had_retry_after = t.failure == TransportFailure::none && !reply.retry_after.header.empty();
  p.last_retry_after = p.last_had_retry_after ? reply.retry_after.ms : std::nullopt;
  if (t.failure == TransportFailure::none && t.response.status / 100 == 2) ++p.successes;
  w.say("p" + std::to_string(p.id) + " send " + p.order->id + " key=" + key + " fault=" + fault_name(f) + " -> " +
        (t.failure == TransportFailure::none ? std::to_string(t.response.status) : transport_failure_name(t.failure)) +
        (reply.retry_after.header.empty() ? "" : " Retry-After: " + reply.retry_after.header));
  return t;
}

void ProcSleeper::sleep_ms(int64_t ms) {
  Process& p = p_;
  World& w = p.w;
  const RetryPolicy& rp = w.config.retry;
  const int64_t now = w.clock.now_ms();
  w.say("p" + std::to_string(p.id) + " sleep " + std::to_string(ms));
  ++p.retries;
  ++tally.sleeps;
  // Every retry is paid from the client-wide bucket, refilled only by successes.
  const long affordable = (w.config.budget.tokens + static_cast<long>(w.config.budget.success_refund) * p.successes) /
                          std::max(1, w.config.budget.retry_cost);
  if (p.retries > affordable)
    w.fail("retry_budget", std::to_string(p.retries) + " retries in one client; the budget affords " +
                               std::to_string(affordable));
  if (ms < 0) w.fail("sleep_bounds", "negative sleep " + std::to_string(ms));
  if (ms > std::max(rp.backoff_cap_ms, rp.retry_after_max_ms))
    w.fail("sleep_bounds", "sleep " + std::to_string(ms) + " above both the backoff cap and retry_after_max_ms");
  if (now + ms + rp.min_attempt_ms > p.run_deadline)
    w.fail("sleep_bounds", "sleep " + std::to_string(ms) + " leaves no attempt before the deadline");
  if (p.last_had_retry_after && p.last_retry_after) {
    if (now + *p.last_retry_after > p.run_deadline)
      w.fail("sleep_bounds", "retried although Retry-After (" + std::to_string(*p.last_retry_after) +
                                 " ms) asks beyond the deadline");
    ++tally.retry_after_floors;
    const int64_t floor = std::min(*p.last_retry_after, rp.retry_after_max_ms);
    if (ms < floor)
      w.fail("sleep_bounds", "sleep " + std::to_string(ms) + " below the Retry-After floor " + std::to_string(floor));
  }
  if (p.depth == 0 && w.crash_percent > 0 && w.crashes < 3 && w.rng.chance(w.crash_percent)) {
    ++w.crashes;
    ++tally.crashes;
    w.say("p" + std::to_string(p.id) + " CRASH in backoff");
    throw Crash{};
  }
  if (p.depth == 0 && w.race_percent > 0 && w.rng.chance(w.race_percent)) w.race(p);
  w.clock.advance(ms);
  if (w.oversleep_percent > 0 && w.rng.chance(w.oversleep_percent)) w.clock.advance(w.rng.range(1, 3000));
  if (w.wall_jump_percent > 0 && w.rng.chance(w.wall_jump_percent)) w.clock.unix += w.rng.range(-w.wall_jump_ms, w.wall_jump_ms);
}

World::World(uint64_t s, const Options& o) : seed(s), opt(o), rng(s), profile(*builtin_profile("generic")) {
  const bool stripe = rng.chance(70);
  profile = *builtin_profile(stripe ? "stripe" : "generic");
  config.provider = profile.name;
  config.base_url = "https://provider.test";
  config.create_path = "/v1/payments";
  config.auth_headers.emplace_back("Authorization", "Bearer sk_test_dst");
  RetryPolicy& rp = config.retry;
  rp.max_attempts = static_cast<int>(rng.range(1, 6));
  rp.min_attempt_ms = rng.range(20, 300);
  rp.attempt_timeout_ms = rng.range(200, 5000);
  rp.connect_timeout_ms = rng.range(100, rp.attempt_timeout_ms);
  rp.deadline_ms = rng.range(rp.min_attempt_ms + 1, 30000);
  rp.backoff_base_ms = rng.range(1, 1000);
  rp.backoff_cap_ms = rng.range(rp.backoff_base_ms, 8000);
  rp.retry_after_max_ms = rng.range(0, 10000);
  config.budget.tokens = static_cast<int>(rng.range(0, 60));
  config.budget.retry_cost = static_cast<int>(rng.range(1, 10));
  config.budget.success_refund = static_cast<int>(rng.range(0, 2));
  config.lease_margin_ms = rng.range(0, 5000);
  config.in_progress_wait_ms = 0;
  // Sometimes a provider that forgets keys quickly: a re-send after that
  // would be a second payment, so the flow must stop re-sending in time.
  if (rng.chance(20)) {
    // The flow stops re-sending min(1 h, retention / 10) before the key
    // expires; without --short-retention the retention leaves that margin a
    // whole deadline, the case the flow handles today.
    config.key_retention_ms = opt.short_retention ? rng.range(1000, 120000) : rng.range(10 * rp.deadline_ms, 3600000);
    provider.retention_ms = *config.key_retention_ms;
  } else {
    provider.retention_ms = profile.retention_ms.value_or(0);
  }
  // Key expiry is kept in wall-clock time with a margin of min(1 h,
  // retention / 10) against the provider's clock; steps larger than the
  // margin are a clock failure no client can absorb, so they stay inside it.
  if (config.key_retention_ms) wall_jump_ms = std::min<int64_t>(5000, *config.key_retention_ms / 20);
  // Leases are wall-clock too (processes share no monotonic clock), with
  // lease_margin_ms as the allowance for steps: all of a run's steps together
  // stay within half of it.
  wall_jump_ms = std::min<int64_t>(wall_jump_ms, config.lease_margin_ms / (2 * rp.max_attempts));
  oversleep_percent = rng.chance(30) ? static_cast<int>(rng.range(5, 50)) : 0;
  wall_jump_percent = rng.chance(20) ? static_cast<int>(rng.range(2, 20)) : 0;

  // The schedule's character: how likely each fault is.
  for (int i = 0; i < 14; ++i) weights[i] = static_cast<int>(rng.range(0, 10));
  weights[static_cast<int>(Fault::none)] = static_cast<int>(rng.range(5, 60));
  if (rng.chance(15)) weights[static_cast<int>(Fault::conflict_storm)] = 80;  // a 409 storm
  crash_percent = rng.chance(40) ? 0 : static_cast<int>(rng.range(2, 20));
  if (crash_percent == 0) weights[static_cast<int>(Fault::crash_before_send)] = weights[static_cast<int>(Fault::crash_after_process)] = 0;
  race_percent = rng.chance(50) ? 0 : static_cast<int>(rng.range(5, 40));
  for (int wgt : weights) total_weight += wgt;

  const int n_orders = static_cast<int>(rng.range(1, 3));
  for (int i = 0; i < n_orders; ++i) {
    Order ord;
    ord.id = "ord-" + std::to_string(seed) + "-" + std::to_string(i);
    ord.body = R"({"amount":)" + std::to_string(rng.range(1, 99999)) + R"(,"currency":"eur","order_id":")" + ord.id +
               R"(","card":"4242424242424242"})";
    provider.declines[ord.id] = rng.chance(20);
    orders.push_back(ord);
  }

  if (!opt.sqlite_dir.empty() && opt.sqlite_every > 0 && seed % opt.sqlite_every == 0) {
    ++tally.sqlite;
    ledger_url = "sqlite://" + opt.sqlite_dir + "/dst-" + std::to_string(seed) + ".db";
  } else {
    ledger_url = "memory:";
    shared_ledger = open_ledger(ledger_url, "");
  }
}

World::~World() {
  if (ledger_url.rfind("sqlite://", 0) == 0) {
    const std::string path = ledger_url.substr(9);
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
  }
}

Fault World::pick_fault(bool crashes_allowed) {
  for (;;) {
    int64_t x = rng.range(0, total_weight - 1);
    int i = 0;
    while (x >= weights[i]) x -= weights[i++];
    const Fault f = static_cast<Fault>(i);
    const bool is_crash = f == Fault::crash_before_send || f == Fault::crash_after_process;
    if (!is_crash) return f;
    if (crashes_allowed && crashes < 3 && rng.chance(crash_percent * 3)) return f;
    if (weights[0] > 0) return Fault::none;
  }
}

void World::check_result(const Process& p, const Order& o, const PaymentResult& r) {
  outcomes[o.id].push_back(r.outcome);
  tally.unknown += r.outcome == Outcome::unknown;
  tally.failed += r.outcome == Outcome::failed;
  say("p" + std::to_string(p.id) + " result " + o.id + " " + outcome_name(r.outcome) + "/" +
      delivery_name(r.delivery) + " " + r.error);
  auto row = p.ledger->get(o.id);
  if (!row) fail("ledger_agrees_with_provider", "no ledger row for " + o.id + " after a submit");
  if (r.idempotency_key != row->idempotency_key)
    fail("same_key_and_bytes", "result key " + r.idempotency_key + " differs from the ledger's " + row->idempotency_key);
  if (r.outcome == Outcome::succeeded && r.provider_payment_id != "pi_" + o.id)
    fail("ledger_agrees_with_provider", "SUCCEEDED with provider id '" + r.provider_payment_id + "'");
}

PaymentResult World::submit(Process& p, const Order& o, std::string_view body) {
  p.order = &o;
  p.run_start = clock.now_ms();
  p.run_deadline = p.run_start + config.retry.deadline_ms;
  p.run_attempts = 0;
  p.run_sends = 0;
  p.last_had_retry_after = false;
  SubmitRequest req;
  req.order_id = o.id;
  req.body = body;
  return p.flow->submit(req);
}

// Another worker submits the same order while `a` sleeps in its backoff:
// either a's lease is live (the racer must send nothing), or a stalled past
// its lease (a GC pause, a frozen VM) and the racer takes the payment over.
void World::race(Process& a) {
  const bool stalled = rng.chance(50);
  const bool other_body = rng.chance(10);
  if (stalled) clock.advance(lease_ms() + 1);
  ++tally.races;
  if (stalled) ++tally.takeovers;
  Process b(*this, next_process++, 1);
  const Order& o = *a.order;
  const std::string altered = o.body.substr(0, o.body.size() - 1) + R"(,"note":"x"})";
  say("race: p" + std::to_string(b.id) + " submits " + o.id + (stalled ? " after p" + std::to_string(a.id) + "'s lease" : "") +
      (other_body ? " with another body" : ""));
  const Order* saved = a.order;
  try {
    PaymentResult r = submit(b, o, other_body ? std::string_view(altered) : std::string_view(o.body));
    if (other_body) fail("mismatch_sends_nothing", "the same order with another body was accepted");
    if (!stalled && (r.outcome != Outcome::in_progress || b.run_sends != 0))
      fail("one_owner", std::string("a second worker got ") + outcome_name(r.outcome) + " and sent " +
                            std::to_string(b.run_sends) + " while the first held a live lease");
    check_result(b, o, r);
  } catch (const Error& e) {
    if (!other_body || e.code() != Errc::mismatch || b.run_sends != 0)
      fail("mismatch_sends_nothing", std::string("racer failed: ") + e.what());
    say("race: mismatch, nothing sent");
  }
  a.order = saved;
}

void World::check_final() {
  provider.finish_all();
  for (const Order& o : orders) {
    const int charged = provider.charges.count(o.id) ? provider.charges[o.id] : 0;
    tally.charged += charged > 0;
    if (charged > 1) fail("at_most_one_charge", o.id + " charged " + std::to_string(charged) + " times");
    for (Outcome out : outcomes[o.id])
      if (out == Outcome::failed && charged > 0) fail("no_failed_when_processed", o.id + " reported FAILED but was charged");
    auto l = shared_ledger ? nullptr : open_ledger(ledger_url, "");
    Ledger& ledger = shared_ledger ? *shared_ledger : *l;
    auto row = ledger.get(o.id);
    if (!row) continue;  // every run for it crashed before the row? create_and_claim precedes any send
    if (row->state == PaymentState::succeeded && charged != 1)
      fail("ledger_agrees_with_provider", o.id + " SUCCEEDED in the ledger, charged " + std::to_string(charged));
    if (row->state == PaymentState::failed && charged != 0)
      fail("no_failed_when_processed", o.id + " FAILED in the ledger but charged");
    if (auto s = first_seen.find(o.id); s != first_seen.end() && s->second.key != row->idempotency_key)
      fail("same_key_and_bytes", o.id + " ledger key " + row->idempotency_key + " but sent with " + s->second.key);
    for (Outcome out : outcomes[o.id])
      if (out == Outcome::succeeded && charged != 1) fail("ledger_agrees_with_provider", o.id + " SUCCEEDED but not charged");
  }
}

void World::run() {
  const RetryPolicy& rp = config.retry;
  say("schedule " + std::to_string(seed) + ": profile " + profile.name + ", ledger " + ledger_url +
      ", max_attempts " + std::to_string(rp.max_attempts) + ", deadline " + std::to_string(rp.deadline_ms) +
      ", attempt_timeout " + std::to_string(rp.attempt_timeout_ms) + ", min_attempt " + std::to_string(rp.min_attempt_ms) +
      ", key_retention " + (config.key_retention_ms ? std::to_string(*config.key_retention_ms) : "profile") +
      ", provider retention " + std::to_string(provider.retention_ms) + ", lease margin " +
      std::to_string(config.lease_margin_ms) + ", crash% " + std::to_string(crash_percent) + ", race% " +
      std::to_string(race_percent) + ", oversleep% " + std::to_string(oversleep_percent) + ", wall-jump% " +
      std::to_string(wall_jump_percent));
  std::unique_ptr<Process> proc;
  for (const Order& o : orders) {
    bool done = false;
    for (int round = 0; round < 12 && !done; ++round) {
      if (!proc) proc = std::make_unique<Process>(*this, next_process++, 0);
      PaymentResult r;
      try {
        r = submit(*proc, o, o.body);
      } catch (const Crash&) {
        proc.reset();  // the process is gone; its ledger connection with it
        if (opt.sabotage == "forget" && shared_ledger) shared_ledger = open_ledger(ledger_url, "");
        // A restart comes sometimes at once (the lease is still live: the
        // new process must wait), sometimes after the lease ran out.
        clock.advance(rng.chance(70) ? lease_ms() + 1 : rng.range(0, 1000));
        continue;
      } catch (const Error& e) {
        fail("unexpected_call_error", std::string(e.what()));
      } catch (const LedgerError& e) {
        fail("unexpected_ledger_error", std::string(e.what()));
      }
      check_result(*proc, o, r);
      if (r.from_ledger && proc->run_sends != 0)
        fail("stored_outcome_sends_nothing", "a result from the ledger came with " + std::to_string(proc->run_sends) + " sends");
      switch (r.outcome) {
        case Outcome::succeeded:
        case Outcome::failed:
          // Sometimes the caller submits again: the stored outcome, no HTTP.
          if (rng.chance(20)) {
            PaymentResult again = submit(*proc, o, o.body);
            if (!again.from_ledger || again.outcome != r.outcome || proc->run_sends != 0)
              fail("stored_outcome_sends_nothing", std::string("resubmitting a settled order gave ") +
                                                       outcome_name(again.outcome) + " after " +
                                                       std::to_string(proc->run_sends) + " sends");
          }
          done = true;
          break;
        case Outcome::unknown:
          if (rng.chance(30)) done = true;  // the caller leaves it for reconciliation
          else clock.advance(rng.range(0, 2000));
          break;
        case Outcome::in_progress:
          clock.advance(lease_ms() + 1);
          break;
      }
    }
  }
  check_final();
}

}  // namespace

std::optional<Violation> run_schedule(uint64_t seed, const Options& opt) {
  ++tally.schedules;
  try {
    World w(seed, opt);
    w.run();
  } catch (const Broken& b) {
    return b.v;
  } catch (const Crash&) {
    return Violation{"harness", "a crash escaped its process"};
  } catch (const std::exception& e) {
    return Violation{"unexpected_exception", e.what()};
  }
  return std::nullopt;
}

}  // namespace payretry::dst
