// Operations on a payment: the money rules (what may be captured, refunded, canceled), the
// operation keys with each provider's replay and window, the faults, and the truth of every
// money movement. The provider shapes are operation_profiles.cpp's.
#include <chrono>

#include "http_conn.hpp"
#include "operations.hpp"
#include "state.hpp"
#include "webhook_sender.hpp"

namespace payretry_sim {

namespace {

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// An operation key as the book keeps it: per account and scope, per kind of call, and for
// Alipay per trade (out_request_no names a refund of one trade).
std::string book_key(std::string_view scope, const OpRequest& r, uint64_t payment, bool per_trade) {
  std::string k(scope);
  k.push_back('\0');
  if (per_trade) k.append(std::to_string(payment)).push_back('\0');
  k.append(r.key);
  return k;
}

bool is_2xx(int status) { return status >= 200 && status <= 299; }

// How long after its answer an operation the provider declines later is notified declined
// (Stripe's failed refund; sim choice: real ones take seconds to days). Long enough that the
// notification of the answer's state goes first, short enough for a test to wait for.
constexpr int kLaterChangeMs = 300;

// The gateway member of Alipay's fault answers is the create's; an operation answers in its
// method's own member.
void alipay_member(const Profile& p, std::string_view method, Reply& out) {
  constexpr std::string_view kPay = "\"alipay_trade_pay_response\"";
  if (p.id != ProfileId::alipay || out.body.compare(1, kPay.size(), kPay) != 0) return;
  std::string member = "\"" + gateway_member(method) + "\"";
  out.body.replace(1, kPay.size(), member);
}

}  // namespace

int64_t State::sim_now_ms() const { return wall_ms() + clock_offset_ms_.load(std::memory_order_relaxed); }

bool State::move_payment(uint64_t number, Money to, PaymentCopy* out, std::string* create_key, std::string* scope) {
  bool moved = false;
  charge_log_.update(number, [&](StoredCharge& c) {
    if (c.money != to) {
      money_counts_[static_cast<std::size_t>(c.money)].fetch_sub(1, std::memory_order_relaxed);
      money_counts_[static_cast<std::size_t>(to)].fetch_add(1, std::memory_order_relaxed);
      if (c.money == Money::authorized) c.was_authorized = true;
      c.money = to;
      if (c.moves < 255) ++c.moves;
      moved = true;
    }
    out->number = c.number;
    out->order_id.assign(c.order_id());
    out->currency.assign(c.currency());
    out->amount = c.amount;
    out->money = c.money;
    out->wait = c.wait;
    out->manual_capture = c.manual_capture;
    out->was_authorized = c.was_authorized;
    out->moves = c.moves;
    create_key->assign(c.key());
    scope->assign(c.scope());
  });
  return moved;
}

PaymentOps State::operations_of(uint64_t number) const {
  std::lock_guard<std::mutex> lk(ops_->mu);
  auto it = ops_->payments.find(number);
  return it == ops_->payments.end() ? PaymentOps{} : it->second;
}

PaymentView State::with_operations(const PaymentCopy& c) const {
  PaymentView v = c.view();
  if (!ops_made_.load(std::memory_order_acquire)) return v;
  std::lock_guard<std::mutex> lk(ops_->mu);
  auto it = ops_->payments.find(c.number);
  if (it == ops_->payments.end() || it->second.ops.empty()) return v;
  v.captured = it->second.captures == 0 && c.money == Money::paid ? c.amount : it->second.captured;
  v.refunded = it->second.refunded;
  return v;
}

State::OperationTotals State::operation_totals() const {
  OperationTotals t;
  std::lock_guard<std::mutex> lk(ops_->mu);
  for (const auto& [number, po] : ops_->payments) {
    (void)number;
    t.captured += po.captured;
    t.refunded += po.refunded;
    for (const OperationRecord& r : po.ops) {
      ++t.operations;
      if (r.kind == OpKind::capture) ++t.captures;
      if (r.kind == OpKind::refund) ++t.refunds;
      if (r.kind == OpKind::cancel) ++t.cancels;
      if (r.moved) ++t.money_movements;
    }
    for (const auto& [key, n] : po.moves_by_key)
      if (!key.empty() && n > 1) ++t.duplicate_movements;
  }
  return t;
}

namespace {

// The money rules, in one place. `po` is the payment's book entry, `pay` the payment as it is.
// On success fills `rec` (kind, amount, parent) and returns true; otherwise `err` and `left`.
struct Ruling {
  bool ok = false;
  OpError err = OpError::not_found;
  int64_t left = 0;
  Money to = Money::paid;  // where the payment's money goes (capture: paid, cancel: failed)
  bool moves_payment = false;
  bool closes = false;     // the capture ends the authorization
  OperationRecord rec;
};

Ruling rule(const Profile& p, const OpRules& rules, const OpRequest& req, const State::PaymentCopy& pay,
            const PaymentOps& po, uint64_t parent, int64_t parent_amount) {
  Ruling r;
  r.rec.kind = req.target.kind;
  const bool waiting = pay.money == Money::awaiting_customer || pay.money == Money::pending;
  switch (req.target.kind) {
    case OpKind::capture: {
      if (p.id == ProfileId::paypal && req.target.names == OpTarget::Names::order) {
        // An order of intent AUTHORIZE is captured through its authorization; an order of
        // intent CAPTURE that went through is captured already; one still waiting for its payer
        // is not approved (the simulator captures a CAPTURE order as its payer approves).
        r.err = pay.manual_capture || waiting ? OpError::intent_mismatch : OpError::order_captured;
        return r;
      }
      const bool open_after_partial = pay.money == Money::paid && po.captures > 0 && !po.capture_closed;
      if (pay.money != Money::authorized && !open_after_partial) {
        r.err = p.id == ProfileId::paypal && pay.money == Money::failed ? OpError::voided : OpError::not_capturable;
        return r;
      }
      r.left = pay.amount - po.captured;
      const int64_t amount = req.has_amount ? req.amount : r.left;
      // Square's CompletePayment takes no amount: the whole of it.
      if (amount > r.left || amount <= 0) {
        r.err = OpError::exceeds;
        return r;
      }
      r.rec.amount = amount;
      r.closes = !rules.multiple_captures || req.final_capture || amount == r.left;
      // Adyen: multiple partial captures are on in the simulator's account; each leaves the
      // rest open until it is all captured.
      if (p.id == ProfileId::adyen) r.closes = amount == r.left;
      r.to = Money::paid;
      r.moves_payment = pay.money == Money::authorized;
      break;
    }
    case OpKind::refund: {
      if (pay.money != Money::paid) {
        r.err = pay.money == Money::authorized ? OpError::held : OpError::not_refundable;
        return r;
      }
      // PayPal refunds a capture: what is left of that capture; the others what is left of the
      // payment.
      if (p.id == ProfileId::paypal) {
        int64_t back = 0;
        for (const OperationRecord& o : po.ops)
          if (o.kind == OpKind::refund && o.moved && o.parent == parent) back += o.amount;
        r.left = parent_amount - back;
        r.rec.parent = parent;
        if (r.left <= 0) {
          r.err = OpError::fully_refunded;
          return r;
        }
      } else {
        r.left = po.captured - po.refunded;
      }
      if (req.total >= 0 && req.total != pay.amount) {
        r.err = OpError::total_mismatch;
        return r;
      }
      const int64_t amount = req.has_amount ? req.amount : r.left;
      // Alipay: without out_request_no only the whole trade is refunded.
      if (p.id == ProfileId::alipay && !req.request_no && amount != pay.amount) {
        r.err = OpError::partial_without_request_no;
        return r;
      }
      if (amount > r.left || amount <= 0) {
        r.err = OpError::exceeds;
        return r;
      }
      r.rec.amount = amount;
      break;
    }
    case OpKind::cancel: {
      // Only what is not captured is canceled: a held payment, or (where the provider closes
      // unpaid ones: Stripe, Mollie, WeChat Pay, Alipay) one still waiting for its customer.
      const bool closes_unpaid = p.id == ProfileId::stripe || p.id == ProfileId::mollie ||
                                 p.id == ProfileId::wechatpay_v3 || p.id == ProfileId::alipay;
      bool releases_held = true;
      if (p.id == ProfileId::mollie) {
        // Mollie: DELETE cancels only what is still open; release-authorization only a hold.
        const bool release = req.target.names == OpTarget::Names::authorization;
        releases_held = release;
        if (release && waiting) {
          r.err = OpError::not_cancelable;
          return r;
        }
      }
      if (!(releases_held && pay.money == Money::authorized && po.captured == 0) && !(waiting && closes_unpaid)) {
        r.err = p.id == ProfileId::paypal && pay.money == Money::failed ? OpError::voided : OpError::not_cancelable;
        return r;
      }
      r.rec.amount = pay.money == Money::authorized ? pay.amount : 0;
      r.to = Money::failed;
      r.moves_payment = true;
      break;
    }
  }
  r.ok = true;
  return r;
}

}  // namespace

void State::lookup_operation(const Config& cfg, const OpRequest& req, std::string_view scope, Reply& out) {
  const Profile& prof = *cfg.profile;
  const OpTarget& t = req.target;
  const std::string_view method = t.method;
  auto not_found = [&] { format_operation_error(prof, t.kind, OpError::not_found, 0, "", method, out); };
  std::lock_guard<std::mutex> lk(ops_->mu);
  OperationBook& book = *ops_;
  uint64_t payment = 0, op = 0;
  uint64_t number = 0;
  // Mollie's path names the payment, then the refund or capture.
  const std::string& id = t.sub.empty() ? t.id : t.sub;
  switch (prof.id) {
    case ProfileId::wechatpay_v3:
    case ProfileId::alipay: {
      // By the merchant's own refund number (Alipay's within its trade).
      uint64_t trade = 0;
      if (prof.id == ProfileId::alipay) {
        const auto found = payments_for(req.id, scope);
        if (found.empty()) return not_found();
        trade = found.front().number;
      }
      OpRequest k = req;
      if (prof.id == ProfileId::wechatpay_v3) k.key = t.id;
      auto it = book.keys.find(book_key(scope, k, trade, prof.id == ProfileId::alipay));
      if (it == book.keys.end() || !it->second.op) {
        if (prof.id == ProfileId::alipay) {
          // code 10000 says the query worked, not that there is a refund: no refund_status
          // ([AL3]).
          out.status = 200;
          out.body = R"({"alipay_trade_fastpay_refund_query_response":{"code":"10000","msg":"Success","out_trade_no":)";
          append_json_string(out.body, req.id);
          out.body.append(R"(,"out_request_no":)");
          append_json_string(out.body, req.key);
          out.body.append("}}");
          return;
        }
        return not_found();
      }
      payment = it->second.payment;
      op = it->second.op;
      break;
    }
    case ProfileId::paypal:
      if (t.names == OpTarget::Names::authorization) {
        if (!parse_id({"AUT", 14}, id, &number)) return not_found();
        payment = number;
      } else if (parse_operation_id(prof, t.names == OpTarget::Names::capture ? OpKind::capture : OpKind::refund, id, &number)) {
        auto it = book.op_payment.find(number);
        if (it != book.op_payment.end()) {
          payment = it->second;
          op = number;
        } else if (t.names == OpTarget::Names::capture) {
          payment = number;  // an order's own capture: CAP and the payment's number
        }
      }
      if (!payment) return not_found();
      break;
    case ProfileId::checkout_com: {
      if (!parse_id(prof.payment_id, id, &payment)) return not_found();
      PaymentCopy pay;
      if (!payment_by_number(payment, scope, &pay)) return not_found();
      auto it = book.payments.find(payment);
      format_actions(prof, pay.view(), it == book.payments.end() ? PaymentOps{} : it->second, out);
      return;
    }
    default:
      if (!parse_operation_id(prof, t.kind, id, &op)) return not_found();
      {
        auto it = book.op_payment.find(op);
        if (it == book.op_payment.end()) return not_found();
        payment = it->second;
      }
      // Mollie's path names the payment too: the refund must be that payment's.
      if (prof.id == ProfileId::mollie) {
        uint64_t named = 0;
        if (!parse_id(prof.payment_id, t.id, &named) || named != payment) return not_found();
      }
      break;
  }
  PaymentCopy pay;
  if (!payment_by_number(payment, scope, &pay)) return not_found();
  // PayPal: an authorization exists for an order of intent AUTHORIZE only, an order's own capture
  // for one of intent CAPTURE only.
  if (prof.id == ProfileId::paypal && !op && pay.manual_capture != (t.names == OpTarget::Names::authorization)) {
    return not_found();
  }
  PaymentOps& po = book.payments[payment];
  if (pay.money == Money::paid && po.captures == 0) po.captured = pay.amount;
  OpView v;
  v.profile = &prof;
  v.payment = pay.view();
  v.ops = &po;
  v.lookup = true;
  v.method = method;
  v.key = req.key;
  OperationRecord own;  // a PayPal order's own capture (paid at once)
  if (op) {
    // The id must name an operation of the kind looked up (a capture's number is no refund id).
    for (const OperationRecord& r : po.ops)
      if (r.number == op && r.kind == t.kind) v.op = &r;
    if (!v.op) return not_found();
  } else if (prof.id == ProfileId::paypal && t.names == OpTarget::Names::capture) {
    if (pay.money != Money::paid || po.captures > 0) return not_found();
    own.kind = OpKind::capture;
    own.amount = pay.amount;
    own.number = payment;
    v.op = &own;
  }
  format_operation(v, out);
}

Disposition State::post_operation(const Config& cfg, const OpTarget& t, std::string_view body, bool has_key,
                                  std::string_view key, std::string_view scope, Reply& out) {
  out.clear();
  const Profile& prof = *cfg.profile;
  const OpRules& rules = op_rules(prof);
  OpRequest req;
  if (!parse_operation(prof, t, body, has_key, key, &req, out)) {
    alipay_member(prof, t.method, out);
    return Disposition::respond;
  }
  if (req.has_key && prof.echo_key) out.headers.append("idempotency-key: ").append(req.key).append("\r\n");
  if (t.lookup) {
    lookup_operation(cfg, req, scope, out);
    return Disposition::respond;
  }
  const std::string_view method = t.method;

  // The payment the request names, in its scope.
  uint64_t number = 0;
  uint64_t parent = 0;         // PayPal: the capture refunded (0: the order's own)
  int64_t parent_amount = 0;
  PaymentCopy pay;
  bool found = false;
  switch (prof.id) {
    case ProfileId::wechatpay_v3:
    case ProfileId::alipay: {
      const auto payments = payments_for(req.id, scope);
      if (!payments.empty()) {
        pay = payments.front();
        number = pay.number;
        found = true;
      }
      break;
    }
    case ProfileId::paypal:
      if (t.names == OpTarget::Names::order) {
        found = parse_id(prof.payment_id, req.id, &number);
      } else if (t.names == OpTarget::Names::authorization) {
        found = parse_id({"AUT", 14}, req.id, &number);
      } else if (parse_operation_id(prof, OpKind::capture, req.id, &parent)) {
        // A capture: one the simulator made for an authorization, or an order's own.
        std::lock_guard<std::mutex> lk(ops_->mu);
        auto it = ops_->op_payment.find(parent);
        if (it != ops_->op_payment.end()) {
          number = it->second;
          for (const OperationRecord& r : ops_->payments[number].ops)
            if (r.number == parent && r.kind == OpKind::capture) parent_amount = r.amount;
          found = parent_amount > 0;
        } else {
          number = parent;
          parent = 0;
          found = true;
        }
      }
      if (found) found = payment_by_number(number, scope, &pay);
      // An order's own capture exists only for an order paid at once (intent CAPTURE).
      if (found && parent == 0 && t.names == OpTarget::Names::capture) {
        found = !pay.manual_capture;
        parent_amount = pay.amount;
      }
      // An authorization exists only for an order of intent AUTHORIZE.
      if (found && t.names == OpTarget::Names::authorization) found = pay.manual_capture;
      break;
    default:
      found = parse_id(prof.payment_id, req.id, &number) && payment_by_number(number, scope, &pay);
      break;
  }
  if (!found) {
    format_operation_error(prof, t.kind, OpError::not_found, 0, "", method, out);
    return Disposition::respond;
  }

  const int64_t now = sim_now_ms();
  Fault f = Fault::none;
  enum class Step { process, replay, in_use, reused } step = Step::process;
  std::vector<PaymentEvent> events;  // sent once the book's lock is released
  bool notify_payment = false;
  PaymentCopy moved;
  std::string create_key, create_scope;
  {
    std::lock_guard<std::mutex> lk(ops_->mu);
    OperationBook& book = *ops_;
    OperationBook::KeyRecord* rec = nullptr;
    std::string bk;
    uint64_t n;
    if (req.has_key) {
      bk = book_key(scope, req, number, prof.id == ProfileId::alipay);
      rec = &book.keys[bk];
      // Past the provider's window the key is forgotten: the request is new again, and moves
      // money again (Mollie's 1 hour, Stripe's 24 hours).
      if (rules.key_window_s > 0 && rec->state != OperationBook::KeyRecord::State::fresh &&
          now - rec->first_ms > rules.key_window_s * 1000) {
        const uint64_t seen = rec->seen;
        *rec = OperationBook::KeyRecord{};
        rec->seen = seen;
      }
      n = rec->seen++;
    } else {
      n = book.keyless_seen[std::string(op_kind_name(t.kind)) + '\0' + std::to_string(number)]++;
    }
    f = pick(cfg, pay.order_id, req.has_key, req.key, n);
    fault_counts_[static_cast<std::size_t>(f)].fetch_add(1, std::memory_order_relaxed);
    if (f == Fault::refuse) return Disposition::refuse;
    if (f == Fault::reset_before) return Disposition::reset;
    if (is_pre_fault(f)) {
      pre_fault_reply(cfg, f, out);
      alipay_member(prof, method, out);
      return Disposition::respond;
    }
    using KS = OperationBook::KeyRecord::State;
    if (rec && rec->state != KS::fresh && rec->fingerprint != req.fingerprint) {
      step = Step::reused;
    } else if (rec && (rec->state == KS::in_progress || rec->busy_until_ms > now)) {
      step = Step::in_use;
    } else if (rec && rec->state == KS::done) {
      step = Step::replay;
    }

    PaymentOps& po = book.payments[number];
    // A payment paid at once (or captured by POST /__admin/customer) has its whole amount
    // captured.
    if (pay.money == Money::paid && po.captures == 0) po.captured = pay.amount;

    switch (step) {
      case Step::reused:
        reused_.fetch_add(1, std::memory_order_relaxed);
        format_operation_mismatch(prof, method, out);
        break;
      case Step::in_use:
        in_use_.fetch_add(1, std::memory_order_relaxed);
        format_operation_in_use(prof, method, out);
        break;
      case Step::replay: {
        replays_.fetch_add(1, std::memory_order_relaxed);
        const OperationRecord* done = nullptr;
        for (const OperationRecord& r : po.ops)
          if (rec->op && r.number == rec->op) done = &r;
        if (rules.replay == OpReplay::stored || !done) {
          out.status = rec->status;
          out.body = rec->body;
          out.replayed = rules.replay_marker;
        } else {
          // PayPal: the operation as it is now; WeChat Pay and Alipay: the refund the number
          // made, again (Alipay's fund_change N).
          OpView v;
          v.profile = &prof;
          v.payment = pay.view();
          v.ops = &po;
          v.op = done;
          v.replayed = true;
          v.method = method;
          v.key = req.key;
          format_operation(v, out);
        }
        break;
      }
      case Step::process: {
        if (rec) {
          rec->state = KS::in_progress;
          rec->fingerprint = req.fingerprint;
        }
        Ruling r = rule(prof, rules, req, pay, po, parent, parent_amount);
        // Alipay's cancel of a paid trade refunds it ([AL7]: "如果用户支付成功，支付宝系统会将此订单资金退还给用户");
        // its close of a paid one is refused.
        if (prof.id == ProfileId::alipay && method == "alipay.trade.cancel" && pay.money == Money::paid) {
          r = Ruling{};
          r.rec.kind = OpKind::refund;
          r.rec.amount = po.captured - po.refunded;
          r.ok = r.rec.amount > 0;
          if (!r.ok) {
            // Refunded already: the same answer, nothing moves.
            OpView v{&prof, pay.view(), &po, nullptr, true, false, req.key, method, {}};
            format_operation(v, out);
            break;
          }
        }
        // WeChat Pay's close and Alipay's close of a trade closed already: the same answer,
        // nothing moves (sim choice: n.d.).
        if (!r.ok && r.err == OpError::not_cancelable && pay.money == Money::failed &&
            (prof.id == ProfileId::wechatpay_v3 || prof.id == ProfileId::alipay)) {
          OpView v{&prof, pay.view(), &po, nullptr, true, false, req.key, method, {}};
          format_operation(v, out);
          break;
        }
        // The `decline` fault on an operation the money rules allow: the provider takes it and
        // declines it afterwards, where it has a way to say so. Checkout.com answers 202 and
        // notifies payment_*_declined (its capture, refund and void are processed
        // asynchronously: checkout-api-reference nas_spec/paths/payments@{id}@captures.yaml and
        // the others); Stripe answers the refund pending and fails it (a Refund's status may be
        // pending, then failed: https://docs.stripe.com/api/refunds/object). Sim choice: which
        // request meets it is the fault mix's, as a create's decline is. Elsewhere the fault
        // changes nothing of an operation.
        const bool declined_later =
            r.ok && f == Fault::decline &&
            (prof.id == ProfileId::checkout_com || (prof.id == ProfileId::stripe && r.rec.kind == OpKind::refund));
        const bool moves = r.ok && !declined_later;
        OperationRecord* made = nullptr;
        if (r.ok || (rules.async_outcome)) {
          // Adyen takes every modification of a payment it knows and says by notification
          // whether it went through: a refused one is recorded, moving nothing.
          r.rec.number = next_charge_.fetch_add(1, std::memory_order_relaxed);
          r.rec.key = req.key;
          r.rec.reference = req.reference;
          r.rec.at_ms = now;
          r.rec.moved = moves;
          if (!r.ok) r.rec.amount = req.has_amount ? req.amount : 0;
          po.ops.push_back(r.rec);
          ops_made_.store(true, std::memory_order_release);
          made = &po.ops.back();
          book.op_payment[made->number] = number;
          if (moves) {
            po.moves_by_key[req.key] += 1;
            if (made->kind == OpKind::capture) {
              po.captured += made->amount;
              ++po.captures;
              if (r.closes) po.capture_closed = true;
            } else if (made->kind == OpKind::refund) {
              po.refunded += made->amount;
            } else {
              po.capture_closed = true;
            }
            if (r.moves_payment) notify_payment = move_payment(number, r.to, &moved, &create_key, &create_scope);
            if (notify_payment) pay = moved;
          }
          const bool stripe_refund = prof.id == ProfileId::stripe && made->kind == OpKind::refund;
          if (webhooks_ && (prof.id == ProfileId::adyen || (prof.id == ProfileId::checkout_com && r.ok) ||
                            (stripe_refund && r.ok))) {
            PaymentEvent e;
            e.number = number;
            e.order_id = pay.order_id;
            e.amount = pay.amount;
            e.currency = pay.currency;
            e.charged = true;
            e.money = pay.money;
            e.manual_capture = pay.manual_capture;
            e.was_authorized = pay.was_authorized;
            e.idempotency_key = req.key;
            e.op_number = made->number;
            e.op_kind = static_cast<uint8_t>(made->kind);
            e.op_amount = made->amount;
            e.op_created_s = now / 1000;
            e.op_success = moves;
            if (!r.ok) e.op_reason = r.err == OpError::exceeds ? "Insufficient in-process funds on paymentmethod" : "Modification in different currency than authorisation or state does not allow it";
            if (stripe_refund) {
              e.op_status = std::string(stripe_refund_status(*made, false));
              events.push_back(e);
              // Stripe made the refund (refund.created, pending), then changed it on its own: a
              // failure is an update as well as a failure, notified as both, after the first.
              for (const auto phase : {PaymentEvent::OpPhase::updated, PaymentEvent::OpPhase::failed}) {
                if (!declined_later) break;
                PaymentEvent later = e;
                later.op_phase = phase;
                later.op_status = std::string(stripe_refund_status(*made, true));
                later.after_ms = kLaterChangeMs;
                events.push_back(std::move(later));
              }
            } else {
              events.push_back(std::move(e));
              notify_payment = false;  // the operation's own notification says it
            }
          }
          OpView v{&prof, pay.view(), &po, made, false, false, req.key, method, req.reference};
          format_operation(v, out);
        } else {
          format_operation_error(prof, t.kind, r.err, r.left, pay.currency, method, out);
        }
        if (rec) {
          // Checkout.com keeps only 2xx answers (a 500 after acting included: its re-send acts
          // again); 401_after_forgetting is a gateway that lost the key after the provider acted.
          const bool forget = f == Fault::unauthorized_after_forgetting ||
                              (rules.cache_only_2xx && (f == Fault::internal_error || !is_2xx(out.status)));
          if (forget) {
            const uint64_t seen = rec->seen;
            *rec = OperationBook::KeyRecord{};
            rec->seen = seen;
          } else {
            rec->state = KS::done;
            rec->status = out.status;
            rec->body = out.body;
            rec->payment = number;
            rec->op = made && made->moved ? made->number : 0;
            rec->first_ms = now;
            if (f == Fault::slow) rec->busy_until_ms = now + cfg.slow_ms;
          }
        }
        break;
      }
    }
  }
  if (webhooks_) {
    for (const PaymentEvent& e : events) webhooks_->payment_final(prof, e);
    // The payment's own new state (captured, voided), as its provider notifies it: what
    // POST /__admin/customer "capture" and "fail" send.
    if (notify_payment) {
      Reply ignored;
      notify(prof, pay.view(), true, create_key, create_scope, ignored, pay.moves);
    }
  }
  if (f == Fault::slow) {
    // Acted at once; the answer is held slow_ms, and the key answers in_use meanwhile.
    out.hold_ms = cfg.slow_ms + cfg.latency_ms;
    return Disposition::respond;
  }
  const Disposition d = post_fault(prof, f, out);
  alipay_member(prof, method, out);
  return d;
}

}  // namespace payretry_sim
