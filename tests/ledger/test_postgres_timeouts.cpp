// The PostgreSQL ledger's time bound (see the comment above PostgresLedger
// in src/ledger/ledger_postgres.cpp): every call returns or throws within
// 2 x timeout_ms, whatever the server does: stall entirely (a paused
// server, a black-holed network), leave a COMMIT unanswered after it took
// effect, lose one before it arrived, or keep one in progress (a
// synchronous standby gone). The faults come from a proxy on loopback
// (stall_proxy.hpp) between the ledger and the test server named by
// PAYRETRY_TEST_PG_URL.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "ledger.hpp"
#include "ledger_fixture.hpp"
#include "ledger_postgres.hpp"
#include "stall_proxy.hpp"

using namespace payretry;
using namespace ledger_test;

namespace {

constexpr int64_t kTimeoutMs = 400;
// Closing abandoned sockets and a busy 2-core machine's scheduling.
constexpr int64_t kSlackMs = 300;
constexpr int64_t kBoundMs = 2 * kTimeoutMs + kSlackMs;

constexpr int64_t kNow = 1'700'000'000'000;
constexpr int64_t kLease = 30'000;

PaymentRow proposal(const std::string& order) {
  PaymentRow r;
  r.order_id = order;
  r.idempotency_key = "key-" + order;
  r.fingerprint = std::string(64, 'b');
  r.key_expires_at = kNow + 86'400'000;
  return r;
}

AttemptEntry attempt(int number) {
  AttemptEntry a;
  a.number = number;
  a.started_at = kNow + number;
  a.ended_at = kNow + number + 10;
  a.http_status = 503;
  a.verdict = "retry";
  a.processed = false;
  return a;
}

int64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since).count();
}

// Every measured call, for the record.
void note(int64_t ms) { ::testing::Test::RecordProperty("call_ms", static_cast<int>(ms)); }

class PostgresLedgerTimeouts : public ::testing::Test {
 protected:
  void SetUp() override {
    LEDGER_REQUIRE_PG();
    store_ = std::make_unique<ScratchStore>(Kind::postgres);
    // Host, port, user and database of the test server; the ledger reaches
    // it through the proxy.
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(pg_base_url().c_str(), &err);
    ASSERT_NE(opts, nullptr) << (err ? err : "");
    std::string port = "5432", user, db, password;
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
      if (!o->val) continue;
      const std::string k = o->keyword;
      if (k == "port") port = o->val;
      else if (k == "user") user = o->val;
      else if (k == "dbname") db = o->val;
      else if (k == "password") password = o->val;
    }
    PQconninfoFree(opts);
    proxy_ = std::make_unique<StallProxy>(std::stoi(port));
    url_ = "host=127.0.0.1 port=" + std::to_string(proxy_->port()) + " sslmode=disable gssencmode=disable" +
           (user.empty() ? "" : " user='" + user + "'") + (db.empty() ? "" : " dbname='" + db + "'") +
           (password.empty() ? "" : " password='" + password + "'") + " options='-c search_path=" +
           store_->schema() + "'";
  }
  void TearDown() override {
    if (proxy_) proxy_->stall(false);
    proxy_.reset();
    store_.reset();
  }

  std::unique_ptr<Ledger> open() { return open_postgres_ledger(url_, "", kTimeoutMs); }

  // Runs `call`, which must throw a LedgerError, within the bound; returns
  // its message.
  std::string fails_in_time(const char* what, const std::function<void()>& call) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string m;
    try {
      call();
      ADD_FAILURE() << what << " worked against a stalled server";
    } catch (const LedgerError& e) {
      m = e.what();
    }
    const int64_t ms = elapsed_ms(t0);
    note(ms);
    EXPECT_LE(ms, kBoundMs) << what << " took " << ms << " ms: " << m;
    std::printf("  %-18s failed after %4lld ms: %s\n", what, static_cast<long long>(ms), m.c_str());
    return m;
  }

  std::unique_ptr<ScratchStore> store_;
  std::unique_ptr<StallProxy> proxy_;
  std::string url_;
};

