// A purpose-built hostile HTTP(S) server on 127.0.0.1:0: it reads one request
// per connection and hands the socket to the test's handler, which may answer
// anything (a gigabyte, a byte a second, a redirect, garbage headers). Every
// request head is recorded, so a test can prove what reached the provider.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace payretry_hostile {

// One accepted connection, plain or TLS.
class Conn {
 public:
  Conn(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  // Writes all of `data`; false once the peer is gone.
  bool write(std::string_view data) {
    while (!data.empty()) {
      const long n = ssl_ ? SSL_write(ssl_, data.data(), static_cast<int>(data.size()))
                          : ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      written_ += static_cast<size_t>(n);
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  long read(char* buf, size_t n) {
    return ssl_ ? SSL_read(ssl_, buf, static_cast<int>(n)) : ::recv(fd_, buf, n, 0);
  }
  size_t written() const { return written_; }
  // The socket, for a handler that waits on it itself (a plain connection:
  // with TLS, read() is the way in).
  int fd() const { return fd_; }

 private:
  int fd_;
  SSL* ssl_;
  size_t written_ = 0;
};

struct Request {
  std::string head;  // request line and headers
  std::string body;
  std::string target() const {
    const size_t a = head.find(' '), b = head.find(' ', a + 1);
    return head.substr(a + 1, b - a - 1);
  }
};

// A socket listening on 127.0.0.1, at a port the kernel picks (`port`),
// with `backlog` as listen()'s; throws when it cannot.
inline int listen_on_loopback(int backlog, int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("hostile server: cannot listen on 127.0.0.1");
  }
  port = ntohs(a.sin_port);
  return fd;
}

class HostileServer {
 public:
  using Handler = std::function<void(Conn&, const Request&, const std::atomic<bool>& stopping)>;

  explicit HostileServer(Handler h, SSL_CTX* tls = nullptr) : handler_(std::move(h)), tls_(tls) {
    fd_ = listen_on_loopback(64, port_);
    thread_ = std::thread([this] { loop(); });
  }
  ~HostileServer() {
    stopping_ = true;
    thread_.join();
    ::close(fd_);
  }
  HostileServer(const HostileServer&) = delete;
  HostileServer& operator=(const HostileServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_); }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  int connections() const { return connections_; }
  size_t bytes_written() const { return written_; }

 private:
  void loop() {
    while (!stopping_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      ++connections_;
      serve(c);
      ::close(c);
    }
  }

  void serve(int c) {
    timeval tv{5, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    SSL* ssl = nullptr;
    if (tls_) {
      ssl = SSL_new(tls_);
      SSL_set_fd(ssl, c);
      if (SSL_accept(ssl) != 1) {  // the client refused our certificate
        SSL_free(ssl);
        return;
      }
    }
    Conn conn(c, ssl);
    Request req;
    std::string in;
    char buf[65536];
    size_t head_end = std::string::npos;
    size_t want = 0;
    for (;;) {
      if (head_end == std::string::npos) {
        head_end = in.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          req.head = in.substr(0, head_end);
          const size_t cl = lower(req.head).find("\ncontent-length:");
          if (cl != std::string::npos) want = std::stoul(req.head.substr(cl + 16));
        }
      }
      if (head_end != std::string::npos && in.size() >= head_end + 4 + want) break;
      const long n = conn.read(buf, sizeof buf);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
    }
    if (head_end != std::string::npos) {
      req.body = in.substr(head_end + 4, want);
      {
        std::lock_guard<std::mutex> l(mu_);
        requests_.push_back(req);
      }
      handler_(conn, req, stopping_);
    }
    written_ += conn.written();
    if (ssl) {
      SSL_shutdown(ssl);
      SSL_free(ssl);
    }
  }

  static std::string lower(std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  }

  Handler handler_;
  SSL_CTX* tls_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::atomic<size_t> written_{0};
  std::mutex mu_;
  std::vector<Request> requests_;
  std::thread thread_;
};

// A complete response with a Content-Length.
inline std::string response(int status, std::string_view body, std::string_view extra_headers = "") {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n" + std::string(extra_headers) + "\r\n" +
         std::string(body);
}

}  // namespace payretry_hostile
