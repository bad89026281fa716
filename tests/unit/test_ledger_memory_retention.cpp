// The memory ledger's retention (docs/design.md, "The memory ledger"): a
// settled row is forgotten, with its history and its key, when more than
// max_settled settled rows are held (first settled first), never because
// its key expired; an open row is never forgotten; a forgotten order
// submitted again is a new payment; the URL's parameters are read or
// refused by name.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "config.hpp"
#include "fakes.hpp"
#include "ledger.hpp"
#include "ledger_memory.hpp"
#include "payment_flow.hpp"

namespace payretry::test {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr int64_t kDay = 86'400'000;
constexpr int64_t kForever = int64_t(1) << 62;  // a key that never expires (a merchant reference)

PaymentRow proposal(const std::string& order, int64_t key_expires_at = kT0 + kDay) {
  PaymentRow r;
  r.order_id = order;
  r.idempotency_key = "key-" + order;
  r.fingerprint = "fp-" + order;
  r.key_expires_at = key_expires_at;
  return r;
}

AttemptEntry send_entry(int number, int64_t at) {
  AttemptEntry a;
  a.number = number;
  a.started_at = at;
  a.ended_at = at;
  a.http_status = 200;
  a.verdict = "success";
  a.processed = true;
  return a;
}

Settlement outcome(PaymentState s) {
  Settlement out;
  out.state = s;
  out.delivery = s == PaymentState::unknown ? "maybe_processed" : "delivered";
  out.http_status = s == PaymentState::failed ? 402 : 200;
  return out;
}

// A row created at `at`, its first attempt recorded, settled in `state`.
void pay(Ledger& l, const std::string& order, int64_t at, PaymentState state,
         int64_t key_expires_at = kT0 + kDay) {
  const std::string owner = "owner#" + order;
  ASSERT_TRUE(l.create_and_claim(proposal(order, key_expires_at), owner, at, at + 60000).created) << order;
  ASSERT_TRUE(l.record_attempt(order, owner, send_entry(1, at)));
  const AttemptEntry last = send_entry(2, at);
  ASSERT_TRUE(l.settle(order, owner, &last, outcome(state), at)) << order;
}

bool held(Ledger& l, const std::string& order) { return l.get(order).has_value(); }

// Whether `key` is still bound to an order: a new order proposing it is refused.
bool key_held(Ledger& l, const std::string& key, int64_t now) {
  PaymentRow probe = proposal("probe-for-" + key);
  probe.idempotency_key = key;
  return l.create_and_claim(probe, "probe-owner", now, now + 60000).key_taken;
}

// ---- the cap ------------------------------------------------------------------

TEST(MemoryLedgerRetention, SettledRowsBeyondTheCapAreForgottenOldestSettledFirstWithHistoryAndKey) {
  auto l = open_ledger("memory:?max_settled=2", "");
  // Created a, b, c; settled b first, then a: "oldest" is the settle order.
  const std::string oa = "owner#a", ob = "owner#b";
  ASSERT_TRUE(l->create_and_claim(proposal("a"), oa, kT0, kT0 + 60000).created);
  ASSERT_TRUE(l->create_and_claim(proposal("b"), ob, kT0 + 1, kT0 + 60000).created);
  ASSERT_TRUE(l->record_attempt("a", oa, send_entry(1, kT0)));
  ASSERT_TRUE(l->settle("b", ob, nullptr, outcome(PaymentState::failed), kT0 + 10));
  ASSERT_TRUE(l->settle("a", oa, nullptr, outcome(PaymentState::succeeded), kT0 + 20));
  EXPECT_TRUE(held(*l, "a"));
  EXPECT_TRUE(held(*l, "b")) << "two settled rows are within a cap of two";

  pay(*l, "c", kT0 + 30, PaymentState::succeeded);
  EXPECT_FALSE(held(*l, "b")) << "b was settled first, so it goes first (though created after a)";
  EXPECT_TRUE(held(*l, "a"));
  EXPECT_TRUE(held(*l, "c"));
  EXPECT_FALSE(key_held(*l, "key-b", kT0 + 40)) << "the forgotten row's key goes with it";
  EXPECT_TRUE(key_held(*l, "key-a", kT0 + 40));

  pay(*l, "d", kT0 + 50, PaymentState::succeeded);
  EXPECT_FALSE(held(*l, "a"));
  EXPECT_TRUE(l->attempts("a").empty()) << "the forgotten row's history goes with it";
  EXPECT_EQ(l->attempts("c").size(), 2u);
  EXPECT_EQ(l->list(std::nullopt, 0, 100, std::nullopt).size(), 3u) << "c, d and the IN_FLIGHT probe of key-b";
}

// A forgotten row takes the webhook events applied to it and its provider
// id with it: nothing of it is left to grow the ledger, and a redelivered
// event finds no row (it is kept, as for any payment the ledger does not
// hold). The events of the rows still held stay known.
TEST(MemoryLedgerRetention, AForgottenRowTakesItsWebhookEventsAndItsProviderIdWithIt) {
  auto l = open_ledger("memory:?max_settled=1", "");
  auto settled_with_id = [&](const std::string& order, int64_t at) {
    const std::string owner = "owner#" + order;
    ASSERT_TRUE(l->create_and_claim(proposal(order), owner, at, at + 60000).created) << order;
    Settlement s = outcome(PaymentState::succeeded);
    s.provider_payment_id = "pi_" + order;
    ASSERT_TRUE(l->settle(order, owner, nullptr, s, at)) << order;
  };
  auto event = [](const std::string& id, const std::string& order, const std::string& provider_id) {
    LedgerEvent e;
    e.scheme = "stripe";
    e.event_id = id;
    e.order_id = order;
    e.provider_payment_id = provider_id;
    e.received_at = kT0 + 100;
    e.entry.kind = "webhook";
    e.entry.verdict = kEventNoted;
    return e;
  };
  settled_with_id("a", kT0);
  ASSERT_EQ(l->record_event(event("evt_a", "a", "")), EventRecording::recorded);
  ASSERT_EQ(l->record_event(event("evt_pi_a", "", "pi_a")), EventRecording::recorded);
  settled_with_id("b", kT0 + 10);  // a goes: the cap is one
  ASSERT_FALSE(held(*l, "a"));
  EXPECT_EQ(l->record_event(event("evt_a", "a", "")), EventRecording::kept_for_later);
  EXPECT_EQ(l->record_event(event("evt_pi_a_2", "", "pi_a")), EventRecording::kept_for_later)
      << "the forgotten row's provider id names no row any more";
  ASSERT_EQ(l->record_event(event("evt_b", "", "pi_b")), EventRecording::recorded);
  EXPECT_EQ(l->record_event(event("evt_b", "", "pi_b")), EventRecording::duplicate);
  EXPECT_EQ(l->attempts("b").size(), 1u);
}

TEST(MemoryLedgerRetention, OpenRowsAreNeverForgottenHoweverFarBeyondTheCapOrTheirKeysExpiry) {
  auto l = open_ledger("memory:?max_settled=1", "");
  const int64_t expired = kT0 + 5;  // every open row's key is past expiry below
  // IN_FLIGHT with a live lease, IN_FLIGHT whose lease ended (a dead worker),
  // UNKNOWN. (The memory ledger never commits PENDING: it inserts IN_FLIGHT.)
  ASSERT_TRUE(l->create_and_claim(proposal("live", expired), "owner#live", kT0, kT0 + 10 * kDay).created);
  ASSERT_TRUE(l->create_and_claim(proposal("dead", expired), "owner#dead", kT0, kT0 + 1).created);
  ASSERT_TRUE(l->record_attempt("dead", "owner#dead", send_entry(1, kT0)));
  pay(*l, "unk", kT0, PaymentState::unknown, expired);

  for (int i = 0; i < 50; ++i) pay(*l, "settled-" + std::to_string(i), kT0 + 100 + i, PaymentState::succeeded);
  for (const char* order : {"live", "dead", "unk"}) EXPECT_TRUE(held(*l, order)) << order << " beyond the cap";
  EXPECT_FALSE(held(*l, "settled-48")) << "the cap of one holds only the newest settled row";
  EXPECT_TRUE(held(*l, "settled-49"));

  const int64_t later = kT0 + 2 * kDay;
  pay(*l, "last", later, PaymentState::failed, later + kDay);
  for (const char* order : {"live", "dead", "unk"}) {
    ASSERT_TRUE(held(*l, order)) << order << " still needs settling";
    EXPECT_TRUE(key_held(*l, std::string("key-") + order, later)) << order;
  }
  EXPECT_EQ(l->get("live")->state, PaymentState::in_flight);
  EXPECT_EQ(l->get("dead")->state, PaymentState::in_flight);
  EXPECT_EQ(l->get("unk")->state, PaymentState::unknown);
  EXPECT_EQ(l->attempts("dead").size(), 1u);
  EXPECT_EQ(l->attempts("unk").size(), 2u);
  EXPECT_FALSE(held(*l, "settled-49"));
  EXPECT_TRUE(held(*l, "last"));

  // Settled at last, the UNKNOWN row counts against the cap like any other.
  ASSERT_TRUE(l->claim("unk", "owner#unk-2", later, later + 60000));
  ASSERT_TRUE(l->settle("unk", "owner#unk-2", nullptr, outcome(PaymentState::succeeded), later + 1));
  EXPECT_TRUE(held(*l, "unk")) << "the newest settled row, though its key expired long ago";
  EXPECT_FALSE(held(*l, "last"));
}

// ---- key expiry ---------------------------------------------------------------

// Once the key has expired the settled row is all that stands between a
// re-submission and a new payment under a new key: it stays until the cap.
TEST(MemoryLedgerRetention, ASettledRowOutlivesItsKeyUntilTheCap) {
  auto l = open_ledger("memory:", "");
  const int64_t expires = kT0 + 1000;
  pay(*l, "short", kT0, PaymentState::succeeded, expires);
  pay(*l, "open", kT0, PaymentState::unknown, expires);

  const int64_t much_later = expires + 30 * kDay;
  pay(*l, "x", much_later, PaymentState::succeeded, much_later + kDay);
  EXPECT_FALSE(l->create_and_claim(proposal("short"), "owner#again", much_later, much_later + 60000).created)
      << "the order is still answered by its row";
  EXPECT_EQ(l->get("short")->state, PaymentState::succeeded);
  EXPECT_EQ(l->attempts("short").size(), 2u);
  EXPECT_TRUE(key_held(*l, "key-short", much_later));
  EXPECT_TRUE(held(*l, "open"));
}

TEST(MemoryLedgerRetention, MaxSettledZeroMeansNoCapNotForgetAtOnce) {
  auto l = open_ledger("memory:?max_settled=0", "");
  for (int i = 0; i < 20; ++i) pay(*l, "o" + std::to_string(i), kT0 + i, PaymentState::succeeded, kForever);
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(held(*l, "o" + std::to_string(i))) << i;
}

// ---- through the payment flow ---------------------------------------------------

// The Harness's engine with a memory ledger and the payment flow, as the
// client wires them.
class FlowHarness : public Harness {
 public:
  explicit FlowHarness(const std::string& ledger_url) : url_(ledger_url) {}
  PaymentResult submit(const std::string& order) {
    if (!flow_) {
      ledger_ = open_ledger(url_, "");
      log_ = std::make_unique<AttemptLog>([](int, const std::string&) {}, std::string(), kLogDebug,
                                          config.secrets(), clock);
      flow_ = std::make_unique<PaymentFlow>(engine(), *ledger_, config, clock, sleeper, keys, stats, *log_, "test-owner", "test-scope");
    }
    SubmitRequest r;
    r.order_id = order;
    r.body = R"({"amount":1000,"currency":"EUR"})";
    return flow_->submit(r);
  }

