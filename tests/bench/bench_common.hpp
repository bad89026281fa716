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
};

[[noreturn]] inline void usage(const char* prog, const char* extra) {
  std::fprintf(stderr,
               "usage: %s --url URL [--payments N] [--inflight K] [--prefix P]%s\n"
               "Prints one JSON line: throughput, latency p50/p99 per payment, CPU seconds\n"
               "(getrusage of this process), peak RSS and outcome counts.\n",
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
    else usage(argv[0], extra);
  }
  if (a.url.empty() || a.payments < 1 || a.inflight < 1) usage(argv[0], extra);
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

inline void print_result(const std::string& client, const std::string& ledger, const std::string& mode,
                         const Args& a, double seconds, double cpu, std::vector<double> lat,
                         const std::map<std::string, long>& outcomes, const std::string& extra = "") {
  std::sort(lat.begin(), lat.end());
  auto pct = [&](double p) {
    return lat.empty() ? 0.0 : lat[static_cast<std::size_t>(p * static_cast<double>(lat.size() - 1))];
  };
  std::string oc;
  for (const auto& [k, v] : outcomes) {
    if (!oc.empty()) oc += ",";
    oc += "\"" + json_escape(k) + "\":" + std::to_string(v);
  }
  std::printf(
      "{\"client\":\"%s\",\"ledger\":\"%s\",\"mode\":\"%s\",\"inflight\":%ld,\"payments\":%ld,"
      "\"seconds\":%.6f,\"payments_per_s\":%.3f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
      "\"cpu_s\":%.6f,\"cpu_s_per_1000\":%.6f,\"peak_rss_mb\":%.3f,\"outcomes\":{%s}%s%s}\n",
      json_escape(client).c_str(), json_escape(ledger).c_str(), json_escape(mode).c_str(), a.inflight,
      a.payments, seconds, static_cast<double>(a.payments) / seconds, pct(0.50), pct(0.99), cpu,
      cpu * 1000.0 / static_cast<double>(a.payments), peak_rss_mb(), oc.c_str(), extra.empty() ? "" : ",",
      extra.c_str());
  std::fflush(stdout);
}

}  // namespace bench
