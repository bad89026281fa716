// The six findings of the outside audit (issue 45), each reproduced against the
// real library through its C ABI and the bundled simulator playing the
// provider, and each named for the rule it proves. Charges are counted by the
// simulator's truth (per order id, across every merchant account and scope),
// which is how a double charge shows.
//
//   1. lookups_carry_the_payments_own_submission_headers
//   2. scope_is_part_of_a_payments_identity_* (two clients on one ledger)
//   3. no_blocking_work_under_an_engine_lock_* (a hanging OAuth2 token endpoint)
//   4. a_verified_answer_must_name_this_request_* (WeChat Pay, Alipay)
//   5. every_request_that_left_is_an_attempt_* (a 401 and the re-send after it),
//      a_resend_after_a_401_gets_paypals_current_state_not_a_second_charge and
//      a_401_on_the_last_attempt_*_is_never_failed_when_it_may_have_been_processed
//   6. reconcile_does_not_repeat_what_cannot_help (PayPal: a decline after a 503)
#include <cJSON.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
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

using Clock = std::chrono::steady_clock;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

long long ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

std::string text_or_empty(const char* s) { return s ? s : ""; }

// ---- a proxy between the client and the simulator -----------------------------------------------

// One HTTP exchange with the simulator on a fresh connection: the raw request
// (head and body, as the client sent them, with Connection: close added) and
// the raw answer up to the simulator's close. Empty when the simulator reset
// the connection without answering.
std::string exchange(uint16_t port, const RawRequest& q) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) ::close(fd);
    return "";
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::string out = q.head + "\r\nConnection: close\r\n\r\n" + q.body;
  for (size_t at = 0; at < out.size();) {
    const long n = ::send(fd, out.data() + at, out.size() - at, MSG_NOSIGNAL);
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }
  std::string in;
  char buf[16384];
  for (;;) {
    const long n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (in.find("\r\n\r\n") == std::string::npos) return "";  // reset: the client sees a lost connection
  return in;
}

// A proxy in front of the simulator that can answer a chosen request with an
// answer it recorded earlier: the man in the middle of finding 4. One request
// per connection (RawServer), every answer marked Connection: close.
class ReplayProxy {
 public:
  // `record(q)`: keep the simulator's answer to q; `replay(q)`: answer q with the kept one.
  ReplayProxy(uint16_t sim_port, std::function<bool(const RawRequest&)> record,
              std::function<bool(const RawRequest&)> replay)
      : server_([this, sim_port, record, replay](const RawRequest& q) {
          if (replay(q)) {
            std::lock_guard<std::mutex> l(mu_);
            ++replayed_;
            return recorded_;
          }
          const std::string answer = exchange(sim_port, q);
          if (record(q)) {
            std::lock_guard<std::mutex> l(mu_);
            recorded_ = answer;
          }
          return answer;
        }) {}
  std::string url() const { return server_.url(); }
  std::string recorded() {
    std::lock_guard<std::mutex> l(mu_);
    return recorded_;
  }
  int replayed() {
    std::lock_guard<std::mutex> l(mu_);
    return replayed_;
  }

 private:
  std::mutex mu_;
  std::string recorded_;
  int replayed_ = 0;
  RawServer server_;  // last: its thread starts once the members above exist
};

// ---- the fixture --------------------------------------------------------------------------------

const char kKeyA[] = "sk_test_integration_secret";  // the fixture simulator's own key: tenant A
const char kKeyB[] = "sk_test_tenant_b_secret";

