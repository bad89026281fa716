#include "transport_curl_multi.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <new>
#include <system_error>

namespace payretry {

CurlMultiTransport::CurlMultiTransport(CurlOptions options, long max_connections, long max_opening)
    : options_(std::move(options)),
      max_connections_(max_connections),
      max_opening_(max_opening),
      // A second's margin (half the age, if shorter): the transfer handed an
      // idle connection may run a little after the check.
      idle_trust_ms_(std::max<int64_t>(1, options_.max_idle_connection_age_s) * 1000 -
                     std::min<int64_t>(1000, std::max<int64_t>(1, options_.max_idle_connection_age_s) * 500)) {
  curl_global_init_once();
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
  wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_;
  if (wake_ < 0 || epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev) != 0 || !(multi_ = curl_multi_init())) {
    const int err = errno;
    if (wake_ >= 0) close(wake_);
    close(epoll_);
    throw std::system_error(err, std::generic_category(), "the transport's wake-up eventfd or libcurl's multi handle");
  }
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &CurlMultiTransport::on_socket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &CurlMultiTransport::on_timer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  // A bounded pool per host: beyond it, transfers wait in our line (start())
  // for a free connection instead of opening a handshake per payment. (A
  // transfer that waits there long is still checked at the last moment: the
  // request's may_start gate runs when its connection is ready.)
  curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, max_connections);
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, max_connections);
  curl_multi_setopt(multi_, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
}

// The engine drains every transfer before it lets the transport go; the idle
// ones are freed here.
CurlMultiTransport::~CurlMultiTransport() {
  idle_.clear();
  curl_multi_cleanup(multi_);  // may still tell on_socket to forget a socket: epoll goes after it
  close(wake_);
  close(epoll_);
}

// What the epoll set holds for socket number `s`: nullptr when the number
// is out of range or the table cannot grow (that socket is then handled
// without the bookkeeping, with a system call for every change).
CurlMultiTransport::SocketState* CurlMultiTransport::state_of(curl_socket_t s) {
  if (s < 0) return nullptr;
  const auto at = static_cast<size_t>(s);
  if (at >= sockets_.size()) {
    try {
      sockets_.resize(std::max<size_t>(at + 1, 2 * sockets_.size()));
    } catch (...) {
      return nullptr;
    }
  }
  return &sockets_[at];
}

// Every connection socket of this transport is opened here, as libcurl's
// default would (socket() with the address's family, type and protocol),
// so that its number is known to be a new socket: whatever the table said
// of a socket that had the number before is forgotten. The transfer notes
// it (and its generation), to adopt the one its connection keeps.
curl_socket_t CurlMultiTransport::on_open(void* transfer, curlsocktype, curl_sockaddr* address) {
  auto* t = static_cast<Transfer*>(transfer);
  CurlMultiTransport* self = t->owner;
  const curl_socket_t s = ::socket(address->family, address->socktype, address->protocol);
  if (SocketState* st = self->state_of(s)) {
    if (st->idle) self->idle_unlink(s);  // cannot happen (ours close through on_close); kept exact regardless
    const uint32_t gen = st->gen + 1;
    *st = SocketState{};
    st->gen = gen;
    t->opened[t->opened_n++ % 4] = {s, gen};
  }
  return s;
}

// And closed here: libcurl calls this instead of close() for the sockets it
// opened through on_open, except (7.88) one whose connect it gave up. A
// parked socket is still in the epoll set: it leaves it before its number
// can be handed to another socket.
int CurlMultiTransport::on_close(void* self, curl_socket_t s) {
  auto* t = static_cast<CurlMultiTransport*>(self);
  if (SocketState* st = t->state_of(s)) {
    if (st->idle) t->idle_unlink(s);
    if (st->in_set) epoll_ctl(t->epoll_, EPOLL_CTL_DEL, s, nullptr);
    const uint32_t gen = st->gen + 1;
    *st = SocketState{};
    st->gen = gen;
  }
  return ::close(s);
}

namespace {
// The port of a socket's own end (`peer` false) or of the far end, or -1.
int port_of(curl_socket_t s, bool peer) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  auto* sa = reinterpret_cast<sockaddr*>(&a);
  if ((peer ? getpeername(s, sa, &len) : getsockname(s, sa, &len)) != 0) return -1;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(sa)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(sa)->sin6_port);
  return -1;
}
}  // namespace

