#include "ledger_postgres.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>
#include <utility>
#include <vector>

#include "fingerprint.hpp"

namespace payretry {
namespace {

using Steady = std::chrono::steady_clock;

constexpr int kSchemaVersion = 2;
// Connections one ledger opens at most; more threads wait for a free one
// (at most the ledger timeout).
constexpr size_t kMaxConnections = 8;
// pg_advisory_xact_lock key ("payretry" in ASCII) that serialises schema
// migrations, so that processes opening a fresh database at once do not race.
constexpr const char* kMigrationLockKey = "8097887137224225401";
// A pooled connection's clock offset is measured again when it is older than this.
constexpr auto kRemeasureEvery = std::chrono::seconds(30);
// Two clocks whose measured offset is within the measurement's own
// uncertainty plus this much are taken as agreeing.
constexpr int64_t kClockSlackMs = 10;

// The server's clock, in Unix ms, as SQL.
#define PAYRETRY_SERVER_NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"

const char* const kMigrations[] = {
    R"sql(
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE payments (
  order_id TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL UNIQUE,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('PENDING','IN_FLIGHT','SUCCEEDED','FAILED','UNKNOWN')),
  delivery TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL DEFAULT '',
  provider_payment_id TEXT NOT NULL DEFAULT '',
  provider_status TEXT NOT NULL DEFAULT '',
  http_status INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  key_expires_at BIGINT NOT NULL,
  lease_owner TEXT NOT NULL DEFAULT '',
  lease_until BIGINT NOT NULL DEFAULT 0,
  updated_at BIGINT NOT NULL);
CREATE INDEX payments_state_updated ON payments (state, updated_at);
CREATE TABLE attempts (
  order_id TEXT NOT NULL REFERENCES payments (order_id),
  number INTEGER NOT NULL,
  started_at BIGINT NOT NULL,
  ended_at BIGINT NOT NULL,
  http_status INTEGER NOT NULL,
  transport_error TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  delay_ms BIGINT NOT NULL,
  provider_request_id TEXT NOT NULL,
  replayed BOOLEAN NOT NULL,
  PRIMARY KEY (order_id, number));
)sql",
    // 2: lookups join the history, and each send says whether the provider
    // may have acted on it (NULL for older entries: read as "may have").
    R"sql(
ALTER TABLE attempts ADD COLUMN kind TEXT NOT NULL DEFAULT 'send';
ALTER TABLE attempts ADD COLUMN processed BOOLEAN;
)sql",
};
static_assert(sizeof kMigrations / sizeof kMigrations[0] == kSchemaVersion, "one migration per version");

#define PAYRETRY_ROW_COLUMNS                                                                           \
  "order_id, idempotency_key, fingerprint, state, delivery, detail, provider_payment_id, provider_status, " \
  "http_status, attempts, created_at, key_expires_at, lease_owner, lease_until, updated_at"

const char* const kGetRow = "SELECT " PAYRETRY_ROW_COLUMNS " FROM payments WHERE order_id = $1";

// What ledger_meta keeps of the fingerprint secret: an HMAC of a fixed
// label keyed by it (the same in every backend), never the secret itself
// when it was given by the application.
std::string secret_check(const std::string& secret) {
  return request_fingerprint(secret, "payretry-ledger-secret-check", "v1", "");
}
const char* const kSecretMismatch =
    "ledger: the secret differs from the one this ledger's fingerprints were made with; every client of one ledger "
    "must use the same ledger.secret";

struct ResultClearer {
  void operator()(PGresult* r) const { PQclear(r); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultClearer>;

// Closes a connection without ever waiting for the server: in non-blocking
// mode PQfinish's goodbye message is dropped when the socket cannot take it.
void close_conn(PGconn* c) {
  if (!c) return;
  PQsetnonblocking(c, 1);
  PQfinish(c);
}
struct ConnCloser {
  void operator()(PGconn* c) const { close_conn(c); }
};
using ConnPtr = std::unique_ptr<PGconn, ConnCloser>;

// A failed statement, before it becomes a LedgerError. `broken`: the
// connection is unusable (lost, or abandoned after a timeout). `timed_out`:
// no answer came within the call's time. `sent`: the whole request left
// this process (only then can it have taken effect). `maybe_committed`: a
// COMMIT was sent and no answer came, so whether the transaction `txid`
// took effect is unknown.
struct PgFailure {
  std::string sqlstate;
  std::string message;
  bool broken = false;
  bool timed_out = false;
  bool sent = false;
  bool maybe_committed = false;
  std::string txid;
};

// A failure of the store as a whole (unreachable, stalled, connection
// lost), as opposed to one statement's: retrying other work at once is
// pointless.
class Unavailable : public LedgerError {
 public:
  using LedgerError::LedgerError;
};

// Text parameters of one statement (all parameters are sent as text and
// typed by the server; nothing is ever spliced into SQL).
class Params {
 public:
  Params& add(std::string v) {
    values_.push_back(std::move(v));
    null_.push_back(false);
    return *this;
  }
  Params& add(const char* v) { return add(std::string(v)); }  // not the bool overload
  Params& add(int64_t v) { return add(std::to_string(v)); }
  Params& add(int v) { return add(static_cast<int64_t>(v)); }
  Params& add(bool v) { return add(std::string(v ? "true" : "false")); }
  Params& add_null() {
    values_.emplace_back();
    null_.push_back(true);
    return *this;
  }
  std::vector<const char*> pointers() const {
    std::vector<const char*> p;
    for (size_t i = 0; i < values_.size(); ++i) p.push_back(null_[i] ? nullptr : values_[i].c_str());
    return p;
  }
  int size() const { return static_cast<int>(values_.size()); }

 private:
  std::vector<std::string> values_;
  std::vector<bool> null_;
};

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  std::string out;
  for (char c : s)
    if (!(c == ' ' && (out.empty() || out.back() == ' '))) out.push_back(c);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

int64_t ms_left(Steady::time_point end) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(end - Steady::now()).count();
}

// ---- one connection in use, with the time its caller has -------------------

// A borrowed connection as the statements of one call see it.
struct Session {
  PGconn* c = nullptr;
  Steady::time_point deadline;  // no wait of this session goes past it
  int64_t timeout_ms = 0;       // for messages
  int64_t offset = 0;           // server clock minus client clock, ms (this connection's)
  bool dead = false;            // abandoned (timed out) or lost: closed, never pooled again
  std::string txid;             // the open transaction's id
};

// Waits until `c`'s socket can be read (and, with `write`, written), at most
// until `deadline`. False when the deadline came first.
bool wait_socket(PGconn* c, bool write, Steady::time_point deadline) {
  const int fd = PQsocket(c);
  if (fd < 0) return true;  // libpq reports the lost connection itself
  for (;;) {
    const int64_t left = ms_left(deadline);
    if (left <= 0) return false;
    pollfd p{fd, static_cast<short>(POLLIN | (write ? POLLOUT : 0)), 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return true;  // let libpq find out what is wrong
  }
}

PgFailure lost(Session& s, bool sent) {
  PgFailure f;
  f.broken = true;
  f.sent = sent;
  f.message = one_line(PQerrorMessage(s.c));
  if (f.message.empty()) f.message = "the connection to the server was lost";
  s.dead = true;
  return f;
}

PgFailure timed_out(Session& s, bool sent) {
  PgFailure f;
  f.broken = f.timed_out = true;
  f.sent = sent;
  f.message = "no answer within " + std::to_string(s.timeout_ms) + " ms";
  s.dead = true;  // a late answer would belong to the abandoned request
  return f;
}

// Sends one request with `send` (a PQsend* call) and collects its results,
// never waiting past the session's deadline: the server may be paused,
// partitioned away or waiting for a standby, and enforces no timeout of its
// own then. On expiry the connection is abandoned (closed by its owner,
// which cancels the request server-side as soon as the server notices).
template <class Send>
std::vector<ResultPtr> roundtrip(Session& s, Send&& send) {
  if (s.dead) throw lost(s, false);
  if (!send()) throw lost(s, false);
  for (;;) {
    const int f = PQflush(s.c);
    if (f == 0) break;
    if (f < 0) throw lost(s, false);
    if (!wait_socket(s.c, true, s.deadline)) throw timed_out(s, false);
    if (!PQconsumeInput(s.c)) throw lost(s, false);
  }
  std::vector<ResultPtr> out;
  for (;;) {
    while (!PQisBusy(s.c)) {
      PGresult* r = PQgetResult(s.c);
      if (!r) {
        if (PQstatus(s.c) == CONNECTION_BAD) s.dead = true;
        return out;
      }
      out.emplace_back(r);
    }
    if (!wait_socket(s.c, false, s.deadline)) throw timed_out(s, true);
    if (!PQconsumeInput(s.c)) throw lost(s, true);
  }
}

[[noreturn]] void throw_failure(Session& s, const PGresult* r) {
  PgFailure f;
  f.sent = true;
  f.broken = s.dead || PQstatus(s.c) == CONNECTION_BAD;
  if (f.broken) s.dead = true;
  if (r) {
    if (const char* v = PQresultErrorField(r, PG_DIAG_SQLSTATE)) f.sqlstate = v;
    if (const char* m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)) f.message = m;
  }
  if (f.message.empty()) f.message = PQerrorMessage(s.c);
  f.message = one_line(f.message);
  if (f.message.empty()) f.message = "the connection to the server was lost";
  throw f;
}

void check_results(Session& s, const std::vector<ResultPtr>& rs) {
  if (rs.empty()) throw_failure(s, nullptr);
  for (const ResultPtr& r : rs) {
    const ExecStatusType st = PQresultStatus(r.get());
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) throw_failure(s, r.get());
  }
}

