#include "ledger_postgres.hpp"

#include <libpq-fe.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <regex>
#include <utility>
#include <vector>

#include "fingerprint.hpp"

namespace payretry {
namespace {

constexpr int kSchemaVersion = 2;
// Connections one ledger opens at most; more threads wait for a free one.
constexpr size_t kMaxConnections = 8;
// pg_advisory_xact_lock key ("payretry" in ASCII) that serialises schema
// migrations, so that processes opening a fresh database at once do not race.
constexpr const char* kMigrationLockKey = "8097887137224225401";

// Each step brings the schema from version i to i+1, in one transaction;
// never edit a shipped step, append a new one. Same meaning as the SQLite
// schema in ledger_sqlite.cpp.
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

struct ConnCloser {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct ResultClearer {
  void operator()(PGresult* r) const { PQclear(r); }
};
using ConnPtr = std::unique_ptr<PGconn, ConnCloser>;
using ResultPtr = std::unique_ptr<PGresult, ResultClearer>;

// A failed statement, before it becomes a LedgerError. `broken`: the
// connection is gone. `maybe_committed`: it broke while a write was being
// committed, so whether the write took effect is unknown.
struct PgFailure {
  std::string sqlstate;
  std::string message;
  bool broken = false;
  bool maybe_committed = false;
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

[[noreturn]] void throw_failure(PGconn* c, const PGresult* r) {
  PgFailure f;
  f.broken = PQstatus(c) == CONNECTION_BAD;
  if (r) {
    if (const char* s = PQresultErrorField(r, PG_DIAG_SQLSTATE)) f.sqlstate = s;
    if (const char* m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)) f.message = m;
  }
  if (f.message.empty()) f.message = PQerrorMessage(c);
  f.message = one_line(f.message);
  throw f;
}

ResultPtr exec(PGconn* c, const char* sql, const Params& p = Params()) {
  const std::vector<const char*> values = p.pointers();
  ResultPtr r(PQexecParams(c, sql, p.size(), nullptr, values.empty() ? nullptr : values.data(), nullptr, nullptr, 0));
  const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) throw_failure(c, r.get());
  return r;
}

// Several statements without parameters: migration scripts (constants).
void exec_script(PGconn* c, const char* sql) {
  ResultPtr r(PQexec(c, sql));
  const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) throw_failure(c, r.get());
}

bool changed_one(const ResultPtr& r) { return std::string(PQcmdTuples(r.get())) == "1"; }

// One transaction; rolled back unless committed.
class Tx {
 public:
  explicit Tx(PGconn* c) : c_(c) {
    exec(c_, "BEGIN");
    open_ = true;
  }
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;
  void commit() {
    open_ = false;
    try {
      exec(c_, "COMMIT");
    } catch (PgFailure& f) {
      f.maybe_committed = f.broken;
      throw;
    }
  }
  ~Tx() {
    if (open_ && PQstatus(c_) == CONNECTION_OK) ResultPtr(PQexec(c_, "ROLLBACK"));
  }

