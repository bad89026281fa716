// The concurrent engine (pay_submit_batch, pay_submit_async) against the
// simulator: many payments in flight on one engine thread, with the same
// rules as pay_submit, and ledger writes shared between payments.
#include <cJSON.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <unistd.h>
#include <set>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "sim_fixture.hpp"

namespace payretry_test {
namespace {

// The inputs of a batch and the storage they point into.
struct Batch {
  std::vector<std::string> orders, bodies;
  std::vector<pay_batch_item> items;

  void add(const std::string& order, const std::string& body) {
    orders.push_back(order);
    bodies.push_back(body);
  }
  pay_batch_item* prepare() {
    items.assign(orders.size(), pay_batch_item{});
    for (size_t i = 0; i < orders.size(); ++i) {
      items[i].order_id = orders[i].c_str();
      items[i].body = bodies[i].data();
      items[i].body_len = bodies[i].size();
    }
    return items.data();
  }
  ~Batch() {
    for (auto& it : items) pay_result_free(it.result);
  }
};

long stat(pay_client* c, const char* name) {
  pay_buf b{};
  EXPECT_EQ(pay_client_stats(&b, c), PAY_OK);
  cJSON* j = cJSON_Parse(b.ptr);
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(j, name);
  const long n = cJSON_IsNumber(v) ? static_cast<long>(v->valuedouble) : -1;
  cJSON_Delete(j);
  pay_buf_dispose(&b);
  return n;
}

std::string ledger_json(pay_client* c, const std::string& order) {
  pay_buf b{};
  EXPECT_EQ(pay_ledger_get(&b, c, order.c_str()), PAY_OK) << pay_error_last()->message;
  std::string s = b.ptr ? std::string(b.ptr, b.size) : "";
  pay_buf_dispose(&b);
  return s;
}

class Concurrent : public SimTest {
 protected:
  // Hundreds of payments at once on a loaded test machine (sanitizers, other
  // jobs): timeouts wide enough that no-fault tests see no retries.
  static constexpr const char* kCalm =
      R"("connect_timeout_ms":2000,"attempt_timeout_ms":5000,"deadline_ms":30000,"min_attempt_ms":50)";
  std::string sqlite_url() {
    char tmpl[] = "/tmp/payretry-concurrent-XXXXXX";
    dir_ = mkdtemp(tmpl);
    return "sqlite://" + dir_ + "/ledger.db";
  }
  void TearDown() override {
    SimTest::TearDown();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }
  std::string dir_;
};

TEST_F(Concurrent, batch_charges_every_order_once_and_sends_one_request_per_attempt) {
  auto c = client(config("stripe", kCalm, R"("ledger":")" + sqlite_url() + R"(")"));
  Batch b;
  constexpr int kPayments = 400;
  for (int i = 0; i < kPayments; ++i) b.add("batch-" + std::to_string(i), body_for("batch-" + std::to_string(i), 100 + i));
  pay_batch_item* items = b.prepare();
  ASSERT_EQ(pay_submit_batch(items, kPayments, c.get(), nullptr), PAY_OK) << pay_error_last()->message;
  long attempts = 0;
  for (int i = 0; i < kPayments; ++i) {
    ASSERT_EQ(items[i].rc, PAY_OK) << items[i].message;
    ASSERT_NE(items[i].result, nullptr);
    EXPECT_EQ(pay_result_outcome(items[i].result), PAY_OUTCOME_SUCCEEDED);
    EXPECT_EQ(sim_->charges_for(b.orders[i]), 1);
    attempts += pay_result_attempts(items[i].result);
  }
  EXPECT_EQ(sim_->duplicate_orders(), 0);
  // No hidden re-sends: the provider saw exactly the attempts we report.
  EXPECT_EQ(sim_->requests(), attempts);
  // The ledger holds every payment as SUCCEEDED.
  EXPECT_NE(ledger_json(c.get(), "batch-7").find("\"SUCCEEDED\""), std::string::npos);
}

TEST_F(Concurrent, batch_rows_share_commits_group_commit) {
  // One engine: with several, each engine's share of the window commits together.
  auto c = client(config("stripe", kCalm, R"("ledger":")" + sqlite_url() + R"(","engine_threads":1)"));
  Batch b;
  constexpr int kPayments = 300;
  for (int i = 0; i < kPayments; ++i) b.add("gc-" + std::to_string(i), body_for("gc-" + std::to_string(i)));
  ASSERT_EQ(pay_submit_batch(b.prepare(), kPayments, c.get(), nullptr), PAY_OK);
  for (int i = 0; i < kPayments; ++i) ASSERT_EQ(pay_result_outcome(b.items[i].result), PAY_OUTCOME_SUCCEEDED);
  const long batches = stat(c.get(), "ledger_batches"), entries = stat(c.get(), "ledger_batch_entries");
  std::printf("group commit: %ld ledger writes in %ld batches (largest %ld)\n", entries, batches,
              stat(c.get(), "ledger_batch_max"));
  // One create and one settle per payment (and a record per retry, if any)...
  EXPECT_GE(entries, 2L * kPayments);
  // ...and the first window's rows were committed together, before any send.
  EXPECT_GE(stat(c.get(), "ledger_batch_max"), kPayments);
  EXPECT_LT(batches, entries);
}

// The engine writes its log lines once per loop turn; an answer must never
// reach its caller before its own lines are in the file.
struct LogChecker {
  std::string log_path;
  std::mutex mu;
  std::condition_variable cv;
  int answered = 0, outcome_line_missing = 0, attempt_line_missing = 0;
  static void done(int rc, pay_result* r, const char*, void* self) {
    auto* t = static_cast<LogChecker*>(self);
    const std::string order = r ? pay_result_order_id(r) : "";
    pay_result_free(r);
    std::ifstream in(t->log_path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string id = "\"order_id\":\"" + order + "\"";
    bool outcome = false, attempt = false;
    for (size_t at = text.find(id); at != std::string::npos; at = text.find(id, at + 1)) {
      const size_t line_start = text.rfind('\n', at) + 1;  // npos + 1 == 0 for the first line
      const std::string line = text.substr(line_start, text.find('\n', at) - line_start);
      outcome = outcome || line.find("\"event\":\"outcome\"") != std::string::npos;
      attempt = attempt || line.find("\"event\":\"attempt\"") != std::string::npos;
    }
    std::lock_guard<std::mutex> lock(t->mu);
    t->outcome_line_missing += (rc != PAY_OK || !outcome);
    t->attempt_line_missing += (rc != PAY_OK || !attempt);
    ++t->answered;
    t->cv.notify_all();
  }
};

TEST_F(Concurrent, an_answer_reaches_its_caller_only_after_its_log_lines_are_in_the_file) {
  char tmpl[] = "/tmp/payretry-log-XXXXXX";
  dir_ = mkdtemp(tmpl);
  LogChecker t;
  t.log_path = dir_ + "/attempts.log";
  auto c = client(config("stripe", kCalm, R"("log":{"path":")" + t.log_path + R"("})"));
  constexpr int kPayments = 200;
  std::vector<std::string> bodies;
  for (int i = 0; i < kPayments; ++i) {
    const std::string order = "logged-" + std::to_string(i);
    bodies.push_back(body_for(order));
    ASSERT_EQ(pay_submit_async(c.get(), order.c_str(), bodies.back().data(), bodies.back().size(), nullptr,
                               &LogChecker::done, &t),
              PAY_OK);
  }
  std::unique_lock<std::mutex> lock(t.mu);
  ASSERT_TRUE(t.cv.wait_for(lock, std::chrono::seconds(60), [&] { return t.answered == kPayments; }));
  EXPECT_EQ(t.outcome_line_missing, 0);
  EXPECT_EQ(t.attempt_line_missing, 0);
}

TEST_F(Concurrent, a_bounded_pool_of_kept_alive_connections_carries_the_whole_batch) {
  auto c = client(config("stripe", kCalm, R"("max_connections":8)"));
  Batch b;
  constexpr int kPayments = 300;
  for (int i = 0; i < kPayments; ++i) b.add("pool-" + std::to_string(i), body_for("pool-" + std::to_string(i)));
  ASSERT_EQ(pay_submit_batch(b.prepare(), kPayments, c.get(), nullptr), PAY_OK);
  for (int i = 0; i < kPayments; ++i) ASSERT_EQ(pay_result_outcome(b.items[i].result), PAY_OUTCOME_SUCCEEDED);
  const long opened = stat(c.get(), "connections_opened");
  std::printf("%d payments over %ld connections\n", kPayments, opened);
  // No handshake per payment: at most the pool's size was ever opened; and
  // more than one, or the payments waited in line behind each other.
  EXPECT_GT(opened, 1);
  EXPECT_LE(opened, 8);
}

TEST_F(Concurrent, batch_retries_with_timers_the_same_key_and_bytes_and_records_each_attempt) {
  auto c = client(config("stripe", "", R"("ledger":")" + sqlite_url() + R"(")"));
  sim_->script("retry-1", {"503", "lost_response"});
  sim_->script("retry-2", {"reset_before", "429"});
  Batch b;
  b.add("retry-1", body_for("retry-1"));
  b.add("retry-2", body_for("retry-2"));
  b.add("plain", body_for("plain"));
  pay_batch_item* items = b.prepare();
  ASSERT_EQ(pay_submit_batch(items, 3, c.get(), nullptr), PAY_OK);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(items[i].rc, PAY_OK) << items[i].message;
    EXPECT_EQ(pay_result_outcome(items[i].result), PAY_OUTCOME_SUCCEEDED) << b.orders[i];
    EXPECT_EQ(sim_->charges_for(b.orders[i]), 1);
  }
  EXPECT_EQ(pay_result_attempts(items[0].result), 3);
  EXPECT_EQ(pay_result_attempts(items[1].result), 3);
  // Every attempt of an order carried the same key and the same bytes.
  std::map<std::string, std::vector<SentAttempt>> by_order;
  {
    std::lock_guard<std::mutex> lock(rec_.mu);
    for (const SentAttempt& s : rec_.sent) {
      for (const auto& o : b.orders)
        // A JSON body names the order "o"; Stripe's form body =o.
        if (s.body.find("\"" + o + "\"") != std::string::npos || s.body.find("=" + o + "&") != std::string::npos ||
            s.body.size() >= o.size() + 1 && s.body.compare(s.body.size() - o.size() - 1, std::string::npos, "=" + o) == 0)
          by_order[o].push_back(s);
    }
  }
  ASSERT_EQ(by_order["retry-1"].size(), 3u);
  for (const auto& [order, sent] : by_order)
    for (const SentAttempt& s : sent) {
      EXPECT_EQ(s.key, sent.front().key) << order;
      EXPECT_EQ(s.body, sent.front().body) << order;
    }
  // The ledger recorded the retried attempts before their backoffs.
  const std::string row = ledger_json(c.get(), "retry-1");
  EXPECT_NE(row.find("\"attempts\":3"), std::string::npos) << row;
}

TEST_F(Concurrent, batch_item_errors_stay_with_their_item) {
  auto c = client(config("stripe", "", R"("max_body_bytes":200)"));
  Batch b;
  b.add("ok-1", body_for("ok-1"));
  b.add("too-big", R"({"order_id":"too-big","pad":")" + std::string(300, 'x') + "\"}");
  b.add("bad-key", body_for("bad-key"));
  b.add("ok-2", body_for("ok-2"));
  pay_batch_item* items = b.prepare();
  items[2].idempotency_key = "key\r\nX-Injected: 1";
  items[3].body_len = b.bodies[3].size();
  pay_batch_item extra{};  // a NULL order id in its own batch
  extra.body = "{}";
  extra.body_len = 2;
  ASSERT_EQ(pay_submit_batch(items, 4, c.get(), nullptr), PAY_OK);
  EXPECT_EQ(items[0].rc, PAY_OK);
  EXPECT_EQ(items[1].rc, PAY_ETOOBIG);
  EXPECT_EQ(items[1].result, nullptr);
  EXPECT_NE(std::string(items[1].message).find("max_body_bytes"), std::string::npos) << items[1].message;
  EXPECT_EQ(items[2].rc, PAY_EKEY);
  EXPECT_EQ(items[3].rc, PAY_OK);
  EXPECT_EQ(sim_->charges_for("too-big"), 0);
  EXPECT_EQ(sim_->charges_for("bad-key"), 0);
  ASSERT_EQ(pay_submit_batch(&extra, 1, c.get(), nullptr), PAY_OK);
  EXPECT_EQ(extra.rc, PAY_EINVALID);
  EXPECT_NE(std::string(extra.message).find("order_id"), std::string::npos);
  // Whole-call errors touch no item.
  EXPECT_EQ(pay_submit_batch(nullptr, 1, c.get(), nullptr), PAY_EINVALID);
  EXPECT_EQ(pay_submit_batch(items, 1, nullptr, nullptr), PAY_EINVALID);
  pay_batch_options bad = PAY_BATCH_OPTIONS_INIT;
  bad.version = 99;
  EXPECT_EQ(pay_submit_batch(items, 1, c.get(), &bad), PAY_EVERSION);
  EXPECT_EQ(pay_submit_batch(nullptr, 0, c.get(), nullptr), PAY_OK);
}

TEST_F(Concurrent, the_same_order_twice_in_a_batch_is_sent_once) {
  auto c = client(config());
  sim_->script("twice", {"slow"});  // the first copy is still in flight when the second is decided
  Batch b;
  b.add("twice", body_for("twice"));
  b.add("twice", body_for("twice"));
  pay_batch_item* items = b.prepare();
  ASSERT_EQ(pay_submit_batch(items, 2, c.get(), nullptr), PAY_OK);
  ASSERT_EQ(items[0].rc, PAY_OK) << items[0].message;
  ASSERT_EQ(items[1].rc, PAY_OK) << items[1].message;
  std::multiset<int> outcomes{pay_result_outcome(items[0].result), pay_result_outcome(items[1].result)};
  EXPECT_EQ(outcomes.count(PAY_OUTCOME_IN_PROGRESS), 1u);
  EXPECT_LE(sim_->charges_for("twice"), 1);
}

TEST_F(Concurrent, max_in_flight_bounds_the_window_and_still_answers_every_item) {
  auto c = client(config("stripe", kCalm));
  Batch b;
  for (int i = 0; i < 50; ++i) b.add("win-" + std::to_string(i), body_for("win-" + std::to_string(i)));
  pay_batch_options o = PAY_BATCH_OPTIONS_INIT;
  o.max_in_flight = 4;
  ASSERT_EQ(pay_submit_batch(b.prepare(), 50, c.get(), &o), PAY_OK);
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(b.items[i].rc, PAY_OK);
    EXPECT_EQ(pay_result_outcome(b.items[i].result), PAY_OUTCOME_SUCCEEDED);
  }
  EXPECT_LE(stat(c.get(), "ledger_batch_max"), 2L * 4);
}

