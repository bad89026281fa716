// A profile without a create path (generic) takes one from the config or from
// each submit. With neither, the submit is refused with PAY_ECONFIG naming
// create_path and the profile, before a ledger row is written or a byte sent;
// the config itself stays valid, since clients that always pass a path need none.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "fakes.hpp"
#include "ledger_memory.hpp"
#include "payment_flow.hpp"

namespace payretry::test {
namespace {

const std::string kBody = R"({"amount":1000,"currency":"eur"})";

class FlowHarness : public Harness {
 public:
  explicit FlowHarness(const char* profile_name) : Harness(profile_name) {}
  PaymentFlow& flow() {
    if (!flow_) {
      Engine& e = engine();
      ledger_ = open_memory_ledger("");
      log_ = std::make_unique<AttemptLog>(nullptr, std::string(), kLogDebug, config.secrets(), clock);
      flow_ = std::make_unique<PaymentFlow>(e, *ledger_, config, clock, sleeper, keys, stats, *log_, "test-owner", "test-scope");
    }
    return *flow_;
  }
  Ledger& ledger() {
    flow();
    return *ledger_;
  }
  PaymentResult submit_with(const std::string& order_id, const std::string& path) {
    SubmitRequest r;
    r.order_id = order_id;
    r.body = kBody;
    r.path = path;
    return flow().submit(r);
  }

 private:
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<AttemptLog> log_;
  std::unique_ptr<PaymentFlow> flow_;
};

TEST(CreatePath, GenericWithNoneAnywhereIsRefusedBeforeTheLedgerAndTheWire) {
  FlowHarness h("generic");
  h.config.create_path.clear();
  ASSERT_TRUE(h.profile.create_path.empty()) << "generic names no create path";
  try {
    (void)h.submit_with("order-1", "");
    FAIL() << "a submit with nowhere to go was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::PAY_ECONFIG);
    const std::string what = e.what();
    EXPECT_NE(what.find("create_path"), std::string::npos) << what;
    EXPECT_NE(what.find("profile generic"), std::string::npos) << what;
  }
  EXPECT_TRUE(h.transport.sent.empty()) << "nothing sent";
  EXPECT_FALSE(h.ledger().get("order-1")) << "nothing recorded: the order can be submitted again with a path";
  EXPECT_EQ(h.keys.calls, 0) << "no key minted";
}

TEST(CreatePath, APerSubmitPathIsEnoughWithoutOneInTheConfig) {
  FlowHarness h("generic");
  h.config.create_path.clear();
  h.transport.script = {http(200, R"({"id":"pay_1","status":"succeeded"})")};
  const PaymentResult r = h.submit_with("order-2", "/v2/charges");
  EXPECT_EQ(r.outcome, Outcome::succeeded) << r.error;
  ASSERT_EQ(h.transport.sent.size(), 1u);
  EXPECT_EQ(h.transport.sent[0].url, "https://api.provider.test/v2/charges");
}

TEST(CreatePath, TheConfigsOrTheProfilesIsUsedWhenTheSubmitGivesNone) {
  FlowHarness config_path("generic");  // default_test_config() sets /v1/payments
  config_path.transport.script = {http(200, R"({"id":"pay_1","status":"succeeded"})")};
  EXPECT_EQ(config_path.submit_with("order-3", "").outcome, Outcome::succeeded);
  ASSERT_EQ(config_path.transport.sent.size(), 1u);
  EXPECT_EQ(config_path.transport.sent[0].url, "https://api.provider.test/v1/payments");

  FlowHarness profile_path("adyen");  // /v72/payments
  profile_path.config.create_path.clear();
  profile_path.transport.script = {http(200, R"({"pspReference":"psp_1","resultCode":"Authorised"})")};
  EXPECT_EQ(profile_path.submit_with("order-4", "").outcome, Outcome::succeeded);
  ASSERT_EQ(profile_path.transport.sent.size(), 1u);
  EXPECT_EQ(profile_path.transport.sent[0].url, "https://api.provider.test/v72/payments");
}

}  // namespace
}  // namespace payretry::test
