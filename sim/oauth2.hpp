// PayPal's OAuth2 client-credentials grant: the token endpoint (POST /v1/oauth2/token), the
// access tokens it issued, and the bearer check every create and lookup must pass.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace payretry_sim {

// The one API client the provider knows.
struct OAuth2Client {
  std::string id = "test-client-id";
  std::string secret = "test-client-secret";
  int ttl_s = 32400;  // expires_in of every token: PayPal's nine hours
};

class OAuth2Tokens {
 public:
  // Answers a token request. `authorization` must be "Basic base64(id:secret)" of `client`
  // (else 401 invalid_client) and the form body must hold grant_type=client_credentials (else
  // 400 unsupported_grant_type). A success is 200 with a fresh random token valid ttl_s.
  void issue(const OAuth2Client& client, std::string_view authorization, std::string_view content_type,
             std::string_view body, int* status, std::string* answer);
  // True when authorization is "Bearer <token>" for a token issued here and not yet expired.
  bool live(std::string_view authorization) const;
  // Forgets every token issued, as a provider that rotated its signing keys would.
  void revoke_all();

  long issued() const { return issued_.load(std::memory_order_relaxed); }
  long refused() const { return refused_.load(std::memory_order_relaxed); }
  // Zeroes the counters; the tokens stay valid.
  void reset_counters();

 private:
  using Clock = std::chrono::steady_clock;
  void forget_expired(Clock::time_point now);  // under mu_

  mutable std::mutex mu_;
  std::unordered_map<std::string, Clock::time_point> expiry_;  // token -> end of its life
  std::atomic<long> issued_{0};
  std::atomic<long> refused_{0};  // token requests answered with an error
};

}  // namespace payretry_sim
