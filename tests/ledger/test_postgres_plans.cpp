// How the PostgreSQL ledger's group commits find their rows once the table
// has grown: by key, not by reading the whole table. Each connection keeps
// its statements prepared, and PostgreSQL's plan cache, after five
// executions, may settle on one generic plan for good. A ledger that starts
// empty has a tiny `payments` table then, so that plan joins a batch's
// entries to the table by reading all of it; an ANALYZE re-plans it, but
// autovacuum runs one only after the table has grown by a tenth, at most
// once a minute. Until then every settle of a busy service re-read the whole
// table: 540 sequential scans reading 24 million rows in 18 s on a fresh
// ledger at 1,000 payments in flight (BENCHMARKS.md, "a plan cached on an
// empty table").
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "ledger.hpp"
#include "ledger_fixture.hpp"

namespace payretry {
namespace {

using ledger_test::Kind;
using ledger_test::ScratchStore;

constexpr int64_t kNow = 1'700'000'000'000;
constexpr int64_t kLease = 30'000;
constexpr int kOldRows = 50'000;

class PostgresLedgerPlans : public ::testing::Test {
 protected:
  void SetUp() override {
    LEDGER_REQUIRE_PG();
    store_ = std::make_unique<ScratchStore>(Kind::postgres);
    ledger_ = open_ledger(store_->url(), "");
    // An ANALYZE would re-plan by itself: this test is about the time
    // before autovacuum gets to it.
    store_->exec_raw("ALTER TABLE payments SET (autovacuum_enabled = false)");
    store_->exec_raw("ALTER TABLE attempts SET (autovacuum_enabled = false)");
  }

  // One group commit creating `n` new payments, then one settling them:
  // each several entries, so each is one statement over arrays.
  void create_and_settle(int n) {
    LedgerBatch creates, settles;
    for (int i = 0; i < n; ++i) {
      const std::string order = "order-" + std::to_string(made_++);
      LedgerBatch::Create c;
      c.owner = "worker-" + order;
      c.proposed.order_id = order;
      c.proposed.idempotency_key = "key-" + order;
      c.proposed.fingerprint = std::string(64, 'c');
      c.proposed.key_expires_at = kNow + 86'400'000;
      c.now = kNow;
      c.lease_until = kNow + kLease;
      creates.creates.push_back(std::move(c));
      LedgerBatch::Settle s;
      s.owner = "worker-" + order;
      s.order_id = order;
      s.settlement.state = PaymentState::succeeded;
      s.settlement.delivery = "delivered";
      s.now = kNow + 10;
      settles.settles.push_back(std::move(s));
    }
    ledger_->apply(creates);
    for (const auto& c : creates.creates) ASSERT_TRUE(c.out.created) << c.proposed.order_id << c.error;
    ledger_->apply(settles);
    for (const auto& s : settles.settles) ASSERT_TRUE(s.ok) << s.order_id << s.error;
  }

