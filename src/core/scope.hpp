// The scope of a client: which merchant account, at which provider, its
// payments belong to (docs/design.md "Scope"). Two clients on one shared
// ledger (one per merchant account, say) must never act on each other's
// payments: a lookup from another account reads "not found" where the
// payment exists, and a re-send carries the key into an account where it
// is new, which charges the order a second time.
#pragma once
#include <string>
#include <string_view>

#include "config.hpp"
#include "profile.hpp"

namespace payretry {

// The scope id every ledger row this client creates records: a hex
// HMAC-SHA256, keyed by the ledger's secret, over the profile's name, the
// base URL, the merchant id, the account (the config's account_id, or else
// what identifies the credential: an OAuth2 client id, an Alipay app id, a
// fixed credential's value) and every header of the config. Never a secret
// in clear; a keyed hash of one when nothing else names the account.
std::string client_scope(const Config& config, const Profile& profile, std::string_view ledger_secret);

// Why a row of scope `row_scope` is not this client's to act on, or "" when
// it is. A row without a scope (written before rows had one) is this
// client's only with config.adopt_unscoped_rows.
std::string scope_refusal(const std::string& row_scope, const std::string& own_scope, const Config& config,
                          const std::string& order_id);

}  // namespace payretry