ResultPtr exec(Session& s, const char* sql, const Params& p = Params()) {
  const std::vector<const char*> values = p.pointers();
  std::vector<ResultPtr> rs = roundtrip(s, [&] {
    return PQsendQueryParams(s.c, sql, p.size(), nullptr, values.empty() ? nullptr : values.data(), nullptr, nullptr,
                             0) == 1;
  });
  check_results(s, rs);
  return std::move(rs.back());
}

// Several statements without parameters in one message (constants: the
// migration scripts, BEGIN with the transaction's id); the last result.
ResultPtr exec_script(Session& s, const char* sql) {
  std::vector<ResultPtr> rs = roundtrip(s, [&] { return PQsendQuery(s.c, sql) == 1; });
  check_results(s, rs);
  return std::move(rs.back());
}

bool changed_one(const ResultPtr& r) { return std::string(PQcmdTuples(r.get())) == "1"; }

std::string as_text(const PGresult* r, int row, int col) {
  return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
}

// One transaction; rolled back unless committed. Its id is read with BEGIN
// (same round trip), so that after a COMMIT without an answer another
// connection can ask the server whether it took effect (txid_status).
class Tx {
 public:
  explicit Tx(Session& s) : s_(s) {
    ResultPtr r = exec_script(s_, "BEGIN; SELECT txid_current()");
    s_.txid = PQntuples(r.get()) == 1 ? as_text(r.get(), 0, 0) : "";
    open_ = true;
  }
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;
  void commit() {
    open_ = false;
    try {
      exec(s_, "COMMIT");
    } catch (PgFailure& f) {
      // Sent, and then the connection was lost or no answer came: the
      // server may have committed. An error answer means it did not.
      f.maybe_committed = f.sent && f.broken;
      f.txid = s_.txid;
      throw;
    }
  }
  ~Tx() {
    if (open_ && !s_.dead) {
      try {
        exec(s_, "ROLLBACK");  // bounded by the session's deadline like every statement
      } catch (...) {
        s_.dead = true;  // closing the connection rolls back too
      }
    }
  }

 private:
  Session& s_;
  bool open_ = false;
};

int64_t as_int(const PGresult* r, int row, int col) {
  const char* v = PQgetvalue(r, row, col);
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0') {
    PgFailure f;
    f.message = std::string("unexpected value in column ") + PQfname(r, col);
    throw f;
  }
  return x;
}

PgFailure bad_data(std::string message) {
  PgFailure f;
  f.message = std::move(message);
  return f;
}

// A row as stored: lease_until on the SERVER's clock.
PaymentRow read_row(const PGresult* r, int i) {
  PaymentRow p;
  p.order_id = as_text(r, i, 0);
  p.idempotency_key = as_text(r, i, 1);
  p.fingerprint = as_text(r, i, 2);
  const auto state = parse_state(as_text(r, i, 3));
  if (!state) throw bad_data("payment " + p.order_id + " has an unknown state '" + as_text(r, i, 3) + "'");
  p.state = *state;
  p.delivery = as_text(r, i, 4);
  p.detail = as_text(r, i, 5);
  p.provider_payment_id = as_text(r, i, 6);
  p.provider_status = as_text(r, i, 7);
  p.http_status = static_cast<int>(as_int(r, i, 8));
  p.attempts = static_cast<int>(as_int(r, i, 9));
  p.created_at = as_int(r, i, 10);
  p.key_expires_at = as_int(r, i, 11);
  p.lease_owner = as_text(r, i, 12);
  p.lease_until = as_int(r, i, 13);
  p.updated_at = as_int(r, i, 14);
  return p;
}

// Lease ends are stored and compared on the server's clock; callers get
// them on their own clock. 0 (no lease) stays 0.
int64_t to_server(const Session& s, int64_t client_ms) { return client_ms + s.offset; }
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
  ResultPtr r = exec(s,
                     "SELECT number, started_at, ended_at, http_status, transport_error, verdict, reason, delay_ms, "
                     "provider_request_id, replayed, kind, processed FROM attempts WHERE order_id = $1 ORDER BY number",
                     Params().add(order_id));
  std::vector<AttemptEntry> out;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    AttemptEntry a;
    a.number = static_cast<int>(as_int(r.get(), i, 0));
    a.started_at = as_int(r.get(), i, 1);
    a.ended_at = as_int(r.get(), i, 2);
    a.http_status = static_cast<int>(as_int(r.get(), i, 3));
    a.transport_error = as_text(r.get(), i, 4);
    a.verdict = as_text(r.get(), i, 5);
    a.reason = as_text(r.get(), i, 6);
    a.delay_ms = as_int(r.get(), i, 7);
    a.provider_request_id = as_text(r.get(), i, 8);
    a.replayed = as_text(r.get(), i, 9) == "t";
    a.kind = as_text(r.get(), i, 10);
    if (!PQgetisnull(r.get(), i, 11)) a.processed = as_text(r.get(), i, 11) == "t";
    out.push_back(std::move(a));
  }
  return out;
}

// Free text (details, reasons, provider strings) comes from the network and
// may hold bytes PostgreSQL refuses in a UTF-8 database; a settlement must
// not fail over one odd byte. Invalid sequences become U+FFFD, NULs vanish.
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

// Identifiers must reach the server byte for byte: a NUL would silently cut
// an order id short (and merge two orders), so it is refused instead.
void check_identifier(const char* what, const std::string& v) {
  if (v.find('\0') != std::string::npos)
    throw LedgerError(std::string("ledger (postgresql): the ") + what + " contains a NUL byte");
}