// At a transfer's first prereq call, if it opened sockets: the one its
// connection kept becomes ours. It is found by the connection's two ports
// (libcurl's own record, passed to that call and read back with getinfo)
// among the sockets the transfer opened that still have the generation they
// were opened with. A number whose socket libcurl closed without telling us
// (a connect it gave up) may still have its generation and now belong to
// another file or socket of the process; matching both ports rules that
// out. With no match (ports not known, or the socket was not among the last
// four opened) none is adopted: the connection is then never counted idle
// (the bound errs toward waiting) and its socket is watched without parking.
void CurlMultiTransport::adopt_connection(Transfer& t) {
  const int n = std::min(t.opened_n, 4);
  t.opened_n = 0;
  long local = -1, remote = -1;  // what libcurl gave the prereq call, read back
  curl_easy_getinfo(t.curl.handle(), CURLINFO_LOCAL_PORT, &local);
  curl_easy_getinfo(t.curl.handle(), CURLINFO_PRIMARY_PORT, &remote);
  if (local <= 0 || remote <= 0) return;
  for (int i = 0; i < n; ++i) {
    const auto [s, gen] = t.opened[i];
    if (static_cast<size_t>(s) >= sockets_.size() || sockets_[static_cast<size_t>(s)].gen != gen) continue;
    if (port_of(s, false) == local && port_of(s, true) == remote) {
      sockets_[static_cast<size_t>(s)].ours = true;
      return;
    }
  }
}

// The idle list: appended as connections go idle, so oldest first.
void CurlMultiTransport::idle_push(curl_socket_t s) {
  SocketState& st = sockets_[static_cast<size_t>(s)];
  st.idle = true;
  st.idle_since_ms = steady_now_ms();
  st.idle_prev = idle_conn_tail_;
  st.idle_next = -1;
  (idle_conn_tail_ >= 0 ? sockets_[static_cast<size_t>(idle_conn_tail_)].idle_next : idle_conn_head_) = s;
  idle_conn_tail_ = s;
  ++idle_conns_;
}

void CurlMultiTransport::idle_unlink(curl_socket_t s) {
  SocketState& st = sockets_[static_cast<size_t>(s)];
  (st.idle_prev >= 0 ? sockets_[static_cast<size_t>(st.idle_prev)].idle_next : idle_conn_head_) = st.idle_next;
  (st.idle_next >= 0 ? sockets_[static_cast<size_t>(st.idle_next)].idle_prev : idle_conn_tail_) = st.idle_prev;
  st.idle = false;
  st.idle_prev = st.idle_next = -1;
  --idle_conns_;
}

// Connections idle so long that libcurl will close them rather than reuse
// them no longer count as idle (they stay parked until libcurl closes them).
void CurlMultiTransport::forget_old_idle(int64_t now) {
  while (idle_conn_head_ >= 0 && now - sockets_[static_cast<size_t>(idle_conn_head_)].idle_since_ms >= idle_trust_ms_)
    idle_unlink(idle_conn_head_);
}

