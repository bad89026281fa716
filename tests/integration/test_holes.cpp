// One test per hole the audit found (payments charged twice, or outcomes
// reported wrong), each against the real library through its C ABI and the
// bundled simulator (or, where the simulator cannot say what a hostile
// provider says, a small raw-socket server below). Each test is named for the
// rule it proves, and says which line of src/ it protects: reverting that
// line makes it fail.
#include <arpa/inet.h>
#include <cJSON.h>
#include <netinet/in.h>
#include <poll.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capi_probe.hpp"
#include "raw_server.hpp"
#include "sim_fixture.hpp"

namespace payretry_test {
namespace {

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A one-shot signal between a test and a run it holds back.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void set() {
    std::lock_guard<std::mutex> l(mu);
    open = true;
    cv.notify_all();
  }
  bool wait(int ms = 3000) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::milliseconds(ms), [&] { return open; });
  }
};

// ---- the fixture --------------------------------------------------------------------------------

class Holes : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    char tmpl[] = "/tmp/payretry-holes-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    SimTest::TearDown();
    for (const char* f : {"/l.db", "/l.db-wal", "/l.db-shm", "/l.db-journal"}) std::remove((dir_ + f).c_str());
    rmdir(dir_.c_str());
  }
  std::string db_path() const { return dir_ + "/l.db"; }
  std::string sqlite_url() const { return "sqlite://" + db_path(); }

  // The fixture's config with the provider swapped for `provider_json` (a
  // built-in's name in quotes, or an inline profile object). Every config
  // names its ledger: `extra` holds it.
  std::string cfg(const std::string& provider_json, const std::string& retry, const std::string& extra) const {
    std::string c = config("stripe", retry, extra);
    const std::string from = R"("provider":"stripe")";
    c.replace(c.find(from), from.size(), R"("provider":)" + provider_json);
    return c;
  }
  // The same for a raw server: its base URL instead of the simulator's.
  std::string cfg_at(const std::string& url, const std::string& provider_json, const std::string& retry,
                     const std::string& extra) const {
    std::string c = cfg(provider_json, retry, extra);
    const std::string from = R"("base_url":")" + base_url() + "\"";
    c.replace(c.find(from), from.size(), R"("base_url":")" + url + "\"");
    return c;
  }

  ClientPtr client_with(const std::string& c, Probe& probe) { return probed_client(c, probe); }

  static ResultPtr submit_ok(pay_client* c, const std::string& order, const std::string& body,
                             const pay_submit_options* opts = nullptr) {
    pay_result* r = nullptr;
    const int rc = pay_submit(&r, c, order.c_str(), body.data(), body.size(), opts);
    EXPECT_EQ(rc, PAY_OK) << pay_error_last()->message;
    return ResultPtr(r);
  }
  static ResultPtr query(pay_client* c, const std::string& order) { return query_ok(c, order); }
  static int give_body(pay_body* out, const char* order_id, void*) {
    const std::string b = body_for(order_id);
    return pay_body_set(out, b.data(), b.size());
  }
  static std::string reconcile_with_bodies(pay_client* c) { return reconcile_with(c, &give_body); }
  // Waits until the order's lease (as the ledger holds it) has ended.
  static void wait_past_lease(pay_client* c, const std::string& order) {
    Json row(ledger_get(c, order));
    const long until = num(at(row.j, "payment"), "lease_until");
    ASSERT_GT(until, 0) << "no lease held on " << order;
    while (unix_ms() <= until + 5) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  std::string dir_;
};

// =================================================================================================
// Hole 1: reconcile re-sent every UNKNOWN payment it had a body for, whatever
// the provider does with a same-key re-send. Checkout.com caches only 2xx: a
// re-send after its 500 runs the payment again.
// Protects src/core/history.cpp read_history (`h.resend_safe = !forbidding ||
// resend_always_safe(profile.replay)`) and its use in Settler::reconcile_one
// (`if (!h.resend_safe) return settle_unknown(...)`).
// =================================================================================================

TEST_F(Holes, hole1_reconcile_never_resends_a_payment_whose_500_the_provider_did_not_cache) {
  sim_->set_profile("checkout_com");
  // A user's own profile for Checkout.com, built on generic: no lookup, and
  // (generic's default) replay none.
  const std::string profile =
      R"({"extends":"generic","name":"cko_by_hand","identity":{"mode":"header","name":"Cko-Idempotency-Key"}})";
  Probe probe;
  auto c = client_with(cfg(profile, R"("max_attempts":1)", R"("ledger":")" + sqlite_url() + "\""), probe);
  sim_->script("h1-cko", {"500"});  // charged, then a 500 that is not stored
  auto first = submit_ok(c.get(), "h1-cko", body_for("h1-cko"));
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(first.get());
  ASSERT_EQ(pay_result_http_status(first.get()), 500);
  ASSERT_EQ(sim_->charges_for("h1-cko"), 1);

  const std::string report = reconcile_with_bodies(c.get());
  Json j(report);
  EXPECT_EQ(num(j.j, "UNKNOWN"), 1) << report;
  EXPECT_EQ(num(j.j, "SUCCEEDED"), 0) << report;
  // Nothing was sent again: the provider would have charged a second time.
  EXPECT_EQ(sim_->requests(), 1);
  EXPECT_EQ(sim_->charges_for("h1-cko"), 1);
  EXPECT_EQ(probe.seen().size(), 1u);
  // The report says why, and what would settle it.
  const std::string why = str(cJSON_GetArrayItem(at(j.j, "payments"), 0), "error");
  EXPECT_TRUE(has(why, "HTTP 500")) << why;
  EXPECT_TRUE(has(why, "replay none")) << why;
  EXPECT_TRUE(has(why, "never re-sent")) << why;
  EXPECT_TRUE(has(why, "webhook or by hand")) << why;
}

