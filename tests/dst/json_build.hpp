// Compact JSON objects built from dotted paths, members in the order given:
// {{"amount","5"},{"metadata.order_id","\"o1\""}} -> {"amount":5,"metadata":{"order_id":"o1"}}.
// Values are JSON text as they go in (a quoted string, a number, an object).
// For the simulation's request bodies and answer templates only.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace payretry::dst {

using JsonMembers = std::vector<std::pair<std::string, std::string>>;

inline std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

namespace detail {
struct JsonNode {
  std::string name;
  std::string value;  // leaf: JSON text; empty: an object of `kids`
  std::vector<JsonNode> kids;
  void put(const std::string& dotted, const std::string& v) {
    const size_t dot = dotted.find('.');
    const std::string head = dotted.substr(0, dot);
    JsonNode* at = nullptr;
    for (JsonNode& k : kids)
      if (k.name == head) at = &k;
    if (!at) {
      kids.push_back(JsonNode{head, {}, {}});
      at = &kids.back();
    }
    if (dot == std::string::npos) at->value = v;
    else at->put(dotted.substr(dot + 1), v);
  }
  std::string text() const {
    if (!value.empty()) return value;
    std::string out = "{";
    for (size_t i = 0; i < kids.size(); ++i) out += (i ? "," : "") + json_quote(kids[i].name) + ":" + kids[i].text();
    return out + "}";
  }
};
}  // namespace detail

inline std::string json_object(const JsonMembers& members) {
  detail::JsonNode root;
  for (const auto& [path, value] : members) root.put(path, value);
  return root.text();
}

}  // namespace payretry::dst