TEST_F(PostgresLedgerTimeouts, EveryCallToAStalledServerFailsWithinTwiceTheTimeout) {
  auto l = open();
  ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  proxy_->stall(true);
  auto says_why = [](const std::string& m) {
    EXPECT_TRUE(m.find("no answer within 400 ms") != std::string::npos ||
                m.find("became free within 400 ms") != std::string::npos)
        << m;
    EXPECT_NE(m.find("ledger (postgresql"), std::string::npos) << m;
  };
  says_why(fails_in_time("get", [&] { l->get("o-1"); }));
  says_why(fails_in_time("attempts", [&] { l->attempts("o-1"); }));
  says_why(fails_in_time("list", [&] { l->list(std::nullopt, 0, 10, std::nullopt); }));
  says_why(fails_in_time("create_and_claim", [&] { l->create_and_claim(proposal("o-2"), "w", kNow, kNow + kLease); }));
  says_why(fails_in_time("claim", [&] { l->claim("o-1", "worker-b", kNow + 2 * kLease, kNow + 3 * kLease); }));
  says_why(fails_in_time("record_attempt", [&] { l->record_attempt("o-1", "worker-a", attempt(1)); }));
  Settlement s;
  s.state = PaymentState::unknown;
  says_why(fails_in_time("settle", [&] { l->settle("o-1", "worker-a", nullptr, s, kNow + 5); }));
  says_why(fails_in_time("open", [&] { open(); }));
  // A group commit: every entry gets the error, at once.
  LedgerBatch b;
  for (int i = 0; i < 5; ++i) {
    LedgerBatch::Create c;
    c.owner = "w";
    c.proposed = proposal("batch-" + std::to_string(i));
    c.now = kNow;
    c.lease_until = kNow + kLease;
    b.creates.push_back(c);
  }
  b.records.push_back({"worker-a", "o-1", attempt(1), false, {}});
  const auto t0 = std::chrono::steady_clock::now();
  l->apply(b);
  const int64_t ms = elapsed_ms(t0);
  note(ms);
  EXPECT_LE(ms, kBoundMs);
  std::printf("  %-18s failed after %4lld ms\n", "apply (6 entries)", static_cast<long long>(ms));
  for (const auto& c : b.creates) says_why(c.error);
  says_why(b.records[0].error);

  // The server comes back: the same ledger works again, with nothing of
  // the failed writes in it.
  proxy_->stall(false);
  EXPECT_EQ(l->get("o-1")->lease_owner, "worker-a");
  EXPECT_FALSE(l->get("o-2").has_value());
  EXPECT_FALSE(l->get("batch-0").has_value());
  EXPECT_TRUE(l->attempts("o-1").empty());
}

