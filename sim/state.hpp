// The provider's state: runtime config, idempotency records, charges (the truth), fault
// scripts and counters, and the payment rules that act on them. Shared by all workers;
// everything hot is sharded so workers rarely meet on a lock.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "create_request.hpp"
#include "faults.hpp"
#include "keys.hpp"
#include "money.hpp"
#include "oauth2.hpp"
#include "operations.hpp"
#include "profiles.hpp"
#include "string_table.hpp"

namespace payretry_sim {

// Payments that wait for their customer or are only held, chosen per order from the seed for
// creates whose request asked for neither itself (money.hpp Flow), and what the customer then
// does. All zero: every payment goes through at once, as the simulator always did.
struct Flows {
  double wait = 0;   // the provider's "the customer must act" answer (Stripe requires_action, ...)
  double hold = 0;   // authorized, not captured (Stripe requires_capture, Square APPROVED, ...)
  // > 0: the customer acts this long after the create; 0: only POST /__admin/customer moves a
  // waiting payment.
  int after_ms = 0;
  double pays = 1;   // the chance that the customer pays then (otherwise it fails or expires)
};

struct Config {
  uint64_t seed = 1;
  FaultMix mix;
  int slow_ms = 2000;
  int retry_after_s = 1;
  int refuse_ms = 100;
  // Every create and lookup is answered this long after it arrived (a provider that takes
  // 100 ms-2 s), from the event loop's timers: benchmarks measure what a client adds on top.
  int latency_ms = 0;
  std::string key_header;  // empty: the profile's header
  // --api-key, repeatable: empty, no auth required (the bearer modes; see AuthScheme). With
  // more than one, each key is its own merchant account: its own idempotency keys, payments
  // and lookups (Scope below).
  std::vector<std::string> api_keys;
  // --scope-header: the idempotency keys, payments and lookups are partitioned by this
  // header's value, as Stripe-Account partitions them at Stripe. Empty: not partitioned.
  std::string scope_header;
  // --keys: verify WeChat Pay / Alipay request signatures and sign the answers. Null: those
  // modes check only the form of their authentication.
  std::shared_ptr<const KeySet> keys;
  // --hmac-secret: every create and lookup must carry X-Signature (gate.hpp), the way a
  // provider with its own signing scheme, built into no client, would. Empty: not required.
  std::string hmac_secret;
  OAuth2Client oauth2;  // PayPal's one API client
  // PayPal's token endpoint holds every token request this long before answering it (from the
  // event loop's timers); -1 holds it until the client closes the connection. 0: at once.
  int oauth2_delay_ms = 0;
  Flows flows;
  const Profile* profile = &stripe_profile();
  std::string_view effective_key_header() const {
    return key_header.empty() ? profile->key_header : std::string_view(key_header);
  }
};

// The merchant account and scope a create or lookup acts in: the bearer key (when there are
// several) and the --scope-header value. Empty: the default, what a provider with one account
// and no scoping header has. Charges are counted per order across every scope (the truth).
// Built into `out`; the views of a CreateRequest and a lookup point into it.
void scope_of(const Config& cfg, std::string_view authorization, std::string_view scope_value,
              std::string& out);

// One response as the provider decided it, before it is framed.
struct Reply {
  int status = 200;
  // > 0: the answer waits this long (a notification sent `early` goes out before it).
  int hold_ms = 0;
  std::string body;
  int retry_after_s = -1;         // >= 0: send Retry-After
  bool retry_after_date = false;  // as an IMF-fixdate instead of delta-seconds
  bool replayed = false;          // Idempotent-Replayed: true
  bool transient = false;         // transient-error: true (Adyen)
  // The `malformed` fault: only the first half of the body goes out, cut after any answer
  // signature was made over the whole of it (as a connection that fails mid-answer would).
  bool cut_in_half = false;
  std::string headers;            // more header lines ("Name: value\r\n"), per profile
  void clear() {
    status = 200;
    hold_ms = 0;
    body.clear();
    retry_after_s = -1;
    retry_after_date = false;
    replayed = false;
    transient = false;
    cut_in_half = false;
    headers.clear();
  }
};

// What the socket layer must do with a payment request.
enum class Disposition {
  respond,  // send the Reply
  reset,    // RST the connection, send nothing
  refuse,   // RST the connection and close the listeners for refuse_ms
  hold,     // keep the request for slow_ms, then finish_held()
};

// A request held by the `slow` fault: owns copies of everything it needs, because the
// client's connection (and its buffer) may be gone by the time it is finished.
struct Held {
  const Profile* profile = nullptr;
  bool has_key = false;
  bool replay = false;  // the key was already done: finishing means replaying
  std::string key;
  std::string scope;
  std::string order_id;
  std::string currency;
  int64_t amount = 0;
  uint64_t epoch = 0;
  BodyFormat format = BodyFormat::json;
  Flow flow;  // as answer() decided it
};

struct Stats {
  long requests = 0;
  std::array<long, kFaultCount> faults{};
  long replays = 0;
  long repeat_creates = 0;  // creates whose key an earlier request carried: the clients' retries
  long in_use_409 = 0;
  long key_reused_422 = 0;
  long declines = 0;
  long charges = 0;
  long auth_refused = 0;          // creates and lookups refused for their authentication
  long signed_requests = 0;       // --hmac-secret: creates and lookups whose X-Signature verified
  long bad_signatures = 0;        // ... refused for a missing or wrong X-Signature
  long oauth2_tokens_issued = 0;  // PayPal token requests answered with a token
  long oauth2_tokens_refused = 0; // ... answered with an error
  long oauth2_token_requests_held = 0;  // ... held by oauth2_delay_ms before an answer
};

// Charges are stored compactly: one allocation for the four strings.
struct StoredCharge {
  uint64_t number = 0;  // 0: empty slot
  int64_t amount = 0;
  // Where its money is (the truth the money counts report) and what its create asked.
  Money money = Money::paid;
  Wait wait = Wait::none;
  bool manual_capture = false;
  bool was_authorized = false;
  uint8_t moves = 0;  // moves since the create: each notification of a move has its own ids
  uint32_t order_len = 0;
  uint32_t key_len = 0;
  uint32_t scope_len = 0;
  std::string blob;  // order_id + key + scope + currency
  std::string_view order_id() const { return std::string_view(blob).substr(0, order_len); }
  std::string_view key() const { return std::string_view(blob).substr(order_len, key_len); }
  std::string_view scope() const { return std::string_view(blob).substr(order_len + key_len, scope_len); }
  std::string_view currency() const {
    return std::string_view(blob).substr(order_len + key_len + scope_len);
  }
};

// Charges by number. Numbers come from one counter, so a chunked array indexed by number
// does what a hash map would, without hashing or rehashing. Slots are guarded by striped
// locks (number % stripes); chunks are created on first use and only freed by clear().
class ChargeLog {
 public:
  ChargeLog();
  ~ChargeLog();
  ChargeLog(const ChargeLog&) = delete;
  ChargeLog& operator=(const ChargeLog&) = delete;
  void put(StoredCharge c);
  // Calls f(const StoredCharge&) under the slot's lock; false when there is no such charge.
  template <typename F>
  bool with(uint64_t number, F&& f) const {
    return const_cast<ChargeLog*>(this)->update(number, [&](StoredCharge& c) { f(static_cast<const StoredCharge&>(c)); });
  }
  // The same with the charge to change (its money state: the strings stay as put).
  template <typename F>
  bool update(uint64_t number, F&& f) {
    if (number == 0 || (number >> kChunkBits) >= kMaxChunks) return false;
    std::lock_guard<std::mutex> lk(stripes_[number % kStripes].mu);
    Chunk* chunk = chunks_[number >> kChunkBits].load(std::memory_order_acquire);
    if (!chunk) return false;
    StoredCharge& c = chunk->slots[number & (kChunkSize - 1)];
    if (c.number != number) return false;
    f(c);
    return true;
  }
  void clear();

