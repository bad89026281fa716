// payretry through its C ABI, as an application uses it, in one of two shapes:
//   --mode thread: the blocking pay_submit, K payments in flight as K threads sharing one
//                  pay_client (threads capped at 1000): what a thread-per-request service does;
//   --mode async:  pay_submit_async on the client's concurrent engine (one thread, curl multi,
//                  group commit), K payments in flight as a sliding window: each answer starts
//                  the next payment from its done callback. pay_submit_batch and Python's
//                  submit_many run on this same engine.
//
// --rss-every N prints {"kind":"rss","payments":n,"rss_mb":x} after every N completed payments
// (the memory curve across 100,000 payments).
#include <payretry/payretry.h>
#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "bench_common.hpp"

namespace {

struct Shared {
  const bench::Args* args = nullptr;
  pay_client* client = nullptr;
  std::atomic<long> next{0};
  std::atomic<long> completed{0};
  std::vector<double> lat;
  std::vector<int> outcome;  // PAY_OUTCOME_*, or 0 for a failed call
  std::mutex mu;
  std::map<std::string, long> reasons;  // why payments did not succeed: "unknown: <error>"
  // async mode
  std::vector<bench::Clock::time_point> started;
  std::condition_variable all_done;
};

// One answer, from either mode: its latency, its outcome, why it did not succeed.
void account(Shared& s, long i, int rc, pay_result* r, const char* message) {
  const bench::Args& a = *s.args;
  const int outcome = rc == PAY_OK ? pay_result_outcome(r) : 0;
  s.outcome[static_cast<std::size_t>(i)] = outcome;
  if (outcome != PAY_OUTCOME_SUCCEEDED) {
    const char* e = rc == PAY_OK ? pay_result_error(r) : message;
    std::string why = outcome == PAY_OUTCOME_FAILED    ? "failed: "
                      : outcome == PAY_OUTCOME_UNKNOWN ? "unknown: "
                      : rc != PAY_OK                   ? "call_error: "
                                                       : "other: ";
    why += e ? e : "-";
    std::lock_guard<std::mutex> lk(s.mu);
    ++s.reasons[why];
  }
  pay_result_free(r);
  const long n = s.completed.fetch_add(1) + 1;
  if (a.rss_every > 0 && n % a.rss_every == 0) {
    std::printf("{\"kind\":\"rss\",\"payments\":%ld,\"rss_mb\":%.3f}\n", n, bench::current_rss_mb());
    std::fflush(stdout);
  }
  if (n == a.payments) {
    std::lock_guard<std::mutex> lk(s.mu);
    s.all_done.notify_all();
  }
}

void* worker(void* p) {
  Shared& s = *static_cast<Shared*>(p);
  const bench::Args& a = *s.args;
  for (;;) {
    const long i = s.next.fetch_add(1);
    if (i >= a.payments) return nullptr;
    const std::string order = a.prefix + std::to_string(i);
    const std::string body = bench::body_for(order);
    const std::string key = "key-" + order;
    pay_submit_options opts = PAY_SUBMIT_OPTIONS_INIT;
    opts.idempotency_key = key.c_str();
    pay_result* r = nullptr;
    const auto t0 = bench::Clock::now();
    const int rc = pay_submit(&r, s.client, order.c_str(), body.data(), body.size(), &opts);
    s.lat[static_cast<std::size_t>(i)] = bench::ms_between(t0, bench::Clock::now());
    account(s, i, rc, r, rc == PAY_OK ? nullptr : pay_error_last()->message);
  }
}

// async mode: starts payment i; its answer starts the next one.
void start_async(Shared& s, long i);

void on_done(int rc, pay_result* r, const char* message, void* payload) {
  auto* slot = static_cast<std::pair<Shared*, long>*>(payload);
  Shared& s = *slot->first;
  const long i = slot->second;
  delete slot;
  s.lat[static_cast<std::size_t>(i)] =
      bench::ms_between(s.started[static_cast<std::size_t>(i)], bench::Clock::now());
  account(s, i, rc, r, message);
  start_async(s, s.next.fetch_add(1));
}

void start_async(Shared& s, long i) {
  // A payment the engine does not take is accounted for here, and the next
  // one started in its place, so the window stays full.
  for (; i < s.args->payments; i = s.next.fetch_add(1)) {
    const std::string order = s.args->prefix + std::to_string(i);
    const std::string body = bench::body_for(order);
    const std::string key = "key-" + order;
    pay_submit_options opts = PAY_SUBMIT_OPTIONS_INIT;
    opts.idempotency_key = key.c_str();
    s.started[static_cast<std::size_t>(i)] = bench::Clock::now();
    auto* slot = new std::pair<Shared*, long>(&s, i);
    const int rc = pay_submit_async(s.client, order.c_str(), body.data(), body.size(), &opts, on_done, slot);
    if (rc == PAY_OK) return;
    delete slot;
    account(s, i, rc, nullptr, pay_error_last()->message);
  }
}

std::string ledger_label(const std::string& url) {
  if (url.rfind("memory:", 0) == 0) return "memory";
  if (url.rfind("sqlite:", 0) == 0) return "sqlite";
  if (url.rfind("postgres", 0) == 0) return "postgresql";
  return url;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args a = bench::parse_args(
      argc, argv, " [--ledger memory:|sqlite:///abs.db|postgresql://...] [--mode thread|async] [--rss-every N]");
  if (a.mode != "thread" && a.mode != "async") bench::usage(argv[0], " [--mode thread|async]");

  // Every client in the benchmark gets a keep-alive pool as large as its in-flight level; the
  // engine's default pool (max_connections 256 per host) would otherwise cap 1,000 in flight
  // at 256 requests at a time.
  const std::string config = "{\"provider\":\"stripe\",\"create_path\":\"/v1/payments\",\"base_url\":\"" +
                             bench::json_escape(a.url) + "\",\"ledger\":\"" + bench::json_escape(a.ledger) +
                             "\",\"max_connections\":" + std::to_string(std::max(1L, a.inflight)) + "}";
  Shared s;
  s.args = &a;
  s.lat.assign(static_cast<std::size_t>(a.payments), 0.0);
  s.outcome.assign(static_cast<std::size_t>(a.payments), 0);
  if (pay_client_new(&s.client, config.c_str(), nullptr) != PAY_OK) {
    std::fprintf(stderr, "payretry_driver: pay_client_new: %s\n", pay_error_last()->message);
    return 1;
  }
  const double cpu0 = bench::cpu_seconds();
  const auto t0 = bench::Clock::now();
  if (a.mode == "async") {
    s.started.assign(static_cast<std::size_t>(a.payments), bench::Clock::time_point{});
    const long window = std::min(a.inflight, a.payments);
    s.next = window;
    for (long i = 0; i < window; ++i) start_async(s, i);
    std::unique_lock<std::mutex> lk(s.mu);
    s.all_done.wait(lk, [&] { return s.completed.load() >= a.payments; });
  } else {
    const long threads = std::min<long>({a.inflight, 1000, a.payments});
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 512 * 1024);
    std::vector<pthread_t> tids;
    for (long i = 0; i < threads; ++i) {
      pthread_t t;
      if (pthread_create(&t, &attr, worker, &s) != 0) {
        std::fprintf(stderr, "payretry_driver: pthread_create failed after %ld threads\n", i);
        break;
      }
      tids.push_back(t);
    }
    pthread_attr_destroy(&attr);
    for (pthread_t t : tids) pthread_join(t, nullptr);
  }
  const double seconds = bench::ms_between(t0, bench::Clock::now()) / 1000.0;
  const double cpu = bench::cpu_seconds() - cpu0;

  std::map<std::string, long> outcomes;
  for (int o : s.outcome) {
    switch (o) {
      case PAY_OUTCOME_SUCCEEDED: ++outcomes["succeeded"]; break;
      case PAY_OUTCOME_FAILED: ++outcomes["failed"]; break;
      case PAY_OUTCOME_UNKNOWN: ++outcomes["unknown"]; break;
      case PAY_OUTCOME_IN_PROGRESS: ++outcomes["in_progress"]; break;
      default: ++outcomes["call_error"]; break;
    }
  }
  pay_client_free(s.client);
  std::string reasons;
  for (const auto& [k, v] : s.reasons) {
    if (!reasons.empty()) reasons += ",";
    reasons += "\"" + bench::json_escape(k) + "\":" + std::to_string(v);
  }
  bench::print_result("payretry", ledger_label(a.ledger), a.mode == "async" ? "async" : "threads", a, seconds, cpu, std::move(s.lat),
                      outcomes, "\"reasons\":{" + reasons + "}");
  return 0;
}
