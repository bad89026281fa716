// A small JSON path dialect for provider bodies: where a profile finds an
// error code, a payment id or a status ("$.error.code", "$.errors[*].code",
// "$.*_response.sub_code"). Read-only; no filters, no recursive descent.
//
//   $            the root
//   .name        a member ("name" without . [ ] or spaces)
//   .*           every member of an object, every element of an array
//   .pre*suf     members whose name starts with pre and ends with suf
//                (one '*': "*_response", "alipay_*", "a*z")
//   [n]          element n of an array (0-based)
//   [*]          every element of an array, every member of an object
#pragma once
#include <cJSON.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace payretry {

// Whether `path` is a path of the dialect above.
bool valid_json_path(std::string_view path);

// Every string value the path reaches, in document order; integers (numbers
// with no fractional part) as decimal text, so "$.errorCode" finds 704 and
// "704" alike; booleans as "true" and "false". Other values (objects,
// arrays, null, fractions) are skipped. An invalid path or a null root
// reaches nothing. Strings come out as utf8_clean() leaves them: valid
// UTF-8, whatever the document held.
std::vector<std::string> json_path_strings(const cJSON* root, std::string_view path);

// The first of them, if any (the walk stops there): for every reader that
// wants one value (an id, a status, a key, an error code).
std::optional<std::string> json_path_first_string(const cJSON* root, std::string_view path);

// Every node the path reaches, objects and arrays too, in document order:
// for a reader that reads further inside each (a lookup's listed items).
std::vector<const cJSON*> json_path_nodes(const cJSON* root, std::string_view path);

}  // namespace payretry
