// A client's scope (src/core/scope.cpp): which merchant account its payments
// belong to. Two clients that may act in different accounts must never hash
// to one scope; one client must keep its scope across restarts.
#include <gtest/gtest.h>

#include <string>

#include "config.hpp"
#include "profile.hpp"
#include "redact.hpp"
#include "scope.hpp"

namespace payretry {
namespace {

const std::string kSecret(64, 'a');

std::string scope_of(const std::string& extra, const std::string& provider = "stripe") {
  const Config c = parse_config(R"({"provider":")" + provider +
                                R"(","base_url":"https://api.stripe.com","ledger":"memory:")" + extra + "}");
  return client_scope(c, *builtin_profile(c.provider), kSecret);
}

TEST(Scope, TheSameConfigKeepsItsScopeAndItHoldsNoSecret) {
  const std::string a = scope_of(R"(,"auth":{"bearer":"sk_test_tenant_a_0123456789"})");
  EXPECT_EQ(a, scope_of(R"(,"auth":{"bearer":"sk_test_tenant_a_0123456789"})"));
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find("sk_test"), std::string::npos);
}

TEST(Scope, EveryPartThatMayNameAnotherAccountMakesAnotherScope) {
  const std::string base = scope_of(R"(,"auth":{"bearer":"sk_test_tenant_a_0123456789"})");
  EXPECT_NE(base, scope_of(R"(,"auth":{"bearer":"sk_test_tenant_b_0123456789"})")) << "another credential";
  EXPECT_NE(base, scope_of(R"(,"auth":{"bearer":"sk_test_tenant_a_0123456789"},"headers":{"Stripe-Account":"acct_1"})"))
      << "a config header";
  EXPECT_NE(base, scope_of(R"(,"auth":{"bearer":"sk_test_tenant_a_0123456789"},"merchant_id":"m1")")) << "merchant_id";
  EXPECT_NE(base, scope_of(R"(,"auth":{"bearer":"sk_test_tenant_a_0123456789"})", "generic")) << "the profile";
  EXPECT_EQ(base, scope_of(R"(,"auth":{"bearer":"sk_test_tenant_a_0123456789"},"adopt_unscoped_rows":false,)"
                           R"("create_path":"/x")"))
      << "create_path is no part of the scope (a payment's own path is kept with its row)";
}

// With account_id the credential no longer counts (a key can be rotated),
// but the config's headers still do: two tenants behind one account_id and
// a tenant header are two scopes.
TEST(Scope, AnAccountIdSurvivesAKeyRotationButNotAnotherHeader) {
  const std::string a1 = scope_of(R"(,"account_id":"acct_A","auth":{"bearer":"sk_test_old_key_0123456789"})");
  EXPECT_EQ(a1, scope_of(R"(,"account_id":"acct_A","auth":{"bearer":"sk_test_new_key_0123456789"})"));
  EXPECT_NE(a1, scope_of(R"(,"account_id":"acct_B","auth":{"bearer":"sk_test_old_key_0123456789"})"));
  EXPECT_NE(scope_of(R"(,"account_id":"acct_A","headers":{"X-Tenant":"t1"})"),
            scope_of(R"(,"account_id":"acct_A","headers":{"X-Tenant":"t2"})"));
}

// Parts are length-prefixed, and values that could hold a separator are
// refused: no two configurations hash alike by moving text between parts.
TEST(Scope, NoValueCanRunIntoTheNextPart) {
  EXPECT_NE(scope_of(R"(,"merchant_id":"ab","account_id":"c")"), scope_of(R"(,"merchant_id":"a","account_id":"bc")"));
  EXPECT_THROW(scope_of(R"(,"account_id":"a\nb")"), ConfigError);
  EXPECT_THROW(scope_of(R"(,"merchant_id":"a\nb")"), ConfigError);
}

TEST(Scope, ARowOfAnotherScopeIsRefusedAnUnscopedOneOnlyWhenNotAdopted) {
  Config c = parse_config(R"({"base_url":"https://p","ledger":"memory:"})");
  EXPECT_EQ(scope_refusal("s1", "s1", c, "o1"), "");
  EXPECT_NE(scope_refusal("s2", "s1", c, "o1").find("another client's scope"), std::string::npos);
  EXPECT_NE(scope_refusal("", "s1", c, "o1").find("adopt_unscoped_rows"), std::string::npos);
  c.adopt_unscoped_rows = true;
  EXPECT_EQ(scope_refusal("", "s1", c, "o1"), "");
  EXPECT_NE(scope_refusal("s2", "s1", c, "o1"), "") << "adoption is of unscoped rows only";
}

// A payment's own headers are kept in the ledger, which holds no secret.
TEST(Scope, ASubmissionHeaderThatCarriesASecretIsRecognised) {
  for (const auto& [n, v] : std::vector<std::pair<std::string, std::string>>{
           {"X-Client-Secret", "abc"}, {"X-Private-Key", "k"}, {"X-Cvc", "737"}, {"X-Api-Key", "k1"},
           {"X-Bearer", "Bearer abc"}, {"X-Auth", "basic dXNlcjpwYXNz"}, {"X-Key", "sk_live_0123456789abcdef"},
           {"X-Pan", "4242 4242 4242 4242"}, {"Cookie", "a=b"}, {"X-Access-Token", "t"}})
    EXPECT_TRUE(header_carries_secret(n, v)) << n << ": " << v;
  for (const auto& [n, v] : std::vector<std::pair<std::string, std::string>>{
           {"Stripe-Account", "acct_1Nv0FGQ9RKHgCVdK"}, {"X-Tenant", "t-42"},
           {"PayPal-Auth-Assertion", "eyJhbGciOiJub25lIn0.eyJpc3MiOiJjbGllbnQiLCJwYXllcl9pZCI6Im0ifQ."},
           {"X-Signature", "v1=4242424242424242aa"}, {"X-Order", "1234567890123"}})
    EXPECT_FALSE(header_carries_secret(n, v)) << n << ": " << v;
}

}  // namespace
}  // namespace payretry