 private:
  PGconn* c_;
  bool open_ = false;
};

int64_t as_int(const PGresult* r, int row, int col) {
  const char* v = PQgetvalue(r, row, col);
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0')
    throw PgFailure{"", std::string("unexpected value in column ") + PQfname(r, col)};
  return x;
}

std::string as_text(const PGresult* r, int row, int col) {
  return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
}

PaymentRow read_row(const PGresult* r, int i) {
  PaymentRow p;
  p.order_id = as_text(r, i, 0);
  p.idempotency_key = as_text(r, i, 1);
  p.fingerprint = as_text(r, i, 2);
  const auto state = parse_state(as_text(r, i, 3));
  if (!state) throw PgFailure{"", "payment " + p.order_id + " has an unknown state '" + as_text(r, i, 3) + "'"};
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

std::optional<PaymentRow> get_row(PGconn* c, const std::string& order_id) {
  ResultPtr r = exec(c, kGetRow, Params().add(order_id));
  if (PQntuples(r.get()) == 0) return std::nullopt;
  return read_row(r.get(), 0);
}

std::vector<AttemptEntry> get_attempts(PGconn* c, const std::string& order_id) {
  ResultPtr r = exec(c,
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

Params attempt_params(const std::string& order_id, const AttemptEntry& a) {
  Params p;
  p.add(order_id).add(a.number).add(a.started_at).add(a.ended_at).add(a.http_status).add(clean_text(a.transport_error))
      .add(clean_text(a.verdict)).add(clean_text(a.reason)).add(a.delay_ms).add(clean_text(a.provider_request_id))
      .add(a.replayed).add(clean_text(a.kind));
  if (a.processed) p.add(*a.processed);
  else p.add_null();
  return p;
}

// Never overwrites an entry: a rerun of the same write (after a connection
// lost during COMMIT) finds its own entry, anything else is a clash.
const char* const kInsertAttempt =
    "INSERT INTO attempts (order_id, number, started_at, ended_at, http_status, transport_error, verdict, reason, "
    "delay_ms, provider_request_id, replayed, kind, processed) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) "
    "ON CONFLICT (order_id, number) DO NOTHING RETURNING number";

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

void insert_attempt(PGconn* c, const std::string& order_id, const AttemptEntry& a) {
  ResultPtr r = exec(c, kInsertAttempt, attempt_params(order_id, a));
  if (PQntuples(r.get()) == 1) return;
  const AttemptEntry want = cleaned(a);
  for (const AttemptEntry& have : get_attempts(c, order_id))
    if (have.number == a.number && same_attempt(have, want)) return;
  throw PgFailure{"", "entry " + std::to_string(a.number) + " of order " + order_id +
                          " is already recorded; entries are never overwritten"};
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

class PostgresLedger final : public Ledger {
 public:
  PostgresLedger(std::string url, const std::string& secret_override) : url_(std::move(url)) {
    const Target t = describe_target(url_);
    password_ = t.password;
    where_ = redact_conninfo(t.where, password_);
    check_url();
    migrate();
    const std::string stored = stored_secret();
    secret_ = secret_override.empty() ? stored : secret_override;
  }

  ~PostgresLedger() override = default;

  std::string secret() override { return secret_; }

  CreateOutcome create_and_claim(const PaymentRow& p, const std::string& owner, int64_t now,
                                 int64_t lease_until) override {
    check_identifier("order id", p.order_id);
    check_identifier("idempotency key", p.idempotency_key);
    check_identifier("fingerprint", p.fingerprint);
    check_identifier("lease owner", owner);
    auto body = [&](PGconn* c) {
      Tx tx(c);
      CreateOutcome out = create_in_tx(c, p, owner, now, lease_until);
      tx.commit();
      return out;
    };
    // After a connection lost during COMMIT: the row is ours exactly when it
    // carries this call's owner, lease, creation time and key.
    auto verify = [&](PGconn* c) -> std::optional<CreateOutcome> {
      auto row = get_row(c, p.order_id);
      if (row && row->state == PaymentState::in_flight && row->lease_owner == owner &&
          row->lease_until == lease_until && row->created_at == now && row->idempotency_key == p.idempotency_key &&
          row->fingerprint == p.fingerprint) {
        CreateOutcome out;
        out.row = *row;
        out.created = true;
        return out;
      }
      return std::nullopt;
    };
    return run("create_and_claim", body, verify);
  }

  bool claim(const std::string& order_id, const std::string& owner, int64_t now, int64_t lease_until) override {
    check_identifier("order id", order_id);
    check_identifier("lease owner", owner);
    auto body = [&](PGconn* c) {
      // One statement, so its own transaction. Under READ COMMITTED a
      // competing UPDATE waits for the row lock and then re-checks this
      // WHERE against the winner's row, so exactly one claimant wins.
      try {
        ResultPtr r = exec(c,
                           "UPDATE payments SET state = 'IN_FLIGHT', lease_owner = $2, lease_until = $3, "
                           "updated_at = $4 WHERE order_id = $1 AND (state IN ('PENDING', 'UNKNOWN') OR "
                           "(state = 'IN_FLIGHT' AND lease_until < $4))",
                           Params().add(order_id).add(owner).add(lease_until).add(now));
        return changed_one(r);
      } catch (PgFailure& f) {
        f.maybe_committed = f.broken;
        throw;
      }
    };
    auto verify = [&](PGconn* c) -> std::optional<bool> {
      auto row = get_row(c, order_id);
      if (row && row->state == PaymentState::in_flight && row->lease_owner == owner && row->lease_until == lease_until)
        return true;
      return std::nullopt;
    };
    return run("claim", body, verify);
  }

  bool record_attempt(const std::string& order_id, const std::string& owner, const AttemptEntry& a) override {
    check_identifier("order id", order_id);
    check_identifier("lease owner", owner);
    auto body = [&](PGconn* c) {
      Tx tx(c);
      if (!record_in_tx(c, order_id, owner, a)) return false;
      tx.commit();
      return true;
    };
    // Writing the same attempt twice is harmless, so after a connection lost
    // during COMMIT a plain rerun tells the outcome.
    return run("record_attempt", body);
  }

  bool settle(const std::string& order_id, const std::string& owner, const AttemptEntry* last, const Settlement& s,
              int64_t now) override {
    check_identifier("order id", order_id);
    check_identifier("lease owner", owner);
    if (s.state != PaymentState::succeeded && s.state != PaymentState::failed && s.state != PaymentState::unknown)
      throw LedgerError(std::string("ledger (postgresql): settle: a settlement's state must be SUCCEEDED, FAILED or "
                                    "UNKNOWN, not ") +
                        state_name(s.state));
    const std::string delivery = clean_text(s.delivery), detail = clean_text(s.detail),
                      provider_payment_id = clean_text(s.provider_payment_id),
                      provider_status = clean_text(s.provider_status);
    auto body = [&](PGconn* c) {
      Tx tx(c);
      if (!settle_in_tx(c, order_id, owner, last, s, now)) return false;
      tx.commit();
      return true;
    };
    // After a connection lost during COMMIT: settled exactly when the row
    // shows this settlement with the lease released (and the last attempt).
    auto verify = [&](PGconn* c) -> std::optional<bool> {
      auto row = get_row(c, order_id);
      if (!row || row->state != s.state || !row->lease_owner.empty() || row->delivery != delivery ||
          row->detail != detail || row->provider_payment_id != provider_payment_id ||
          row->provider_status != provider_status || row->http_status != s.http_status)
        return std::nullopt;
      if (last) {
        const AttemptEntry want = cleaned(*last);
        bool found = false;
        for (const AttemptEntry& a : get_attempts(c, order_id)) found = found || same_attempt(a, want);
        if (!found) return std::nullopt;
      }
      return true;
    };
    return run("settle", body, verify);
  }

  // Group commit: every entry in one transaction on one connection, so one
  // WAL flush makes all of them durable. Each entry runs in its own
  // savepoint, so an entry that loses its lease rolls back alone. If the
  // transaction fails as a whole, the entries are retried one call each,
  // with that call's own checks and answers. (A connection lost during the
  // batch's COMMIT reruns the batch: rows it did create then read as held by
  // this owner, so their payments report IN_PROGRESS instead of sending;
  // nothing is sent twice and nothing is lost.)
  void apply(LedgerBatch& b) override {
    if (b.empty()) return;
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
        const PaymentState st = s.settlement.state;
        if (st != PaymentState::succeeded && st != PaymentState::failed && st != PaymentState::unknown)
          throw LedgerError("ledger (postgresql): settle: bad settlement state");
      }
      struct Answers {
        std::vector<CreateOutcome> creates;
        std::vector<char> records, settles;
      };
      Answers got = run("apply", [&](PGconn* c) {
        Answers a;
        Tx tx(c);
        int sp = 0;
        auto guarded = [&](auto&& op) {
          const std::string name = "e" + std::to_string(sp++);
          exec(c, ("SAVEPOINT " + name).c_str());
          const bool ok = op();
          exec(c, ((ok ? "RELEASE SAVEPOINT " : "ROLLBACK TO SAVEPOINT ") + name).c_str());
          return ok;
        };
        for (const auto& e : b.creates) {
          CreateOutcome out;
          guarded([&] {
            out = create_in_tx(c, e.proposed, e.owner, e.now, e.lease_until);
            return true;
          });
          a.creates.push_back(std::move(out));
        }
        for (const auto& e : b.records)
          a.records.push_back(guarded([&] { return record_in_tx(c, e.order_id, e.owner, e.attempt); }));
        for (const auto& e : b.settles)
          a.settles.push_back(guarded([&] {
            return settle_in_tx(c, e.order_id, e.owner, e.last ? &*e.last : nullptr, e.settlement, e.now);
          }));
        tx.commit();
        return a;
      });
      for (size_t i = 0; i < b.creates.size(); ++i) {
        b.creates[i].out.row = std::move(got.creates[i].row);
        b.creates[i].out.created = got.creates[i].created;
        b.creates[i].out.key_taken = got.creates[i].key_taken;
      }
      for (size_t i = 0; i < b.records.size(); ++i) b.records[i].ok = got.records[i] != 0;
      for (size_t i = 0; i < b.settles.size(); ++i) b.settles[i].ok = got.settles[i] != 0;
    } catch (const LedgerError&) {
      Ledger::apply(b);
    }
  }

  std::optional<PaymentRow> get(const std::string& order_id) override {
    check_identifier("order id", order_id);
    return run("get", [&](PGconn* c) { return get_row(c, order_id); });
  }

  std::vector<AttemptEntry> attempts(const std::string& order_id) override {
    check_identifier("order id", order_id);
    return run("attempts", [&](PGconn* c) { return get_attempts(c, order_id); });
  }

  std::vector<PaymentRow> list(std::optional<PaymentState> state, int64_t updated_before, int limit) override {
    return run("list", [&](PGconn* c) {
      Params p;
      if (state) p.add(std::string(state_name(*state)));
      else p.add_null();
      p.add(updated_before);
      if (limit >= 0) p.add(limit);
      else p.add_null();  // LIMIT NULL: no limit
      // COLLATE "C": byte order, as in the other backends, whatever the
      // database's collation.
      ResultPtr r = exec(c,
                         "SELECT " PAYRETRY_ROW_COLUMNS " FROM payments "
                         "WHERE ($1::text IS NULL OR state = $1::text) "
                         "AND ($2::bigint <= 0 OR updated_at < $2::bigint) "
                         "ORDER BY updated_at, order_id COLLATE \"C\" LIMIT $3::bigint",
                         p);
      std::vector<PaymentRow> out;
      for (int i = 0; i < PQntuples(r.get()); ++i) out.push_back(read_row(r.get(), i));
      return out;
    });
  }

 private:
  // ---- errors ---------------------------------------------------------

  LedgerError error(const std::string& op, const std::string& why) const {
    return LedgerError(redact_conninfo("ledger (postgresql " + where_ + "): " + op + ": " + why, password_));
  }

  LedgerError error(const std::string& op, const PgFailure& f) const {
    const std::string& s = f.sqlstate;
    std::string why;
    auto starts = [&](const char* prefix) { return s.rfind(prefix, 0) == 0; };
    if (s == "25006") why = "the server refuses writes (read-only transaction: a standby, or default_transaction_read_only)";
    else if (s == "53100") why = "the database server's disk is full";
    else if (starts("53")) why = "the database server is out of resources";
    else if (s == "57P01" || s == "57P02") why = "the server is shutting down or restarting";
    else if (s == "57P03") why = "the server is starting up or shutting down and refuses connections";
    else if (s == "55P03") why = "a lock stayed held by another session beyond lock_timeout";
    else if (starts("23")) why = "a constraint of the ledger schema was violated (unexpected)";
    else if (s == "42P01") why = "the ledger tables are missing";
    else if (starts("08") || f.broken) why = "lost the connection to the server";
    std::string msg = why.empty() ? f.message : why + ": " + f.message;
    if (!s.empty()) msg += " [SQLSTATE " + s + "]";
    return error(op, msg);
  }

  // ---- connections ----------------------------------------------------

  void check_url() const {
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
    if (redact_conninfo(url_) != url_) why = "details withheld because the URL holds a password";
    throw LedgerError("ledger (postgresql): the connection URL cannot be parsed: " + why);
  }

  // Session settings every connection needs before its first write.
  static void setup_session(PGconn* c) {
    // A commit must be on disk before pay_submit sends a byte, whatever the
    // server's default; a row locked by a stuck peer must not hang a worker
    // forever (unless the URL chose its own lock_timeout).
    exec(c,
         "SELECT set_config('synchronous_commit', 'on', false), "
         "CASE WHEN current_setting('lock_timeout') = '0' THEN set_config('lock_timeout', '10s', false) END");
  }

  ConnPtr connect(const std::string& op) {
    // Defaults first: whatever the URL says overrides them, except the
    // client encoding, which the byte handling here relies on.
    const char* keys[] = {"connect_timeout", "keepalives_idle", "keepalives_interval", "keepalives_count",
                          "fallback_application_name", "dbname", "client_encoding", nullptr};
    const char* values[] = {"10", "30", "10", "3", "payretry", url_.c_str(), "UTF8", nullptr};
    ConnPtr c(PQconnectdbParams(keys, values, 1));
    if (!c) throw error(op, "cannot connect: out of memory");
    if (PQstatus(c.get()) != CONNECTION_OK) throw error(op, "cannot connect: " + one_line(PQerrorMessage(c.get())));
    // A library does not write to stderr: server NOTICEs are dropped.
    PQsetNoticeProcessor(c.get(), [](void*, const char*) {}, nullptr);
    try {
      setup_session(c.get());
    } catch (const PgFailure& f) {
      throw error(op + ": session setup", f);
    }
    return c;
  }

  // PQreset on a broken connection; false (with the reason) when the server
  // is still unreachable.
  bool reset(PGconn* c, std::string& why) {
    PQreset(c);
    if (PQstatus(c) != CONNECTION_OK) {
      why = one_line(PQerrorMessage(c));
      return false;
    }
    try {
      setup_session(c);
    } catch (const PgFailure& f) {
      why = f.message;
      return false;
    }
    return true;
  }

  // A few connections shared by the threads of this process; grown on
  // demand up to kMaxConnections.
  ConnPtr acquire(const std::string& op) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !idle_.empty() || open_ < kMaxConnections; });
    if (!idle_.empty()) {
      ConnPtr c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
    ++open_;
    lock.unlock();
    try {
      return connect(op);
    } catch (...) {
      lock.lock();
      --open_;
      cv_.notify_one();
      throw;
    }
  }

  void release(ConnPtr c) {
    // A connection that broke, or that is left inside a transaction, is not
    // worth keeping (it closes on return): the next caller opens a fresh one.
    const bool clean = PQstatus(c.get()) == CONNECTION_OK && PQtransactionStatus(c.get()) == PQTRANS_IDLE;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (clean) idle_.push_back(std::move(c));
      else --open_;
    }
    cv_.notify_one();
  }

