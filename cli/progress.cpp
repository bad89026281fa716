#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace cli {

Progress::Progress(std::string verb, long total, bool enabled)
    : verb_(std::move(verb)), total_(total), enabled_(enabled), tty_(isatty(STDERR_FILENO) == 1) {
  if (enabled_) thread_ = std::thread([this] { loop(); });
}

Progress::~Progress() { finish(); }

void Progress::loop() {
  // A terminal gets a smooth bar; a log gets one line every 2 s at most.
  const auto period = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(2000);
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period, [this] { return stop_; })) draw(false);
}

void Progress::draw(bool final) {
  const long done = done_.load(std::memory_order_relaxed);
  const long unknown = unknown_.load(std::memory_order_relaxed);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string of_total = total_ > 0 ? "/" + std::to_string(total_) : "";
  if (tty_) {
    char bar[31] = {0};
    const int width = 30;
    const int filled = total_ > 0 ? static_cast<int>(width * std::min(1.0, double(done) / double(total_))) : 0;
    for (int i = 0; i < width; ++i) bar[i] = i < filled ? '#' : '.';
    std::fprintf(stderr, "\r[%s] %ld%s %s, %ld UNKNOWN  %.1fs\033[K%s", bar, done, of_total.c_str(), verb_.c_str(),
                 unknown, secs, final ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s %ld%s, %ld UNKNOWN so far (%.1f s)\n", verb_.c_str(), done, of_total.c_str(), unknown,
                 secs);
  }
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  draw(true);
}

}  // namespace cli
