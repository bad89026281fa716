// The ledger conformance suite (docs/design.md "Ledger"): the same rules, run against
// every backend: memory:, SQLite and PostgreSQL (when PAYRETRY_TEST_PG_URL
// names a server; with PAYRETRY_REQUIRE_PG=1 its absence is a failure).
// Each test gets a fresh, empty store.
//
// The binary doubles as the racing child process: started with
// --ledger-child it opens a ledger and obeys commands on stdin.
//
// To run it with PostgreSQL:
//   url=$(bash tests/ledger/pg_cluster.sh start /tmp/payretry-pg)
//   PAYRETRY_TEST_PG_URL=$url PAYRETRY_REQUIRE_PG=1 ctest --test-dir build -R 'Ledger|Postgres'
//   bash tests/ledger/pg_cluster.sh destroy /tmp/payretry-pg
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <cstring>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "ledger.hpp"
#include "ledger_fixture.hpp"
#include "ledger_postgres.hpp"
#include "sql_money.hpp"
#include "sync_counting_vfs.hpp"

using namespace payretry;
using namespace ledger_test;

namespace ledger_test {
// test_operations.cpp: one racer's refunds of a payment (the "refund"
// command below).
std::vector<std::string> refund_race_pass(Ledger& l, const std::string& parent, const std::string& name, int count,
                                          int64_t amount, int64_t now, int* refused);
}  // namespace ledger_test

namespace {

constexpr int64_t kNow = 1'700'000'000'000;  // Unix ms
constexpr int64_t kLease = 30'000;
constexpr int64_t kDay = 86'400'000;

PaymentRow proposal(const std::string& order, const std::string& key = "") {
  PaymentRow r;
  r.order_id = order;
  r.idempotency_key = key.empty() ? "key-" + order : key;
  r.fingerprint = std::string(64, 'a');
  r.key_expires_at = kNow + kDay;
  return r;
}

// A proposal by a client of `scope` ("": a payretry that kept none), with
// the payment's own submission headers (JSON text, "" none) and path ("":
// the client's create path).
PaymentRow scoped(const std::string& order, const std::string& scope, const std::string& headers = "",
                  const std::string& path = "") {
  PaymentRow r = proposal(order);
  r.scope = scope;
  r.submission_headers = headers;
  r.submission_path = path;
  return r;
}

const std::string kHeadersA = R"([["Stripe-Account","acct_A"]])";
// What a batch sent as arrays (PostgreSQL) must escape, and more than ASCII.
const std::string kHeadersOdd = "[[\"X-Tenant\",\"q\\\"uote {brace,comma} back\\\\slash NULL \xc3\xa9\"]]";

// A batch's create of `proposed` by `owner` at `now`, leased for kLease.
LedgerBatch::Create create_entry(const std::string& owner, PaymentRow proposed, int64_t now = kNow) {
  LedgerBatch::Create c;
  c.owner = owner;
  c.proposed = std::move(proposed);
  c.now = now;
  c.lease_until = now + kLease;
  return c;
}

AttemptEntry attempt(int number, int64_t started) {
  AttemptEntry a;
  a.number = number;
  a.started_at = started;
  a.ended_at = started + 120;
  a.http_status = 500 + number;
  a.transport_error = number % 2 ? "" : "connection reset";
  a.verdict = "retry";
  a.reason = "HTTP 5xx: the provider did not process it (attempt " + std::to_string(number) + ")";
  a.delay_ms = 250 * number;
  a.provider_request_id = "req_" + std::to_string(number);
  a.replayed = number % 2 == 0;
  // All three ways an entry can say whether it may have been processed.
  if (number % 3 == 1) a.processed = true;
  if (number % 3 == 2) a.processed = false;
  if (number == 5) a.kind = "lookup";
  return a;
}

void expect_same_attempt(const AttemptEntry& want, const AttemptEntry& got) {
  EXPECT_EQ(want.number, got.number);
  EXPECT_EQ(want.started_at, got.started_at);
  EXPECT_EQ(want.ended_at, got.ended_at);
  EXPECT_EQ(want.http_status, got.http_status);
  EXPECT_EQ(want.transport_error, got.transport_error);
  EXPECT_EQ(want.verdict, got.verdict);
  EXPECT_EQ(want.reason, got.reason);
  EXPECT_EQ(want.delay_ms, got.delay_ms);
  EXPECT_EQ(want.provider_request_id, got.provider_request_id);
  EXPECT_EQ(want.replayed, got.replayed);
  EXPECT_EQ(want.kind, got.kind);
  EXPECT_EQ(want.processed, got.processed);
}

void expect_same_row(const PaymentRow& want, const PaymentRow& got) {
  EXPECT_EQ(want.order_id, got.order_id);
  EXPECT_EQ(want.idempotency_key, got.idempotency_key);
  EXPECT_EQ(want.fingerprint, got.fingerprint);
  EXPECT_EQ(state_name(want.state), std::string(state_name(got.state)));
  EXPECT_EQ(want.delivery, got.delivery);
  EXPECT_EQ(want.detail, got.detail);
  EXPECT_EQ(want.provider_payment_id, got.provider_payment_id);
  EXPECT_EQ(want.provider_status, got.provider_status);
  EXPECT_EQ(want.http_status, got.http_status);
  EXPECT_EQ(want.attempts, got.attempts);
  EXPECT_EQ(want.created_at, got.created_at);
  EXPECT_EQ(want.key_expires_at, got.key_expires_at);
  EXPECT_EQ(want.lease_owner, got.lease_owner);
  EXPECT_EQ(want.lease_until, got.lease_until);
  EXPECT_EQ(want.updated_at, got.updated_at);
  EXPECT_EQ(want.scope, got.scope);
  EXPECT_EQ(want.submission_headers, got.submission_headers);
  EXPECT_EQ(want.submission_path, got.submission_path);
}

bool is_hex64(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
}

// ---- the racing participants ----------------------------------------------

constexpr int kRaceOrders = 50;
std::string race_order(int i) { return "race-" + std::to_string(i); }

// One participant's pass over every order, starting at its own offset so
// that participants meet on different orders. Returns the orders it won.
std::vector<std::string> race_pass(Ledger& l, const std::string& op, const std::string& owner, int offset,
                                   int64_t now, int64_t lease_until) {
  std::vector<std::string> won;
  for (int k = 0; k < kRaceOrders; ++k) {
    const int i = (k + offset) % kRaceOrders;
    const std::string order = race_order(i);
    if (op == "create") {
      if (l.create_and_claim(proposal(order), owner, now, lease_until).created) won.push_back(order);
    } else {
      if (l.claim(order, owner, now, lease_until)) won.push_back(order);
    }
  }
  return won;
}

// Child mode: `--ledger-child URL NAME`. Prints "started"; then obeys
//   open                         -> "ready SECRET"
//   create|claim NOW LEASE OFFSET -> "won ORDER"... then "done"
//   refund PARENT AMOUNT COUNT NOW -> "won REF"..., "refused N", then "done"
//                                    (refund_race_pass, refs NAME-k)
// and prints "error MESSAGE" when the ledger throws. Exits at EOF.
int child_main(int argc, char** argv) {
  if (argc < 4) return 2;
  const std::string url = argv[2], name = argv[3];
  std::unique_ptr<Ledger> ledger;
  auto say = [](const std::string& line) {
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
  };
  say("started");
  char buf[512];
  while (std::fgets(buf, sizeof buf, stdin)) {
    std::istringstream in(buf);
    std::string cmd;
    in >> cmd;
    try {
      if (cmd == "open") {
        ledger = open_ledger(url, "");
        say("ready " + ledger->secret());
      } else if (cmd == "create" || cmd == "claim") {
        int64_t now = 0, lease = 0;
        int offset = 0;
        in >> now >> lease >> offset;
        for (const std::string& o : race_pass(*ledger, cmd, name, offset, now, lease)) say("won " + o);
        say("done");
      } else if (cmd == "refund") {
        std::string parent;
        int64_t amount = 0, now = 0;
        int count = 0, refused = 0;
        in >> parent >> amount >> count >> now;
        for (const std::string& r : refund_race_pass(*ledger, parent, name, count, amount, now, &refused))
          say("won " + r);
        say("refused " + std::to_string(refused));
        say("done");
      }
    } catch (const std::exception& e) {
      std::string m = e.what();
      std::replace(m.begin(), m.end(), '\n', ' ');
      say("error " + m);
    }
  }
  return 0;
}

// ---- fixtures ---------------------------------------------------------------

class LedgerConformance : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::postgres) LEDGER_REQUIRE_PG();
    store_ = std::make_unique<ScratchStore>(GetParam());
  }
  void TearDown() override { store_.reset(); }

  std::unique_ptr<Ledger> open(const std::string& secret = "") { return open_ledger(store_->url(), secret); }
  bool durable() const { return GetParam() != Kind::memory; }

  // Phases of a race between `threads` threads of this process and
  // `children` processes, all on the same 50 orders: every order has exactly
  // one winner in each phase, and the row names that winner as its owner.
  void race(int threads, int children) {
    std::unique_ptr<Ledger> ledger = open();
    std::vector<std::unique_ptr<Child>> kids;
    for (int c = 0; c < children; ++c) {
      kids.push_back(std::make_unique<Child>(
          std::vector<std::string>{"--ledger-child", store_->url(), "child-" + std::to_string(c)}));
      ASSERT_EQ(kids.back()->read_line(), std::optional<std::string>("started"));
    }
    for (auto& k : kids) k->send("open");
    for (auto& k : kids) {
      auto line = k->read_line();
      ASSERT_TRUE(line && line->rfind("ready ", 0) == 0) << (line ? *line : "child died");
    }

    auto phase = [&](const std::string& op, int64_t now, int64_t lease_until) {
      SCOPED_TRACE("phase " + op + " at " + std::to_string(now));
      std::map<std::string, std::vector<std::string>> winners;  // order -> owners
      for (size_t c = 0; c < kids.size(); ++c)
        kids[c]->send(op + " " + std::to_string(now) + " " + std::to_string(lease_until) + " " +
                      std::to_string(17 * (c + 1)));
      std::atomic<bool> go{false};
      std::mutex mu;
      std::vector<std::string> errors;
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          while (!go.load()) std::this_thread::yield();
          const std::string owner = "thread-" + std::to_string(t);
          try {
            auto won = race_pass(*ledger, op, owner, 7 * t, now, lease_until);
            std::lock_guard<std::mutex> lock(mu);
            for (auto& o : won) winners[o].push_back(owner);
          } catch (const std::exception& e) {
            std::lock_guard<std::mutex> lock(mu);
            errors.push_back(e.what());
          }
        });
      }
      go = true;
      for (auto& th : pool) th.join();
      for (size_t c = 0; c < kids.size(); ++c) {
        for (;;) {
          auto line = kids[c]->read_line();
          ASSERT_TRUE(line.has_value()) << "child " << c << " died or hung";
          if (*line == "done") break;
          if (line->rfind("won ", 0) == 0) winners[line->substr(4)].push_back("child-" + std::to_string(c));
          else errors.push_back("child " + std::to_string(c) + ": " + *line);
        }
      }
      for (auto& e : errors) ADD_FAILURE() << e;
      for (int i = 0; i < kRaceOrders; ++i) {
        const auto& w = winners[race_order(i)];
        ASSERT_EQ(w.size(), 1u) << race_order(i) << " had " << w.size() << " winners";
        auto row = ledger->get(race_order(i));
        ASSERT_TRUE(row);
        EXPECT_EQ(row->state, PaymentState::in_flight);
        EXPECT_EQ(row->lease_owner, w[0]) << race_order(i);
        EXPECT_EQ(row->lease_until, lease_until);
      }
    };

    // 1. Everybody creates: one creator per order.
    phase("create", kNow, kNow + kLease);
    if (HasFatalFailure()) return;
    // 2. All UNKNOWN: everybody claims, one winner per order.
    for (int i = 0; i < kRaceOrders; ++i) {
      auto row = ledger->get(race_order(i));
      Settlement s;
      s.state = PaymentState::unknown;
      ASSERT_TRUE(ledger->settle(race_order(i), row->lease_owner, nullptr, s, kNow + 1));
    }
    phase("claim", kNow + 2, kNow + 2 + kLease);
    if (HasFatalFailure()) return;
    // 3. Every lease expired: everybody takes over, still one winner each
    // (the losers must re-check the condition against the winner's row).
    phase("claim", kNow + 3 + kLease, kNow + 3 + 2 * kLease);
  }

  std::unique_ptr<ScratchStore> store_;
};

std::string param_name(const ::testing::TestParamInfo<Kind>& info) { return kind_name(info.param); }

// ---- creation -----------------------------------------------------------------

TEST_P(LedgerConformance, CreateAndClaimStoresTheRowInFlightWithTheLease) {
  auto l = open();
  PaymentRow p = proposal("o-1", "key-o-1");
  auto out = l->create_and_claim(p, "worker-a", kNow, kNow + kLease);
  EXPECT_TRUE(out.created);
  EXPECT_FALSE(out.key_taken);
  PaymentRow want = p;
  want.state = PaymentState::in_flight;
  want.lease_owner = "worker-a";
  want.lease_until = kNow + kLease;
  want.created_at = kNow;
  want.updated_at = kNow;
  expect_same_row(want, out.row);
  auto got = l->get("o-1");
  ASSERT_TRUE(got);
  expect_same_row(want, *got);
  EXPECT_TRUE(l->attempts("o-1").empty());
  EXPECT_FALSE(l->get("o-2").has_value());
}

// A backend may answer a create with the row it inserted instead of reading
// it back: that answer must still be the stored row, column for column, and
// a proposal's other columns (a caller's stale copy of a row) are not stored.
TEST_P(LedgerConformance, TheRowACreateAnswersIsTheRowStoredWhateverElseTheProposalCarries) {
  auto l = open();
  auto loaded = [](const std::string& order) {
    PaymentRow p = proposal(order);
    p.state = PaymentState::succeeded;
    p.delivery = "delivered";
    p.detail = "from an earlier life";
    p.provider_payment_id = "pi_stale";
    p.provider_status = "succeeded";
    p.http_status = 200;
    p.attempts = 7;
    p.created_at = 1;
    p.updated_at = 2;
    p.lease_owner = "someone-else";
    p.lease_until = 3;
    return p;
  };
  const auto single = l->create_and_claim(loaded("o-single"), "worker-a", kNow, kNow + kLease);
  ASSERT_TRUE(single.created);
  LedgerBatch b;
  b.creates.push_back(create_entry("worker-b", loaded("o-batch"), kNow + 5));
  l->apply(b);
  ASSERT_EQ(b.creates[0].error, "");
  ASSERT_TRUE(b.creates[0].out.created);
  const PaymentRow* answers[] = {&single.row, &b.creates[0].out.row};
  for (const PaymentRow* out : answers) {
    SCOPED_TRACE(out->order_id);
    const auto stored = l->get(out->order_id);
    ASSERT_TRUE(stored);
    expect_same_row(*stored, *out);
    EXPECT_EQ(out->state, PaymentState::in_flight);
    EXPECT_EQ(out->delivery, "");
    EXPECT_EQ(out->detail, "");
    EXPECT_EQ(out->provider_payment_id, "");
    EXPECT_EQ(out->provider_status, "");
    EXPECT_EQ(out->http_status, 0);
    EXPECT_EQ(out->attempts, 0);
  }
  EXPECT_EQ(single.row.lease_owner, "worker-a");
  EXPECT_EQ(single.row.created_at, kNow);
  EXPECT_EQ(single.row.updated_at, kNow);
  EXPECT_EQ(b.creates[0].out.row.lease_owner, "worker-b");
  EXPECT_EQ(b.creates[0].out.row.lease_until, kNow + 5 + kLease);
  EXPECT_EQ(b.creates[0].out.row.created_at, kNow + 5);
}

TEST_P(LedgerConformance, CreatingAnExistingOrderReturnsItsRowWithoutClaimingIt) {
  auto l = open();
  const auto first = l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).row;
  // Even with the lease long expired, create does not claim: the caller decides.
  auto again = l->create_and_claim(proposal("o-1"), "worker-b", kNow + 10 * kLease, kNow + 11 * kLease);
  EXPECT_FALSE(again.created);
  EXPECT_FALSE(again.key_taken);
  expect_same_row(first, again.row);
  expect_same_row(first, *l->get("o-1"));

  Settlement s;
  s.state = PaymentState::succeeded;
  s.provider_payment_id = "pi_1";
  ASSERT_TRUE(l->settle("o-1", "worker-a", nullptr, s, kNow + 5));
  auto done = l->create_and_claim(proposal("o-1"), "worker-c", kNow + 6, kNow + 6 + kLease);
  EXPECT_FALSE(done.created);
  EXPECT_EQ(done.row.state, PaymentState::succeeded);
  EXPECT_EQ(done.row.provider_payment_id, "pi_1");
  EXPECT_EQ(done.row.lease_owner, "");
  EXPECT_EQ(l->get("o-1")->state, PaymentState::succeeded);
}

TEST_P(LedgerConformance, AKeyHeldByAnotherOrderIsTakenAndNothingIsWritten) {
  auto l = open();
  ASSERT_TRUE(l->create_and_claim(proposal("o-1", "shared-key"), "worker-a", kNow, kNow + kLease).created);
  auto out = l->create_and_claim(proposal("o-2", "shared-key"), "worker-b", kNow + 1, kNow + 1 + kLease);
  EXPECT_FALSE(out.created);
  EXPECT_TRUE(out.key_taken);
  EXPECT_EQ(out.row.order_id, "o-2");
  EXPECT_EQ(out.row.idempotency_key, "");
  EXPECT_EQ(out.row.lease_owner, "");
  EXPECT_FALSE(l->get("o-2").has_value());
  EXPECT_EQ(l->get("o-1")->lease_owner, "worker-a");
  EXPECT_EQ(l->list(std::nullopt, 0, 100, std::nullopt).size(), 1u);
  // The key's own order is unaffected and another key still works for o-2.
  EXPECT_TRUE(l->create_and_claim(proposal("o-2", "other-key"), "worker-b", kNow + 2, kNow + 2 + kLease).created);
}

// ---- scope: part of a payment's identity --------------------------------------------

// Two clients (two merchant accounts) may share one ledger: a row is bound
// to the client that made it by its scope, and carries the payment's own
// submission headers, both written by the create that made the row and
// never changed after, whoever creates, claims or settles the order later.
TEST_P(LedgerConformance, ARowKeepsTheScopeAndSubmissionHeadersItWasCreatedWith) {
  auto l = open();
  const auto single = l->create_and_claim(scoped("o-single", "scope-a", kHeadersA, "/acct/a/payments"), "worker-a",
                                          kNow, kNow + kLease);
  ASSERT_TRUE(single.created);
  EXPECT_EQ(single.row.scope, "scope-a");
  EXPECT_EQ(single.row.submission_headers, kHeadersA);
  EXPECT_EQ(single.row.submission_path, "/acct/a/payments");
  // A batch's creates (PostgreSQL: one statement over arrays).
  LedgerBatch b;
  b.creates.push_back(create_entry("worker-a", scoped("o-batch-1", "scope-a", kHeadersOdd)));
  b.creates.push_back(create_entry("worker-a", scoped("o-batch-2", "scope-b", "", "/v1/p?x=\"y\"")));
  b.creates.push_back(create_entry("worker-a", scoped("o-batch-3", "")));
  l->apply(b);
  const std::map<std::string, std::pair<std::string, std::string>> made = {
      {"o-single", {"scope-a", kHeadersA}},
      {"o-batch-1", {"scope-a", kHeadersOdd}},
      {"o-batch-2", {"scope-b", ""}},
      {"o-batch-3", {"", ""}}};
  for (const auto& c : b.creates) {
    SCOPED_TRACE(c.proposed.order_id);
    ASSERT_EQ(c.error, "");
    ASSERT_TRUE(c.out.created);
    EXPECT_EQ(c.out.row.scope, made.at(c.proposed.order_id).first);
    EXPECT_EQ(c.out.row.submission_headers, made.at(c.proposed.order_id).second);
    EXPECT_EQ(c.out.row.submission_path, c.proposed.submission_path);
    expect_same_row(*l->get(c.proposed.order_id), c.out.row);
  }
  auto expect_as_made = [&](const char* when) {
    SCOPED_TRACE(when);
    for (const auto& [order, what] : made) {
      const auto row = l->get(order);
      ASSERT_TRUE(row) << order;
      EXPECT_EQ(row->scope, what.first) << order;
      EXPECT_EQ(row->submission_headers, what.second) << order;
    }
  };
  expect_as_made("created");

  // Another client's create of the same orders, alone and in a batch, finds
  // the rows as they stand: neither its scope nor its headers are written.
  const auto again = l->create_and_claim(scoped("o-single", "scope-b", kHeadersOdd), "worker-b", kNow + 1,
                                         kNow + 1 + kLease);
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.row.scope, "scope-a");
  EXPECT_EQ(again.row.submission_headers, kHeadersA);
  LedgerBatch other;
  other.creates.push_back(create_entry("worker-b", scoped("o-batch-1", "scope-b", kHeadersA), kNow + 1));
  other.creates.push_back(create_entry("worker-b", scoped("o-batch-3", "scope-b", kHeadersA), kNow + 1));
  l->apply(other);
  for (const auto& c : other.creates) {
    SCOPED_TRACE(c.proposed.order_id);
    ASSERT_EQ(c.error, "");
    EXPECT_FALSE(c.out.created);
    EXPECT_EQ(c.out.row.scope, made.at(c.proposed.order_id).first);
    EXPECT_EQ(c.out.row.submission_headers, made.at(c.proposed.order_id).second);
  }
  expect_as_made("created again by another scope");

  // Records, settles (single and batched) and claims write everything else.
  ASSERT_TRUE(l->record_attempt("o-single", "worker-a", attempt(1, kNow + 2)));
  Settlement unknown;
  unknown.state = PaymentState::unknown;
  unknown.delivery = "maybe_processed";
  ASSERT_TRUE(l->settle("o-single", "worker-a", nullptr, unknown, kNow + 3));
  ASSERT_TRUE(l->claim("o-single", "worker-b", kNow + 4, kNow + 4 + kLease));
  LedgerBatch settles;
  for (const char* order : {"o-batch-1", "o-batch-2", "o-batch-3"}) {
    LedgerBatch::Settle st;
    st.owner = "worker-a";
    st.order_id = order;
    st.last = attempt(1, kNow + 5);
    st.settlement.state = PaymentState::succeeded;
    st.settlement.delivery = "delivered";
    st.now = kNow + 6;
    settles.settles.push_back(st);
  }
  l->apply(settles);
  for (const auto& st : settles.settles) {
    ASSERT_EQ(st.error, "") << st.order_id;
    EXPECT_TRUE(st.ok) << st.order_id;
  }
  Settlement failed;
  failed.state = PaymentState::failed;
  ASSERT_TRUE(l->settle("o-single", "worker-b", nullptr, failed, kNow + 7));
  expect_as_made("claimed and settled");
  EXPECT_EQ(l->get("o-single")->state, PaymentState::failed);
  for (const auto& r : l->list(std::nullopt, 0, 100, std::nullopt)) expect_same_row(*l->get(r.order_id), r);
}