 private:
  static constexpr std::size_t kChunkBits = 12;
  static constexpr std::size_t kChunkSize = std::size_t{1} << kChunkBits;
  static constexpr std::size_t kMaxChunks = std::size_t{1} << 18;  // ~1e9 charges
  static constexpr std::size_t kStripes = 64;
  struct Chunk {
    StoredCharge slots[kChunkSize];
  };
  struct alignas(64) Stripe {
    std::mutex mu;
  };
  std::unique_ptr<std::atomic<Chunk*>[]> chunks_;
  std::unique_ptr<Stripe[]> stripes_;
};

class WebhookSender;

class State {
 public:
  explicit State(Config cfg);
  ~State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // Config: workers keep a copy and refresh it when the version moves.
  Config config() const;
  void set_config(Config cfg);
  uint64_t config_version() const { return config_version_.load(std::memory_order_acquire); }

  // POST /v1/payments. `key` is the idempotency key header value (has_key false when absent);
  // `scope` the account and scope it acts in (scope_of).
  Disposition post_payment(const Config& cfg, std::string_view authorization, bool has_key,
                           std::string_view key, std::string_view body, Reply& out,
                           std::unique_ptr<Held>* held, BodyFormat format = BodyFormat::json,
                           std::string_view scope = {});
  // Completes a request held by `slow`. False when a reset happened meanwhile: drop it.
  bool finish_held(const Held& h, Reply& out);

