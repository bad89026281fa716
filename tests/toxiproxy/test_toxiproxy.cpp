// Toxiproxy (Shopify's fault proxy, not ours) between payretry and the test
// PostgreSQL, with the real library through its C ABI and the in-process
// provider simulator. run_toxiproxy.sh installs and starts toxiproxy and
// gives its API as TOXIPROXY_URL.
//
// For every payment, whatever the proxy does to the ledger's connection:
//   - the call returns within its deadline plus the ledger's bound: a
//     payment meets at most two ledger calls that can outlast its own time
//     (a record before a retry, and the settle), each at most
//     2 x ledger.timeout_ms (src/ledger/ledger_postgres.cpp);
//   - once a byte may have left (the request hook saw an attempt), the
//     answer is a result, never an error code (a ledger failure then shows
//     as "recorded": false with a "ledger_error");
//   - no order is charged twice (the simulator's truth).
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <payretry/payretry.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ledger_fixture.hpp"
#include "sim_fixture.hpp"

namespace {

using namespace payretry_test;
using ledger_test::ScratchStore;
using ledger_test::Kind;

constexpr int64_t kDeadlineMs = 3000;
constexpr int64_t kLedgerTimeoutMs = 1000;
constexpr int64_t kSlackMs = 500;
// Two ledger calls past the deadline, each within 2 x ledger.timeout_ms.
constexpr int64_t kPaymentBoundMs = kDeadlineMs + 2 * (2 * kLedgerTimeoutMs) + kSlackMs;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// ---- toxiproxy's HTTP API --------------------------------------------------

size_t collect(char* p, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(p, size * n);
  return size * n;
}

// METHOD path with a JSON body; returns the status, the answer in `out`.
long toxi(const std::string& method, const std::string& path, const std::string& body = "",
          std::string* out = nullptr) {
  CURL* c = curl_easy_init();
  std::string answer;
  const std::string url = env("TOXIPROXY_URL") + path;
  curl_slist* h = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
  if (!body.empty()) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
  long status = 0;
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  if (out) *out = answer;
  return status;
}

// ---- one payment's answer ---------------------------------------------------

struct Answer {
  std::string order;
  int rc = -1;
  std::string message;
  std::string json;
  int outcome = -1;
  int64_t ms = 0;
};

int64_t since_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
}

class Toxiproxy : public SimTest {
 protected:
  payretry_sim::Options sim_options() override {
    payretry_sim::Options o = SimTest::sim_options();
    o.slow_ms = 600;  // a "slow" script holds the answer this long
    return o;
  }

