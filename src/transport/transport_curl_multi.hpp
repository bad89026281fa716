// AsyncTransport over libcurl's multi interface: one connection pool per
// client (bounded per host, kept alive), HTTP/2 multiplexing over TLS where
// the provider offers it, every transfer set up exactly as the threaded
// transport does (CurlTransfer), so both send the same requests and judge
// failures the same way.
//
// Driven by socket events (libcurl's multi_socket interface over epoll), not
// by curl_multi_perform and curl_multi_poll: those visit every transfer and
// poll every socket on each turn, so at 1,000 in flight a turn woken by one
// answer, or by a ledger writer, costs as much as one that had 1,000 to read.
// Here a turn touches only the sockets the kernel reported ready and the
// transfers whose timer is due. (Linux: epoll and eventfd.) A kept-alive
// connection's socket stays in the epoll set between the requests it
// carries, rather than being taken out and put back for each; the
// transport opens and closes its connection sockets itself
// (CURLOPT_OPENSOCKETFUNCTION, CURLOPT_CLOSESOCKETFUNCTION) so that it
// knows when a socket number changes hands.
//
// Beyond the pool's size, transfers wait in line for a free connection: a
// line of our own, first come first served, in front of libcurl. libcurl
// 7.88's own queue is not (1,000 transfers over 32 connections at 100 ms:
// expected 3.1 s each, measured p10 1.1 s, p99 12.3 s, max 18.9 s), so it
// is handed no more transfers than it has connections (HTTP/1.1), or than
// its connections carry streams (HTTP/2, 100 each). The wait sends
// nothing, so the transport times each transfer itself: in line until
// send_margin_ms before its request's wait_limit_ms, then timeout_ms from
// the start of its connection (never past the limit). libcurl's own timeout
// would count the line against the attempt, and a transfer that ran out of
// time there would close the kept-alive connection it is handed.
//
// The line also bounds how many connections are being opened at once
// (max_opening). A burst of payments with no idle connection would
// otherwise send one SYN (and one TLS handshake) each at the same moment:
// at 10,000 in flight into nginx's listen backlog of 511, thousands of SYNs
// were dropped, each connect waited out a 1 s and a 3 s retransmission,
// timed out, and the retries emptied the retry budget (BENCHMARKS.md,
// "Waiting for a free connection"). A transfer handed to libcurl counts as
// opening until its connection is ready (the first prereq call) or it
// leaves; while max_opening of them are, the next waits in line, unless a
// connection of the pool is idle for it. Waiting there sends nothing and is
// not charged to the attempt.
//
// Which connections are idle is counted from what the transport itself sees,
// never from how many sockets are open: libcurl 7.88 closes a socket whose
// connect it gave up (a timeout, the loser of happy eyeballs) without the
// close callback (lib/cf-socket.c, fixed in 8.2.0), so an open count only
// grows. A socket becomes a connection's (`ours`) when the transfer that
// opened it reaches its prereq call; from then on libcurl closes it through
// on_close. Such a socket that libcurl stops watching carries no transfer:
// it is idle until a transfer takes it, it closes, the provider closes it
// (epoll reports the parked socket), or it has been idle so long that
// libcurl would close it instead of reusing it (max_idle_connection_age_s).
#pragma once
#include <curl/curl.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "async_transport.hpp"
#include "curl_transfer.hpp"

namespace payretry {

class CurlMultiTransport final : public AsyncTransport {
 public:
  // max_opening: connections being opened at once at most; 0: no bound.
  CurlMultiTransport(CurlOptions options, long max_connections, long max_opening = 0);
  ~CurlMultiTransport() override;
  CurlMultiTransport(const CurlMultiTransport&) = delete;
  CurlMultiTransport& operator=(const CurlMultiTransport&) = delete;

  void start(const HttpRequest& request, void* tag) override;
  void perform(std::vector<Done>& done) override;
  void wait(int64_t max_ms) override;
  void wakeup() override;
  int64_t next_timeout_ms() override;

