#include "multi_engine.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "error.hpp"
#include "ledger.hpp"

namespace payretry {

struct MultiEngine::Payment {
  std::unique_ptr<Job> job;  // its body is what every attempt sends
  // What the payment needs until its run starts: the request as admitted
  // and the row it proposes. Freed when the run starts, so that a payment in
  // flight holds only what its run still needs (issue 17: memory per payment
  // in flight).
  struct Admitted {
    SubmitRequest request;           // request.body views job->body
    PaymentFlow::Admission admission;
    int64_t wait_until = 0;          // monotonic: how long to wait on another worker
  };
  std::unique_ptr<Admitted> admitted;
  PaymentRow row;                 // the claimed row, once running
  bool prior_may_have_processed = false;  // of the run: an earlier run's send may have charged
  // Once it has started; its result is what `done` gets once the settling
  // commit is through.
  std::unique_ptr<AttemptRun> run;
  std::exception_ptr error;       // a failed call: `done` gets this instead
};

namespace {

// Adds a batch entry and the payment it answers to, at the same index of
// their two lists: finish() pairs them by index, so the lists must never
// get out of step, not even when one push fails for want of memory.
template <typename Entry, typename Payment>
void gather(std::vector<Entry>& entries, std::vector<Payment*>& of, Entry&& e, Payment* p) {
  of.push_back(p);
  try {
    entries.push_back(std::move(e));
  } catch (...) {
    of.pop_back();
    throw;
  }
}

}  // namespace

struct MultiEngine::Timer {
  int64_t due;
  uint64_t seq;  // ties break in insertion order: the schedule is deterministic
  Payment* payment;
  bool reread;   // true: re-read the row (waiting on another worker); false: backoff over
  bool operator>(const Timer& o) const { return due != o.due ? due > o.due : seq > o.seq; }
};

MultiEngine::MultiEngine(Engine& engine, PaymentFlow& flow, const Config& config, Clock& clock, AttemptLog& log,
                         Stats& stats, AsyncTransport& transport, bool own_thread, int engines)
    : engine_(engine), flow_(flow), config_(config), clock_(clock), log_(log), stats_(stats), transport_(transport) {
  // Without a thread of its own (the deterministic simulation drives turn())
  // the engine applies batches in place, so every schedule stays repeatable.
  const int writers = own_thread ? flow_.ledger().concurrent_batches(engines) : 0;
  // Never more Flights out than writers: the writers' side never allocates.
  to_write_.reserve(static_cast<size_t>(std::max(writers, 0)));
  written_.reserve(static_cast<size_t>(std::max(writers, 0)));
  applied_.reserve(static_cast<size_t>(std::max(writers, 0)));
  for (int i = 0; i < writers; ++i) writers_.emplace_back([this] { writer_loop(); });
  if (own_thread) thread_ = std::thread([this] { loop(); });
}

MultiEngine::~MultiEngine() { drain(); }

void MultiEngine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  transport_.wakeup();
}

void MultiEngine::drain() {
  stop();
  if (thread_.joinable()) thread_.join();
  else
    while (turn()) {
    }
  // The loop ends only with every payment answered, so no batch is out.
  {
    std::lock_guard<std::mutex> lock(writer_mu_);
    writer_stop_ = true;
  }
  writer_cv_.notify_all();
  for (std::thread& w : writers_)
    if (w.joinable()) w.join();
}

void MultiEngine::enqueue(std::vector<std::unique_ptr<Job>> jobs) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) throw std::logic_error("the client is being freed");
    // Reserve first: the hand-over is all or nothing, so a caller that sees
    // an exception knows no job of it will be answered.
    queue_.reserve(queue_.size() + jobs.size());
    for (auto& j : jobs) queue_.push_back(std::move(j));
    load_.fetch_add(jobs.size(), std::memory_order_relaxed);
  }
  // From a done callback the engine thread is awake already, and its wait at
  // the end of this turn does not sleep while the queue holds jobs
  // (poll_timeout_ms): no wake-up write, and no wake-up to read back, for
  // the common "each answer starts the next payment".
  if (!on_engine_thread()) transport_.wakeup();
}

void MultiEngine::loop() {
  log_.flush_per_turn_on_this_thread();
  while (turn()) {
  }
  log_.flush();
}

bool MultiEngine::turn() {
  std::vector<std::unique_ptr<Job>> jobs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs.swap(queue_);
    if (stop_ && jobs.empty() && active_ == 0) return false;
  }
  for (auto& j : jobs) start(std::move(j));
  run_due_timers();
  flush();
  read_transfers();
  log_.flush();  // one write for the turn's log lines, not one per line
  // Writes gathered above go out in the next turn's flush, without waiting.
  transport_.wait(poll_timeout_ms());
  return true;
}

