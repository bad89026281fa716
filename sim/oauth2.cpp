#include "oauth2.hpp"

#include <ctime>

#include "crypto.hpp"
#include "form_body.hpp"
#include "http_conn.hpp"

namespace payretry_sim {

namespace {

// Expired tokens are swept only when the table has grown this large: a client renews rarely.
constexpr std::size_t kSweepAt = 4096;

std::string_view after_scheme(std::string_view authorization, std::string_view scheme) {
  if (authorization.size() <= scheme.size() || !iequals(authorization.substr(0, scheme.size()), scheme) ||
      authorization[scheme.size()] != ' ') {
    return {};
  }
  authorization.remove_prefix(scheme.size() + 1);
  while (!authorization.empty() && authorization.front() == ' ') authorization.remove_prefix(1);
  return authorization;
}

bool is_form(std::string_view content_type) {
  constexpr std::string_view kForm = "application/x-www-form-urlencoded";
  return content_type.size() >= kForm.size() && iequals(content_type.substr(0, kForm.size()), kForm);
}

// The grant_type field of a form body; empty when absent or undecodable.
std::string grant_type(std::string_view body) {
  std::string name, value;
  while (!body.empty()) {
    const std::size_t amp = body.find('&');
    const std::string_view pair = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view{} : body.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos || !form_decode(pair.substr(0, eq), &name)) continue;
    if (name == "grant_type") return form_decode(pair.substr(eq + 1), &value) ? value : "";
  }
  return "";
}

// PayPal's nonce: the issue time and random text.
std::string token_nonce() {
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return when + random_hex(16);
}

}  // namespace

void OAuth2Tokens::issue(const OAuth2Client& client, std::string_view authorization,
                         std::string_view content_type, std::string_view body, int* status,
                         std::string* answer) {
  std::string credentials;
  if (!base64_decode(after_scheme(authorization, "Basic"), &credentials) ||
      credentials != client.id + ":" + client.secret) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    *status = 401;
    answer->assign(R"({"error":"invalid_client","error_description":"Client Authentication failed"})");
    return;
  }
  const std::string grant = is_form(content_type) ? grant_type(body) : "";
  if (grant != "client_credentials") {
    refused_.fetch_add(1, std::memory_order_relaxed);
    *status = 400;
    answer->assign(grant.empty()
                       ? R"({"error":"unsupported_grant_type","error_description":"Grant Type is NULL"})"
                       : R"({"error":"unsupported_grant_type","error_description":"unsupported grant_type"})");
    return;
  }
  const std::string token = "A21AA" + random_hex(40);
  {
    const Clock::time_point now = Clock::now();
    std::lock_guard<std::mutex> lk(mu_);
    if (expiry_.size() >= kSweepAt) forget_expired(now);
    expiry_[token] = now + std::chrono::seconds(client.ttl_s);
  }
  issued_.fetch_add(1, std::memory_order_relaxed);
  *status = 200;
  answer->assign(
      R"({"scope":"https://uri.paypal.com/services/payments/payment/authcapture openid )"
      R"(https://uri.paypal.com/services/payments/refund","access_token":")");
  answer->append(token);
  answer->append(R"(","token_type":"Bearer","app_id":"APP-TEST","expires_in":)");
  append_int(*answer, client.ttl_s);
  answer->append(R"(,"nonce":")");
  answer->append(token_nonce());
  answer->append(R"("})");
}

bool OAuth2Tokens::live(std::string_view authorization) const {
  const std::string_view token = after_scheme(authorization, "Bearer");
  if (token.empty()) return false;
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lk(mu_);
  auto it = expiry_.find(std::string(token));
  return it != expiry_.end() && now < it->second;
}

void OAuth2Tokens::revoke_all() {
  std::lock_guard<std::mutex> lk(mu_);
  expiry_.clear();
}

void OAuth2Tokens::reset_counters() {
  issued_.store(0);
  refused_.store(0);
}

void OAuth2Tokens::forget_expired(Clock::time_point now) {
  for (auto it = expiry_.begin(); it != expiry_.end();) {
    if (it->second <= now) it = expiry_.erase(it);
    else ++it;
  }
}

}  // namespace payretry_sim
