// Shared by the C++ runners of the benchmark (curl_multi_baseline, payretry_driver): the
// arguments every runner takes and the one JSON line every runner prints (report.py reads it).
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace bench {

struct Args {
  std::string url;
  long payments = 100;
  long inflight = 1;
  std::string prefix = "b-";
  std::string ledger = "memory:";
  std::string mode = "thread";
  long rss_every = 0;
  std::string log;        // payretry_driver: the attempt log file ("": none)
  std::string metrics;    // payretry_driver: write the client's metrics text here after the run
  long engine_threads = 0;  // payretry_driver: the config's engine_threads (0: the default, the cores)
  long max_connections = 0;  // payretry_driver: the config's max_connections (0: as many as in flight)
  double seconds = 0;     // > 0: run for this long after the warm-up instead of --payments
  double warmup = 2;      // with --seconds: completions in the first W seconds are not counted
  std::string ca_file;    // an https URL's CA bundle (PEM), e.g. a throwaway server's own certificate
  // payretry_driver: who makes a create's idempotency key. "caller": "key-<order>", given in the
  // options (sequential, so the ledger's key index takes each at its end); "payretry": none given,
  // so payretry makes a random one (a CSPRNG draw, and a key index insert at a random place), as
  // it does for every operation and for a caller who gives none.
  std::string keys = "caller";
};

[[noreturn]] inline void usage(const char* prog, const char* extra) {
  std::fprintf(stderr,
               "usage: %s --url URL [--payments N | --seconds T [--warmup W]] [--inflight K] [--prefix P] [--ca-file PEM]%s\n"
               "Prints one JSON line: throughput, latency p50/p99 per payment, CPU seconds\n"
               "(getrusage of this process), peak RSS and outcome counts. With --seconds, payments\n"
               "keep starting until W + T seconds have passed and only those that completed in the\n"
               "T seconds after the warm-up count (payments_per_s, CPU, latency); the outcomes\n"
               "count every payment, the warm-up and the drain included.\n",
               prog, extra);
  std::exit(2);
}

inline Args parse_args(int argc, char** argv, const char* extra) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--help" || k == "-h") usage(argv[0], extra);
    if (i + 1 >= argc) usage(argv[0], extra);
    std::string v = argv[++i];
    if (k == "--url") a.url = v;
    else if (k == "--payments") a.payments = std::atol(v.c_str());
    else if (k == "--inflight") a.inflight = std::atol(v.c_str());
    else if (k == "--prefix") a.prefix = v;
    else if (k == "--ledger") a.ledger = v;
    else if (k == "--mode") a.mode = v;
    else if (k == "--rss-every") a.rss_every = std::atol(v.c_str());
    else if (k == "--log") a.log = v;
    else if (k == "--metrics") a.metrics = v;
    else if (k == "--engine-threads") a.engine_threads = std::atol(v.c_str());
    else if (k == "--max-connections") a.max_connections = std::atol(v.c_str());
    else if (k == "--seconds") a.seconds = std::atof(v.c_str());
    else if (k == "--warmup") a.warmup = std::atof(v.c_str());
    else if (k == "--ca-file") a.ca_file = v;
    else if (k == "--keys") a.keys = v;
    else usage(argv[0], extra);
  }
  if (a.url.empty() || a.payments < 1 || a.inflight < 1 || a.engine_threads < 0 || a.max_connections < 0 || a.seconds < 0 || a.warmup < 0 ||
      (a.keys != "caller" && a.keys != "payretry")) usage(argv[0], extra);
  return a;
}

inline double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

inline double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

// The resident set now (not the peak), from /proc/self/statm.
inline double current_rss_mb() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * 4096.0 / (1024.0 * 1024.0);
}

using Clock = std::chrono::steady_clock;
inline double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o.push_back('\\');
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o.push_back(c);
  }
  return o;
}

// The body every JSON-path client sends for one order: the same bytes everywhere.
inline std::string body_for(const std::string& order) {
  return "{\"order_id\":\"" + order + "\",\"amount\":1000,\"currency\":\"usd\"}";
}

// Counts finished payments, for either shape of run. With --payments N every payment counts and
// the clock runs from begin() to the last one. With --seconds T the run has three phases, told
// apart as payments finish: warm-up (W seconds: connections opened, caches filled, not counted),
// the timed window (T seconds: payments_per_s, CPU and latency come from these alone) and the
// drain (no new payment starts; those in flight finish and count only in the outcomes).
// Thread-safe: done() may run on any thread.
class Meter {
 public:
  // With --payments N the latency of every payment is kept: its array is made and written once
  // here, so that the RSS a run reports (--rss-every) does not grow by 8 bytes a payment of the
  // benchmark's own as the run goes on.
  explicit Meter(const Args& a) : a_(a) {
    if (!timed()) {
      lat_.resize(static_cast<size_t>(a_.payments));
      lat_.clear();  // keeps the written capacity
    }
  }