TEST_F(Holes, hole1_control_reconcile_resends_a_stripe_payment_with_the_same_key_and_bytes) {
  // Stripe replays every answer to a key (replay all_answers): the same-key
  // re-send is its lookup, and settles the payment.
  Probe probe;
  auto c = client_with(cfg(R"("stripe")", R"("max_attempts":1)", R"("ledger":")" + sqlite_url() + "\""), probe);
  sim_->script("h1-stripe", {"lost_response"});  // charged; the answer is lost
  auto first = submit_ok(c.get(), "h1-stripe", body_for("h1-stripe"));
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN);
  const std::string report = reconcile_with_bodies(c.get());
  Json j(report);
  EXPECT_EQ(num(j.j, "SUCCEEDED"), 1) << report;
  EXPECT_EQ(sim_->requests(), 2);
  EXPECT_EQ(sim_->charges_for("h1-stripe"), 1);
  const auto seen = probe.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].key, seen[0].key);
  EXPECT_EQ(seen[1].body, seen[0].body);
}

// =================================================================================================
// Hole 2: Checkout.com's lookup searches by `reference`; a payment made under
// another reference, or none, reads as "not found" and could be sent twice.
// =================================================================================================

// Protects src/engine/engine.cpp Engine::validate: "body $.reference must equal the order id".
TEST_F(Holes, hole2_checkout_refuses_a_reference_that_is_not_the_order_id_and_sends_nothing) {
  sim_->set_profile("checkout_com");
  Probe probe;
  auto c = client_with(cfg(R"("checkout_com")", "", R"("ledger":"memory:")"), probe);
  const std::string body = R"({"order_id":"h2-a","reference":"someone-else","amount":1000,"currency":"eur"})";
  pay_result* r = nullptr;
  EXPECT_EQ(pay_submit(&r, c.get(), "h2-a", body.data(), body.size(), nullptr), PAY_EINVALID);
  EXPECT_EQ(r, nullptr);
  EXPECT_TRUE(has(pay_error_last()->message, "reference")) << pay_error_last()->message;
  EXPECT_EQ(sim_->requests(), 0);
  EXPECT_TRUE(probe.seen().empty());
}

// Protects src/engine/engine.cpp AttemptRun::AttemptRun: the reference written into
// the bytes (`body_with_key(body_, top_level_member(ref), r_.order_id)`).
TEST_F(Holes, hole2_checkout_writes_the_order_id_as_reference_into_the_bytes_sent) {
  sim_->set_profile("checkout_com");
  Probe probe;
  auto c = client_with(cfg(R"("checkout_com")", "", R"("ledger":"memory:")"), probe);
  auto r = submit_ok(c.get(), "h2-b", body_for("h2-b"));
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  const auto seen = probe.seen();
  ASSERT_EQ(seen.size(), 1u);
  Json sent(seen[0].body);
  ASSERT_NE(sent.j, nullptr) << seen[0].body;
  EXPECT_EQ(str(sent.j, "reference"), "h2-b") << seen[0].body;
  // Every other byte of the caller's body is as it was.
  EXPECT_TRUE(has(seen[0].body, body_for("h2-b").substr(1))) << seen[0].body;
  EXPECT_EQ(sim_->charges_for("h2-b"), 1);
}

// "Not found" within the read-lag grace is no proof, counted from when the
// lookup was SENT (not when its slow answer arrived, nor from the row's last
// update). Protects src/core/settle.cpp Settler::lookup_entry (`lag_passed =
// ... e.started_at - h.last_possible_send >= config_.not_found_grace_ms`,
// started_at = a.asked_at).
TEST_F(Holes, hole2_checkout_not_found_within_the_grace_period_is_no_proof_and_nothing_is_resent) {
  sim_->set_profile("checkout_com");
  const std::string retry = R"("max_attempts":1,"attempt_timeout_ms":2000)";
  Probe probe;
  auto c = client_with(cfg(R"("checkout_com")", retry,
                           R"("not_found_grace_ms":300,"ledger":")" + sqlite_url() + "\""),
                       probe);
  sim_->script("h2-c", {"reset_before"});  // never charged, but the client cannot know
  auto first = submit_ok(c.get(), "h2-c", body_for("h2-c"));
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(first.get());
  ASSERT_EQ(pay_result_delivery(first.get()), PAY_DELIVERY_MAYBE_PROCESSED);
  // The lookup leaves at once (inside the 300 ms grace); its "not found"
  // arrives 500 ms later (past it).
  sim_->set_latency_ms(500);
  auto q = query(c.get(), "h2-c");
  sim_->set_latency_ms(0);
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_delivery(q.get()), PAY_DELIVERY_MAYBE_PROCESSED) << pay_result_json(q.get());
  EXPECT_TRUE(has(pay_result_error(q.get()) ? pay_result_error(q.get()) : "", "grace")) << pay_result_json(q.get());
  ASSERT_TRUE(has(probe.seen().back().url, "reference=h2-c"));
  // Reconcile (whose own lookup is again inside the grace) re-sends nothing.
  sim_->set_latency_ms(0);
  c.reset();
  auto strict = client_with(cfg(R"("checkout_com")", retry,
                                R"("not_found_grace_ms":60000,"ledger":")" + sqlite_url() + "\""),
                            probe);
  const std::string report = reconcile_with_bodies(strict.get());
  EXPECT_EQ(num(Json(report).j, "UNKNOWN"), 1) << report;
  EXPECT_EQ(sim_->requests(), 1);
  EXPECT_EQ(sim_->charges_for("h2-c"), 0);

  // Control: past the grace the same answer is proof, and the same-key
  // re-send finishes the payment, once.
  strict.reset();
  auto c0 = client_with(cfg(R"("checkout_com")", retry, R"("not_found_grace_ms":0,"ledger":")" + sqlite_url() + "\""),
                        probe);
  auto late = query(c0.get(), "h2-c");
  EXPECT_EQ(pay_result_delivery(late.get()), PAY_DELIVERY_NOT_SENT) << pay_result_json(late.get());
  const std::string settled = reconcile_with_bodies(c0.get());
  EXPECT_EQ(num(Json(settled).j, "SUCCEEDED"), 1) << settled;
  EXPECT_EQ(sim_->charges_for("h2-c"), 1);
}

