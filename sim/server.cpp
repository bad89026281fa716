// The socket layer: one epoll loop per worker thread, each with its own SO_REUSEPORT
// listening socket, non-blocking keep-alive connections, a timer heap for held (`slow`)
// requests, and listener shutdowns for `refuse` / outages.
#include "server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "admin.hpp"
#include "faults.hpp"
#include "gate.hpp"
#include "http_conn.hpp"
#include "profiles.hpp"
#include "state.hpp"

namespace payretry_sim {

namespace {

constexpr std::size_t kOutputHighWater = 1024 * 1024;  // stop reading while this much is unsent
constexpr std::size_t kReadChunk = 16 * 1024;
constexpr int kBacklog = 1024;

// Stripe's answer to a create whose body is not form fields, worded as its mock server does.
std::string stripe_wrong_content_type(std::string_view was) {
  std::string body =
      R"({"error":{"message":"Request's `Content-Type` didn't match the path's expected media type. )"
      R"(Expected: `application/x-www-form-urlencoded`. Was: `)";
  for (char ch : was)
    if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\' && ch != '`') body.push_back(ch);
  body += R"(`.","type":"invalid_request_error"}})";
  return body;
}

bool is_form(std::string_view content_type) {
  const std::string_view form = "application/x-www-form-urlencoded";
  return content_type.size() >= form.size() && iequals(content_type.substr(0, form.size()), form);
}

// Signatures and their freshness checks use the wall clock, like the providers'.
int64_t unix_now_s() { return static_cast<int64_t>(std::time(nullptr)); }

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

Fd make_listener(in_addr_t addr, uint16_t port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) throw_errno("socket");
  int one = 1;
  if (setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
    throw_errno("setsockopt(SO_REUSEPORT)");
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = addr;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    throw_errno("bind 127.0.0.1:" + std::to_string(port));
  }
  if (::listen(fd.get(), kBacklog) != 0) throw_errno("listen");
  return fd;
}

uint16_t bound_port(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) throw_errno("getsockname");
  return ntohs(sa.sin_port);
}

// The connection is closed with RST, as a crashed peer or a dropping proxy would.
void set_abortive_close(int fd) {
  linger lg{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(0, p.size()) == p;
}

}  // namespace

std::vector<std::string> profiles() { return profile_names(); }

std::vector<std::string> fault_names() {
  std::vector<std::string> v;
  for (std::size_t i = 0; i < kFaultCount; ++i) v.emplace_back(fault_name(static_cast<Fault>(i)));
  return v;
}

class Worker;

class ServerCore final {
 public:
  explicit ServerCore(Options o);
  ~ServerCore();
  void stop();
  // Shuts every listener down until now + ms; returns the outage generation each worker
  // must acknowledge (idle connections closed) before the caller's reply goes out.
  uint64_t outage(int ms);
  uint64_t min_synced_generation() const;
  void wake_all();

  Options options;
  State state;
  in_addr_t addr = 0;
  uint16_t port = 0;
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> next_request_id{1};
  std::mutex stop_mu;
  bool stopped = false;

  // Listener state, guarded by outage_mu. Each worker owns its listening fd; the fd numbers
  // are recorded here so an outage can shut them all down at once, from any thread, before
  // the triggering request's RST is sent.
  struct ListenerSlot {
    int fd = -1;
    bool listening = true;
  };
  mutable std::mutex outage_mu;
  std::vector<ListenerSlot> slots;
  int64_t outage_until_ns = 0;
  uint64_t outage_generation = 0;
};

class Worker final : public AdminHooks {
 public:
  Worker(ServerCore& srv, std::size_t index, Fd listener);
  void run();
  void wake();
  std::atomic<uint64_t> synced_generation{0};
  void outage(int ms) override;  // AdminHooks

 private:
  struct Conn {
    Fd fd;
    uint64_t serial = 0;
    InputBuffer in;
    std::string out;
    std::size_t out_off = 0;
    uint32_t events = 0;
    bool held = false;         // a request is held (slow) or gated: no more input processing
    bool gate_output = false;  // output waits for an outage barrier
    bool close_after = false;  // close once the output is drained
    bool read_eof = false;
    bool continue_sent = false;
    std::size_t pending() const { return out.size() - out_off; }
  };
  struct Timer {
    int64_t when = 0;
    uint64_t seq = 0;
    uint64_t conn_key = 0;
    bool reopen = false;
    bool close = false;
    std::unique_ptr<Held> held;
    // Options::latency_ms: the answer was decided on arrival and goes out when the timer
    // fires: `framed` is the complete response, or `rst` resets the connection instead.
    bool delayed = false;
    bool rst = false;
    std::string framed;
  };
  struct TimerLater {
    bool operator()(const Timer& a, const Timer& b) const {
      return a.when != b.when ? a.when > b.when : a.seq > b.seq;
    }
  };
  struct Deferred {
    uint64_t generation;
    uint64_t conn_key;
    bool rst;
  };

