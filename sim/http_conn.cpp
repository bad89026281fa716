#include "http_conn.hpp"

#include <locale.h>
#include <time.h>

#include <charconv>
#include <cstring>
#include <ctime>

namespace payretry_sim {

namespace {

inline char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// True when the comma-separated header value contains `token` (case-insensitive).
bool has_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    std::size_t comma = value.find(',');
    std::string_view item = trim(value.substr(0, comma));
    if (iequals(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view Request::header(std::string_view name) const {
  for (std::size_t i = 0; i < header_count; ++i) {
    if (iequals(headers[i].name, name)) return headers[i].value;
  }
  return {};
}

bool Request::has_header(std::string_view name) const {
  for (std::size_t i = 0; i < header_count; ++i) {
    if (iequals(headers[i].name, name)) return true;
  }
  return false;
}

ParseResult parse_request(const char* data, std::size_t len, Request& req) {
  // Tolerate stray CRLFs between pipelined requests (RFC 9112 §2.2).
  std::size_t skip = 0;
  while (skip + 1 < len && data[skip] == '\r' && data[skip + 1] == '\n') skip += 2;
  const char* p = data + skip;
  const std::size_t n = len - skip;

  const void* end_mark = n >= 4 ? memmem(p, n, "\r\n\r\n", 4) : nullptr;
  if (!end_mark) {
    if (n > kMaxHeaderBytes) return {ParseStatus::head_too_large};
    return {ParseStatus::incomplete_head};
  }
  const std::size_t head_len = static_cast<const char*>(end_mark) - p + 4;
  if (head_len > kMaxHeaderBytes) return {ParseStatus::head_too_large};

  std::string_view head(p, head_len - 2);  // keep the last header's CRLF
  std::size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  head.remove_prefix(eol + 2);

  // Request line: METHOD SP target SP HTTP/1.x
  std::size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return {ParseStatus::bad_request};
  std::size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return {ParseStatus::bad_request};
  req.method = line.substr(0, sp1);
  req.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (version.size() != 8 || version.substr(0, 7) != "HTTP/1." || version[7] < '0' ||
      version[7] > '9') {
    return {ParseStatus::bad_request};
  }
  req.minor_version = version[7] - '0';
  // A server must accept the absolute form "http://host:port/path?query" (RFC 9112 §3.2.2);
  // some clients send it (alipay-sdk-python does). The origin form after the authority is what
  // routes and what request signatures cover.
  constexpr std::string_view kHttp = "http://", kHttps = "https://";
  const std::size_t scheme = iequals(req.target.substr(0, kHttp.size()), kHttp)     ? kHttp.size()
                             : iequals(req.target.substr(0, kHttps.size()), kHttps) ? kHttps.size()
                                                                                    : 0;
  if (scheme) {
    const std::size_t origin = req.target.find_first_of("/?", scheme);
    if (origin == std::string_view::npos || req.target[origin] != '/') return {ParseStatus::bad_request};
    req.target.remove_prefix(origin);
  }
  std::size_t q = req.target.find('?');
  req.path = req.target.substr(0, q);
  req.query = q == std::string_view::npos ? std::string_view{} : req.target.substr(q + 1);

  req.header_count = 0;
  req.content_length = 0;
  req.chunked = false;
  req.expect_continue = false;
  req.keep_alive = req.minor_version >= 1;
  req.body = {};
  bool have_length = false;
  while (!head.empty()) {
    eol = head.find("\r\n");
    line = head.substr(0, eol);
    head.remove_prefix(eol + 2);
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return {ParseStatus::bad_request};
    if (req.header_count == kMaxHeaders) return {ParseStatus::head_too_large};
    std::string_view name = line.substr(0, colon);
    if (name.back() == ' ' || name.back() == '\t') return {ParseStatus::bad_request};
    std::string_view value = trim(line.substr(colon + 1));
    req.headers[req.header_count++] = {name, value};

    if (iequals(name, "content-length")) {
      std::size_t v = 0;
      auto r = std::from_chars(value.data(), value.data() + value.size(), v);
      if (r.ec != std::errc() || r.ptr != value.data() + value.size() || value.empty()) {
        return {ParseStatus::bad_request};
      }
      if (have_length && v != req.content_length) return {ParseStatus::bad_request};
      have_length = true;
      req.content_length = v;
    } else if (iequals(name, "transfer-encoding")) {
      req.chunked = true;  // any transfer coding: we only frame by Content-Length
    } else if (iequals(name, "expect")) {
      req.expect_continue = iequals(value, "100-continue");
    } else if (iequals(name, "connection")) {
      if (has_token(value, "close")) req.keep_alive = false;
      else if (has_token(value, "keep-alive")) req.keep_alive = true;
    }
  }
  req.head_bytes = skip + head_len;
  if (req.chunked) return {ParseStatus::length_required, req.head_bytes};
  if (req.content_length > kMaxBodyBytes) return {ParseStatus::body_too_large, req.head_bytes};
  if (n - head_len < req.content_length) return {ParseStatus::incomplete_body};
  req.body = std::string_view(p + head_len, req.content_length);
  return {ParseStatus::complete, req.head_bytes + req.content_length};
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

bool query_param(std::string_view query, std::string_view name, std::string* out) {
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    std::size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      std::string_view raw = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
      out->clear();
      for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '+') {
          out->push_back(' ');
        } else if (raw[i] == '%' && i + 2 < raw.size() && hexval(raw[i + 1]) >= 0 &&
                   hexval(raw[i + 2]) >= 0) {
          out->push_back(static_cast<char>(hexval(raw[i + 1]) * 16 + hexval(raw[i + 2])));
          i += 2;
        } else {
          out->push_back(raw[i]);
        }
      }
      return true;
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return false;
}

std::string imf_fixdate(int64_t unix_seconds) {
  // Day and month names are English whatever locale the host process set (RFC 9110 §5.6.7).
  static const locale_t c_locale = newlocale(LC_TIME_MASK, "C", static_cast<locale_t>(0));
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const std::size_t n = strftime_l(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm, c_locale);
  return std::string(buf, n);
}

template <typename Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}
template void append_int<int>(std::string&, int);
template void append_int<long>(std::string&, long);
template void append_int<long long>(std::string&, long long);
template void append_int<unsigned long>(std::string&, unsigned long);
template void append_int<unsigned long long>(std::string&, unsigned long long);

void append_response(std::string& out, int status, std::string_view body,
                     std::string_view extra_headers, uint64_t request_id, bool close) {
  out.append("HTTP/1.1 ");
  append_int(out, status);
  out.push_back(' ');
  out.append(reason_phrase(status));
  out.append("\r\nContent-Type: application/json\r\nContent-Length: ");
  append_int(out, body.size());
  out.append("\r\nRequest-Id: req_");
  append_int(out, request_id);
  out.append("\r\n");
  out.append(extra_headers);
  if (close) out.append("Connection: close\r\n");
  out.append("\r\n");
  out.append(body);
}

void append_json_string(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t run = 0;  // start of the pending run of bytes that need no escaping
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      default:
        out.append("\\u00");
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

char* InputBuffer::write_area(std::size_t min_free) {
  if (buf_.size() - end_ < min_free) {
    if (begin_ > 0) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (buf_.size() - end_ < min_free) {
      std::size_t want = buf_.size() ? buf_.size() * 2 : 16 * 1024;
      while (want - end_ < min_free) want *= 2;
      buf_.resize(want);
    }
  }
  return buf_.data() + end_;
}

void InputBuffer::consume(std::size_t n) {
  begin_ += n;
  if (begin_ == end_) begin_ = end_ = 0;
}

void InputBuffer::shrink_if_idle() {
  if (begin_ == end_ && buf_.size() > 64 * 1024) {
    std::vector<char>().swap(buf_);
    begin_ = end_ = 0;
  }
}

}  // namespace payretry_sim
