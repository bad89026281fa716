#include "json_path.hpp"

#include <cmath>
#include <cstdio>
#include <optional>

#include "redact.hpp"

namespace payretry {
namespace {

struct Step {
  enum Kind { member, pattern, element, all } kind = member;
  std::string name;    // member: the name; pattern: the part before '*'
  std::string suffix;  // pattern: the part after '*'
  int index = 0;
};

bool name_char(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return u > 0x20 && u != 0x7f && c != '.' && c != '[' && c != ']';
}

std::optional<std::vector<Step>> parse(std::string_view p) {
  if (p.empty() || p[0] != '$') return std::nullopt;
  std::vector<Step> steps;
  size_t i = 1;
  while (i < p.size()) {
    Step s;
    if (p[i] == '.') {
      size_t j = ++i;
      while (j < p.size() && name_char(p[j])) ++j;
      const std::string_view name = p.substr(i, j - i);
      if (name.empty()) return std::nullopt;  // "$..x", "$.", "$.[0]"
      const size_t star = name.find('*');
      if (star == std::string_view::npos) {
        s.name = std::string(name);
      } else if (name.find('*', star + 1) != std::string_view::npos) {
        return std::nullopt;  // one wildcard per name
      } else if (name.size() == 1) {
        s.kind = Step::all;
      } else {
        s.kind = Step::pattern;
        s.name = std::string(name.substr(0, star));
        s.suffix = std::string(name.substr(star + 1));
      }
      i = j;
    } else if (p[i] == '[') {
      const size_t close = p.find(']', i);
      if (close == std::string_view::npos) return std::nullopt;
      const std::string_view inner = p.substr(i + 1, close - i - 1);
      if (inner == "*") {
        s.kind = Step::all;
      } else {
        if (inner.empty() || inner.size() > 9) return std::nullopt;
        int n = 0;
        for (char c : inner) {
          if (c < '0' || c > '9') return std::nullopt;
          n = n * 10 + (c - '0');
        }
        s.kind = Step::element;
        s.index = n;
      }
      i = close + 1;
    } else {
      return std::nullopt;
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

bool name_fits(const Step& s, const char* key) {
  if (!key) return false;
  const std::string_view k(key);
  if (s.kind == Step::member) return k == s.name;
  return k.size() >= s.name.size() + s.suffix.size() && k.substr(0, s.name.size()) == s.name &&
         k.substr(k.size() - s.suffix.size()) == s.suffix;
}

void walk(const cJSON* node, const std::vector<Step>& steps, size_t at, std::vector<std::string>& out) {
  if (!node) return;
  if (at == steps.size()) {
    if (cJSON_IsString(node) && node->valuestring) {
      // cJSON does not check UTF-8; what is read here ends up in results,
      // logs and the ledger, which are JSON and must stay valid.
      out.emplace_back(utf8_clean(node->valuestring));
    } else if (cJSON_IsNumber(node)) {
      const double d = node->valuedouble;
      // Integers only: a provider's numeric code (Adyen errorCode 704,
      // Alipay code 10000). 2^53 bounds the exactly representable ones.
      if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) <= 9007199254740992.0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(d));
        out.emplace_back(buf);
      }
    }
    return;
  }
  const Step& s = steps[at];
  switch (s.kind) {
    case Step::member:
    case Step::pattern:
      if (!cJSON_IsObject(node)) return;
      for (const cJSON* c = node->child; c; c = c->next)
        if (name_fits(s, c->string)) walk(c, steps, at + 1, out);
      return;
    case Step::element:
      if (!cJSON_IsArray(node)) return;
      walk(cJSON_GetArrayItem(node, s.index), steps, at + 1, out);
      return;
    case Step::all:
      if (!cJSON_IsArray(node) && !cJSON_IsObject(node)) return;
      for (const cJSON* c = node->child; c; c = c->next) walk(c, steps, at + 1, out);
      return;
  }
}

}  // namespace

bool valid_json_path(std::string_view path) { return parse(path).has_value(); }

std::vector<std::string> json_path_strings(const cJSON* root, std::string_view path) {
  std::vector<std::string> out;
  const auto steps = parse(path);
  if (steps && root) walk(root, *steps, 0, out);
  return out;
}

}  // namespace payretry
