// Compact JSON written straight into a string, byte for byte as
// cJSON_PrintUnformatted writes the same document (same escapes, integers as
// plain digits), without building a tree: the result view and the attempt
// log write one object per payment and per attempt on the engine's hot path.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace payretry {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  // An array as the value of `key` in the enclosing object.
  void begin_array(std::string_view key) {
    name(key);
    open_value('[');
  }
  void end_array() { close(']'); }

  void field(std::string_view key, std::string_view value) {
    name(key);
    string(value);
  }
  void field(std::string_view key, const std::string& value) { field(key, std::string_view(value)); }
  void field(std::string_view key, const char* value) { field(key, std::string_view(value)); }
  void field(std::string_view key, int64_t value);
  void field(std::string_view key, int value) { field(key, static_cast<int64_t>(value)); }
  void field(std::string_view key, unsigned value) { field(key, static_cast<int64_t>(value)); }
  void field_bool(std::string_view key, bool value) {
    name(key);
    out_ += value ? "true" : "false";
  }
  void field_null(std::string_view key) {
    name(key);
    out_ += "null";
  }
  // "" is written as null.
  void field_or_null(std::string_view key, std::string_view value) {
    if (value.empty()) field_null(key);
    else field(key, value);
  }

 private:
  void open(char c);
  void open_value(char c);
  void close(char c);
  void comma();
  void name(std::string_view key);
  void string(std::string_view s);

  std::string& out_;
  bool first_ = true;  // no member written yet at the current level
};

}  // namespace payretry