// libcurl says which of its sockets to watch, and for what. A socket that
// cannot be watched (epoll out of memory or past max_user_watches) is left
// to libcurl's own timer: its transfer ends at the attempt timeout, judged
// like any other timeout, never left hanging.
//
// libcurl adds, changes and removes a kept-alive connection's socket for
// every request it carries: up to three epoll_ctl calls a payment, the add
// allocating the kernel's watch and the removal freeing it (3 % of the
// process's CPU against nginx, perf, 2026-12-04). So a connection socket of our own
// that libcurl stops watching is parked instead: it stays in the set as it
// was, and the next request on that connection usually asks for exactly
// that, with no system call. Only our own sockets are parked, since only for
// them do we see the close (on_close) that ends the number's meaning; any
// other socket libcurl watches (a resolver's) is added and removed as asked.
int CurlMultiTransport::on_socket(CURL*, curl_socket_t s, int what, void* self, void* socketp) {
  auto* t = static_cast<CurlMultiTransport*>(self);
  SocketState* st = t->state_of(s);
  const bool ours = st && st->ours;
  if (what == CURL_POLL_REMOVE) {
    if (ours && st->in_set) {
      // Parked; wait() takes it out if it reports anything before it is
      // watched again. No transfer is on it: an idle connection.
      if (st->watched && !st->idle) t->idle_push(s);
      st->watched = false;
      return 0;
    }
    if (socketp) epoll_ctl(t->epoll_, EPOLL_CTL_DEL, s, nullptr);
    if (st) st->in_set = st->watched = false;
    return 0;
  }
  if (st && st->idle) t->idle_unlink(s);  // a transfer took the connection
  epoll_event ev{};
  ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
  ev.data.fd = s;
  int rc = 0;
  if (!(ours && st->in_set && st->events == ev.events)) {
    // In the set already: our own socket's table says so; for any other,
    // socketp marks it (curl_multi_assign). A wrong guess is put right by
    // the retry with the other operation.
    const bool in_set = ours ? st->in_set : socketp != nullptr;
    rc = epoll_ctl(t->epoll_, in_set ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s, &ev);
    if (rc != 0 && errno == EEXIST) rc = epoll_ctl(t->epoll_, EPOLL_CTL_MOD, s, &ev);
    else if (rc != 0 && errno == ENOENT) rc = epoll_ctl(t->epoll_, EPOLL_CTL_ADD, s, &ev);
  }
  if (st) {
    st->in_set = rc == 0;
    st->watched = rc == 0;
    st->events = rc == 0 ? ev.events : 0;
  }
  if (rc == 0 && !socketp) curl_multi_assign(t->multi_, s, t);
  return 0;
}

// When libcurl next needs to run its timeouts (connect, whole transfer,
// a request just added): -1, never.
int CurlMultiTransport::on_timer(CURLM*, long timeout_ms, void* self) {
  auto* t = static_cast<CurlMultiTransport*>(self);
  t->timer_due_ms_ = timeout_ms < 0 ? -1 : steady_now_ms() + timeout_ms;
  return 0;
}

void CurlMultiTransport::act(curl_socket_t s, int ev_bitmask) {
  int running = 0;
  curl_multi_socket_action(multi_, s, ev_bitmask, &running);
}

CurlMultiTransport::Transfer::Transfer(const CurlOptions& options, CurlMultiTransport* o) : curl(options), owner(o) {
  curl_easy_setopt(curl.handle(), CURLOPT_PRIVATE, this);
  curl.owner_times = true;
  curl.on_leaving = &CurlMultiTransport::on_leaving_line;
  curl.leaving_owner = this;
  // Connections are the multi handle's, shared by every transfer of this
  // transport; each keeps the callbacks of the transfer that opened it.
  curl_easy_setopt(curl.handle(), CURLOPT_OPENSOCKETFUNCTION, &CurlMultiTransport::on_open);
  curl_easy_setopt(curl.handle(), CURLOPT_OPENSOCKETDATA, this);
  curl_easy_setopt(curl.handle(), CURLOPT_CLOSESOCKETFUNCTION, &CurlMultiTransport::on_close);
  curl_easy_setopt(curl.handle(), CURLOPT_CLOSESOCKETDATA, o);
}

void CurlMultiTransport::start(const HttpRequest& request, void* tag) {
  std::unique_ptr<Transfer> t = acquire();
  t->tag = tag;
  t->curl.prepare(request);  // throws only before libcurl has the handle: nothing sent
  // No bound at all (0) is libcurl's "never" too.
  const int64_t whole = request.wait_limit_ms > 0 ? request.wait_limit_ms : request.timeout_ms;
  const int64_t now = steady_now_ms();
  t->timeout_ms = request.timeout_ms;
  t->end_ms = whole > 0 ? now + whole : INT64_MAX;
  t->due_ms = whole > 0 ? now + std::max<int64_t>(0, whole - std::max<int64_t>(0, request.send_margin_ms)) : INT64_MAX;
  t->queued_ms = now;
  forget_old_idle(now);
  // Over TLS with HTTP/2 a connection carries many transfers (libcurl's
  // default is 100 streams each, CURLMOPT_MAX_CONCURRENT_STREAMS); in
  // cleartext, one at a time (HTTP/1.1).
  curl_limit_ = t->curl.multiplexes() ? max_connections_ * 100 : max_connections_;
  if (line_head_ || !may_hand()) {
    line_push(t.get());
  } else if (!hand_to_curl(t.get())) {
    failed_to_start_.push_back(not_handed(*t, TransportFailure::other, "curl_multi_add_handle failed"));
    release(std::move(t));
    return;
  }
  timer_push(t.get());  // never allocates: timers_ has room for every Transfer made
  (void)t.release();    // owned through CURLOPT_PRIVATE (or the line) until perform() reports it
}

