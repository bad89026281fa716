// The field readers every block of a profile's loader uses (profile_loader.cpp,
// profile_webhook.cpp): each checks one value and fails naming its path.
#include "profile_fields.hpp"

#include <cctype>
#include <cmath>
#include <set>

#include "json_path.hpp"
#include "spelling.hpp"

namespace payretry::profile_fields {

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw ProfileError(path + ": " + what); }

std::string member(const std::string& path, const char* name) { return path + "." + name; }
std::string element(const std::string& path, int i) { return path + "[" + std::to_string(i) + "]"; }

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

void check_members(const cJSON* obj, const std::string& path, std::initializer_list<const char*> known) {
  std::set<std::string> seen;
  for (const cJSON* c = obj->child; c; c = c->next) {
    const std::string name = c->string ? c->string : "";
    bool ok = false;
    for (const char* k : known) ok = ok || name == k;
    if (!ok) {
      std::string list;
      for (const char* k : known) list += std::string(list.empty() ? "" : ", ") + k;
      fail(path + "." + name,
           "unknown key" + did_you_mean(name, std::vector<std::string>(known.begin(), known.end())) +
               " (known here: " + list + ")");
    }
    if (!seen.insert(name).second) fail(path + "." + name, "given twice");
  }
}

const cJSON* object_at(const cJSON* v, const std::string& path) {
  if (!cJSON_IsObject(v)) fail(path, "must be an object");
  return v;
}

std::string string_at(const cJSON* v, const std::string& path) {
  if (!cJSON_IsString(v) || !v->valuestring) fail(path, "must be a string");
  return v->valuestring;
}

bool bool_at(const cJSON* v, const std::string& path) {
  if (!cJSON_IsBool(v)) fail(path, "must be true or false");
  return cJSON_IsTrue(v);
}

int64_t int_at(const cJSON* v, const std::string& path, int64_t lo, int64_t hi) {
  const std::string range = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  if (!cJSON_IsNumber(v)) fail(path, "must be " + range);
  const double d = v->valuedouble;
  if (!std::isfinite(d) || std::trunc(d) != d || d < static_cast<double>(lo) || d > static_cast<double>(hi))
    fail(path, "must be " + range);
  return static_cast<int64_t>(d);
}

std::vector<std::string> strings_at(const cJSON* v, const std::string& path, bool allow_empty_list) {
  if (!cJSON_IsArray(v)) fail(path, "must be an array of strings");
  std::vector<std::string> out;
  int i = 0;
  for (const cJSON* c = v->child; c; c = c->next, ++i) {
    std::string s = string_at(c, element(path, i));
    if (s.empty()) fail(element(path, i), "must not be empty");
    out.push_back(std::move(s));
  }
  if (out.empty() && !allow_empty_list) fail(path, "must not be empty");
  return out;
}

bool header_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos)
      return false;
  return true;
}

std::string header_at(const cJSON* v, const std::string& path, bool allow_empty) {
  std::string s = string_at(v, path);
  if (s.empty() && allow_empty) return s;
  if (!header_token(s)) fail(path, quoted(s) + " is not an HTTP header name");
  return s;
}

std::string json_path_at(const cJSON* v, const std::string& path, bool allow_empty) {
  std::string s = string_at(v, path);
  if (s.empty() && allow_empty) return s;
  if (!valid_json_path(s))
    fail(path, quoted(s) + " is not a JSON path ($, .name, .*, .pre*suf, [n], [*]; e.g. $.error.code)");
  return s;
}

bool visible_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) return false;
  return true;
}

}  // namespace payretry::profile_fields
