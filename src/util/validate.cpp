#include "validate.hpp"

#include <strings.h>

#include <cstring>

namespace payretry {
namespace {

bool visible(unsigned char c) { return c >= 0x21 && c <= 0x7E; }

std::string visible_only(std::string_view s, const char* what, size_t max_len) {
  if (s.empty()) return std::string(what) + " is empty";
  if (s.size() > max_len)
    return std::string(what) + " is " + std::to_string(s.size()) + " bytes; the limit is " + std::to_string(max_len);
  for (unsigned char c : s) {
    if (c == '\r' || c == '\n') return std::string(what) + " contains CR or LF";
    if (!visible(c)) return std::string(what) + " contains a space, control or non-ASCII byte";
  }
  return {};
}

}  // namespace

std::string check_idempotency_key(std::string_view key, size_t max_len) {
  return visible_only(key, "idempotency key", max_len);
}

std::string check_order_id(std::string_view order_id) {
  return visible_only(order_id, "order id", kMaxOrderIdLength);
}

std::string check_path(std::string_view path) {
  if (std::string err = visible_only(path, "path", kMaxPathLength); !err.empty()) return err;
  if (path.front() != '/') return "path must start with '/'";
  if (path.find('#') != std::string_view::npos) return "path must not contain '#'";
  return {};
}

std::string check_header_name(std::string_view name) {
  if (name.empty()) return "header name is empty";
  if (name.size() > kMaxHeaderNameLength)
    return "header name is longer than " + std::to_string(kMaxHeaderNameLength) + " bytes";
  static const char* extra = "!#$%&'*+-.^_`|~";
  for (unsigned char c : name) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c != 0 && std::strchr(extra, c) != nullptr);
    if (!ok) {
      // Named when it prints (a name is never a secret); a control byte is
      // only described, so that no CR/LF reaches a log line.
      for (unsigned char p : name)
        if (p < 0x20 || p >= 0x7f) return "header name holds a control or non-ASCII byte: not an HTTP token";
      return "header name \"" + std::string(name) + "\" is not an HTTP token";
    }
  }
  return {};
}

std::string check_header_value(std::string_view value) {
  if (value.size() > kMaxHeaderValueLength)
    return "header value is longer than " + std::to_string(kMaxHeaderValueLength) + " bytes";
  for (unsigned char c : value) {
    if (c == '\r' || c == '\n') return "header value contains CR or LF";
    if (!(visible(c) || c == ' ' || c == '\t')) return "header value contains a control or non-ASCII byte";
  }
  return {};
}

const std::vector<std::string_view>& reserved_header_names() {
  static const std::vector<std::string_view> names = {"content-length", "content-type", "host", "transfer-encoding",
                                                      "expect",         "connection",   "idempotency-key"};
  return names;
}

std::string check_not_reserved(std::string_view name, std::string_view key_header) {
  auto same = [&](std::string_view other) {
    return name.size() == other.size() && strncasecmp(name.data(), other.data(), name.size()) == 0;
  };
  for (std::string_view r : reserved_header_names())
    if (same(r)) return "header " + std::string(name) + " is set by payretry itself";
  if (same(key_header)) return "header " + std::string(name) + " carries the idempotency key; payretry sets it";
  return {};
}

std::string check_traceparent(std::string_view v) {
  auto hex_run = [&](std::size_t from, std::size_t n, bool nonzero) {
    bool any = false;
    for (std::size_t i = from; i < from + n; ++i) {
      const char c = v[i];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
      any = any || c != '0';
    }
    return any || !nonzero;
  };
  const char* form = "traceparent must be 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lower case";
  if (v.size() != 55 || v[2] != '-' || v[35] != '-' || v[52] != '-') return form;
  if (v.substr(0, 2) != "00") return "traceparent version must be 00";
  if (!hex_run(3, 32, true)) return "traceparent trace id must be 32 lower-case hex digits, not all zero";
  if (!hex_run(36, 16, true)) return "traceparent parent id must be 16 lower-case hex digits, not all zero";
  if (!hex_run(53, 2, false)) return form;
  return {};
}

}  // namespace payretry