 private:
  std::string url_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<AttemptLog> log_;
  std::unique_ptr<PaymentFlow> flow_;
};

TEST(MemoryLedgerRetention, AForgottenOrderSubmittedAgainIsANewPaymentUnderANewKey) {
  FlowHarness h("memory:?max_settled=1");
  h.transport.script = {ok_200(), ok_200(), ok_200()};

  const PaymentResult first = h.submit("order-1");
  ASSERT_EQ(first.outcome, Outcome::succeeded) << first.error;
  const PaymentResult answered = h.submit("order-1");
  EXPECT_TRUE(answered.from_ledger) << "while its row is held, the order is answered from the ledger";
  EXPECT_EQ(h.transport.sent.size(), 1u);

  ASSERT_EQ(h.submit("order-2").outcome, Outcome::succeeded);  // settles past the cap of one
  const PaymentResult again = h.submit("order-1");
  EXPECT_FALSE(again.from_ledger);
  EXPECT_EQ(again.outcome, Outcome::succeeded);
  ASSERT_EQ(h.transport.sent.size(), 3u) << "the forgotten order was sent again: the trade the docs state";
  EXPECT_NE(h.transport.sent[2].one("Idempotency-Key"), h.transport.sent[0].one("Idempotency-Key"))
      << "under a key of its own, so the provider cannot tell it from the first";
}

TEST(MemoryLedgerRetention, AnOrderHeldUnderTheCapIsAnsweredFromTheLedgerWithoutASend) {
  FlowHarness h("memory:?max_settled=2");
  h.transport.script = {ok_200(), ok_200()};
  ASSERT_EQ(h.submit("order-1").outcome, Outcome::succeeded);
  ASSERT_EQ(h.submit("order-2").outcome, Outcome::succeeded);
  const PaymentResult again = h.submit("order-1");
  EXPECT_TRUE(again.from_ledger);
  EXPECT_EQ(h.transport.sent.size(), 2u);
}

TEST(MemoryLedgerRetention, AnOrderResubmittedAfterItsKeyExpiredIsStillAnsweredFromTheLedger) {
  FlowHarness h("memory:");
  h.config.key_retention_ms = 10000;  // the key expires 9 s after creation
  h.transport.script = {ok_200(), ok_200()};
  ASSERT_EQ(h.submit("order-1").outcome, Outcome::succeeded);
  h.clock.advance(60000);
  ASSERT_EQ(h.submit("order-2").outcome, Outcome::succeeded);  // a settle after the expiry
  const PaymentResult again = h.submit("order-1");
  EXPECT_TRUE(again.from_ledger);
  EXPECT_EQ(again.outcome, Outcome::succeeded);
  EXPECT_EQ(h.transport.sent.size(), 2u) << "no second payment under a new key";
}

// ---- the URL ------------------------------------------------------------------

TEST(MemoryLedgerUrl, MaxSettledIsReadAndDefaultsToAHundredThousand) {
  EXPECT_EQ(parse_memory_ledger_url("memory:").max_settled, 100000u);
  EXPECT_EQ(parse_memory_ledger_url("memory:?max_settled=10").max_settled, 10u);
  EXPECT_EQ(parse_memory_ledger_url("memory:?max_settled=0").max_settled, 0u);
  EXPECT_EQ(parse_memory_ledger_url("memory:?max_settled=1000000000").max_settled, 1000000000u);
  EXPECT_TRUE(is_memory_ledger_url("memory:"));
  EXPECT_TRUE(is_memory_ledger_url("memory:?max_settled=10"));
  EXPECT_FALSE(is_memory_ledger_url("memory:x"));
  EXPECT_FALSE(is_memory_ledger_url("sqlite:///tmp/memory:?x"));
}

struct BadMemoryUrl {
  const char* url;
  const char* named;  // what the message must name
};

class MemoryLedgerBadUrl : public ::testing::TestWithParam<BadMemoryUrl> {};

TEST_P(MemoryLedgerBadUrl, IsRefusedWithALedgerErrorNamingTheParameter) {
  const BadMemoryUrl& c = GetParam();
  try {
    open_ledger(c.url, "");
    FAIL() << c.url << " was accepted";
  } catch (const LedgerError& e) {
    EXPECT_TRUE(contains(e.what(), c.named)) << c.url << ": " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Urls, MemoryLedgerBadUrl,
    ::testing::Values(BadMemoryUrl{"memory:?max_settled=", "max_settled"},
                      BadMemoryUrl{"memory:?max_settled", "max_settled"},
                      BadMemoryUrl{"memory:?max_settled=ten", "max_settled"},
                      BadMemoryUrl{"memory:?max_settled=-1", "max_settled"},
                      BadMemoryUrl{"memory:?max_settled=+5", "max_settled"},
                      BadMemoryUrl{"memory:?max_settled=1e3", "max_settled"},
                      BadMemoryUrl{"memory:?max_settled= 5", "max_settled"},
                      BadMemoryUrl{"memory:?max_settled=1000000001", "max_settled"},
                      BadMemoryUrl{"memory:?max_settled=99999999999999999999", "max_settled"},
                      BadMemoryUrl{"memory:?max_settled=5&max_settled=6", "given twice"},
                      BadMemoryUrl{"memory:?max_setled=5", "\"max_setled\" is unknown"},
                      BadMemoryUrl{"memory:?max_settled=5&", "\"\" is unknown"},
                      BadMemoryUrl{"memory:?", "memory:?max_settled=N"},
                      BadMemoryUrl{"memory:x", "unknown URL scheme"},
                      BadMemoryUrl{"memory:/", "unknown URL scheme"}));

TEST(MemoryLedgerUrl, TheConfigTakesAMemoryUrlWithParametersWhereverItTakesMemory) {
  EXPECT_EQ(parse_config(R"({"base_url":"https://a.test","ledger":"memory:?max_settled=10"})").ledger_url,
            "memory:?max_settled=10");
  EXPECT_EQ(parse_config(R"({"base_url":"https://a.test","ledger":{"url":"memory:?max_settled=10"}})").ledger_url,
            "memory:?max_settled=10");
  EXPECT_THROW(parse_config(R"({"base_url":"https://a.test","ledger":"memory:max_settled=10"})"), ConfigError);
}

}  // namespace
}  // namespace payretry::test
