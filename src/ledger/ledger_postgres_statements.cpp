#include "ledger_postgres_statements.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "sql_money.hpp"

namespace payretry {
namespace pg {
namespace {

const char* const kGetRow = "SELECT " PAYRETRY_PAYMENT_COLUMNS " FROM payments WHERE order_id = $1";

bool same_attempt(const AttemptEntry& a, const AttemptEntry& b) {
  return a.number == b.number && a.started_at == b.started_at && a.ended_at == b.ended_at &&
         a.http_status == b.http_status && a.transport_error == b.transport_error && a.verdict == b.verdict &&
         a.reason == b.reason && a.delay_ms == b.delay_ms && a.provider_request_id == b.provider_request_id &&
         a.replayed == b.replayed && a.kind == b.kind && a.processed == b.processed && a.money_state == b.money_state;
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

const char* const kFamilyRows =
    "SELECT " PAYRETRY_PAYMENT_COLUMNS " FROM payments WHERE parent_order_id = $1 AND operation <> '' ORDER BY order_id";

PaymentRow read_row(const PGresult* r, int i) {
  try {
    return read_payment(PgRow(r, i));
  } catch (const UnreadableRow& e) {
    throw bad_data(e.what());
  }
}

LedgerEvent read_event_row(const PGresult* r, int i) {
  try {
    return read_event(PgRow(r, i));
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

std::vector<PaymentRow> get_operation_rows(Session& s, const std::string& order_id) {
  ResultPtr r = exec(s, kFamilyRows, Params().add(order_id));
  std::vector<PaymentRow> out;
  for (int i = 0; i < PQntuples(r.get()); ++i) out.push_back(to_client(s, read_row(r.get(), i)));
  return out;
}

std::optional<PaymentRow> get_row_by_provider_id(Session& s, const std::string& scope, const std::string& provider_id) {
  ResultPtr r = exec(s,
                     "SELECT " PAYRETRY_PAYMENT_COLUMNS
                     " FROM payments WHERE scope = $1 AND provider_payment_id = $2 ORDER BY order_id LIMIT 1",
                     Params().add(scope).add(provider_id));
  if (PQntuples(r.get()) == 0) return std::nullopt;
  return to_client(s, read_row(r.get(), 0));
}

std::vector<AttemptEntry> get_attempts(Session& s, const std::string& order_id) {
  ResultPtr r = exec(s, "SELECT " PAYRETRY_ATTEMPT_COLUMNS " FROM attempts WHERE order_id = $1 ORDER BY number",
                     Params().add(order_id));
  std::vector<AttemptEntry> out;
  try {
    for (int i = 0; i < PQntuples(r.get()); ++i) out.push_back(read_attempt(PgRow(r.get(), i), order_id));
  } catch (const UnreadableRow& e) {
    throw bad_data(e.what());
  }
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
    "created_at, key_expires_at, updated_at, scope, submission_headers, submission_path, operation, parent_order_id, "
    "operation_ref, amount) "
    "VALUES ($1, $2, $3, 'IN_FLIGHT', $6, $7::bigint, $4::bigint, $5::bigint, $4::bigint, $8, $9, $10, $11, $12, $13, "
    "$14::bigint) "
    "ON CONFLICT DO NOTHING RETURNING " PAYRETRY_PAYMENT_COLUMNS ") "
    "SELECT " PAYRETRY_PAYMENT_COLUMNS ", true FROM ins UNION ALL "
    "SELECT " PAYRETRY_PAYMENT_COLUMNS ", false FROM payments WHERE order_id = $1 AND NOT EXISTS (SELECT 1 FROM ins)";

// Fenced (only the lease holder of an IN_FLIGHT payment writes), and the
// entry appended, never overwritten. The fence compares state under
// COLLATE "C" (the same equality) so that no plan can use the
// (state, updated_at) index for it: the planner takes IN_FLIGHT for rare
// and would scan every in-flight row of every process, and the entries of
// rows settled since the last vacuum, instead of looking up one order by
// its key. ON CONFLICT leaves an existing entry
// alone and the caller compares it (a rerun finds its own entry; anything
// else is a clash). Answers (rows fenced in, entries inserted).
const char* const kRecord =
    "WITH f AS (UPDATE payments SET attempts = GREATEST(attempts, $3::integer), "
    "updated_at = GREATEST(updated_at, $4::bigint) "
    "WHERE order_id = $1 AND lease_owner = $2 AND state COLLATE \"C\" = 'IN_FLIGHT' RETURNING order_id), "
    "ins AS (INSERT INTO attempts (order_id, " PAYRETRY_ATTEMPT_COLUMNS ") "
    "SELECT order_id, $3::integer, $5::bigint, $6::bigint, $7::integer, $8::text, $9::text, $10::text, $11::bigint, "
    "$12::text, $13::boolean, $14::text, $15::boolean, $16::text FROM f "
    "ON CONFLICT (order_id, number) DO NOTHING RETURNING number) "
    "SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM ins)";

// The settlement, releasing the lease, and the last entry ($25: whether
// there is one), fenced and appended like kRecord. The money state moves
// from the stored one by what the run read ($9), in the statement itself
// (sql_money.hpp), never from a copy the run read: what an event taught
// the row before the claim stays unless the run read a move forward.
const std::string kSettle =
    "WITH f AS (UPDATE payments SET state = $3, delivery = $4, detail = $5, "
    "provider_payment_id = CASE WHEN $6::text = '' THEN provider_payment_id ELSE $6::text END, "
    "provider_status = $7, http_status = $8::integer, money_state = " +
    sql_money_after("money_state", "$9::text") +
    ", lease_owner = '', lease_until = 0, "
    "attempts = GREATEST(attempts, $11::integer), updated_at = GREATEST(updated_at, $10::bigint, $12::bigint) "
    "WHERE order_id = $1 AND lease_owner = $2 AND state COLLATE \"C\" = 'IN_FLIGHT' RETURNING order_id), "
    "ins AS (INSERT INTO attempts (order_id, " PAYRETRY_ATTEMPT_COLUMNS ") "
    "SELECT order_id, $11::integer, $13::bigint, $14::bigint, $15::integer, $16::text, $17::text, $18::text, "
    "$19::bigint, $20::text, $21::boolean, $22::text, $23::boolean, $24::text FROM f WHERE $25::boolean "
    "ON CONFLICT (order_id, number) DO NOTHING RETURNING number) "
    "SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM ins)";

// A group commit sends these three once per entry: each is prepared once per
// connection. A prepared statement lives as long as its connection, which
// lives only in this process, so one name per text is enough.
const Prepared kCreatePrepared{"payretry_create_3", 1u << 0};
const Prepared kRecordPrepared{"payretry_record_3", 1u << 1};
const Prepared kSettlePrepared{"payretry_settle_3", 1u << 2};

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

namespace {

// Row `i` of a fenced write's answer: (rows fenced in, entries inserted).
bool fenced_at(Session& s, const PGresult* r, int i, const std::string& order_id, const AttemptEntry* entry) {
  if (i < 0 || i >= PQntuples(r) || as_int(r, i, 0) == 0) return false;
  if (entry && as_int(r, i, 1) == 0) check_same_entry(s, order_id, *entry);
  return true;
}

// Row `i` of a create's answer (PAYRETRY_PAYMENT_COLUMNS, then whether
// this statement created it); -1: no row, so the order is looked up again
// (a fresh snapshot): its row, else the key is another order's.
Ledger::CreateOutcome create_at(Session& s, const PGresult* r, int i, const std::string& order_id) {
  Ledger::CreateOutcome out;
  if (i >= 0) {
    out.row = to_client(s, read_row(r, i));
    out.created = as_text(r, i, kPaymentColumns) == "t";
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

}  // namespace

bool fenced_write_done(Session& s, const PGresult* r, const std::string& order_id, const AttemptEntry* entry) {
  return PQntuples(r) == 1 && fenced_at(s, r, 0, order_id, entry);
}

// ---- the statements of one write, inside a caller's transaction ------------

Query create_query(const Session& s, const PaymentRow& p, const std::string& owner, int64_t now,
                   int64_t lease_until) {
  // The lease end is stored on the server's clock.
  return Query{kCreate,
               Params().add(p.order_id).add(p.idempotency_key).add(p.fingerprint).add(now).add(p.key_expires_at)
                   .add(owner).add(to_server(s, lease_until)).add(p.scope).add(p.submission_headers)
                   .add(p.submission_path).add(operation_kind_name(p.operation)).add(p.parent_order_id)
                   .add(p.operation_ref).add(p.amount),
               &kCreatePrepared};
}

// What kCreate answered.
Ledger::CreateOutcome create_done(Session& s, const PGresult* r, const std::string& order_id) {
  return create_at(s, r, PQntuples(r) == 1 ? 0 : -1, order_id);
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
  return Query{kSettle.c_str(), std::move(p), &kSettlePrepared};
}

// ---- many writes of one kind in one statement ------------------------------

namespace {

// The text[] literal of column `col` across `each`: every element quoted,
// '"' and '\\' escaped, NULL for a null. (Free text was cleaned and
// identifiers checked for NUL when each entry's parameters were made.)
std::string column_array(const std::vector<Query>& each, int col) {
  std::string out = "{";
  for (size_t k = 0; k < each.size(); ++k) {
    if (k) out += ',';
    const Params& p = each[k].params;
    if (p.is_null(col)) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (const char c : p.value(col)) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

// The entries' parameters, column by column: parameter j is the array of
// every entry's parameter j.
Params columns_of(const std::vector<Query>& each) {
  Params out;
  const int n = each.empty() ? 0 : each.front().params.size();
  for (int col = 0; col < n; ++col) out.add(column_array(each, col));
  return out;
}

template <class Entries, class Key>
bool distinct(const Entries& entries, Key key) {
  std::vector<const std::string*> seen;
  seen.reserve(entries.size());
  for (const auto& e : entries) seen.push_back(&key(e));
  std::sort(seen.begin(), seen.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  return std::adjacent_find(seen.begin(), seen.end(),
                            [](const std::string* a, const std::string* b) { return *a == *b; }) == seen.end();
}

// kCreate over arrays ($1..$14 as create_query orders them). A row is
// returned for each entry that inserted its row (true) or found its order
// (false), with the entry's ordinal last; an entry without a row is looked
// up again, as after kCreate. The outer query's snapshot does not see the
// rows `ins` inserts, so each entry gets one row at most.
const char* const kCreateMany =
    "WITH input AS (SELECT c1 AS order_id, c2 AS idempotency_key, c3 AS fingerprint, c4::bigint AS now, "
    "c5::bigint AS key_expires_at, c6 AS owner, c7::bigint AS lease_until, c8 AS scope, "
    "c9 AS submission_headers, c10 AS submission_path, c11 AS operation, c12 AS parent_order_id, "
    "c13 AS operation_ref, c14::bigint AS amount, n "
    "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], "
    "$9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[]) "
    "WITH ORDINALITY AS t(c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, n)), "
    "ins AS (INSERT INTO payments (order_id, idempotency_key, fingerprint, state, lease_owner, lease_until, "
    "created_at, key_expires_at, updated_at, scope, submission_headers, submission_path, operation, parent_order_id, "
    "operation_ref, amount) "
    "SELECT order_id, idempotency_key, fingerprint, 'IN_FLIGHT', owner, lease_until, now, key_expires_at, now, "
    "scope, submission_headers, submission_path, operation, parent_order_id, operation_ref, amount "
    "FROM input ORDER BY n ON CONFLICT DO NOTHING RETURNING " PAYRETRY_PAYMENT_COLUMNS ") "
    "SELECT ins.*, true, input.n FROM input JOIN ins ON ins.order_id = input.order_id "
    "UNION ALL "
    "SELECT found.*, false, input.n FROM input JOIN LATERAL (SELECT " PAYRETRY_PAYMENT_COLUMNS
    " FROM payments WHERE payments.order_id = input.order_id) found ON true "
    "WHERE NOT EXISTS (SELECT 1 FROM ins WHERE ins.order_id = input.order_id)";

// kSettle over arrays ($1..$25 as settle_query orders them): one row per
// entry, in order: (rows fenced in, entries inserted, ordinal). The fence
// as in kSettle (COLLATE "C": each order looked up by its key), and the
// answers joined to the entries, not looked up once per entry (order ids
// are distinct in one statement: settles_in_one), so that the statement's
// cost grows with the batch, not with its square.
const std::string kSettleMany =
    "WITH input AS (SELECT c1 AS order_id, c2 AS owner, c3 AS state, c4 AS delivery, c5 AS detail, "
    "c6 AS provider_payment_id, c7 AS provider_status, c8::integer AS http_status, c9 AS money_state, "
    "c10::bigint AS now, c11::integer AS number, c12::bigint AS ended_at, c13::bigint AS a_started_at, "
    "c14::bigint AS a_ended_at, c15::integer AS a_http_status, c16 AS a_transport_error, c17 AS a_verdict, "
    "c18 AS a_reason, c19::bigint AS a_delay_ms, c20 AS a_provider_request_id, c21::boolean AS a_replayed, "
    "c22 AS a_kind, c23::boolean AS a_processed, c24 AS a_money_state, c25::boolean AS has_last, n "
    "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], "
    "$9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], "
    "$17::text[], $18::text[], $19::text[], $20::text[], $21::text[], $22::text[], $23::text[], $24::text[], "
    "$25::text[]) "
    "WITH ORDINALITY AS t(c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, c17, c18, c19, "
    "c20, c21, c22, c23, c24, c25, n)), "
    "f AS (UPDATE payments p SET state = i.state, delivery = i.delivery, detail = i.detail, "
    "provider_payment_id = CASE WHEN i.provider_payment_id = '' THEN p.provider_payment_id ELSE i.provider_payment_id END, "
    "provider_status = i.provider_status, http_status = i.http_status, money_state = " +
    sql_money_after("p.money_state", "i.money_state") +
    ", lease_owner = '', lease_until = 0, attempts = GREATEST(p.attempts, i.number), "
    "updated_at = GREATEST(p.updated_at, i.now, i.ended_at) "
    "FROM input i WHERE p.order_id = i.order_id AND p.lease_owner = i.owner AND p.state COLLATE \"C\" = 'IN_FLIGHT' "
    "RETURNING p.order_id), "
    "ins AS (INSERT INTO attempts (order_id, " PAYRETRY_ATTEMPT_COLUMNS ") "
    "SELECT i.order_id, i.number, i.a_started_at, i.a_ended_at, i.a_http_status, i.a_transport_error, i.a_verdict, "
    "i.a_reason, i.a_delay_ms, i.a_provider_request_id, i.a_replayed, i.a_kind, i.a_processed, i.a_money_state "
    "FROM input i JOIN f ON f.order_id = i.order_id WHERE i.has_last "
    "ON CONFLICT (order_id, number) DO NOTHING RETURNING order_id) "
    "SELECT (f.order_id IS NOT NULL)::integer, (ins.order_id IS NOT NULL)::integer, i.n FROM input i "
    "LEFT JOIN f ON f.order_id = i.order_id LEFT JOIN ins ON ins.order_id = i.order_id ORDER BY i.n";

// kRecord over arrays ($1..$16 as record_query orders them): one row per
// entry, in order, as kSettleMany answers.
const char* const kRecordMany =
    "WITH input AS (SELECT c1 AS order_id, c2 AS owner, c3::integer AS number, c4::bigint AS now, "
    "c5::bigint AS a_started_at, c6::bigint AS a_ended_at, c7::integer AS a_http_status, c8 AS a_transport_error, "
    "c9 AS a_verdict, c10 AS a_reason, c11::bigint AS a_delay_ms, c12 AS a_provider_request_id, "
    "c13::boolean AS a_replayed, c14 AS a_kind, c15::boolean AS a_processed, c16 AS a_money_state, n "
    "FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], "
    "$9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[]) "
    "WITH ORDINALITY AS t(c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, n)), "
    "f AS (UPDATE payments p SET attempts = GREATEST(p.attempts, i.number), "
    "updated_at = GREATEST(p.updated_at, i.now) "
    "FROM input i WHERE p.order_id = i.order_id AND p.lease_owner = i.owner AND p.state COLLATE \"C\" = 'IN_FLIGHT' "
    "RETURNING p.order_id), "
    "ins AS (INSERT INTO attempts (order_id, " PAYRETRY_ATTEMPT_COLUMNS ") "
    "SELECT i.order_id, i.number, i.a_started_at, i.a_ended_at, i.a_http_status, i.a_transport_error, i.a_verdict, "
    "i.a_reason, i.a_delay_ms, i.a_provider_request_id, i.a_replayed, i.a_kind, i.a_processed, i.a_money_state "
    "FROM input i JOIN f ON f.order_id = i.order_id "
    "ON CONFLICT (order_id, number) DO NOTHING RETURNING order_id) "
    "SELECT (f.order_id IS NOT NULL)::integer, (ins.order_id IS NOT NULL)::integer, i.n FROM input i "
    "LEFT JOIN f ON f.order_id = i.order_id LEFT JOIN ins ON ins.order_id = i.order_id ORDER BY i.n";

const Prepared kCreateManyPrepared{"payretry_create_many_3", 1u << 3};
const Prepared kSettleManyPrepared{"payretry_settle_many_3", 1u << 4};
const Prepared kRecordManyPrepared{"payretry_record_many_2", 1u << 5};

// The answer of a fenced statement over arrays, (rows fenced in, entries
// inserted, ordinal) per entry in order: whether each entry's lease was held.
template <class Entries, class EntryOf>
std::vector<char> fenced_many_done(Session& s, const PGresult* r, const Entries& entries, EntryOf entry_of,
                                   const char* what) {
  if (PQntuples(r) != static_cast<int>(entries.size()))
    throw bad_data(std::string("unexpected answer to a group commit's ") + what);
  std::vector<char> out;
  out.reserve(entries.size());
  for (size_t k = 0; k < entries.size(); ++k) {
    const auto& e = entries[k];
    if (as_int(r, static_cast<int>(k), 2) != static_cast<int64_t>(k + 1))
      throw bad_data(std::string("unexpected answer to a group commit's ") + what);
    out.push_back(fenced_at(s, r, static_cast<int>(k), e.order_id, entry_of(e)) ? 1 : 0);
  }
  return out;
}

}  // namespace

bool creates_in_one(const LedgerBatch& b) {
  return b.creates.size() >= 2 &&
         distinct(b.creates, [](const LedgerBatch::Create& c) -> const std::string& { return c.proposed.order_id; }) &&
         distinct(b.creates,
                  [](const LedgerBatch::Create& c) -> const std::string& { return c.proposed.idempotency_key; });
}

bool settles_in_one(const LedgerBatch& b) {
  return b.settles.size() >= 2 &&
         distinct(b.settles, [](const LedgerBatch::Settle& s) -> const std::string& { return s.order_id; });
}

bool records_in_one(const LedgerBatch& b) {
  return b.records.size() >= 2 &&
         distinct(b.records, [](const LedgerBatch::Record& r) -> const std::string& { return r.order_id; });
}

Query creates_query(const std::vector<Query>& each) { return Query{kCreateMany, columns_of(each), &kCreateManyPrepared}; }
Query settles_query(const std::vector<Query>& each) {
  return Query{kSettleMany.c_str(), columns_of(each), &kSettleManyPrepared};
}
Query records_query(const std::vector<Query>& each) { return Query{kRecordMany, columns_of(each), &kRecordManyPrepared}; }

std::vector<Ledger::CreateOutcome> creates_done(Session& s, const PGresult* r, const LedgerBatch& b) {
  const size_t n = b.creates.size();
  std::vector<int> row_of(n, -1);
  for (int i = 0; i < PQntuples(r); ++i) {
    const int64_t ordinal = as_int(r, i, kPaymentColumns + 1);
    if (ordinal < 1 || static_cast<size_t>(ordinal) > n || row_of[static_cast<size_t>(ordinal - 1)] != -1)
      throw bad_data("unexpected answer to a group commit's creates");
    row_of[static_cast<size_t>(ordinal - 1)] = i;
  }
  std::vector<Ledger::CreateOutcome> out;
  out.reserve(n);
  for (size_t k = 0; k < n; ++k) out.push_back(create_at(s, r, row_of[k], b.creates[k].proposed.order_id));
  return out;
}

std::vector<char> settles_done(Session& s, const PGresult* r, const LedgerBatch& b) {
  return fenced_many_done(
      s, r, b.settles, [](const LedgerBatch::Settle& e) { return e.last ? &*e.last : nullptr; }, "settles");
}

std::vector<char> records_done(Session& s, const PGresult* r, const LedgerBatch& b) {
  return fenced_many_done(
      s, r, b.records, [](const LedgerBatch::Record& e) { return &e.attempt; }, "records");
}

}  // namespace pg
}  // namespace payretry