  class Borrowed {
   public:
    Borrowed(PostgresLedger& l, ConnPtr c) : l_(l), c_(std::move(c)) {}
    ~Borrowed() { l_.release(std::move(c_)); }
    Borrowed(const Borrowed&) = delete;
    Borrowed& operator=(const Borrowed&) = delete;
    PGconn* get() const { return c_.get(); }

   private:
    PostgresLedger& l_;
    ConnPtr c_;
  };

  // Runs `body` on a pooled connection. When the connection turns out to be
  // broken (a restarted server, a dropped socket), reconnects once and runs
  // it again; when it broke while a write was committing, `verify` first
  // tells whether that write took effect (its answer then stands).
  template <class Body, class Verify>
  auto run(const std::string& op, Body&& body, Verify&& verify) -> decltype(body(nullptr)) {
    Borrowed conn(*this, acquire(op));
    bool reconnected = false, check_first = false;
    for (;;) {
      try {
        if (check_first) {
          check_first = false;
          if (auto known = verify(conn.get())) return *known;
        }
        return body(conn.get());
      } catch (const PgFailure& f) {
        if (!f.broken || reconnected) throw error(op, f);
        reconnected = true;
        std::string why;
        if (!reset(conn.get(), why))
          throw error(op, "lost the connection to the server and could not reconnect: " + why);
        check_first = f.maybe_committed;
      }
    }
  }

