#include "retry_after.hpp"

#include <strings.h>

#include <cstring>

namespace payretry {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool digits(std::string_view s, size_t n, int& out) {
  if (s.size() < n) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

int month_index(std::string_view m) {
  static const char* names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int i = 0; i < 12; ++i)
    if (m == names[i]) return i + 1;
  return 0;
}

bool is_day_name(std::string_view d, bool long_form) {
  static const char* shorts[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
  static const char* longs[] = {"Monday", "Tuesday", "Wednesday", "Thursday",
                                "Friday", "Saturday", "Sunday"};
  for (int i = 0; i < 7; ++i)
    if (d == (long_form ? longs[i] : shorts[i])) return true;
  return false;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool valid_time(int y, int mo, int d, int h, int mi, int s) {
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1]) return false;
  if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return false;
  return h <= 23 && mi <= 59 && s <= 60;  // 60: leap second, as RFC 9110 allows
}

std::optional<int64_t> to_unix(int y, int mo, int d, int h, int mi, int s) {
  if (!valid_time(y, mo, d, h, mi, s)) return std::nullopt;
  return days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
         h * 3600 + mi * 60 + s;
}

// "08:49:37"
bool parse_hms(std::string_view s, int& h, int& mi, int& sec) {
  return s.size() == 8 && digits(s, 2, h) && s[2] == ':' && digits(s.substr(3), 2, mi) &&
         s[5] == ':' && digits(s.substr(6), 2, sec);
}

}  // namespace

std::optional<int64_t> parse_http_date(std::string_view s) {
  int y, mo, d, h, mi, sec;
  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" (exactly 29 characters).
  if (s.size() == 29 && s[3] == ',' && is_day_name(s.substr(0, 3), false)) {
    if (s[4] != ' ' || !digits(s.substr(5), 2, d) || s[7] != ' ') return std::nullopt;
    mo = month_index(s.substr(8, 3));
    if (!mo || s[11] != ' ' || !digits(s.substr(12), 4, y) || s[16] != ' ') return std::nullopt;
    if (!parse_hms(s.substr(17, 8), h, mi, sec) || s.substr(25) != " GMT") return std::nullopt;
    return to_unix(y, mo, d, h, mi, sec);
  }
  // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"; two-digit years per RFC 9110:
  // a year more than 50 years ahead is taken as the past century.
  const size_t comma = s.find(',');
  if (comma != std::string_view::npos && comma >= 6 && is_day_name(s.substr(0, comma), true)) {
    std::string_view r = s.substr(comma);
    if (r.size() != 24 || r[1] != ' ' || !digits(r.substr(2), 2, d) || r[4] != '-') return std::nullopt;
    mo = month_index(r.substr(5, 3));
    if (!mo || r[8] != '-' || !digits(r.substr(9), 2, y) || r[11] != ' ') return std::nullopt;
    if (!parse_hms(r.substr(12, 8), h, mi, sec) || r.substr(20) != " GMT") return std::nullopt;
    y += 2000;
    // Without a clock here, pick the century closest to the 2000s window.
    if (y > 2069) y -= 100;
    return to_unix(y, mo, d, h, mi, sec);
  }
  // asctime: "Sun Nov  6 08:49:37 1994" (day space-padded).
  if (s.size() == 24 && s[3] == ' ' && is_day_name(s.substr(0, 3), false)) {
    mo = month_index(s.substr(4, 3));
    if (!mo || s[7] != ' ') return std::nullopt;
    if (s[8] == ' ') {
      if (!digits(s.substr(9), 1, d)) return std::nullopt;
    } else if (!digits(s.substr(8), 2, d)) {
      return std::nullopt;
    }
    if (s[10] != ' ' || !parse_hms(s.substr(11, 8), h, mi, sec) || s[19] != ' ' ||
        !digits(s.substr(20), 4, y))
      return std::nullopt;
    return to_unix(y, mo, d, h, mi, sec);
  }
  return std::nullopt;
}

std::optional<int64_t> parse_retry_after_ms(std::string_view value, int64_t now_unix_ms) {
  value = trim(value);
  if (value.empty()) return std::nullopt;
  if (value.front() >= '0' && value.front() <= '9') {
    // delay-seconds = 1*DIGIT; saturate instead of overflowing.
    int64_t secs = 0;
    for (char c : value) {
      if (c < '0' || c > '9') return std::nullopt;
      if (secs < kRetryAfterSaturateMs / 1000) secs = secs * 10 + (c - '0');
    }
    const int64_t ms = secs >= kRetryAfterSaturateMs / 1000 ? kRetryAfterSaturateMs : secs * 1000;
    return ms;
  }
  const auto when = parse_http_date(value);
  if (!when) return std::nullopt;
  if (*when > (INT64_MAX / 1000) - 1) return kRetryAfterSaturateMs;
  const int64_t delta = *when * 1000 - now_unix_ms;
  if (delta <= 0) return 0;  // a date in the past means "now"
  return delta < kRetryAfterSaturateMs ? delta : kRetryAfterSaturateMs;
}

std::optional<int64_t> response_retry_after_ms(const HttpResponse& response, int64_t now_unix_ms) {
  std::optional<int64_t> longest;
  for (const auto& [name, value] : response.headers) {
    if (name.size() != 11 || strncasecmp(name.data(), "Retry-After", 11) != 0) continue;
    if (auto ms = parse_retry_after_ms(value, now_unix_ms); ms && (!longest || *ms > *longest)) longest = ms;
  }
  return longest;
}

}  // namespace payretry