// ---- claiming -------------------------------------------------------------

TEST_P(LedgerConformance, ClaimTakesPendingAndUnknownPayments) {
  auto l = open();
  if (durable()) {
    // PENDING never outlives create_and_claim's commit; staged directly.
    store_->exec_raw(
        "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, created_at, key_expires_at, updated_at) "
        "VALUES ('pending-1', 'key-pending-1', 'fp', 'PENDING', 1000, 999999999, 1000)");
    EXPECT_EQ(l->get("pending-1")->state, PaymentState::pending);
    EXPECT_TRUE(l->claim("pending-1", "worker-b", kNow, kNow + kLease));
    auto row = l->get("pending-1");
    EXPECT_EQ(row->state, PaymentState::in_flight);
    EXPECT_EQ(row->lease_owner, "worker-b");
    EXPECT_EQ(row->lease_until, kNow + kLease);
    EXPECT_EQ(row->updated_at, kNow);
  }
  ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  Settlement s;
  s.state = PaymentState::unknown;
  s.delivery = "maybe_processed";
  ASSERT_TRUE(l->settle("o-1", "worker-a", nullptr, s, kNow + 1));
  // UNKNOWN is claimable at once, whatever time the old lease said.
  EXPECT_TRUE(l->claim("o-1", "worker-b", kNow + 2, kNow + 2 + kLease));
  auto row = l->get("o-1");
  EXPECT_EQ(row->state, PaymentState::in_flight);
  EXPECT_EQ(row->lease_owner, "worker-b");
  EXPECT_EQ(row->lease_until, kNow + 2 + kLease);
  EXPECT_EQ(row->updated_at, kNow + 2);
  EXPECT_EQ(row->delivery, "maybe_processed");  // claiming keeps what is known
}

TEST_P(LedgerConformance, ClaimRefusesALiveLeaseAndTakesOverAnExpiredOne) {
  auto l = open();
  const auto created = l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).row;
  EXPECT_FALSE(l->claim("o-1", "worker-b", kNow + 1, kNow + 1 + kLease));
  EXPECT_FALSE(l->claim("o-1", "worker-a", kNow + 1, kNow + 1 + kLease)) << "a held lease is not re-taken";
  // The lease covers its last millisecond.
  EXPECT_FALSE(l->claim("o-1", "worker-b", kNow + kLease, kNow + 2 * kLease));
  expect_same_row(created, *l->get("o-1"));

  EXPECT_TRUE(l->claim("o-1", "worker-b", kNow + kLease + 1, kNow + 2 * kLease + 1));
  auto row = l->get("o-1");
  EXPECT_EQ(row->state, PaymentState::in_flight);
  EXPECT_EQ(row->lease_owner, "worker-b");
  EXPECT_EQ(row->lease_until, kNow + 2 * kLease + 1);
  EXPECT_EQ(row->updated_at, kNow + kLease + 1);
  EXPECT_FALSE(l->claim("o-1", "worker-c", kNow + kLease + 2, kNow + 3 * kLease));
}

TEST_P(LedgerConformance, ClaimRefusesFinishedPaymentsAndUnknownOrders) {
  auto l = open();
  for (auto [order, state] : {std::pair{"ok", PaymentState::succeeded}, std::pair{"declined", PaymentState::failed}}) {
    ASSERT_TRUE(l->create_and_claim(proposal(order), "worker-a", kNow, kNow + kLease).created);
    Settlement s;
    s.state = state;
    ASSERT_TRUE(l->settle(order, "worker-a", nullptr, s, kNow + 1));
    EXPECT_FALSE(l->claim(order, "worker-b", kNow + 10 * kLease, kNow + 11 * kLease)) << order;
    EXPECT_EQ(l->get(order)->state, state);
    EXPECT_EQ(l->get(order)->lease_owner, "");
  }
  EXPECT_FALSE(l->claim("no-such-order", "worker-b", kNow, kNow + kLease));
  EXPECT_FALSE(l->get("no-such-order").has_value());
}

// ---- fencing --------------------------------------------------------------------

TEST_P(LedgerConformance, WritesOfANonOwnerAreFencedOutAndChangeNothing) {
  auto l = open();
  const auto row = l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).row;
  EXPECT_FALSE(l->record_attempt("o-1", "worker-b", attempt(1, kNow + 5)));
  Settlement s;
  s.state = PaymentState::succeeded;
  s.provider_payment_id = "pi_x";
  const AttemptEntry last = attempt(1, kNow + 5);
  EXPECT_FALSE(l->settle("o-1", "worker-b", &last, s, kNow + 10));
  EXPECT_FALSE(l->settle("o-1", "worker-b", nullptr, s, kNow + 10));
  EXPECT_FALSE(l->record_attempt("o-1", "", attempt(1, kNow + 5)));
  expect_same_row(row, *l->get("o-1"));
  EXPECT_TRUE(l->attempts("o-1").empty());
  EXPECT_FALSE(l->record_attempt("no-such-order", "worker-a", attempt(1, kNow)));
  EXPECT_FALSE(l->settle("no-such-order", "worker-a", &last, s, kNow));
  EXPECT_TRUE(l->attempts("no-such-order").empty());
}

TEST_P(LedgerConformance, AfterATakeoverTheOldOwnerIsFencedOut) {
  auto l = open();
  ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  ASSERT_TRUE(l->record_attempt("o-1", "worker-a", attempt(1, kNow + 1)));
  ASSERT_TRUE(l->claim("o-1", "worker-b", kNow + kLease + 1, kNow + 2 * kLease));

  EXPECT_FALSE(l->record_attempt("o-1", "worker-a", attempt(2, kNow + kLease + 2)));
  Settlement s;
  s.state = PaymentState::failed;
  s.detail = "stale writer";
  const AttemptEntry a2 = attempt(2, kNow + kLease + 2);
  EXPECT_FALSE(l->settle("o-1", "worker-a", &a2, s, kNow + kLease + 3));
  auto row = l->get("o-1");
  EXPECT_EQ(row->state, PaymentState::in_flight);
  EXPECT_EQ(row->lease_owner, "worker-b");
  EXPECT_EQ(row->detail, "");
  EXPECT_EQ(row->attempts, 1);
  ASSERT_EQ(l->attempts("o-1").size(), 1u);

  // The new owner writes; after settling nobody holds the lease, so the
  // old owner stays out too.
  EXPECT_TRUE(l->record_attempt("o-1", "worker-b", attempt(2, kNow + kLease + 4)));
  s.detail = "declined";
  EXPECT_TRUE(l->settle("o-1", "worker-b", nullptr, s, kNow + kLease + 5));
  EXPECT_FALSE(l->record_attempt("o-1", "worker-b", attempt(3, kNow + kLease + 6)));
  EXPECT_FALSE(l->settle("o-1", "worker-b", nullptr, s, kNow + kLease + 6));
  EXPECT_EQ(l->attempts("o-1").size(), 2u);
}

// ---- group commit (LedgerBatch) ------------------------------------------------------

TEST_P(LedgerConformance, ABatchGivesEachEntryTheAnswerOfItsSingleCallAndOneLostLeaseSpoilsNoOther) {
  auto l = open();
  ASSERT_TRUE(l->create_and_claim(proposal("held-by-a"), "worker-a", kNow, kNow + kLease).created);
  ASSERT_TRUE(l->create_and_claim(proposal("held-by-b"), "worker-b", kNow, kNow + kLease).created);
  ASSERT_TRUE(l->create_and_claim(proposal("exists"), "worker-b", kNow, kNow + kLease).created);

  // Each entry carries its own claim's fencing token.
  LedgerBatch b;
  auto create = [&](const std::string& order, const std::string& key) {
    b.creates.push_back(create_entry("worker-a", proposal(order, key), kNow + 1));
  };
  create("new-1", "");
  create("exists", "");
  create("new-2", "key-held-by-b");  // the key of another order
  create("new-3", "");
  b.records.push_back({"worker-a", "held-by-a", attempt(1, kNow + 2), false, {}});
  b.records.push_back({"worker-a", "held-by-b", attempt(1, kNow + 2), false, {}});  // not ours: fenced out
  LedgerBatch::Settle mine, theirs;
  mine.owner = "worker-a";
  mine.order_id = "held-by-a";
  mine.last = attempt(2, kNow + 3);
  mine.settlement.state = PaymentState::succeeded;
  mine.settlement.delivery = "delivered";
  mine.settlement.provider_payment_id = "pi_batch";
  mine.now = kNow + 4;
  theirs = mine;
  theirs.order_id = "held-by-b";
  b.settles.push_back(mine);
  b.settles.push_back(theirs);
  l->apply(b);

  for (const auto& c : b.creates) EXPECT_EQ(c.error, "") << c.proposed.order_id;
  EXPECT_TRUE(b.creates[0].out.created);
  EXPECT_EQ(b.creates[0].out.row.state, PaymentState::in_flight);
  EXPECT_EQ(b.creates[0].out.row.lease_owner, "worker-a");
  EXPECT_FALSE(b.creates[1].out.created);
  EXPECT_EQ(b.creates[1].out.row.lease_owner, "worker-b");  // returned as it stands, not claimed
  EXPECT_TRUE(b.creates[2].out.key_taken);
  EXPECT_FALSE(l->get("new-2").has_value());
  EXPECT_TRUE(b.creates[3].out.created);
  EXPECT_TRUE(b.records[0].ok);
  EXPECT_FALSE(b.records[1].ok);
  EXPECT_TRUE(b.settles[0].ok);
  EXPECT_FALSE(b.settles[1].ok);

  // Committed: what the answers say is what the store holds.
  EXPECT_EQ(l->get("new-1")->lease_owner, "worker-a");
  EXPECT_EQ(l->get("new-3")->state, PaymentState::in_flight);
  const auto a = l->get("held-by-a");
  EXPECT_EQ(a->state, PaymentState::succeeded);
  EXPECT_EQ(a->provider_payment_id, "pi_batch");
  EXPECT_EQ(a->lease_owner, "");
  EXPECT_EQ(a->attempts, 2) << "the settle's last entry counts";
  EXPECT_EQ(a->updated_at, kNow + 3 + 120) << "the latest of the settle's time and its last entry's end";
  EXPECT_EQ(l->attempts("held-by-a").size(), 2u);
  const auto bee = l->get("held-by-b");
  EXPECT_EQ(bee->state, PaymentState::in_flight);
  EXPECT_EQ(bee->lease_owner, "worker-b");
  EXPECT_EQ(bee->attempts, 0) << "a fenced-out settle writes nothing";
  EXPECT_TRUE(l->attempts("held-by-b").empty());
}

TEST_P(LedgerConformance, ABatchEntryThatClashesFailsAloneAndEveryOtherEntryIsWritten) {
  auto l = open();
  ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  ASSERT_TRUE(l->record_attempt("o-1", "worker-a", attempt(1, kNow + 1)));
  LedgerBatch b;
  const LedgerBatch::Create c = create_entry("worker-b", proposal("new-1"), kNow + 2);
  b.creates.push_back(c);
  b.creates.push_back(c);  // the same order twice in one batch: the second finds the first
  AttemptEntry other = attempt(1, kNow + 1);
  other.reason = "another entry under a taken number";
  b.records.push_back({"worker-a", "o-1", other, false, {}});
  b.records.push_back({"worker-a", "o-1", attempt(2, kNow + 3), false, {}});
  l->apply(b);
  EXPECT_EQ(b.creates[0].error, "");
  EXPECT_TRUE(b.creates[0].out.created);
  EXPECT_EQ(b.creates[1].error, "");
  EXPECT_FALSE(b.creates[1].out.created);
  EXPECT_EQ(b.creates[1].out.row.lease_owner, "worker-b");
  EXPECT_NE(b.records[0].error, "") << "a clash is an error, never an overwrite";
  EXPECT_EQ(b.records[1].error, "");
  EXPECT_TRUE(b.records[1].ok);
  const auto as = l->attempts("o-1");
  ASSERT_EQ(as.size(), 2u);
  expect_same_attempt(attempt(1, kNow + 1), as[0]);
  expect_same_attempt(attempt(2, kNow + 3), as[1]);
  EXPECT_EQ(l->get("new-1")->lease_owner, "worker-b");
}

// Records of distinct orders may travel as one statement (PostgreSQL): a
// clash in it still fails that entry alone, and one fenced out spoils none.
TEST_P(LedgerConformance, ABatchOfRecordsOfDistinctOrdersGivesEachItsOwnAnswer) {
  auto l = open();
  for (const char* o : {"o-1", "o-2", "o-3"})
    ASSERT_TRUE(l->create_and_claim(proposal(o), "worker-a", kNow, kNow + kLease).created);
  ASSERT_TRUE(l->record_attempt("o-2", "worker-a", attempt(1, kNow + 1)));
  AttemptEntry clashing = attempt(1, kNow + 1);
  clashing.reason = "another entry under a taken number";
  LedgerBatch b;
  b.records.push_back({"worker-a", "o-1", attempt(1, kNow + 2), false, {}});
  b.records.push_back({"worker-a", "o-2", clashing, false, {}});
  b.records.push_back({"worker-a", "o-3", attempt(1, kNow + 3), false, {}});
  l->apply(b);
  EXPECT_EQ(b.records[0].error, "");
  EXPECT_TRUE(b.records[0].ok);
  EXPECT_NE(b.records[1].error, "") << "a clash is an error, never an overwrite";
  EXPECT_EQ(b.records[2].error, "");
  EXPECT_TRUE(b.records[2].ok);
  for (const char* o : {"o-1", "o-2", "o-3"}) ASSERT_EQ(l->attempts(o).size(), 1u) << o;
  expect_same_attempt(attempt(1, kNow + 2), l->attempts("o-1")[0]);
  expect_same_attempt(attempt(1, kNow + 1), l->attempts("o-2")[0]);
  expect_same_attempt(attempt(1, kNow + 3), l->attempts("o-3")[0]);

  LedgerBatch c;
  c.records.push_back({"worker-a", "o-1", attempt(2, kNow + 4), false, {}});
  c.records.push_back({"worker-b", "o-2", attempt(2, kNow + 4), false, {}});  // not the holder
  c.records.push_back({"worker-a", "o-3", attempt(2, kNow + 5), false, {}});
  l->apply(c);
  for (const auto& r : c.records) EXPECT_EQ(r.error, "") << r.order_id;
  EXPECT_TRUE(c.records[0].ok);
  EXPECT_FALSE(c.records[1].ok);
  EXPECT_TRUE(c.records[2].ok);
  EXPECT_EQ(l->attempts("o-1").size(), 2u);
  EXPECT_EQ(l->get("o-1")->attempts, 2);
  EXPECT_EQ(l->attempts("o-2").size(), 1u);
  ASSERT_EQ(l->attempts("o-3").size(), 2u);
  expect_same_attempt(attempt(2, kNow + 5), l->attempts("o-3")[1]);
}

// A group commit may travel as one statement over arrays (PostgreSQL):
// every byte of every text still arrives as the single calls would write
// it, whatever quotes, braces, commas, backslashes or "NULL"s it holds.
TEST_P(LedgerConformance, ABatchKeepsEveryByteOfItsTexts) {
  auto l = open();
  const std::vector<std::string> orders = {"q\"uote", "back\\slash", "{brace,comma}", "NULL", " spaced ",
                                           "\xc3\xa9t\xc3\xa9-\xe6\x94\xaf\xe4\xbb\x98", "plain"};
  LedgerBatch b;
  for (const auto& o : orders) {
    b.creates.push_back(create_entry("worker-a", proposal(o, "key:" + o)));
  }
  l->apply(b);
  for (size_t i = 0; i < orders.size(); ++i) {
    ASSERT_EQ(b.creates[i].error, "") << orders[i];
    EXPECT_TRUE(b.creates[i].out.created) << orders[i];
    EXPECT_EQ(b.creates[i].out.row.order_id, orders[i]);
    EXPECT_EQ(b.creates[i].out.row.idempotency_key, "key:" + orders[i]);
  }
  LedgerBatch settle;
  for (size_t i = 0; i < orders.size(); ++i) {
    LedgerBatch::Settle st;
    st.owner = "worker-a";
    st.order_id = orders[i];
    st.last = attempt(1, kNow + 1);
    st.last->reason = "why: " + orders[i];
    st.settlement.state = i % 2 ? PaymentState::failed : PaymentState::succeeded;
    st.settlement.delivery = "delivered";
    st.settlement.detail = "detail \"" + orders[i] + "\" {x,y} \\ NULL";
    st.settlement.provider_payment_id = "pi_" + orders[i];
    st.now = kNow + 2;
    settle.settles.push_back(st);
  }
  l->apply(settle);
  for (size_t i = 0; i < orders.size(); ++i) {
    ASSERT_EQ(settle.settles[i].error, "") << orders[i];
    EXPECT_TRUE(settle.settles[i].ok) << orders[i];
    const auto row = l->get(orders[i]);
    ASSERT_TRUE(row.has_value()) << orders[i];
    EXPECT_EQ(row->state, i % 2 ? PaymentState::failed : PaymentState::succeeded);
    EXPECT_EQ(row->detail, "detail \"" + orders[i] + "\" {x,y} \\ NULL");
    EXPECT_EQ(row->provider_payment_id, "pi_" + orders[i]);
    EXPECT_EQ(row->lease_owner, "");
    const auto as = l->attempts(orders[i]);
    ASSERT_EQ(as.size(), 1u) << orders[i];
    EXPECT_EQ(as[0].reason, "why: " + orders[i]);
  }
}

TEST_P(LedgerConformance, AnEmptyBatchAndOneOfOnlySettlesAreFine) {
  auto l = open();
  LedgerBatch empty;
  l->apply(empty);
  ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "w", kNow, kNow + kLease).created);
  LedgerBatch b;
  LedgerBatch::Settle s;
  s.owner = "w";
  s.order_id = "o-1";
  s.settlement.state = PaymentState::unknown;
  s.settlement.delivery = "maybe_processed";
  s.now = kNow + 1;
  b.settles.push_back(s);
  l->apply(b);
  EXPECT_TRUE(b.settles[0].ok);
  EXPECT_EQ(l->get("o-1")->state, PaymentState::unknown);
}

// The concurrent engine runs one group commit per engine thread, and a
// store with one writer (SQLite) joins batches that arrive together into
// one transaction: each caller still gets its own entries' answers, a clash
// in one batch fails that entry alone, and what the answers say is stored.
TEST_P(LedgerConformance, BatchesAppliedFromManyThreadsAtOnceEachGetTheirOwnAnswers) {
  auto l = open();
  constexpr int kThreads = 6, kRounds = 15;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(l->create_and_claim(proposal("clash-" + std::to_string(t)), "w" + std::to_string(t), kNow,
                                    kNow + kLease).created);
    ASSERT_TRUE(l->record_attempt("clash-" + std::to_string(t), "w" + std::to_string(t), attempt(1, kNow)));
  }
  std::vector<std::string> failures;
  std::mutex failures_mu;
  auto fail = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(failures_mu);
    failures.push_back(what);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string owner = "w" + std::to_string(t);
      for (int r = 0; r < kRounds; ++r) {
        const std::string order = "t" + std::to_string(t) + "-r" + std::to_string(r);
        LedgerBatch b;
        b.creates.push_back(create_entry(owner, proposal(order), kNow + r));
        if (r > 0) {
          // The previous round's order: settled by its holder, and a record
          // from a worker that holds nothing, fenced out.
          const std::string prev = "t" + std::to_string(t) + "-r" + std::to_string(r - 1);
          LedgerBatch::Settle st;
          st.owner = owner;
          st.order_id = prev;
          st.last = attempt(1, kNow + r);
          st.settlement.state = PaymentState::succeeded;
          st.settlement.delivery = "delivered";
          st.settlement.provider_payment_id = "pi_" + prev;
          st.now = kNow + r;
          b.settles.push_back(st);
          b.records.push_back({"not-" + owner, prev, attempt(1, kNow + r), false, {}});
        }
        if (r == kRounds / 2) {  // an attempt number already taken: this entry's error alone
          AttemptEntry taken = attempt(1, kNow);
          taken.reason = "another entry under a taken number";
          b.records.push_back({owner, "clash-" + std::to_string(t), taken, false, {}});
        }
        l->apply(b);
        if (!b.creates[0].error.empty() || !b.creates[0].out.created || b.creates[0].out.row.order_id != order ||
            b.creates[0].out.row.lease_owner != owner)
          fail(order + ": create answered " + b.creates[0].error + " created=" +
               std::to_string(b.creates[0].out.created) + " row " + b.creates[0].out.row.order_id);
        for (const auto& st : b.settles)
          if (!st.error.empty() || !st.ok) fail(st.order_id + ": settle answered " + st.error);
        for (const auto& rec : b.records) {
          const bool clash = rec.order_id.rfind("clash-", 0) == 0;
          if (clash && rec.error.empty()) fail(rec.order_id + ": a clash went unreported");
          if (!clash && (!rec.error.empty() || rec.ok)) fail(rec.order_id + ": a fenced-out record was taken");
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(failures.empty()) << failures.size() << " wrong answers, first: " << failures.front();
  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < kRounds; ++r) {
      const std::string order = "t" + std::to_string(t) + "-r" + std::to_string(r);
      const auto row = l->get(order);
      ASSERT_TRUE(row.has_value()) << order;
      const bool last = r == kRounds - 1;
      EXPECT_EQ(row->state, last ? PaymentState::in_flight : PaymentState::succeeded) << order;
      EXPECT_EQ(l->attempts(order).size(), last ? 0u : 1u) << order;
    }
    EXPECT_EQ(l->attempts("clash-" + std::to_string(t)).size(), 1u);
  }
}

