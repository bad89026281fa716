// How the SQLite ledger lists one scope's rows: reconcile asks for the open
// rows of its own scope, oldest first, a page at a time, on a ledger that
// other clients (other merchant accounts) may share. The listing must be one
// search of the (state, scope, updated_at, order_id) index, which yields
// exactly those rows in the list's order and stops at the page's limit,
// never a read of every row in that state (another scope's backlog would
// then cost every page of this one) nor a sort of them.
//
// SQLite plans a statement when it is prepared, from its text, so the plan
// is read here with EXPLAIN QUERY PLAN over the statements of
// SqliteLedger::list (ledger_sqlite.cpp, PAYRETRY_SQLITE_LIST): keep the
// texts below the same as those.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <memory>
#include <string>
#include <vector>

#include "ledger.hpp"
#include "ledger_fixture.hpp"
#include "sql_row_codec.hpp"

namespace payretry {
namespace {

using ledger_test::Kind;
using ledger_test::ScratchStore;

constexpr int64_t kNow = 1'700'000'000'000;

#define LIST(filters)                                                                  \
  "SELECT " PAYRETRY_PAYMENT_COLUMNS " FROM payments WHERE " filters "updated_at < ?2 " \
  "ORDER BY updated_at, order_id LIMIT ?3"
const char* const kListStateScope = LIST("state = ?1 AND scope = ?4 AND ");
const char* const kListState = LIST("state = ?1 AND ");
#undef LIST

class SqliteLedgerPlans : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_unique<ScratchStore>(Kind::sqlite);
    ledger_ = open_ledger(store_->url(), "");
  }

  // EXPLAIN QUERY PLAN's lines for `sql`, on a connection of its own.
  std::vector<std::string> plan(const char* sql) const {
    sqlite3* db = nullptr;
    const std::string path = store_->url().substr(std::string("sqlite://").size());
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    std::unique_ptr<sqlite3, int (*)(sqlite3*)> guard(db, sqlite3_close);
    sqlite3_stmt* st = nullptr;
    const std::string explain = std::string("EXPLAIN QUERY PLAN ") + sql;
    if (sqlite3_prepare_v2(db, explain.c_str(), -1, &st, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sqlite3_errmsg(db) << ": " << sql;
      return {};
    }
    std::vector<std::string> lines;
    while (sqlite3_step(st) == SQLITE_ROW) lines.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 3)));
    sqlite3_finalize(st);
    return lines;
  }

  static std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
  }

  // The checks, with the statistics SQLite has (none, or ANALYZE's).
  void expect_scoped_list_searches_the_scope_index() {
    const auto scoped = plan(kListStateScope);
    ASSERT_EQ(scoped.size(), 1u) << joined(scoped);
    EXPECT_EQ(scoped[0], "SEARCH payments USING INDEX payments_state_scope_updated (state=? AND scope=? AND updated_at<?)")
        << "a search of one scope's rows of one state, in the list's order: nothing else is read, nothing sorted";
    const auto by_state = plan(kListState);
    ASSERT_FALSE(by_state.empty());
    EXPECT_EQ(by_state[0], "SEARCH payments USING INDEX payments_state_updated (state=? AND updated_at<?)")
        << joined(by_state);
  }

  std::unique_ptr<ScratchStore> store_;
  std::unique_ptr<Ledger> ledger_;
};

TEST_F(SqliteLedgerPlans, AScopedListOfOneStateIsOneSearchOfTheStateScopeIndexInTheListsOrder) {
  expect_scoped_list_searches_the_scope_index();
}

// Once ANALYZE has seen a ledger where one scope holds nearly every open row,
// the plan of another scope's list is still the search of its own rows.
TEST_F(SqliteLedgerPlans, TheScopedListStaysASearchOfTheScopeIndexAfterAnalyzeSawAnotherScopesBacklog) {
  Settlement unknown;
  unknown.state = PaymentState::unknown;
  LedgerBatch creates;
  for (int i = 0; i < 2000; ++i) {
    const std::string order = (i % 100 ? "b-" : "a-") + std::to_string(i);
    LedgerBatch::Create c;
    c.owner = "w";
    c.proposed.order_id = order;
    c.proposed.idempotency_key = "key-" + order;
    c.proposed.fingerprint = std::string(64, 'f');
    c.proposed.key_expires_at = kNow + 86'400'000;
    c.proposed.scope = i % 100 ? "scope-b" : "scope-a";
    c.now = kNow + i;
    c.lease_until = kNow + i + 30'000;
    creates.creates.push_back(std::move(c));
  }
  ledger_->apply(creates);
  LedgerBatch settles;
  for (const auto& c : creates.creates) {
    ASSERT_TRUE(c.out.created) << c.proposed.order_id << c.error;
    LedgerBatch::Settle s;
    s.owner = "w";
    s.order_id = c.proposed.order_id;
    s.settlement = unknown;
    s.now = c.now + 1;
    settles.settles.push_back(std::move(s));
  }
  ledger_->apply(settles);
  store_->exec_raw("ANALYZE");
  expect_scoped_list_searches_the_scope_index();
  const auto rows = ledger_->list(PaymentState::unknown, 0, 5, std::string("scope-a"));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].order_id, "a-0");
  EXPECT_EQ(rows[4].order_id, "a-400");
}

// The statements of SqliteLedger's webhook events (ledger_sqlite.cpp: land,
// kept_events): keep these texts the same as those. An event that names
// only the provider's payment id finds its row by (scope, provider id), and
// the kept events of a payment are found by their names, never by reading
// every payment or every event.
const char* const kLandEvent =
    "UPDATE payments SET attempts = attempts + 1, updated_at = MAX(updated_at, ?4) "
    "WHERE order_id = COALESCE("
    "(SELECT order_id FROM payments WHERE ?2 <> '' AND order_id = ?2 AND scope = ?1), "
    "(SELECT order_id FROM payments WHERE ?3 <> '' AND scope = ?1 AND provider_payment_id = ?3 "
    "ORDER BY order_id LIMIT 1)) AND state <> 'IN_FLIGHT' RETURNING order_id, attempts";
const char* const kKeptEvents =
    "SELECT " PAYRETRY_EVENT_COLUMNS " FROM webhook_events WHERE applied_to = '' AND scope = ?1 "
    "AND ?2 <> '' AND order_id = ?2 UNION "
    "SELECT " PAYRETRY_EVENT_COLUMNS " FROM webhook_events WHERE applied_to = '' AND scope = ?1 "
    "AND ?3 <> '' AND provider_payment_id = ?3 ORDER BY received_at, scheme, event_id";

TEST_F(SqliteLedgerPlans, AnEventFindsItsRowByOrderOrProviderIdAndKeptEventsByTheirNamesWithoutAScan) {
  const std::string land = joined(plan(kLandEvent));
  EXPECT_EQ(land.find("SCAN"), std::string::npos) << land;
  EXPECT_NE(land.find("USING INDEX payments_scope_provider (scope=? AND provider_payment_id=?)"), std::string::npos)
      << land;
  const std::string kept = joined(plan(kKeptEvents));
  EXPECT_EQ(kept.find("SCAN webhook_events"), std::string::npos) << kept;
  EXPECT_EQ(kept.find("webhook_events_applied"), std::string::npos) << "every kept event of every scope: " << kept;
  EXPECT_NE(kept.find("webhook_events_kept_order"), std::string::npos) << kept;
  EXPECT_NE(kept.find("webhook_events_kept_provider"), std::string::npos) << kept;
}

}  // namespace
}  // namespace payretry