int64_t MultiEngine::poll_timeout_ms() {
  // Writes waiting for a writer that is busy wait for its wakeup instead.
  if (!batch_.empty() && (writers_.empty() || out_ < writers_.size())) return 0;
  {
    // Jobs handed over during this turn (from a done callback, which wakes
    // no one) start in the next turn, at once.
    std::lock_guard<std::mutex> lock(mu_);
    if (!queue_.empty()) return 0;
  }
  int64_t wait = 1000;
  const int64_t transport_wait = transport_.next_timeout_ms();
  if (transport_wait >= 0) wait = std::min(wait, transport_wait);
  if (!timers_.empty()) wait = std::min<int64_t>(wait, std::max<int64_t>(0, timers_.front().due - clock_.now_ms()));
  return wait;
}

void MultiEngine::start(std::unique_ptr<Job> job) {
  Payment* p = nullptr;
  try {
    p = new Payment;
  } catch (...) {
    // Nothing was sent; the caller still gets its one answer.
    load_.fetch_sub(1, std::memory_order_relaxed);
    try {
      job->done(std::current_exception(), {});
    } catch (...) {
    }
    return;
  }
  ++active_;
  stats_.payment_started();
  p->job = std::move(job);
  try {
    p->admitted = std::make_unique<Payment::Admitted>();
    SubmitRequest& r = p->admitted->request;
    // The job's fields are read nowhere else: moved, not copied.
    Job& j = *p->job;
    r.order_id = std::move(j.order_id);
    r.body = j.body;
    r.idempotency_key = std::move(j.idempotency_key);
    r.path = std::move(j.path);
    r.deadline_ms = j.deadline_ms;
    r.headers = std::move(j.headers);
    r.traceparent = std::move(j.traceparent);
    p->admitted->admission = flow_.admit(r);
    p->admitted->wait_until = clock_.now_ms() + config_.in_progress_wait_ms;
    const int64_t now = clock_.unix_ms();
    LedgerBatch::Create c;
    PaymentFlow::Admission& a = p->admitted->admission;
    c.owner = a.fence;
    c.proposed = std::move(a.proposed);  // lent to the ledger; on_created gives it back
    c.now = now;
    c.lease_until = now + a.lease_ms;
    gather(batch_.creates, create_of_, std::move(c), p);
  } catch (...) {
    complete(p, std::current_exception(), {});
  }
}

// Group commit: everything gathered since the last flush, in one go. Only
// after the batch is applied are sends started for the rows it created.
void MultiEngine::flush() {
  if (writers_.empty()) {
    // Handing entries back may gather new ones (a run that ends at once).
    while (!batch_.empty()) {
      std::unique_ptr<Flight> f = take_batch();
      apply(*f);
      finish(*f);
      recycle(std::move(f));
    }
    return;
  }
  {
    std::lock_guard<std::mutex> lock(writer_mu_);
    applied_.swap(written_);  // both have room for every writer's Flight
  }
  for (auto& f : applied_) {
    --out_;
    finish(*f);
    recycle(std::move(f));
  }
  applied_.clear();
  while (out_ < writers_.size() && !batch_.empty()) {
    std::unique_ptr<Flight> f = take_batch();
    {
      std::lock_guard<std::mutex> lock(writer_mu_);
      to_write_.push_back(std::move(f));
    }
    ++out_;
    writer_cv_.notify_one();
  }
}

std::unique_ptr<MultiEngine::Flight> MultiEngine::take_batch() {
  std::unique_ptr<Flight> f;
  if (!spare_.empty()) {
    f = std::move(spare_.back());
    spare_.pop_back();
  } else {
    f = std::make_unique<Flight>();
  }
  // The gathered lists go with the Flight; the engine gathers the next
  // batch in the spare's emptied ones.
  std::swap(f->batch.creates, batch_.creates);
  std::swap(f->batch.records, batch_.records);
  std::swap(f->batch.settles, batch_.settles);
  f->creates.swap(create_of_);
  f->records.swap(record_of_);
  f->settles.swap(settle_of_);
  return f;
}

void MultiEngine::recycle(std::unique_ptr<Flight> f) {
  f->batch.creates.clear();
  f->batch.records.clear();
  f->batch.settles.clear();
  f->creates.clear();
  f->records.clear();
  f->settles.clear();
  try {
    // As many as can be out at once, and the one being gathered.
    if (spare_.size() <= writers_.size()) spare_.push_back(std::move(f));
  } catch (...) {
  }
}