class TenantsAndSigners : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    char tmpl[] = "/tmp/payretry-tenants-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    SimTest::TearDown();
    for (const char* f : {"/l.db", "/l.db-wal", "/l.db-shm", "/l.db-journal"}) std::remove((dir_ + f).c_str());
    rmdir(dir_.c_str());
  }
  std::string sqlite_url() const { return "sqlite://" + dir_ + "/l.db"; }

  // A simulator started anew with the fixture's options changed by `change`.
  void restart_sim(const std::function<void(payretry_sim::Options&)>& change) {
    sim_->stop();
    payretry_sim::Options o = sim_options();
    change(o);
    sim_ = std::make_unique<payretry_sim::Server>(o);
  }

  // A config: `provider_json` a built-in's name in quotes or an inline
  // profile; `auth_json` the auth object; `retry` "key":value pairs over the
  // fixture's fast defaults; `extra` more members (the ledger among them);
  // `url` the base URL (the simulator's when empty); `create_path` "" for the
  // profile's own.
  std::string conf(const std::string& provider_json, const std::string& auth_json, const std::string& retry,
                   const std::string& extra, const std::string& url = "",
                   const std::string& create_path = "/v1/payments") const {
    std::string c = config("stripe", retry, extra);
    auto swap = [&c](const std::string& from, const std::string& to) {
      const size_t at = c.find(from);
      if (at != std::string::npos) c.replace(at, from.size(), to);
    };
    swap(R"("provider":"stripe")", R"("provider":)" + provider_json);
    swap(R"("auth":{"bearer":"sk_test_integration_secret"})", R"("auth":)" + auth_json);
    if (!url.empty()) swap(R"("base_url":")" + base_url() + "\"", R"("base_url":")" + url + "\"");
    swap(R"("create_path":"/v1/payments",)", create_path.empty() ? "" : R"("create_path":")" + create_path + "\",");
    return c;
  }
  static std::string bearer(const std::string& key) { return R"({"bearer":")" + key + "\"}"; }
  static std::string paypal_auth() {
    return R"({"oauth2":{"client_id":"test-client-id","client_secret":"test-client-secret"}})";
  }

  ClientPtr client_with(const std::string& c, Probe& probe) { return probed_client(c, probe); }

  static ResultPtr submit_ok(pay_client* c, const std::string& order, const std::string& body,
                             const std::vector<pay_header>& headers = {}) {
    pay_submit_options o;
    pay_submit_options_init(&o, PAY_SUBMIT_OPTIONS_VERSION);
    o.headers = headers.empty() ? nullptr : headers.data();
    o.header_count = headers.size();
    pay_result* r = nullptr;
    EXPECT_EQ(pay_submit(&r, c, order.c_str(), body.data(), body.size(), &o), PAY_OK) << pay_error_last()->message;
    return ResultPtr(r);
  }
  static int give_body(pay_body* out, const char* order_id, void*) {
    const std::string b = body_for(order_id);
    return pay_body_set(out, b.data(), b.size());
  }
  static std::string reconcile_with_bodies(pay_client* c) { return reconcile_with(c, &give_body); }
  // The orders a reconcile report names, examined or failed.
  static std::vector<std::string> orders_in(const std::string& report) {
    std::vector<std::string> out;
    Json j(report);
    for (const char* list : {"payments", "failures"}) {
      const cJSON* items = at(j.j, list);
      for (const cJSON* it = items ? items->child : nullptr; it; it = it->next) out.push_back(str(it, "order_id"));
    }
    return out;
  }

  std::string dir_;
};

// =================================================================================================
// Finding 1: a lookup without the payment's own submission headers was taken
// as proof. A header given with the submission (Stripe-Account, a tenant
// header) scopes the provider's keys and payments; the lookup did not carry
// it, searched the default scope, read "not found" as "no payment", and the
// next submit re-sent the key into the tenant, where Checkout.com (which does
// not cache a 500 after processing) charged again.
// =================================================================================================