// An entry's fields after its number, as the $-parameters of the write
// statements below: started_at, ended_at, http_status, transport_error,
// verdict, reason, delay_ms, provider_request_id, replayed, kind, processed.
void add_attempt_fields(Params& p, const AttemptEntry& a) {
  p.add(a.started_at).add(a.ended_at).add(a.http_status).add(clean_text(a.transport_error)).add(clean_text(a.verdict))
      .add(clean_text(a.reason)).add(a.delay_ms).add(clean_text(a.provider_request_id)).add(a.replayed)
      .add(clean_text(a.kind));
  if (a.processed) p.add(*a.processed);
  else p.add_null();
}

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
    "ON CONFLICT DO NOTHING RETURNING " PAYRETRY_ROW_COLUMNS ") "
    "SELECT " PAYRETRY_ROW_COLUMNS ", true FROM ins UNION ALL "
    "SELECT " PAYRETRY_ROW_COLUMNS ", false FROM payments WHERE order_id = $1 AND NOT EXISTS (SELECT 1 FROM ins)";

// Fenced (only the lease holder of an IN_FLIGHT payment writes), and the
// entry appended, never overwritten: ON CONFLICT leaves an existing entry
// alone and the caller compares it (a rerun finds its own entry; anything
// else is a clash). Answers (rows fenced in, entries inserted).
const char* const kRecord =
    "WITH f AS (UPDATE payments SET attempts = GREATEST(attempts, $3::integer), "
    "updated_at = GREATEST(updated_at, $4::bigint) "
    "WHERE order_id = $1 AND lease_owner = $2 AND state = 'IN_FLIGHT' RETURNING order_id), "
    "ins AS (INSERT INTO attempts (order_id, number, started_at, ended_at, http_status, transport_error, verdict, "
    "reason, delay_ms, provider_request_id, replayed, kind, processed) "
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
    "ins AS (INSERT INTO attempts (order_id, number, started_at, ended_at, http_status, transport_error, verdict, "
    "reason, delay_ms, provider_request_id, replayed, kind, processed) "
    "SELECT order_id, $10::integer, $12::bigint, $13::bigint, $14::integer, $15::text, $16::text, $17::text, "
    "$18::bigint, $19::text, $20::boolean, $21::text, $22::boolean FROM f WHERE $23::boolean "
    "ON CONFLICT (order_id, number) DO NOTHING RETURNING number) "
    "SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM ins)";

// An entry number already taken: fine when it holds this very entry (a
// rerun), a clash otherwise (the transaction then fails as a whole).
void check_same_entry(Session& s, const std::string& order_id, const AttemptEntry& a) {
  const AttemptEntry want = cleaned(a);
  for (const AttemptEntry& have : get_attempts(s, order_id))
    if (have.number == a.number && same_attempt(have, want)) return;
  throw bad_data("entry " + std::to_string(a.number) + " of order " + order_id +
                 " is already recorded; entries are never overwritten");
}

// What kRecord / kSettle answered: false when the lease was not held.
bool fenced_write_done(Session& s, const PGresult* r, const std::string& order_id, const AttemptEntry* entry) {
  if (PQntuples(r) != 1 || as_int(r, 0, 0) == 0) return false;
  if (entry && as_int(r, 0, 1) == 0) check_same_entry(s, order_id, *entry);
  return true;
}

// ---- pipelines --------------------------------------------------------------

struct Query {
  const char* sql;
  Params params;
};

// The next result of a pipeline, waiting at most until the deadline.
ResultPtr next_result(Session& s) {
  for (;;) {
    if (!PQisBusy(s.c)) return ResultPtr(PQgetResult(s.c));
    if (!wait_socket(s.c, false, s.deadline)) throw timed_out(s, true);
    if (!PQconsumeInput(s.c)) throw lost(s, true);
  }
}

// Sends every query at once and reads their answers: one round trip,
// however many. The first failure is thrown (the transaction is then
// aborted, and the later queries were skipped by the server).
std::vector<ResultPtr> exec_pipeline(Session& s, const std::vector<Query>& qs) {
  std::vector<ResultPtr> out;
#ifdef LIBPQ_HAS_PIPELINING
  if (qs.size() > 1) {
    if (s.dead || PQenterPipelineMode(s.c) != 1) throw lost(s, false);
    for (const Query& q : qs) {
      const std::vector<const char*> values = q.params.pointers();
      if (PQsendQueryParams(s.c, q.sql, q.params.size(), nullptr, values.empty() ? nullptr : values.data(), nullptr,
                            nullptr, 0) != 1)
        throw lost(s, false);
    }
    if (PQpipelineSync(s.c) != 1) throw lost(s, false);
    for (;;) {
      const int f = PQflush(s.c);
      if (f == 0) break;
      if (f < 0) throw lost(s, false);
      if (!wait_socket(s.c, true, s.deadline)) throw timed_out(s, false);
      if (!PQconsumeInput(s.c)) throw lost(s, false);
    }
    std::optional<size_t> failed;
    for (size_t i = 0; i < qs.size(); ++i) {
      ResultPtr r = next_result(s);
      if (!r) throw lost(s, true);
      const ExecStatusType st = PQresultStatus(r.get());
      if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && !failed) failed = i;
      out.push_back(std::move(r));
      if (next_result(s)) throw lost(s, true);  // one result per query, then NULL
    }
    ResultPtr sync = next_result(s);
    if (!sync || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC || PQexitPipelineMode(s.c) != 1)
      throw lost(s, true);
    if (failed) throw_failure(s, out[*failed].get());
    return out;
  }
#endif
  for (const Query& q : qs) out.push_back(exec(s, q.sql, q.params));
  return out;
}

// ---- the connection URL ---------------------------------------------------

bool is_uri(const std::string& u) { return u.rfind("postgresql://", 0) == 0 || u.rfind("postgres://", 0) == 0; }

// host[:port][,host[:port]]... with numeric ports, as libpq reads an authority.
bool plain_hostlist(const std::string& a) {
  if (a.find('@') != std::string::npos) return false;
  if (a.find('[') != std::string::npos) return true;  // IPv6 literals: left to libpq
  size_t at = 0;
  while (at <= a.size()) {
    size_t end = a.find(',', at);
    if (end == std::string::npos) end = a.size();
    const std::string piece = a.substr(at, end - at);
    if (const size_t colon = piece.find(':'); colon != std::string::npos)
      if (piece.find_first_not_of("0123456789", colon + 1) != std::string::npos) return false;
    at = end + 1;
  }
  return true;
}

