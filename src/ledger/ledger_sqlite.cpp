#include "ledger_sqlite.hpp"

#include <sys/stat.h>

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "fingerprint.hpp"
#include "sql_row_codec.hpp"

namespace payretry {
namespace {

constexpr int kSchemaVersion = 6;

// Each step brings the schema from version i to i+1; never edit a shipped
// step, append a new one.
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
  created_at INTEGER NOT NULL,
  key_expires_at INTEGER NOT NULL,
  lease_owner TEXT NOT NULL DEFAULT '',
  lease_until INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL);
CREATE INDEX payments_state_updated ON payments(state, updated_at);
CREATE TABLE attempts (
  order_id TEXT NOT NULL REFERENCES payments(order_id),
  number INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER NOT NULL,
  http_status INTEGER NOT NULL,
  transport_error TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  delay_ms INTEGER NOT NULL,
  provider_request_id TEXT NOT NULL,
  replayed INTEGER NOT NULL,
  PRIMARY KEY (order_id, number));
)sql",
    // 2: lookups join the history, and each send says whether the provider
    // may have acted on it (NULL for older entries: read as "may have").
    R"sql(
ALTER TABLE attempts ADD COLUMN kind TEXT NOT NULL DEFAULT 'send';
ALTER TABLE attempts ADD COLUMN processed INTEGER;
)sql",
    // 3: a row names the scope of the client that made it ('' for the rows
    // made before: unscoped) and keeps the payment's own submission headers
    // and path, all set once by the create. Reconcile lists the open rows of one
    // scope, oldest first: the index finds them without reading other
    // scopes' rows, and hands them over in the list's order (state and
    // scope equal, then updated_at, order_id), so a page stops at its
    // limit.
    R"sql(
ALTER TABLE payments ADD COLUMN scope TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN submission_headers TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN submission_path TEXT NOT NULL DEFAULT '';
CREATE INDEX payments_state_scope_updated ON payments(state, scope, updated_at, order_id);
)sql",
    // 4: webhook events, "apply once": one row per (scope, scheme, event
    // id), holding only the id, what it names and its history entry (never
    // a body, a header or a signature). applied_to is the order whose
    // history holds the entry, '' while the event is kept for later. An
    // event may name only the provider's payment id: payments are found by
    // it within a scope. Prune finds the events of the rows it deletes by
    // applied_to, and the old kept ones by ('', received_at).
    R"sql(
CREATE TABLE webhook_events (
  scope TEXT NOT NULL,
  scheme TEXT NOT NULL,
  event_id TEXT NOT NULL,
  order_id TEXT NOT NULL,
  provider_payment_id TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER NOT NULL,
  http_status INTEGER NOT NULL,
  transport_error TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  delay_ms INTEGER NOT NULL,
  provider_request_id TEXT NOT NULL,
  replayed INTEGER NOT NULL,
  kind TEXT NOT NULL,
  processed INTEGER,
  applied_to TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (scope, scheme, event_id));
CREATE INDEX webhook_events_applied ON webhook_events(applied_to, received_at);
CREATE INDEX webhook_events_kept_order ON webhook_events(scope, order_id) WHERE applied_to = '';
CREATE INDEX webhook_events_kept_provider ON webhook_events(scope, provider_payment_id) WHERE applied_to = '';
CREATE INDEX payments_scope_provider ON payments(scope, provider_payment_id);
)sql",
    // 5: where the money is (money_state.hpp): the row's state, moved forward
    // only by settlements and by the events provably its payment's, and
    // what each history entry and each stored event read. 'unknown' for
    // everything before: nothing was read then. No CHECK on the names:
    // states are only appended, and SQLite cannot widen a CHECK without
    // rebuilding the table; the row codec refuses a name it does not know.
    R"sql(
ALTER TABLE payments ADD COLUMN money_state TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE attempts ADD COLUMN money_state TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE webhook_events ADD COLUMN money_state TEXT NOT NULL DEFAULT 'unknown';
)sql",
    // 6: operations (operation_rules.hpp): a capture, refund or cancel is a
    // row of its own, naming its payment's order and the caller's ref; ''
    // for the payment's create, which every row before was. amount is the
    // create's asked amount or the operation's decided one, -1 not known
    // (every row before). The guard reads a payment's operations, and prune
    // a payment's family, by (parent_order_id, operation).
    R"sql(
ALTER TABLE payments ADD COLUMN operation TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN parent_order_id TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN operation_ref TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN amount INTEGER NOT NULL DEFAULT -1;
CREATE INDEX payments_parent_operation ON payments(parent_order_id, operation);
)sql",
};
static_assert(sizeof kMigrations / sizeof kMigrations[0] == kSchemaVersion, "one migration per version");

// list()'s statement for each of its filters: a given state (?1) or scope
// (?4) is a plain equality and the age (?2) a plain range, never
// "?1 = '' OR state = ?1", which SQLite plans once, when the statement is
// prepared, and so can serve by no index. With a state and a scope (what
// reconcile asks) the statement is one search of payments_state_scope_updated
// that yields the rows in the list's order and stops at the limit; with a
// state alone, of payments_state_updated.
#define PAYRETRY_SQLITE_LIST(filters)                                                  \
  "SELECT " PAYRETRY_PAYMENT_COLUMNS " FROM payments WHERE " filters "updated_at < ?2 " \
  "ORDER BY updated_at, order_id LIMIT ?3"
constexpr char kListAll[] = PAYRETRY_SQLITE_LIST("");
constexpr char kListState[] = PAYRETRY_SQLITE_LIST("state = ?1 AND ");
constexpr char kListScope[] = PAYRETRY_SQLITE_LIST("scope = ?4 AND ");
constexpr char kListStateScope[] = PAYRETRY_SQLITE_LIST("state = ?1 AND scope = ?4 AND ");
#undef PAYRETRY_SQLITE_LIST

