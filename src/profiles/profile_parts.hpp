// The readers of profile_loader.cpp that other blocks of a profile share: a
// classification rule, an identity and a lookup are read the same way at the
// top level and in an operation (profile_operations.cpp). Each fails naming
// the field, as every reader of the loader does (profile_fields.hpp).
#pragma once
#include <cJSON.h>

#include <string>
#include <vector>

#include "profile.hpp"

namespace payretry::profile_parts {

// The placeholders a create's path and its lookup may name: {order_id},
// {provider_id}, {key}, {merchant_id}.
const std::vector<std::string>& create_placeholders();
// Fails unless every "{identifier}" of `tmpl` is one of `known`.
void check_placeholders(const std::string& tmpl, const std::string& path, const std::vector<std::string>& known);

Rule rule_at(const cJSON* v, const std::string& path);
AnswerNames names_at(const cJSON* v, const std::string& path);
// Applies an "identity" object over `id`, member by member.
void apply_identity(Identity& id, const cJSON* v, const std::string& path);
// Applies a "lookup" object over `lk`, member by member; its path and body
// may name `placeholders`.
void apply_lookup(Lookup& lk, const cJSON* v, const std::string& path, const std::vector<std::string>& placeholders);

}  // namespace payretry::profile_parts
