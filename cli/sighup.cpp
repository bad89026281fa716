#include "sighup.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace cli {

namespace {

// The handler may only make async-signal-safe calls: it writes one byte to a
// pipe, and a thread does the rest (reopening takes a lock and opens a file).
volatile sig_atomic_t g_write_fd = -1;
constexpr char kReopen = 'r', kStop = 's';

void on_sighup(int) {
  const int saved = errno;
  const int fd = g_write_fd;
  if (fd >= 0) (void)!write(fd, &kReopen, 1);
  errno = saved;
}

}  // namespace

ReopenLogOnSighup::ReopenLogOnSighup(const pay::client& client) {
  if (pipe2(pipe_, O_CLOEXEC) != 0) {
    pipe_[0] = pipe_[1] = -1;
    return;  // no rotation support: the command itself still works
  }
  thread_ = std::thread([this, &client] {
    for (;;) {
      char c = 0;
      const ssize_t n = read(pipe_[0], &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n != 1 || c == kStop) return;
      try {
        client.reopen_log();
      } catch (const pay::error& e) {
        std::fprintf(stderr, "payretry: SIGHUP: the log file stays as it was: %s\n", e.what());
      }
    }
  });
  g_write_fd = pipe_[1];
  struct sigaction sa {};
  sa.sa_handler = on_sighup;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGHUP, &sa, &previous_);
}

ReopenLogOnSighup::~ReopenLogOnSighup() {
  if (pipe_[1] < 0) return;
  sigaction(SIGHUP, &previous_, nullptr);
  g_write_fd = -1;
  (void)!write(pipe_[1], &kStop, 1);
  thread_.join();
  close(pipe_[0]);
  close(pipe_[1]);
}

}  // namespace cli