// A bare 404 (a wrong path, a proxy) from a lookup whose profile has no
// not_found matcher proves nothing. Protects src/core/settle.cpp Settler::look_up
// ("Not found" only `if (!lk.not_found.empty() && rule_matches(...))`).
TEST_F(Holes, hole2_a_bare_404_from_a_lookup_without_a_not_found_matcher_is_no_proof) {
  sim_->set_profile("checkout_com");
  // Checkout.com's profile, its lookup pointed at a path the provider does
  // not serve (the simulator answers 404), and its not_found matcher cleared.
  const std::string profile =
      R"({"extends":"checkout_com","name":"cko_bare_404","lookup":{"path":"/nowhere?reference={order_id}","not_found":{}}})";
  Probe probe;
  auto c = client_with(cfg(profile, R"("max_attempts":1)", R"("not_found_grace_ms":0,"ledger":"memory:")"), probe);
  sim_->script("h2-d", {"reset_before"});
  auto first = submit_ok(c.get(), "h2-d", body_for("h2-d"));
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN);
  auto q = query(c.get(), "h2-d");
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_delivery(q.get()), PAY_DELIVERY_MAYBE_PROCESSED) << pay_result_json(q.get());
  EXPECT_TRUE(has(pay_result_error(q.get()) ? pay_result_error(q.get()) : "", "404")) << pay_result_json(q.get());
  const std::string report = reconcile_with_bodies(c.get());
  EXPECT_EQ(num(Json(report).j, "UNKNOWN"), 1) << report;
  EXPECT_EQ(sim_->requests(), 1);  // never re-sent
  EXPECT_EQ(sim_->charges_for("h2-d"), 0);
}

// =================================================================================================
// Hole 3: a ledger failure after the request went out was an error code
// (PAY_ELEDGER), which reads as "not sent": the caller could charge again.
// Now: the provider's result, flagged not durably recorded.
// =================================================================================================

// Holds SQLite's write lock on the ledger file from another connection.
struct DbLock {
  sqlite3* db = nullptr;
  bool held = false;
  explicit DbLock(const std::string& path) {
    sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
    sqlite3_busy_timeout(db, 2000);
  }
  bool take() {
    held = sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) == SQLITE_OK;
    return held;
  }
  void release() {
    if (held) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    held = false;
  }
  ~DbLock() {
    release();
    sqlite3_close(db);
  }
};

// Protects src/core/payment_flow.cpp PaymentFlow::run (`catch (const LedgerError&)
// { mark_unrecorded(result, e.what()); }` around the settle).
TEST_F(Holes, hole3_a_ledger_failure_after_the_send_answers_a_result_flagged_unrecorded_blocking) {
  Probe probe;
  auto c = client_with(cfg(R"("stripe")", "", R"("ledger":{"url":")" + sqlite_url() + R"(","timeout_ms":50})"), probe);
  DbLock lock(db_path());
  std::atomic<bool> took{false};
  probe.on_attempt = [&](const Seen& s) {
    if (s.attempt == 1) took = lock.take();  // the key is committed; the settle will find the file locked
  };
  pay_result* raw = nullptr;
  const std::string body = body_for("h3-blocking");
  const int rc = pay_submit(&raw, c.get(), "h3-blocking", body.data(), body.size(), nullptr);
  ResultPtr r(raw);
  lock.release();
  ASSERT_TRUE(took);
  ASSERT_EQ(rc, PAY_OK) << pay_error_last()->message;  // a result, not PAY_ELEDGER
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  ASSERT_NE(pay_result_ledger_error(r.get()), nullptr);
  const std::string json = pay_result_json(r.get());
  EXPECT_TRUE(has(json, R"("recorded":false)")) << json;
  EXPECT_EQ(sim_->charges_for("h3-blocking"), 1);
  EXPECT_TRUE(has(probe.all_logs(), "ledger_failed")) << probe.all_logs();
  // The ledger still holds the payment as in flight, to be resumed or
  // reconciled once its lease ends: never as a payment that was not made.
  Json row(ledger_get(c.get(), "h3-blocking"));
  EXPECT_EQ(str(at(row.j, "payment"), "state"), "IN_FLIGHT");
}

// Protects src/core/multi_engine.cpp MultiEngine::flush (a failed settle entry:
// `flow_.mark_unrecorded(p->result, s.error)`, then the result is handed over).
TEST_F(Holes, hole3_a_ledger_failure_after_the_send_answers_a_result_flagged_unrecorded_batch) {
  Probe probe;
  auto c = client_with(cfg(R"("stripe")", "", R"("ledger":{"url":")" + sqlite_url() + R"(","timeout_ms":50})"), probe);
  DbLock lock(db_path());
  std::atomic<bool> took{false};
  probe.on_attempt = [&](const Seen& s) {
    if (s.attempt == 1) took = lock.take();  // on the engine thread, after the group commit of the create
  };
  const std::string order = "h3-batch", body = body_for(order);
  pay_batch_item item{};
  item.order_id = order.c_str();
  item.body = body.data();
  item.body_len = body.size();
  ASSERT_EQ(pay_submit_batch(&item, 1, c.get(), nullptr), PAY_OK);
  ResultPtr r(item.result);
  lock.release();
  ASSERT_TRUE(took);
  ASSERT_EQ(item.rc, PAY_OK) << item.message;
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  ASSERT_NE(pay_result_ledger_error(r.get()), nullptr);
  EXPECT_TRUE(has(pay_result_json(r.get()), R"("recorded":false)")) << pay_result_json(r.get());
  EXPECT_EQ(sim_->charges_for(order), 1);
  EXPECT_EQ(sim_->requests(), 1);
  EXPECT_TRUE(has(probe.all_logs(), "ledger_failed")) << probe.all_logs();
}