bool CurlMultiTransport::hand_to_curl(Transfer* t) {
  if (curl_multi_add_handle(multi_, t->curl.handle()) != CURLM_OK) return false;
  ++in_curl_;
  t->ready = false;
  t->opened_n = 0;
  ++opening_;
  return true;
}

// Each transfer libcurl had leaves through here, once.
void CurlMultiTransport::left_curl(Transfer* t) {
  curl_multi_remove_handle(multi_, t->curl.handle());
  --in_curl_;
  if (!t->ready) --opening_;
  t->ready = false;
}

// Whether libcurl may take one more transfer now: below its limit, and not
// while max_opening transfers are opening connections, unless the pool has
// an idle connection for this one too, which libcurl hands it rather than
// open another. Every transfer still opening is taken to be on its way to
// an idle connection (those opening connections of their own are not), so
// the count errs toward waiting, never toward a storm.
bool CurlMultiTransport::may_hand() const {
  if (in_curl_ >= curl_limit_) return false;
  return max_opening_ <= 0 || opening_ < max_opening_ || opening_ < idle_conns_;
}

void CurlMultiTransport::line_push(Transfer* t) {
  t->in_line = true;
  t->line_prev = line_tail_;
  t->line_next = nullptr;
  (line_tail_ ? line_tail_->line_next : line_head_) = t;
  line_tail_ = t;
}

void CurlMultiTransport::line_unlink(Transfer* t) {
  (t->line_prev ? t->line_prev->line_next : line_head_) = t->line_next;
  (t->line_next ? t->line_next->line_prev : line_tail_) = t->line_prev;
  t->in_line = false;
  t->line_prev = t->line_next = nullptr;
}

// The head of the line goes to libcurl whenever it may take one (may_hand);
// a transfer libcurl refuses is reported, nothing sent.
void CurlMultiTransport::admit_from_line(std::vector<Done>& done) {
  if (!line_head_) return;
  forget_old_idle(steady_now_ms());
  while (line_head_ && may_hand()) {
    Transfer* t = line_head_;
    line_unlink(t);
    if (hand_to_curl(t)) continue;
    timer_remove(t);
    done.push_back(not_handed(*t, TransportFailure::other, "curl_multi_add_handle failed"));
    release(std::unique_ptr<Transfer>(t));
  }
}

// The result of a transfer libcurl never had: nothing was sent. (finish()
// is not asked: the pooled handle's info still describes its last transfer.)
AsyncTransport::Done CurlMultiTransport::not_handed(Transfer& t, TransportFailure failure, const char* why) {
  try {
    (void)t.curl.finish(CURLE_FAILED_INIT);  // lets go of the request (also if it throws)
  } catch (...) {
  }
  Done d;
  d.tag = t.tag;
  t.tag = nullptr;
  d.result.failure = failure;
  d.result.error_text = why;
  d.result.elapsed_ms = steady_now_ms() - t.queued_ms;
  return d;
}

// The gate let the request through: from here the attempt's own timeout
// runs, counted from the start of the connection it opened, if it opened
// one (connect_timeout_ms bounds that part too), never past its end.
void CurlMultiTransport::on_leaving_line(void* transfer) {
  auto* t = static_cast<Transfer*>(transfer);
  if (!t->ready) {
    t->ready = true;
    --t->owner->opening_;
  }
  if (t->opened_n > 0) t->owner->adopt_connection(*t);
  if (t->heap_at == kNotTimed) return;
  const CurlTransfer& c = t->curl;
  const int64_t began = c.connect_started_ms >= 0 ? c.connect_started_ms : c.left_line_ms;
  t->due_ms = t->timeout_ms > 0 ? std::min(t->end_ms, began + t->timeout_ms) : t->end_ms;
  t->owner->timer_sift(t->heap_at);
}

