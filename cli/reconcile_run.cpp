#include "reconcile_run.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "client_setup.hpp"
#include "output.hpp"
#include "progress.hpp"

namespace cli {
namespace {

struct BodyPayload {
  const ReconcileRun* run;
  std::atomic<long> calls{0};
};

int body_tramp(pay_body* out, const char* order_id, void* payload) noexcept {
  auto* p = static_cast<BodyPayload*>(payload);
  p->calls.fetch_add(1, std::memory_order_relaxed);
  try {
    std::optional<std::string> b = p->run->body_for(order_id);
    if (!b) return 1;
    return pay_body_set(out, b->data(), b->size()) == PAY_OK ? 0 : 1;
  } catch (...) {
    return 1;  // nothing may unwind through the C frames
  }
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Rows not touched since `before`: what this reconcile has not reached yet.
long waiting(const pay::client& c, int64_t before, uint32_t limit) {
  long n = 0;
  for (const char* st : {"UNKNOWN", "IN_FLIGHT"}) {
    const Json rows = parse_json(c.ledger_list(std::string_view(st), before, limit));
    n += cJSON_GetArraySize(rows.get());
  }
  return n;
}

}  // namespace

std::string run_reconcile(const pay::client& client, const ReconcileRun& run) {
  const int64_t start = unix_ms();
  const int64_t before = run.older_than_ms > 0 ? start - run.older_than_ms : start;
  const uint32_t limit = run.limit ? run.limit : 1000;
  const long total = run.progress ? call([&] { return waiting(client, before, limit); }) : 0;

  BodyPayload payload;
  payload.run = &run;
  pay_reconcile_options o;
  pay_reconcile_options_init(&o, PAY_RECONCILE_OPTIONS_VERSION);
  o.limit = run.limit;
  o.older_than_ms = run.older_than_ms;
  if (run.body_for) {
    o.body_for = &body_tramp;
    o.body_payload = &payload;
  }

  Progress progress("reconciled", total, run.progress && total > 0);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread poller;
  if (run.progress && total > 0) {
    poller = std::thread([&] {
      std::unique_lock<std::mutex> lock(mu);
      while (!cv.wait_for(lock, std::chrono::milliseconds(250), [&] { return done; })) {
        long left = total;
        try {
          left = waiting(client, before, limit);
        } catch (...) {
          // Progress is cosmetic: a busy ledger must not fail the reconcile.
        }
        const long reached = std::max(total - left, payload.calls.load(std::memory_order_relaxed));
        progress.set(std::min(reached, total), 0);
      }
    });
  }
  pay_buf report{nullptr, 0};
  const int rc = pay_reconcile(&report, client.get(), &o);
  std::string out = report.ptr ? std::string(report.ptr, report.size) : std::string();
  pay_buf_dispose(&report);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  if (poller.joinable()) poller.join();
  if (rc != PAY_OK) {
    progress.finish();
    throw failure_of(pay::error::from_last(rc));
  }
  const Json doc = parse_json(out);
  progress.set(jint(doc.get(), "examined"), jint(doc.get(), "UNKNOWN"));
  progress.finish();
  return out;
}

int exit_for_report(const std::string& report_json) {
  const Json doc = parse_json(report_json);
  if (jint(doc.get(), "UNKNOWN") > 0 || jint(doc.get(), "errors") > 0) return kExitUnknown;
  if (jint(doc.get(), "IN_PROGRESS") > 0) return kExitInProgress;
  return kExitOk;
}

}  // namespace cli