  // The --api-key bearer check of the bearer modes (true in the others: gate.cpp checks those):
  // any of the keys.
  bool authorized(const Config& cfg, std::string_view authorization) const;
  // A create or lookup refused by gate.cpp: counted, nothing else.
  void count_auth_refused() { auth_refused_.fetch_add(1, std::memory_order_relaxed); }
  // The --hmac-secret check's verdicts (a refusal is also an auth refusal).
  void count_signature(bool good) {
    (good ? signed_ : bad_signatures_).fetch_add(1, std::memory_order_relaxed);
  }
  // A token request held by oauth2_delay_ms.
  void count_token_request_held() { tokens_held_.fetch_add(1, std::memory_order_relaxed); }
  // PayPal's issued OAuth2 tokens. They outlive reset(), like the config; its revoke_all()
  // (POST /__admin/oauth2/revoke) forgets them.
  OAuth2Tokens& tokens() { return tokens_; }
  const OAuth2Tokens& tokens() const { return tokens_; }

  // GET /v1/payments/{id} and GET /v1/payments?order_id=X, in one scope.
  void get_payment(std::string_view id, std::string_view scope, Reply& out) const;
  void list_payments(std::string_view order_id, std::string_view scope, Reply& out) const;

  // For the profiles' lookups. A copy of one charge.
  struct PaymentCopy {
    uint64_t number = 0;
    std::string order_id;
    std::string currency;
    int64_t amount = 0;
    Money money = Money::paid;
    Wait wait = Wait::none;
    bool manual_capture = false;
    bool was_authorized = false;
    uint8_t moves = 0;
    PaymentView view() const {
      return {number, order_id, amount, currency, money, wait, manual_capture, was_authorized};
    }
  };
  // By number (a profile's parse_id of its payment id); false when there is no such charge in
  // `scope` (another account's payment is not found, as at the provider).
  bool payment_by_number(uint64_t number, std::string_view scope, PaymentCopy* out) const;
  std::vector<PaymentCopy> payments_for(std::string_view order_id, std::string_view scope) const;
  // Where an identity (key or reference) stands in `scope`.
  enum class Phase { none, in_progress, done_charged, done_not_charged };
  Phase phase(std::string_view key, std::string_view scope) const;

  // The customer (or, for `capture`, the merchant) acts on payment `number`, in any scope: its
  // money state moves (money.hpp customer_moves) and the provider's notification of the new
  // state goes out. False when there is no such payment or the action does not apply to it;
  // `out` gets the payment as it is after.
  bool customer_acts(uint64_t number, CustomerAction action, PaymentCopy* out);
  // Stops the customer's clock (Flows::after_ms) for good: what it had still to do is dropped.
  void stop_customer_clock();

  // Truth.
  int charges_for(std::string_view order_id) const;
  // Payments per money state (every scope); index by Money.
  std::array<long, kMoneyCount> money_counts() const;
  // The order's payments as they are now, every scope.
  std::vector<PaymentCopy> payments_of_order(std::string_view order_id) const;
  // The order's payment ids, in the running profile's payment_id shape.
  std::vector<std::string> charge_ids_for(std::string_view order_id) const;
  long total_charges() const { return charges_.load(std::memory_order_relaxed); }
  long orders() const { return orders_.load(std::memory_order_relaxed); }
  long duplicate_orders() const { return duplicates_.load(std::memory_order_relaxed); }
  long requests() const { return requests_.load(std::memory_order_relaxed); }
  std::map<std::string, int> charges_by_order() const;
  Stats stats() const;