  void begin() {
    std::lock_guard<std::mutex> lk(mu_);
    t_begin_ = Clock::now();
    if (a_.seconds <= 0) open_window(t_begin_);
  }

  bool timed() const { return a_.seconds > 0; }

  // Whether payment number i (0-based, in start order) may start.
  bool may_start(long i) const {
    if (!timed()) return i < a_.payments;
    std::lock_guard<std::mutex> lk(mu_);
    return phase_ != Phase::drain;
  }

  // One payment finished: its latency and how it ended ("succeeded", "failed", ...).
  void done(double latency_ms, const std::string& outcome) {
    std::lock_guard<std::mutex> lk(mu_);
    const auto now = Clock::now();
    ++outcomes_[outcome];
    if (phase_ == Phase::warmup && ms_between(t_begin_, now) >= a_.warmup * 1000.0) open_window(now);
    if (phase_ == Phase::window && timed() && ms_between(t_open_, now) >= a_.seconds * 1000.0) close_window(now);
    if (phase_ != Phase::window) return;
    ++counted_;
    lat_.push_back(latency_ms);
  }

  // The payments counted so far: the --payments run is over when it reaches N.
  long counted() const {
    std::lock_guard<std::mutex> lk(mu_);
    return counted_;
  }

  // The --seconds run stops starting payments once the window has closed.
  bool draining() const {
    std::lock_guard<std::mutex> lk(mu_);
    return phase_ == Phase::drain;
  }

  // Every payment has finished: stops the clocks of a --payments run (before any teardown).
  void finish() {
    std::lock_guard<std::mutex> lk(mu_);
    if (phase_ == Phase::window) close_window(Clock::now());
  }

  // Prints the one JSON line; call after finish().
  void print(const std::string& client, const std::string& ledger, const std::string& mode,
             const std::string& extra = "") {
    std::lock_guard<std::mutex> lk(mu_);
    if (phase_ == Phase::window) close_window(Clock::now());
    const double seconds = phase_ == Phase::drain ? ms_between(t_open_, t_close_) / 1000.0 : 0.0;
    print_line(client, ledger, mode, seconds, cpu_close_ - cpu_open_, extra);
  }

 private:
  enum class Phase { warmup, window, drain };

  void open_window(Clock::time_point now) {
    phase_ = Phase::window;
    t_open_ = now;
    cpu_open_ = cpu_seconds();
  }
  void close_window(Clock::time_point now) {
    phase_ = Phase::drain;
    t_close_ = now;
    cpu_close_ = cpu_seconds();
  }

  void print_line(const std::string& client, const std::string& ledger, const std::string& mode, double seconds,
                  double cpu, const std::string& extra) {
    std::sort(lat_.begin(), lat_.end());
    auto pct = [&](double p) {
      return lat_.empty() ? 0.0 : lat_[static_cast<std::size_t>(p * static_cast<double>(lat_.size() - 1))];
    };
    std::string oc;
    long total = 0;
    for (const auto& [k, v] : outcomes_) {
      if (!oc.empty()) oc += ",";
      oc += "\"" + json_escape(k) + "\":" + std::to_string(v);
      total += v;
    }
    const double n = static_cast<double>(counted_);
    std::printf(
        "{\"client\":\"%s\",\"ledger\":\"%s\",\"mode\":\"%s\",\"inflight\":%ld,\"payments\":%ld,"
        "\"seconds\":%.6f,\"payments_per_s\":%.3f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
        "\"cpu_s\":%.6f,\"cpu_s_per_1000\":%.6f,\"peak_rss_mb\":%.3f,\"completed_total\":%ld,"
        "\"warmup_s\":%.3f,\"outcomes\":{%s}%s%s}\n",
        json_escape(client).c_str(), json_escape(ledger).c_str(), json_escape(mode).c_str(), a_.inflight, counted_,
        seconds, seconds > 0 ? n / seconds : 0.0, pct(0.50), pct(0.99), cpu, n > 0 ? cpu * 1000.0 / n : 0.0,
        peak_rss_mb(), total, timed() ? a_.warmup : 0.0, oc.c_str(), extra.empty() ? "" : ",", extra.c_str());
    std::fflush(stdout);
  }

  const Args& a_;
  mutable std::mutex mu_;
  Phase phase_ = Phase::warmup;
  Clock::time_point t_begin_{}, t_open_{}, t_close_{};
  double cpu_open_ = 0, cpu_close_ = 0;
  long counted_ = 0;
  std::vector<double> lat_;
  std::map<std::string, long> outcomes_;
};

}  // namespace bench
