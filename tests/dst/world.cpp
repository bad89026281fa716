#include "world.hpp"

#include <cJSON.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <set>
#include <vector>

#include "attempt_log.hpp"
#include "budget.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "error.hpp"
#include "history.hpp"
#include "ledger.hpp"
#include "multi_engine.hpp"
#include "payment_flow.hpp"
#include "profile.hpp"
#include "provider_model.hpp"
#include "random.hpp"
#include "rng.hpp"
#include "settle.hpp"
#include "stats.hpp"

namespace payretry::dst {

Tally tally;

namespace {

// A process dies: thrown through the blocking engine so that nothing after
// the crash point runs, as with SIGKILL. Deliberately not an Error, which
// PaymentFlow would catch and settle.
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

// The ledger of one process, failing writes now and then (a locked SQLite, a
// full disk, PostgreSQL gone mid-batch): before anything is applied, so the
// store keeps what it had. Reads never fail: a process that cannot read its
// ledger answers every call with an error before it sends anything.
class FaultyLedger final : public Ledger {
 public:
  FaultyLedger(Ledger& inner, World& w) : inner_(inner), w_(w) {}
  void apply(LedgerBatch& b) override;
  std::string secret() override { return inner_.secret(); }
  CreateOutcome create_and_claim(const PaymentRow& p, const std::string& owner, int64_t now,
                                 int64_t lease_until) override {
    fail_maybe("create");
    CreateOutcome out = inner_.create_and_claim(p, owner, now, lease_until);
    if (out.created) granted(owner);
    return out;
  }
  bool claim(const std::string& order_id, const std::string& owner, int64_t now, int64_t lease_until) override {
    fail_maybe("claim");
    const bool ok = inner_.claim(order_id, owner, now, lease_until);
    if (ok) granted(owner);
    return ok;
  }
  bool record_attempt(const std::string& order_id, const std::string& owner, const AttemptEntry& a) override {
    fail_maybe("record");
    return inner_.record_attempt(order_id, owner, a);
  }
  bool settle(const std::string& order_id, const std::string& owner, const AttemptEntry* last, const Settlement& s,
              int64_t now) override {
    fail_maybe("settle");
    return inner_.settle(order_id, owner, last, s, now);
  }
  std::optional<PaymentRow> get(const std::string& order_id) override { return inner_.get(order_id); }
  std::vector<AttemptEntry> attempts(const std::string& order_id) override { return inner_.attempts(order_id); }
  std::vector<PaymentRow> list(std::optional<PaymentState> state, int64_t updated_before, int limit) override {
    return inner_.list(state, updated_before, limit);
  }
  int64_t prune_settled(int64_t updated_before) override { return inner_.prune_settled(updated_before); }

 private:
  void fail_maybe(const char* what);
  // Every claim the store granted must carry a token no claim had before:
  // otherwise a stale run holding an older claim passes its fence.
  void granted(const std::string& token);
  Ledger& inner_;
  World& w_;
};

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

// The concurrent engine's transport under the simulated clock: a request is
// handed over at start(), leaves when its connection is ready (after a queue
// delay, as behind a busy pool), where its may_start gate is asked, and its
// answer arrives `elapsed` later.
class SimAsyncTransport final : public AsyncTransport {
 public:
  explicit SimAsyncTransport(Process& p) : p_(p) {}
  void start(const HttpRequest& request, void* tag) override;
  void perform(std::vector<Done>& done) override;
  void wait(int64_t max_ms) override;
  void wakeup() override {}
  int64_t next_timeout_ms() override;
  bool dead = false;  // a crashed process: nothing moves, nothing is sent

 private:
  struct Flight {
    const HttpRequest* req = nullptr;
    void* tag = nullptr;
    int64_t send_at = 0;  // monotonic: the connection is ready, the gate is asked
    int64_t end_at = INT64_MAX;  // the request's wait limit: in line and on the wire
    bool ends_in_line = false;   // the line outlasts the wait limit (less the send margin)
    bool sent = false;
    int64_t done_at = 0;
    TransportResult result;
  };
  Process& p_;
  std::deque<Flight> flights_;
};

// A client: what pay_client_new builds, over the world's shared provider and
// ledger, with either driver.
class Process {
 public:
  Process(World& w, int id, int depth, bool concurrent);
  ~Process();
  World& w;
  const int id;
  const int depth;  // 0: a top-level worker; 1: a racer started inside another's sleep
  const std::string owner;
  std::unique_ptr<Ledger> own_ledger;
  std::unique_ptr<FaultyLedger> ledger;
  Stats stats;
  std::unique_ptr<AttemptLog> log;
  std::unique_ptr<RetryBudget> budget;
  Keys keys;
  JitterRandom jitter;
  ProcTransport transport{*this};
  ProcSleeper sleeper{*this};
  std::unique_ptr<Engine> engine;
  std::unique_ptr<PaymentFlow> flow;
  std::unique_ptr<Settler> settler;
  std::unique_ptr<SimAsyncTransport> async;
  std::unique_ptr<MultiEngine> multi;

