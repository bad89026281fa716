// One worker thread: an epoll loop over its own SO_REUSEPORT listener and its connections.
// Its jobs live in one file each: worker_io.cpp (accept, read, write, close),
// worker_routing.cpp (a request to its answer), worker_timers.cpp (held and delayed answers,
// listener reopening) and worker_outage.cpp (the outage barrier behind `refuse` and
// POST /__admin/outage).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "admin.hpp"
#include "http_conn.hpp"
#include "sockets.hpp"
#include "state.hpp"

namespace payretry_sim {

class ServerCore;

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
    bool parked = false;       // a held token request (oauth2_delay_ms): closed when the peer goes
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
    // oauth2_delay_ms: a token request answered when the timer fires (the token is issued
    // then, for a client still there), from these copies of the request.
    bool token = false;
    std::string token_authorization, token_content_type, token_body;
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
  Next answer_admin(Conn* c, const Request& req, bool close);
  // A create, once routed and admitted: `body` is what the gate made of the request's body.
  Next answer_payment(Conn* c, const Request& req, std::string_view body, BodyFormat format,
                      bool close);
  // An operation (operations.hpp), once routed and admitted.
  Next answer_operation(Conn* c, const Request& req, std::string_view body, const OpTarget& op, bool close);
  // The key header's value in a header profile (false: none, or not a header profile).
  bool header_key(const Request& req, std::string_view* key) const;
  // Sends what State decided for a create or an operation: the reply (now or after latency or
  // a hold), an RST, a refusal of connections, or a `slow` hold (`held`: a create's).
  Next deliver(Conn* c, Disposition d, std::unique_ptr<Held>* held, bool close);
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
  // `delay_ms` < 0: latency_ms.
  Next answer_later(Conn* c, bool close, bool rst, int delay_ms = -1);
  // With oauth2_delay_ms set: holds a token request, to be answered by its timer (or never).
  Next hold_token_request(Conn* c, const Request& req, bool close);
  // The account and scope of a create or lookup, into scope_ (state.hpp scope_of).
  std::string_view request_scope(const Request& req);
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
  uint64_t gate_generation_ = 0;  // set by an admin outage inside answer_admin

  Config cfg_;
  uint64_t cfg_version_ = 0;
  Request req_;
  Reply reply_;
  std::string extra_;
  std::string signed_body_;  // frame_reply's copy of a body that gets signed
  std::string gate_body_;    // admit()'s rewritten body (Alipay)
  std::string scope_;        // request_scope()'s
};

}  // namespace payretry_sim
