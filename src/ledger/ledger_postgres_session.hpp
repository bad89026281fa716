// The PostgreSQL ledger's statements on one borrowed connection, each
// bounded by the deadline of the call that sends it, and the failure of one
// before it becomes a LedgerError.
#pragma once
#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ledger.hpp"

namespace payretry {
namespace pg {

using Steady = std::chrono::steady_clock;

// The server's clock, in Unix ms, as SQL.
#define PAYRETRY_SERVER_NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"

struct ResultClearer {
  void operator()(PGresult* r) const { PQclear(r); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultClearer>;

// Closes a connection without ever waiting for the server: in non-blocking
// mode PQfinish's goodbye message is dropped when the socket cannot take it.
void close_conn(PGconn* c);
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
  const std::string& value(int i) const { return values_[static_cast<size_t>(i)]; }
  bool is_null(int i) const { return null_[static_cast<size_t>(i)]; }

 private:
  std::vector<std::string> values_;
  std::vector<bool> null_;
};

std::string one_line(std::string s);
int64_t ms_left(Steady::time_point end);

// ---- one connection in use, with the time its caller has -------------------

// A borrowed connection as the statements of one call see it.
struct Session {
  PGconn* c = nullptr;
  Steady::time_point deadline;  // no wait of this session goes past it
  int64_t timeout_ms = 0;       // for messages
  int64_t offset = 0;           // server clock minus client clock, ms (this connection's)
  bool dead = false;            // abandoned (timed out) or lost: closed, never pooled again
  std::string txid;             // the open transaction's id
  unsigned* prepared = nullptr; // the connection's prepared statements (Prepared::bit); null: none
};

// Waits until `c`'s socket can be read (and, with `write`, written), at most
// until `deadline`. False when the deadline came first.
bool wait_socket(PGconn* c, bool write, Steady::time_point deadline);
PgFailure lost(Session& s, bool sent);
PgFailure timed_out(Session& s, bool sent);
[[noreturn]] void throw_failure(Session& s, const PGresult* r);
void check_results(Session& s, const std::vector<ResultPtr>& rs);
ResultPtr exec(Session& s, const char* sql, const Params& p = Params());
// Several statements without parameters in one message (constants: the
// migration scripts, BEGIN with the transaction's id); the last result.
ResultPtr exec_script(Session& s, const char* sql);
bool changed_one(const ResultPtr& r);
std::string as_text(const PGresult* r, int row, int col);

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
  // A transaction that the next exec_pipeline(..., BeginTx::yes) begins, in
  // the round trip of its statements (the id is read there too, before any
  // COMMIT is sent). Rolled back unless committed, like the other: a
  // ROLLBACK where BEGIN never took effect only draws a warning.
  struct InPipeline {};
  Tx(Session& s, InPipeline) : s_(s), open_(true) { s_.txid.clear(); }
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

int64_t as_int(const PGresult* r, int row, int col);
PgFailure bad_data(std::string message);

// ---- pipelines --------------------------------------------------------------

// A statement a group commit sends many times: prepared once per
// connection (parsed and planned once, not once per entry), under a name
// that changes whenever its text does.
struct Prepared {
  const char* name;
  unsigned bit;  // in Session::prepared
};

struct Query {
  const char* sql;
  Params params;
  const Prepared* prepared = nullptr;  // sent as this prepared statement in a pipeline
};

// Sends every query at once and reads their answers: one round trip,
// however many. A query with a Prepared is sent as that statement, prepared
// in the same pipeline first if this connection has not yet. The first
// failure is thrown (the transaction is then aborted, and the later queries
// were skipped by the server). BeginTx::yes puts BEGIN and the reading of
// the transaction's id (Session::txid) in front, for a Tx made InPipeline;
// the answers returned are still one per query.
enum class BeginTx { no, yes };
std::vector<ResultPtr> exec_pipeline(Session& s, const std::vector<Query>& qs, BeginTx begin = BeginTx::no);

}  // namespace pg
}  // namespace payretry
