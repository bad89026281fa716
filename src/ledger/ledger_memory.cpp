#include "ledger_memory.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <tuple>

#include "fingerprint.hpp"

namespace payretry {
namespace {

bool claimable(const PaymentRow& r, int64_t now) {
  return r.state == PaymentState::pending || r.state == PaymentState::unknown ||
         (r.state == PaymentState::in_flight && r.lease_until < now);
}

bool final_state(PaymentState s) { return s == PaymentState::succeeded || s == PaymentState::failed; }

class MemoryLedger final : public Ledger {
 public:
  MemoryLedger(std::string secret, const MemoryLedgerOptions& o) : secret_(std::move(secret)), max_settled_(o.max_settled) {}

  std::string secret() override { return secret_; }
  int concurrent_batches(int) const override { return 0; }

  CreateOutcome create_and_claim(const PaymentRow& proposed, const std::string& owner, int64_t now,
                                 int64_t lease_until) override {
    check_create_proposal(proposed);
    std::lock_guard<std::mutex> lock(mu_);
    return create_locked(proposed, owner, now, lease_until);
  }

  // Under the mutex, which every call takes: the guard reads the payment and
  // its operations and the row goes in with no other call in between.
  OperationOutcome create_operation_and_claim(const PaymentRow& proposed, const std::string& owner, int64_t now,
                                              int64_t lease_until) override {
    check_operation_proposal(proposed);
    std::lock_guard<std::mutex> lock(mu_);
    OperationOutcome out;
    const auto it = rows_.find(proposed.order_id);
    if (it != rows_.end()) {  // a retry: its row as it stands, not guarded again
      out.row = it->second.row;
      return out;
    }
    const auto parent = rows_.find(proposed.parent_order_id);
    std::optional<PaymentRow> parent_row;
    if (parent != rows_.end()) parent_row = parent->second.row;
    std::vector<PaymentRow> family;
    for (const Rows::iterator& op : family_of(proposed.parent_order_id)) family.push_back(op->second.row);
    PaymentRow decided = proposed;
    out.refused = operation_guard(proposed, parent_row, family, decided.amount);
    if (!out.refused.empty()) {
      out.row.order_id = proposed.order_id;
      return out;
    }
    static_cast<CreateOutcome&>(out) = create_locked(decided, owner, now, lease_until);
    return out;
  }

  bool claim(const std::string& order_id, const std::string& owner, int64_t now, int64_t lease_until) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rows_.find(order_id);
    if (it == rows_.end() || !claimable(it->second.row, now)) return false;
    PaymentRow& r = it->second.row;
    r.state = PaymentState::in_flight;
    r.lease_owner = owner;
    r.lease_until = lease_until;
    r.updated_at = now;
    return true;
  }

  bool record_attempt(const std::string& order_id, const std::string& owner, const AttemptEntry& a) override {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = fenced(order_id, owner);
    if (it == rows_.end()) return false;
    store_attempt(it->second, a);
    return true;
  }

  bool settle(const std::string& order_id, const std::string& owner, const AttemptEntry* last, const Settlement& s,
              int64_t now) override {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = fenced(order_id, owner);
    if (it == rows_.end()) return false;
    Payment* p = &it->second;
    if (last) store_attempt(*p, *last);
    PaymentRow* r = &p->row;
    // A provider id once known stays (Settlement: "" keeps the row's).
    if (!s.provider_payment_id.empty() && r->provider_payment_id != s.provider_payment_id) {
      unindex_provider(*r);
      by_provider_[{r->scope, s.provider_payment_id}].insert(it->first);
      r->provider_payment_id = s.provider_payment_id;
    }
    r->state = s.state;
    r->delivery = s.delivery;
    r->detail = s.detail;
    r->provider_status = s.provider_status;
    r->http_status = s.http_status;
    // Forward only (money_after), from the state the row holds: a run that
    // read less than the row already knows never moves it back.
    r->money_state = money_after(r->money_state, s.money_state);
    r->lease_owner.clear();
    r->lease_until = 0;
    r->updated_at = std::max(r->updated_at, now);
    // Only a final row may go: the open ones (UNKNOWN here) still need
    // settling, and forgetting one would let its order be paid again.
    if (final_state(r->state)) {
      note_settled(it);
      forget_beyond_cap();
    }
    return true;
  }

