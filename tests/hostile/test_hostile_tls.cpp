// A provider (or an interceptor) with a self-signed certificate: rejected
// unless the application configured it, and never retried as if the network
// had hiccuped, since another try meets the same certificate.
#include <unistd.h>

#include <atomic>
#include <string>

#include "hostile_client.hpp"
#include "hostile_server.hpp"
#include "tls_cert.hpp"

namespace payretry_hostile {
namespace {

void answer_ok(Conn& c, const Request&, const std::atomic<bool>&) {
  c.write(response(200, R"({"id":"pi_tls","status":"succeeded"})"));
}

TEST(HostileTls, a_self_signed_certificate_is_rejected_after_one_attempt_and_nothing_is_sent) {
  SelfSigned tls;
  HostileServer server(answer_ok, tls.ctx.get());
  Client client = make_client(config_for(server.url()));
  Result r = submit(client.get(), "order-tls-reject");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_FAILED) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_NOT_SENT);
  EXPECT_EQ(pay_result_attempts(r.get()), 1);
  EXPECT_EQ(server.connections(), 1) << "the certificate failure was retried";
  EXPECT_TRUE(server.requests().empty()) << "a request was written to an unverified server";
  expect_clean_json(r.get());
}

TEST(HostileTls, a_self_signed_certificate_is_accepted_when_configured_as_the_ca_file) {
  SelfSigned tls;
  char dir[] = "/tmp/payretry-tls.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string pem = std::string(dir) + "/provider.pem";
  tls.write_pem(pem);
  HostileServer server(answer_ok, tls.ctx.get());
  Client client = make_client(config_for(server.url(), "generic",
                                         R"("max_attempts":3,"attempt_timeout_ms":2000,"deadline_ms":5000)",
                                         R"("tls":{"verify":true,"ca_file":")" + pem + R"("})"));
  Result r = submit(client.get(), "order-tls-ca");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(server.requests().size(), 1u);
  ::unlink(pem.c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace payretry_hostile
