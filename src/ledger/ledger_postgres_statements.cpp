#include "ledger_postgres_statements.hpp"

#include <cstdint>
#include <utility>

namespace payretry {
namespace pg {
namespace {

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

const char* const kGetRow = "SELECT " PAYRETRY_PAYMENT_COLUMNS " FROM payments WHERE order_id = $1";

bool same_attempt(const AttemptEntry& a, const AttemptEntry& b) {
  return a.number == b.number && a.started_at == b.started_at && a.ended_at == b.ended_at &&
         a.http_status == b.http_status && a.transport_error == b.transport_error && a.verdict == b.verdict &&
         a.reason == b.reason && a.delay_ms == b.delay_ms && a.provider_request_id == b.provider_request_id &&
         a.replayed == b.replayed && a.kind == b.kind && a.processed == b.processed;
}

AttemptEntry cleaned(AttemptEntry a) {
  a.transport_error = clean_text(a.transport_error);
  a.verdict = clean_text(a.verdict);
  a.reason = clean_text(a.reason);
  a.provider_request_id = clean_text(a.provider_request_id);
  a.kind = clean_text(a.kind);
  return a;
}

}  // namespace

PaymentRow read_row(const PGresult* r, int i) {
  try {
    return read_payment(PgRow(r, i));
  } catch (const UnreadableRow& e) {
    throw bad_data(e.what());
  }
}

PaymentRow to_client(const Session& s, PaymentRow r) {
  if (r.lease_until != 0) r.lease_until -= s.offset;
  return r;
}

std::optional<PaymentRow> get_row(Session& s, const std::string& order_id) {
  ResultPtr r = exec(s, kGetRow, Params().add(order_id));
  if (PQntuples(r.get()) == 0) return std::nullopt;
  return to_client(s, read_row(r.get(), 0));
}

std::vector<AttemptEntry> get_attempts(Session& s, const std::string& order_id) {
  ResultPtr r = exec(s, "SELECT " PAYRETRY_ATTEMPT_COLUMNS " FROM attempts WHERE order_id = $1 ORDER BY number",
                     Params().add(order_id));
  std::vector<AttemptEntry> out;
  for (int i = 0; i < PQntuples(r.get()); ++i) out.push_back(read_attempt(PgRow(r.get(), i)));
  return out;
}

std::string clean_text(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c == 0) {
      ++i;
      continue;
    }
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    bool ok = len != 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) ok = false;
      else cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (ok) {
      const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      ok = cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

void check_identifier(const char* what, const std::string& v) {
  if (v.find('\0') != std::string::npos)
    throw LedgerError(std::string("ledger (postgresql): the ") + what + " contains a NUL byte");
}

namespace {

// Parameters written by the row codec: free text cleaned for the server
// (clean_text), the rest as Params sends it.
class CleanParams final : public SqlParamWriter {
 public:
  explicit CleanParams(Params& p) : p_(p) {}
  void text(const std::string& v) override { p_.add(clean_text(v)); }
  void integer(int64_t v) override { p_.add(v); }
  void boolean(bool v) override { p_.add(v); }
  void null() override { p_.add_null(); }

 private:
  Params& p_;
};

// ---- the writes, one statement each ------------------------------------------
//
// Each write is ONE statement that never fails for a lost lease or an
// existing row, so that a group commit sends all of its entries in one
// round trip (pipeline mode) without savepoints: the time a batch takes
// does not grow with its size times the network's latency.

// Inserts the row already claimed (nobody ever sees it unclaimed), or
// returns the order's row as it stands (created = false). No row: the key
// belongs to another order, or another transaction committed this order
// after the statement's snapshot: finish_create looks again.
const char* const kCreate =
    "WITH ins AS (INSERT INTO payments (order_id, idempotency_key, fingerprint, state, lease_owner, lease_until, "
    "created_at, key_expires_at, updated_at) "
    "VALUES ($1, $2, $3, 'IN_FLIGHT', $6, $7::bigint, $4::bigint, $5::bigint, $4::bigint) "
    "ON CONFLICT DO NOTHING RETURNING " PAYRETRY_PAYMENT_COLUMNS ") "
    "SELECT " PAYRETRY_PAYMENT_COLUMNS ", true FROM ins UNION ALL "
    "SELECT " PAYRETRY_PAYMENT_COLUMNS ", false FROM payments WHERE order_id = $1 AND NOT EXISTS (SELECT 1 FROM ins)";

// Fenced (only the lease holder of an IN_FLIGHT payment writes), and the
// entry appended, never overwritten: ON CONFLICT leaves an existing entry
// alone and the caller compares it (a rerun finds its own entry; anything
// else is a clash). Answers (rows fenced in, entries inserted).
const char* const kRecord =
    "WITH f AS (UPDATE payments SET attempts = GREATEST(attempts, $3::integer), "
    "updated_at = GREATEST(updated_at, $4::bigint) "
    "WHERE order_id = $1 AND lease_owner = $2 AND state = 'IN_FLIGHT' RETURNING order_id), "
    "ins AS (INSERT INTO attempts (order_id, " PAYRETRY_ATTEMPT_COLUMNS ") "
    "SELECT order_id, $3::integer, $5::bigint, $6::bigint, $7::integer, $8::text, $9::text, $10::text, $11::bigint, "
    "$12::text, $13::boolean, $14::text, $15::boolean FROM f "
    "ON CONFLICT (order_id, number) DO NOTHING RETURNING number) "
    "SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM ins)";

// The settlement, releasing the lease, and the last entry ($23: whether
// there is one), fenced and appended like kRecord.
const char* const kSettle =
    "WITH f AS (UPDATE payments SET state = $3, delivery = $4, detail = $5, provider_payment_id = $6, "
    "provider_status = $7, http_status = $8::integer, lease_owner = '', lease_until = 0, "
    "attempts = GREATEST(attempts, $10::integer), updated_at = GREATEST(updated_at, $9::bigint, $11::bigint) "
    "WHERE order_id = $1 AND lease_owner = $2 AND state = 'IN_FLIGHT' RETURNING order_id), "
    "ins AS (INSERT INTO attempts (order_id, " PAYRETRY_ATTEMPT_COLUMNS ") "
    "SELECT order_id, $10::integer, $12::bigint, $13::bigint, $14::integer, $15::text, $16::text, $17::text, "
    "$18::bigint, $19::text, $20::boolean, $21::text, $22::boolean FROM f WHERE $23::boolean "
    "ON CONFLICT (order_id, number) DO NOTHING RETURNING number) "
    "SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM ins)";

// A group commit sends these three once per entry: each is prepared once per
// connection. A prepared statement lives as long as its connection, which
// lives only in this process, so one name per text is enough.
const Prepared kCreatePrepared{"payretry_create_1", 1u << 0};
const Prepared kRecordPrepared{"payretry_record_1", 1u << 1};
const Prepared kSettlePrepared{"payretry_settle_1", 1u << 2};

// An entry number already taken: fine when it holds this very entry (a
// rerun), a clash otherwise (the transaction then fails as a whole).
void check_same_entry(Session& s, const std::string& order_id, const AttemptEntry& a) {
  const AttemptEntry want = cleaned(a);
  for (const AttemptEntry& have : get_attempts(s, order_id))
    if (have.number == a.number && same_attempt(have, want)) return;
  throw bad_data("entry " + std::to_string(a.number) + " of order " + order_id +
                 " is already recorded; entries are never overwritten");
}

}  // namespace

bool fenced_write_done(Session& s, const PGresult* r, const std::string& order_id, const AttemptEntry* entry) {
  if (PQntuples(r) != 1 || as_int(r, 0, 0) == 0) return false;
  if (entry && as_int(r, 0, 1) == 0) check_same_entry(s, order_id, *entry);
  return true;
}

// ---- the statements of one write, inside a caller's transaction ------------

Query create_query(const Session& s, const PaymentRow& p, const std::string& owner, int64_t now,
                   int64_t lease_until) {
  // The lease end is stored on the server's clock.
  return Query{kCreate,
               Params().add(p.order_id).add(p.idempotency_key).add(p.fingerprint).add(now).add(p.key_expires_at)
                   .add(owner).add(to_server(s, lease_until)),
               &kCreatePrepared};
}

// What kCreate answered; when it found nothing, the order is looked up
// again (a fresh snapshot): its row, else the key is another order's.
Ledger::CreateOutcome create_done(Session& s, const PGresult* r, const std::string& order_id) {
  Ledger::CreateOutcome out;
  if (PQntuples(r) == 1) {
    out.row = to_client(s, read_row(r, 0));
    out.created = as_text(r, 0, 15) == "t";
    return out;
  }
  if (auto row = get_row(s, order_id)) {
    out.row = *row;
  } else {
    out.key_taken = true;
    out.row.order_id = order_id;
  }
  return out;
}

Query record_query(const std::string& order_id, const std::string& owner, const AttemptEntry& a) {
  Params p;
  p.add(order_id).add(owner).add(a.number).add(a.ended_at);
  CleanParams fields(p);
  write_attempt_fields(fields, a);
  return Query{kRecord, std::move(p), &kRecordPrepared};
}

Query settle_query(const std::string& order_id, const std::string& owner, const AttemptEntry* last,
                   const Settlement& st, int64_t now) {
  Params p;
  CleanParams fields(p);
  p.add(order_id).add(owner);
  write_settlement(fields, st);
  p.add(now).add(last ? last->number : 0).add(last ? last->ended_at : int64_t{0});
  write_attempt_fields(fields, last ? *last : AttemptEntry{});
  p.add(last != nullptr);
  return Query{kSettle, std::move(p), &kSettlePrepared};
}

}  // namespace pg
}  // namespace payretry
