// A raw-socket provider for answers the simulator never gives: it listens on
// 127.0.0.1:0, reads one request per connection, writes what the handler
// returns (nothing: the connection closes after the request was read), and
// records every request it read.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace payretry_test {

struct RawRequest {
  std::string head, body;
  std::string method() const { return head.substr(0, head.find(' ')); }
};

class RawServer {
 public:
  using Handler = std::function<std::string(const RawRequest&)>;
  explicit RawServer(Handler h) : handler_(std::move(h)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("raw server: cannot listen");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~RawServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<RawRequest> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      serve(c);
      ::close(c);
    }
  }
  void serve(int c) {
    timeval tv{2, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    std::string in;
    char buf[16384];
    size_t head_end = std::string::npos, want = 0;
    for (;;) {
      if (head_end == std::string::npos && (head_end = in.find("\r\n\r\n")) != std::string::npos) {
        std::string lower = in.substr(0, head_end);
        for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        const size_t cl = lower.find("\ncontent-length:");
        if (cl != std::string::npos) want = std::stoul(lower.substr(cl + 16));
      }
      if (head_end != std::string::npos && in.size() >= head_end + 4 + want) break;
      const long n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
    RawRequest r{in.substr(0, head_end), in.substr(head_end + 4, want)};
    {
      std::lock_guard<std::mutex> l(mu_);
      requests_.push_back(r);
    }
    const std::string out = handler_(r);
    for (size_t at = 0; at < out.size();) {
      const long n = ::send(c, out.data() + at, out.size() - at, MSG_NOSIGNAL);
      if (n <= 0) break;  // the client stopped reading (a body too large): fine
      at += static_cast<size_t>(n);
    }
    ::shutdown(c, SHUT_WR);
  }

  Handler handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<RawRequest> requests_;
  std::thread thread_;
};

inline std::string http(int status, const std::string& body, const std::string& headers = "") {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n" + headers + "\r\n" + body;
}

}  // namespace payretry_test
