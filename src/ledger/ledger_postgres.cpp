#include "ledger_postgres.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "ledger_postgres_errors.hpp"
#include "ledger_postgres_pool.hpp"
#include "ledger_postgres_schema.hpp"
#include "ledger_postgres_session.hpp"
#include "ledger_postgres_statements.hpp"
#include "ledger_postgres_url.hpp"
#include "sql_money.hpp"

namespace payretry {
namespace pg {
namespace {

// list()'s statement for each of its filters: a given state ($3) or scope
// ($3, or $4 after a state) is a plain equality and the age ($1) a plain
// range, so that every plan, the generic one of a cached statement too, can
// serve it by an index: with a state and a scope (what reconcile asks) one
// scan of payments_state_scope_updated that yields the rows in the list's
// order and stops at the limit; with a state alone, of
// payments_state_updated. COLLATE "C": byte order, as in the other
// backends, whatever the database's collation.
#define PAYRETRY_PG_LIST(filters)                                                        \
  "SELECT " PAYRETRY_PAYMENT_COLUMNS " FROM payments WHERE " filters "updated_at < $1::bigint " \
  "ORDER BY updated_at, order_id COLLATE \"C\" LIMIT $2::bigint"
const char* const kListAll = PAYRETRY_PG_LIST("");
const char* const kListState = PAYRETRY_PG_LIST("state = $3::text AND ");
const char* const kListScope = PAYRETRY_PG_LIST("scope = $3::text AND ");
const char* const kListStateScope = PAYRETRY_PG_LIST("state = $3::text AND scope = $4::text AND ");
#undef PAYRETRY_PG_LIST

// The rows (as p) prune_settled deletes (cut $1): final rows last updated
// before the cut, of a family (a payment and its operation rows, found by
// parent_order_id) with no row that is open or updated since; an
// operation row only when its payment, if still here, goes too.
#define PAYRETRY_PG_PRUNABLE                                                                                   \
  "p.state IN ('SUCCEEDED','FAILED') AND p.updated_at < $1::bigint "                                           \
  "AND NOT EXISTS (SELECT 1 FROM payments c WHERE c.parent_order_id = "                                        \
  "(CASE WHEN p.operation = '' THEN p.order_id ELSE p.parent_order_id END) AND c.operation <> '' "             \
  "AND (c.state NOT IN ('SUCCEEDED','FAILED') OR c.updated_at >= $1::bigint)) "                                \
  "AND (p.operation = '' OR NOT EXISTS (SELECT 1 FROM payments q WHERE q.order_id = p.parent_order_id "       \
  "AND (q.state NOT IN ('SUCCEEDED','FAILED') OR q.updated_at >= $1::bigint)))"

// ---- webhook events -----------------------------------------------------------

const char* const kInsertEvent =
    "INSERT INTO webhook_events (" PAYRETRY_EVENT_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6::bigint, $7::bigint, "
    "$8::bigint, $9::integer, $10::text, $11::text, $12::text, $13::bigint, $14::text, $15::boolean, $16::text, "
    "$17::boolean, $18::text) ON CONFLICT (scope, scheme, event_id) DO NOTHING";

// The stored event's entry appended to its row's history as the next entry,
// and the event marked applied, in one statement. The row is its order's,
// when of the event's scope, else the first of the scope with its provider
// payment id; never an IN_FLIGHT one (the claim's holder numbers its own
// entries). Under READ COMMITTED an UPDATE that waited for a concurrent
// claim or settle re-checks the state against the row that committed.
// Answers (rows bumped, entries inserted, events marked).
// The state's move is event_moves() in SQL (held equal to it by the
// conformance tests); $19 the event's settled detail. The money state's is
// event_moves_money() in SQL, against the columns as they were before the
// statement, and money_after() by the entry's money state ($18) as
// sql_money.hpp writes it.
#define PAYRETRY_EVENT_MOVES \
  "(state COLLATE \"C\" IN ('UNKNOWN', 'PENDING') AND $11::text IN ('event_succeeded', 'event_failed'))"
// An operation's noted event teaches its id too (event_teaches_id).
#define PAYRETRY_OPERATION_NOTED \
  "(operation <> '' AND state COLLATE \"C\" IN ('UNKNOWN', 'PENDING') AND $11::text = 'event_noted')"
const std::string kLandEvent =
    "WITH target AS (UPDATE payments SET attempts = attempts + 1, updated_at = GREATEST(updated_at, $4::bigint), "
    "provider_payment_id = CASE WHEN provider_payment_id = '' AND (" PAYRETRY_EVENT_MOVES
    " OR " PAYRETRY_OPERATION_NOTED ") THEN $3::text ELSE provider_payment_id END, "  // event_teaches_id
    "state = CASE WHEN " PAYRETRY_EVENT_MOVES " THEN "
    "(CASE $11::text WHEN 'event_succeeded' THEN 'SUCCEEDED' ELSE 'FAILED' END) ELSE state END, "
    "money_state = CASE WHEN ($3::text <> '' AND provider_payment_id = $3::text) OR (($3::text = '' OR "
    "provider_payment_id = '') AND " PAYRETRY_EVENT_MOVES ") OR ($3::text <> '' AND provider_payment_id = '' AND "
    PAYRETRY_OPERATION_NOTED ") THEN " +  // event_moves_money
    sql_money_after("money_state", "$18::text") +
    " ELSE money_state END, "
    "delivery = CASE WHEN " PAYRETRY_EVENT_MOVES " THEN 'delivered' ELSE delivery END, "
    "detail = CASE WHEN " PAYRETRY_EVENT_MOVES " THEN $19::text ELSE detail END, "
    "provider_status = CASE WHEN " PAYRETRY_EVENT_MOVES " THEN $12::text ELSE provider_status END "
    "WHERE order_id = COALESCE("
    "(SELECT order_id FROM payments WHERE $2::text <> '' AND order_id = $2::text AND scope = $1::text "
    "AND ($3::text = '' OR provider_payment_id IN ('', $3::text))), "
    "(SELECT order_id FROM payments WHERE $3::text <> '' AND scope = $1::text AND provider_payment_id = $3::text "
    "ORDER BY order_id COLLATE \"C\" LIMIT 1)) "
    "AND state COLLATE \"C\" <> 'IN_FLIGHT' RETURNING order_id, attempts), "
    "ins AS (INSERT INTO attempts (order_id, " PAYRETRY_ATTEMPT_COLUMNS ") "
    "SELECT order_id, attempts, $7::bigint, $8::bigint, $9::integer, $10::text, $11::text, $12::text, $13::bigint, "
    "$14::text, $15::boolean, $16::text, $17::boolean, $18::text FROM target RETURNING number), "
    "mark AS (UPDATE webhook_events SET applied_to = target.order_id FROM target "
    "WHERE scope = $1::text AND scheme = $5::text AND event_id = $6::text RETURNING 1) "
    "SELECT (SELECT count(*) FROM target), (SELECT count(*) FROM ins), (SELECT count(*) FROM mark)";
#undef PAYRETRY_EVENT_MOVES
#undef PAYRETRY_OPERATION_NOTED

// Each part of the UNION a search of its own partial index; byte order, as
// in the other backends.
const char* const kKeptEvents =
    "SELECT " PAYRETRY_EVENT_COLUMNS " FROM ("
    "SELECT " PAYRETRY_EVENT_COLUMNS " FROM webhook_events WHERE applied_to = '' AND scope = $1::text "
    "AND $2::text <> '' AND order_id = $2::text UNION "
    "SELECT " PAYRETRY_EVENT_COLUMNS " FROM webhook_events WHERE applied_to = '' AND scope = $1::text "
    "AND $3::text <> '' AND provider_payment_id = $3::text) kept "
    "ORDER BY received_at, scheme COLLATE \"C\", event_id COLLATE \"C\"";


// An event's entry as parameters: free text cleaned for the server, like
// every entry (clean_text). Its identity is sent as it is: a changed byte
// would make it another event.
class EntryParams final : public SqlParamWriter {
 public:
  explicit EntryParams(Params& p) : p_(p) {}
  void text(const std::string& v) override { p_.add(clean_text(v)); }
  void integer(int64_t v) override { p_.add(v); }
  void boolean(bool v) override { p_.add(v); }
  void null() override { p_.add_null(); }

