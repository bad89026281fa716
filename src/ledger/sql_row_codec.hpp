// The one mapping between the ledger's records and SQL columns, shared by
// the SQL backends (ledger_sqlite.cpp, ledger_postgres_statements.cpp) so
// that they cannot read or write one row two ways: which columns, in which
// order, state names, booleans, a NULL "processed", and what a state this
// code does not know means. Each backend supplies only its driver's way of
// getting a column's value and of binding a parameter.
#pragma once
#include <cstdint>
#include <string>

#include "ledger.hpp"

namespace payretry {

// The payments columns of a PaymentRow, in the order read_payment reads
// them (kPaymentColumns of them: a statement that returns more puts its
// own after these). Macros, not constants, so that the backends' constant
// statements are built from them at compile time. scope,
// submission_headers and submission_path came with schema 3, last, so that
// every column before them kept its position; money_state with schema 5,
// after them, for the same reason; and schema 6's operation,
// parent_order_id, operation_ref and amount after that.
#define PAYRETRY_PAYMENT_COLUMNS                                                                          \
  "order_id, idempotency_key, fingerprint, state, delivery, detail, provider_payment_id, provider_status, " \
  "http_status, attempts, created_at, key_expires_at, lease_owner, lease_until, updated_at, scope, "         \
  "submission_headers, submission_path, money_state, operation, parent_order_id, operation_ref, amount"

// How many columns PAYRETRY_PAYMENT_COLUMNS names: where the columns a
// statement adds after them begin.
constexpr int kPaymentColumns = 23;
constexpr int count_columns(const char* list) {
  int n = 1;
  for (; *list; ++list) n += *list == ',';
  return n;
}
static_assert(count_columns(PAYRETRY_PAYMENT_COLUMNS) == kPaymentColumns, "kPaymentColumns counts the columns");

// The attempts columns of an AttemptEntry, in the order read_attempt reads
// them; write_attempt_fields writes them in the same order, from
// started_at on. money_state (schema 5) last, so that the others kept
// their positions.
#define PAYRETRY_ATTEMPT_COLUMNS                                                                      \
  "number, started_at, ended_at, http_status, transport_error, verdict, reason, delay_ms, " \
  "provider_request_id, replayed, kind, processed, money_state"

// The webhook_events columns of a LedgerEvent (schema 4), in the order
// read_event reads them and write_event writes them: its identity, what it
// names, when it came, then its entry's PAYRETRY_ATTEMPT_COLUMNS after the
// number (an event's entry is numbered only when it joins a history).
#define PAYRETRY_EVENT_COLUMNS                                                                         \
  "scope, scheme, event_id, order_id, provider_payment_id, received_at, started_at, ended_at, "          \
  "http_status, transport_error, verdict, reason, delay_ms, provider_request_id, replayed, kind, processed, " \
  "money_state"
constexpr int kEventColumns = 18;
static_assert(count_columns(PAYRETRY_EVENT_COLUMNS) == kEventColumns, "kEventColumns counts the columns");

// One row of a result as a backend's driver holds it; columns by position.
class SqlRowReader {
 public:
  virtual std::string text(int col) const = 0;
  virtual int64_t integer(int col) const = 0;
  virtual bool boolean(int col) const = 0;
  virtual bool is_null(int col) const = 0;

 protected:
  ~SqlRowReader() = default;
};

// The parameters of a statement, appended in order, as a backend's driver
// binds them.
class SqlParamWriter {
 public:
  virtual void text(const std::string& v) = 0;
  virtual void integer(int64_t v) = 0;
  virtual void boolean(bool v) = 0;
  virtual void null() = 0;

 protected:
  ~SqlParamWriter() = default;
};

// A stored value the codec refuses to read (see read_state). The message
// names the order and the value; a backend adds its own prefix.
class UnreadableRow : public LedgerError {
 public:
  using LedgerError::LedgerError;
};

// The state column of order `order_id`'s row. Throws UnreadableRow for a
// string that names no PaymentState.
PaymentState read_state(const std::string& stored, const std::string& order_id);

// A money_state column (schema 5) of `whose` ("payment o-1", "entry 3 of
// order o-1", ...). Throws UnreadableRow for a string that names no
// MoneyState, for the reasons read_state gives.
MoneyState read_money_state(const std::string& stored, const std::string& whose);

// An operation column (schema 6) of order `order_id`'s row. Throws
// UnreadableRow for a kind name this code does not know, for the reasons
// read_state gives: read as a create, a refund of a later payretry would
// drop out of its payment's guard.
OperationKind read_operation(const std::string& stored, const std::string& order_id);

// A row of PAYRETRY_PAYMENT_COLUMNS, as stored (a backend translates clocks
// itself). Throws UnreadableRow.
PaymentRow read_payment(const SqlRowReader& row);

// A row of PAYRETRY_ATTEMPT_COLUMNS of order `order_id`'s history (named
// when the row is refused). A NULL processed (an entry written before
// schema 2) stays nullopt: "may have been processed". Throws UnreadableRow.
AttemptEntry read_attempt(const SqlRowReader& row, const std::string& order_id);

// A row of PAYRETRY_EVENT_COLUMNS; the entry's number is 0. Throws
// UnreadableRow.
LedgerEvent read_event(const SqlRowReader& row);

// An event as the parameters of PAYRETRY_EVENT_COLUMNS, in that order.
void write_event(SqlParamWriter& out, const LedgerEvent& e);

// A settlement as the parameters state, delivery, detail,
// provider_payment_id, provider_status, http_status, money_state, in that
// order. The money state is what the run read; the statement moves the
// stored one by it (sql_money.hpp), never sets it.
void write_settlement(SqlParamWriter& out, const Settlement& s);

// An entry's PAYRETRY_ATTEMPT_COLUMNS after its number, in that order
// (started_at ... processed, money_state; NULL when processed is not
// known).
void write_attempt_fields(SqlParamWriter& out, const AttemptEntry& a);

}  // namespace payretry
