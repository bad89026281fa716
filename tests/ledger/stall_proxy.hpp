// A TCP proxy on loopback between the ledger and PostgreSQL that can stall
// like a paused or partitioned server, and that reads the PostgreSQL
// protocol from the client far enough to hold back or answer-drop one
// COMMIT: the faults a ledger must survive within its time bound.
//
//   pass                   forward everything
//   stall                  forward nothing, either way, on every connection
//                          (new ones included): a SIGSTOPped server, a
//                          black-holed network; connections stay open
//   hold_next_commit       the next COMMIT (and what follows it on that
//                          connection) never reaches the server; when the
//                          client gives up and closes, the server side is
//                          closed too (the server rolls back)
//   hold_next_commit_open  the same, but the server side stays open: the
//                          transaction stays in progress on the server
//   drop_next_commit_reply the next COMMIT reaches the server (it commits),
//                          and no answer on that connection reaches the client
//
// Test-only: one thread per connection, blocking sends of small messages.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace ledger_test {

class StallProxy {
 public:
  enum class Commit { pass, hold, hold_open, drop_reply };

  explicit StallProxy(int upstream_port) : upstream_port_(upstream_port) {
    listen_ = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listen_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(listen_, 64) != 0)
      throw std::runtime_error("stall proxy: cannot listen");
    socklen_t len = sizeof a;
    getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~StallProxy() {
    stop_ = true;
    acceptor_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& t : pumps_) t.join();
    close(listen_);
  }
  StallProxy(const StallProxy&) = delete;
  StallProxy& operator=(const StallProxy&) = delete;

  int port() const { return port_; }
  void stall(bool on) { stalled_ = on; }
  // The next COMMIT seen on any connection meets `c`; later ones pass.
  void next_commit(Commit c) { next_commit_ = static_cast<int>(c); }
  int commits_seen() const { return commits_seen_; }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int c = accept(listen_, nullptr, nullptr);
      if (c < 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      pumps_.emplace_back([this, c] { pump(c); });
    }
  }

  int connect_upstream() const {
    const int u = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(upstream_port_));
    if (connect(u, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      close(u);
      return -1;
    }
    no_delay(u);
    return u;
  }

  // Small messages go out at once, as they would without a proxy.
  static void no_delay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }

  static bool send_all(int fd, const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  static uint32_t be32(const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return ntohl(v);
  }

  // Whether the complete message `m` (type byte first) is a COMMIT: a
  // simple query, or the Parse of an extended-protocol one.
  static bool is_commit(const std::string& m) {
    if (m.empty()) return false;
    std::string body = m.substr(5);
    if (m[0] == 'Q') return body.rfind("COMMIT", 0) == 0;
    if (m[0] == 'P') {
      const size_t name_end = body.find('\0');
      return name_end != std::string::npos && body.compare(name_end + 1, 6, "COMMIT") == 0 &&
             (body.size() <= name_end + 7 || body[name_end + 7] == '\0');
    }
    return false;
  }

  void pump(int client) {
    const int server = connect_upstream();
    if (server < 0) {
      close(client);
      return;
    }
    no_delay(client);
    std::string from_client;
    bool startup = true;     // untyped messages until the startup packet
    bool held = false;       // client -> server blocked from a COMMIT on
    bool keep_open = false;  // while held: keep the server side open when the client leaves
    bool muted = false;      // server -> client dropped
    char buf[16384];
    while (!stop_) {
      if (stalled_ && !held) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (poll(p, 2, 20) <= 0) continue;
      if (p[0].revents) {
        const ssize_t n = recv(client, buf, sizeof buf, 0);
        if (n <= 0) {
          if (held && keep_open) {
            // The client is gone; the server keeps waiting inside the
            // transaction until the test ends (or its own timeout).
            close(client);
            client = -1;
            while (!stop_) {
              pollfd q{server, POLLIN, 0};
              if (poll(&q, 1, 20) > 0 && recv(server, buf, sizeof buf, 0) <= 0) break;
            }
          }
          break;
        }
        from_client.append(buf, static_cast<size_t>(n));
        // Forward every complete message, unless held, in one send.
        std::string out;
        bool failed = false;
        for (;;) {
          size_t len = 0;
          if (startup) {
            if (from_client.size() < 8) break;
            len = be32(from_client.data());
          } else {
            if (from_client.size() < 5) break;
            len = 1 + be32(from_client.data() + 1);
          }
          if (from_client.size() < len) break;
          const std::string m = from_client.substr(0, len);
          from_client.erase(0, len);
          if (startup) {
            const uint32_t code = be32(m.data() + 4);
            startup = code == 80877103u || code == 80877104u;  // SSLRequest, GSSENCRequest: more to come
          } else if (!held && is_commit(m)) {
            ++commits_seen_;
            const int what = next_commit_.exchange(static_cast<int>(Commit::pass));
            if (what == static_cast<int>(Commit::hold) || what == static_cast<int>(Commit::hold_open)) {
              held = true;
              keep_open = what == static_cast<int>(Commit::hold_open);
            } else if (what == static_cast<int>(Commit::drop_reply)) {
              muted = true;
            }
          }
          if (held) continue;  // dropped: never reaches the server
          out += m;
        }
        if (!out.empty() && !send_all(server, out.data(), out.size())) failed = true;
        if (failed) break;
      }
      if (p[1].revents) {
        const ssize_t n = recv(server, buf, sizeof buf, 0);
        if (n <= 0) break;
        if (!muted && !held && !send_all(client, buf, static_cast<size_t>(n))) break;
      }
    }
    if (client >= 0) close(client);
    close(server);
  }

  const int upstream_port_;
  int listen_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> stalled_{false};
  std::atomic<int> next_commit_{0};
  std::atomic<int> commits_seen_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::list<std::thread> pumps_;
};

}  // namespace ledger_test
