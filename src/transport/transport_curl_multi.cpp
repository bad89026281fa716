#include "transport_curl_multi.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <new>
#include <system_error>

namespace payretry {

namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

CurlMultiTransport::CurlMultiTransport(CurlOptions options, long max_connections) : options_(std::move(options)) {
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
  // A bounded pool per host: beyond it, transfers wait in libcurl's queue
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

// libcurl says which of its sockets to watch, and for what. A socket that
// cannot be watched (epoll out of memory or past max_user_watches) is left
// to libcurl's own timer: its transfer ends at the attempt timeout, judged
// like any other timeout, never left hanging.
int CurlMultiTransport::on_socket(CURL*, curl_socket_t s, int what, void* self, void* socketp) {
  auto* t = static_cast<CurlMultiTransport*>(self);
  if (what == CURL_POLL_REMOVE) {
    if (socketp) epoll_ctl(t->epoll_, EPOLL_CTL_DEL, s, nullptr);
    return 0;
  }
  epoll_event ev{};
  ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
  ev.data.fd = s;
  // socketp marks a socket already in the epoll set (curl_multi_assign).
  int rc = epoll_ctl(t->epoll_, socketp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s, &ev);
  if (rc != 0 && errno == EEXIST) rc = epoll_ctl(t->epoll_, EPOLL_CTL_MOD, s, &ev);
  else if (rc != 0 && errno == ENOENT) rc = epoll_ctl(t->epoll_, EPOLL_CTL_ADD, s, &ev);
  if (rc == 0 && !socketp) curl_multi_assign(t->multi_, s, t);
  return 0;
}

// When libcurl next needs to run its timeouts (connect, whole transfer,
// a request just added): -1, never.
int CurlMultiTransport::on_timer(CURLM*, long timeout_ms, void* self) {
  auto* t = static_cast<CurlMultiTransport*>(self);
  t->timer_due_ms_ = timeout_ms < 0 ? -1 : steady_ms() + timeout_ms;
  return 0;
}

void CurlMultiTransport::act(curl_socket_t s, int ev_bitmask) {
  int running = 0;
  curl_multi_socket_action(multi_, s, ev_bitmask, &running);
}

CurlMultiTransport::Transfer::Transfer(const CurlOptions& options) : curl(options) {
  curl_easy_setopt(curl.handle(), CURLOPT_PRIVATE, this);
}

void CurlMultiTransport::start(const HttpRequest& request, void* tag) {
  std::unique_ptr<Transfer> t = acquire();
  t->tag = tag;
  t->curl.prepare(request);  // throws only before libcurl has the handle: nothing sent
  if (curl_multi_add_handle(multi_, t->curl.handle()) != CURLM_OK) {
    // Nothing was handed to libcurl, so nothing was sent.
    (void)t->curl.finish(CURLE_FAILED_INIT);  // lets go of the request
    release(std::move(t));
    Done d;
    d.tag = tag;
    d.result.failure = TransportFailure::other;
    d.result.error_text = "curl_multi_add_handle failed";
    failed_to_start_.push_back(std::move(d));
    return;
  }
  (void)t.release();  // owned through CURLOPT_PRIVATE until perform() reports it
}

void CurlMultiTransport::perform(std::vector<Done>& done) {
  for (Done& d : failed_to_start_) done.push_back(std::move(d));
  failed_to_start_.clear();
  // Only what the last wait found ready, and libcurl's timeouts when due
  // (which also starts the transfers added since: libcurl asks for a
  // timeout of 0 for them).
  for (const auto& [s, bits] : ready_) act(s, bits);
  ready_.clear();
  if (timer_due_ms_ >= 0 && steady_ms() >= timer_due_ms_) {
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
    curl_multi_remove_handle(multi_, h);
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
    const uint32_t e = evs[i].events;
    const int bits = (e & EPOLLIN ? CURL_CSELECT_IN : 0) | (e & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                     (e & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
    try {
      ready_.emplace_back(static_cast<curl_socket_t>(evs[i].data.fd), bits);
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
  if (timer_due_ms_ < 0) return -1;
  return std::max<int64_t>(0, timer_due_ms_ - steady_ms());
}

std::unique_ptr<CurlMultiTransport::Transfer> CurlMultiTransport::acquire() {
  if (!idle_.empty()) {
    std::unique_ptr<Transfer> t = std::move(idle_.back());
    idle_.pop_back();
    return t;
  }
  return std::make_unique<Transfer>(options_);
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