TEST_F(TenantsAndSigners, lookups_carry_the_payments_own_submission_headers) {
  restart_sim([](payretry_sim::Options& o) {
    o.profile = "checkout_com";
    o.scope_header = "X-Tenant";
  });
  Probe probe;
  auto c = client_with(conf(R"("checkout_com")", bearer(kKeyA), R"("max_attempts":1)",
                            R"("not_found_grace_ms":100,"ledger":")" + sqlite_url() + "\""),
                       probe);
  const std::vector<pay_header> tenant = {{"X-Tenant", "t1"}};
  const std::string order = "f1-cko", body = body_for(order);
  sim_->script(order, {"500"});  // charged in tenant t1, then a 500 that Checkout.com does not cache
  auto first = submit_ok(c.get(), order, body, tenant);
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(first.get());
  ASSERT_EQ(sim_->charges_for(order), 1);

  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // past not_found_grace_ms
  auto q = query_ok(c.get(), order);
  ASSERT_NE(q, nullptr);
  // The lookup searched tenant t1, where the payment is.
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(q.get());
  Json row(ledger_get(c.get(), order));
  for (const cJSON* e = at(row.j, "attempts") ? at(row.j, "attempts")->child : nullptr; e; e = e->next)
    EXPECT_NE(str(e, "verdict"), "absent") << "a lookup in the wrong scope was taken as proof: "
                                           << ledger_get(c.get(), order);

  auto again = submit_ok(c.get(), order, body, tenant);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(pay_result_outcome(again.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(again.get());
  EXPECT_EQ(sim_->requests(), 1) << "the order was sent again";
  EXPECT_EQ(sim_->charges_for(order), 1) << "charged twice";
}

// =================================================================================================
// Finding 2: a ledger row was not bound to the client that wrote it. Two
// clients, one per merchant account, share one SQLite ledger; tenant A's
// payment is UNKNOWN; tenant B's reconcile re-sent A's key and bytes into B's
// account, where the key is new. Each variant below: A's order meets a lost
// answer (or a 500); B, with a payment of its own, reconciles (with a body
// callback that would give the body), submits A's order and queries it; then
// A reconciles. Only A's client may ever send A's payment.
// =================================================================================================

struct Tenant {
  std::string auth;     // the client's auth object
  std::string headers;  // the config's "headers" member, or ""
};

class ScopeIsIdentity : public TenantsAndSigners {
 protected:
  void run(const std::string& provider, const Tenant& a, const Tenant& b, const std::string& fault_a) {
    const std::string grace = R"("not_found_grace_ms":100,)";
    auto extra = [&](const Tenant& t) {
      return grace + (t.headers.empty() ? "" : t.headers + ",") + R"("ledger":")" + sqlite_url() + "\"";
    };
    Probe probe_a, probe_b;
    auto ca = client_with(conf(provider, a.auth, R"("max_attempts":1)", extra(a)), probe_a);
    auto cb = client_with(conf(provider, b.auth, R"("max_attempts":1)", extra(b)), probe_b);
    ASSERT_TRUE(ca && cb);
    const std::string o1 = "f2-a1", b1 = "f2-b1";
    sim_->script(o1, {fault_a});          // charged in A's account; the answer lost (or a 500)
    sim_->script(b1, {"lost_response"});  // B's own payment, charged in B's account
    auto r_a = submit_ok(ca.get(), o1, body_for(o1));
    ASSERT_EQ(pay_result_outcome(r_a.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r_a.get());
    auto r_b = submit_ok(cb.get(), b1, body_for(b1));
    ASSERT_EQ(pay_result_outcome(r_b.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r_b.get());
    ASSERT_EQ(sim_->charges_for(o1), 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));  // past not_found_grace_ms

    // B's reconcile settles B's payment and does not examine A's.
    const std::string report_b = reconcile_with_bodies(cb.get());
    const std::vector<std::string> examined = orders_in(report_b);
    EXPECT_EQ(std::count(examined.begin(), examined.end(), o1), 0) << "B's reconcile examined A's order: " << report_b;
    EXPECT_EQ(std::count(examined.begin(), examined.end(), b1), 1) << report_b;
    EXPECT_EQ(sim_->charges_for(o1), 1) << "B's reconcile charged A's order in B's account";
    EXPECT_EQ(sim_->charges_for(b1), 1);

    // B submitting A's order with the same body: a mismatch, nothing sent.
    const std::string body = body_for(o1);
    pay_result* raw = nullptr;
    const int rc_submit = pay_submit(&raw, cb.get(), o1.c_str(), body.data(), body.size(), nullptr);
    ResultPtr r_submit(raw);
    EXPECT_EQ(rc_submit, PAY_EMISMATCH) << pay_strerror(rc_submit) << ": "
                                        << (raw ? pay_result_json(raw) : pay_error_last()->message);
    EXPECT_EQ(r_submit, nullptr);
    // B querying A's order: a mismatch, nothing sent.
    raw = nullptr;
    const int rc_query = pay_query(&raw, cb.get(), o1.c_str());
    ResultPtr r_query(raw);
    EXPECT_EQ(rc_query, PAY_EMISMATCH) << pay_strerror(rc_query) << ": "
                                       << (raw ? pay_result_json(raw) : pay_error_last()->message);
    EXPECT_EQ(r_query, nullptr);
    for (const Seen& s : probe_b.seen()) EXPECT_EQ(s.order_id, b1) << "B sent " << s.method << " " << s.url;

    // A's own reconcile settles A's order, once.
    const std::string report_a = reconcile_with_bodies(ca.get());
    Json row(ledger_get(ca.get(), o1));
    EXPECT_EQ(str(at(row.j, "payment"), "state"), "SUCCEEDED") << report_a;
    EXPECT_EQ(sim_->charges_for(o1), 1) << "charged twice";
    EXPECT_EQ(sim_->duplicate_orders(), 0);
  }
};

TEST_F(ScopeIsIdentity, scope_is_part_of_a_payments_identity_one_api_key_per_tenant) {
  restart_sim([](payretry_sim::Options& o) { o.api_keys = {kKeyB}; });
  run(R"("stripe")", {bearer(kKeyA), ""}, {bearer(kKeyB), ""}, "lost_response");
}

TEST_F(ScopeIsIdentity, scope_is_part_of_a_payments_identity_one_key_and_a_stripe_account_header_per_tenant) {
  restart_sim([](payretry_sim::Options& o) { o.scope_header = "Stripe-Account"; });
  run(R"("stripe")", {bearer(kKeyA), R"("headers":{"Stripe-Account":"acct_A"})"},
      {bearer(kKeyA), R"("headers":{"Stripe-Account":"acct_B"})"}, "lost_response");
}

// Checkout.com looks a payment up by reference: B's lookup, in B's account,
// reads "not found", which past the grace period proved "no payment".
TEST_F(ScopeIsIdentity, scope_is_part_of_a_payments_identity_lookup_by_reference) {
  restart_sim([](payretry_sim::Options& o) {
    o.profile = "checkout_com";
    o.api_keys = {kKeyB};
  });
  run(R"("checkout_com")", {bearer(kKeyA), ""}, {bearer(kKeyB), ""}, "500");
}

// =================================================================================================
// Finding 3: an OAuth2 token fetch blocked every engine thread. With PayPal's
// token endpoint hanging, payments with a 1 s deadline were answered seconds
// late: a payment started while an engine thread waited for the token was
// not even taken up until that wait ended. Every payment must be answered
// within its deadline (plus a small bound), none sent without a token.
// =================================================================================================

struct Timed {
  Clock::time_point started, answered;
  int rc = -1;
  int outcome = 0;
  int delivery = 0;
  std::string json;
  bool done = false;
};

struct AsyncWait {
  std::mutex mu;
  std::condition_variable cv;
  int left = 0;
};

struct AsyncSlot {
  Timed* t;
  AsyncWait* w;
};

void on_done(int rc, pay_result* r, const char* message, void* payload) {
  auto* s = static_cast<AsyncSlot*>(payload);
  s->t->answered = Clock::now();
  s->t->rc = rc;
  if (r) {
    s->t->outcome = pay_result_outcome(r);
    s->t->delivery = pay_result_delivery(r);
    s->t->json = pay_result_json(r);
    pay_result_free(r);
  } else {
    s->t->json = message ? message : "";
  }
  std::lock_guard<std::mutex> l(s->w->mu);
  s->t->done = true;
  --s->w->left;
  s->w->cv.notify_all();
}

TEST_F(TenantsAndSigners, no_blocking_work_under_an_engine_lock_a_hanging_token_endpoint) {
  restart_sim([](payretry_sim::Options& o) {
    o.profile = "paypal";
    o.oauth2_delay_ms = -1;  // the token endpoint never answers
  });
  constexpr long long kDeadlineMs = 1000, kBoundMs = 500;
  long long worst_overall = 0;
  for (const int threads : {1, 4}) {
    // What the done callbacks write into outlives the client (freeing it waits for them).
    constexpr int kAsync = 32;
    std::vector<Timed> timed(kAsync);
    std::vector<AsyncSlot> slots(kAsync);
    std::vector<std::string> bodies(kAsync);
    AsyncWait wait;
    wait.left = kAsync;
    Probe probe;
    auto c = client_with(conf(R"("paypal")", paypal_auth(),
                              R"("deadline_ms":1000,"attempt_timeout_ms":10000,"connect_timeout_ms":1000)",
                              R"("engine_threads":)" + std::to_string(threads) + R"(,"ledger":"memory:")"),
                         probe);
    ASSERT_TRUE(c);
    // 16 payments at once on the engine, and 100 ms later (while the first
    // token request hangs) 16 more, with 8 threads calling the blocking
    // pay_submit at the same moment.
    for (int i = 0; i < kAsync; ++i) {
      if (i == kAsync / 2) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const std::string order = "f3-e" + std::to_string(threads) + "-" + std::to_string(i);
      bodies[i] = body_for(order);
      slots[i] = {&timed[i], &wait};
      timed[i].started = Clock::now();
      const int rc = pay_submit_async(c.get(), order.c_str(), bodies[i].data(), bodies[i].size(), nullptr, &on_done,
                                      &slots[i]);
      ASSERT_EQ(rc, PAY_OK) << pay_error_last()->message;
    }
    constexpr int kBlocking = 8;
    std::vector<Timed> blocking(kBlocking);
    std::vector<std::thread> callers;
    for (int i = 0; i < kBlocking; ++i) {
      callers.emplace_back([&, i] {
        const std::string order = "f3-b" + std::to_string(threads) + "-" + std::to_string(i), body = body_for(order);
        Timed& t = blocking[i];
        pay_result* r = nullptr;
        t.started = Clock::now();
        t.rc = pay_submit(&r, c.get(), order.c_str(), body.data(), body.size(), nullptr);
        t.answered = Clock::now();
        if (r) {
          t.outcome = pay_result_outcome(r);
          t.delivery = pay_result_delivery(r);
          t.json = pay_result_json(r);
          pay_result_free(r);
        }
        t.done = true;
      });
    }
    for (std::thread& t : callers) t.join();
    {
      std::unique_lock<std::mutex> l(wait.mu);
      ASSERT_TRUE(wait.cv.wait_for(l, std::chrono::seconds(90), [&] { return wait.left == 0; }))
          << wait.left << " asynchronous payments never answered";
    }
    long long worst = 0;
    auto check = [&](const Timed& t, const char* how, int i) {
      const long long took = ms_between(t.started, t.answered);
      worst = std::max(worst, took - kDeadlineMs);
      EXPECT_LE(took, kDeadlineMs + kBoundMs) << how << " payment " << i << " (engine_threads " << threads
                                              << ") answered after " << took << " ms: " << t.json;
      EXPECT_EQ(t.rc, PAY_OK) << how << " payment " << i << ": " << t.json;
      EXPECT_NE(t.outcome, PAY_OUTCOME_SUCCEEDED) << t.json;
      EXPECT_EQ(t.delivery, PAY_DELIVERY_NOT_SENT) << how << " payment " << i << ": " << t.json;
    };
    for (int i = 0; i < kAsync; ++i) check(timed[i], "asynchronous", i);
    for (int i = 0; i < kBlocking; ++i) check(blocking[i], "blocking", i);
    std::printf("[ finding 3 ] engine_threads %d: worst answer %lld ms past the %lld ms deadline\n", threads, worst,
                kDeadlineMs);
    worst_overall = std::max(worst_overall, worst);
    c.reset();
  }
  RecordProperty("worst_overrun_ms", std::to_string(worst_overall));
  EXPECT_EQ(sim_->requests(), 0) << "a payment left without a token";
  EXPECT_EQ(sim_->total_charges(), 0);
}

// =================================================================================================
// Finding 4: answer verification accepted another order's genuinely signed
// answer. A man in the middle answers order B's lookup with order A's signed
// lookup answer (recorded from a real lookup of A): B must stay UNKNOWN, the
// error saying the answer did not verify or names another order, and B was
// never charged.
// =================================================================================================

class VerifiedAnswers : public TenantsAndSigners {
 protected:
  // Order A: charged, its answer lost, then queried through the proxy (which
  // records the answer). Order B: reset before processing, then queried; the
  // proxy answers with A's.
  void run(const std::string& provider, const std::string& auth, const std::string& extra,
           const std::string& create_path, const std::string& order_a, const std::string& order_b,
           const std::function<std::string(const std::string&)>& body,
           const std::function<bool(const RawRequest&, const std::string&)>& is_lookup_of) {
    ReplayProxy proxy(
        sim_->port(), [&](const RawRequest& q) { return is_lookup_of(q, order_a); },
        [&](const RawRequest& q) { return is_lookup_of(q, order_b); });
    Probe probe;
    auto c = client_with(conf(provider, auth, R"("max_attempts":1,"attempt_timeout_ms":3000)",
                              (extra.empty() ? "" : extra + ",") + R"("ledger":")" + sqlite_url() + "\"",
                              proxy.url(), create_path),
                         probe);
    ASSERT_TRUE(c);
    sim_->script(order_a, {"lost_response"});
    auto ra = submit_ok(c.get(), order_a, body(order_a));
    ASSERT_EQ(pay_result_outcome(ra.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(ra.get());
    auto qa = query_ok(c.get(), order_a);
    ASSERT_EQ(pay_result_outcome(qa.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(qa.get());
    ASSERT_TRUE(has(proxy.recorded(), order_a)) << "no lookup answer of A recorded: " << proxy.recorded();
    const std::string id_a = text_or_empty(pay_result_provider_payment_id(qa.get()));

    sim_->script(order_b, {"reset_before"});  // never charged; the client cannot know
    auto rb = submit_ok(c.get(), order_b, body(order_b));
    ASSERT_EQ(pay_result_outcome(rb.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(rb.get());
    auto qb = query_ok(c.get(), order_b);
    ASSERT_NE(qb, nullptr);
    EXPECT_GE(proxy.replayed(), 1) << "B's lookup never reached the proxy";
    EXPECT_NE(pay_result_outcome(qb.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(qb.get());
    EXPECT_NE(pay_result_outcome(qb.get()), PAY_OUTCOME_FAILED) << pay_result_json(qb.get());
    EXPECT_EQ(pay_result_outcome(qb.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(qb.get());
    EXPECT_TRUE(id_a.empty() || text_or_empty(pay_result_provider_payment_id(qb.get())) != id_a)
        << "B shows A's payment id: " << pay_result_json(qb.get());
    const std::string why = text_or_empty(pay_result_error(qb.get())) + " " + ledger_get(c.get(), order_b);
    EXPECT_TRUE(has(why, "verif") || has(why, "another order") || has(why, order_a))
        << "the error does not say the answer was not verified or names another order: " << pay_result_json(qb.get());
    EXPECT_EQ(sim_->charges_for(order_b), 0);
    EXPECT_EQ(sim_->charges_for(order_a), 1);
  }
};

TEST_F(VerifiedAnswers, a_verified_answer_must_name_this_request_wechatpay_out_trade_no) {
  sim_->set_profile("wechatpay_v3");  // answers signed with the test keys (the fixture's keys_dir)
  const std::string keys = PAYRETRY_TEST_KEYS;
  run(R"("wechatpay_v3")",
      R"({"wechatpay":{"serial_no":"3775B6A45ACD588826D15E583A95F5DD3F3B4DD8","private_key_file":")" + keys +
          R"(/wechat_merchant_key.pem","platform_public_key_file":")" + keys + R"(/wechat_platform_pub.pem"}})",
      R"("merchant_id":"1230000109")", "/v1/payments", "wxA000001", "wxB000002",
      [](const std::string& o) { return R"({"out_trade_no":")" + o + R"(","amount":{"total":100,"currency":"CNY"}})"; },
      [](const RawRequest& q, const std::string& o) {
        return q.method() == "GET" && has(q.head, "/out-trade-no/" + o + "?");
      });
}

TEST_F(VerifiedAnswers, a_verified_answer_must_name_this_request_alipay_out_trade_no) {
  sim_->set_profile("alipay");
  const std::string keys = PAYRETRY_TEST_KEYS;
  run(R"("alipay")",
      R"({"alipay":{"app_id":"2021000000000001","private_key_file":")" + keys +
          R"(/alipay_app_key.pem","alipay_public_key_file":")" + keys + R"(/alipay_pub.pem"}})",
      "", "", "aliA000001", "aliB000002",
      [](const std::string& o) {
        return R"({"biz_content":{"out_trade_no":")" + o + R"(","total_amount":"10.00","subject":"x"}})";
      },
      [](const RawRequest& q, const std::string& o) {
        return has(q.head.substr(0, q.head.find('\n')), "alipay.trade.query") && has(q.body, o);
      });
}

// =================================================================================================
// Finding 5: a 401 and the re-send after it were one attempt. After any 401
// the engine renews the OAuth2 token and sends again; the first send was in
// neither the result's attempts nor the ledger's history, and a provider that
// answers 401 after processing (keeping no record of the key) charged twice.
// =================================================================================================

// The attempt entries of a result's JSON or a ledger row, as (number, HTTP status).
std::vector<std::pair<long, long>> attempt_statuses(const cJSON* attempts, bool sends_only) {
  std::vector<std::pair<long, long>> out;
  for (const cJSON* e = attempts ? attempts->child : nullptr; e; e = e->next) {
    if (sends_only && !str(e, "kind").empty() && str(e, "kind") != "send") continue;
    out.emplace_back(num(e, "attempt"), num(e, "http_status"));
  }
  return out;
}

TEST_F(TenantsAndSigners, every_request_that_left_is_an_attempt_a_401_after_processing) {
  sim_->set_profile("paypal");
  // A provider that does not promise to replay: nothing after a possibly
  // processed send may be sent again.
  const std::string profile = R"({"extends":"paypal","name":"paypal_no_replay","replay":"none"})";
  Probe probe;
  auto c = client_with(conf(profile, paypal_auth(), "", R"("ledger":")" + sqlite_url() + "\""), probe);
  // A token first, on another order: the 401 below is then about that token.
  auto warm = submit_ok(c.get(), "f5-warm", body_for("f5-warm"));
  ASSERT_EQ(pay_result_outcome(warm.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(warm.get());

  const std::string order = "f5-after";
  // Charged, then 401 invalid_token, and no record of the request id: what a
  // profile that promises no replay must assume a 401 can hide.
  sim_->script(order, {"401_after_forgetting"});
  auto r = submit_ok(c.get(), order, body_for(order));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(sim_->charges_for(order), 1) << "the 401 was followed by a re-send that charged again: "
                                         << pay_result_json(r.get());
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_MAYBE_PROCESSED) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_attempts(r.get()), 1) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_http_status(r.get()), 401) << pay_result_json(r.get());
  Json result(pay_result_json(r.get()));
  const auto in_result = attempt_statuses(at(result.j, "attempts"), false);
  EXPECT_EQ(in_result, (std::vector<std::pair<long, long>>{{1, 401}})) << pay_result_json(r.get());
  Json row(ledger_get(c.get(), order));
  const auto in_history = attempt_statuses(at(row.j, "attempts"), true);
  EXPECT_EQ(in_history, (std::vector<std::pair<long, long>>{{1, 401}})) << ledger_get(c.get(), order);
  bool logged = false;
  for (const std::string& line : probe.lines())
    logged = logged || (has(line, R"("event":"attempt")") && has(line, order) && has(line, R"("http_status":401)"));
  EXPECT_TRUE(logged) << "no attempt line for the 401 send";
}