// ---- settling and attempts --------------------------------------------------------

TEST_P(LedgerConformance, SettleStoresEveryFieldAndReleasesTheLease) {
  auto l = open();
  const auto created = l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).row;
  ASSERT_TRUE(l->record_attempt("o-1", "worker-a", attempt(1, kNow + 10)));
  Settlement s;
  s.state = PaymentState::succeeded;
  s.delivery = "delivered";
  s.detail = "HTTP 200 on attempt 2 (a replay of attempt 1: \"Idempotent-Replayed: true\")";
  s.provider_payment_id = "pi_3Nq\xC3\xA9";  // UTF-8 survives
  s.provider_status = "succeeded";
  s.http_status = 200;
  AttemptEntry last = attempt(2, kNow + 500);
  last.http_status = 200;
  last.verdict = "success";
  ASSERT_TRUE(l->settle("o-1", "worker-a", &last, s, kNow + 900));

  PaymentRow want = created;
  want.state = PaymentState::succeeded;
  want.delivery = s.delivery;
  want.detail = s.detail;
  want.provider_payment_id = s.provider_payment_id;
  want.provider_status = s.provider_status;
  want.http_status = 200;
  want.attempts = 2;
  want.lease_owner = "";
  want.lease_until = 0;
  want.updated_at = kNow + 900;
  expect_same_row(want, *l->get("o-1"));
  auto as = l->attempts("o-1");
  ASSERT_EQ(as.size(), 2u);
  expect_same_attempt(attempt(1, kNow + 10), as[0]);
  expect_same_attempt(last, as[1]);
}

TEST_P(LedgerConformance, SettleWithoutALastAttemptKeepsTheRecordedAttempts) {
  auto l = open();
  ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  ASSERT_TRUE(l->record_attempt("o-1", "worker-a", attempt(1, kNow + 10)));
  ASSERT_TRUE(l->record_attempt("o-1", "worker-a", attempt(2, kNow + 20)));
  Settlement s;
  s.state = PaymentState::unknown;
  s.delivery = "maybe_processed";
  s.detail = "deadline reached after a timeout";
  ASSERT_TRUE(l->settle("o-1", "worker-a", nullptr, s, kNow + 30));
  auto row = l->get("o-1");
  EXPECT_EQ(row->state, PaymentState::unknown);
  EXPECT_EQ(row->attempts, 2);
  EXPECT_EQ(row->delivery, "maybe_processed");
  EXPECT_EQ(row->detail, "deadline reached after a timeout");
  EXPECT_EQ(row->http_status, 0);
  EXPECT_EQ(row->lease_until, 0);
  EXPECT_EQ(l->attempts("o-1").size(), 2u);
}

TEST_P(LedgerConformance, AttemptsComeBackOrderedByNumberAndARepeatedNumberIsRefusedNeverOverwritten) {
  auto l = open();
  ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  for (int n : {3, 1, 2}) ASSERT_TRUE(l->record_attempt("o-1", "worker-a", attempt(n, kNow + 100 * n)));
  AttemptEntry again = attempt(2, kNow + 250);
  again.http_status = 0;
  again.transport_error = "timeout after 3000 ms \xE2\x80\x94 maybe delivered";
  again.verdict = "unknown";
  again.delay_ms = -1;
  again.provider_request_id = "";
  again.replayed = true;
  // History is never rewritten: a second entry under a number already taken
  // is a bug somewhere, and fails loudly instead of hiding the first.
  EXPECT_THROW(l->record_attempt("o-1", "worker-a", again), LedgerError);
  auto as = l->attempts("o-1");
  ASSERT_EQ(as.size(), 3u);
  expect_same_attempt(attempt(1, kNow + 100), as[0]);
  expect_same_attempt(attempt(2, kNow + 200), as[1]);
  expect_same_attempt(attempt(3, kNow + 300), as[2]);
  auto row = l->get("o-1");
  EXPECT_EQ(row->attempts, 3) << "the count is the highest number, not the number of writes";
  EXPECT_EQ(row->updated_at, kNow + 300 + 120) << "the latest attempt end";
  EXPECT_EQ(row->state, PaymentState::in_flight);
  EXPECT_EQ(row->lease_owner, "worker-a");
}

// ---- listing --------------------------------------------------------------------

TEST_P(LedgerConformance, ListFiltersByStateAndAgeOldestFirstUpToTheLimit) {
  auto l = open();
  // Created (and so updated) at kNow + t; some then settled at kNow + 100 + t.
  struct Seed {
    const char* order;
    int64_t t;
    std::optional<PaymentState> settle;
  };
  const Seed seeds[] = {{"b", 5, std::nullopt},
                        {"a", 5, std::nullopt},  // same time as b: order id breaks the tie
                        {"c", 1, PaymentState::unknown},
                        {"d", 2, PaymentState::succeeded},
                        {"e", 3, PaymentState::unknown},
                        {"f", 9, std::nullopt}};
  for (const Seed& s : seeds) {
    ASSERT_TRUE(l->create_and_claim(proposal(s.order), "w", kNow + s.t, kNow + s.t + kLease).created);
    if (s.settle) {
      Settlement st;
      st.state = *s.settle;
      ASSERT_TRUE(l->settle(s.order, "w", nullptr, st, kNow + 100 + s.t));
    }
  }
  auto ids = [](const std::vector<PaymentRow>& rows) {
    std::string s;
    for (const auto& r : rows) s += r.order_id;
    return s;
  };
  EXPECT_EQ(ids(l->list(std::nullopt, 0, 100, std::nullopt)), "abfcde");
  EXPECT_EQ(ids(l->list(std::nullopt, 0, 3, std::nullopt)), "abf");
  EXPECT_EQ(ids(l->list(PaymentState::in_flight, 0, 100, std::nullopt)), "abf");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 100, std::nullopt)), "ce");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 1, std::nullopt)), "c");
  EXPECT_EQ(ids(l->list(PaymentState::succeeded, 0, 100, std::nullopt)), "d");
  EXPECT_EQ(ids(l->list(PaymentState::failed, 0, 100, std::nullopt)), "");
  EXPECT_EQ(ids(l->list(PaymentState::pending, 0, 100, std::nullopt)), "");
  // updated_before is strict.
  EXPECT_EQ(ids(l->list(std::nullopt, kNow + 5, 100, std::nullopt)), "");
  EXPECT_EQ(ids(l->list(std::nullopt, kNow + 6, 100, std::nullopt)), "ab");
  EXPECT_EQ(ids(l->list(std::nullopt, kNow + 103, 100, std::nullopt)), "abfcd");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, kNow + 103, 100, std::nullopt)), "c");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, kNow + 104, 100, std::nullopt)), "ce");
  // Every field comes back through list as through get.
  for (const auto& r : l->list(std::nullopt, 0, 100, std::nullopt)) expect_same_row(*l->get(r.order_id), r);
}

// Reconcile lists the open rows of its own scope: a row of another scope
// (another merchant account on a shared ledger) is never in its list, the
// scope "" selects exactly the rows of a payretry that kept none, and no
// scope given lists every row.
TEST_P(LedgerConformance, ListWithAScopeReturnsOnlyThatScopesRowsTheEmptyScopeTheUnscopedOnesAndNoScopeAll) {
  auto l = open();
  struct Seed {
    const char* order;
    const char* scope;
    int64_t t;
    std::optional<PaymentState> settle;
  };
  // Updated at kNow + t, or settled at kNow + 100 + t: listed a2 b2 a1 b1 u1 u2 a3 x1.
  const Seed seeds[] = {{"a1", "A", 1, PaymentState::unknown},  {"b1", "B", 2, PaymentState::unknown},
                        {"u1", "", 3, PaymentState::unknown},   {"a2", "A", 4, std::nullopt},
                        {"b2", "B", 5, std::nullopt},           {"u2", "", 6, PaymentState::succeeded},
                        {"a3", "A", 7, PaymentState::unknown},  {"x1", "AA", 8, PaymentState::unknown}};
  for (const Seed& s : seeds) {
    ASSERT_TRUE(l->create_and_claim(scoped(s.order, s.scope, kHeadersA), "w", kNow + s.t, kNow + s.t + kLease)
                    .created);
    if (s.settle) {
      Settlement st;
      st.state = *s.settle;
      ASSERT_TRUE(l->settle(s.order, "w", nullptr, st, kNow + 100 + s.t));
    }
  }
  auto ids = [](const std::vector<PaymentRow>& rows) {
    std::string s;
    for (const auto& r : rows) s += r.order_id;
    return s;
  };
  const std::optional<std::string> all, a = "A", b = "B", none = "", other = "C";
  EXPECT_EQ(ids(l->list(std::nullopt, 0, 100, all)), "a2b2a1b1u1u2a3x1");
  EXPECT_EQ(ids(l->list(std::nullopt, 0, 100, a)), "a2a1a3") << "exactly the scope, not one it begins";
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 100, a)), "a1a3");
  EXPECT_EQ(ids(l->list(PaymentState::in_flight, 0, 100, a)), "a2");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 100, b)), "b1");
  EXPECT_EQ(ids(l->list(PaymentState::in_flight, 0, 100, b)), "b2");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 100, none)), "u1");
  EXPECT_EQ(ids(l->list(std::nullopt, 0, 100, none)), "u1u2");
  EXPECT_EQ(ids(l->list(PaymentState::succeeded, 0, 100, none)), "u2");
  EXPECT_EQ(ids(l->list(PaymentState::succeeded, 0, 100, a)), "");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 100, other)), "");
  EXPECT_EQ(ids(l->list(std::nullopt, 0, 100, other)), "");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 100, all)), "a1b1u1a3x1");
  // With the age filter too (strict, as ever).
  EXPECT_EQ(ids(l->list(PaymentState::unknown, kNow + 107, 100, a)), "a1");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, kNow + 108, 100, a)), "a1a3");
  EXPECT_EQ(ids(l->list(std::nullopt, kNow + 5, 100, a)), "a2");
  // Every field comes back through a scoped list as through get.
  for (const auto& scope : {a, b, none})
    for (const auto& r : l->list(std::nullopt, 0, 100, scope)) expect_same_row(*l->get(r.order_id), r);
}

// The scope filters the listing itself, before the limit: a page of one
// scope is never filled (and so never starved) by older rows of others.
TEST_P(LedgerConformance, AListLimitCountsOnlyTheRowsOfTheScopeAskedFor) {
  auto l = open();
  Settlement unknown;
  unknown.state = PaymentState::unknown;
  auto seed = [&](const std::string& order, const std::string& scope, int64_t t) {
    ASSERT_TRUE(l->create_and_claim(scoped(order, scope), "w", kNow + t, kNow + t + kLease).created);
    ASSERT_TRUE(l->settle(order, "w", nullptr, unknown, kNow + t));
  };
  // The oldest open rows are other scopes' (and unscoped ones).
  for (int i = 0; i < 10; ++i) seed("b" + std::to_string(i), "B", i);
  for (int i = 0; i < 2; ++i) seed("u" + std::to_string(i), "", 10 + i);
  for (int i = 0; i < 3; ++i) seed("a" + std::to_string(i), "A", 20 + i);
  auto ids = [](const std::vector<PaymentRow>& rows) {
    std::string s;
    for (const auto& r : rows) s += r.order_id;
    return s;
  };
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 1, std::string("A"))), "a0");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 2, std::string("A"))), "a0a1");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 3, std::string("A"))), "a0a1a2");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 50, std::string("A"))), "a0a1a2");
  EXPECT_EQ(ids(l->list(std::nullopt, 0, 2, std::string("A"))), "a0a1");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 1, std::string(""))), "u0");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, kNow + 21, 5, std::string("A"))), "a0");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 2, std::string("B"))), "b0b1");
  // Without a scope the oldest rows fill the page, whoever made them.
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 2, std::nullopt)), "b0b1");
}

// ---- the secret ------------------------------------------------------------------

TEST_P(LedgerConformance, SecretIs64HexChars) {
  auto l = open();
  const std::string s = l->secret();
  EXPECT_TRUE(is_hex64(s)) << s;
  EXPECT_EQ(s, l->secret());
}

TEST_P(LedgerConformance, TheOverrideWins) {
  auto o = open("application-given-secret");
  EXPECT_EQ(o->secret(), "application-given-secret");
  EXPECT_EQ(open("application-given-secret")->secret(), "application-given-secret");
}

// ---- threads ----------------------------------------------------------------

TEST_P(LedgerConformance, EightThreadsRacingOnTheSameOrdersLeaveExactlyOneWinnerEach) { race(8, 0); }

INSTANTIATE_TEST_SUITE_P(Backends, LedgerConformance,
                         ::testing::Values(Kind::memory, Kind::sqlite, Kind::postgres), param_name);

// ---- durable backends only ---------------------------------------------------

class DurableLedger : public LedgerConformance {};

TEST_P(DurableLedger, ReopeningKeepsRowsAttemptsAndTheSecret) {
  std::string secret;
  PaymentRow settled, held;
  {
    auto l = open();
    secret = l->secret();
    ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
    ASSERT_TRUE(l->record_attempt("o-1", "worker-a", attempt(1, kNow + 1)));
    Settlement s;
    s.state = PaymentState::failed;
    s.delivery = "delivered";
    s.detail = "card declined";
    s.provider_payment_id = "pi_9";
    s.provider_status = "requires_payment_method";
    s.http_status = 402;
    const AttemptEntry last = attempt(2, kNow + 2);
    ASSERT_TRUE(l->settle("o-1", "worker-a", &last, s, kNow + 3));
    ASSERT_TRUE(l->create_and_claim(proposal("o-2"), "worker-b", kNow + 4, kNow + 4 + kLease).created);
    settled = *l->get("o-1");
    held = *l->get("o-2");
  }
  auto l = open();
  EXPECT_EQ(l->secret(), secret);
  expect_same_row(settled, *l->get("o-1"));
  expect_same_row(held, *l->get("o-2"));
  auto as = l->attempts("o-1");
  ASSERT_EQ(as.size(), 2u);
  expect_same_attempt(attempt(1, kNow + 1), as[0]);
  expect_same_attempt(attempt(2, kNow + 2), as[1]);
  // The lease survives the reopen: still held, still fenced.
  EXPECT_FALSE(l->claim("o-2", "worker-c", kNow + 5, kNow + 5 + kLease));
  EXPECT_TRUE(l->record_attempt("o-2", "worker-b", attempt(1, kNow + 6)));
}

TEST_P(DurableLedger, TheSecretIsCreatedOnceAndAnOverrideIsNotStored) {
  // Opened first with an override: the stored secret is still made (and
  // is not the override), but fingerprints are keyed by the override.
  EXPECT_EQ(open("override-1-abcdefgh")->secret(), "override-1-abcdefgh");
  const std::string stored = store_->query_raw("SELECT value FROM ledger_meta WHERE key = 'secret'");
  EXPECT_TRUE(is_hex64(stored)) << stored;
  EXPECT_EQ(open("override-1-abcdefgh")->secret(), "override-1-abcdefgh");
  auto a = open("override-1-abcdefgh");
  auto b = open("override-1-abcdefgh");
  EXPECT_EQ(a->secret(), b->secret());
}

// ---- one secret per ledger -------------------------------------------------------

const char* const kSecretMismatch =
    "ledger: the secret differs from the one this ledger's fingerprints were made with; every client of one ledger "
    "must use the same ledger.secret";

void expect_secret_mismatch(const std::function<void()>& open_it) {
  try {
    open_it();
    ADD_FAILURE() << "a client with another secret opened the ledger";
  } catch (const LedgerError& e) {
    EXPECT_EQ(std::string(e.what()), kSecretMismatch);
  }
}

TEST_P(DurableLedger, AClientWithAnotherSecretIsRefusedOnOpenNotTakenForAnotherPayment) {
  const std::string stored = open()->secret();
  const std::string check = store_->query_raw("SELECT value FROM ledger_meta WHERE key = 'secret_check'");
  EXPECT_TRUE(is_hex64(check)) << "a check value is stored with the ledger: " << check;
  EXPECT_NE(check, stored) << "the check is not the secret";
  expect_secret_mismatch([&] { open("another-secret-of-another-client"); });
  // The stored secret itself, given as an override, is the same secret.
  EXPECT_EQ(open(stored)->secret(), stored);
  EXPECT_EQ(open()->secret(), stored);
  EXPECT_EQ(store_->query_raw("SELECT value FROM ledger_meta WHERE key = 'secret_check'"), check);
}

TEST_P(DurableLedger, AnOverrideGivenFirstBindsTheLedgerToIt) {
  EXPECT_EQ(open("the-application-secret-1234")->secret(), "the-application-secret-1234");
  EXPECT_EQ(open("the-application-secret-1234")->secret(), "the-application-secret-1234");
  expect_secret_mismatch([&] { open(); });  // the stored random one is another secret
  expect_secret_mismatch([&] { open("the-application-secret-12345"); });
}

TEST_P(DurableLedger, ALedgerMadeBeforeTheCheckGetsItOnItsFirstOpen) {
  {
    auto l = open();
    ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  }
  store_->exec_raw("DELETE FROM ledger_meta WHERE key = 'secret_check'");
  EXPECT_EQ(store_->query_raw("SELECT count(*) FROM ledger_meta WHERE key = 'secret_check'"), "0");
  auto l = open();
  EXPECT_EQ(store_->query_raw("SELECT count(*) FROM ledger_meta WHERE key = 'secret_check'"), "1");
  EXPECT_EQ(l->get("o-1")->lease_owner, "worker-a");
  expect_secret_mismatch([&] { open("a-secret-that-came-later-9876"); });
}

TEST_P(DurableLedger, ProcessesOpeningAFreshStoreAtOnceAllGetTheSameSecret) {
  std::vector<std::unique_ptr<Child>> kids;
  for (int c = 0; c < 4; ++c) {
    kids.push_back(std::make_unique<Child>(
        std::vector<std::string>{"--ledger-child", store_->url(), "child-" + std::to_string(c)}));
    ASSERT_EQ(kids.back()->read_line(), std::optional<std::string>("started"));
  }
  for (auto& k : kids) k->send("open");  // all at once, on a store nobody created yet
  std::set<std::string> secrets;
  for (auto& k : kids) {
    auto line = k->read_line();
    ASSERT_TRUE(line && line->rfind("ready ", 0) == 0) << (line ? *line : "child died");
    secrets.insert(line->substr(6));
  }
  ASSERT_EQ(secrets.size(), 1u);
  EXPECT_TRUE(is_hex64(*secrets.begin()));
  EXPECT_EQ(open()->secret(), *secrets.begin());
}

TEST_P(DurableLedger, ThreeProcessesAndEightThreadsRacingLeaveExactlyOneWinnerPerOrder) { race(8, 3); }

TEST_P(DurableLedger, ASchemaVersionNewerThanTheCodeIsRefusedAndLeftAlone) {
  {
    auto l = open();
    ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  }
  store_->exec_raw("UPDATE ledger_meta SET value = '999' WHERE key = 'schema_version'");
  try {
    open();
    FAIL() << "opened a ledger from the future";
  } catch (const LedgerError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("999"), std::string::npos) << m;
    EXPECT_NE(m.find("(6)"), std::string::npos) << "names the version the code knows: " << m;
  }
  // Refusing touched nothing.
  store_->exec_raw("UPDATE ledger_meta SET value = '6' WHERE key = 'schema_version'");
  auto l = open();
  EXPECT_EQ(l->get("o-1")->lease_owner, "worker-a");
}