  std::optional<PaymentRow> get(const std::string& order_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rows_.find(order_id);
    if (it == rows_.end()) return std::nullopt;
    return it->second.row;
  }

  std::vector<PaymentRow> operations_of(const std::string& order_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<PaymentRow> out;
    for (const Rows::iterator& op : family_of(order_id)) out.push_back(op->second.row);
    return out;
  }

  std::optional<PaymentRow> find_by_provider_id(const std::string& scope, const std::string& provider_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (provider_id.empty()) return std::nullopt;
    const auto it = target(scope, "", provider_id);
    if (it == rows_.end()) return std::nullopt;
    return it->second.row;
  }

  std::vector<AttemptEntry> attempts(const std::string& order_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<AttemptEntry> out;
    auto it = rows_.find(order_id);
    if (it != rows_.end())
      for (const auto& [n, a] : it->second.attempts) out.push_back(a);
    return out;
  }

  int64_t prune_settled(int64_t updated_before) override {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t pruned = 0;
    // settled_ holds every final payment still here, oldest settle first;
    // a pruned one leaves it too (its pointer would dangle), in one pass.
    // A payment goes with its operations, only when all of them are final
    // and older than the cut (Ledger::prune_settled).
    std::deque<const std::string*> kept;
    for (const std::string* id : settled_) {
      const auto it = rows_.find(*id);
      const std::vector<Rows::iterator> ops = family_of(it->first);
      bool all_old = it->second.row.updated_at < updated_before;
      for (const Rows::iterator& op : ops)
        all_old = all_old && final_state(op->second.row.state) && op->second.row.updated_at < updated_before;
      if (all_old) {
        pruned += 1 + static_cast<int64_t>(ops.size());
        forget_family(it, ops);
      } else {
        kept.push_back(id);
      }
    }
    settled_ = std::move(kept);
    // Kept events that never found a row go once they are older than the
    // cut: a provider notifies about every payment of the account, those
    // made outside payretry too, and these would otherwise pile up for
    // ever; an event's own row has long had its provider id by then.
    for (auto k = kept_.begin(); k != kept_.end();) {
      const auto ev = events_.find(*k);
      if (ev->second.event.received_at < updated_before) {
        events_.erase(ev);
        k = kept_.erase(k);
      } else {
        ++k;
      }
    }
    return pruned;
  }

  EventRecording record_event(const LedgerEvent& e) override {
    check_ledger_event(e);
    std::lock_guard<std::mutex> lock(mu_);
    EventKey key{e.scope, e.scheme, e.event_id};
    const auto at = events_.lower_bound(key);
    if (at != events_.end() && at->first == key) return EventRecording::duplicate;
    Stored stored{e, {}};
    stored.event.entry.number = 0;
    const auto ev = events_.emplace_hint(at, key, std::move(stored));
    const auto row = target(e.scope, e.order_id, e.provider_payment_id);
    if (row == rows_.end() || row->second.row.state == PaymentState::in_flight) {
      try {
        kept_.insert(key);
      } catch (...) {
        events_.erase(ev);
        throw;
      }
      return EventRecording::kept_for_later;
    }
    try {
      append(row, ev);
    } catch (...) {
      events_.erase(ev);  // all or nothing, as in one transaction
      throw;
    }
    return EventRecording::recorded;
  }

  std::vector<LedgerEvent> kept_events(const std::string& scope, const std::string& order_id,
                                       const std::string& provider_payment_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<LedgerEvent> out;
    for (const EventKey& k : kept_) {
      const LedgerEvent& e = events_.at(k).event;
      if (e.scope == scope && ((!order_id.empty() && e.order_id == order_id) ||
                               (!provider_payment_id.empty() && e.provider_payment_id == provider_payment_id)))
        out.push_back(e);
    }
    std::sort(out.begin(), out.end(), [](const LedgerEvent& a, const LedgerEvent& b) {
      return std::tie(a.received_at, a.scheme, a.event_id) < std::tie(b.received_at, b.scheme, b.event_id);
    });
    return out;
  }

