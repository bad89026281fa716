// Where a JSON text stops parsing, in words a person can act on: the line,
// the column and the text around it. Configs hold credentials, so the
// excerpt never shows what a string value holds, only the names of members.
#pragma once
#include <string>
#include <string_view>

namespace payretry {

// " at line L, column C: <excerpt>" for the error at `at` (a pointer into
// `text`, as cJSON_GetErrorPtr gives it); "" when `at` is not in `text`.
// The excerpt is the error's line around the column, with every string
// that is not a member's name shown as "..." (a secret must never reach an
// error message), and a ">>" marking where the parser stopped.
std::string json_error_where(std::string_view text, const char* at);

}  // namespace payretry
