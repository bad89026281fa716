#include "sql_row_codec.hpp"

#include <optional>

namespace payretry {

// A state string this code does not know (a hand edit, a row written by a
// later payretry, a damaged store) is refused: the read fails with a
// LedgerError naming the order and the string, which fails the call with
// PAY_ELEDGER before anything is sent, writes nothing, and leaves the row as
// it is for an operator. Reading it as UNKNOWN would lose the stored state
// and mislead: the ledger's own statements compare the stored string, so
// such a row would be reported UNKNOWN yet refuse the claim any UNKNOWN row
// allows and never be listed as UNKNOWN for reconciling; a submit of its
// order would then re-read and re-claim it without end, and pay_ledger_get
// would report a state the store does not hold. Neither reading ever lets
// the payment be sent as new; only the refusal says what is wrong.
PaymentState read_state(const std::string& stored, const std::string& order_id) {
  const std::optional<PaymentState> state = parse_state(stored);
  if (!state) throw UnreadableRow("payment " + order_id + " has an unknown state '" + stored + "'");
  return *state;
}

// A money state string this code does not know (a hand edit, a state a
// later payretry appended) is refused as a state string is: read as
// `unknown`, a row that a later payretry recorded `paid` would be settled
// or shown as if nothing had moved, and this code's forward-only moves
// (which compare the stored string) would then leave it as it is anyway.
MoneyState read_money_state(const std::string& stored, const std::string& whose) {
  const std::optional<MoneyState> money = parse_money_state(stored);
  if (!money) throw UnreadableRow(whose + " has an unknown money state '" + stored + "'");
  return *money;
}

OperationKind read_operation(const std::string& stored, const std::string& order_id) {
  const std::optional<OperationKind> kind = parse_operation_kind(stored);
  if (!kind) throw UnreadableRow("payment " + order_id + " has an unknown operation '" + stored + "'");
  return *kind;
}

PaymentRow read_payment(const SqlRowReader& row) {
  PaymentRow p;
  p.order_id = row.text(0);
  p.idempotency_key = row.text(1);
  p.fingerprint = row.text(2);
  p.state = read_state(row.text(3), p.order_id);
  p.delivery = row.text(4);
  p.detail = row.text(5);
  p.provider_payment_id = row.text(6);
  p.provider_status = row.text(7);
  p.http_status = static_cast<int>(row.integer(8));
  p.attempts = static_cast<int>(row.integer(9));
  p.created_at = row.integer(10);
  p.key_expires_at = row.integer(11);
  p.lease_owner = row.text(12);
  p.lease_until = row.integer(13);
  p.updated_at = row.integer(14);
  p.scope = row.text(15);
  p.submission_headers = row.text(16);
  p.submission_path = row.text(17);
  p.money_state = read_money_state(row.text(18), "payment " + p.order_id);
  p.operation = read_operation(row.text(19), p.order_id);
  p.parent_order_id = row.text(20);
  p.operation_ref = row.text(21);
  p.amount = row.integer(22);
  return p;
}

namespace {
// A history entry's columns but its number, from column `at` on, in the
// order write_attempt_fields writes them: an attempt's row and an event's
// (`whose` names it when it is refused).
void read_entry_fields(const SqlRowReader& row, int at, AttemptEntry& a, const std::string& whose) {
  a.started_at = row.integer(at);
  a.ended_at = row.integer(at + 1);
  a.http_status = static_cast<int>(row.integer(at + 2));
  a.transport_error = row.text(at + 3);
  a.verdict = row.text(at + 4);
  a.reason = row.text(at + 5);
  a.delay_ms = row.integer(at + 6);
  a.provider_request_id = row.text(at + 7);
  a.replayed = row.boolean(at + 8);
  a.kind = row.text(at + 9);
  if (!row.is_null(at + 10)) a.processed = row.boolean(at + 10);
  a.money_state = read_money_state(row.text(at + 11), whose);
}
}  // namespace

AttemptEntry read_attempt(const SqlRowReader& row, const std::string& order_id) {
  AttemptEntry a;
  a.number = static_cast<int>(row.integer(0));
  read_entry_fields(row, 1, a, "entry " + std::to_string(a.number) + " of payment " + order_id);
  return a;
}

LedgerEvent read_event(const SqlRowReader& row) {
  LedgerEvent e;
  e.scope = row.text(0);
  e.scheme = row.text(1);
  e.event_id = row.text(2);
  e.order_id = row.text(3);
  e.provider_payment_id = row.text(4);
  e.received_at = row.integer(5);
  e.entry.number = 0;  // the ledger's to give when it is applied
  read_entry_fields(row, 6, e.entry, "webhook event " + e.scheme + " " + e.event_id);
  return e;
}

void write_event(SqlParamWriter& out, const LedgerEvent& e) {
  out.text(e.scope);
  out.text(e.scheme);
  out.text(e.event_id);
  out.text(e.order_id);
  out.text(e.provider_payment_id);
  out.integer(e.received_at);
  write_attempt_fields(out, e.entry);
}

void write_settlement(SqlParamWriter& out, const Settlement& s) {
  out.text(state_name(s.state));
  out.text(s.delivery);
  out.text(s.detail);
  out.text(s.provider_payment_id);
  out.text(s.provider_status);
  out.integer(s.http_status);
  out.text(money_state_name(s.money_state));
}

void write_attempt_fields(SqlParamWriter& out, const AttemptEntry& a) {
  out.integer(a.started_at);
  out.integer(a.ended_at);
  out.integer(a.http_status);
  out.text(a.transport_error);
  out.text(a.verdict);
  out.text(a.reason);
  out.integer(a.delay_ms);
  out.text(a.provider_request_id);
  out.boolean(a.replayed);
  out.text(a.kind);
  if (a.processed) out.boolean(*a.processed);
  else out.null();
  out.text(money_state_name(a.money_state));
}

}  // namespace payretry