 private:
  Params& p_;
};

void check_event_identifiers(const LedgerEvent& e) {
  check_identifier("scope", e.scope);
  check_identifier("webhook scheme", e.scheme);
  check_identifier("event id", e.event_id);
  check_identifier("order id", e.order_id);
  check_identifier("provider payment id", e.provider_payment_id);
}

// The transaction-scoped locks of the names an event can land by (its
// order, its provider payment id, each within the scope), always in that
// order. record_event, kept_events and apply_kept_event take them first, so
// that an event kept because its row was IN_FLIGHT, or had no provider id
// yet, is committed before a kept_events of the same names reads: without
// them, a kept_events run right after the settle could miss an event whose
// transaction had looked at the row before the settle and committed after
// the read (READ COMMITTED). Keys are 64-bit hashes: a collision only makes
// two calls wait for each other.
void lock_names(Session& s, const std::string& scope, const std::string& order_id, const std::string& provider_id) {
  if (!order_id.empty())
    exec(s, "SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))",
         Params().add("payretry-event-order\n" + scope + "\n" + order_id));
  if (!provider_id.empty())
    exec(s, "SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))",
         Params().add("payretry-event-provider\n" + scope + "\n" + provider_id));
}

// kLandEvent for the stored event `e`: true when its entry joined a history.
bool land_event(Session& s, const LedgerEvent& e) {
  Params p;
  p.add(e.scope).add(e.order_id).add(e.provider_payment_id).add(e.entry.ended_at).add(e.scheme).add(e.event_id);
  EntryParams fields(p);
  write_attempt_fields(fields, e.entry);
  p.add(clean_text(event_settled_detail(e.entry)));
  ResultPtr r = exec(s, kLandEvent.c_str(), p);
  const int64_t bumped = as_int(r.get(), 0, 0), inserted = as_int(r.get(), 0, 1), marked = as_int(r.get(), 0, 2);
  if (bumped == 0) return false;
  if (inserted != 1 || marked != 1)
    throw bad_data("the webhook event " + e.event_id + " could not join the history of its row");
  return true;
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
        url_(read_connection_url(url)),
        errors_(url_),
        pool_(url_.url, timeout_ms_, std::move(client_clock), errors_) {
    secret_ = run("open", [&](Session& s) {
      migrate(s, errors_);
      return load_secret(s, secret_override, errors_);
    });
  }

  ~PostgresLedger() override = default;

  std::string secret() override { return secret_; }
  // Concurrent transactions commit in parallel on the server (and their WAL
  // flushes are shared): half the pool for the client's batches, so that
  // lookups and the threaded path still find connections, shared among its
  // engines (one each at least). Four per engine, as before, gave two
  // engines the whole pool and sixteen engines 64 writers for 8
  // connections; and smaller batches cost the server more transactions
  // (BEGIN, the transaction id, a WAL flush each; BENCHMARKS.md, "PostgreSQL
  // for fleets").
  int concurrent_batches(int engines) const override {
    return std::max(1, static_cast<int>(kMaxConnections / 2) / std::max(engines, 1));
  }

  CreateOutcome create_and_claim(const PaymentRow& p, const std::string& owner, int64_t now,
                                 int64_t lease_until) override {
    return do_create(p, owner, now, lease_until, budget());
  }

  // One transaction. The payment's row is read FOR UPDATE first, so that
  // every operation on one payment (two workers, or two processes, racing
  // two refunds of it) takes its turn: under READ COMMITTED each later
  // statement reads with a snapshot taken after the lock was granted, so
  // the operations it reads include every one committed by the lock's
  // previous holder. Its row id found among them: a retry, answered as it
  // stands, not guarded again. A payment that is not there is not locked
  // (there is nothing to lock): the guard refuses, nothing is written.
  OperationOutcome create_operation_and_claim(const PaymentRow& p, const std::string& owner, int64_t now,
                                              int64_t lease_until) override {
    check_operation_proposal(p);
    check_proposal_identifiers(p);
    check_identifier("lease owner", owner);
    std::optional<OperationOutcome> staged;
    return run(
        "create_operation_and_claim",
        [&](Session& s) {
          staged.reset();
          // BEGIN, the lock and the read of the family in one round trip.
          Tx tx(s, Tx::InPipeline{});
          const std::vector<ResultPtr> rs = exec_pipeline(
              s,
              {Query{"SELECT " PAYRETRY_PAYMENT_COLUMNS " FROM payments WHERE order_id = $1 FOR UPDATE",
                     Params().add(p.parent_order_id)},
               Query{kFamilyRows, Params().add(p.parent_order_id)}},
              BeginTx::yes);
          OperationOutcome out;
          std::optional<PaymentRow> parent;
          if (PQntuples(rs.at(0).get()) == 1) parent = to_client(s, read_row(rs[0].get(), 0));
          std::vector<PaymentRow> family;
          for (int i = 0; i < PQntuples(rs.at(1).get()); ++i) {
            family.push_back(to_client(s, read_row(rs[1].get(), i)));
            if (family.back().order_id == p.order_id) {  // a retry
              out.row = family.back();
              return out;  // read only; rolled back
            }
          }
          PaymentRow decided = p;
          out.refused = operation_guard(p, parent, family, decided.amount);
          if (!out.refused.empty()) {
            out.row.order_id = p.order_id;
            return out;  // nothing written; rolled back
          }
          const std::vector<ResultPtr> ins = exec_pipeline(s, {create_query(s, decided, owner, now, lease_until)});
          static_cast<CreateOutcome&>(out) = create_done(s, ins.at(0).get(), p.order_id);
          staged = out;
          tx.commit();
          return out;
        },
        &staged);
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
        check_create_proposal(c.proposed);
        check_proposal_identifiers(c.proposed);
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
            Tx tx(s, Tx::InPipeline{});  // BEGIN goes out with the statements: one round trip, then COMMIT
            // Creates, records and settles each in one statement where
            // that means the same as one per entry (creates_in_one...).
            // All of them in one pipeline.
            std::vector<Query> qs, creates, records, settles;
            for (const auto& e : b.creates) creates.push_back(create_query(s, e.proposed, e.owner, e.now, e.lease_until));
            for (const auto& e : b.records) records.push_back(record_query(e.order_id, e.owner, e.attempt));
            for (const auto& e : b.settles)
              settles.push_back(settle_query(e.order_id, e.owner, e.last ? &*e.last : nullptr, e.settlement, e.now));
            const bool creates_one = creates_in_one(b), records_one = records_in_one(b),
                       settles_one = settles_in_one(b);
            auto add = [&qs](bool in_one, std::vector<Query>& each, Query (*one)(const std::vector<Query>&)) {
              if (in_one) qs.push_back(one(each));
              else qs.insert(qs.end(), std::make_move_iterator(each.begin()), std::make_move_iterator(each.end()));
            };
            add(creates_one, creates, creates_query);
            add(records_one, records, records_query);
            add(settles_one, settles, settles_query);
            const std::vector<ResultPtr> rs = exec_pipeline(s, qs, BeginTx::yes);
            size_t k = 0;
            if (creates_one) a.creates = creates_done(s, rs[k++].get(), b);
            else
              for (const auto& e : b.creates) a.creates.push_back(create_done(s, rs[k++].get(), e.proposed.order_id));
            if (records_one) a.records = records_done(s, rs[k++].get(), b);
            else
              for (const auto& e : b.records)
                a.records.push_back(fenced_write_done(s, rs[k++].get(), e.order_id, &e.attempt));
            if (settles_one) a.settles = settles_done(s, rs[k++].get(), b);
            else
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

  std::vector<PaymentRow> operations_of(const std::string& order_id) override {
    check_identifier("order id", order_id);
    return run("operations_of", [&](Session& s) { return get_operation_rows(s, order_id); });
  }

  std::optional<PaymentRow> find_by_provider_id(const std::string& scope, const std::string& provider_id) override {
    if (provider_id.empty()) return std::nullopt;
    return run("find_by_provider_id", [&](Session& s) { return get_row_by_provider_id(s, scope, provider_id); });
  }

  std::vector<AttemptEntry> attempts(const std::string& order_id) override {
    check_identifier("order id", order_id);
    return run("attempts", [&](Session& s) { return get_attempts(s, order_id); });
  }

  int64_t prune_settled(int64_t updated_before) override {
    std::optional<int64_t> staged;
    return run("prune", [&](Session& s) {
      staged.reset();
      Params p;
      p.add(updated_before);
      Tx tx(s);
      // First the rows that would go are locked, in one order (a second
      // prune waits, never deadlocks): an operation being created holds its
      // payment's row FOR UPDATE (create_operation_and_claim), so this waits
      // for it to commit, and the DELETE after it, with a snapshot of its
      // own, sees its row and keeps the payment. Without the lock, the
      // DELETE's snapshot could miss that row and delete its payment once
      // the lock was released: the open operation would be left without
      // its payment. An operation created after the lock finds no payment.
      exec(s, "SELECT p.order_id FROM payments p WHERE " PAYRETRY_PG_PRUNABLE " ORDER BY p.order_id COLLATE \"C\" "
              "FOR UPDATE OF p", p);
      // Then one statement: the history and the rows go together (the
      // foreign key is checked at the statement's end). Which rows:
      // PAYRETRY_PG_PRUNABLE (Ledger::prune_settled says why).
      ResultPtr r = exec(s,
                         "WITH gone AS (DELETE FROM payments p WHERE " PAYRETRY_PG_PRUNABLE " RETURNING order_id), "
                         "history AS (DELETE FROM attempts WHERE order_id IN (SELECT order_id FROM gone)), "
                         // The events applied to the rows that go; and the
                         // kept ones that never found a row, once older
                         // than the cut: a provider notifies about every
                         // payment of the account, those made outside
                         // payretry too, which would otherwise pile up for
                         // ever, and an event's own row has long had its
                         // provider id by then (a row exists before its
                         // payment is sent).
                         "events AS (DELETE FROM webhook_events WHERE applied_to <> '' "
                         "AND applied_to IN (SELECT order_id FROM gone)), "
                         "kept AS (DELETE FROM webhook_events WHERE applied_to = '' AND received_at < $1::bigint) "
                         "SELECT count(*) FROM gone",
                         p);
      const int64_t pruned = static_cast<int64_t>(std::stoll(PQgetvalue(r.get(), 0, 0)));
      staged = pruned;
      tx.commit();
      return pruned;
    }, &staged);
  }

  // One transaction: the names' locks, the event's insert (ON CONFLICT on
  // its primary key: a concurrent duplicate waits for the first insert's
  // transaction and then does nothing), then the landing.
  EventRecording record_event(const LedgerEvent& e) override {
    check_ledger_event(e);
    check_event_identifiers(e);
    std::optional<EventRecording> staged;
    return run(
        "record_event",
        [&](Session& s) {
          staged.reset();
          Tx tx(s);
          lock_names(s, e.scope, e.order_id, e.provider_payment_id);
          Params p;
          p.add(e.scope).add(e.scheme).add(e.event_id).add(e.order_id).add(e.provider_payment_id).add(e.received_at);
          EntryParams fields(p);
          write_attempt_fields(fields, e.entry);
          ResultPtr r = exec(s, kInsertEvent, p);
          if (!changed_one(r)) return EventRecording::duplicate;  // nothing written; rolled back
          const EventRecording out = land_event(s, e) ? EventRecording::recorded : EventRecording::kept_for_later;
          staged = out;
          tx.commit();
          return out;
        },
        &staged);
  }

  std::vector<LedgerEvent> kept_events(const std::string& scope, const std::string& order_id,
                                       const std::string& provider_payment_id) override {
    check_identifier("scope", scope);
    check_identifier("order id", order_id);
    check_identifier("provider payment id", provider_payment_id);
    return run("kept_events", [&](Session& s) {
      Tx tx(s);
      lock_names(s, scope, order_id, provider_payment_id);
      ResultPtr r = exec(s, kKeptEvents, Params().add(scope).add(order_id).add(provider_payment_id));
      std::vector<LedgerEvent> out;
      for (int i = 0; i < PQntuples(r.get()); ++i) out.push_back(pg::read_event_row(r.get(), i));
      tx.commit();
      return out;
    });
  }

  bool apply_kept_event(const LedgerEvent& e) override {
    check_identifier("scope", e.scope);
    check_identifier("webhook scheme", e.scheme);
    check_identifier("event id", e.event_id);
    std::optional<bool> staged;
    return run(
        "apply_kept_event",
        [&](Session& s) {
          staged.reset();
          Tx tx(s);
          const char* const find = "SELECT " PAYRETRY_EVENT_COLUMNS " FROM webhook_events "
                                   "WHERE scope = $1 AND scheme = $2 AND event_id = $3 AND applied_to = ''";
          const Params key = Params().add(e.scope).add(e.scheme).add(e.event_id);
          ResultPtr r = exec(s, find, key);
          if (PQntuples(r.get()) == 0) return false;
          const LedgerEvent named = pg::read_event_row(r.get(), 0);
          lock_names(s, named.scope, named.order_id, named.provider_payment_id);
          // Again, locked: another call may have applied it meanwhile.
          r = exec(s, (std::string(find) + " FOR UPDATE").c_str(), key);
          if (PQntuples(r.get()) == 0) return false;
          if (!land_event(s, pg::read_event_row(r.get(), 0))) return false;  // nothing written; rolled back
          staged = true;
          tx.commit();
          return true;
        },
        &staged);
  }

  std::vector<PaymentRow> list(std::optional<PaymentState> state, int64_t updated_before, int limit,
                               const std::optional<std::string>& scope) override {
    if (scope) check_identifier("scope", *scope);
    return run("list", [&](Session& s) {
      Params p;
      p.add(updated_before > 0 ? updated_before : std::numeric_limits<int64_t>::max());
      if (limit >= 0) p.add(limit);
      else p.add_null();  // LIMIT NULL: no limit
      if (state) p.add(std::string(state_name(*state)));
      if (scope) p.add(*scope);
      const char* const sql = state && scope ? kListStateScope : state ? kListState : scope ? kListScope : kListAll;
      ResultPtr r = exec(s, sql, p);
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

  static void check_proposal_identifiers(const PaymentRow& p) {
    check_identifier("order id", p.order_id);
    check_identifier("idempotency key", p.idempotency_key);
    check_identifier("fingerprint", p.fingerprint);
    check_identifier("scope", p.scope);
    check_identifier("submission headers", p.submission_headers);
    check_identifier("submission path", p.submission_path);
    check_identifier("parent order id", p.parent_order_id);
    check_identifier("operation ref", p.operation_ref);
  }

  static void check_settlement(const Settlement& s) {
    if (s.state != PaymentState::succeeded && s.state != PaymentState::failed && s.state != PaymentState::unknown)
      throw LedgerError(std::string("ledger (postgresql): settle: a settlement's state must be SUCCEEDED, FAILED or "
                                    "UNKNOWN, not ") +
                        state_name(s.state));
  }

  CreateOutcome do_create(const PaymentRow& p, const std::string& owner, int64_t now, int64_t lease_until,
                          const Budget& b) {
    check_create_proposal(p);  // also for a batch's entry, made one by one after a refusal
    check_proposal_identifiers(p);
    check_identifier("lease owner", owner);
    std::optional<CreateOutcome> staged;
    return run(
        "create_and_claim",
        [&](Session& s) {
          staged.reset();
          // BEGIN and the statement (prepared) in one round trip, then COMMIT.
          Tx tx(s, Tx::InPipeline{});
          const std::vector<ResultPtr> rs = exec_pipeline(s, {create_query(s, p, owner, now, lease_until)}, BeginTx::yes);
          CreateOutcome out = create_done(s, rs.at(0).get(), p.order_id);
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
          Tx tx(s, Tx::InPipeline{});
          const std::vector<ResultPtr> rs = exec_pipeline(s, {record_query(order_id, owner, a)}, BeginTx::yes);
          if (!fenced_write_done(s, rs.at(0).get(), order_id, &a)) return false;  // nothing written
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
          Tx tx(s, Tx::InPipeline{});
          const std::vector<ResultPtr> rs = exec_pipeline(s, {settle_query(order_id, owner, last, st, now)}, BeginTx::yes);
          if (!fenced_write_done(s, rs.at(0).get(), order_id, last)) return false;  // nothing written
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
        error = errors_.message("apply", "no time was left for this entry within the ledger timeout (" +
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
        Pool::Borrow conn(pool_, op, b.first);
        try {
          return body(conn.session());
        } catch (const PgFailure& f) {
          if (!f.maybe_committed) {
            if (f.broken && !f.timed_out && !retried && Steady::now() < b.first) {
              retried = true;
              continue;
            }
            errors_.raise(op, f);
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
      Pool::Borrow conn(pool_, op, end);
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
      errors_.unavailable(op, what + ", and " + step + " failed: " + errors_.strip(e.what()) +
                                  "; whether the write took effect is unknown");
    } catch (const PgFailure& g) {
      errors_.unavailable(op, what + ", and " + step + " failed: " + errors_.describe(g) +
                                  "; whether the write took effect is unknown");
    }
    if (status == "in progress")
      errors_.unavailable(op, what +
                                  "; the transaction is still in progress on the server (waiting for a synchronous "
                                  "standby?), so whether the write takes effect is unknown");
    errors_.unavailable(op, what + "; whether the write took effect cannot be told");
  }

  const int64_t timeout_ms_;
  const ConnectionUrl url_;
  const ErrorReporter errors_;  // before pool_, which uses it
  Pool pool_;
  std::string secret_;
};

}  // namespace
}  // namespace pg

std::unique_ptr<Ledger> open_postgres_ledger(const std::string& conninfo_url, const std::string& secret_override,
                                             int64_t timeout_ms) {
  return std::make_unique<pg::PostgresLedger>(conninfo_url, secret_override, timeout_ms, nullptr);
}

std::unique_ptr<Ledger> open_postgres_ledger_with_clock(const std::string& conninfo_url,
                                                        const std::string& secret_override, int64_t timeout_ms,
                                                        std::function<int64_t()> client_clock) {
  return std::make_unique<pg::PostgresLedger>(conninfo_url, secret_override, timeout_ms, std::move(client_clock));
}

}  // namespace payretry
