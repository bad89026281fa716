#include "http.hpp"

#include <cJSON.h>
#include <strings.h>

#include <new>

#include "json_util.hpp"

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

std::string headers_to_json(const Headers& h) {
  if (h.empty()) return {};
  JsonPtr root(cJSON_CreateArray());
  if (!root) throw std::bad_alloc();
  for (const auto& [name, value] : h) {
    cJSON* pair = cJSON_CreateArray();
    if (!pair) throw std::bad_alloc();
    cJSON_AddItemToArray(root.get(), pair);
    cJSON* n = cJSON_CreateString(name.c_str());
    cJSON* v = cJSON_CreateString(value.c_str());
    if (!n || !v) {
      cJSON_Delete(n);
      cJSON_Delete(v);
      throw std::bad_alloc();
    }
    cJSON_AddItemToArray(pair, n);
    cJSON_AddItemToArray(pair, v);
  }
  return json_print(root.get());
}

std::optional<Headers> headers_from_json(std::string_view json) {
  Headers out;
  if (json.empty()) return out;
  JsonPtr root(cJSON_ParseWithLength(json.data(), json.size()));
  if (!root || !cJSON_IsArray(root.get())) return std::nullopt;
  const cJSON* pair = nullptr;
  cJSON_ArrayForEach(pair, root.get()) {
    const cJSON* n = cJSON_GetArrayItem(pair, 0);
    const cJSON* v = cJSON_GetArrayItem(pair, 1);
    if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2 || !cJSON_IsString(n) || !cJSON_IsString(v))
      return std::nullopt;
    out.emplace_back(n->valuestring, v->valuestring);
  }
  return out;
}

const std::string* HttpResponse::header(std::string_view name) const {
  const std::string* found = nullptr;
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), name.size()) == 0) found = &v;
  return found;
}

}  // namespace payretry