  bool apply_kept_event(const LedgerEvent& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    const EventKey key{e.scope, e.scheme, e.event_id};
    const auto k = kept_.find(key);
    if (k == kept_.end()) return false;  // applied already, or never stored (or pruned)
    const auto ev = events_.find(key);
    const LedgerEvent& stored = ev->second.event;
    const auto row = target(stored.scope, stored.order_id, stored.provider_payment_id);
    if (row == rows_.end() || row->second.row.state == PaymentState::in_flight) return false;
    append(row, ev);
    kept_.erase(k);
    return true;
  }

  std::vector<PaymentRow> list(std::optional<PaymentState> state, int64_t updated_before, int limit,
                               const std::optional<std::string>& scope) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<PaymentRow> out;
    for (const auto& [id, p] : rows_) {
      const PaymentRow& r = p.row;
      if ((!state || r.state == *state) && (updated_before <= 0 || r.updated_at < updated_before) &&
          (!scope || r.scope == *scope))
        out.push_back(r);
    }
    std::sort(out.begin(), out.end(), [](const PaymentRow& a, const PaymentRow& b) {
      return a.updated_at != b.updated_at ? a.updated_at < b.updated_at : a.order_id < b.order_id;
    });
    if (limit >= 0 && out.size() > static_cast<size_t>(limit)) out.resize(static_cast<size_t>(limit));
    return out;
  }

 private:
  using EventKey = std::tuple<std::string, std::string, std::string>;  // scope, scheme, event id
  // A payment: its row, its history and the events applied to it,
  // forgotten together.
  struct Payment {
    PaymentRow row;
    std::map<int, AttemptEntry> attempts;
    std::vector<EventKey> events;
  };
  using Rows = std::map<std::string, Payment>;
  // An event as stored: the entry unnumbered until applied.
  struct Stored {
    LedgerEvent event;
    std::string applied_to;  // the order whose history holds its entry; "" while kept
  };
  using Events = std::map<EventKey, Stored>;

  // The row an event lands on (Ledger::record_event): its order's, when
  // that row is of the event's scope and names no other provider payment;
  // else the first (by order id) of the scope with its provider payment id;
  // rows_.end() when none.
  Rows::iterator target(const std::string& scope, const std::string& order_id, const std::string& provider_id) {
    if (!order_id.empty()) {
      const auto it = rows_.find(order_id);
      if (it != rows_.end() && it->second.row.scope == scope &&
          (provider_id.empty() || it->second.row.provider_payment_id.empty() ||
           it->second.row.provider_payment_id == provider_id))
        return it;
    }
    if (!provider_id.empty()) {
      const auto p = by_provider_.find({scope, provider_id});
      if (p != by_provider_.end() && !p->second.empty()) return rows_.find(*p->second.begin());
    }
    return rows_.end();
  }

  // The event's entry as the row's next one; the state the event moves it
  // to (event_moves), and with it the provider's id when the row has none
  // (event_teaches_id); the money state, when the event is provably the
  // row's payment's (event_moves_money). Both judged on the row as it was
  // before the event, as the SQL backends' one UPDATE does.
  void append(Rows::iterator row, Events::iterator ev) {
    Payment& p = row->second;
    const LedgerEvent& e = ev->second.event;
    AttemptEntry a = e.entry;
    a.number = p.row.attempts + 1;
    const bool learns_id = event_teaches_id(p.row, e);
    const bool moves_money = event_moves_money(p.row, e);
    if (learns_id) by_provider_[{p.row.scope, e.provider_payment_id}].insert(row->first);  // may throw: nothing changed yet
    p.events.push_back(ev->first);
    try {
      store_attempt(p, a);
    } catch (...) {
      p.events.pop_back();
      if (learns_id) unindex(p.row.scope, e.provider_payment_id, row->first);
      throw;
    }
    ev->second.applied_to = row->first;
    PaymentRow& r = p.row;
    if (learns_id) r.provider_payment_id = e.provider_payment_id;
    if (moves_money) r.money_state = money_after(r.money_state, e.entry.money_state);
    if (const std::optional<PaymentState> to = event_moves(r.state, a)) {
      r.state = *to;
      r.delivery = "delivered";
      r.detail = event_settled_detail(a);
      r.provider_status = a.reason;
      if (final_state(r.state)) {
        note_settled(row);
        forget_beyond_cap();
      }
    }
  }

