#include "json_writer.hpp"

#include <charconv>

namespace payretry {

void JsonWriter::comma() {
  if (!first_) out_.push_back(',');
  first_ = false;
}

void JsonWriter::open(char c) {
  // An object or array as an element (of an array) or the whole document.
  comma();
  out_.push_back(c);
  first_ = true;
}

void JsonWriter::open_value(char c) {
  out_.push_back(c);
  first_ = true;
}

void JsonWriter::close(char c) {
  out_.push_back(c);
  first_ = false;
}

void JsonWriter::name(std::string_view key) {
  comma();
  string(key);
  out_.push_back(':');
}

void JsonWriter::field(std::string_view key, int64_t value) {
  name(key);
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  out_.append(buf, r.ptr);
}

// cJSON's escapes: the two that must be, the five short forms, \u00xx for the
// other control characters; every other byte (UTF-8 included) as it is. A
// NUL ends the string, as it ends the C string cJSON was given.
void JsonWriter::string(std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  s = s.substr(0, s.find('\0'));
  out_.push_back('"');
  size_t plain = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out_.append(s.data() + plain, i - plain);
    plain = i + 1;
    out_.push_back('\\');
    switch (c) {
      case '"': out_.push_back('"'); break;
      case '\\': out_.push_back('\\'); break;
      case '\b': out_.push_back('b'); break;
      case '\f': out_.push_back('f'); break;
      case '\n': out_.push_back('n'); break;
      case '\r': out_.push_back('r'); break;
      case '\t': out_.push_back('t'); break;
      default:
        out_ += "u00";
        out_.push_back(hex[c >> 4]);
        out_.push_back(hex[c & 0xF]);
    }
  }
  out_.append(s.data() + plain, s.size() - plain);
  out_.push_back('"');
}

}  // namespace payretry