// Collects pay_submit_async answers.
struct Answers {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, int> outcome;  // order -> outcome, or the negative rc
  std::vector<std::string> messages;
  static void done(int rc, pay_result* r, const char* message, void* self) {
    auto* a = static_cast<Answers*>(self);
    std::lock_guard<std::mutex> lock(a->mu);
    if (rc == PAY_OK) {
      a->outcome[pay_result_order_id(r)] = pay_result_outcome(r);
      pay_result_free(r);
    } else {
      a->outcome["error-" + std::to_string(a->messages.size())] = rc;
      a->messages.emplace_back(message);
    }
    a->cv.notify_all();
  }
  void wait_for(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return outcome.size() >= n; });
  }
};

TEST_F(Concurrent, async_reports_every_payment_once_through_its_callback) {
  auto c = client(config("stripe", kCalm));
  Answers a;
  constexpr int kPayments = 200;
  for (int i = 0; i < kPayments; ++i) {
    const std::string order = "async-" + std::to_string(i);
    const std::string body = body_for(order);
    ASSERT_EQ(pay_submit_async(c.get(), order.c_str(), body.data(), body.size(), nullptr, &Answers::done, &a), PAY_OK);
  }  // bodies are gone: the engine copied them
  a.wait_for(kPayments);
  for (int i = 0; i < kPayments; ++i) EXPECT_EQ(a.outcome["async-" + std::to_string(i)], PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(sim_->total_charges(), kPayments);
  EXPECT_EQ(sim_->duplicate_orders(), 0);
}

// An SQLite write lock held by another connection, as another process would.
struct WriteLock {
  sqlite3* db = nullptr;
  explicit WriteLock(const std::string& path) {
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  void release() {
    if (db) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      sqlite3_close(db);
    }
    db = nullptr;
  }
  ~WriteLock() { release(); }
};

// The answer of each payment as JSON (its attempts with their timings).
struct JsonAnswers {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::string> json;
  static void done(int rc, pay_result* r, const char* message, void* self) {
    auto* a = static_cast<JsonAnswers*>(self);
    std::lock_guard<std::mutex> lock(a->mu);
    a->json[rc == PAY_OK ? pay_result_order_id(r) : "error"] = rc == PAY_OK ? pay_result_json(r) : message;
    pay_result_free(r);
    a->cv.notify_all();
  }
  void wait_for(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return json.size() >= n; });
  }
};

