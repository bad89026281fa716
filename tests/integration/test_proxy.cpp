// Proxies: a payment (card data, credentials) leaves only through the proxy
// the config names. Without "proxy", the environment's http_proxy,
// HTTP_PROXY, https_proxy, ALL_PROXY ... are ignored (libcurl would follow
// them by itself); with it, every request goes through that proxy and no
// other way. A tiny forwarding proxy on loopback records what reaches it.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sim_fixture.hpp"

namespace payretry_test {
namespace {

// ---- a forwarding HTTP proxy ------------------------------------------------------

int listen_on_loopback(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("cannot listen on loopback");
  *port = ntohs(a.sin_port);
  return fd;
}

// A port on loopback where nothing listens (bound, then closed).
int dead_port() {
  int port = 0;
  close(listen_on_loopback(&port));
  return port;
}

bool send_all(int fd, const std::string& s) {
  for (size_t at = 0; at < s.size();) {
    const ssize_t n = send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

// Reads one HTTP message (head, then a Content-Length body) from `fd` into
// `head` and `body`; `buf` carries bytes read past it. False at EOF/error.
bool read_message(int fd, std::string& buf, std::string& head, std::string& body) {
  char chunk[16384];
  size_t end;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) return false;
    const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
  }
  head = buf.substr(0, end + 4);
  size_t length = 0;
  for (size_t at = head.find("\r\n"); at != std::string::npos && at + 2 < head.size(); at = head.find("\r\n", at + 2)) {
    if (strncasecmp(head.c_str() + at + 2, "Content-Length:", 15) == 0)
      length = std::strtoul(head.c_str() + at + 2 + 15, nullptr, 10);
  }
  while (buf.size() < end + 4 + length) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) return false;
    const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
  }
  body = buf.substr(end + 4, length);
  buf.erase(0, end + 4 + length);
  return true;
}

// Accepts connections on loopback and counts them; each request, which must
// be in absolute form ("POST http://127.0.0.1:PORT/path HTTP/1.1", as a
// client speaks to an HTTP proxy), is recorded and forwarded to that port on
// loopback in origin form, and the answer is relayed back (none if the
// upstream gave none). One request per connection: the proxy closes it after.
class FakeProxy {
 public:
  FakeProxy() {
    fd_ = listen_on_loopback(&port_);
    thread_ = std::thread([this] { accept_loop(); });
  }
  ~FakeProxy() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  FakeProxy(const FakeProxy&) = delete;
  FakeProxy& operator=(const FakeProxy&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_.load(); }
  // The head (request line and headers) of every request received.
  std::vector<std::string> heads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return heads_;
  }

 private:
  void accept_loop() {
    for (;;) {
      const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      connections_++;
      serve(c);  // one at a time: enough for these tests, and no thread to leak
      close(c);
    }
  }

  void serve(int c) {
    std::string buf, head, body;
    if (!read_message(c, buf, head, body)) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      heads_.push_back(head);
    }
    // No answer from upstream (a lost response, say): close without one, as
    // the provider did.
    if (const std::optional<std::string> answer = forward(head, body)) (void)send_all(c, *answer);
  }

  // "METHOD http://127.0.0.1:PORT/path VERSION" -> the upstream's answer.
  static std::optional<std::string> forward(const std::string& head, const std::string& body) {
    const size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1), eol = head.find("\r\n");
    if (sp1 == std::string::npos || sp2 == std::string::npos || sp2 > eol) return std::nullopt;
    const std::string method = head.substr(0, sp1), target = head.substr(sp1 + 1, sp2 - sp1 - 1);
    static const std::string kPrefix = "http://127.0.0.1:";
    if (target.rfind(kPrefix, 0) != 0) return std::nullopt;
    const size_t slash = target.find('/', kPrefix.size());
    if (slash == std::string::npos) return std::nullopt;
    const int port = std::atoi(target.substr(kPrefix.size(), slash - kPrefix.size()).c_str());

    // Origin form, the client's headers but its connection management, and
    // Connection: close so that the upstream ends its answer.
    std::string out = method + " " + target.substr(slash) + head.substr(sp2, eol - sp2) + "\r\n";
    for (size_t at = eol + 2; at < head.size();) {
      const size_t next = head.find("\r\n", at);
      const std::string line = head.substr(at, next - at);
      at = next + 2;
      if (line.empty()) break;
      if (strncasecmp(line.c_str(), "Connection:", 11) == 0 || strncasecmp(line.c_str(), "Proxy-Connection:", 17) == 0)
        continue;
      out += line + "\r\n";
    }
    out += "Connection: close\r\n\r\n" + body;

    const int u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    std::optional<std::string> answer;
    std::string buf, rhead, rbody;
    if (u >= 0 && connect(u, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && send_all(u, out) &&
        read_message(u, buf, rhead, rbody))
      answer = rhead + rbody;
    if (u >= 0) close(u);
    return answer;
  }

  int fd_ = -1, port_ = 0;
  std::atomic<int> connections_{0};
  mutable std::mutex mu_;
  std::vector<std::string> heads_;
  std::thread thread_;
};