  // The blocking run in progress.
  const Order* order = nullptr;
  int64_t run_start = 0;
  int64_t run_deadline = 0;
  int run_attempts = 0;
  int run_sends = 0;
  bool run_told_not_to_retry = false;  // an answer of this run said Stripe-Should-Retry: false
  bool in_settler = false;  // lookups and reconcile re-sends: not one run
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
  // Pauses inside the request hook (a slow signer, a GC pause while the
  // engine thread prepares other payments) draw from their own stream, so
  // that schedules without them stay what they were.
  Rng pause_rng;
  int hook_pause_percent = 0;
  bool lag_edge = false;  // read lag at the grace, a short lease margin and deadline
  SimClock clock;
  std::string profile_name;
  bool concurrent = false;
  std::unique_ptr<ProviderModel> provider;
  Config config;
  Profile profile;
  std::string ledger_url;
  std::unique_ptr<Ledger> shared_ledger;  // memory: one per "machine", surviving its processes
  std::vector<Order> orders;
  std::map<std::string, const Order*> order_by_id;
  std::map<std::string, Seen> first_seen;
  std::map<std::string, std::vector<Outcome>> outcomes;
  std::map<std::string, int> sends_written;   // requests that may have reached the provider, per order
  std::map<std::string, bool> flagged;        // some result for the order was not durably recorded
  std::map<std::string, int> active_calls;    // calls on the order in progress (any process)
  int weights[static_cast<int>(Fault::kCount)] = {};
  int total_weight = 0;
  int crash_percent = 0;
  int crashes = 0;
  int race_percent = 0;
  int ledger_fault_percent = 0;
  int oversleep_percent = 0;  // a sleeper that wakes late
  int wall_jump_percent = 0;  // the wall clock steps (NTP), the monotonic one does not
  int64_t wall_jump_ms = 5000;
  int next_process = 0;
  std::vector<std::unique_ptr<Process>> graveyard;  // crashed concurrent processes, drained after the checks
  std::set<std::string> answered;  // orders the concurrent driver has a final, recorded answer for
  // Set while a crashed (or finished) concurrent process drains: what its
  // payments report then is no caller's answer.
  bool draining = false;

