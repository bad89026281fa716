// The worker's timer heap: held (`slow`) requests, answers delayed by latency_ms, token
// requests held by oauth2_delay_ms, and listener reopenings after an outage.
#include "worker.hpp"

#include <algorithm>

#include "server_core.hpp"

namespace payretry_sim {

void Worker::add_timer(Timer t) {
  t.seq = timer_seq_++;
  timers_.push_back(std::move(t));
  std::push_heap(timers_.begin(), timers_.end(), TimerLater{});
}

int Worker::next_timeout_ms() const {
  if (!deferred_.empty()) return 1;  // the barrier is re-checked on wake-ups; this is a backstop
  if (timers_.empty()) return -1;
  const int64_t delta = timers_.front().when - now_ns();
  if (delta <= 0) return 0;
  return static_cast<int>(std::min<int64_t>((delta + 999999) / 1000000, 60 * 1000));
}

void Worker::run_timers() {
  if (timers_.empty()) return;
  const int64_t now = now_ns();
  while (!timers_.empty() && timers_.front().when <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), TimerLater{});
    Timer t = std::move(timers_.back());
    timers_.pop_back();
    if (t.reopen) {
      reopen_listener();
      continue;
    }
    if (t.token) {
      Conn* c = find(t.conn_key);
      if (!c) continue;  // the client gave up waiting: no token is issued
      refresh_config();
      reply_.clear();
      srv_.state.tokens().issue(cfg_.oauth2, t.token_authorization, t.token_content_type, t.token_body,
                                &reply_.status, &reply_.body);
      c->held = false;
      c->parked = false;
      append_reply(c, reply_, t.close || c->read_eof);
      service(c);
      continue;
    }
    if (t.delayed) {
      Conn* c = find(t.conn_key);
      if (!c) continue;  // the client went away; the provider's work is done regardless
      if (t.rst) {
        reset_conn(c);
        continue;
      }
      c->held = false;
      c->out.append(t.framed);
      if (t.close || c->read_eof) c->close_after = true;
      service(c);
      continue;
    }
    refresh_config();
    // The provider finishes the work even when the client has gone: that is the point.
    const bool ok = srv_.state.finish_held(*t.held, reply_);
    Conn* c = find(t.conn_key);
    if (!c) continue;
    if (!ok) {
      reset_conn(c);
      continue;
    }
    c->held = false;
    append_reply(c, reply_, t.close || c->read_eof);
    service(c);
  }
}

}  // namespace payretry_sim
