// The ledger's request fingerprint: the keyed-once Fingerprinter must give
// exactly the bytes the one-shot request_fingerprint gives, or a payment
// resubmitted after an upgrade would read as "other parameters" (a mismatch).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "fingerprint.hpp"

namespace payretry {
namespace {

TEST(Fingerprint, KeyedOnceEqualsOneShotForEveryPart) {
  const std::string secret = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
  const Fingerprinter fp(secret);
  const std::vector<std::string> bodies = {"", "a", "{\"order_id\":\"o-1\",\"amount\":1000}", std::string(5000, 'x'),
                                           std::string("nul\0byte", 8)};
  for (const std::string& body : bodies)
    for (const char* path : {"", "/v1/payments", "/v1/payment_intents?x=1"})
      EXPECT_EQ(fp("POST", path, body), request_fingerprint(secret, "POST", path, body)) << path << " " << body.size();
}

TEST(Fingerprint, KnownValueStaysTheSame) {
  // Rows already in ledgers hold values made so: HMAC-SHA256 keyed "k" over
  // "4:POST2:/p1:b" (Python: hmac.new(b"k", b"4:POST2:/p1:b", "sha256")).
  const std::string want = "de11105ac43f814f6d4ab060782a6794ba02227e557932f27dce3f53fc91f7a5";
  EXPECT_EQ(Fingerprinter("k")("POST", "/p", "b"), want);
  EXPECT_EQ(request_fingerprint("k", "POST", "/p", "b"), want);
}

TEST(Fingerprint, PartsAreLengthPrefixedSoBoundariesMatter) {
  const Fingerprinter fp("s");
  EXPECT_NE(fp("POST", "/a", "bc"), fp("POST", "/ab", "c"));
}

TEST(Fingerprint, DifferentSecretsGiveDifferentValues) {
  EXPECT_NE(Fingerprinter("s1")("POST", "/p", "b"), Fingerprinter("s2")("POST", "/p", "b"));
}

TEST(Fingerprint, SharedFingerprinterIsSafeAcrossThreads) {
  const Fingerprinter fp("secret");
  const std::string want = request_fingerprint("secret", "POST", "/v1/payments", "body");
  std::vector<std::thread> ts;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i)
        if (fp("POST", "/v1/payments", "body") != want) ++bad[static_cast<size_t>(t)];
    });
  for (auto& t : ts) t.join();
  for (int b : bad) EXPECT_EQ(b, 0);
}

}  // namespace
}  // namespace payretry
