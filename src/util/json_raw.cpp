#include "json_raw.hpp"

namespace payretry {
namespace {

size_t skip_ws(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

// One past the JSON string starting at s[i] == '"'; npos if unclosed.
size_t string_end(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') ++i;
    else if (s[i] == '"') return i + 1;
  }
  return std::string_view::npos;
}

// One past the JSON value starting at s[i]; npos if it runs off the text.
size_t value_end(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return string_end(s, i);
  if (s[i] != '{' && s[i] != '[') {
    const size_t start = i;
    while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' &&
           s[i] != '\r' && s[i] != '\t')
      ++i;
    return i == start ? std::string_view::npos : i;
  }
  int depth = 0;
  for (; i < s.size(); ++i) {
    if (s[i] == '"') {
      i = string_end(s, i);
      if (i == std::string_view::npos) return i;
      --i;
    } else if (s[i] == '{' || s[i] == '[') {
      ++depth;
    } else if (s[i] == '}' || s[i] == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

}  // namespace

bool json_raw_members(std::string_view s, std::vector<RawMember>& out) {
  out.clear();
  size_t i = skip_ws(s, 0);
  if (i >= s.size() || s[i] != '{') return false;
  i = skip_ws(s, i + 1);
  if (i < s.size() && s[i] == '}') return skip_ws(s, i + 1) == s.size();
  for (;;) {
    if (i >= s.size() || s[i] != '"') return false;
    const size_t name_end = string_end(s, i);
    if (name_end == std::string_view::npos) return false;
    const std::string_view name = s.substr(i + 1, name_end - i - 2);
    i = skip_ws(s, name_end);
    if (i >= s.size() || s[i] != ':') return false;
    i = skip_ws(s, i + 1);
    const size_t end = value_end(s, i);
    if (end == std::string_view::npos) return false;
    out.push_back({name, s.substr(i, end - i)});
    i = skip_ws(s, end);
    if (i < s.size() && s[i] == ',') {
      i = skip_ws(s, i + 1);
      continue;
    }
    return i < s.size() && s[i] == '}' && skip_ws(s, i + 1) == s.size();
  }
}

}  // namespace payretry
