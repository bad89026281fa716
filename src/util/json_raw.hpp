// A JSON object's top-level members as the exact bytes that were sent,
// without parsing them into values: what a signature covers (Alipay signs
// the text of its *_response member), and what a caller wrote (a nested
// object passed on as its own text, numbers and all).
#pragma once
#include <string_view>
#include <utility>
#include <vector>

namespace payretry {

struct RawMember {
  std::string_view name;   // between the quotes, escapes as written
  std::string_view value;  // the value's exact text
};

// False when `text` is not one JSON object (then `out` is incomplete). A
// name that holds an escape is returned as written ("a\u005fb").
bool json_raw_members(std::string_view text, std::vector<RawMember>& out);

}  // namespace payretry
