#include "json_util.hpp"

#include <new>

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

std::string json_print(const cJSON* obj) {
  char* s = cJSON_PrintUnformatted(obj);
  if (!s) throw std::bad_alloc();
  std::string out(s);
  cJSON_free(s);
  return out;
}

}  // namespace payretry
