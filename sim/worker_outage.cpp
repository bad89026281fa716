// The outage barrier: `refuse` and POST /__admin/outage shut every listener down, and the
// reply (or RST) that triggered it waits until every worker closed its idle connections.
#include "worker.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <mutex>

#include "server_core.hpp"

namespace payretry_sim {

void Worker::outage(int ms) { gate_generation_ = srv_.outage(ms); }

void Worker::sync_outage() {
  bool down;
  int64_t until;
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lk(srv_.outage_mu);
    down = !srv_.slots[index_].listening;
    until = srv_.outage_until_ns;
    gen = srv_.outage_generation;
  }
  if (down) {
    if (listener_registered_) {
      epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, listener_.get(), nullptr);
      listener_registered_ = false;
      Timer t;
      t.when = until;
      t.reopen = true;
      add_timer(std::move(t));
    }
    // A server that went away takes its idle keep-alive connections with it.
    for (auto& slot : conns_) {
      Conn* c = slot.get();
      if (c && !c->held && c->in.size() == 0 && c->pending() == 0) close_conn(c);
    }
  }
  if (synced_generation.load(std::memory_order_acquire) != gen) {
    synced_generation.store(gen, std::memory_order_release);
    srv_.wake_all();  // workers holding a deferred reply re-check the barrier
  }
}

void Worker::reopen_listener() {
  int64_t until;
  bool up;
  {
    std::lock_guard<std::mutex> lk(srv_.outage_mu);
    auto& slot = srv_.slots[index_];
    until = srv_.outage_until_ns;
    if (!slot.listening && now_ns() >= until) {
      // A fresh socket joins the SO_REUSEPORT group on the same port. (listen() again on
      // the shut-down one returns 0 on Linux but does not always listen.) The old socket
      // kept the port bound during the outage, so nobody else could take it.
      try {
        Fd fresh = make_listener(srv_.addr, srv_.port);
        listener_ = std::move(fresh);
        slot.fd = listener_.get();
        slot.listening = true;
      } catch (const std::exception&) {
        // Retried below.
      }
    }
    up = slot.listening;
  }
  if (up && !listener_registered_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = static_cast<uint64_t>(listener_.get());
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &ev) == 0) listener_registered_ = true;
  } else if (!up) {
    Timer t;
    t.when = std::max(until, now_ns() + 10 * 1000000);
    t.reopen = true;
    add_timer(std::move(t));
  }
}

void Worker::release_deferred() {
  if (deferred_.empty()) return;
  const uint64_t synced = srv_.min_synced_generation();
  for (std::size_t i = 0; i < deferred_.size();) {
    if (deferred_[i].generation > synced) {
      ++i;
      continue;
    }
    const Deferred d = deferred_[i];
    deferred_.erase(deferred_.begin() + static_cast<std::ptrdiff_t>(i));
    Conn* c = find(d.conn_key);
    if (!c) continue;
    if (d.rst) {
      reset_conn(c);
    } else {
      c->held = false;
      c->gate_output = false;
      service(c);
    }
  }
}

}  // namespace payretry_sim