TEST_F(TenantsAndSigners, every_request_that_left_is_an_attempt_a_401_and_the_renewed_resend) {
  sim_->set_profile("paypal");
  Probe probe;
  auto c = client_with(conf(R"("paypal")", paypal_auth(), "", R"("ledger":")" + sqlite_url() + "\""), probe);
  auto warm = submit_ok(c.get(), "f5-warm2", body_for("f5-warm2"));
  ASSERT_EQ(pay_result_outcome(warm.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(warm.get());
  // PayPal forgets the client's token: a plain 401 before anything is
  // processed. PayPal replays the current state of a request id it knows,
  // so the re-send with a fresh token is safe; both sends are attempts.
  sim_->revoke_oauth2_tokens();
  const std::string order = "f5-renewed";
  auto r = submit_ok(c.get(), order, body_for(order));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_attempts(r.get()), 2) << pay_result_json(r.get());
  Json result(pay_result_json(r.get()));
  const auto in_result = attempt_statuses(at(result.j, "attempts"), false);
  ASSERT_EQ(in_result.size(), 2u) << pay_result_json(r.get());
  EXPECT_EQ(in_result[0], (std::pair<long, long>{1, 401})) << pay_result_json(r.get());
  EXPECT_EQ(in_result[1].first, 2) << pay_result_json(r.get());
  EXPECT_EQ(in_result[1].second / 100, 2) << pay_result_json(r.get());
  Json row(ledger_get(c.get(), order));
  const auto in_history = attempt_statuses(at(row.j, "attempts"), true);
  ASSERT_EQ(in_history.size(), 2u) << ledger_get(c.get(), order);
  EXPECT_EQ(in_history[0], (std::pair<long, long>{1, 401})) << ledger_get(c.get(), order);
  EXPECT_EQ(in_history[1].first, 2) << ledger_get(c.get(), order);
  EXPECT_EQ(sim_->charges_for(order), 1);
}

