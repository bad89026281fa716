// The socket layer: one epoll loop per worker thread, each with its own SO_REUSEPORT
// listening socket, non-blocking keep-alive connections, a timer heap for held (`slow`)
// requests, and listener shutdowns for `refuse` / outages.
#include "worker.hpp"

#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "server_core.hpp"

namespace payretry_sim {

namespace {

constexpr std::size_t kOutputHighWater = 1024 * 1024;  // stop reading while this much is unsent
constexpr std::size_t kReadChunk = 16 * 1024;

}  // namespace

Worker::Worker(ServerCore& srv, std::size_t index, Fd listener)
    : srv_(srv), index_(index), listener_(std::move(listener)) {
  epoll_ = Fd(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) throw_errno("epoll_create1");
  event_ = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!event_) throw_errno("eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = static_cast<uint64_t>(event_.get());
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, event_.get(), &ev) != 0) throw_errno("epoll_ctl");
  ev.data.u64 = static_cast<uint64_t>(listener_.get());
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &ev) != 0) throw_errno("epoll_ctl");
  listener_registered_ = true;
  refresh_config();
}

void Worker::wake() {
  uint64_t one = 1;
  ssize_t r = ::write(event_.get(), &one, sizeof one);
  (void)r;  // EAGAIN means a wake-up is already pending
}

void Worker::run() {
  epoll_event events[256];
  while (!srv_.stopping.load(std::memory_order_acquire)) {
    const int n = epoll_wait(epoll_.get(), events, 256, next_timeout_ms());
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      const uint64_t key = events[i].data.u64;
      if (key == static_cast<uint64_t>(event_.get())) {
        uint64_t count;
        ssize_t r = ::read(event_.get(), &count, sizeof count);
        (void)r;
        if (srv_.stopping.load(std::memory_order_acquire)) return;
        sync_outage();
      } else if (key == static_cast<uint64_t>(listener_.get())) {
        accept_all();
      } else {
        on_event(key, events[i].events);
      }
    }
    run_timers();
    release_deferred();
  }
}

Worker::Conn* Worker::find(uint64_t conn_key) {
  const auto fd = static_cast<std::size_t>(conn_key & 0xffffffffu);
  if (fd >= conns_.size() || !conns_[fd] || conns_[fd]->serial != (conn_key >> 32)) return nullptr;
  return conns_[fd].get();
}

void Worker::accept_all() {
  for (;;) {
    int fd = accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // EINVAL: another worker shut the listeners down for an outage.
      if (errno == EINVAL) sync_outage();
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (static_cast<std::size_t>(fd) >= conns_.size()) conns_.resize(static_cast<std::size_t>(fd) + 64);
    auto c = std::make_unique<Conn>();
    c->fd = Fd(fd);
    c->serial = next_serial_++ & 0xffffffffu;
    if (c->serial == 0) c->serial = next_serial_++;
    c->events = EPOLLIN;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = key_of(*c);
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) continue;  // c closes fd
    conns_[static_cast<std::size_t>(fd)] = std::move(c);
  }
}

void Worker::on_event(uint64_t key, uint32_t ev) {
  Conn* c = find(key);
  if (!c) return;
  if (c->parked && (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
    // The client gave up on a request that was never going to be answered.
    close_conn(c);
    return;
  }
  if (ev & EPOLLOUT) {
    if (!flush(c)) return;
  }
  if (ev & EPOLLIN) {
    if (!on_readable(c)) return;
  } else if (ev & (EPOLLERR | EPOLLHUP)) {
    // The peer is gone (RST or both directions closed). A held request is still finished
    // by its timer: the provider does not know the client gave up.
    close_conn(c);
  }
}

bool Worker::on_readable(Conn* c) {
  char* p = c->in.write_area(kReadChunk);
  const ssize_t r = ::recv(c->fd.get(), p, c->in.free_space(), 0);
  if (r > 0) {
    c->in.commit(static_cast<std::size_t>(r));
  } else if (r == 0) {
    c->read_eof = true;
  } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
    return true;
  } else {
    close_conn(c);
    return false;
  }
  return service(c);
}

