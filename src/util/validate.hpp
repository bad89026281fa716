// Checks on caller-supplied strings that end up on the wire or in logs. They
// run before anything is sent, so a bad value can never inject a header.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace payretry {

inline constexpr size_t kMaxKeyLength = 255;     // Stripe's limit, the tightest common one
inline constexpr size_t kMaxOrderIdLength = 255;
inline constexpr size_t kMaxPathLength = 2048;
inline constexpr size_t kMaxHeaderNameLength = 256;
inline constexpr size_t kMaxHeaderValueLength = 8192;

// Empty string when valid, else the reason (never echoing the value).
std::string check_idempotency_key(std::string_view key, size_t max_len = kMaxKeyLength);
std::string check_order_id(std::string_view order_id);
// A request path: starts with '/', visible ASCII, no spaces, no '#'.
std::string check_path(std::string_view path);
// An HTTP header field name (RFC 9110 token) and value (visible ASCII, SP, HTAB).
std::string check_header_name(std::string_view name);
std::string check_header_value(std::string_view value);
// Headers payretry sets itself (framing, content type, the idempotency key
// under `key_header`) may not come from config or hooks: a second copy of
// the key header could make the provider read another key.
std::string check_not_reserved(std::string_view name, std::string_view key_header);
// The names check_not_reserved refuses whatever the key header (lower case;
// compared without case), for the config's JSON schema.
const std::vector<std::string_view>& reserved_header_names();
// A W3C Trace Context `traceparent` of version 00 (the only one defined):
// "00-" + 32 lower-case hex, not all zero + "-" + 16 lower-case hex, not all
// zero + "-" + 2 lower-case hex (https://www.w3.org/TR/trace-context/#traceparent-header).
std::string check_traceparent(std::string_view value);

}  // namespace payretry
