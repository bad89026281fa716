#include "ledger.hpp"

#include "ledger_memory.hpp"
#ifdef PAYRETRY_WITH_POSTGRESQL
#include "ledger_postgres.hpp"
#endif
#ifdef PAYRETRY_WITH_SQLITE
#include "ledger_sqlite.hpp"
#endif

namespace payretry {

const char* state_name(PaymentState s) {
  switch (s) {
    case PaymentState::pending: return "PENDING";
    case PaymentState::in_flight: return "IN_FLIGHT";
    case PaymentState::succeeded: return "SUCCEEDED";
    case PaymentState::failed: return "FAILED";
    case PaymentState::unknown: return "UNKNOWN";
  }
  return "?";
}

std::optional<PaymentState> parse_state(std::string_view s) {
  for (PaymentState p : {PaymentState::pending, PaymentState::in_flight, PaymentState::succeeded,
                         PaymentState::failed, PaymentState::unknown})
    if (s == state_name(p)) return p;
  return std::nullopt;
}

Settlement settlement_of(const PaymentRow& row) {
  Settlement s;
  const bool final = row.state == PaymentState::succeeded || row.state == PaymentState::failed;
  s.state = final ? row.state : PaymentState::unknown;
  s.delivery = row.delivery.empty() ? "maybe_processed" : row.delivery;
  s.detail = row.detail;
  s.provider_payment_id = row.provider_payment_id;
  s.provider_status = row.provider_status;
  s.http_status = row.http_status;
  s.money_state = row.money_state;
  return s;
}

PaymentRow with_settlement(PaymentRow row, const Settlement& s) {
  row.state = s.state;
  row.delivery = s.delivery;
  row.detail = s.detail;
  if (!s.provider_payment_id.empty()) row.provider_payment_id = s.provider_payment_id;
  row.provider_status = s.provider_status;
  row.http_status = s.http_status;
  row.money_state = money_after(row.money_state, s.money_state);
  return row;
}

PaymentRow created_row(const PaymentRow& proposed, const std::string& owner, int64_t now, int64_t lease_until) {
  PaymentRow row;
  row.order_id = proposed.order_id;
  row.idempotency_key = proposed.idempotency_key;
  row.fingerprint = proposed.fingerprint;
  row.key_expires_at = proposed.key_expires_at;
  row.scope = proposed.scope;
  row.submission_headers = proposed.submission_headers;
  row.submission_path = proposed.submission_path;
  row.operation = proposed.operation;
  row.parent_order_id = proposed.parent_order_id;
  row.operation_ref = proposed.operation_ref;
  row.amount = proposed.amount;
  row.state = PaymentState::in_flight;
  row.lease_owner = owner;
  row.lease_until = lease_until;
  row.created_at = row.updated_at = now;
  return row;
}

void Ledger::apply(LedgerBatch& b) {
  for (auto& c : b.creates) {
    try {
      CreateOutcome o = create_and_claim(c.proposed, c.owner, c.now, c.lease_until);
      c.out.row = std::move(o.row);
      c.out.created = o.created;
      c.out.key_taken = o.key_taken;
    } catch (const std::exception& e) {  // a store error, or out of memory: this entry only
      c.error = e.what();
    }
  }
  for (auto& r : b.records) {
    try {
      r.ok = record_attempt(r.order_id, r.owner, r.attempt);
    } catch (const std::exception& e) {
      r.error = e.what();
    }
  }
  for (auto& s : b.settles) {
    try {
      s.ok = settle(s.order_id, s.owner, s.last ? &*s.last : nullptr, s.settlement, s.now);
    } catch (const std::exception& e) {
      s.error = e.what();
    }
  }
}

void check_ledger_event(const LedgerEvent& e) {
  // An empty id would make every id-less event of the scheme one event (the
  // second a "duplicate"), and an event naming no payment could never land.
  if (e.scheme.empty() || e.event_id.empty())
    throw LedgerError("ledger: a webhook event needs its scheme and its event id");
  if (e.order_id.empty() && e.provider_payment_id.empty())
    throw LedgerError("ledger: a webhook event must name its order or the provider's payment id");
  if (e.entry.verdict != kEventSucceeded && e.entry.verdict != kEventFailed && e.entry.verdict != kEventNoted)
    throw LedgerError("ledger: a webhook event's verdict must be " + std::string(kEventSucceeded) + ", " +
                      kEventFailed + " or " + kEventNoted + ", not \"" + e.entry.verdict + "\"");
  if (e.entry.kind != "webhook")
    throw LedgerError("ledger: a webhook event's history entry must be of kind \"webhook\", not \"" + e.entry.kind +
                      "\"");
}

std::optional<PaymentState> event_moves(PaymentState from, const AttemptEntry& entry) {
  if (from != PaymentState::unknown && from != PaymentState::pending) return std::nullopt;
  if (entry.verdict == kEventSucceeded) return PaymentState::succeeded;
  if (entry.verdict == kEventFailed) return PaymentState::failed;
  return std::nullopt;
}

bool event_teaches_id(const PaymentRow& row, const LedgerEvent& event) {
  if (!row.provider_payment_id.empty() || event.provider_payment_id.empty()) return false;
  if (event_moves(row.state, event.entry)) return true;
  // An operation's event that only notes (Stripe's refund.created, still
  // pending) names the operation all the same: the receiver landed it on
  // this row because it carries the row's own key (operation_event_row), so
  // its id is this row's, and the row can be looked up by it from now on.
  // A payment's noted event teaches nothing: one made elsewhere under the
  // same order id may name another payment.
  return row.operation != OperationKind::create && event.entry.verdict == kEventNoted &&
         (row.state == PaymentState::unknown || row.state == PaymentState::pending);
}

bool event_moves_money(const PaymentRow& row, const LedgerEvent& event) {
  if (event.entry.money_state == MoneyState::unknown) return false;
  if (!event.provider_payment_id.empty())
    return row.provider_payment_id == event.provider_payment_id || event_teaches_id(row, event);
  return event_moves(row.state, event.entry).has_value();
}

std::string event_settled_detail(const AttemptEntry& entry) { return "settled by webhook: " + entry.reason; }

std::unique_ptr<Ledger> open_ledger(const std::string& url, const std::string& secret, int64_t timeout_ms) {
  (void)timeout_ms;  // only the SQL backends wait; the memory ledger never does
  if (is_memory_ledger_url(url)) return open_memory_ledger(secret, parse_memory_ledger_url(url));
  if (url.rfind("sqlite://", 0) == 0) {
    const std::string path = url.substr(9);
    if (path.empty() || path[0] != '/') throw LedgerError("ledger: sqlite URL needs an absolute path: sqlite:///abs/path.db");
#ifdef PAYRETRY_WITH_SQLITE
    return open_sqlite_ledger(path, secret, timeout_ms);
#else
    throw LedgerError("ledger: this libpayretry was built without SQLite (PAYRETRY_WITH_SQLITE=OFF)");
#endif
  }
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) {
#ifdef PAYRETRY_WITH_POSTGRESQL
    return open_postgres_ledger(url, secret, timeout_ms);
#else
    throw LedgerError("ledger: this libpayretry was built without PostgreSQL (PAYRETRY_WITH_POSTGRESQL=OFF)");
#endif
  }
  throw LedgerError("ledger: unknown URL scheme; use memory:, sqlite:///abs/path.db or postgresql://...");
}

bool is_memory_ledger_url(const std::string& url) { return url == "memory:" || url.rfind("memory:?", 0) == 0; }

}  // namespace payretry
