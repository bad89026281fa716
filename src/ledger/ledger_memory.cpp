#include "ledger_memory.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "fingerprint.hpp"

namespace payretry {
namespace {

bool claimable(const PaymentRow& r, int64_t now) {
  return r.state == PaymentState::pending || r.state == PaymentState::unknown ||
         (r.state == PaymentState::in_flight && r.lease_until < now);
}

class MemoryLedger final : public Ledger {
 public:
  explicit MemoryLedger(std::string secret) : secret_(std::move(secret)) {}

  std::string secret() override { return secret_; }
  bool waits_on_io() const override { return false; }

  CreateOutcome create_and_claim(const PaymentRow& proposed, const std::string& owner, int64_t now,
                                 int64_t lease_until) override {
    std::lock_guard<std::mutex> lock(mu_);
    CreateOutcome out;
    auto it = rows_.find(proposed.order_id);
    if (it != rows_.end()) {
      out.row = it->second;
      return out;
    }
    if (keys_.count(proposed.idempotency_key)) {
      out.key_taken = true;
      out.row.order_id = proposed.order_id;
      return out;
    }
    // Keep what the durable backends keep, nothing more.
    PaymentRow row;
    row.order_id = proposed.order_id;
    row.idempotency_key = proposed.idempotency_key;
    row.fingerprint = proposed.fingerprint;
    row.key_expires_at = proposed.key_expires_at;
    row.state = PaymentState::in_flight;
    row.lease_owner = owner;
    row.lease_until = lease_until;
    row.created_at = row.updated_at = now;
    rows_[row.order_id] = row;
    keys_.insert(row.idempotency_key);
    out.row = row;
    out.created = true;
    return out;
  }

  bool claim(const std::string& order_id, const std::string& owner, int64_t now, int64_t lease_until) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rows_.find(order_id);
    if (it == rows_.end() || !claimable(it->second, now)) return false;
    it->second.state = PaymentState::in_flight;
    it->second.lease_owner = owner;
    it->second.lease_until = lease_until;
    it->second.updated_at = now;
    return true;
  }

  bool record_attempt(const std::string& order_id, const std::string& owner, const AttemptEntry& a) override {
    std::lock_guard<std::mutex> lock(mu_);
    PaymentRow* r = fenced(order_id, owner);
    if (!r) return false;
    store_attempt(*r, a);
    return true;
  }

  bool settle(const std::string& order_id, const std::string& owner, const AttemptEntry* last, const Settlement& s,
              int64_t now) override {
    std::lock_guard<std::mutex> lock(mu_);
    PaymentRow* r = fenced(order_id, owner);
    if (!r) return false;
    if (last) store_attempt(*r, *last);
    r->state = s.state;
    r->delivery = s.delivery;
    r->detail = s.detail;
    r->provider_payment_id = s.provider_payment_id;
    r->provider_status = s.provider_status;
    r->http_status = s.http_status;
    r->lease_owner.clear();
    r->lease_until = 0;
    r->updated_at = std::max(r->updated_at, now);
    return true;
  }

  std::optional<PaymentRow> get(const std::string& order_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rows_.find(order_id);
    if (it == rows_.end()) return std::nullopt;
    return it->second;
  }

  std::vector<AttemptEntry> attempts(const std::string& order_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<AttemptEntry> out;
    auto it = attempts_.find(order_id);
    if (it != attempts_.end())
      for (const auto& [n, a] : it->second) out.push_back(a);
    return out;
  }

  std::vector<PaymentRow> list(std::optional<PaymentState> state, int64_t updated_before, int limit) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<PaymentRow> out;
    for (const auto& [id, r] : rows_)
      if ((!state || r.state == *state) && (updated_before <= 0 || r.updated_at < updated_before)) out.push_back(r);
    std::sort(out.begin(), out.end(), [](const PaymentRow& a, const PaymentRow& b) {
      return a.updated_at != b.updated_at ? a.updated_at < b.updated_at : a.order_id < b.order_id;
    });
    if (limit >= 0 && out.size() > static_cast<size_t>(limit)) out.resize(static_cast<size_t>(limit));
    return out;
  }

 private:
  PaymentRow* fenced(const std::string& order_id, const std::string& owner) {
    auto it = rows_.find(order_id);
    if (it == rows_.end() || it->second.state != PaymentState::in_flight || it->second.lease_owner != owner)
      return nullptr;
    return &it->second;
  }
  void store_attempt(PaymentRow& r, const AttemptEntry& a) {
    // Never overwritten: only the claim's holder writes, numbering after
    // the row's count, so a clash is a bug that must not pass silently.
    if (!attempts_[r.order_id].emplace(a.number, a).second)
      throw LedgerError("ledger (memory): entry " + std::to_string(a.number) + " of order " + r.order_id +
                        " is already recorded; entries are never overwritten");
    r.attempts = std::max(r.attempts, a.number);
    r.updated_at = std::max(r.updated_at, a.ended_at);
  }

  std::mutex mu_;
  std::string secret_;
  std::map<std::string, PaymentRow> rows_;
  std::set<std::string> keys_;
  std::map<std::string, std::map<int, AttemptEntry>> attempts_;
};

}  // namespace

std::unique_ptr<Ledger> open_memory_ledger(const std::string& secret_override) {
  return std::make_unique<MemoryLedger>(secret_override.empty() ? new_ledger_secret() : secret_override);
}

}  // namespace payretry
