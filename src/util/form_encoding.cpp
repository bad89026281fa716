#include "form_encoding.hpp"

#include <cJSON.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "json_raw.hpp"
#include "json_util.hpp"

namespace payretry {
namespace {

void escape(std::string& out, std::string_view s) {
  static const char hex[] = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else if (c == ' ') {
      out.push_back('+');
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
    }
  }
}

// The number as JSON prints it (cJSON keeps a double): integers without an
// exponent up to 2^53, which covers every amount in minor units.
std::string number_text(const cJSON* n) {
  const double d = n->valuedouble;
  char buf[64];
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9007199254740992.0) {
    std::snprintf(buf, sizeof buf, "%.0f", d);
    return buf;
  }
  return json_print(n);
}

void pair(std::string& out, const std::string& name, std::string_view value) {
  if (!out.empty()) out.push_back('&');
  escape(out, name);
  out.push_back('=');
  escape(out, value);
}

void encode(std::string& out, const std::string& name, const cJSON* v) {
  if (cJSON_IsObject(v)) {
    for (const cJSON* c = v->child; c; c = c->next) encode(out, name + "[" + c->string + "]", c);
  } else if (cJSON_IsArray(v)) {
    int i = 0;
    for (const cJSON* c = v->child; c; c = c->next, ++i) encode(out, name + "[" + std::to_string(i) + "]", c);
  } else if (cJSON_IsString(v)) {
    pair(out, name, v->valuestring);
  } else if (cJSON_IsNumber(v)) {
    pair(out, name, number_text(v));
  } else if (cJSON_IsBool(v)) {
    pair(out, name, cJSON_IsTrue(v) ? "true" : "false");
  } else {
    pair(out, name, "");  // null
  }
}

}  // namespace

std::string form_encode_json(const cJSON* object) {
  std::string out;
  for (const cJSON* c = object ? object->child : nullptr; c; c = c->next) encode(out, c->string, c);
  return out;
}

namespace {
// JSON text without the whitespace between tokens: compact, and every
// number exactly as the caller wrote it (a parse and print would turn
// 20150320010101001 into 2.0150320010101e+16).
std::string minified(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < json.size()) out.push_back(json[++i]);
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
      out.push_back(c);
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      out.push_back(c);
    }
  }
  return out;
}
}  // namespace

std::string form_encode_flat(std::string_view json) {
  JsonPtr doc(cJSON_ParseWithLength(json.data(), json.size()));
  std::vector<RawMember> raw;
  if (!doc || !cJSON_IsObject(doc.get()) || !json_raw_members(json, raw)) return {};
  std::string out;
  size_t i = 0;
  for (const cJSON* c = doc->child; c; c = c->next, ++i) {
    if (cJSON_IsObject(c) || cJSON_IsArray(c))
      pair(out, c->string, i < raw.size() ? minified(raw[i].value) : json_print(c));
    else
      encode(out, c->string, c);
  }
  return out;
}

std::string form_escape(std::string_view s) {
  std::string out;
  escape(out, s);
  return out;
}

bool form_decode(std::string_view body, std::vector<std::pair<std::string, std::string>>& fields) {
  fields.clear();
  auto unescape = [](std::string_view in, std::string& out) {
    out.clear();
    for (size_t i = 0; i < in.size(); ++i) {
      const char c = in[i];
      if (c == '+') {
        out.push_back(' ');
      } else if (c == '%') {
        if (i + 2 >= in.size() || !std::isxdigit(static_cast<unsigned char>(in[i + 1])) ||
            !std::isxdigit(static_cast<unsigned char>(in[i + 2])))
          return false;
        out.push_back(static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16)));
        i += 2;
      } else {
        out.push_back(c);
      }
    }
    return true;
  };
  size_t at = 0;
  while (at < body.size()) {
    const size_t amp = std::min(body.find('&', at), body.size());
    const std::string_view field = body.substr(at, amp - at);
    at = amp + 1;
    if (field.empty()) continue;
    const size_t eq = std::min(field.find('='), field.size());
    std::string name, value;
    if (!unescape(field.substr(0, eq), name) || name.empty()) return false;
    if (eq < field.size() && !unescape(field.substr(eq + 1), value)) return false;
    fields.emplace_back(std::move(name), std::move(value));
  }
  return true;
}

bool looks_form_encoded(std::string_view body) {
  // JSON text of any kind (an object, an array, a string) is a document.
  if (body.empty() || body.front() == '{' || body.front() == '[' || body.front() == '"') return false;
  for (size_t i = 0; i < body.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(body[i]);
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '{' || c == '}' || c == '#') return false;
    if (c == '%' && (i + 2 >= body.size() || !std::isxdigit(static_cast<unsigned char>(body[i + 1])) ||
                     !std::isxdigit(static_cast<unsigned char>(body[i + 2]))))
      return false;
  }
  // Every field has a name: no empty pair, none that starts with '='.
  size_t at = 0;
  while (at <= body.size()) {
    const size_t amp = std::min(body.find('&', at), body.size());
    const std::string_view field = body.substr(at, amp - at);
    if (field.empty() || field.front() == '=') return false;
    at = amp + 1;
  }
  return true;
}

}  // namespace payretry
