// Small helpers over cJSON for the JSON this library writes.
#pragma once
#include <cJSON.h>

#include <cstdint>
#include <memory>
#include <string>

namespace payretry {

struct JsonDeleter {
  void operator()(cJSON* j) const { cJSON_Delete(j); }
};
using JsonPtr = std::unique_ptr<cJSON, JsonDeleter>;

void json_add(cJSON* obj, const char* key, const std::string& value);
void json_add(cJSON* obj, const char* key, const char* value);
void json_add(cJSON* obj, const char* key, int64_t value);
void json_add(cJSON* obj, const char* key, int value);
void json_add(cJSON* obj, const char* key, unsigned value);
void json_add_bool(cJSON* obj, const char* key, bool value);
void json_add_or_null(cJSON* obj, const char* key, const std::string& value);  // "" -> null
std::string json_print(const cJSON* obj);  // compact, one line

}  // namespace payretry
