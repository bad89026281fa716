#include "demo_webhooks.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "common.hpp"

namespace cli {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads until the head is complete and Content-Length bytes of body follow
// (the simulator sends one notification per connection); false on a
// malformed or cut request, or one slower than 5 s.
bool read_request(int fd, std::string& head, std::string& body) {
  std::string in;
  char buf[8192];
  size_t need = std::string::npos;
  for (;;) {
    if (need == std::string::npos) {
      const size_t end = in.find("\r\n\r\n");
      if (end != std::string::npos) {
        head = in.substr(0, end);
        size_t len = 0;
        for (size_t p = 0; (p = head.find("\r\n", p)) != std::string::npos;) {
          p += 2;
          if (strncasecmp(head.c_str() + p, "content-length:", 15) == 0) len = std::strtoul(head.c_str() + p + 15, nullptr, 10);
        }
        need = end + 4 + len;
      }
    }
    if (need != std::string::npos && in.size() >= need) {
      body = in.substr(head.size() + 4, need - head.size() - 4);
      return true;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return false;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    in.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

DemoHookServer::DemoHookServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 64) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw Failure(kExitInternal, "the demo's notification endpoint cannot listen on loopback");
  }
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { loop(); });
}

DemoHookServer::~DemoHookServer() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
}

void DemoHookServer::set_client(const pay::client* client) {
  std::lock_guard<std::mutex> lock(mu_);
  client_ = client;
}

std::string DemoHookServer::url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hooks"; }

void DemoHookServer::loop() {
  while (!stop_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) serve(fd);
  }
}

void DemoHookServer::serve(int raw) {
  Fd fd{raw};
  std::string head, body;
  if (!read_request(fd.fd, head, body)) return;
  // The request line, then "Name: value" headers, as the server received them.
  std::vector<std::pair<std::string, std::string>> headers;
  size_t eol = head.find("\r\n");
  const std::string line = head.substr(0, eol);
  const size_t sp1 = line.find(' '), sp2 = line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) return;
  const std::string method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  while (eol != std::string::npos) {
    const size_t start = eol + 2;
    eol = head.find("\r\n", start);
    const std::string h = head.substr(start, eol == std::string::npos ? std::string::npos : eol - start);
    const size_t colon = h.find(':');
    if (colon == std::string::npos) continue;
    size_t v = colon + 1;
    while (v < h.size() && (h[v] == ' ' || h[v] == '\t')) ++v;
    headers.emplace_back(h.substr(0, colon), h.substr(v));
  }
  pay::webhook_reply reply;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!client_) {
      reply.status = 503;
    } else {
      try {
        reply = client_->apply_webhook(method, "http://127.0.0.1:" + std::to_string(port_) + target, headers, body);
      } catch (const pay::error& e) {
        reply.status = 500;
        reply.body = e.what();
      }
    }
  }
  (reply.status >= 200 && reply.status < 300 ? accepted_ : refused_).fetch_add(1);
  std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " OK\r\nConnection: close\r\nContent-Length: " +
                    std::to_string(reply.body.size()) + "\r\n";
  if (!reply.content_type.empty()) out += "Content-Type: " + reply.content_type + "\r\n";
  out += "\r\n" + reply.body;
  for (size_t sent = 0; sent < out.size();) {
    const ssize_t n = ::send(fd.fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace cli
