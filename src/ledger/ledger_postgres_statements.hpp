// The PostgreSQL ledger's SQL for rows and history entries: the reads, the
// one-statement writes, and the parameters and rows they carry.
#pragma once
#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ledger.hpp"
#include "ledger_postgres_session.hpp"
#include "sql_row_codec.hpp"

namespace payretry {
namespace pg {

// One row of a result for the row codec: integers checked (as_int),
// booleans in PostgreSQL's text form.
class PgRow final : public SqlRowReader {
 public:
  PgRow(const PGresult* r, int i) : r_(r), i_(i) {}
  std::string text(int col) const override { return as_text(r_, i_, col); }
  int64_t integer(int col) const override { return as_int(r_, i_, col); }
  bool boolean(int col) const override { return as_text(r_, i_, col) == "t"; }
  bool is_null(int col) const override { return PQgetisnull(r_, i_, col) != 0; }

 private:
  const PGresult* r_;
  int i_;
};

// A row of PAYRETRY_PAYMENT_COLUMNS as stored: lease_until on the
// SERVER's clock.
PaymentRow read_row(const PGresult* r, int i);
// A row of PAYRETRY_EVENT_COLUMNS.
LedgerEvent read_event_row(const PGresult* r, int i);

// Lease ends are stored and compared on the server's clock; callers get
// them on their own clock. 0 (no lease) stays 0.
inline int64_t to_server(const Session& s, int64_t client_ms) { return client_ms + s.offset; }
PaymentRow to_client(const Session& s, PaymentRow r);

std::optional<PaymentRow> get_row(Session& s, const std::string& order_id);
// The payment's operation rows (Ledger::operations_of, and the guard's
// read in create_operation_and_claim), in row id order; parameter $1 the
// payment's order id.
extern const char* const kFamilyRows;
// The payment's operation rows (Ledger::operations_of).
std::vector<PaymentRow> get_operation_rows(Session& s, const std::string& order_id);
// The first row (by row id) of `scope` holding provider id `provider_id` (Ledger::find_by_provider_id).
std::optional<PaymentRow> get_row_by_provider_id(Session& s, const std::string& scope, const std::string& provider_id);
std::vector<AttemptEntry> get_attempts(Session& s, const std::string& order_id);

// Free text (details, reasons, provider strings) comes from the network and
// may hold bytes PostgreSQL refuses in a UTF-8 database; a settlement must
// not fail over one odd byte. Invalid sequences become U+FFFD, NULs vanish.
std::string clean_text(const std::string& s);

// Identifiers must reach the server byte for byte: a NUL would silently cut
// an order id short (and merge two orders), so it is refused instead.
void check_identifier(const char* what, const std::string& v);

// ---- the writes, one statement each, inside a caller's transaction -------

// Creates and claims `p` for `owner` unless its order exists (kCreate).
Query create_query(const Session& s, const PaymentRow& p, const std::string& owner, int64_t now,
                   int64_t lease_until);
// What create_query's statement answered.
Ledger::CreateOutcome create_done(Session& s, const PGresult* r, const std::string& order_id);
// Appends `a`, fenced by the lease (kRecord).
Query record_query(const std::string& order_id, const std::string& owner, const AttemptEntry& a);
// Settles, releases the lease and appends `last` when given, fenced (kSettle).
Query settle_query(const std::string& order_id, const std::string& owner, const AttemptEntry* last,
                   const Settlement& st, int64_t now);
// What a record_query / settle_query answered: false when the lease was
// not held.
bool fenced_write_done(Session& s, const PGresult* r, const std::string& order_id, const AttemptEntry* entry);

// ---- many writes of one kind in one statement ------------------------------
//
// A group commit's creates, its records, and its settles, each as ONE statement over
// arrays (unnest ... WITH ORDINALITY): the server plans and runs one
// statement for the batch instead of one per entry. Only for entries of
// distinct orders (and, for creates, distinct keys), where the one
// statement means exactly what the entries one after another would; a
// batch with a repeat sends them one by one.

// Whether `creates` / `records` / `settles` may go as one statement.
bool creates_in_one(const LedgerBatch& b);
bool records_in_one(const LedgerBatch& b);
bool settles_in_one(const LedgerBatch& b);
// The create_query / record_query / settle_query of each entry, as one statement.
Query creates_query(const std::vector<Query>& each);
Query records_query(const std::vector<Query>& each);
Query settles_query(const std::vector<Query>& each);
// The answer of creates_query: each entry's outcome, in order.
std::vector<Ledger::CreateOutcome> creates_done(Session& s, const PGresult* r, const LedgerBatch& b);
// The answer of records_query / settles_query: whether each entry's lease
// was held, in order.
std::vector<char> records_done(Session& s, const PGresult* r, const LedgerBatch& b);
std::vector<char> settles_done(Session& s, const PGresult* r, const LedgerBatch& b);

}  // namespace pg
}  // namespace payretry
