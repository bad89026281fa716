#include "scope.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "fingerprint.hpp"

namespace payretry {
namespace {

// Each part with its length in front: no value can run into the next,
// whatever bytes it holds.
void add_part(std::string& out, std::string_view part) {
  out.append(std::to_string(part.size())).append(":").append(part);
}

// The account: the config's account_id, or else what identifies the
// credential (a public identity where the scheme has one, which survives a
// secret's rotation; a fixed credential is its own identity). And every
// header of the config, named or not: a header (a Stripe-Account, a tenant
// header) may scope the provider's store, and two clients that differ in
// one may not share a scope.
void add_account(std::string& out, const Config& c) {
  if (!c.account_id.empty()) {
    add_part(out, "account");
    add_part(out, c.account_id);
  } else {
    switch (c.auth.kind) {
      case AuthConfig::Kind::oauth2: add_part(out, "oauth2"), add_part(out, c.auth.client_id); break;
      case AuthConfig::Kind::alipay: add_part(out, "alipay"), add_part(out, c.auth.app_id); break;
      case AuthConfig::Kind::wechatpay: add_part(out, "wechatpay"); break;  // the merchant id (in the scope) names it
      case AuthConfig::Kind::api_key: add_part(out, "api_key"), add_part(out, c.auth.api_key); break;
      case AuthConfig::Kind::fixed_headers:
      case AuthConfig::Kind::none: add_part(out, "headers"); break;
    }
    for (const auto& [name, value] : c.auth_headers) add_part(out, name + ":" + value);
  }
  std::vector<std::string> lines;
  for (const auto& [name, value] : c.extra_headers) {
    std::string line;
    for (unsigned char ch : name) line.push_back(static_cast<char>(std::tolower(ch)));
    lines.push_back(line + ":" + value);
  }
  std::sort(lines.begin(), lines.end());
  for (const std::string& l : lines) add_part(out, l);
}

}  // namespace

std::string client_scope(const Config& config, const Profile& profile, std::string_view ledger_secret) {
  std::string identity;
  add_part(identity, profile.name);
  add_part(identity, config.base_url);
  add_part(identity, config.merchant_id);
  add_account(identity, config);
  return request_fingerprint(ledger_secret, "payretry-scope-v1", identity, "");
}

std::string scope_refusal(const std::string& row_scope, const std::string& own_scope, const Config& config,
                          const std::string& order_id) {
  if (row_scope == own_scope) return {};
  if (row_scope.empty()) {
    if (config.adopt_unscoped_rows) return {};
    return "order " + order_id + " was recorded by a payretry that kept no scope, and this client does not adopt "
           "such rows (set adopt_unscoped_rows where every such row is this account's); nothing sent";
  }
  return "order " + order_id + " belongs to another client's scope on this shared ledger (another merchant "
         "account, credential, base URL, profile or scoping header); only a client of that scope may resume, "
         "query or reconcile it, and order ids must be unique across the clients of one ledger; nothing sent";
}

}  // namespace payretry