  static uint64_t key_of(const Conn& c) {
    return static_cast<uint64_t>(c.fd.get()) | (c.serial << 32);
  }
  Conn* find(uint64_t conn_key);
  void accept_all();
  void on_event(uint64_t key, uint32_t ev);
  bool on_readable(Conn* c);
  bool service(Conn* c);
  bool process_input(Conn* c);
  enum class Next { more, stop, gone };
  Next handle_request(Conn* c, const Request& req);
  bool flush(Conn* c);
  void update_interest(Conn* c);
  void close_conn(Conn* c);
  void reset_conn(Conn* c);
  void error_and_close(Conn* c, int status);
  // `provider`: an answer of the provider being played (signed in the signing modes), not of
  // the admin endpoints.
  void append_reply(Conn* c, const Reply& r, bool close, bool provider = true);
  void frame_reply(std::string& out, const Reply& r, bool close, bool provider);
  // With a latency configured: holds the connection and sends reply_ (or an RST) later.
  Next answer_later(Conn* c, bool close, bool rst);
  void refresh_config();
  void sync_outage();
  void reopen_listener();
  void add_timer(Timer t);
  int next_timeout_ms() const;
  void run_timers();
  void release_deferred();

  ServerCore& srv_;
  std::size_t index_;
  Fd listener_;
  bool listener_registered_ = false;
  Fd epoll_;
  Fd event_;
  std::vector<std::unique_ptr<Conn>> conns_;  // by fd
  uint64_t next_serial_ = 1;
  std::vector<Timer> timers_;
  uint64_t timer_seq_ = 0;
  std::vector<Deferred> deferred_;
  uint64_t gate_generation_ = 0;  // set by an admin outage inside handle_request

  Config cfg_;
  uint64_t cfg_version_ = 0;
  Request req_;
  Reply reply_;
  std::string extra_;
  std::string signed_body_;  // frame_reply's copy of a body that gets signed
  std::string gate_body_;    // admit()'s rewritten body (Alipay)
};

// ---------------------------------------------------------------------------------------------

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