  // Rows read by sequential scans of `payments` in this test's schema, once
  // the server has counted the `updates` updates made so far (a backend
  // reports its counters when idle, up to 10 s later), so the scans made
  // with them are counted too.
  long long rows_scanned(long long updates) {
    const std::string where = "FROM pg_stat_user_tables WHERE schemaname = '" + store_->schema() +
                              "' AND relname = 'payments'";
    ledger_test::PgSession pg(store_->url());  // one connection for the whole wait
    for (int i = 0; i < 300; ++i) {
      if (std::stoll(pg.exec("SELECT n_tup_upd " + where)) >= updates)
        return std::stoll(pg.exec("SELECT coalesce(seq_tup_read, 0) " + where));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "the server never counted " << updates << " updates of payments";
    return -1;
  }

  std::unique_ptr<ScratchStore> store_;
  std::unique_ptr<Ledger> ledger_;
  int made_ = 0;
};

TEST_F(PostgresLedgerPlans, GroupCommitsLookUpTheirRowsByKeyAfterTheTableGrew) {
  // A young ledger: ten rounds, more than the plan cache needs to settle on
  // a generic plan, while the table has a few dozen rows.
  for (int round = 0; round < 10; ++round) create_and_settle(4);
  // The table grows faster than anything re-plans: rows settled long ago.
  store_->exec_raw(
      "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, delivery, created_at, key_expires_at, "
      "updated_at) SELECT 'old-' || g, 'key-old-' || g, repeat('d', 64), 'SUCCEEDED', 'delivered', " +
      std::to_string(kNow - 86'400'000) + " + g, " + std::to_string(kNow) + ", " + std::to_string(kNow - 86'400'000) +
      " + g FROM generate_series(1, " + std::to_string(kOldRows) + ") g");

  for (int round = 0; round < 5; ++round) create_and_settle(4);

  // Sixty payments in all, each batch of four found by key: a few hundred
  // rows read while the table was small. A plan that scans reads the whole
  // table for each batch after it grew: five times its 50,000 rows.
  EXPECT_LT(rows_scanned(made_), kOldRows)
      << "rows read by sequential scans of payments over 15 group commits of creates and 15 of settles, "
         "the last 10 with " << kOldRows + made_ << " rows in the table";
}

// Reconcile lists the open rows of its own scope on a ledger other clients
// share: the list is one scan of the (state, scope, updated_at, order_id)
// index that reads this scope's rows only, in the list's order, and stops at
// the page's limit, however large another scope's backlog of the same state.
// The server's own counters say which indexes the list read, and how many
// entries.
TEST_F(PostgresLedgerPlans, AScopedListReadsOnlyItsOwnScopesRowsThroughTheStateScopeIndex) {
  constexpr int kOthers = 20'000;
  const std::string day = std::to_string(kNow + 86'400'000);
  // Another scope's backlog, older than every row of this one.
  store_->exec_raw(
      "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, delivery, created_at, key_expires_at, "
      "updated_at, scope) SELECT 'b-' || g, 'key-b-' || g, repeat('d', 64), 'UNKNOWN', 'maybe_processed', " +
      std::to_string(kNow) + ", " + day + ", " + std::to_string(kNow) + " + g, 'scope-b' FROM generate_series(1, " +
      std::to_string(kOthers) + ") g");
  store_->exec_raw(
      "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, delivery, created_at, key_expires_at, "
      "updated_at, scope) SELECT 'a-' || g, 'key-a-' || g, repeat('d', 64), 'UNKNOWN', 'maybe_processed', " +
      std::to_string(kNow) + ", " + day + ", " + std::to_string(kNow + kOthers) + " + g, 'scope-a' "
      "FROM generate_series(1, 10) g");
  store_->exec_raw("ANALYZE payments");
  ledger_test::PgSession admin(store_->url());
  for (const char* counters : {"payments", "payments_state_scope_updated", "payments_state_updated", "payments_pkey"})
    admin.exec(std::string("SELECT pg_stat_reset_single_table_counters('") + counters + "'::regclass)");

  const auto page = ledger_->list(PaymentState::unknown, 0, 3, std::string("scope-a"));
  ASSERT_EQ(page.size(), 3u);
  EXPECT_EQ(page[0].order_id, "a-1");
  EXPECT_EQ(page[2].order_id, "a-3");
  ledger_.reset();  // its sessions end and flush their counters

  const std::string where = " FROM pg_stat_user_indexes WHERE schemaname = '" + store_->schema() + "' AND indexrelname = ";
  long long scans = 0;
  for (int i = 0; i < 250 && scans < 1; ++i) {
    admin.exec("SELECT pg_stat_clear_snapshot()");
    scans = std::stoll(admin.exec("SELECT idx_scan" + where + "'payments_state_scope_updated'"));
    if (scans < 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(scans, 1) << "the scoped list is one scan of payments_state_scope_updated";
  EXPECT_LE(std::stoll(admin.exec("SELECT idx_tup_read" + where + "'payments_state_scope_updated'")), 4)
      << "index entries read for a page of 3 rows of scope-a, beside " << kOthers << " older rows of scope-b";
  EXPECT_EQ(admin.exec("SELECT idx_scan" + where + "'payments_state_updated'"), "0");
  // (Sequential scans of the empty table when the ledger made its indexes
  // may be counted late: rows read, not scans.)
  EXPECT_EQ(admin.exec("SELECT seq_tup_read FROM pg_stat_user_tables WHERE schemaname = '" + store_->schema() +
                       "' AND relname = 'payments'"),
            "0");
}

// A webhook event that names only the provider's payment id finds its row
// through (scope, provider_payment_id), and a payment's kept events are
// found through the partial indexes of kept events, however many rows and
// kept events other scopes hold: the server's counters say which indexes
// were read, how many entries, and that nothing was read by a sequential
// scan.
TEST_F(PostgresLedgerPlans, AnEventFindsItsRowByProviderIdAndKeptEventsByTheirNamesThroughTheirIndexes) {
  constexpr int kOthers = 20'000;
  const std::string now = std::to_string(kNow), day = std::to_string(kNow + 86'400'000);
  store_->exec_raw(
      "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, delivery, created_at, key_expires_at, "
      "updated_at, provider_payment_id, scope) SELECT 'b-' || g, 'key-b-' || g, repeat('d', 64), 'SUCCEEDED', "
      "'delivered', " + now + ", " + day + ", " + now + ", 'pi_b_' || g, 'scope-b' FROM generate_series(1, " +
      std::to_string(kOthers) + ") g");
  store_->exec_raw(
      "INSERT INTO webhook_events (scope, scheme, event_id, order_id, provider_payment_id, received_at, started_at, "
      "ended_at, http_status, transport_error, verdict, reason, delay_ms, provider_request_id, replayed, kind, "
      "processed) SELECT 'scope-b', 'stripe', 'evt_b_' || g, 'x-' || g, 'pi_x_' || g, " + now + ", " + now + ", " +
      now + ", 0, '', 'event_noted', '', -1, '', false, 'webhook', false FROM generate_series(1, " +
      std::to_string(kOthers) + ") g");
  // And scope-a's own events of the past, applied long ago.
  store_->exec_raw(
      "INSERT INTO webhook_events (scope, scheme, event_id, order_id, provider_payment_id, received_at, started_at, "
      "ended_at, http_status, transport_error, verdict, reason, delay_ms, provider_request_id, replayed, kind, "
      "processed, applied_to) SELECT 'scope-a', 'stripe', 'evt_a_old_' || g, 'a-old-' || g, 'pi_a_old_' || g, " +
      now + ", " + now + ", " + now + ", 0, '', 'event_noted', '', -1, '', false, 'webhook', false, 'a-old-' || g "
      "FROM generate_series(1, " + std::to_string(kOthers) + ") g");
  store_->exec_raw(
      "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, delivery, created_at, key_expires_at, "
      "updated_at, provider_payment_id, scope) VALUES ('a-1', 'key-a-1', repeat('d', 64), 'SUCCEEDED', 'delivered', " +
      now + ", " + day + ", " + now + ", 'pi_a', 'scope-a')");
  store_->exec_raw("ANALYZE payments");
  store_->exec_raw("ANALYZE webhook_events");
  ledger_test::PgSession admin(store_->url());
  const char* const relations[] = {"payments", "webhook_events", "payments_scope_provider",
                                   "webhook_events_kept_order", "webhook_events_kept_provider"};
  for (const char* r : relations)
    admin.exec(std::string("SELECT pg_stat_reset_single_table_counters('") + r + "'::regclass)");

  auto event = [](const std::string& id, const std::string& order, const std::string& provider_id) {
    LedgerEvent e;
    e.scope = "scope-a";
    e.scheme = "stripe";
    e.event_id = id;
    e.order_id = order;
    e.provider_payment_id = provider_id;
    e.received_at = e.entry.started_at = e.entry.ended_at = kNow + 1000;
    e.entry.kind = "webhook";
    e.entry.verdict = kEventNoted;
    return e;
  };
  ASSERT_EQ(ledger_->record_event(event("evt_1", "", "pi_a")), EventRecording::recorded);
  ASSERT_EQ(ledger_->record_event(event("evt_2", "a-2", "pi_a2")), EventRecording::kept_for_later);
  ASSERT_EQ(ledger_->kept_events("scope-a", "a-2", "pi_a2").size(), 1u);
  ledger_.reset();  // its sessions end and flush their counters

  const std::string where = " FROM pg_stat_user_indexes WHERE schemaname = '" + store_->schema() + "' AND indexrelname = ";
  long long scans = 0;
  for (int i = 0; i < 250 && scans < 1; ++i) {
    admin.exec("SELECT pg_stat_clear_snapshot()");
    scans = std::stoll(admin.exec("SELECT idx_scan" + where + "'payments_scope_provider'"));
    if (scans < 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GE(scans, 1) << "the row named by a provider id alone is found through payments_scope_provider";
  EXPECT_LE(std::stoll(admin.exec("SELECT idx_tup_read" + where + "'payments_scope_provider'")), 5)
      << "entries read to find scope-a's row by its provider id beside " << kOthers << " rows of scope-b";
  // Which index of webhook_events the planner takes for scope-a's one
  // event is its choice; that it reads scope-a's entries only is the rule.
  EXPECT_LE(std::stoll(admin.exec("SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes WHERE "
                                  "schemaname = '" + store_->schema() + "' AND relname = 'webhook_events'")),
            10)
      << "entries of webhook_events' indexes read for two events and one kept_events of scope-a, beside " << kOthers
      << " kept events of scope-b and " << kOthers << " applied ones of scope-a";
  for (const char* table : {"payments", "webhook_events"})
    EXPECT_EQ(admin.exec("SELECT coalesce(seq_tup_read, 0) FROM pg_stat_user_tables WHERE schemaname = '" +
                         store_->schema() + "' AND relname = '" + table + "'"),
              "0")
        << table;
}

}  // namespace
}  // namespace payretry
