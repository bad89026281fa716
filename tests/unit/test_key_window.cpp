// A key is never re-sent past the provider's window: a same-key request
// after it is a new payment there. Mollie's window is one hour (docs/providers.md,
// Mo1), so a Mollie payment left UNKNOWN is re-sent with its key only until
// six minutes (a tenth) before the hour is up, and then left to a lookup.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "fakes.hpp"
#include "ledger_memory.hpp"
#include "payment_flow.hpp"

namespace payretry::test {
namespace {

constexpr int64_t kMinute = 60 * 1000;
const std::string kBody = R"({"amount":{"currency":"EUR","value":"10.00"},"description":"Order 1"})";

class WindowHarness : public Harness {
 public:
  explicit WindowHarness(const char* profile_name) : Harness(profile_name) {
    // As the client does: the profile's window unless the config names one.
    config.key_retention_ms = profile.retention_ms;
  }
  PaymentResult submit(const std::string& order_id) {
    if (!flow_) {
      Engine& e = engine();
      ledger_ = open_memory_ledger("");
      log_ = std::make_unique<AttemptLog>(nullptr, std::string(), kLogDebug, config.secrets(), clock);
      flow_ = std::make_unique<PaymentFlow>(e, *ledger_, config, clock, sleeper, keys, stats, *log_, "test-owner",
                                            "test-scope");
    }
    SubmitRequest r;
    r.order_id = order_id;
    r.body = kBody;
    return flow_->submit(r);
  }

 private:
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<AttemptLog> log_;
  std::unique_ptr<PaymentFlow> flow_;
};

TEST(KeyWindow, MollieHonoursAKeyForOneHour) {
  WindowHarness h("mollie");
  ASSERT_TRUE(h.profile.retention_ms);
  EXPECT_EQ(*h.profile.retention_ms, 60 * kMinute);
}

TEST(KeyWindow, AMolliePaymentIsReSentWithItsKeyInsideTheHourAndNeverAfter) {
  WindowHarness h("mollie");
  h.config.retry.max_attempts = 1;
  h.transport.script = {timeout_after_write()};
  const PaymentResult first = h.submit("order-1");
  ASSERT_EQ(first.outcome, Outcome::unknown) << first.error;
  ASSERT_EQ(h.transport.sent.size(), 1u);

  // 53 minutes on: inside the window less its margin, the same key again.
  h.clock.advance(53 * kMinute);
  h.transport.script = {timeout_after_write()};
  const PaymentResult again = h.submit("order-1");
  EXPECT_EQ(again.outcome, Outcome::unknown) << again.error;
  ASSERT_EQ(h.transport.sent.size(), 2u) << "re-sent inside the window";
  EXPECT_EQ(h.transport.sent[1].one("Idempotency-Key"), h.transport.sent[0].one("Idempotency-Key"));

  // 55 minutes on: within six minutes of the hour, Mollie may have dropped
  // the key by the time the request arrives. Nothing is sent.
  h.clock.advance(2 * kMinute);
  h.transport.script = {ok_200()};
  const PaymentResult late = h.submit("order-1");
  EXPECT_EQ(late.outcome, Outcome::unknown) << late.error;
  EXPECT_EQ(h.transport.sent.size(), 2u) << "a key past its window is never sent again";
  EXPECT_NE(late.error.find("expired"), std::string::npos) << late.error;
}

}  // namespace
}  // namespace payretry::test