  template <class Body>
  auto run(const std::string& op, Body&& body) -> decltype(body(nullptr)) {
    using T = decltype(body(nullptr));
    return run(op, std::forward<Body>(body), [](PGconn*) -> std::optional<T> { return std::nullopt; });
  }

  // ---- the statements of one write, inside a caller's transaction ------

  CreateOutcome create_in_tx(PGconn* c, const PaymentRow& p, const std::string& owner, int64_t now,
                             int64_t lease_until) {
    CreateOutcome out;
    // ON CONFLICT without a target: an existing order and a key held by
    // another order both insert nothing, without aborting the transaction.
    ResultPtr ins = exec(c,
                         "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, created_at, "
                         "key_expires_at, updated_at) VALUES ($1, $2, $3, 'PENDING', $4, $5, $4) "
                         "ON CONFLICT DO NOTHING RETURNING order_id",
                         Params().add(p.order_id).add(p.idempotency_key).add(p.fingerprint).add(now)
                             .add(p.key_expires_at));
    if (PQntuples(ins.get()) == 1) {
      // PENDING -> IN_FLIGHT in the same commit: nobody ever sees the row unclaimed.
      ResultPtr claimed = exec(c,
                               "UPDATE payments SET state = 'IN_FLIGHT', lease_owner = $2, lease_until = $3, "
                               "updated_at = $4 WHERE order_id = $1 AND state = 'PENDING' "
                               "RETURNING " PAYRETRY_ROW_COLUMNS,
                               Params().add(p.order_id).add(owner).add(lease_until).add(now));
      if (PQntuples(claimed.get()) != 1) throw PgFailure{"", "the new row could not be claimed"};
      out.row = read_row(claimed.get(), 0);
      out.created = true;
      return out;
    }
    // The order exists (return it unclaimed: the caller decides), or it
    // does not and the key is another order's.
    if (auto row = get_row(c, p.order_id)) {
      out.row = *row;
    } else {
      out.key_taken = true;
      out.row.order_id = p.order_id;
    }
    return out;
  }

