// Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "transport.hpp"

namespace payretry {

// Largest delay we represent; anything longer saturates here and is then
// necessarily beyond any deadline.
inline constexpr int64_t kRetryAfterSaturateMs = int64_t(400) * 24 * 3600 * 1000;

// The delay in milliseconds the server asked for, relative to `now_unix_ms`.
// A date in the past gives 0. Garbage (signs, fractions, unknown date
// formats, out-of-range fields) gives nullopt: the caller ignores the header.
std::optional<int64_t> parse_retry_after_ms(std::string_view value, int64_t now_unix_ms);

// The floor a response's Retry-After sets. The field is a singleton; when a
// provider (or a proxy in front of it) sends it more than once, the longest
// valid wait wins, so a contradictory answer never makes the client retry
// sooner than the provider asked. nullopt: no valid Retry-After at all.
std::optional<int64_t> response_retry_after_ms(const HttpResponse& response, int64_t now_unix_ms);

// Parses the three HTTP-date forms (IMF-fixdate, RFC 850, asctime) to Unix
// seconds; nullopt if not one of them.
std::optional<int64_t> parse_http_date(std::string_view s);

}  // namespace payretry
