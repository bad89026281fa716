// Ledger benchmark (reported, never asserted): durable commits per second of
// each ledger backend next to this disk's raw fdatasync rate measured in the
// same run, and payments per second through pay_submit against the
// simulator with each ledger.
//
//   ledger_bench [seconds-per-case]        (PAYRETRY_TEST_PG_URL adds PostgreSQL)
#include <fcntl.h>
#include <payretry/payretry.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ledger.hpp"
#include "server.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The baseline: how many 4 KiB write + fdatasync pairs this disk completes.
double fdatasync_rate(const std::string& dir, double secs) {
  const std::string path = dir + "/fsync.bin";
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  if (fd < 0) return 0;
  char buf[4096] = {0};
  long n = 0;
  const auto t0 = Clock::now();
  while (seconds_since(t0) < secs) {
    if (pwrite(fd, buf, sizeof buf, 0) != static_cast<ssize_t>(sizeof buf) || fdatasync(fd) != 0) break;
    ++n;
  }
  const double rate = n / seconds_since(t0);
  close(fd);
  unlink(path.c_str());
  return rate;
}

// One payment's ledger work with one attempt: create+claim, then settle.
double commit_rate(payretry::Ledger& l, const std::string& tag, double secs) {
  long commits = 0;
  const auto t0 = Clock::now();
  for (long i = 0; seconds_since(t0) < secs; ++i) {
    payretry::PaymentRow p;
    p.order_id = tag + std::to_string(i);
    p.idempotency_key = "k-" + p.order_id;
    p.fingerprint = "f";
    p.key_expires_at = INT64_MAX / 2;
    const int64_t now = i + 1;
    l.create_and_claim(p, "bench", now, now + 60000);
    payretry::AttemptEntry a;
    a.number = 1;
    payretry::Settlement s;
    s.state = payretry::PaymentState::succeeded;
    s.delivery = "delivered";
    l.settle(p.order_id, "bench", &a, s, now);
    commits += 2;
  }
  return commits / seconds_since(t0);
}

double payment_rate(const std::string& ledger_url, const std::string& base_url, const std::string& tag, double secs,
                    int threads) {
  const std::string cfg = R"({"provider":"stripe","base_url":")" + base_url +
                          R"(","create_path":"/v1/payments","ledger":")" + ledger_url + R"("})";
  pay_client* c = nullptr;
  if (pay_client_new(&c, cfg.c_str(), nullptr) != PAY_OK) {
    std::fprintf(stderr, "client: %s\n", pay_error_last()->message);
    return 0;
  }
  std::atomic<long> done{0}, next{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      while (seconds_since(t0) < secs) {
        const std::string order = tag + std::to_string(next++);
        const std::string body = R"({"order_id":")" + order + R"(","amount":100})";
        pay_result* r = nullptr;
        if (pay_submit(&r, c, order.c_str(), body.data(), body.size(), nullptr) == PAY_OK &&
            pay_result_outcome(r) == PAY_OUTCOME_SUCCEEDED)
          ++done;
        pay_result_free(r);
      }
    });
  for (auto& t : ts) t.join();
  const double rate = done / seconds_since(t0);
  pay_client_free(c);
  return rate;
}

}  // namespace

int main(int argc, char** argv) {
  const double secs = argc > 1 ? std::atof(argv[1]) : 3.0;
  char tmpl[] = "/tmp/payretry-bench-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  const std::string dir = tmpl;
  const char* pg = std::getenv("PAYRETRY_TEST_PG_URL");

  const double fsync = fdatasync_rate(dir, secs);
  std::printf("baseline: raw 4 KiB write+fdatasync on %s: %.0f /s\n\n", dir.c_str(), fsync);
  std::printf("%-10s %16s %12s %18s\n", "ledger", "commits/s", "vs fsync", "payments/s (8 thr)");

  payretry_sim::Options so;
  so.threads = 1;
  payretry_sim::Server sim(so);

  struct Case {
    std::string name, url;
  };
  std::vector<Case> cases = {{"memory", "memory:"}, {"sqlite", "sqlite://" + dir + "/bench.db"}};
  if (pg && *pg) cases.push_back({"postgres", pg});
  for (const Case& k : cases) {
    double commits = 0;
    try {
      auto l = payretry::open_ledger(k.url, "");
      commits = commit_rate(*l, "c-" + k.name + "-", secs);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", k.name.c_str(), e.what());
      continue;
    }
    const std::string pay_url = k.name == "sqlite" ? "sqlite://" + dir + "/bench-pay.db" : k.url;
    const double pays = payment_rate(pay_url, sim.base_url(), "p-" + k.name + "-", secs, 8);
    std::printf("%-10s %16.0f %11.2fx %18.0f\n", k.name.c_str(), commits, fsync > 0 ? commits / fsync : 0, pays);
  }
  std::printf("\nflushes per payment with one attempt: 2 (create+claim before the send, settle after);\n"
              "each retried attempt adds 1 (its record, before the backoff sleep).\n");
  for (const char* f : {"/bench.db", "/bench.db-wal", "/bench.db-shm", "/bench-pay.db", "/bench-pay.db-wal",
                        "/bench-pay.db-shm"})
    unlink((dir + f).c_str());
  rmdir(dir.c_str());
  return 0;
}
