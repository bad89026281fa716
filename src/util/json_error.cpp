#include "json_error.hpp"

#include <algorithm>

namespace payretry {
namespace {

constexpr size_t kBefore = 30, kAfter = 20;

// Whether the string that ends at `close` (its closing quote) is a member's
// name: the next non-blank byte is ':'.
bool is_name(std::string_view line, size_t close) {
  for (size_t i = close + 1; i < line.size(); ++i) {
    if (line[i] == ' ' || line[i] == '\t') continue;
    return line[i] == ':';
  }
  return false;
}

// `line` with every string value shown as "..."; names as written. A string
// still open at the end of the line (the error may be inside it) is a value.
std::string masked(std::string_view line, size_t mark) {
  std::string out;
  size_t i = 0;
  while (i < line.size()) {
    if (i == mark) out += ">>";
    const char c = line[i];
    if (c != '"') {
      // Bytes outside strings: JSON's own syntax, numbers and words; a
      // control or non-ASCII byte is shown as '?'.
      out += (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) ? '?' : c;
      ++i;
      continue;
    }
    size_t close = i + 1;
    while (close < line.size() && line[close] != '"') close += line[close] == '\\' ? 2 : 1;
    const bool closed = close < line.size();
    if (closed && is_name(line, close) && std::all_of(line.begin() + i + 1, line.begin() + close, [](char ch) {
          return static_cast<unsigned char>(ch) >= 0x20 && static_cast<unsigned char>(ch) < 0x7f;
        })) {
      out.append(line.substr(i, close + 1 - i));
    } else {
      out += closed ? "\"...\"" : "\"...";
    }
    if (mark > i && mark <= std::min(close, line.size() - 1)) out += ">>";  // the parser stopped inside the string
    i = closed ? close + 1 : line.size();
  }
  if (mark >= line.size()) out += ">>";
  return out;
}

}  // namespace

std::string json_error_where(std::string_view text, const char* at) {
  if (!at || at < text.data() || at > text.data() + text.size()) return {};
  const size_t pos = static_cast<size_t>(at - text.data());
  size_t line_start = 0;
  if (pos > 0)
    if (const size_t nl = text.rfind('\n', pos - 1); nl != std::string_view::npos) line_start = nl + 1;
  size_t line_end = text.find('\n', pos);
  if (line_end == std::string_view::npos) line_end = text.size();
  const size_t line_no = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + line_start, '\n'));
  const size_t column = pos - line_start + 1;
  // The part of the line around the error: whole strings stay whole (the
  // mask needs their quotes), so the window is widened to a quote boundary.
  std::string_view line = text.substr(line_start, line_end - line_start);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string shown = masked(line, pos - line_start);
  const size_t mark = shown.find(">>");
  if (shown.size() > kBefore + kAfter + 2 && mark != std::string::npos) {
    const size_t from = mark > kBefore ? mark - kBefore : 0;
    shown = (from > 0 ? "..." : "") + shown.substr(from, kBefore + kAfter + 2) +
            (from + kBefore + kAfter + 2 < shown.size() ? "..." : "");
  }
  return " at line " + std::to_string(line_no) + ", column " + std::to_string(column) + ": " + shown;
}

}  // namespace payretry