// The engine thread reads answers while a group commit waits on the
// database: payment A's answer comes 300 ms after it was sent, while payment
// B's create waits 3 s for a write lock another connection holds. Were the
// commit applied on the engine thread, A's answer would be read only once
// the lock is gone, and its attempt would last about 3 s.
TEST_F(Concurrent, answers_are_read_while_a_group_commit_waits_for_the_database) {
  const std::string url = sqlite_url();
  auto c = client(config("stripe", kCalm, R"("ledger":{"url":")" + url + R"(","timeout_ms":20000})"));
  sim_->set_slow_ms(300);
  sim_->script("held-a", {"slow"});
  JsonAnswers a;
  const std::string body_a = body_for("held-a"), body_b = body_for("held-b");
  ASSERT_EQ(pay_submit_async(c.get(), "held-a", body_a.data(), body_a.size(), nullptr, &JsonAnswers::done, &a), PAY_OK);
  for (int i = 0; i < 1000 && sim_->requests() < 1; ++i) usleep(5000);
  ASSERT_EQ(sim_->requests(), 1) << "payment A's request reached the simulator";
  WriteLock lock(dir_ + "/ledger.db");
  ASSERT_EQ(pay_submit_async(c.get(), "held-b", body_b.data(), body_b.size(), nullptr, &JsonAnswers::done, &a), PAY_OK);
  usleep(3000 * 1000);
  lock.release();
  a.wait_for(2);
  cJSON* j = cJSON_Parse(a.json["held-a"].c_str());
  ASSERT_NE(j, nullptr) << a.json["held-a"];
  const cJSON* first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "attempts"), 0);
  const cJSON* elapsed = cJSON_GetObjectItemCaseSensitive(first, "elapsed_ms");
  ASSERT_TRUE(cJSON_IsNumber(elapsed)) << a.json["held-a"];
  EXPECT_LT(elapsed->valuedouble, 2000) << "A's answer waited for B's commit: " << a.json["held-a"];
  EXPECT_NE(a.json["held-a"].find(R"("outcome":"SUCCEEDED")"), std::string::npos) << a.json["held-a"];
  EXPECT_NE(a.json["held-b"].find(R"("outcome":"SUCCEEDED")"), std::string::npos) << a.json["held-b"];
  cJSON_Delete(j);
  EXPECT_EQ(sim_->total_charges(), 2);
}

