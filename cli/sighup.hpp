// SIGHUP reopens the client's log file while a command runs, as daemons do
// for log rotation (logrotate moves the file, then sends SIGHUP).
#pragma once

#include <payretry/payretry.hpp>

#include <signal.h>

#include <thread>

namespace cli {

class ReopenLogOnSighup {
 public:
  // `client` must outlive this object.
  explicit ReopenLogOnSighup(const pay::client& client);
  ~ReopenLogOnSighup();
  ReopenLogOnSighup(const ReopenLogOnSighup&) = delete;
  ReopenLogOnSighup& operator=(const ReopenLogOnSighup&) = delete;

 private:
  int pipe_[2] = {-1, -1};  // the handler writes a byte; the thread reopens
  struct sigaction previous_ {};
  std::thread thread_;
};

}  // namespace cli