std::string pct_encode(const std::string& s) {
  static const char digits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (c == '@' || c == '/' || c == '?' || c == '#') {
      out.push_back('%');
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 0xF]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

// A URI whose password (or user name) holds a raw '@' or '/', as people
// write them, made into what libpq reads as meant. libpq ends the user info
// at the FIRST '@' (and sees none when a '/' comes first), so
// "postgresql://app:p@ss@db/pay" would connect to host "ss@db" and put
// "ss" in its messages. When libpq's reading cannot be right (its host
// holds an '@' or a non-numeric port, or its database name a '/'), the user
// info ends instead at the LAST '@' (before any '?') that a plain host list
// follows, and is percent-encoded. `raw_password` gets the password as
// written, for redaction.
std::string normalize_url(const std::string& url, std::string& raw_password) {
  if (!is_uri(url)) return url;
  const size_t scheme_end = url.find("://") + 3;
  const std::string rest = url.substr(scheme_end);
  auto host_part = [&](size_t from) {
    const size_t end = rest.find_first_of("/?", from);
    return rest.substr(from, end == std::string::npos ? std::string::npos : end - from);
  };
  const size_t first_at = rest.find('@'), first_slash = rest.find('/');
  const bool has_info = first_at != std::string::npos && first_at < first_slash;
  const size_t host_from = has_info ? first_at + 1 : 0;
  const size_t host_end = rest.find_first_of("/?", host_from);
  bool broken = !plain_hostlist(host_part(host_from));
  if (host_end != std::string::npos && rest[host_end] == '/') {
    const size_t q = rest.find('?', host_end);
    const std::string path = rest.substr(host_end + 1, q == std::string::npos ? std::string::npos : q - host_end - 1);
    if (path.find('/') != std::string::npos) broken = true;
  }
  size_t at = has_info ? first_at : std::string::npos;
  if (broken) {
    const size_t q = rest.find('?');
    at = std::string::npos;
    for (size_t i = q == std::string::npos ? rest.size() : q; i-- > 0;)
      if (rest[i] == '@' && plain_hostlist(host_part(i + 1))) {
        at = i;
        break;
      }
  }
  if (at == std::string::npos) return url;
  const std::string info = rest.substr(0, at);
  const size_t colon = info.find(':');
  if (colon != std::string::npos) raw_password = info.substr(colon + 1);
  if (!broken) return url;
  const std::string user = info.substr(0, colon);
  std::string fixed = url.substr(0, scheme_end) + pct_encode(user);
  if (colon != std::string::npos) fixed += ":" + pct_encode(raw_password);
  return fixed + rest.substr(at);
}

// Where the ledger lives, for messages: host:port/dbname, never the password.
struct Target {
  std::string where;
  std::string password;
};

Target describe_target(const std::string& url) {
  Target t;
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  if (!opts) {
    PQfreemem(err);
    t.where = "?";
    return t;
  }
  std::string host, hostaddr, port, db;
  for (PQconninfoOption* o = opts; o->keyword; ++o) {
    if (!o->val) continue;
    const std::string k = o->keyword;
    if (k == "host") host = o->val;
    else if (k == "hostaddr") hostaddr = o->val;
    else if (k == "port") port = o->val;
    else if (k == "dbname") db = o->val;
    else if (k == "password") t.password = o->val;
  }
  PQconninfoFree(opts);
  t.where = !host.empty() ? host : !hostaddr.empty() ? hostaddr : "local socket";
  if (!port.empty()) t.where += ":" + port;
  if (!db.empty()) t.where += "/" + db;
  return t;
}

// One pooled connection and what was measured on it.
struct Conn {
  ConnPtr pg;
  int64_t offset = 0;  // server clock minus client clock, ms
  Steady::time_point measured;
};

int64_t system_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ---- the ledger -------------------------------------------------------------
//
// Time bound. Every wait of a call (for a pooled connection, for a
// connection to be made, for each statement's answer, COMMIT's included) is
// bounded on this side with poll(): a paused or partitioned server enforces
// no statement_timeout. One call (each method below, `apply` and opening
// included) returns or throws within 2 x timeout_ms, plus the few
// milliseconds it takes to close abandoned sockets:
//   - the first try shares ONE timeout_ms: waiting for the pool, connecting,
//     every statement, and one reconnect-and-rerun after a connection found
//     broken (never after a timeout: a stalled server would stall it again);
//   - only when a COMMIT was sent and no answer came (the write may or may
//     not have taken effect) does the check get a second timeout_ms of its
//     own, never past 2 x timeout_ms from the start: on another connection it
//     asks the server for the transaction's fate (txid_status), answers
//     from the write when it committed, and makes the write again when it
//     was rolled back. Otherwise the call fails saying the outcome is unknown.
// A group commit (`apply`) falls back to one entry at a time only within the
// same 2 x timeout_ms. Name lookups of the host (getaddrinfo) are the one
// wait not bounded here: use an IP address or a local resolver.
class PostgresLedger final : public Ledger {
 public:
  PostgresLedger(const std::string& url, const std::string& secret_override, int64_t timeout_ms,
                 std::function<int64_t()> client_clock)
      : timeout_ms_(std::max<int64_t>(timeout_ms, 1)),
        client_clock_(client_clock ? std::move(client_clock) : std::function<int64_t()>(system_unix_ms)) {
    std::string raw_password;
    url_ = normalize_url(url, raw_password);
    const Target t = describe_target(url_);
    for (const std::string& p : {t.password, raw_password, pct_encode(raw_password)})
      if (!p.empty() && std::find(passwords_.begin(), passwords_.end(), p) == passwords_.end()) passwords_.push_back(p);
    where_ = redact(t.where);
    check_url(url);
    secret_ = run("open", [&](Session& s) {
      migrate(s);
      return load_secret(s, secret_override);
    });
  }

  ~PostgresLedger() override = default;

  std::string secret() override { return secret_; }

  CreateOutcome create_and_claim(const PaymentRow& p, const std::string& owner, int64_t now,
                                 int64_t lease_until) override {
    return do_create(p, owner, now, lease_until, budget());
  }

  bool claim(const std::string& order_id, const std::string& owner, int64_t now, int64_t lease_until) override {
    check_identifier("order id", order_id);
    check_identifier("lease owner", owner);
    std::optional<bool> staged;
    return run(
        "claim",
        [&](Session& s) {
          staged.reset();
          Tx tx(s);
          // Under READ COMMITTED a competing UPDATE waits for the row lock
          // and then re-checks this WHERE against the winner's row, so
          // exactly one claimant wins. A lease has ended when it ended on the
          // SERVER's clock: the caller's `now` is translated by this
          // connection's measured offset, and never counts for later than
          // the server's own clock says (a client clock that jumped ahead
          // since it was measured steals nothing).
          ResultPtr r = exec(s,
                             "UPDATE payments SET state = 'IN_FLIGHT', lease_owner = $2, lease_until = $3, "
                             "updated_at = $4 WHERE order_id = $1 AND (state IN ('PENDING', 'UNKNOWN') OR "
                             "(state = 'IN_FLIGHT' AND lease_until < LEAST($5::bigint, " PAYRETRY_SERVER_NOW_MS ")))",
                             Params().add(order_id).add(owner).add(to_server(s, lease_until)).add(now)
                                 .add(to_server(s, now)));
          if (!changed_one(r)) return false;  // nothing written; rolled back
          staged = true;
          tx.commit();
          return true;
        },
        &staged);
  }

  bool record_attempt(const std::string& order_id, const std::string& owner, const AttemptEntry& a) override {
    return do_record(order_id, owner, a, budget());
  }

  bool settle(const std::string& order_id, const std::string& owner, const AttemptEntry* last, const Settlement& s,
              int64_t now) override {
    return do_settle(order_id, owner, last, s, now, budget());
  }

  // Group commit: every entry in one transaction on one connection, so one
  // WAL flush makes all of them durable, and all of them sent in one round
  // trip (each entry is one statement that writes nothing when its lease
  // is lost, so none needs a savepoint). When the
  // store is unavailable (stalled, unreachable, connection lost) every entry
  // gets that error at once; when the transaction failed for one entry's
  // sake, the entries are retried one call each, with that call's own
  // checks and answers, within the same time bound. A COMMIT without an
  // answer is resolved like any other (txid_status): the answers stand when
  // it committed, the batch is made again when it did not.
  void apply(LedgerBatch& b) override {
    if (b.empty()) return;
    const Budget bud = budget();
    try {
      for (const auto& c : b.creates) {
        check_identifier("lease owner", c.owner);
        check_identifier("order id", c.proposed.order_id);
        check_identifier("idempotency key", c.proposed.idempotency_key);
        check_identifier("fingerprint", c.proposed.fingerprint);
      }
      for (const auto& r : b.records) {
        check_identifier("order id", r.order_id);
        check_identifier("lease owner", r.owner);
      }
      for (const auto& s : b.settles) {
        check_identifier("order id", s.order_id);
        check_identifier("lease owner", s.owner);
        check_settlement(s.settlement);
      }
    } catch (const LedgerError&) {
      one_by_one(b, bud);
      return;
    }
    struct Answers {
      std::vector<CreateOutcome> creates;
      std::vector<char> records, settles;
    };
    std::optional<Answers> staged;
    Answers got;
    try {
      got = run(
          "apply",
          [&](Session& s) {
            staged.reset();
            Answers a;
            Tx tx(s);
            std::vector<Query> qs;
            for (const auto& e : b.creates) qs.push_back(create_query(s, e.proposed, e.owner, e.now, e.lease_until));
            for (const auto& e : b.records) qs.push_back(record_query(e.order_id, e.owner, e.attempt));
            for (const auto& e : b.settles)
              qs.push_back(settle_query(e.order_id, e.owner, e.last ? &*e.last : nullptr, e.settlement, e.now));
            const std::vector<ResultPtr> rs = exec_pipeline(s, qs);
            size_t k = 0;
            for (const auto& e : b.creates) a.creates.push_back(create_done(s, rs[k++].get(), e.proposed.order_id));
            for (const auto& e : b.records)
              a.records.push_back(fenced_write_done(s, rs[k++].get(), e.order_id, &e.attempt));
            for (const auto& e : b.settles)
              a.settles.push_back(fenced_write_done(s, rs[k++].get(), e.order_id, e.last ? &*e.last : nullptr));
            staged = a;
            tx.commit();
            return a;
          },
          &staged, bud);
    } catch (const Unavailable& e) {
      for (auto& c : b.creates) c.error = e.what();
      for (auto& r : b.records) r.error = e.what();
      for (auto& s : b.settles) s.error = e.what();
      return;
    } catch (const LedgerError&) {
      one_by_one(b, bud);
      return;
    }
    for (size_t i = 0; i < b.creates.size(); ++i) {
      b.creates[i].out.row = std::move(got.creates[i].row);
      b.creates[i].out.created = got.creates[i].created;
      b.creates[i].out.key_taken = got.creates[i].key_taken;
    }
    for (size_t i = 0; i < b.records.size(); ++i) b.records[i].ok = got.records[i] != 0;
    for (size_t i = 0; i < b.settles.size(); ++i) b.settles[i].ok = got.settles[i] != 0;
  }

  std::optional<PaymentRow> get(const std::string& order_id) override {
    check_identifier("order id", order_id);
    return run("get", [&](Session& s) { return get_row(s, order_id); });
  }

  std::vector<AttemptEntry> attempts(const std::string& order_id) override {
    check_identifier("order id", order_id);
    return run("attempts", [&](Session& s) { return get_attempts(s, order_id); });
  }

  std::vector<PaymentRow> list(std::optional<PaymentState> state, int64_t updated_before, int limit) override {
    return run("list", [&](Session& s) {
      Params p;
      if (state) p.add(std::string(state_name(*state)));
      else p.add_null();
      p.add(updated_before);
      if (limit >= 0) p.add(limit);
      else p.add_null();  // LIMIT NULL: no limit
      // COLLATE "C": byte order, as in the other backends, whatever the
      // database's collation.
      ResultPtr r = exec(s,
                         "SELECT " PAYRETRY_ROW_COLUMNS " FROM payments "
                         "WHERE ($1::text IS NULL OR state = $1::text) "
                         "AND ($2::bigint <= 0 OR updated_at < $2::bigint) "
                         "ORDER BY updated_at, order_id COLLATE \"C\" LIMIT $3::bigint",
                         p);
      std::vector<PaymentRow> out;
      for (int i = 0; i < PQntuples(r.get()); ++i) out.push_back(to_client(s, read_row(r.get(), i)));
      return out;
    });
  }

 private:
  // ---- the single writes, within a given time -------------------------

  struct Budget {
    Steady::time_point first;  // the first try: pool, connect, statements, one reconnect
    Steady::time_point last;   // the check of a write whose COMMIT got no answer
  };

  Budget budget(std::optional<Steady::time_point> cap = std::nullopt) const {
    const auto now = Steady::now();
    const auto t = std::chrono::milliseconds(timeout_ms_);
    Budget b{now + t, now + 2 * t};
    if (cap) {
      b.first = std::min(b.first, *cap);
      b.last = std::min(b.last, *cap);
    }
    return b;
  }

  static void check_settlement(const Settlement& s) {
    if (s.state != PaymentState::succeeded && s.state != PaymentState::failed && s.state != PaymentState::unknown)
      throw LedgerError(std::string("ledger (postgresql): settle: a settlement's state must be SUCCEEDED, FAILED or "
                                    "UNKNOWN, not ") +
                        state_name(s.state));
  }

  CreateOutcome do_create(const PaymentRow& p, const std::string& owner, int64_t now, int64_t lease_until,
                          const Budget& b) {
    check_identifier("order id", p.order_id);
    check_identifier("idempotency key", p.idempotency_key);
    check_identifier("fingerprint", p.fingerprint);
    check_identifier("lease owner", owner);
    std::optional<CreateOutcome> staged;
    return run(
        "create_and_claim",
        [&](Session& s) {
          staged.reset();
          Tx tx(s);
          const Query q = create_query(s, p, owner, now, lease_until);
          ResultPtr r = exec(s, q.sql, q.params);
          CreateOutcome out = create_done(s, r.get(), p.order_id);
          staged = out;
          tx.commit();
          return out;
        },
        &staged, b);
  }

  bool do_record(const std::string& order_id, const std::string& owner, const AttemptEntry& a, const Budget& b) {
    check_identifier("order id", order_id);
    check_identifier("lease owner", owner);
    std::optional<bool> staged;
    return run(
        "record_attempt",
        [&](Session& s) {
          staged.reset();
          Tx tx(s);
          const Query q = record_query(order_id, owner, a);
          ResultPtr r = exec(s, q.sql, q.params);
          if (!fenced_write_done(s, r.get(), order_id, &a)) return false;  // nothing written
          staged = true;
          tx.commit();
          return true;
        },
        &staged, b);
  }

  bool do_settle(const std::string& order_id, const std::string& owner, const AttemptEntry* last,
                 const Settlement& st, int64_t now, const Budget& b) {
    check_identifier("order id", order_id);
    check_identifier("lease owner", owner);
    check_settlement(st);
    std::optional<bool> staged;
    return run(
        "settle",
        [&](Session& s) {
          staged.reset();
          Tx tx(s);
          const Query q = settle_query(order_id, owner, last, st, now);
          ResultPtr r = exec(s, q.sql, q.params);
          if (!fenced_write_done(s, r.get(), order_id, last)) return false;  // nothing written
          staged = true;
          tx.commit();
          return true;
        },
        &staged, b);
  }

  // The entries of a batch one call each, every call within what is left of
  // the batch's bound; entries past it fail without being tried.
  void one_by_one(LedgerBatch& b, const Budget& bud) {
    auto each = [&](std::string& error, auto&& call) {
      if (Steady::now() >= bud.last) {
        error = message("apply", "no time was left for this entry within the ledger timeout (" +
                                     std::to_string(timeout_ms_) + " ms)");
        return;
      }
      try {
        call(budget(bud.last));
      } catch (const std::exception& e) {
        error = e.what();
      }
    };
    for (auto& c : b.creates)
      each(c.error, [&](const Budget& t) {
        CreateOutcome o = do_create(c.proposed, c.owner, c.now, c.lease_until, t);
        c.out.row = std::move(o.row);
        c.out.created = o.created;
        c.out.key_taken = o.key_taken;
      });
    for (auto& r : b.records)
      each(r.error, [&](const Budget& t) { r.ok = do_record(r.order_id, r.owner, r.attempt, t); });
    for (auto& s : b.settles)
      each(s.error, [&](const Budget& t) {
        s.ok = do_settle(s.order_id, s.owner, s.last ? &*s.last : nullptr, s.settlement, s.now, t);
      });
  }

  // ---- errors ---------------------------------------------------------

  std::string redact(const std::string& text) const {
    std::string s = text;
    for (const std::string& p : passwords_) s = redact_conninfo(s, p);
    return redact_conninfo(s);
  }

  std::string message(const std::string& op, const std::string& why) const {
    return redact("ledger (postgresql " + where_ + "): " + op + ": " + why);
  }

  LedgerError error(const std::string& op, const std::string& why) const { return LedgerError(message(op, why)); }

  [[noreturn]] void unavailable(const std::string& op, const std::string& why) const {
    throw Unavailable(message(op, why));
  }

  std::string describe(const PgFailure& f) const {
    if (f.timed_out)
      return f.message + "; the server is stalled, paused or unreachable (the connection was abandoned, never reused)";
    const std::string& s = f.sqlstate;
    std::string why;
    auto starts = [&](const char* prefix) { return s.rfind(prefix, 0) == 0; };
    if (s == "25006") why = "the server refuses writes (read-only transaction: a standby, or default_transaction_read_only)";
    else if (s == "53100") why = "the database server's disk is full";
    else if (starts("53")) why = "the database server is out of resources";
    else if (s == "57P01" || s == "57P02") why = "the server is shutting down or restarting";
    else if (s == "57P03") why = "the server is starting up or shutting down and refuses connections";
    else if (s == "57014") why = "the server cancelled the statement (statement_timeout)";
    else if (s == "55P03") why = "a lock stayed held by another session beyond lock_timeout";
    else if (starts("23")) why = "a constraint of the ledger schema was violated (unexpected)";
    else if (s == "42P01") why = "the ledger tables are missing";
    else if (starts("08") || f.broken) why = "lost the connection to the server";
    std::string msg = why.empty() ? f.message : why + ": " + f.message;
    if (!s.empty()) msg += " [SQLSTATE " + s + "]";
    return msg;
  }

  [[noreturn]] void raise(const std::string& op, const PgFailure& f) const {
    if (f.broken || f.timed_out) unavailable(op, describe(f));
    throw error(op, describe(f));
  }

  // ---- connections ----------------------------------------------------

  void check_url(const std::string& original) const {
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(url_.c_str(), &err);
    if (opts) {
      PQconninfoFree(opts);
      return;
    }
    std::string why = err ? one_line(err) : "out of memory";
    PQfreemem(err);
    // libpq quotes fragments of the URL it could not parse; a password may
    // be among them, so they are only shown when the URL holds none.
    if (!passwords_.empty() || redact_conninfo(original) != original)
      why = "details withheld because the URL holds a password";
    throw LedgerError("ledger (postgresql): the connection URL cannot be parsed: " + redact(why));
  }

  // Session settings every connection needs before its first write, and
  // the first measure of the server's clock. A commit must be on disk
  // before pay_submit sends a byte, whatever the server's default. The
  // server's own timeouts are a second line behind the client-side bound
  // (they free the server of a statement whose client gave up), never
  // longer than a setting the URL or the role chose.
  static constexpr const char* kSetupSql =
      "WITH s AS (SELECT name, setting::bigint AS v FROM pg_catalog.pg_settings "
      "           WHERE name IN ('statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout')) "
      "SELECT set_config('synchronous_commit', 'on', false), "
      "set_config('statement_timeout', (SELECT CASE WHEN v = 0 OR v > $1::bigint THEN $1::bigint ELSE v END "
      "  FROM s WHERE name = 'statement_timeout')::text, false), "
      "set_config('lock_timeout', (SELECT CASE WHEN v = 0 OR v > $1::bigint THEN $1::bigint ELSE v END "
      "  FROM s WHERE name = 'lock_timeout')::text, false), "
      "set_config('idle_in_transaction_session_timeout', (SELECT CASE WHEN v = 0 OR v > $2::bigint THEN $2::bigint "
      "  ELSE v END FROM s WHERE name = 'idle_in_transaction_session_timeout')::text, false), " PAYRETRY_SERVER_NOW_MS;

  // Takes one reading of the server's clock between two of the client's.
  // The offset snaps to the ledger's current one while the two agree within
  // their uncertainties, so that the connections (and calls) of one ledger
  // to one server share one value; it starts at 0, so that clocks in sync
  // (within the measurement's precision) translate nothing.
  void note_offset(Conn& conn, int64_t t0, int64_t server_ms, int64_t t1) {
    const int64_t m = server_ms - t0 / 2 - t1 / 2;
    const int64_t u = std::llabs(t1 - t0) / 2 + 1 + kClockSlackMs;
    std::lock_guard<std::mutex> lock(clock_mu_);
    if (std::llabs(m - canon_offset_) > u + canon_uncertainty_) {
      canon_offset_ = m;
      canon_uncertainty_ = u;
    }
    conn.offset = canon_offset_;
    conn.measured = Steady::now();
  }

  void setup_session(Session& s, Conn& conn) {
    const int64_t t0 = client_clock_();
    ResultPtr r = exec(s, kSetupSql, Params().add(timeout_ms_).add(std::max<int64_t>(2 * timeout_ms_, 1000)));
    const int64_t t1 = client_clock_();
    note_offset(conn, t0, as_int(r.get(), 0, 4), t1);
    s.offset = conn.offset;
  }

  void remeasure(Session& s, Conn& conn) {
    const int64_t t0 = client_clock_();
    ResultPtr r = exec(s, "SELECT " PAYRETRY_SERVER_NOW_MS);
    const int64_t t1 = client_clock_();
    note_offset(conn, t0, as_int(r.get(), 0, 0), t1);
    s.offset = conn.offset;
  }

  Session session_of(Conn& c, Steady::time_point deadline) const {
    Session s;
    s.c = c.pg.get();
    s.deadline = deadline;
    s.timeout_ms = timeout_ms_;
    s.offset = c.offset;
    return s;
  }

  // Connects without blocking (PQconnectStartParams/PQconnectPoll), never
  // waiting past `deadline`; libpq's own connect_timeout (whole seconds) is
  // set too, for what it governs.
  std::unique_ptr<Conn> connect(const std::string& op, Steady::time_point deadline) {
    const int64_t secs = (timeout_ms_ + 999) / 1000;
    const std::string connect_timeout = std::to_string(std::max<int64_t>(2, secs));
    const std::string idle = std::to_string(std::max<int64_t>(1, secs));
    const std::string interval = std::to_string(std::max<int64_t>(1, secs / 3));
    const std::string user_timeout = std::to_string(timeout_ms_);
    // Defaults first: whatever the URL says overrides them, except the
    // client encoding, which the byte handling here relies on.
    const char* keys[] = {"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout", "fallback_application_name", "dbname",
                          "client_encoding", nullptr};
    const char* values[] = {connect_timeout.c_str(), "1", idle.c_str(), interval.c_str(), "3",
                            user_timeout.c_str(), "payretry", url_.c_str(), "UTF8", nullptr};
    auto conn = std::make_unique<Conn>();
    conn->pg.reset(PQconnectStartParams(keys, values, 1));
    PGconn* c = conn->pg.get();
    if (!c) unavailable(op, "cannot connect: out of memory");
    if (PQstatus(c) == CONNECTION_BAD) unavailable(op, "cannot connect: " + one_line(PQerrorMessage(c)));
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK) {
      if (st == PGRES_POLLING_FAILED) unavailable(op, "cannot connect: " + one_line(PQerrorMessage(c)));
      const int fd = PQsocket(c);
      bool ready = fd < 0;
      while (!ready) {
        const int64_t left = ms_left(deadline);
        if (left <= 0) break;
        pollfd p{fd, static_cast<short>(st == PGRES_POLLING_READING ? POLLIN : POLLOUT), 0};
        const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
        ready = r > 0 || (r < 0 && errno != EINTR);
      }
      if (!ready)
        unavailable(op, "cannot connect: no answer within " + std::to_string(timeout_ms_) +
                            " ms; the server is stalled, paused or unreachable");
      st = PQconnectPoll(c);
    }
    PQsetnonblocking(c, 1);
    // A library does not write to stderr: server NOTICEs are dropped.
    PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
    Session s = session_of(*conn, deadline);
    try {
      setup_session(s, *conn);
    } catch (const PgFailure& f) {
      if (f.broken || f.timed_out) unavailable(op + ": session setup", describe(f));
      throw error(op + ": session setup", describe(f));
    }
    return conn;
  }

  // A few connections shared by the threads of this process; grown on
  // demand up to kMaxConnections. Waiting for one ends at `deadline`.
  std::unique_ptr<Conn> acquire(const std::string& op, Steady::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_until(lock, deadline, [&] { return !idle_.empty() || open_ < kMaxConnections; }))
      unavailable(op, "no connection of the pool (" + std::to_string(kMaxConnections) + ") became free within " +
                          std::to_string(timeout_ms_) + " ms: every one is busy with a call the server has not answered");
    if (!idle_.empty()) {
      std::unique_ptr<Conn> c = std::move(idle_.back());
      idle_.pop_back();
      lock.unlock();
      if (Steady::now() - c->measured < kRemeasureEvery) return c;
      Session s = session_of(*c, deadline);
      try {
        remeasure(s, *c);
        return c;
      } catch (const PgFailure& f) {
        c.reset();  // lost while idle (a restarted server): replaced below, in its slot
        if (f.timed_out) {
          release_slot();
          raise(op, f);
        }
      }
    } else {
      ++open_;
      lock.unlock();
    }
    try {
      return connect(op, deadline);
    } catch (...) {
      release_slot();
      throw;
    }
  }

  void release_slot() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      --open_;
    }
    cv_.notify_one();
  }

  void release(std::unique_ptr<Conn> c, bool dead) {
    // A connection that broke, timed out, or is left inside a transaction
    // is closed (never handed to another call): the next caller opens a
    // fresh one.
    const bool clean = !dead && PQstatus(c->pg.get()) == CONNECTION_OK &&
                       PQtransactionStatus(c->pg.get()) == PQTRANS_IDLE;
    if (!clean) {
      c.reset();
      release_slot();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      idle_.push_back(std::move(c));
    }
    cv_.notify_one();
  }

  class Borrow {
   public:
    Borrow(PostgresLedger& l, const std::string& op, Steady::time_point deadline)
        : l_(l), c_(l.acquire(op, deadline)), s_(l.session_of(*c_, deadline)) {}
    ~Borrow() { l_.release(std::move(c_), s_.dead); }
    Borrow(const Borrow&) = delete;
    Borrow& operator=(const Borrow&) = delete;
    Session& session() { return s_; }

   private:
    PostgresLedger& l_;
    std::unique_ptr<Conn> c_;
    Session s_;
  };

  // Runs `body` on a pooled connection within `b` (see the time bound
  // above). A connection found broken is replaced and `body` run again,
  // once. When a COMMIT got no answer, `resolve` finds out what happened;
  // `staged` is the answer `body` had when it sent that COMMIT.
  template <class Body, class T = std::invoke_result_t<Body&, Session&>>
  T run(const std::string& op, Body&& body, const std::optional<T>* staged = nullptr,
        std::optional<Budget> given = std::nullopt) {
    const Budget b = given ? *given : budget();
    bool retried = false;
    for (;;) {
      PgFailure unknown;
      {
        Borrow conn(*this, op, b.first);
        try {
          return body(conn.session());
        } catch (const PgFailure& f) {
          if (!f.maybe_committed) {
            if (f.broken && !f.timed_out && !retried && Steady::now() < b.first) {
              retried = true;
              continue;
            }
            raise(op, f);
          }
          unknown = f;
        }
      }  // the connection is closed here
      return resolve(op, unknown, body, staged, b);
    }
  }

  static std::string txid_status(Session& s, const std::string& txid) {
    ResultPtr r = exec(s, "SELECT txid_status($1::bigint)", Params().add(txid));
    return PQntuples(r.get()) == 1 && !PQgetisnull(r.get(), 0, 0) ? as_text(r.get(), 0, 0) : "";
  }

  // A COMMIT was sent and no answer came. On another connection, within a
  // second timeout_ms (never past b.last): ask the server what became of
  // the transaction; committed -> the answer `body` had; rolled back -> run
  // `body` again; still in progress (a synchronous standby gone: the server
  // waits for it) or unknowable -> fail, saying the outcome is unknown.
  template <class Body, class T>
  T resolve(const std::string& op, const PgFailure& f, Body& body, const std::optional<T>* staged, const Budget& b) {
    const std::string what = f.timed_out ? "COMMIT got no answer within " + std::to_string(timeout_ms_) + " ms"
                                         : "the connection was lost during COMMIT (" + f.message + ")";
    const auto end = std::min(Steady::now() + std::chrono::milliseconds(timeout_ms_), b.last);
    std::string step = "checking whether it took effect";
    std::string status;
    try {
      Borrow conn(*this, op, end);
      Session& s = conn.session();
      for (;;) {
        status = f.txid.empty() ? "" : txid_status(s, f.txid);
        if (status != "in progress" || ms_left(end) <= 25) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (status == "committed" && staged && *staged) return **staged;
      if (status == "committed" || status == "aborted") {
        // Rolled back: nothing was written, so the write is made again.
        // (Committed without a staged answer: a body that is safe to rerun,
        // like opening, reads what it wrote.)
        step = "making it again (it had not taken effect)";
        return body(s);
      }
    } catch (const Unavailable& e) {
      unavailable(op, what + ", and " + step + " failed: " + strip(e.what()) +
                          "; whether the write took effect is unknown");
    } catch (const PgFailure& g) {
      unavailable(op, what + ", and " + step + " failed: " + describe(g) + "; whether the write took effect is unknown");
    }
    if (status == "in progress")
      unavailable(op, what + "; the transaction is still in progress on the server (waiting for a synchronous standby?), "
                             "so whether the write takes effect is unknown");
    unavailable(op, what + "; whether the write took effect cannot be told");
  }

  // A nested message without its "ledger (postgresql ...): op: " prefix.
  std::string strip(const std::string& m) const {
    const std::string head = "ledger (postgresql " + where_ + "): ";
    std::string s = m.rfind(head, 0) == 0 ? m.substr(head.size()) : m;
    if (const size_t colon = s.find(": "); colon != std::string::npos && colon < 40) s = s.substr(colon + 2);
    return s;
  }

  // ---- the statements of one write, inside a caller's transaction ------

  Query create_query(const Session& s, const PaymentRow& p, const std::string& owner, int64_t now,
                     int64_t lease_until) const {
    // The lease end is stored on the server's clock.
    return Query{kCreate, Params().add(p.order_id).add(p.idempotency_key).add(p.fingerprint).add(now)
                              .add(p.key_expires_at).add(owner).add(to_server(s, lease_until))};
  }

  // What kCreate answered; when it found nothing, the order is looked up
  // again (a fresh snapshot): its row, else the key is another order's.
  static CreateOutcome create_done(Session& s, const PGresult* r, const std::string& order_id) {
    CreateOutcome out;
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

  static Query record_query(const std::string& order_id, const std::string& owner, const AttemptEntry& a) {
    Params p;
    p.add(order_id).add(owner).add(a.number).add(a.ended_at);
    add_attempt_fields(p, a);
    return Query{kRecord, std::move(p)};
  }

  static Query settle_query(const std::string& order_id, const std::string& owner, const AttemptEntry* last,
                            const Settlement& st, int64_t now) {
    Params p;
    p.add(order_id).add(owner).add(std::string(state_name(st.state))).add(clean_text(st.delivery))
        .add(clean_text(st.detail)).add(clean_text(st.provider_payment_id)).add(clean_text(st.provider_status))
        .add(st.http_status).add(now).add(last ? last->number : 0).add(last ? last->ended_at : int64_t{0});
    add_attempt_fields(p, last ? *last : AttemptEntry{});
    p.add(last != nullptr);
    return Query{kSettle, std::move(p)};
  }

  // ---- schema and secret ----------------------------------------------

  static std::optional<int> read_version(Session& s) {
    // pg_class itself, not to_regclass(): a name lookup may answer from this
    // session's catalog cache, which does not yet know the table another
    // process created while this one waited for the migration lock.
    ResultPtr t = exec(s,
                       "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                       "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relname = 'ledger_meta')");
    if (as_text(t.get(), 0, 0) != "t") return std::nullopt;
    ResultPtr r = exec(s, "SELECT value FROM ledger_meta WHERE key = 'schema_version'");
    if (PQntuples(r.get()) == 0) return std::nullopt;
    const std::string v = as_text(r.get(), 0, 0);
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < 0 || n > 1000000)
      throw bad_data("ledger_meta holds a malformed schema_version '" + v + "'");
    return static_cast<int>(n);
  }

  LedgerError too_new(int version) const {
    return error("open", "the ledger's schema version " + std::to_string(version) +
                             " is newer than this payretry knows (" + std::to_string(kSchemaVersion) +
                             "); upgrade payretry");
  }

  void migrate(Session& s) {
    // The common case reads only, so a ledger can be opened (and read)
    // where writes are refused.
    std::optional<int> version = read_version(s);
    if (version && *version > kSchemaVersion) throw too_new(*version);
    while (!version || *version < kSchemaVersion) {
      Tx tx(s);
      exec(s, "SELECT pg_advisory_xact_lock($1::bigint)", Params().add(kMigrationLockKey));
      version = read_version(s);  // another process may have migrated meanwhile
      const int from = version.value_or(0);
      if (from > kSchemaVersion) throw too_new(from);
      if (from == kSchemaVersion) {
        tx.commit();
        break;
      }
      exec_script(s, kMigrations[from]);
      exec(s,
           "INSERT INTO ledger_meta (key, value) VALUES ('schema_version', $1) "
           "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
           Params().add(std::to_string(from + 1)));
      tx.commit();
      version = from + 1;
    }
  }

  // The effective fingerprint secret: the override, else the stored one
  // (created once, by whichever process gets there first). ledger_meta also
  // keeps a check value of the effective secret, written by the first open
  // (or the first after this check existed): a client whose secret differs
  // would compute other fingerprints for the same requests, and is refused.
  std::string load_secret(Session& s, const std::string& secret_override) {
    ResultPtr r = exec(s, "SELECT value FROM ledger_meta WHERE key = 'secret'");
    if (PQntuples(r.get()) == 0) {
      exec(s, "INSERT INTO ledger_meta (key, value) VALUES ('secret', $1) ON CONFLICT (key) DO NOTHING",
           Params().add(new_ledger_secret()));
      r = exec(s, "SELECT value FROM ledger_meta WHERE key = 'secret'");
    }
    const std::string stored = PQntuples(r.get()) == 1 ? as_text(r.get(), 0, 0) : "";
    if (stored.size() != 64 || stored.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      throw error("open", "the ledger's stored secret is missing or malformed");
    const std::string effective = secret_override.empty() ? stored : secret_override;
    const std::string check = secret_check(effective);
    ResultPtr c = exec(s, "SELECT value FROM ledger_meta WHERE key = 'secret_check'");
    if (PQntuples(c.get()) == 0) {
      try {
        exec(s, "INSERT INTO ledger_meta (key, value) VALUES ('secret_check', $1) ON CONFLICT (key) DO NOTHING",
             Params().add(check));
      } catch (const PgFailure& f) {
        if (f.sqlstate == "25006") return effective;  // read-only: the first writable open records it
        throw;
      }
      c = exec(s, "SELECT value FROM ledger_meta WHERE key = 'secret_check'");
    }
    if (PQntuples(c.get()) == 1 && as_text(c.get(), 0, 0) != check) throw LedgerError(kSecretMismatch);
    return effective;
  }

  const int64_t timeout_ms_;
  const std::function<int64_t()> client_clock_;
  std::string url_;
  std::vector<std::string> passwords_;  // every form of the password, for redaction
  std::string where_;
  std::string secret_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Conn>> idle_;
  size_t open_ = 0;  // connections in idle_ plus those borrowed (or being made)

  std::mutex clock_mu_;
  int64_t canon_offset_ = 0;       // server clock minus client clock, ms
  int64_t canon_uncertainty_ = 0;  // of the measurement that set it
};

}  // namespace

