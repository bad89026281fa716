#include "ledger_postgres_session.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <utility>

namespace payretry {
namespace pg {
namespace {

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

// The next result of a pipeline, waiting at most until the deadline.
ResultPtr next_result(Session& s) {
  for (;;) {
    if (!PQisBusy(s.c)) return ResultPtr(PQgetResult(s.c));
    if (!wait_socket(s.c, false, s.deadline)) throw timed_out(s, true);
    if (!PQconsumeInput(s.c)) throw lost(s, true);
  }
}

}  // namespace

void close_conn(PGconn* c) {
  if (!c) return;
  PQsetnonblocking(c, 1);
  PQfinish(c);
}

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

ResultPtr exec(Session& s, const char* sql, const Params& p) {
  const std::vector<const char*> values = p.pointers();
  std::vector<ResultPtr> rs = roundtrip(s, [&] {
    return PQsendQueryParams(s.c, sql, p.size(), nullptr, values.empty() ? nullptr : values.data(), nullptr, nullptr,
                             0) == 1;
  });
  check_results(s, rs);
  return std::move(rs.back());
}

ResultPtr exec_script(Session& s, const char* sql) {
  std::vector<ResultPtr> rs = roundtrip(s, [&] { return PQsendQuery(s.c, sql) == 1; });
  check_results(s, rs);
  return std::move(rs.back());
}

bool changed_one(const ResultPtr& r) { return std::string(PQcmdTuples(r.get())) == "1"; }

std::string as_text(const PGresult* r, int row, int col) {
  return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
}

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

std::vector<ResultPtr> exec_pipeline(Session& s, const std::vector<Query>& qs, BeginTx begin) {
  std::vector<ResultPtr> out;
#ifdef LIBPQ_HAS_PIPELINING
  // Even one query goes this way: as its prepared statement (an unnamed one
  // would be parsed and planned anew each time), and with BEGIN in front.
  if (!qs.empty()) {
    if (s.dead || PQenterPipelineMode(s.c) != 1) throw lost(s, false);
    // What was sent, in order: a query (0), the preparation of a statement
    // (its bit), whose answer says only whether it took, or BEGIN and the
    // transaction's id (kBegun, kTxid).
    constexpr unsigned kBegun = ~0u, kTxid = ~0u - 1;
    std::vector<unsigned> sent;
    sent.reserve(qs.size() + 6);
    if (begin == BeginTx::yes) {
      if (PQsendQueryParams(s.c, "BEGIN", 0, nullptr, nullptr, nullptr, nullptr, 0) != 1) throw lost(s, false);
      sent.push_back(kBegun);
      if (PQsendQueryParams(s.c, "SELECT txid_current()", 0, nullptr, nullptr, nullptr, nullptr, 0) != 1)
        throw lost(s, false);
      sent.push_back(kTxid);
    }
    unsigned preparing = 0;
    for (const Query& q : qs) {
      const std::vector<const char*> values = q.params.pointers();
      const char* const* v = values.empty() ? nullptr : values.data();
      if (q.prepared && s.prepared) {
        const unsigned bit = q.prepared->bit;
        if (!(*s.prepared & bit) && !(preparing & bit)) {
          if (PQsendPrepare(s.c, q.prepared->name, q.sql, q.params.size(), nullptr) != 1) throw lost(s, false);
          preparing |= bit;
          sent.push_back(bit);
        }
        if (PQsendQueryPrepared(s.c, q.prepared->name, q.params.size(), v, nullptr, nullptr, 0) != 1)
          throw lost(s, false);
      } else if (PQsendQueryParams(s.c, q.sql, q.params.size(), nullptr, v, nullptr, nullptr, 0) != 1) {
        throw lost(s, false);
      }
      sent.push_back(0);
    }
    if (PQpipelineSync(s.c) != 1) throw lost(s, false);
    for (;;) {
      const int f = PQflush(s.c);
      if (f == 0) break;
      if (f < 0) throw lost(s, false);
      if (!wait_socket(s.c, true, s.deadline)) throw timed_out(s, false);
      if (!PQconsumeInput(s.c)) throw lost(s, false);
    }
    std::vector<ResultPtr> preparations;
    const PGresult* failed = nullptr;  // the first failure, held in `out` or `preparations`
    for (const unsigned what : sent) {
      ResultPtr r = next_result(s);
      if (!r) throw lost(s, true);
      if (next_result(s)) throw lost(s, true);  // one result per command, then NULL
      const ExecStatusType st = PQresultStatus(r.get());
      const bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
      if (!ok && !failed) failed = r.get();
      if (what == 0) {
        out.push_back(std::move(r));
      } else if (what == kBegun) {
        preparations.push_back(std::move(r));  // held: `failed` may point at it
      } else if (what == kTxid) {
        if (ok && PQntuples(r.get()) == 1) s.txid = as_text(r.get(), 0, 0);
        preparations.push_back(std::move(r));
      } else {
        // Prepared statements outlive transactions: once taken, the
        // connection keeps it whatever becomes of this one. "Already
        // exists" (42P05: a pooler brought back a server connection that
        // has it) means the same for the next batch.
        const char* state = ok ? nullptr : PQresultErrorField(r.get(), PG_DIAG_SQLSTATE);
        if (ok || (state && std::string(state) == "42P05")) *s.prepared |= what;
        preparations.push_back(std::move(r));
      }
    }
    ResultPtr sync = next_result(s);
    if (!sync || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC || PQexitPipelineMode(s.c) != 1)
      throw lost(s, true);
    if (failed) {
      // A statement the server does not know (a pooler that moved this
      // session to another server connection): prepared again next time.
      const char* state = PQresultErrorField(failed, PG_DIAG_SQLSTATE);
      if (state && s.prepared && std::string(state) == "26000") *s.prepared = 0;
      throw_failure(s, failed);
    }
    return out;
  }
#endif
  if (begin == BeginTx::yes) {
    ResultPtr r = exec_script(s, "BEGIN; SELECT txid_current()");
    s.txid = PQntuples(r.get()) == 1 ? as_text(r.get(), 0, 0) : "";
  }
  for (const Query& q : qs) out.push_back(exec(s, q.sql, q.params));
  return out;
}

}  // namespace pg
}  // namespace payretry
