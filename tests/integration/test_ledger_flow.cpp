// pay_submit through a SQLite ledger against the simulator: the key is
// committed before the first send, a resubmitted order never becomes a
// second payment, and the ledger file never holds card data.
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "sim_fixture.hpp"

namespace payretry_test {
namespace {

class LedgerFlow : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    char tmpl[] = "/tmp/payretry-ledger-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    db_ = dir_ + "/payments.db";
  }
  void TearDown() override {
    SimTest::TearDown();
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((db_ + suffix).c_str());
    rmdir(dir_.c_str());
  }
  std::string ledger_config(const std::string& retry = "", const std::string& extra = "") {
    std::string e = R"("ledger":"sqlite://)" + db_ + "\"";
    if (!extra.empty()) e += "," + extra;
    return config("stripe", retry, e);
  }
  std::string ledger_json(pay_client* c, const std::string& order) {
    pay_buf b = {nullptr, 0};
    EXPECT_EQ(pay_ledger_get(&b, c, order.c_str()), PAY_OK) << pay_error_last()->message;
    std::string s = b.ptr ? b.ptr : "";
    pay_buf_dispose(&b);
    return s;
  }
  void sql(const std::string& statement) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  std::string dir_, db_;
};

TEST_F(LedgerFlow, FinishedPaymentIsReturnedFromTheLedgerWithoutAnyHttp) {
  auto c = client(ledger_config());
  auto first = submit(c.get(), "l-done");
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_result_from_ledger(first.get()), 0);
  const long before = sim_->requests();
  // Even a new client (a restarted process) on the same ledger file.
  c.reset();
  auto c2 = client(ledger_config());
  auto again = submit(c2.get(), "l-done");
  EXPECT_EQ(pay_result_outcome(again.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_result_from_ledger(again.get()), 1);
  EXPECT_EQ(pay_result_attempts(again.get()), 0);
  EXPECT_STREQ(pay_result_idempotency_key(again.get()), pay_result_idempotency_key(first.get()));
  EXPECT_STREQ(pay_result_provider_payment_id(again.get()), pay_result_provider_payment_id(first.get()));
  EXPECT_EQ(sim_->requests(), before);
  EXPECT_EQ(sim_->charges_for("l-done"), 1);
}