  // False when `owner` does not hold the lease; the caller then rolls back.
  bool record_in_tx(PGconn* c, const std::string& order_id, const std::string& owner, const AttemptEntry& a) {
    // Fenced: only the lease holder of an IN_FLIGHT payment writes.
    ResultPtr f = exec(c,
                       "UPDATE payments SET attempts = GREATEST(attempts, $3::integer), "
                       "updated_at = GREATEST(updated_at, $4::bigint) "
                       "WHERE order_id = $1 AND lease_owner = $2 AND state = 'IN_FLIGHT'",
                       Params().add(order_id).add(owner).add(a.number).add(a.ended_at));
    if (!changed_one(f)) return false;
    insert_attempt(c, order_id, a);
    return true;
  }

  bool settle_in_tx(PGconn* c, const std::string& order_id, const std::string& owner, const AttemptEntry* last,
                    const Settlement& s, int64_t now) {
    ResultPtr f = exec(c,
                       "UPDATE payments SET state = $3, delivery = $4, detail = $5, provider_payment_id = $6, "
                       "provider_status = $7, http_status = $8, lease_owner = '', lease_until = 0, "
                       "attempts = GREATEST(attempts, $10::integer), "
                       "updated_at = GREATEST(updated_at, $9::bigint, $11::bigint) "
                       "WHERE order_id = $1 AND lease_owner = $2 AND state = 'IN_FLIGHT'",
                       Params().add(order_id).add(owner).add(std::string(state_name(s.state)))
                           .add(clean_text(s.delivery)).add(clean_text(s.detail))
                           .add(clean_text(s.provider_payment_id)).add(clean_text(s.provider_status))
                           .add(s.http_status).add(now).add(last ? last->number : 0)
                           .add(last ? last->ended_at : int64_t{0}));
    if (!changed_one(f)) return false;
    if (last) insert_attempt(c, order_id, *last);
    return true;
  }

