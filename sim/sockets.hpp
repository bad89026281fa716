// The sockets the workers own: an fd that closes itself, the SO_REUSEPORT listeners (one per
// worker, all on one port) and the abortive close that sends an RST.
#pragma once

#include <netinet/in.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace payretry_sim {

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

[[noreturn]] void throw_errno(const std::string& what);
Fd make_listener(in_addr_t addr, uint16_t port);
uint16_t bound_port(int fd);
void set_abortive_close(int fd);

}  // namespace payretry_sim
