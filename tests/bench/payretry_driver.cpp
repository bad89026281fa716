// payretry through its C ABI, as an application uses it, in one of two shapes:
//   --mode thread: the blocking pay_submit, K payments in flight as K threads sharing one
//                  pay_client (threads capped at 1000): what a thread-per-request service does;
//   --mode async:  pay_submit_async on the client's concurrent engine (one thread, curl multi,
//                  group commit), K payments in flight as a sliding window: each answer starts
//                  the next payment from its done callback. pay_submit_batch and Python's
//                  submit_many run on this same engine.
//   --mode refund: the blocking pay_submit_operation (a partial refund, ledger guard included),
//                  K threads as in --mode thread. Operations have no concurrent engine, so this
//                  is compared with --mode thread (the create's same shape) and with raw curl
//                  multi. The payments it refunds are made before the timed run (pay_submit_batch,
//                  untimed, uncounted): --payments of them; a run that uses them all up says so in
//                  its reasons ("pool_exhausted") and stops starting refunds.
//
// --keys payretry gives a create no idempotency key, so that payretry makes one, as it does for
// every operation (default: the caller's "key-<order>").
// --rss-every N prints {"kind":"rss","payments":n,"rss_mb":x} after every N completed payments
// (the memory curve across 100,000 payments). --log FILE turns on the attempt log; --seconds T
// runs for a time instead of a count (bench_common.hpp, Meter).
#include <payretry/operation.h>
#include <payretry/payretry.h>
#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "bench_common.hpp"