// PayPal documents that a re-send with the same PayPal-Request-Id returns the
// current state of the earlier request. So after a 401 that came after the
// payment was made (401_after: the request id kept), the renewed re-send gets
// that payment back: one charge, and both sends in the result and the history.
TEST_F(TenantsAndSigners, a_resend_after_a_401_gets_paypals_current_state_not_a_second_charge) {
  sim_->set_profile("paypal");
  Probe probe;
  auto c = client_with(conf(R"("paypal")", paypal_auth(), "", R"("ledger":")" + sqlite_url() + "\""), probe);
  auto warm = submit_ok(c.get(), "f5-warm3", body_for("f5-warm3"));
  ASSERT_EQ(pay_result_outcome(warm.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(warm.get());
  const std::string order = "f5-paypal";
  sim_->script(order, {"401_after"});  // charged, then 401 invalid_token; the request id kept
  auto r = submit_ok(c.get(), order, body_for(order));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(sim_->charges_for(order), 1) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_attempts(r.get()), 2) << pay_result_json(r.get());
  Json result(pay_result_json(r.get()));
  const auto in_result = attempt_statuses(at(result.j, "attempts"), false);
  ASSERT_EQ(in_result.size(), 2u) << pay_result_json(r.get());
  EXPECT_EQ(in_result[0], (std::pair<long, long>{1, 401})) << pay_result_json(r.get());
  EXPECT_EQ(in_result[1].first, 2) << pay_result_json(r.get());
  EXPECT_EQ(in_result[1].second / 100, 2) << pay_result_json(r.get());
  Json row(ledger_get(c.get(), order));
  const auto in_history = attempt_statuses(at(row.j, "attempts"), true);
  ASSERT_EQ(in_history.size(), 2u) << ledger_get(c.get(), order);
  EXPECT_EQ(in_history[0], (std::pair<long, long>{1, 401})) << ledger_get(c.get(), order);
  EXPECT_EQ(in_history[1].first, 2) << ledger_get(c.get(), order);
  EXPECT_EQ(sim_->requests(), 3);  // the warm-up, the 401, the re-send
}