// Several engine threads: the payments are spread over all of them, one
// order always on the same thread, every order charged once, and each
// engine's share of a batch's first window commits together.
struct ThreadAnswers {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::set<std::thread::id>> threads;  // order -> threads that answered it
  size_t answers = 0;
  static void done(int rc, pay_result* r, const char*, void* self) {
    auto* a = static_cast<ThreadAnswers*>(self);
    std::lock_guard<std::mutex> lock(a->mu);
    if (rc == PAY_OK) a->threads[pay_result_order_id(r)].insert(std::this_thread::get_id());
    pay_result_free(r);
    ++a->answers;
    a->cv.notify_all();
  }
  void wait_for(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return answers >= n; });
  }
};

TEST_F(Concurrent, engine_threads_share_the_payments_and_keep_each_order_on_one_thread) {
  auto c = client(config("stripe", kCalm, R"("ledger":")" + sqlite_url() + R"(","engine_threads":4)"));
  ThreadAnswers a;
  constexpr int kOrders = 200;
  for (int round = 0; round < 2; ++round)  // the second round is answered from the ledger
    for (int i = 0; i < kOrders; ++i) {
      const std::string order = "et-" + std::to_string(i), body = body_for(order);
      ASSERT_EQ(pay_submit_async(c.get(), order.c_str(), body.data(), body.size(), nullptr, &ThreadAnswers::done, &a),
                PAY_OK);
    }
  a.wait_for(2 * kOrders);
  std::set<std::thread::id> all;
  for (const auto& [order, ids] : a.threads) {
    EXPECT_EQ(ids.size(), 1u) << order << " was answered on more than one thread";
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(a.threads.size(), static_cast<size_t>(kOrders));
  EXPECT_EQ(all.size(), 4u) << "every engine thread took payments";
  EXPECT_EQ(sim_->total_charges(), kOrders);
  EXPECT_EQ(sim_->duplicate_orders(), 0);

  // A batch on a fresh client: each engine's share of the first window is
  // handed over at once and commits together, so the largest commit holds
  // at least a quarter of the window.
  auto c2 = client(config("stripe", kCalm, R"("ledger":"memory:","engine_threads":4)"));
  Batch b;
  constexpr int kBatch = 200;
  for (int i = 0; i < kBatch; ++i) b.add("etb-" + std::to_string(i), body_for("etb-" + std::to_string(i)));
  ASSERT_EQ(pay_submit_batch(b.prepare(), kBatch, c2.get(), nullptr), PAY_OK);
  for (int i = 0; i < kBatch; ++i) ASSERT_EQ(pay_result_outcome(b.items[i].result), PAY_OUTCOME_SUCCEEDED);
  EXPECT_GE(stat(c2.get(), "ledger_batch_max"), kBatch / 4);
  EXPECT_EQ(sim_->total_charges(), kOrders + kBatch);
}

// engine_threads 0 is one engine per core, and at least one per 1,000
// connections: a libcurl multi handle costs more per transfer the more it holds.
TEST_F(Concurrent, the_default_engine_count_grows_with_max_connections) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  for (const auto& [max_connections, expected] :
       std::vector<std::pair<int, size_t>>{{256, cores}, {5000, std::max<size_t>(cores, 5)}}) {
    auto c = client(config("stripe", kCalm, R"("ledger":"memory:","max_connections":)" + std::to_string(max_connections)));
    ThreadAnswers a;
    constexpr int kOrders = 300;
    for (int i = 0; i < kOrders; ++i) {
      const std::string order = "dt-" + std::to_string(max_connections) + "-" + std::to_string(i), body = body_for(order);
      ASSERT_EQ(pay_submit_async(c.get(), order.c_str(), body.data(), body.size(), nullptr, &ThreadAnswers::done, &a),
                PAY_OK);
    }
    a.wait_for(kOrders);
    std::set<std::thread::id> all;
    for (const auto& [order, ids] : a.threads) all.insert(ids.begin(), ids.end());
    EXPECT_EQ(all.size(), expected) << "engines answering with max_connections " << max_connections;
  }
  EXPECT_EQ(sim_->duplicate_orders(), 0);
}

// A chain of payments, each started from the done callback of the one
// before it: records which thread answered each order.
struct ThreadChain {
  pay_client* client = nullptr;
  std::vector<std::string> orders, bodies;
  std::atomic<size_t> next{1};
  ThreadAnswers answers;
  static void done(int rc, pay_result* r, const char* m, void* self) {
    auto* c = static_cast<ThreadChain*>(self);
    const size_t i = c->next.fetch_add(1);
    if (i < c->orders.size())
      EXPECT_EQ(pay_submit_async(c->client, c->orders[i].c_str(), c->bodies[i].data(), c->bodies[i].size(), nullptr,
                                 &ThreadChain::done, c),
                PAY_OK);
    ThreadAnswers::done(rc, r, m, &c->answers);
  }
};

// The next payment of a chain stays on the engine that ran the callback
// (no hand-over to another thread) while that engine is not busier than the
// one its order id picks: here every engine is idle, so the whole chain runs
// on the thread of its first payment, whatever its order ids hash to.
TEST_F(Concurrent, a_payment_started_from_a_done_callback_stays_on_the_callbacks_engine) {
  auto c = client(config("stripe", kCalm, R"("ledger":"memory:","engine_threads":4)"));
  ThreadChain chain;
  chain.client = c.get();
  for (int i = 0; i < 40; ++i) {
    chain.orders.push_back("chain-" + std::to_string(i));
    chain.bodies.push_back(body_for(chain.orders.back()));
  }
  ASSERT_EQ(pay_submit_async(c.get(), chain.orders[0].c_str(), chain.bodies[0].data(), chain.bodies[0].size(), nullptr,
                             &ThreadChain::done, &chain),
            PAY_OK);
  chain.answers.wait_for(chain.orders.size());
  std::set<std::thread::id> all;
  for (const auto& [order, ids] : chain.answers.threads) all.insert(ids.begin(), ids.end());
  EXPECT_EQ(chain.answers.threads.size(), 40u);
  EXPECT_EQ(all.size(), 1u) << "a chain's payments moved between engines";
  EXPECT_EQ(sim_->total_charges(), 40);
  EXPECT_EQ(sim_->duplicate_orders(), 0);
}

