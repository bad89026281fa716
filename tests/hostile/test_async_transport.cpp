// The concurrent engine's libcurl transport on its own, against real loopback
// sockets: it is driven by socket events and libcurl's timer (epoll and an
// eventfd), so a wait must end when another thread wakes it, a transfer with
// no socket activity must still end at its timeout, and an answer must be
// read whichever wait reported it.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "hostile_server.hpp"
#include "transport_curl_multi.hpp"

namespace {

using payretry::AsyncTransport;
using payretry::CurlMultiTransport;
using payretry::CurlOptions;
using payretry::HttpRequest;
using payretry::TransportFailure;
using payretry_hostile::Conn;
using payretry_hostile::HostileServer;
using payretry_hostile::Request;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

HttpRequest post(const std::string& url, int64_t timeout_ms) {
  HttpRequest r;
  r.url = url + "/v1/payments";
  r.headers = {{"Content-Type", "application/x-www-form-urlencoded"}, {"Idempotency-Key", "k-transport-1"}};
  r.body = "amount=100&currency=eur";
  r.connect_timeout_ms = timeout_ms;
  r.timeout_ms = timeout_ms;
  return r;
}

// A HostileServer handler that keeps each connection open for the next
// request (HTTP/1.1 keep-alive), answering every request at once, until the
// test asks it to close the connection it holds.
class KeepAlive {
 public:
  void operator()(Conn& c, const Request&, const std::atomic<bool>& stopping) {
    static const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    ++requests_;  // the one HostileServer read
    if (!c.write(answer)) return finished();
    std::string in;
    char buf[4096];
    while (!stopping && !close_) {
      pollfd p{c.fd(), POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0) continue;
      const long n = c.read(buf, sizeof buf);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
      for (size_t end; (end = in.find("\r\n\r\n")) != std::string::npos;) {
        const size_t cl = in.find("Content-Length: ");
        const size_t body = cl < end ? std::stoul(in.substr(cl + 16)) : 0;
        if (in.size() < end + 4 + body) break;
        in.erase(0, end + 4 + body);
        ++requests_;
        if (!c.write(answer)) return finished();
      }
    }
    finished();
  }
  int requests() const { return requests_; }
  // Closes the connection it holds, and returns once it has and the close
  // has had time to reach the client: a request sent on the connection
  // before its FIN arrived would fail, and this test is not about that race.
  void close_connection() {
    const int closed = closed_;
    close_ = true;
    const auto t0 = Clock::now();
    while (closed_ == closed && seconds_since(t0) < 5) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

 private:
  void finished() {
    close_ = false;
    ++closed_;  // HostileServer closes the socket as this handler returns
  }
  std::atomic<bool> close_{false};
  std::atomic<int> requests_{0}, closed_{0};
};

// Turns the transport the way the engine's loop does until `want` transfers
// are done, for at most `limit_s` seconds.
std::vector<AsyncTransport::Done> run(CurlMultiTransport& t, size_t want, double limit_s) {
  std::vector<AsyncTransport::Done> done;
  const auto t0 = Clock::now();
  while (done.size() < want && seconds_since(t0) < limit_s) {
    t.perform(done);
    if (done.size() >= want) break;
    const int64_t next = t.next_timeout_ms();
    t.wait(next < 0 ? 200 : std::min<int64_t>(next, 200));
  }
  return done;
}

// Starts one request tagged `tag` and turns the transport until it ends.
std::vector<AsyncTransport::Done> send_one(CurlMultiTransport& t, const HttpRequest& r, int& tag, double limit_s = 20) {
  t.start(r, &tag);
  return run(t, 1, limit_s);
}

TEST(AsyncTransport, a_wakeup_from_another_thread_ends_a_wait) {
  CurlMultiTransport t(CurlOptions{}, 4);
  const auto t0 = Clock::now();
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    t.wakeup();
  });
  t.wait(30000);
  waker.join();
  EXPECT_LT(seconds_since(t0), 10.0) << "the wait ran on after wakeup()";
}

