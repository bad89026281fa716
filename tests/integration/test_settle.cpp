// pay_query and pay_reconcile against the simulator: an UNKNOWN payment is
// settled by asking the provider, never by guessing, and a re-send happens
// only with the stored key, the same bytes, and while the key is valid.
#include <cJSON.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "sim_fixture.hpp"

namespace payretry_test {
namespace {

// The simulator's own lookup: GET /v1/payments?order_id=X ->
// {"total_count":N,"data":[...]}. It searches by the body's order_id, which
// every request carries (reference_path), so "none" can prove no payment.
const char* kLookupProfile =
    R"({"extends":"stripe","name":"sim","lookup":{"by":"order_id","method":"GET",)"
    R"("path":"/v1/payments?order_id={order_id}","status_path":"$.data[0].status","id_path":"$.data[0].id",)"
    R"("status_map":{"succeeded":"SUCCEEDED"},"reference_path":"$.order_id",)"
    R"("not_found":{"status":200,"code_path":"$.total_count","codes":["0"]}}})";

class Settle : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    char tmpl[] = "/tmp/payretry-settle-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    SimTest::TearDown();
    for (const char* f : {"/l.db", "/l.db-wal", "/l.db-shm"}) std::remove((dir_ + f).c_str());
    rmdir(dir_.c_str());
  }
  // Every client of a test shares one SQLite ledger, as restarted processes would.
  std::string cfg(const std::string& provider_json, int64_t grace_ms, const std::string& retry = "") {
    std::string c = config("stripe", retry, R"("not_found_grace_ms":)" + std::to_string(grace_ms) +
                                                R"(,"ledger":"sqlite://)" + dir_ + R"(/l.db")");
    // Swap the provider name for the inline profile.
    const std::string from = R"("provider":"stripe")";
    c.replace(c.find(from), from.size(), R"("provider":)" + provider_json);
    return c;
  }
  std::string dir_;
  ResultPtr query(pay_client* c, const std::string& order) {
    pay_result* r = nullptr;
    EXPECT_EQ(pay_query(&r, c, order.c_str()), PAY_OK) << pay_error_last()->message;
    return ResultPtr(r);
  }
  static int give_body(pay_body* out, const char* order_id, void*) {
    const std::string b = body_for(order_id);
    return pay_body_set(out, b.data(), b.size());
  }
  static std::string reconcile(pay_client* c, bool with_bodies) {
    pay_reconcile_options o = PAY_RECONCILE_OPTIONS_INIT;
    if (with_bodies) o.body_for = &give_body;
    pay_buf b = {nullptr, 0};
    EXPECT_EQ(pay_reconcile(&b, c, &o), PAY_OK) << pay_error_last()->message;
    std::string s = b.ptr ? b.ptr : "";
    pay_buf_dispose(&b);
    return s;
  }
  static int count(const std::string& report, const char* outcome) {
    cJSON* j = cJSON_Parse(report.c_str());
    const cJSON* v = cJSON_GetObjectItem(j, outcome);
    const int n = cJSON_IsNumber(v) ? v->valueint : -1;
    cJSON_Delete(j);
    return n;
  }
};

TEST_F(Settle, QueryTurnsAnUnknownPaymentIntoTheProvidersTruth) {
  sim_->script("s-q", {"lost_response", "lost_response", "lost_response", "lost_response"});
  auto c = client(cfg(kLookupProfile, 60000));
  auto first = submit(c.get(), "s-q");
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN);
  auto q = query(c.get(), "s-q");
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(q.get());
  EXPECT_EQ(pay_result_from_ledger(q.get()), 0);
  ASSERT_NE(pay_result_provider_payment_id(q.get()), nullptr);
  EXPECT_EQ(sim_->charge_ids_for("s-q").at(0), pay_result_provider_payment_id(q.get()));
  // Settled for good: a resubmit comes from the ledger with nothing sent.
  const long before = sim_->requests();
  auto again = submit(c.get(), "s-q");
  EXPECT_EQ(pay_result_outcome(again.get()), PAY_OUTCOME_SUCCEEDED);
  EXPECT_EQ(pay_result_from_ledger(again.get()), 1);
  EXPECT_EQ(sim_->requests(), before);
  EXPECT_EQ(sim_->charges_for("s-q"), 1);
}

