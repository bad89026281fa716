#include "state.hpp"

#include <charconv>
#include <cmath>

#include "http_conn.hpp"
#include "json_lite.hpp"

namespace payretry_sim {

namespace {

constexpr std::string_view kUnauthorized =
    R"({"error":{"type":"authentication_error","code":"invalid_api_key"}})";
constexpr std::string_view kInvalid =
    R"({"error":{"type":"invalid_request_error","code":"parameter_invalid"}})";
constexpr std::string_view kMissing =
    R"({"error":{"type":"invalid_request_error","code":"resource_missing"}})";
constexpr std::string_view kReused =
    R"({"error":{"type":"idempotency_error","code":"idempotency_key_reused","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}})";
constexpr std::string_view kInUse =
    R"({"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}})";
constexpr std::string_view kDeclined =
    R"({"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds"}})";
constexpr std::string_view kRateLimit = R"({"error":{"type":"rate_limit_error","code":"rate_limit"}})";
constexpr std::string_view kBadGateway = R"({"error":{"type":"api_error","code":"bad_gateway"}})";
constexpr std::string_view kUnavailable =
    R"({"error":{"type":"api_error","code":"service_unavailable"}})";
constexpr std::string_view kInternal = R"({"error":{"type":"api_error","code":"internal_error"}})";

struct ParsedPayment {
  PaymentFields fields;  // views into the body (or its own buffers)
  std::string_view order_id;
  std::string_view currency = "usd";
  int64_t amount = 0;
};

bool parse_payment(std::string_view body, ParsedPayment* p) {
  PaymentFields& f = p->fields;
  if (!scan_payment_json(body, &f)) return false;
  if (!f.has_order_id || f.order_id.empty() || !f.has_amount) return false;
  // An embedded NUL would make the order id differ between this view and C-string users.
  if (f.order_id.find('\0') != std::string_view::npos) return false;
  const double v = f.amount;
  if (!(v > 0 && v <= 9007199254740991.0) || std::floor(v) != v) return false;
  if (f.has_currency) {
    if (!f.currency_is_string) return false;
    p->currency = f.currency;
  }
  p->order_id = f.order_id;
  p->amount = static_cast<int64_t>(v);
  return true;
}

// The payment object, byte for byte the same in the POST response, its replays and lookups.
void format_payment(std::string& out, uint64_t number, std::string_view order_id, int64_t amount,
                    std::string_view currency) {
  out.append(R"({"id":"pay_)");
  append_int(out, number);
  out.append(R"(","object":"payment","status":"succeeded","order_id":)");
  append_json_string(out, order_id);
  out.append(R"(,"amount":)");
  append_int(out, static_cast<long long>(amount));
  out.append(R"(,"currency":)");
  append_json_string(out, currency);
  out.push_back('}');
}

bool is_pre_fault(Fault f) {
  switch (f) {
    case Fault::refuse:
    case Fault::reset_before:
    case Fault::too_many_requests:
    case Fault::too_many_requests_date:
    case Fault::bad_gateway:
    case Fault::service_unavailable:
      return true;
    default:
      return false;
  }
}

// Lookups in unordered_map<std::string, ...> need a std::string in C++17; reusing one per
// thread keeps the hot path free of allocations for keys that are already there.
std::string& scratch(std::string_view s) {
  thread_local std::string buf;
  buf.assign(s.data(), s.size());
  return buf;
}

}  // namespace