void Worker::refresh_config() {
  const uint64_t v = srv_.state.config_version();
  if (v != cfg_version_) {
    cfg_ = srv_.state.config();
    cfg_version_ = v;
  }
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

void Worker::append_reply(Conn* c, const Reply& r, bool close, bool provider) {
  frame_reply(c->out, r, close, provider);
  if (close) c->close_after = true;
}

Worker::Next Worker::answer_later(Conn* c, bool close, bool rst) {
  c->held = true;  // no pipelined request overtakes this one
  Timer t;
  t.when = now_ns() + static_cast<int64_t>(cfg_.latency_ms) * 1000000;
  t.conn_key = key_of(*c);
  t.close = close;
  t.delayed = true;
  t.rst = rst;
  if (!rst) frame_reply(t.framed, reply_, close, true);
  add_timer(std::move(t));
  return Next::stop;
}

void Worker::frame_reply(std::string& out, const Reply& r, bool close, bool provider) {
  extra_.clear();
  if (r.retry_after_s >= 0) {
    extra_.append("Retry-After: ");
    if (r.retry_after_date) {
      extra_.append(imf_fixdate(static_cast<int64_t>(std::time(nullptr)) + r.retry_after_s));
    } else {
      append_int(extra_, r.retry_after_s);
    }
    extra_.append("\r\n");
  }
  if (r.replayed) extra_.append("Idempotent-Replayed: true\r\n");
  if (r.transient) extra_.append("transient-error: true\r\n");
  if (!r.headers.empty()) extra_.append(r.headers);
  std::string_view body = r.body;
  if (provider && cfg_.keys) {
    signed_body_.assign(r.body);
    sign_answer(cfg_, unix_now_s(), signed_body_, extra_);
    body = signed_body_;
  }
  if (r.cut_in_half) body = body.substr(0, std::max<std::size_t>(1, body.size() / 2));
  append_response(out, r.status, body, extra_, srv_.next_request_id.fetch_add(1), close);
}

Worker::Next Worker::handle_request(Conn* c, const Request& req) {
  refresh_config();
  reply_.clear();
  const bool close = !req.keep_alive || c->read_eof;
  const std::string_view path = req.path;

  if (starts_with(path, "/__admin/")) {
    gate_generation_ = 0;
    handle_admin(srv_.state, *this, req.method, path, req.query, req.body, reply_);
    append_reply(c, reply_, close, /*provider=*/false);
    if (gate_generation_) {
      // The reply to an outage request leaves only once every worker closed its idle
      // connections, so the caller's next request meets the outage.
      c->held = true;
      c->gate_output = true;
      deferred_.push_back({gate_generation_, key_of(*c), false});
      gate_generation_ = 0;
      return Next::stop;
    }
    return Next::more;
  }

  const Profile& prof = *cfg_.profile;
  Route routed = route(prof, req.method, path);
  if (routed == Route::oauth2_token) {
    // Never faulted nor delayed: the faults are about payments, not credentials.
    srv_.state.tokens().issue(cfg_.oauth2, req.header("Authorization"), req.header("Content-Type"),
                              req.body, &reply_.status, &reply_.body);
    append_reply(c, reply_, close);
    return Next::more;
  }
  std::string_view body = req.body;
  if (routed == Route::create || routed == Route::create_form || routed == Route::lookup ||
      routed == Route::gateway) {
    if (!admit(cfg_, srv_.state.tokens(), req, routed, unix_now_s(), &routed, &body, gate_body_, reply_)) {
      srv_.state.count_auth_refused();
      if (cfg_.latency_ms > 0) return answer_later(c, close, false);
      append_reply(c, reply_, close);
      return Next::more;
    }
  }
  BodyFormat format = BodyFormat::json;
  switch (routed) {
    case Route::create:
      // Stripe's v1 API takes form bodies only; the /v1/payments alias takes either, so
      // clients of the other encodings can still drive the Stripe mode.
      if (prof.id == ProfileId::stripe && is_form(req.header("Content-Type"))) format = BodyFormat::form_alias;
      break;
    case Route::create_form:
      if (!is_form(req.header("Content-Type"))) {
        // What Stripe answers a JSON create (its mock server says the same).
        reply_.clear();
        reply_.status = 400;
        reply_.body = stripe_wrong_content_type(req.header("Content-Type"));
        append_reply(c, reply_, close);
        return Next::more;
      }
      format = BodyFormat::form;
      break;
    case Route::lookup:
      if (!srv_.state.authorized(cfg_, cfg_.api_key.empty() ? std::string_view{}
                                                             : req.header("Authorization"))) {
        set_canned(reply_, prof.unauthorized);
      } else {
        lookup(prof, srv_.state, req.method, path, req.query, body, reply_);
      }
      if (cfg_.latency_ms > 0) return answer_later(c, close, false);
      append_reply(c, reply_, close);
      return Next::more;
    case Route::method_not_allowed:
      set_canned(reply_, prof.method_not_allowed);
      append_reply(c, reply_, close);
      return Next::more;
    case Route::gateway:       // admit() made it a create or a lookup
    case Route::oauth2_token:  // answered above
    case Route::no_route:
      set_canned(reply_, prof.no_route);
      append_reply(c, reply_, close);
      return Next::more;
  }

  // A payment. With a key header profile the key is the header; otherwise State finds the
  // identity in the body.
  bool has_key = false;
  std::string_view key;
  if (prof.identity == Identity::header) {
    const std::string_view key_header = cfg_.effective_key_header();
    for (std::size_t i = 0; i < req.header_count; ++i) {
      if (iequals(req.headers[i].name, key_header)) {
        key = req.headers[i].value;
        has_key = !key.empty();
        break;
      }
    }
  }
  std::string_view auth;
  if (!cfg_.api_key.empty()) auth = req.header("Authorization");
  std::unique_ptr<Held> held;
  switch (srv_.state.post_payment(cfg_, auth, has_key, key, body, reply_, &held, format)) {
    case Disposition::respond:
      if (cfg_.latency_ms > 0) return answer_later(c, close, false);
      append_reply(c, reply_, close);
      return Next::more;
    case Disposition::reset:
      if (cfg_.latency_ms > 0) return answer_later(c, close, true);
      reset_conn(c);
      return Next::gone;
    case Disposition::refuse: {
      // The listeners go down now; the RST waits until every worker closed its idle
      // connections, so a retry cannot slip through an old keep-alive connection.
      const uint64_t gen = srv_.outage(cfg_.refuse_ms);
      c->held = true;
      deferred_.push_back({gen, key_of(*c), true});
      return Next::stop;
    }
    case Disposition::hold: {
      c->held = true;
      Timer t;
      t.when = now_ns() + static_cast<int64_t>(cfg_.slow_ms + cfg_.latency_ms) * 1000000;
      t.conn_key = key_of(*c);
      t.close = close;
      t.held = std::move(held);
      add_timer(std::move(t));
      return Next::stop;
    }
  }
  return Next::more;
}

void Worker::outage(int ms) { gate_generation_ = srv_.outage(ms); }

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

// ---- outages -----------------------------------------------------------------------------

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

// ---- timers --------------------------------------------------------------------------------

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

// ---- Server --------------------------------------------------------------------------------

namespace {

Config config_from(const Options& o) {
  Config cfg;
  cfg.seed = o.seed;
  std::string error;
  auto mix = FaultMix::from_map(o.faults, &error);
  if (!mix) throw std::invalid_argument(error);
  cfg.mix = *mix;
  if (o.slow_ms < 0 || o.retry_after_s < 0 || o.refuse_ms < 0) {
    throw std::invalid_argument("slow_ms, retry_after_s and refuse_ms must be >= 0");
  }
  cfg.slow_ms = o.slow_ms;
  cfg.retry_after_s = o.retry_after_s;
  cfg.refuse_ms = o.refuse_ms;
  if (o.latency_ms < 0 || o.latency_ms > 3600 * 1000) {
    throw std::invalid_argument("latency_ms must be between 0 and 3600000");
  }
  cfg.latency_ms = o.latency_ms;
  const Profile* profile = find_profile(o.profile);
  if (!profile) throw std::invalid_argument("unknown profile: " + o.profile);
  cfg.profile = profile;
  cfg.key_header = o.key_header;  // empty: the profile's header
  cfg.api_key = o.api_key;
  if (!o.keys_dir.empty()) cfg.keys = KeySet::load(o.keys_dir);
  if (o.oauth2_client_id.empty() || o.oauth2_client_secret.empty()) {
    throw std::invalid_argument("the OAuth2 client id and secret must not be empty");
  }
  if (o.oauth2_ttl_s < 1) throw std::invalid_argument("oauth2_ttl_s must be >= 1");
  cfg.oauth2 = OAuth2Client{o.oauth2_client_id, o.oauth2_client_secret, o.oauth2_ttl_s};
  return cfg;
}

}  // namespace

ServerCore::ServerCore(Options o) : options(std::move(o)), state(config_from(options)) {
  if (options.threads < 1 || options.threads > 256) {
    throw std::invalid_argument("threads must be between 1 and 256");
  }
  in_addr ip{};
  const std::string host = options.host == "localhost" ? "127.0.0.1" : options.host;
  if (inet_pton(AF_INET, host.c_str(), &ip) != 1 || (ntohl(ip.s_addr) >> 24) != 127) {
    throw std::invalid_argument("host must be an IPv4 loopback address: " + options.host);
  }
  addr = ip.s_addr;
  std::vector<Fd> listeners;
  listeners.push_back(make_listener(addr, options.port));
  port = bound_port(listeners[0].get());
  for (int i = 1; i < options.threads; ++i) listeners.push_back(make_listener(addr, port));
  for (std::size_t i = 0; i < listeners.size(); ++i) {
    slots.push_back({listeners[i].get(), true});
    workers.push_back(std::make_unique<Worker>(*this, i, std::move(listeners[i])));
  }
  try {
    for (auto& w : workers) threads.emplace_back([wp = w.get()] { wp->run(); });
  } catch (...) {
    stop();
    throw;
  }
}

ServerCore::~ServerCore() { stop(); }

void ServerCore::stop() {
  std::lock_guard<std::mutex> lk(stop_mu);
  if (stopped) return;
  stopped = true;
  stopping.store(true, std::memory_order_release);
  wake_all();
  for (auto& t : threads) t.join();
  threads.clear();
  workers.clear();  // closes connections and listeners
}

void ServerCore::wake_all() {
  for (auto& w : workers) w->wake();
}

uint64_t ServerCore::outage(int ms) {
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lk(outage_mu);
    outage_until_ns = std::max(outage_until_ns, now_ns() + static_cast<int64_t>(ms) * 1000000);
    for (auto& slot : slots) {
      // SHUT_RD on a listening socket stops it listening at once (new SYNs get RST, the
      // accept queue is reset) while the fd stays owned, and the port bound, by its worker.
      if (slot.listening && ::shutdown(slot.fd, SHUT_RD) == 0) slot.listening = false;
    }
    gen = ++outage_generation;
  }
  wake_all();
  return gen;
}