// =================================================================================================
// A 401 on the last allowed attempt: the credential is renewed but no attempt
// is left to re-send. The provider may have processed the payment before the
// 401 (PayPal's 401_after here), so the payment is UNKNOWN, never FAILED,
// unless the profile states that a 401 proves nothing was processed.
// =================================================================================================

TEST_F(TenantsAndSigners, a_401_on_the_last_attempt_is_never_failed_when_it_may_have_been_processed) {
  sim_->set_profile("paypal");
  Probe probe;
  auto c = client_with(conf(R"("paypal")", paypal_auth(), R"("max_attempts":1)",
                            R"("ledger":")" + sqlite_url() + "\""),
                       probe);
  auto warm = submit_ok(c.get(), "l401-warm", body_for("l401-warm"));
  ASSERT_EQ(pay_result_outcome(warm.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(warm.get());
  const std::string order = "l401-only";
  sim_->script(order, {"401_after"});  // charged, then 401 invalid_token
  auto r = submit_ok(c.get(), order, body_for(order));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(sim_->charges_for(order), 1);
  EXPECT_NE(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED) << "FAILED, and the provider charged: "
                                                              << pay_result_json(r.get());
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_MAYBE_PROCESSED) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_attempts(r.get()), 1) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_http_status(r.get()), 401) << pay_result_json(r.get());
  Json result(pay_result_json(r.get()));
  EXPECT_EQ(attempt_statuses(at(result.j, "attempts"), false), (std::vector<std::pair<long, long>>{{1, 401}}))
      << pay_result_json(r.get());
  Json row(ledger_get(c.get(), order));
  EXPECT_EQ(attempt_statuses(at(row.j, "attempts"), true), (std::vector<std::pair<long, long>>{{1, 401}}))
      << ledger_get(c.get(), order);
  EXPECT_EQ(str(at(row.j, "payment"), "state"), "UNKNOWN") << ledger_get(c.get(), order);
  EXPECT_EQ(sim_->requests(), 2);  // the warm-up and the one send: no attempt was left
}

