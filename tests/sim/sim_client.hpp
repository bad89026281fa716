// Raw HTTP/1.1 helpers for the simulator's tests: a keep-alive connection that sees RSTs,
// timeouts and clean closes as a client would, and a small cJSON reader.
#pragma once

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "server.hpp"

namespace simtest {

using payretry_sim::Options;
using Clock = std::chrono::steady_clock;

class Sock {
 public:
  Sock() = default;
  explicit Sock(int fd) : fd_(fd) {}
  ~Sock() {
    if (fd_ >= 0) ::close(fd_);
  }
  Sock(Sock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Sock& operator=(Sock&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Connects to 127.0.0.1:port; on failure returns an invalid Sock and sets *err to errno.
inline Sock dial(uint16_t port, int* err = nullptr) {
  Sock s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    if (err) *err = errno;
    return Sock();
  }
  if (err) *err = 0;
  int one = 1;
  setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return s;
}

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  int error = 0;       // errno of a failed read (ECONNRESET for an RST)
  bool eof = false;    // closed cleanly before a response
  bool timeout = false;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One keep-alive connection speaking raw HTTP/1.1.
class Conn {
 public:
  explicit Conn(uint16_t port) : sock_(dial(port, &connect_error_)) {}
  bool ok() const { return sock_.ok(); }
  int connect_error() const { return connect_error_; }
  int fd() const { return sock_.get(); }

  bool send_raw(const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      ssize_t w = ::send(sock_.get(), bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (w <= 0) return false;
      off += static_cast<std::size_t>(w);
    }
    return true;
  }

  // Reads one response (skipping nothing: a 100 Continue is returned as such).
  Response read(int timeout_ms = 5000) {
    Response r;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      const std::size_t end = buf_.find("\r\n\r\n");
      if (end != std::string::npos) {
        std::string head = buf_.substr(0, end);
        std::size_t cl = 0;
        parse_head(head, &r, &cl);
        if (r.status == 100) {
          buf_.erase(0, end + 4);
          return r;
        }
        if (buf_.size() >= end + 4 + cl) {
          r.body = buf_.substr(end + 4, cl);
          buf_.erase(0, end + 4 + cl);
          return r;
        }
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        r.timeout = true;
        return r;
      }
      pollfd p{sock_.get(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char tmp[65536];
      const ssize_t n = ::recv(sock_.get(), tmp, sizeof tmp, 0);
      if (n > 0) {
        buf_.append(tmp, static_cast<std::size_t>(n));
      } else if (n == 0) {
        r.eof = true;
        return r;
      } else if (errno != EINTR) {
        r.error = errno;
        return r;
      }
    }
  }

  Response request(const std::string& method, const std::string& path, const std::string& body = "",
                   const std::vector<std::string>& headers = {}, int timeout_ms = 5000) {
    if (!send_raw(format(method, path, body, headers))) {
      Response r;
      r.error = errno ? errno : EPIPE;
      return r;
    }
    return read(timeout_ms);
  }

  static std::string format(const std::string& method, const std::string& path,
                            const std::string& body, const std::vector<std::string>& headers) {
    std::string s = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (const auto& h : headers) s += h + "\r\n";
    if (method == "POST" || !body.empty()) {
      s += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    }
    s += "\r\n" + body;
    return s;
  }

 private:
  static void parse_head(const std::string& head, Response* r, std::size_t* content_length) {
    std::size_t pos = head.find("\r\n");
    const std::string status_line = head.substr(0, pos);
    r->status = std::atoi(status_line.substr(9, 3).c_str());
    while (pos != std::string::npos && pos + 2 < head.size()) {
      const std::size_t next = head.find("\r\n", pos + 2);
      const std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        r->headers[lower(line.substr(0, colon))] = value;
      }
      pos = next;
    }
    *content_length = static_cast<std::size_t>(std::atol(r->header("content-length").c_str()));
  }

  int connect_error_ = 0;
  Sock sock_;
  std::string buf_;
};

inline Response get(uint16_t port, const std::string& path) {
  Conn c(port);
  return c.request("GET", path);
}

inline Response admin_post(uint16_t port, const std::string& path, const std::string& body) {
  Conn c(port);
  return c.request("POST", path, body);
}

struct Json {
  cJSON* j;
  explicit Json(const std::string& s) : j(cJSON_ParseWithLength(s.data(), s.size())) {}
  ~Json() { cJSON_Delete(j); }
  Json(const Json&) = delete;
  Json& operator=(const Json&) = delete;
  bool ok() const { return j != nullptr; }
  const cJSON* at(const char* path) const {  // dotted path
    const cJSON* cur = j;
    std::string p = path;
    std::size_t start = 0;
    while (cur) {
      const std::size_t dot = p.find('.', start);
      cur = cJSON_GetObjectItemCaseSensitive(cur, p.substr(start, dot - start).c_str());
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    return cur;
  }
  std::string str(const char* path) const {
    const cJSON* v = at(path);
    return cJSON_IsString(v) ? v->valuestring : "";
  }
  double num(const char* path) const {
    const cJSON* v = at(path);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
  }
};

inline Options fast_options() {
  Options o;
  o.slow_ms = 300;
  o.refuse_ms = 150;
  o.retry_after_s = 1;
  return o;
}


}  // namespace simtest