// On the writer thread, or in place: touches only the batch.
void MultiEngine::apply(Flight& f) {
  LedgerBatch& b = f.batch;
  const auto started = std::chrono::steady_clock::now();
  try {
    flow_.ledger().apply(b);
    stats_.on_ledger_batch(static_cast<long>(b.creates.size() + b.records.size() + b.settles.size()),
                           std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - started).count());
  } catch (const std::exception& e) {
    // apply() reports per entry; anything else fails every entry alike.
    for (auto& c : b.creates) c.error = e.what();
    for (auto& r : b.records) r.error = e.what();
    for (auto& s : b.settles) s.error = e.what();
  }
}

void MultiEngine::writer_loop() {
  for (;;) {
    std::unique_ptr<Flight> f;
    {
      std::unique_lock<std::mutex> lock(writer_mu_);
      writer_cv_.wait(lock, [this] { return !to_write_.empty() || writer_stop_; });
      if (to_write_.empty()) return;
      f = std::move(to_write_.front());
      to_write_.erase(to_write_.begin());
    }
    apply(*f);
    {
      std::lock_guard<std::mutex> lock(writer_mu_);
      written_.push_back(std::move(f));
    }
    transport_.wakeup();
  }
}

// On the engine thread: each entry's payment goes on from what was committed.
void MultiEngine::finish(Flight& f) {
  LedgerBatch& b = f.batch;
  for (size_t i = 0; i < f.creates.size(); ++i) on_created(f.creates[i], b.creates[i]);
  for (size_t i = 0; i < f.records.size(); ++i) {
    Payment* p = f.records[i];
    const auto& r = b.records[i];
    // As in the threaded path: an attempt went out and the store cannot
    // record it: the run ends UNKNOWN, flagged as not durably recorded.
    // The row stays IN_FLIGHT under its lease and is taken over later.
    Recorded how;
    if (!r.error.empty()) how = Recorded{Recorded::store_failed, r.error};
    else if (!r.ok) how = Recorded{Recorded::lease_lost, {}};
    try {
      step(p, p->run->recorded(how));
    } catch (...) {
      fail_run(p, std::current_exception());
    }
  }
  for (size_t i = 0; i < f.settles.size(); ++i) {
    Payment* p = f.settles[i];
    const auto& s = b.settles[i];
    if (p->error) {
      complete(p, p->error, {});
      continue;
    }
    PaymentResult& result = p->run->result();
    // The run is over and may have sent: its result stands, flagged.
    if (!s.error.empty()) flow_.mark_unrecorded(result, s.error);
    else if (!s.ok) flow_.lost_at_settle(result);
    complete(p, nullptr, std::move(result));
  }
}

void MultiEngine::on_created(Payment* p, LedgerBatch::Create& c) {
  p->admitted->admission.proposed = std::move(c.proposed);
  if (!c.error.empty()) return complete(p, std::make_exception_ptr(LedgerError(c.error)), {});
  if (c.out.key_taken)
    return complete(p,
                    std::make_exception_ptr(Error(Errc::PAY_EMISMATCH, "idempotency key " +
                                                                      p->admitted->admission.proposed.idempotency_key +
                                                                      " already belongs to another order")),
                    {});
  decide(p, std::move(c.out.row), c.out.created);
}

// The order's row as it stands: run it, answer from it, or wait for the
// worker that holds it (a timer, not a sleeping thread).
void MultiEngine::decide(Payment* p, PaymentRow row, bool created) {
  try {
    for (;;) {
      PaymentFlow::Decision d = flow_.decide(p->admitted->admission, std::move(row), created, p->admitted->wait_until);
      switch (d.kind) {
        case PaymentFlow::Decision::run: return start_run(p, d);
        case PaymentFlow::Decision::answer: return complete(p, nullptr, std::move(d.result));
        case PaymentFlow::Decision::wait: return add_timer(clock_.now_ms() + d.wait_ms, p, true);
        case PaymentFlow::Decision::reread: break;
      }
      const std::string& order_id = p->admitted->request.order_id;  // as the timed re-read names it
      auto again = flow_.ledger().get(order_id);
      if (!again) throw LedgerError("ledger: payment " + order_id + " disappeared");
      row = std::move(*again);
      created = false;
    }
  } catch (...) {
    complete(p, std::current_exception(), {});
  }
}

void MultiEngine::start_run(Payment* p, PaymentFlow::Decision& d) {
  try {
    SubmitRequest run_request = flow_.resume_request(p->admitted->request, d);
    run_request.on_engine_thread = true;  // never waits for a credential (AttemptRun)
    run_request.parsed_body = p->admitted->admission.parsed_body.get();  // freed with admitted, after the run is built
    p->row = std::move(d.row);  // resume_request read it; the run's settles name its owner
    p->prior_may_have_processed = run_request.prior_may_have_processed;
    p->run = std::make_unique<AttemptRun>(engine_, run_request);
  } catch (...) {
    if (p->row.order_id.empty()) p->row = std::move(d.row);  // fail_run settles this row
    p->admitted.reset();
    return fail_run(p, std::current_exception());
  }
  // The run keeps what it needs of its request (the body it views is the
  // job's); the admitted request and the proposed row served their purpose.
  p->admitted.reset();
  try {
    step(p, p->run->begin());
  } catch (...) {
    fail_run(p, std::current_exception());
  }
}

