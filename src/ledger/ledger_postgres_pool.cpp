#include "ledger_postgres_pool.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

namespace payretry {
namespace pg {
namespace {

int64_t system_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Session settings every connection needs before its first write, and
// the first measure of the server's clock. A commit must be on disk
// before pay_submit sends a byte, whatever the server's default. The
// server's own timeouts are a second line behind the client-side bound
// (they free the server of a statement whose client gave up), never
// longer than a setting the URL or the role chose.
//
// No sequential scans (enable_seqscan, unless the URL, the role or the
// server's configuration set it): every statement of the ledger finds its
// rows by an index, and a plan that reads the whole table is never what it
// means. A connection keeps its statements prepared, and PostgreSQL's plan
// cache settles, after five executions, on one generic plan made for the
// table as it was then: a ledger that starts empty kept plans that joined
// each group commit's entries to the whole table, until autovacuum's next
// ANALYZE (540 sequential scans reading 24 million rows in 18 s of a fresh
// ledger at 1,000 payments in flight). Planning every batch anew
// (plan_cache_mode) also avoids them, but cost the server 20-30 % more CPU
// a payment.
constexpr const char* kSetupSql =
    "WITH s AS (SELECT name, setting::bigint AS v FROM pg_catalog.pg_settings "
    "           WHERE name IN ('statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout')) "
    "SELECT set_config('synchronous_commit', 'on', false), "
    "set_config('statement_timeout', (SELECT CASE WHEN v = 0 OR v > $1::bigint THEN $1::bigint ELSE v END "
    "  FROM s WHERE name = 'statement_timeout')::text, false), "
    "set_config('lock_timeout', (SELECT CASE WHEN v = 0 OR v > $1::bigint THEN $1::bigint ELSE v END "
    "  FROM s WHERE name = 'lock_timeout')::text, false), "
    "set_config('idle_in_transaction_session_timeout', (SELECT CASE WHEN v = 0 OR v > $2::bigint THEN $2::bigint "
    "  ELSE v END FROM s WHERE name = 'idle_in_transaction_session_timeout')::text, false), "
    "(SELECT set_config('enable_seqscan', 'off', false) FROM pg_catalog.pg_settings "
    "  WHERE name = 'enable_seqscan' AND source = 'default'), " PAYRETRY_SERVER_NOW_MS;

}  // namespace

Pool::Pool(std::string url, int64_t timeout_ms, std::function<int64_t()> client_clock, const ErrorReporter& errors)
    : timeout_ms_(timeout_ms),
      client_clock_(client_clock ? std::move(client_clock) : std::function<int64_t()>(system_unix_ms)),
      url_(std::move(url)),
      errors_(errors) {}

// Takes one reading of the server's clock between two of the client's.
// The offset snaps to the ledger's current one while the two agree within
// their uncertainties, so that the connections (and calls) of one ledger
// to one server share one value; it starts at 0, so that clocks in sync
// (within the measurement's precision) translate nothing.
void Pool::note_offset(Conn& conn, int64_t t0, int64_t server_ms, int64_t t1) {
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

void Pool::setup_session(Session& s, Conn& conn) {
  const int64_t t0 = client_clock_();
  ResultPtr r = exec(s, kSetupSql, Params().add(timeout_ms_).add(std::max<int64_t>(2 * timeout_ms_, 1000)));
  const int64_t t1 = client_clock_();
  note_offset(conn, t0, as_int(r.get(), 0, 5), t1);
  s.offset = conn.offset;
}

void Pool::remeasure(Session& s, Conn& conn) {
  const int64_t t0 = client_clock_();
  ResultPtr r = exec(s, "SELECT " PAYRETRY_SERVER_NOW_MS);
  const int64_t t1 = client_clock_();
  note_offset(conn, t0, as_int(r.get(), 0, 0), t1);
  s.offset = conn.offset;
}

Session Pool::session_of(Conn& c, Steady::time_point deadline) const {
  Session s;
  s.c = c.pg.get();
  s.deadline = deadline;
  s.timeout_ms = timeout_ms_;
  s.offset = c.offset;
  s.prepared = &c.prepared;
  return s;
}

// Connects without blocking (PQconnectStartParams/PQconnectPoll), never
// waiting past `deadline`; libpq's own connect_timeout (whole seconds) is
// set too, for what it governs.
std::unique_ptr<Conn> Pool::connect(const std::string& op, Steady::time_point deadline) {
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
  if (!c) errors_.unavailable(op, "cannot connect: out of memory");
  if (PQstatus(c) == CONNECTION_BAD) errors_.unavailable(op, "cannot connect: " + one_line(PQerrorMessage(c)));
  PostgresPollingStatusType st = PGRES_POLLING_WRITING;
  while (st != PGRES_POLLING_OK) {
    if (st == PGRES_POLLING_FAILED) errors_.unavailable(op, "cannot connect: " + one_line(PQerrorMessage(c)));
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
      errors_.unavailable(op, "cannot connect: no answer within " + std::to_string(timeout_ms_) +
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
    if (f.broken || f.timed_out) errors_.unavailable(op + ": session setup", errors_.describe(f));
    throw errors_.error(op + ": session setup", errors_.describe(f));
  }
  return conn;
}

// A few connections shared by the threads of this process; grown on
// demand up to kMaxConnections. Waiting for one ends at `deadline`.
std::unique_ptr<Conn> Pool::acquire(const std::string& op, Steady::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline, [&] { return !idle_.empty() || open_ < kMaxConnections; }))
    errors_.unavailable(op, "no connection of the pool (" + std::to_string(kMaxConnections) +
                                ") became free within " + std::to_string(timeout_ms_) +
                                " ms: every one is busy with a call the server has not answered");
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
        errors_.raise(op, f);
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

void Pool::release_slot() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --open_;
  }
  cv_.notify_one();
}

void Pool::release(std::unique_ptr<Conn> c, bool dead) {
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

}  // namespace pg
}  // namespace payretry