  // Operations (operations.cpp): a capture, refund or cancel at the provider's endpoint `t`,
  // or a lookup of one. `has_key`/`key`: the key header's value (header profiles); `scope` as
  // scope_of makes it. Faults, scripts and latency apply as to creates.
  Disposition post_operation(const Config& cfg, const OpTarget& t, std::string_view body, bool has_key,
                             std::string_view key, std::string_view scope, Reply& out);
  // The truth of a payment's operations (a copy; empty when it had none).
  PaymentOps operations_of(uint64_t number) const;
  // The payment as its lookups show it: with what operations captured and refunded of it.
  PaymentView with_operations(const PaymentCopy& c) const;
  struct OperationTotals {
    long operations = 0, captures = 0, refunds = 0, cancels = 0;
    long money_movements = 0;  // operations that moved money
    // Operation keys that moved money more than once: what a client's retries must never do.
    long duplicate_movements = 0;
    int64_t captured = 0, refunded = 0;  // minor units, summed over every currency
  };
  OperationTotals operation_totals() const;
  // The clock the operation key windows read (Mollie's 1 h, Stripe's 24 h, ...): the wall clock
  // moved on by POST /__admin/clock, so a test can outlive a window without waiting for it.
  int64_t sim_now_ms() const;
  void advance_clock(int64_t seconds) { clock_offset_ms_.fetch_add(seconds * 1000, std::memory_order_relaxed); }

  // Scripts: the next requests of that order (or key) meet these faults, in order.
  void script_order(const std::string& order_id, std::vector<Fault> faults);
  void script_key(const std::string& key, std::vector<Fault> faults);

  // Forget keys, charges, scripts and counters; keep the config.
  void reset();

  // Where the final states of payments are notified (--webhook-url); set once before the
  // workers start, null when no notifications are sent.
  void set_webhooks(WebhookSender* sender) { webhooks_ = sender; }
  WebhookSender* webhooks() const { return webhooks_; }

 private:
  enum class KeyState : uint8_t { fresh, in_progress, done };
  struct KeyRecord {
    uint64_t seen = 0;  // requests so far with this key: the n of the seeded schedule
    uint64_t charge = 0;  // done: the charge it made (0: none, e.g. a decline)
    KeyState state = KeyState::fresh;
    int status = 0;
    uint32_t fingerprint_len = 0;
    // The exact body bytes of the first processed request (the fingerprint), followed by
    // the stored response body: one allocation per key instead of two.
    std::string blob;
    std::string_view fingerprint() const { return std::string_view(blob).substr(0, fingerprint_len); }
    std::string_view response() const { return std::string_view(blob).substr(fingerprint_len); }
  };
  // Most orders have one charge: keep it inline, spill the rest.
  struct OrderCharges {
    uint64_t first = 0;
    std::vector<uint64_t> more;
    std::size_t count() const { return first ? 1 + more.size() : 0; }
    template <typename F>
    void each(F&& f) const {
      if (first) f(first);
      for (uint64_t n : more) f(n);
    }
  };
  static constexpr std::size_t kShards = 64;
  static constexpr std::size_t kInitialSlots = 1024;  // per shard and table
  struct alignas(64) KeyShard {
    mutable std::mutex mu;
    StringTable<KeyRecord> keys{kInitialSlots};
    StringTable<uint64_t> order_seen{kInitialSlots};  // n for requests without a key
  };
  struct alignas(64) OrderShard {
    mutable std::mutex mu;
    StringTable<OrderCharges> by_order{kInitialSlots};
  };

  static std::size_t shard_of(uint64_t hash) { return hash >> 58; }  // top 6 bits: 64 shards

