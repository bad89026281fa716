#include "http.hpp"

#include <strings.h>

namespace payretry {

const char* transport_failure_name(TransportFailure f) {
  switch (f) {
    case TransportFailure::none: return "none";
    case TransportFailure::resolve: return "resolve_failed";
    case TransportFailure::connect: return "connect_failed";
    case TransportFailure::tls_handshake: return "tls_handshake_failed";
    case TransportFailure::tls_verify: return "tls_verify_failed";
    case TransportFailure::connect_timeout: return "connect_timeout";
    case TransportFailure::timeout: return "timeout";
    case TransportFailure::connection_lost: return "connection_lost";
    case TransportFailure::replay_blocked: return "reused_connection_died";
    case TransportFailure::not_started: return "not_started";
    case TransportFailure::response_too_large: return "response_too_large";
    case TransportFailure::no_credentials: return "no_credentials";
    case TransportFailure::other: return "transport_error";
  }
  return "transport_error";
}

const std::string* HttpResponse::header(std::string_view name) const {
  const std::string* found = nullptr;
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), name.size()) == 0) found = &v;
  return found;
}

}  // namespace payretry
