#include "world.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <set>
#include <vector>

#include "attempt_log.hpp"
#include "auth.hpp"
#include "budget.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "error.hpp"
#include "history.hpp"
#include "json_build.hpp"
#include "ledger.hpp"
#include "money_state.hpp"
#include "multi_engine.hpp"
#include "operation_flow.hpp"
#include "payment_flow.hpp"
#include "profile.hpp"
#include "provider_auth.hpp"
#include "provider_model.hpp"
#include "provider_webhooks.hpp"
#include "random.hpp"
#include "random_wire.hpp"
#include "rng.hpp"
#include "scope.hpp"
#include "settle.hpp"
#include "stats.hpp"
#include "webhook_receiver.hpp"
#include "webhook_rules.hpp"

namespace payretry::dst {

Tally tally;

namespace {

// A concurrent payment is answered by its start and its deadline, and this:
// the engine's own bookkeeping, never another payment's wait.
constexpr int64_t kAnswerBoundMs = 250;

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
  int tenant = 0;       // the merchant account whose client submits it (ids are unique across them)
  Headers headers;      // its own submission headers: an X-Account that picks the provider's store
  std::string path;     // its own create path naming an account ("" the client's)
};

// The connected account `o` is made in: its own header the profile names a
// Connect event's account by (webhook.account_header), "" none.
std::string account_header_value(const Order& o, const std::string& header) {
  if (header.empty()) return {};
  for (const auto& [name, value] : o.headers)
    if (name == header) return value;
  return {};
}

// A merchant account of the platform: one client per account over the
// shared ledger, each with its own scope (another credential, another
// scoping header, or its account_id).
struct Tenant {
  std::string name;
  Config config;
  std::string scope;  // client_scope() of its config, once the ledger's secret is known
};

// What the OAuth2 token endpoint does with one token request, and how long
// its answer takes (a hang: longer than any request waits).
struct TokenPlan {
  ProviderModel::TokenAnswer answer;
  int64_t latency_ms = 0;
};

struct Seen {
  std::string key;
  std::string body;
};

// client_scope(), remembered: an HMAC costs as much as a whole schedule's
// bookkeeping, and schedules share configurations and (memory) secrets. The
// key holds every part of the config a scope covers (scope.cpp).
const std::string& scope_of(const Config& c, const Profile& profile, const std::string& secret) {
  static std::map<std::string, std::string> cache;
  std::string key;
  auto add = [&](const std::string& part) { key.append(std::to_string(part.size())).append(":").append(part); };
  for (const std::string* part : {&secret, &profile.name, &c.base_url, &c.merchant_id, &c.account_id, &c.auth.client_id,
                                  &c.auth.app_id, &c.auth.api_key})
    add(*part);
  add(std::to_string(static_cast<int>(c.auth.kind)));
  for (const Headers* h : {&c.auth_headers, &c.extra_headers}) {
    add(std::to_string(h->size()));
    for (const auto& [name, value] : *h) add(name), add(value);
  }
  auto& slot = cache[key];
  if (slot.empty()) slot = client_scope(c, profile, secret);
  return slot;
}

// FNV-1a: the engine an order id picks, the same on every standard library.
uint64_t fnv(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string path_of(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return slash == std::string::npos ? "/" : url.substr(slash);
}

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
  OperationOutcome create_operation_and_claim(const PaymentRow& p, const std::string& owner, int64_t now,
                                              int64_t lease_until) override {
    fail_maybe("create");
    OperationOutcome out = inner_.create_operation_and_claim(p, owner, now, lease_until);
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
  std::vector<PaymentRow> operations_of(const std::string& order_id) override { return inner_.operations_of(order_id); }
  std::optional<PaymentRow> find_by_provider_id(const std::string& scope, const std::string& provider_id) override {
    return inner_.find_by_provider_id(scope, provider_id);
  }
  std::vector<PaymentRow> list(std::optional<PaymentState> state, int64_t updated_before, int limit,
                               const std::optional<std::string>& scope) override {
    return inner_.list(state, updated_before, limit, scope);
  }
  int64_t prune_settled(int64_t updated_before) override { return inner_.prune_settled(updated_before); }
  // The webhook writes fail too (at the schedule's own webhook rate): a
  // notification the store did not take must be answered non-2xx.
  EventRecording record_event(const LedgerEvent& e) override {
    fail_event("record_event");
    return inner_.record_event(e);
  }
  std::vector<LedgerEvent> kept_events(const std::string& scope, const std::string& order_id,
                                       const std::string& provider_payment_id) override {
    return inner_.kept_events(scope, order_id, provider_payment_id);
  }
  bool apply_kept_event(const LedgerEvent& e) override {
    fail_event("apply_kept_event");
    return inner_.apply_kept_event(e);
  }

 private:
  void fail_maybe(const char* what);
  void fail_event(const char* what);
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

// Where the OAuth2 authenticator's token requests go (as Client hands it the
// blocking transport): the provider's token endpoint, outside any payment's run.
class TokenTransport final : public Transport {
 public:
  explicit TokenTransport(Process& p) : p_(p) {}
  TransportResult post(const HttpRequest& req) override;

 private:
  Process& p_;
};

// The BackgroundRunner the authenticator hands a concurrent engine's fetches
// to: no thread, a queue. Each fetch's token answer is drawn when it is
// posted; the world runs it between turns, at a seeded moment once that
// answer is due, and it advances nothing itself (its latency passed while
// the engines turned). A blocking caller that would wait for a queued fetch
// runs it on its own thread instead (run_pending), waiting out what is left
// of its latency.
class SimRunner final : public BackgroundRunner {
 public:
  explicit SimRunner(Process& p) : p_(p) {}
  void post(std::function<void()> task) override;
  bool run_pending() override;
  // Between turns: each fetch whose answer is due, now or at a later turn.
  void run_due();
  // A dead process: what is queued fails now, and so does every later fetch
  // (its payments then end without waiting out their deadlines).
  void fail_all();
  size_t queued() const { return tasks_.size(); }

 private:
  struct Task {
    std::function<void()> run;
    TokenPlan plan;
    int64_t due_at = 0;  // monotonic ms the token endpoint's answer arrives
  };
  void run_one(Task t);
  Process& p_;
  std::deque<Task> tasks_;
  bool dead_ = false;
};

// A concurrent engine's transport under the simulated clock: a request is
// handed over at start(), leaves when its connection is ready (after a queue
// delay, as behind a busy pool), where its may_start gate is asked, and its
// answer arrives `elapsed` later. With one engine, its wait() moves the
// clock; with several, the world does (world_clocked): each engine's wait
// only says when it is due again, and the world turns them in a seeded
// interleaving, as threads would run.
class SimAsyncTransport final : public AsyncTransport {
 public:
  explicit SimAsyncTransport(Process& p) : p_(p) {}
  void start(const HttpRequest& request, void* tag) override;
  void perform(std::vector<Done>& done) override;
  void wait(int64_t max_ms) override;
  void wakeup() override;
  int64_t next_timeout_ms() override;
  bool dead = false;          // a crashed process: nothing moves, nothing is sent
  bool world_clocked = false;
  int64_t due_at = 0;         // world_clocked: monotonic ms the engine wants its next turn

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
// ledger, with either driver (the concurrent one with one or more engines,
// as Client::start_engines builds them).
class Process {
 public:
  Process(World& w, int id, int depth, bool concurrent, int tenant);
  ~Process();
  World& w;
  const int id;
  const int depth;  // 0: a top-level worker; 1: a racer started inside another's sleep
  const int tenant;      // the merchant account it is the client of
  const Config& config;  // that account's
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
  TokenTransport token_transport{*this};
  SimRunner runner{*this};  // before auth: outlives it
  // The queued fetch running now (SimRunner::run_one), for TokenTransport.
  const TokenPlan* token_plan = nullptr;
  int64_t token_due_at = 0;
  std::unique_ptr<Authenticator> auth;  // the built-in signer or OAuth2, for a schedule that runs one
  std::unique_ptr<Engine> engine;
  std::unique_ptr<PaymentFlow> flow;
  std::unique_ptr<Settler> settler;
  std::unique_ptr<OperationFlow> operations;
  // The operation being submitted (its row id), "" none: its sends are
  // checked against its own row and its payment's.
  std::string op_row;
  // The operation row being queried, "" none: it sends only its own lookups.
  std::string op_query;
  std::vector<std::unique_ptr<SimAsyncTransport>> asyncs;
  std::vector<std::unique_ptr<MultiEngine>> multis;

  // The engine an order runs on: the one its id hashes to.
  size_t engine_of(const std::string& order_id) const { return fnv(order_id) % multis.size(); }
  size_t unanswered() {
    size_t n = 0;
    for (auto& m : multis) n += m->unanswered();
    return n;
  }
  bool dead() const {
    for (const auto& a : asyncs)
      if (a->dead) return true;
    return false;
  }
  void kill() {
    for (auto& a : asyncs) a->dead = true;
  }

  // The blocking run in progress.
  const Order* order = nullptr;
  int64_t run_start = 0;
  int64_t run_deadline = 0;
  int run_attempts = 0;
  int run_sends = 0;
  bool run_told_not_to_retry = false;  // an answer of this run said Stripe-Should-Retry: false
  bool last_unauthorized = false;      // the last answer was a 401 under an OAuth2 token
  std::string final_checked_claim;     // the settler's run whose first re-send had its history read
  bool in_settler = false;  // lookups and reconcile re-sends: not one run
  // A webhook receiver's lookup of an id a notification named (Mollie's
  // hint): about no order this client knows, under no claim.
  bool in_hint = false;
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
  // So do the draws added with random profiles, signers, several engines,
  // pruning and queries before a resubmit.
  Rng ext;
  // And those of several merchant accounts on one ledger (their clients,
  // the orders' submission headers and paths, what other accounts' clients
  // try), and of OAuth2 (the token endpoint, revocations, 401s).
  Rng tenant_rng;
  Rng auth_rng;
  int hook_pause_percent = 0;
  bool lag_edge = false;  // read lag at the grace, a short lease margin and deadline
  SimClock clock;
  std::string profile_name;  // a built-in's, or "random"
  bool concurrent = false;
  int engine_count = 1;
  std::unique_ptr<ProviderModel> provider;
  std::string random_summary;
  Config config;
  Profile profile;
  std::string ledger_url;
  std::unique_ptr<Ledger> shared_ledger;  // memory: one per "machine", surviving its processes
  // One client per merchant account; one account unless the schedule draws
  // two or three. tenants[0]'s config is `config` itself.
  std::vector<std::unique_ptr<Tenant>> tenants;
  int tenant_kind = 0;        // 0 another credential, 1 another scoping header, 2 another account_id (and credential)
  int other_scope_percent = 0;  // how often another account's client acts on an order
  // OAuth2 client credentials (Wire::token_path): how the token endpoint and
  // the gateway in front behave in this schedule.
  bool oauth2 = false;
  int token_hang_percent = 0, token_error_percent = 0, short_token_percent = 0;
  int revoke_percent = 0;              // a request's token is revoked as it arrives: 401, nothing processed
  int unauthorized_after_percent = 0;  // a create is refused with a 401 after it was processed
  // Time the world took from the concurrent engines (stalls, other
  // processes between turns, pauses in the request hook): a payment is
  // answered by its start, its deadline and this.
  int64_t excused_ms = 0;
  std::vector<Order> orders;
  std::map<std::string, const Order*> order_by_id;
  std::map<std::string, Seen> first_seen;
  std::map<std::string, std::vector<Outcome>> outcomes;
  std::map<std::string, int> sends_written;   // requests that may have reached the provider, per order
  // When (unix ms) a lookup of the order was answered "not found" while the
  // provider held its payment (processing, or not yet on the replica read).
  std::map<std::string, std::vector<int64_t>> lookups_that_hid;
  std::map<std::string, bool> flagged;        // some result for the order was not durably recorded
  std::map<std::string, int> active_calls;    // calls on the order in progress (any process)
  std::map<std::string, int> calls_started;   // calls on the order so far (any process)
  std::set<std::string> pruned;               // orders whose row prune_settled removed: never submitted again
  int weights[static_cast<int>(Fault::kCount)] = {};
  int total_weight = 0;
  int crash_percent = 0;
  int crashes = 0;
  int race_percent = 0;
  int ledger_fault_percent = 0;
  int oversleep_percent = 0;  // a sleeper that wakes late
  int wall_jump_percent = 0;  // the wall clock steps (NTP), the monotonic one does not
  int64_t wall_jump_ms = 5000;
  int prune_percent = 0;      // between runs, now and then, prune_settled with an aggressive cutoff
  int query_percent = 0;      // an UNKNOWN result is queried before it is submitted again
  // The real signers: answers replaced on their way (forged, stale, another
  // order's), and the genuine signed answers that name their order.
  bool real_signer = false;
  int answer_fault_percent = 0;
  std::map<std::string, HttpResponse> genuine_creates, genuine_lookups;
  std::set<std::string> forged_ids;  // provider ids only forged or stale answers ever named
  int next_process = 0;
  std::vector<std::unique_ptr<Process>> graveyard;  // crashed concurrent processes, drained after the checks
  // Each account's webhook endpoint: a client process and its receiver
  // (after everything they use, so destroyed first).
  std::vector<std::unique_ptr<Process>> receiver_procs;
  std::vector<std::unique_ptr<WebhookReceiver>> receivers;
  std::set<std::string> answered;  // orders the concurrent driver has a final, recorded answer for
  // Set while a crashed (or finished) concurrent process drains: what its
  // payments report then is no caller's answer.
  bool draining = false;

  // ---- webhooks: the provider notifies what it decided -----------------------
  // Their draws come from a stream of their own: a schedule without them is
  // the one it was. A notification is built when the provider decides (or,
  // for the kinds that are no decision of this client's payment, when drawn)
  // and delivered by a scheduled actor to the receiving account's endpoint:
  // a WebhookReceiver over a client process of that account.
  Rng wh;
  bool webhooks = false;
  int wh_dup_percent = 0, wh_forged_percent = 0, wh_stale_percent = 0, wh_not_ours_percent = 0,
      wh_misroute_percent = 0, wh_foreign_percent = 0, wh_replay_percent = 0, wh_fault_percent = 0,
      wh_prompt_percent = 0;
  int64_t wh_max_delay_ms = 0;
  WebhookKeys wh_keys;
  enum class NoteKind { genuine, duplicate, replay, misrouted, forged, stale, not_ours, foreign };
  struct Note {
    // What it says; signed when it leaves (each delivery of a timestamped
    // scheme is signed anew), but for a replay, which is the bytes of an
    // earlier delivery.
    std::vector<EventTruth> truths;
    NoteForm form = NoteForm::genuine;
    bool prebuilt = false;
    Notification n;
    NoteKind kind = NoteKind::genuine;
    int tenant = 0;      // whose endpoint receives it
    int64_t due = 0;     // monotonic ms
    int tries = 0;
    std::string order;   // the order its (first) event names
    std::string pid;     // the payment it is about
    uint64_t serial = 0;
    // A refund's notification (issue 47), instead of a payment's: `order`
    // is its payment's order, `pid` the refund's id.
    std::optional<OperationEventTruth> op;
  };
  std::vector<Note> outbox;
  size_t decided_seen = 0;
  uint64_t wh_serial = 0;
  bool delivering = false;
  int wh_injected = 0;  // faults injected into deliveries (ledger, the hint's lookup)
  std::map<std::string, std::pair<std::string, bool>> foreign;  // a payment made elsewhere: id -> (order it names, charged)
  std::set<std::string> must_never_land;  // event ids of foreign payments that came before their order's row, or to a row of another payment
  std::vector<std::set<std::string>> delivered_ids;  // per account: every event id its endpoint was handed
  std::map<std::string, PaymentState> final_seen;     // orders whose row was seen SUCCEEDED or FAILED
  std::set<std::string> webhook_settled;              // orders whose row a webhook made final
  std::map<std::string, std::string> kept_seen;       // order -> an event it had kept (counted once landed)
  // Refunds' notifications (issue 47), drawn from a stream of their own (a
  // schedule without refunds draws nothing from it): how many of the
  // provider's refund news are never delivered (an endpoint not subscribed
  // to them, a delivery given up), and how often the merchant refunds a
  // payment elsewhere too (the dashboard: no key or row of the client's),
  // after the caller's own refunds of it.
  Rng opwh;
  int wh_op_drop_percent = 0, wh_elsewhere_percent = 0;
  size_t refund_news_seen = 0;
  // Stored event id of every refund notification delivered -> the refund it is about.
  std::map<std::string, std::string> op_event_refund;
  void collect_operation_notes();
  // The receiver's result `e` is its operation block's reading of a
  // notification (the event id it stores is the provider's + ":<kind>").
  bool operation_result(const WebhookEventResult& e) const;
  void draw_webhooks();
  // New decisions of the provider become notifications (and their copies).
  void collect_notes();
  void schedule(Note n, int64_t delay);
  int64_t draw_delay();
  // Delivers every notification due (all of them: the last flush).
  // `top`: between runs or turns, where the world may move the clock.
  void deliver_due(bool all = false, bool top = false);
  bool delivering_top = false;
  // false: deliver later (a foreign payment's notification waits for a moment it can tell apart).
  bool deliver(Note& n);
  WebhookReceiver& receiver(int tenant);
  // The row of each order, for the checks around a delivery.
  struct Snap {
    bool exists = false;
    PaymentState state = PaymentState::pending;
    std::string pid;
    int entries = 0;
  };
  std::map<std::string, Snap> snapshot();
  // Whether (scope, event id) is in the ledger: a history's webhook entry or a kept event.
  bool event_stored(const std::string& scope, const std::string& event_id, const std::string& order,
                    const std::string& pid);
  // Every step: no final row moves; a row a webhook made final says what
  // the provider decided for its payment.
  void check_rows();
  // No event applied twice, none to another account's row, none of a
  // foreign payment that could be told apart.
  void check_event_entries();

  // ---- money: where each payment's money is ---------------------------------
  // Drawn from a stream of their own: a payment paid at once, one that
  // waits for its customer, or one held; and what its customer or merchant
  // does later (pays, abandons, captures, voids), and when.
  Rng money_rng;
  void draw_flow(const std::string& order);
  // Callers asking again about settled payments whose money may still move
  // (pay_query looks them up again): from a stream of their own, so that
  // the other draws of a seed stay as they were.
  Rng refresh_rng;
  void query_settled(Process& p, const Order& o);
  // ---- operations: refunds of a settled payment (issue 47) ------------------
  // Drawn from a stream of their own, for the profiles whose refunds the
  // provider model speaks (a header key, a POST): each refund's key must
  // move money at most once, a succeeded refund must have moved it, a
  // failed one not, the refunds the ledger counts never exceed what the
  // payment asked, and no refund leaves before its payment is settled.
  Rng ops_rng;
  int ops_percent = 0;
  std::vector<std::string> op_rows;  // every operation row id asked for
  void refund_some(std::unique_ptr<Process>& proc, const Order& o);
  void refund_elsewhere(const Order& o);
  void check_operations();
  // An UNKNOWN operation is settled by its own lookup (issue 47): callers
  // query its row (pay_query) or reconcile, besides asking its ref again.
  // What they find is checked as it is read: a settled operation never
  // changes outcome, its payment's money moves only forward, and says
  // refunded only after a refund that moved money.
  std::map<std::string, PaymentState> op_settled;  // operation row -> the outcome it was first seen settled with
  std::set<std::string> refunded_orders;           // the concurrent driver refunds an order once
  std::map<int, std::unique_ptr<Process>> refund_callers;  // the concurrent driver's, per account
  // Returns whether the row is settled now.
  bool query_operation(Process& p, const std::string& row_id);
  void query_settled_operation(Process& p, const std::string& row_id);
  void check_operation_rows();
  // The operation row `claim` holds (nullopt none).
  std::optional<PaymentRow> operation_of_claim(Ledger& l, const std::string& claim);
  std::set<std::string> settled_reads;  // orders whose settled row a lookup read
  std::map<std::string, MoneyState> money_row_seen, money_result_seen;
  // A row's or a result's money state says what the provider's truth about
  // the order's own payment (the one named `pid`, when there is one) allows:
  // authorized or paid only for a payment the provider held or captured,
  // failed never while such a payment holds or has the money; and it moved
  // only forward since `seen` (the order's last one).
  void check_money(const std::string& order, MoneyState m, const std::string& pid, const char* where,
                   std::map<std::string, MoneyState>& seen);
  // Whether every payment the provider charged (made) for the order has
  // since failed for good (abandoned, voided): a FAILED outcome is then the
  // truth about its money.
  bool money_failed_for_good(const std::string& order, const std::string& pid = "");

  int64_t lease_ms() const { return config.retry.deadline_ms + config.lease_margin_ms; }
  // The checks read a SQLite ledger through one connection of their own,
  // opened once per schedule: each read sees what is committed, and
  // opening a connection cost more than all of a schedule's reads.
  std::unique_ptr<Ledger> checks_ledger;
  Ledger& ledger_for_checks(std::unique_ptr<Ledger>& /*holder*/) {
    if (shared_ledger) return *shared_ledger;
    if (!checks_ledger) checks_ledger = open_ledger(ledger_url, "");
    return *checks_ledger;
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
  const Order* order_of(const std::string& id) const {
    const auto it = order_by_id.find(id);
    return it == order_by_id.end() ? nullptr : it->second;
  }
  // The token endpoint: a queued fetch's answer as drawn when it was posted,
  // a caller's own fetch's drawn now and waited for.
  TransportResult token_request(Process& p, const HttpRequest& req);
  TokenPlan draw_token_plan();
  // Another merchant account's client submits, queries or reconciles:
  // refused (PAY_EMISMATCH), nothing sent, the order never examined.
  void other_scope_acts(const Order& o);
  // One turn of one engine of the client processes that hold payments
  // (true), or, when none is due, the clock moves to the next one that is
  // (false).
  bool turn_engines(const std::vector<Process*>& live);
  // One request reaching the provider (through either transport): the
  // invariants that hold at the moment a byte leaves, then the model.
  ProviderReply send(Process& p, const HttpRequest& req, bool crashes_allowed);
  // With the real signers: what becomes of a signed answer on its way.
  void answer_faults(ProviderReply& reply, const std::string& order, bool lookup, int64_t now_unix);
  void race(Process& a);
  PaymentResult submit(Process& p, const Order& o, std::string_view body);
  void check_result(const Order& o, const PaymentResult& r, int sends_in_call);
  // No settled row or result names a payment it does not own.
  void check_provider_id(const std::string& order, PaymentState state, const std::string& provider_id,
                         const char* where);
  void check_error(const Order& o, const std::string& what, int sends_in_call, bool alone);
  void reconcile(Process& p);
  // pay_query of an UNKNOWN order, as a caller does before submitting it again.
  void query(Process& p, const Order& o);
  // Between runs: Ledger::prune_settled with an aggressive cutoff.
  void maybe_prune();
  bool open_order(const Order& o) const { return !answered.count(o.id) && !pruned.count(o.id); }
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

void FaultyLedger::fail_event(const char* what) {
  if (w_.wh_fault_percent > 0 && w_.wh.chance(w_.wh_fault_percent)) {
    ++tally.webhook_ledger_faults;
    ++w_.wh_injected;
    w_.say(std::string("  ledger fault on ") + what);
    throw LedgerError(std::string("ledger (dst): injected failure on ") + what);
  }
}

// ---- processes ----------------------------------------------------------------

Process::Process(World& world, int ident, int dep, bool concurrent, int tenant_of)
    : w(world), id(ident), depth(dep), tenant(tenant_of), config(world.tenants.at(static_cast<size_t>(tenant_of))->config),
      owner("worker-" + std::to_string(ident)),
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
  log = std::make_unique<AttemptLog>(sink, std::string(), kLogDebug, config.secrets(), w.clock);
  budget = std::make_unique<RetryBudget>(config.budget);
  // The request hook runs before every request, lookups included. Without
  // the built-in signer it signs them, as a WeChat Pay or Alipay merchant's
  // own signer would (the stand-in signature the model checks).
  // Now and then it takes long: on the concurrent engine's thread, while
  // requests it already handed over wait for their connection (the gate
  // right before the first byte must still refuse them once their deadline
  // or lease is over).
  const bool stand_in = !w.real_signer;
  RequestHook hook = [this, stand_in](const AttemptView& v, Headers& extra) -> std::string {
    if (w.hook_pause_percent > 0 && w.pause_rng.chance(w.hook_pause_percent)) {
      ++tally.hook_pauses;
      const int64_t ms = w.pause_rng.chance(50) ? w.lease_ms() + 1 : w.pause_rng.range(1, 3000);
      w.say("p" + std::to_string(id) + " request hook pauses " + std::to_string(ms) + " ms");
      w.clock.advance(ms);
      w.excused_ms += ms;
    }
    if (stand_in) {
      HttpRequest signed_req;
      signed_req.method = v.method;
      signed_req.url = v.url;
      signed_req.body = v.body;
      extra.emplace_back("X-Dst-Signature", ProviderModel::signature(signed_req));
    }
    return {};
  };
  // As Client builds it: the profile's scheme and the config's keys, the
  // token requests on a transport of their own (Client's blocking one), and
  // the concurrent engines' fetches on the simulation's runner.
  if (w.real_signer || w.oauth2) auth = make_authenticator(config, w.profile, token_transport, w.clock, &runner);
  engine = std::make_unique<Engine>(config, w.profile,
                                    EngineDeps{transport, w.clock, sleeper, jitter, keys, *log, *budget, stats}, hook,
                                    auth.get());
  // The scope as Client computes it: this account's rows are its own.
  // (One ledger, one secret: computed once per account.)
  std::string& scope = w.tenants[static_cast<size_t>(tenant)]->scope;
  if (scope.empty()) scope = scope_of(config, w.profile, ledger->secret());
  flow = std::make_unique<PaymentFlow>(*engine, *ledger, config, w.clock, sleeper, keys, stats, *log, owner, scope);
  settler = std::make_unique<Settler>(*ledger, transport, w.profile, config, w.clock, sleeper, jitter, *budget, *log,
                                      stats, *flow, hook, auth.get());
  operations = std::make_unique<OperationFlow>(
      config, w.profile, *ledger, *flow,
      OperationFlow::Deps{transport, w.clock, sleeper, jitter, keys, *log, *budget, stats, auth.get(), hook});
  settler->settle_operations_by([this](const PaymentRow& row) { return operations->settle(row); });
  if (concurrent) {
    // With several engines, or several accounts' clients, the world moves
    // the clock for all of them.
    const bool world_clocked = w.engine_count > 1 || w.tenants.size() > 1;
    for (int i = 0; i < w.engine_count; ++i) {
      asyncs.push_back(std::make_unique<SimAsyncTransport>(*this));
      asyncs.back()->world_clocked = world_clocked;
      multis.push_back(std::make_unique<MultiEngine>(*engine, *flow, config, w.clock, *log, stats, *asyncs.back(),
                                                     false, w.engine_count));
    }
  }
}

Process::~Process() {
  // A crashed process's engines are drained only after the schedule's
  // checks: their transports are dead, so they send nothing and just let
  // their payments end.
  if (multis.empty()) return;
  if (w.broken) {
    // The schedule already failed and is unwinding: its engines are in
    // whatever state the violation left them in, and draining them may
    // never end under a clock that no longer moves. Left as they are
    // (leaked).
    for (auto& m : multis) (void)m.release();
    for (auto& a : asyncs) (void)a.release();
    return;
  }
  for (auto& a : asyncs) {
    a->dead = true;
    a->world_clocked = false;  // each drains under its own waits
  }
  runner.fail_all();
  const bool was = w.draining;
  w.draining = true;
  for (auto& m : multis) m->stop();
  for (auto& m : multis) m->drain();
  multis.clear();
  w.draining = was;
}

bool World::turn_engines(const std::vector<Process*>& live) {
  if (live.size() == 1 && live[0]->multis.size() == 1 && !live[0]->asyncs[0]->world_clocked) {
    live[0]->multis[0]->turn();
    return true;
  }
  // The engines' threads, in a seeded interleaving: any engine that is due
  // may run next; when none is, time moves to the first that will be.
  const int64_t now = clock.now_ms();
  std::vector<MultiEngine*> due;
  int64_t next = INT64_MAX;
  for (Process* p : live)
    for (size_t i = 0; i < p->multis.size(); ++i) {
      if (p->multis[i]->unanswered() == 0) continue;
      if (p->asyncs[i]->due_at <= now) due.push_back(p->multis[i].get());
      else next = std::min(next, p->asyncs[i]->due_at);
    }
  if (due.empty()) {
    if (next != INT64_MAX) clock.advance(next - now);
    return false;
  }
  due[static_cast<size_t>(ext.range(0, static_cast<int64_t>(due.size()) - 1))]->turn();
  return true;
}

namespace {
// The provider's final answer in a recorded history, read as the design
// states it (docs/design.md "Re-send rule"), independently of HistoryFold: a
// send refused with an HTTP status other than 401 (verdict fail) after an
// earlier send may have been processed, unless a lookup proved afterwards
// that no payment exists. "" when there is none.
std::string final_answer_in(const std::vector<AttemptEntry>& history) {
  bool may_have_processed = false;
  std::string final;
  for (const AttemptEntry& e : history) {
    if (e.kind == "lookup") {
      if (e.verdict == kLookupAbsent) {
        may_have_processed = false;
        final.clear();
      }
      continue;
    }
    if (may_have_processed && e.verdict == "fail" && e.http_status != 0 && e.http_status != 401)
      final = "attempt " + std::to_string(e.number) + " got HTTP " + std::to_string(e.http_status) +
              " after an earlier send may have been processed";
    if (e.processed.value_or(true)) may_have_processed = true;
  }
  return final;
}

// Whether a body names the order: a JSON string "id", or a form value =id.
bool carries(std::string_view body, const std::string& id) {
  if (body.find("\"" + id + "\"") != std::string_view::npos) return true;
  for (size_t at = body.find("=" + id); at != std::string_view::npos; at = body.find("=" + id, at + 1)) {
    const size_t end = at + 1 + id.size();
    if (end == body.size() || body[end] == '&') return true;
  }
  // The gateway form: a JSON text, escaped, inside a form value.
  if (body.find("%22" + id + "%22") != std::string_view::npos) return true;
  return false;
}
}  // namespace

ProviderReply World::send(Process& p, const HttpRequest& req, bool crashes_allowed) {
  const int64_t now = clock.now_ms();
  ++tally.sends;
  const bool lookup = provider->wire().is_lookup(req.method, path_of(req.url));
  const std::string order = [&] {
    // A webhook receiver's lookup of the id a hint named: no order of its
    // client's, no claim (the receiver has no row to hold).
    if (p.in_hint) return std::string();
    for (const Order& o : orders)
      if (carries(req.body, o.id) || req.url.find(o.id) != std::string::npos) return o.id;
    // A lookup by the provider's id names the payment, not the order.
    if (lookup) {
      std::string id = path_of(req.url);
      id = id.substr(0, id.find('?'));
      id = id.substr(id.rfind('/') + 1);
      if (const auto it = provider->order_of_id.find(id); it != provider->order_of_id.end()) return it->second;
    }
    return std::string();
  }();
  std::unique_ptr<Ledger> holder;
  if (const Order* o = order.empty() ? nullptr : order_of(order)) {
    // Another merchant account's client never sends anything of this
    // order: its key is new in that account (a second charge), and its
    // lookups search another store.
    if (o->tenant != p.tenant)
      fail("no_send_for_another_scopes_order", std::string(lookup ? "a lookup" : "a create") + " of " + order +
                                                   " (account " + tenants[static_cast<size_t>(o->tenant)]->name +
                                                   ") left from the client of account " +
                                                   tenants[static_cast<size_t>(p.tenant)]->name);
    // Every lookup of a payment carries its own submission headers: the
    // provider's store is picked by them, and "not found" in another store
    // proves nothing.
    if (lookup)
      for (const auto& [name, value] : o->headers) {
        const std::string* sent = nullptr;
        for (const auto& [n, v] : req.headers)
          if (n == name) sent = &v;
        if (!sent || *sent != value)
          fail("lookup_carries_submission_headers", "a lookup of " + order + " left without its header " + name +
                                                        ": " + value);
      }
    // Reconcile never re-sends what can only get the provider's final answer
    // again: a refusal recorded after a send that may have been processed
    // (read here from the recorded history, not by the library's fold).
    // (The first send of each re-send run: a final answer ends a run, so no
    // later send of the same run can follow one.)
    if (!lookup && p.in_settler && req.claim != p.final_checked_claim) {
      p.final_checked_claim = req.claim;
      if (const std::string why = final_answer_in(ledger_for_checks(holder).attempts(order)); !why.empty())
        fail("reconcile_never_resends_a_final_answer", "a reconcile pass re-sent " + order + " although " + why);
    }
  }
  // An UNKNOWN operation is settled by its own lookup (issue 47): never by
  // a re-send (no refund leaves but from its submit), never through its
  // payment's lookup (whatever leaves under an operation row's claim
  // outside its submit is that operation's own lookup), and its lookups
  // leave under its row's live claim.
  if (provider->wire().speaks_refunds() && !p.in_hint && p.op_row.empty()) {
    const std::string path = path_of(req.url);
    const bool own_lookup = provider->wire().is_refund_lookup(req.method, path);
    if (refund_payment(provider->wire(), req))
      fail("operation_lookup_never_sends", "a refund was POSTed (" + path + ") outside its submit" +
                                               (p.op_query.empty() ? std::string() : ", querying " + p.op_query));
    if (!p.op_query.empty() && !own_lookup)
      fail("operation_read_by_its_own_lookup", "querying " + p.op_query + " sent " + req.method + " " + path +
                                                   ", which is not the operation's own lookup");
    // (A payment's lookup under an operation's claim in a reconcile pass
    // is caught by the payment's own lease check below: its claim is not
    // the payment row's.)
    if (own_lookup) {
      const std::optional<PaymentRow> op = operation_of_claim(ledger_for_checks(holder), req.claim);
      if (!op)
        fail("no_send_after_losing_the_lease", "the operation lookup " + path + " left under claim '" + req.claim +
                                                   "', which holds no operation row");
      if (clock.unix_ms() >= op->lease_until)
        fail("no_send_after_losing_the_lease", "the lookup of " + op->order_id + " left after its lease ended");
      ++tally.operation_lookups;
    }
  }
  // An operation leaves only on a settled payment, under its own row's
  // live claim.
  if (!p.op_row.empty() && !lookup) {
    Ledger& l = ledger_for_checks(holder);
    const auto op = l.get(p.op_row);
    if (!op) fail("operation_committed_before_send", "a request of " + p.op_row + " left before its row existed");
    const auto parent = l.get(op->parent_order_id);
    if (!parent || parent->state != PaymentState::succeeded)
      fail("operation_only_on_a_settled_payment", p.op_row + " left while its payment is " +
                                                      (parent ? state_name(parent->state) : "gone"));
    if (op->state != PaymentState::in_flight || op->lease_owner != req.claim || clock.unix_ms() >= op->lease_until)
      fail("no_send_after_losing_the_lease", "a request of " + p.op_row + " left under claim '" + req.claim +
                                                 "' while its row is " + state_name(op->state) + " held by '" +
                                                 op->lease_owner + "'");
    ++tally.operation_sends;
  }
  // No byte leaves under a claim that is over: the ledger's row must still
  // be held by this request's claim, with its lease running.
  {
    Ledger& l = ledger_for_checks(holder);
    if (!order.empty()) {
      const auto row = l.get(order);
      if (!row) fail("key_committed_before_send", "a request for " + order + " left before its row existed");
      // pay_query of a settled payment asks where its money is, holding
      // nothing: a read of a row whose outcome never changes again (its
      // money moves only through the ledger's event rule).
      const bool settled_read = lookup && req.claim.empty() &&
                                (row->state == PaymentState::succeeded || row->state == PaymentState::failed);
      if (settled_read) {
        ++tally.settled_lookups;
        settled_reads.insert(order);
      } else if (row->state != PaymentState::in_flight || row->lease_owner != req.claim) {
        fail("no_send_after_losing_the_lease", "a request for " + order + " left under claim '" + req.claim +
                                                   "' while the row is " + state_name(row->state) + " held by '" +
                                                   row->lease_owner + "'");
      }
      if (!settled_read && clock.unix_ms() >= row->lease_until)
        fail("no_send_after_losing_the_lease", "a request for " + order + " left " +
                                                   std::to_string(clock.unix_ms() - row->lease_until) +
                                                   " ms after its lease ended");
    }
  }
  if (webhooks && !order.empty()) {
    check_rows();
    // A payment a notification settled is final: nothing sends it again.
    if (!lookup && webhook_settled.count(order))
      fail("webhook_settled_never_resent", "order " + order + " was sent again after a webhook settled it");
  }
  if (!lookup && !order.empty()) {
    if (pruned.count(order)) fail("pruned_order_never_sent", "order " + order + " was sent after its row was pruned");
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
  // A request the client gave up on is processed within the configured
  // grace of its arrival: not_found_grace_ms is stated to cover the
  // provider's processing as well as its read lag (a lookup that searches
  // while the request is still being processed finds nothing, and no client
  // can tell that apart from no payment). Drawn first, so that schedules
  // keep their streams.
  const int64_t slow = std::min<int64_t>(rng.range(50, 20000), std::max<int64_t>(1, config.not_found_grace_ms));
  // OAuth2: the request's token is revoked as it arrives (401, nothing
  // processed), or the gateway refuses the credential after the create was
  // processed: keeping its key as the provider keeps any processed key, or,
  // where the profile states no replay ("none"), forgetting it.
  auto after = ProviderModel::AfterProcessing::answer;
  if (oauth2) {
    if (revoke_percent > 0 && auth_rng.chance(revoke_percent) && provider->revoke(sent)) {
      ++tally.tokens_revoked;
      say("  the request's token is revoked");
    }
    if (!lookup && unauthorized_after_percent > 0 && auth_rng.chance(unauthorized_after_percent))
      after = profile.replay == ReplayKind::none ? ProviderModel::AfterProcessing::unauthorized_forgetting_key
                                                  : ProviderModel::AfterProcessing::unauthorized_keeping_key;
  }
  ProviderReply reply = provider->handle(sent, f, now, clock.unix_ms(), latency, ra_kind, slow, after);
  if (reply.unauthorized) ++tally.unauthorized_answers;
  if (!order.empty() && !lookup && (reply.crash || reply.result.request_written)) ++sends_written[order];
  if (!order.empty() && reply.hid_a_payment) lookups_that_hid[order].push_back(clock.unix_ms());
  // Stripe marks its 409 and 429 answers with Stripe-Should-Retry, now and
  // then "false" (drawn from the pause stream: other schedules stay as they were).
  if (provider->wire().should_retry_header && !lookup && reply.result.failure == TransportFailure::none &&
      (reply.result.response.status == 409 || reply.result.response.status == 429) &&
      !reply.result.response.header("Stripe-Should-Retry")) {
    const bool no = pause_rng.chance(30);
    reply.result.response.headers.emplace_back("Stripe-Should-Retry", no ? "false" : "true");
    if (no && !p.in_settler && p.order && p.order->id == order) p.run_told_not_to_retry = true;
  }
  if (real_signer && !reply.crash && reply.result.failure == TransportFailure::none && !reply.refused_unsigned)
    answer_faults(reply, order, lookup, clock.unix_ms());
  if (lookup) ++tally.lookups;
  if (p.in_hint && f != Fault::none) ++wh_injected;  // the hint's confirming lookup fails: the receiver must say "again"
  say("p" + std::to_string(p.id) + (lookup ? " lookup " : " send ") + order +
      (order.empty() && opt.verbose ? req.method + " " + path_of(req.url) : std::string()) + " fault=" + fault_name(f) + " -> " +
      (reply.crash ? std::string("CRASH")
       : reply.result.failure == TransportFailure::none ? std::to_string(reply.result.response.status)
                                                          : transport_failure_name(reply.result.failure)) +
      (reply.retry_after.header.empty() ? "" : " Retry-After: " + reply.retry_after.header) +
      (opt.verbose && reply.result.failure == TransportFailure::none ? " " + reply.result.response.body : ""));
  return reply;
}

void World::answer_faults(ProviderReply& reply, const std::string& order, bool lookup, int64_t now_unix) {
  HttpResponse& a = reply.result.response;
  // A genuine signed answer that names its order and payment: what another
  // order's cross-order fault replays.
  if (!reply.about_order.empty() && carries(a.body, reply.about_order) &&
      a.body.find(reply.about_id) != std::string::npos)
    (lookup ? genuine_lookups : genuine_creates)[reply.about_order] = a;
  if (answer_fault_percent == 0 || order.empty() || !ext.chance(answer_fault_percent)) return;
  // Forged, stale, another order's (half of them, when those are drawn).
  int kind = opt.cross_order && ext.chance(50) ? 2 : static_cast<int>(ext.range(0, 1));
  if (kind == 1 && provider->wire().signs != Wire::Signs::wechatpay) kind = 0;  // Alipay's answers carry no time
  if (kind == 2) {
    std::vector<const HttpResponse*> others;
    for (const auto& [o, answer] : lookup ? genuine_lookups : genuine_creates)
      if (o != order) others.push_back(&answer);
    if (!opt.cross_order || others.empty()) {
      kind = 0;
    } else {
      ++tally.cross_order_answers;
      const HttpResponse* other = others[static_cast<size_t>(ext.range(0, static_cast<int64_t>(others.size()) - 1))];
      say("  the answer is replaced by another order's genuinely signed one");
      a = *other;
      return;
    }
  }
  if (!opt.answer_faults) return;
  // A lie the provider never told, signed as it signs: a payment it never
  // made (or a refusal of one it made), under an id only this lie names.
  const std::string fake = "forged_" + std::to_string(forged_ids.size() + 1);
  forged_ids.insert(fake);
  const bool says_charged = ext.chance(70);
  HttpResponse lie = provider->lie(lookup, order, fake, says_charged);
  if (kind == 1) {
    ++tally.stale_answers;
    provider->sign(lie, now_unix - ext.range(301, 3600) * 1000);
    say("  the answer is replaced by a stale one (signed over five minutes ago)");
  } else {
    ++tally.forged_answers;
    provider->sign(lie, now_unix);
    ProviderKeys::forge(lie);
    say("  the answer is replaced by one whose signature does not verify");
  }
  a = std::move(lie);
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
  // Notifications that come while the answer is on its way (the payment is
  // IN_FLIGHT); not Mollie's, whose confirming lookup would take time from the
  // run (a Retry-After counts from the answer).
  if (w.profile_name != "mollie") w.deliver_due();
  p.last_had_retry_after = t.failure == TransportFailure::none && !reply.retry_after.header.empty();
  p.last_unauthorized = w.oauth2 && t.failure == TransportFailure::none && t.response.status == 401;
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
    w.deliver_due();
    return;
  }
  if (p.last_unauthorized && ms == 0) {
    // A 401 under a cached token: the request goes again at once with a
    // fresh one (docs/design.md "Authentication"), no retry of the budget's.
    p.last_unauthorized = false;
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
  // Notifications that come while the run waits in its backoff (IN_FLIGHT).
  w.deliver_due();
}

// ---- OAuth2: the token endpoint and the runner of the engines' fetches ----------

TransportResult TokenTransport::post(const HttpRequest& req) { return p_.w.token_request(p_, req); }

TokenPlan World::draw_token_plan() {
  TokenPlan t;
  const int64_t x = auth_rng.range(0, 99);
  if (x < token_hang_percent) {
    t.answer.kind = ProviderModel::TokenAnswer::hang;  // longer than any request waits
    t.latency_ms = INT64_MAX / 4;
  } else if (x < token_hang_percent + token_error_percent) {
    t.answer.kind = ProviderModel::TokenAnswer::server_error;
    t.latency_ms = auth_rng.range(1, 300);
  } else {
    // Some tokens live a minute or two: renewed (or expired on the way) within a schedule.
    t.answer.life_ms = (auth_rng.chance(short_token_percent) ? auth_rng.range(1, 120) : auth_rng.range(600, 7200)) * 1000;
    t.latency_ms = auth_rng.chance(85) ? auth_rng.range(1, 300) : auth_rng.range(300, 10000);
  }
  return t;
}

TransportResult World::token_request(Process& p, const HttpRequest& req) {
  ++tally.token_requests;
  // The attempt that asked for it has seen no Retry-After of its own (a
  // fetch that fails leaves it unsent, retried after a backoff).
  p.last_had_retry_after = false;
  p.last_retry_after.reset();
  const bool queued = p.token_plan != nullptr;
  const TokenPlan plan = queued ? *p.token_plan : draw_token_plan();
  const int64_t timeout = std::max<int64_t>(1, req.timeout_ms);
  ProviderModel::TokenAnswer answer = plan.answer;
  if (plan.latency_ms > timeout) answer.kind = ProviderModel::TokenAnswer::hang;
  const int64_t elapsed = std::min(plan.latency_ms, timeout);
  // A fetch on a caller's thread waits for its answer (the blocking
  // engine's, a lookup's, or one that runs a queued fetch: what is left of
  // it); a queued one runs when its answer is due, taking no time.
  const int64_t answer_at = queued ? p.token_due_at : clock.now_ms() + elapsed;
  if (answer_at > clock.now_ms()) clock.advance(answer_at - clock.now_ms());
  tally.token_hangs += answer.kind == ProviderModel::TokenAnswer::hang;
  tally.token_errors += answer.kind == ProviderModel::TokenAnswer::server_error;
  const TransportResult t = provider->token_request(req, answer, clock.now_ms(), elapsed);
  say("p" + std::to_string(p.id) + " token request" + (queued ? " (queued)" : "") + " -> " +
      (t.failure == TransportFailure::none ? std::to_string(t.response.status) + " " + t.response.body
                                           : transport_failure_name(t.failure)));
  return t;
}

void SimRunner::post(std::function<void()> task) {
  World& w = p_.w;
  ++tally.queued_fetches;
  Task t;
  t.run = std::move(task);
  if (dead_) {
    // A dead process's fetch gets no answer: it fails at the engine's next
    // wait (posted with the authenticator's lock held, it cannot run here),
    // so that its payments end without polling out their deadlines.
    t.plan.answer.kind = ProviderModel::TokenAnswer::server_error;
    t.due_at = w.clock.now_ms();
    tasks_.push_back(std::move(t));
    return;
  }
  // The authenticator's own fetches are timed like an attempt.
  t.plan = w.draw_token_plan();
  t.due_at = w.clock.now_ms() + std::min(t.plan.latency_ms, std::max<int64_t>(1, p_.config.retry.attempt_timeout_ms));
  tasks_.push_back(std::move(t));
}

bool SimRunner::run_pending() {
  if (tasks_.empty()) return false;
  ++tally.fetches_run_by_a_caller;
  while (!tasks_.empty()) {
    Task t = std::move(tasks_.front());
    tasks_.pop_front();
    run_one(std::move(t));
  }
  return true;
}

void SimRunner::run_due() {
  World& w = p_.w;
  const int64_t now = w.clock.now_ms();
  for (size_t i = 0; i < tasks_.size();) {
    if (tasks_[i].due_at <= now && w.auth_rng.chance(75)) {
      Task t = std::move(tasks_[i]);
      tasks_.erase(tasks_.begin() + static_cast<std::ptrdiff_t>(i));
      run_one(std::move(t));
    } else {
      ++i;
    }
  }
}

void SimRunner::fail_all() {
  dead_ = true;
  while (!tasks_.empty()) {
    Task t = std::move(tasks_.front());
    tasks_.pop_front();
    t.plan.answer.kind = ProviderModel::TokenAnswer::server_error;
    t.plan.latency_ms = 0;
    t.due_at = p_.w.clock.now_ms();
    run_one(std::move(t));
  }
}

void SimRunner::run_one(Task t) {
  struct Current {
    Process& p;
    ~Current() { p.token_plan = nullptr; }
  } current{p_};
  p_.token_plan = &t.plan;
  p_.token_due_at = t.due_at;
  t.run();
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
          p_.kill();
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
  // A dead process drains: the fetches its payments handed over fail now.
  if (dead) p_.runner.fail_all();
  const int64_t own = next_timeout_ms();
  const int64_t step = own >= 0 ? std::min(own, max_ms) : max_ms;
  if (world_clocked) {
    // The world moves time for all engines: this one is due again then.
    due_at = p_.w.clock.now_ms() + std::max<int64_t>(0, step);
    return;
  }
  // Time passes in the simulation only: up to the next thing due.
  if (step > 0) p_.w.clock.advance(step);
}

void SimAsyncTransport::wakeup() {
  if (world_clocked) due_at = std::min(due_at, p_.w.clock.now_ms());
}

// ---- the world ----------------------------------------------------------------------

const char* const kProfiles[] = {"generic", "stripe", "adyen", "paypal", "square",
                                 "checkout_com", "mollie", "wechatpay_v3", "alipay"};

// The PEM text of a test key, read once.
const std::string& test_pem(const std::string& dir, const std::string& file) {
  static std::map<std::string, std::string> cache;
  auto& slot = cache[dir + "/" + file];
  if (slot.empty()) slot = ProviderKeys::pem(dir, file);
  return slot;
}

World::World(uint64_t s, const Options& o)
    : seed(s), opt(o), rng(s), pause_rng(s ^ 0xD1B54A32D192ED03ull), ext(s ^ 0x5851F42D4C957F2Dull),
      tenant_rng(s ^ 0x9FB21C651E98DF25ull), auth_rng(s ^ 0xC2B2AE3D27D4EB4Full), wh(s ^ 0x7A3B9E2C51D4F086ull),
      opwh(s ^ 0x61C8864680B583EBull), money_rng(s ^ 0x3C6EF372FE94F82Bull), refresh_rng(s ^ 0x1B873593CC9E2D51ull),
      ops_rng(s ^ 0x85EBCA6B27D4EB2Full) {
  hook_pause_percent = pause_rng.chance(20) ? static_cast<int>(pause_rng.range(2, 15)) : 0;
  profile_name = !opt.profile.empty() ? opt.profile : kProfiles[rng.range(0, 8)];
  // Unpinned, a tenth of the schedules draw a random provider instead.
  if (opt.profile.empty() && ext.chance(10)) profile_name = "random";
  concurrent = opt.driver.empty() ? rng.chance(50) : opt.driver == "concurrent";
  const ReplayKind generic_replays[] = {ReplayKind::all_answers, ReplayKind::success_only, ReplayKind::current_state};
  const ReplayKind undocumented = generic_replays[rng.range(0, 2)];
  int64_t wire_retention = 0;
  if (profile_name == "random") {
    // The wire first, then the profile written from it, loaded as a user's
    // profile is: through the library's own parser and its checks.
    Rng provider_rng(s ^ 0x2545F4914F6CDD1Dull);
    RandomProvider rp = draw_random_provider(provider_rng, &auth_rng);
    oauth2 = !rp.wire.token_path.empty();
    random_summary = rp.summary + "; profile " + rp.profile_json;
    try {
      profile = parse_profile(rp.profile_json);
    } catch (const ProfileError& e) {
      throw Broken{{"random_profile_rejected", std::string(e.what()) + " in " + rp.profile_json}};
    }
    wire_retention = rp.wire.retention_ms;
    provider = std::make_unique<ProviderModel>(std::move(rp.wire));
    ++tally.random_profiles;
  } else {
    profile = *builtin_profile(profile_name);
    Wire w = wire_for(profile_name, undocumented);
    // OAuth2 client credentials: PayPal's own scheme, and now and then a
    // provider of unknown replay (generic, adyen) behind a token endpoint
    // the config names (its 401 after processing forgets the key).
    oauth2 = (profile_name == "paypal" && auth_rng.chance(60)) ||
             ((profile_name == "generic" || profile_name == "adyen") && auth_rng.chance(25));
    if (oauth2) w.token_path = profile.auth.token_path.empty() ? "/oauth2/token" : profile.auth.token_path;
    provider = std::make_unique<ProviderModel>(std::move(w));
    // A built-in's provider remembers a key for the profile's stated retention.
    wire_retention = profile.retention_ms.value_or(0);
  }
  const Wire& wire = provider->wire();
  // Every Nth seed of a provider that signs runs the built-in signer.
  real_signer = wire.signs != Wire::Signs::none && opt.signer_every > 0 && !opt.keys_dir.empty() &&
                seed % opt.signer_every == opt.signer_every - 1;
  if (concurrent) engine_count = opt.engines > 0 ? opt.engines : ext.chance(50) ? 1 : static_cast<int>(ext.range(2, 3));
  ++tally.by_profile_driver[profile_name + (real_signer ? "+signer" : "") +
                            (concurrent ? "/concurrent" : "/blocking")];
  tally.signer_schedules += real_signer;
  tally.multi_engine_schedules += engine_count > 1;
  config.provider = profile.name;
  config.base_url = "https://provider.test";
  // The profile's own create path; the config gives one where it has none.
  if (profile.create_path.empty()) config.create_path = "/create";
  config.merchant_id = kWechatMchid;
  provider->merchant_id = config.merchant_id;
  if (real_signer) {
    if (wire.signs == Wire::Signs::wechatpay) {
      config.auth.kind = AuthConfig::Kind::wechatpay;
      config.auth.private_key_pem = test_pem(opt.keys_dir, "wechat_merchant_key.pem");
      config.auth.peer_public_key_pem = test_pem(opt.keys_dir, "wechat_platform_pub.pem");
      config.auth.serial_no = kWechatMerchantSerial;
      config.auth.platform_serial = kWechatPlatformSerial;
    } else {
      config.auth.kind = AuthConfig::Kind::alipay;
      config.auth.private_key_pem = test_pem(opt.keys_dir, "alipay_app_key.pem");
      config.auth.peer_public_key_pem = test_pem(opt.keys_dir, "alipay_pub.pem");
      config.auth.app_id = kAlipayAppId;
    }
    provider->keys = &ProviderKeys::load(opt.keys_dir);
    answer_fault_percent = ext.chance(40) ? 0 : static_cast<int>(ext.range(2, 15));
  } else if (oauth2) {
    config.auth.kind = AuthConfig::Kind::oauth2;
    config.auth.client_id = "client_dst";
    config.auth.client_secret = "secret_dst_oauth2";
    if (profile.auth.token_path.empty()) config.auth.token_path = wire.token_path;
    token_hang_percent = auth_rng.chance(40) ? static_cast<int>(auth_rng.range(5, 40)) : 0;
    token_error_percent = auth_rng.chance(40) ? static_cast<int>(auth_rng.range(5, 30)) : 0;
    short_token_percent = auth_rng.chance(40) ? 60 : 0;
    revoke_percent = auth_rng.chance(50) ? static_cast<int>(auth_rng.range(1, 10)) : 0;
    unauthorized_after_percent =
        wire.unauthorized_after_processing && auth_rng.chance(60) ? static_cast<int>(auth_rng.range(2, 20)) : 0;
  } else {
    config.auth_headers.emplace_back("Authorization", "Bearer sk_test_dst");
  }
  tally.oauth2_schedules += oauth2;
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
    // The profile's retention; a random one may claim less than its wire.
    provider->retention_ms = wire_retention;
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
  prune_percent = ext.chance(30) ? static_cast<int>(ext.range(20, 100)) : 0;
  query_percent = ext.chance(50) ? static_cast<int>(ext.range(20, 80)) : 0;
  // Refunds, where the provider model speaks them: Stripe's (all answers
  // replayed) and Checkout.com's (only a 2xx is), both with a header key.
  if (provider->wire().speaks_refunds() && profile.operations.count("refund"))
    ops_percent = ops_rng.chance(60) ? static_cast<int>(ops_rng.range(20, 80)) : 0;
  if (ops_percent > 0) {
    // How the provider decides them: some later (Stripe's pending refund,
    // Checkout.com's not listed yet), some declined (nothing moves).
    provider->refund_rng = Rng(s ^ 0x27D4EB2F165667C5ull);
    provider->refund_later_percent = ops_rng.chance(60) ? static_cast<int>(ops_rng.range(10, 70)) : 0;
    provider->refund_declined_percent = ops_rng.chance(50) ? static_cast<int>(ops_rng.range(5, 50)) : 0;
    provider->refund_later_max_ms = ops_rng.chance(50) ? ops_rng.range(1, 5000) : ops_rng.range(5000, 600000);
  }

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
    // The body the caller hands over, as the wire's provider takes it: the
    // order id where the provider keeps it, the merchant reference where
    // the identity or the lookup wants it (some callers set it, others let
    // payretry write it, or set one of their own), the provider's extras.
    JsonMembers m{{"amount", amount}, {"currency", json_quote("eur")}, {wire.order_path, json_quote(ord.id)}};
    if (wire.identity == Wire::Identity::reference) m.emplace_back(wire.key_path, json_quote(ord.id));
    switch (wire.caller_reference) {
      case Wire::CallerReference::none:
      case Wire::CallerReference::always:
        if (!wire.search_path.empty() && wire.search_path != wire.key_path)
          m.emplace_back(wire.search_path, json_quote(ord.id));
        break;
      case Wire::CallerReference::half:
        if (rng.chance(50)) m.emplace_back(wire.search_path, json_quote(ord.id));
        break;
      case Wire::CallerReference::unreliable: {
        const int64_t which = rng.range(0, 2);
        if (which == 0) m.emplace_back(wire.search_path, json_quote(ord.id));
        if (which == 1) m.emplace_back(wire.search_path, json_quote("cart-" + std::to_string(seed) + "-" + std::to_string(i)));
        break;
      }
    }
    for (const auto& [path, value] : wire.body_extras) {
      std::string v = value;
      if (const size_t at = v.find("{amount}"); at != std::string::npos) v.replace(at, 8, amount);
      m.emplace_back(path, v);
    }
    m.emplace_back("card", json_quote("4242424242424242"));
    ord.body = json_object(m);
    provider->declines[ord.id] = rng.chance(20);
    draw_flow(ord.id);
    orders.push_back(ord);
  }
  draw_webhooks();
  // Several merchant accounts, one client each over the one ledger (not in
  // the schedules of the built-in signers, whose merchant is the test keys').
  const int n_tenants = !real_signer && tenant_rng.chance(25) ? static_cast<int>(tenant_rng.range(2, 3)) : 1;
  tenant_kind = static_cast<int>(tenant_rng.range(0, 2));
  for (int t = 0; t < n_tenants; ++t) {
    auto tenant = std::make_unique<Tenant>();
    tenant->name = "t" + std::to_string(t);
    tenant->config = config;
    Config& c = tenant->config;
    if (t > 0) {
      // Another credential (an API key, an OAuth2 client), another header
      // the provider picks the store by, or the account named (with its own
      // credential): another scope each way.
      if (tenant_kind == 1) {
        c.extra_headers.emplace_back("X-Tenant", tenant->name);
      } else {
        for (auto& [name, value] : c.auth_headers)
          if (name == "Authorization") value += "_" + tenant->name;
        if (c.auth.kind == AuthConfig::Kind::oauth2) c.auth.client_id += "_" + tenant->name;
        if (tenant_kind == 2) c.account_id = "acct_" + tenant->name;
      }
    } else if (tenant_kind == 2 && n_tenants > 1) {
      c.account_id = "acct_" + tenant->name;
    }
    tenants.push_back(std::move(tenant));
  }
  tally.tenant_schedules += n_tenants > 1;
  other_scope_percent = n_tenants > 1 ? static_cast<int>(tenant_rng.range(10, 60)) : 0;
  // Payments made in a store their own header names (a Stripe-Account, an
  // X-Account), and (where the provider takes any create path) POSTed to a
  // path of their own that names an account.
  const int header_percent = tenant_rng.chance(30) ? 60 : 0;
  const std::string& create_path = config.create_path.empty() ? profile.create_path : config.create_path;
  const bool paths = wire.signs == Wire::Signs::none && !wire.gateway_form && create_path.find('{') == std::string::npos;
  const int path_percent = paths && tenant_rng.chance(10) ? 50 : 0;
  for (Order& ord : orders) {
    ord.tenant = static_cast<int>(tenant_rng.range(0, n_tenants - 1));
    if (tenant_rng.chance(header_percent)) {
      // Stripe's own header where the profile reads a Connect event's account by it.
      ord.headers.emplace_back(profile.webhook.account_header.empty() ? "X-Account" : profile.webhook.account_header,
                               "acct_" + std::to_string(tenant_rng.range(1, 3)));
      ++tally.orders_with_headers;
    }
    if (tenant_rng.chance(path_percent)) {
      ord.path = provider->wire().account_path_prefix + "acct_" + std::to_string(tenant_rng.range(1, 3)) + create_path;
      ++tally.orders_with_paths;
    }
  }
  for (const Order& ord : orders) order_by_id[ord.id] = &ord;

  if (!opt.sqlite_dir.empty() && opt.sqlite_every > 0 && seed % opt.sqlite_every == 0) {
    ++tally.sqlite;
    ledger_url = "sqlite://" + opt.sqlite_dir + "/dst-" + std::to_string(seed) + ".db";
  } else {
    ledger_url = "memory:";
    // A fixed secret (a memory ledger otherwise draws one from the system's
    // random source): the schedule does not depend on it, and it is cheaper.
    shared_ledger = open_ledger(ledger_url, "dst-memory-ledger-secret");
  }
}

World::~World() {
  receivers.clear();
  receiver_procs.clear();
  graveyard.clear();
  checks_ledger.reset();
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

void World::check_provider_id(const std::string& order, PaymentState state, const std::string& id, const char* where) {
  if (id.empty()) return;
  // Nothing of an answer whose signature failed is believed.
  if (forged_ids.count(id))
    fail("unverified_answer_settles_nothing", std::string(where) + " of " + order + " holds " + id +
                                                  ", which only a forged or stale answer named (" +
                                                  state_name(state) + ")");
  // A genuinely signed answer about another order's payment settles nothing here.
  if (state == PaymentState::succeeded || state == PaymentState::failed) {
    const auto of = provider->order_of_id.find(id);
    if (of != provider->order_of_id.end() && of->second != order)
      fail("cross_order_answer_settles_nothing", std::string(where) + " of " + order + " is " + state_name(state) +
                                                     " with " + id + ", the payment of " + of->second);
  }
}

namespace {
// The rank of a money state (docs/providers.md "Money states"), written
// here apart from money_moves: the check must not trust what it checks.
int money_rank(MoneyState m) {
  switch (m) {
    case MoneyState::unknown: return 0;
    case MoneyState::awaiting_customer: return 1;
    case MoneyState::pending: return 2;
    case MoneyState::authorized: return 3;
    case MoneyState::paid: return 4;
    case MoneyState::partly_refunded: return 5;
    case MoneyState::refunded: return 6;
    case MoneyState::failed: return -1;
  }
  return 0;
}
// Forward only: a higher rank, or failed from below paid; failed and
// refunded are terminal.
bool money_forward(MoneyState from, MoneyState to) {
  if (from == to) return true;
  if (from == MoneyState::failed || from == MoneyState::refunded) return false;
  if (to == MoneyState::failed) return money_rank(from) < money_rank(MoneyState::paid);
  return money_rank(to) > money_rank(from);
}
}  // namespace

void World::draw_flow(const std::string& order) {
  const Wire& w = provider->wire();
  ProviderModel::Flow f{w.at_once, w.at_once, 0};
  // (A waiting payment costs its run a poll until the deadline where the
  // provider's word is pending: Alipay's 10003. Kept to an eighth each, so
  // that a schedule costs what it did, within CI's budget.)
  const int64_t kind = money_rng.range(0, 99);
  if (kind < 12 && w.at_once != Phase::waits && w.has_phase(Phase::waits)) f.first = Phase::waits;
  if (kind >= 12 && kind < 24 && w.at_once != Phase::held && w.has_phase(Phase::held)) f.first = Phase::held;
  // Later the customer pays or abandons a waiting payment (or never
  // comes back); the merchant captures or voids a held one (or never does).
  const int64_t act = money_rng.range(0, 99);
  f.then = f.first == Phase::waits  ? (act < 60 ? w.customer_pays : act < 85 ? Phase::abandoned : Phase::waits)
           : f.first == Phase::held ? (act < 60 ? Phase::captured : act < 85 ? Phase::voided : Phase::held)
                                    : f.first;
  // While its run still holds the payment, or any time after.
  f.after_ms = money_rng.chance(50) ? money_rng.range(0, 5000) : money_rng.range(5000, 1800000);
  provider->flows[order] = f;
}

bool World::money_failed_for_good(const std::string& order, const std::string& pid) {
  provider->complete_due(clock.now_ms());
  for (const ProviderModel::Payment& p : provider->payments())
    if (p.order_id == order && p.charged && !p.processing && (pid.empty() || p.id == pid) &&
        money_of(p.phase) != Money::failed)
      return false;
  return true;
}

void World::check_money(const std::string& order, MoneyState m, const std::string& pid, const char* where,
                        std::map<std::string, MoneyState>& seen) {
  const auto before = seen.find(order);
  if (before != seen.end() && !money_forward(before->second, m))
    fail("money_never_moves_back", std::string(where) + " of " + order + " was " + money_state_name(before->second) +
                                       " and is now " + money_state_name(m));
  seen[order] = m;
  if (m == MoneyState::unknown || m == MoneyState::awaiting_customer || m == MoneyState::pending) return;
  // Its own payments: the one it names, else every one made for the order
  // (a payment made elsewhere is no payment of the provider model's).
  provider->complete_due(clock.now_ms());
  // Refunded, partly or wholly, only after a refund of it moved money.
  if ((m == MoneyState::partly_refunded || m == MoneyState::refunded) && !provider->refunds_moved.count(order))
    fail("refunded_only_after_a_refund_moved_money", std::string(where) + " of " + order + " says " +
                                                         money_state_name(m) + ", and no refund of it moved money");
  bool held = false, captured = false, holds_now = false;
  bool refunded_some = false, refunded_all = false;
  std::string truth;
  for (const ProviderModel::Payment& p : provider->payments()) {
    if (p.order_id != order || !p.charged || p.processing || (!pid.empty() && p.id != pid)) continue;
    held = held || p.ever_held;
    captured = captured || p.ever_captured;
    holds_now = holds_now || money_of(p.phase) == Money::held || money_of(p.phase) == Money::captured;
    refunded_some = refunded_some || p.refunded > 0;
    refunded_all = refunded_all || (p.refunded > 0 && p.refunded >= p.amount);
    truth += " " + p.id + ":" + phase_name(p.phase) + (p.refunded > 0 ? " refunded " + std::to_string(p.refunded) + " of " +
                                                                             std::to_string(p.amount)
                                                                       : std::string());
  }
  // Never ahead of the provider: refunded (wholly) only once its refunds
  // gave back all it took, partly only once one gave back some of it.
  if ((m == MoneyState::refunded && !refunded_all) || (m == MoneyState::partly_refunded && !refunded_some))
    fail("payment_money_never_ahead_of_the_provider", std::string(where) + " of " + order + " says " +
                                                         money_state_name(m) + " (provider id '" + pid +
                                                         "'); the provider's truth:" + (truth.empty() ? " none" : truth));
  const std::string said = std::string(where) + " of " + order + " says " + money_state_name(m) + " (provider id '" +
                           pid + "'); the provider's truth:" + (truth.empty() ? " no payment of its own" : truth);
  if (m == MoneyState::failed) {
    if (holds_now) fail("failed_money_holds_nothing", said);
    return;
  }
  if (m == MoneyState::authorized ? !(held || captured) : !captured) fail("money_only_from_its_own_payment", said);
}

namespace {
PaymentState state_of(Outcome o) {
  switch (o) {
    case Outcome::succeeded: return PaymentState::succeeded;
    case Outcome::failed: return PaymentState::failed;
    case Outcome::unknown: return PaymentState::unknown;
    default: return PaymentState::in_flight;
  }
}
}  // namespace

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
  check_provider_id(o.id, state_of(r.outcome), r.provider_payment_id, "a result");
  // Results read from the ledger move only forward, as its rows do. (The
  // others are each their run's own reading: a run that stalled past its
  // lease reports an answer older than the one the run that took over
  // reported first; an UNKNOWN or IN_PROGRESS result says nothing about the
  // money.)
  std::map<std::string, MoneyState> apart;
  check_money(o.id, r.money_state, r.provider_payment_id, "a result", r.from_ledger ? money_result_seen : apart);
  if (r.outcome == Outcome::failed && !money_failed_for_good(o.id))
    fail("no_failed_when_processed", o.id + " reported FAILED while a payment the provider made for it can still move money");
  // (The row too, where reading it costs nothing: a SQLite ledger's rows
  // are checked at every notification and at the end.)
  if (shared_ledger)
    if (const auto row = shared_ledger->get(o.id))
      check_money(o.id, row->money_state, row->provider_payment_id, "the ledger row", money_row_seen);
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
  req.headers = o.headers;
  req.path = o.path;
  ++active_calls[o.id];
  ++calls_started[o.id];
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
  Process b(*this, next_process++, 1, false, a.tenant);
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
  // Its re-sends overlap any call in progress on its orders (a reconcile
  // between the engines' turns): those calls no longer own every send.
  for (const Order& o : orders)
    if (o.tenant == p.tenant) ++calls_started[o.id];
  ReconcileReport rep;
  try {
    rep = p.settler->reconcile(ro);
  } catch (const LedgerError&) {
    p.in_settler = false;
    return;  // the listing failed: nothing was looked at
  }
  p.in_settler = false;
  // Its kept events may have landed (Settler::apply_kept_events): no final row moved.
  if (webhooks) check_rows();
  // A reconcile lists its own account's payments only: another account's
  // payment is neither looked up, re-sent nor settled by it.
  auto own = [&](const std::string& order, const char* how) {
    const Order* o = order_of(order);
    if (o && o->tenant != p.tenant)
      fail("another_scopes_reconcile_never_examines", "the reconcile of account " +
                                                          tenants[static_cast<size_t>(p.tenant)]->name + " " + how +
                                                          " " + order + " of account " +
                                                          tenants[static_cast<size_t>(o->tenant)]->name);
  };
  for (const auto& [order, why] : rep.errors) {
    say("reconcile " + order + " failed: " + why);
    own(order, "failed on");
  }
  for (const PaymentResult& r : rep.results) {
    own(r.order_id, "settled");
    if (r.error.find("would get that answer again") != std::string::npos) ++tally.reconcile_left_final_answer;
    say("reconcile " + r.order_id + " -> " + outcome_name(r.outcome) + " " + r.error);
    if (const auto it = order_by_id.find(r.order_id); it != order_by_id.end()) {
      outcomes[r.order_id].push_back(r.outcome);
      if (!r.ledger_error.empty()) flagged[r.order_id] = true;
      check_provider_id(r.order_id, state_of(r.outcome), r.provider_payment_id, "a reconcile result");
    }
  }
}

void World::query(Process& p, const Order& o) {
  ++tally.queries;
  p.in_settler = true;
  p.order = nullptr;
  say("p" + std::to_string(p.id) + " queries " + o.id);
  try {
    const PaymentResult r = p.settler->query(o.id);
    p.in_settler = false;
    if (webhooks) check_rows();
    if (r.error.find("proves nothing") != std::string::npos) ++tally.not_found_unproven;
    check_result(o, r, 0);
    if ((r.outcome == Outcome::succeeded || r.outcome == Outcome::failed) && r.ledger_error.empty())
      answered.insert(o.id);
  } catch (const Error& e) {
    p.in_settler = false;
    // An order whose create never committed is not in the ledger.
    if (e.code() != Errc::PAY_ENOTFOUND) fail("unexpected_call_error", std::string("query: ") + e.what());
  } catch (const LedgerError&) {
    p.in_settler = false;  // the store failed: nothing was settled
  }
}

// pay_query of a settled payment: the outcome never changes; the money
// moves only forward and only as the provider's truth allows (check_result,
// check_rows).
void World::query_settled(Process& p, const Order& o) {
  std::unique_ptr<Ledger> holder;
  const std::optional<PaymentRow> before = ledger_for_checks(holder).get(o.id);
  if (!before || (before->state != PaymentState::succeeded && before->state != PaymentState::failed)) return;
  ++tally.settled_queries;
  query(p, o);
  const std::optional<PaymentRow> after = ledger_for_checks(holder).get(o.id);
  if (!after) return;  // pruned meanwhile
  if (after->state != before->state)
    fail("settled_stays_settled", o.id + " was " + state_name(before->state) + " and a query made it " +
                                      state_name(after->state));
  tally.money_refreshed += after->money_state != before->money_state;
}

// A caller refunds parts of a settled payment: new refunds, the same one
// asked again (its ref and amount), and now and then the same ref with
// another amount (a mismatch, nothing sent). A crash ends its process; the
// restarted one asks for the refund again, as the docs tell callers to.
void World::refund_some(std::unique_ptr<Process>& proc, const Order& o) {
  // A payment POSTed to a path of its own that names an account (a
  // simulation's device, no Stripe or Checkout.com feature) cannot be
  // refunded: the operation's path is the profile's and names no account,
  // so its refund would reach a store where the payment does not exist.
  if (!o.path.empty()) return;
  const int n = static_cast<int>(ops_rng.range(1, 3));
  std::vector<std::pair<std::string, int64_t>> asked;  // ref -> amount as asked
  for (int i = 0; i < n + 1; ++i) {
    std::string ref;
    int64_t amount = -1;
    bool other_amount = false;
    if (i == n) {
      if (asked.empty() || !ops_rng.chance(40)) break;
      // The same refund again, or (a caller's bug) the same ref with another amount.
      const auto& again = asked[static_cast<size_t>(ops_rng.range(0, static_cast<int64_t>(asked.size()) - 1))];
      ref = again.first;
      amount = again.second;
      if (ops_rng.chance(25)) {
        amount = amount < 0 ? 1 : amount + 1;
        other_amount = true;
      }
    } else {
      ref = "r" + std::to_string(i + 1);
      amount = ops_rng.chance(30) ? -1 : ops_rng.range(1, 40000);
      asked.emplace_back(ref, amount);
    }
    OperationRequest req;
    req.order_id = o.id;
    req.kind = OperationKind::refund;
    req.ref = ref;
    req.amount = amount;
    const std::string row_id = operation_row_id(o.id, OperationKind::refund, ref);
    // The caller's own field naming the refund where the provider model
    // reads an order (metadata): the model then counts the money each
    // refund moved, as it counts each order's charges.
    {
      std::string body = json_quote(row_id);
      const std::string& path = provider->wire().order_path;
      size_t end = path.size();
      for (;;) {
        const size_t dot = path.rfind('.', end - 1);
        const size_t start = dot == std::string::npos ? 0 : dot + 1;
        body = "{" + json_quote(path.substr(start, end - start)) + ":" + body + "}";
        if (dot == std::string::npos) break;
        end = dot;
      }
      req.body = body;
    }
    op_rows.push_back(row_id);
    for (int round = 0; round < 6; ++round) {
      if (!proc) proc = std::make_unique<Process>(*this, next_process++, 0, false, o.tenant);
      Process& p = *proc;
      ++tally.operations;
      p.order = nullptr;
      p.op_row = row_id;
      p.run_start = clock.now_ms();
      p.run_deadline = p.run_start + config.retry.deadline_ms;
      p.run_attempts = 0;
      p.run_sends = 0;
      say("p" + std::to_string(p.id) + " refunds " + row_id + " (" + (amount < 0 ? std::string("the rest") : std::to_string(amount)) + ")");
      try {
        const PaymentResult r = p.operations->submit(req);
        p.op_row.clear();
        if (other_amount) fail("operation_mismatch_refused", row_id + " asked with another amount and got " + outcome_name(r.outcome));
        check_operation_rows();
        if (r.outcome == Outcome::unknown || r.outcome == Outcome::in_progress) {
          ++tally.operations_unknown;
          clock.advance(r.outcome == Outcome::in_progress ? lease_ms() + 1 : ops_rng.range(0, 3000));
          // An answer lost after the provider accepted the refund leaves the
          // row without the refund's id: its lookup must find it by the key
          // (Checkout.com: the listed action whose reference is the key).
          bool no_id = false;
          {
            std::unique_ptr<Ledger> holder;
            const auto row = ledger_for_checks(holder).get(row_id);
            no_id = row && row->provider_payment_id.empty();
          }
          if (no_id)
            for (const ProviderModel::Refund& made : provider->refunds())
              if (made.row == row_id) {
                ++tally.operations_lost_answer;
                break;
              }
          tally.operations_unknown_without_id += no_id;
          // As the docs say: query the operation (its own lookup), or leave
          // it to reconcile, or ask again with the same ref.
          const int64_t next = ops_rng.range(0, 9);
          bool settled = false;
          if (next < 4) {
            settled = query_operation(p, row_id);
          } else if (next < 6) {
            reconcile(p);
            check_operation_rows();
            std::unique_ptr<Ledger> holder;
            const auto row = ledger_for_checks(holder).get(row_id);
            settled = row && (row->state == PaymentState::succeeded || row->state == PaymentState::failed);
          }
          if (settled && no_id) {
            std::unique_ptr<Ledger> holder;
            const auto row = ledger_for_checks(holder).get(row_id);
            tally.operations_id_learned_by_key += row && !row->provider_payment_id.empty();
          }
          if (settled) {
            ++tally.operations_settled_by_lookup;
            query_settled_operation(p, row_id);
            break;
          }
          clock.advance(ops_rng.range(0, 5000));
          continue;
        }
        tally.operations_succeeded += r.outcome == Outcome::succeeded;
        query_settled_operation(p, row_id);
        break;
      } catch (const Crash&) {
        proc.reset();
        clock.advance(ops_rng.chance(50) ? lease_ms() + 1 : ops_rng.range(0, 1000));
      } catch (const Error& e) {
        p.op_row.clear();
        if (p.run_sends > 0) fail("operation_error_sends_nothing", row_id + ": " + e.what());
        if (e.code() == Errc::PAY_EMISMATCH && other_amount) {
          ++tally.operations_mismatched;
        } else if (e.code() == Errc::PAY_EINVALID || e.code() == Errc::PAY_ENOTFOUND) {
          ++tally.operations_refused;  // the guard (nothing left, not paid), or a payment pruned
        } else {
          fail("unexpected_operation_error", row_id + ": " + e.what());
        }
        break;
      } catch (const LedgerError&) {
        p.op_row.clear();
        clock.advance(ops_rng.range(0, 2000));
      }
    }
    if (proc) proc->op_row.clear();
  }
  refund_elsewhere(o);
}

// The merchant refunds the payment elsewhere too (its dashboard): no key
// or row of the client's, an amount within what is left of the payment,
// approved or declined, now or later. After the caller's own refunds of
// it, none of which is sent again (a query or reconcile never re-sends
// one), so none of them meets a provider that would refuse more than is
// left. Only its notifications tell of it: they must land on no row of
// the client's. In webhook schedules only, from their own stream.
void World::refund_elsewhere(const Order& o) {
  if (!webhooks || wh_elsewhere_percent == 0 || !opwh.chance(wh_elsewhere_percent)) return;
  const auto charged = provider->charged_id.find(o.id);
  if (charged == provider->charged_id.end()) return;
  std::string store;
  for (const ProviderModel::Payment& p : provider->payments())
    if (p.id == charged->second && p.order_id == o.id) store = p.store;
  const int64_t left = provider->left_to_refund(store, charged->second);
  if (left <= 0) return;
  const int64_t amount = opwh.range(1, left);
  const bool approved = opwh.chance(70);
  const int64_t at = clock.now_ms() + (opwh.chance(50) ? 0 : opwh.range(1, 600000));
  if (!provider->refund_elsewhere(store, charged->second, amount, approved, at, clock.now_ms())) return;
  ++tally.refunds_elsewhere;
  say("the merchant refunds " + std::to_string(amount) + " of " + charged->second + " (" + o.id +
      ") elsewhere: " + provider->refunds().back().id + (approved ? ", approved" : ", declined") +
      (at > clock.now_ms() ? " at " + std::to_string(at) : ""));
}

bool World::query_operation(Process& p, const std::string& row_id) {
  ++tally.operation_queries;
  p.in_settler = true;
  p.order = nullptr;
  p.op_query = row_id;
  say("p" + std::to_string(p.id) + " queries " + row_id);
  bool settled = false;
  try {
    const PaymentResult r = p.settler->query(row_id);
    say("result " + row_id + " " + outcome_name(r.outcome) + " " + r.error);
    settled = r.outcome == Outcome::succeeded || r.outcome == Outcome::failed;
    tally.operations_succeeded += r.outcome == Outcome::succeeded;
    tally.operations_failed += r.outcome == Outcome::failed;
  } catch (const Error& e) {
    // A row pruned meanwhile is not in the ledger.
    if (e.code() != Errc::PAY_ENOTFOUND) fail("unexpected_call_error", "query " + row_id + ": " + e.what());
  } catch (const LedgerError&) {
    // The store failed: nothing was settled.
  }
  p.in_settler = false;
  p.op_query.clear();
  check_operation_rows();
  return settled;
}

// Sometimes the caller asks again, later, about a settled operation: its
// stored outcome, which never changes (check_operation_rows).
void World::query_settled_operation(Process& p, const std::string& row_id) {
  if (!ops_rng.chance(25)) return;
  clock.advance(ops_rng.range(0, 600000));
  query_operation(p, row_id);
}

// Every operation row as it stands: once settled, its outcome never
// changes; its payment's money moves only forward (check_money), and says
// refunded only where a refund of it moved money at the provider.
void World::check_operation_rows() {
  if (op_rows.empty()) return;
  std::unique_ptr<Ledger> holder;
  Ledger& l = ledger_for_checks(holder);
  std::set<std::string> payments;
  // What the provider did for each row, and for each payment: the refunds
  // that moved money (decided approved), those still open.
  std::map<std::string, int> moved, open;
  std::map<std::pair<std::string, std::string>, int64_t> given;  // (store, payment) -> refunded
  for (const ProviderModel::Refund& r : provider->refunds()) {
    if (!r.decided) ++open[r.row];
    else if (r.approved) {
      ++moved[r.row];
      given[{r.store, r.payment_id}] += r.amount;
    }
  }
  // Refunds never give back more than the payment took (all of them:
  // the merchant's elsewhere only ever take what is left).
  for (const ProviderModel::Payment& p : provider->payments())
    if (const auto g = given.find({p.store, p.id}); g != given.end() && p.amount > 0 && g->second > p.amount)
      fail("refunds_never_above_captured", p.order_id + "'s payment " + p.id + " took " + std::to_string(p.amount) +
                                               " and its refunds gave back " + std::to_string(g->second));
  for (const std::string& id : std::set<std::string>(op_rows.begin(), op_rows.end())) {
    const auto row = l.get(id);
    if (!row) continue;
    payments.insert(row->parent_order_id);
    // A row names only its own refund (the id its answer, lookup or event gave).
    if (!row->provider_payment_id.empty()) {
      const ProviderModel::Refund* r = nullptr;
      for (const ProviderModel::Refund& x : provider->refunds())
        if (x.id == row->provider_payment_id) r = &x;
      if (!r || r->row != id)
        fail("operation_names_only_its_own_operation",
             id + " (" + state_name(row->state) + ") holds " + row->provider_payment_id + ", " +
                 (!r ? std::string("no refund the provider made")
                     : r->row.empty() ? std::string("a refund made elsewhere") : "the refund of " + r->row));
    }
    // Judged against the provider's truth as it is settled, so that a
    // wrong row is caught before a prune takes it: SUCCEEDED only once its
    // refund moved money, FAILED only if none did or still may.
    if (row->state == PaymentState::succeeded && moved[id] != 1)
      fail("operation_agrees_with_provider", id + " is SUCCEEDED (" + row->detail + ") but the provider moved money for it " +
                                                 std::to_string(moved[id]) + " times");
    if (row->state == PaymentState::failed && (moved[id] > 0 || open[id] > 0))
      fail("operation_agrees_with_provider", id + " is FAILED (" + row->detail + ") but the provider " +
                                                 (moved[id] > 0 ? "moved money for it" : "may still move money for it"));
    if (row->state != PaymentState::succeeded && row->state != PaymentState::failed) {
      if (const auto was = op_settled.find(id); was != op_settled.end())
        fail("settled_operation_never_changes", id + " was " + state_name(was->second) + " and is now " +
                                                    state_name(row->state));
      continue;
    }
    const auto [was, first] = op_settled.emplace(id, row->state);
    if (!first && was->second != row->state)
      fail("settled_operation_never_changes", id + " was " + state_name(was->second) + " and is now " +
                                                  state_name(row->state));
  }
  for (const std::string& order : payments)
    if (const auto row = l.get(order))
      check_money(order, row->money_state, row->provider_payment_id, "the ledger row", money_row_seen);
}

std::optional<PaymentRow> World::operation_of_claim(Ledger& l, const std::string& claim) {
  if (claim.empty()) return std::nullopt;
  for (const std::string& id : std::set<std::string>(op_rows.begin(), op_rows.end()))
    if (auto row = l.get(id); row && row->state == PaymentState::in_flight && row->lease_owner == claim) return row;
  return std::nullopt;
}

void World::check_operations() {
  if (op_rows.empty()) return;
  check_operation_rows();
  std::unique_ptr<Ledger> holder;
  Ledger& l = ledger_for_checks(holder);
  std::map<std::string, int64_t> spent;  // payment -> its refunds the ledger does not know failed
  std::set<std::string> seen;
  for (const std::string& id : op_rows) {
    if (!seen.insert(id).second) continue;
    const int moved = provider->charges.count(id) ? provider->charges[id] : 0;
    if (moved > 1) fail("operation_moves_money_once", id + " moved money " + std::to_string(moved) + " times");
    const auto row = l.get(id);
    if (!row) {
      if (moved > 0 && !pruned.count(id)) fail("operation_committed_before_send", id + " moved money but has no row");
      continue;
    }
    if (row->state == PaymentState::succeeded && moved != 1)
      fail("operation_agrees_with_provider", id + " SUCCEEDED but moved money " + std::to_string(moved) + " times");
    if (row->state == PaymentState::failed && moved != 0)
      fail("operation_agrees_with_provider", id + " FAILED but moved money");
    if (row->state != PaymentState::failed) spent[row->parent_order_id] += std::max<int64_t>(row->amount, 0);
  }
  for (const auto& [order, sum] : spent) {
    const auto parent = l.get(order);
    if (parent && parent->amount >= 0 && sum > parent->amount)
      fail("refunds_within_what_was_paid", order + " has refunds of " + std::to_string(sum) + " counted against " +
                                               std::to_string(parent->amount));
  }
}

void World::maybe_prune() {
  if (prune_percent == 0 || !ext.chance(prune_percent)) return;
  ++tally.prunes;
  std::unique_ptr<Ledger> holder;
  Ledger& ledger = ledger_for_checks(holder);
  // Aggressive: everything settled up to a moment ago, or up to now.
  const int64_t cutoff = clock.unix_ms() + 1 - (ext.chance(50) ? 0 : ext.range(0, 5000));
  if (webhooks) check_rows();
  std::map<std::string, PaymentRow> before;
  for (const Order& o : orders)
    if (auto row = ledger.get(o.id)) before.emplace(o.id, *row);
  // A payment goes only with its operations, and only when every one of
  // them is settled before the cutoff too (Ledger::prune_settled).
  std::map<std::string, bool> family_ready;  // payment -> every operation settled before the cutoff
  for (const std::string& id : std::set<std::string>(op_rows.begin(), op_rows.end())) {
    if (auto row = ledger.get(id)) {
      before.emplace(id, *row);
      const bool ready = (row->state == PaymentState::succeeded || row->state == PaymentState::failed) &&
                         row->updated_at < cutoff;
      auto [at, fresh] = family_ready.emplace(row->parent_order_id, ready);
      if (!fresh) at->second = at->second && ready;
    }
  }
  const int64_t n = ledger.prune_settled(cutoff);
  int64_t gone = 0;
  for (const auto& [id, row] : before) {
    const auto now = ledger.get(id);
    const bool settled = row.state == PaymentState::succeeded || row.state == PaymentState::failed;
    if (!now) {
      if (!settled)
        fail("prune_keeps_open_rows", id + " was " + state_name(row.state) + " and prune_settled deleted it");
      if (row.updated_at >= cutoff)
        fail("prune_keeps_open_rows", id + " was settled after the cutoff and prune_settled deleted it");
      ++gone;
      pruned.insert(id);
      say("prune: " + id + " (" + state_name(row.state) + ") is gone: it is never submitted again");
    } else if (settled && row.updated_at < cutoff) {
      const std::string& payment = row.operation == OperationKind::create ? id : row.parent_order_id;
      const auto family = family_ready.find(payment);
      const auto parent = before.find(payment);
      const bool parent_ready = parent != before.end() &&
                                (parent->second.state == PaymentState::succeeded ||
                                 parent->second.state == PaymentState::failed) &&
                                parent->second.updated_at < cutoff;
      if ((family == family_ready.end() || family->second) && parent_ready)
        fail("prune_removes_what_it_says", id + " is settled before the cutoff and prune_settled kept it");
    } else if (now->state != row.state) {
      fail("prune_keeps_open_rows", id + " changed from " + state_name(row.state) + " to " + state_name(now->state));
    }
  }
  if (n != gone)
    fail("prune_removes_what_it_says", "prune_settled said " + std::to_string(n) + " rows, " + std::to_string(gone) +
                                           " are gone");
  tally.rows_pruned += static_cast<uint64_t>(gone);
}

void World::other_scope_acts(const Order& o) {
  if (tenants.size() < 2 || pruned.count(o.id)) return;
  const int64_t t0 = clock.now_ms();
  const int other = static_cast<int>((static_cast<size_t>(o.tenant) + 1 +
                                      static_cast<size_t>(tenant_rng.range(0, static_cast<int64_t>(tenants.size()) - 2))) %
                                     tenants.size());
  Process q(*this, next_process++, 1, false, other);
  const int64_t what = tenant_rng.range(0, 2);
  const std::string who = "the client of account " + tenants[static_cast<size_t>(other)]->name;
  if (what == 2) {
    ++tally.other_scope_reconciles;
    say(who + " reconciles");
    reconcile(q);
  } else {
    std::unique_ptr<Ledger> holder;
    const bool exists = ledger_for_checks(holder).get(o.id).has_value();
    // Order ids are unique across the accounts: another account's client
    // never makes an order that its own account has not.
    if (what == 0 && !exists) return;
    ++tally.other_scope_calls;
    say(who + (what == 0 ? " submits " : " queries ") + o.id + " of account " +
        tenants[static_cast<size_t>(o.tenant)]->name);
    std::string answered;
    try {
      if (what == 0) {
        answered = outcome_name(submit(q, o, o.body).outcome);
      } else {
        q.in_settler = true;
        q.order = nullptr;
        answered = outcome_name(q.settler->query(o.id).outcome);
      }
    } catch (const Error& e) {
      if (e.code() != Errc::PAY_EMISMATCH && !(e.code() == Errc::PAY_ENOTFOUND && what == 1 && !exists))
        fail("another_scope_refused", who + ": " + e.what());
    } catch (const LedgerError&) {
      // The store failed first: nothing was read or sent.
    }
    q.in_settler = false;
    if (!answered.empty())
      fail("another_scope_refused", who + (what == 0 ? " submitted " : " queried ") + o.id + " of account " +
                                        tenants[static_cast<size_t>(o.tenant)]->name + " and got " + answered +
                                        " instead of PAY_EMISMATCH");
  }
  excused_ms += clock.now_ms() - t0;
}

void World::run_blocking() {
  // One client per account; each order is submitted by its account's.
  std::vector<std::unique_ptr<Process>> procs(tenants.size());
  for (const Order& o : orders) {
    std::unique_ptr<Process>& proc = procs[static_cast<size_t>(o.tenant)];
    bool done = false;
    bool queried = false;  // the last UNKNOWN was queried: the next submit is the resubmit after a query
    for (int round = 0; round < 12 && !done && !pruned.count(o.id); ++round) {
      if (!proc) proc = std::make_unique<Process>(*this, next_process++, 0, false, o.tenant);
      PaymentResult r;
      tally.resubmits_after_query += queried;
      queried = false;
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
          Process q(*this, next_process++, 1, false, o.tenant);
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
      deliver_due(false, true);
      // Now and then another account's client acts on the order.
      if (other_scope_percent > 0 && tenant_rng.chance(other_scope_percent)) other_scope_acts(o);
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
          if (done && r.outcome == Outcome::succeeded && ops_percent > 0 && ops_rng.chance(ops_percent))
            refund_some(proc, o);
          if (!proc) break;
          // Sometimes the caller asks again later where the money is.
          if (done && refresh_rng.chance(30)) {
            clock.advance(refresh_rng.range(0, 600000));
            deliver_due(false, true);
            query_settled(*proc, o);
          }
          break;
        case Outcome::unknown:
          if (rng.chance(25)) {
            clock.advance(rng.range(0, 3000));
            reconcile(*proc);  // settle between runs
          }
          if (rng.chance(30)) {
            done = true;  // the caller leaves it for reconciliation
          } else {
            clock.advance(rng.range(0, 2000));
            // As the docs tell callers: query an UNKNOWN payment, then
            // submit it again (the same order: its stored key and bytes).
            if (query_percent > 0 && ext.chance(query_percent)) {
              query(*proc, o);
              queried = true;
              clock.advance(ext.range(0, 2000));
            }
          }
          break;
        case Outcome::in_progress:
          clock.advance(lease_ms() + 1);
          break;
      }
      maybe_prune();
    }
  }
}

void World::run_concurrent() {
  // Each account's client runs its concurrent engines and takes every open
  // order of its account at once; between turns the world may stall them
  // past their leases, let another worker race them, hand a client a second
  // run of an order, let another account's client act on an order, run the
  // token fetches the engines handed over, or kill a process.
  std::vector<std::unique_ptr<Process>> procs(tenants.size());
  auto left = [&] {
    for (const Order& o : orders)
      if (open_order(o)) return true;
    return false;
  };
  auto live = [&] {
    std::vector<Process*> v;
    for (auto& p : procs)
      if (p && !p->dead()) v.push_back(p.get());
    return v;
  };
  for (int round = 0; round < 8 && left(); ++round) {
    for (size_t t = 0; t < procs.size(); ++t) {
      bool any = false;
      for (const Order& o : orders) any = any || (o.tenant == static_cast<int>(t) && open_order(o));
      if (!procs[t] && any) procs[t] = std::make_unique<Process>(*this, next_process++, 0, true, static_cast<int>(t));
    }
    struct Call {
      const Order* order;
      int sends_before;
      bool alone_at_start;  // no other call on the order was in progress
      int started;          // calls_started once this one was
      int64_t enqueued_at;  // monotonic
      int64_t excused_at;   // excused_ms then
      bool done = false;
    };
    auto calls = std::make_shared<std::vector<Call>>();
    auto enqueue = [&](Process& p, const Order& o, size_t engine) {
      auto job = std::make_unique<MultiEngine::Job>();
      job->order_id = o.id;
      job->body = o.body;
      job->headers = o.headers;
      job->path = o.path;
      const size_t idx = calls->size();
      calls->push_back(Call{&o, sends_written[o.id], active_calls[o.id] == 0, ++calls_started[o.id], clock.now_ms(),
                            excused_ms});
      ++active_calls[o.id];
      job->done = [this, calls, idx](std::exception_ptr e, PaymentResult r) {
        if (draining) return;
        Call& c = (*calls)[idx];
        c.done = true;
        --active_calls[c.order->id];
        // No payment waits on another's business: each is answered by its
        // deadline, whatever the token endpoint does (its fetches run
        // elsewhere), but for the time the world took from the engines.
        const int64_t late =
            clock.now_ms() - c.enqueued_at - (excused_ms - c.excused_at) - config.retry.deadline_ms;
        tally.latest_answer_ms = std::max<int64_t>(tally.latest_answer_ms, late);
        if (late > kAnswerBoundMs)
          fail("answered_by_its_deadline", c.order->id + " was answered " + std::to_string(late) +
                                               " ms after its deadline (the engine's own time)");
        const int sends = sends_written[c.order->id] - c.sends_before;
        // The sends on the order while this call lived were its own only if
        // no other call on the order overlapped it (a racer, a second run).
        const bool alone =
            c.alone_at_start && calls_started[c.order->id] == c.started && active_calls[c.order->id] == 0;
        if (e) {
          try {
            std::rethrow_exception(e);
          } catch (const Error& err) {
            check_error(*c.order, err.what(), sends, alone);
            // Every call here gives valid input: an error code (a resumed run
            // "below min_attempt_ms", say) tells the caller something false.
            fail("unexpected_call_error", std::string(err.what()));
          } catch (const LedgerError& err) {
            check_error(*c.order, err.what(), sends, alone);
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
      p.multis[engine]->enqueue(std::move(one));
    };
    for (const Order& o : orders)
      if (open_order(o)) {
        Process& p = *procs[static_cast<size_t>(o.tenant)];
        enqueue(p, o, p.engine_of(o.id));
      }
    auto unanswered = [&] {
      size_t n = 0;
      for (Process* p : live()) n += p->unanswered();
      return n;
    };
    // A dead process's payments are never answered: it goes to the
    // graveyard, drained after the checks.
    auto bury = [&](std::unique_ptr<Process>& p) {
      p->kill();
      graveyard.push_back(std::move(p));
    };
    bool crashed = false;
    for (int turns = 0; turns < 100000 && unanswered() > 0; ++turns) {
      const bool turned = turn_engines(live());
      rethrow_broken();
      // Notifications between the engines' turns.
      deliver_due(false, true);
      for (auto& p : procs)
        if (p && p->dead()) {
          crashed = true;
          bury(p);
        }
      if (crashed && live().empty()) break;
      if (!turned) continue;  // time moved to the next engine that is due
      // The token fetches the engines handed over, each once its answer is due.
      for (Process* p : live()) p->runner.run_due();
      if (rng.chance(10)) {
        // A stall (GC pause, frozen VM): every lease may run out meanwhile.
        ++tally.stalls;
        const int64_t t0 = clock.now_ms();
        clock.advance(rng.chance(50) ? lease_ms() + 1 : rng.range(1, 3000));
        excused_ms += clock.now_ms() - t0;
        if (rng.chance(40)) {
          // A second run of one order in the same client: only its own
          // fencing token tells the two runs apart. With several engines it
          // may land on another one (started from a done callback, a
          // payment stays on the callback's engine).
          ++tally.same_client_runs;
          const Order& o = orders[static_cast<size_t>(rng.range(0, static_cast<int64_t>(orders.size()) - 1))];
          if (Process* p = procs[static_cast<size_t>(o.tenant)].get(); p && !pruned.count(o.id))
            enqueue(*p, o, engine_count == 1 ? 0 : static_cast<size_t>(ext.range(0, engine_count - 1)));
        } else if (race_percent > 0 && rng.chance(race_percent)) {
          ++tally.races;
          const Order& o = orders[static_cast<size_t>(rng.range(0, static_cast<int64_t>(orders.size()) - 1))];
          Process b(*this, next_process++, 1, false, o.tenant);
          if (pruned.count(o.id)) continue;
          say("race: p" + std::to_string(b.id) + " submits " + o.id + " between turns");
          const int64_t t1 = clock.now_ms();
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
          excused_ms += clock.now_ms() - t1;
        }
      }
      if (other_scope_percent > 0 && tenant_rng.chance(other_scope_percent / 10)) {
        const Order& o = orders[static_cast<size_t>(tenant_rng.range(0, static_cast<int64_t>(orders.size()) - 1))];
        other_scope_acts(o);
      }
      if (crash_percent > 0 && crashes < 3 && rng.chance(crash_percent / 4)) {
        std::vector<Process*> alive = live();
        if (alive.empty()) continue;
        Process* victim = alive.size() == 1 ? alive[0]
                                            : alive[static_cast<size_t>(tenant_rng.range(
                                                  0, static_cast<int64_t>(alive.size()) - 1))];
        ++crashes;
        ++tally.crashes;
        say("p" + std::to_string(victim->id) + " CRASH between turns");
        crashed = true;
        for (auto& p : procs)
          if (p.get() == victim) bury(p);
        if (live().empty()) break;
      }
    }
    if (crashed) {
      clock.advance(rng.chance(70) ? lease_ms() + 1 : rng.range(0, 1000));
      continue;
    }
    if (unanswered() > 0) fail("liveness", "the concurrent engine did not answer every payment");
    // Refunds of the payments answered SUCCEEDED, between rounds, by a
    // caller of the account (the blocking operation flow, which the
    // concurrent engines do not run; one caller per account, racing no
    // one); their UNKNOWNs are queried, reconciled (here too) or asked
    // again. A quarter as often as the blocking driver's, whose schedules have
    // half as many orders: the CI budget stays what it was.
    if (ops_percent > 0)
      for (const Order& o : orders)
        if (!outcomes[o.id].empty() && outcomes[o.id].back() == Outcome::succeeded && !pruned.count(o.id) &&
            refunded_orders.insert(o.id).second && ops_rng.chance(ops_percent / 4)) {
          std::unique_ptr<Process>& caller = refund_callers[o.tenant];
          if (!caller) caller = std::make_unique<Process>(*this, next_process++, 1, false, o.tenant);
          refund_some(caller, o);
        }
    if (rng.chance(30)) {
      clock.advance(rng.range(0, 3000));
      for (Process* p : live()) reconcile(*p);
    }
    clock.advance(rng.range(0, 2000));
    // Callers query what is still UNKNOWN before they submit it again.
    if (query_percent > 0)
      for (const Order& o : orders)
        if (open_order(o) && !outcomes[o.id].empty() && outcomes[o.id].back() == Outcome::unknown &&
            ext.chance(query_percent)) {
          if (Process* p = procs[static_cast<size_t>(o.tenant)].get()) query(*p, o);
          tally.resubmits_after_query += open_order(o);
        }
    // And ask again about settled ones whose money may still move.
    if (refresh_rng.chance(50))
      for (const Order& o : orders)
        if (!outcomes[o.id].empty() && outcomes[o.id].back() != Outcome::unknown &&
            outcomes[o.id].back() != Outcome::in_progress && refresh_rng.chance(30))
          if (Process* p = procs[static_cast<size_t>(o.tenant)].get()) query_settled(*p, o);
    maybe_prune();
    if (rng.chance(20)) break;  // the rest is left for reconciliation
  }
  procs.clear();
  refund_callers.clear();
}

void World::check_final() {
  provider->finish_all();
  check_rows();
  check_operations();
  if (webhooks) check_event_entries();
  // Every request is signed (by the built-in signer, or the request hook);
  // a signing provider that refused one saw a request (a lookup, say) sent
  // unsigned, or signed wrongly.
  if (provider->rejected_unsigned > 0)
    fail("every_request_signed", std::to_string(provider->rejected_unsigned) + " requests reached the provider unsigned (" +
                                     provider->rejections.front() + ")");
  if (provider->refunds_of_no_payment > 0)
    fail("operation_names_its_payment", std::to_string(provider->refunds_of_no_payment) +
                                            " refunds named no payment of the store they reached");
  if (provider->wrong_encodings > 0)
    fail("every_body_in_the_providers_encoding",
         std::to_string(provider->wrong_encodings) + " creates reached the provider in an encoding it refuses");
  for (const ProviderModel::Payment& p : provider->payments()) {
    if (!p.charged) continue;
    const auto f = provider->flows.find(p.order_id);
    const Phase first = f == provider->flows.end() ? provider->wire().at_once : f->second.first;
    tally.payments_waiting += first == Phase::waits;
    tally.payments_held += first == Phase::held;
    tally.customers_paid += first == Phase::waits && p.phase != Phase::waits && p.phase != Phase::abandoned;
    tally.customers_abandoned += p.phase == Phase::abandoned;
    tally.holds_captured += first == Phase::held && p.phase == Phase::captured;
    tally.holds_voided += p.phase == Phase::voided;
  }
  std::unique_ptr<Ledger> holder;
  Ledger& ledger = ledger_for_checks(holder);
  for (const Order& o : orders) {
    const int charged = provider->charges.count(o.id) ? provider->charges[o.id] : 0;
    tally.charged += charged > 0;
    if (charged > 1) fail("at_most_one_charge", o.id + " charged " + std::to_string(charged) + " times");
    // (FAILED is the truth once every payment made for the order failed
    // for good: abandoned by its customer, or voided.)
    const bool failed_for_good = money_failed_for_good(o.id);
    for (Outcome out : outcomes[o.id])
      if (out == Outcome::failed && charged > 0 && !failed_for_good)
        fail("no_failed_when_processed", o.id + " reported FAILED but was charged");
    for (Outcome out : outcomes[o.id])
      if (out == Outcome::succeeded && charged != 1) fail("ledger_agrees_with_provider", o.id + " SUCCEEDED but not charged");
    auto row = ledger.get(o.id);
    if (!row) continue;  // never created, or pruned
    check_provider_id(o.id, row->state, row->provider_payment_id, "the ledger row");
    if (row->state == PaymentState::succeeded && charged != 1)
      fail("ledger_agrees_with_provider", o.id + " SUCCEEDED in the ledger, charged " + std::to_string(charged));
    if (row->state == PaymentState::failed && charged != 0 && !failed_for_good)
      fail("no_failed_when_processed", o.id + " FAILED in the ledger but charged");
    check_money(o.id, row->money_state, row->provider_payment_id, "the ledger row", money_row_seen);
    tally.rows_awaiting += row->money_state == MoneyState::awaiting_customer;
    tally.rows_authorized += row->money_state == MoneyState::authorized;
    tally.rows_paid += row->money_state == MoneyState::paid;
    tally.rows_money_failed += row->money_state == MoneyState::failed;
    if (auto s = first_seen.find(o.id); s != first_seen.end() && !s->second.key.empty() &&
                                        s->second.key != row->idempotency_key)
      fail("same_key_and_bytes", o.id + " ledger key " + row->idempotency_key + " but sent with " + s->second.key);
    // Every request that may have reached the provider is in the history
    // (a dead run's last one as an "unrecorded" entry once taken over), or
    // its call's result said it was not durably recorded.
    // A lookup recorded as proof that no payment exists was answered while
    // none existed: the grace covers the provider's read lag and its
    // processing (docs/design.md, "Not found" as proof).
    if (auto hid = lookups_that_hid.find(o.id); hid != lookups_that_hid.end())
      for (const AttemptEntry& a : ledger.attempts(o.id))
        if (a.kind == "lookup" && a.verdict == kLookupAbsent)
          for (int64_t t : hid->second)
            if (t >= a.started_at && t <= a.ended_at)
              fail("absence_proved_only_when_true",
                   o.id + ": the lookup of " + std::to_string(a.started_at) +
                       " was recorded as proof that no payment exists; the provider held one it had not shown yet");
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

// ---- webhooks: the provider's notifications, delivered ------------------------------

void World::draw_webhooks() {
  // Built-in providers that notify: 15 % of their schedules; 8 % of
  // Mollie's (each hint costs a lookup); WeChat Pay and Alipay sign with RSA
  // (about a millisecond a notification, 40 times the rest of a schedule),
  // so 0.5 % of theirs.
  if (opt.webhooks == 0 || !opt.sabotage.empty() || profile_name == "random" || !sends_webhooks(profile_name)) return;
  const bool rsa = provider->wire().signs != Wire::Signs::none;
  if (rsa && opt.keys_dir.empty()) return;
  const int per_mille = rsa ? 5 : profile_name == "mollie" ? 80 : 150;
  if (opt.webhooks < 0 && wh.range(0, 999) >= per_mille) return;
  webhooks = true;
  ++tally.webhook_schedules;
  WebhookConfig& c = config.webhook;
  c.configured = true;
  c.notification_url = "https://merchant.test/payretry/webhooks";
  if (profile_name == "adyen") c.secrets = {"44782DEF547AAA06C910C43932B1EBC2ACF6BA0560C05A6A7550C48D9782D5F3"};
  else c.secrets = {"whsec_dst_" + std::to_string(seed % 7)};
  if (profile_name == "wechatpay_v3") {
    c.api_v3_key = "dst0api0v3key0for0notifications0";
    c.public_key_pem = test_pem(opt.keys_dir, "wechat_platform_pub.pem");
    c.public_key_id = kWechatPlatformSerial;
  }
  if (profile_name == "alipay") c.public_key_pem = test_pem(opt.keys_dir, "alipay_pub.pem");
  wh_keys.secret = profile_name == "adyen" ? std::string() : c.secrets.front();
  wh_keys.adyen_hex = profile_name == "adyen" ? c.secrets.front() : std::string();
  wh_keys.api_v3_key = c.api_v3_key;
  wh_keys.notification_url = c.notification_url;
  wh_keys.merchant_id = config.merchant_id;
  if (rsa) wh_keys.rsa = &ProviderKeys::load(opt.keys_dir);
  // The delivery's character: how soon, how often copied, forged, stale,
  // misrouted, replayed, and how often the store fails under it.
  wh_max_delay_ms = wh.chance(40) ? wh.range(100, 3000) : wh.chance(50) ? wh.range(3000, 60000) : wh.range(60000, 900000);
  wh_prompt_percent = static_cast<int>(wh.range(0, 60));
  wh_dup_percent = wh.chance(50) ? static_cast<int>(wh.range(10, 60)) : 0;
  wh_forged_percent = wh.chance(50) ? static_cast<int>(wh.range(10, 50)) : 0;
  wh_stale_percent = wh.chance(50) ? static_cast<int>(wh.range(10, 50)) : 0;
  wh_not_ours_percent = wh.chance(50) ? static_cast<int>(wh.range(10, 50)) : 0;
  wh_misroute_percent = wh.chance(50) ? static_cast<int>(wh.range(10, 60)) : 0;
  // (Not where the order id is the provider's own identity, WeChat Pay's
  // and Alipay's out_trade_no: no second payment can carry it.)
  wh_foreign_percent = profile_name != "mollie" && wh.chance(50) ? static_cast<int>(wh.range(20, 80)) : 0;
  if (provider->wire().identity == Wire::Identity::reference) wh_foreign_percent = 0;
  wh_replay_percent = wh.chance(40) ? static_cast<int>(wh.range(10, 50)) : 0;
  wh_fault_percent = wh.chance(50) ? 0 : static_cast<int>(wh.range(5, 40));
  // The refunds' own notifications, where the schedule refunds.
  if (ops_percent > 0) {
    wh_op_drop_percent = opwh.chance(30) ? static_cast<int>(opwh.range(10, 60)) : 0;
    wh_elsewhere_percent = opwh.chance(50) ? static_cast<int>(opwh.range(20, 80)) : 0;
  }
}

int64_t World::draw_delay() {
  // Some come at once (while the run that made the payment still holds it),
  // the others any time up to the schedule's longest delay.
  return wh.chance(wh_prompt_percent) ? wh.range(0, 50) : wh.range(0, wh_max_delay_ms);
}

void World::schedule(Note n, int64_t delay) {
  n.due = clock.now_ms() + delay;
  n.serial = ++wh_serial;
  outbox.push_back(std::move(n));
}

void World::collect_notes() {
  provider->complete_due(clock.now_ms());
  const std::string& pname = profile_name;
  // Adyen batches what it decided together; the others send one event each.
  std::vector<std::pair<int, std::vector<EventTruth>>> batches;
  while (decided_seen < provider->decided.size()) {
    const ProviderModel::Decided d = provider->decided[decided_seen++];
    const Order* o = order_of(d.order_id);
    if (!o || !notifies(pname, d.phase)) continue;
    EventTruth t{d.order_id, d.id, d.charged, d.identity, account_header_value(*o, profile.webhook.account_header),
                 d.phase};
    if (pname == "adyen" && !batches.empty() && batches.back().first == o->tenant && batches.back().second.size() < 3 &&
        wh.chance(50))
      batches.back().second.push_back(t);
    else
      batches.push_back({o->tenant, {t}});
  }
  for (const auto& [tenant, truths] : batches) {
    const EventTruth& t = truths.front();
    Note n;
    n.tenant = tenant;
    n.order = t.order_id;
    n.pid = t.provider_id;
    n.truths = truths;
    auto copy = [&](NoteKind kind, int64_t delay) {
      Note c = n;
      c.kind = kind;
      schedule(std::move(c), delay);
    };
    copy(NoteKind::genuine, draw_delay());
    if (wh_dup_percent > 0 && wh.chance(wh_dup_percent)) copy(NoteKind::duplicate, draw_delay());
    // Another account's endpoint gets it (one platform secret for all).
    if (tenants.size() > 1 && wh_misroute_percent > 0 && wh.chance(wh_misroute_percent)) {
      Note c = n;
      c.kind = NoteKind::misrouted;
      c.tenant = static_cast<int>((static_cast<size_t>(tenant) + 1 +
                                   static_cast<size_t>(wh.range(0, static_cast<int64_t>(tenants.size()) - 2))) %
                                  tenants.size());
      schedule(std::move(c), draw_delay());
    }
    auto variant = [&](NoteForm form, NoteKind kind, int percent) {
      if (percent == 0 || !has_form(pname, form) || !wh.chance(percent)) return;
      Note c = n;
      c.kind = kind;
      c.form = form;
      schedule(std::move(c), draw_delay());
    };
    variant(NoteForm::forged, NoteKind::forged, wh_forged_percent);
    variant(NoteForm::stale, NoteKind::stale, wh_stale_percent);
    // Another Alipay app's notification is told apart by the config's app
    // id, which a client signing through a hook does not name.
    if (pname != "alipay" || !config.auth.app_id.empty())
      variant(NoteForm::not_ours, NoteKind::not_ours, wh_not_ours_percent);
  }
  collect_operation_notes();
}

// The refunds' own notifications (issue 47), as the payments' are: late,
// twice, out of order (each copy's delay is drawn apart), to another
// account's endpoint, forged, stale, another connected account's; and now
// and then never (the endpoint does not take refund events, or the provider
// gave up). From their own stream: a schedule without refunds draws nothing.
void World::collect_operation_notes() {
  const std::string& pname = profile_name;
  while (refund_news_seen < provider->refund_news.size()) {
    const ProviderModel::RefundNews news = provider->refund_news[refund_news_seen++];
    const Order* o = order_of(news.order_id);
    if (!o) continue;
    OperationEventTruth t;
    t.refund_id = news.refund_id;
    t.payment_id = news.payment_id;
    t.order_id = news.order_id;
    t.idempotency_key = news.identity;
    t.account = account_header_value(*o, profile.webhook.account_header);
    t.accepted = news.accepted;
    t.decided = news.decided;
    t.approved = news.approved;
    t.amount = news.amount;
    if (!notifies_operation(pname, t)) continue;
    std::vector<OperationEventTruth> told{t};
    // Stripe may tell a decline as refund.updated (status failed) too.
    if (pname == "stripe" && !t.accepted && !t.approved && opwh.chance(50)) {
      told.push_back(t);
      told.back().as_update = true;
    }
    for (const OperationEventTruth& one : told) {
      if (wh_op_drop_percent > 0 && opwh.chance(wh_op_drop_percent)) {
        ++tally.op_notes_never_sent;
        continue;
      }
      Note n;
      n.tenant = o->tenant;
      n.order = o->id;
      n.pid = one.refund_id;
      n.op = one;
      auto delay = [&] { return opwh.chance(wh_prompt_percent) ? opwh.range(0, 50) : opwh.range(0, wh_max_delay_ms); };
      auto copy = [&](NoteKind kind, NoteForm form) {
        Note c = n;
        c.kind = kind;
        c.form = form;
        if (kind == NoteKind::misrouted)
          c.tenant = static_cast<int>((static_cast<size_t>(o->tenant) + 1 +
                                       static_cast<size_t>(opwh.range(0, static_cast<int64_t>(tenants.size()) - 2))) %
                                      tenants.size());
        schedule(std::move(c), delay());
      };
      copy(NoteKind::genuine, NoteForm::genuine);
      if (wh_dup_percent > 0 && opwh.chance(wh_dup_percent)) copy(NoteKind::duplicate, NoteForm::genuine);
      if (tenants.size() > 1 && wh_misroute_percent > 0 && opwh.chance(wh_misroute_percent))
        copy(NoteKind::misrouted, NoteForm::genuine);
      if (wh_forged_percent > 0 && opwh.chance(wh_forged_percent)) copy(NoteKind::forged, NoteForm::forged);
      if (wh_stale_percent > 0 && has_form(pname, NoteForm::stale) && opwh.chance(wh_stale_percent))
        copy(NoteKind::stale, NoteForm::stale);
      if (wh_not_ours_percent > 0 && pname == "stripe" && opwh.chance(wh_not_ours_percent))
        copy(NoteKind::not_ours, NoteForm::not_ours);
    }
  }
}

bool World::operation_result(const WebhookEventResult& e) const {
  for (const auto& [kind, op] : profile.operations) {
    const std::string tail = ":" + kind;
    if (op.webhook.events.count(e.event_type) && e.event_id.size() > tail.size() &&
        e.event_id.compare(e.event_id.size() - tail.size(), tail.size(), tail) == 0)
      return true;
  }
  return false;
}

WebhookReceiver& World::receiver(int tenant) {
  if (receivers.size() < tenants.size()) {
    receivers.resize(tenants.size());
    receiver_procs.resize(tenants.size());
    delivered_ids.resize(tenants.size());
  }
  const size_t t = static_cast<size_t>(tenant);
  if (!receivers[t]) {
    // The account's endpoint: a client of the account, as pay_webhook_apply's.
    receiver_procs[t] = std::make_unique<Process>(*this, 1000 + tenant, 1, false, tenant);
    Process& p = *receiver_procs[t];
    receivers[t] = std::make_unique<WebhookReceiver>(*p.ledger, profile, p.config, clock, p.stats, *p.log, *p.flow,
                                                     *p.settler);
    // As Client wires it: an operation an event settled moves its
    // payment's money (OperationFlow::settled_by_event).
    receivers[t]->on_operation_settled([&p](const PaymentRow& row) { p.operations->settled_by_event(row); });
  }
  return *receivers[t];
}

std::map<std::string, World::Snap> World::snapshot() {
  std::unique_ptr<Ledger> holder;
  Ledger& l = ledger_for_checks(holder);
  std::map<std::string, Snap> out;
  auto snap = [&](const std::string& id) {
    Snap& s = out[id];
    const auto row = l.get(id);
    if (!row) return;
    s.exists = true;
    s.state = row->state;
    s.pid = row->provider_payment_id;
    s.entries = row->attempts;
  };
  for (const Order& o : orders) snap(o.id);
  // (The refunds' rows: a forged refund event must not move one either.)
  for (const std::string& id : op_rows) snap(id);
  return out;
}

bool World::event_stored(const std::string& scope, const std::string& event_id, const std::string& order,
                         const std::string& pid) {
  std::unique_ptr<Ledger> holder;
  Ledger& l = ledger_for_checks(holder);
  auto holds = [&](const std::string& id) {
    const auto row = l.get(id);
    if (!row || row->scope != scope) return false;
    for (const AttemptEntry& e : l.attempts(id))
      if (e.kind == "webhook" && e.provider_request_id == event_id) return true;
    return false;
  };
  for (const Order& o : orders)
    if (holds(o.id)) return true;
  // (A refund's event is in its operation row's history.)
  for (const std::string& id : std::set<std::string>(op_rows.begin(), op_rows.end()))
    if (holds(id)) return true;
  for (const LedgerEvent& e : l.kept_events(scope, order, pid))
    if (e.event_id == event_id) return true;
  return false;
}

void World::check_rows() {
  std::unique_ptr<Ledger> holder;
  Ledger& l = ledger_for_checks(holder);
  for (const Order& o : orders) {
    const auto row = l.get(o.id);
    if (!row) continue;
    check_money(o.id, row->money_state, row->provider_payment_id, "the ledger row", money_row_seen);
    const auto seen = final_seen.find(o.id);
    if (seen != final_seen.end() && row->state != seen->second)
      fail("no_outcome_moved_backwards", o.id + " was " + state_name(seen->second) + " and is now " +
                                             state_name(row->state) + " (" + row->detail + ")");
    if (row->state != PaymentState::succeeded && row->state != PaymentState::failed) continue;
    if (seen == final_seen.end()) final_seen.emplace(o.id, row->state);
    if (!webhooks || row->detail.rfind("settled by webhook", 0) != 0) continue;
    // Made final by a notification: what the provider decided for the payment the row names.
    if (webhook_settled.insert(o.id).second) ++tally.settled_by_webhook;
    // (An event that names the order only, WeChat Pay's: the order's own
    // payments, any of them charged.)
    std::optional<bool> charged;
    for (const ProviderModel::Decided& d : provider->decided)
      if (d.order_id == o.id && (d.id == row->provider_payment_id || row->provider_payment_id.empty()))
        charged = charged.value_or(false) || d.charged;
    if (!charged)
      fail("webhook_state_is_the_providers", o.id + " is " + state_name(row->state) + " " + row->detail +
                                                 ", with provider id '" + row->provider_payment_id +
                                                 "', which is no payment the provider made for it");
    // (A payment made and then abandoned or voided may read FAILED.)
    const bool failed_ok = row->state == PaymentState::failed && money_failed_for_good(o.id, row->provider_payment_id);
    if (*charged != (row->state == PaymentState::succeeded) && !failed_ok)
      fail("webhook_state_is_the_providers", o.id + " is " + state_name(row->state) + " " + row->detail + ", but " +
                                                 row->provider_payment_id + " was " +
                                                 (*charged ? "charged" : "declined"));
  }
}

void World::check_event_entries() {
  std::unique_ptr<Ledger> holder;
  Ledger& l = ledger_for_checks(holder);
  std::map<std::pair<std::string, std::string>, std::string> applied;  // (scope, event id) -> the order it landed on
  for (const Order& o : orders) {
    const auto row = l.get(o.id);
    if (!row) continue;
    if (foreign.count(row->provider_payment_id))
      fail("rows_name_only_their_own_payments", o.id + " (" + state_name(row->state) + ") took the id " +
                                                   row->provider_payment_id + " of a payment made elsewhere");
    for (const AttemptEntry& e : l.attempts(o.id)) {
      if (e.kind != "webhook") continue;
      const std::string& id = e.provider_request_id;
      const auto [at, first] = applied.try_emplace({row->scope, id}, o.id);
      if (!first)
        fail("no_event_applied_twice", "event " + id + " is in the history of " + at->second + " and of " + o.id);
      if (must_never_land.count(id))
        fail("event_lands_only_on_its_payment", "event " + id + " of a payment made elsewhere is in the history of " +
                                                    o.id + " (" + state_name(row->state) + ")");
      const size_t t = static_cast<size_t>(o.tenant);
      // What pay_query read about a settled payment is recorded as the
      // provider's word about it ("lookup:<its id>:<status>"): only on the
      // row that was read, and only naming that row's own payment.
      // (A status word the ledger's event id cannot hold as it is, Checkout.com's
      // "Partially Refunded", is stored hashed.)
      const std::string own = "lookup:" + row->provider_payment_id + ":";
      const Wire::Refunds& words = provider->wire().refunds;
      if (settled_reads.count(o.id) && !row->provider_payment_id.empty() &&
          (id.compare(0, own.size(), own) == 0 ||
           (!words.word_partly_refunded.empty() &&
            (id == lookup_event_id(row->provider_payment_id, words.word_partly_refunded) ||
             id == lookup_event_id(row->provider_payment_id, words.word_refunded)))))
        continue;
      // What a succeeded operation of the payment did to its money
      // ("operation:<order>:<kind>:<ref>"): only on its own payment's row.
      const std::string op = "operation:" + o.id + ":";
      if (id.compare(0, op.size(), op) == 0) {
        std::string row_id = id.substr(std::string("operation:").size());
        for (char& c : row_id)
          if (c == ':') c = ' ';
        const auto op_row = l.get(row_id);
        if (!op_row || op_row->state != PaymentState::succeeded || op_row->parent_order_id != o.id)
          fail("operation_moves_only_its_payment", "event " + id + " is in the history of " + o.id +
                                                       " without a succeeded operation of its own");
        continue;
      }
      if (t >= delivered_ids.size() || !delivered_ids[t].count(id))
        fail("event_applied_in_its_own_scope", "event " + id + " is in the history of " + o.id + " of account " +
                                                   tenants[t]->name + ", whose endpoint never received it");
      if (const auto k = kept_seen.find(o.id); k != kept_seen.end() && k->second == id) {
        ++tally.kept_applied_later;
        kept_seen.erase(k);
      }
    }
  }
  // A refund's own events (issue 47): each in the history of the one
  // operation row whose refund it is about (never another row's, never one
  // of a refund made elsewhere), once per scope, and only where its
  // account's endpoint received it.
  for (const std::string& id : std::set<std::string>(op_rows.begin(), op_rows.end())) {
    const auto row = l.get(id);
    if (!row) continue;
    const Order* parent = order_of(row->parent_order_id);
    const size_t t = parent ? static_cast<size_t>(parent->tenant) : 0;
    for (const AttemptEntry& e : l.attempts(id)) {
      if (e.kind != "webhook") continue;
      const std::string& ev = e.provider_request_id;
      const auto [at, first] = applied.try_emplace({row->scope, ev}, id);
      if (!first)
        fail("no_event_applied_twice", "event " + ev + " is in the history of " + at->second + " and of " + id);
      if (t >= delivered_ids.size() || !delivered_ids[t].count(ev))
        fail("event_applied_in_its_own_scope", "event " + ev + " is in the history of " + id + " of account " +
                                                   tenants[t]->name + ", whose endpoint never received it");
      const auto about = op_event_refund.find(ev);
      const ProviderModel::Refund* r = nullptr;
      if (about != op_event_refund.end())
        for (const ProviderModel::Refund& x : provider->refunds())
          if (x.id == about->second) r = &x;
      if (!r || r->row != id)
        fail("operation_event_lands_on_its_own_operation",
             "event " + ev + " (" +
                 (!r ? std::string("no refund the provider told of")
                     : "about " + r->id + (r->row.empty() ? ", a refund made elsewhere" : ", the refund of " + r->row)) +
                 ") is in the history of " + id + " (" + state_name(row->state) + ")");
    }
  }
}

bool World::deliver(Note& n) {
  std::unique_ptr<Ledger> holder;
  Ledger& l = ledger_for_checks(holder);
  const bool refused_kind = n.kind == NoteKind::forged || n.kind == NoteKind::stale;
  // A payment made elsewhere that names an order of ours: sent only where
  // the library can tell it apart (before the order's row exists, or to a
  // row that names another payment), or to a final row that names none
  // (recorded, never moved); not to an open row without a provider id,
  // where no receiver could tell whose it is.
  bool never_lands = false;
  const auto row = n.order.empty() ? std::nullopt : l.get(n.order);
  const bool other_account =
      n.kind == NoteKind::foreign &&
      n.truths.front().account != account_header_value(*order_of(n.order), profile.webhook.account_header);
  if (other_account) {
    // Another connected account's payment under this order id: told apart
    // by the account the event names (the profile's webhook.account_path),
    // whatever the row's state; it never lands.
    never_lands = true;
    ++tally.foreign_other_account;
  } else if (n.kind == NoteKind::foreign) {
    if (!row) {
      // Before the row: kept_event_applies tells it by time, which a
      // stepped wall clock breaks; not drawn then.
      if (wall_jump_percent > 0 || pruned.count(n.order)) return true;
      if (!delivering_top) {
        // Inside a run the world moves no clock: between runs it does (below).
        n.due = clock.now_ms() + 1;
        return false;
      }
      never_lands = true;
      ++tally.notes_before_row;
    } else if (!row->provider_payment_id.empty() && row->provider_payment_id != n.pid &&
               (opt.webhook_foreign_open || row->state == PaymentState::succeeded ||
                row->state == PaymentState::failed)) {
      // (An open row's id can still be lost: a run settling it UNKNOWN
      // without an id clears it, and the kept event then lands on it. Only
      // with --webhook-foreign-open: see docs/reliability.md.)
      never_lands = true;
    } else if (money_of(n.truths.front().phase) == Money::failed && row->provider_payment_id.empty() &&
               row->state != PaymentState::succeeded && row->state != PaymentState::failed) {
      // A decline (or an abandoned payment) made elsewhere, to an open row
      // that knows no id: a failure settles only the payment proven to be
      // the row's (event_finding_on: its id, or its request's key), so this
      // one is recorded at most; it must neither settle the row nor give it
      // its id (event_teaches_id: checked below,
      // rows_name_only_their_own_payments), nor move its money
      // (event_moves_money: failed_money_holds_nothing).
      ++tally.foreign_declines_to_open_rows;
    } else if (row->state != PaymentState::succeeded && row->state != PaymentState::failed) {
      if (++n.tries > 20) return true;  // never
      n.due = clock.now_ms() + wh.range(1000, 60000);
      return false;  // later
    }
  }
  if (row && row->state == PaymentState::in_flight) ++tally.notes_while_in_flight;
  if (!n.prebuilt) {
    const uint64_t serial = n.serial * 64 + static_cast<uint64_t>(n.tries);
    n.n = n.op ? build_operation_notification(profile_name, *n.op, n.form, clock.unix_ms(), serial, wh_keys)
               : build_notification(profile_name, n.truths, n.form, clock.unix_ms(), serial, wh_keys);
    // An RSA signature costs a millisecond: WeChat Pay's and Alipay's
    // retries carry the bytes of the first attempt.
    n.prebuilt = wh_keys.rsa != nullptr;
  }
  WebhookReceiver& r = receiver(n.tenant);
  Process& p = *receiver_procs[static_cast<size_t>(n.tenant)];
  const std::map<std::string, Snap> before = snapshot();
  const int injected = wh_injected;
  static const char* const kinds[] = {"genuine", "duplicate", "replay", "misrouted", "forged", "stale", "not_ours", "foreign"};
  say("webhook " + std::string(kinds[static_cast<int>(n.kind)]) + " to account " +
      tenants[static_cast<size_t>(n.tenant)]->name + " about " + n.order + "/" + n.pid + ": " + n.n.req.body);
  p.in_settler = true;
  p.in_hint = true;
  p.order = nullptr;
  WebhookOutcome out;
  try {
    out = r.apply(n.n.req);
  } catch (...) {
    p.in_settler = p.in_hint = false;
    throw;
  }
  p.in_settler = p.in_hint = false;
  ++tally.notes;
  tally.operation_notes += n.op.has_value();
  for (const WebhookEventResult& e : out.events)
    if (operation_result(e)) {
      tally.operation_events_settled += e.effect == "settled";
      tally.operation_events_kept += e.effect == "kept";
    }
  tally.notes_2xx += out.status / 100 == 2;
  tally.notes_4xx += out.status / 100 == 4;
  tally.notes_5xx += out.status / 100 == 5;
  say("  -> " + std::to_string(out.status) + " " + out.to_json());
  // The refund each of its events is about, by the id the operation block stores it under.
  if (n.op)
    for (const std::string& raw : n.n.event_ids) op_event_refund[raw + ":refund"] = n.op->refund_id;
  std::set<std::string>& handed = delivered_ids[static_cast<size_t>(n.tenant)];
  for (const WebhookEventResult& e : out.events) {
    handed.insert(e.event_id);
    // (Stored now: a copy the store failed under may come again when the row is there.)
    if (never_lands && e.effect != "error" && e.effect != "ignored") must_never_land.insert(e.event_id);
    tally.events_settled += e.effect == "settled";
    tally.events_kept += e.effect == "kept";
    tally.events_duplicate += e.effect == "duplicate";
    tally.events_conflict += e.effect == "conflict";
    tally.events_ignored += e.effect == "ignored";
    if (e.effect == "kept" && !e.order_id.empty()) kept_seen[e.order_id] = e.event_id;
  }
  const std::map<std::string, Snap> after = snapshot();
  const bool ok = out.status / 100 == 2;
  const bool hint = profile_name == "mollie";
  if (refused_kind || n.kind == NoteKind::not_ours) {
    // Forged, stale, or another account's: nothing changes.
    if (refused_kind && ok && !hint)
      fail("no_forged_event_applied", std::string("a ") + kinds[static_cast<int>(n.kind)] +
                                          " notification was answered " + std::to_string(out.status));
    for (const auto& [order, b] : before) {
      const Snap& a = after.at(order);
      if (a.exists != b.exists || a.state != b.state || a.pid != b.pid || a.entries != b.entries)
        fail("no_forged_event_applied", std::string("a ") + kinds[static_cast<int>(n.kind)] + " notification changed " +
                                            order + " (" + (b.exists ? state_name(b.state) : "no row") + " -> " +
                                            (a.exists ? state_name(a.state) : "no row") + ", " +
                                            std::to_string(b.entries) + " -> " + std::to_string(a.entries) +
                                            " entries)");
    }
    for (const WebhookEventResult& e : out.events)
      if (e.effect != "ignored" && !hint)
        fail("no_forged_event_applied", "an event of another merchant account was " + e.effect);
  } else {
    // A genuine notification is taken (2xx) unless the store or the hint's
    // lookup failed under it; a replay may be too old for its signed time.
    if (!ok && wh_injected == injected && n.kind != NoteKind::replay && !hint)
      fail("genuine_notification_accepted", "answered " + std::to_string(out.status) + ": " + out.why);
    if (ok) {
      // 2xx only when every event is in the ledger (or not this client's to keep).
      const std::string& scope = tenants[static_cast<size_t>(n.tenant)]->scope;
      for (const WebhookEventResult& e : out.events) {
        if (e.effect == "ignored") {
          // The operation block's reading of a payment's notification: a
          // capture or a void the merchant made elsewhere (Checkout.com's
          // payment_captured, Adyen's CAPTURE), which no operation row of
          // the client's made. Its payment's own block read it too.
          if (!n.op && operation_result(e)) continue;
          // A refund's notification names its payment by the provider's id:
          // ignored where no row of the receiving account holds that id (at
          // another account's endpoint, a payment pruned, or one whose row
          // never learned its id, which only a refund made elsewhere can
          // follow: a caller's refund is sent to the id its row holds).
          if (n.op) {
            const auto payment = l.get(n.order);
            if (!payment || payment->scope != scope || payment->provider_payment_id != n.op->payment_id) continue;
          }
          // (Another connected account's payment is ignored where its order has a row,
          // and a redelivered event of an order whose row was pruned may name no row.)
          if (!hint && !other_account && !pruned.count(e.order_id))
            fail("genuine_notification_accepted", "a genuine event was ignored: " + e.why);
          continue;
        }
        if (!event_stored(scope, e.event_id, e.order_id, e.provider_payment_id))
          fail("accepted_only_when_recorded", "answered " + std::to_string(out.status) + " but event " + e.event_id +
                                                  " (" + e.effect + ") is in no history and not kept");
      }
    }
  }
  check_rows();
  check_event_entries();
  check_operation_rows();
  // A refund an event settled moves its payment's money then and there
  // (WebhookReceiver::on_operation_settled, as Client wires it): the
  // payment's history holds the move ("operation:<row id>"), unless the
  // store failed under this delivery (a later query moves it).
  if (wh_injected == injected)
    for (const WebhookEventResult& e : out.events) {
      if (!operation_result(e) || e.effect != "settled" || e.state_after != "SUCCEEDED") continue;
      const auto op = l.get(e.order_id);
      if (!op) continue;
      std::string move = "operation:" + e.order_id;
      for (char& c : move)
        if (c == ' ') c = ':';
      bool moved = false;
      for (const AttemptEntry& a : l.attempts(op->parent_order_id)) moved = moved || a.provider_request_id == move;
      if (!moved)
        fail("operation_settled_moves_its_payment", e.order_id + " was settled SUCCEEDED by " + e.event_id +
                                                        " and its payment " + op->parent_order_id +
                                                        " holds no move of its money");
    }
  // The same bytes again much later (an attacker's replay, or a proxy's):
  // stale by then where the scheme signs a time, a duplicate elsewhere.
  if (ok && n.kind == NoteKind::genuine && wh_replay_percent > 0 && wh.chance(wh_replay_percent)) {
    Note c = n;
    c.kind = NoteKind::replay;
    c.prebuilt = true;
    schedule(std::move(c), wh.range(300001, 900000));
  }
  // A payment made elsewhere came before the order's row: the row is made
  // a moment later at the earliest (--webhook-tie: in the same millisecond).
  if (never_lands && !row && !opt.webhook_tie) clock.advance(1);
  // Not taken: the provider delivers it again later (a replay or another
  // account's copy too: the provider retries whatever got no 2xx).
  if (!ok && !refused_kind && n.kind != NoteKind::not_ours) {
    if (++n.tries >= 5) {
      ++tally.notes_dropped;
      return true;
    }
    n.due = clock.now_ms() + wh.range(1000, 60000);
    return false;
  }
  return true;
}

void World::deliver_due(bool all, bool top) {
  if (!webhooks || delivering) return;
  delivering = true;
  delivering_top = top;
  struct Done {
    bool& flag;
    ~Done() { flag = false; }
  } done{delivering};
  const int64_t t0 = clock.now_ms();
  collect_notes();
  // In due order; with `all`, each notification on its way once (one put
  // off comes again at the next call).
  std::vector<Note> later;
  for (;;) {
    const int64_t now = clock.now_ms();
    size_t best = outbox.size();
    for (size_t i = 0; i < outbox.size(); ++i)
      if ((all || outbox[i].due <= now) && (best == outbox.size() || outbox[i].due < outbox[best].due)) best = i;
    if (best == outbox.size()) break;
    Note n = std::move(outbox[best]);
    outbox.erase(outbox.begin() + static_cast<std::ptrdiff_t>(best));
    if (all && n.due > now) clock.advance(n.due - now);
    switch (n.kind) {
      case NoteKind::forged: ++tally.forged_notes; break;
      case NoteKind::stale: ++tally.stale_notes; break;
      case NoteKind::not_ours: ++tally.not_ours_notes; break;
      case NoteKind::misrouted: ++tally.misrouted_notes; break;
      case NoteKind::foreign: ++tally.foreign_notes; break;
      case NoteKind::replay: ++tally.replayed_notes; break;
      case NoteKind::duplicate: ++tally.duplicate_notes; break;
      case NoteKind::genuine: break;
    }
    if (!deliver(n)) (all ? later : outbox).push_back(std::move(n));
    collect_notes();
  }
  for (Note& n : later) outbox.push_back(std::move(n));
  excused_ms += clock.now_ms() - t0;
}

void World::run() {
  const RetryPolicy& rp = config.retry;
  say("schedule " + std::to_string(seed) + ": profile " + profile.name + " (provider " + provider->wire().name +
      ", replay " + replay_kind_name(provider->wire().replay) + "), driver " +
      (concurrent ? "concurrent x" + std::to_string(engine_count) : std::string("blocking")) + ", ledger " +
      ledger_url + (real_signer ? ", built-in signer (answer faults " + std::to_string(answer_fault_percent) + "%)" : "") +
      ", max_attempts " + std::to_string(rp.max_attempts) + ", deadline " + std::to_string(rp.deadline_ms) +
      ", attempt_timeout " + std::to_string(rp.attempt_timeout_ms) + ", min_attempt " +
      std::to_string(rp.min_attempt_ms) + ", provider retention " + std::to_string(provider->retention_ms) +
      ", read lag " + std::to_string(provider->read_lag_ms) + " (grace " + std::to_string(config.not_found_grace_ms) +
      "), lease margin " + std::to_string(config.lease_margin_ms) + ", crash% " + std::to_string(crash_percent) +
      ", race% " + std::to_string(race_percent) + ", ledger fault% " + std::to_string(ledger_fault_percent) +
      ", prune% " + std::to_string(prune_percent) + ", query% " + std::to_string(query_percent));
  if (!random_summary.empty()) say(random_summary);
  if (tenants.size() > 1) {
    static const char* const kinds[] = {"credential", "scoping header", "account_id"};
    say(std::to_string(tenants.size()) + " merchant accounts on the ledger, one client each, differing by " +
        kinds[tenant_kind] + "; another account's client acts " + std::to_string(other_scope_percent) + "%");
  }
  if (oauth2)
    say("OAuth2 at " + provider->wire().token_path + ": token hangs " + std::to_string(token_hang_percent) +
        "%, token errors " + std::to_string(token_error_percent) + "%, short-lived tokens " +
        std::to_string(short_token_percent) + "%, revocations " + std::to_string(revoke_percent) +
        "%, 401 after processing " + std::to_string(unauthorized_after_percent) + "% (the key " +
        (profile.replay == ReplayKind::none ? "forgotten" : "kept") + ")");
  for (const Order& o : orders) {
    std::string extra = " (account " + tenants[static_cast<size_t>(o.tenant)]->name;
    for (const auto& [n, v] : o.headers) extra += ", " + n + ": " + v;
    if (!o.path.empty()) extra += ", path " + o.path;
    say("order " + o.id + extra + ")" + (provider->declines[o.id] ? " (declined)" : "") + ": " + o.body);
  }
  if (webhooks) {
    say("webhooks (" + profile.webhook.scheme + "): delays up to " + std::to_string(wh_max_delay_ms) + " ms (" +
        std::to_string(wh_prompt_percent) + "% at once), duplicates " + std::to_string(wh_dup_percent) +
        "%, replays " + std::to_string(wh_replay_percent) + "%, forged " + std::to_string(wh_forged_percent) +
        "%, stale " + std::to_string(wh_stale_percent) + "%, another merchant's " + std::to_string(wh_not_ours_percent) +
        "%, to another account " + std::to_string(wh_misroute_percent) + "%, payments made elsewhere " +
        std::to_string(wh_foreign_percent) + "%, ledger faults " + std::to_string(wh_fault_percent) + "%");
    // Payments made elsewhere (a dashboard, another system) under the
    // reference of one of ours, notified like any other.
    for (const Order& o : orders) {
      if (wh_foreign_percent == 0 || !wh.chance(wh_foreign_percent)) continue;
      const bool charged = profile_name == "wechatpay_v3" || profile_name == "alipay" || wh.chance(50);
      const std::string id = provider->wire().id_prefix + "f" + std::to_string(foreign.size() + 1);
      foreign[id] = {o.id, charged};
      Note n;
      n.kind = NoteKind::foreign;
      n.tenant = o.tenant;
      n.order = o.id;
      n.pid = id;
      // Its request carried a key of its own, or none (a dashboard's). Made
      // in another connected account, where the order's own names one.
      const std::string account = account_header_value(o, profile.webhook.account_header);
      n.truths = {EventTruth{o.id, id, charged, wh.chance(50) ? "elsewhere-" + id : std::string(),
                             !account.empty() && wh.chance(50) ? "acct_elsewhere" : account,
                             charged ? Phase::paid : Phase::declined}};
      // Or one made elsewhere and abandoned by its customer (canceled,
      // expired, closed): the provider says failed of a payment that is
      // not the order's own.
      if (charged && provider->wire().has_phase(Phase::abandoned) && money_rng.chance(30))
        n.truths.front().phase = Phase::abandoned;
      // At once (before the row exists), any time, or late (to a final row).
      const int64_t when = wh.range(0, 9);
      schedule(std::move(n), when < 4 ? 0 : when < 7 ? draw_delay() : wh.range(1200000, 1800000));
    }
    deliver_due(false, true);
  }
  if (concurrent) run_concurrent();
  else run_blocking();
  rethrow_broken();
  // Afterwards, reconcile settles what it can, a pass or three, with the
  // store working again; every notification still on its way arrives first.
  ledger_fault_percent = 0;
  wh_fault_percent = 0;
  deliver_due(true, true);
  for (int pass = 0; pass < 3; ++pass) {
    clock.advance(lease_ms() + config.not_found_grace_ms + 1);
    deliver_due(true, true);
    for (size_t t = 0; t < tenants.size(); ++t) {
      Process p(*this, next_process++, 1, false, static_cast<int>(t));
      reconcile(p);
    }
    if (pass == 0) maybe_prune();
  }
  deliver_due(true, true);
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
