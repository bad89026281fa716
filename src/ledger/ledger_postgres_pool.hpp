// The PostgreSQL ledger's connections: a few shared by the threads of one
// ledger, each set up for the ledger's writes and with the server's clock
// measured on it, and every wait for one bounded by the caller's deadline.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ledger_postgres_errors.hpp"
#include "ledger_postgres_session.hpp"

namespace payretry {
namespace pg {

// Connections one ledger opens at most; more threads wait for a free one
// (at most the ledger timeout).
constexpr size_t kMaxConnections = 8;
// A pooled connection's clock offset is measured again when it is older than this.
constexpr auto kRemeasureEvery = std::chrono::seconds(30);
// Two clocks whose measured offset is within the measurement's own
// uncertainty plus this much are taken as agreeing.
constexpr int64_t kClockSlackMs = 10;

// One pooled connection and what was measured on it.
struct Conn {
  ConnPtr pg;
  int64_t offset = 0;  // server clock minus client clock, ms
  Steady::time_point measured;
  unsigned prepared = 0;  // the statements prepared on it (Prepared::bit)
};

class Pool {
 public:
  // `client_clock`: the client's wall clock (Unix ms) that the server's is
  // measured against; empty means the system's. `errors` outlives the pool.
  Pool(std::string url, int64_t timeout_ms, std::function<int64_t()> client_clock, const ErrorReporter& errors);
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // A connection of the pool for one call, given back when the Borrow ends
  // (see release).
  class Borrow {
   public:
    Borrow(Pool& p, const std::string& op, Steady::time_point deadline)
        : p_(p), c_(p.acquire(op, deadline)), s_(p.session_of(*c_, deadline)) {}
    ~Borrow() { p_.release(std::move(c_), s_.dead); }
    Borrow(const Borrow&) = delete;
    Borrow& operator=(const Borrow&) = delete;
    Session& session() { return s_; }

   private:
    Pool& p_;
    std::unique_ptr<Conn> c_;
    Session s_;
  };

 private:
  std::unique_ptr<Conn> connect(const std::string& op, Steady::time_point deadline);
  std::unique_ptr<Conn> acquire(const std::string& op, Steady::time_point deadline);
  void release_slot();
  void release(std::unique_ptr<Conn> c, bool dead);
  Session session_of(Conn& c, Steady::time_point deadline) const;
  void note_offset(Conn& conn, int64_t t0, int64_t server_ms, int64_t t1);
  void setup_session(Session& s, Conn& conn);
  void remeasure(Session& s, Conn& conn);

  const int64_t timeout_ms_;
  const std::function<int64_t()> client_clock_;
  const std::string url_;
  const ErrorReporter& errors_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Conn>> idle_;
  size_t open_ = 0;  // connections in idle_ plus those borrowed (or being made)

  std::mutex clock_mu_;
  int64_t canon_offset_ = 0;       // server clock minus client clock, ms
  int64_t canon_uncertainty_ = 0;  // of the measurement that set it
};

}  // namespace pg
}  // namespace payretry