// The order ids prune_settled deletes (cut ?1): final rows last updated
// before the cut, of a family (a payment and its operation rows, found by
// parent_order_id) with no row that is open or updated since; an operation
// row only when its payment, if still here, goes too.
#define PAYRETRY_SQLITE_PRUNABLE                                                                            \
  "SELECT p.order_id FROM payments p WHERE p.state IN ('SUCCEEDED','FAILED') AND p.updated_at < ?1 "       \
  "AND NOT EXISTS (SELECT 1 FROM payments c WHERE c.parent_order_id = "                                      \
  "(CASE WHEN p.operation = '' THEN p.order_id ELSE p.parent_order_id END) AND c.operation <> '' "           \
  "AND (c.state NOT IN ('SUCCEEDED','FAILED') OR c.updated_at >= ?1)) "                                      \
  "AND (p.operation = '' OR NOT EXISTS (SELECT 1 FROM payments q WHERE q.order_id = p.parent_order_id "     \
  "AND (q.state NOT IN ('SUCCEEDED','FAILED') OR q.updated_at >= ?1)))"

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};

// Turns SQLite's codes into errors an operator can act on.
[[noreturn]] void fail(sqlite3* db, int rc, const std::string& what) {
  std::string why;
  switch (rc & 0xFF) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: why = "the database stayed locked by another process beyond the busy timeout"; break;
    case SQLITE_READONLY: why = "the database is read-only"; break;
    case SQLITE_FULL: why = "the disk is full"; break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: why = "the database file is corrupt or not a payretry ledger"; break;
    case SQLITE_CANTOPEN: why = "the database file cannot be opened"; break;
    case SQLITE_IOERR: why = "I/O error"; break;
    default: why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  }
  throw LedgerError("ledger (sqlite): " + what + ": " + why);
}

