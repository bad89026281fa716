// HTTP/1.1 request parsing and response framing for the simulator, plus the per-connection
// buffers. No I/O here: worker_io.cpp moves the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace payretry_sim {

inline constexpr std::size_t kMaxHeaderBytes = 16 * 1024;
inline constexpr std::size_t kMaxBodyBytes = 4 * 1024 * 1024;
inline constexpr std::size_t kMaxHeaders = 64;

struct Header {
  std::string_view name;
  std::string_view value;
};

// Views into the connection's input buffer: valid until the buffer is compacted.
struct Request {
  std::string_view method;
  std::string_view target;
  std::string_view path;
  std::string_view query;  // without '?'
  int minor_version = 1;
  Header headers[kMaxHeaders];
  std::size_t header_count = 0;
  std::size_t content_length = 0;
  std::size_t head_bytes = 0;  // request line + headers + blank line
  bool chunked = false;
  bool expect_continue = false;
  bool keep_alive = true;
  std::string_view body;

  // Case-insensitive lookup; empty view when absent.
  std::string_view header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

enum class ParseStatus {
  incomplete_head,  // need more bytes for the head
  incomplete_body,  // head parsed (req filled, body empty), body still arriving
  complete,         // req filled, `consumed` bytes make up the request
  bad_request,
  head_too_large,   // 431
  body_too_large,   // 413
  length_required,  // chunked or other transfer coding: 411
};

struct ParseResult {
  ParseStatus status;
  std::size_t consumed = 0;
};

ParseResult parse_request(const char* data, std::size_t len, Request& req);

bool iequals(std::string_view a, std::string_view b);
std::string_view reason_phrase(int status);

// Extracts and percent-decodes the value of `name` from a query string.
// The value of one hex digit, or -1.
int hexval(char c);

bool query_param(std::string_view query, std::string_view name, std::string* out);

// The HTTP-date for a Unix time, in the IMF-fixdate form senders must use (RFC 9110 §5.6.7):
// "Sun, 06 Nov 1994 08:49:37 GMT". Every date the simulator writes (Retry-After) comes from here.
std::string imf_fixdate(int64_t unix_seconds);

// Appends a complete response. `extra_headers` is zero or more "Name: value\r\n" lines.
void append_response(std::string& out, int status, std::string_view body,
                     std::string_view extra_headers, uint64_t request_id, bool close);

void append_json_string(std::string& out, std::string_view s);

template <typename Int>
void append_int(std::string& out, Int v);

// Input buffer with a read cursor: bytes [begin, end) are unconsumed.
class InputBuffer {
 public:
  char* write_area(std::size_t min_free);  // ensures room for min_free bytes after end
  void commit(std::size_t n) { end_ += n; }
  std::size_t free_space() const { return buf_.size() - end_; }
  const char* data() const { return buf_.data() + begin_; }
  std::size_t size() const { return end_ - begin_; }
  void consume(std::size_t n);
  void clear() { begin_ = end_ = 0; }
  // Gives memory back after a large body, so idle keep-alive connections stay small.
  void shrink_if_idle();

 private:
  std::vector<char> buf_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

}  // namespace payretry_sim