TEST_F(Settle, NotFoundIsProofOnlyAfterTheGracePeriod) {
  sim_->script("s-nf", {"reset_before", "reset_before", "reset_before", "reset_before"});
  auto lagging = client(cfg(kLookupProfile, 60000));
  auto first = submit(lagging.get(), "s-nf");
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN);
  ASSERT_EQ(pay_result_delivery(first.get()), PAY_DELIVERY_MAYBE_PROCESSED);
  auto early = query(lagging.get(), "s-nf");
  EXPECT_EQ(pay_result_outcome(early.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_delivery(early.get()), PAY_DELIVERY_MAYBE_PROCESSED);
  EXPECT_NE(std::string(pay_result_error(early.get())).find("grace"), std::string::npos);
  lagging.reset();
  auto c = client(cfg(kLookupProfile, 0));
  auto late = query(c.get(), "s-nf");
  EXPECT_EQ(pay_result_outcome(late.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_EQ(pay_result_delivery(late.get()), PAY_DELIVERY_NOT_SENT);
  // Now a reconcile may finish it with the same key and the same bytes.
  const std::string report = reconcile(c.get(), true);
  EXPECT_EQ(count(report, "SUCCEEDED"), 1) << report;
  EXPECT_EQ(sim_->charges_for("s-nf"), 1);
  expect_one_key_and_identical_bytes();
}

TEST_F(Settle, ReplayOnlyProviderIsSettledByASameKeyResendWithTheBody) {
  // Stripe offers no lookup by merchant reference, and a payment whose
  // answers were lost has no PaymentIntent id to read: its safe lookup is a
  // same-key re-send within 24 h, which needs the body.
  sim_->script("s-r", {"lost_response", "lost_response", "lost_response", "lost_response"});
  auto c = client(config());
  auto first = submit(c.get(), "s-r");
  ASSERT_EQ(pay_result_outcome(first.get()), PAY_OUTCOME_UNKNOWN);
  auto q = query(c.get(), "s-r");
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_UNKNOWN);
  EXPECT_NE(std::string(pay_result_error(q.get())).find("re-send"), std::string::npos);
  const std::string without = reconcile(c.get(), false);
  EXPECT_EQ(count(without, "UNKNOWN"), 1) << without;
  EXPECT_NE(without.find("no body"), std::string::npos) << without;
  const std::string with = reconcile(c.get(), true);
  EXPECT_EQ(count(with, "SUCCEEDED"), 1) << with;
  EXPECT_EQ(sim_->charges_for("s-r"), 1);
  expect_one_key_and_identical_bytes();
}

TEST_F(Settle, QueryOfAnUnknownOrderIsNotFound) {
  auto c = client(cfg(kLookupProfile, 0));
  pay_result* r = nullptr;
  EXPECT_EQ(pay_query(&r, c.get(), "never-submitted"), PAY_ENOTFOUND);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(pay_query(&r, nullptr, "x"), PAY_EINVALID);
}

class SettleChaos : public Settle {
 protected:
  payretry_sim::Options sim_options() override {
    auto o = Settle::sim_options();
    o.threads = 2;
    o.seed = 77;
    o.slow_ms = 400;
    o.faults = {{"reset_before", 0.12}, {"lost_response", 0.15}, {"slow", 0.03}, {"503", 0.08},
                {"500", 0.05},          {"decline", 0.03},       {"malformed", 0.03}};
    return o;
  }
};

TEST_F(SettleChaos, ThousandPaymentsThenReconcileLeaveNothingTheProviderCanTell) {
  constexpr int kPayments = 1000, kThreads = 8;
  auto c = client(cfg(kLookupProfile, 0, R"("max_attempts":2,"attempt_timeout_ms":250,"deadline_ms":3000)"));
  std::atomic<int> next{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&] {
      for (int i; (i = next++) < kPayments;) {
        const std::string order = "sc-" + std::to_string(i), body = body_for(order);
        pay_result* r = nullptr;
        pay_submit(&r, c.get(), order.c_str(), body.data(), body.size(), nullptr);
        pay_result_free(r);
      }
    });
  for (auto& t : ts) t.join();
  pay_buf b = {nullptr, 0};
  ASSERT_EQ(pay_ledger_list(&b, c.get(), "UNKNOWN", 0, 100000), PAY_OK);
  cJSON* before = cJSON_Parse(b.ptr);
  const int unknown_before = cJSON_GetArraySize(before);
  cJSON_Delete(before);
  pay_buf_dispose(&b);
  sim_->set_faults({});  // the provider recovers; now settle
  // Recovered means its requests in progress are done too: a `slow` request
  // it still holds makes a lookup answer "absent" and a same-key re-send
  // "409 in progress", and reconcile rightly leaves that payment UNKNOWN.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // slow_ms 400, plus room
  const std::string report = reconcile(c.get(), true);
  ASSERT_EQ(pay_ledger_list(&b, c.get(), nullptr, 0, 100000), PAY_OK);
  cJSON* all = cJSON_Parse(b.ptr);
  pay_buf_dispose(&b);
  int succeeded = 0, failed = 0, unknown = 0, mismatched = 0;
  for (const cJSON* p = all ? all->child : nullptr; p; p = p->next) {
    const std::string order = cJSON_GetObjectItem(p, "order_id")->valuestring;
    const std::string state = cJSON_GetObjectItem(p, "state")->valuestring;
    const int charges = sim_->charges_for(order);
    if (state == "SUCCEEDED") ++succeeded, mismatched += charges != 1;
    if (state == "FAILED") ++failed, mismatched += charges != 0;
    if (state == "UNKNOWN") ++unknown;
  }
  cJSON_Delete(all);
  std::printf("settle chaos: %d payments, %d UNKNOWN before reconcile, after: SUCCEEDED %d FAILED %d UNKNOWN %d; "
              "duplicates %d\n",
              kPayments, unknown_before, succeeded, failed, unknown, sim_->duplicate_orders());
  EXPECT_GT(unknown_before, 0);
  EXPECT_EQ(unknown, 0) << report.substr(0, 2000);
  EXPECT_EQ(mismatched, 0);
  EXPECT_EQ(succeeded + failed, kPayments);
  EXPECT_EQ(sim_->duplicate_orders(), 0);
}

}  // namespace
}  // namespace payretry_test

