// The concurrent engine: many payments in flight on one thread. Each payment
// is the same AttemptRun and the same ledger decisions as pay_submit's
// threaded path; what differs is who waits. Requests go through an
// AsyncTransport (libcurl's multi interface in production: one connection
// pool, keep-alive, HTTP/2 multiplexing over TLS where offered), backoffs are
// timers, and the ledger writes that many payments need during one turn of
// the loop are applied together as one LedgerBatch: one transaction and one
// flush (group commit). A ledger that waits on I/O (SQLite, PostgreSQL) is
// applied on writer threads of the engine's own, as many batches at once as
// the ledger commits in parallel for each of the client's engines
// (Ledger::concurrent_batches), so that transfers go on while a batch
// commits; the writes gathered meanwhile make the next batch. A payment has
// at most one write in any batch at a time. A payment's first byte still
// leaves only after the commit that created its row, and never after its
// deadline or its lease (the request's may_start gate, asked by the
// transport at the last moment).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "async_transport.hpp"
#include "attempt_log.hpp"
#include "clock.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "payment_flow.hpp"
#include "stats.hpp"

namespace payretry {

class MultiEngine {
 public:
  // One payment handed to the engine. `done` is called exactly once, on the
  // engine's thread: with an exception for a failed call (the same ones
  // PaymentFlow::submit throws), else with the result.
  struct Job {
    std::string order_id;
    std::string body;             // owned: the caller's buffer may be gone
    std::string idempotency_key;
    std::string path;
    int64_t deadline_ms = 0;
    Headers headers;          // on every attempt (SubmitRequest::headers)
    std::string traceparent;  // SubmitRequest::traceparent
    std::function<void(std::exception_ptr, PaymentResult)> done;
  };

  // With `own_thread`, a thread runs turn() until the engine is destroyed.
  // Without, the caller drives it (the deterministic simulation does, under
  // its fake clock and transport). `engines`: how many engines of the client
  // share the ledger, each of which gets its share of the ledger's
  // concurrent batches.
  MultiEngine(Engine& engine, PaymentFlow& flow, const Config& config, Clock& clock, AttemptLog& log,
              Stats& stats, AsyncTransport& transport, bool own_thread = true, int engines = 1);
  // Stops taking jobs and waits for every accepted one to finish (each is
  // bounded by its deadline).
  ~MultiEngine();
  // The two halves of the destructor, for a client with several engines:
  // all stop taking jobs (a `done` of one may hand a job to another) before
  // any is waited for, and all are drained before any is destroyed.
  void stop();
  void drain();
  MultiEngine(const MultiEngine&) = delete;
  MultiEngine& operator=(const MultiEngine&) = delete;

  // Hands jobs over; returns at once. Thread-safe, also from a `done`.
  void enqueue(std::vector<std::unique_ptr<Job>> jobs);
  // True on the engine's own thread (inside a `done`), where waiting for a
  // payment would wait for the thread that must answer it.
  bool on_engine_thread() const { return std::this_thread::get_id() == thread_.get_id(); }
  std::thread::id thread_id() const { return thread_.get_id(); }

  // One turn of the loop: takes queued jobs, runs due timers, applies the
  // ledger batch, moves transfers, then waits for the transport at most
  // until the next thing due. False once stopped with nothing left.
  bool turn();
  // Payments handed over and not yet answered (queued ones included). For
  // a caller that drives turn() itself, on that thread.
  size_t unanswered() {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.size() + active_;
  }
  // The same count, from any thread, for choosing an engine: handed over and
  // not yet answered. A payment counts out just before its `done` runs, so a
  // `done` that starts the next payment sees its own engine without it.
  size_t load() const { return load_.load(std::memory_order_relaxed); }

 private:
  struct Payment;
  struct Timer;
  // One group commit: the batch and, entry for entry, whose it is.
  struct Flight {
    LedgerBatch batch;
    std::vector<Payment*> creates, records, settles;
  };

  void loop();
  void start(std::unique_ptr<Job> job);
  void flush();
  std::unique_ptr<Flight> take_batch();
  void recycle(std::unique_ptr<Flight> f);
  void apply(Flight& f);
  void finish(Flight& f);
  void writer_loop();
  // These take what they are given (the create's proposal and row, the
  // decision's row): each is read once, and moving it saves a copy per payment.
  void on_created(Payment* p, LedgerBatch::Create& c);
  void decide(Payment* p, PaymentRow row, bool created);
  void start_run(Payment* p, PaymentFlow::Decision& d);
  void step(Payment* p, AttemptRun::Step s);
  void fail_run(Payment* p, std::exception_ptr e);
  void complete(Payment* p, std::exception_ptr e, PaymentResult r);
  void add_timer(int64_t due, Payment* p, bool reread);
  void run_due_timers();
  void read_transfers();
  int64_t poll_timeout_ms();

  Engine& engine_;
  PaymentFlow& flow_;
  const Config& config_;
  Clock& clock_;
  AttemptLog& log_;
  Stats& stats_;
  AsyncTransport& transport_;

  std::mutex mu_;
  std::vector<std::unique_ptr<Job>> queue_;
  bool stop_ = false;
  std::atomic<size_t> load_{0};

  // Engine-thread state below.
  std::vector<Timer> timers_;  // a min-heap on due time
  uint64_t timer_seq_ = 0;
  size_t active_ = 0;
  LedgerBatch batch_;
  std::vector<Payment*> create_of_, record_of_, settle_of_;
  std::vector<AsyncTransport::Done> done_;
  size_t out_ = 0;  // Flights with the writers
  // Finished Flights, emptied, their lists keeping their room: the next
  // group commit reuses one instead of growing new lists from nothing.
  std::vector<std::unique_ptr<Flight>> spare_;

  // The ledger writers (only when the ledger waits on I/O and the engine
  // has its own thread): each takes one Flight, hands it back applied, and
  // wakes the engine. None: batches are applied in place.
  std::vector<std::thread> writers_;
  std::mutex writer_mu_;
  std::condition_variable writer_cv_;
  std::vector<std::unique_ptr<Flight>> to_write_, written_;
  std::vector<std::unique_ptr<Flight>> applied_;  // engine thread: taken from written_ to finish
  bool writer_stop_ = false;
  std::thread thread_;
};

}  // namespace payretry
