// Progress of a long operation, on stderr only (stdout stays clean for --json):
// a bar redrawn in place on a terminal, a plain line every ~2 s otherwise, so
// CI logs show that the run is alive without thousands of lines.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace cli {

class Progress {
 public:
  // `verb` says what is counted ("submitted", "reconciled"); `total` 0 means unknown.
  // Disabled: prints nothing at all (--quiet).
  Progress(std::string verb, long total, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void set(long done, long unknown) {
    done_.store(done, std::memory_order_relaxed);
    unknown_.store(unknown, std::memory_order_relaxed);
  }
  void add(long done, long unknown) {
    done_.fetch_add(done, std::memory_order_relaxed);
    unknown_.fetch_add(unknown, std::memory_order_relaxed);
  }
  // Draws the last state and ends the line; idempotent.
  void finish();

 private:
  void loop();
  void draw(bool final);

  const std::string verb_;
  const long total_;
  const bool enabled_;
  const bool tty_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::atomic<long> done_{0}, unknown_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace cli
