#include "scope.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "fingerprint.hpp"

namespace payretry {
namespace {

// What stands for the account when the config does not name it. The
// schemes whose credential carries a public identity use it (it survives
// a secret's rotation); fixed credentials are their own identity, and a
// config header (a Stripe-Account, a tenant header) may scope the
// provider's store, so all of them count.
std::string account_of(const Config& c) {
  if (!c.account_id.empty()) return "account\n" + c.account_id;
  std::string a;
  switch (c.auth.kind) {
    case AuthConfig::Kind::oauth2: a = "oauth2\n" + c.auth.client_id; break;
    case AuthConfig::Kind::alipay: a = "alipay\n" + c.auth.app_id; break;
    case AuthConfig::Kind::wechatpay: a = "wechatpay"; break;  // the merchant id (in the scope) names it
    case AuthConfig::Kind::api_key: a = "api_key\n" + c.auth.api_key; break;
    case AuthConfig::Kind::fixed_headers:
    case AuthConfig::Kind::none: a = "headers"; break;
  }
  std::vector<std::string> lines;
  for (const Headers* set : {&c.auth_headers, &c.extra_headers})
    for (const auto& [name, value] : *set) {
      std::string line;
      for (unsigned char ch : name) line.push_back(static_cast<char>(std::tolower(ch)));
      lines.push_back(line + ":" + value);
    }
  std::sort(lines.begin(), lines.end());
  for (const std::string& l : lines) a += "\n" + l;
  return a;
}

}  // namespace

std::string client_scope(const Config& config, const Profile& profile, std::string_view ledger_secret) {
  // Each part on its own line; none can hold a line feed (names, URLs and
  // header values are checked), so the parts cannot run together.
  const std::string identity = profile.name + "\n" + config.base_url + "\n" + config.merchant_id + "\n" +
                               account_of(config);
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
