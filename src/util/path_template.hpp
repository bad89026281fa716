// {placeholder} templates in paths and lookup bodies: the profile's
// create_path and lookup.path ({order_id}, {provider_id}, {key},
// {merchant_id}) and lookup.body.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace payretry {

// RFC 3986 unreserved characters pass; every other byte is %XX.
std::string percent_encode(std::string_view s);

// Replaces every "{name}" of `vars` in `text` with its value, percent-encoded
// for a path, JSON-escaped (no quotes) for a body template.
std::string fill_template(std::string text, const std::vector<std::pair<std::string, std::string>>& vars,
                          bool for_json);

}  // namespace payretry
