#include "amount_reading.hpp"

#include <cmath>
#include <memory>
#include <vector>

namespace payretry {

namespace {

// 2^53: every integer up to it is exact in a double, which is what cJSON
// keeps of a number, and far above any amount a provider takes.
constexpr int64_t kMaxAmount = int64_t(1) << 53;

struct Step {
  std::string name;  // a member, when index < 0
  long index = -1;
};

std::optional<std::vector<Step>> steps_of(std::string_view path) {
  if (path.size() < 2 || path[0] != '$') return std::nullopt;
  std::vector<Step> out;
  size_t i = 1;
  while (i < path.size()) {
    if (path[i] == '.') {
      size_t end = i + 1;
      while (end < path.size() && path[end] != '.' && path[end] != '[') ++end;
      std::string name(path.substr(i + 1, end - i - 1));
      if (name.empty() || name.find('*') != std::string::npos || name.find(']') != std::string::npos ||
          name.find(' ') != std::string::npos)
        return std::nullopt;
      out.push_back(Step{std::move(name), -1});
      i = end;
    } else if (path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string_view::npos || close == i + 1 || close - i - 1 > 6) return std::nullopt;
      long n = 0;
      for (size_t k = i + 1; k < close; ++k) {
        if (path[k] < '0' || path[k] > '9') return std::nullopt;
        n = n * 10 + (path[k] - '0');
      }
      out.push_back(Step{"", n});
      i = close + 1;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<int64_t> bad(std::string& error, std::string why) {
  error = std::move(why);
  return std::nullopt;
}

// "10", "10.5", "10.00" -> hundredths.
std::optional<int64_t> decimal_text(std::string_view s, const std::string& where, std::string& error) {
  const size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  const std::string shown = "\"" + std::string(s.substr(0, 40)) + "\"";
  if (whole.empty() || (dot != std::string_view::npos && frac.empty()))
    return bad(error, where + ": " + shown + " is not a decimal amount (digits, then at most two decimals: \"10.00\")");
  for (char c : s.substr(0, dot))
    if (c < '0' || c > '9') return bad(error, where + ": " + shown + " is not a decimal amount (digits, then at most two decimals: \"10.00\")");
  for (char c : frac)
    if (c < '0' || c > '9') return bad(error, where + ": " + shown + " is not a decimal amount (digits, then at most two decimals: \"10.00\")");
  if (frac.size() > 2) return bad(error, where + ": " + shown + " has more than two decimals");
  if (whole.size() > 14) return bad(error, where + ": " + shown + " is too large");
  int64_t w = 0;
  for (char c : whole) w = w * 10 + (c - '0');
  int64_t f = 0;
  for (char c : frac) f = f * 10 + (c - '0');
  if (frac.size() == 1) f *= 10;
  const int64_t v = w * 100 + f;
  if (v > kMaxAmount) return bad(error, where + ": " + shown + " is too large");
  return v;
}

}  // namespace

bool concrete_json_path(std::string_view path) {
  const auto steps = steps_of(path);
  return steps && !steps->empty();
}

namespace {

using Owned = std::unique_ptr<cJSON, decltype(&cJSON_Delete)>;

// The value `path` names in `root`, or null; text parsed on the way (a
// biz_content given as a string) is kept in `keep`, which the answer lives in.
const cJSON* node_at(const cJSON* root, std::string_view path, std::vector<Owned>& keep) {
  const auto steps = steps_of(path);
  if (!steps || !root) return nullptr;
  const cJSON* cur = root;
  for (const Step& s : *steps) {
    if (cJSON_IsString(cur) && cur->valuestring) {
      cJSON* inner = cJSON_Parse(cur->valuestring);
      if (!inner) return nullptr;
      keep.emplace_back(inner, &cJSON_Delete);
      cur = inner;
    }
    if (s.index >= 0) {
      if (!cJSON_IsArray(cur) || s.index >= cJSON_GetArraySize(cur)) return nullptr;
      cur = cJSON_GetArrayItem(cur, static_cast<int>(s.index));
    } else {
      if (!cJSON_IsObject(cur)) return nullptr;
      cur = cJSON_GetObjectItemCaseSensitive(cur, s.name.c_str());
    }
    if (!cur) return nullptr;
  }
  return cur;
}

}  // namespace

std::optional<int64_t> read_amount(const AmountField& field, const cJSON* body, std::string& error) {
  error.clear();
  if (field.path.empty()) return bad(error, "the profile names no amount");
  if (!body) return bad(error, "the body is not a JSON document");
  std::vector<Owned> keep;
  const cJSON* v = node_at(body, field.path, keep);
  if (!v) return bad(error, field.path + ": no value there");
  const std::string& where = field.path;
  if (field.format == AmountFormat::minor) {
    if (cJSON_IsNumber(v)) {
      const double d = v->valuedouble;
      if (!std::isfinite(d) || std::trunc(d) != d)
        return bad(error, where + ": must be a whole number of minor units, not a fraction");
      if (d < 0) return bad(error, where + ": must not be negative");
      if (d > static_cast<double>(kMaxAmount)) return bad(error, where + ": is too large");
      return static_cast<int64_t>(d);
    }
    if (cJSON_IsString(v) && v->valuestring) {
      const std::string s = v->valuestring;
      bool digits = !s.empty();
      for (char c : s) digits = digits && c >= '0' && c <= '9';
      if (!digits) return bad(error, where + ": \"" + s.substr(0, 40) + "\" is not a whole number of minor units");
      if (s.size() > 16) return bad(error, where + ": is too large");
      const int64_t n = std::stoll(s);
      if (n > kMaxAmount) return bad(error, where + ": is too large");
      return n;
    }
    return bad(error, where + ": must be a whole number of minor units");
  }
  if (cJSON_IsString(v) && v->valuestring) return decimal_text(v->valuestring, where, error);
  if (cJSON_IsNumber(v)) {
    // cJSON keeps the double, not the text: accept it only when it is the
    // double that hundredths n / 100 parse to, so that 10.5 reads 1050 and
    // 10.001 is refused as its text would be.
    const double d = v->valuedouble;
    if (!std::isfinite(d) || d < 0) return bad(error, where + ": must be a non-negative decimal amount");
    if (d * 100 > static_cast<double>(kMaxAmount)) return bad(error, where + ": is too large");
    const int64_t n = std::llround(d * 100);
    if (static_cast<double>(n) / 100 != d) return bad(error, where + ": has more than two decimals");
    return n;
  }
  return bad(error, where + ": must be a decimal amount (\"10.00\")");
}

}  // namespace payretry