  void SetUp() override {
    LEDGER_REQUIRE_PG();
    ASSERT_FALSE(env("TOXIPROXY_URL").empty()) << "run through run_toxiproxy.sh, which starts toxiproxy";
    SimTest::SetUp();
    store_ = std::make_unique<ScratchStore>(Kind::postgres);
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(ledger_test::pg_base_url().c_str(), &err);
    ASSERT_NE(opts, nullptr);
    std::string host = "127.0.0.1", port = "5432", user, db, password;
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
      if (!o->val) continue;
      const std::string k = o->keyword;
      if (k == "host" || k == "hostaddr") host = o->val;
      else if (k == "port") port = o->val;
      else if (k == "user") user = o->val;
      else if (k == "dbname") db = o->val;
      else if (k == "password") password = o->val;
    }
    PQconninfoFree(opts);
    name_ = "pg-" + std::to_string(getpid()) + "-" + ledger_test::random_hex(6);
    std::string answer;
    ASSERT_EQ(toxi("POST", "/proxies",
                   R"({"name":")" + name_ + R"(","listen":"127.0.0.1:0","upstream":")" + host + ":" + port +
                       R"(","enabled":true})",
                   &answer),
              201)
        << answer;
    const size_t at = answer.find("\"listen\":\"127.0.0.1:");
    ASSERT_NE(at, std::string::npos) << answer;
    proxy_port_ = std::stoi(answer.substr(at + 20));
    const std::string base = "postgresql://" + user + (password.empty() ? "" : ":" + password) + "@127.0.0.1:" +
                             std::to_string(proxy_port_) + "/" + db + "?sslmode=disable";
    ledger_url_ = ledger_test::with_pg_options(base, "-c search_path=" + store_->schema());
  }

  void TearDown() override {
    if (!name_.empty()) toxi("DELETE", "/proxies/" + name_);
    SimTest::TearDown();
    store_.reset();
  }

  std::string cfg() const {
    return config("stripe",
                  R"("deadline_ms":3000,"attempt_timeout_ms":1500,"connect_timeout_ms":300,"max_attempts":4)",
                  R"("ledger":{"url":")" + ledger_url_ + R"(","timeout_ms":1000})");
  }

  void add_toxic(const std::string& name, const std::string& type, const std::string& stream,
                 const std::string& attributes) {
    std::string answer;
    ASSERT_EQ(toxi("POST", "/proxies/" + name_ + "/toxics",
                   R"({"name":")" + name + R"(","type":")" + type + R"(","stream":")" + stream +
                       R"(","toxicity":1.0,"attributes":)" + attributes + "}",
                   &answer),
              200)
        << answer;
  }
  void remove_toxic(const std::string& name) {
    EXPECT_EQ(toxi("DELETE", "/proxies/" + name_ + "/toxics/" + name), 204);
  }
  void enable(bool on) {
    std::string answer;
    ASSERT_EQ(toxi("POST", "/proxies/" + name_, std::string(R"({"enabled":)") + (on ? "true" : "false") + "}", &answer),
              200)
        << answer;
  }

  // Whether the request hook saw an attempt of `order`: from then on a
  // byte may have left.
  bool may_have_sent(const std::string& order) {
    // The stripe profile sends the body as form fields: order_id=<order>.
    const std::string json = "\"order_id\":\"" + order + "\"", form = "order_id=" + order;
    std::lock_guard<std::mutex> lock(rec_.mu);
    for (const SentAttempt& s : rec_.sent) {
      if (s.method == "GET") continue;
      if (s.body.find(json) != std::string::npos) return true;
      for (size_t at = s.body.find(form); at != std::string::npos; at = s.body.find(form, at + 1))
        if ((at == 0 || s.body[at - 1] == '&') && (at + form.size() == s.body.size() || s.body[at + form.size()] == '&'))
          return true;
    }
    return false;
  }

  Answer blocking(pay_client* c, const std::string& order) {
    Answer a;
    a.order = order;
    const std::string body = body_for(order);
    pay_result* r = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    a.rc = pay_submit(&r, c, order.c_str(), body.data(), body.size(), nullptr);
    a.ms = since_ms(t0);
    if (a.rc == PAY_OK) {
      a.json = pay_result_json(r);
      a.outcome = pay_result_outcome(r);
      pay_result_free(r);
    } else {
      a.message = pay_error_last()->message;
    }
    return a;
  }

  std::vector<Answer> batch(pay_client* c, const std::vector<std::string>& orders) {
    std::vector<std::string> bodies;
    for (const auto& o : orders) bodies.push_back(body_for(o));
    std::vector<pay_batch_item> items(orders.size());
    for (size_t i = 0; i < orders.size(); ++i) {
      items[i] = pay_batch_item{};
      items[i].order_id = orders[i].c_str();
      items[i].body = bodies[i].data();
      items[i].body_len = bodies[i].size();
    }
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(pay_submit_batch(items.data(), items.size(), c, nullptr), PAY_OK);
    const int64_t ms = since_ms(t0);
    std::vector<Answer> out;
    for (size_t i = 0; i < orders.size(); ++i) {
      Answer a;
      a.order = orders[i];
      a.rc = items[i].rc;
      a.ms = ms;  // the batch returns when its last payment has an answer
      if (a.rc == PAY_OK) {
        a.json = pay_result_json(items[i].result);
        a.outcome = pay_result_outcome(items[i].result);
        pay_result_free(items[i].result);
      } else {
        a.message = items[i].message;
      }
      out.push_back(a);
    }
    return out;
  }

  // The three rules, for every answer; returns the longest call.
  int64_t check(const std::vector<Answer>& answers, const char* what) {
    int64_t longest = 0;
    int ok = 0, unrecorded = 0, failed_before_send = 0;
    for (const Answer& a : answers) {
      SCOPED_TRACE(std::string(what) + ": " + a.order);
      longest = std::max(longest, a.ms);
      EXPECT_LE(a.ms, kPaymentBoundMs) << "the call outlasted its deadline plus the ledger's bound";
      const bool sent = may_have_sent(a.order);
      if (sent) {
        EXPECT_EQ(a.rc, PAY_OK) << "an error code after a byte may have left: " << a.message;
      }
      if (a.rc == PAY_OK) {
        ++ok;
        const bool recorded = a.json.find("\"recorded\":false") == std::string::npos;
        if (!recorded) {
          ++unrecorded;
          EXPECT_EQ(a.json.find("\"ledger_error\":null"), std::string::npos) << a.json;
        }
      } else {
        ++failed_before_send;
        EXPECT_EQ(a.rc, PAY_ELEDGER) << a.message;
      }
      const int charges = sim_->charges_for(a.order);
      EXPECT_LE(charges, 1) << "charged twice";
      if (a.rc == PAY_OK && a.outcome == PAY_OUTCOME_SUCCEEDED) {
        EXPECT_EQ(charges, 1);
      }
      if (!sent) {
        EXPECT_EQ(charges, 0);
      }
    }
    std::printf("  %s: %zu payments, longest call %lld ms (bound %lld); %d results (%d not durably recorded), "
                "%d failed before any byte left\n",
                what, answers.size(), static_cast<long long>(longest), static_cast<long long>(kPaymentBoundMs), ok,
                unrecorded, failed_before_send);
    return longest;
  }

  std::string order(const std::string& tag, int i) const { return name_ + "-" + tag + "-" + std::to_string(i); }

  std::unique_ptr<ScratchStore> store_;
  std::string name_;
  int proxy_port_ = 0;
  std::string ledger_url_;
};

