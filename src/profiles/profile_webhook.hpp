// The "webhook" block of a profile (docs/profiles.md "webhook"): how the
// provider's notifications are verified and read.
#pragma once
#include <cJSON.h>

#include <string>
#include <vector>

#include "profile.hpp"

namespace payretry {

// The scheme names a profile may give: the rows of webhook_schemes()
// (src/auth/webhook_scheme.cpp, a layer above; a test holds the two lists
// equal).
const std::vector<std::string>& webhook_scheme_names();

// Applies the block `v` (at `path`) over `w`: what it names replaces what
// was inherited, member by member.
void apply_webhook(ProfileWebhook& w, const cJSON* v, const std::string& path);
// Checks the block as a whole once the profile is complete: a scheme that
// settles needs an event id and a way to the payment.
void check_webhook(const ProfileWebhook& w, const Lookup& lookup, const std::string& path);

}  // namespace payretry