// Ends every transfer whose time is up. Before the gate (in line, or its
// connection still opening) no byte of its request was written: reported as
// not started, like a refusal at the gate. After it, finish() judges it like
// libcurl's own timeout. Removing the handle frees its place in libcurl's
// line, or closes the connection it was using.
void CurlMultiTransport::end_overdue(std::vector<Done>& done) {
  if (timers_.empty()) return;
  const int64_t now = steady_now_ms();
  while (!timers_.empty() && timers_.front()->due_ms <= now) {
    std::unique_ptr<Transfer> t(timers_.front());
    timer_remove(t.get());
    if (t->in_line) {
      line_unlink(t.get());
      done.push_back(not_handed(*t, TransportFailure::not_started,
                                "no connection of the pool was free before the request's time ran out"));
      release(std::move(t));
      continue;
    }
    left_curl(t.get());
    CURLcode rc = CURLE_OPERATION_TIMEDOUT;
    if (t->curl.prereq_calls == 0) {
      t->curl.refused = t->curl.connect_started_ms < 0
                            ? "no connection of the pool was free before the request's time ran out"
                            : "the request's time ran out while its connection was being opened";
      rc = CURLE_ABORTED_BY_CALLBACK;  // judged as a refusal at the gate: nothing sent
    }
    report(std::move(t), rc, done);
  }
}

void CurlMultiTransport::timer_push(Transfer* t) {
  t->heap_at = timers_.size();
  timers_.push_back(t);
  timer_sift(t->heap_at);
}

void CurlMultiTransport::timer_remove(Transfer* t) {
  const size_t at = t->heap_at;
  if (at == kNotTimed) return;
  Transfer* last = timers_.back();
  timers_.pop_back();
  t->heap_at = kNotTimed;
  if (last == t) return;
  timers_[at] = last;
  last->heap_at = at;
  timer_sift(at);
}

// Moves the entry at `at` up or down to where its due_ms belongs.
void CurlMultiTransport::timer_sift(size_t at) {
  auto swap = [this](size_t a, size_t b) {
    std::swap(timers_[a], timers_[b]);
    timers_[a]->heap_at = a;
    timers_[b]->heap_at = b;
  };
  while (at > 0 && timers_[at]->due_ms < timers_[(at - 1) / 2]->due_ms) {
    swap(at, (at - 1) / 2);
    at = (at - 1) / 2;
  }
  for (;;) {
    const size_t l = 2 * at + 1, r = l + 1;
    size_t least = at;
    if (l < timers_.size() && timers_[l]->due_ms < timers_[least]->due_ms) least = l;
    if (r < timers_.size() && timers_[r]->due_ms < timers_[least]->due_ms) least = r;
    if (least == at) return;
    swap(at, least);
    at = least;
  }
}

void CurlMultiTransport::perform(std::vector<Done>& done) {
  for (Done& d : failed_to_start_) done.push_back(std::move(d));
  failed_to_start_.clear();
  // Only what the last wait found ready, and libcurl's timeouts when due
  // (which also starts the transfers added since: libcurl asks for a
  // timeout of 0 for them).
  for (const auto& [s, bits] : ready_) act(s, bits);
  ready_.clear();
  if (timer_due_ms_ >= 0 && steady_now_ms() >= timer_due_ms_) {
    timer_due_ms_ = -1;  // on_timer may set a new one during the call
    act(CURL_SOCKET_TIMEOUT, 0);
  }
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
    if (m->msg != CURLMSG_DONE) continue;
    CURL* h = m->easy_handle;
    const CURLcode rc = m->data.result;
    Transfer* raw = nullptr;
    curl_easy_getinfo(h, CURLINFO_PRIVATE, reinterpret_cast<char**>(&raw));
    std::unique_ptr<Transfer> t(raw);
    timer_remove(t.get());
    left_curl(t.get());
    report(std::move(t), rc, done);
  }
  // After the finished ones were read: a transfer that finished in this
  // turn is not also ended by its timer.
  end_overdue(done);
  // The places freed go to the line's head (libcurl starts them on its next
  // timeout call, at once).
  admit_from_line(done);
}

