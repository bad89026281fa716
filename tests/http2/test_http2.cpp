// The concurrent engine against a provider that offers HTTP/2 (a Go net/http
// server over TLS on loopback): many payments in flight share one connection,
// multiplexed, instead of one handshake each.
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <payretry/payretry.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

// h2_server as a child: its stdin is our pipe (closing it stops the server).
class H2Server {
 public:
  explicit H2Server(const std::string& pem) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      execl(PAYRETRY_H2_SERVER, PAYRETRY_H2_SERVER, pem.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    FILE* f = fdopen(out[0], "r");
    char line[128] = {0};
    if (f && fgets(line, sizeof line, f)) {
      const std::string s = line;
      const auto colon = s.rfind(':');
      if (s.rfind("listening on 127.0.0.1:", 0) == 0 && colon != std::string::npos)
        port_ = std::atoi(s.c_str() + colon + 1);
    }
    out_ = f;
  }
  ~H2Server() {
    if (stdin_ >= 0) close(stdin_);
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    if (out_) fclose(out_);
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int port_ = 0;
  FILE* out_ = nullptr;
};

size_t append(char* p, size_t size, size_t n, void* s) {
  static_cast<std::string*>(s)->append(p, size * n);
  return size * n;
}

// GET /__stats over HTTP/1.1 on its own connection (counted by the server too).
long server_stat(int port, const std::string& pem, const std::string& name) {
  CURL* h = curl_easy_init();
  std::string body;
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/__stats";
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_CAINFO, pem.c_str());
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
  curl_easy_perform(h);
  curl_easy_cleanup(h);
  const auto at = body.find("\"" + name + "\":");
  return at == std::string::npos ? -1 : std::atol(body.c_str() + at + name.size() + 3);
}

TEST(Http2, a_batch_is_multiplexed_over_one_connection_when_the_provider_offers_http2) {
  char dir[] = "/tmp/payretry-h2.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string pem = std::string(dir) + "/provider.pem";
  {
    H2Server server(pem);
    ASSERT_GT(server.port(), 0) << "h2_server did not start";
    const std::string cfg = R"({"provider":"stripe","base_url":"https://127.0.0.1:)" + std::to_string(server.port()) +
                            R"(","create_path":"/v1/payments","ledger":"memory:","max_connections":8,"engine_threads":1,)"
                            R"("tls":{"verify":true,"ca_file":")" +
                            pem + R"("},"retry":{"attempt_timeout_ms":5000,"deadline_ms":20000}})";
    pay_client* c = nullptr;
    ASSERT_EQ(pay_client_new(&c, cfg.c_str(), nullptr), PAY_OK) << pay_error_last()->message;

    constexpr size_t kPayments = 100;
    std::vector<std::string> orders, bodies;
    for (size_t i = 0; i < kPayments; ++i) {
      orders.push_back("h2-" + std::to_string(i));
      bodies.push_back(R"({"order_id":")" + orders.back() + R"(","amount":1000,"currency":"eur"})");
    }
    std::vector<pay_batch_item> items(kPayments);
    for (size_t i = 0; i < kPayments; ++i) {
      items[i].order_id = orders[i].c_str();
      items[i].body = bodies[i].data();
      items[i].body_len = bodies[i].size();
    }
    ASSERT_EQ(pay_submit_batch(items.data(), kPayments, c, nullptr), PAY_OK);
    for (size_t i = 0; i < kPayments; ++i) {
      ASSERT_EQ(items[i].rc, PAY_OK) << items[i].message;
      EXPECT_EQ(pay_result_outcome(items[i].result), PAY_OUTCOME_SUCCEEDED) << pay_result_json(items[i].result);
      pay_result_free(items[i].result);
    }
    pay_buf stats{};
    ASSERT_EQ(pay_client_stats(&stats, c), PAY_OK);
    const std::string s(stats.ptr, stats.size);
    pay_buf_dispose(&stats);
    pay_client_free(c);

    const long h2 = server_stat(server.port(), pem, "http2");
    const long conns = server_stat(server.port(), pem, "connections");
    const long concurrent = server_stat(server.port(), pem, "max_concurrent");
    std::printf("%zu payments: %ld over HTTP/2, %ld connections (2 of them the stats reads), up to %ld at once\n",
                kPayments, h2, conns, concurrent);
    EXPECT_EQ(h2, static_cast<long>(kPayments));  // every payment went over HTTP/2
    // One connection for the whole batch (the engine waits for the first to
    // say whether it multiplexes: PIPEWAIT), plus the two stats reads so far.
    EXPECT_LE(conns, 1 + 2);
    // Multiplexed, not one after another: the provider held many at once.
    EXPECT_GT(concurrent, 10);
    EXPECT_EQ(server_stat(server.port(), pem, "charges"), static_cast<long>(kPayments));
    EXPECT_NE(s.find("\"connections_opened\":1"), std::string::npos) << s;
  }
  std::remove(pem.c_str());
  rmdir(dir);
}

}  // namespace