uint64_t ServerCore::min_synced_generation() const {
  uint64_t m = UINT64_MAX;
  for (const auto& w : workers) m = std::min(m, w->synced_generation.load(std::memory_order_acquire));
  return m;
}

Server::Server(Options options) : impl_(std::make_unique<ServerCore>(std::move(options))) {}
Server::~Server() = default;

uint16_t Server::port() const { return impl_->port; }
std::string Server::base_url() const { return "http://127.0.0.1:" + std::to_string(impl_->port); }
void Server::stop() { impl_->stop(); }

int Server::charges_for(const std::string& order_id) const {
  return impl_->state.charges_for(order_id);
}
std::vector<std::string> Server::charge_ids_for(const std::string& order_id) const {
  return impl_->state.charge_ids_for(order_id);
}
long Server::total_charges() const { return impl_->state.total_charges(); }
long Server::orders() const { return impl_->state.orders(); }
int Server::duplicate_orders() const { return static_cast<int>(impl_->state.duplicate_orders()); }
long Server::requests() const { return impl_->state.requests(); }
std::string Server::truth_json() const { return payretry_sim::truth_json(impl_->state); }
std::string Server::stats_json() const { return payretry_sim::stats_json(impl_->state); }

namespace {
std::vector<Fault> to_faults(const std::vector<std::string>& names) {
  std::vector<Fault> v;
  std::string unknown;
  for (const auto& n : names) {
    auto f = fault_from_name(n);
    if (!f) unknown += (unknown.empty() ? "" : ", ") + n;
    else v.push_back(*f);
  }
  if (!unknown.empty()) throw std::invalid_argument("unknown fault name(s): " + unknown);
  return v;
}
}  // namespace