TEST_F(PostgresLedgerTimeouts, ThreadsWaitingForThePoolGiveUpWithinTheBoundToo) {
  auto l = open();
  ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  proxy_->stall(true);
  // More threads than the pool has connections: the last ones wait for a
  // connection that never comes back, and stop waiting in time.
  std::vector<std::thread> threads;
  std::mutex mu;
  std::vector<int64_t> took;
  std::vector<std::string> errors;
  for (int i = 0; i < 12; ++i) {
    threads.emplace_back([&] {
      const auto t0 = std::chrono::steady_clock::now();
      std::string m;
      try {
        l->get("o-1");
      } catch (const LedgerError& e) {
        m = e.what();
      }
      const int64_t ms = elapsed_ms(t0);
      note(ms);
      std::lock_guard<std::mutex> lock(mu);
      took.push_back(ms);
      errors.push_back(m);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < took.size(); ++i) {
    EXPECT_LE(took[i], kBoundMs) << errors[i];
    EXPECT_FALSE(errors[i].empty()) << "a read worked against a stalled server";
  }
  const int64_t longest = *std::max_element(took.begin(), took.end());
  std::printf("  12 threads on a pool of 8: the longest call took %lld ms\n", static_cast<long long>(longest));
  proxy_->stall(false);
  EXPECT_EQ(l->get("o-1")->lease_owner, "worker-a");
}

TEST_F(PostgresLedgerTimeouts, ACommitThatTookEffectButGotNoAnswerIsReportedDone) {
  auto l = open();
  auto timed = [&](const char* what, auto&& call) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = call();
    const int64_t ms = elapsed_ms(t0);
    note(ms);
    EXPECT_GE(ms, kTimeoutMs - 50) << what << ": the COMMIT's answer was expected to be lost";
    EXPECT_LE(ms, kBoundMs) << what;
    std::printf("  %-18s answered after %4lld ms (COMMIT committed, answer lost)\n", what, static_cast<long long>(ms));
    return r;
  };
  proxy_->next_commit(StallProxy::Commit::drop_reply);
  const auto out = timed("create_and_claim", [&] { return l->create_and_claim(proposal("o-1"), "w-a", kNow, kNow + kLease); });
  EXPECT_TRUE(out.created) << "the write took effect: its own answer stands";
  EXPECT_EQ(out.row.lease_owner, "w-a");
  EXPECT_EQ(out.row.lease_until, kNow + kLease);

  proxy_->next_commit(StallProxy::Commit::drop_reply);
  EXPECT_TRUE(timed("record_attempt", [&] { return l->record_attempt("o-1", "w-a", attempt(1)); }));
  EXPECT_EQ(l->attempts("o-1").size(), 1u);

  Settlement s;
  s.state = PaymentState::unknown;
  s.delivery = "maybe_processed";
  proxy_->next_commit(StallProxy::Commit::drop_reply);
  EXPECT_TRUE(timed("settle", [&] { return l->settle("o-1", "w-a", nullptr, s, kNow + 50); }));
  EXPECT_EQ(l->get("o-1")->state, PaymentState::unknown);

  proxy_->next_commit(StallProxy::Commit::drop_reply);
  EXPECT_TRUE(timed("claim", [&] { return l->claim("o-1", "w-b", kNow + 60, kNow + 60 + kLease); }));
  EXPECT_EQ(l->get("o-1")->lease_owner, "w-b");

  LedgerBatch b;
  for (int i = 0; i < 3; ++i) {
    LedgerBatch::Create c;
    c.owner = "w-c";
    c.proposed = proposal("batch-" + std::to_string(i));
    c.now = kNow;
    c.lease_until = kNow + kLease;
    b.creates.push_back(c);
  }
  b.records.push_back({"w-b", "o-1", attempt(2), false, {}});
  proxy_->next_commit(StallProxy::Commit::drop_reply);
  timed("apply", [&] {
    l->apply(b);
    return true;
  });
  for (const auto& c : b.creates) {
    EXPECT_EQ(c.error, "");
    EXPECT_TRUE(c.out.created) << c.proposed.order_id;
  }
  EXPECT_TRUE(b.records[0].ok);
  EXPECT_EQ(l->attempts("o-1").size(), 2u);
}

TEST_F(PostgresLedgerTimeouts, ACommitThatNeverArrivedIsMadeAgainWithinTheBound) {
  auto l = open();
  proxy_->next_commit(StallProxy::Commit::hold);
  const auto t0 = std::chrono::steady_clock::now();
  const auto out = l->create_and_claim(proposal("o-1"), "w-a", kNow, kNow + kLease);
  const int64_t ms = elapsed_ms(t0);
  note(ms);
  EXPECT_TRUE(out.created) << "rolled back, then made again";
  EXPECT_LE(ms, kBoundMs);
  std::printf("  create_and_claim answered after %lld ms (COMMIT lost, rolled back, made again)\n",
              static_cast<long long>(ms));
  EXPECT_EQ(l->get("o-1")->lease_owner, "w-a");
  EXPECT_EQ(store_->query_raw("SELECT count(*) FROM payments"), "1");
}

TEST_F(PostgresLedgerTimeouts, ACommitStillInProgressOnTheServerIsReportedUnknownWithinTheBound) {
  auto l = open();
  // The server keeps the transaction open (as it does while it waits for
  // a synchronous standby that is gone): its outcome cannot be known in
  // time, and the call says so instead of waiting.
  proxy_->next_commit(StallProxy::Commit::hold_open);
  const std::string m = fails_in_time("create_and_claim", [&] {
    l->create_and_claim(proposal("o-1"), "w-a", kNow, kNow + kLease);
  });
  EXPECT_NE(m.find("COMMIT got no answer within 400 ms"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown"), std::string::npos) << m;
  // The server gives up on the idle transaction itself
  // (idle_in_transaction_session_timeout, set per session): nothing stays.
  for (int i = 0; i < 100 && store_->query_raw("SELECT count(*) FROM payments") != "0"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(l->get("o-1").has_value());
  EXPECT_TRUE(l->create_and_claim(proposal("o-1"), "w-a", kNow, kNow + kLease).created);
}

// ---- a real server, paused, and then waiting for a standby that is gone ------

// The postmaster of the cluster in `dir` and its children (pids read from
// postmaster.pid and /proc): the processes this test started.
std::vector<pid_t> cluster_pids(const std::string& dir) {
  std::vector<pid_t> out;
  std::ifstream f(dir + "/data/postmaster.pid");
  pid_t postmaster = 0;
  f >> postmaster;
  if (postmaster <= 0) return out;
  out.push_back(postmaster);
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream st(e.path() / "stat");
    std::string line;
    if (!std::getline(st, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == postmaster) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

TEST(PostgresLedgerTimeoutsOnARealServer, APausedServerAndAMissingSynchronousStandbyBoundEveryCall) {
  LEDGER_REQUIRE_PG();  // PostgreSQL testing is on: its binaries are installed
  PrivateCluster cluster;
  const std::string url = cluster.start();
  ASSERT_FALSE(url.empty()) << "pg_cluster.sh start failed (see its output above)";
  auto l = open_postgres_ledger(url, "", kTimeoutMs);
  ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "w-a", kNow, kNow + kLease).created);

  // SIGSTOP: the server keeps its sockets and answers nothing (the fault
  // that left submits stuck for 40 s).
  const std::vector<pid_t> pids = cluster_pids(cluster.dir());
  ASSERT_FALSE(pids.empty());
  for (pid_t p : pids) kill(p, SIGSTOP);
  auto timed = [&](const char* what, const std::function<void()>& call) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string m = "(it worked)";
    try {
      call();
    } catch (const LedgerError& e) {
      m = e.what();
    }
    const int64_t ms = elapsed_ms(t0);
    std::printf("  %-28s %4lld ms: %s\n", what, static_cast<long long>(ms), m.c_str());
    EXPECT_LE(ms, kBoundMs) << what << ": " << m;
    return m;
  };
  EXPECT_NE(timed("paused: get", [&] { l->get("o-1"); }).find("no answer within"), std::string::npos);
  EXPECT_NE(timed("paused: create_and_claim", [&] { l->create_and_claim(proposal("o-2"), "w", kNow, kNow + kLease); })
                .find("no answer within"),
            std::string::npos);
  EXPECT_NE(timed("paused: open", [&] { open_postgres_ledger(url, "", kTimeoutMs); }).find("no answer within"),
            std::string::npos);
  for (pid_t p : pids) kill(p, SIGCONT);
  EXPECT_EQ(l->get("o-1")->lease_owner, "w-a");

  // A synchronous standby that does not exist: every COMMIT waits for it,
  // and no server-side timeout ends that wait (statement_timeout is off
  // while a transaction commits). The check on another connection finds the
  // transaction still in progress, and the call says the outcome is unknown
  // (were the wait cancelled, it would find it committed and succeed).
  // Either way, within the bound.
  PgSession admin(url);
  admin.exec("ALTER SYSTEM SET synchronous_standby_names = 'payretry_ghost_standby'");
  admin.exec("SELECT pg_reload_conf()");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::string m = timed("no standby: create_and_claim", [&] {
    EXPECT_TRUE(l->create_and_claim(proposal("o-3"), "w-a", kNow, kNow + kLease).created);
  });
  if (m != "(it worked)") {
    EXPECT_NE(m.find("unknown"), std::string::npos) << m;
  }
  timed("no standby: settle", [&] {
    Settlement s;
    s.state = PaymentState::failed;
    l->settle("o-1", "w-a", nullptr, s, kNow + 10);
  });
  admin.exec("ALTER SYSTEM RESET synchronous_standby_names");
  admin.exec("SELECT pg_reload_conf()");
}

}  // namespace
