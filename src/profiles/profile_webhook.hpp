// The "webhook" block of a profile (docs/profiles.md "webhook"): how the
// provider's notifications are verified and read.
#pragma once
#include <cJSON.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "profile.hpp"

namespace payretry {

// The scheme names a profile may give: the rows of webhook_schemes()
// (src/auth/webhook_scheme.cpp, a layer above; a test holds the two lists
// equal).
const std::vector<std::string>& webhook_scheme_names();

// The readers the webhook block and an operation's webhook share: a field
// (a JSON path, a template of paths, or an array of alternatives; []
// clears it), an events map (type -> SUCCEEDED, FAILED or PENDING) and a
// requires map (JSON path -> a value or {merchant_id}, {account_id},
// {app_id}).
WebhookField webhook_field_at(const cJSON* v, const std::string& path);
std::map<std::string, StatusTarget> webhook_events_at(const cJSON* v, const std::string& path);
std::vector<std::pair<std::string, std::string>> webhook_requires_at(const cJSON* v, const std::string& path);

// Applies the block `v` (at `path`) over `w`: what it names replaces what
// was inherited, member by member.
void apply_webhook(ProfileWebhook& w, const cJSON* v, const std::string& path);
// Checks the block as a whole once the profile is complete: a scheme that
// settles needs an event id and a way to the payment.
void check_webhook(const ProfileWebhook& w, const Lookup& lookup, const std::string& path);

}  // namespace payretry