void Server::script(const std::string& order_id, std::vector<std::string> faults) {
  impl_->state.script_order(order_id, to_faults(faults));
}
void Server::script_key(const std::string& key, std::vector<std::string> faults) {
  impl_->state.script_key(key, to_faults(faults));
}

void Server::set_seed(uint64_t seed) {
  Config c = impl_->state.config();
  c.seed = seed;
  impl_->state.set_config(std::move(c));
}
void Server::set_faults(const std::map<std::string, double>& faults) {
  std::string error;
  auto mix = FaultMix::from_map(faults, &error);
  if (!mix) throw std::invalid_argument(error);
  Config c = impl_->state.config();
  c.mix = *mix;
  impl_->state.set_config(std::move(c));
}
void Server::set_slow_ms(int ms) {
  if (ms < 0) throw std::invalid_argument("slow_ms must be >= 0");
  Config c = impl_->state.config();
  c.slow_ms = ms;
  impl_->state.set_config(std::move(c));
}
void Server::set_refuse_ms(int ms) {
  if (ms < 0) throw std::invalid_argument("refuse_ms must be >= 0");
  Config c = impl_->state.config();
  c.refuse_ms = ms;
  impl_->state.set_config(std::move(c));
}
void Server::set_profile(const std::string& name) {
  const Profile* profile = find_profile(name);
  if (!profile) throw std::invalid_argument("unknown profile: " + name);
  Config c = impl_->state.config();
  c.profile = profile;
  impl_->state.set_config(std::move(c));
}
void Server::set_latency_ms(int ms) {
  if (ms < 0 || ms > 3600 * 1000) throw std::invalid_argument("latency_ms must be between 0 and 3600000");
  Config c = impl_->state.config();
  c.latency_ms = ms;
  impl_->state.set_config(std::move(c));
}
void Server::set_retry_after_s(int s) {
  if (s < 0) throw std::invalid_argument("retry_after_s must be >= 0");
  Config c = impl_->state.config();
  c.retry_after_s = s;
  impl_->state.set_config(std::move(c));
}

void Server::outage(int ms) {
  if (ms <= 0) return;
  const uint64_t gen = impl_->outage(ms);
  // Like the admin endpoint: return once every worker has closed its idle connections.
  while (impl_->min_synced_generation() < gen && !impl_->stopping.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}
void Server::reset() { impl_->state.reset(); }
void Server::revoke_oauth2_tokens() { impl_->state.tokens().revoke_all(); }

}  // namespace payretry_sim
