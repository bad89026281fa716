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

namespace payretry {
namespace pg {

#define PAYRETRY_ROW_COLUMNS                                                                           \
  "order_id, idempotency_key, fingerprint, state, delivery, detail, provider_payment_id, provider_status, " \
  "http_status, attempts, created_at, key_expires_at, lease_owner, lease_until, updated_at"

// The writes, one statement each (see the .cpp for what each answers).
extern const char* const kCreate;
extern const char* const kRecord;
extern const char* const kSettle;

// A row as stored: lease_until on the SERVER's clock.
PaymentRow read_row(const PGresult* r, int i);

// Lease ends are stored and compared on the server's clock; callers get
// them on their own clock. 0 (no lease) stays 0.
inline int64_t to_server(const Session& s, int64_t client_ms) { return client_ms + s.offset; }
PaymentRow to_client(const Session& s, PaymentRow r);

std::optional<PaymentRow> get_row(Session& s, const std::string& order_id);
std::vector<AttemptEntry> get_attempts(Session& s, const std::string& order_id);

// Free text (details, reasons, provider strings) comes from the network and
// may hold bytes PostgreSQL refuses in a UTF-8 database; a settlement must
// not fail over one odd byte. Invalid sequences become U+FFFD, NULs vanish.
std::string clean_text(const std::string& s);

// Identifiers must reach the server byte for byte: a NUL would silently cut
// an order id short (and merge two orders), so it is refused instead.
void check_identifier(const char* what, const std::string& v);

// An entry's fields after its number, as the $-parameters of the write
// statements below: started_at, ended_at, http_status, transport_error,
// verdict, reason, delay_ms, provider_request_id, replayed, kind, processed.
void add_attempt_fields(Params& p, const AttemptEntry& a);

// What kRecord / kSettle answered: false when the lease was not held.
bool fenced_write_done(Session& s, const PGresult* r, const std::string& order_id, const AttemptEntry* entry);

}  // namespace pg
}  // namespace payretry