void CurlMultiTransport::report(std::unique_ptr<Transfer> t, CURLcode rc, std::vector<Done>& done) {
  Done d;
  d.tag = t->tag;
  t->tag = nullptr;
  try {
    d.result = t->curl.finish(rc);
  } catch (...) {
    // The response could not be read (out of memory): the request went
    // out, so the provider may have acted on it.
    d.result = TransportResult{};
    d.result.failure = TransportFailure::other;
    d.result.request_written = true;
    d.result.error_text = "could not read the response";
  }
  release(std::move(t));
  done.push_back(std::move(d));
}

void CurlMultiTransport::wait(int64_t max_ms) {
  epoll_event evs[256];
  const int n = epoll_wait(epoll_, evs, 256, static_cast<int>(std::clamp<int64_t>(max_ms, 0, INT_MAX)));
  // n < 0 (EINTR): the engine's loop simply turns again.
  for (int i = 0; i < n; ++i) {
    if (evs[i].data.fd == wake_) {
      read_wakeups();
      continue;
    }
    const curl_socket_t s = static_cast<curl_socket_t>(evs[i].data.fd);
    if (static_cast<size_t>(s) < sockets_.size()) {
      SocketState& st = sockets_[static_cast<size_t>(s)];
      if (st.in_set && !st.watched) {
        // A parked connection reported something (most likely the server
        // closed it while idle). libcurl is not watching it: it leaves the
        // set, or the level-triggered report would end every wait at once.
        // libcurl finds the connection dead if it picks it again.
        epoll_ctl(epoll_, EPOLL_CTL_DEL, s, nullptr);
        st.in_set = false;
        st.events = 0;
        if (st.idle) idle_unlink(s);  // not idle for the bound: libcurl will find it closed
        continue;
      }
    }
    const uint32_t e = evs[i].events;
    const int bits = (e & EPOLLIN ? CURL_CSELECT_IN : 0) | (e & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                     (e & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
    try {
      ready_.emplace_back(s, bits);
    } catch (...) {
      // Out of memory: epoll is level-triggered, the next wait reports it again.
    }
  }
}

// From any thread. The eventfd's count stays set until a wait reads it, so a
// wake-up sent before the engine waits still ends that wait at once.
void CurlMultiTransport::wakeup() {
  const uint64_t one = 1;
  // EAGAIN: the count is at its maximum, a wake-up is pending anyway.
  (void)!write(wake_, &one, sizeof one);
}

void CurlMultiTransport::read_wakeups() {
  uint64_t count = 0;
  (void)!read(wake_, &count, sizeof count);
}

int64_t CurlMultiTransport::next_timeout_ms() {
  int64_t due = timer_due_ms_;
  if (!timers_.empty() && timers_.front()->due_ms != INT64_MAX && (due < 0 || timers_.front()->due_ms < due))
    due = timers_.front()->due_ms;
  if (due < 0) return -1;
  return std::max<int64_t>(0, due - steady_now_ms());
}

std::unique_ptr<CurlMultiTransport::Transfer> CurlMultiTransport::acquire() {
  if (!idle_.empty()) {
    std::unique_ptr<Transfer> t = std::move(idle_.back());
    idle_.pop_back();
    return t;
  }
  // Room for every Transfer made, so that the timers and the pool never
  // allocate once libcurl holds a transfer (may throw: nothing sent yet).
  if (idle_.capacity() <= made_) idle_.reserve(std::max<size_t>(16, 2 * made_));
  if (timers_.capacity() <= made_) timers_.reserve(std::max<size_t>(16, 2 * made_));
  auto t = std::make_unique<Transfer>(options_, this);
  ++made_;
  return t;
}

// Kept configured for the next payment (finish() let go of this one's
// headers, body and gate); dropped if the pool cannot grow.
void CurlMultiTransport::release(std::unique_ptr<Transfer> t) {
  try {
    idle_.push_back(std::move(t));
  } catch (...) {
  }
}

}  // namespace payretry
