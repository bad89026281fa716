// What the workers share: the options, the provider's State, the listeners' outage state and
// the workers themselves. Private to the simulator: server.hpp is its public face.
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server.hpp"
#include "state.hpp"
#include "webhook_sender.hpp"

namespace payretry_sim {

// The monotonic clock that outage deadlines and timers are measured on.
int64_t now_ns();

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
  // Stopped after the workers (stop()), so no worker meets a stopped sender.
  std::unique_ptr<WebhookSender> webhooks;
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

}  // namespace payretry_sim