TEST_F(Concurrent, async_failed_call_comes_through_the_callback_and_null_arguments_are_refused) {
  auto c = client(config("stripe", "", R"("max_body_bytes":100)"));
  Answers a;
  const std::string big = R"({"order_id":"big","pad":")" + std::string(200, 'y') + "\"}";
  ASSERT_EQ(pay_submit_async(c.get(), "big", big.data(), big.size(), nullptr, &Answers::done, &a), PAY_OK);
  a.wait_for(1);
  EXPECT_EQ(a.outcome["error-0"], PAY_ETOOBIG);
  EXPECT_NE(a.messages[0].find("max_body_bytes"), std::string::npos);
  EXPECT_EQ(pay_submit_async(nullptr, "o", "{}", 2, nullptr, &Answers::done, &a), PAY_EINVALID);
  EXPECT_EQ(pay_submit_async(c.get(), nullptr, "{}", 2, nullptr, &Answers::done, &a), PAY_EINVALID);
  EXPECT_EQ(pay_submit_async(c.get(), "o", nullptr, 2, nullptr, &Answers::done, &a), PAY_EINVALID);
  EXPECT_EQ(pay_submit_async(c.get(), "o", "{}", 2, nullptr, nullptr, &a), PAY_EINVALID);
  EXPECT_EQ(sim_->requests(), 0);
}

