// async.h: payments on the client's engine thread: a blocking batch, a start
// with a done callback, and a start with a handle to poll or wait on.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api_internal.hpp"
#include "error.hpp"

using namespace payretry::capi;
using payretry::Errc;

namespace {

void copy_message(char (&to)[256], const std::string& from) {
  const size_t n = std::min(from.size(), sizeof to - 1);
  std::memcpy(to, from.data(), n);
  to[n] = 0;
}

// The job for one payment; `done` is left to the caller.
std::unique_ptr<payretry::MultiEngine::Job> job_of(const char* order_id, const void* body, size_t body_len,
                                                   SubmitOptions o) {
  auto job = std::make_unique<payretry::MultiEngine::Job>();
  // A NULL order id or body is caught by the engine's own validation as
  // an empty one, with the same message pay_submit gives.
  if (order_id) job->order_id = order_id;
  if (body) job->body.assign(static_cast<const char*>(body), body_len);
  if (o.idempotency_key) {
    job->idempotency_key = o.idempotency_key;
    if (job->idempotency_key.empty()) throw payretry::Error(Errc::PAY_EKEY, "idempotency key is empty");
  }
  if (o.path) {
    job->path = o.path;
    if (job->path.empty()) throw payretry::Error(Errc::PAY_EINVALID, "path is empty");
  }
  job->deadline_ms = o.deadline_ms;
  job->headers = std::move(o.headers);
  job->traceparent = std::move(o.traceparent);
  return job;
}

// job_of for a call with its options, a refusal logged as a failed call
// before it is rethrown (the client is known to be usable here).
std::unique_ptr<payretry::MultiEngine::Job> logged_job_of(payretry::Client& client, const char* order_id,
                                                          const void* body, size_t body_len,
                                                          const pay_submit_options* opts) {
  try {
    return job_of(order_id, body, body_len, submit_options_of(opts));
  } catch (...) {
    std::string message;
    const int rc = translate(std::current_exception(), message);
    client.log_failed_call(order_id ? order_id : "", rc, message);
    throw;
  }
}

// What a payment that ran on the engine thread answered, as the C face hands
// it on: rc 0 and a result the receiver owns, or the code of its failed call
// and why. It runs where no caller could catch, so nothing escapes it.
struct Answer {
  int rc = PAY_OK;
  pay_result* result = nullptr;
  std::string message;
};

// A failed call is written to the client's log too (the caller may drop
// the code): `order_id` names the payment.
Answer answer_of(payretry::Client& client, const char* order_id, std::exception_ptr e, payretry::PaymentResult r) {
  Answer a;
  if (e) {
    a.rc = translate(e, a.message);
    client.log_failed_call(order_id ? order_id : "", a.rc, a.message);
    return a;
  }
  try {
    a.result = make_result(std::move(r)).release();
  } catch (...) {
    a.rc = translate(std::current_exception(), a.message);
  }
  return a;
}

// Waits for the items of one pay_submit_batch call.
struct BatchWait {
  std::mutex mu;
  std::condition_variable cv;
  size_t left = 0;
};

}  // namespace

