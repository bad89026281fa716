// OAuth2 client credentials (RFC 6749 §4.4), as PayPal's SDK does it: the
// client's id and secret buy an access token at the token endpoint; every
// request carries it as a bearer until shortly before it expires, and a 401
// drops it for one fresh try. Fetching a token is not a payment attempt: it
// sends nothing of the payment, and its failure leaves the payment unsent.
#include <cJSON.h>
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "auth.hpp"
#include "form_encoding.hpp"
#include "json_util.hpp"
#include "base64.hpp"
#include "rsa_signature.hpp"

namespace payretry {
namespace {

// Renew this long before the provider's expiry at the latest, so that a
// token never runs out between being attached and being read.
constexpr int64_t kRenewMarginMs = 300000;

class OAuth2ClientCredentials final : public Authenticator {
 public:
  OAuth2ClientCredentials(const Config& config, const Profile& profile, Transport& transport, Clock& clock)
      : transport_(transport), clock_(clock), basic_("Basic " + base64_encode(config.auth.client_id + ":" +
                                                                              config.auth.client_secret)) {
    const std::string& path = config.auth.token_path.empty() ? profile.auth.token_path : config.auth.token_path;
    url_ = config.base_url + path;
    body_ = "grant_type=client_credentials";
    if (!config.auth.scope.empty()) body_ += "&scope=" + form_escape(config.auth.scope);
    extra_ = config.extra_headers;
    attempt_timeout_ms_ = config.retry.attempt_timeout_ms;
    connect_timeout_ms_ = config.retry.connect_timeout_ms;
  }

  std::string authorize(OutgoingRequest& r, int64_t, int64_t budget_ms) override {
    std::string token;
    const int64_t arrived = clock_.now_ms();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (token_.empty() || clock_.now_ms() >= renew_at_) {
        // One fetch at a time; the others wait for its token. A payment that
        // was already waiting while a fetch failed takes that answer instead
        // of fetching again in turn; later ones ask anew.
        const bool waited_on_failure = arrived < failed_at_;
        const std::string why = waited_on_failure ? failed_why_ : fetch(budget_ms);
        if (!why.empty()) {
          if (!waited_on_failure) {
            failed_at_ = clock_.now_ms();
            failed_why_ = why;
          }
          // A token still valid (renewal was early) keeps being used.
          if (token_.empty() || clock_.now_ms() >= expires_at_) return why;
        }
      }
      token = token_;
    }
    r.headers.emplace_back("Authorization", "Bearer " + token);
    return {};
  }

  bool renew_after_unauthorized() override {
    std::lock_guard<std::mutex> lock(mu_);
    token_.clear();
    failed_at_ = 0;
    return true;
  }

 private:
  // Called with mu_ held. Returns "" or why no token could be had.
  std::string fetch(int64_t budget_ms) {
    HttpRequest h;
    h.method = "POST";
    h.url = url_;
    h.headers = {{"Authorization", basic_},
                 {"Content-Type", "application/x-www-form-urlencoded"},
                 {"Accept", "application/json"},
                 {"User-Agent", "payretry/" PAYRETRY_VERSION_STRING}};
    h.headers.insert(h.headers.end(), extra_.begin(), extra_.end());
    h.body = body_;
    // Bounded like an attempt, and by what the payment has left.
    h.timeout_ms = std::max<int64_t>(1, std::min(budget_ms, attempt_timeout_ms_));
    h.connect_timeout_ms = std::min(connect_timeout_ms_, h.timeout_ms);
    const int64_t asked = clock_.now_ms();
    const TransportResult t = transport_.post(h);
    if (t.failure != TransportFailure::none)
      return "OAuth2 token request failed (" + std::string(transport_failure_name(t.failure)) + ")";
    if (t.response.status != 200)
      return "OAuth2 token request answered HTTP " + std::to_string(t.response.status) +
             (t.response.status == 401 ? " (check auth.oauth2.client_id and client_secret)" : "");
    JsonPtr j(cJSON_ParseWithLength(t.response.body.data(), t.response.body.size()));
    const cJSON* access = j ? cJSON_GetObjectItemCaseSensitive(j.get(), "access_token") : nullptr;
    const cJSON* type = j ? cJSON_GetObjectItemCaseSensitive(j.get(), "token_type") : nullptr;
    const cJSON* expires = j ? cJSON_GetObjectItemCaseSensitive(j.get(), "expires_in") : nullptr;
    if (!cJSON_IsString(access) || !*access->valuestring) return "OAuth2 token answer has no access_token";
    if (type && (!cJSON_IsString(type) || strcasecmp(type->valuestring, "bearer") != 0))
      return "OAuth2 token answer has token_type other than Bearer";
    const std::string value = access->valuestring;
    for (unsigned char c : value)
      if (c < 0x21 || c > 0x7E) return "OAuth2 token answer's access_token is not printable";
    // No expires_in: RFC 6749 leaves it to documentation; renew hourly.
    int64_t life_ms = 3600000;
    // Bounded to [1 s, 1 year]: a wild value neither overflows nor pins a token forever.
    if (cJSON_IsNumber(expires) && expires->valuedouble > 0)
      life_ms = static_cast<int64_t>(std::min(std::max(expires->valuedouble, 1.0), 365.0 * 86400) * 1000);
    token_ = value;
    // Counted from when it was asked for; renewed a margin early, or at
    // half its life when that is shorter.
    renew_at_ = asked + life_ms - std::min(kRenewMarginMs, life_ms / 2);
    expires_at_ = asked + life_ms;
    failed_at_ = 0;
    return {};
  }

  Transport& transport_;
  Clock& clock_;
  const std::string basic_;
  std::string url_;
  std::string body_;
  Headers extra_;
  std::mutex mu_;
  std::string token_;
  int64_t renew_at_ = 0;    // monotonic ms
  int64_t expires_at_ = 0;  // monotonic ms
  int64_t failed_at_ = 0;  // monotonic ms the last fetch failed
  std::string failed_why_;
  int64_t attempt_timeout_ms_ = 0;
  int64_t connect_timeout_ms_ = 0;
};

}  // namespace

std::unique_ptr<Authenticator> make_oauth2_authenticator(const Config& config, const Profile& profile,
                                                         Transport& transport, Clock& clock) {
  return std::make_unique<OAuth2ClientCredentials>(config, profile, transport, clock);
}

}  // namespace payretry