TEST_F(LedgerFlow, UnknownPaymentResumesWithTheSameKeyAndBytes) {
  sim_->script("l-unk", {"lost_response", "lost_response", "lost_response", "lost_response"});
  auto c = client(ledger_config());
  auto first = submit(c.get(), "l-unk");
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_NE(ledger_json(c.get(), "l-unk").find("\"state\":\"UNKNOWN\""), std::string::npos);
  auto again = submit(c.get(), "l-unk");
  EXPECT_EQ(pay_result_outcome(again.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_result_from_ledger(again.get()), 0);
  EXPECT_STREQ(pay_result_idempotency_key(again.get()), pay_result_idempotency_key(first.get()));
  expect_one_key_and_identical_bytes();
  EXPECT_EQ(sim_->charges_for("l-unk"), 1);
  // Attempt numbers continue across runs: 4 lost, then the replay as the 5th.
  const std::string j = ledger_json(c.get(), "l-unk");
  EXPECT_NE(j.find("\"attempt\":5"), std::string::npos) << j;
  EXPECT_NE(j.find("\"state\":\"SUCCEEDED\""), std::string::npos) << j;
}

TEST_F(LedgerFlow, ExpiredKeyIsNeverResentOnlyQueried) {
  sim_->script("l-exp", {"lost_response", "lost_response", "lost_response", "lost_response"});
  auto c = client(ledger_config("", R"("key_retention_ms":1000)"));
  auto first = submit(c.get(), "l-exp");
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const long before = sim_->requests();
  auto again = submit(c.get(), "l-exp");
  EXPECT_EQ(pay_result_outcome(again.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_from_ledger(again.get()), 1);
  EXPECT_NE(std::string(pay_result_error(again.get())).find("query"), std::string::npos);
  EXPECT_EQ(sim_->requests(), before);
}

TEST_F(LedgerFlow, DeadWorkersPaymentWithAnExpiredKeyBecomesUnknownNotInProgressForever) {
  sim_->script("l-dexp", {"lost_response", "lost_response", "lost_response", "lost_response"});
  auto c = client(ledger_config("", R"("key_retention_ms":1000)"));
  auto first = submit(c.get(), "l-dexp");
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN);
  sql("UPDATE payments SET state='IN_FLIGHT', lease_owner='dead-host:1:x', lease_until=1 WHERE order_id='l-dexp'");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const long before = sim_->requests();
  auto again = submit(c.get(), "l-dexp");
  EXPECT_EQ(pay_result_outcome(again.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_delivery(again.get()), PAY_DELIVERY_MAYBE_PROCESSED);
  EXPECT_EQ(pay_result_from_ledger(again.get()), 1);
  EXPECT_EQ(sim_->requests(), before);
  const std::string j = ledger_json(c.get(), "l-dexp");
  EXPECT_NE(j.find("\"state\":\"UNKNOWN\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"lease_owner\":null"), std::string::npos) << j;
}

TEST_F(LedgerFlow, OrderUnderALiveLeaseIsInProgressOrWaitedFor) {
  sim_->script("l-busy", {"slow"});  // holds the request 600 ms, then charges
  auto c = client(ledger_config(R"("attempt_timeout_ms":2000)"));
  std::thread holder([&] { submit(c.get(), "l-busy"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto busy = submit(c.get(), "l-busy");
  EXPECT_EQ(pay_result_outcome(busy.get()), PAY_OUTCOME_IN_PROGRESS);
  EXPECT_EQ(pay_result_from_ledger(busy.get()), 1);
  // A second client that is willing to wait gets the stored outcome.
  auto patient = client(ledger_config(R"("attempt_timeout_ms":2000)", R"("in_progress_wait_ms":3000)"));
  auto waited = submit(patient.get(), "l-busy");
  EXPECT_EQ(pay_result_outcome(waited.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_result_from_ledger(waited.get()), 1);
  holder.join();
  EXPECT_EQ(sim_->charges_for("l-busy"), 1);
}

TEST_F(LedgerFlow, LeaseLeftByADeadWorkerIsTakenOverWithTheSameKey) {
  sim_->script("l-dead", {"lost_response", "lost_response", "lost_response", "lost_response"});
  auto c = client(ledger_config());
  auto first = submit(c.get(), "l-dead");
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN);
  // As a worker that crashed mid-attempt would leave it: IN_FLIGHT, lease over.
  sql("UPDATE payments SET state='IN_FLIGHT', lease_owner='dead-host:1:x', lease_until=1 WHERE order_id='l-dead'");
  auto again = submit(c.get(), "l-dead");
  EXPECT_EQ(pay_result_outcome(again.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_STREQ(pay_result_idempotency_key(again.get()), pay_result_idempotency_key(first.get()));
  EXPECT_EQ(sim_->charges_for("l-dead"), 1);
  // And a live lease is respected.
  sql("UPDATE payments SET state='IN_FLIGHT', lease_owner='live-host:1:x', lease_until=9999999999999 "
      "WHERE order_id='l-dead'");
  auto busy = submit(c.get(), "l-dead");
  EXPECT_EQ(pay_result_outcome(busy.get()), PAY_OUTCOME_IN_PROGRESS);
}

TEST_F(LedgerFlow, KeyIsCommittedBeforeTheFirstByteIsSent) {
  // The request hook runs right before each send: the row must already be
  // durable in the file, readable by another connection.
  struct Probe {
    std::string db;
    std::string state_seen;
  } probe{db_, ""};
  pay_client_options o;
  pay_client_options_init(&o, PAY_CLIENT_OPTIONS_VERSION);
  o.hook_payload = &probe;
  o.request_hook = [](pay_headers*, const pay_attempt_info* info, void* p) -> int {
    auto* pr = static_cast<Probe*>(p);
    sqlite3* db = nullptr;
    sqlite3_open_v2(pr->db.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, "SELECT state, idempotency_key FROM payments WHERE order_id=?1", -1, &s, nullptr);
    sqlite3_bind_text(s, 1, info->order_id, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) == SQLITE_ROW &&
        std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 1))) == info->idempotency_key)
      pr->state_seen = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(db);
    return 0;
  };
  pay_client* raw = nullptr;
  ASSERT_EQ(pay_client_new(&raw, ledger_config().c_str(), &o), PAY_OK) << pay_error_last()->message;
  ClientPtr c(raw);
  auto r = submit(c.get(), "l-first");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(probe.state_seen, "IN_FLIGHT");
}

TEST_F(LedgerFlow, GroupCommitStillCommitsEveryKeyBeforeItsFirstByte) {
  // The concurrent engine commits the rows of many payments in one
  // transaction; the hook, right before each send, must find that payment's
  // row and key already durable, from another connection.
  struct Probe {
    std::string db;
    std::mutex mu;
    std::map<std::string, std::string> state_seen;  // order -> state at its first send
  } probe;
  probe.db = db_;
  pay_client_options o;
  pay_client_options_init(&o, PAY_CLIENT_OPTIONS_VERSION);
  o.hook_payload = &probe;
  o.request_hook = [](pay_headers*, const pay_attempt_info* info, void* p) -> int {
    auto* pr = static_cast<Probe*>(p);
    sqlite3* db = nullptr;
    sqlite3_open_v2(pr->db.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, "SELECT state, idempotency_key FROM payments WHERE order_id=?1", -1, &s, nullptr);
    sqlite3_bind_text(s, 1, info->order_id, -1, SQLITE_TRANSIENT);
    std::string seen = "absent";
    if (sqlite3_step(s) == SQLITE_ROW)
      seen = std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 1))) == info->idempotency_key
                 ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0))
                 : "other key";
    sqlite3_finalize(s);
    sqlite3_close(db);
    std::lock_guard<std::mutex> lock(pr->mu);
    pr->state_seen.emplace(info->order_id, seen);  // the first send only
    return 0;
  };
  pay_client* raw = nullptr;
  ASSERT_EQ(pay_client_new(&raw, ledger_config().c_str(), &o), PAY_OK) << pay_error_last()->message;
  ClientPtr c(raw);
  constexpr size_t kPayments = 60;
  std::vector<std::string> orders, bodies;
  for (size_t i = 0; i < kPayments; ++i) {
    orders.push_back("l-group-" + std::to_string(i));
    bodies.push_back(R"({"order_id":")" + orders.back() + R"(","amount":500,"currency":"eur"})");
  }
  std::vector<pay_batch_item> items(kPayments);
  for (size_t i = 0; i < kPayments; ++i) {
    items[i].order_id = orders[i].c_str();
    items[i].body = bodies[i].data();
    items[i].body_len = bodies[i].size();
  }
  ASSERT_EQ(pay_submit_batch(items.data(), kPayments, c.get(), nullptr), PAY_OK);
  for (auto& it : items) {
    EXPECT_EQ(pay_result_outcome(it.result), PAY_OUTCOME_SUCCEEDED);
    pay_result_free(it.result);
  }
  ASSERT_EQ(probe.state_seen.size(), kPayments);
  for (const auto& [order, state] : probe.state_seen) EXPECT_EQ(state, "IN_FLIGHT") << order;
}