TEST_F(Concurrent, client_free_waits_for_every_async_payment_to_be_reported) {
  auto c = client(config());
  for (int i = 0; i < 20; ++i) sim_->script("held-" + std::to_string(i), {"slow"});
  Answers a;
  for (int i = 0; i < 40; ++i) {
    const std::string order = "held-" + std::to_string(i);
    const std::string body = body_for(order);
    ASSERT_EQ(pay_submit_async(c.get(), order.c_str(), body.data(), body.size(), nullptr, &Answers::done, &a), PAY_OK);
  }
  c.reset();  // pay_client_free
  std::lock_guard<std::mutex> lock(a.mu);
  EXPECT_EQ(a.outcome.size(), 40u);
  for (int i = 20; i < 40; ++i) EXPECT_EQ(a.outcome["held-" + std::to_string(i)], PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(sim_->duplicate_orders(), 0);
}

TEST_F(Concurrent, a_batch_resumes_an_unknown_order_with_its_first_key) {
  const std::string url = sqlite_url();
  std::string first_key;
  {
    auto c = client(config("stripe", R"("max_attempts":1)", R"("ledger":")" + url + R"(")"));
    sim_->script("resume-me", {"lost_response"});
    auto r = submit(c.get(), "resume-me");
    ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
    first_key = pay_result_idempotency_key(r.get());
  }
  auto c = client(config("stripe", "", R"("ledger":")" + url + R"(")"));
  Batch b;
  b.add("resume-me", body_for("resume-me"));
  b.add("fresh", body_for("fresh"));
  pay_batch_item* items = b.prepare();
  ASSERT_EQ(pay_submit_batch(items, 2, c.get(), nullptr), PAY_OK);
  ASSERT_EQ(items[0].rc, PAY_OK) << items[0].message;
  EXPECT_EQ(pay_result_outcome(items[0].result), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(std::string(pay_result_idempotency_key(items[0].result)), first_key);
  EXPECT_EQ(sim_->charges_for("resume-me"), 1);
  // And an order submitted again with another body is refused, nothing sent.
  Batch other;
  other.add("fresh", body_for("fresh", 999));
  pay_batch_item* o = other.prepare();
  const long before = sim_->requests();
  ASSERT_EQ(pay_submit_batch(o, 1, c.get(), nullptr), PAY_OK);
  EXPECT_EQ(o[0].rc, PAY_EMISMATCH);
  EXPECT_EQ(sim_->requests(), before);
}

TEST_F(Concurrent, postgres_ledger_group_commits_and_charges_every_order_once) {
  const char* url = std::getenv("PAYRETRY_TEST_PG_URL");
  if (!url || !*url) {
    if (const char* req = std::getenv("PAYRETRY_REQUIRE_PG"); req && std::string(req) == "1")
      FAIL() << "PAYRETRY_REQUIRE_PG=1 but PAYRETRY_TEST_PG_URL is not set";
    GTEST_SKIP() << "PAYRETRY_TEST_PG_URL not set";
  }
  auto c = client(config("stripe", kCalm, std::string(R"("ledger":")") + url + R"(","engine_threads":1)"));
  sim_->script("pgc-" + std::to_string(getpid()) + "-3", {"503"});
  Batch b;
  constexpr int kPayments = 200;
  for (int i = 0; i < kPayments; ++i) {
    const std::string order = "pgc-" + std::to_string(getpid()) + "-" + std::to_string(i);
    b.add(order, body_for(order));
  }
  pay_batch_item* items = b.prepare();
  ASSERT_EQ(pay_submit_batch(items, kPayments, c.get(), nullptr), PAY_OK);
  for (int i = 0; i < kPayments; ++i) {
    ASSERT_EQ(items[i].rc, PAY_OK) << items[i].message;
    EXPECT_EQ(pay_result_outcome(items[i].result), PAY_OUTCOME_SUCCEEDED);
    EXPECT_EQ(sim_->charges_for(b.orders[i]), 1);
  }
  EXPECT_EQ(pay_result_attempts(items[3].result), 2);
  EXPECT_GE(stat(c.get(), "ledger_batch_max"), kPayments);
  EXPECT_NE(ledger_json(c.get(), b.orders[3]).find("\"attempts\":2"), std::string::npos);
}

TEST_F(Concurrent, a_started_payment_is_collected_by_polling_then_waiting_exactly_once) {
  auto c = client(config("stripe", R"("attempt_timeout_ms":3000,"deadline_ms":10000)"));
  sim_->script("polled", {"slow"});  // held by the provider for 600 ms, then answered
  const std::string body = body_for("polled");
  pay_pending* p = nullptr;
  ASSERT_EQ(pay_submit_start(&p, c.get(), "polled", body.data(), body.size(), nullptr), PAY_OK);
  pay_result* r = nullptr;
  EXPECT_EQ(pay_pending_wait(&r, p, 0), PAY_EAGAIN);  // still held by the provider
  EXPECT_EQ(r, nullptr);
  ASSERT_EQ(pay_pending_wait(&r, p, -1), PAY_OK) << pay_error_last()->message;
  ResultPtr owned(r);
  EXPECT_EQ(pay_result_outcome(r), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_pending_wait(&r, p, 0), PAY_EINVALID);  // collected already
  pay_pending_free(p);
  pay_pending_free(nullptr);

  // A failed call is collected as its code; a handle freed early loses nothing.
  pay_pending* bad = nullptr;
  ASSERT_EQ(pay_submit_start(&bad, c.get(), "", body.data(), body.size(), nullptr), PAY_OK);
  EXPECT_EQ(pay_pending_wait(&r, bad, -1), PAY_EINVALID);
  pay_pending_free(bad);
  pay_pending* dropped = nullptr;
  const std::string b2 = body_for("dropped");
  ASSERT_EQ(pay_submit_start(&dropped, c.get(), "dropped", b2.data(), b2.size(), nullptr), PAY_OK);
  pay_pending_free(dropped);
  c.reset();  // waits for "dropped" to finish
  EXPECT_EQ(sim_->charges_for("dropped"), 1);
  EXPECT_EQ(pay_submit_start(nullptr, nullptr, "o", "{}", 2, nullptr), PAY_EINVALID);
  EXPECT_EQ(pay_pending_wait(&r, nullptr, 0), PAY_EINVALID);
}

// What a done callback may do on the engine thread: start another payment and
// poll; what it may not: batch or wait, which would wait for its own thread.
struct Reentrant {
  pay_client* client = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  int batch_rc = 1, wait_rc = 1, poll_rc = 1, start_rc = 1;
  pay_pending* started = nullptr;
  bool done = false;
  static void first_done(int rc, pay_result* r, const char*, void* self) {
    auto* t = static_cast<Reentrant*>(self);
    pay_result_free(r);
    EXPECT_EQ(rc, PAY_OK);
    const std::string body = R"({"order_id":"reentrant-2","amount":100,"currency":"usd"})";
    pay_batch_item item{};
    item.order_id = "reentrant-batch";
    item.body = body.data();
    item.body_len = body.size();
    const int batch_rc = pay_submit_batch(&item, 1, t->client, nullptr);
    pay_pending* p = nullptr;
    const int start_rc = pay_submit_start(&p, t->client, "reentrant-2", body.data(), body.size(), nullptr);
    pay_result* out = nullptr;
    const int wait_rc = p ? pay_pending_wait(&out, p, 1000) : 1;
    const int poll_rc = p ? pay_pending_wait(&out, p, 0) : 1;
    std::lock_guard<std::mutex> lock(t->mu);
    t->batch_rc = batch_rc;
    t->start_rc = start_rc;
    t->wait_rc = wait_rc;
    t->poll_rc = poll_rc;
    t->started = p;
    t->done = true;
    t->cv.notify_all();
  }
};

TEST_F(Concurrent, a_done_callback_may_start_and_poll_but_never_wait_on_its_own_thread) {
  // One engine thread, so that the payment started in the callback is the
  // callback's own thread's: its poll must find no answer yet. (With two, it
  // may land on the other engine, which can answer it before the poll.)
  auto c = client(config("stripe", kCalm, R"("engine_threads":1)"));
  Reentrant t;
  t.client = c.get();
  const std::string body = body_for("reentrant-1");
  ASSERT_EQ(pay_submit_async(c.get(), "reentrant-1", body.data(), body.size(), nullptr, &Reentrant::first_done, &t),
            PAY_OK);
  {
    std::unique_lock<std::mutex> lock(t.mu);
    ASSERT_TRUE(t.cv.wait_for(lock, std::chrono::seconds(30), [&] { return t.done; })) << "the engine deadlocked";
  }
  EXPECT_EQ(t.batch_rc, PAY_EINVALID);
  EXPECT_EQ(t.start_rc, PAY_OK);
  EXPECT_EQ(t.wait_rc, PAY_EINVALID);
  EXPECT_EQ(t.poll_rc, PAY_EAGAIN);  // the engine thread is busy in this very callback
  pay_result* r = nullptr;
  ASSERT_EQ(pay_pending_wait(&r, t.started, -1), PAY_OK) << pay_error_last()->message;
  EXPECT_EQ(pay_result_outcome(r), PAY_OUTCOME_SUCCEEDED);
  pay_result_free(r);
  pay_pending_free(t.started);
  EXPECT_EQ(sim_->charges_for("reentrant-2"), 1);
  EXPECT_EQ(sim_->charges_for("reentrant-batch"), 0);
}

// The simulator holding every create for the same time (two server threads).
template <int LatencyMs>
class ConcurrentAtLatency : public Concurrent {
 protected:
  payretry_sim::Options sim_options() override {
    auto o = SimTest::sim_options();
    o.threads = 2;
    o.latency_ms = LatencyMs;
    return o;
  }
};

// Each item of a batch of `n` answered SUCCEEDED at its first attempt.
void expect_each_succeeded_at_the_first_attempt(const Batch& b, int n) {
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(b.items[i].rc, PAY_OK) << b.items[i].message;
    EXPECT_EQ(pay_result_outcome(b.items[i].result), PAY_OUTCOME_SUCCEEDED) << pay_result_json(b.items[i].result);
    EXPECT_EQ(pay_result_attempts(b.items[i].result), 1) << pay_result_json(b.items[i].result);
  }
}

// Every answer at the same moment: the simulator holds each create for the
// same time, so the answers to the whole window arrive together, more of
// them than one of the transport's waits reports (256). Each must still be
// read, once, and each order charged once.
using ConcurrentTogether = ConcurrentAtLatency<300>;

TEST_F(ConcurrentTogether, more_answers_at_once_than_one_wait_reports_are_each_read_once) {
  auto c = client(config("stripe", kCalm, R"("ledger":"memory:","engine_threads":1,"max_connections":450)"));
  Batch b;
  constexpr int kPayments = 400;  // 800 descriptors with the simulator's side: within a default limit of 1,024
  for (int i = 0; i < kPayments; ++i) b.add("tg-" + std::to_string(i), body_for("tg-" + std::to_string(i)));
  ASSERT_EQ(pay_submit_batch(b.prepare(), kPayments, c.get(), nullptr), PAY_OK);
  expect_each_succeeded_at_the_first_attempt(b, kPayments);
  EXPECT_EQ(sim_->requests(), kPayments);
  EXPECT_EQ(sim_->total_charges(), kPayments);
  EXPECT_EQ(sim_->duplicate_orders(), 0);
  EXPECT_GT(stat(c.get(), "connections_opened"), 256) << "the window was not in flight at once";
}

// More payments than connections: the rest wait in line for one. The
// simulator answers each create after 200 ms, so with 2 connections the 40th
// payment waits about 4 s before its request can leave, twice its attempt
// timeout. Waiting for a connection is not an attempt: nothing has
// left, and the provider is answering at once. Each payment must go out once,
// when its turn comes, bounded by its deadline; and no connection may be
// dropped on the way (a transfer whose timer ran out while it waited would
// close the kept-alive connection it is finally handed).
using ConcurrentQueue = ConcurrentAtLatency<200>;

TEST_F(ConcurrentQueue, waiting_for_a_free_connection_is_not_an_attempt_and_drops_no_connection) {
  const std::string retry =
      R"("connect_timeout_ms":2000,"attempt_timeout_ms":2000,"deadline_ms":30000,"min_attempt_ms":50)";
  auto c = client(config("stripe", retry, R"("ledger":"memory:","engine_threads":1,"max_connections":2)"));
  Batch b;
  constexpr int kPayments = 40;
  for (int i = 0; i < kPayments; ++i) b.add("q-" + std::to_string(i), body_for("q-" + std::to_string(i)));
  ASSERT_EQ(pay_submit_batch(b.prepare(), kPayments, c.get(), nullptr), PAY_OK);
  expect_each_succeeded_at_the_first_attempt(b, kPayments);
  EXPECT_EQ(sim_->requests(), kPayments);
  EXPECT_EQ(sim_->total_charges(), kPayments);
  EXPECT_EQ(stat(c.get(), "connections_opened"), 2);
}

// The wait for a connection still ends at the payment's deadline, with
// nothing sent: the payment is UNKNOWN (it is not known to be refused), and
// its delivery says no byte of it left. A request leaves only with at least
// min_attempt_ms of its deadline left (600 ms here, three times the 200 ms
// answer), so every request that left is answered.
TEST_F(ConcurrentQueue, a_payment_whose_deadline_passes_in_line_ends_without_a_byte_sent) {
  const std::string retry =
      R"("connect_timeout_ms":1000,"attempt_timeout_ms":1000,"deadline_ms":2000,"min_attempt_ms":600)";
  auto c = client(config("stripe", retry, R"("ledger":"memory:","engine_threads":1,"max_connections":1)"));
  Batch b;
  constexpr int kPayments = 20;  // one connection, 200 ms each: about 7 leave in the first 1.4 s
  for (int i = 0; i < kPayments; ++i) b.add("qd-" + std::to_string(i), body_for("qd-" + std::to_string(i)));
  ASSERT_EQ(pay_submit_batch(b.prepare(), kPayments, c.get(), nullptr), PAY_OK);
  int succeeded = 0, not_sent = 0;
  for (int i = 0; i < kPayments; ++i) {
    ASSERT_EQ(b.items[i].rc, PAY_OK) << b.items[i].message;
    pay_result* r = b.items[i].result;
    if (pay_result_outcome(r) == PAY_OUTCOME_SUCCEEDED) {
      ++succeeded;
      EXPECT_EQ(sim_->charges_for(b.orders[i]), 1);
      continue;
    }
    EXPECT_EQ(pay_result_outcome(r), PAY_OUTCOME_UNKNOWN) << pay_result_json(r);
    EXPECT_EQ(pay_result_delivery(r), PAY_DELIVERY_NOT_SENT) << pay_result_json(r);
    EXPECT_EQ(sim_->charges_for(b.orders[i]), 0);
    ++not_sent;
  }
  std::printf("%d succeeded, %d ended in line at the deadline with nothing sent\n", succeeded, not_sent);
  EXPECT_GE(succeeded, 3);
  EXPECT_GE(not_sent, 5);
  EXPECT_EQ(sim_->requests(), succeeded);
  EXPECT_EQ(stat(c.get(), "connections_opened"), 1);
}

// A chain: every answer starts the next payment, as a service draining a
// queue does, 60 in flight over 2 connections. First come, first served:
// each payment waits behind the 60 ahead of it (6 s at 200 ms an answer
// over 2 connections), never behind payments started after it. (libcurl's
// own queue let new transfers pass waiting ones: 1,000 over 32 connections
// waited from 1.1 s to 18.9 s where 3.1 s was due.)
struct Chain {
  pay_client* client = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  int started = 0, answered = 0, total = 0, not_succeeded = 0;
  double worst_s = 0;
  std::map<std::string, std::chrono::steady_clock::time_point> at;
  void start_next() {  // under mu
    const std::string order = "chain-" + std::to_string(started++);
    const std::string body = R"({"order_id":")" + order + R"(","amount":1000,"currency":"eur"})";
    at[order] = std::chrono::steady_clock::now();
    EXPECT_EQ(pay_submit_async(client, order.c_str(), body.data(), body.size(), nullptr, &Chain::done, this), PAY_OK);
  }
  static void done(int rc, pay_result* r, const char*, void* self) {
    auto* c = static_cast<Chain*>(self);
    std::lock_guard<std::mutex> lock(c->mu);
    if (rc != PAY_OK || pay_result_outcome(r) != PAY_OUTCOME_SUCCEEDED || pay_result_attempts(r) != 1) ++c->not_succeeded;
    if (rc == PAY_OK) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c->at[pay_result_order_id(r)]).count();
      c->worst_s = std::max(c->worst_s, s);
      pay_result_free(r);
    }
    ++c->answered;
    if (c->started < c->total) c->start_next();
    c->cv.notify_all();
  }
};

