// The concurrent engine's transport: many transfers at once, driven by the
// engine's loop. The engine starts transfers, lets the transport move them,
// and reads which finished; it never sees a socket. libcurl's multi interface
// is one implementation (transport_curl_multi.hpp); the deterministic
// simulation drives the same engine through another, under a fake clock.
#pragma once
#include <cstdint>
#include <vector>

#include "transport.hpp"

namespace payretry {

class AsyncTransport {
 public:
  virtual ~AsyncTransport() = default;

  // Starts `request`. The request (and what it borrows) must stay valid until
  // its completion is reported; `tag` comes back with it. Never throws for
  // network conditions; a transfer that cannot even start is reported as a
  // completion with nothing written.
  virtual void start(const HttpRequest& request, void* tag) = 0;

  struct Done {
    void* tag = nullptr;
    TransportResult result;
  };
  // Moves every transfer forward (writes, reads, timeouts) without blocking,
  // and appends the finished ones to `done`.
  virtual void perform(std::vector<Done>& done) = 0;

  // Blocks until a transfer may progress, wakeup() is called, or `max_ms`
  // passed (0: only polls).
  virtual void wait(int64_t max_ms) = 0;
  // From any thread: ends the current or next wait() early.
  virtual void wakeup() = 0;
  // How soon the transport needs perform() for its own timeouts; -1: no need.
  virtual int64_t next_timeout_ms() = 0;
};

}  // namespace payretry