TEST(AsyncTransport, a_wakeup_sent_before_the_wait_is_kept_for_it) {
  CurlMultiTransport t(CurlOptions{}, 4);
  t.wakeup();
  const auto t0 = Clock::now();
  t.wait(30000);
  EXPECT_LT(seconds_since(t0), 10.0) << "a wake-up sent before the wait was lost";
  // Read once: the next wait sleeps its full (short) time again.
  const auto t1 = Clock::now();
  t.wait(300);
  EXPECT_GE(seconds_since(t1), 0.25);
}

TEST(AsyncTransport, an_answer_is_read_whole_with_the_request_as_sent) {
  HostileServer server([](Conn& c, const Request&, const std::atomic<bool>&) {
    c.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"id\":\"pi_one\"}");
  });
  CurlMultiTransport t(CurlOptions{}, 4);
  const HttpRequest r = post(server.url(), 5000);
  int tag = 0;
  auto done = send_one(t, r, tag);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].tag, &tag);
  EXPECT_EQ(done[0].result.failure, TransportFailure::none);
  EXPECT_EQ(done[0].result.response.status, 200);
  EXPECT_EQ(done[0].result.response.body, "{\"id\":\"pi_one\"}");
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_NE(server.requests()[0].head.find("Idempotency-Key: k-transport-1"), std::string::npos);
  EXPECT_EQ(server.requests()[0].body, "amount=100&currency=eur");
}