TEST_F(ConcurrentQueue, payments_waiting_for_a_connection_are_served_first_come_first_served) {
  const std::string retry =
      R"("connect_timeout_ms":5000,"attempt_timeout_ms":20000,"deadline_ms":60000,"min_attempt_ms":50)";
  auto c = client(config("stripe", retry, R"("ledger":"memory:","engine_threads":1,"max_connections":2)"));
  Chain chain;
  chain.client = c.get();
  chain.total = 120;  // 60 in flight, then 60 more, each started by an answer: about 12 s
  {
    std::lock_guard<std::mutex> lock(chain.mu);
    for (int i = 0; i < 60; ++i) chain.start_next();
  }
  std::unique_lock<std::mutex> lock(chain.mu);
  chain.cv.wait(lock, [&] { return chain.answered >= chain.total; });
  std::printf("the longest wait of %d payments: %.1f s (6 s due)\n", chain.total, chain.worst_s);
  EXPECT_EQ(chain.not_succeeded, 0);
  EXPECT_LT(chain.worst_s, 8.0) << "a payment waited behind payments started after it";
  EXPECT_EQ(sim_->requests(), chain.total);
}

// A callback's engine that holds clearly more payments than the engine the
// next order id picks hands that payment over. The simulator holds every
// create 300 ms, so 30 payments are in flight on one engine when their
// answers come; each answer starts one payment whose order id picks the
// other engine. The first ones go there (it holds none); once it holds about
// as many as the first engine has left, the rest stay.
TEST_F(ConcurrentTogether, a_busier_callback_engine_hands_the_next_payment_to_the_one_its_order_id_picks) {
  auto c = client(config("stripe", kCalm, R"("ledger":"memory:","engine_threads":2)"));
  // Which engine an order id picks (Client::multi_for: its hash, modulo the engines).
  auto engine_of = [](const std::string& order) { return std::hash<std::string_view>{}(order) % 2; };
  std::vector<std::string> busy, next;
  for (int i = 0; busy.size() < 30; ++i)
    if (engine_of("busy-" + std::to_string(i)) == engine_of("busy-0")) busy.push_back("busy-" + std::to_string(i));
  for (int i = 0; next.size() < 30; ++i)
    if (engine_of("next-" + std::to_string(i)) != engine_of("busy-0")) next.push_back("next-" + std::to_string(i));

  struct Handoff {
    pay_client* client;
    std::vector<std::string>* next;
    std::atomic<size_t> started{0};
    ThreadAnswers answers;
    static void busy_done(int rc, pay_result* r, const char* m, void* self) {
      auto* h = static_cast<Handoff*>(self);
      const std::string& order = (*h->next)[h->started.fetch_add(1)];
      const std::string body = SimTest::body_for(order);
      EXPECT_EQ(pay_submit_async(h->client, order.c_str(), body.data(), body.size(), nullptr, &ThreadAnswers::done,
                                 &h->answers),
                PAY_OK);
      ThreadAnswers::done(rc, r, m, &h->answers);
    }
  } h{c.get(), &next};
  for (const std::string& order : busy) {
    const std::string body = body_for(order);
    ASSERT_EQ(pay_submit_async(c.get(), order.c_str(), body.data(), body.size(), nullptr, &Handoff::busy_done, &h),
              PAY_OK);
  }
  h.answers.wait_for(60);
  std::set<std::thread::id> busy_threads;
  for (const std::string& order : busy) busy_threads.insert(h.answers.threads[order].begin(), h.answers.threads[order].end());
  ASSERT_EQ(busy_threads.size(), 1u) << "every busy-* order picks the same engine";
  const std::thread::id busy_thread = *busy_threads.begin();
  int moved = 0, stayed = 0;
  for (const std::string& order : next) {
    ASSERT_EQ(h.answers.threads[order].size(), 1u) << order;
    (*h.answers.threads[order].begin() == busy_thread ? stayed : moved) += 1;
  }
  EXPECT_GT(moved, 5) << "the busier engine kept every next payment";
  EXPECT_GT(stayed, 5) << "every next payment left the callback's engine, though the other one filled up";
  EXPECT_EQ(sim_->total_charges(), 60);
  EXPECT_EQ(sim_->duplicate_orders(), 0);
}

