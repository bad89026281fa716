#include "path_template.hpp"

#include <cJSON.h>

#include <cctype>

#include "json_util.hpp"

namespace payretry {

std::string percent_encode(std::string_view s) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
    }
  }
  return out;
}

namespace {
std::string json_escape(const std::string& s) {
  const std::string quoted = json_print(JsonPtr(cJSON_CreateString(s.c_str())).get());
  return quoted.substr(1, quoted.size() - 2);
}
}  // namespace

std::string fill_template(std::string text, const std::vector<std::pair<std::string, std::string>>& vars,
                          bool for_json) {
  for (const auto& [name, value] : vars) {
    const std::string token = "{" + name + "}";
    const std::string encoded = for_json ? json_escape(value) : percent_encode(value);
    for (size_t at = text.find(token); at != std::string::npos; at = text.find(token, at + encoded.size()))
      text.replace(at, token.size(), encoded);
  }
  return text;
}

}  // namespace payretry