TEST_F(TenantsAndSigners, a_401_on_the_last_attempt_after_429s_is_never_failed_when_it_may_have_been_processed) {
  sim_->set_profile("paypal");
  sim_->set_retry_after_s(0);
  Probe probe;
  auto c = client_with(conf(R"("paypal")", paypal_auth(), "", R"("ledger":")" + sqlite_url() + "\""), probe);
  const std::string order = "l401-429s";
  sim_->script(order, {"429", "429", "429", "401_after"});  // the fourth and last send is charged, then 401
  auto r = submit_ok(c.get(), order, body_for(order));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(sim_->charges_for(order), 1);
  EXPECT_NE(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED) << "FAILED, and the provider charged: "
                                                              << pay_result_json(r.get());
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_attempts(r.get()), 4) << pay_result_json(r.get());
  Json result(pay_result_json(r.get()));
  const std::vector<std::pair<long, long>> sends = {{1, 429}, {2, 429}, {3, 429}, {4, 401}};
  EXPECT_EQ(attempt_statuses(at(result.j, "attempts"), false), sends) << pay_result_json(r.get());
  Json row(ledger_get(c.get(), order));
  EXPECT_EQ(attempt_statuses(at(row.j, "attempts"), true), sends) << ledger_get(c.get(), order);
}