class ConcurrentChaos : public Concurrent {
 protected:
  payretry_sim::Options sim_options() override {
    auto o = SimTest::sim_options();
    o.threads = 2;
    o.seed = 88;
    o.slow_ms = 2500;  // past the attempt timeout below: those attempts time out, maybe processed
    o.faults = {{"reset_before", 0.05}, {"lost_response", 0.06}, {"slow", 0.02}, {"429", 0.03}, {"502", 0.03},
                {"503", 0.04},          {"500", 0.03},           {"decline", 0.04}, {"malformed", 0.02}};
    return o;
  }
};

TEST_F(ConcurrentChaos, a_thousand_in_flight_never_charge_twice_nor_fail_a_charge) {
  // Timeouts wide enough for a thousand payments at once on a loaded,
  // sanitized test machine; the faults, not the machine, should decide.
  auto c = client(config("stripe", R"("max_attempts":5,"attempt_timeout_ms":1500,"connect_timeout_ms":1500,"deadline_ms":12000)",
                         R"("budget":{"tokens":100000},"ledger":")" + sqlite_url() + R"(")"));
  Batch b;
  constexpr int kPayments = 1000;
  for (int i = 0; i < kPayments; ++i) b.add("cc-" + std::to_string(i), body_for("cc-" + std::to_string(i), 100 + i));
  pay_batch_item* items = b.prepare();
  ASSERT_EQ(pay_submit_batch(items, kPayments, c.get(), nullptr), PAY_OK);
  std::map<int, int> by_outcome;
  int charged_failed = 0, succeeded_wrong = 0, not_sent_charged = 0;
  for (int i = 0; i < kPayments; ++i) {
    ASSERT_EQ(items[i].rc, PAY_OK) << items[i].message;
    const int o = pay_result_outcome(items[i].result);
    ++by_outcome[o];
    const int charges = sim_->charges_for(b.orders[i]);
    if (o == PAY_OUTCOME_FAILED && charges > 0) ++charged_failed;
    if (o == PAY_OUTCOME_SUCCEEDED && charges != 1) ++succeeded_wrong;
    if (o == PAY_OUTCOME_UNKNOWN && pay_result_delivery(items[i].result) == PAY_DELIVERY_NOT_SENT && charges > 0)
      ++not_sent_charged;
  }
  std::printf("outcomes: succeeded %d, failed %d, unknown %d; retries %ld\n", by_outcome[PAY_OUTCOME_SUCCEEDED],
              by_outcome[PAY_OUTCOME_FAILED], by_outcome[PAY_OUTCOME_UNKNOWN], stat(c.get(), "retries"));
  EXPECT_EQ(sim_->duplicate_orders(), 0);
  EXPECT_EQ(charged_failed, 0);
  EXPECT_EQ(succeeded_wrong, 0);
  EXPECT_EQ(not_sent_charged, 0);
  EXPECT_GT(by_outcome[PAY_OUTCOME_SUCCEEDED], kPayments / 2);
  EXPECT_GT(stat(c.get(), "retries"), 0);
}

}  // namespace
}  // namespace payretry_test