ChargeLog::ChargeLog() : chunks_(new std::atomic<Chunk*>[kMaxChunks]), stripes_(new Stripe[kStripes]) {
  for (std::size_t i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
}

ChargeLog::~ChargeLog() {
  for (std::size_t i = 0; i < kMaxChunks; ++i) delete chunks_[i].load(std::memory_order_relaxed);
}

void ChargeLog::put(StoredCharge c) {
  const uint64_t number = c.number;
  if (number == 0 || (number >> kChunkBits) >= kMaxChunks) return;
  std::lock_guard<std::mutex> lk(stripes_[number % kStripes].mu);
  std::atomic<Chunk*>& slot = chunks_[number >> kChunkBits];
  Chunk* chunk = slot.load(std::memory_order_acquire);
  if (!chunk) {
    // Other stripes may race to create the same chunk: one wins, the others free theirs.
    auto fresh = std::make_unique<Chunk>();
    if (slot.compare_exchange_strong(chunk, fresh.get(), std::memory_order_acq_rel)) {
      chunk = fresh.release();
    }
  }
  chunk->slots[number & (kChunkSize - 1)] = std::move(c);
}

void ChargeLog::clear() {
  // Every stripe held: no reader or writer is inside a chunk while they are freed.
  for (std::size_t i = 0; i < kStripes; ++i) stripes_[i].mu.lock();
  for (std::size_t i = 0; i < kMaxChunks; ++i) delete chunks_[i].exchange(nullptr, std::memory_order_acq_rel);
  for (std::size_t i = kStripes; i-- > 0;) stripes_[i].mu.unlock();
}

State::State(Config cfg)
    : config_(std::move(cfg)),
      key_shards_(new KeyShard[kShards]),
      order_shards_(new OrderShard[kShards]) {}

Config State::config() const {
  std::lock_guard<std::mutex> lk(config_mu_);
  return config_;
}

void State::set_config(Config cfg) {
  std::lock_guard<std::mutex> lk(config_mu_);
  config_ = std::move(cfg);
  config_version_.fetch_add(1, std::memory_order_release);
}

bool State::authorized(const Config& cfg, std::string_view authorization) const {
  if (cfg.api_key.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  return authorization.size() == kBearer.size() + cfg.api_key.size() &&
         iequals(authorization.substr(0, kBearer.size()), kBearer) &&
         authorization.substr(kBearer.size()) == cfg.api_key;
}

bool State::pop_script(std::string_view order_id, bool has_key, std::string_view key, Fault* out) {
  std::lock_guard<std::mutex> lk(script_mu_);
  auto pop = [&](std::unordered_map<std::string, std::deque<Fault>>& m, std::string_view id) {
    auto it = m.find(scratch(id));
    if (it == m.end()) return false;
    *out = it->second.front();
    it->second.pop_front();
    if (it->second.empty()) {
      m.erase(it);
      script_count_.fetch_sub(1, std::memory_order_relaxed);
    }
    return true;
  };
  if (pop(order_scripts_, order_id)) return true;
  return has_key && pop(key_scripts_, key);
}

Fault State::pick(const Config& cfg, std::string_view order_id, bool has_key,
                  std::string_view key, uint64_t n) {
  Fault f;
  if (script_count_.load(std::memory_order_relaxed) > 0 && pop_script(order_id, has_key, key, &f)) {
    return f;
  }
  return choose_fault(cfg.mix, cfg.seed, has_key ? key : order_id, n);
}

void State::pre_fault_reply(const Config& cfg, Fault f, Reply& out) {
  switch (f) {
    case Fault::too_many_requests:
    case Fault::too_many_requests_date:
      out.status = 429;
      out.body.assign(kRateLimit);
      out.retry_after_s = cfg.retry_after_s;
      out.retry_after_date = f == Fault::too_many_requests_date;
      break;
    case Fault::bad_gateway:
      out.status = 502;
      out.body.assign(kBadGateway);
      break;
    case Fault::service_unavailable:
      out.status = 503;
      out.body.assign(kUnavailable);
      break;
    default:
      break;
  }
}

// Faults that act after the provider decided: they damage whatever response it produced
// (a fresh result, a replay, a 409 or a 422), like a proxy failing after the commit.
Disposition State::post_fault(Fault f, Reply& out) {
  switch (f) {
    case Fault::lost_response:
      return Disposition::reset;
    case Fault::internal_error:
      out.status = 500;
      out.body.assign(kInternal);
      out.replayed = false;
      out.retry_after_s = -1;
      return Disposition::respond;
    case Fault::malformed:
      out.body.resize(out.body.size() / 2 > 0 ? out.body.size() / 2 : 1);
      return Disposition::respond;
    default:
      return Disposition::respond;
  }
}

Disposition State::post_payment(const Config& cfg, std::string_view authorization, bool has_key,
                                std::string_view key, std::string_view body, Reply& out,
                                std::unique_ptr<Held>* held) {
  out.clear();
  requests_.fetch_add(1, std::memory_order_relaxed);
  if (!authorized(cfg, authorization)) {
    out.status = 401;
    out.body.assign(kUnauthorized);
    return Disposition::respond;
  }
  ParsedPayment p;
  if (!parse_payment(body, &p)) {
    out.status = 400;
    out.body.assign(kInvalid);
    return Disposition::respond;
  }
  const uint64_t epoch = epoch_.load(std::memory_order_acquire);

  auto make_held = [&](bool replay) {
    auto h = std::make_unique<Held>();
    h->has_key = has_key;
    h->replay = replay;
    h->key.assign(key);
    h->order_id.assign(p.order_id);
    h->currency.assign(p.currency);
    h->amount = p.amount;
    h->epoch = epoch;
    *held = std::move(h);
    return Disposition::hold;
  };
  auto pre = [&](Fault f) {
    if (f == Fault::refuse) return Disposition::refuse;
    if (f == Fault::reset_before) return Disposition::reset;
    pre_fault_reply(cfg, f, out);
    return Disposition::respond;
  };

  if (!has_key) {
    // Without a key every request is a new payment: the classic duplicate-charge hazard.
    uint64_t n;
    {
      const uint64_t h = hash_key(p.order_id);
      KeyShard& sh = key_shards_[shard_of(h)];
      std::lock_guard<std::mutex> lk(sh.mu);
      n = (*sh.order_seen.emplace(p.order_id, h).first)++;
    }
    const Fault f = pick(cfg, p.order_id, false, {}, n);
    fault_counts_[static_cast<std::size_t>(f)].fetch_add(1, std::memory_order_relaxed);
    if (is_pre_fault(f)) return pre(f);
    if (f == Fault::slow) return make_held(false);
    process_fresh(f, false, {}, p.order_id, p.amount, p.currency, out);
    return post_fault(f, out);
  }

  enum class What { process, replay, in_use, reused } what = What::process;
  Fault f;
  {
    const uint64_t h = hash_key(key);
    KeyShard& sh = key_shards_[shard_of(h)];
    std::lock_guard<std::mutex> lk(sh.mu);
    KeyRecord& rec = *sh.keys.emplace(key, h).first;
    f = pick(cfg, p.order_id, true, key, rec.seen++);
    if (!is_pre_fault(f)) {
      if (rec.state != KeyState::fresh && rec.fingerprint() != body) {
        what = What::reused;
      } else if (rec.state == KeyState::in_progress) {
        what = What::in_use;
      } else if (rec.state == KeyState::done) {
        what = What::replay;
        out.status = rec.status;
        out.body.assign(rec.response());
        out.replayed = true;
      } else {
        rec.state = KeyState::in_progress;
        rec.blob.assign(body);
        rec.fingerprint_len = static_cast<uint32_t>(body.size());
      }
    }
  }
  fault_counts_[static_cast<std::size_t>(f)].fetch_add(1, std::memory_order_relaxed);
  if (is_pre_fault(f)) return pre(f);

  switch (what) {
    case What::reused:
      reused_.fetch_add(1, std::memory_order_relaxed);
      out.status = 422;
      out.body.assign(kReused);
      return f == Fault::slow ? Disposition::respond : post_fault(f, out);
    case What::in_use:
      in_use_.fetch_add(1, std::memory_order_relaxed);
      out.status = 409;
      out.body.assign(kInUse);
      return f == Fault::slow ? Disposition::respond : post_fault(f, out);
    case What::replay:
      replays_.fetch_add(1, std::memory_order_relaxed);
      if (f == Fault::slow) {
        out.clear();
        return make_held(true);
      }
      return post_fault(f, out);
    case What::process:
      break;
  }
  if (f == Fault::slow) return make_held(false);
  process_fresh(f, true, key, p.order_id, p.amount, p.currency, out);
  store(key, out, epoch);
  return post_fault(f, out);
}

bool State::finish_held(const Held& h, Reply& out) {
  out.clear();
  if (h.epoch != epoch_.load(std::memory_order_acquire)) return false;
  if (h.replay) return replay_into(h.key, out);
  process_fresh(Fault::none, h.has_key, h.key, h.order_id, h.amount, h.currency, out);
  if (h.has_key) store(h.key, out, h.epoch);
  return true;
}

void State::process_fresh(Fault f, bool has_key, std::string_view key, std::string_view order_id,
                          int64_t amount, std::string_view currency, Reply& out) {
  if (f == Fault::decline) {
    declines_.fetch_add(1, std::memory_order_relaxed);
    out.status = 402;
    out.body.assign(kDeclined);
    return;
  }
  const uint64_t number = create_charge(order_id, has_key ? key : std::string_view{}, amount, currency);
  out.status = 200;
  out.body.clear();
  format_payment(out.body, number, order_id, amount, currency);
}

void State::store(std::string_view key, const Reply& r, uint64_t epoch) {
  const uint64_t h = hash_key(key);
  KeyShard& sh = key_shards_[shard_of(h)];
  std::lock_guard<std::mutex> lk(sh.mu);
  if (epoch != epoch_.load(std::memory_order_acquire)) return;
  KeyRecord* found = sh.keys.find(key, h);
  if (!found || found->state != KeyState::in_progress) return;
  KeyRecord& rec = *found;
  rec.state = KeyState::done;
  rec.status = r.status;
  rec.blob.resize(rec.fingerprint_len);
  rec.blob.append(r.body);
}

bool State::replay_into(std::string_view key, Reply& out) {
  const uint64_t h = hash_key(key);
  KeyShard& sh = key_shards_[shard_of(h)];
  std::lock_guard<std::mutex> lk(sh.mu);
  const KeyRecord* rec = sh.keys.find(key, h);
  if (!rec || rec->state != KeyState::done) return false;
  out.status = rec->status;
  out.body.assign(rec->response());
  out.replayed = true;
  return true;
}

uint64_t State::create_charge(std::string_view order_id, std::string_view key, int64_t amount,
                              std::string_view currency) {
  const uint64_t number = next_charge_.fetch_add(1, std::memory_order_relaxed);
  {
    StoredCharge c;
    c.number = number;
    c.amount = amount;
    c.order_len = static_cast<uint32_t>(order_id.size());
    c.key_len = static_cast<uint32_t>(key.size());
    c.blob.reserve(order_id.size() + key.size() + currency.size());
    c.blob.append(order_id).append(key).append(currency);
    charge_log_.put(std::move(c));
  }
  std::size_t count;
  {
    const uint64_t h = hash_key(order_id);
    OrderShard& sh = order_shards_[shard_of(h)];
    std::lock_guard<std::mutex> lk(sh.mu);
    OrderCharges& oc = *sh.by_order.emplace(order_id, h).first;
    if (!oc.first) oc.first = number;
    else oc.more.push_back(number);
    count = oc.count();
  }
  charges_.fetch_add(1, std::memory_order_relaxed);
  if (count == 1) orders_.fetch_add(1, std::memory_order_relaxed);
  if (count == 2) duplicates_.fetch_add(1, std::memory_order_relaxed);
  return number;
}

void State::get_payment(std::string_view id, Reply& out) const {
  out.clear();
  uint64_t number = 0;
  bool ok = id.size() > 4 && id.substr(0, 4) == "pay_";
  if (ok) {
    auto r = std::from_chars(id.data() + 4, id.data() + id.size(), number);
    ok = r.ec == std::errc() && r.ptr == id.data() + id.size();
  }
  if (ok && charge_log_.with(number, [&](const StoredCharge& c) {
        format_payment(out.body, c.number, c.order_id(), c.amount, c.currency());
      })) {
    return;
  }
  out.status = 404;
  out.body.assign(kMissing);
}

std::vector<uint64_t> State::charge_numbers(std::string_view order_id) const {
  std::vector<uint64_t> numbers;
  const uint64_t h = hash_key(order_id);
  const OrderShard& sh = order_shards_[shard_of(h)];
  std::lock_guard<std::mutex> lk(sh.mu);
  if (const OrderCharges* oc = sh.by_order.find(order_id, h)) {
    oc->each([&](uint64_t n) { numbers.push_back(n); });
  }
  return numbers;
}

void State::list_payments(std::string_view order_id, Reply& out) const {
  out.clear();
  out.body.assign(R"({"object":"list","data":[)");
  bool first = true;
  for (uint64_t n : charge_numbers(order_id)) {
    charge_log_.with(n, [&](const StoredCharge& c) {
      if (!first) out.body.push_back(',');
      first = false;
      format_payment(out.body, c.number, c.order_id(), c.amount, c.currency());
    });
  }
  out.body.append("]}");
}

int State::charges_for(std::string_view order_id) const {
  return static_cast<int>(charge_numbers(order_id).size());
}

std::vector<std::string> State::charge_ids_for(std::string_view order_id) const {
  std::vector<std::string> ids;
  for (uint64_t n : charge_numbers(order_id)) ids.push_back("pay_" + std::to_string(n));
  return ids;
}

std::map<std::string, int> State::charges_by_order() const {
  std::map<std::string, int> m;
  for (std::size_t i = 0; i < kShards; ++i) {
    const OrderShard& sh = order_shards_[i];
    std::lock_guard<std::mutex> lk(sh.mu);
    sh.by_order.for_each([&](std::string_view order, const OrderCharges& v) {
      m.emplace(std::string(order), static_cast<int>(v.count()));
    });
  }
  return m;
}

Stats State::stats() const {
  Stats s;
  s.requests = requests_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < kFaultCount; ++i) {
    s.faults[i] = fault_counts_[i].load(std::memory_order_relaxed);
  }
  s.replays = replays_.load(std::memory_order_relaxed);
  s.in_use_409 = in_use_.load(std::memory_order_relaxed);
  s.key_reused_422 = reused_.load(std::memory_order_relaxed);
  s.declines = declines_.load(std::memory_order_relaxed);
  s.charges = charges_.load(std::memory_order_relaxed);
  return s;
}

void State::script_order(const std::string& order_id, std::vector<Fault> faults) {
  std::lock_guard<std::mutex> lk(script_mu_);
  if (faults.empty()) order_scripts_.erase(order_id);
  else order_scripts_[order_id] = std::deque<Fault>(faults.begin(), faults.end());
  script_count_.store(order_scripts_.size() + key_scripts_.size(), std::memory_order_relaxed);
}

void State::script_key(const std::string& key, std::vector<Fault> faults) {
  std::lock_guard<std::mutex> lk(script_mu_);
  if (faults.empty()) key_scripts_.erase(key);
  else key_scripts_[key] = std::deque<Fault>(faults.begin(), faults.end());
  script_count_.store(order_scripts_.size() + key_scripts_.size(), std::memory_order_relaxed);
}

void State::reset() {
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  for (std::size_t i = 0; i < kShards; ++i) {
    {
      std::lock_guard<std::mutex> lk(key_shards_[i].mu);
      key_shards_[i].keys.clear(kInitialSlots);
      key_shards_[i].order_seen.clear(kInitialSlots);
    }
    {
      std::lock_guard<std::mutex> lk(order_shards_[i].mu);
      order_shards_[i].by_order.clear(kInitialSlots);
    }
  }
  charge_log_.clear();
  {
    std::lock_guard<std::mutex> lk(script_mu_);
    order_scripts_.clear();
    key_scripts_.clear();
    script_count_.store(0, std::memory_order_relaxed);
  }
  charges_.store(0);
  orders_.store(0);
  duplicates_.store(0);
  requests_.store(0);
  for (auto& c : fault_counts_) c.store(0);
  replays_.store(0);
  in_use_.store(0);
  reused_.store(0);
  declines_.store(0);
}

}  // namespace payretry_sim
