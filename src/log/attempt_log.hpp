// The attempt log (docs/design.md "Attempt log"): one redacted JSON object per attempt and per
// outcome, to the caller's callback and/or a JSON-lines file.
#pragma once
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "clock.hpp"
#include "json_writer.hpp"
#include "result.hpp"

namespace payretry {

inline constexpr int kLogDebug = 10, kLogInfo = 20, kLogWarn = 30, kLogError = 40;

class AttemptLog {
 public:
  using Sink = std::function<void(int level, const std::string& line)>;

  // Throws Error(Errc::PAY_EIO) when `path` is set and cannot be opened for append.
  AttemptLog(Sink sink, const std::string& path, int min_level, std::vector<std::string> secrets, Clock& clock);

  // After attempt `a` of payment `p` (p.attempts may not yet hold it).
  void attempt(const PaymentResult& p, const AttemptRecord& a);
  // One attempt of a status lookup (query, reconcile): the same record,
  // event "lookup".
  void lookup(const std::string& order_id, const std::string& idempotency_key, const AttemptRecord& a);
  // When the submission ends.
  void outcome(const PaymentResult& p);
  // Anything else worth a line (configuration warnings).
  void note(int level, const std::string& event, const std::string& message);
  // Reopens the log file by its path (after log rotation moved it away).
  // Nothing to do without one. Throws Error(PAY_EIO) when it cannot be
  // opened; the old file then stays in use, so no line is lost.
  void reopen();

 private:
  void write_attempt(const char* event, const std::string& order_id, const std::string& idempotency_key,
                     const AttemptRecord& a, std::string_view traceparent);
  // Starts a line: its object opened, "ts" and "event" written.
  static void begin_line(JsonWriter& w, int64_t unix_ms, std::string_view event);
  // Hands a finished line to the sink and the file.
  void emit(int level, const std::string& line);
  std::string clean(const std::string& s) const;

  Sink sink_;
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, FileCloser> file_;  // set once at construction when path_ is; swapped by reopen()
  std::mutex file_mu_;
  int min_level_;
  std::vector<std::string> secrets_;
  Clock& clock_;
};

}  // namespace payretry