// A ledger written by schema 1 (before entries said whether they may have
// been processed, and before lookups joined them) opens under schema 2: its
// sends read as "may have been processed", which is the safe reading.
TEST_P(DurableLedger, ASchemaOneLedgerMigratesAndItsOldSendsReadAsPossiblyProcessed) {
  {
    auto l = open();
    ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  }
  store_->exec_raw("DELETE FROM attempts");
  store_->exec_raw("DROP INDEX payments_parent_operation");  // schema 6's, as the columns below
  for (const char* column : {"operation", "parent_order_id", "operation_ref", "amount"})
    store_->exec_raw(std::string("ALTER TABLE payments DROP COLUMN ") + column);
  store_->exec_raw("ALTER TABLE payments DROP COLUMN money_state");  // schema 5's
  store_->exec_raw("ALTER TABLE attempts DROP COLUMN money_state");
  store_->exec_raw("DROP TABLE webhook_events");          // schema 4's
  store_->exec_raw("DROP INDEX payments_scope_provider");  // schema 4's, on a column schema 3 added
  store_->exec_raw("ALTER TABLE attempts DROP COLUMN kind");
  store_->exec_raw("ALTER TABLE attempts DROP COLUMN processed");
  store_->exec_raw("DROP INDEX payments_state_scope_updated");  // schema 3's, as the columns below
  store_->exec_raw("ALTER TABLE payments DROP COLUMN scope");
  store_->exec_raw("ALTER TABLE payments DROP COLUMN submission_headers");
  store_->exec_raw("ALTER TABLE payments DROP COLUMN submission_path");
  store_->exec_raw("UPDATE ledger_meta SET value = '1' WHERE key = 'schema_version'");
  store_->exec_raw("INSERT INTO attempts (order_id, number, started_at, ended_at, http_status, transport_error, "
                   "verdict, reason, delay_ms, provider_request_id, replayed) "
                   "VALUES ('o-1', 1, 1, 2, 0, 'timeout', 'retry', 'timeout', 100, '', false)");
  auto l = open();
  const auto as = l->attempts("o-1");
  ASSERT_EQ(as.size(), 1u);
  EXPECT_EQ(as[0].kind, "send");
  EXPECT_FALSE(as[0].processed.has_value());
  ASSERT_TRUE(l->record_attempt("o-1", "worker-a", attempt(2, kNow + 10)));
  EXPECT_EQ(l->attempts("o-1").size(), 2u);
}

// ---- a ledger of schema 2 (before rows had a scope) -------------------------------

// What payretry's schema 1 and 2 steps made, verbatim (ledger_sqlite.cpp,
// ledger_postgres_schema.cpp before schema 3), for each SQL dialect.
const char* const kSqliteSchemaTwo = R"sql(
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE payments (
  order_id TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL UNIQUE,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('PENDING','IN_FLIGHT','SUCCEEDED','FAILED','UNKNOWN')),
  delivery TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL DEFAULT '',
  provider_payment_id TEXT NOT NULL DEFAULT '',
  provider_status TEXT NOT NULL DEFAULT '',
  http_status INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  key_expires_at INTEGER NOT NULL,
  lease_owner TEXT NOT NULL DEFAULT '',
  lease_until INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL);
CREATE INDEX payments_state_updated ON payments(state, updated_at);
CREATE TABLE attempts (
  order_id TEXT NOT NULL REFERENCES payments(order_id),
  number INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER NOT NULL,
  http_status INTEGER NOT NULL,
  transport_error TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  delay_ms INTEGER NOT NULL,
  provider_request_id TEXT NOT NULL,
  replayed INTEGER NOT NULL,
  PRIMARY KEY (order_id, number));
ALTER TABLE attempts ADD COLUMN kind TEXT NOT NULL DEFAULT 'send';
ALTER TABLE attempts ADD COLUMN processed INTEGER;
)sql";

const char* const kPostgresSchemaTwo = R"sql(
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE payments (
  order_id TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL UNIQUE,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('PENDING','IN_FLIGHT','SUCCEEDED','FAILED','UNKNOWN')),
  delivery TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL DEFAULT '',
  provider_payment_id TEXT NOT NULL DEFAULT '',
  provider_status TEXT NOT NULL DEFAULT '',
  http_status INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  key_expires_at BIGINT NOT NULL,
  lease_owner TEXT NOT NULL DEFAULT '',
  lease_until BIGINT NOT NULL DEFAULT 0,
  updated_at BIGINT NOT NULL);
CREATE INDEX payments_state_updated ON payments (state, updated_at);
CREATE TABLE attempts (
  order_id TEXT NOT NULL REFERENCES payments (order_id),
  number INTEGER NOT NULL,
  started_at BIGINT NOT NULL,
  ended_at BIGINT NOT NULL,
  http_status INTEGER NOT NULL,
  transport_error TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  delay_ms BIGINT NOT NULL,
  provider_request_id TEXT NOT NULL,
  replayed BOOLEAN NOT NULL,
  PRIMARY KEY (order_id, number));
ALTER TABLE attempts ADD COLUMN kind TEXT NOT NULL DEFAULT 'send';
ALTER TABLE attempts ADD COLUMN processed BOOLEAN;
)sql";

// A ledger left by a payretry of schema 2 (rows had no scope and no
// submission headers) opens under schema 3: its rows read as unscoped
// (scope "") without headers, every other column and the history as they
// were, the scoped list finds them under "" only, and they are claimed and
// settled as before. Nothing of the old store is lost or rewritten.
TEST_P(DurableLedger, ASchemaTwoLedgerMigratesToTheLatestAndItsRowsReadUnscopedWithTheirHistory) {
  const std::string secret(64, 'e');
  store_->exec_raw(GetParam() == Kind::sqlite ? kSqliteSchemaTwo : kPostgresSchemaTwo);
  store_->exec_raw("INSERT INTO ledger_meta (key, value) VALUES ('schema_version', '2'), ('secret', '" + secret + "')");
  store_->exec_raw(
      "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, delivery, detail, provider_payment_id, "
      "provider_status, http_status, attempts, created_at, key_expires_at, lease_owner, lease_until, updated_at) "
      "VALUES ('old-open', 'key-old-open', '" + std::string(64, 'a') + "', 'UNKNOWN', 'maybe_processed', "
      "'deadline reached after a timeout', '', '', 0, 2, " + std::to_string(kNow) + ", " +
      std::to_string(kNow + kDay) + ", '', 0, " + std::to_string(kNow + 300) + "), "
      "('old-paid', 'key-old-paid', '" + std::string(64, 'b') + "', 'SUCCEEDED', 'delivered', 'HTTP 200', 'pi_old', "
      "'succeeded', 200, 1, " + std::to_string(kNow) + ", " + std::to_string(kNow + kDay) + ", '', 0, " +
      std::to_string(kNow + 50) + ")");
  store_->exec_raw(
      "INSERT INTO attempts (order_id, number, started_at, ended_at, http_status, transport_error, verdict, reason, "
      "delay_ms, provider_request_id, replayed, kind, processed) VALUES "
      "('old-open', 1, " + std::to_string(kNow + 1) + ", " + std::to_string(kNow + 121) +
      ", 0, 'timeout', 'retry', 'timeout', 250, '', false, 'send', true), "
      "('old-open', 2, " + std::to_string(kNow + 200) + ", " + std::to_string(kNow + 300) +
      ", 0, 'timeout', 'unknown', 'deadline', -1, '', false, 'lookup', NULL), "
      "('old-paid', 1, " + std::to_string(kNow + 1) + ", " + std::to_string(kNow + 50) +
      ", 200, '', 'success', 'HTTP 200', -1, 'req_old', true, 'send', false)");

  auto l = open();
  EXPECT_EQ(store_->query_raw("SELECT value FROM ledger_meta WHERE key = 'schema_version'"), "6");
  EXPECT_EQ(l->secret(), secret) << "the ledger's secret is kept";
  const std::string index_count =
      GetParam() == Kind::sqlite
          ? "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'payments_state_scope_updated'"
          : "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() "
            "AND indexname = 'payments_state_scope_updated'";
  EXPECT_EQ(store_->query_raw(index_count), "1");

  PaymentRow open_row;
  open_row.order_id = "old-open";
  open_row.idempotency_key = "key-old-open";
  open_row.fingerprint = std::string(64, 'a');
  open_row.state = PaymentState::unknown;
  open_row.delivery = "maybe_processed";
  open_row.detail = "deadline reached after a timeout";
  open_row.attempts = 2;
  open_row.created_at = kNow;
  open_row.key_expires_at = kNow + kDay;
  open_row.updated_at = kNow + 300;
  PaymentRow paid = open_row;
  paid.order_id = "old-paid";
  paid.idempotency_key = "key-old-paid";
  paid.fingerprint = std::string(64, 'b');
  paid.state = PaymentState::succeeded;
  paid.delivery = "delivered";
  paid.detail = "HTTP 200";
  paid.provider_payment_id = "pi_old";
  paid.provider_status = "succeeded";
  paid.http_status = 200;
  paid.attempts = 1;
  paid.updated_at = kNow + 50;
  expect_same_row(open_row, *l->get("old-open"));  // scope "", no headers
  expect_same_row(paid, *l->get("old-paid"));

  AttemptEntry sent;
  sent.number = 1;
  sent.started_at = kNow + 1;
  sent.ended_at = kNow + 121;
  sent.transport_error = "timeout";
  sent.verdict = "retry";
  sent.reason = "timeout";
  sent.delay_ms = 250;
  sent.processed = true;
  AttemptEntry looked = sent;
  looked.number = 2;
  looked.kind = "lookup";
  looked.started_at = kNow + 200;
  looked.ended_at = kNow + 300;
  looked.verdict = "unknown";
  looked.reason = "deadline";
  looked.delay_ms = -1;
  looked.processed.reset();
  const auto history = l->attempts("old-open");
  ASSERT_EQ(history.size(), 2u);
  expect_same_attempt(sent, history[0]);
  expect_same_attempt(looked, history[1]);
  ASSERT_EQ(l->attempts("old-paid").size(), 1u);
  EXPECT_EQ(l->attempts("old-paid")[0].provider_request_id, "req_old");

  auto ids = [](const std::vector<PaymentRow>& rows) {
    std::string s;
    for (const auto& r : rows) s += r.order_id + " ";
    return s;
  };
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 100, std::string(""))), "old-open ");
  EXPECT_EQ(ids(l->list(std::nullopt, 0, 100, std::string(""))), "old-paid old-open ");
  EXPECT_EQ(ids(l->list(PaymentState::unknown, 0, 100, std::string("scope-a"))), "");

  // Beside them, scoped rows; the old open row is claimed and settled as before.
  ASSERT_TRUE(l->create_and_claim(scoped("new", "scope-a", kHeadersA), "worker-a", kNow + 400, kNow + 400 + kLease)
                  .created);
  EXPECT_EQ(l->get("new")->scope, "scope-a");
  EXPECT_EQ(l->get("new")->submission_headers, kHeadersA);
  EXPECT_EQ(ids(l->list(PaymentState::in_flight, 0, 100, std::string("scope-a"))), "new ");
  ASSERT_TRUE(l->claim("old-open", "worker-b", kNow + 500, kNow + 500 + kLease));
  ASSERT_TRUE(l->record_attempt("old-open", "worker-b", attempt(3, kNow + 501)));
  Settlement done;
  done.state = PaymentState::succeeded;
  done.delivery = "delivered";
  ASSERT_TRUE(l->settle("old-open", "worker-b", nullptr, done, kNow + 700));
  EXPECT_EQ(l->get("old-open")->scope, "");
  EXPECT_EQ(l->attempts("old-open").size(), 3u);
  // Opened again: already at the latest, nothing to do.
  l.reset();
  expect_same_row(paid, *open()->get("old-paid"));
  EXPECT_EQ(store_->query_raw("SELECT value FROM ledger_meta WHERE key = 'schema_version'"), "6");
}

// A state string that names no state (a hand edit, a row of a later
// payretry, a damaged store) reads the same in both SQL backends, which
// share one row codec (src/ledger/sql_row_codec.cpp): every read of the row
// is refused with a LedgerError naming the order and the string, so its
// payment is neither created anew nor claimed (nothing can be sent), the row
// is left as it is, and every other row still reads.
TEST_P(DurableLedger, AnUnknownStateStringIsRefusedAlikeByEverySqlBackendAndNothingIsSentOrWritten) {
  auto l = open();
  ASSERT_TRUE(l->create_and_claim(proposal("o-ok"), "worker-a", kNow, kNow + kLease).created);
  // The schema's CHECK refuses such a string; stepped around here as a
  // damaged store or a hand edit would.
  const std::string insert =
      "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, created_at, key_expires_at, updated_at) "
      "VALUES ('o-bogus', 'key-o-bogus', 'fp', 'REFUNDED', 1000, 999999999999999, 1000)";
  if (GetParam() == Kind::sqlite) store_->exec_raw("PRAGMA ignore_check_constraints = ON; " + insert);
  else store_->exec_raw("ALTER TABLE payments DROP CONSTRAINT payments_state_check; " + insert);

  const std::string why = "payment o-bogus has an unknown state 'REFUNDED'";
  auto expect_refused = [&](const char* call, const std::function<void()>& run) {
    try {
      run();
      ADD_FAILURE() << call << " read a row whose state is 'REFUNDED'";
    } catch (const LedgerError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << call << ": " << e.what();
    }
  };
  expect_refused("get", [&] { l->get("o-bogus"); });
  expect_refused("list", [&] { l->list(std::nullopt, 0, 100, std::nullopt); });
  expect_refused("create_and_claim",
                 [&] { l->create_and_claim(proposal("o-bogus"), "worker-b", kNow, kNow + kLease); });

  // In a group commit only its own entry fails.
  LedgerBatch b;
  for (const char* order : {"o-bogus", "o-new"}) {
    b.creates.push_back(create_entry("worker-b", proposal(order)));
  }
  l->apply(b);
  EXPECT_NE(b.creates[0].error.find(why), std::string::npos) << b.creates[0].error;
  EXPECT_FALSE(b.creates[0].out.created);
  EXPECT_EQ(b.creates[1].error, "");
  EXPECT_TRUE(b.creates[1].out.created);

  // Not claimable (the statement compares the stored string), and untouched.
  EXPECT_FALSE(l->claim("o-bogus", "worker-b", kNow, kNow + kLease));
  EXPECT_EQ(store_->query_raw("SELECT state || '/' || lease_owner || '/' || updated_at FROM payments "
                              "WHERE order_id = 'o-bogus'"),
            "REFUNDED//1000");
  EXPECT_TRUE(l->attempts("o-bogus").empty());
  // A state filter never meets it; the other rows read as ever.
  EXPECT_TRUE(l->list(PaymentState::unknown, 0, 100, std::nullopt).empty());
  EXPECT_EQ(l->list(PaymentState::in_flight, 0, 100, std::nullopt).size(), 2u);
  EXPECT_EQ(l->get("o-ok")->lease_owner, "worker-a");
}

INSTANTIATE_TEST_SUITE_P(Backends, DurableLedger, ::testing::Values(Kind::sqlite, Kind::postgres), param_name);

// ---- PostgreSQL only -------------------------------------------------------------

const char* const kPassword = "Pw-d0nt-l3ak-9f2";

void expect_no_password(const std::string& m) {
  EXPECT_EQ(m.find(kPassword), std::string::npos) << "password leaked: " << m;
}

std::string with_password(const std::string& url) {
  // postgresql://user@host... -> postgresql://user:PASSWORD@host...
  const size_t at = url.find('@');
  return url.substr(0, at) + ":" + kPassword + url.substr(at);
}

TEST(PostgresLedger, RedactConninfoMasksPasswordsInEveryForm) {
  EXPECT_EQ(redact_conninfo("postgresql://app:s3cr%40t@db.example:5432/pay?sslmode=require"),
            "postgresql://app:***@db.example:5432/pay?sslmode=require");
  EXPECT_EQ(redact_conninfo("postgres://app@db/pay?password=s3cret&sslmode=require"),
            "postgres://app@db/pay?password=***&sslmode=require");
  EXPECT_EQ(redact_conninfo(R"(host=db user=app password='it\'s secret' dbname=pay)"),
            "host=db user=app password=*** dbname=pay");
  EXPECT_EQ(redact_conninfo("host=db password='it''s' dbname=pay"), "host=db password=*** dbname=pay");
  EXPECT_EQ(redact_conninfo("host=db PASSWORD = s3cret dbname=pay"), "host=db PASSWORD = *** dbname=pay");
  EXPECT_EQ(redact_conninfo("error near s3cret here", "s3cret"), "error near *** here");
  EXPECT_EQ(redact_conninfo("postgresql://app@db/pay"), "postgresql://app@db/pay");
}

TEST(PostgresLedger, AMalformedUrlIsRefusedWithoutEchoingThePassword) {
  try {
    open_ledger(std::string("postgresql://app:") + kPassword + "%zz@127.0.0.1:1/pay", "");
    FAIL() << "opened a malformed URL";
  } catch (const LedgerError& e) {
    expect_no_password(e.what());
    EXPECT_EQ(std::string(e.what()).find("%zz"), std::string::npos) << e.what();
  }
}

TEST(PostgresLedger, AnUnreachableServerGivesAClearErrorWithoutThePassword) {
  // A bound socket that does not listen: connections to it are refused.
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));
  for (const std::string& url :
       {std::string("postgresql://app:") + kPassword + "@127.0.0.1:" + port + "/pay",
        "postgresql://app@127.0.0.1:" + port + "/pay?password=" + kPassword,
        "host=127.0.0.1 port=" + port + " dbname=pay user=app password=" + kPassword}) {
    try {
      // open_ledger dispatches URLs only; a key=value string goes to the backend.
      if (url.rfind("host=", 0) == 0) open_postgres_ledger(url, "");
      else open_ledger(url, "");
      ADD_FAILURE() << "connected to nothing";
    } catch (const LedgerError& e) {
      const std::string m = e.what();
      expect_no_password(m);
      EXPECT_NE(m.find("postgresql"), std::string::npos) << m;
      EXPECT_NE(m.find("127.0.0.1:" + port), std::string::npos) << "names the server: " << m;
      EXPECT_NE(m.find("cannot connect"), std::string::npos) << m;
    }
  }
  close(s);
}

class PostgresShared : public ::testing::Test {
 protected:
  void SetUp() override {
    LEDGER_REQUIRE_PG();
    store_ = std::make_unique<ScratchStore>(Kind::postgres);
  }
  std::unique_ptr<ScratchStore> store_;
};