// libcurl reads an answer through a receive buffer of 1 KB (curl_transfer.cpp):
// a real provider's answer (a PaymentIntent is 2-4 KB, with about 1 KB of
// headers) takes several reads, and arrives here in pieces of uneven size
// that straddle the buffer's edges. Every byte must come through, in order,
// headers included.
TEST(AsyncTransport, an_answer_many_times_the_receive_buffer_is_read_whole) {
  std::string body = "{\"id\":\"pi_big\",\"padding\":\"";
  for (int i = 0; body.size() < 40000; ++i) body += static_cast<char>('a' + (i * 7) % 26);
  body += "\"}";
  const std::string long_header(1500, 'h');
  HostileServer server([&](Conn& c, const Request&, const std::atomic<bool>&) {
    const std::string all = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Long: " + long_header +
                            "\r\nRequest-Id: req_after_the_long_one\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
    for (size_t at = 0, piece = 700; at < all.size(); at += piece, piece = piece == 700 ? 1900 : 700) {
      if (!c.write(all.substr(at, piece))) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  CurlMultiTransport t(CurlOptions{}, 4);
  const HttpRequest r = post(server.url(), 5000);
  int tag = 0;
  auto done = send_one(t, r, tag);
  ASSERT_EQ(done.size(), 1u);
  ASSERT_EQ(done[0].result.failure, TransportFailure::none) << done[0].result.error_text;
  EXPECT_EQ(done[0].result.response.status, 200);
  EXPECT_TRUE(done[0].result.response.body == body) << "the body came back altered, "
                                                    << done[0].result.response.body.size() << " bytes";
  const std::string* x_long = done[0].result.response.header("X-Long");
  ASSERT_NE(x_long, nullptr);
  EXPECT_EQ(*x_long, long_header);
  const std::string* request_id = done[0].result.response.header("Request-Id");
  ASSERT_NE(request_id, nullptr);
  EXPECT_EQ(*request_id, "req_after_the_long_one");
}

// No byte comes back, so no socket event ever reports this transfer: only
// libcurl's timer can end it, and it must, as a timeout after the request
// was written (the provider may have acted on it).
TEST(AsyncTransport, a_provider_that_never_answers_ends_at_the_timeout_with_the_request_written) {
  HostileServer server([](Conn&, const Request&, const std::atomic<bool>& stopping) {
    const auto t0 = Clock::now();
    while (!stopping && seconds_since(t0) < 3) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  CurlMultiTransport t(CurlOptions{}, 4);
  const HttpRequest r = post(server.url(), 400);
  int tag = 0;
  const auto t0 = Clock::now();
  auto done = send_one(t, r, tag);
  ASSERT_EQ(done.size(), 1u) << "the transfer never ended";
  EXPECT_EQ(done[0].result.failure, TransportFailure::timeout);
  EXPECT_TRUE(done[0].result.request_written);
  EXPECT_LT(seconds_since(t0), 2.5) << "ended by the server closing, not by the 400 ms timeout";
  EXPECT_EQ(server.requests().size(), 1u);
}

// A request whose gate says no never leaves, however it was woken.
TEST(AsyncTransport, a_gate_that_refuses_sends_nothing) {
  HostileServer server([](Conn& c, const Request&, const std::atomic<bool>&) {
    c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
  });
  CurlMultiTransport t(CurlOptions{}, 4);
  HttpRequest r = post(server.url(), 5000);
  r.may_start = [] { return std::string("the payment's deadline passed before the request could be sent"); };
  int tag = 0;
  auto done = send_one(t, r, tag);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].result.failure, TransportFailure::not_started);
  EXPECT_FALSE(done[0].result.request_written);
  EXPECT_TRUE(server.requests().empty());
}

// One connection (max_connections 1), held 1 s by the first request: the
// second waits in line that long. Its attempt timeout (400 ms) counts from
// its own connection's start, not from when it joined the line: nothing of
// it had left while it waited.
TEST(AsyncTransport, the_wait_for_a_free_connection_is_not_charged_to_the_attempt) {
  HostileServer server([](Conn& c, const Request& r, const std::atomic<bool>&) {
    if (r.head.find("Idempotency-Key: k-first") != std::string::npos)
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
  });
  CurlMultiTransport t(CurlOptions{}, 1);
  HttpRequest first = post(server.url(), 5000);
  first.headers[1].second = "k-first";
  HttpRequest second = post(server.url(), 400);
  second.wait_limit_ms = 5000;
  int a = 0, b = 0;
  t.start(first, &a);
  t.start(second, &b);
  auto done = run(t, 2, 20);
  ASSERT_EQ(done.size(), 2u);
  for (const auto& d : done) {
    EXPECT_EQ(d.result.failure, TransportFailure::none) << (d.tag == &b ? "second: " : "first: ") << d.result.error_text;
    EXPECT_EQ(d.result.response.status, 200);
  }
  EXPECT_EQ(server.requests().size(), 2u);
}

// A request still in line when its wait limit (less the send margin) runs
// out ends there: nothing written, the server never sees it, and the
// transfer ahead of it, on the one connection, is not disturbed.
TEST(AsyncTransport, a_request_whose_wait_limit_ends_in_line_is_ended_there_with_nothing_sent) {
  HostileServer server([](Conn& c, const Request&, const std::atomic<bool>&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
  });
  CurlMultiTransport t(CurlOptions{}, 1);
  const HttpRequest first = post(server.url(), 5000);
  HttpRequest second = post(server.url(), 5000);
  second.wait_limit_ms = 700;
  second.send_margin_ms = 200;
  int a = 0, b = 0;
  const auto t0 = Clock::now();
  t.start(first, &a);
  t.start(second, &b);
  auto done = run(t, 1, 20);
  const double ended_after = seconds_since(t0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].tag, &b);
  EXPECT_EQ(done[0].result.failure, TransportFailure::not_started) << done[0].result.error_text;
  EXPECT_FALSE(done[0].result.request_written);
  EXPECT_GE(ended_after, 0.45);
  EXPECT_LT(ended_after, 1.2) << "it waited for the connection instead of its own limit";
  auto rest = run(t, 1, 20);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].tag, &a);
  EXPECT_EQ(rest[0].result.failure, TransportFailure::none) << rest[0].result.error_text;
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.connections(), 1);
}

// With a wait limit longer than the attempt, a request on the wire that
// gets no answer still ends at its attempt timeout, as written.
TEST(AsyncTransport, a_request_on_the_wire_ends_at_its_attempt_timeout_not_its_wait_limit) {
  HostileServer server([](Conn&, const Request&, const std::atomic<bool>& stopping) {
    const auto t0 = Clock::now();
    while (!stopping && seconds_since(t0) < 4) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  CurlMultiTransport t(CurlOptions{}, 4);
  HttpRequest r = post(server.url(), 400);
  r.wait_limit_ms = 10000;
  int tag = 0;
  const auto t0 = Clock::now();
  auto done = send_one(t, r, tag);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].result.failure, TransportFailure::timeout);
  EXPECT_TRUE(done[0].result.request_written);
  EXPECT_LT(seconds_since(t0), 2.5) << "ended by the server, not by the 400 ms attempt timeout";
}

