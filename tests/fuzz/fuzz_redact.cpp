// Redaction is the last line between a card number and a log file. Any text
// must redact without crashing, and a Luhn-valid 16-digit PAN placed in it
// (as a number of its own: not glued to letters or other digits, which would
// make it part of a word or of a longer number) never survives. The output
// is always UTF-8.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "redact.hpp"
#include "utf8_check.hpp"

namespace {
size_t occurrences(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}
bool is_alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  // Redacted text goes into JSON: it is UTF-8 whatever came in.
  if (!is_utf8(payretry::redact(in, {"sk_live_fuzzsecret"}))) std::abort();
  if (size < 16) return 0;

  // A PAN from the first 15 bytes plus its Luhn check digit.
  std::string pan;
  for (size_t i = 0; i < 15; ++i) pan += static_cast<char>('0' + data[i] % 10);
  for (char check = '0'; check <= '9'; ++check)
    if (payretry::luhn_valid(pan + check)) {
      pan += check;
      break;
    }
  // Spliced into the rest at a place the input picks, with separators that
  // keep it a number of its own.
  std::string text(in.substr(16));
  const size_t at = text.empty() ? 0 : data[15] % (text.size() + 1);
  std::string before = text.substr(0, at), after = text.substr(at);
  if (!before.empty() && (is_alnum(before.back()) || before.back() == '-' || before.back() == ' ')) before += '|';
  if (!after.empty() && (is_alnum(after.front()) || after.front() == '-' || after.front() == ' ')) after.insert(0, "|");
  // The text around it may hold the same digits inside a longer number,
  // which is not a card number; only the copy we placed must go.
  const std::string out = payretry::redact(before + pan + after, {});
  if (occurrences(out, pan) > occurrences(before, pan) + occurrences(after, pan)) std::abort();
  return 0;
}
