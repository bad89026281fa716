// docs/config.md's generated section and docs/config.schema.json, as the key
// table (src/model/config_keys.cpp) makes them: shared by the test that keeps
// them from drifting (test_config_keys.cpp) and the tool that rewrites them
// (config_reference_tool.cpp).
#pragma once
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "config_keys.hpp"

namespace payretry::config_reference {

inline const std::string kBegin =
    "<!-- BEGIN GENERATED: the key table (src/model/config_keys.cpp); rewrite with "
    "build/tests/unit/config_reference_tool --write . -->\n";
inline const std::string kEnd = "<!-- END GENERATED -->\n";

inline std::optional<std::string> read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// `doc` with its generated section replaced by the table's; nullopt when the
// markers are missing or out of order.
inline std::optional<std::string> with_generated_section(const std::string& doc) {
  const size_t begin = doc.find(kBegin);
  const size_t end = doc.find(kEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) return std::nullopt;
  return doc.substr(0, begin + kBegin.size()) + "\n" + config_reference_markdown() + "\n" + doc.substr(end);
}

}  // namespace payretry::config_reference