// =================================================================================================
// Hole 4: the concurrent engine checked the deadline when a request was
// queued, not when its first byte left: a payment held up behind other
// payments' work could be sent after its caller had been given up on.
// Protects src/transport/curl_transfer.cpp on_prereq (`ex->refused = ex->may_start();
// ... return CURL_PREREQFUNC_ABORT`) and the may_start set in
// src/engine/engine.cpp AttemptRun::attempt.
// =================================================================================================

TEST_F(Holes, hole4_concurrent_engine_sends_no_byte_after_the_payment_deadline) {
  Probe probe;
  auto c = client_with(cfg(R"("stripe")", "", R"("ledger":"memory:")"), probe);
  // A's request is queued first; then B's hook holds the engine thread
  // 400 ms, far past A's 100 ms deadline.
  probe.on_attempt = [&](const Seen& s) {
    if (s.order_id == "h4-b" && s.attempt == 1) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  };
  const std::string body_a = body_for("h4-a"), body_b = body_for("h4-b");
  pay_batch_item items[2] = {};
  items[0].order_id = "h4-a";
  items[0].body = body_a.data();
  items[0].body_len = body_a.size();
  items[0].deadline_ms = 100;
  items[1].order_id = "h4-b";
  items[1].body = body_b.data();
  items[1].body_len = body_b.size();
  ASSERT_EQ(pay_submit_batch(items, 2, c.get(), nullptr), PAY_OK);
  ResultPtr a(items[0].result), b(items[1].result);
  ASSERT_EQ(items[0].rc, PAY_OK) << items[0].message;
  ASSERT_EQ(items[1].rc, PAY_OK) << items[1].message;
  // A's hook ran (its request was made and queued) before B's.
  const auto seen = probe.seen();
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen[0].order_id, "h4-a");
  // ...but not one byte of it reached the provider.
  EXPECT_EQ(sim_->charges_for("h4-a"), 0);
  EXPECT_EQ(sim_->requests(), 1);  // B's alone
  EXPECT_EQ(pay_result_outcome(a.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(a.get());
  EXPECT_EQ(pay_result_delivery(a.get()), PAY_DELIVERY_NOT_SENT) << pay_result_json(a.get());
  EXPECT_TRUE(has(pay_result_error(a.get()) ? pay_result_error(a.get()) : "", "deadline")) << pay_result_json(a.get());
  EXPECT_TRUE(has(pay_result_json(a.get()), "not_started")) << pay_result_json(a.get());
  EXPECT_EQ(pay_result_outcome(b.get()), PAY_OUTCOME_SUCCEEDED);
}

// =================================================================================================
// Hole 5: the fencing token was the client's, not the claim's: two runs of
// ONE client on one order (a stalled run and the run that took it over)
// could both write, and the stalled one overwrite the other's history and
// outcome. Protects src/core/payment_flow.cpp PaymentFlow::new_fence (a token per
// claim: `owner_ + "#" + std::to_string(++claims_)`), the fenced writes of
// the SQLite ledger (`WHERE order_id=?1 AND lease_owner=?2`), and entries
// that are never overwritten (a plain INSERT in fence_and_store).
// =================================================================================================

TEST_F(Holes, hole5_a_stalled_run_past_its_lease_is_fenced_out_by_the_run_that_took_over) {
  Probe probe;
  auto c = client_with(cfg(R"("stripe")", R"("deadline_ms":300,"attempt_timeout_ms":200)",
                           R"("ledger":{"url":")" + sqlite_url() + R"(","lease_margin_ms":50})"),
                       probe);
  const std::string order = "h5-fence", body = body_for(order);
  sim_->script(order, {"503"});  // A's attempt 1: not processed, retried after a backoff
  Gate a_stalled, release_a, b_sending, a_done;
  // Run A stalls right after its attempt 1 (in the log callback, before that
  // attempt is recorded), past its lease.
  std::atomic<bool> stalled_once{false};
  probe.on_log = [&](const std::string& line) {
    if (has(line, R"("event":"attempt")") && has(line, order) && has(line, R"("attempt":1,)") &&
        !stalled_once.exchange(true)) {
      a_stalled.set();
      release_a.wait();
    }
  };
  // Run B, which takes the payment over, is held just before its send until A is done.
  probe.on_attempt = [&](const Seen& s) {
    if (s.order_id == order && s.attempt == 2) {
      b_sending.set();
      a_done.wait();
    }
  };
  ResultPtr ra, rb;
  std::thread a([&] { ra = submit_ok(c.get(), order, body); });
  ASSERT_TRUE(a_stalled.wait());
  wait_past_lease(c.get(), order);
  std::thread b([&] { rb = submit_ok(c.get(), order, body); });
  const bool b_reached_send = b_sending.wait();
  release_a.set();
  a.join();
  a_done.set();
  b.join();
  // Once seen failing under the ASan suite (not reproduced alone or beside a
  // busy loop): say what B answered instead of sending.
  ASSERT_TRUE(b_reached_send) << "B answered " << (rb ? pay_result_json(rb.get()) : "nothing") << "; A answered "
                              << (ra ? pay_result_json(ra.get()) : "nothing");

  // B settled it; A was told it lost the payment to another run.
  EXPECT_EQ(pay_result_outcome(rb.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(rb.get());
  EXPECT_EQ(pay_result_outcome(ra.get()), PAY_OUTCOME_IN_PROGRESS) << pay_result_json(ra.get());
  EXPECT_TRUE(has(pay_result_error(ra.get()) ? pay_result_error(ra.get()) : "", "lease lost"))
      << pay_result_json(ra.get());
  EXPECT_STREQ(pay_result_idempotency_key(ra.get()), pay_result_idempotency_key(rb.get()));
  // The row is B's, and A's late write of its attempt 1 changed nothing:
  // entry 1 is still what B's takeover wrote for A's possible send.
  Json row(ledger_get(c.get(), order));
  const cJSON* p = at(row.j, "payment");
  EXPECT_EQ(str(p, "state"), "SUCCEEDED") << cJSON_PrintUnformatted(row.j);
  EXPECT_EQ(str(p, "lease_owner"), "");
  EXPECT_EQ(num(p, "attempts"), 2);
  ASSERT_EQ(sim_->charge_ids_for(order).size(), 1u);
  EXPECT_EQ(str(p, "provider_payment_id"), sim_->charge_ids_for(order).at(0));
  const cJSON* entries = at(row.j, "attempts");
  ASSERT_EQ(cJSON_GetArraySize(entries), 2);
  EXPECT_EQ(num(cJSON_GetArrayItem(entries, 0), "attempt"), 1);
  EXPECT_EQ(str(cJSON_GetArrayItem(entries, 0), "verdict"), "unrecorded");
  EXPECT_EQ(num(cJSON_GetArrayItem(entries, 0), "http_status"), 0);  // not A's 503
  EXPECT_EQ(num(cJSON_GetArrayItem(entries, 1), "attempt"), 2);
  EXPECT_EQ(str(cJSON_GetArrayItem(entries, 1), "verdict"), "success");
  EXPECT_EQ(sim_->charges_for(order), 1);
  EXPECT_EQ(sim_->requests(), 2);  // A's 503 and B's success
  EXPECT_EQ(sim_->duplicate_orders(), 0);
}

// The same with a late write that carries no attempt entry (so the
// never-overwritten entries cannot stop it; only the claim's own token can):
// A stalls in its hook before its first send, past its lease; B takes over
// and is held before its send; A wakes up past its deadline and settles
// UNKNOWN. With one token per client that settle went through, cleared B's
// lease, and B's SUCCEEDED could no longer be recorded: the ledger said
// UNKNOWN for a payment the provider had charged.
TEST_F(Holes, hole5_a_stalled_run_cannot_settle_a_payment_another_run_of_the_same_client_holds) {
  Probe probe;
  auto c = client_with(cfg(R"("stripe")", R"("deadline_ms":300,"attempt_timeout_ms":200)",
                           R"("ledger":{"url":")" + sqlite_url() + R"(","lease_margin_ms":50})"),
                       probe);
  const std::string order = "h5-settle", body = body_for(order);
  Gate a_in_hook, release_a, b_sending, a_done;
  probe.on_attempt = [&](const Seen& s) {
    if (s.attempt == 1) {  // run A
      a_in_hook.set();
      release_a.wait();
    } else if (s.attempt == 2) {  // run B, after its takeover entry for A's possible send
      b_sending.set();
      a_done.wait();
    }
  };
  ResultPtr ra, rb;
  std::thread a([&] { ra = submit_ok(c.get(), order, body); });
  ASSERT_TRUE(a_in_hook.wait());
  wait_past_lease(c.get(), order);
  std::thread b([&] { rb = submit_ok(c.get(), order, body); });
  const bool b_reached_send = b_sending.wait();
  release_a.set();
  a.join();
  a_done.set();
  b.join();
  ASSERT_TRUE(b_reached_send);

  EXPECT_EQ(pay_result_outcome(ra.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(ra.get());
  EXPECT_EQ(pay_result_attempts(ra.get()), 0) << pay_result_json(ra.get());  // A never sent
  EXPECT_EQ(pay_result_outcome(rb.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(rb.get());
  EXPECT_TRUE(has(probe.all_logs(), "lease_lost")) << probe.all_logs();  // A's settle was refused
  Json row(ledger_get(c.get(), order));
  const cJSON* p = at(row.j, "payment");
  EXPECT_EQ(str(p, "state"), "SUCCEEDED") << cJSON_PrintUnformatted(row.j);
  ASSERT_EQ(sim_->charge_ids_for(order).size(), 1u);
  EXPECT_EQ(str(p, "provider_payment_id"), sim_->charge_ids_for(order).at(0));
  EXPECT_EQ(sim_->charges_for(order), 1);
  EXPECT_EQ(sim_->requests(), 1);
}

// =================================================================================================
// Hole 6: a failure after the request was written that libcurl calls
// something other than a reset (a weird reply, an answer too large) fell
// through Checkout.com's "look up first" rule to generic's "retry": a second
// POST, which Checkout.com (only 2xx cached) runs again.
// Protects src/engine/classify.cpp transport_matches (`connection_lost` is any
// failure after the request may have been written: reverting that line alone
// fails the answer-too-large test) and, for the weird reply, that line or the
// CURLE_WEIRD_SERVER_REPLY -> connection_lost mapping in src/transport/curl_transfer.cpp
// CurlTransfer::finish (either one keeps it right; reverting both, as the
// fix's whole commit, fails it).
// =================================================================================================

void expect_one_attempt_unknown(pay_result* r, RawServer& server, const char* what) {
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(pay_result_outcome(r), PAY_OUTCOME_UNKNOWN) << what << ": " << pay_result_json(r);
  EXPECT_EQ(pay_result_delivery(r), PAY_DELIVERY_MAYBE_PROCESSED) << what;
  EXPECT_EQ(pay_result_attempts(r), 1) << what << ": " << pay_result_json(r);
  size_t posts = 0;
  for (const RawRequest& q : server.requests()) posts += q.method() == "POST";
  EXPECT_EQ(posts, 1u) << what << ": a second POST went out";
  EXPECT_TRUE(has(pay_result_json(r), "connection_lost_lookup_first")) << what << ": " << pay_result_json(r);
}

TEST_F(Holes, hole6_checkout_looks_up_after_a_weird_server_reply_and_never_posts_twice) {
  // A header line without a colon: libcurl fails with CURLE_WEIRD_SERVER_REPLY.
  RawServer server([](const RawRequest&) {
    return std::string("HTTP/1.1 200 OK\r\nThis line is not a header\r\nContent-Length: 2\r\n\r\n{}");
  });
  Probe probe;
  auto c = client_with(cfg_at(server.url(), R"("checkout_com")", R"("attempt_timeout_ms":2000)",
                              R"("ledger":"memory:")"),
                       probe);
  auto r = submit_ok(c.get(), "h6-weird", body_for("h6-weird"));
  expect_one_attempt_unknown(r.get(), server, "weird reply");
}

TEST_F(Holes, hole6_checkout_looks_up_after_an_answer_too_large_and_never_posts_twice) {
  // 5 MiB: past the 4 MiB payretry reads (CurlOptions::max_response_bytes).
  RawServer server([](const RawRequest&) {
    const size_t n = 5u << 20;
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(n) +
           "\r\nConnection: close\r\n\r\n" + std::string(n, ' ');
  });
  Probe probe;
  auto c = client_with(cfg_at(server.url(), R"("checkout_com")", R"("attempt_timeout_ms":2000)",
                              R"("ledger":"memory:")"),
                       probe);
  auto r = submit_ok(c.get(), "h6-large", body_for("h6-large"));
  expect_one_attempt_unknown(r.get(), server, "answer too large");
  EXPECT_TRUE(has(pay_result_json(r.get()), "response_too_large")) << pay_result_json(r.get());
}

// =================================================================================================
// Hole 7: Alipay answers HTTP 200 whatever happened; generic's "2xx is
// success" read an unlisted gateway code, or none, as a paid trade.
// Protects src/profiles/builtin/alipay.json: only code 10000 is success, and
// `{"when": {"status": "2xx"}, "verdict": "query", "reason": "unlisted_gateway_code"}`.
// =================================================================================================

TEST_F(Holes, hole7_alipay_http_200_with_an_unlisted_code_or_no_code_is_never_succeeded) {
  RawServer server([](const RawRequest& q) {
    if (has(q.body, "ali_40003"))
      return http(200, R"({"alipay_trade_pay_response":{"code":"40003","msg":"Insufficient Conditions"}})");
    return http(200, R"({"alipay_trade_pay_response":{"msg":"Success","trade_no":"2024000000000000000000000001"}})");
  });
  Probe probe;
  auto c = client_with(cfg_at(server.url(), R"("alipay")", R"("attempt_timeout_ms":2000)", R"("ledger":"memory:")"),
                       probe);
  for (const std::string order : {"ali_40003", "ali_nocode"}) {
    const std::string body = R"({"biz_content":{"out_trade_no":")" + order + R"(","total_amount":"10.00"}})";
    auto r = submit_ok(c.get(), order, body);
    ASSERT_NE(r, nullptr);
    EXPECT_NE(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << order << ": " << pay_result_json(r.get());
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << order;
    EXPECT_TRUE(has(pay_result_error(r.get()) ? pay_result_error(r.get()) : "", "unlisted_gateway_code"))
        << order << ": " << pay_result_json(r.get());
  }
  EXPECT_EQ(server.requests().size(), 2u);  // one each: queried, never re-sent
}

// =================================================================================================
// Hole 8: lookups bypassed the request hook (a provider that signs its
// requests got unsigned lookups), and WeChat's lookup lacked its mchid.
// Protects src/core/settle.cpp Settler::look_up (`hook_(view, extra)` before every
// lookup) and fill()'s {merchant_id}; src/core/client.cpp requires merchant_id
// when the profile's lookup names it.
// =================================================================================================

TEST_F(Holes, hole8_wechat_lookup_goes_through_the_request_hook_and_carries_mchid) {
  sim_->set_profile("wechatpay_v3");
  Probe probe;
  // Without merchant_id, a client for this profile is refused.
  {
    pay_client* bad = nullptr;
    EXPECT_EQ(pay_client_new(&bad, cfg(R"("wechatpay_v3")", "", R"("ledger":"memory:")").c_str(), nullptr),
              PAY_ECONFIG);
    EXPECT_TRUE(has(pay_error_last()->message, "merchant_id")) << pay_error_last()->message;
    pay_client_free(bad);
  }
  // WeChat Pay refuses unsigned requests: the built-in signer signs, and
  // the probe (a hook) still sees every request, lookups included.
  std::string config = cfg(R"("wechatpay_v3")", R"("max_attempts":1)", R"("merchant_id":"1230000109","ledger":"memory:")");
  const std::string bearer = R"("auth":{"bearer":"sk_test_integration_secret"})";
  const std::string keys = PAYRETRY_TEST_KEYS;
  config.replace(config.find(bearer), bearer.size(),
                 R"("auth":{"wechatpay":{"serial_no":"3775B6A45ACD588826D15E583A95F5DD3F3B4DD8","private_key_file":")" +
                     keys + R"(/wechat_merchant_key.pem","platform_public_key_file":")" + keys +
                     R"(/wechat_platform_pub.pem"}})");
  auto c = client_with(config, probe);
  const std::string order = "wx_order_1";
  sim_->script(order, {"lost_response"});  // paid; the answer is lost
  auto first = submit_ok(c.get(), order, R"({"out_trade_no":"wx_order_1","amount":{"total":100,"currency":"CNY"}})");
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(first.get());
  auto q = query(c.get(), order);
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(q.get());
  const auto seen = probe.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[1].method, "GET");
  EXPECT_TRUE(has(seen[1].url, "/v3/pay/transactions/out-trade-no/wx_order_1?mchid=1230000109")) << seen[1].url;
  EXPECT_EQ(seen[1].order_id, order);
  EXPECT_EQ(sim_->charges_for(order), 1);
}

// =================================================================================================
// Hole 9: a resumed payment with less than retry.min_attempt_ms left failed
// the call with PAY_EINVALID ("deadline_ms is below retry.min_attempt_ms"),
// although an earlier run may have charged it: the caller must get UNKNOWN.
// Protects src/core/payment_flow.cpp PaymentFlow::resume_request
// (`r.from_ledger_flow = true`) and its use in src/engine/engine.cpp
// AttemptRun::AttemptRun (such a request is not validated again, so its
// short deadline is not refused there).
// =================================================================================================

TEST_F(Holes, hole9_a_resumed_payment_with_too_little_time_left_answers_unknown_not_einvalid) {
  Probe probe;
  auto c = client_with(cfg(R"("stripe")", R"("deadline_ms":200,"min_attempt_ms":50)",
                           R"("ledger":{"url":")" + sqlite_url() + R"(","lease_margin_ms":50})"),
                       probe);
  const std::string order = "h9-short", body = body_for(order);
  // Run A stalls in its hook before its first send, past its lease (a run
  // that died holding the payment).
  Gate a_in_hook, release_a;
  probe.on_attempt = [&](const Seen& s) {
    if (s.attempt == 1) {
      a_in_hook.set();
      release_a.wait();
    }
  };
  // Taking over a dead run is logged ("run_abandoned") between the claim and
  // the resumed run: spend 20 ms there, so the resumed run, given exactly
  // min_attempt_ms by its caller, has less than that left of its lease.
  probe.on_log = [&](const std::string& line) {
    if (has(line, "run_abandoned")) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  };
  ResultPtr ra;
  std::thread a([&] { ra = submit_ok(c.get(), order, body); });
  ASSERT_TRUE(a_in_hook.wait());
  wait_past_lease(c.get(), order);

  pay_submit_options o;
  pay_submit_options_init(&o, PAY_SUBMIT_OPTIONS_VERSION);
  o.deadline_ms = 50;  // == retry.min_attempt_ms: valid for a call
  pay_result* raw = nullptr;
  const int rc = pay_submit(&raw, c.get(), order.c_str(), body.data(), body.size(), &o);
  ResultPtr rb(raw);
  const std::string message = pay_error_last()->message;
  release_a.set();
  a.join();

  ASSERT_EQ(rc, PAY_OK) << message;  // not PAY_EINVALID
  ASSERT_NE(rb, nullptr);
  EXPECT_EQ(pay_result_outcome(rb.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(rb.get());
  EXPECT_EQ(pay_result_delivery(rb.get()), PAY_DELIVERY_MAYBE_PROCESSED) << pay_result_json(rb.get());
  EXPECT_TRUE(has(pay_result_error(rb.get()) ? pay_result_error(rb.get()) : "", "deadline"))
      << pay_result_json(rb.get());
  EXPECT_TRUE(has(probe.all_logs(), "run_abandoned"));
  EXPECT_EQ(sim_->requests(), 0);  // no time for an attempt, and none was made
}

// =================================================================================================
// Hole 10: a config without "ledger" silently kept keys in memory: a restart
// minted a new key for an order that may already be charged.
// Protects src/model/config.cpp parse_config (`if (!ledger) fail("ledger", "is required: ...")`).
// (tests/cli/cli_test.py is being edited by someone else; the CLI part is left out.)
// =================================================================================================

TEST_F(Holes, hole10_a_config_without_ledger_is_refused_naming_ledger) {
  const std::string no_ledger = R"({"provider":"stripe","base_url":")" + base_url() +
                                R"(","auth":{"bearer":"sk_test_integration_secret"}})";
  pay_client* c = nullptr;
  EXPECT_EQ(pay_client_new(&c, no_ledger.c_str(), nullptr), PAY_ECONFIG);
  EXPECT_EQ(c, nullptr);
  const std::string message = pay_error_last()->message;
  EXPECT_TRUE(has(message, "ledger: is required")) << message;  // names the key
  EXPECT_TRUE(has(message, "memory:")) << message;       // and says how to keep the old behaviour
  pay_client_free(c);
}

// =================================================================================================
// Hole 11: Stripe-Should-Retry: false on a 409 (key in use) or a 429 was
// ignored: the status rule retried anyway, against Stripe's word.
// Protects the two rules in src/profiles/builtin/stripe.json:
// `{"status": 429, "header": {"Stripe-Should-Retry": "false"}} -> query` and
// `{"status": 409, "header": {"Stripe-Should-Retry": "false"}} -> query`.
// =================================================================================================

TEST_F(Holes, hole11_stripe_should_retry_false_on_409_and_429_stops_after_one_attempt) {
  RawServer server([](const RawRequest& q) {
    if (has(q.body, "h11-409"))
      return http(409, R"({"error":{"type":"invalid_request_error","code":"lock_timeout"}})",
                  "Stripe-Should-Retry: false\r\n");
    return http(429, R"({"error":{"type":"invalid_request_error","code":"rate_limit"}})",
                "Stripe-Should-Retry: false\r\n");
  });
  Probe probe;
  auto c = client_with(cfg_at(server.url(), R"("stripe")", R"("attempt_timeout_ms":2000)", R"("ledger":"memory:")"),
                       probe);
  auto r409 = submit_ok(c.get(), "h11-409", body_for("h11-409"));
  auto r429 = submit_ok(c.get(), "h11-429", body_for("h11-429"));
  for (pay_result* r : {r409.get(), r429.get()}) {
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(pay_result_attempts(r), 1) << pay_result_json(r);
    EXPECT_EQ(pay_result_outcome(r), PAY_OUTCOME_UNKNOWN) << pay_result_json(r);
    EXPECT_TRUE(has(pay_result_json(r), "should_not_retry")) << pay_result_json(r);
  }
  // A 429 comes from the rate limiter, before the idempotency layer: nothing processed.
  EXPECT_EQ(pay_result_delivery(r429.get()), PAY_DELIVERY_NOT_SENT) << pay_result_json(r429.get());
  EXPECT_EQ(server.requests().size(), 2u);  // one each
}

// =================================================================================================
// Hole 16: what a provider echoes (its payment id, its request id) went
// unredacted into results, the ledger and logs. Protects src/engine/engine.cpp
// read_provider_fields (`redact(id.front(), secrets)`) and AttemptRun::sent
// (`a_.provider_request_id = redact(first_header(...), e_.secrets_)`).
// =================================================================================================

TEST_F(Holes, hole16_a_card_number_echoed_as_the_payment_id_is_redacted_everywhere) {
  const std::string pan = "4242424242424242";
  RawServer server([&](const RawRequest&) {
    return http(200, R"({"id":")" + pan + R"(","object":"payment","status":"succeeded"})",
                "Request-Id: req_" + pan + "\r\n");
  });
  Probe probe;
  auto c = client_with(cfg_at(server.url(), R"("stripe")", R"("attempt_timeout_ms":2000)",
                              R"("ledger":")" + sqlite_url() + "\""),
                       probe);
  auto r = submit_ok(c.get(), "h16-pan", body_for("h16-pan"));
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  const std::string id = pay_result_provider_payment_id(r.get()) ? pay_result_provider_payment_id(r.get()) : "";
  EXPECT_FALSE(has(id, pan)) << id;
  EXPECT_FALSE(has(pay_result_json(r.get()), pan)) << pay_result_json(r.get());
  EXPECT_FALSE(has(ledger_get(c.get(), "h16-pan"), pan)) << ledger_get(c.get(), "h16-pan");
  EXPECT_FALSE(has(probe.all_logs(), pan)) << probe.all_logs();
}

// DISABLED: src/ does not meet this rule yet. redact() (src/log/redact.cpp) masks
// the client's own secrets, values of sensitive field names ("token": ...,
// "api_key=...") and Luhn-valid card numbers; a bare token-shaped value such
// as a Request-Id header "tok_live_abcdefghijklmnop" matches none of them and
// reaches pay_result_json (attempts[].provider_request_id), the ledger
// (pay_ledger_get attempts[].provider_request_id) and the attempt log line
// unchanged. Run with --gtest_also_run_disabled_tests to see it fail; enable
// it once provider-echoed credential-shaped values (tok_/sk_/rk_/pk_ live or
// test prefixes, say) are redacted.
TEST_F(Holes, hole16_a_live_token_echoed_as_the_request_id_is_redacted_everywhere) {
  const std::string token = "tok_live_abcdefghijklmnop";
  RawServer server([&](const RawRequest&) {
    return http(200, R"({"id":"pay_1","object":"payment","status":"succeeded"})", "Request-Id: " + token + "\r\n");
  });
  Probe probe;
  auto c = client_with(cfg_at(server.url(), R"("stripe")", R"("attempt_timeout_ms":2000)",
                              R"("ledger":")" + sqlite_url() + "\""),
                       probe);
  auto r = submit_ok(c.get(), "h16-tok", body_for("h16-tok"));
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_FALSE(has(pay_result_json(r.get()), token)) << pay_result_json(r.get());
  EXPECT_FALSE(has(ledger_get(c.get(), "h16-tok"), token)) << ledger_get(c.get(), "h16-tok");
  EXPECT_FALSE(has(probe.all_logs(), token)) << probe.all_logs();
}

// =================================================================================================
// Found while writing the tests above (not one of the audit's holes):
// a run whose last attempt was a retry (recorded in the ledger before its
// backoff) and that then ends without another send (here: the request hook
// refuses attempt 2; likewise "deadline" after a slow hook, or the lease
// check at the top of AttemptRun::attempt) settles with that same attempt as
// its `last` entry (src/core/payment_flow.cpp PaymentFlow::run and
// src/core/multi_engine.cpp MultiEngine::step, `result.attempts.back()`). The
// ledger refuses to write entry 1 twice ("entries are never overwritten"),
// the whole settle rolls back, the caller gets recorded:false, and the row
// stays IN_FLIGHT until its lease ends instead of UNKNOWN. DISABLED until
// src/ settles without re-writing an entry it already recorded.
// =================================================================================================

int refuse_attempt_2(pay_headers*, const pay_attempt_info* info, void*) { return info->attempt >= 2 ? 1 : 0; }

TEST_F(Holes, a_run_ending_after_a_recorded_retry_settles_without_writing_that_entry_again) {
  pay_client_options o;
  pay_client_options_init(&o, PAY_CLIENT_OPTIONS_VERSION);
  o.request_hook = &refuse_attempt_2;
  pay_client* raw = nullptr;
  ASSERT_EQ(pay_client_new(&raw, cfg(R"("stripe")", "", R"("ledger":")" + sqlite_url() + "\"").c_str(), &o), PAY_OK);
  ClientPtr c(raw);
  for (const bool batch : {false, true}) {
    const std::string order = batch ? "clash-batch" : "clash-blocking", body = body_for(order);
    sim_->script(order, {"503"});  // attempt 1: retried after a backoff, so recorded first
    ResultPtr r;
    if (batch) {
      pay_batch_item it{};
      it.order_id = order.c_str();
      it.body = body.data();
      it.body_len = body.size();
      ASSERT_EQ(pay_submit_batch(&it, 1, c.get(), nullptr), PAY_OK);
      ASSERT_EQ(it.rc, PAY_OK) << it.message;
      r.reset(it.result);
    } else {
      r = submit_ok(c.get(), order, body);
    }
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << order;
    EXPECT_EQ(pay_result_ledger_error(r.get()), nullptr) << order << ": " << pay_result_json(r.get());
    Json row(ledger_get(c.get(), order));
    EXPECT_EQ(str(at(row.j, "payment"), "state"), "UNKNOWN") << order;
  }
}

}  // namespace
}  // namespace payretry_test