  void unindex(const std::string& scope, const std::string& provider_id, const std::string& order_id) {
    const auto p = by_provider_.find({scope, provider_id});
    if (p == by_provider_.end()) return;
    p->second.erase(order_id);
    if (p->second.empty()) by_provider_.erase(p);
  }

  void unindex_provider(const PaymentRow& r) {
    if (!r.provider_payment_id.empty()) unindex(r.scope, r.provider_payment_id, r.order_id);
  }

  // Under the mutex: create_and_claim.
  CreateOutcome create_locked(const PaymentRow& proposed, const std::string& owner, int64_t now,
                              int64_t lease_until) {
    CreateOutcome out;
    // One walk of each tree: where the order and the key are, or would go.
    const auto it = rows_.lower_bound(proposed.order_id);
    if (it != rows_.end() && it->first == proposed.order_id) {
      out.row = it->second.row;
      return out;
    }
    const auto key_at = keys_.lower_bound(proposed.idempotency_key);
    if (key_at != keys_.end() && *key_at == proposed.idempotency_key) {
      out.key_taken = true;
      out.row.order_id = proposed.order_id;
      return out;
    }
    // Keep what the durable backends keep, nothing more. Both or neither:
    // a row whose key is not in keys_ would let another order take the key.
    // The key set views the stored row's key, so the row goes in first.
    const auto stored = rows_.emplace_hint(it, proposed.order_id,
                                           Payment{created_row(proposed, owner, now, lease_until), {}, {}});
    try {
      keys_.emplace_hint(key_at, stored->second.row.idempotency_key);
    } catch (...) {
      rows_.erase(stored);
      throw;
    }
    out.row = stored->second.row;
    out.created = true;
    return out;
  }

  // The operation rows of the payment of order `parent`: every row id
  // "<parent> ..." (operation_row_id), one range of the map, since no
  // order id holds a space.
  std::vector<Rows::iterator> family_of(const std::string& parent) {
    const std::string prefix = parent + " ";
    std::vector<Rows::iterator> out;
    for (auto it = rows_.lower_bound(prefix); it != rows_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
         ++it)
      if (it->second.row.parent_order_id == parent) out.push_back(it);
    return out;
  }

  // A final row joins the settled FIFO when it is a payment's create. An
  // operation row is forgotten only with its payment (forget_family): the
  // guard must count every operation its payment has had.
  void note_settled(Rows::iterator it) {
    if (it->second.row.operation == OperationKind::create) settled_.push_back(&it->first);
  }

  void forget_family(Rows::iterator payment, const std::vector<Rows::iterator>& ops) {
    for (const Rows::iterator& op : ops) forget(op);  // a std::map's other iterators stay valid
    forget(payment);
  }

  // A row leaves with its key, its provider id's index entry and the
  // events applied to it.
  void forget(Rows::iterator it) {
    for (const EventKey& k : it->second.events) events_.erase(k);
    unindex_provider(it->second.row);
    keys_.erase(it->second.row.idempotency_key);
    rows_.erase(it);
  }

  // The row, when `owner` holds its claim; rows_.end() otherwise.
  Rows::iterator fenced(const std::string& order_id, const std::string& owner) {
    auto it = rows_.find(order_id);
    if (it == rows_.end() || it->second.row.state != PaymentState::in_flight || it->second.row.lease_owner != owner)
      return rows_.end();
    return it;
  }
  void store_attempt(Payment& p, const AttemptEntry& a) {
    // Never overwritten: only the claim's holder writes, numbering after
    // the row's count, so a clash is a bug that must not pass silently.
    if (!p.attempts.emplace(a.number, a).second)
      throw LedgerError("ledger (memory): entry " + std::to_string(a.number) + " of order " + p.row.order_id +
                        " is already recorded; entries are never overwritten");
    p.row.attempts = std::max(p.row.attempts, a.number);
    p.row.updated_at = std::max(p.row.updated_at, a.ended_at);
  }

