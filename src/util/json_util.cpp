#include "json_util.hpp"

#include <new>

#include "result.hpp"

namespace payretry {
namespace {
void check(const cJSON* added) {
  if (!added) throw std::bad_alloc();
}
}  // namespace

void json_add(cJSON* obj, const char* key, const std::string& value) { check(cJSON_AddStringToObject(obj, key, value.c_str())); }
void json_add(cJSON* obj, const char* key, const char* value) { check(cJSON_AddStringToObject(obj, key, value)); }
void json_add(cJSON* obj, const char* key, int64_t value) { check(cJSON_AddNumberToObject(obj, key, static_cast<double>(value))); }
void json_add(cJSON* obj, const char* key, int value) { check(cJSON_AddNumberToObject(obj, key, value)); }
void json_add(cJSON* obj, const char* key, unsigned value) { check(cJSON_AddNumberToObject(obj, key, value)); }
void json_add_bool(cJSON* obj, const char* key, bool value) { check(cJSON_AddBoolToObject(obj, key, value)); }

void json_add_or_null(cJSON* obj, const char* key, const std::string& value) {
  if (value.empty()) check(cJSON_AddNullToObject(obj, key));
  else json_add(obj, key, value);
}

void json_add_attempt(cJSON* o, const AttemptRecord& a) {
  json_add(o, "attempt", a.number);
  json_add(o, "started_unix_ms", a.started_unix_ms);
  json_add(o, "elapsed_ms", a.elapsed_ms);
  if (a.http_status) json_add(o, "http_status", a.http_status);
  else check(cJSON_AddNullToObject(o, "http_status"));
  json_add_or_null(o, "transport_error", a.transport_error);
  json_add(o, "verdict", a.verdict);
  json_add(o, "reason", a.reason);
  json_add_bool(o, "may_have_processed", a.may_have_processed);
  if (a.delay_ms >= 0) {
    json_add(o, "delay_ms", a.delay_ms);
    json_add(o, "delay_source", a.delay_source);
  }
  json_add_or_null(o, "provider_request_id", a.provider_request_id);
  json_add_bool(o, "replayed", a.replayed);
  json_add_bool(o, "reused_connection", a.reused_connection);
}

std::string json_print(const cJSON* obj) {
  char* s = cJSON_PrintUnformatted(obj);
  if (!s) throw std::bad_alloc();
  std::string out(s);
  cJSON_free(s);
  return out;
}

}  // namespace payretry