// ---- the environment ---------------------------------------------------------------

// Every variable libcurl reads to pick a proxy by itself (and the ones that
// exempt hosts from it), set for the test's lifetime and restored after.
class ProxyEnvironment {
 public:
  static constexpr const char* kProxyVars[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                                               "all_proxy",  "ALL_PROXY"};
  static constexpr const char* kExemptVars[] = {"no_proxy", "NO_PROXY"};

  // Points every proxy variable at `proxy_url` and clears the exemptions
  // (a no_proxy naming 127.0.0.1 would make the test prove nothing).
  explicit ProxyEnvironment(const std::string& proxy_url) {
    for (const char* name : kProxyVars) save(name);
    for (const char* name : kExemptVars) save(name);
    for (const char* name : kProxyVars) setenv(name, proxy_url.c_str(), 1);
    for (const char* name : kExemptVars) unsetenv(name);
  }
  // Sets no_proxy and NO_PROXY to `hosts`.
  void exempt(const std::string& hosts) {
    for (const char* name : kExemptVars) setenv(name, hosts.c_str(), 1);
  }
  ~ProxyEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) setenv(name.c_str(), value->c_str(), 1);
      else unsetenv(name.c_str());
    }
  }
  ProxyEnvironment(const ProxyEnvironment&) = delete;
  ProxyEnvironment& operator=(const ProxyEnvironment&) = delete;

 private:
  void save(const char* name) {
    const char* v = std::getenv(name);
    saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// What a plain libcurl client does with this environment: it must go through
// the proxy, or the test below would prove nothing.
std::string plain_libcurl_get(const std::string& url) {
  CURL* h = curl_easy_init();
  std::string got;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, +[](char* p, size_t s, size_t n, void* u) {
    static_cast<std::string*>(u)->append(p, s * n);
    return s * n;
  });
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &got);
  const CURLcode rc = curl_easy_perform(h);
  curl_easy_cleanup(h);
  return rc == CURLE_OK ? got : std::string("curl error: ") + curl_easy_strerror(rc);
}

bool has_header(const std::string& head, const std::string& line) {
  return head.find("\r\n" + line + "\r\n") != std::string::npos;
}

using Proxy = SimTest;

// ---- no "proxy": the environment is ignored -------------------------------------------