// Handles every complete request in the buffer, then sends what it can.
bool Worker::service(Conn* c) {
  if (!process_input(c)) return false;
  return flush(c);
}

bool Worker::process_input(Conn* c) {
  while (!c->held && !c->close_after && c->in.size() > 0) {
    const ParseResult pr = parse_request(c->in.data(), c->in.size(), req_);
    switch (pr.status) {
      case ParseStatus::incomplete_head:
        return true;
      case ParseStatus::incomplete_body:
        if (req_.expect_continue && !c->continue_sent) {
          c->out.append("HTTP/1.1 100 Continue\r\n\r\n");
          c->continue_sent = true;
        }
        return true;
      case ParseStatus::bad_request:
        error_and_close(c, 400);
        return true;
      case ParseStatus::head_too_large:
        error_and_close(c, 431);
        return true;
      case ParseStatus::body_too_large:
        error_and_close(c, 413);
        return true;
      case ParseStatus::length_required:
        error_and_close(c, 411);
        return true;
      case ParseStatus::complete:
        break;
    }
    c->continue_sent = false;
    const Next next = handle_request(c, req_);
    if (next == Next::gone) return false;
    c->in.consume(pr.consumed);
    if (next == Next::stop) break;
  }
  if (c->in.size() == 0) c->in.shrink_if_idle();
  return true;
}

void Worker::error_and_close(Conn* c, int status) {
  std::string body = R"({"error":{"type":"invalid_request_error","code":)";
  append_json_string(body, status == 411   ? "length_required"
                           : status == 413 ? "body_too_large"
                           : status == 431 ? "headers_too_large"
                                           : "bad_request");
  body += "}}";
  append_response(c->out, status, body, {}, srv_.next_request_id.fetch_add(1), true);
  c->close_after = true;
  c->in.clear();
}

bool Worker::flush(Conn* c) {
  if (!c->gate_output) {
    while (c->out_off < c->out.size()) {
      const ssize_t w = ::send(c->fd.get(), c->out.data() + c->out_off, c->out.size() - c->out_off,
                               MSG_NOSIGNAL);
      if (w > 0) {
        c->out_off += static_cast<std::size_t>(w);
      } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else if (w < 0 && errno == EINTR) {
        continue;
      } else {
        close_conn(c);
        return false;
      }
    }
    if (c->out_off == c->out.size()) {
      c->out.clear();
      c->out_off = 0;
      if (c->out.capacity() > kOutputHighWater) std::string().swap(c->out);
      if (!c->held && (c->close_after || (c->read_eof && c->in.size() == 0))) {
        close_conn(c);
        return false;
      }
    }
  }
  update_interest(c);
  return true;
}

void Worker::update_interest(Conn* c) {
  uint32_t want = 0;
  if (!c->held && !c->close_after && !c->read_eof && c->pending() < kOutputHighWater) {
    want |= EPOLLIN;
  }
  if (c->pending() > 0 && !c->gate_output) want |= EPOLLOUT;
  if (c->parked) want |= EPOLLRDHUP;
  if (want == c->events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = key_of(*c);
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c->fd.get(), &ev);
  c->events = want;
}

void Worker::close_conn(Conn* c) {
  const auto fd = static_cast<std::size_t>(c->fd.get());
  conns_[fd].reset();  // close() also removes it from the epoll set
}

void Worker::reset_conn(Conn* c) {
  // Whatever earlier pipelined responses are queued go out first, best effort.
  if (!c->gate_output && c->pending() > 0) {
    ssize_t w = ::send(c->fd.get(), c->out.data() + c->out_off, c->pending(), MSG_NOSIGNAL);
    (void)w;
  }
  set_abortive_close(c->fd.get());
  close_conn(c);
}

}  // namespace payretry_sim