TEST_F(PostgresShared, BrokenIdleConnectionsAreReplacedWithoutTheCallerNoticing) {
  const std::string app = "payretry-test-" + random_hex(8);
  const std::string& u = store_->url();
  auto l = open_ledger(u + (u.rfind("postgres", 0) == 0 ? "&application_name=" : " application_name=") + app, "");
  PgSession admin(pg_base_url());
  auto kill_ledger_sessions = [&] {
    const std::string n = admin.exec(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '" + app + "'");
    EXPECT_NE(n, "0") << "the ledger had no session to kill";
    for (int i = 0; i < 100; ++i) {
      if (admin.exec("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + app + "'") == "0") return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "the killed sessions did not go away";
  };
  ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  kill_ledger_sessions();
  EXPECT_EQ(l->get("o-1")->lease_owner, "worker-a");  // a read
  kill_ledger_sessions();
  EXPECT_TRUE(l->create_and_claim(proposal("o-2"), "worker-a", kNow, kNow + kLease).created);  // a transaction
  kill_ledger_sessions();
  EXPECT_TRUE(l->record_attempt("o-2", "worker-a", attempt(1, kNow + 1)));
  kill_ledger_sessions();
  Settlement s;
  s.state = PaymentState::unknown;
  EXPECT_TRUE(l->settle("o-2", "worker-a", nullptr, s, kNow + 2));
  kill_ledger_sessions();
  EXPECT_TRUE(l->claim("o-2", "worker-b", kNow + 3, kNow + 3 + kLease));  // a single-statement write
  EXPECT_EQ(l->get("o-2")->lease_owner, "worker-b");
  EXPECT_EQ(l->attempts("o-2").size(), 1u);
}

// The client's engines share half the pool for their batches (lookups and
// the threaded path keep the other half), one each at least: four engines
// of four batches each would hold twice the pool, and smaller batches cost
// the server a transaction each (BENCHMARKS.md, "PostgreSQL for fleets").
TEST_F(PostgresShared, TheEnginesOfAClientShareHalfThePoolForTheirBatches) {
  auto l = open_ledger(store_->url(), "");
  EXPECT_EQ(l->concurrent_batches(1), 4);
  EXPECT_EQ(l->concurrent_batches(2), 2);
  EXPECT_EQ(l->concurrent_batches(3), 1);
  for (int engines = 1; engines <= 64; ++engines) {
    EXPECT_GE(l->concurrent_batches(engines), 1) << engines << " engines";
    if (engines <= 4) {
      EXPECT_LE(engines * l->concurrent_batches(engines), 4) << engines << " engines";
    }
  }
  EXPECT_EQ(l->concurrent_batches(0), 4) << "no engine count: as for one";
}

// A fenced write (record, settle, a batch's settles) finds its order by key.
// The planner takes IN_FLIGHT for rare once statistics say most rows are
// settled, and a plan that reads the (state, updated_at) index would read
// every in-flight row of every process, and every entry of a row settled
// since the last vacuum, for each write. The server's own counters say
// which indexes the writes read (flushed when the ledger's sessions end).
TEST_F(PostgresShared, FencedWritesLookUpTheOrderByKeyNotThroughTheStateIndex) {
  const std::string& schema = store_->schema();
  auto l = open_ledger(store_->url(), "");
  Settlement done;
  done.state = PaymentState::succeeded;
  // Statistics taken when no payment was in flight (they lag behind, as
  // they do on a busy server): IN_FLIGHT looks like no row at all.
  auto create_orders = [&](int from, int to) {
    LedgerBatch b;
    for (int i = from; i < to; ++i) {
      b.creates.push_back(create_entry("worker-a", proposal("o-" + std::to_string(i))));
    }
    l->apply(b);
    for (const auto& c : b.creates) ASSERT_TRUE(c.out.created) << c.proposed.order_id;
  };
  auto settles_of = [&](int from, int to) {
    LedgerBatch b;
    for (int i = from; i < to; ++i) {
      LedgerBatch::Settle st;
      st.owner = "worker-a";
      st.order_id = "o-" + std::to_string(i);
      st.settlement = done;
      st.now = kNow + 3;
      b.settles.push_back(st);
    }
    return b;
  };
  create_orders(0, 300);
  LedgerBatch settled = settles_of(0, 300);
  l->apply(settled);
  PgSession admin(store_->url());
  admin.exec("ANALYZE payments");
  create_orders(300, 312);
  admin.exec("SELECT pg_stat_reset_single_table_counters('payments_state_updated'::regclass)");
  admin.exec("SELECT pg_stat_reset_single_table_counters('payments_pkey'::regclass)");

  // Single writes, and a batch of one record and the settles of the others.
  ASSERT_TRUE(l->record_attempt("o-300", "worker-a", attempt(1, kNow + 2)));
  ASSERT_TRUE(l->settle("o-300", "worker-a", nullptr, done, kNow + 3));
  LedgerBatch b = settles_of(302, 312);
  b.records.push_back({"worker-a", "o-301", attempt(1, kNow + 2), false, {}});
  l->apply(b);
  ASSERT_EQ(b.records[0].error, "");
  EXPECT_TRUE(b.records[0].ok);
  for (const auto& st : b.settles) {
    ASSERT_EQ(st.error, "") << st.order_id;
    EXPECT_TRUE(st.ok) << st.order_id;
  }
  l.reset();  // its sessions end and flush their counters

  // Wait until the three single-order writes show among the lookups by key,
  // then nothing may have read the state index.
  const std::string where = " FROM pg_stat_user_indexes WHERE schemaname = '" + schema + "' AND indexrelname = ";
  long long by_key = 0;
  for (int i = 0; i < 250 && by_key < 3; ++i) {
    admin.exec("SELECT pg_stat_clear_snapshot()");
    by_key = std::stoll(admin.exec("SELECT idx_scan" + where + "'payments_pkey'"));
    if (by_key < 3) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GE(by_key, 3) << "the ledger's counters never showed";
  EXPECT_EQ(admin.exec("SELECT idx_scan" + where + "'payments_state_updated'"), "0");
}

TEST_F(PostgresShared, AReadOnlyServerGivesAClearErrorAndReadsStillWork) {
  {
    auto l = open_ledger(store_->url(), "");
    ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  }
  const std::string ro = with_pg_options(pg_base_url(), "-c search_path=" + store_->schema() +
                                                            " -c default_transaction_read_only=on");
  auto l = open_ledger(ro, "");
  EXPECT_EQ(l->get("o-1")->lease_owner, "worker-a");
  try {
    l->create_and_claim(proposal("o-2"), "worker-a", kNow, kNow + kLease);
    FAIL() << "wrote to a read-only server";
  } catch (const LedgerError& e) {
    EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
  }
  EXPECT_THROW(l->claim("o-1", "worker-b", kNow + 2 * kLease, kNow + 3 * kLease), LedgerError);
  EXPECT_FALSE(l->get("o-2").has_value());
}

TEST(PostgresLedger, ServerStoppedMidRunGivesAClearErrorWithoutThePasswordThenTheSameLedgerRecovers) {
  LEDGER_REQUIRE_PG();  // PostgreSQL testing is on: its binaries are installed
  PrivateCluster cluster;
  const std::string url = cluster.start();
  ASSERT_FALSE(url.empty()) << "pg_cluster.sh start failed (see its output above)";
  // Trust authentication ignores the password; it is only there to leak.
  auto l = open_ledger(with_password(url), "");
  ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  ASSERT_TRUE(l->record_attempt("o-1", "worker-a", attempt(1, kNow + 1)));

  ASSERT_TRUE(cluster.stop());
  auto expect_clear_failure = [](const std::function<void()>& op, const char* what) {
    try {
      op();
      ADD_FAILURE() << what << " worked with the server stopped";
    } catch (const LedgerError& e) {
      const std::string m = e.what();
      expect_no_password(m);
      EXPECT_NE(m.find("postgresql 127.0.0.1:"), std::string::npos) << m;
      EXPECT_TRUE(m.find("connect") != std::string::npos || m.find("connection") != std::string::npos) << m;
    }
  };
  expect_clear_failure([&] { l->get("o-1"); }, "get");
  expect_clear_failure([&] { l->record_attempt("o-1", "worker-a", attempt(2, kNow + 2)); }, "record_attempt");
  expect_clear_failure([&] { l->create_and_claim(proposal("o-2"), "worker-a", kNow, kNow + kLease); },
                       "create_and_claim");
  expect_clear_failure([&] { l->claim("o-1", "worker-b", kNow + 2 * kLease, kNow + 3 * kLease); }, "claim");
  expect_clear_failure([&] { open_ledger(with_password(url), ""); }, "open");

  const std::string again = cluster.start();
  ASSERT_EQ(again, url) << "the restarted server should keep its port";
  // The same object: its dead connections are replaced on first use.
  EXPECT_EQ(l->get("o-1")->lease_owner, "worker-a");
  EXPECT_TRUE(l->record_attempt("o-1", "worker-a", attempt(2, kNow + 2)));
  EXPECT_TRUE(l->create_and_claim(proposal("o-2"), "worker-a", kNow, kNow + kLease).created);
  EXPECT_EQ(l->attempts("o-1").size(), 2u);
  EXPECT_FALSE(l->get("o-3").has_value());
}

// ---- a password holding '@' or '/' ---------------------------------------------

// A port nothing listens on: connections to it are refused at once.
struct RefusingPort {
  RefusingPort() {
    s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
    port = std::to_string(ntohs(a.sin_port));
  }
  ~RefusingPort() { close(s); }
  int s = -1;
  std::string port;
};

TEST(PostgresLedger, APasswordHoldingARawAtSignOrSlashNeverShowsInAMessage) {
  RefusingPort p;
  struct Case {
    std::string url;
    std::vector<std::string> fragments;  // none may appear
  };
  const std::vector<Case> cases = {
      {"postgresql://app:p@ss@127.0.0.1:" + p.port + "/pay", {"p@ss", "ss@"}},
      {"postgresql://app:Pw@d0nt@l3ak@127.0.0.1:" + p.port + "/pay", {"d0nt", "l3ak"}},
      {"postgresql://app:Pw%40d0nt%40l3ak@127.0.0.1:" + p.port + "/pay", {"d0nt", "l3ak", "%40"}},
      {"postgresql://app:Pw/d0nt@l3ak@127.0.0.1:" + p.port + "/pay", {"d0nt", "l3ak"}},
      {"postgres://app:Pw?d0nt#l3ak@127.0.0.1:" + p.port + "/pay?sslmode=disable", {"d0nt", "l3ak"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.url);
    try {
      open_ledger(c.url, "");
      ADD_FAILURE() << "connected to nothing";
    } catch (const LedgerError& e) {
      const std::string m = e.what();
      for (const std::string& f : c.fragments) EXPECT_EQ(m.find(f), std::string::npos) << "leaked " << f << ": " << m;
      // The host is read after the LAST '@': the message names the right server.
      EXPECT_NE(m.find("127.0.0.1:" + p.port + "/pay"), std::string::npos) << m;
      EXPECT_NE(m.find("cannot connect"), std::string::npos) << m;
    }
  }
  EXPECT_EQ(redact_conninfo("postgresql://app:p@ss@db:5432/pay"), "postgresql://app:***@db:5432/pay");
}

TEST_F(PostgresShared, APasswordHoldingARawAtSignConnectsToTheHostAfterTheLastAt) {
  // Trust authentication ignores the password: this shows the URL is read
  // as meant (host after the last '@'), not that the password is checked.
  const std::string& u = store_->url();
  if (u.rfind("postgres", 0) != 0 || u.find('@') == std::string::npos || u.find("://") == std::string::npos)
    GTEST_SKIP() << "needs a postgresql://user@host URL";
  const size_t at = u.find('@');
  auto l = open_ledger(u.substr(0, at) + ":p@ss/w@rd" + u.substr(at), "");
  ASSERT_TRUE(l->create_and_claim(proposal("o-1"), "worker-a", kNow, kNow + kLease).created);
  EXPECT_EQ(l->get("o-1")->lease_owner, "worker-a");
}

// ---- leases on the server's clock ----------------------------------------------------

int64_t real_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr int64_t kMinutes5 = 5 * 60 * 1000;

// A client whose wall clock is `skew_ms` off, and the ledger it opened.
struct SkewedClient {
  SkewedClient(const std::string& url, int64_t skew_ms)
      : skew(skew_ms), ledger(open_postgres_ledger_with_clock(url, "", 5000, [skew_ms] { return real_now_ms() + skew_ms; })) {}
  int64_t now() const { return real_now_ms() + skew; }
  int64_t skew;
  std::unique_ptr<Ledger> ledger;
};

int64_t server_now_ms(const ScratchStore& st) {
  return std::stoll(st.query_raw("SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint"));
}

TEST_F(PostgresShared, ALiveLeaseIsNotTakenOverByAClientWhoseClockIsAhead) {
  SkewedClient behind(store_->url(), -kMinutes5), ahead(store_->url(), +kMinutes5);
  const int64_t t = behind.now();
  ASSERT_TRUE(behind.ledger->create_and_claim(proposal("o-1"), "behind", t, t + 30'000).created);
  // By its own clock the lease ended minutes ago; by the server's it has
  // 30 s left.
  const int64_t n = ahead.now();
  EXPECT_GT(n, t + 30'000);
  EXPECT_FALSE(ahead.ledger->claim("o-1", "ahead", n, n + 30'000)) << "stole a live lease";
  EXPECT_EQ(ahead.ledger->get("o-1")->lease_owner, "behind");
  // A caller passing a `now` ahead of the clock its ledger measured (no
  // skewed clock injected) steals nothing either: the server's clock caps it.
  auto plain = open_ledger(store_->url(), "");
  const int64_t future = real_now_ms() + kMinutes5;
  EXPECT_FALSE(plain->claim("o-1", "plain", future, future + 30'000));
  EXPECT_EQ(plain->get("o-1")->lease_owner, "behind");
}

TEST_F(PostgresShared, AnExpiredLeaseIsTakenOverByAClientWhoseClockIsBehind) {
  SkewedClient ahead(store_->url(), +kMinutes5), behind(store_->url(), -kMinutes5);
  const int64_t t = ahead.now();
  ASSERT_TRUE(ahead.ledger->create_and_claim(proposal("o-1"), "ahead", t, t + 800).created);
  const int64_t early = behind.now();
  EXPECT_FALSE(behind.ledger->claim("o-1", "behind", early, early + 30'000)) << "took a live lease";
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  // By its own clock the lease ends minutes from now; by the server's it
  // has ended.
  const int64_t n = behind.now();
  EXPECT_LT(n, t + 800);
  EXPECT_TRUE(behind.ledger->claim("o-1", "behind", n, n + 30'000)) << "an expired lease stayed held";
  EXPECT_EQ(behind.ledger->get("o-1")->lease_owner, "behind");
}

TEST_F(PostgresShared, EveryClientSeesALeaseEndOnItsOwnClockAsTheServerDoes) {
  SkewedClient behind(store_->url(), -kMinutes5), ahead(store_->url(), +kMinutes5);
  const int64_t t = behind.now();
  const auto created = behind.ledger->create_and_claim(proposal("o-1"), "behind", t, t + 20'000);
  ASSERT_TRUE(created.created);
  EXPECT_EQ(created.row.lease_until, t + 20'000) << "the claimant gets its own lease end back";
  // Stored on the server's clock: the server gives the lease the time the
  // client asked for, not 5 minutes less.
  const int64_t stored = std::stoll(store_->query_raw("SELECT lease_until FROM payments WHERE order_id = 'o-1'"));
  const int64_t left_on_server = stored - server_now_ms(*store_);
  EXPECT_GT(left_on_server, 20'000 - 1'000);
  EXPECT_LE(left_on_server, 20'000 + 100);
  // Each reader gets the lease end on its own clock.
  const int64_t b = behind.ledger->get("o-1")->lease_until - behind.now();
  const int64_t a = ahead.ledger->get("o-1")->lease_until - ahead.now();
  EXPECT_NEAR(static_cast<double>(b), 20'000.0, 1'000.0);
  EXPECT_NEAR(static_cast<double>(a), 20'000.0, 1'000.0);
  for (const auto& r : ahead.ledger->list(PaymentState::in_flight, 0, 10, std::nullopt))
    EXPECT_NEAR(static_cast<double>(r.lease_until - ahead.now()), 20'000.0, 1'000.0);
}


// ---- webhook events: "apply once" (Ledger::record_event) ----------------------

}  // namespace
namespace payretry {
// Failure messages say "duplicate", not "4-byte object".
void PrintTo(EventRecording r, std::ostream* os) {
  *os << (r == EventRecording::recorded ? "recorded" : r == EventRecording::duplicate ? "duplicate" : "kept_for_later");
}
}  // namespace payretry
namespace {

// A verified notification of scope `scope` as the ledger keeps it: an id,
// the names it gives, and its history entry.
LedgerEvent event(const std::string& scope, const std::string& id, const std::string& order,
                  const std::string& provider_id = "", int64_t at = kNow + 1000) {
  LedgerEvent e;
  e.scope = scope;
  e.scheme = "stripe";
  e.event_id = id;
  e.order_id = order;
  e.provider_payment_id = provider_id;
  e.received_at = at;
  e.entry.kind = "webhook";
  e.entry.started_at = at;
  e.entry.ended_at = at;
  e.entry.verdict = kEventNoted;
  e.entry.reason = "succeeded";
  e.entry.provider_request_id = id;
  e.entry.processed = false;
  return e;
}

// A row of `scope` created at `at`, with one send recorded, settled as
// `state` with `provider_id`.
void settled_row(Ledger& l, const std::string& order, const std::string& scope, PaymentState state,
                 const std::string& provider_id = "", int64_t at = kNow) {
  const std::string owner = "owner-" + order;
  ASSERT_TRUE(l.create_and_claim(scoped(order, scope), owner, at, at + kLease).created) << order;
  ASSERT_TRUE(l.record_attempt(order, owner, attempt(1, at + 1))) << order;
  Settlement s;
  s.state = state;
  s.delivery = "maybe_processed";
  s.provider_payment_id = provider_id;
  ASSERT_TRUE(l.settle(order, owner, nullptr, s, at + 200)) << order;
}

// The webhook entries of `order`'s history, as "number:event id" words.
std::string webhook_entries(Ledger& l, const std::string& order) {
  std::string out;
  for (const AttemptEntry& a : l.attempts(order))
    if (a.kind == "webhook") out += std::to_string(a.number) + ":" + a.provider_request_id + " ";
  return out;
}

std::string event_ids(const std::vector<LedgerEvent>& es) {
  std::string out;
  for (const LedgerEvent& e : es) out += e.event_id + " ";
  return out;
}

TEST_P(LedgerConformance, AnEventJoinsItsRowsHistoryAsTheNextEntryOnceAndARedeliveryChangesNothing) {
  auto l = open();
  settled_row(*l, "o-1", "scope-a", PaymentState::unknown, "pi_1");
  ASSERT_FALSE(HasFatalFailure());
  const PaymentRow before = *l->get("o-1");
  ASSERT_EQ(before.attempts, 1);

  LedgerEvent e = event("scope-a", "evt_1", "o-1");
  e.entry.http_status = 200;
  e.entry.delay_ms = -1;
  EXPECT_EQ(l->record_event(e), EventRecording::recorded);
  const auto history = l->attempts("o-1");
  ASSERT_EQ(history.size(), 2u);
  AttemptEntry want = e.entry;
  want.number = 2;
  expect_same_attempt(want, history[1]);
  // The row's state is not the event's to move; its count of entries is.
  PaymentRow after = before;
  after.attempts = 2;
  after.updated_at = std::max(before.updated_at, e.entry.ended_at);
  expect_same_row(after, *l->get("o-1"));

  // The same event again, whatever it now says: a duplicate, nothing written.
  LedgerEvent again = e;
  again.entry.verdict = kEventFailed;
  again.received_at = again.entry.ended_at = kNow + 9000;
  EXPECT_EQ(l->record_event(again), EventRecording::duplicate);
  EXPECT_EQ(l->attempts("o-1").size(), 2u);
  expect_same_row(after, *l->get("o-1"));
  EXPECT_EQ(event_ids(l->kept_events("scope-a", "o-1", "pi_1")), "");

  // Found by the provider's id alone, as the next entry again.
  EXPECT_EQ(l->record_event(event("scope-a", "evt_2", "", "pi_1")), EventRecording::recorded);
  EXPECT_EQ(webhook_entries(*l, "o-1"), "2:evt_1 3:evt_2 ");

  // A later claim numbers after the events.
  ASSERT_TRUE(l->claim("o-1", "worker-b", kNow + 10'000, kNow + 10'000 + kLease));
  EXPECT_TRUE(l->record_attempt("o-1", "worker-b", attempt(4, kNow + 10'001)));
  EXPECT_EQ(l->attempts("o-1").size(), 4u);
}

TEST_P(LedgerConformance, AnEventWithoutItsIdOrANameOrWhoseEntryIsNotOfKindWebhookIsRefusedAndNothingIsStored) {
  auto l = open();
  settled_row(*l, "o-1", "scope-a", PaymentState::unknown);
  ASSERT_FALSE(HasFatalFailure());
  LedgerEvent e = event("scope-a", "evt_1", "o-1");
  e.entry.kind = "send";  // would read as a possibly processed send
  EXPECT_THROW(l->record_event(e), LedgerError);
  EXPECT_EQ(l->attempts("o-1").size(), 1u);
  e.entry.kind = "webhook";
  for (auto spoil : std::vector<std::function<void(LedgerEvent&)>>{
           [](LedgerEvent& x) { x.event_id.clear(); },  // every id-less event would be one
           [](LedgerEvent& x) { x.scheme.clear(); },
           [](LedgerEvent& x) { x.order_id.clear(); },  // and no provider id: names no payment
       }) {
    LedgerEvent bad = e;
    spoil(bad);
    EXPECT_THROW(l->record_event(bad), LedgerError);
  }
  EXPECT_EQ(l->attempts("o-1").size(), 1u);
  EXPECT_EQ(l->record_event(e), EventRecording::recorded) << "the refused ones left nothing behind";
}

TEST_P(LedgerConformance, AnEventForARowInFlightIsKeptAndAppliedOnceAfterTheRunSettles) {
  auto l = open();
  ASSERT_TRUE(l->create_and_claim(scoped("o-1", "scope-a"), "runner", kNow, kNow + kLease).created);
  ASSERT_TRUE(l->record_attempt("o-1", "runner", attempt(1, kNow + 1)));
  // The run holds the row: nothing is written beneath it.
  EXPECT_EQ(l->record_event(event("scope-a", "evt_1", "o-1")), EventRecording::kept_for_later);
  EXPECT_EQ(l->attempts("o-1").size(), 1u);
  EXPECT_EQ(l->get("o-1")->attempts, 1);
  EXPECT_FALSE(l->apply_kept_event(event("scope-a", "evt_1", "o-1"))) << "not while the run holds the row";
  // The run goes on numbering its own entries, and settles.
  ASSERT_TRUE(l->record_attempt("o-1", "runner", attempt(2, kNow + 300)));
  Settlement s;
  s.state = PaymentState::unknown;
  ASSERT_TRUE(l->settle("o-1", "runner", nullptr, s, kNow + 500));
  const auto kept = l->kept_events("scope-a", "o-1", "");
  ASSERT_EQ(event_ids(kept), "evt_1 ");
  EXPECT_EQ(kept[0].entry.number, 0);
  EXPECT_EQ(kept[0].entry.verdict, kEventNoted);
  EXPECT_TRUE(l->apply_kept_event(kept[0]));
  EXPECT_FALSE(l->apply_kept_event(kept[0])) << "a second apply must be refused";
  EXPECT_EQ(webhook_entries(*l, "o-1"), "3:evt_1 ");
  EXPECT_EQ(l->get("o-1")->state, PaymentState::unknown);
  EXPECT_EQ(event_ids(l->kept_events("scope-a", "o-1", "")), "");
  EXPECT_EQ(l->record_event(event("scope-a", "evt_1", "o-1")), EventRecording::duplicate);
}

// The state a landed event leaves, for every state a row can be found in
// and every finding: what event_moves() says (the SQL backends say it again
// in their statements), and the row's other columns with it.
TEST_P(LedgerConformance, ALandedEventMovesItsRowAsEventMovesSaysForEveryStateAndFindingAndNeverBack) {
  auto l = open();
  int n = 0;
  // (PENDING is no state a settle leaves; event_moves() treats it as UNKNOWN.)
  for (PaymentState from : {PaymentState::unknown, PaymentState::succeeded, PaymentState::failed}) {
    for (const char* finding : {kEventSucceeded, kEventFailed, kEventNoted}) {
      const std::string order = "o-" + std::to_string(++n);
      settled_row(*l, order, "scope-a", from, "pi_" + order);
      ASSERT_FALSE(HasFatalFailure());
      const PaymentRow before = *l->get(order);
      LedgerEvent e = event("scope-a", "evt_" + order, order, "pi_" + order);
      e.entry.verdict = finding;
      e.entry.reason = "provider-word";
      ASSERT_EQ(l->record_event(e), EventRecording::recorded) << order;
      const PaymentRow after = *l->get(order);
      const std::optional<PaymentState> to = event_moves(from, e.entry);
      SCOPED_TRACE(std::string(state_name(from)) + " + " + finding);
      EXPECT_EQ(after.state, to.value_or(from));
      if (to) {
        EXPECT_EQ(after.delivery, "delivered");
        EXPECT_EQ(after.detail, event_settled_detail(e.entry));
        EXPECT_EQ(after.provider_status, "provider-word");
      } else {
        EXPECT_EQ(after.delivery, before.delivery);
        EXPECT_EQ(after.detail, before.detail);
        EXPECT_EQ(after.provider_status, before.provider_status);
      }
      EXPECT_EQ(after.attempts, before.attempts + 1);
      EXPECT_EQ(after.lease_owner, "");
    }
  }
  // The rule itself: forward only.
  AttemptEntry ok;
  ok.verdict = kEventSucceeded;
  EXPECT_EQ(event_moves(PaymentState::unknown, ok), PaymentState::succeeded);
  EXPECT_EQ(event_moves(PaymentState::failed, ok), std::nullopt);
  EXPECT_EQ(event_moves(PaymentState::in_flight, ok), std::nullopt);
}

TEST_P(LedgerConformance, AnEventNamingAnOrderWhoseRowHasAnotherProviderIdLandsOnlyWhereItsOwnIdIs) {
  auto l = open();
  settled_row(*l, "o-1", "scope-a", PaymentState::unknown, "pi_1");
  settled_row(*l, "o-2", "scope-a", PaymentState::unknown, "pi_2");
  settled_row(*l, "o-3", "scope-a", PaymentState::unknown, "");
  ASSERT_FALSE(HasFatalFailure());
  // Names order o-1, but payment pi_2: it is o-2's payment's event.
  LedgerEvent e = event("scope-a", "evt_x", "o-1", "pi_2");
  e.entry.verdict = kEventFailed;
  EXPECT_EQ(l->record_event(e), EventRecording::recorded);
  EXPECT_EQ(l->get("o-1")->state, PaymentState::unknown) << "another payment's event must not settle o-1";
  EXPECT_EQ(webhook_entries(*l, "o-1"), "");
  EXPECT_EQ(l->get("o-2")->state, PaymentState::failed);
  EXPECT_EQ(webhook_entries(*l, "o-2"), "2:evt_x ");
  // Names order o-1 and a payment no row has: kept, o-1 untouched.
  LedgerEvent other = event("scope-a", "evt_y", "o-1", "pi_9");
  other.entry.verdict = kEventSucceeded;
  EXPECT_EQ(l->record_event(other), EventRecording::kept_for_later);
  EXPECT_EQ(l->get("o-1")->state, PaymentState::unknown);
  // A noted event (it settles nothing, and may be another payment's of the
  // order) lands without giving the row its id (event_teaches_id): the row's
  // own payment's event, naming another id, still lands after it.
  LedgerEvent noted = event("scope-a", "evt_v", "o-3", "pi_OTHER");
  EXPECT_EQ(l->record_event(noted), EventRecording::recorded);
  EXPECT_EQ(l->get("o-3")->provider_payment_id, "");
  // A row without a provider id takes the id of the event that settles it,
  // and is found by it after.
  LedgerEvent learn = event("scope-a", "evt_z", "o-3", "pi_3");
  learn.entry.verdict = kEventSucceeded;
  EXPECT_EQ(l->record_event(learn), EventRecording::recorded);
  EXPECT_EQ(l->get("o-3")->provider_payment_id, "pi_3");
  EXPECT_EQ(l->get("o-3")->state, PaymentState::succeeded);
  LedgerEvent by_id = event("scope-a", "evt_w", "", "pi_3");
  by_id.entry.verdict = kEventSucceeded;
  EXPECT_EQ(l->record_event(by_id), EventRecording::recorded);
  EXPECT_EQ(webhook_entries(*l, "o-3"), "2:evt_v 3:evt_z 4:evt_w ");
}

// Found by the DST (seed 223, stripe, --webhook-foreign-open): a reconcile
// re-send that ended UNKNOWN without an id erased the id the row had, and an
// event of another payment of the same order then landed on it.
TEST_P(LedgerConformance, ASettlementWithoutAProviderIdKeepsTheIdTheRowKnows) {
  auto l = open();
  settled_row(*l, "o-1", "scope-a", PaymentState::unknown, "pi_1");
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(l->claim("o-1", "again", kNow + 1000, kNow + 1000 + kLease));
  Settlement s;
  s.state = PaymentState::unknown;
  s.delivery = "maybe_processed";
  ASSERT_TRUE(l->settle("o-1", "again", nullptr, s, kNow + 1100));
  EXPECT_EQ(l->get("o-1")->provider_payment_id, "pi_1");
  LedgerEvent other = event("scope-a", "evt_other", "o-1", "pi_OTHER");
  other.entry.verdict = kEventSucceeded;
  EXPECT_EQ(l->record_event(other), EventRecording::kept_for_later);
  EXPECT_EQ(l->get("o-1")->state, PaymentState::unknown);
  // Through a group commit too.
  ASSERT_TRUE(l->claim("o-1", "batch", kNow + 2000, kNow + 2000 + kLease));
  LedgerBatch b;
  LedgerBatch::Settle st;
  st.owner = "batch";
  st.order_id = "o-1";
  st.settlement = s;
  st.now = kNow + 2100;
  b.settles.push_back(st);
  l->apply(b);
  EXPECT_TRUE(b.settles[0].ok) << b.settles[0].error;
  EXPECT_EQ(l->get("o-1")->provider_payment_id, "pi_1");
  EXPECT_EQ(l->get("o-1")->lease_owner, "");
}

TEST_P(LedgerConformance, ASettledEventIsOneCommitAndARedeliveryAfterItChangesNothing) {
  auto l = open();
  settled_row(*l, "o-1", "scope-a", PaymentState::unknown, "pi_1");
  ASSERT_FALSE(HasFatalFailure());
  LedgerEvent e = event("scope-a", "evt_1", "o-1", "pi_1");
  e.entry.verdict = kEventSucceeded;
  EXPECT_EQ(l->record_event(e), EventRecording::recorded);
  const PaymentRow settled = *l->get("o-1");
  EXPECT_EQ(settled.state, PaymentState::succeeded);
  LedgerEvent contrary = e;
  contrary.entry.verdict = kEventFailed;
  EXPECT_EQ(l->record_event(contrary), EventRecording::duplicate);
  contrary.event_id = "evt_2";
  EXPECT_EQ(l->record_event(contrary), EventRecording::recorded);
  EXPECT_EQ(l->get("o-1")->state, PaymentState::succeeded) << "a settled row never moves back";
  // A run that claims it afterwards is refused: it is final.
  EXPECT_FALSE(l->claim("o-1", "late", kNow + 10'000, kNow + 10'000 + kLease));
}

TEST_P(LedgerConformance, AnEventThatComesBeforeItsRowIsKeptThenAppliedOnceWhenTheRowAppears) {
  auto l = open();
  // One names the provider's id only, one the order; oldest first.
  EXPECT_EQ(l->record_event(event("scope-a", "evt_b", "", "pi_1", kNow + 20)), EventRecording::kept_for_later);
  EXPECT_EQ(l->record_event(event("scope-a", "evt_a", "o-1", "", kNow + 10)), EventRecording::kept_for_later);
  EXPECT_EQ(l->record_event(event("scope-a", "evt_other", "o-2", "pi_2", kNow + 5)), EventRecording::kept_for_later);
  EXPECT_EQ(l->record_event(event("scope-a", "evt_b", "", "pi_1")), EventRecording::duplicate);
  EXPECT_EQ(event_ids(l->kept_events("scope-a", "o-1", "pi_1")), "evt_a evt_b ");
  EXPECT_EQ(event_ids(l->kept_events("scope-a", "o-1", "")), "evt_a ");
  EXPECT_EQ(event_ids(l->kept_events("scope-a", "", "pi_1")), "evt_b ");
  EXPECT_EQ(event_ids(l->kept_events("scope-a", "", "")), "") << "empty names name nothing";
  EXPECT_FALSE(l->apply_kept_event(event("scope-a", "evt_a", "o-1"))) << "no row yet";

  settled_row(*l, "o-1", "scope-a", PaymentState::succeeded, "pi_1", kNow + 100);
  ASSERT_FALSE(HasFatalFailure());
  for (const LedgerEvent& e : l->kept_events("scope-a", "o-1", "pi_1")) {
    EXPECT_TRUE(l->apply_kept_event(e)) << e.event_id;
    EXPECT_FALSE(l->apply_kept_event(e)) << e.event_id << ": a second apply must be refused";
  }
  EXPECT_EQ(webhook_entries(*l, "o-1"), "2:evt_a 3:evt_b ");
  EXPECT_EQ(l->get("o-1")->state, PaymentState::succeeded) << "a final row never moves";
  EXPECT_EQ(event_ids(l->kept_events("scope-a", "o-1", "pi_1")), "");
  EXPECT_EQ(event_ids(l->kept_events("scope-a", "o-2", "pi_2")), "evt_other ");
  EXPECT_FALSE(l->apply_kept_event(event("scope-a", "evt_never", "o-1"))) << "an event never recorded";
}

TEST_P(LedgerConformance, AnEventBelongsToItsScopeAndNeverLandsOnARowOfAnother) {
  auto l = open();
  settled_row(*l, "o-1", "scope-a", PaymentState::unknown, "pi_1");
  ASSERT_FALSE(HasFatalFailure());
  // Scope B names A's order and A's provider id: neither is B's payment.
  EXPECT_EQ(l->record_event(event("scope-b", "evt_1", "o-1")), EventRecording::kept_for_later);
  EXPECT_EQ(l->record_event(event("scope-b", "evt_2", "", "pi_1")), EventRecording::kept_for_later);
  EXPECT_EQ(webhook_entries(*l, "o-1"), "");
  // The same ids in A are other events, and A's own.
  EXPECT_EQ(l->record_event(event("scope-a", "evt_1", "o-1")), EventRecording::recorded);
  EXPECT_EQ(l->record_event(event("scope-a", "evt_2", "", "pi_1")), EventRecording::recorded);
  EXPECT_EQ(webhook_entries(*l, "o-1"), "2:evt_1 3:evt_2 ");
  // Another scheme's event of the same id is another event too.
  LedgerEvent adyen = event("scope-a", "evt_1", "o-1");
  adyen.scheme = "adyen";
  EXPECT_EQ(l->record_event(adyen), EventRecording::recorded);
  EXPECT_EQ(event_ids(l->kept_events("scope-a", "o-1", "pi_1")), "");
  EXPECT_EQ(event_ids(l->kept_events("scope-b", "o-1", "pi_1")), "evt_1 evt_2 ");
  // B's kept events stay B's, even applied by hand.
  for (const LedgerEvent& e : l->kept_events("scope-b", "o-1", "pi_1")) EXPECT_FALSE(l->apply_kept_event(e));
  EXPECT_EQ(webhook_entries(*l, "o-1"), "2:evt_1 3:evt_2 4:evt_1 ");
}

TEST_P(LedgerConformance, PruneTakesThePrunedRowsEventsAndOldKeptOnesAndNothingElse) {
  auto l = open();
  const int64_t cut = kNow + 3'600'000, late = cut + 60'000;
  settled_row(*l, "old", "scope-a", PaymentState::succeeded, "pi_old", kNow);
  settled_row(*l, "new", "scope-a", PaymentState::succeeded, "pi_new", late);
  settled_row(*l, "open", "scope-a", PaymentState::unknown, "", kNow);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(l->record_event(event("scope-a", "evt_old", "old", "", kNow + 300)), EventRecording::recorded);
  ASSERT_EQ(l->record_event(event("scope-a", "evt_new", "new", "", late + 300)), EventRecording::recorded);
  ASSERT_EQ(l->record_event(event("scope-a", "evt_open", "open", "", kNow + 300)), EventRecording::recorded);
  ASSERT_EQ(l->record_event(event("scope-a", "evt_kept_old", "nobody", "", kNow + 400)), EventRecording::kept_for_later);
  ASSERT_EQ(l->record_event(event("scope-a", "evt_kept_new", "nobody", "", late)), EventRecording::kept_for_later);

  EXPECT_EQ(l->prune_settled(cut), 1);
  EXPECT_FALSE(l->get("old"));
  EXPECT_EQ(event_ids(l->kept_events("scope-a", "nobody", "")), "evt_kept_new ");
  // The events that stay are still known: their redeliveries are duplicates.
  EXPECT_EQ(l->record_event(event("scope-a", "evt_new", "new")), EventRecording::duplicate);
  EXPECT_EQ(l->record_event(event("scope-a", "evt_open", "open")), EventRecording::duplicate);
  EXPECT_EQ(l->record_event(event("scope-a", "evt_kept_new", "nobody")), EventRecording::duplicate);
  if (durable()) {
    EXPECT_EQ(store_->query_raw("SELECT count(*) FROM webhook_events WHERE event_id IN ('evt_old', 'evt_kept_old')"),
              "0");
    EXPECT_EQ(store_->query_raw("SELECT count(*) FROM webhook_events"), "3");
  }
  // The pruned row's event went with it: redelivered, it finds no row.
  EXPECT_EQ(l->record_event(event("scope-a", "evt_old", "old")), EventRecording::kept_for_later);
  EXPECT_EQ(l->record_event(event("scope-a", "evt_kept_old", "nobody", "", kNow + 400)),
            EventRecording::kept_for_later);
}

// Several handles (each its own connection, for the durable stores) and
// threads record the same events at once: each is stored exactly once, its
// entry joins the history once, and the entries of one row never clash.
TEST_P(LedgerConformance, TheSameEventsRecordedFromManyThreadsAndHandlesAtOnceAreRecordedExactlyOnce) {
  auto l = open();
  constexpr int kRows = 4, kEvents = 24, kThreads = 6;
  for (int r = 0; r < kRows; ++r) settled_row(*l, "c-" + std::to_string(r), "scope-a", PaymentState::unknown);
  ASSERT_FALSE(HasFatalFailure());
  // Events 0..19 name a row (five each); 20..23 name no row.
  auto ev = [](int i) {
    return event("scope-a", "evt_" + std::to_string(i), i < 20 ? "c-" + std::to_string(i % kRows) : "nobody",
                 "", kNow + 1000 + i);
  };
  std::vector<std::unique_ptr<Ledger>> handles;
  for (int t = 0; t < kThreads; ++t) handles.push_back(durable() ? open() : nullptr);
  std::mutex mu;
  std::map<std::string, std::vector<EventRecording>> answers;
  std::vector<std::string> errors;
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      Ledger& mine = handles[t] ? *handles[t] : *l;
      while (!go.load()) std::this_thread::yield();
      for (int k = 0; k < kEvents; ++k) {
        const int i = (k + 5 * t) % kEvents;
        try {
          const EventRecording a = mine.record_event(ev(i));
          std::lock_guard<std::mutex> lock(mu);
          answers[ev(i).event_id].push_back(a);
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mu);
          errors.push_back(e.what());
        }
      }
    });
  go = true;
  for (auto& th : pool) th.join();
  for (const auto& e : errors) ADD_FAILURE() << e;
  for (int i = 0; i < kEvents; ++i) {
    const auto& got = answers[ev(i).event_id];
    ASSERT_EQ(got.size(), static_cast<size_t>(kThreads));
    const auto firsts = std::count_if(got.begin(), got.end(), [](EventRecording a) { return a != EventRecording::duplicate; });
    EXPECT_EQ(firsts, 1) << ev(i).event_id << " was stored " << firsts << " times";
    const EventRecording want = i < 20 ? EventRecording::recorded : EventRecording::kept_for_later;
    EXPECT_EQ(std::count(got.begin(), got.end(), want), 1) << ev(i).event_id;
  }
  for (int r = 0; r < kRows; ++r) {
    const std::string order = "c-" + std::to_string(r);
    const auto history = l->attempts(order);
    ASSERT_EQ(history.size(), 6u) << order << ": one send and five events";
    std::set<std::string> ids;
    for (size_t n = 0; n < history.size(); ++n) {
      EXPECT_EQ(history[n].number, static_cast<int>(n) + 1) << order;
      if (history[n].kind == "webhook") ids.insert(history[n].provider_request_id);
    }
    EXPECT_EQ(ids.size(), 5u) << order;
    EXPECT_EQ(l->get(order)->attempts, 6) << order;
  }
  EXPECT_EQ(l->kept_events("scope-a", "nobody", "").size(), 4u);
}

// Two handles of one store (two SQLite connections to one file, two
// connection pools to one PostgreSQL database) are one event store.
TEST_P(DurableLedger, AnEventRecordedThroughOneHandleIsADuplicateThroughAnother) {
  auto one = open();
  auto two = open();
  settled_row(*one, "o-1", "scope-a", PaymentState::unknown);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(one->record_event(event("scope-a", "evt_1", "o-1")), EventRecording::recorded);
  EXPECT_EQ(two->record_event(event("scope-a", "evt_1", "o-1")), EventRecording::duplicate);
  EXPECT_EQ(two->record_event(event("scope-a", "evt_2", "o-2")), EventRecording::kept_for_later);
  EXPECT_EQ(one->record_event(event("scope-a", "evt_2", "o-2")), EventRecording::duplicate);
  EXPECT_EQ(webhook_entries(*two, "o-1"), "2:evt_1 ");
  settled_row(*two, "o-2", "scope-a", PaymentState::failed);
  ASSERT_FALSE(HasFatalFailure());
  const auto kept = one->kept_events("scope-a", "o-2", "");
  ASSERT_EQ(event_ids(kept), "evt_2 ");
  EXPECT_TRUE(two->apply_kept_event(kept[0]));
  EXPECT_FALSE(one->apply_kept_event(kept[0])) << "applied through the other handle";
  EXPECT_EQ(webhook_entries(*one, "o-2"), "2:evt_2 ");
  // Nothing of a request is stored: the table has no column for one.
  const std::string columns =
      GetParam() == Kind::sqlite
          ? "SELECT group_concat(name, ',') FROM pragma_table_info('webhook_events')"
          : "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = 'webhook_events'";
  EXPECT_EQ(store_->query_raw(columns),
            "scope,scheme,event_id,order_id,provider_payment_id,received_at,started_at,ended_at,http_status,"
            "transport_error,verdict,reason,delay_ms,provider_request_id,replayed,kind,processed,applied_to,"
            "money_state");
}

// What payretry's schema 3 step made, verbatim (before webhook events).
const char* const kSqliteSchemaThreeStep = R"sql(
ALTER TABLE payments ADD COLUMN scope TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN submission_headers TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN submission_path TEXT NOT NULL DEFAULT '';
CREATE INDEX payments_state_scope_updated ON payments(state, scope, updated_at, order_id);
)sql";
const char* const kPostgresSchemaThreeStep = R"sql(
ALTER TABLE payments ADD COLUMN scope TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN submission_headers TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN submission_path TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS payments_state_scope_updated
  ON payments (state, scope, updated_at, order_id COLLATE "C");
)sql";

// A ledger left by a payretry of schema 3 opens under the latest schema: its
// rows and their history are as they were, and events land on them numbered
// after their history.
TEST_P(DurableLedger, ASchemaThreeLedgerMigratesToTheLatestKeepingRowsAndHistoryAndTakesEvents) {
  const std::string secret(64, 'e');
  const bool sqlite = GetParam() == Kind::sqlite;
  store_->exec_raw(sqlite ? kSqliteSchemaTwo : kPostgresSchemaTwo);
  store_->exec_raw(sqlite ? kSqliteSchemaThreeStep : kPostgresSchemaThreeStep);
  store_->exec_raw("INSERT INTO ledger_meta (key, value) VALUES ('schema_version', '3'), ('secret', '" + secret + "')");
  store_->exec_raw(
      "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, delivery, detail, provider_payment_id, "
      "provider_status, http_status, attempts, created_at, key_expires_at, lease_owner, lease_until, updated_at, "
      "scope, submission_headers, submission_path) VALUES "
      "('old-open', 'key-old-open', '" + std::string(64, 'a') + "', 'UNKNOWN', 'maybe_processed', 'timeout', "
      "'pi_open', '', 0, 2, " + std::to_string(kNow) + ", " + std::to_string(kNow + kDay) + ", '', 0, " +
      std::to_string(kNow + 300) + ", 'scope-a', '" + kHeadersA + "', '/v1/x')");
  store_->exec_raw(
      "INSERT INTO attempts (order_id, number, started_at, ended_at, http_status, transport_error, verdict, reason, "
      "delay_ms, provider_request_id, replayed, kind, processed) VALUES "
      "('old-open', 1, " + std::to_string(kNow + 1) + ", " + std::to_string(kNow + 121) +
      ", 0, 'timeout', 'retry', 'timeout', 250, '', false, 'send', true), "
      "('old-open', 2, " + std::to_string(kNow + 200) + ", " + std::to_string(kNow + 300) +
      ", 0, 'timeout', 'unknown', 'deadline', -1, '', false, 'lookup', false)");

  auto l = open();
  EXPECT_EQ(store_->query_raw("SELECT value FROM ledger_meta WHERE key = 'schema_version'"), "6");
  EXPECT_EQ(l->secret(), secret);
  PaymentRow want;
  want.order_id = "old-open";
  want.idempotency_key = "key-old-open";
  want.fingerprint = std::string(64, 'a');
  want.state = PaymentState::unknown;
  want.delivery = "maybe_processed";
  want.detail = "timeout";
  want.provider_payment_id = "pi_open";
  want.attempts = 2;
  want.created_at = kNow;
  want.key_expires_at = kNow + kDay;
  want.updated_at = kNow + 300;
  want.scope = "scope-a";
  want.submission_headers = kHeadersA;
  want.submission_path = "/v1/x";
  expect_same_row(want, *l->get("old-open"));
  const auto history = l->attempts("old-open");
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0].kind, "send");
  EXPECT_EQ(history[0].processed, std::optional<bool>(true));
  EXPECT_EQ(history[1].kind, "lookup");

  EXPECT_EQ(l->record_event(event("scope-a", "evt_1", "", "pi_open")), EventRecording::recorded);
  EXPECT_EQ(l->record_event(event("scope-a", "evt_1", "", "pi_open")), EventRecording::duplicate);
  EXPECT_EQ(webhook_entries(*l, "old-open"), "3:evt_1 ");
  l.reset();
  auto again = open();
  EXPECT_EQ(store_->query_raw("SELECT value FROM ledger_meta WHERE key = 'schema_version'"), "6");
  EXPECT_EQ(again->record_event(event("scope-a", "evt_1", "", "pi_open")), EventRecording::duplicate);
  EXPECT_EQ(again->attempts("old-open").size(), 3u);
}

// ---- where the money is (money.hpp): the money state, every backend ----------------

}  // namespace
namespace payretry {
// Failure messages say "paid", not "4-byte object".
void PrintTo(MoneyState m, std::ostream* os) { *os << money_state_name(m); }
}  // namespace payretry
namespace {

constexpr MoneyState kMoneyStates[] = {MoneyState::unknown,  MoneyState::awaiting_customer, MoneyState::pending,
                                       MoneyState::authorized, MoneyState::paid,            MoneyState::partly_refunded,
                                       MoneyState::refunded,   MoneyState::failed};

// A run's end that read `money` about the money (and nothing final about the
// payment unless `state` says so).
Settlement money_read(MoneyState money, PaymentState state = PaymentState::unknown, const std::string& provider_id = "") {
  Settlement s;
  s.state = state;
  s.delivery = "maybe_processed";
  s.provider_payment_id = provider_id;
  s.money_state = money;
  return s;
}

// A verified event whose entry read `money`, with `verdict`.
LedgerEvent money_event(const std::string& id, const std::string& order, const std::string& provider_id,
                        MoneyState money, const char* verdict = kEventNoted, int64_t at = kNow + 1000) {
  LedgerEvent e = event("scope-a", id, order, provider_id, at);
  e.entry.verdict = verdict;
  e.entry.money_state = money;
  return e;
}

// For every stored money state and every read, a settle leaves what
// money_moves() says (money_after), through the single call and through a
// group commit (on PostgreSQL one statement over arrays, on SQLite one
// transaction): the SQL backends say the rule again in their statements
// (PostgreSQL as CASE text made by sql_money_after, SQLite by calling the
// C++ rule as an SQL function), and this holds them to it, pair by pair.
TEST_P(LedgerConformance, ASettleMovesTheStoredMoneyStateAsMoneyMovesSaysForEveryPairInEveryWriteOfIt) {
  auto l = open();
  for (const bool batched : {false, true}) {
    SCOPED_TRACE(batched ? "group commit" : "single settle");
    const std::string tag = batched ? "b" : "s";
    auto order = [&](MoneyState from, MoneyState read) {
      return "m" + tag + "-" + money_state_name(from) + "-" + money_state_name(read);
    };
    // Every row created and brought to `from` (from `unknown` every state
    // is one read away) in one batch.
    LedgerBatch start;
    for (MoneyState from : kMoneyStates)
      for (MoneyState read : kMoneyStates) start.creates.push_back(create_entry("first", scoped(order(from, read), "scope-a")));
    l->apply(start);
    for (const auto& c : start.creates) ASSERT_TRUE(c.out.created) << c.proposed.order_id << c.error;
    LedgerBatch to_from;
    for (MoneyState from : kMoneyStates) {
      for (MoneyState read : kMoneyStates) {
        LedgerBatch::Settle st;
        st.owner = "first";
        st.order_id = order(from, read);
        st.settlement = money_read(from);
        st.now = kNow + 10;
        to_from.settles.push_back(st);
      }
    }
    l->apply(to_from);
    for (const auto& st : to_from.settles) ASSERT_TRUE(st.ok) << st.order_id << st.error;
    for (MoneyState from : kMoneyStates)
      for (MoneyState read : kMoneyStates) {
        ASSERT_EQ(l->get(order(from, read))->money_state, from) << order(from, read);
        ASSERT_TRUE(l->claim(order(from, read), "second", kNow + 20, kNow + 20 + kLease));
      }

    // The read, with the run's last entry (which keeps what it read too).
    LedgerBatch reads;
    for (MoneyState from : kMoneyStates) {
      for (MoneyState read : kMoneyStates) {
        AttemptEntry last = attempt(1, kNow + 30);
        last.money_state = read;
        if (batched) {
          LedgerBatch::Settle st;
          st.owner = "second";
          st.order_id = order(from, read);
          st.last = last;
          st.settlement = money_read(read);
          st.now = kNow + 40;
          reads.settles.push_back(st);
        } else {
          ASSERT_TRUE(l->settle(order(from, read), "second", &last, money_read(read), kNow + 40));
        }
      }
    }
    if (batched) {
      l->apply(reads);
      for (const auto& st : reads.settles) ASSERT_TRUE(st.ok) << st.order_id << st.error;
    }
    for (MoneyState from : kMoneyStates) {
      for (MoneyState read : kMoneyStates) {
        const std::optional<MoneyState> to = money_moves(from, read);
        EXPECT_EQ(l->get(order(from, read))->money_state, to.value_or(from))
            << money_state_name(from) << " read " << money_state_name(read);
        const auto history = l->attempts(order(from, read));
        ASSERT_EQ(history.size(), 1u);
        EXPECT_EQ(history[0].money_state, read) << "the entry keeps what it read, not where the row went";
      }
    }
  }
}

// PostgreSQL's statements carry the rule as text (sql_money_after): the
// text itself, evaluated by the server for every pair, is money_moves().
TEST(PostgresLedger, TheMoneyRulesSqlTextIsMoneyMovesForEveryPair) {
  LEDGER_REQUIRE_PG();
  ScratchStore store(Kind::postgres);
  std::string pairs, want;
  for (MoneyState from : kMoneyStates) {
    for (MoneyState read : kMoneyStates) {
      if (!pairs.empty()) pairs += ", ";
      pairs += std::string("('") + money_state_name(from) + "', '" + money_state_name(read) + "')";
      want += std::string(money_state_name(from)) + "+" + money_state_name(read) + "=" +
              money_state_name(money_moves(from, read).value_or(from)) + " ";
    }
  }
  const std::string got = store.query_raw(
      "SELECT string_agg(f || '+' || r || '=' || " + sql_money_after("f", "r") + ", ' ' ORDER BY n) || ' ' "
      "FROM (SELECT f, r, row_number() OVER () AS n FROM (VALUES " + pairs + ") AS v(f, r)) AS t");
  EXPECT_EQ(got, want);
  // A stored name the rule does not know stays as it is (the row codec
  // refuses it on read), whatever is read.
  EXPECT_EQ(store.query_raw("SELECT " + sql_money_after("'bogus'", "'paid'")), "bogus");
}

// Forward only, along the way a payment goes: a settle that read less than
// the row holds (a late lookup, a stale answer) leaves it; `failed` comes
// only before `paid`.
TEST_P(LedgerConformance, SettlesMoveTheMoneyStateForwardAndNeverBack) {
  auto l = open();
  ASSERT_TRUE(l->create_and_claim(scoped("o-1", "scope-a"), "run-1", kNow, kNow + kLease).created);
  EXPECT_EQ(l->get("o-1")->money_state, MoneyState::unknown) << "a new row has read nothing";
  struct Step {
    MoneyState read, want;
  };
  int run = 1;
  auto settle_reading = [&](const std::string& order, MoneyState read) {
    const std::string owner = "run-" + std::to_string(run);
    ASSERT_TRUE(l->settle(order, owner, nullptr, money_read(read), kNow + 100 * run)) << order;
    ++run;
    ASSERT_TRUE(l->claim(order, "run-" + std::to_string(run), kNow + 100 * run, kNow + 100 * run + kLease)) << order;
  };
  for (const Step& s : {Step{MoneyState::pending, MoneyState::pending},
                        Step{MoneyState::awaiting_customer, MoneyState::pending},
                        Step{MoneyState::unknown, MoneyState::pending},
                        Step{MoneyState::failed, MoneyState::failed},
                        Step{MoneyState::paid, MoneyState::failed}}) {
    settle_reading("o-1", s.read);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(l->get("o-1")->money_state, s.want) << "o-1 read " << money_state_name(s.read);
  }
  ASSERT_TRUE(l->create_and_claim(scoped("o-2", "scope-a"), "run-" + std::to_string(run), kNow, kNow + kLease).created);
  for (const Step& s : {Step{MoneyState::paid, MoneyState::paid},
                        Step{MoneyState::pending, MoneyState::paid},
                        Step{MoneyState::failed, MoneyState::paid},
                        Step{MoneyState::partly_refunded, MoneyState::partly_refunded},
                        Step{MoneyState::paid, MoneyState::partly_refunded},
                        Step{MoneyState::refunded, MoneyState::refunded},
                        Step{MoneyState::paid, MoneyState::refunded}}) {
    settle_reading("o-2", s.read);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(l->get("o-2")->money_state, s.want) << "o-2 read " << money_state_name(s.read);
  }
}

// The money state an event moves the row by is the event's entry's, and
// only when the event is provably the row's payment's (event_moves_money):
// it names the row's provider id, or settles the row and so teaches it, or
// names no id and settles the row. Each landing is judged on the row as it
// was before the event; the expectations are said here and checked against
// event_moves_money() itself.
TEST_P(LedgerConformance, AnEventMovesTheMoneyStateOnlyWhenItIsProvablyTheRowsPayment) {
  auto l = open();
  settled_row(*l, "o-own", "scope-a", PaymentState::unknown, "pi_own");
  settled_row(*l, "o-other", "scope-a", PaymentState::unknown, "pi_2");
  settled_row(*l, "o-noid", "scope-a", PaymentState::unknown, "");
  settled_row(*l, "o-order", "scope-a", PaymentState::unknown, "");
  settled_row(*l, "o-final", "scope-a", PaymentState::succeeded, "pi_final");
  ASSERT_FALSE(HasFatalFailure());

  int n = 0;
  // Records `e`, expects it to land on `order` and leave its money `want`,
  // and expects event_moves_money() to say what `moves` says.
  auto lands = [&](const std::string& order, LedgerEvent e, bool moves, MoneyState want) {
    e.event_id = "evt_" + std::to_string(++n);
    SCOPED_TRACE(order + " <- " + e.event_id + " (" + e.entry.verdict + ", " + money_state_name(e.entry.money_state) +
                 ", id '" + e.provider_payment_id + "')");
    const PaymentRow before = *l->get(order);
    EXPECT_EQ(event_moves_money(before, e), moves) << "the test's expectation is the C++ rule's";
    ASSERT_EQ(l->record_event(e), EventRecording::recorded);
    const PaymentRow after = *l->get(order);
    EXPECT_EQ(after.attempts, before.attempts + 1) << "it landed on " << order;
    EXPECT_EQ(after.money_state, want);
    EXPECT_EQ(after.money_state, moves ? money_after(before.money_state, e.entry.money_state) : before.money_state);
    EXPECT_EQ(l->attempts(order).back().money_state, e.entry.money_state) << "its entry keeps what it read";
  };

  // Its own payment's id: a noted event moves the money (a pending word
  // of this very payment), forward only, also once the row is final.
  lands("o-own", money_event("", "o-own", "pi_own", MoneyState::pending), true, MoneyState::pending);
  lands("o-own", money_event("", "", "pi_own", MoneyState::awaiting_customer), true, MoneyState::pending);
  lands("o-own", money_event("", "o-own", "pi_own", MoneyState::paid, kEventSucceeded), true, MoneyState::paid);
  lands("o-own", money_event("", "", "pi_own", MoneyState::failed, kEventFailed), true, MoneyState::paid);
  lands("o-own", money_event("", "", "pi_own", MoneyState::unknown), false, MoneyState::paid);
  EXPECT_EQ(l->get("o-own")->state, PaymentState::succeeded);
  // A final row's money still moves forward by its own payment's events.
  lands("o-final", money_event("", "", "pi_final", MoneyState::refunded), true, MoneyState::refunded);

  // Another payment of the same order (it names o-other, and pi_OTHER): it
  // never lands on o-other, so it never says `paid` for it.
  LedgerEvent foreign = money_event("evt_foreign", "o-other", "pi_OTHER", MoneyState::paid, kEventSucceeded);
  EXPECT_EQ(l->record_event(foreign), EventRecording::kept_for_later);
  EXPECT_EQ(l->get("o-other")->money_state, MoneyState::unknown);
  EXPECT_EQ(webhook_entries(*l, "o-other"), "");

  // A row without an id: a noted event naming an id lands (by its order)
  // but may be another payment's of the order, so it moves no money and
  // teaches no id; one that settles the row teaches its id and moves it.
  lands("o-noid", money_event("", "o-noid", "pi_maybe", MoneyState::authorized), false, MoneyState::unknown);
  EXPECT_EQ(l->get("o-noid")->provider_payment_id, "");
  lands("o-noid", money_event("", "o-noid", "pi_noid", MoneyState::paid, kEventSucceeded), true, MoneyState::paid);
  EXPECT_EQ(l->get("o-noid")->provider_payment_id, "pi_noid");

  // An event naming only the order: only one that settles the row moves
  // its money.
  lands("o-order", money_event("", "o-order", "", MoneyState::pending), false, MoneyState::unknown);
  lands("o-order", money_event("", "o-order", "", MoneyState::failed, kEventFailed), true, MoneyState::failed);
  lands("o-order", money_event("", "o-order", "", MoneyState::paid), false, MoneyState::failed);
}

// An event kept for later (its row IN_FLIGHT, or not there yet) keeps the
// money state its entry read, and moves the row by it when it is applied,
// from the row's state then: never from what the caller hands to
// apply_kept_event, which names the event only.
TEST_P(LedgerConformance, AKeptEventMovesTheMoneyStateWithTheStateItWasStoredWith) {
  auto l = open();
  ASSERT_TRUE(l->create_and_claim(scoped("o-1", "scope-a"), "runner", kNow, kNow + kLease).created);
  EXPECT_EQ(l->record_event(money_event("evt_paid", "o-1", "pi_1", MoneyState::paid, kEventSucceeded)),
            EventRecording::kept_for_later);
  EXPECT_EQ(l->record_event(money_event("evt_early", "o-2", "", MoneyState::failed, kEventFailed)),
            EventRecording::kept_for_later);
  EXPECT_EQ(l->get("o-1")->money_state, MoneyState::unknown) << "nothing lands beneath a claim";
  // The run read only `pending`, and learnt the id.
  ASSERT_TRUE(l->settle("o-1", "runner", nullptr, money_read(MoneyState::pending, PaymentState::unknown, "pi_1"),
                        kNow + 500));
  EXPECT_EQ(l->get("o-1")->money_state, MoneyState::pending);
  const auto kept = l->kept_events("scope-a", "o-1", "pi_1");
  ASSERT_EQ(event_ids(kept), "evt_paid ");
  EXPECT_EQ(kept[0].entry.money_state, MoneyState::paid) << "stored with the state it read";
  LedgerEvent named = kept[0];
  named.entry.money_state = MoneyState::unknown;  // what the caller hands over names the event, no more
  EXPECT_TRUE(l->apply_kept_event(named));
  EXPECT_EQ(l->get("o-1")->money_state, MoneyState::paid);
  EXPECT_EQ(l->get("o-1")->state, PaymentState::succeeded);
  EXPECT_EQ(l->attempts("o-1").back().money_state, MoneyState::paid);

  // One that came before its row: applied once the row is there.
  settled_row(*l, "o-2", "scope-a", PaymentState::unknown, "", kNow + 600);
  ASSERT_FALSE(HasFatalFailure());
  const auto early = l->kept_events("scope-a", "o-2", "");
  ASSERT_EQ(event_ids(early), "evt_early ");
  EXPECT_EQ(early[0].entry.money_state, MoneyState::failed);
  EXPECT_TRUE(l->apply_kept_event(early[0]));
  EXPECT_EQ(l->get("o-2")->money_state, MoneyState::failed);
  EXPECT_EQ(l->get("o-2")->state, PaymentState::failed);
}

// Every history entry keeps the money state it read, through every write
// of it: a recorded attempt (alone and in a group commit of several, which
// PostgreSQL sends as one statement), a settle's last entry, an event's.
TEST_P(LedgerConformance, EveryHistoryEntryKeepsTheMoneyStateItReadThroughEveryWriteOfIt) {
  auto l = open();
  for (const char* order : {"o-1", "o-2"})
    ASSERT_TRUE(l->create_and_claim(scoped(order, "scope-a"), "runner", kNow, kNow + kLease).created);
  AttemptEntry one = attempt(1, kNow + 1);
  one.money_state = MoneyState::awaiting_customer;
  ASSERT_TRUE(l->record_attempt("o-1", "runner", one));
  LedgerBatch records;
  for (const char* order : {"o-1", "o-2"}) {
    LedgerBatch::Record r;
    r.owner = "runner";
    r.order_id = order;
    r.attempt = attempt(2, kNow + 200);
    r.attempt.money_state = std::string(order) == "o-1" ? MoneyState::pending : MoneyState::authorized;
    records.records.push_back(r);
  }
  l->apply(records);
  for (const auto& r : records.records) ASSERT_TRUE(r.ok) << r.order_id << r.error;
  AttemptEntry last = attempt(3, kNow + 300);
  last.money_state = MoneyState::paid;
  ASSERT_TRUE(l->settle("o-1", "runner", &last, money_read(MoneyState::paid, PaymentState::succeeded, "pi_1"),
                        kNow + 400));
  ASSERT_EQ(l->record_event(money_event("evt_1", "", "pi_1", MoneyState::partly_refunded)), EventRecording::recorded);

  std::string got;
  for (const AttemptEntry& a : l->attempts("o-1")) got += std::to_string(a.number) + ":" + money_state_name(a.money_state) + " ";
  EXPECT_EQ(got, "1:awaiting_customer 2:pending 3:paid 4:partly_refunded ");
  ASSERT_EQ(l->attempts("o-2").size(), 1u);
  EXPECT_EQ(l->attempts("o-2")[0].money_state, MoneyState::authorized);
  EXPECT_EQ(l->get("o-1")->money_state, MoneyState::partly_refunded);
  EXPECT_EQ(l->get("o-2")->money_state, MoneyState::unknown) << "a recorded entry moves no row";
}

// What payretry's schema 4 step made, verbatim (before money states).
const char* const kSqliteSchemaFourStep = R"sql(
CREATE TABLE webhook_events (
  scope TEXT NOT NULL,
  scheme TEXT NOT NULL,
  event_id TEXT NOT NULL,
  order_id TEXT NOT NULL,
  provider_payment_id TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER NOT NULL,
  http_status INTEGER NOT NULL,
  transport_error TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  delay_ms INTEGER NOT NULL,
  provider_request_id TEXT NOT NULL,
  replayed INTEGER NOT NULL,
  kind TEXT NOT NULL,
  processed INTEGER,
  applied_to TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (scope, scheme, event_id));
CREATE INDEX webhook_events_applied ON webhook_events(applied_to, received_at);
CREATE INDEX webhook_events_kept_order ON webhook_events(scope, order_id) WHERE applied_to = '';
CREATE INDEX webhook_events_kept_provider ON webhook_events(scope, provider_payment_id) WHERE applied_to = '';
CREATE INDEX payments_scope_provider ON payments(scope, provider_payment_id);
)sql";
const char* const kPostgresSchemaFourStep = R"sql(
CREATE TABLE webhook_events (
  scope TEXT NOT NULL,
  scheme TEXT NOT NULL,
  event_id TEXT NOT NULL,
  order_id TEXT NOT NULL,
  provider_payment_id TEXT NOT NULL,
  received_at BIGINT NOT NULL,
  started_at BIGINT NOT NULL,
  ended_at BIGINT NOT NULL,
  http_status INTEGER NOT NULL,
  transport_error TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  delay_ms BIGINT NOT NULL,
  provider_request_id TEXT NOT NULL,
  replayed BOOLEAN NOT NULL,
  kind TEXT NOT NULL,
  processed BOOLEAN,
  applied_to TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (scope, scheme, event_id));
CREATE INDEX webhook_events_applied ON webhook_events (applied_to, received_at);
CREATE INDEX webhook_events_kept_order ON webhook_events (scope, order_id) WHERE applied_to = '';
CREATE INDEX webhook_events_kept_provider ON webhook_events (scope, provider_payment_id) WHERE applied_to = '';
CREATE INDEX IF NOT EXISTS payments_scope_provider ON payments (scope, provider_payment_id);
)sql";

// A ledger left by a payretry of schema 4 opens under schema 5: its rows,
// their history and its kept events read money state `unknown` (nothing
// was read then), everything else as it was; and they take moves after.
TEST_P(DurableLedger, ASchemaFourLedgerMigratesToFiveAndItsRowsEntriesAndKeptEventsReadMoneyUnknown) {
  const std::string secret(64, 'e');
  const bool sqlite = GetParam() == Kind::sqlite;
  store_->exec_raw(sqlite ? kSqliteSchemaTwo : kPostgresSchemaTwo);
  store_->exec_raw(sqlite ? kSqliteSchemaThreeStep : kPostgresSchemaThreeStep);
  store_->exec_raw(sqlite ? kSqliteSchemaFourStep : kPostgresSchemaFourStep);
  store_->exec_raw("INSERT INTO ledger_meta (key, value) VALUES ('schema_version', '4'), ('secret', '" + secret + "')");
  store_->exec_raw(
      "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, delivery, detail, provider_payment_id, "
      "provider_status, http_status, attempts, created_at, key_expires_at, lease_owner, lease_until, updated_at, "
      "scope, submission_headers, submission_path) VALUES "
      "('old-open', 'key-old-open', '" + std::string(64, 'a') + "', 'UNKNOWN', 'maybe_processed', 'timeout', "
      "'pi_open', 'processing', 0, 1, " + std::to_string(kNow) + ", " + std::to_string(kNow + kDay) + ", '', 0, " +
      std::to_string(kNow + 300) + ", 'scope-a', '', '')");
  store_->exec_raw(
      "INSERT INTO attempts (order_id, number, started_at, ended_at, http_status, transport_error, verdict, reason, "
      "delay_ms, provider_request_id, replayed, kind, processed) VALUES "
      "('old-open', 1, " + std::to_string(kNow + 1) + ", " + std::to_string(kNow + 121) +
      ", 0, 'timeout', 'retry', 'timeout', 250, '', false, 'send', true)");
  store_->exec_raw(
      "INSERT INTO webhook_events (scope, scheme, event_id, order_id, provider_payment_id, received_at, started_at, "
      "ended_at, http_status, transport_error, verdict, reason, delay_ms, provider_request_id, replayed, kind, "
      "processed) VALUES ('scope-a', 'stripe', 'evt_old', 'old-later', '', " + std::to_string(kNow + 5) + ", " +
      std::to_string(kNow + 5) + ", " + std::to_string(kNow + 5) + ", 0, '', 'event_succeeded', 'succeeded', -1, "
      "'evt_old', false, 'webhook', false)");

  auto l = open();
  EXPECT_EQ(store_->query_raw("SELECT value FROM ledger_meta WHERE key = 'schema_version'"), "6");
  EXPECT_EQ(l->secret(), secret);
  const PaymentRow row = *l->get("old-open");
  EXPECT_EQ(row.money_state, MoneyState::unknown);
  EXPECT_EQ(row.provider_payment_id, "pi_open");
  EXPECT_EQ(row.provider_status, "processing");
  EXPECT_EQ(row.attempts, 1);
  const auto history = l->attempts("old-open");
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].money_state, MoneyState::unknown);
  EXPECT_EQ(history[0].processed, std::optional<bool>(true));
  const auto kept = l->kept_events("scope-a", "old-later", "");
  ASSERT_EQ(event_ids(kept), "evt_old ");
  EXPECT_EQ(kept[0].entry.money_state, MoneyState::unknown);
  EXPECT_EQ(kept[0].entry.verdict, kEventSucceeded);

  // It works on: an event of its payment moves the old row's money, a run
  // moves it further, and the old kept event applies without a money move.
  EXPECT_EQ(l->record_event(money_event("evt_new", "", "pi_open", MoneyState::pending)), EventRecording::recorded);
  EXPECT_EQ(l->get("old-open")->money_state, MoneyState::pending);
  ASSERT_TRUE(l->claim("old-open", "worker-b", kNow + 2000, kNow + 2000 + kLease));
  ASSERT_TRUE(l->settle("old-open", "worker-b", nullptr, money_read(MoneyState::paid, PaymentState::succeeded),
                        kNow + 2100));
  EXPECT_EQ(l->get("old-open")->money_state, MoneyState::paid);
  settled_row(*l, "old-later", "scope-a", PaymentState::unknown, "", kNow + 3000);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(l->apply_kept_event(kept[0]));
  EXPECT_EQ(l->get("old-later")->state, PaymentState::succeeded);
  EXPECT_EQ(l->get("old-later")->money_state, MoneyState::unknown);
  l.reset();
  EXPECT_EQ(open()->get("old-open")->money_state, MoneyState::paid);
  EXPECT_EQ(store_->query_raw("SELECT value FROM ledger_meta WHERE key = 'schema_version'"), "6");
}

// A money state string that names no state (a hand edit, a state a later
// payretry appended) is refused like an unknown state: the read fails
// naming whose it is and the string, in both SQL backends alike (one row
// codec), and nothing else is read as another state.
TEST_P(DurableLedger, AnUnknownMoneyStateStringIsRefusedNamingWhoseItIsAndTheString) {
  auto l = open();
  settled_row(*l, "o-1", "scope-a", PaymentState::unknown, "pi_1");
  settled_row(*l, "o-2", "scope-a", PaymentState::unknown, "pi_2");
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(l->record_event(money_event("evt_kept", "nobody", "", MoneyState::pending)), EventRecording::kept_for_later);
  store_->exec_raw("UPDATE payments SET money_state = 'chargeback' WHERE order_id = 'o-1'");
  store_->exec_raw("UPDATE attempts SET money_state = 'chargeback' WHERE order_id = 'o-2'");
  store_->exec_raw("UPDATE webhook_events SET money_state = 'chargeback' WHERE event_id = 'evt_kept'");
  auto expect_refused = [&](const char* call, const std::string& why, const std::function<void()>& run) {
    try {
      run();
      ADD_FAILURE() << call << " read a money state 'chargeback'";
    } catch (const LedgerError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << call << ": " << e.what();
    }
  };
  expect_refused("get", "payment o-1 has an unknown money state 'chargeback'", [&] { l->get("o-1"); });
  expect_refused("list", "payment o-1 has an unknown money state 'chargeback'",
                 [&] { l->list(std::nullopt, 0, 100, std::nullopt); });
  expect_refused("attempts", "entry 1 of payment o-2 has an unknown money state 'chargeback'",
                 [&] { l->attempts("o-2"); });
  expect_refused("kept_events", "webhook event stripe evt_kept has an unknown money state 'chargeback'",
                 [&] { l->kept_events("scope-a", "nobody", ""); });
  // The rest reads as ever; a settle leaves the unknown string alone.
  EXPECT_EQ(l->get("o-2")->money_state, MoneyState::unknown);
  ASSERT_TRUE(l->claim("o-1", "again", kNow + 5000, kNow + 5000 + kLease));
  ASSERT_TRUE(l->settle("o-1", "again", nullptr, money_read(MoneyState::paid), kNow + 5100));
  EXPECT_EQ(store_->query_raw("SELECT money_state FROM payments WHERE order_id = 'o-1'"), "chargeback");
}

// ---- a ledger of schema 5 (before operations) ---------------------------------------

// What payretry's schema 5 step made, verbatim (the same in both dialects).
const char* const kSchemaFiveStep = R"sql(
ALTER TABLE payments ADD COLUMN money_state TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE attempts ADD COLUMN money_state TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE webhook_events ADD COLUMN money_state TEXT NOT NULL DEFAULT 'unknown';
)sql";

// A ledger left by a payretry of schema 5 opens under schema 6: every row
// reads as a payment's create (no parent, no ref) whose amount is not known
// (-1), everything else as it was; and the operation guard takes them so:
// only one refund, of the whole, of a paid one.
TEST_P(DurableLedger, ASchemaFiveLedgerMigratesToSixAndItsRowsReadAsCreatesOfAnAmountNotKnown) {
  const std::string secret(64, 'e');
  const bool sqlite = GetParam() == Kind::sqlite;
  store_->exec_raw(sqlite ? kSqliteSchemaTwo : kPostgresSchemaTwo);
  store_->exec_raw(sqlite ? kSqliteSchemaThreeStep : kPostgresSchemaThreeStep);
  store_->exec_raw(sqlite ? kSqliteSchemaFourStep : kPostgresSchemaFourStep);
  store_->exec_raw(kSchemaFiveStep);
  store_->exec_raw("INSERT INTO ledger_meta (key, value) VALUES ('schema_version', '5'), ('secret', '" + secret + "')");
  store_->exec_raw(
      "INSERT INTO payments (order_id, idempotency_key, fingerprint, state, delivery, detail, provider_payment_id, "
      "provider_status, http_status, attempts, created_at, key_expires_at, lease_owner, lease_until, updated_at, "
      "scope, submission_headers, submission_path, money_state) VALUES "
      "('old-paid', 'key-old-paid', '" + std::string(64, 'a') + "', 'SUCCEEDED', 'delivered', 'HTTP 200', "
      "'pi_paid', 'succeeded', 200, 1, " + std::to_string(kNow) + ", " + std::to_string(kNow + kDay) + ", '', 0, " +
      std::to_string(kNow + 50) + ", 'scope-a', '', '', 'paid'), "
      "('old-open', 'key-old-open', '" + std::string(64, 'b') + "', 'UNKNOWN', 'maybe_processed', 'timeout', "
      "'', '', 0, 1, " + std::to_string(kNow) + ", " + std::to_string(kNow + kDay) + ", '', 0, " +
      std::to_string(kNow + 300) + ", 'scope-a', '', '', 'unknown')");

  auto l = open();
  EXPECT_EQ(store_->query_raw("SELECT value FROM ledger_meta WHERE key = 'schema_version'"), "6");
  EXPECT_EQ(l->secret(), secret);
  const std::string index_count =
      sqlite ? "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'payments_parent_operation'"
             : "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() "
               "AND indexname = 'payments_parent_operation'";
  EXPECT_EQ(store_->query_raw(index_count), "1");
  for (const char* order : {"old-paid", "old-open"}) {
    const PaymentRow row = *l->get(order);
    EXPECT_EQ(row.operation, OperationKind::create) << order;
    EXPECT_EQ(row.parent_order_id, "") << order;
    EXPECT_EQ(row.operation_ref, "") << order;
    EXPECT_EQ(row.amount, -1) << order;
    EXPECT_EQ(row.scope, "scope-a") << order;
  }
  EXPECT_EQ(l->get("old-paid")->money_state, MoneyState::paid);
  EXPECT_EQ(l->get("old-paid")->provider_payment_id, "pi_paid");
  EXPECT_EQ(l->get("old-open")->state, PaymentState::unknown);

  auto refund = [&](const std::string& ref, int64_t amount) {
    PaymentRow p;
    p.order_id = operation_row_id("old-paid", OperationKind::refund, ref);
    p.idempotency_key = "key-refund-" + ref;
    p.fingerprint = std::string(64, 'c');
    p.key_expires_at = kNow + kDay;
    p.scope = "scope-a";
    p.operation = OperationKind::refund;
    p.parent_order_id = "old-paid";
    p.operation_ref = ref;
    p.amount = amount;
    return l->create_operation_and_claim(p, "worker-a", kNow + 1000, kNow + 1000 + kLease);
  };
  EXPECT_NE(refund("r1", 100).refused.find("not known"), std::string::npos) << "a part of an amount not known";
  const auto whole = refund("r1", -1);
  EXPECT_EQ(whole.refused, "");
  ASSERT_TRUE(whole.created);
  EXPECT_EQ(whole.row.amount, -1);
  EXPECT_NE(refund("r2", -1).refused, "") << "one refund of the whole";
  l.reset();
  EXPECT_EQ(open()->get("old-paid refund r1")->parent_order_id, "old-paid");
  EXPECT_EQ(store_->query_raw("SELECT value FROM ledger_meta WHERE key = 'schema_version'"), "6");
}

// ---- webhook events recorded from many threads at once ----------------------------------

// Tests that run many threads against one ledger. CI runs them under
// ThreadSanitizer too (their names match its filter, "Concurrent\.").
class LedgerConcurrent : public LedgerConformance {};

// A webhook endpoint serves deliveries at once, each its own call to
// record_event. On SQLite the events that arrive together share one
// transaction and one sync of the log (a group commit, as the concurrent
// engine's batches do); every backend must still record each event once,
// land it forward only, and answer a call only once its event is committed.
// Threads go in pairs that deliver the same events in the same order (a
// provider's retry racing its first delivery), so the two copies of an event
// often meet in one commit.
TEST_P(LedgerConcurrent, WebhookEventsFromManyThreadsAreEachRecordedOnceForwardOnlyAndCommittedWhenTheirCallReturns) {
  // A sync as slow as a disk's, so that commits overlap here as they do in
  // production (the test's temporary folder may be memory); first, so that
  // the ledger's connection goes through it.
  std::optional<SyncCountingVfs> vfs;
  if (GetParam() == Kind::sqlite) {
    vfs.emplace();
    vfs->set_wal_sync_delay(std::chrono::milliseconds(2));
  }
  auto l = open();
  constexpr int kRows = 6, kPairs = 8, kPerThread = 20, kEvents = kPairs * kPerThread;
  for (int r = 0; r < kRows; ++r)
    settled_row(*l, "g-" + std::to_string(r), "scope-a", PaymentState::unknown, "pi_g-" + std::to_string(r));
  settled_row(*l, "final", "scope-a", PaymentState::succeeded, "pi_final");
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(l->create_and_claim(scoped("running", "scope-a"), "runner", kNow, kNow + kLease).created);
  ASSERT_TRUE(l->record_attempt("running", "runner", attempt(1, kNow + 1)));

  // Event j names one of the open rows (by its order, its provider id or
  // both, and says noted, succeeded or failed), the final row (always
  // failed: a contrary event), or the row in flight (kept for later).
  auto target = [](int j) {
    const int t = j % (kRows + 2);
    return t < kRows ? "g-" + std::to_string(t) : t == kRows ? std::string("final") : std::string("running");
  };
  auto ev = [&](int j) {
    const std::string order = target(j);
    const std::string pid = order == "running" ? "" : "pi_" + order;
    const bool open_row = order.rfind("g-", 0) == 0;
    LedgerEvent e = event("scope-a", "evt_" + std::to_string(j), open_row && j % 3 == 0 ? "" : order,
                          open_row && j % 3 == 2 ? "" : pid, kNow + 1000 + j);
    const int word = (j / (kRows + 2)) % 3;
    e.entry.verdict = order == "final" ? kEventFailed : word == 0 ? kEventNoted : word == 1 ? kEventSucceeded : kEventFailed;
    e.entry.reason = e.entry.verdict == kEventSucceeded ? "succeeded" : e.entry.verdict == kEventFailed ? "failed" : "processing";
    return e;
  };

  const long syncs_before = vfs ? vfs->wal_syncs() : 0;
  std::mutex mu;
  std::map<std::string, std::vector<EventRecording>> answers;
  std::vector<std::string> errors;
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < 2 * kPairs; ++t)
    pool.emplace_back([&, t] {
      std::unique_ptr<StoreReader> reader;
      if (durable()) reader = std::make_unique<StoreReader>(*store_);
      while (!go.load()) std::this_thread::yield();
      for (int k = 0; k < kPerThread; ++k) {
        const LedgerEvent e = ev((t / 2) * kPerThread + k);
        try {
          const EventRecording a = l->record_event(e);
          // Read through another connection, which sees only what was
          // committed: the answer may not come before the commit.
          if (reader && reader->query("SELECT count(*) FROM webhook_events WHERE scope = 'scope-a' AND "
                                             "scheme = 'stripe' AND event_id = '" + e.event_id + "'") != "1") {
            std::lock_guard<std::mutex> lock(mu);
            errors.push_back(e.event_id + ": answered before its commit");
          }
          std::lock_guard<std::mutex> lock(mu);
          answers[e.event_id].push_back(a);
        } catch (const std::exception& x) {
          std::lock_guard<std::mutex> lock(mu);
          errors.push_back(e.event_id + ": " + x.what());
        }
      }
    });
  go = true;
  for (auto& th : pool) th.join();
  for (const auto& e : errors) ADD_FAILURE() << e;

  // Each event once: one answer says what it did, its copy's says duplicate.
  std::map<std::string, std::set<std::string>> landed;  // order -> event ids
  for (int j = 0; j < kEvents; ++j) {
    const std::string id = "evt_" + std::to_string(j);
    const auto& got = answers[id];
    ASSERT_EQ(got.size(), 2u) << id;
    const EventRecording want = target(j) == "running" ? EventRecording::kept_for_later : EventRecording::recorded;
    EXPECT_EQ(std::count(got.begin(), got.end(), want), 1) << id;
    EXPECT_EQ(std::count(got.begin(), got.end(), EventRecording::duplicate), 1) << id;
    landed[target(j)].insert(id);
  }

  // Every row's history: its send, then each of its events once, numbered
  // on; the state is the first settling event's (by its place in the
  // history), never moved again.
  auto check_rows = [&](Ledger& ledger) {
    for (int r = 0; r <= kRows; ++r) {
      const std::string order = r < kRows ? "g-" + std::to_string(r) : "final";
      SCOPED_TRACE(order);
      const auto history = ledger.attempts(order);
      ASSERT_EQ(history.size(), 1 + landed[order].size());
      std::set<std::string> ids;
      const AttemptEntry* first_final = nullptr;
      for (size_t n = 0; n < history.size(); ++n) {
        EXPECT_EQ(history[n].number, static_cast<int>(n) + 1);
        if (history[n].kind != "webhook") continue;
        ids.insert(history[n].provider_request_id);
        if (!first_final && history[n].verdict != kEventNoted) first_final = &history[n];
      }
      EXPECT_EQ(ids, landed[order]);
      const PaymentRow row = *ledger.get(order);
      EXPECT_EQ(row.attempts, static_cast<int>(history.size()));
      if (order == "final") {
        EXPECT_EQ(row.state, PaymentState::succeeded) << "a final row never moves back";
      } else if (first_final) {
        EXPECT_EQ(row.state, first_final->verdict == std::string(kEventSucceeded) ? PaymentState::succeeded
                                                                                  : PaymentState::failed);
        EXPECT_EQ(row.detail, event_settled_detail(*first_final)) << "settled by the first final event, not a later one";
      } else {
        EXPECT_EQ(row.state, PaymentState::unknown);
      }
    }
    EXPECT_EQ(ledger.attempts("running").size(), 1u) << "nothing written beneath a claim";
    EXPECT_EQ(ledger.kept_events("scope-a", "running", "").size(), landed["running"].size());
  };
  check_rows(*l);

  if (vfs) {
    // Each event alone would be a commit and a sync of its own: 160 here.
    const long syncs = vfs->wal_syncs() - syncs_before;
    RecordProperty("wal_syncs", std::to_string(syncs));
    EXPECT_LT(syncs, kEvents / 2) << "the events that arrived together did not share their commits";
  }
  if (durable()) {
    // What the answers said is what a new handle finds.
    l.reset();
    auto again = open();
    check_rows(*again);
    EXPECT_EQ(store_->query_raw("SELECT count(*) FROM webhook_events"), std::to_string(kEvents));
    EXPECT_EQ(again->record_event(ev(0)), EventRecording::duplicate);
  }
}

// The group itself, made to happen: while one event's commit is syncing,
// eight more arrive; none is answered before the sync, all eight share the
// next commit, and two copies of one event among them (saying opposite
// things) are recorded once, the second a duplicate, the row moved by the
// one recorded.
TEST_P(LedgerConcurrent, EventsArrivingDuringACommitShareTheNextAndACopyAmongThemIsADuplicate) {
  if (GetParam() != Kind::sqlite)
    GTEST_SKIP() << "only SQLite joins events into one commit (memory: has none; PostgreSQL commits each on its "
                    "own connection, the server's WAL flush joining them)";
  SyncCountingVfs vfs;
  auto l = open();
  settled_row(*l, "o-1", "scope-a", PaymentState::unknown, "pi_1");
  settled_row(*l, "o-2", "scope-a", PaymentState::unknown, "pi_2");
  ASSERT_FALSE(HasFatalFailure());

  const long syncs_before = vfs.wal_syncs();
  vfs.hold_next_wal_sync();
  std::atomic<int> returned{0};
  EventRecording plug_answer = EventRecording::duplicate;
  std::thread plug([&] {
    plug_answer = l->record_event(event("scope-a", "evt_plug", "o-2"));
    ++returned;
  });
  ASSERT_TRUE(vfs.wait_until_held(std::chrono::seconds(30))) << "the first event's commit never synced";

  constexpr int kLate = 8;
  std::vector<LedgerEvent> late;
  for (int i = 0; i < kLate - 2; ++i) late.push_back(event("scope-a", "evt_" + std::to_string(i), "o-1"));
  LedgerEvent copy = event("scope-a", "evt_copy", "o-1", "pi_1");
  copy.entry.verdict = kEventSucceeded;
  late.push_back(copy);
  copy.entry.verdict = kEventFailed;
  copy.entry.reason = "failed";
  late.push_back(copy);
  std::vector<EventRecording> got(kLate, EventRecording::kept_for_later);
  std::vector<std::string> errors(kLate);
  std::atomic<int> started{0};
  std::vector<std::thread> pool;
  for (int i = 0; i < kLate; ++i)
    pool.emplace_back([&, i] {
      ++started;
      try {
        got[i] = l->record_event(late[i]);
      } catch (const std::exception& x) {
        errors[i] = x.what();
      }
      ++returned;
    });
  while (started.load() < kLate) std::this_thread::yield();
  // Time for every thread to queue behind the commit under way.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(returned.load(), 0) << "a call returned before the commit of its event synced";
  vfs.release();
  plug.join();
  for (auto& th : pool) th.join();

  for (int i = 0; i < kLate; ++i) EXPECT_EQ(errors[i], "") << late[i].event_id;
  EXPECT_EQ(plug_answer, EventRecording::recorded);
  EXPECT_EQ(vfs.wal_syncs() - syncs_before, 2) << "the first event's commit, then one for the eight that came during it";
  for (int i = 0; i < kLate - 2; ++i) EXPECT_EQ(got[i], EventRecording::recorded) << late[i].event_id;
  const std::vector<EventRecording> copies{got[kLate - 2], got[kLate - 1]};
  ASSERT_EQ(std::count(copies.begin(), copies.end(), EventRecording::recorded), 1);
  ASSERT_EQ(std::count(copies.begin(), copies.end(), EventRecording::duplicate), 1);
  const LedgerEvent& kept = got[kLate - 2] == EventRecording::recorded ? late[kLate - 2] : late[kLate - 1];

  const auto history = l->attempts("o-1");
  ASSERT_EQ(history.size(), 1u + kLate - 1) << "its send, six events and the copied one once";
  EXPECT_EQ(std::count_if(history.begin(), history.end(),
                          [](const AttemptEntry& a) { return a.provider_request_id == "evt_copy"; }),
            1);
  const PaymentRow row = *l->get("o-1");
  EXPECT_EQ(row.state, kept.entry.verdict == std::string(kEventSucceeded) ? PaymentState::succeeded : PaymentState::failed);
  EXPECT_EQ(row.detail, event_settled_detail(kept.entry));
  EXPECT_EQ(row.attempts, static_cast<int>(history.size()));
}

INSTANTIATE_TEST_SUITE_P(Backends, LedgerConcurrent,
                         ::testing::Values(Kind::memory, Kind::sqlite, Kind::postgres), param_name);

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--ledger-child") == 0) return child_main(argc, argv);
  signal(SIGPIPE, SIG_IGN);  // a dead child must fail a test, not kill the runner
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
