// The field readers of the profile loader: each reads one JSON value, checks
// it, and on a bad value throws ProfileError naming the field's path from
// "profile" ("profile.webhook.events.x: must be ..."), because a profile is
// written by hand and a vague message costs its reader far more.
#pragma once
#include <cJSON.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "profile.hpp"

namespace payretry::profile_fields {

[[noreturn]] void fail(const std::string& path, const std::string& what);
std::string member(const std::string& path, const char* name);
std::string element(const std::string& path, int i);
std::string quoted(std::string_view s);
// Rejects members the schema does not know (a typo must not silently fall
// back to a default) and members given twice.
void check_members(const cJSON* obj, const std::string& path, std::initializer_list<const char*> known);
const cJSON* object_at(const cJSON* v, const std::string& path);
std::string string_at(const cJSON* v, const std::string& path);
bool bool_at(const cJSON* v, const std::string& path);
int64_t int_at(const cJSON* v, const std::string& path, int64_t lo, int64_t hi);
std::vector<std::string> strings_at(const cJSON* v, const std::string& path, bool allow_empty_list);
// RFC 9110 token: what a header field name may be made of.
bool header_token(std::string_view s);
std::string header_at(const cJSON* v, const std::string& path, bool allow_empty);
std::string json_path_at(const cJSON* v, const std::string& path, bool allow_empty);
bool visible_ascii(std::string_view s);

}  // namespace payretry::profile_fields