namespace payretry_test {
namespace {

TEST_F(Settle, ConcurrentReconcilersSettleEachPaymentOnceUnderLeases) {
  auto c = client(cfg(kLookupProfile, 0, R"("max_attempts":1)"));
  for (int i = 0; i < 40; ++i) {
    const std::string order = "cr-" + std::to_string(i);
    sim_->script(order, {i % 2 ? "lost_response" : "reset_before"});
    auto r = submit(c.get(), order);
    ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
  }
  // Three workers (separate clients, one ledger file) reconcile at once,
  // with short leases: two workers can each meet the other's claim and step
  // aside (IN_PROGRESS), and a claim can outlive its worker's pass, so one
  // pass at once need not settle every payment. The next pass, after the
  // leases end, does; what must always hold is that none is paid twice.
  std::string reconciler = cfg(kLookupProfile, 0, R"("deadline_ms":1000)");
  const std::string sqlite = R"("ledger":"sqlite://)" + dir_ + R"(/l.db")";
  reconciler.replace(reconciler.find(sqlite), sqlite.size(),
                     R"("ledger":{"url":"sqlite://)" + dir_ + R"(/l.db","lease_margin_ms":200})");
  std::vector<std::string> reports(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t)
    ts.emplace_back([&, t] {
      auto mine = client(reconciler);
      reports[t] = reconcile(mine.get(), true);
    });
  for (auto& t : ts) t.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  reports[3] = reconcile(client(reconciler).get(), true);
  int settled = 0;
  for (const std::string& r : reports) settled += count(r, "SUCCEEDED");
  EXPECT_GE(settled, 40);  // a payment may be reported by two workers, never paid twice
  for (int i = 0; i < 40; ++i) EXPECT_EQ(sim_->charges_for("cr-" + std::to_string(i)), 1) << i;
  EXPECT_EQ(sim_->duplicate_orders(), 0);
  pay_buf b = {nullptr, 0};
  ASSERT_EQ(pay_ledger_list(&b, c.get(), "UNKNOWN", 0, 1000), PAY_OK);
  EXPECT_STREQ(b.ptr, "[]");
  pay_buf_dispose(&b);
}

TEST_F(Settle, ProfileFromAFileIsLoaded) {
  const std::string path = dir_ + "/acme.json";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(kLookupProfile, f);
    std::fclose(f);
  }
  sim_->script("s-file", {"lost_response", "lost_response", "lost_response", "lost_response"});
  auto c = client(cfg("\"" + path + "\"", 0));
  auto r = submit(c.get(), "s-file");
  ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
  auto q = query(c.get(), "s-file");
  EXPECT_EQ(pay_result_outcome(q.get()), PAY_OUTCOME_SUCCEEDED);
  std::remove(path.c_str());
  pay_client* bad = nullptr;
  EXPECT_EQ(pay_client_new(&bad, cfg(R"({"extends":"stripe","classify":[{"when":{"status":"6xx"},"verdict":"retry"}]})", 0).c_str(),
                           nullptr),
            PAY_ECONFIG);
  EXPECT_NE(std::string(pay_error_last()->message).find("classify[0].when.status"), std::string::npos)
      << pay_error_last()->message;
}

}  // namespace
}  // namespace payretry_test