void MultiEngine::step(Payment* p, AttemptRun::Step s) {
  switch (s.kind) {
    case AttemptRun::Kind::send:
      // The request lives in the AttemptRun until sent() is called.
      transport_.start(*s.request, p);
      return;
    case AttemptRun::Kind::record: {
      LedgerBatch::Record r;
      r.owner = p->row.lease_owner;
      r.order_id = p->row.order_id;
      r.attempt = PaymentFlow::entry_of_attempt(*s.attempt);
      gather(batch_.records, record_of_, std::move(r), p);
      return;
    }
    case AttemptRun::Kind::sleep: return add_timer(clock_.now_ms() + s.delay_ms, p, false);
    case AttemptRun::Kind::done: {
      PaymentResult& result = p->run->result();
      // Lease lost: the new owner settles; this run only reports.
      if (result.outcome == Outcome::in_progress) return complete(p, nullptr, std::move(result));
      LedgerBatch::Settle st;
      st.owner = p->row.lease_owner;
      st.order_id = p->row.order_id;
      // Unless the record step before a backoff already wrote it.
      if (!result.attempts.empty() && !result.attempts.back().recorded)
        st.last = PaymentFlow::entry_of_attempt(result.attempts.back());
      st.settlement = PaymentFlow::settlement_of_result(result);
      // Forward only, as PaymentFlow::run says.
      result.money_state = money_after(p->row.money_state, result.money_state);
      st.now = clock_.unix_ms();
      gather(batch_.settles, settle_of_, std::move(st), p);
      return;
    }
  }
}

// A failed call in the middle of a run (a hook, a mismatch): the row is left
// resumable and honest about what may have been sent, then the call fails.
void MultiEngine::fail_run(Payment* p, std::exception_ptr e) {
  Settlement s = settlement_of(p->row);
  s.state = PaymentState::unknown;
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    s = flow_.failed_call(p->row, p->prior_may_have_processed, err);
  } catch (...) {
    s.delivery = "maybe_processed";
    s.detail = "internal error while running the payment";
  }
  LedgerBatch::Settle st;
  st.owner = p->row.lease_owner;
  st.order_id = p->row.order_id;
  st.settlement = s;
  st.now = clock_.unix_ms();
  p->error = e;
  gather(batch_.settles, settle_of_, std::move(st), p);
}

void MultiEngine::complete(Payment* p, std::exception_ptr e, PaymentResult r) {
  std::unique_ptr<Payment> owned(p);
  --active_;
  load_.fetch_sub(1, std::memory_order_relaxed);
  stats_.payment_ended();
  log_.flush();  // the caller never holds an answer whose log lines are not yet written (a no-op when none wait)
  try {
    p->job->done(e, std::move(r));
  } catch (...) {
    // A caller's completion must not stop the engine; the C face never throws.
  }
}

void MultiEngine::add_timer(int64_t due, Payment* p, bool reread) {
  timers_.push_back(Timer{due, timer_seq_++, p, reread});
  std::push_heap(timers_.begin(), timers_.end(), std::greater<Timer>());
}

void MultiEngine::run_due_timers() {
  const int64_t now = clock_.now_ms();
  while (!timers_.empty() && timers_.front().due <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<Timer>());
    const Timer t = timers_.back();
    timers_.pop_back();
    Payment* p = t.payment;
    if (t.reread) {
      std::optional<PaymentRow> row;
      try {
        const std::string& order_id = p->admitted->request.order_id;  // a re-read comes before the run
        row = flow_.ledger().get(order_id);
        if (!row) throw LedgerError("ledger: payment " + order_id + " disappeared");
      } catch (...) {
        complete(p, std::current_exception(), {});
        continue;
      }
      decide(p, std::move(*row), false);
    } else {
      try {
        step(p, p->run->woke());
      } catch (...) {
        fail_run(p, std::current_exception());
      }
    }
  }
}

void MultiEngine::read_transfers() {
  done_.clear();
  transport_.perform(done_);
  for (AsyncTransport::Done& d : done_) {
    Payment* p = static_cast<Payment*>(d.tag);
    try {
      step(p, p->run->sent(std::move(d.result)));
    } catch (...) {
      fail_run(p, std::current_exception());
    }
  }
  done_.clear();
}

}  // namespace payretry