  int64_t lease_ms() const { return config.retry.deadline_ms + config.lease_margin_ms; }
  Ledger& ledger_for_checks(std::unique_ptr<Ledger>& holder) {
    if (shared_ledger) return *shared_ledger;
    holder = open_ledger(ledger_url, "");
    return *holder;
  }
  Fault pick_fault(bool crashes_allowed);
  // A violation found inside the concurrent engine's turn (a done callback,
  // the transport's perform) is thrown into code that keeps the engine alive
  // whatever a callback throws: it is kept here too, and rethrown after the
  // turn, so that nothing the engine swallows can hide it.
  std::optional<Broken> broken;
  std::set<std::string> tokens_granted;  // every fencing token a claim was granted under
  [[noreturn]] void fail(const std::string& invariant, const std::string& detail) {
    if (!broken) broken = Broken{{invariant, detail}};
    throw Broken{{invariant, detail}};
  }
  void rethrow_broken() {
    if (broken) throw *broken;
  }
  void say(const std::string& s) {
    if (opt.verbose) std::fprintf(stderr, "[t=%lld] %s\n", static_cast<long long>(clock.mono), s.c_str());
  }
  // One request reaching the provider (through either transport): the
  // invariants that hold at the moment a byte leaves, then the model.
  ProviderReply send(Process& p, const HttpRequest& req, bool crashes_allowed);
  void race(Process& a);
  PaymentResult submit(Process& p, const Order& o, std::string_view body);
  void check_result(const Order& o, const PaymentResult& r, int sends_in_call);
  void check_error(const Order& o, const std::string& what, int sends_in_call, bool alone);
  void reconcile(Process& p);
  void run_blocking();
  void run_concurrent();
  void check_final();
};

// ---- the ledger that fails ---------------------------------------------------

void FaultyLedger::fail_maybe(const char* what) {
  if (w_.ledger_fault_percent > 0 && w_.rng.chance(w_.ledger_fault_percent)) {
    ++tally.ledger_faults;
    w_.say(std::string("  ledger fault on ") + what);
    throw LedgerError(std::string("ledger (dst): injected failure on ") + what);
  }
}

void FaultyLedger::granted(const std::string& token) {
  if (!w_.tokens_granted.insert(token).second)
    w_.fail("one_fencing_token_per_claim", "the ledger granted a second claim under token '" + token + "'");
}

void FaultyLedger::apply(LedgerBatch& b) {
  if (w_.ledger_fault_percent > 0 && w_.rng.chance(w_.ledger_fault_percent)) {
    ++tally.ledger_faults;
    w_.say("  ledger fault on a group commit");
    for (auto& c : b.creates) c.error = "ledger (dst): injected failure on a group commit";
    for (auto& r : b.records) r.error = "ledger (dst): injected failure on a group commit";
    for (auto& s : b.settles) s.error = "ledger (dst): injected failure on a group commit";
    return;
  }
  inner_.apply(b);
  for (const auto& c : b.creates)
    if (c.error.empty() && c.out.created) granted(c.owner);
}

// ---- processes ----------------------------------------------------------------

Process::Process(World& world, int ident, int dep, bool concurrent)
    : w(world), id(ident), depth(dep), owner("worker-" + std::to_string(ident)),
      keys("key-" + std::to_string(world.seed) + "-p" + std::to_string(ident) + "-"), jitter(world.seed * 31 + ident) {
  Ledger* base = nullptr;
  if (w.shared_ledger) {
    base = w.shared_ledger.get();
  } else {
    own_ledger = open_ledger(w.ledger_url, "");
    base = own_ledger.get();
  }
  ledger = std::make_unique<FaultyLedger>(*base, w);
  AttemptLog::Sink sink;
  if (w.opt.verbose) sink = [this](int, const std::string& line) { w.say("  log p" + std::to_string(id) + " " + line); };
  log = std::make_unique<AttemptLog>(sink, std::string(), kLogDebug, w.config.secrets(), w.clock);
  budget = std::make_unique<RetryBudget>(w.config.budget);
  // The request hook signs every request, lookups included, as a WeChat Pay
  // or Alipay merchant's signer would.
  // Now and then it takes long: on the concurrent engine's thread, while
  // requests it already handed over wait for their connection (the gate
  // right before the first byte must still refuse them once their deadline
  // or lease is over).
  RequestHook hook = [this](const AttemptView& v, Headers& extra) -> std::string {
    if (w.hook_pause_percent > 0 && w.pause_rng.chance(w.hook_pause_percent)) {
      ++tally.hook_pauses;
      const int64_t ms = w.pause_rng.chance(50) ? w.lease_ms() + 1 : w.pause_rng.range(1, 3000);
      w.say("p" + std::to_string(id) + " request hook pauses " + std::to_string(ms) + " ms");
      w.clock.advance(ms);
    }
    HttpRequest signed_req;
    signed_req.method = v.method;
    signed_req.url = v.url;
    signed_req.body = v.body;
    extra.emplace_back("X-Dst-Signature", ProviderModel::signature(signed_req));
    return {};
  };
  engine = std::make_unique<Engine>(w.config, w.profile,
                                    EngineDeps{transport, w.clock, sleeper, jitter, keys, *log, *budget, stats}, hook);
  flow = std::make_unique<PaymentFlow>(*engine, *ledger, w.config, w.clock, sleeper, keys, stats, *log, owner);
  settler = std::make_unique<Settler>(*ledger, transport, w.profile, w.config, w.clock, sleeper, jitter, *budget, *log, stats,
                                      *flow, hook);
  if (concurrent) {
    async = std::make_unique<SimAsyncTransport>(*this);
    multi = std::make_unique<MultiEngine>(*engine, *flow, w.config, w.clock, *log, stats, *async, false);
  }
}

Process::~Process() {
  // A crashed process's engine is drained only after the schedule's checks:
  // its transport is dead, so it sends nothing and just lets its payments end.
  if (!async) return;
  if (w.broken) {
    // The schedule already failed and is unwinding: its engine is in
    // whatever state the violation left it in, and draining it may never
    // end under a clock that no longer moves. Left as it is (leaked).
    (void)multi.release();
    (void)async.release();
    return;
  }
  async->dead = true;
  const bool was = w.draining;
  w.draining = true;
  multi.reset();
  w.draining = was;
}

namespace {
// Whether a body names the order: a JSON string "id", or a form value =id.
bool carries(std::string_view body, const std::string& id) {
  if (body.find("\"" + id + "\"") != std::string_view::npos) return true;
  for (size_t at = body.find("=" + id); at != std::string_view::npos; at = body.find("=" + id, at + 1)) {
    const size_t end = at + 1 + id.size();
    if (end == body.size() || body[end] == '&') return true;
  }
  return false;
}
}  // namespace

ProviderReply World::send(Process& p, const HttpRequest& req, bool crashes_allowed) {
  const int64_t now = clock.now_ms();
  ++tally.sends;
  const std::string order = [&] {
    for (const Order& o : orders)
      if (carries(req.body, o.id) || req.url.find(o.id) != std::string::npos) return o.id;
    return std::string();
  }();
  // No byte leaves under a claim that is over: the ledger's row must still
  // be held by this request's claim, with its lease running.
  {
    std::unique_ptr<Ledger> holder;
    Ledger& l = ledger_for_checks(holder);
    if (!order.empty()) {
      const auto row = l.get(order);
      if (!row) fail("key_committed_before_send", "a request for " + order + " left before its row existed");
      if (row->state != PaymentState::in_flight || row->lease_owner != req.claim)
        fail("no_send_after_losing_the_lease", "a request for " + order + " left under claim '" + req.claim +
                                                   "' while the row is " + state_name(row->state) + " held by '" +
                                                   row->lease_owner + "'");
      if (clock.unix_ms() >= row->lease_until)
        fail("no_send_after_losing_the_lease", "a request for " + order + " left " +
                                                   std::to_string(clock.unix_ms() - row->lease_until) +
                                                   " ms after its lease ended");
    }
  }
  const bool lookup = req.method == "GET" || req.url.find("alipay.trade.query") != std::string::npos ||
                      (provider->wire().lookup_path.size() &&
                       req.url.find(provider->wire().lookup_path) != std::string::npos);
  if (!lookup && !order.empty()) {
    std::string key;
    if (profile.identity.mode == IdentityMode::header)
      for (const auto& [n, v] : req.headers)
        if (n == profile.identity.name) key = v;
    if (opt.sabotage == "rekey" && p.run_attempts > 1) key += "-again";
    const std::string body(req.body);
    auto [seen, first] = first_seen.try_emplace(order, Seen{key, body});
    if (!first && (seen->second.key != key || seen->second.body != body))
      fail("same_key_and_bytes", "order " + order + " first sent with key " + seen->second.key + " and " +
                                     std::to_string(seen->second.body.size()) + " bytes, now key " + key + " and " +
                                     std::to_string(body.size()) + " bytes");
  }
  // Stripe's SDKs obey Stripe-Should-Retry before the status (St4): a run
  // told "false" sends that payment no more.
  if (!lookup && !order.empty() && !p.in_settler && p.order && p.order->id == order && p.run_told_not_to_retry)
    fail("obeys_should_retry_false", "order " + order + " was sent again after an answer said Stripe-Should-Retry: false");
  HttpRequest sent = req;
  std::string rekeyed;
  if (opt.sabotage == "rekey" && !lookup && p.run_attempts > 1)
    for (auto& [n, v] : sent.headers)
      if (n == profile.identity.name) v += "-again";
  // In the lag-edge schedules a run now and then dies right after a later
  // attempt was processed: the send that its last write does not cover.
  const bool edge_crash = !lookup && lag_edge && crashes_allowed && crashes < 3 && p.run_attempts >= 2 &&
                          pause_rng.chance(30);
  const Fault f = lookup       ? (rng.chance(80) ? Fault::none : Fault::timeout_before)
                  : edge_crash ? Fault::crash_after_process
                               : pick_fault(crashes_allowed);
  const int64_t latency = rng.chance(85) ? rng.range(1, 300) : rng.range(0, 2 * std::max<int64_t>(1, req.timeout_ms) + 1);
  const int ra_kind = static_cast<int>(rng.range(0, kRetryAfterKinds - 1));
  const int64_t slow = rng.range(50, 20000);
  ProviderReply reply = provider->handle(sent, f, now, clock.unix_ms(), latency, ra_kind, slow);
  if (!order.empty() && !lookup && (reply.crash || reply.result.request_written)) ++sends_written[order];
  // Stripe marks its 409 and 429 answers with Stripe-Should-Retry, now and
  // then "false" (drawn from the pause stream: other schedules stay as they were).
  if (profile_name == "stripe" && !lookup && reply.result.failure == TransportFailure::none &&
      (reply.result.response.status == 409 || reply.result.response.status == 429) &&
      !reply.result.response.header("Stripe-Should-Retry")) {
    const bool no = pause_rng.chance(30);
    reply.result.response.headers.emplace_back("Stripe-Should-Retry", no ? "false" : "true");
    if (no && !p.in_settler && p.order && p.order->id == order) p.run_told_not_to_retry = true;
  }
  if (lookup) ++tally.lookups;
  say("p" + std::to_string(p.id) + (lookup ? " lookup " : " send ") + order + " fault=" + fault_name(f) + " -> " +
      (reply.crash ? std::string("CRASH")
       : reply.result.failure == TransportFailure::none ? std::to_string(reply.result.response.status)
                                                          : transport_failure_name(reply.result.failure)) +
      (reply.retry_after.header.empty() ? "" : " Retry-After: " + reply.retry_after.header));
  return reply;
}

TransportResult ProcTransport::post(const HttpRequest& req) {
  Process& p = p_;
  World& w = p.w;
  const int64_t now = w.clock.now_ms();
  if (!p.in_settler) {
    ++p.run_attempts;
    ++p.run_sends;
    if (p.run_attempts > w.config.retry.max_attempts)
      w.fail("retry_budget", "attempt " + std::to_string(p.run_attempts) + " in one run; max_attempts is " +
                                 std::to_string(w.config.retry.max_attempts));
    if (now >= p.run_deadline)
      w.fail("no_attempt_after_deadline",
             "attempt at t=" + std::to_string(now) + ", deadline t=" + std::to_string(p.run_deadline));
    if (req.timeout_ms <= 0 || now + req.timeout_ms > p.run_deadline)
      w.fail("no_attempt_after_deadline",
             "attempt timeout " + std::to_string(req.timeout_ms) + " ms runs past the deadline");
  }
  // The blocking transport asks the gate too, right before the send.
  if (req.may_start) {
    if (std::string why = req.may_start(); !why.empty()) {
      ++tally.refused_at_the_gate;
      TransportResult t;
      t.failure = TransportFailure::not_started;
      t.error_text = why;
      return t;
    }
  }
  ProviderReply reply = w.send(p, req, p.depth == 0 && !p.in_settler);
  if (reply.crash) {
    ++w.crashes;
    ++tally.crashes;
    throw Crash{};
  }
  const TransportResult& t = reply.result;
  if (t.elapsed_ms < 0 || (req.timeout_ms > 0 && t.elapsed_ms > req.timeout_ms))
    w.fail("model", "transport elapsed outside the timeout");
  w.clock.advance(t.elapsed_ms);
  p.last_had_retry_after = t.failure == TransportFailure::none && !reply.retry_after.header.empty();
  p.last_retry_after = p.last_had_retry_after ? reply.retry_after.ms : std::nullopt;
  if (t.failure == TransportFailure::none && t.response.status / 100 == 2) ++p.successes;
  return t;
}

void ProcSleeper::sleep_ms(int64_t ms) {
  Process& p = p_;
  World& w = p.w;
  const RetryPolicy& rp = w.config.retry;
  const int64_t now = w.clock.now_ms();
  w.say("p" + std::to_string(p.id) + " sleep " + std::to_string(ms));
  if (p.in_settler || !p.order) {
    // A lookup's backoff, or a wait on another worker's lease.
    w.clock.advance(ms);
    return;
  }
  ++p.retries;
  ++tally.sleeps;
  // Every retry is paid from the client-wide bucket, refilled only by
  // successes: one after retries gives back a retry's cost, one at the first
  // attempt `success_refund`, so no success gives back more than the larger.
  const long per_success = std::max(w.config.budget.success_refund, w.config.budget.retry_cost);
  const long affordable =
      (w.config.budget.tokens + per_success * p.successes) / std::max(1, w.config.budget.retry_cost);
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

// ---- the concurrent engine's transport ------------------------------------------

void SimAsyncTransport::start(const HttpRequest& request, void* tag) {
  World& w = p_.w;
  // Most connections are ready at once; some wait behind a busy pool, while
  // the engine thread serves other payments, commits, runs hooks.
  const int64_t queue = w.rng.chance(70) ? 0 : w.rng.range(1, 2 * std::max<int64_t>(1, request.timeout_ms));
  Flight f;
  f.req = &request;
  f.tag = tag;
  const int64_t now = w.clock.now_ms();
  f.send_at = now + queue;
  // As the libcurl transport times its transfers: a request still in line
  // send_margin_ms before its wait limit ends there, nothing sent; one on
  // the wire is cut at the limit.
  if (request.wait_limit_ms > 0) {
    f.end_at = now + request.wait_limit_ms;
    const int64_t last_send = now + std::max<int64_t>(0, request.wait_limit_ms - request.send_margin_ms);
    if (f.send_at > last_send) {
      f.send_at = last_send;
      f.ends_in_line = true;
    }
  }
  flights_.push_back(std::move(f));
}

void SimAsyncTransport::perform(std::vector<Done>& done) {
  if (dead) {
    // Draining a dead process: every transfer ends, nothing more is sent.
    for (Flight& f : flights_) {
      TransportResult t;
      t.failure = f.sent ? TransportFailure::connection_lost : TransportFailure::connect;
      t.request_written = f.sent;
      done.push_back(Done{f.tag, std::move(t)});
    }
    flights_.clear();
    return;
  }
  World& w = p_.w;
  const int64_t now = w.clock.now_ms();
  for (auto it = flights_.begin(); it != flights_.end();) {
    Flight& f = *it;
    if (!f.sent && f.send_at <= now) {
      f.sent = true;
      if (f.ends_in_line) {
        f.result.failure = TransportFailure::not_started;
        f.result.error_text = "no connection of the pool was free before the request's time ran out";
        f.done_at = now;
      }
      // libcurl asks the gate when the connection is ready: here.
      if (f.done_at == 0 && f.req->may_start) {
        if (std::string why = f.req->may_start(); !why.empty()) {
          ++tally.refused_at_the_gate;
          f.result.failure = TransportFailure::not_started;
          f.result.error_text = why;
          f.done_at = now;
        }
      }
      if (f.done_at == 0) {
        // The attempt timeout counts from the send, and the wait limit
        // still bounds it: the provider model judges the answer's timing
        // against what is left.
        ProviderReply reply;
        if (f.end_at != INT64_MAX && now + f.req->timeout_ms > f.end_at) {
          HttpRequest capped = *f.req;
          capped.timeout_ms = std::max<int64_t>(1, f.end_at - now);
          reply = w.send(p_, capped, true);
        } else {
          reply = w.send(p_, *f.req, true);
        }
        if (reply.crash) {
          // The process dies here: nothing of it moves any more.
          ++w.crashes;
          ++tally.crashes;
          dead = true;
          return;
        }
        f.result = std::move(reply.result);
        f.done_at = now + std::max<int64_t>(0, f.result.elapsed_ms);
      }
    }
    if (f.sent && f.done_at <= now) {
      done.push_back(Done{f.tag, std::move(f.result)});
      it = flights_.erase(it);
    } else {
      ++it;
    }
  }
}

int64_t SimAsyncTransport::next_timeout_ms() {
  if (dead) return flights_.empty() ? -1 : 0;
  if (flights_.empty()) return -1;
  const int64_t now = p_.w.clock.now_ms();
  int64_t next = INT64_MAX;
  for (const Flight& f : flights_) next = std::min(next, f.sent ? f.done_at : f.send_at);
  return std::max<int64_t>(0, next - now);
}

void SimAsyncTransport::wait(int64_t max_ms) {
  // Time passes in the simulation only: up to the next thing due.
  const int64_t own = next_timeout_ms();
  const int64_t step = own >= 0 ? std::min(own, max_ms) : max_ms;
  if (step > 0) p_.w.clock.advance(step);
}

// ---- the world ----------------------------------------------------------------------

const char* const kProfiles[] = {"generic", "stripe", "adyen", "paypal", "square",
                                 "checkout_com", "mollie", "wechatpay_v3", "alipay"};

World::World(uint64_t s, const Options& o) : seed(s), opt(o), rng(s), pause_rng(s ^ 0xD1B54A32D192ED03ull) {
  hook_pause_percent = pause_rng.chance(20) ? static_cast<int>(pause_rng.range(2, 15)) : 0;
  profile_name = !opt.profile.empty() ? opt.profile : kProfiles[rng.range(0, 8)];
  concurrent = opt.driver.empty() ? rng.chance(50) : opt.driver == "concurrent";
  profile = *builtin_profile(profile_name);
  const ReplayKind generic_replays[] = {ReplayKind::all_answers, ReplayKind::success_only, ReplayKind::current_state};
  provider = std::make_unique<ProviderModel>(wire_for(profile_name, generic_replays[rng.range(0, 2)]));
  ++tally.by_profile_driver[profile_name + (concurrent ? "/concurrent" : "/blocking")];
  config.provider = profile.name;
  config.base_url = "https://provider.test";
  config.create_path = "/create";
  config.merchant_id = "1230000109";
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
  // Lookups read lagging replicas; the configured grace covers the lag (a
  // grace shorter than the provider's lag is a configuration no client can
  // make safe).
  config.not_found_grace_ms = rng.range(0, 5000);
  provider->read_lag_ms = rng.range(0, config.not_found_grace_ms);
  // Now and then the edge that matters most (from the pause stream, so other
  // schedules stay as they were): a lag as long as the grace and a lease
  // margin shorter than it, so that a takeover right after a dead run's lease
  // reads a replica that has not yet seen the run's last send.
  lag_edge = pause_rng.chance(25);
  if (lag_edge) {
    provider->read_lag_ms = config.not_found_grace_ms;
    config.lease_margin_ms = std::min<int64_t>(config.lease_margin_ms, pause_rng.range(0, 300));
    // A deadline not much longer than the lag: a run's last send comes close
    // to its lease's end, after a backoff that followed its last write.
    rp.deadline_ms = std::min<int64_t>(
        rp.deadline_ms, pause_rng.range(rp.min_attempt_ms + 1, rp.min_attempt_ms + 2 + config.not_found_grace_ms));
  }
  const bool forgets = profile.identity.mode != IdentityMode::reference && rng.chance(20);
  if (forgets) {
    // The flow stops re-sending min(1 h, retention / 10) before the key
    // expires; without --short-retention the retention leaves that margin a
    // whole deadline.
    config.key_retention_ms = opt.short_retention ? rng.range(1000, 120000) : rng.range(10 * rp.deadline_ms, 3600000);
    provider->retention_ms = *config.key_retention_ms;
  } else {
    provider->retention_ms = profile.retention_ms.value_or(0);
    config.key_retention_ms = profile.retention_ms;
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
  ledger_fault_percent = rng.chance(70) ? 0 : static_cast<int>(rng.range(1, 12));

  // The schedule's character: how likely each fault is.
  for (int& wgt : weights) wgt = static_cast<int>(rng.range(0, 10));
  weights[static_cast<int>(Fault::none)] = static_cast<int>(rng.range(5, 60));
  if (rng.chance(15)) weights[static_cast<int>(Fault::conflict_storm)] = 80;  // an "in progress" storm
  crash_percent = rng.chance(40) ? 0 : static_cast<int>(rng.range(2, 20));
  if (crash_percent == 0)
    weights[static_cast<int>(Fault::crash_before_send)] = weights[static_cast<int>(Fault::crash_after_process)] = 0;
  race_percent = rng.chance(50) ? 0 : static_cast<int>(rng.range(5, 40));
  for (int wgt : weights) total_weight += wgt;

  const int n_orders = static_cast<int>(rng.range(1, concurrent ? 6 : 3));
  for (int i = 0; i < n_orders; ++i) {
    Order ord;
    ord.id = "ord_" + std::to_string(seed) + "_" + std::to_string(i);  // every profile's charset
    const std::string amount = std::to_string(rng.range(1, 99999));
    std::string extra;
    if (profile_name == "wechatpay_v3") extra = R"(,"out_trade_no":")" + ord.id + "\"";
    if (profile_name == "alipay") extra = R"(,"biz_content":{"out_trade_no":")" + ord.id + R"(","total_amount":")" + amount + "\"}";
    // Checkout.com: half the callers set the reference, half let payretry write it.
    if (profile_name == "checkout_com" && rng.chance(50)) extra = R"(,"reference":")" + ord.id + "\"";
    // Stripe's v1 takes only its own parameters (the order goes in metadata),
    // as form fields payretry encodes from this document.
    const std::string order_field = profile_name == "stripe" ? R"("metadata":{"order_id":")" + ord.id + "\"}"
                                                             : R"("order_id":")" + ord.id + "\"";
    ord.body = R"({"amount":)" + amount + R"(,"currency":"eur",)" + order_field + extra +
               R"(,"card":"4242424242424242"})";
    provider->declines[ord.id] = rng.chance(20);
    orders.push_back(ord);
  }
  for (const Order& o : orders) order_by_id[o.id] = &o;

  if (!opt.sqlite_dir.empty() && opt.sqlite_every > 0 && seed % opt.sqlite_every == 0) {
    ++tally.sqlite;
    ledger_url = "sqlite://" + opt.sqlite_dir + "/dst-" + std::to_string(seed) + ".db";
  } else {
    ledger_url = "memory:";
    shared_ledger = open_ledger(ledger_url, "");
  }
}