  // ---- schema and secret ----------------------------------------------

  static std::optional<int> read_version(PGconn* c) {
    // pg_class itself, not to_regclass(): a name lookup may answer from this
    // session's catalog cache, which does not yet know the table another
    // process created while this one waited for the migration lock.
    ResultPtr t = exec(c,
                       "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                       "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relname = 'ledger_meta')");
    if (as_text(t.get(), 0, 0) != "t") return std::nullopt;
    ResultPtr r = exec(c, "SELECT value FROM ledger_meta WHERE key = 'schema_version'");
    if (PQntuples(r.get()) == 0) return std::nullopt;
    const std::string v = as_text(r.get(), 0, 0);
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < 0 || n > 1000000)
      throw PgFailure{"", "ledger_meta holds a malformed schema_version '" + v + "'"};
    return static_cast<int>(n);
  }

  LedgerError too_new(int version) const {
    return error("open", "the ledger's schema version " + std::to_string(version) +
                             " is newer than this payretry knows (" + std::to_string(kSchemaVersion) +
                             "); upgrade payretry");
  }

  void migrate() {
    run("open", [&](PGconn* c) {
      // The common case reads only, so a ledger can be opened (and read)
      // where writes are refused.
      std::optional<int> version = read_version(c);
      if (version && *version > kSchemaVersion) throw too_new(*version);
      while (!version || *version < kSchemaVersion) {
        Tx tx(c);
        exec(c, "SELECT pg_advisory_xact_lock($1::bigint)", Params().add(kMigrationLockKey));
        version = read_version(c);  // another process may have migrated meanwhile
        const int from = version.value_or(0);
        if (from > kSchemaVersion) throw too_new(from);
        if (from == kSchemaVersion) {
          tx.commit();
          break;
        }
        exec_script(c, kMigrations[from]);
        exec(c,
             "INSERT INTO ledger_meta (key, value) VALUES ('schema_version', $1) "
             "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
             Params().add(std::to_string(from + 1)));
        tx.commit();
        version = from + 1;
      }
      return true;
    });
  }

  std::string stored_secret() {
    const std::string fresh = new_ledger_secret();
    return run("open", [&](PGconn* c) {
      // Created once, by whichever process gets there first; every process
      // then reads the same one.
      ResultPtr r = exec(c, "SELECT value FROM ledger_meta WHERE key = 'secret'");
      if (PQntuples(r.get()) == 0) {
        exec(c, "INSERT INTO ledger_meta (key, value) VALUES ('secret', $1) ON CONFLICT (key) DO NOTHING",
             Params().add(fresh));
        r = exec(c, "SELECT value FROM ledger_meta WHERE key = 'secret'");
      }
      const std::string s = PQntuples(r.get()) == 1 ? as_text(r.get(), 0, 0) : "";
      if (s.size() != 64 || s.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
        throw error("open", "the ledger's stored secret is missing or malformed");
      return s;
    });
  }

  std::string url_;
  std::string password_;
  std::string where_;
  std::string secret_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ConnPtr> idle_;
  size_t open_ = 0;  // connections in idle_ plus those borrowed
};

}  // namespace

std::string redact_conninfo(std::string_view text, std::string_view password) {
  std::string s(text);
  if (!password.empty()) {
    for (size_t at = s.find(password); at != std::string::npos; at = s.find(password, at + 3))
      s.replace(at, password.size(), "***");
  }
  // URI userinfo: scheme://user:secret@host
  static const std::regex userinfo(R"(([A-Za-z][A-Za-z0-9+.\-]*://[^:/?#@\s]*):[^@\s]*@)");
  s = std::regex_replace(s, userinfo, "$1:***@");
  // password=... in conninfo strings ('quoted' or bare) and URI queries.
  static const std::regex keyval(R"((password\s*=\s*)((?:'(?:[^'\\]|\\.)*')+|[^\s&'"]*))", std::regex::icase);
  s = std::regex_replace(s, keyval, "$1***");
  return s;
}

std::unique_ptr<Ledger> open_postgres_ledger(const std::string& conninfo_url, const std::string& secret_override,
                                             int64_t /*timeout_ms*/) {
  return std::make_unique<PostgresLedger>(conninfo_url, secret_override);
}

}  // namespace payretry