// A kept-alive connection carries one request after another; between two,
// libcurl does not watch its socket, and the transport keeps it in its epoll
// set rather than take it out and put it back for each request. When the
// server closes that idle connection, the report must take it out of the
// set: left in, the level-triggered report would end every later wait at
// once, a busy loop. The next request then opens a new connection, which
// may well get the old one's socket number, and must be watched as new.
TEST(AsyncTransport, a_kept_alive_connection_carries_each_request_and_its_close_while_idle_is_noticed) {
  KeepAlive keep_alive;
  HostileServer server(std::ref(keep_alive));
  CurlMultiTransport t(CurlOptions{}, 1);
  const auto t0 = Clock::now();
  for (int i = 0; i < 20; ++i) {
    const HttpRequest r = post(server.url(), 5000);
    int tag = 0;
    auto done = send_one(t, r, tag, 10);
    ASSERT_EQ(done.size(), 1u) << "request " << i << " never ended";
    EXPECT_EQ(done[0].result.failure, TransportFailure::none) << "request " << i << ": " << done[0].result.error_text;
    EXPECT_EQ(done[0].result.response.status, 200);
  }
  EXPECT_LT(seconds_since(t0), 4.0) << "a request waited for its timeout instead of its answer";
  EXPECT_EQ(server.connections(), 1) << "the connection was not kept alive";
  EXPECT_EQ(keep_alive.requests(), 20);

  keep_alive.close_connection();
  const auto t1 = Clock::now();
  for (int i = 0; i < 4; ++i) t.wait(200);  // the first may end at the close's report; no later one may
  EXPECT_GE(seconds_since(t1), 0.55) << "waits end at once: the closed idle connection is still reported";

  for (int i = 0; i < 3; ++i) {
    const HttpRequest r = post(server.url(), 5000);
    int tag = 0;
    const auto t2 = Clock::now();
    auto done = send_one(t, r, tag, 10);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].result.failure, TransportFailure::none) << done[0].result.error_text;
    EXPECT_EQ(done[0].result.response.status, 200);
    EXPECT_LT(seconds_since(t2), 2.0) << "the new connection's socket was not watched";
    if (i == 0) keep_alive.close_connection();  // and once more: a second new connection
  }
  EXPECT_EQ(server.connections(), 3);
  EXPECT_EQ(keep_alive.requests(), 23);
}

// Fills the accept queue of a listener on 127.0.0.1:port that no one
// accepts from: connects until one is not taken within 300 ms. The kernel
// then drops every further SYN, so a connect to it stays in SYN_SENT,
// retransmitting, until the client gives up. Like a provider whose listen
// backlog a burst has overflowed. False if 32 connects did not fill it.
bool fill_accept_queue(int port, std::vector<int>& fillers) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  for (int i = 0; i < 32; ++i) {
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    (void)::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
    pollfd p{c, POLLOUT, 0};
    if (::poll(&p, 1, 300) <= 0) {
      ::close(c);  // in SYN_SENT: not counted against the client under test
      return true;
    }
    fillers.push_back(c);
  }
  return false;
}

// Connects to 127.0.0.1:port in SYN_SENT now, asked of the kernel through
// sock_diag with the state and the port as the filter. (Not /proc/net/tcp:
// that table is read a page at a time, and while other processes open and
// close sockets a read can list one socket twice; a test running beside
// this one made 3 connects read as 5 or 6.) The kernel filters the dump, so
// its answer is a few entries in one message, taken in one walk.
int connects_waiting(int port) {
  struct Socket {
    int fd;
    ~Socket() {
      if (fd >= 0) ::close(fd);
    }
  } nl{::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)};
  if (nl.fd < 0) return -1;
  const uint16_t dport = htons(static_cast<uint16_t>(port));
  struct {
    nlmsghdr nh;
    inet_diag_req_v2 req;
  } ask{};
  ask.nh.nlmsg_len = sizeof ask;
  ask.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  ask.req.sdiag_family = AF_INET;
  ask.req.sdiag_protocol = IPPROTO_TCP;
  ask.req.idiag_states = 1u << 2;  // TCP_SYN_SENT
  ask.req.id.idiag_dport = dport;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(nl.fd, &ask, sizeof ask, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0) return -1;
  int n = 0;
  alignas(nlmsghdr) char buf[16384];
  for (ssize_t got; (got = ::recv(nl.fd, buf, sizeof buf, 0)) > 0;) {
    auto left = static_cast<unsigned>(got);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) return n;
      if (h->nlmsg_type == NLMSG_ERROR) return -1;
      const auto* m = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
      if (m->idiag_state == 2 && m->id.idiag_dport == dport) ++n;
    }
  }
  return -1;
}