 private:
  // A configured easy handle and the payment's tag while it carries one.
  // libcurl's PRIVATE points at it for the handle's whole life.
  struct Transfer {
    Transfer(const CurlOptions& options, CurlMultiTransport* owner);
    CurlTransfer curl;
    void* tag = nullptr;
    CurlMultiTransport* owner;
    // Steady-clock milliseconds. end_ms: the last moment of the request, in
    // line or on the wire; due_ms: when its timer ends it (while in line,
    // send_margin_ms before end_ms; then the attempt's own end, never past
    // end_ms); heap_at: its place in timers_.
    int64_t timeout_ms = 0;
    int64_t end_ms = 0;
    int64_t due_ms = 0;
    size_t heap_at = kNotTimed;
    int64_t queued_ms = 0;  // when start() took it
    // Handed to libcurl and its connection ready (the first prereq call):
    // no longer counted among the transfers opening one.
    bool ready = false;
    // The sockets libcurl opened for it since it was handed (on_open), with
    // each one's generation: the one its connection kept is adopted at its
    // prereq call, found by its ports. The last four; more are failed
    // connects, closed already.
    struct Opened {
      curl_socket_t s = -1;
      uint32_t gen = 0;
    };
    Opened opened[4];
    int opened_n = 0;
    // While in our line (not yet handed to libcurl): its neighbours there.
    bool in_line = false;
    Transfer* line_prev = nullptr;
    Transfer* line_next = nullptr;
  };
  static constexpr size_t kNotTimed = static_cast<size_t>(-1);
  std::unique_ptr<Transfer> acquire();
  void release(std::unique_ptr<Transfer> t);
  // Reads a finished (or ended) transfer into a Done and pools its handle.
  void report(std::unique_ptr<Transfer> t, CURLcode rc, std::vector<Done>& done);
  // The transfers' own timers: a binary min-heap on due_ms.
  static void on_leaving_line(void* transfer);
  void end_overdue(std::vector<Done>& done);
  void timer_push(Transfer* t);
  void timer_remove(Transfer* t);
  void timer_sift(size_t at);
  // Our line: hand a transfer to libcurl, or queue it while libcurl holds
  // its limit; admit from the line as transfers leave libcurl.
  bool hand_to_curl(Transfer* t);
  void left_curl(Transfer* t);
  bool may_hand() const;
  void line_push(Transfer* t);
  void line_unlink(Transfer* t);
  void admit_from_line(std::vector<Done>& done);
  Done not_handed(Transfer& t, TransportFailure failure, const char* why);
  // Idle connections: the socket a transfer's new connection kept becomes
  // ours; ours that libcurl stops watching are idle, oldest first.
  void adopt_connection(Transfer& t);
  void idle_push(curl_socket_t s);
  void idle_unlink(curl_socket_t s);
  void forget_old_idle(int64_t now);
  // libcurl's callbacks: which sockets to watch for what, and when it next
  // needs to run its own timeouts.
  static int on_socket(CURL* easy, curl_socket_t s, int what, void* self, void* socketp);
  static curl_socket_t on_open(void* transfer, curlsocktype purpose, curl_sockaddr* address);
  static int on_close(void* self, curl_socket_t s);
  // Per socket number: what the epoll set holds for it. `ours`: the socket
  // of a connection this transport opened (on_open), adopted when its
  // connection was ready, and not closed since (on_close); only such a
  // socket is parked (kept in the set while libcurl does not watch it,
  // `in_set` and not `watched`), and counted idle.
  struct SocketState {
    bool ours = false;
    bool in_set = false;
    bool watched = false;
    bool idle = false;    // parked and counted in idle_conns_ (linked in the idle list)
    uint32_t events = 0;  // EPOLLIN / EPOLLOUT as registered, while in_set
    uint32_t gen = 0;     // changes each time on_open or on_close gives the number a new meaning
    curl_socket_t idle_prev = -1;
    curl_socket_t idle_next = -1;
    int64_t idle_since_ms = 0;
  };
  SocketState* state_of(curl_socket_t s);
  static int on_timer(CURLM* multi, long timeout_ms, void* self);
  void act(curl_socket_t s, int ev_bitmask);
  void read_wakeups();

  const CurlOptions options_;
  CURLM* multi_ = nullptr;
  int epoll_ = -1;
  int wake_ = -1;               // an eventfd: wakeup() from any thread
  std::vector<SocketState> sockets_;  // indexed by socket number
  int64_t timer_due_ms_ = -1;   // steady clock; -1: libcurl needs no timeout call
  // Sockets the last wait() found ready, with libcurl's CURL_CSELECT_* bits:
  // perform() hands them to libcurl.
  std::vector<std::pair<curl_socket_t, int>> ready_;
  std::vector<std::unique_ptr<Transfer>> idle_;
  std::vector<Transfer*> timers_;
  size_t made_ = 0;  // Transfers made: idle_ and timers_ hold room for all
  const long max_connections_;
  long curl_limit_ = 1;  // transfers libcurl holds at most (no queue of its own), per the last URL
  long in_curl_ = 0;
  const long max_opening_;
  long opening_ = 0;       // transfers in libcurl whose connection is not ready yet
  // Idle connections (SocketState::idle), linked oldest first; one idle for
  // longer than idle_trust_ms_ is no longer counted (libcurl closes it
  // rather than reuse it once it passes max_idle_connection_age_s).
  long idle_conns_ = 0;
  curl_socket_t idle_conn_head_ = -1;
  curl_socket_t idle_conn_tail_ = -1;
  const int64_t idle_trust_ms_;
  Transfer* line_head_ = nullptr;
  Transfer* line_tail_ = nullptr;
  // Transfers that failed before libcurl got them: reported by perform().
  std::vector<Done> failed_to_start_;
};

}  // namespace payretry