std::string redact_conninfo(std::string_view text, std::string_view password) {
  std::string s(text);
  if (!password.empty()) {
    for (size_t at = s.find(password); at != std::string::npos; at = s.find(password, at + 3))
      s.replace(at, password.size(), "***");
  }
  // URI userinfo: scheme://user:secret@host, up to the LAST '@' of the
  // token (a password may hold a raw '@' or '/').
  static const std::regex userinfo(R"(([A-Za-z][A-Za-z0-9+.\-]*://[^:/?#@\s]*):[^\s]*@)");
  s = std::regex_replace(s, userinfo, "$1:***@");
  // password=... in conninfo strings ('quoted' or bare) and URI queries.
  static const std::regex keyval(R"((password\s*=\s*)((?:'(?:[^'\\]|\\.)*')+|[^\s&'"]*))", std::regex::icase);
  s = std::regex_replace(s, keyval, "$1***");
  return s;
}

std::unique_ptr<Ledger> open_postgres_ledger(const std::string& conninfo_url, const std::string& secret_override,
                                             int64_t timeout_ms) {
  return std::make_unique<PostgresLedger>(conninfo_url, secret_override, timeout_ms, nullptr);
}

std::unique_ptr<Ledger> open_postgres_ledger_with_clock(const std::string& conninfo_url,
                                                        const std::string& secret_override, int64_t timeout_ms,
                                                        std::function<int64_t()> client_clock) {
  return std::make_unique<PostgresLedger>(conninfo_url, secret_override, timeout_ms, std::move(client_clock));
}

}  // namespace payretry