// A listener whose accept queue is full and never drained.
class FullBacklog {
 public:
  FullBacklog() {
    fd_ = payretry_hostile::listen_on_loopback(0, port_);
    full_ = fill_accept_queue(port_, fillers_);
  }
  ~FullBacklog() {
    for (int c : fillers_) ::close(c);
    ::close(fd_);
  }
  bool full() const { return full_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connects_waiting() const { return ::connects_waiting(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
  bool full_ = false;
  std::vector<int> fillers_;
};

// A provider that answers n requests on n kept-alive connections, then
// takes no new connection. It answers none of the n until all have arrived,
// so the client must open n connections; each then stays open, idle, until
// close_connections() closes them from the provider's side (as a server's
// keep-alive timeout does). It accepts only those n: once fill() has filled
// its accept queue, every later connect waits in SYN_SENT.
class KeptPoolThenFullBacklog {
 public:
  explicit KeptPoolThenFullBacklog(int n) : n_(n) {
    fd_ = payretry_hostile::listen_on_loopback(n, port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~KeptPoolThenFullBacklog() {
    stopping_ = true;
    thread_.join();
    for (int c : fillers_) ::close(c);
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int answered() const { return answered_; }
  int requests() const { return requests_; }
  void close_connections() {
    close_ = true;
    const auto t0 = Clock::now();
    while (!closed_ && seconds_since(t0) < 5) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  bool fill() { return fill_accept_queue(port_, fillers_); }
  int connects_waiting() const { return ::connects_waiting(port_); }

 private:
  void serve() {
    static const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    std::vector<int> conns;
    std::vector<std::string> in;
    std::vector<bool> got;
    bool answered = false;
    while (!stopping_) {
      if (close_ && !closed_) {
        for (int c : conns) ::close(c);
        conns.clear();
        closed_ = true;
      }
      std::vector<pollfd> p;
      const bool accepting = static_cast<int>(conns.size()) < n_ && !closed_;
      if (accepting) p.push_back({fd_, POLLIN, 0});
      for (int c : conns) p.push_back({c, POLLIN, 0});
      if (::poll(p.data(), p.size(), 10) <= 0) continue;
      for (size_t i = 0; i < p.size(); ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        if (accepting && i == 0) {
          const int c = ::accept(fd_, nullptr, nullptr);
          if (c >= 0) {
            conns.push_back(c);
            in.emplace_back();
            got.push_back(false);
          }
          continue;
        }
        const size_t k = i - (accepting ? 1 : 0);
        char buf[4096];
        const long r = ::read(conns[k], buf, sizeof buf);
        if (r <= 0) continue;  // the client closed it: kept until the end, answered no more
        in[k].append(buf, static_cast<size_t>(r));
        for (size_t end; (end = in[k].find("\r\n\r\n")) != std::string::npos;) {
          const size_t cl = in[k].find("Content-Length: ");
          const size_t body = cl < end ? std::stoul(in[k].substr(cl + 16)) : 0;
          if (in[k].size() < end + 4 + body) break;
          in[k].erase(0, end + 4 + body);
          got[k] = true;
          ++requests_;
        }
      }
      if (!answered && static_cast<int>(conns.size()) == n_ && std::count(got.begin(), got.end(), true) == n_) {
        for (int c : conns) (void)!::write(c, answer.data(), answer.size());
        answered = true;
        answered_ = n_;
      }
    }
    for (int c : conns) ::close(c);
  }

  const int n_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::vector<int> fillers_;
  std::atomic<bool> stopping_{false}, close_{false}, closed_{false};
  std::atomic<int> answered_{0}, requests_{0};
};

// Turns the transport the way the engine's loop does for `seconds` (or
// until `want` transfers are done), reading count() after every turn of at
// most 20 ms: the most it read.
int most_seen_while_turning(CurlMultiTransport& t, std::vector<AsyncTransport::Done>& done, size_t want,
                            double seconds, const std::function<int()>& count) {
  int most = 0;
  const auto t0 = Clock::now();
  while (done.size() < want && seconds_since(t0) < seconds) {
    t.perform(done);
    const int64_t next = t.next_timeout_ms();
    t.wait(next < 0 ? 20 : std::min<int64_t>(next, 20));
    most = std::max(most, count());
  }
  return most;
}

// Eight requests on a cold pool of eight connections, into a provider that
// takes no new connection: with max_opening 3, three connects go out and
// five requests wait in line, nothing sent; with no bound, all eight SYNs
// go out at once (the storm the bound is for). Every request ends with
// nothing written, whether its connect timed out or it never left the line.
TEST(AsyncTransport, no_more_connections_are_opened_at_once_than_max_opening) {
  FullBacklog provider;
  ASSERT_TRUE(provider.full()) << "the listen queue did not fill";
  for (const long max_opening : {3L, 0L}) {
    SCOPED_TRACE("max_opening " + std::to_string(max_opening));
    CurlMultiTransport t(CurlOptions{}, 8, max_opening);
    HttpRequest r = post(provider.url(), 1500);
    r.wait_limit_ms = 2000;
    r.send_margin_ms = 100;
    int tags[8] = {};
    for (int& tag : tags) t.start(r, &tag);
    auto done = run(t, 8, 0.5);  // long enough for every allowed SYN to go out; nothing ends this early
    EXPECT_TRUE(done.empty());
    EXPECT_EQ(provider.connects_waiting(), max_opening > 0 ? max_opening : 8);
    auto rest = run(t, 8 - done.size(), 20);
    done.insert(done.end(), rest.begin(), rest.end());
    ASSERT_EQ(done.size(), 8u);
    for (const auto& d : done) {
      EXPECT_NE(d.result.failure, TransportFailure::none);
      EXPECT_FALSE(d.result.request_written) << d.result.error_text;
    }
  }
}

// The bound holds past the first connects' timeouts: sixteen requests whose
// connects time out after 300 ms each, into a provider that takes no new
// connection, go out three at a time, round after round. (libcurl 7.88
// closes a socket whose connect timed out without the close callback: a
// count of open sockets would take them for idle connections and let the
// third round out six at once.)
TEST(AsyncTransport, the_bound_on_connections_being_opened_holds_after_connects_time_out) {
  FullBacklog provider;
  ASSERT_TRUE(provider.full()) << "the listen queue did not fill";
  CurlMultiTransport t(CurlOptions{}, 16, 3);
  HttpRequest r = post(provider.url(), 300);
  r.wait_limit_ms = 10000;
  r.send_margin_ms = 100;
  int tags[16] = {};
  for (int& tag : tags) t.start(r, &tag);
  std::vector<AsyncTransport::Done> done;
  const int most = most_seen_while_turning(t, done, 16, 30, [&] { return provider.connects_waiting(); });
  EXPECT_EQ(most, 3) << "connects waiting at once, at most";
  ASSERT_EQ(done.size(), 16u);
  for (const auto& d : done) {
    EXPECT_EQ(d.result.failure, TransportFailure::connect_timeout) << d.result.error_text;
    EXPECT_FALSE(d.result.request_written);
  }
}

// Eight requests, each answered on a connection of its own, kept alive.
void open_eight_kept_alive(CurlMultiTransport& t, KeptPoolThenFullBacklog& provider) {
  const HttpRequest first = post(provider.url(), 5000);
  int tags[8] = {};
  for (int& tag : tags) t.start(first, &tag);
  auto done = run(t, 8, 20);
  ASSERT_EQ(done.size(), 8u);
  for (const auto& d : done) ASSERT_EQ(d.result.failure, TransportFailure::none) << d.result.error_text;
}

// Starts a burst of eight requests (connect timeout 400 ms) into the
// provider, now taking no new connection, and turns the transport until
// they end: the most connects it saw waiting at once.
int most_connects_in_a_burst(CurlMultiTransport& t, KeptPoolThenFullBacklog& provider) {
  HttpRequest r = post(provider.url(), 400);
  r.wait_limit_ms = 5000;
  r.send_margin_ms = 100;
  int tags[8] = {};
  for (int& tag : tags) t.start(r, &tag);
  std::vector<AsyncTransport::Done> done;
  const int most = most_seen_while_turning(t, done, 8, 30, [&] { return provider.connects_waiting(); });
  EXPECT_EQ(done.size(), 8u);
  for (const auto& d : done) EXPECT_FALSE(d.result.request_written) << d.result.error_text;
  return most;
}

// Eight idle connections the provider has closed (its keep-alive timeout)
// are not idle connections for the bound: a burst of eight requests, once
// the provider takes no new connection, opens at most three at once.
TEST(AsyncTransport, idle_connections_the_provider_closed_do_not_let_a_burst_past_the_bound) {
  KeptPoolThenFullBacklog provider(8);
  CurlMultiTransport t(CurlOptions{}, 8, 3);
  ASSERT_NO_FATAL_FAILURE(open_eight_kept_alive(t, provider));

  provider.close_connections();
  for (int i = 0; i < 3; ++i) t.wait(100);  // the closes are reported, as while the engine waits for work
  ASSERT_TRUE(provider.fill()) << "the listen queue did not fill";
  EXPECT_EQ(most_connects_in_a_burst(t, provider), 3) << "connects waiting at once, at most";
}

// Nor are idle connections older than libcurl reuses (they are still open,
// but libcurl closes each instead of handing it out).
TEST(AsyncTransport, idle_connections_too_old_to_reuse_do_not_let_a_burst_past_the_bound) {
  KeptPoolThenFullBacklog provider(8);
  CurlOptions options;
  options.max_idle_connection_age_s = 1;  // libcurl reuses none idle for 2 s or more
  CurlMultiTransport t(options, 8, 3);
  ASSERT_NO_FATAL_FAILURE(open_eight_kept_alive(t, provider));

  std::this_thread::sleep_for(std::chrono::milliseconds(2300));
  ASSERT_TRUE(provider.fill()) << "the listen queue did not fill";
  EXPECT_EQ(most_connects_in_a_burst(t, provider), 3) << "connects waiting at once, at most";
}

// Idle connections that are alive and young do take a burst past the bound:
// with eight of them and max_opening 1, eight requests all go out in the
// first turn, none waiting in line for another to be ready.
TEST(AsyncTransport, a_burst_onto_idle_connections_is_not_held_back_by_the_bound) {
  KeptPoolThenFullBacklog provider(8);
  CurlMultiTransport t(CurlOptions{}, 8, 1);
  ASSERT_NO_FATAL_FAILURE(open_eight_kept_alive(t, provider));
  ASSERT_EQ(provider.requests(), 8);

  const HttpRequest r = post(provider.url(), 2000);
  int tags[8] = {};
  for (int& tag : tags) t.start(r, &tag);
  std::vector<AsyncTransport::Done> done;
  t.perform(done);  // one turn: libcurl runs what it was handed
  const auto t0 = Clock::now();
  while (provider.requests() < 16 && seconds_since(t0) < 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(provider.requests(), 16) << "requests sent in the first turn onto 8 idle connections";
  run(t, 8, 10);  // unanswered: they end at their timeout
}

// The bound never stalls the line: with one connection opened at a time,
// twenty requests on a pool of eight, each answered and closed by the
// server, all get their answer.
TEST(AsyncTransport, with_one_connection_opened_at_a_time_every_request_still_gets_through) {
  HostileServer server([](Conn& c, const Request&, const std::atomic<bool>&) {
    c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
  });
  CurlMultiTransport t(CurlOptions{}, 8, 1);
  const HttpRequest r = post(server.url(), 5000);
  int tags[20] = {};
  for (int& tag : tags) t.start(r, &tag);
  auto done = run(t, 20, 30);
  ASSERT_EQ(done.size(), 20u);
  for (const auto& d : done) EXPECT_EQ(d.result.failure, TransportFailure::none) << d.result.error_text;
  EXPECT_EQ(server.requests().size(), 20u);
}

}  // namespace