// Prepared statements kept for reuse, one per SQL text. Preparing costs more
// than running most of ours, and the concurrent engine runs the same few
// statements for every payment, all on one connection. Each is found by the
// address of its SQL, a string literal: no copy of the text and no hash of
// it per statement run (a payment runs a dozen). Not thread-safe: used under
// the ledger's mutex. Destroy before the connection.
class StmtCache {
 public:
  explicit StmtCache(sqlite3* db = nullptr) : db_(db) {}
  ~StmtCache() {
    for (auto& [sql, e] : kept_) sqlite3_finalize(e.st);
  }
  StmtCache(const StmtCache&) = delete;
  StmtCache& operator=(const StmtCache&) = delete;
  void attach(sqlite3* db) { db_ = db; }
  sqlite3* db() const { return db_; }
  // A statement for `sql`, the caller's until give_back: the kept one when
  // idle (a statement in use is never handed out twice), else a new one.
  sqlite3_stmt* take(const char* sql) {
    auto it = kept_.find(sql);
    if (it != kept_.end() && !it->second.in_use) {
      it->second.in_use = true;
      return it->second.st;
    }
    sqlite3_stmt* st = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr);
    if (rc != SQLITE_OK) fail(db_, rc, "prepare");
    if (it == kept_.end()) {
      try {
        kept_.emplace(sql, Kept{st, true});
      } catch (...) {
        // Not kept (no memory): give_back finalizes it.
      }
    }
    return st;
  }
  void give_back(const char* sql, sqlite3_stmt* st) noexcept {
    auto it = kept_.find(sql);
    if (it != kept_.end() && it->second.st == st) {
      sqlite3_reset(st);
      sqlite3_clear_bindings(st);
      it->second.in_use = false;
      return;
    }
    sqlite3_finalize(st);  // a second one of its kind, made while the kept one was in use
  }

 private:
  struct Kept {
    sqlite3_stmt* st;
    bool in_use;
  };
  sqlite3* db_;
  std::unordered_map<const char*, Kept> kept_;
};

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    sqlite3_stmt* s = nullptr;
    const int rc = sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &s, nullptr);
    if (rc != SQLITE_OK) fail(db, rc, "prepare");
    s_.reset(s);
  }
  // From the cache, and back to it when done. Only a string literal: the
  // cache knows a statement by the address of its text.
  template <size_t N>
  Stmt(StmtCache& cache, const char (&sql)[N]) : db_(cache.db()), cache_(&cache), sql_(sql) {
    s_.reset(cache.take(sql));
  }
  ~Stmt() {
    if (cache_ && s_) cache_->give_back(sql_, s_.release());
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& bind(int i, const std::string& v) {
    check(sqlite3_bind_text(s_.get(), i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    check(sqlite3_bind_int64(s_.get(), i, v));
    return *this;
  }
  Stmt& bind(int i, std::optional<bool> v) {
    check(v ? sqlite3_bind_int64(s_.get(), i, *v ? 1 : 0) : sqlite3_bind_null(s_.get(), i));
    return *this;
  }
  // True while a row is available.
  bool step() {
    const int rc = sqlite3_step(s_.get());
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    last_rc_ = rc;
    if ((rc & 0xFF) == SQLITE_CONSTRAINT) throw Constraint();
    fail(db_, rc, "write");
  }
  std::string text(int i) const {
    const unsigned char* t = sqlite3_column_text(s_.get(), i);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  int64_t integer(int i) const { return sqlite3_column_int64(s_.get(), i); }
  bool null(int i) const { return sqlite3_column_type(s_.get(), i) == SQLITE_NULL; }

  struct Constraint : LedgerError {
    Constraint() : LedgerError("ledger (sqlite): constraint violated") {}
  };

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, rc, "bind");
  }
  sqlite3* db_;
  StmtCache* cache_ = nullptr;
  const char* sql_ = nullptr;
  std::unique_ptr<sqlite3_stmt, StmtFinalizer> s_;
  int last_rc_ = 0;
};

// One row of a statement for the row codec; booleans are 0 and 1.
class StmtRow final : public SqlRowReader {
 public:
  explicit StmtRow(const Stmt& s) : s_(s) {}
  std::string text(int col) const override { return s_.text(col); }
  int64_t integer(int col) const override { return s_.integer(col); }
  bool boolean(int col) const override { return s_.integer(col) != 0; }
  bool is_null(int col) const override { return s_.null(col); }

 private:
  const Stmt& s_;
};

// Parameters written by the row codec, bound in order from `first`.
class StmtParams final : public SqlParamWriter {
 public:
  StmtParams(Stmt& s, int first) : s_(s), next_(first) {}
  void text(const std::string& v) override { s_.bind(next_++, v); }
  void integer(int64_t v) override { s_.bind(next_++, v); }
  void boolean(bool v) override { s_.bind(next_++, static_cast<int64_t>(v ? 1 : 0)); }
  void null() override { s_.bind(next_++, std::optional<bool>()); }

 private:
  Stmt& s_;
  int next_;
};

// A read by the row codec, its refusal (UnreadableRow) said as this
// backend's.
template <class Read>
auto decoded(Read read) -> decltype(read()) {
  try {
    return read();
  } catch (const UnreadableRow& e) {
    throw LedgerError(std::string("ledger (sqlite): ") + e.what());
  }
}

PaymentRow read_row(const Stmt& s) {
  return decoded([&] { return read_payment(StmtRow(s)); });
}

// money_after() as the SQL function payretry_money_after(from, read) of
// this connection, by money_state_name's names: the statements that move a
// stored money state call the C++ rule itself, evaluated against the
// stored column inside their UPDATE, so SQLite cannot say another rule.
// (PostgreSQL cannot call into the client: it gets the same rule as CASE
// text, sql_money.hpp.) A stored name this code does not know stays as it
// is (the row codec refuses it when the row is read); a NULL stays NULL.
void sql_money_after_fn(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  if (argc != 2 || sqlite3_value_type(argv[0]) == SQLITE_NULL) {
    sqlite3_result_null(ctx);
    return;
  }
  auto text = [](sqlite3_value* v) {
    const unsigned char* t = sqlite3_value_text(v);
    return std::string_view(t ? reinterpret_cast<const char*>(t) : "", static_cast<size_t>(sqlite3_value_bytes(v)));
  };
  const std::optional<MoneyState> from = parse_money_state(text(argv[0]));
  const std::optional<MoneyState> read =
      sqlite3_value_type(argv[1]) == SQLITE_NULL ? std::nullopt : parse_money_state(text(argv[1]));
  if (!from || !read) {
    sqlite3_result_value(ctx, argv[0]);
    return;
  }
  sqlite3_result_text(ctx, money_state_name(money_after(*from, *read)), -1, SQLITE_STATIC);
}

class SqliteLedger final : public Ledger {
 public:
  SqliteLedger(const std::string& path, const std::string& secret_override, int64_t timeout_ms)
      : busy_timeout_ms_(static_cast<int>(timeout_ms)) {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                                   nullptr);
    db_.reset(raw);
    if (rc != SQLITE_OK) {
      // The commonest first-hour mistake, said as what it is: SQLite makes
      // the file, never the folders above it.
      const size_t slash = path.rfind('/');
      const std::string folder = slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
      struct stat st {};
      if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw LedgerError("ledger (sqlite): the folder " + folder + " does not exist (SQLite creates the file " + path +
                          ", not its folder): create it first");
      fail(raw, rc, "open " + path);
    }
    stmts_.attach(raw);
    sqlite3_extended_result_codes(db(), 1);
    // Deterministic, and callable only from our own statements, never from
    // a view, trigger or index that a store's schema could hold.
    int money_flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
#ifdef SQLITE_DIRECTONLY
    money_flags |= SQLITE_DIRECTONLY;
#endif
    const int fn_rc = sqlite3_create_function_v2(db(), "payretry_money_after", 2, money_flags, nullptr,
                                                 sql_money_after_fn, nullptr, nullptr, nullptr);
    if (fn_rc != SQLITE_OK) fail(db(), fn_rc, "register payretry_money_after");
    sqlite3_busy_timeout(db(), busy_timeout_ms_);
    // WAL lets readers work beside the writer; FULL makes every commit
    // durable before pay_submit sends a byte (the key must survive a crash).
    set_wal_mode();
    exec("PRAGMA synchronous=FULL", "set synchronous=FULL");
    exec("PRAGMA foreign_keys=ON", "enable foreign keys");
    migrate();
    secret_ = secret_override.empty() ? stored_secret() : secret_override;
    check_secret(secret_);
  }

  std::string secret() override { return secret_; }

  // One commit at a time reaches the file; a second batch from the same
  // engine waits in apply()'s queue and joins the next commit with whatever
  // the other engines queued meanwhile.
  int concurrent_batches(int) const override { return 2; }

  CreateOutcome create_and_claim(const PaymentRow& p, const std::string& owner, int64_t now,
                                 int64_t lease_until) override {
    check_create_proposal(p);
    std::lock_guard<std::mutex> lock(mu_);
    Tx tx(*this);
    CreateOutcome out = create_in_tx(p, owner, now, lease_until);
    tx.commit();
    return out;
  }

  // One IMMEDIATE transaction: it holds the file's write lock from BEGIN,
  // so no other handle or process writes between the guard's reads and the
  // insert (two refunds of one payment racing in two processes take turns).
  OperationOutcome create_operation_and_claim(const PaymentRow& p, const std::string& owner, int64_t now,
                                              int64_t lease_until) override {
    check_operation_proposal(p);
    std::lock_guard<std::mutex> lock(mu_);
    Tx tx(*this);
    OperationOutcome out;
    if (std::optional<PaymentRow> row = get_locked(p.order_id)) {  // a retry: as it stands, not guarded again
      out.row = std::move(*row);
      tx.commit();
      return out;
    }
    const std::optional<PaymentRow> parent = get_locked(p.parent_order_id);
    const std::vector<PaymentRow> family = family_locked(p.parent_order_id);
    PaymentRow decided = p;
    out.refused = operation_guard(p, parent, family, decided.amount);
    if (!out.refused.empty()) {
      out.row.order_id = p.order_id;
      return out;  // ~Tx rolls back: nothing was written
    }
    static_cast<CreateOutcome&>(out) = create_in_tx(decided, owner, now, lease_until);
    tx.commit();
    return out;
  }

  bool claim(const std::string& order_id, const std::string& owner, int64_t now, int64_t lease_until) override {
    std::lock_guard<std::mutex> lock(mu_);
    Tx tx(*this);
    Stmt s(stmts_, "UPDATE payments SET state='IN_FLIGHT', lease_owner=?2, lease_until=?3, updated_at=?4 "
                 "WHERE order_id=?1 AND (state IN ('PENDING','UNKNOWN') OR (state='IN_FLIGHT' AND lease_until < ?4))");
    s.bind(1, order_id).bind(2, owner).bind(3, lease_until).bind(4, now);
    s.step();
    const bool won = sqlite3_changes(db()) == 1;
    tx.commit();
    return won;
  }

  bool record_attempt(const std::string& order_id, const std::string& owner, const AttemptEntry& a) override {
    std::lock_guard<std::mutex> lock(mu_);
    Tx tx(*this);
    if (!fence_and_store(order_id, owner, a)) return false;
    tx.commit();
    return true;
  }

  bool settle(const std::string& order_id, const std::string& owner, const AttemptEntry* last, const Settlement& st,
              int64_t now) override {
    std::lock_guard<std::mutex> lock(mu_);
    Tx tx(*this);
    if (!settle_in_tx(order_id, owner, last, st, now)) return false;
    tx.commit();
    return true;
  }

  // What a caller handed to a group commit, while it waits for one: a batch
  // of apply(), or an event of record_event().
  struct Waiting {
    bool taken = false;  // in a commit under way
    bool done = false;   // its answers are written
    // Its failure, thrown again (or answered) on the caller's thread: an
    // event's own store error, or a group commit that threw after all (see
    // join_group_commit), whose answers may then be missing.
    std::exception_ptr error;
  };
  struct Queued : Waiting {
    explicit Queued(LedgerBatch* b) : batch(b) {}
    LedgerBatch* batch;
  };
  struct QueuedEvent : Waiting {
    explicit QueuedEvent(const LedgerEvent* e) : event(e) {}
    const LedgerEvent* event;
    EventRecording answer = EventRecording::duplicate;  // read only when error is null
  };

  // Group commit: every entry in one IMMEDIATE transaction, so one fsync
  // makes all of them durable. An entry that lost its lease writes nothing
  // and the others commit (see settle_in_tx). If the transaction
  // itself fails (disk full, I/O error, out of memory), nothing of it was
  // committed, and the entries are retried one commit each, so that each
  // gets its own answer and one bad entry cannot fail the others.
  void apply(LedgerBatch& b) override {
    Queued me(&b);
    // Ledger::apply answers every entry, an exception included, and never throws.
    join_group_commit(
        me, queue_, [this](const std::vector<Queued*>& group) { return commit_together(group); },
        [this](Queued& alone) { Ledger::apply(*alone.batch); });
    if (me.error) fail_unanswered(b, me.error);
  }

  // A batch whose commit threw: each entry is answered as failed, also one
  // that may have been written (a create then reads as not made, before any
  // byte of it left; a settle as not durably recorded), never as done.
  static void fail_unanswered(LedgerBatch& b, const std::exception_ptr& escaped) {
    std::string why = "ledger: a group commit failed";
    try {
      std::rethrow_exception(escaped);
    } catch (const std::exception& e) {
      why += std::string(": ") + e.what();
    } catch (...) {
    }
    for (auto& c : b.creates) c.error = why;
    for (auto& r : b.records) r.error = why;
    for (auto& x : b.settles) x.error = why;
  }

  // The file has one writer at a time, and a commit costs SQLite far more
  // than its entries do alone (WAL pages, the sync). Work that arrives while
  // a commit is under way (each engine thread gathers its own batch; each
  // webhook delivery is its own call) queues; one of the callers that wait
  // leads: it takes the lock and then every entry queued by then, and
  // commits them all in one transaction, in the order they came, so N
  // callers pay for one commit instead of N in a row. Every caller returns
  // only once its own work is committed (or has failed): nothing is answered
  // before it is durable.
  //
  // The others wait for their answers on the condition alone, never on the
  // lock: one that needed the lock to learn that its work was done would
  // wait out the next group's commit too, and the callers would trickle out
  // one a commit instead of coming back together.
  //
  // `together` runs under mu_ and must not throw; false when its transaction
  // broke (nothing of it committed): then `alone` (which must not throw
  // either, and takes mu_ itself) gives each its own commit.
  template <class Q>
  struct GroupQueue {
    std::vector<Q*> waiting;
    bool leading = false;  // a caller is committing a group of this queue
  };
  template <class Q, class Together, class Alone>
  void join_group_commit(Q& me, GroupQueue<Q>& queue, Together together, Alone alone) {
    {
      std::unique_lock<std::mutex> q(queue_mu_);
      queue.waiting.push_back(&me);
      queue_cv_.wait(q, [&] { return me.done || (!me.taken && !queue.leading); });
      if (me.done) return;
      queue.leading = true;
    }
    std::vector<Q*> group;
    std::exception_ptr escaped;
    try {
      bool committed = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        {
          // What queued while this caller waited for the lock joins too.
          std::lock_guard<std::mutex> q(queue_mu_);
          group.swap(queue.waiting);
          for (Q* g : group) g->taken = true;
        }
        committed = together(group);
      }
      if (!committed)
        for (Q* g : group) alone(*g);
    } catch (...) {
      // `together` and `alone` do not throw, but an error path that runs out
      // of memory might. The queue must not stay led by no one (every later
      // caller would wait forever), and no caller of this group may be
      // answered as if its work were committed: each gets the exception.
      escaped = std::current_exception();
    }
    std::lock_guard<std::mutex> q(queue_mu_);
    if (escaped && std::find(group.begin(), group.end(), &me) == group.end()) {
      // It threw before this caller took the queue: take itself out of it.
      queue.waiting.erase(std::remove(queue.waiting.begin(), queue.waiting.end(), &me), queue.waiting.end());
      me.error = escaped;
      me.done = true;
    }
    for (Q* g : group) {
      if (escaped) g->error = escaped;
      g->done = true;
    }
    queue.leading = false;
    queue_cv_.notify_all();
  }

  // Under mu_: the batches' entries in one transaction. An entry that lost
  // its lease wrote nothing (see settle_in_tx), so it needs no savepoint of
  // its own, and the others commit. False when the transaction broke after
  // it began (nothing of it committed).
  bool commit_together(const std::vector<Queued*>& group) {
    std::unique_ptr<Tx> begun;
    try {
      begun = std::make_unique<Tx>(*this);
    } catch (const LedgerError& e) {
      // The store is locked or gone: one commit per entry would only wait
      // out the busy timeout once per entry. Every entry fails alike.
      for (Queued* g : group) {
        LedgerBatch& b = *g->batch;
        for (auto& c : b.creates) c.error = e.what();
        for (auto& r : b.records) r.error = e.what();
        for (auto& st : b.settles) st.error = e.what();
      }
      return true;
    }
    struct Answers {
      std::vector<CreateOutcome> creates;
      std::vector<char> records, settles;
    };
    std::vector<Answers> answers;
    try {
      Tx& tx = *begun;
      answers.resize(group.size());
      for (size_t k = 0; k < group.size(); ++k) {
        const LedgerBatch& b = *group[k]->batch;
        Answers& a = answers[k];
        a.creates.resize(b.creates.size());
        a.records.resize(b.records.size());
        a.settles.resize(b.settles.size());
        for (size_t i = 0; i < b.creates.size(); ++i) {
          const auto& c = b.creates[i];
          check_create_proposal(c.proposed);  // throws: each entry alone, this one refused
          a.creates[i] = create_in_tx(c.proposed, c.owner, c.now, c.lease_until);
        }
        for (size_t i = 0; i < b.records.size(); ++i)
          a.records[i] = fence_and_store(b.records[i].order_id, b.records[i].owner, b.records[i].attempt);
        for (size_t i = 0; i < b.settles.size(); ++i) {
          const auto& st = b.settles[i];
          a.settles[i] = settle_in_tx(st.order_id, st.owner, st.last ? &*st.last : nullptr, st.settlement, st.now);
        }
      }
      tx.commit();
    } catch (...) {
      return false;  // ~Tx rolls it all back
    }
    // Only now, committed, do the answers count (moves and flags: nothing here throws).
    for (size_t k = 0; k < group.size(); ++k) {
      LedgerBatch& b = *group[k]->batch;
      Answers& a = answers[k];
      for (size_t i = 0; i < b.creates.size(); ++i) {
        b.creates[i].out.row = std::move(a.creates[i].row);
        b.creates[i].out.created = a.creates[i].created;
        b.creates[i].out.key_taken = a.creates[i].key_taken;
      }
      for (size_t i = 0; i < b.records.size(); ++i) b.records[i].ok = a.records[i] != 0;
      for (size_t i = 0; i < b.settles.size(); ++i) b.settles[i].ok = a.settles[i] != 0;
    }
    return true;
  }

  // Under mu_: the group's events in one transaction, in the order they
  // came. False when it broke after it began (nothing of it committed).
  bool record_together(const std::vector<QueuedEvent*>& group) {
    std::unique_ptr<Tx> begun;
    try {
      begun = std::make_unique<Tx>(*this);
    } catch (const LedgerError& e) {
      // The store is locked or gone: a commit per event would only wait out
      // the busy timeout once per event. Every event fails alike, each with
      // an error of its own (each caller's thread catches and reads it).
      for (QueuedEvent* g : group) g->error = std::make_exception_ptr(LedgerError(e.what()));
      return true;
    } catch (...) {
      for (QueuedEvent* g : group) g->error = std::current_exception();
      return true;
    }
    std::vector<EventRecording> answers;
    try {
      answers.reserve(group.size());
      for (QueuedEvent* g : group) answers.push_back(record_in_tx(*g->event));
      begun->commit();
    } catch (...) {
      return false;  // ~Tx rolls it all back
    }
    // Only now, committed, do the answers count.
    for (size_t k = 0; k < group.size(); ++k) group[k]->answer = answers[k];
    return true;
  }

  // One event in a commit of its own, its failure its own answer.
  void record_alone(QueuedEvent& q) noexcept {
    try {
      std::lock_guard<std::mutex> lock(mu_);
      Tx tx(*this);
      const EventRecording answer = record_in_tx(*q.event);
      tx.commit();
      q.answer = answer;
    } catch (...) {
      q.error = std::current_exception();
    }
  }

  // Under a transaction: stores `e` unless it was recorded before (then
  // nothing is written) and lands it on its row when it can.
  EventRecording record_in_tx(const LedgerEvent& e) {
    {
      Stmt ins(stmts_, "INSERT INTO webhook_events (" PAYRETRY_EVENT_COLUMNS ") VALUES "
                       "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18) "
                       "ON CONFLICT(scope, scheme, event_id) DO NOTHING");
      StmtParams fields(ins, 1);
      write_event(fields, e);
      ins.step();
      if (sqlite3_changes(db()) != 1) return EventRecording::duplicate;
    }
    return land(e) ? EventRecording::recorded : EventRecording::kept_for_later;
  }

  std::optional<PaymentRow> get(const std::string& order_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    return get_locked(order_id);
  }

  std::vector<PaymentRow> operations_of(const std::string& order_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    return family_locked(order_id);
  }

  std::optional<PaymentRow> find_by_provider_id(const std::string& scope, const std::string& provider_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (provider_id.empty()) return std::nullopt;
    // The same row land() picks for an event naming only this id.
    Stmt s(stmts_, "SELECT " PAYRETRY_PAYMENT_COLUMNS
                   " FROM payments WHERE scope=?1 AND provider_payment_id=?2 ORDER BY order_id LIMIT 1");
    s.bind(1, scope).bind(2, provider_id);
    if (!s.step()) return std::nullopt;
    PaymentRow row = read_row(s);
    while (s.step()) {
    }
    return row;
  }

  std::vector<AttemptEntry> attempts(const std::string& order_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(stmts_, "SELECT " PAYRETRY_ATTEMPT_COLUMNS " FROM attempts WHERE order_id=?1 ORDER BY number");
    s.bind(1, order_id);
    std::vector<AttemptEntry> out;
    while (s.step()) out.push_back(decoded([&] { return read_attempt(StmtRow(s), order_id); }));
    return out;
  }

  int64_t prune_settled(int64_t updated_before) override {
    std::lock_guard<std::mutex> lock(mu_);
    Tx tx(*this);
    // The events first (found through the rows about to go), then the
    // history (attempts reference their payment). Kept events that never
    // found a row go once older than the cut: a provider notifies about
    // every payment of the account, those made outside payretry too, which
    // would otherwise pile up for ever; and an event's own row has long had
    // its provider id by then (a row exists before its payment is sent).
    //
    // Which rows go (PAYRETRY_SQLITE_PRUNABLE): final ones older than the
    // cut whose whole family (the payment and its operation rows) is final
    // and older than the cut too (Ledger::prune_settled says why). The
    // three statements read the payments as they stand before the last one.
    Stmt events(stmts_, "DELETE FROM webhook_events WHERE applied_to IN (" PAYRETRY_SQLITE_PRUNABLE ")");
    events.bind(1, updated_before);
    events.step();
    Stmt kept(stmts_, "DELETE FROM webhook_events WHERE applied_to = '' AND received_at < ?1");
    kept.bind(1, updated_before);
    kept.step();
    Stmt history(stmts_, "DELETE FROM attempts WHERE order_id IN (" PAYRETRY_SQLITE_PRUNABLE ")");
    history.bind(1, updated_before);
    history.step();
    Stmt rows(stmts_, "DELETE FROM payments WHERE order_id IN (" PAYRETRY_SQLITE_PRUNABLE ")");
    rows.bind(1, updated_before);
    rows.step();
    const int64_t pruned = sqlite3_changes(db());
    tx.commit();
    return pruned;
  }

  // One IMMEDIATE transaction per group of events that arrive together (a
  // webhook endpoint serves deliveries at once): it holds the file's write
  // lock from its first statement, so no other handle or process records,
  // applies or claims in between. Each event's record and the change it
  // causes are in it together; the event's primary key answers a duplicate,
  // one recorded earlier in the same group too (it is read inside the
  // transaction). The call returns when the group's commit is durable.
  EventRecording record_event(const LedgerEvent& e) override {
    check_ledger_event(e);
    QueuedEvent me(&e);
    join_group_commit(
        me, event_queue_, [this](const std::vector<QueuedEvent*>& group) { return record_together(group); },
        [this](QueuedEvent& alone) { record_alone(alone); });
    if (me.error) std::rethrow_exception(me.error);
    return me.answer;
  }

  std::vector<LedgerEvent> kept_events(const std::string& scope, const std::string& order_id,
                                       const std::string& provider_payment_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    // A UNION, each part a search of its own partial index, not an OR,
    // which SQLite serves by reading every kept event of every scope.
    Stmt s(stmts_, "SELECT " PAYRETRY_EVENT_COLUMNS " FROM webhook_events WHERE applied_to = '' AND scope = ?1 "
                   "AND ?2 <> '' AND order_id = ?2 UNION "
                   "SELECT " PAYRETRY_EVENT_COLUMNS " FROM webhook_events WHERE applied_to = '' AND scope = ?1 "
                   "AND ?3 <> '' AND provider_payment_id = ?3 ORDER BY received_at, scheme, event_id");
    s.bind(1, scope).bind(2, order_id).bind(3, provider_payment_id);
    std::vector<LedgerEvent> out;
    while (s.step()) out.push_back(decoded([&] { return read_event(StmtRow(s)); }));
    return out;
  }

  bool apply_kept_event(const LedgerEvent& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    Tx tx(*this);
    std::optional<LedgerEvent> stored;
    {
      Stmt s(stmts_, "SELECT " PAYRETRY_EVENT_COLUMNS " FROM webhook_events "
                     "WHERE scope = ?1 AND scheme = ?2 AND event_id = ?3 AND applied_to = ''");
      s.bind(1, e.scope).bind(2, e.scheme).bind(3, e.event_id);
      if (s.step()) stored = decoded([&] { return read_event(StmtRow(s)); });
    }
    if (!stored || !land(*stored)) return false;  // nothing written
    tx.commit();
    return true;
  }

  std::vector<PaymentRow> list(std::optional<PaymentState> state, int64_t updated_before, int limit,
                               const std::optional<std::string>& scope) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (state && scope) return list_with(kListStateScope, state, updated_before, limit, scope);
    if (state) return list_with(kListState, state, updated_before, limit, scope);
    if (scope) return list_with(kListScope, state, updated_before, limit, scope);
    return list_with(kListAll, state, updated_before, limit, scope);
  }

 private:
  // BEGIN IMMEDIATE takes the write lock up front, so two processes never
  // deadlock upgrading read locks; rolled back unless committed.
  class Tx {
   public:
    explicit Tx(SqliteLedger& l) : l_(l) { l_.exec("BEGIN IMMEDIATE", "begin a transaction"); }
    void commit() {
      l_.exec("COMMIT", "commit");
      done_ = true;
    }
    ~Tx() {
      if (!done_) sqlite3_exec(l_.db(), "ROLLBACK", nullptr, nullptr, nullptr);
    }

   private:
    SqliteLedger& l_;
    bool done_ = false;
  };

  sqlite3* db() const { return db_.get(); }

  void exec(const char* sql, const std::string& what) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db(), sql, nullptr, nullptr, &err);
    sqlite3_free(err);
    if (rc != SQLITE_OK) fail(db(), rc, what);
  }

  // Switching a fresh file to WAL answers SQLITE_BUSY at once, without the
  // busy handler, while another process is doing the same; retry for as
  // long as the busy timeout would have waited.
  void set_wal_mode() {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms_);
    for (;;) {
      const int rc = sqlite3_exec(db(), "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
      if (rc == SQLITE_OK) return;
      if ((rc & 0xFF) != SQLITE_BUSY || std::chrono::steady_clock::now() >= give_up) fail(db(), rc, "set WAL mode");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  void migrate() {
    std::lock_guard<std::mutex> lock(mu_);
    Tx tx(*this);
    exec("CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", "create ledger_meta");
    int version = 0;
    {
      Stmt s(stmts_, "SELECT value FROM ledger_meta WHERE key='schema_version'");
      if (s.step()) {
        const std::string v = s.text(0);
        if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 6)
          throw LedgerError("ledger (sqlite): schema_version is not a number; this is not a payretry ledger");
        version = std::stoi(v);
      }
    }
    if (version > kSchemaVersion)
      throw LedgerError("ledger (sqlite): schema version " + std::to_string(version) +
                        " is newer than this library knows (" + std::to_string(kSchemaVersion) + ")");
    for (int v = version; v < kSchemaVersion; ++v) exec(kMigrations[v], "migrate to schema " + std::to_string(v + 1));
    Stmt set(db(), "INSERT INTO ledger_meta (key, value) VALUES ('schema_version', ?1) "
                   "ON CONFLICT(key) DO UPDATE SET value=excluded.value");
    set.bind(1, std::to_string(kSchemaVersion));
    set.step();
    // The secret is created once, with the ledger; every process reads it.
    Stmt sec(db(), "INSERT INTO ledger_meta (key, value) VALUES ('secret', ?1) ON CONFLICT(key) DO NOTHING");
    sec.bind(1, new_ledger_secret());
    sec.step();
    tx.commit();
  }

  // ledger_meta keeps a check value of the effective fingerprint secret (an
  // HMAC of a fixed label keyed by it, the same in every backend), written
  // by the first open, or the first since the check exists: a client with
  // another secret would compute other fingerprints for the same requests,
  // and would take every retry for a different payment. It is refused.
  void check_secret(const std::string& effective) {
    static const char* const mismatch =
        "ledger: the secret differs from the one this ledger's fingerprints were made with; every client of one "
        "ledger must use the same ledger.secret";
    const std::string check = request_fingerprint(effective, "payretry-ledger-secret-check", "v1", "");
    std::lock_guard<std::mutex> lock(mu_);
    {
      Stmt s(db(), "SELECT value FROM ledger_meta WHERE key='secret_check'");
      if (s.step()) {
        if (s.text(0) != check) throw LedgerError(mismatch);
        return;
      }
    }
    Tx tx(*this);
    {
      Stmt ins(db(), "INSERT INTO ledger_meta (key, value) VALUES ('secret_check', ?1) ON CONFLICT(key) DO NOTHING");
      ins.bind(1, check);
      ins.step();
    }
    bool same = false;
    {
      Stmt again(db(), "SELECT value FROM ledger_meta WHERE key='secret_check'");
      same = again.step() && again.text(0) == check;
    }
    tx.commit();
    if (!same) throw LedgerError(mismatch);
  }

  std::string stored_secret() {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(stmts_, "SELECT value FROM ledger_meta WHERE key='secret'");
    if (!s.step()) throw LedgerError("ledger (sqlite): the ledger has no secret");
    return s.text(0);
  }

  // Under mu_: list() with the statement for its filters.
  template <size_t N>
  std::vector<PaymentRow> list_with(const char (&sql)[N], std::optional<PaymentState> state, int64_t updated_before,
                                    int limit, const std::optional<std::string>& scope) {
    Stmt s(stmts_, sql);
    if (state) s.bind(1, std::string(state_name(*state)));
    s.bind(2, updated_before > 0 ? updated_before : std::numeric_limits<int64_t>::max());
    s.bind(3, static_cast<int64_t>(limit));  // negative: no limit
    if (scope) s.bind(4, *scope);
    std::vector<PaymentRow> out;
    while (s.step()) out.push_back(read_row(s));
    return out;
  }

  // The operation rows of the payment of order `parent`, in row id order
  // (the family index): what the guard reads and operations_of answers.
  std::vector<PaymentRow> family_locked(const std::string& parent) {
    Stmt s(stmts_, "SELECT " PAYRETRY_PAYMENT_COLUMNS
                   " FROM payments WHERE parent_order_id=?1 AND operation<>'' ORDER BY order_id");
    s.bind(1, parent);
    std::vector<PaymentRow> out;
    while (s.step()) out.push_back(read_row(s));
    return out;
  }

  std::optional<PaymentRow> get_locked(const std::string& order_id) {
    Stmt s(stmts_, "SELECT " PAYRETRY_PAYMENT_COLUMNS " FROM payments WHERE order_id=?1");
    s.bind(1, order_id);
    if (!s.step()) return std::nullopt;
    return read_row(s);
  }

  // One statement in the usual case: the row is inserted already claimed
  // (nothing can see it in between: one transaction), and the answer is the
  // row as inserted, not read back (reading it was one of the four
  // statements of a payment that succeeds at its first attempt). An order
  // that has a row keeps it, whatever the proposal says (ON CONFLICT on the
  // order id comes first, so a key clash on it is no error), and that row
  // is read; a new order whose key another order holds is refused by the
  // key's UNIQUE constraint.
  CreateOutcome create_in_tx(const PaymentRow& p, const std::string& owner, int64_t now, int64_t lease_until) {
    CreateOutcome out;
    try {
      Stmt ins(stmts_, "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, created_at, "
                       "key_expires_at, updated_at, lease_owner, lease_until, scope, submission_headers, "
                       "submission_path, operation, parent_order_id, operation_ref, amount) "
                       "VALUES (?1, ?2, ?3, 'IN_FLIGHT', ?4, ?5, ?4, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
                       "ON CONFLICT(order_id) DO NOTHING");
      ins.bind(1, p.order_id).bind(2, p.idempotency_key).bind(3, p.fingerprint).bind(4, now).bind(5, p.key_expires_at);
      ins.bind(6, owner).bind(7, lease_until).bind(8, p.scope).bind(9, p.submission_headers);
      ins.bind(10, p.submission_path).bind(11, std::string(operation_kind_name(p.operation)));
      ins.bind(12, p.parent_order_id).bind(13, p.operation_ref).bind(14, p.amount);
      ins.step();
      out.created = sqlite3_changes(db()) == 1;
    } catch (const Stmt::Constraint&) {
      out.key_taken = true;
      out.row.order_id = p.order_id;
      return out;
    }
    if (out.created) {
      out.row = created_row(p, owner, now, lease_until);
      return out;
    }
    auto row = get_locked(p.order_id);
    if (!row) throw LedgerError("ledger (sqlite): the row of order " + p.order_id + " is gone within its transaction");
    out.row = std::move(*row);
    return out;
  }

  // Every write of one entry (the single calls' and the group commit's)
  // begins with the statement that checks the lease, and writes nothing
  // when it fails; a later write of the entry fails only by throwing, which
  // rolls the whole transaction back. So an entry that lost its lease needs
  // no savepoint to undo it: it never wrote.

  // False when `owner` no longer holds the lease (nothing written). The row
  // takes the settlement and the fence of `last` in one statement, then
  // `last` joins the history.
  bool settle_in_tx(const std::string& order_id, const std::string& owner, const AttemptEntry* last,
                    const Settlement& st, int64_t now) {
    // The money state moves from the stored one (payretry_money_after), not
    // from a copy the run read: what an event taught the row before the
    // claim stays unless the run read a move forward.
    Stmt s(stmts_, "UPDATE payments SET state=?3, delivery=?4, detail=?5, "
                   "provider_payment_id=CASE WHEN ?6 = '' THEN provider_payment_id ELSE ?6 END, provider_status=?7, "
                   "http_status=?8, money_state=payretry_money_after(money_state, ?9), lease_owner='', lease_until=0, "
                   "updated_at=MAX(updated_at, ?10, ?11), "
                   "attempts=MAX(attempts, ?12) WHERE order_id=?1 AND lease_owner=?2 AND state='IN_FLIGHT'");
    s.bind(1, order_id).bind(2, owner).bind(10, now);
    StmtParams settlement(s, 3);
    write_settlement(settlement, st);
    s.bind(11, last ? last->ended_at : now).bind(12, static_cast<int64_t>(last ? last->number : 0));
    s.step();
    if (sqlite3_changes(db()) != 1) return false;
    if (last) store_entry(order_id, *last);
    return true;
  }

  // Under a transaction: lands the stored event `e` on its row (the row
  // and the changes as Ledger::record_event says; the state's move is
  // event_moves() in SQL, held equal to it by the conformance tests; the
  // money state's is event_moves_money() in SQL, against the columns as
  // they were before this statement, and money_after() itself),
  // appends its entry as the row's next and marks the event applied. False
  // (nothing written) when there is no row or it is IN_FLIGHT: the claim's
  // holder numbers its own entries.
  bool land(const LedgerEvent& e) {
    std::string order;
    int64_t number = 0;
    {
#define PAYRETRY_EVENT_MOVES "(state IN ('UNKNOWN', 'PENDING') AND ?5 IN ('event_succeeded', 'event_failed'))"
// An operation's noted event teaches its id too (event_teaches_id).
#define PAYRETRY_OPERATION_NOTED "(operation <> '' AND state IN ('UNKNOWN', 'PENDING') AND ?5 = 'event_noted')"
      Stmt s(stmts_, "UPDATE payments SET attempts = attempts + 1, updated_at = MAX(updated_at, ?4), "
                     "provider_payment_id = CASE WHEN provider_payment_id = '' AND (" PAYRETRY_EVENT_MOVES
                     " OR " PAYRETRY_OPERATION_NOTED ") THEN ?3 ELSE provider_payment_id END, "  // event_teaches_id
                     "state = CASE WHEN " PAYRETRY_EVENT_MOVES " THEN "
                     "(CASE ?5 WHEN 'event_succeeded' THEN 'SUCCEEDED' ELSE 'FAILED' END) ELSE state END, "
                     "money_state = CASE WHEN (?3 <> '' AND provider_payment_id = ?3) OR ((?3 = '' OR "
                     "provider_payment_id = '') AND " PAYRETRY_EVENT_MOVES ") OR (?3 <> '' AND provider_payment_id = '' "
                     "AND " PAYRETRY_OPERATION_NOTED ") THEN payretry_money_after(money_state, ?8) "
                     "ELSE money_state END, "  // event_moves_money
                     "delivery = CASE WHEN " PAYRETRY_EVENT_MOVES " THEN 'delivered' ELSE delivery END, "
                     "detail = CASE WHEN " PAYRETRY_EVENT_MOVES " THEN ?6 ELSE detail END, "
                     "provider_status = CASE WHEN " PAYRETRY_EVENT_MOVES " THEN ?7 ELSE provider_status END "
                     "WHERE order_id = COALESCE("
                     "(SELECT order_id FROM payments WHERE ?2 <> '' AND order_id = ?2 AND scope = ?1 "
                     "AND (?3 = '' OR provider_payment_id IN ('', ?3))), "
                     "(SELECT order_id FROM payments WHERE ?3 <> '' AND scope = ?1 AND provider_payment_id = ?3 "
                     "ORDER BY order_id LIMIT 1)) AND state <> 'IN_FLIGHT' RETURNING order_id, attempts");
#undef PAYRETRY_EVENT_MOVES
#undef PAYRETRY_OPERATION_NOTED
      s.bind(1, e.scope).bind(2, e.order_id).bind(3, e.provider_payment_id).bind(4, e.entry.ended_at);
      s.bind(5, e.entry.verdict).bind(6, event_settled_detail(e.entry)).bind(7, e.entry.reason);
      s.bind(8, std::string(money_state_name(e.entry.money_state)));
      if (!s.step()) return false;
      order = s.text(0);
      number = s.integer(1);
      while (s.step()) {
      }
    }
    AttemptEntry a = e.entry;
    a.number = static_cast<int>(number);
    store_entry(order, a);
    Stmt mark(stmts_, "UPDATE webhook_events SET applied_to = ?4 WHERE scope = ?1 AND scheme = ?2 AND event_id = ?3");
    mark.bind(1, e.scope).bind(2, e.scheme).bind(3, e.event_id).bind(4, order);
    mark.step();
    return true;
  }

  // False when `owner` no longer holds the lease (nothing written).
  bool fence_and_store(const std::string& order_id, const std::string& owner, const AttemptEntry& a) {
    Stmt f(stmts_, "UPDATE payments SET attempts=MAX(attempts, ?3), updated_at=MAX(updated_at, ?4) "
                   "WHERE order_id=?1 AND lease_owner=?2 AND state='IN_FLIGHT'");
    f.bind(1, order_id).bind(2, owner).bind(3, static_cast<int64_t>(a.number)).bind(4, a.ended_at);
    f.step();
    if (sqlite3_changes(db()) != 1) return false;
    store_entry(order_id, a);
    return true;
  }

  // A plain insert: an entry is never overwritten. Only the holder of the
  // claim writes (fenced by the caller's first statement), and it numbers
  // its entries after the row's count, so a clash is a bug that must not
  // pass silently.
  void store_entry(const std::string& order_id, const AttemptEntry& a) {
    Stmt s(stmts_, "INSERT INTO attempts (order_id, " PAYRETRY_ATTEMPT_COLUMNS ") "
                   "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)");
    s.bind(1, order_id).bind(2, static_cast<int64_t>(a.number));
    StmtParams fields(s, 3);
    write_attempt_fields(fields, a);
    try {
      s.step();
    } catch (const Stmt::Constraint&) {
      throw LedgerError("ledger (sqlite): entry " + std::to_string(a.number) + " of order " + order_id +
                        " is already recorded; entries are never overwritten");
    }
  }

  // How long a write waits for another process's lock before it fails.
  const int busy_timeout_ms_;
  std::mutex mu_;
  // Work waiting for a group commit, each on its caller's stack: batches
  // (apply) and webhook events (record_event), each kind its own group.
  std::mutex queue_mu_;  // taken after mu_, never before it
  std::condition_variable queue_cv_;
  GroupQueue<Queued> queue_;
  GroupQueue<QueuedEvent> event_queue_;
  std::unique_ptr<sqlite3, DbCloser> db_;
  StmtCache stmts_;  // after db_: finalized before the connection closes
  std::string secret_;
};

}  // namespace

std::unique_ptr<Ledger> open_sqlite_ledger(const std::string& path, const std::string& secret_override,
                                           int64_t timeout_ms) {
  return std::make_unique<SqliteLedger>(path, secret_override, timeout_ms);
}

}  // namespace payretry
