// The "money" block of a profile (docs/profiles.md "money"): where the
// provider's answers and events carry the words that say where the money is,
// and what each word means (money_state.hpp).
#pragma once
#include <cJSON.h>

#include <string>

#include "profile.hpp"

namespace payretry {

// Applies the block `v` (at `path`) over `m`: what it names replaces what
// was inherited, member by member; each map and each reader list is
// replaced whole, like lookup.status_map.
void apply_money(ProfileMoney& m, const cJSON* v, const std::string& path);
// Checks the block once the profile is complete: every reader has a map to
// read its words through.
void check_money(const ProfileMoney& m, const std::string& path);

}  // namespace payretry
