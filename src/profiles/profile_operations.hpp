// The "operations" block of a profile (docs/profiles.md "operations"): how a
// capture, a refund and a cancel of an existing payment are sent, each as
// safely as a create (its own key, window, rules and lookup), and the
// "amount" readers of a create's and an operation's body. OperationFlow
// sends them by it (src/core/operation_flow.hpp).
#pragma once
#include <cJSON.h>

#include <map>
#include <string>
#include <vector>

#include "profile.hpp"

namespace payretry {

// The operation names a profile may give, in the order the docs list them.
const std::vector<std::string>& operation_names();

// The money states of a payment that allow operation `name` when the
// profile does not say: capture an authorized hold; refund a paid or partly
// refunded payment; cancel one that moved no money yet (awaiting_customer,
// pending, authorized).
std::vector<MoneyState> operation_default_parent_states(const std::string& name);

// An "amount" object ({"path": "$.amount", "format": "minor"}) at `path`.
AmountField amount_field_at(const cJSON* v, const std::string& path);

// Applies the block `v` (at `path`) over `ops`: an operation the child names
// is merged member by member into the base's (identity and lookup member by
// member, classify rules before the base's, notes appended, each map, body
// template and money member replaced whole, like the top level).
void apply_operations(std::map<std::string, ProfileOperation>& ops, const cJSON* v, const std::string& path);

// Checks every operation once the profile is complete, and fills what an
// operation inherits from the profile (identity, retention_ms, replay) or
// from its kind (parent_states) where it gave none.
void check_operations(Profile& p, const std::string& path);

}  // namespace payretry