TEST_F(Proxy, proxy_environment_variables_are_ignored_without_a_configured_proxy) {
  FakeProxy trap;
  ProxyEnvironment env(trap.url());

  // The environment works: libcurl left to itself goes through the trap.
  const std::string plain = plain_libcurl_get(base_url() + "/__admin/stats");
  ASSERT_EQ(trap.connections(), 1) << "libcurl did not follow http_proxy; this test would prove nothing: " << plain;
  ASSERT_EQ(trap.heads().at(0).rfind("GET " + base_url() + "/__admin/stats ", 0), 0u) << trap.heads().at(0);

  // payretry does not: pay_submit, and the concurrent engine (pay_submit_batch).
  auto c = client(config());
  auto r = submit(c.get(), "o-env-proxy");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());

  const std::string order = "o-env-proxy-batch", body = body_for(order);
  pay_batch_item item{};
  item.order_id = order.c_str();
  item.body = body.data();
  item.body_len = body.size();
  ASSERT_EQ(pay_submit_batch(&item, 1, c.get(), nullptr), PAY_OK) << pay_error_last()->message;
  ASSERT_EQ(item.rc, PAY_OK) << item.message;
  ResultPtr batch(item.result);
  EXPECT_EQ(pay_result_outcome(batch.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(batch.get());

  EXPECT_EQ(trap.connections(), 1) << "a payment went through a proxy the config never named";
  EXPECT_EQ(sim_->charges_for("o-env-proxy"), 1);
  EXPECT_EQ(sim_->charges_for(order), 1);
}

// ---- "proxy": that proxy, and only it ----------------------------------------------

TEST_F(Proxy, a_configured_proxy_carries_every_request_and_the_environment_s_does_not) {
  FakeProxy trap, configured;
  ProxyEnvironment env(trap.url());
  auto c = client(config("stripe", "", R"("proxy":")" + configured.url() + "\""));

  // A lost response: two attempts, both through the configured proxy, same key.
  sim_->script("o-via-proxy", {"lost_response", "none"});
  auto r = submit(c.get(), "o-via-proxy");
  ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_attempts(r.get()), 2);
  const std::string key = pay_result_idempotency_key(r.get());

  const std::vector<std::string> heads = configured.heads();
  ASSERT_EQ(heads.size(), 2u);
  for (const std::string& head : heads) {
    // The absolute form a client speaks to an HTTP proxy, to the provider.
    EXPECT_EQ(head.rfind("POST " + base_url() + "/v1/payments HTTP/1.1\r\n", 0), 0u) << head;
    EXPECT_TRUE(has_header(head, "Idempotency-Key: " + key)) << head;
  }
  EXPECT_EQ(trap.connections(), 0) << "a payment went through the environment's proxy";
  EXPECT_EQ(sim_->charges_for("o-via-proxy"), 1);
  expect_one_key_and_identical_bytes();
}

// libcurl reads no_proxy / NO_PROXY from the environment even when
// CURLOPT_PROXY is set, unless CURLOPT_NOPROXY is: a NO_PROXY naming the
// provider's host must not send the payment straight to it, around the
// proxy the config names (curl_transfer.cpp sets CURLOPT_NOPROXY "").
TEST_F(Proxy, no_proxy_in_the_environment_does_not_bypass_a_configured_proxy) {
  FakeProxy configured;
  ProxyEnvironment env(configured.url());
  env.exempt("127.0.0.1,localhost");
  auto c = client(config("stripe", "", R"("proxy":")" + configured.url() + "\""));
  auto r = submit(c.get(), "o-no-proxy-env");
  ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  EXPECT_EQ(configured.connections(), 1) << "the payment went around the configured proxy";
}

TEST_F(Proxy, a_configured_proxy_that_is_down_is_never_bypassed) {
  // Nothing listens on the configured proxy: the payment is not sent at all,
  // neither straight to the provider nor through the environment's proxy.
  FakeProxy trap;
  ProxyEnvironment env(trap.url());
  auto c = client(config("stripe", R"("max_attempts":2)",
                         R"("proxy":"http://127.0.0.1:)" + std::to_string(dead_port()) + "\""));
  auto r = submit(c.get(), "o-proxy-down");
  EXPECT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN) << pay_result_json(r.get());
  EXPECT_EQ(pay_result_delivery(r.get()), PAY_DELIVERY_NOT_SENT) << pay_result_json(r.get());
  EXPECT_EQ(sim_->requests(), 0);
  EXPECT_EQ(trap.connections(), 0);
}

TEST_F(Proxy, a_proxy_password_never_reaches_the_log) {
  FakeProxy configured;
  auto c = client(config("stripe", "",
                         R"("proxy":"http://squid:pr0xy-Pa55@)" + configured.url().substr(7) + "\""));
  auto r = submit(c.get(), "o-proxy-auth");
  ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED) << pay_result_json(r.get());
  const std::vector<std::string> heads = configured.heads();
  ASSERT_EQ(heads.size(), 1u);
  // The credentials go to the proxy (Basic squid:pr0xy-Pa55)...
  EXPECT_TRUE(has_header(heads[0], "Proxy-Authorization: Basic c3F1aWQ6cHIweHktUGE1NQ==")) << heads[0];
  // ...and nowhere else: not to the provider's log lines nor the result.
  EXPECT_EQ(std::string(pay_result_json(r.get())).find("pr0xy-Pa55"), std::string::npos);
  std::lock_guard<std::mutex> lock(rec_.mu);
  ASSERT_FALSE(rec_.log_lines.empty());
  for (const std::string& line : rec_.log_lines) EXPECT_EQ(line.find("pr0xy-Pa55"), std::string::npos) << line;
}

}  // namespace
}  // namespace payretry_test
