// The demo's notification endpoint: a loopback HTTP listener that hands each
// request the simulator sends to pay_webhook_apply, as a shop's endpoint
// would, and answers what the library says to answer. `demo --operations`
// needs it for Adyen, whose captures are settled only by notification.
#pragma once

#include <payretry/payretry.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace cli {

class DemoHookServer {
 public:
  // Listens on 127.0.0.1 (a free port); throws Failure if it cannot. A
  // notification that comes before set_client is answered 503 (the provider
  // sends it again).
  DemoHookServer();
  ~DemoHookServer();
  DemoHookServer(const DemoHookServer&) = delete;
  DemoHookServer& operator=(const DemoHookServer&) = delete;

  // The client that applies them; nullptr again before that client goes
  // away (waits for a notification being applied).
  void set_client(const pay::client* client);
  std::string url() const;  // http://127.0.0.1:PORT/hooks
  long accepted() const { return accepted_.load(); }  // answered 2xx
  long refused() const { return refused_.load(); }    // answered otherwise

 private:
  void loop();
  void serve(int fd);

  std::mutex mu_;
  const pay::client* client_ = nullptr;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<long> accepted_{0}, refused_{0};
  std::thread thread_;
};

}  // namespace cli
