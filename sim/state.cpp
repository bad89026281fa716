#include "state.hpp"

#include <chrono>

#include "create_request.hpp"
#include "form_body.hpp"
#include "http_conn.hpp"
#include "profiles.hpp"
#include "webhook_sender.hpp"

namespace payretry_sim {

namespace {

constexpr std::string_view kMissing =
    R"({"error":{"type":"invalid_request_error","code":"resource_missing"}})";

// The Stripe profile's own payment object for a stored charge, in its money state.
void format_stripe(std::string& out, const StoredCharge& c) {
  format_created(stripe_profile(), out,
                 PaymentView{c.number, c.order_id(), c.amount, c.currency(), c.money, c.wait, c.manual_capture,
                             c.was_authorized});
}

void append_echo(Reply& out, std::string_view key) {
  out.headers.append("idempotency-key: ").append(key.data(), key.size()).append("\r\n");
}

// What a `slow` request keeps: copies, because the client's connection (and the body the
// request's views point into) may be gone by the time it is finished.
std::unique_ptr<Held> held_copy(const Profile& prof, const CreateRequest& req, bool replay,
                                uint64_t epoch, const Flow& flow) {
  auto h = std::make_unique<Held>();
  h->profile = &prof;
  h->has_key = req.has_key;
  h->replay = replay;
  h->key.assign(req.key);
  h->scope.assign(req.scope);
  h->order_id.assign(req.order_id);
  h->currency.assign(req.currency);
  h->amount = req.amount;
  h->epoch = epoch;
  h->format = req.format;
  h->flow = flow;
  return h;
}

// Lookups in unordered_map<std::string, ...> need a std::string in C++17; reusing one per
// thread keeps the hot path free of allocations for keys that are already there.
std::string& scratch(std::string_view s) {
  thread_local std::string buf;
  buf.assign(s.data(), s.size());
  return buf;
}

// An idempotency key (or a keyless request's order id) as the store knows it: in the default
// scope the key itself; in another, NUL, the scope's length, ':', the scope, then the key. No
// key starts with NUL (headers and JSON strings hold none), so the scopes never meet. Built in
// `buf` only when there is a scope: the default scope's hot path allocates nothing.
std::string_view scoped_key(std::string_view scope, std::string_view key, std::string& buf) {
  if (scope.empty()) return key;
  buf.assign(1, '\0');
  buf.append(std::to_string(scope.size())).append(":").append(scope).append(key);
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
      order_shards_(new OrderShard[kShards]),
      ops_(new OperationBook) {}

Config State::config() const {
  std::lock_guard<std::mutex> lk(config_mu_);
  return config_;
}

void State::set_config(Config cfg) {
  std::lock_guard<std::mutex> lk(config_mu_);
  config_ = std::move(cfg);
  config_version_.fetch_add(1, std::memory_order_release);
}

namespace {

// The --api-key that `authorization` carries as its bearer; empty when none does.
std::string_view bearer_key(const Config& cfg, std::string_view authorization) {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() <= kBearer.size() || !iequals(authorization.substr(0, kBearer.size()), kBearer)) {
    return {};
  }
  const std::string_view given = authorization.substr(kBearer.size());
  for (const std::string& k : cfg.api_keys) {
    if (given == k) return k;
  }
  return {};
}

}  // namespace

void scope_of(const Config& cfg, std::string_view authorization, std::string_view scope_value,
              std::string& out) {
  out.clear();
  // One key is one account, as it always was; several are one account each.
  if (cfg.api_keys.size() > 1 && cfg.profile->auth == AuthScheme::bearer) {
    out.append(bearer_key(cfg, authorization));
  }
  // An absent or empty header is the default scope of the account. A header value holds no
  // line feed, so "key\nvalue" names one pair only.
  if (!cfg.scope_header.empty() && !scope_value.empty()) out.append("\n").append(scope_value);
}

bool State::authorized(const Config& cfg, std::string_view authorization) const {
  if (cfg.api_keys.empty() || cfg.profile->auth != AuthScheme::bearer) return true;
  return !bearer_key(cfg, authorization).empty();
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
  const Profile& prof = *cfg.profile;
  switch (f) {
    case Fault::too_many_requests:
    case Fault::too_many_requests_date:
      set_canned(out, prof.rate_limit);
      out.retry_after_s = cfg.retry_after_s;
      out.retry_after_date = f == Fault::too_many_requests_date;
      break;
    case Fault::bad_gateway:
      set_canned(out, prof.bad_gateway);
      break;
    case Fault::service_unavailable:
      set_canned(out, prof.unavailable);
      out.transient = prof.transient_503;
      break;
    default:
      break;
  }
}

// Faults that act after the provider decided: they damage whatever response it produced
// (a fresh result, a replay, a 409 or a 422), like a proxy failing after the commit.
Disposition State::post_fault(const Profile& prof, Fault f, Reply& out) {
  switch (f) {
    case Fault::lost_response:
      return Disposition::reset;
    case Fault::internal_error:
      set_canned(out, prof.internal);
      out.replayed = false;
      out.transient = false;
      out.retry_after_s = -1;
      return Disposition::respond;
    case Fault::malformed:
      out.cut_in_half = true;  // the socket layer cuts it (after signing, if keys are loaded)
      return Disposition::respond;
    case Fault::unauthorized_after:
    case Fault::unauthorized_after_forgetting:
      // The answer was refused after the payment was made (an expired token noticed late): the
      // client sees the mode's own 401, nothing else. Whether the key was kept is settle()'s.
      set_canned(out, prof.unauthorized);
      out.replayed = false;
      out.transient = false;
      out.retry_after_s = -1;
      return Disposition::respond;
    default:
      return Disposition::respond;
  }
}

Disposition State::post_payment(const Config& cfg, std::string_view authorization, bool has_key,
                                std::string_view key, std::string_view body, Reply& out,
                                std::unique_ptr<Held>* held, BodyFormat format,
                                std::string_view scope) {
  out.clear();
  requests_.fetch_add(1, std::memory_order_relaxed);
  const Profile& prof = *cfg.profile;
  if (!authorized(cfg, authorization)) {
    set_canned(out, prof.unauthorized);
    return Disposition::respond;
  }
  CreateRequest req;
  Refusal why;
  if (parse_create_request(prof, format, has_key, key, body, &req, &why) != ParseOutcome::ok) {
    set_refusal(out, prof, why);
    return Disposition::respond;
  }
  req.scope = scope;
  if (req.has_key && prof.echo_key) append_echo(out, req.key);
  const uint64_t epoch = epoch_.load(std::memory_order_acquire);
  const Decision decision = transition(cfg, req, body, out);
  fault_counts_[static_cast<std::size_t>(decision.fault)].fetch_add(1, std::memory_order_relaxed);
  return answer(cfg, req, decision, epoch, out, held);
}

State::Decision State::transition(const Config& cfg, const CreateRequest& req,
                                  std::string_view body, Reply& out) {
  Decision d;
  std::string buf;
  if (!req.has_key) {
    // Without a key every request is a new payment: the classic duplicate-charge hazard.
    uint64_t n;
    {
      const std::string_view id = scoped_key(req.scope, req.order_id, buf);
      const uint64_t h = hash_key(id);
      KeyShard& sh = key_shards_[shard_of(h)];
      std::lock_guard<std::mutex> lk(sh.mu);
      n = (*sh.order_seen.emplace(id, h).first)++;
    }
    d.fault = pick(cfg, req.order_id, false, {}, n);
    return d;
  }
  const std::string_view stored_key = scoped_key(req.scope, req.key, buf);
  const uint64_t h = hash_key(stored_key);
  KeyShard& sh = key_shards_[shard_of(h)];
  std::lock_guard<std::mutex> lk(sh.mu);
  KeyRecord& rec = *sh.keys.emplace(stored_key, h).first;
  if (rec.seen > 0) repeats_.fetch_add(1, std::memory_order_relaxed);
  d.fault = pick(cfg, req.order_id, true, req.key, rec.seen++);
  // A fault before the provider: the request never reached it, so the key stays as it was.
  if (is_pre_fault(d.fault)) return d;
  if (rec.state != KeyState::fresh && rec.fingerprint() != body) {
    d.transition = Transition::reused;
  } else if (rec.state == KeyState::in_progress) {
    d.transition = cfg.profile->format_in_flight ? Transition::reentry : Transition::in_use;
  } else if (rec.state == KeyState::done) {
    d.transition = Transition::replay;
    out.status = rec.status;
    out.body.assign(rec.response());
    d.charge = rec.charge;
  } else {
    rec.state = KeyState::in_progress;
    rec.blob.assign(body);
    rec.fingerprint_len = static_cast<uint32_t>(body.size());
  }
  return d;
}

Disposition State::answer(const Config& cfg, const CreateRequest& req, const Decision& d,
                          uint64_t epoch, Reply& out, std::unique_ptr<Held>* held) {
  const Profile& prof = *cfg.profile;
  const Fault f = d.fault;
  if (f == Fault::refuse) return Disposition::refuse;
  if (f == Fault::reset_before) return Disposition::reset;
  if (is_pre_fault(f)) {
    pre_fault_reply(cfg, f, out);
    return Disposition::respond;
  }
  switch (d.transition) {
    case Transition::reused:
      reused_.fetch_add(1, std::memory_order_relaxed);
      set_canned(out, prof.mismatch);
      return f == Fault::slow ? Disposition::respond : post_fault(prof, f, out);
    case Transition::in_use:
      in_use_.fetch_add(1, std::memory_order_relaxed);
      set_canned(out, prof.in_use);
      out.transient = prof.transient_503;
      return f == Fault::slow ? Disposition::respond : post_fault(prof, f, out);
    case Transition::reentry:
      // Same body while the first request runs: the provider answers it like the first one
      // will be answered, and charges nothing for it.
      in_use_.fetch_add(1, std::memory_order_relaxed);
      out.status = prof.in_flight_status;
      out.body.clear();
      prof.format_in_flight(out.body, req.order_id);
      return f == Fault::slow ? Disposition::respond : post_fault(prof, f, out);
    case Transition::replay:
      replays_.fetch_add(1, std::memory_order_relaxed);
      if (f == Fault::slow) {
        out.clear();
        *held = held_copy(prof, req, /*replay=*/true, epoch, Flow{});
        return Disposition::hold;
      }
      shape_replay(prof, d.charge, out);
      return post_fault(prof, f, out);
    case Transition::process:
      break;
  }
  const Flow flow = decide_flow(cfg, req);
  if (f == Fault::slow) {
    *held = held_copy(prof, req, /*replay=*/false, epoch, flow);
    return Disposition::hold;
  }
  const uint64_t number = process_fresh(prof, f, req.has_key, req.key, req.scope, req.order_id,
                                        req.amount, req.currency, out, req.format, flow);
  if (req.has_key) {
    std::string buf;
    settle(prof, f, scoped_key(req.scope, req.key, buf), out, number, epoch);
  }
  return post_fault(prof, f, out);
}

bool State::finish_held(const Held& h, Reply& out) {
  out.clear();
  if (h.epoch != epoch_.load(std::memory_order_acquire)) return false;
  const Profile& prof = *h.profile;
  if (h.has_key && prof.echo_key) append_echo(out, h.key);
  std::string buf;
  const std::string_view stored_key = scoped_key(h.scope, h.key, buf);
  if (h.replay) return replay_into(prof, stored_key, out);
  const uint64_t number = process_fresh(prof, Fault::none, h.has_key, h.key, h.scope, h.order_id,
                                        h.amount, h.currency, out, h.format, h.flow);
  if (h.has_key) settle(prof, Fault::none, stored_key, out, number, h.epoch);
  return true;
}

namespace {

// A uniform number in [0, 1) for (seed, order, purpose): the same order meets the same flow and
// the same customer in every run with the seed, whatever the threads' interleaving, and a retry
// of the order's create gets the payment its first try would have.
double seeded_unit(uint64_t seed, std::string_view order_id, std::string_view purpose) {
  const uint64_t h = splitmix64(seed ^ splitmix64(fnv1a64(order_id)) ^ fnv1a64(purpose));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The state a payment starts in. Checkout.com's 3-D Secure payment is Pending, which the money
// table reads as pending (the weaker word), so the truth says the same.
Money initial_money(const Profile& prof, const Flow& flow) {
  if (flow.wait != Wait::none) return prof.id == ProfileId::checkout_com ? Money::pending : Money::awaiting_customer;
  return flow.manual_capture ? Money::authorized : Money::paid;
}

}  // namespace

Flow State::decide_flow(const Config& cfg, const CreateRequest& req) const {
  const Profile& prof = *cfg.profile;
  Flow flow = req.flow;
  const Flows& mix = cfg.flows;
  if (!flow.asked && (mix.wait > 0 || mix.hold > 0)) {
    const double u = seeded_unit(cfg.seed, req.order_id, "flow");
    if (u < mix.wait) {
      // Each provider's way of leaving a payment to its customer; Square has none for a card.
      switch (prof.id) {
        case ProfileId::stripe: flow.wait = Wait::requires_action; break;
        case ProfileId::paypal: flow.wait = Wait::order_created; break;
        case ProfileId::square: break;
        case ProfileId::checkout_com:
        case ProfileId::adyen:
        case ProfileId::mollie:
        case ProfileId::wechatpay_v3:
        case ProfileId::alipay: flow.wait = Wait::customer; break;
      }
    } else if (u < mix.wait + mix.hold) {
      // WeChat Pay's JSAPI and Alipay's barcode payments are captured as they are paid.
      flow.manual_capture = prof.id != ProfileId::wechatpay_v3 && prof.id != ProfileId::alipay;
    }
  }
  // Mollie holds only what its customer authorized at the checkout: open first.
  if (prof.id == ProfileId::mollie && flow.manual_capture) flow.wait = Wait::customer;
  // The simulator's Adyen merchant account captures by hand: Authorised is a hold until a
  // capture (POST /__admin/customer "capture"), whose CAPTURE notification says paid.
  if (prof.id == ProfileId::adyen) flow.manual_capture = true;
  return flow;
}

uint64_t State::process_fresh(const Profile& prof, Fault f, bool has_key, std::string_view key,
                              std::string_view scope, std::string_view order_id, int64_t amount,
                              std::string_view currency, Reply& out, BodyFormat format, const Flow& flow) {
  if (f == Fault::decline) {
    declines_.fetch_add(1, std::memory_order_relaxed);
    PaymentView v{0, order_id, amount, currency};
    // Providers that give a declined payment an id take it from the same counter; it is not
    // a charge, so lookups do not find it.
    // Stripe's answer names no PaymentIntent, but its notification does: the number is taken
    // only then, so the ids of a run without notifications stay as they were.
    if (prof.id != ProfileId::stripe || webhooks_) v.number = next_charge_.fetch_add(1, std::memory_order_relaxed);
    out.status = prof.decline_status;
    out.body.clear();
    format_declined(prof, out.body, v);
    notify(prof, v, false, has_key ? key : std::string_view{}, scope, out);
    return 0;
  }
  const Money money = initial_money(prof, flow);
  const uint64_t number =
      create_charge(order_id, has_key ? key : std::string_view{}, scope, amount, currency, money, flow);
  const PaymentView v{number, order_id, amount, currency, money, flow.wait, flow.manual_capture, false};
  out.status = created_status(prof, v);
  out.body.clear();
  if (format == BodyFormat::form) {
    format_payment_intent(out.body, v);
  } else {
    format_created(prof, out.body, v);
  }
  notify(prof, v, true, has_key ? key : std::string_view{}, scope, out);
  if (money == Money::awaiting_customer || money == Money::pending) {
    const Config cfg = config();
    if (cfg.flows.after_ms > 0) {
      const bool pays = seeded_unit(cfg.seed, order_id, "customer") < cfg.flows.pays;
      schedule_customer(steady_now_ns() + static_cast<int64_t>(cfg.flows.after_ms) * 1000000, number,
                        pays ? CustomerAction::pay : CustomerAction::fail);
    }
  }
  return number;
}

void State::notify(const Profile& prof, const PaymentView& v, bool charged, std::string_view key,
                   std::string_view scope, Reply& out, uint8_t move) {
  if (!webhooks_) return;
  PaymentEvent e;
  e.number = v.number;
  e.order_id.assign(v.order_id);
  e.amount = v.amount;
  e.currency.assign(v.currency);
  e.charged = charged;
  e.money = v.money;
  e.wait = v.wait;
  e.manual_capture = v.manual_capture;
  e.was_authorized = v.was_authorized;
  e.move = move;
  e.idempotency_key.assign(key);
  // The scope is [bearer key] "\n" header value (scope_of): the account is the header's value.
  if (const size_t nl = scope.rfind('\n'); nl != std::string_view::npos) e.account.assign(scope.substr(nl + 1));
  if (webhooks_->payment_final(prof, e)) out.hold_ms = WebhookSender::kEarlyLeadMs;
}

void State::settle(const Profile& prof, Fault f, std::string_view key, const Reply& r,
                   uint64_t charge, uint64_t epoch) {
  // Checkout.com: "If the original request returns a 4xx or 5xx ... no idempotent result is
  // saved and the payment is reattempted". The 500 fault is the provider's own answer here, so
  // a charge followed by a 500 is not cached either: a same-key retry charges again.
  // 401_after keeps the key like any processed request (PayPal promises that a same-id re-send
  // gets the current state of the earlier request); 401_after_forgetting is a gateway in front
  // of the idempotency store that refused the answer after the charge, leaving no record of it.
  if (f == Fault::unauthorized_after_forgetting ||
      (prof.cache_only_2xx && (f == Fault::internal_error || r.status < 200 || r.status > 299))) {
    unclaim(key, epoch);
  } else {
    store(key, r, charge, epoch);
  }
}

void State::store(std::string_view key, const Reply& r, uint64_t charge, uint64_t epoch) {
  const uint64_t h = hash_key(key);
  KeyShard& sh = key_shards_[shard_of(h)];
  std::lock_guard<std::mutex> lk(sh.mu);
  if (epoch != epoch_.load(std::memory_order_acquire)) return;
  KeyRecord* found = sh.keys.find(key, h);
  if (!found || found->state != KeyState::in_progress) return;
  KeyRecord& rec = *found;
  rec.state = KeyState::done;
  rec.status = r.status;
  rec.charge = charge;
  rec.blob.resize(rec.fingerprint_len);
  rec.blob.append(r.body);
}

void State::unclaim(std::string_view key, uint64_t epoch) {
  const uint64_t h = hash_key(key);
  KeyShard& sh = key_shards_[shard_of(h)];
  std::lock_guard<std::mutex> lk(sh.mu);
  if (epoch != epoch_.load(std::memory_order_acquire)) return;
  KeyRecord* found = sh.keys.find(key, h);
  if (!found || found->state != KeyState::in_progress) return;
  found->state = KeyState::fresh;
  found->blob.clear();
  found->fingerprint_len = 0;
}

bool State::replay_into(const Profile& prof, std::string_view key, Reply& out) {
  uint64_t charge;
  {
    const uint64_t h = hash_key(key);
    KeyShard& sh = key_shards_[shard_of(h)];
    std::lock_guard<std::mutex> lk(sh.mu);
    const KeyRecord* rec = sh.keys.find(key, h);
    if (!rec || rec->state != KeyState::done) return false;
    out.status = rec->status;
    out.body.assign(rec->response());
    charge = rec->charge;
  }
  shape_replay(prof, charge, out);
  return true;
}

void State::shape_replay(const Profile& prof, uint64_t charge, Reply& out) const {
  switch (prof.replay) {
    case Replay::stored:
      out.replayed = prof.replay_marker;
      return;
    case Replay::current_state: {
      // PayPal: "returns the latest status of the previous request", 200 instead of 201.
      PaymentCopy c;
      if (charge && charge_copy(charge, &c)) {
        out.status = prof.replayed_status;
        out.body.clear();
        format_created(prof, out.body, c.view());
      }
      return;  // no charge (a decline): its stored answer is still its current state
    }
    case Replay::error_code: {
      // WeChat Pay and Alipay answer a paid trade's number with their "already paid" code; a
      // trade still waiting for its payer with the create's answer again (the same prepay_id,
      // 10003), and a closed one with their "closed" code.
      PaymentCopy c;
      if (!charge || !charge_copy(charge, &c) || c.money == Money::paid || c.money == Money::authorized) {
        if (charge) set_canned(out, prof.already_paid);
        return;
      }
      out.body.clear();
      if (c.money != Money::failed) {
        out.status = created_status(prof, c.view());
        format_created(prof, out.body, c.view());
      } else if (prof.id == ProfileId::wechatpay_v3) {
        out.status = 400;
        out.body.assign(R"({"code":"ORDER_CLOSED","message":"订单已关闭"})");
      } else {
        out.status = 200;
        out.body.assign(
            R"({"alipay_trade_pay_response":{"code":"40004","msg":"Business Failed","sub_code":"ACQ.TRADE_HAS_CLOSE","sub_msg":"交易已经关闭"}})");
      }
      return;
    }
  }
}

uint64_t State::create_charge(std::string_view order_id, std::string_view key, std::string_view scope,
                              int64_t amount, std::string_view currency, Money money, const Flow& flow) {
  const uint64_t number = next_charge_.fetch_add(1, std::memory_order_relaxed);
  money_counts_[static_cast<std::size_t>(money)].fetch_add(1, std::memory_order_relaxed);
  {
    StoredCharge c;
    c.number = number;
    c.amount = amount;
    c.money = money;
    c.wait = flow.wait;
    c.manual_capture = flow.manual_capture;
    c.order_len = static_cast<uint32_t>(order_id.size());
    c.key_len = static_cast<uint32_t>(key.size());
    c.scope_len = static_cast<uint32_t>(scope.size());
    c.blob.reserve(order_id.size() + key.size() + scope.size() + currency.size());
    c.blob.append(order_id).append(key).append(scope).append(currency);
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

void State::get_payment(std::string_view id, std::string_view scope, Reply& out) const {
  out.clear();
  uint64_t number = 0;
  bool found = false;
  if (parse_id(stripe_profile().payment_id, id, &number)) {
    charge_log_.with(number, [&](const StoredCharge& c) {
      if (c.scope() != scope) return;
      format_stripe(out.body, c);
      found = true;
    });
  }
  if (found) return;
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

void State::list_payments(std::string_view order_id, std::string_view scope, Reply& out) const {
  out.clear();
  // total_count says "none" in a way a lookup's not_found matcher can read
  // (an empty array has no value to match).
  std::string data;
  std::size_t count = 0;
  for (uint64_t n : charge_numbers(order_id)) {
    charge_log_.with(n, [&](const StoredCharge& c) {
      if (c.scope() != scope) return;
      if (count++) data.push_back(',');
      format_stripe(data, c);
    });
  }
  out.body.assign(R"({"object":"list","total_count":)" + std::to_string(count) + R"(,"data":[)");
  out.body.append(data).append("]}");
}

namespace {

void copy_charge(const StoredCharge& c, State::PaymentCopy* out) {
  out->number = c.number;
  out->order_id.assign(c.order_id());
  out->currency.assign(c.currency());
  out->amount = c.amount;
  out->money = c.money;
  out->wait = c.wait;
  out->manual_capture = c.manual_capture;
  out->was_authorized = c.was_authorized;
  out->moves = c.moves;
}

}  // namespace

bool State::charge_copy(uint64_t number, PaymentCopy* out) const {
  return charge_log_.with(number, [&](const StoredCharge& c) { copy_charge(c, out); });
}

bool State::payment_by_number(uint64_t number, std::string_view scope, PaymentCopy* out) const {
  bool in_scope = false;
  charge_log_.with(number, [&](const StoredCharge& c) {
    if (c.scope() != scope) return;
    in_scope = true;
    copy_charge(c, out);
  });
  return in_scope;
}

std::vector<State::PaymentCopy> State::payments_of_order(std::string_view order_id) const {
  std::vector<PaymentCopy> v;
  for (uint64_t n : charge_numbers(order_id)) {
    PaymentCopy c;
    if (charge_copy(n, &c)) v.push_back(std::move(c));
  }
  return v;
}

std::array<long, kMoneyCount> State::money_counts() const {
  std::array<long, kMoneyCount> out{};
  for (std::size_t i = 0; i < kMoneyCount; ++i) out[i] = money_counts_[i].load(std::memory_order_relaxed);
  return out;
}

bool State::customer_acts(uint64_t number, CustomerAction action, PaymentCopy* out) {
  bool moved = false;
  std::string scope;
  std::string key;
  const bool found = charge_log_.update(number, [&](StoredCharge& c) {
    Money to;
    if (customer_moves(c.money, c.manual_capture, action, &to)) {
      money_counts_[static_cast<std::size_t>(c.money)].fetch_sub(1, std::memory_order_relaxed);
      money_counts_[static_cast<std::size_t>(to)].fetch_add(1, std::memory_order_relaxed);
      if (c.money == Money::authorized) c.was_authorized = true;
      c.money = to;
      if (c.moves < 255) ++c.moves;
      moved = true;
    }
    copy_charge(c, out);
    scope.assign(c.scope());
    key.assign(c.key());
  });
  if (!found || !moved) return false;
  // The provider tells the merchant of the move, as it told it of the create.
  Reply ignored;
  notify(*config().profile, out->view(), true, key, scope, ignored, out->moves);
  return true;
}

State::~State() { stop_customer_clock(); }

void State::stop_customer_clock() {
  {
    std::lock_guard<std::mutex> lk(clock_mu_);
    clock_stopping_ = true;
    due_.clear();
  }
  clock_cv_.notify_all();
  if (clock_.joinable()) clock_.join();
}

void State::schedule_customer(int64_t due_ns, uint64_t number, CustomerAction action) {
  {
    std::lock_guard<std::mutex> lk(clock_mu_);
    if (clock_stopping_) return;
    due_.emplace(due_ns, Due{epoch_.load(std::memory_order_acquire), number, action});
    if (!clock_.joinable()) clock_ = std::thread([this] { run_customer_clock(); });
  }
  clock_cv_.notify_all();
}

void State::run_customer_clock() {
  std::unique_lock<std::mutex> lk(clock_mu_);
  while (!clock_stopping_) {
    if (due_.empty()) {
      clock_cv_.wait(lk);
      continue;
    }
    const int64_t now = steady_now_ns();
    const auto first = due_.begin();
    if (first->first > now) {
      clock_cv_.wait_for(lk, std::chrono::nanoseconds(first->first - now));
      continue;
    }
    const Due d = first->second;
    due_.erase(first);
    lk.unlock();
    // A payment of an earlier epoch is gone with the reset; one the admin call moved already
    // does not move again (customer_acts says no).
    if (d.epoch == epoch_.load(std::memory_order_acquire)) {
      PaymentCopy ignored;
      customer_acts(d.number, d.action, &ignored);
    }
    lk.lock();
  }
}

std::vector<State::PaymentCopy> State::payments_for(std::string_view order_id,
                                                    std::string_view scope) const {
  std::vector<PaymentCopy> v;
  for (uint64_t n : charge_numbers(order_id)) {
    PaymentCopy c;
    if (payment_by_number(n, scope, &c)) v.push_back(std::move(c));
  }
  return v;
}

State::Phase State::phase(std::string_view key, std::string_view scope) const {
  std::string buf;
  key = scoped_key(scope, key, buf);
  const uint64_t h = hash_key(key);
  const KeyShard& sh = key_shards_[shard_of(h)];
  std::lock_guard<std::mutex> lk(sh.mu);
  const KeyRecord* rec = sh.keys.find(key, h);
  if (!rec) return Phase::none;
  switch (rec->state) {
    case KeyState::fresh:
      return Phase::none;
    case KeyState::in_progress:
      return Phase::in_progress;
    case KeyState::done:
      return rec->charge ? Phase::done_charged : Phase::done_not_charged;
  }
  return Phase::none;
}

int State::charges_for(std::string_view order_id) const {
  return static_cast<int>(charge_numbers(order_id).size());
}

std::vector<std::string> State::charge_ids_for(std::string_view order_id) const {
  const IdShape shape = config().profile->payment_id;
  std::vector<std::string> ids;
  for (uint64_t n : charge_numbers(order_id)) ids.push_back(format_id(shape, n));
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
  s.repeat_creates = repeats_.load(std::memory_order_relaxed);
  s.in_use_409 = in_use_.load(std::memory_order_relaxed);
  s.key_reused_422 = reused_.load(std::memory_order_relaxed);
  s.declines = declines_.load(std::memory_order_relaxed);
  s.charges = charges_.load(std::memory_order_relaxed);
  s.auth_refused = auth_refused_.load(std::memory_order_relaxed);
  s.signed_requests = signed_.load(std::memory_order_relaxed);
  s.bad_signatures = bad_signatures_.load(std::memory_order_relaxed);
  s.oauth2_tokens_issued = tokens_.issued();
  s.oauth2_tokens_refused = tokens_.refused();
  s.oauth2_token_requests_held = tokens_held_.load(std::memory_order_relaxed);
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
  if (webhooks_) webhooks_->reset();
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
    std::lock_guard<std::mutex> lk(ops_->mu);
    ops_->clear();
  }
  clock_offset_ms_.store(0);
  ops_made_.store(false);
  {
    std::lock_guard<std::mutex> lk(clock_mu_);
    due_.clear();
  }
  for (auto& c : money_counts_) c.store(0);
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
  repeats_.store(0);
  in_use_.store(0);
  reused_.store(0);
  declines_.store(0);
  auth_refused_.store(0);
  signed_.store(0);
  bad_signatures_.store(0);
  tokens_held_.store(0);
  tokens_.reset_counters();
}

}  // namespace payretry_sim