World::~World() {
  graveyard.clear();
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

void World::check_result(const Order& o, const PaymentResult& r, int sends_in_call) {
  outcomes[o.id].push_back(r.outcome);
  tally.unknown += r.outcome == Outcome::unknown;
  tally.failed += r.outcome == Outcome::failed;
  if (!r.ledger_error.empty()) {
    flagged[o.id] = true;
    ++tally.flagged_results;
  }
  say("result " + o.id + " " + outcome_name(r.outcome) + "/" + delivery_name(r.delivery) + " " + r.error +
      (r.ledger_error.empty() ? "" : " [not recorded: " + r.ledger_error + "]"));
  if (r.from_ledger && sends_in_call > 0)
    fail("stored_outcome_sends_nothing", "a result from the ledger came with " + std::to_string(sends_in_call) + " sends");
  if (r.outcome == Outcome::succeeded) {
    // A success read from a create answer carries the provider's id of the
    // one charge (Adyen's lives in pspReference, Square's in payment.id).
    const auto id = provider->charged_id.find(o.id);
    const bool from_create = !r.from_ledger && !r.queried;
    if ((from_create || !r.provider_payment_id.empty()) &&
        (id == provider->charged_id.end() || r.provider_payment_id != id->second))
      fail("ledger_agrees_with_provider", "SUCCEEDED with provider id '" + r.provider_payment_id + "'");
  }
}

void World::check_error(const Order& o, const std::string& what, int sends_in_call, bool alone) {
  // An error code says "nothing was sent by this call": a caller who reads
  // it so and submits the order again under a new key would charge twice.
  if (alone && sends_in_call > 0)
    fail("no_error_after_a_possible_send", "order " + o.id + ": the call failed with '" + what + "' after " +
                                               std::to_string(sends_in_call) + " possible sends");
}

PaymentResult World::submit(Process& p, const Order& o, std::string_view body) {
  p.order = &o;
  p.run_start = clock.now_ms();
  p.run_deadline = p.run_start + config.retry.deadline_ms;
  p.run_attempts = 0;
  p.run_sends = 0;
  p.run_told_not_to_retry = false;
  p.last_had_retry_after = false;
  SubmitRequest req;
  req.order_id = o.id;
  req.body = body;
  ++active_calls[o.id];
  struct Leave {
    World& w;
    const std::string& id;
    ~Leave() { --w.active_calls[id]; }
  } leave{*this, o.id};
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
  Process b(*this, next_process++, 1, false);
  const Order& o = *a.order;
  const std::string altered = o.body.substr(0, o.body.size() - 1) + R"(,"note":"x"})";
  say("race: p" + std::to_string(b.id) + " submits " + o.id + (stalled ? " after the lease" : "") +
      (other_body ? " with another body" : ""));
  try {
    PaymentResult r = submit(b, o, other_body ? std::string_view(altered) : std::string_view(o.body));
    if (other_body) fail("mismatch_sends_nothing", "the same order with another body was accepted");
    if (!stalled && (r.outcome != Outcome::in_progress || b.run_sends != 0))
      fail("one_owner", std::string("a second worker got ") + outcome_name(r.outcome) + " and sent " +
                            std::to_string(b.run_sends) + " while the first held a live lease");
    check_result(o, r, b.run_sends);
  } catch (const Error& e) {
    if (!other_body || e.code() != Errc::PAY_EMISMATCH || b.run_sends != 0) {
      if (e.code() == Errc::PAY_EMISMATCH && b.run_sends > 0) fail("mismatch_sends_nothing", std::string("racer: ") + e.what());
      check_error(o, e.what(), b.run_sends, false);
      fail("unexpected_call_error", std::string("racer: ") + e.what());
    }
  } catch (const LedgerError& e) {
    check_error(o, e.what(), b.run_sends, false);
  }
}

void World::reconcile(Process& p) {
  ++tally.reconciles;
  ReconcileOptions ro;
  ro.body_for = [this](const std::string& order) -> std::optional<std::string> {
    const auto it = order_by_id.find(order);
    if (it == order_by_id.end()) return std::nullopt;
    return it->second->body;
  };
  p.in_settler = true;
  p.order = nullptr;
  ReconcileReport rep;
  try {
    rep = p.settler->reconcile(ro);
  } catch (const LedgerError&) {
    p.in_settler = false;
    return;  // the listing failed: nothing was looked at
  }
  p.in_settler = false;
  for (const PaymentResult& r : rep.results) {
    say("reconcile " + r.order_id + " -> " + outcome_name(r.outcome) + " " + r.error);
    if (const auto it = order_by_id.find(r.order_id); it != order_by_id.end()) {
      outcomes[r.order_id].push_back(r.outcome);
      if (!r.ledger_error.empty()) flagged[r.order_id] = true;
    }
  }
}

void World::run_blocking() {
  std::unique_ptr<Process> proc;
  for (const Order& o : orders) {
    bool done = false;
    for (int round = 0; round < 12 && !done; ++round) {
      if (!proc) proc = std::make_unique<Process>(*this, next_process++, 0, false);
      PaymentResult r;
      try {
        r = submit(*proc, o, o.body);
      } catch (const Crash&) {
        proc.reset();  // the process is gone; its ledger connection with it
        if (opt.sabotage == "forget" && shared_ledger) shared_ledger = open_ledger(ledger_url, "");
        // A restart comes sometimes at once (the lease is still live: the
        // new process must wait), sometimes after the lease ran out, and
        // sometimes a reconciler takes the payment over the moment its lease
        // ends, while the provider's read replicas may still lag behind the
        // dead run's last send.
        if (pause_rng.chance(25)) {
          std::unique_ptr<Ledger> holder;
          const auto row = ledger_for_checks(holder).get(o.id);
          const int64_t until = row && row->state == PaymentState::in_flight ? row->lease_until : 0;
          if (until > clock.unix_ms()) clock.advance(until - clock.unix_ms() + pause_rng.range(1, 300));
          Process q(*this, next_process++, 1, false);
          reconcile(q);
        } else {
          clock.advance(rng.chance(70) ? lease_ms() + 1 : rng.range(0, 1000));
        }
        continue;
      } catch (const Error& e) {
        check_error(o, e.what(), proc->run_sends, active_calls[o.id] == 0);
        fail("unexpected_call_error", std::string(e.what()));
      } catch (const LedgerError& e) {
        // A store that fails before anything is sent fails the call; the
        // caller tries again later.
        check_error(o, e.what(), proc->run_sends, true);
        clock.advance(rng.range(0, 2000));
        continue;
      }
      check_result(o, r, proc->run_sends);
      switch (r.outcome) {
        case Outcome::succeeded:
        case Outcome::failed:
          // Sometimes the caller submits again: the stored outcome, no HTTP.
          if (rng.chance(20) && r.ledger_error.empty()) {
            try {
              PaymentResult again = submit(*proc, o, o.body);
              if (!again.from_ledger || again.outcome != r.outcome || proc->run_sends != 0)
                fail("stored_outcome_sends_nothing", std::string("resubmitting a settled order gave ") +
                                                         outcome_name(again.outcome) + " after " +
                                                         std::to_string(proc->run_sends) + " sends");
            } catch (const LedgerError&) {
            }
          }
          done = r.ledger_error.empty();
          if (!done) clock.advance(lease_ms() + 1);
          break;
        case Outcome::unknown:
          if (rng.chance(25)) {
            clock.advance(rng.range(0, 3000));
            reconcile(*proc);  // settle between runs
          }
          if (rng.chance(30)) done = true;  // the caller leaves it for reconciliation
          else clock.advance(rng.range(0, 2000));
          break;
        case Outcome::in_progress:
          clock.advance(lease_ms() + 1);
          break;
      }
    }
  }
}

void World::run_concurrent() {
  // One client's concurrent engine takes every order at once; between turns
  // the world may stall it past its leases, let another worker race it, hand
  // the same client a second run of an order, or kill the process.
  std::unique_ptr<Process> proc;
  for (int round = 0; round < 8 && answered.size() < orders.size(); ++round) {
    if (!proc) proc = std::make_unique<Process>(*this, next_process++, 0, true);
    Process& p = *proc;
    struct Call {
      const Order* order;
      int sends_before;
      bool alone;
      bool done = false;
    };
    auto calls = std::make_shared<std::vector<Call>>();
    auto enqueue = [&](const Order& o) {
      auto job = std::make_unique<MultiEngine::Job>();
      job->order_id = o.id;
      job->body = o.body;
      const size_t idx = calls->size();
      calls->push_back(Call{&o, sends_written[o.id], active_calls[o.id] == 0});
      ++active_calls[o.id];
      job->done = [this, calls, idx](std::exception_ptr e, PaymentResult r) {
        if (draining) return;
        Call& c = (*calls)[idx];
        c.done = true;
        --active_calls[c.order->id];
        const int sends = sends_written[c.order->id] - c.sends_before;
        if (e) {
          try {
            std::rethrow_exception(e);
          } catch (const Error& err) {
            check_error(*c.order, err.what(), sends, c.alone && active_calls[c.order->id] == 0);
            // Every call here gives valid input: an error code (a resumed run
            // "below min_attempt_ms", say) tells the caller something false.
            fail("unexpected_call_error", std::string(err.what()));
          } catch (const LedgerError& err) {
            check_error(*c.order, err.what(), sends, c.alone && active_calls[c.order->id] == 0);
          } catch (const std::exception& other) {
            fail("unexpected_exception", other.what());
          }
          return;
        }
        check_result(*c.order, r, r.from_ledger ? 0 : 0);
        if ((r.outcome == Outcome::succeeded || r.outcome == Outcome::failed) && r.ledger_error.empty())
          answered.insert(c.order->id);
      };
      std::vector<std::unique_ptr<MultiEngine::Job>> one;
      one.push_back(std::move(job));
      p.multi->enqueue(std::move(one));
    };
    for (const Order& o : orders)
      if (!answered.count(o.id)) enqueue(o);
    bool crashed = false;
    for (int turns = 0; turns < 100000 && p.multi->unanswered() > 0; ++turns) {
      p.multi->turn();
      rethrow_broken();
      if (p.async->dead) {
        crashed = true;
        break;
      }
      if (rng.chance(10)) {
        // A stall (GC pause, frozen VM): every lease may run out meanwhile.
        ++tally.stalls;
        clock.advance(rng.chance(50) ? lease_ms() + 1 : rng.range(1, 3000));
        if (rng.chance(40)) {
          // A second run of one order in the same client: only its own
          // fencing token tells the two runs apart.
          ++tally.same_client_runs;
          enqueue(orders[static_cast<size_t>(rng.range(0, static_cast<int64_t>(orders.size()) - 1))]);
        } else if (race_percent > 0 && rng.chance(race_percent)) {
          ++tally.races;
          Process b(*this, next_process++, 1, false);
          const Order& o = orders[static_cast<size_t>(rng.range(0, static_cast<int64_t>(orders.size()) - 1))];
          say("race: p" + std::to_string(b.id) + " submits " + o.id + " between turns");
          try {
            const PaymentResult r = submit(b, o, o.body);
            check_result(o, r, b.run_sends);
            if ((r.outcome == Outcome::succeeded || r.outcome == Outcome::failed) && r.ledger_error.empty())
              answered.insert(o.id);
          } catch (const Crash&) {
          } catch (const Error& e) {
            check_error(o, e.what(), b.run_sends, false);
            fail("unexpected_call_error", std::string("racer: ") + e.what());
          } catch (const LedgerError& e) {
            check_error(o, e.what(), b.run_sends, false);
          }
        }
      }
      if (crash_percent > 0 && crashes < 3 && rng.chance(crash_percent / 4)) {
        ++crashes;
        ++tally.crashes;
        say("p" + std::to_string(p.id) + " CRASH between turns");
        crashed = true;
        break;
      }
    }
    if (crashed) {
      p.async->dead = true;
      graveyard.push_back(std::move(proc));
      clock.advance(rng.chance(70) ? lease_ms() + 1 : rng.range(0, 1000));
      continue;
    }
    if (p.multi->unanswered() > 0) fail("liveness", "the concurrent engine did not answer every payment");
    if (rng.chance(30)) {
      clock.advance(rng.range(0, 3000));
      reconcile(p);
    }
    clock.advance(rng.range(0, 2000));
    if (rng.chance(20)) break;  // the rest is left for reconciliation
  }
  proc.reset();
}

void World::check_final() {
  provider->finish_all();
  // The request hook signs every request; a signing provider that refused
  // one saw a request (a lookup, say) sent around the hook.
  if (provider->rejected_unsigned > 0)
    fail("every_request_signed", std::to_string(provider->rejected_unsigned) + " requests reached the provider unsigned");
  if (provider->wrong_encodings > 0)
    fail("every_body_in_the_providers_encoding",
         std::to_string(provider->wrong_encodings) + " creates reached the provider in an encoding it refuses");
  std::unique_ptr<Ledger> holder;
  Ledger& ledger = ledger_for_checks(holder);
  for (const Order& o : orders) {
    const int charged = provider->charges.count(o.id) ? provider->charges[o.id] : 0;
    tally.charged += charged > 0;
    if (charged > 1) fail("at_most_one_charge", o.id + " charged " + std::to_string(charged) + " times");
    for (Outcome out : outcomes[o.id])
      if (out == Outcome::failed && charged > 0) fail("no_failed_when_processed", o.id + " reported FAILED but was charged");
    auto row = ledger.get(o.id);
    if (!row) continue;
    if (row->state == PaymentState::succeeded && charged != 1)
      fail("ledger_agrees_with_provider", o.id + " SUCCEEDED in the ledger, charged " + std::to_string(charged));
    if (row->state == PaymentState::failed && charged != 0)
      fail("no_failed_when_processed", o.id + " FAILED in the ledger but charged");
    if (auto s = first_seen.find(o.id); s != first_seen.end() && !s->second.key.empty() &&
                                        s->second.key != row->idempotency_key)
      fail("same_key_and_bytes", o.id + " ledger key " + row->idempotency_key + " but sent with " + s->second.key);
    for (Outcome out : outcomes[o.id])
      if (out == Outcome::succeeded && charged != 1) fail("ledger_agrees_with_provider", o.id + " SUCCEEDED but not charged");
    // Every request that may have reached the provider is in the history
    // (a dead run's last one as an "unrecorded" entry once taken over), or
    // its call's result said it was not durably recorded.
    if (!flagged[o.id]) {
      int entries = 0;
      for (const AttemptEntry& a : ledger.attempts(o.id)) entries += a.kind == "send";
      if (row->state == PaymentState::in_flight) ++entries;  // a dead run not yet taken over
      if (sends_written[o.id] > entries)
        fail("every_send_recorded", o.id + ": " + std::to_string(sends_written[o.id]) +
                                        " requests may have reached the provider, the history holds " +
                                        std::to_string(entries));
    }
  }
}

void World::run() {
  const RetryPolicy& rp = config.retry;
  say("schedule " + std::to_string(seed) + ": profile " + profile.name + " (replay " +
      replay_kind_name(provider->wire().replay) + "), driver " + (concurrent ? "concurrent" : "blocking") +
      ", ledger " + ledger_url + ", max_attempts " + std::to_string(rp.max_attempts) + ", deadline " +
      std::to_string(rp.deadline_ms) + ", attempt_timeout " + std::to_string(rp.attempt_timeout_ms) +
      ", min_attempt " + std::to_string(rp.min_attempt_ms) + ", provider retention " +
      std::to_string(provider->retention_ms) + ", read lag " + std::to_string(provider->read_lag_ms) + " (grace " +
      std::to_string(config.not_found_grace_ms) + "), lease margin " + std::to_string(config.lease_margin_ms) +
      ", crash% " + std::to_string(crash_percent) + ", race% " + std::to_string(race_percent) + ", ledger fault% " +
      std::to_string(ledger_fault_percent));
  if (concurrent) run_concurrent();
  else run_blocking();
  rethrow_broken();
  // Afterwards, reconcile settles what it can, a pass or three, with the
  // store working again.
  ledger_fault_percent = 0;
  for (int pass = 0; pass < 3; ++pass) {
    clock.advance(lease_ms() + config.not_found_grace_ms + 1);
    Process p(*this, next_process++, 1, false);
    reconcile(p);
  }
  rethrow_broken();
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