// =================================================================================================
// Finding 6 (liveness): a PayPal payment that met a 503 and then a stored
// decline is UNKNOWN (a final answer after a possibly processed attempt); a
// same-key re-send would only get the decline again, so reconcile must not
// send it pass after pass.
// =================================================================================================

TEST_F(TenantsAndSigners, reconcile_does_not_repeat_what_cannot_help) {
  sim_->set_profile("paypal");
  Probe probe;
  auto c = client_with(conf(R"("paypal")", paypal_auth(), "", R"("ledger":")" + sqlite_url() + "\""), probe);
  const std::string order = "f6-declined";
  sim_->script(order, {"503", "decline"});
  auto r = submit_ok(c.get(), order, body_for(order));
  ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  const long sent = sim_->requests();
  ASSERT_EQ(sent, 2);
  const std::string history = ledger_get(c.get(), order);
  for (int pass = 1; pass <= 3; ++pass) {
    const std::string report = reconcile_with_bodies(c.get());
    EXPECT_EQ(sim_->requests(), sent) << "pass " << pass << " sent the payment again: " << report
                                      << "\nthe history it read: " << history;
    Json j(report);
    EXPECT_EQ(num(j.j, "UNKNOWN"), 1) << report;
    const cJSON* first = cJSON_GetArrayItem(at(j.j, "payments"), 0);
    EXPECT_FALSE(str(first, "error").empty()) << "no reason given: " << report;
  }
  Json row(ledger_get(c.get(), order));
  EXPECT_EQ(str(at(row.j, "payment"), "state"), "UNKNOWN");
  const std::string stats = client_stats(c.get());
  Json s(stats);
  EXPECT_GE(num(at(s.j, "reconcile_left_unknown"), "final_answer"), 1) << stats;
  EXPECT_EQ(sim_->charges_for(order), 0);
}

}  // namespace
}  // namespace payretry_test