extern "C" {

int pay_batch_options_init(pay_batch_options* opts, unsigned int version) {
  return init_options(opts, version, PAY_BATCH_OPTIONS_VERSION, "pay_batch_options");
}

int pay_submit_batch(pay_batch_item* items, size_t count, pay_client* client, const pay_batch_options* opts) {
  return guarded([&]() -> int {
    if (!items && count > 0) return set_error(PAY_EINVALID, "items is NULL");
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    if (const int rc = check_options(opts, PAY_BATCH_OPTIONS_VERSION, "pay_batch_options")) return rc;
    if (count > 0 && client->impl->on_engine_thread())
      return set_error(PAY_EINVALID, "pay_submit_batch called from a done callback: it would wait for itself");
    for (size_t i = 0; i < count; ++i) {
      items[i].rc = PAY_OK;
      items[i].result = nullptr;
      items[i].message[0] = 0;
    }
    if (count == 0) return PAY_OK;
    payretry::Client& impl = *client->impl;
    const size_t window = opts && opts->max_in_flight > 0 ? std::min(opts->max_in_flight, count) : count;

    // Items whose call fails before the engine sees them are answered here.
    auto make = [&](size_t i) -> std::unique_ptr<payretry::MultiEngine::Job> {
      pay_batch_item& it = items[i];
      try {
        if (!it.order_id) throw payretry::Error(Errc::PAY_EINVALID, "order_id is NULL");
        if (!it.body) throw payretry::Error(Errc::PAY_EINVALID, "body is NULL");
        SubmitOptions o;
        o.idempotency_key = it.idempotency_key;
        o.path = it.path;
        o.deadline_ms = it.deadline_ms;
        return job_of(it.order_id, it.body, it.body_len, std::move(o));
      } catch (...) {
        std::string m;
        it.rc = translate(std::current_exception(), m);
        impl.log_failed_call(it.order_id ? it.order_id : "", it.rc, m);
        copy_message(it.message, m);
        return nullptr;
      }
    };

    // Fills item i from its job's answer.
    auto fill = [items, &impl](size_t i, std::exception_ptr e, payretry::PaymentResult r) {
      pay_batch_item& it = items[i];
      const Answer a = answer_of(impl, it.order_id, e, std::move(r));
      it.rc = a.rc;
      it.result = a.result;
      if (a.rc != PAY_OK) copy_message(it.message, a.message);
    };
    BatchWait wait;
    wait.left = count;
    auto answered = [&wait] {
      std::lock_guard<std::mutex> lock(wait.mu);
      if (--wait.left == 0) wait.cv.notify_all();
    };
    // Runs answered() however the scope is left: a missed count would hang
    // the caller forever.
    struct Answers {
      decltype(answered)& fn;
      ~Answers() { fn(); }
    };
    // The next item not yet started, as a job; items refused up front are
    // answered on the way. Each answer starts one more item, so `window`
    // items stay in flight.
    using JobPtr = std::unique_ptr<payretry::MultiEngine::Job>;
    struct Next {
      size_t i = 0;
      JobPtr job;  // null: every item is started or answered
    };
    std::atomic<size_t> next{0};
    std::function<Next()> take_next;
    // Starts the next item; one the engine refuses (the client is being
    // freed, out of memory) is answered with that error, and the next tried.
    auto launch_next = [&] {
      for (;;) {
        Next n = take_next();
        if (!n.job) return;
        try {
          payretry::MultiEngine& engine = impl.multi_for(n.job->order_id);
          std::vector<JobPtr> one;
          one.push_back(std::move(n.job));
          engine.enqueue(std::move(one));
          return;
        } catch (...) {
          Answers guard{answered};
          fill(n.i, std::current_exception(), {});
        }
      }
    };
    take_next = [&]() -> Next {
      for (;;) {
        Next n;
        n.i = next.fetch_add(1);
        if (n.i >= count) return n;
        n.job = make(n.i);
        if (!n.job) {
          answered();
          continue;
        }
        const size_t i = n.i;
        n.job->done = [&, i](std::exception_ptr e, payretry::PaymentResult r) {
          Answers guard{answered};
          fill(i, e, std::move(r));
          launch_next();
        };
        return n;
      }
    };
    // The first window in one hand-over per engine, so that the rows of
    // each engine's share one commit.
    struct Group {
      payretry::MultiEngine* engine;
      std::vector<JobPtr> jobs;
      std::vector<size_t> items;
    };
    std::vector<Group> first;
    for (size_t k = 0; k < window; ++k) {
      Next n = take_next();
      if (!n.job) break;
      payretry::MultiEngine* engine = &impl.multi_for(n.job->order_id);
      auto g = std::find_if(first.begin(), first.end(), [&](const Group& x) { return x.engine == engine; });
      if (g == first.end()) g = first.insert(first.end(), Group{engine, {}, {}});
      g->items.push_back(n.i);
      g->jobs.push_back(std::move(n.job));
    }
    for (Group& g : first) {
      try {
        g.engine->enqueue(std::move(g.jobs));
      } catch (...) {
        const std::exception_ptr e = std::current_exception();
        for (size_t i : g.items) {
          Answers guard{answered};
          fill(i, e, {});
        }
        for (size_t k = 0; k < g.items.size(); ++k) launch_next();
      }
    }
    std::unique_lock<std::mutex> lock(wait.mu);
    wait.cv.wait(lock, [&] { return wait.left == 0; });
    return PAY_OK;
  });
}

int pay_submit_async(pay_client* client, const char* order_id, const void* body, size_t body_len,
                     const pay_submit_options* opts, pay_done_cb done, void* payload) {
  return guarded([&]() -> int {
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    if (!order_id) return set_error(PAY_EINVALID, "order_id is NULL");
    if (!body) return set_error(PAY_EINVALID, "body is NULL");
    if (!done) return set_error(PAY_EINVALID, "done is NULL");
    auto job = logged_job_of(*client->impl, order_id, body, body_len, opts);
    job->done = [done, payload, impl = client->impl.get(), order = std::string(order_id)](std::exception_ptr e,
                                                                                         payretry::PaymentResult r) {
      const Answer a = answer_of(*impl, order.c_str(), e, std::move(r));
      done(a.rc, a.result, a.message.c_str(), payload);
    };
    std::vector<std::unique_ptr<payretry::MultiEngine::Job>> one;
    one.push_back(std::move(job));
    client->impl->multi_for(order_id).enqueue(std::move(one));
    return PAY_OK;
  });
}

PendingState::~PendingState() { pay_result_free(result); }

int pay_submit_start(pay_pending** out, pay_client* client, const char* order_id, const void* body, size_t body_len,
                     const pay_submit_options* opts) {
  if (out) *out = nullptr;
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    if (const int rc = check_submit_args(client, order_id, body, opts)) return rc;
    auto job = logged_job_of(*client->impl, order_id, body, body_len, opts);
    payretry::MultiEngine& engine = client->impl->multi_for(order_id);
    auto handle = std::make_unique<pay_pending>();
    handle->state = std::make_shared<PendingState>();
    handle->state->engine_threads = client->impl->engine_threads();
    job->done = [state = handle->state, impl = client->impl.get(), order = std::string(order_id)](
                    std::exception_ptr e, payretry::PaymentResult r) {
      Answer a = answer_of(*impl, order.c_str(), e, std::move(r));
      std::lock_guard<std::mutex> lock(state->mu);
      state->rc = a.rc;
      state->message = std::move(a.message);
      state->result = a.result;
      state->answered = true;
      state->cv.notify_all();
    };
    std::vector<std::unique_ptr<payretry::MultiEngine::Job>> one;
    one.push_back(std::move(job));
    engine.enqueue(std::move(one));
    *out = handle.release();
    return PAY_OK;
  });
}

int pay_pending_wait(pay_result** out, pay_pending* pending, int timeout_ms) {
  if (out) *out = nullptr;
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    if (!pending) return set_error(PAY_EINVALID, "pending is NULL");
    PendingState& st = *pending->state;
    const auto& engines = *st.engine_threads;
    if (timeout_ms != 0 && std::find(engines.begin(), engines.end(), std::this_thread::get_id()) != engines.end())
      return set_error(PAY_EINVALID, "pay_pending_wait from a done callback may only poll (timeout 0)");
    std::unique_lock<std::mutex> lock(st.mu);
    if (st.collected) return set_error(PAY_EINVALID, "this payment's answer was already collected");
    if (timeout_ms < 0) st.cv.wait(lock, [&] { return st.answered; });
    else st.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return st.answered; });
    if (!st.answered) return set_error(PAY_EAGAIN, "the payment has no answer yet");
    st.collected = true;
    if (st.rc != PAY_OK) return set_error(st.rc, st.message);
    *out = st.result;
    st.result = nullptr;
    return PAY_OK;
  });
}

void pay_pending_free(pay_pending* pending) { delete pending; }

}  // extern "C"