TEST_F(Toxiproxy, a_stalled_postgres_bounds_every_payment_by_its_deadline) {
  auto c = client(cfg());
  ASSERT_TRUE(c);
  check({blocking(c.get(), order("warm", 0))}, "healthy");

  // Payments in flight at the provider (held 600 ms) when the ledger's
  // connection stalls: data held, connections kept, nothing answered.
  std::vector<std::string> held;
  for (int i = 0; i < 20; ++i) {
    held.push_back(order("held", i));
    sim_->script(held.back(), {"slow"});
  }
  std::vector<Answer> answers(3);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    sim_->script(order("held-blocking", i), {"slow"});
    threads.emplace_back([&, i] { answers[i] = blocking(c.get(), order("held-blocking", i)); });
  }
  std::vector<Answer> batched;
  std::thread b([&] { batched = batch(c.get(), held); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  add_toxic("stall-down", "timeout", "downstream", R"({"timeout":0})");
  add_toxic("stall-up", "timeout", "upstream", R"({"timeout":0})");
  for (auto& t : threads) t.join();
  b.join();
  check(answers, "blocking, stalled after the send");
  check(batched, "batch of 20, stalled after the send");

  // Payments started while it stalls: refused before any byte leaves.
  std::vector<Answer> during;
  for (int i = 0; i < 2; ++i) during.push_back(blocking(c.get(), order("during", i)));
  std::vector<std::string> orders;
  for (int i = 0; i < 10; ++i) orders.push_back(order("during-batch", i));
  std::vector<Answer> during_batch = batch(c.get(), orders);
  check(during, "blocking, started during the stall");
  check(during_batch, "batch of 10, started during the stall");
  for (const Answer& a : during) EXPECT_EQ(a.rc, PAY_ELEDGER) << a.order;

  remove_toxic("stall-down");
  remove_toxic("stall-up");
  check({blocking(c.get(), order("after", 0))}, "after the stall");
}

TEST_F(Toxiproxy, latency_on_postgres_slows_payments_but_fails_or_double_charges_none) {
  auto c = client(cfg());
  ASSERT_TRUE(c);
  add_toxic("latency-down", "latency", "downstream", R"({"latency":60,"jitter":20})");
  std::vector<Answer> answers;
  for (int i = 0; i < 3; ++i) {
    if (i == 1) sim_->script(order("slow", i), {"503", "none"});  // one retry: a record, then the settle
    answers.push_back(blocking(c.get(), order("slow", i)));
  }
  std::vector<std::string> orders;
  for (int i = 0; i < 40; ++i) {
    orders.push_back(order("slow-batch", i));
    if (i % 7 == 0) sim_->script(orders.back(), {"lost_response", "none"});
  }
  std::vector<Answer> batched = batch(c.get(), orders);
  check(answers, "blocking, 60 ms latency");
  check(batched, "batch of 40, 60 ms latency");
  for (const auto* set : {&answers, &batched})
    for (const Answer& a : *set) {
      EXPECT_EQ(a.rc, PAY_OK) << a.order << ": " << a.message;
      EXPECT_EQ(a.outcome, PAY_OUTCOME_SUCCEEDED) << a.order << ": " << a.json;
      EXPECT_NE(a.json.find("\"recorded\":true"), std::string::npos) << a.json;
    }
}

TEST_F(Toxiproxy, a_reset_in_the_middle_of_a_group_commit_charges_no_payment_twice) {
  auto c = client(cfg());
  ASSERT_TRUE(c);
  check({blocking(c.get(), order("warm", 0))}, "healthy");
  // Latency stretches each group commit (BEGIN, the entries, COMMIT); the
  // provider holds every answer 600 ms, so the settles of 120 payments
  // already sent meet in group commits right when the connections are reset.
  add_toxic("latency-up", "latency", "upstream", R"({"latency":20,"jitter":0})");
  std::vector<std::string> orders;
  for (int i = 0; i < 120; ++i) {
    orders.push_back(order("reset", i));
    sim_->script(orders.back(), {"slow"});
  }
  std::vector<Answer> batched;
  std::thread b([&] { batched = batch(c.get(), orders); });
  std::vector<Answer> blocked(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    sim_->script(order("reset-blocking", i), {"slow"});
    threads.emplace_back([&, i] { blocked[i] = blocking(c.get(), order("reset-blocking", i)); });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(550));
  for (int round = 0; round < 4; ++round) {
    add_toxic("reset", "reset_peer", "upstream", R"({"timeout":0})");
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    remove_toxic("reset");
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  b.join();
  for (auto& t : threads) t.join();
  remove_toxic("latency-up");
  check(batched, "batch of 120, connections reset during group commits");
  check(blocked, "blocking, connections reset");
  int sent = 0;
  for (const Answer& a : batched) sent += may_have_sent(a.order) ? 1 : 0;
  EXPECT_GT(sent, 0) << "the resets came before any payment was sent: the case was not exercised";
  // Submitted again once the link is sound: answered from the ledger (or
  // still held by the run whose settle was lost), and charged at most once.
  std::vector<Answer> again = batch(c.get(), orders);
  for (const Answer& a : again) {
    EXPECT_LE(sim_->charges_for(a.order), 1) << a.order;
    if (a.rc == PAY_OK && a.outcome == PAY_OUTCOME_SUCCEEDED) {
      EXPECT_EQ(sim_->charges_for(a.order), 1) << a.order;
    }
  }
}

TEST_F(Toxiproxy, a_closed_postgres_port_fails_payments_before_any_byte_leaves) {
  auto c = client(cfg());
  ASSERT_TRUE(c);
  check({blocking(c.get(), order("warm", 0))}, "healthy");
  enable(false);  // the listener closes and connections drop: connection refused
  std::vector<Answer> answers;
  for (int i = 0; i < 3; ++i) answers.push_back(blocking(c.get(), order("closed", i)));
  std::vector<std::string> orders;
  for (int i = 0; i < 10; ++i) orders.push_back(order("closed-batch", i));
  std::vector<Answer> batched = batch(c.get(), orders);
  check(answers, "blocking, port closed");
  check(batched, "batch of 10, port closed");
  for (const auto* set : {&answers, &batched})
    for (const Answer& a : *set) {
      EXPECT_EQ(a.rc, PAY_ELEDGER) << a.order;
      EXPECT_FALSE(may_have_sent(a.order)) << a.order;
      EXPECT_LE(a.ms, 2 * kLedgerTimeoutMs + kSlackMs) << "a refused connection fails at once, well within the bound";
    }
  enable(true);
  std::vector<Answer> after = batch(c.get(), orders);
  check(after, "batch of 10, port open again");
  for (const Answer& a : after) EXPECT_EQ(a.outcome, PAY_OUTCOME_SUCCEEDED) << a.order << ": " << a.json;
}

}  // namespace