  // The first settled rows beyond the cap, each with its history and key.
  // Not when its key expires: the row is then the only thing that answers
  // a re-submission of its order with the stored outcome instead of a new
  // payment under a new key (the DST's same_key_and_bytes invariant).
  //
  // A payment with an operation still open stays (Ledger::prune_settled
  // says why) and goes to the back; the others go with their operations.
  // At most one look at each held payment per call, so a cap that only
  // payments with open operations exceed ends the loop.
  void forget_beyond_cap() {
    for (size_t looks = settled_.size(); max_settled_ > 0 && settled_.size() > max_settled_ && looks > 0; --looks) {
      auto it = rows_.find(*settled_.front());
      settled_.pop_front();
      const std::vector<Rows::iterator> ops = family_of(it->first);
      const bool open = std::any_of(ops.begin(), ops.end(),
                                    [](const Rows::iterator& op) { return !final_state(op->second.row.state); });
      if (open) {
        settled_.push_back(&it->first);
        continue;
      }
      forget_family(it, ops);
    }
  }

  std::mutex mu_;
  std::string secret_;
  const size_t max_settled_;
  Rows rows_;
  // Every row's idempotency key, viewed in its row: a std::map never moves
  // its nodes and a row's key never changes, and each view leaves the set
  // before its row leaves rows_.
  std::set<std::string_view> keys_;
  // The final rows in settle order (pointers to their rows_ keys, which a
  // std::map never moves). A final row never changes again and leaves only
  // from the front, so this FIFO is the whole index: a settle costs O(log n)
  // for the row's erase and never scans every row.
  std::deque<const std::string*> settled_;
  // Every event recorded and not yet pruned: "apply once" is this map's key.
  Events events_;
  // The events kept for later (a subset of events_' keys).
  std::set<EventKey> kept_;
  // Rows by (scope, provider payment id), for events that name only that.
  std::map<std::pair<std::string, std::string>, std::set<std::string>> by_provider_;
};

}  // namespace

MemoryLedgerOptions parse_memory_ledger_url(const std::string& url) {
  static const std::string scheme = "memory:";
  if (url.compare(0, scheme.size(), scheme) != 0) throw LedgerError("ledger: not a memory: URL");
  MemoryLedgerOptions o;
  if (url.size() == scheme.size()) return o;
  if (url[scheme.size()] != '?' || url.size() == scheme.size() + 1)
    throw LedgerError("ledger: a memory URL is memory: or memory:?max_settled=N, not " + url);
  bool seen_max_settled = false;
  size_t at = scheme.size() + 1;
  for (;;) {
    const size_t amp = url.find('&', at);
    const std::string param = url.substr(at, amp == std::string::npos ? std::string::npos : amp - at);
    const size_t eq = param.find('=');
    const std::string name = param.substr(0, eq);
    if (name != "max_settled")
      throw LedgerError("ledger: memory URL parameter \"" + name + "\" is unknown; the only one is max_settled");
    if (seen_max_settled) throw LedgerError("ledger: memory URL parameter max_settled is given twice");
    seen_max_settled = true;
    const std::string value = eq == std::string::npos ? std::string() : param.substr(eq + 1);
    // Digits only, no sign, no exponent, at most 10 of them: a value that
    // is not plainly a count is refused, not read as some other count.
    const bool digits = !value.empty() && value.size() <= 10 &&
                        value.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoull(value) > kMaxMaxSettled)
      throw LedgerError("ledger: memory URL parameter max_settled must be a whole number from 0 (no cap) to " +
                        std::to_string(kMaxMaxSettled) + ", not \"" + value + "\"");
    o.max_settled = static_cast<size_t>(std::stoull(value));
    if (amp == std::string::npos) return o;
    at = amp + 1;
  }
}

std::unique_ptr<Ledger> open_memory_ledger(const std::string& secret_override, const MemoryLedgerOptions& options) {
  return std::make_unique<MemoryLedger>(secret_override.empty() ? new_ledger_secret() : secret_override, options);
}

}  // namespace payretry