namespace {

struct Shared {
  const bench::Args* args = nullptr;
  bench::Meter* meter = nullptr;
  pay_client* client = nullptr;
  std::atomic<long> next{0};       // order numbers handed out
  std::atomic<long> started{0};    // payments handed to payretry (async mode)
  std::atomic<long> completed{0};
  std::mutex mu;
  std::map<std::string, long> reasons;  // why payments did not succeed: "unknown: <error>"
  std::condition_variable all_done;
};

// async mode: the run is over once every payment started has answered and no more will start.
bool finished(Shared& s) {
  const long done = s.completed.load();
  if (!s.meter->timed()) return done >= s.args->payments;
  return s.meter->draining() && done >= s.started.load();
}

// One answer, from either mode: its latency, its outcome, why it did not succeed.
void account(Shared& s, double latency_ms, int rc, pay_result* r, const char* message) {
  const bench::Args& a = *s.args;
  const int outcome = rc == PAY_OK ? pay_result_outcome(r) : 0;
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
  s.meter->done(latency_ms, outcome == PAY_OUTCOME_SUCCEEDED     ? "succeeded"
                            : outcome == PAY_OUTCOME_FAILED      ? "failed"
                            : outcome == PAY_OUTCOME_UNKNOWN     ? "unknown"
                            : outcome == PAY_OUTCOME_IN_PROGRESS ? "in_progress"
                                                                 : "call_error");
  const long n = s.completed.fetch_add(1) + 1;
  if (a.rss_every > 0 && n % a.rss_every == 0) {
    std::printf("{\"kind\":\"rss\",\"payments\":%ld,\"rss_mb\":%.3f}\n", n, bench::current_rss_mb());
    std::fflush(stdout);
  }
}

// refund mode: one partial refund of payment i, made before the run.
void* refund_worker(void* p) {
  Shared& s = *static_cast<Shared*>(p);
  const bench::Args& a = *s.args;
  for (;;) {
    const long i = s.next.fetch_add(1);
    if (!s.meter->may_start(i)) return nullptr;
    if (i >= a.payments) {
      std::lock_guard<std::mutex> lk(s.mu);
      ++s.reasons["pool_exhausted"];
      return nullptr;
    }
    const std::string order = a.prefix + std::to_string(i);
    pay_operation_options o;
    pay_operation_options_init(&o, PAY_OPERATION_OPTIONS_VERSION);
    o.ref = "r1";
    o.amount = 400;  // of the payment's 1000: the guard checks it fits
    pay_result* r = nullptr;
    const auto t0 = bench::Clock::now();
    const int rc = pay_submit_operation(&r, s.client, order.c_str(), PAY_OPERATION_REFUND, &o);
    account(s, bench::ms_between(t0, bench::Clock::now()), rc, r, rc == PAY_OK ? nullptr : pay_error_last()->message);
  }
}

// The payments refund mode refunds: made through the concurrent engine in batches, before the
// meter starts. Returns false (with the reason on stderr) if one did not succeed.
bool make_payments(pay_client* c, const bench::Args& a) {
  const long chunk = 2000;
  for (long from = 0; from < a.payments; from += chunk) {
    const long n = std::min(chunk, a.payments - from);
    std::vector<std::string> orders, bodies;
    for (long i = from; i < from + n; ++i) {
      orders.push_back(a.prefix + std::to_string(i));
      bodies.push_back(bench::body_for(orders.back()));
    }
    std::vector<pay_batch_item> items(static_cast<size_t>(n));
    for (long k = 0; k < n; ++k) {
      items[k] = pay_batch_item{};
      items[k].order_id = orders[k].c_str();
      items[k].body = bodies[k].data();
      items[k].body_len = bodies[k].size();
    }
    if (pay_submit_batch(items.data(), items.size(), c, nullptr) != PAY_OK) {
      std::fprintf(stderr, "payretry_driver: pay_submit_batch: %s\n", pay_error_last()->message);
      return false;
    }
    for (pay_batch_item& it : items) {
      const bool ok = it.rc == PAY_OK && pay_result_outcome(it.result) == PAY_OUTCOME_SUCCEEDED;
      if (!ok) std::fprintf(stderr, "payretry_driver: payment %s not made: %s\n", it.order_id,
                            it.rc == PAY_OK ? pay_result_json(it.result) : it.message);
      pay_result_free(it.result);
      if (!ok) return false;
    }
  }
  return true;
}

void* worker(void* p) {
  Shared& s = *static_cast<Shared*>(p);
  const bench::Args& a = *s.args;
  for (;;) {
    const long i = s.next.fetch_add(1);
    if (!s.meter->may_start(i)) return nullptr;
    const std::string order = a.prefix + std::to_string(i);
    const std::string body = bench::body_for(order);
    const std::string key = "key-" + order;
    pay_submit_options opts = PAY_SUBMIT_OPTIONS_INIT;
    if (s.args->keys == "caller") opts.idempotency_key = key.c_str();
    pay_result* r = nullptr;
    const auto t0 = bench::Clock::now();
    const int rc = pay_submit(&r, s.client, order.c_str(), body.data(), body.size(), &opts);
    account(s, bench::ms_between(t0, bench::Clock::now()), rc, r, rc == PAY_OK ? nullptr : pay_error_last()->message);
  }
}

// async mode: a payment in flight; its answer starts the next one.
struct Slot {
  Shared* s;
  bench::Clock::time_point started;
};

void start_async(Shared& s);

void on_done(int rc, pay_result* r, const char* message, void* payload) {
  auto* slot = static_cast<Slot*>(payload);
  Shared& s = *slot->s;
  const double latency = bench::ms_between(slot->started, bench::Clock::now());
  delete slot;
  account(s, latency, rc, r, message);
  start_async(s);
  if (finished(s)) {
    std::lock_guard<std::mutex> lk(s.mu);
    s.all_done.notify_all();
  }
}

void start_async(Shared& s) {
  // A payment the engine does not take is accounted for here, and the next
  // one started in its place, so the window stays full.
  for (;;) {
    const long i = s.next.fetch_add(1);
    if (!s.meter->may_start(i)) return;
    const std::string order = s.args->prefix + std::to_string(i);
    const std::string body = bench::body_for(order);
    const std::string key = "key-" + order;
    pay_submit_options opts = PAY_SUBMIT_OPTIONS_INIT;
    if (s.args->keys == "caller") opts.idempotency_key = key.c_str();
    auto* slot = new Slot{&s, bench::Clock::now()};
    s.started.fetch_add(1);
    const int rc = pay_submit_async(s.client, order.c_str(), body.data(), body.size(), &opts, on_done, slot);
    if (rc == PAY_OK) return;
    delete slot;
    account(s, 0.0, rc, nullptr, pay_error_last()->message);
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
      argc, argv,
      " [--ledger memory:|sqlite:///abs.db|postgresql://...] [--mode thread|async|refund] [--keys caller|payretry] [--log FILE] [--metrics FILE] [--engine-threads N] [--max-connections N] [--rss-every N]");
  if (a.mode != "thread" && a.mode != "async" && a.mode != "refund")
    bench::usage(argv[0], " [--mode thread|async|refund]");

  // Every client in the benchmark gets a keep-alive pool as large as its in-flight level; the
  // engine's default pool (max_connections 256 per host) would otherwise cap 1,000 in flight
  // at 256 requests at a time (--max-connections sets a smaller pool, so that payments wait in
  // line for a connection, as they do in a service with more in flight than its pool).
  // --log turns on the attempt log (one line per attempt).
  std::string config = "{\"provider\":\"stripe\",\"create_path\":\"/v1/payments\",\"base_url\":\"" +
                       bench::json_escape(a.url) + "\",\"ledger\":\"" + bench::json_escape(a.ledger) +
                       "\",\"max_connections\":" +
                       std::to_string(a.max_connections > 0 ? a.max_connections : std::max(1L, a.inflight));
  if (!a.log.empty()) config += ",\"log\":{\"path\":\"" + bench::json_escape(a.log) + "\"}";
  if (a.engine_threads > 0) config += ",\"engine_threads\":" + std::to_string(a.engine_threads);
  if (!a.ca_file.empty()) config += ",\"tls\":{\"ca_file\":\"" + bench::json_escape(a.ca_file) + "\"}";
  config += "}";
  bench::Meter meter(a);
  Shared s;
  s.args = &a;
  s.meter = &meter;
  if (pay_client_new(&s.client, config.c_str(), nullptr) != PAY_OK) {
    std::fprintf(stderr, "payretry_driver: pay_client_new: %s\n", pay_error_last()->message);
    return 1;
  }
  if (a.mode == "refund" && !make_payments(s.client, a)) return 1;
  meter.begin();
  if (a.mode == "async") {
    const long window = a.seconds > 0 ? a.inflight : std::min(a.inflight, a.payments);
    for (long i = 0; i < window; ++i) start_async(s);
    std::unique_lock<std::mutex> lk(s.mu);
    s.all_done.wait(lk, [&] { return finished(s); });
  } else {
    const long threads = std::min<long>({a.inflight, 1000, a.seconds > 0 || a.mode == "refund" ? a.inflight : a.payments});
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 512 * 1024);
    std::vector<pthread_t> tids;
    for (long i = 0; i < threads; ++i) {
      pthread_t t;
      if (pthread_create(&t, &attr, a.mode == "refund" ? refund_worker : worker, &s) != 0) {
        std::fprintf(stderr, "payretry_driver: pthread_create failed after %ld threads\n", i);
        break;
      }
      tids.push_back(t);
    }
    pthread_attr_destroy(&attr);
    for (pthread_t t : tids) pthread_join(t, nullptr);
  }
  meter.finish();
  // --metrics: the client's Prometheus text after the run (group commits, their sizes and
  // durations, retries), to see where a row's time went.
  if (!a.metrics.empty()) {
    pay_buf text = {};
    FILE* f = std::fopen(a.metrics.c_str(), "w");
    if (!f || pay_client_metrics(&text, s.client) != PAY_OK) {
      std::fprintf(stderr, "payretry_driver: --metrics %s: cannot write it\n", a.metrics.c_str());
    } else {
      std::fwrite(text.ptr, 1, text.size, f);
    }
    if (f) std::fclose(f);
    pay_buf_dispose(&text);
  }
  pay_client_free(s.client);
  std::string reasons;
  for (const auto& [k, v] : s.reasons) {
    if (!reasons.empty()) reasons += ",";
    reasons += "\"" + bench::json_escape(k) + "\":" + std::to_string(v);
  }
  meter.print("payretry", ledger_label(a.ledger), a.mode == "async" ? "async" : a.mode == "refund" ? "refund_threads" : "threads",
              "\"reasons\":{" + reasons + "}");
  return 0;
}
