#include "sighup.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>

namespace cli {

namespace {

// The handler may only make async-signal-safe calls: it writes one byte to a
// pipe, and a thread does the rest (reopening takes a lock and opens a file).
// The write end never blocks: a full pipe already holds a reopen request.
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
  if (pipe2(pipe_, O_CLOEXEC) != 0 || fcntl(pipe_[1], F_SETFL, O_NONBLOCK) != 0) {
    if (pipe_[0] >= 0) close(pipe_[0]);
    if (pipe_[1] >= 0) close(pipe_[1]);
    pipe_[0] = pipe_[1] = -1;
    return;  // no rotation support: the command itself still works
  }
  try {
    thread_ = std::thread([this, &client] {
      for (;;) {
        char c = 0;
        const ssize_t n = read(pipe_[0], &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n != 1 || c == kStop) return;
        try {
          client.reopen_log();
        } catch (const std::exception& e) {
          std::fprintf(stderr, "payretry: SIGHUP: the log file stays as it was: %s\n", e.what());
        }
      }
    });
  } catch (...) {
    close(pipe_[0]);
    close(pipe_[1]);
    pipe_[0] = pipe_[1] = -1;
    return;
  }
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
  // Blocking for the stop byte: a full pipe must not lose it.
  fcntl(pipe_[1], F_SETFL, 0);
  (void)!write(pipe_[1], &kStop, 1);
  thread_.join();
  close(pipe_[0]);
  // The write end stays open: a handler already running on another thread
  // may have read its number before it was cleared, and must not write into
  // a descriptor reused meanwhile. The command ends right after.
}

}  // namespace cli