TEST_F(LedgerFlow, LedgerFileNeverHoldsCardDataTokensOrBodies) {
  auto c = client(ledger_config());
  for (int i = 0; i < 20; ++i) {
    const std::string order = "l-card-" + std::to_string(i);
    if (i % 3 == 0) sim_->script(order, {"lost_response", "none"});
    const std::string body = R"({"order_id":")" + order +
                             R"(","amount":700,"card":{"number":"4242424242424242","cvc":"987","exp":"12/30"}})";
    auto r = submit(c.get(), order, body);
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  }
  std::string all;
  for (const char* suffix : {"", "-wal"}) {
    std::ifstream f(db_ + suffix, std::ios::binary);
    all.append(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(all.size(), 1000u);
  EXPECT_EQ(all.find("4242424242424242"), std::string::npos);
  EXPECT_EQ(all.find("\"cvc\""), std::string::npos);
  EXPECT_EQ(all.find("12/30"), std::string::npos);
  EXPECT_EQ(all.find("sk_test_integration_secret"), std::string::npos);
  EXPECT_EQ(all.find("\"amount\""), std::string::npos);
}

TEST_F(LedgerFlow, PostgresDumpNeverHoldsCardDataTokensOrBodies) {
  const char* url = std::getenv("PAYRETRY_TEST_PG_URL");
  if (!url || !*url) {
    if (const char* req = std::getenv("PAYRETRY_REQUIRE_PG"); req && std::string(req) == "1")
      FAIL() << "PAYRETRY_REQUIRE_PG=1 but PAYRETRY_TEST_PG_URL is not set";
    GTEST_SKIP() << "PAYRETRY_TEST_PG_URL not set";
  }
  auto c = client(config("stripe", "", std::string(R"("ledger":")") + url + "\""));
  for (int i = 0; i < 10; ++i) {
    const std::string order = "pgcard-" + std::to_string(getpid()) + "-" + std::to_string(i);
    if (i % 3 == 0) sim_->script(order, {"lost_response", "none"});
    const std::string body = R"({"order_id":")" + order +
                             R"(","amount":700,"card":{"number":"4000056655665556","cvc":"737","exp":"11/31"}})";
    auto r = submit(c.get(), order, body);
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  }
  const std::string dump = dir_ + "/dump.sql";
  const std::string errs = dir_ + "/dump.err";
  const std::string cmd = "pg_dump --no-owner '" + std::string(url) + "' > '" + dump + "' 2>'" + errs + "'";
  // The test database is shared with the other PostgreSQL tests running at
  // the same time, which create and drop their own tables: pg_dump fails
  // when one goes between its catalog read and its lock. Asked again; what
  // is checked is what the dump holds.
  int rc = -1;
  for (int attempt = 0; attempt < 5 && rc != 0; ++attempt) {
    if (attempt) ::usleep(300 * 1000);
    rc = std::system(cmd.c_str());
  }
  if (rc != 0) {
    std::ifstream e(errs);
    FAIL() << cmd << ": " << std::string((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  }
  std::ifstream f(dump, std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(dump.c_str());
  ASSERT_NE(all.find("pgcard-"), std::string::npos) << "the dump does not hold the payments at all";
  EXPECT_EQ(all.find("4000056655665556"), std::string::npos);
  EXPECT_EQ(all.find("\"cvc\""), std::string::npos);
  EXPECT_EQ(all.find("11/31"), std::string::npos);
  EXPECT_EQ(all.find("sk_test_integration_secret"), std::string::npos);
}

TEST_F(LedgerFlow, LedgerListFiltersByState) {
  sim_->script("l-list-u", {"lost_response", "lost_response", "lost_response", "lost_response"});
  auto c = client(ledger_config());
  submit(c.get(), "l-list-ok");
  submit(c.get(), "l-list-u");
  pay_buf b = {nullptr, 0};
  ASSERT_EQ(pay_ledger_list(&b, c.get(), "UNKNOWN", 0, 10), PAY_OK);
  const std::string unknown = b.ptr;
  pay_buf_dispose(&b);
  EXPECT_NE(unknown.find("l-list-u"), std::string::npos);
  EXPECT_EQ(unknown.find("l-list-ok"), std::string::npos);
  EXPECT_EQ(pay_ledger_list(&b, c.get(), "BOGUS", 0, 10), PAY_EINVALID);
  EXPECT_EQ(pay_ledger_get(&b, c.get(), "no-such-order"), PAY_ENOTFOUND);
}

TEST_F(LedgerFlow, CorruptReadOnlyOrLockedLedgerIsAClearErrorAndNothingIsSent) {
  {
    std::ofstream f(db_, std::ios::binary);
    f << std::string(8192, 'x');  // not a database
  }
  pay_client* raw = nullptr;
  EXPECT_EQ(pay_client_new(&raw, ledger_config().c_str(), nullptr), PAY_ELEDGER);
  EXPECT_NE(std::string(pay_error_last()->message).find("corrupt"), std::string::npos) << pay_error_last()->message;
  std::remove(db_.c_str());

  auto c = client(ledger_config());
  // Another process holds the write lock beyond the busy timeout.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  const long before = sim_->requests();
  const std::string body = body_for("l-locked");
  pay_result* r = nullptr;
  EXPECT_EQ(pay_submit(&r, c.get(), "l-locked", body.data(), body.size(), nullptr), PAY_ELEDGER);
  EXPECT_NE(std::string(pay_error_last()->message).find("locked"), std::string::npos) << pay_error_last()->message;
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_EQ(sim_->requests(), before);
  // The lock gone, the same client works and nothing was lost.
  auto ok = submit(c.get(), "l-locked");
  EXPECT_EQ(pay_result_outcome(ok.get()), PAY_OUTCOME_SUCCEEDED);
}

}  // namespace
}  // namespace payretry_test
