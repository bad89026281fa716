#include "json_path.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <optional>

#include "redact.hpp"

namespace payretry {
namespace {

// Views into the path being read: a path is parsed for each use (every
// answer read), and a parse that allocates nothing keeps that cheap.
struct Step {
  enum Kind { member, pattern, element, all } kind = member;
  std::string_view name;    // member: the name; pattern: the part before '*'
  std::string_view suffix;  // pattern: the part after '*'
  int index = 0;
};

// A path's steps: the first few in place (a profile's paths have two to
// four), any beyond them on the heap.
class Steps {
 public:
  void push_back(const Step& s) {
    if (n_ < first_.size()) first_[n_] = s;
    else rest_.push_back(s);
    ++n_;
  }
  size_t size() const { return n_; }
  const Step& operator[](size_t i) const { return i < first_.size() ? first_[i] : rest_[i - first_.size()]; }

 private:
  std::array<Step, 8> first_;
  std::vector<Step> rest_;
  size_t n_ = 0;
};

bool name_char(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return u > 0x20 && u != 0x7f && c != '.' && c != '[' && c != ']';
}

std::optional<Steps> parse(std::string_view p) {
  if (p.empty() || p[0] != '$') return std::nullopt;
  Steps steps;
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
        s.name = name;
      } else if (name.find('*', star + 1) != std::string_view::npos) {
        return std::nullopt;  // one wildcard per name
      } else if (name.size() == 1) {
        s.kind = Step::all;
      } else {
        s.kind = Step::pattern;
        s.name = name.substr(0, star);
        s.suffix = name.substr(star + 1);
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
    steps.push_back(s);
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

// Hands `emit` every node the path reaches from `node`, in document order,
// until it returns false; false when it did.
template <class Emit>
bool walk(const cJSON* node, const Steps& steps, size_t at, Emit& emit) {
  if (!node) return true;
  if (at == steps.size()) return emit(node);
  const Step& s = steps[at];
  switch (s.kind) {
    case Step::member:
    case Step::pattern:
      if (!cJSON_IsObject(node)) return true;
      for (const cJSON* c = node->child; c; c = c->next)
        if (name_fits(s, c->string) && !walk(c, steps, at + 1, emit)) return false;
      return true;
    case Step::element:
      if (!cJSON_IsArray(node)) return true;
      return walk(cJSON_GetArrayItem(node, s.index), steps, at + 1, emit);
    case Step::all:
      if (!cJSON_IsArray(node) && !cJSON_IsObject(node)) return true;
      for (const cJSON* c = node->child; c; c = c->next)
        if (!walk(c, steps, at + 1, emit)) return false;
      return true;
  }
  return true;
}

// A reached value as text: a string, an integer, or a boolean as "true" /
// "false" (Checkout.com's actions say "approved": true); none for the rest.
std::optional<std::string> text_of(const cJSON* node) {
  if (cJSON_IsString(node) && node->valuestring) {
    // cJSON does not check UTF-8; what is read here ends up in results,
    // logs and the ledger, which are JSON and must stay valid.
    return utf8_clean(node->valuestring);
  }
  if (cJSON_IsBool(node)) return std::string(cJSON_IsTrue(node) ? "true" : "false");
  if (cJSON_IsNumber(node)) {
    const double d = node->valuedouble;
    // Integers only: a provider's numeric code (Adyen errorCode 704,
    // Alipay code 10000). 2^53 bounds the exactly representable ones.
    if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) <= 9007199254740992.0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(d));
      return std::string(buf);
    }
  }
  return std::nullopt;
}

}  // namespace

bool valid_json_path(std::string_view path) { return parse(path).has_value(); }

std::vector<std::string> json_path_strings(const cJSON* root, std::string_view path) {
  std::vector<std::string> out;
  const auto steps = parse(path);
  auto all = [&](const cJSON* n) {
    if (std::optional<std::string> v = text_of(n)) out.push_back(std::move(*v));
    return true;
  };
  if (steps && root) walk(root, *steps, 0, all);
  return out;
}

std::optional<std::string> json_path_first_string(const cJSON* root, std::string_view path) {
  std::optional<std::string> out;
  const auto steps = parse(path);
  auto first = [&](const cJSON* n) {
    out = text_of(n);
    return !out;
  };
  if (steps && root) walk(root, *steps, 0, first);
  return out;
}

std::vector<const cJSON*> json_path_nodes(const cJSON* root, std::string_view path) {
  std::vector<const cJSON*> out;
  const auto steps = parse(path);
  auto all = [&](const cJSON* n) {
    out.push_back(n);
    return true;
  };
  if (steps && root) walk(root, *steps, 0, all);
  return out;
}

}  // namespace payretry