  // A create in three steps: post_payment parses it (create_request.hpp), transition() decides
  // what the idempotency rules make of it, answer() renders the provider's reply.
  enum class Transition : uint8_t {
    process,  // a fresh key (now claimed), or no key: run the payment
    replay,   // the key is done and the body the same: its stored answer again
    in_use,   // the key is running and the body the same: the profile's in-use error
    reentry,  // ... in a profile that answers that like the first request (format_in_flight)
    reused,   // the key was used with another body: the profile's mismatch error
  };
  struct Decision {
    Fault fault = Fault::none;  // the request's place in the seeded schedule (or its script)
    Transition transition = Transition::process;
    uint64_t charge = 0;  // replay: the stored answer's charge (0: none, e.g. a decline)
  };
  // Under the key's shard lock: picks the fault and, unless the fault acts before the
  // provider, claims a fresh key (fingerprinted by `body`) or copies a done key's stored answer
  // into `out`.
  Decision transition(const Config& cfg, const CreateRequest& req, std::string_view body,
                      Reply& out);
  Disposition answer(const Config& cfg, const CreateRequest& req, const Decision& d,
                     uint64_t epoch, Reply& out, std::unique_ptr<Held>* held);
  Fault pick(const Config& cfg, std::string_view order_id, bool has_key, std::string_view key,
             uint64_t n);
  bool pop_script(std::string_view order_id, bool has_key, std::string_view key, Fault* out);
  uint64_t process_fresh(const Profile& prof, Fault f, bool has_key, std::string_view key,
                         std::string_view scope, std::string_view order_id, int64_t amount,
                         std::string_view currency, Reply& out, BodyFormat format, const Flow& flow);
  // What the payment of a create will be: what its request asked, else the seeded flow mix,
  // as far as the provider has such a payment.
  Flow decide_flow(const Config& cfg, const CreateRequest& req) const;
  // The customer's clock (Flows::after_ms): the action on `number` at `due_ns` (steady clock).
  void schedule_customer(int64_t due_ns, uint64_t number, CustomerAction action);
  void run_customer_clock();
  // After processing a claimed key: store the outcome, or (profiles that cache only 2xx, and
  // the 401_after_forgetting fault) release the claim so the next request with the key runs
  // the payment again. `key` here and below is the key in its scope (scoped_key).
  void settle(const Profile& prof, Fault f, std::string_view key, const Reply& r, uint64_t charge,
              uint64_t epoch);
  void store(std::string_view key, const Reply& r, uint64_t charge, uint64_t epoch);
  void unclaim(std::string_view key, uint64_t epoch);
  bool replay_into(const Profile& prof, std::string_view key, Reply& out);
  // Turns a copied stored outcome into the profile's replay.
  void shape_replay(const Profile& prof, uint64_t charge, Reply& out) const;
  uint64_t create_charge(std::string_view order_id, std::string_view key, std::string_view scope,
                         int64_t amount, std::string_view currency, Money money, const Flow& flow);
  // A charge whatever its scope (a stored key's own charge).
  bool charge_copy(uint64_t number, PaymentCopy* out) const;
  void pre_fault_reply(const Config& cfg, Fault f, Reply& out);
  Disposition post_fault(const Profile& prof, Fault f, Reply& out);
  std::vector<uint64_t> charge_numbers(std::string_view order_id) const;
  // The payment's final state to the webhook sender; an `early` notification holds `out`.
  // key: the create's idempotency key; scope: as scope_of() makes it.
  void notify(const Profile& prof, const PaymentView& v, bool charged, std::string_view key, std::string_view scope,
              Reply& out, uint8_t move = 0);

  // Operations (operations.cpp). The payment's money state moves with a capture or cancel:
  // `to` from the state the rules checked, the notification of the new state goes out.
  bool move_payment(uint64_t number, Money to, PaymentCopy* out, std::string* create_key, std::string* scope);
  void lookup_operation(const Config& cfg, const OpRequest& req, std::string_view scope, Reply& out);

  mutable std::mutex config_mu_;
  Config config_;
  std::atomic<uint64_t> config_version_{1};

  std::unique_ptr<KeyShard[]> key_shards_;
  std::unique_ptr<OrderShard[]> order_shards_;
  ChargeLog charge_log_;

  mutable std::mutex script_mu_;
  std::unordered_map<std::string, std::deque<Fault>> order_scripts_;
  std::unordered_map<std::string, std::deque<Fault>> key_scripts_;
  std::atomic<std::size_t> script_count_{0};

  std::atomic<uint64_t> epoch_{0};
  std::atomic<uint64_t> next_charge_{1};  // never reset: ids stay unique for the process
  std::atomic<long> charges_{0};
  std::atomic<long> orders_{0};
  std::atomic<long> duplicates_{0};
  std::atomic<long> requests_{0};
  std::array<std::atomic<long>, kFaultCount> fault_counts_{};
  std::atomic<long> replays_{0};
  std::atomic<long> repeats_{0};
  std::atomic<long> in_use_{0};
  std::atomic<long> reused_{0};
  std::atomic<long> declines_{0};
  std::atomic<long> auth_refused_{0};
  std::atomic<long> signed_{0};
  std::atomic<long> bad_signatures_{0};
  std::atomic<long> tokens_held_{0};
  std::array<std::atomic<long>, kMoneyCount> money_counts_{};
  OAuth2Tokens tokens_;
  WebhookSender* webhooks_ = nullptr;
  std::unique_ptr<OperationBook> ops_;
  std::atomic<bool> ops_made_{false};  // lookups read the book only once an operation was made
  std::atomic<int64_t> clock_offset_ms_{0};

  // The customer's clock: one thread, started by the first payment it has to move.
  struct Due {
    uint64_t epoch;
    uint64_t number;
    CustomerAction action;
  };
  std::mutex clock_mu_;
  std::condition_variable clock_cv_;
  std::multimap<int64_t, Due> due_;
  bool clock_stopping_ = false;
  std::thread clock_;
};

}  // namespace payretry_sim
